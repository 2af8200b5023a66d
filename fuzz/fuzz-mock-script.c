/* fuzz-mock-script.c: hull mock-model's script parser on arbitrary bytes, and every step it
 * accepts rendered in both wire formats, whole and streamed: an accepted script never makes an
 * answer that is not built (or, streamed, an event without its end unless the step cuts it). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mock-script.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        mock_script *s = NULL;
        hull_error e = {0};
        if (mock_script_parse((const char *) data, size, &s, &e) < 0) {
                if (!e.msg[0])
                        abort(); /* a refusal always says why */
                return 0;
        }
        for (size_t i = 0; i < s->n_steps && i < 16; i++)
                for (int api = 0; api < 2; api++)
                        for (int stream = 0; stream < 2; stream++) {
                                mock_request rq = {.api = api ? MOCK_API_ANTHROPIC : MOCK_API_OPENAI,
                                                   .model = "m",
                                                   .stream = stream,
                                                   .include_usage = true,
                                                   .seq = i + 1,
                                                   .now = 1767225600,
                                                   .body_bytes = size};
                                mock_answer a;
                                if (mock_render(&s->steps[i], &rq, &a) < 0)
                                        continue;
                                if (!a.stream && !a.body)
                                        abort();
                                for (size_t k = 0; a.stream && k < a.events.n; k++) {
                                        const char *ev = a.events.v[k];
                                        size_t n = strlen(ev);
                                        bool last = k + 1 == a.events.n;
                                        bool ended = (n >= 2 && ev[n - 1] == ev[n - 2]) ||
                                                     (n >= 4 && memcmp(ev + n - 4, "\r\n\r\n", 4) == 0);
                                        if (!(last && s->steps[i].cut) && !ended)
                                                abort(); /* every event ends with its blank line */
                                        for (size_t off = 0; off < n;) {
                                                size_t w = mock_next_write(ev + off, n - off, s->steps[i].writes,
                                                                           s->steps[i].write_bytes);
                                                if (w == 0 || w > n - off)
                                                        abort();
                                                off += w;
                                        }
                                }
                                mock_answer_done(&a);
                        }
        mock_script_free(s);
        return 0;
}
