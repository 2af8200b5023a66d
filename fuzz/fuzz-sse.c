/* fuzz-sse.c: the server-sent events decoder. The events (and the end: clean, pending or an
 * error) must be the same whether the bytes come in one piece, split at any one position, or a
 * byte at a time; no event's data is over the bound. */
#include <stdint.h>
#include <sys/types.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "sse.h"

#define EVENT_MAX 512U

typedef struct log {
        dynbuf out;
} log_t;

static int on_event(void *ud, const sse_event *ev) {
        log_t *l = ud;
        if (ev->data_len > EVENT_MAX || ev->name_len > EVENT_MAX || ev->data[ev->data_len] || ev->name[ev->name_len])
                abort();
        /* Lengths first, so that no event's bytes can pass for another's. */
        if (dynbuf_addf(&l->out, "%zu:%zu:%zd:", ev->name_len, ev->data_len, ev->id ? (ssize_t) ev->id_len : -1) < 0 ||
            dynbuf_add(&l->out, ev->name, ev->name_len) < 0 || dynbuf_add(&l->out, ev->data, ev->data_len) < 0 ||
            (ev->id && dynbuf_add(&l->out, ev->id, ev->id_len) < 0))
                abort();
        return 0;
}

/* The events of data fed in the pieces that cuts (sorted offsets) make, and the end. */
static char *run(const uint8_t *data, size_t size, const size_t *cuts, size_t n_cuts, int *ret_end) {
        sse_decoder d;
        log_t l;
        size_t at = 0;
        int r = 0;
        dynbuf_init(&l.out, SIZE_MAX / 4);
        sse_init(&d, EVENT_MAX);
        for (size_t i = 0; i <= n_cuts && r == 0; i++) {
                size_t to = i < n_cuts ? cuts[i] : size;
                r = sse_feed(&d, data + at, to - at, on_event, &l);
                at = to;
        }
        *ret_end = r == 0 ? sse_finish(&d) : r;
        /* the stream's last event id and retry: the same whatever the split */
        const char *id = sse_last_id(&d);
        if (r == 0 && (dynbuf_addf(&l.out, "|%ld|%s", d.retry_ms, id ? id : "(none)") < 0))
                abort();
        sse_done(&d);
        char *s = dynbuf_take(&l.out, NULL);
        if (!s)
                abort();
        return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        int end, e;
        char *whole = run(data, size, NULL, 0, &end);
        /* Every split position for small inputs; about 64 of them for larger ones. */
        size_t step = size <= 4096 ? 1 : size / 64;
        for (size_t cut = 1; cut < size; cut += step) {
                char *split = run(data, size, &cut, 1, &e);
                if (e != end || strcmp(split, whole) != 0)
                        abort();
                free(split);
        }
        if (size <= 65536) {
                size_t *cuts = malloc((size ? size : 1) * sizeof(*cuts));
                if (!cuts)
                        abort();
                for (size_t i = 0; i + 1 < size; i++)
                        cuts[i] = i + 1;
                char *bytes = run(data, size, cuts, size ? size - 1 : 0, &e);
                if (e != end || strcmp(bytes, whole) != 0)
                        abort();
                free(bytes);
                free(cuts);
        }
        free(whole);
        return 0;
}
