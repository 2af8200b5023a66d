/* http-client.c: bounded HTTP requests over libcurl, loaded when a client is made
 * (src/shared/dlib-curl.h). The pointers have the types of the header's declarations, so a call
 * through them is checked like a direct one (the setopt values are passed with the exact type
 * each option takes). */
#include "http-client.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlib-curl.h"
#include "dynbuf.h"
#include "fs-util.h"
#include "macro.h"
#include "time-util.h"

struct httpc {
        bool global_done; /* curl_global_init succeeded: curl_global_cleanup at free */
        bool keep;        /* httpc_keep_connections: one handle for every request */
        CURL *kept;       /* ... its connections and DNS cache stay between requests */
};

void httpc_keep_connections(httpc *c) {
        c->keep = true;
}

int httpc_new(httpc **ret, hull_error *e) {
        httpc *c = calloc(1, sizeof(*c));
        if (!c)
                return hull_err(e, -ENOMEM, "http: out of memory");
        int r = dlib_load(DLIB_CURL, e);
        if (r < 0) {
                free(c);
                return r;
        }
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                httpc_free(c);
                return hull_err(e, -EIO, "http: libcurl failed to initialise");
        }
        c->global_done = true;
        *ret = c;
        return 0;
}

void httpc_free(httpc *c) {
        if (!c)
                return;
        if (c->kept)
                curl_easy_cleanup(c->kept);
        if (c->global_done)
                curl_global_cleanup();
        /* libcurl may have loaded libraries (OpenSSL) that keep exit handlers: never unload it. */
        free(c);
}

void httpc_answer_done(httpc_answer *a) {
        free(a->body);
        *a = (httpc_answer){0};
}

/* What the callbacks share while the exchange runs. */
typedef struct transfer {
        const httpc_request *req;
        httpc_answer *a;
        CURL *h;
        dynbuf body;    /* collected when there is no on_data */
        uint64_t seen;  /* bytes of the answer's body */
        bool too_big;   /* over answer_max */
        bool truncated; /* answer_truncate: cut at answer_max */
        int cb_error;   /* a callback's error (negative errno): it stopped the transfer */
        bool cancelled;
        bool responded;                    /* on_response was called */
        bool idle;                         /* stopped by idle_timeout_ms */
        uint64_t last_byte_ms;             /* when a byte last moved (now_mono_ms) */
        curl_off_t last_dlnow, last_ulnow; /* the progress callback's counts at its last call */
} transfer;

/* The final response's status and type to the caller, once. */
static int respond(transfer *t) {
        long status = 0;
        char *ct = NULL;
        if (t->responded)
                return 0;
        t->responded = true;
        if (!t->req->on_response)
                return 0;
        if (curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK ||
            curl_easy_getinfo(t->h, CURLINFO_CONTENT_TYPE, &ct) != CURLE_OK)
                return -EIO;
        return t->req->on_response(t->req->userdata, status, ct ? ct : "");
}

static size_t on_body(char *p, size_t size, size_t n, void *userdata) {
        transfer *t = userdata;
        size_t len = size * n; /* curl promises size == 1 */
        t->last_byte_ms = now_mono_ms();
        if (!t->responded) {
                int r = respond(t);
                if (r < 0) {
                        t->cb_error = r;
                        return 0;
                }
        }
        size_t room = t->req->answer_max ? t->req->answer_max - MIN(t->seen, (uint64_t) t->req->answer_max) : 0;
        if (t->req->answer_max && len > room) {
                if (!t->req->answer_truncate) {
                        t->too_big = true;
                        return 0;
                }
                /* keep what fits, then stop the transfer: a success with a truncated body */
                if (room > 0 && on_body(p, 1, room, userdata) != room)
                        return 0;
                t->truncated = true;
                return 0;
        }
        t->seen += len;
        if (t->req->on_data) {
                int r = t->req->on_data(t->req->userdata, p, len);
                if (r < 0) {
                        t->cb_error = r;
                        return 0;
                }
                return len;
        }
        int r = dynbuf_add(&t->body, p, len);
        if (r < 0) {
                if (r == -E2BIG)
                        t->too_big = true;
                else
                        t->cb_error = r;
                return 0;
        }
        return len;
}

