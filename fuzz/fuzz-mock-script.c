/* fuzz-mock-script.c: hull mock-model's script parser on arbitrary bytes, and every step it
 * accepts rendered in both wire formats, whole and streamed, its placeholders replaced from the
 * tool results the same bytes hold as a request: an accepted script never makes an answer that
 * is not built (or, streamed, an event without its end unless the step cuts it). The bytes as a
 * template too: replaced, checked or not, it never fails but for its size. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mock-script.h"
#include "mock-template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char r1[] = "  first line\r\n\"quoted\" \\ back\u00e9  \n", r2[] = "", r3[] = "x\n\ny";
        static char *fixed_v[] = {r1, r2, r3};
        const mock_results fixed = {.all = {.v = fixed_v, .n = 3}, .last = r3};
        mock_results res[2] = {0};
        json_t *as_request = json_loadb((const char *) data, size, JSON_DECODE_ANY, NULL);
        for (int api = 0; api < 2; api++)
                if (mock_results_of(api ? MOCK_API_ANTHROPIC : MOCK_API_OPENAI, as_request, &res[api]) < 0)
                        abort();
        json_decref(as_request);
        char *tmpl = strndup((const char *) data, size);
        if (tmpl) {
                char *out = NULL;
                int checked = mock_template_check(tmpl, NULL);
                if (mock_template_expand(tmpl, &res[0], size & 1, &out) == 0) {
                        if (checked == 0 && strcmp(out, tmpl) != 0)
                                abort(); /* no placeholder: as written */
                        free(out);
                }
                free(tmpl);
        }
        mock_script *s = NULL;
        hull_error e = {0};
        if (mock_script_parse((const char *) data, size, &s, &e) < 0) {
                mock_results_done(&res[0]);
                mock_results_done(&res[1]);
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
                                mock_step x;
                                const mock_step *st = &s->steps[i];
                                if (st->templated) {
                                        if (mock_step_expand(st, res[api].all.n ? &res[api] : &fixed, &x) < 0)
                                                continue;
                                        st = &x;
                                }
                                int r = mock_render(st, &rq, &a);
                                if (st == &x)
                                        mock_step_expanded_done(&x);
                                if (r < 0)
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
        mock_results_done(&res[0]);
        mock_results_done(&res[1]);
        return 0;
}
