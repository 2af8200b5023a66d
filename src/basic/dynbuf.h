/* dynbuf.h: a growable byte buffer with a maximum set at init (curl's dynbuf is the model). It
 * grows by doubling up to its maximum and refuses to go past it; its bytes are always followed by
 * a NUL that is not counted, so text can be handed on as a C string. An append that does not fit
 * or cannot be allocated changes nothing. */
#pragma once

#include <stdarg.h>
#include <stddef.h>

#include "macro.h"

typedef struct dynbuf {
        char *buf;  /* NULL until the first byte; then buf[len] == '\0' */
        size_t len; /* bytes held */
        size_t cap; /* bytes allocated (what a caller accounting memory counts) */
        size_t max; /* bytes it may ever hold */
} dynbuf;

/* An empty buffer that will hold at most max bytes. Allocates nothing. */
void dynbuf_init(dynbuf *b, size_t max);

/* Append n bytes. Returns 0, -E2BIG when len + n would exceed max, or -ENOMEM; on an error the
 * buffer is unchanged. */
int dynbuf_add(dynbuf *b, const void *p, size_t n);

/* Append a C string (without its NUL). The errors of dynbuf_add. */
int dynbuf_add_str(dynbuf *b, const char *s);

/* Append printf-formatted text. The errors of dynbuf_add, -EINVAL for a bad format. */
int dynbuf_addf(dynbuf *b, const char *fmt, ...) _printf_(2, 3);
int dynbuf_vaddf(dynbuf *b, const char *fmt, va_list ap) _printf_(2, 0);

/* Make room for n more bytes without appending them (then write at buf + len and call
 * dynbuf_advance). Returns 0, -E2BIG or -ENOMEM. */
int dynbuf_reserve(dynbuf *b, size_t n);
/* Count n bytes written after dynbuf_reserve(b, m) with n <= m. */
void dynbuf_advance(dynbuf *b, size_t n);

/* Drop the first n bytes (at most len), moving the rest to the front. */
void dynbuf_consume(dynbuf *b, size_t n);

/* Forget the bytes, keep the allocation. */
void dynbuf_reset(dynbuf *b);

/* Free the bytes; the buffer is empty again (same max). */
void dynbuf_free(dynbuf *b);
static inline void dynbuf_freep(dynbuf *b) {
        dynbuf_free(b);
}
#define _cleanup_dynbuf_ _cleanup_(dynbuf_freep)

/* Hand the bytes over: a NUL-terminated buffer the caller frees (an empty one when nothing was
 * appended; NULL only when that cannot be allocated), its length in *ret_len (may be NULL). The
 * buffer is empty again. */
char *dynbuf_take(dynbuf *b, size_t *ret_len);
