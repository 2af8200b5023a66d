/* utf8.h: UTF-8 validation and lossy repair of untrusted bytes. Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* True when buf[0..len) is well-formed UTF-8 (no overlongs, surrogates or values > U+10FFFF). */
bool utf8_is_valid(const char *buf, size_t len);

/* Copy buf to a new NUL-terminated string with every invalid byte replaced by U+FFFD.
 * Returns 0 or -ENOMEM; *ret is freed by the caller. */
int utf8_make_valid(const char *buf, size_t len, char **ret, size_t *ret_len);

/* Bytes of the first `chars` characters of valid UTF-8 p[0..n) (a preview's cut). */
size_t utf8_prefix_len(const char *p, size_t n, size_t chars);
