/* fuzz-mock-body.c: hull mock-model's parse of request bodies (mock-body.h) on arbitrary bytes:
 * the input is several bodies cut at each 0xff byte (never in JSON), parsed in turn through one
 * cache, each against json_loadb of the same bytes: accepted alike, the same value with its keys
 * in order, and never more bytes handed to jansson than the body's own twice over. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mock-body.h"

static void one(mock_body_cache *c, const char *b, size_t n) {
        json_t *mine = NULL;
        size_t parsed = 0;
        mock_body_parse(c, b, n, &mine, &parsed);
        json_t *ref = json_loadb(b, n, JSON_DECODE_ANY, NULL);
        if (!mine != !ref || parsed > 2 * n + 16)
                abort();
        if (mine) {
                char *x = json_dumps(mine, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
                char *y = json_dumps(ref, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
                if (!x || !y || strcmp(x, y) != 0)
                        abort();
                free(x);
                free(y);
        }
        json_decref(mine);
        json_decref(ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        mock_body_cache *c;
        if (mock_body_cache_new(&c) < 0)
                return 0;
        const char *p = (const char *) data, *end = p + size;
        for (;;) {
                const char *cut = memchr(p, 0xff, (size_t) (end - p));
                one(c, p, (size_t) ((cut ? cut : end) - p));
                if (!cut)
                        break;
                p = cut + 1;
        }
        mock_body_cache_free(c);
        return 0;
}
