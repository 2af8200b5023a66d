/* fuzz-multipart.c: the multipart/form-data parser on any body, fed whole and then in pieces cut
 * where the input's first byte says: both feeds must agree on the result and on every byte handed
 * on (the parser is resumable at any byte), and a part's bytes never exceed the body's. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "multipart.h"

typedef struct sink {
        uint8_t out[1 << 16];
        size_t n, total;
        unsigned parts;
} sink;

static int on_part(void *ud, const mp_part *p) {
        sink *s = ud;
        s->parts++;
        if (!memchr(p->name, '\0', sizeof(p->name)) || !memchr(p->filename, '\0', sizeof(p->filename)))
                abort();
        return 0;
}

static int on_data(void *ud, const void *p, size_t n) {
        sink *s = ud;
        s->total += n;
        size_t k = n < sizeof(s->out) - s->n ? n : sizeof(s->out) - s->n;
        memcpy(s->out + s->n, p, k);
        s->n += k;
        return 0;
}

static int on_end(void *ud) {
        (void) ud;
        return 0;
}

static const mp_callbacks cbs = {on_part, on_data, on_end};

static int run(const uint8_t *d, size_t n, size_t step, sink *s) {
        mp_parser *p = malloc(sizeof(*p));
        if (!p)
                abort();
        mp_init(p, "b0undary", &cbs, s);
        int r = 0;
        for (size_t i = 0; i < n && r == 0; i += step)
                r = mp_feed(p, d + i, n - i < step ? n - i : step);
        if (r == 0)
                r = mp_finish(p);
        free(p);
        return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        size_t step = (size_t) (data[0] % 7) + 1;
        static sink a, b;
        memset(&a, 0, sizeof(a));
        memset(&b, 0, sizeof(b));
        int ra = run(data + 1, size - 1, size, &a);
        int rb = run(data + 1, size - 1, step, &b);
        if (ra != rb || a.total != b.total || a.parts != b.parts || a.n != b.n || memcmp(a.out, b.out, a.n) != 0)
                abort();
        if (a.total > size)
                abort();
        char bnd[MULTIPART_BOUNDARY_MAX];
        char *ct = malloc(size + 1);
        if (!ct)
                abort();
        memcpy(ct, data, size);
        ct[size] = '\0';
        (void) mp_boundary(ct, bnd);
        free(ct);
        return 0;
}
