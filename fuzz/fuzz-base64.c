/* fuzz-base64.c: the strict decoder against a plain bit-by-bit one written here (they must agree
 * on what is base64 and on the bytes), and every decoded input encodes back to what decodes to the
 * same bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"

static int value(unsigned char c) {
        const char *a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *b = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        const char *p = c ? strchr(a, c) : NULL, *q = c ? strchr(b, c) : NULL;
        return p ? (int) (p - a) : q ? (int) (q - b) : -1;
}

/* The oracle: strip at most two '=' when they make the length a multiple of 4, then 6 bits a
 * character, the leftover bits dropped. Returns the length or -1. */
static long oracle(const uint8_t *s, size_t n, uint8_t *out) {
        size_t pad = 0;
        if (n % 4 == 0 && n >= 1 && s[n - 1] == '=')
                pad = n >= 2 && s[n - 2] == '=' ? 2 : 1;
        n -= pad;
        if (n % 4 == 1 || (pad && n % 4 == 0))
                return -1;
        uint32_t acc = 0;
        unsigned bits = 0;
        long o = 0;
        for (size_t i = 0; i < n; i++) {
                int v = value(s[i]);
                if (v < 0)
                        return -1;
                acc = acc << 6 | (uint32_t) v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[o++] = (uint8_t) (acc >> bits);
                }
        }
        return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t *want = malloc(size + 1);
        if (!want)
                return 0;
        long n = oracle(data, size, want);
        void *got = NULL;
        size_t len = 0;
        int r = base64_decode((const char *) data, size, &got, &len);
        if (r == -ENOMEM) {
                free(want);
                return 0;
        }
        if ((r == 0) != (n >= 0) || (r == 0 && ((size_t) n != len || memcmp(got, want, len) != 0)))
                abort();
        if (r == 0) {
                char *s = NULL;
                size_t slen;
                void *back = NULL;
                size_t blen;
                if (base64_encode(got, len, size % 4 == 0, &s, &slen) == 0) {
                        if (base64_decode(s, slen, &back, &blen) != 0 || blen != len || memcmp(back, got, len) != 0)
                                abort();
                        free(back);
                        free(s);
                }
        }
        free(got);
        free(want);
        return 0;
}
