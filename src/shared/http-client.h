/* http-client.h: one HTTP POST at a time over libcurl, which is loaded with dlopen() when the
 * first client is made: linked, every hull command (hull exec's start-up is benchmarked) would
 * load it and its dependencies. Bounded: connect and total timeouts, the answer's size (a
 * declared Content-Length is checked up front, streamed bytes are counted). No redirects, no
 * proxy from the environment, http and https only. Returns errors; never prints. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "limits.h"

typedef struct httpc httpc;

/* Load libcurl and make a client. Returns 0 with *ret (free with
 * httpc_free), -ENOENT when libcurl.so.4 cannot be loaded or lacks a function, -ENOMEM. */
int httpc_new(httpc **ret, hull_error *e);
void httpc_free(httpc *c);
static inline void httpc_freep(httpc **c) {
        if (*c)
                httpc_free(*c);
}
#define _cleanup_httpc_ _cleanup_(httpc_freep)

typedef struct httpc_request {
        const char *url;            /* http:// or https:// (the caller checks the scheme) */
        const char *unix_socket;    /* connect here instead of the URL's host; NULL: TCP */
        const char *const *headers; /* "Name: value" lines, at most HTTPC_HEADERS_MAX, NULL-ended */
        const char *body;           /* the POST body */
        size_t body_len;
        uint64_t connect_timeout_ms; /* 0: HTTPC_CONNECT_TIMEOUT_MS */
        uint64_t timeout_ms;         /* the whole exchange; 0: no limit */
        size_t answer_max;           /* bytes of the answer's body */
        const char *capture_header;  /* a response header to capture (case-insensitive); NULL: none */
} httpc_request;

typedef struct httpc_answer {
        long status; /* the HTTP status of the final response */
        char *body;  /* NUL-terminated, not counted; never NULL on success */
        size_t body_len;
        char content_type[HTTPC_HEADER_VALUE_MAX]; /* "" when absent */
        unsigned captured_count;                   /* how often capture_header came */
        char captured[HTTPC_HEADER_VALUE_MAX];     /* its first value, trimmed ("" none or too long) */
} httpc_answer;

void httpc_answer_done(httpc_answer *a);

/* POST req->body to req->url. Any HTTP status is a success (the caller reads a != 200 as an
 * error answer). Returns 0 with *ret (release with httpc_answer_done), or -ECONNREFUSED (nothing
 * listens there), -EHOSTUNREACH (name or address not resolved or reached), -ETIMEDOUT (connect
 * or whole exchange), -EFBIG (the answer is over answer_max), -E2BIG (too many headers),
 * -EPROTO (TLS or HTTP failure), -ENOMEM, -EIO, each with a message in *e that names the URL (or
 * the socket) and libcurl's reason. */
int httpc_post(httpc *c, const httpc_request *req, httpc_answer *ret, hull_error *e);
