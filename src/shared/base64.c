/* base64.c: base64 through OpenSSL's EVP_EncodeBlock and EVP_DecodeBlock (libcrypto loaded on first
 * use, dlib-crypto.h), in pieces (they count in
 * int), with the strict reading of base64.h: every character is checked before any is decoded. */
#include "base64.h"
#include "dlib-crypto.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"
#include "macro.h"

_Static_assert(BASE64_ENCODE_CHUNK % 3 == 0, "an encoded piece must not end in padding");
_Static_assert(BASE64_DECODE_CHUNK % 4 == 0, "a decoded piece must be whole quanta");

static const char standard[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_encoded_len(size_t n) {
        if (n / 3 >= SIZE_MAX / 4 - 1)
                return SIZE_MAX;
        return (n + 2) / 3 * 4;
}

size_t base64_decoded_max(size_t n) {
        return n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0);
}

int base64_encode_to(char *dst, size_t size, const void *p, size_t n, bool pad, size_t *ret_len) {
        size_t need = base64_encoded_len(n);
        if (need == SIZE_MAX || size <= need)
                return -ENOBUFS;
        if (!dlib_crypto_load(NULL))
                return -ENOSYS;
        const unsigned char *in = p;
        size_t o = 0;
        for (size_t i = 0; i < n; i += BASE64_ENCODE_CHUNK) {
                size_t k = MIN((size_t) BASE64_ENCODE_CHUNK, n - i);
                o += (size_t) EVP_EncodeBlock((unsigned char *) dst + o, in + i, (int) k);
        }
        dst[o] = '\0';
        while (!pad && o > 0 && dst[o - 1] == '=')
                dst[--o] = '\0';
        if (ret_len)
                *ret_len = o;
        return 0;
}

int base64_encode(const void *p, size_t n, bool pad, char **ret, size_t *ret_len) {
        size_t need = base64_encoded_len(n);
        if (need == SIZE_MAX)
                return -E2BIG;
        char *b = malloc(need + 1);
        if (!b)
                return -ENOMEM;
        size_t len;
        int r = base64_encode_to(b, need + 1, p, n, pad, &len);
        if (r < 0) {
                free(b);
                return r;
        }
        *ret = b;
        if (ret_len)
                *ret_len = len;
        return 0;
}

/* A character's place in the standard alphabet, either alphabet read; -1 for anything else. */
static int sextet(unsigned char c) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+' || c == '-')
                return 62;
        if (c == '/' || c == '_')
                return 63;
        return -1;
}

int base64_decode(const char *s, size_t n, void **ret, size_t *ret_len) {
        size_t pad = 0;
        while (pad < 2 && n > 0 && s[n - 1] == '=') {
                n--;
                pad++;
        }
        /* n digits carry 6n bits: n % 4 == 1 is no whole byte; padding must complete a quantum. */
        if (n % 4 == 1 || (pad > 0 && (n + pad) % 4 != 0))
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (sextet((unsigned char) s[i]) < 0)
                        return -EINVAL;
        if (!dlib_crypto_load(NULL))
                return -ENOSYS;
        /* EVP_DecodeBlock writes 3 bytes for every 4 characters, the padding's included. */
        size_t len = base64_decoded_max(n);
        _cleanup_free_ uint8_t *out = malloc(len + 3);
        if (!out)
                return -ENOMEM;
        unsigned char norm[BASE64_DECODE_CHUNK];
        size_t o = 0;
        for (size_t i = 0; i < n; i += BASE64_DECODE_CHUNK) {
                size_t k = MIN((size_t) BASE64_DECODE_CHUNK, n - i), whole = (k + 3) / 4 * 4;
                for (size_t j = 0; j < k; j++)
                        norm[j] = (unsigned char) standard[sextet((unsigned char) s[i + j])];
                memset(norm + k, '=', whole - k);
                int got = EVP_DecodeBlock(out + o, norm, (int) whole);
                if (got < 0)
                        return -EINVAL;
                o += (size_t) got;
        }
        out[len] = '\0';
        *ret = TAKE_PTR(out);
        *ret_len = len;
        return 0;
}
