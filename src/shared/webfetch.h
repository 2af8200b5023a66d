/* webfetch.h: an HTTP fetch through the egress guard (egress.h), for web_fetch.
 *
 * Each hop: the URL checked by the guard (its host's every address), then the request made
 * over src/shared/http-client with the connection pinned to the addresses checked
 * (CURLOPT_RESOLVE, and no name resolved by libcurl itself), so a DNS answer that changes after
 * the check reaches nothing new. Redirects are followed here, never by libcurl: 301, 302, 303,
 * 307 and 308, at most max_redirects, a relative Location joined to the URL with libcurl's URL
 * API, each new URL checked again; 303 (and 301 or 302 after a POST) continue as a GET without
 * the body. One deadline covers every hop and every resolution. The body is capped while it is
 * read: past max_bytes the transfer stops and the result says it was truncated (with the full
 * size when the server declared it). A browser-like User-Agent is sent. Returns errors; never
 * prints. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress.h"
#include "error.h"
#include "http-client.h"
#include "limits.h"

/* What web_fetch presents itself as: a current browser's string (some sites answer anything
 * else with an error page), with hull's name after it. */
#define WEBFETCH_USER_AGENT                                                                                            \
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 "       \
        "hull/" HULL_VERSION

typedef struct webfetch_request {
        const char *url;
        const char *method; /* "GET" (NULL) or another; a body goes with POST, PUT... */
        const char *body;   /* NULL: none */
        size_t body_len;
        const char *body_type;     /* the body's Content-Type; NULL: none sent */
        size_t max_bytes;          /* the body's cap; 0: WEBFETCH_MAX_BYTES_DEFAULT */
        uint64_t deadline_mono_ms; /* every hop included (now_mono_ms()'s clock); 0: now +
                                    * WEBFETCH_TIMEOUT_MS_DEFAULT */
        unsigned max_redirects;    /* 0: WEBFETCH_REDIRECTS_MAX; never more */
        const atomic_bool *cancel; /* set by another thread: -ECANCELED soon; NULL: none */
        /* Called before each request (hop 0 is the first) with the URL checked; NULL: none. */
        void (*on_request)(void *userdata, unsigned hop, const char *url);
        void *userdata;
} webfetch_request;

typedef struct webfetch_result {
        long status;                               /* the final answer's HTTP status */
        char *url;                                 /* the final URL (after redirects), malloc'd */
        char content_type[HTTPC_HEADER_VALUE_MAX]; /* "" when absent */
        char *body;                                /* NUL-terminated (not counted), malloc'd */
        size_t body_len;
        bool truncated;     /* the body went past max_bytes and was cut there */
        int64_t full_bytes; /* a truncated body's declared length (Content-Length); -1: unknown */
        unsigned redirects; /* followed */
} webfetch_result;
void webfetch_result_done(webfetch_result *r);

/* Fetch req->url through policy p with client c. Any HTTP status is a success (the caller
 * decides what a 404 means; a 3xx is returned as is when it is not a redirect hull follows).
 * Returns 0 and *ret (release with webfetch_result_done), or a negative errno with *e, whose
 * message names the URL at fault (a redirect's target when a redirect is refused): the guard's
 * errors (egress_check_url: -EINVAL, -EACCES, -EHOSTUNREACH...), -ELOOP ("too many redirects"),
 * -EPROTO (a redirect without a usable Location, or a failed exchange), -ETIMEDOUT (the
 * deadline), -ECANCELED, -ECONNREFUSED, -ENOMEM. A URL refused before the first hop makes no
 * request at all. */
int webfetch(httpc *c, const egress_policy *p, const webfetch_request *req, webfetch_result *ret, hull_error *e);
