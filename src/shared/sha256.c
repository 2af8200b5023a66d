/* sha256.c: SHA-256 through libcrypto's SHA256_* functions, the one hash run records are built on.
 * libcrypto is loaded on the first sha256_init() (dlib-crypto.h says why it is not linked).
 *
 * Not EVP: EVP_sha256() needs OpenSSL's provider machinery set up (configuration, the default
 * provider, fetch and cache), a cost for every process that hashes once; these functions are
 * deprecated in OpenSSL 3.0 but kept, and use the same SHA-NI assembly. */
#include "sha256.h"
#include "dlib-crypto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

_Static_assert(sizeof(SHA256_CTX) <= SHA256_STATE_SIZE, "SHA256_STATE_SIZE is too small for SHA256_CTX");
_Static_assert(_Alignof(SHA256_CTX) <= 8, "SHA256_CTX needs more alignment");

static SHA256_CTX *state(sha256_ctx *c) {
        return (SHA256_CTX *) (void *) c->state;
}

int sha256_init(sha256_ctx *c) {
        c->started = false;
        if (!dlib_crypto_load(NULL))
                return -ENOSYS;
        c->started = SHA256_Init(state(c)) == 1;
        return c->started ? 0 : -EIO;
}

int sha256_update(sha256_ctx *c, const void *p, size_t n) {
        if (!c->started)
                return -EIO;
        if (n == 0)
                return 0;
        return SHA256_Update(state(c), p, n) == 1 ? 0 : -EIO;
}

int sha256_final(sha256_ctx *c, uint8_t ret[SHA256_DIGEST_SIZE]) {
        if (!c->started || SHA256_Final(ret, state(c)) != 1)
                return -EIO;
        return 0;
}

int sha256_final_hex(sha256_ctx *c, char ret[SHA256_HEX_SIZE]) {
        uint8_t d[SHA256_DIGEST_SIZE];
        int r = sha256_final(c, d);
        if (r < 0)
                return r;
        sha256_to_hex(d, ret);
        return 0;
}

void sha256_done(sha256_ctx *c) {
        explicit_bzero(c->state, sizeof(c->state));
        c->started = false;
}

int sha256_hex(const void *p, size_t n, char ret[SHA256_HEX_SIZE]) {
        _cleanup_sha256_ sha256_ctx c = {};
        int r = sha256_init(&c);
        if (r < 0)
                return r;
        r = sha256_update(&c, p, n);
        if (r < 0)
                return r;
        return sha256_final_hex(&c, ret);
}

void sha256_to_hex(const uint8_t d[SHA256_DIGEST_SIZE], char ret[SHA256_HEX_SIZE]) {
        static const char hex[] = "0123456789abcdef";
        for (size_t i = 0; i < SHA256_DIGEST_SIZE; i++) {
                ret[2 * i] = hex[d[i] >> 4];
                ret[2 * i + 1] = hex[d[i] & 15];
        }
        ret[2 * SHA256_DIGEST_SIZE] = '\0';
}

bool sha256_hex_is_valid(const char *s, size_t len) {
        if (len != 2 * SHA256_DIGEST_SIZE)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}
