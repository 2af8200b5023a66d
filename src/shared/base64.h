/* base64.h: base64 as hull writes and reads it (ProtoJSON bytes, Connect error details, `hull exec
 * --json`). Encoding is the standard alphabet, padded or not, through OpenSSL's EVP_EncodeBlock;
 * decoding is strict: the standard or the URL-safe alphabet, padded or not, and nothing else (no
 * whitespace, no line breaks, no stray '='), with EVP_DecodeBlock doing the arithmetic. Pure: no
 * I/O. The decoder is fuzzed (fuzz/fuzz-base64.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Characters of the padded encoding of n bytes (without a NUL); SIZE_MAX when that overflows. */
size_t base64_encoded_len(size_t n);

/* The most bytes n characters of base64 decode to: bound a decode before it allocates. */
size_t base64_decoded_max(size_t n);

/* Encode the n bytes at p into dst (size bytes) as standard base64, with its '=' padding when pad
 * is true, NUL-terminated. Returns 0 with the length (NUL not counted) in *ret_len (may be NULL),
 * or -ENOBUFS when dst is shorter than base64_encoded_len(n) + 1 (dst then unchanged), -ENOSYS
 * when libcrypto cannot be loaded (dlib_load(DLIB_CRYPTO, e) says why). */
int base64_encode_to(char *dst, size_t size, const void *p, size_t n, bool pad, size_t *ret_len);

/* The same into a new NUL-terminated buffer the caller frees. Returns 0, -ENOMEM, -ENOSYS, or
 * -E2BIG when the length overflows. */
int base64_encode(const void *p, size_t n, bool pad, char **ret, size_t *ret_len);

/* Decode the n characters at s (no NUL needed): the standard or the URL-safe alphabet (a mix of
 * the two is read too, as ProtoJSON parsers do), padded with '=' to a multiple of 4 or not padded
 * at all. Returns 0 with a new buffer (the caller frees) of *ret_len bytes followed by a NUL that
 * is not counted, -EINVAL when s is not base64 so written, -ENOMEM, or -ENOSYS. */
int base64_decode(const char *s, size_t n, void **ret, size_t *ret_len);