/* A header line, its name and value trimmed into buffers; false when it is not one or too long. */
static bool split_header(const char *p, size_t len, char *name, size_t name_size, char *value, size_t value_size) {
        const char *colon = memchr(p, ':', len), *end = p + len;
        if (!colon || colon == p || (size_t) (colon - p) >= name_size)
                return false;
        memcpy(name, p, (size_t) (colon - p));
        name[colon - p] = '\0';
        const char *v = colon + 1;
        while (v < end && (*v == ' ' || *v == '\t'))
                v++;
        while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
                end--;
        if ((size_t) (end - v) >= value_size)
                return false;
        memcpy(value, v, (size_t) (end - v));
        value[end - v] = '\0';
        return true;
}

static size_t on_header(char *p, size_t size, size_t n, void *userdata) {
        transfer *t = userdata;
        size_t len = size * n;
        t->last_byte_ms = now_mono_ms();
        char name[HTTPC_HEADER_VALUE_MAX], value[HTTPC_HEADER_LINE_MAX];
        if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) { /* a new response (after an interim one) */
                t->a->captured_count = 0;
                t->a->captured[0] = 0;
                return len;
        }
        if (!split_header(p, len, name, sizeof(name), value, sizeof(value))) {
                const char *cn = t->req->capture_header; /* a captured header too long to keep counts */
                if (cn && len > strlen(cn) && p[strlen(cn)] == ':' && strncasecmp(p, cn, strlen(cn)) == 0)
                        t->a->captured_count++;
                return len;
        }
        if (t->req->capture_header && strcasecmp(name, t->req->capture_header) == 0 && t->a->captured_count++ == 0 &&
            strlen(value) < sizeof(t->a->captured))
                memcpy(t->a->captured, value, strlen(value) + 1);
        if (t->req->on_header) {
                int r = t->req->on_header(t->req->userdata, name, value);
                if (r < 0) {
                        t->cb_error = r;
                        return 0;
                }
        }
        return len;
}

static size_t on_read(char *buf, size_t size, size_t n, void *userdata) {
        transfer *t = userdata;
        const httpc_request *req = t->req;
        ssize_t got;
        if (req->body_from == HTTPC_BODY_CALLBACK)
                got = req->body_read(req->userdata, buf, size * n);
        else {
                do
                        got = read(req->body_fd, buf, size * n);
                while (got < 0 && errno == EINTR);
                if (got < 0)
                        got = negative_errno();
        }
        if (got < 0) {
                t->cb_error = (int) got;
                return CURL_READFUNC_ABORT;
        }
        return (size_t) got;
}

/* libcurl's progress callback: a cancel from another thread, a transfer gone idle. */
static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
        transfer *t = userdata;
        const httpc_request *req = t->req;
        bool stop = req->cancel && atomic_load(req->cancel);
        if (!stop && req->cancel_fd > 0) {
                struct pollfd p = {.fd = req->cancel_fd, .events = POLLIN};
                stop = poll(&p, 1, 0) > 0;
        }
        if (stop) {
                t->cancelled = true;
                return 1;
        }
        if (req->idle_timeout_ms) {
                uint64_t now = now_mono_ms();
                if (dlnow != t->last_dlnow || ulnow != t->last_ulnow) {
                        t->last_dlnow = dlnow;
                        t->last_ulnow = ulnow;
                        t->last_byte_ms = now;
                }
                if (now - t->last_byte_ms >= req->idle_timeout_ms) {
                        t->idle = true;
                        return 1;
                }
        }
        return 0;
}

/* A pinned request resolves no name itself: libcurl asks here before it would (the names of
 * httpc_request.resolve are found in its cache and never come here). */
