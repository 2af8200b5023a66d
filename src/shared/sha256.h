/* sha256.h: SHA-256 over libcrypto: incremental, one-shot, lowercase hex. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

#define SHA256_DIGEST_SIZE 32U
#define SHA256_HEX_SIZE 65U /* 64 lowercase hex digits and a NUL */

#define SHA256_STATE_SIZE 128U /* room for libcrypto's SHA256_CTX (112 bytes), checked in sha256.c */

typedef struct sha256_ctx {
        _Alignas(8) unsigned char state[SHA256_STATE_SIZE]; /* libcrypto's SHA256_CTX, kept out of
                                                             * this header */
        bool started;                                       /* between sha256_init and _done */
} sha256_ctx;

/* Start a digest. Returns 0, -ENOSYS when libcrypto cannot be loaded (dlib_load(DLIB_CRYPTO, e)
 * says why), or -EIO when OpenSSL refuses. Nothing is allocated; sha256_done() is still safe
 * (and wipes the state). */
int sha256_init(sha256_ctx *c);

/* Hash n more bytes. Returns 0 or -EIO (also when c was never initialised). */
int sha256_update(sha256_ctx *c, const void *p, size_t n);

/* Finish into 32 raw bytes or 65 bytes of lowercase hex. Returns 0 or -EIO. Release the
 * context with sha256_done() afterwards. */
int sha256_final(sha256_ctx *c, uint8_t ret[SHA256_DIGEST_SIZE]);
int sha256_final_hex(sha256_ctx *c, char ret[SHA256_HEX_SIZE]);

/* Release the context; idempotent. */
void sha256_done(sha256_ctx *c);
#define _cleanup_sha256_ _cleanup_(sha256_done)

/* One-shot: the lowercase hex digest of p[0..n). Returns 0, -ENOMEM or -EIO. */
int sha256_hex(const void *p, size_t n, char ret[SHA256_HEX_SIZE]);

/* Raw digest to lowercase hex. */
void sha256_to_hex(const uint8_t d[SHA256_DIGEST_SIZE], char ret[SHA256_HEX_SIZE]);

/* True when s[0..len) is exactly 64 lowercase hex digits, the form every digest is written in. */
bool sha256_hex_is_valid(const char *s, size_t len);
