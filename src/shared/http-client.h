/* http-client.h: HTTP requests over libcurl, which is loaded with dlopen() when the first client
 * is made: linked, every hull command (hull exec's start-up is benchmarked) would load it and its
 * dependencies. One request at a time per client; GET, POST, PUT, DELETE. The answer is kept
 * whole (bounded) or handed to the caller piece by piece as it arrives (server-sent events, a
 * model's streamed answer); a request body comes from memory, a callback or an fd (a streamed
 * upload, its length known or chunked); response headers can go to the caller; another thread
 * can cancel. Bounded: connect and total timeouts, the answer's size (a declared Content-Length
 * is checked up front, streamed bytes are counted). No redirects, no proxy from the environment,
 * http and https only. Returns errors; never prints. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

/* Keep connections open between requests (a model's endpoint, asked again and again): every
 * request of c then goes through one libcurl handle, whose connections and DNS answers it
 * reuses. Not for requests whose addresses are pinned per request (web_fetch). */
void httpc_keep_connections(httpc *c);

/* Where a request's body comes from. */
typedef enum httpc_body_from {
        HTTPC_BODY_BUFFER,   /* body, body_len (none when body is NULL) */
        HTTPC_BODY_CALLBACK, /* body_read, as the transfer goes */
        HTTPC_BODY_FD,       /* body_fd, read to its end (not closed) */
} httpc_body_from;

typedef struct httpc_request {
        const char *method;         /* "GET", "POST", "PUT", "DELETE", ...; NULL: POST */
        const char *url;            /* http:// or https:// (the caller checks the scheme) */
        const char *unix_socket;    /* connect here instead of the URL's host; NULL: TCP */
        const char *const *headers; /* "Name: value" lines, at most HTTPC_HEADERS_MAX, NULL-ended */
        httpc_body_from body_from;
        const char *body; /* HTTPC_BODY_BUFFER */
        size_t body_len;
        /* HTTPC_BODY_CALLBACK: fill at most n bytes of buf; return the count, 0 at the end, or a
         * negative errno (the transfer stops and httpc_perform returns it). */
        ssize_t (*body_read)(void *userdata, char *buf, size_t n);
        int body_fd;       /* HTTPC_BODY_FD */
        int64_t body_size; /* a callback's or an fd's length; -1: unknown, sent chunked (an fd of a
                            * regular file with -1 is sent with its size) */
        void *userdata;    /* for the callbacks */
        /* The answer's body as it arrives (any status), instead of collecting it: return 0, or a
         * negative errno to stop the transfer (httpc_perform returns it). answer_max still bounds
         * the bytes (0: no bound). */
        int (*on_data)(void *userdata, const char *p, size_t n);
        /* Each response header (an interim 1xx answer's too), name and value trimmed (a name over
         * HTTPC_HEADER_VALUE_MAX or a value over HTTPC_HEADER_LINE_MAX is skipped): return 0 or a
         * negative errno to stop. */
        int (*on_header)(void *userdata, const char *name, const char *value);
        /* Once, with the final response's status and content type ("" when none), before the
         * first byte of its body goes to on_data (for a body-less answer: before httpc_perform
         * returns 0), so that a caller knows what the bytes are before it reads them (an error
         * document, not a stream): return 0 or a negative errno to stop. */
        int (*on_response)(void *userdata, long status, const char *content_type);
        /* Another thread stops the transfer (-ECANCELED) by setting *cancel or making cancel_fd
         * readable (0: none; stdin is never one); libcurl looks at them at least once a second
         * (its progress callback), more often while bytes flow. */
        const atomic_bool *cancel;
        int cancel_fd;
        uint64_t connect_timeout_ms; /* 0: HTTPC_CONNECT_TIMEOUT_MS */
        uint64_t timeout_ms;         /* the whole exchange; 0: no limit */
        /* No byte moving (the answer's head or body arriving, the request's body leaving) for
         * this long stops the transfer with -ETIME (a stalled stream); checked about once a
         * second. 0: no limit. */
        uint64_t idle_timeout_ms;
        size_t answer_max;          /* bytes of the answer's body kept (or streamed); 0 with on_data: no bound */
        const char *capture_header; /* a response header to capture (case-insensitive); NULL: none */
        /* Names pinned to addresses (CURLOPT_RESOLVE): "HOST:PORT:ADDR[,ADDR...]" entries (an
         * IPv6 ADDR in brackets), NULL-ended. The request then resolves no name itself: a host
         * that is not listed fails with -EHOSTUNREACH (the egress guard connects only to the
         * addresses it checked). NULL: names resolved as usual. */
        const char *const *resolve;
        /* Past answer_max, keep the first answer_max bytes and end the transfer: a success with
         * httpc_answer.truncated (a capped download) instead of -EFBIG. */
        bool answer_truncate;
} httpc_request;

typedef struct httpc_answer {
        long status; /* the HTTP status of the final response */
        char *body;  /* NUL-terminated, not counted; never NULL on success ("" when streamed) */
        size_t body_len;
        char content_type[HTTPC_HEADER_VALUE_MAX]; /* "" when absent */
        unsigned captured_count;                   /* how often capture_header came */
        char captured[HTTPC_HEADER_VALUE_MAX];     /* its first value, trimmed ("" none or too long) */
        bool truncated;                            /* answer_truncate cut the body at answer_max */
} httpc_answer;

void httpc_answer_done(httpc_answer *a);

/* Make the request. Any HTTP status is a success (the caller reads a != 200 as an error answer).
 * Returns 0 with *ret (release with httpc_answer_done), or -ECONNREFUSED (nothing listens
 * there), -EHOSTUNREACH (name or address not resolved or reached), -ETIMEDOUT (connect or whole
 * exchange), -ETIME (idle_timeout_ms without a byte), -EFBIG (the answer is over answer_max), -E2BIG (too many
 * headers), -ECANCELED (see cancel), a callback's own error, -EPROTO (TLS or HTTP failure), -ENOMEM, -EIO, each with a
 * message in *e that names the URL (or the socket) and libcurl's reason. */
int httpc_perform(httpc *c, const httpc_request *req, httpc_answer *ret, hull_error *e);

/* The same with the method POST, whatever req says. */
int httpc_post(httpc *c, const httpc_request *req, httpc_answer *ret, hull_error *e);

/* s percent-encoded for a URL's query (every byte but RFC 3986's unreserved ones). Returns 0 with
 * a new string (the caller frees) or -ENOMEM. */
int httpc_escape(httpc *c, const char *s, char **ret);