static int refuse_resolve(void *resolver_state, void *reserved, void *userdata) {
        return 1;
}

/* libcurl's error as an errno. Not a switch: CURLcode has a hundred values (-Wswitch-enum). */
static int errno_of(CURLcode cc) {
        static const CURLcode proto[] = {
                CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT,
                CURLE_SSL_CONNECT_ERROR,    CURLE_PEER_FAILED_VERIFICATION,
                CURLE_SSL_CERTPROBLEM,      CURLE_SSL_CIPHER,
                CURLE_SSL_CACERT_BADFILE,   CURLE_WEIRD_SERVER_REPLY,
                CURLE_GOT_NOTHING,          CURLE_HTTP2,
                CURLE_RECV_ERROR,           CURLE_SEND_ERROR,
                CURLE_PARTIAL_FILE,
        };
        if (cc == CURLE_COULDNT_CONNECT)
                return -ECONNREFUSED;
        if (cc == CURLE_COULDNT_RESOLVE_HOST || cc == CURLE_COULDNT_RESOLVE_PROXY)
                return -EHOSTUNREACH;
        if (cc == CURLE_OPERATION_TIMEDOUT)
                return -ETIMEDOUT;
        if (cc == CURLE_FILESIZE_EXCEEDED)
                return -EFBIG;
        if (cc == CURLE_OUT_OF_MEMORY)
                return -ENOMEM;
        if (cc == CURLE_ABORTED_BY_CALLBACK)
                return -ECANCELED;
        for (size_t i = 0; i < ELEMENTSOF(proto); i++)
                if (cc == proto[i])
                        return -EPROTO;
        return -EIO;
}

static long ms_long(uint64_t ms) {
        return ms > (uint64_t) INT32_MAX ? (long) INT32_MAX : (long) ms;
}

static int append_header(httpc *c, struct curl_slist **list, const char *h) {
        struct curl_slist *l = curl_slist_append(*list, h);
        if (!l)
                return -ENOMEM;
        *list = l;
        return 0;
}

/* The body's length for libcurl: a callback's or fd's size, -1 for chunked. */
static curl_off_t body_size_of(const httpc_request *req) {
        struct stat st;
        if (req->body_from == HTTPC_BODY_BUFFER)
                return req->body ? (curl_off_t) req->body_len : 0;
        if (req->body_size >= 0)
                return (curl_off_t) req->body_size;
        if (req->body_from == HTTPC_BODY_FD && fstat(req->body_fd, &st) == 0 && S_ISREG(st.st_mode)) {
                off_t at = lseek(req->body_fd, 0, SEEK_CUR);
                return at >= 0 && at <= st.st_size ? (curl_off_t) (st.st_size - at) : -1;
        }
        return -1;
}

/* Set h's options for req: t's callbacks, the request headers and pins (kept by the caller until
 * the transfer ends), errbuf for libcurl's message. Returns CURLE_OK or libcurl's refusal. */
