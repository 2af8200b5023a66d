/* multipart.h: a resumable multipart/form-data parser (RFC 7578 over RFC 2046) for streamed
 * uploads. Pure: bytes in, callbacks out, no I/O, no allocation; the body may arrive in pieces of
 * any size. Each part's headers are parsed (Content-Disposition's name and filename, the
 * Content-Type), then its bytes are handed on as they come, up to the delimiter. Fuzzed
 * (fuzz/fuzz-multipart.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "limits.h"

typedef struct mp_part {
        char name[MULTIPART_NAME_MAX];         /* the form field's name */
        char filename[MULTIPART_FILENAME_MAX]; /* "" when the part has none */
        bool has_filename;                     /* a filename parameter was given */
        char content_type[V1_FILE_MIME_MAX];   /* "" when the part has none */
} mp_part;

/* What the parser hands on; each returns 0 or a negative errno that stops the parse (mp_feed
 * returns it). */
typedef struct mp_callbacks {
        int (*part_begin)(void *ud, const mp_part *p);
        int (*part_data)(void *ud, const void *p, size_t n);
        int (*part_end)(void *ud);
} mp_callbacks;

typedef enum mp_state {
        MP_PREAMBLE,
        MP_AFTER_DELIM, /* the delimiter matched: "--" or CRLF next */
        MP_CLOSE_DASH,  /* one '-' of the closing "--" */
        MP_AFTER_CR,    /* the CR of the boundary line */
        MP_HEADERS,
        MP_BODY,
        MP_EPILOGUE, /* after the closing delimiter: the end */
        MP_FAILED,
} mp_state;

typedef struct mp_parser {
        mp_state state;
        char delim[MULTIPART_BOUNDARY_MAX + 4]; /* CRLF "--" boundary */
        size_t delim_len;
        size_t matched; /* bytes of delim matched so far */
        char head[MULTIPART_HEADER_MAX];
        size_t head_len;
        unsigned parts;
        unsigned max_parts; /* mp_init: MULTIPART_PARTS_MAX; a caller may set another after it */
        mp_part part;
        const mp_callbacks *cb;
        void *ud;
        char error[128]; /* why the body is malformed (-EBADMSG) */
} mp_parser;

/* The boundary of a Content-Type header value "multipart/form-data; boundary=..." (quoted or
 * not) into ret. Returns 0, or -EINVAL when the type is not multipart/form-data or its boundary
 * is missing or not 1 to 70 allowed characters. */
int mp_boundary(const char *content_type, char ret[static MULTIPART_BOUNDARY_MAX]);

/* Start a parse of a body framed by boundary, of at most MULTIPART_PARTS_MAX parts (p->max_parts). */
void mp_init(mp_parser *p, const char *boundary, const mp_callbacks *cb, void *ud);

/* Parse n more bytes. Returns 0, -EBADMSG when the body is malformed (p->error says how), or a
 * callback's error. After an error every call returns -EBADMSG. */
int mp_feed(mp_parser *p, const void *data, size_t n);

/* The body ended: 0 when it ended with the closing delimiter, else -EBADMSG (p->error). */
int mp_finish(mp_parser *p);
