/* base64.h: standard base64 (RFC 4648, with padding) through libcrypto's EVP_EncodeBlock and
 * EVP_DecodeBlock, loaded on first use (dlib-crypto.h). */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Bytes encode() writes for n input bytes, the terminating NUL included. */
#define BASE64_ENCODED_SIZE(n) (4 * (((n) + 2) / 3) + 1)

/* Encode n bytes (at most INT32_MAX / 4 * 3 - 3) into dst, which holds BASE64_ENCODED_SIZE(n)
 * bytes; NUL-terminated. Returns the length (without the NUL), or -EINVAL (too long), -ENOSYS
 * (libcrypto cannot be loaded: dlib_load(DLIB_CRYPTO, e) says why). */
int base64_encode(const void *p, size_t n, char *dst);

/* Decode n characters of padded base64 (n a multiple of 4, at most INT32_MAX) into dst, which
 * holds n / 4 * 3 bytes. Returns the bytes written, padding counted as EVP_DecodeBlock counts
 * it (the caller drops one per '='), or -EINVAL (not base64), -ENOSYS. */
int base64_decode_block(const char *src, size_t n, uint8_t *dst);