static CURLcode set_options(CURL *h, const httpc_request *req, transfer *t, struct curl_slist *headers,
                            struct curl_slist *pins, char *errbuf, const char *method, bool has_body, curl_off_t size) {
        CURLcode cc = CURLE_OK;
#define SET(opt, val)                                                                                                  \
        if (cc == CURLE_OK)                                                                                            \
                cc = curl_easy_setopt(h, opt, val);
        SET(CURLOPT_URL, req->url);
        SET(CURLOPT_ERRORBUFFER, errbuf);
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_FOLLOWLOCATION, 0L);
        SET(CURLOPT_PROXY, ""); /* never a proxy from the environment */
        SET(CURLOPT_PROTOCOLS_STR, "http,https");
        SET(CURLOPT_USERAGENT, "hull/" HULL_VERSION);
        SET(CURLOPT_HTTPHEADER, headers);
        if (strcmp(method, "GET") == 0 && !has_body) {
                SET(CURLOPT_HTTPGET, 1L);
        } else if (strcmp(method, "HEAD") == 0) {
                SET(CURLOPT_NOBODY, 1L);
        } else if (strcmp(method, "PUT") == 0) {
                SET(CURLOPT_UPLOAD, 1L);
                SET(CURLOPT_INFILESIZE_LARGE, size);
        } else if (has_body || strcmp(method, "POST") == 0) {
                SET(CURLOPT_POST, 1L);
                SET(CURLOPT_POSTFIELDSIZE_LARGE, size);
                if (req->body_from == HTTPC_BODY_BUFFER) {
                        SET(CURLOPT_POSTFIELDS, req->body ? req->body : "");
                }
                if (strcmp(method, "POST") != 0) {
                        SET(CURLOPT_CUSTOMREQUEST, method);
                }
        } else {
                SET(CURLOPT_CUSTOMREQUEST, method);
        }
        if (req->body_from != HTTPC_BODY_BUFFER) {
                SET(CURLOPT_READFUNCTION, on_read);
                SET(CURLOPT_READDATA, t);
        }
        SET(CURLOPT_CONNECTTIMEOUT_MS,
            ms_long(req->connect_timeout_ms ? req->connect_timeout_ms : HTTPC_CONNECT_TIMEOUT_MS));
        SET(CURLOPT_TIMEOUT_MS, ms_long(req->timeout_ms));
        if (req->answer_max && !req->answer_truncate) {
                SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) req->answer_max);
        }
        if (req->resolve) {
                SET(CURLOPT_RESOLVE, pins);
                SET(CURLOPT_RESOLVER_START_FUNCTION, refuse_resolve);
        }
        SET(CURLOPT_WRITEFUNCTION, on_body);
        SET(CURLOPT_WRITEDATA, t);
        SET(CURLOPT_HEADERFUNCTION, on_header);
        SET(CURLOPT_HEADERDATA, t);
        if (req->cancel || req->cancel_fd > 0 || req->idle_timeout_ms) {
                SET(CURLOPT_NOPROGRESS, 0L);
                SET(CURLOPT_XFERINFOFUNCTION, on_progress);
                SET(CURLOPT_XFERINFODATA, t);
        }
        if (req->unix_socket) {
                SET(CURLOPT_UNIX_SOCKET_PATH, req->unix_socket);
        }
#undef SET
        return cc;
}

int httpc_perform(httpc *c, const httpc_request *req, httpc_answer *ret, hull_error *e) {
        httpc_answer a = {0};
        transfer t = {.req = req, .a = &a, .last_byte_ms = now_mono_ms()};
        struct curl_slist *headers = NULL, *pins = NULL;
        char errbuf[CURL_ERROR_SIZE] = "";
        const char *where = req->unix_socket ? req->unix_socket : req->url;
        const char *method = req->method ? req->method : "POST";
        bool has_body = req->body_from != HTTPC_BODY_BUFFER || req->body;
        curl_off_t size = body_size_of(req);
        size_t n_headers = 0;
        int r = 0;

        dynbuf_init(&t.body, req->answer_max);
        for (const char *const *h = req->headers; h && *h; h++) {
                if (++n_headers > HTTPC_HEADERS_MAX) {
                        curl_slist_free_all(headers);
                        return hull_err(e, -E2BIG, "http: more than %u request headers", HTTPC_HEADERS_MAX);
                }
                if (append_header(c, &headers, *h) < 0) {
                        curl_slist_free_all(headers);
                        return hull_err(e, -ENOMEM, "http: out of memory");
                }
        }
        /* No "Expect: 100-continue" round trip before a large body; a body of unknown length
         * goes chunked. */
        if (append_header(c, &headers, "Expect:") < 0 ||
            (has_body && size < 0 && append_header(c, &headers, "Transfer-Encoding: chunked") < 0)) {
                curl_slist_free_all(headers);
                return hull_err(e, -ENOMEM, "http: out of memory");
        }

        for (const char *const *p = req->resolve; p && *p; p++)
                if (append_header(c, &pins, *p) < 0) {
                        curl_slist_free_all(headers);
                        curl_slist_free_all(pins);
                        return hull_err(e, -ENOMEM, "http: out of memory");
                }

        CURL *h = c->keep && c->kept ? c->kept : curl_easy_init();
        if (h && c->keep) {
                if (h == c->kept)
                        curl_easy_reset(h); /* the options go; the open connections stay */
                c->kept = h;
        }
        if (!h) {
                curl_slist_free_all(headers);
                curl_slist_free_all(pins);
                return hull_err(e, -ENOMEM, "http: cannot make a libcurl handle");
        }
        t.h = h;
        CURLcode cc = set_options(h, req, &t, headers, pins, errbuf, method, has_body, size);
        if (cc != CURLE_OK) {
                r = hull_err(e, -EIO, "http: libcurl refused an option: %s", curl_easy_strerror(cc));
                goto out;
        }

        cc = curl_easy_perform(h);
        if (t.too_big || cc == CURLE_FILESIZE_EXCEEDED) {
                r = hull_err(e, -EFBIG, "http: the answer from %s is over %zu bytes", where, req->answer_max);
                goto out;
        }
        if (t.cancelled) {
                r = hull_err(e, -ECANCELED, "http: the request to %s was cancelled", where);
                goto out;
        }
        if (t.idle) {
                r = hull_fail(e, -ETIME, "http: %s sent nothing for %llu ms", where,
                              (unsigned long long) req->idle_timeout_ms);
                goto out;
        }
        if (t.truncated)
                cc = CURLE_OK; /* the write callback stopped it on purpose */
        if (t.cb_error) {
                r = hull_err(e, t.cb_error, "http: the transfer with %s was stopped", where);
                goto out;
        }
        if (cc != CURLE_OK) {
                /* hull_err appends the errno's text after the parenthesis. */
                r = errno_of(cc);
                const char *why = errbuf[0] ? errbuf : curl_easy_strerror(cc);
                if (r == -ETIMEDOUT)
                        r = hull_err(e, r, "http: %s did not answer in time (%s)", where, why);
                else
                        r = hull_err(e, r, "http: cannot reach %s (%s)", where, why);
                goto out;
        }
        long status = 0;
        char *ct = NULL;
        if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK ||
            curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct) != CURLE_OK) {
                r = hull_err(e, -EIO, "http: libcurl lost the answer's status");
                goto out;
        }
        a.status = status;
        a.truncated = t.truncated;
        if (ct && strlen(ct) < sizeof(a.content_type))
                memcpy(a.content_type, ct, strlen(ct) + 1);
        r = respond(&t); /* a body-less answer */
        if (r < 0) {
                r = hull_err(e, r, "http: the transfer with %s was stopped", where);
                goto out;
        }
        a.body = dynbuf_take(&t.body, &a.body_len);
        if (!a.body) {
                r = hull_err(e, -ENOMEM, "http: out of memory");
                goto out;
        }
        *ret = a;
        a = (httpc_answer){0};
out:
        if (h != c->kept)
                curl_easy_cleanup(h);
        curl_slist_free_all(headers);
        curl_slist_free_all(pins);
        dynbuf_free(&t.body);
        httpc_answer_done(&a);
        return r;
}

int httpc_post(httpc *c, const httpc_request *req, httpc_answer *ret, hull_error *e) {
        httpc_request post = *req;
        post.method = "POST";
        return httpc_perform(c, &post, ret, e);
}

int httpc_escape(httpc *c, const char *s, char **ret) {
        (void) c; /* a client exists: libcurl is loaded */
        char *q = curl_easy_escape(NULL, s, 0);
        if (!q)
                return -ENOMEM;
        *ret = strdup(q);
        curl_free(q);
        return *ret ? 0 : -ENOMEM;
}
