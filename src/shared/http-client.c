/* http-client.c: one bounded HTTP POST over libcurl, loaded with dlopen() when a client is made.
 * The pointers have the types of the header's declarations, so a call through them is checked
 * like a direct one (the setopt values are passed with the exact type each option takes). */
#include "http-client.h"

#define CURL_DISABLE_TYPECHECK 1 /* the typecheck macros would shadow nothing we call by name */
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"

#define CURL_SONAME "libcurl.so.4"

struct httpc {
        void *handle;
        bool global_done; /* curl_global_init succeeded: curl_global_cleanup at free */
        __typeof__(curl_global_init) *global_init;
        __typeof__(curl_global_cleanup) *global_cleanup;
        __typeof__(curl_easy_init) *easy_init;
        __typeof__(curl_easy_setopt) *easy_setopt;
        __typeof__(curl_easy_perform) *easy_perform;
        __typeof__(curl_easy_getinfo) *easy_getinfo;
        __typeof__(curl_easy_cleanup) *easy_cleanup;
        __typeof__(curl_easy_strerror) *easy_strerror;
        __typeof__(curl_slist_append) *slist_append;
        __typeof__(curl_slist_free_all) *slist_free_all;
};

int httpc_new(httpc **ret, hull_error *e) {
        httpc *c = calloc(1, sizeof(*c));
        if (!c)
                return hull_err(e, -ENOMEM, "http: out of memory");
        c->handle = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!c->handle) {
                int r = hull_err_hint(e, -ENOENT, "install libcurl4 (scripts/install-deps.sh does)",
                                      "http: cannot load %s: %s", CURL_SONAME, dlerror());
                free(c);
                return r;
        }
#define LOAD(f)                                                                                                        \
        if (!(*(void **) &c->f = dlsym(c->handle, "curl_" #f))) {                                                      \
                httpc_free(c);                                                                                         \
                return hull_err(e, -ENOENT, "http: %s lacks curl_%s", CURL_SONAME, #f);                                \
        }
        LOAD(global_init);
        LOAD(global_cleanup);
        LOAD(easy_init);
        LOAD(easy_setopt);
        LOAD(easy_perform);
        LOAD(easy_getinfo);
        LOAD(easy_cleanup);
        LOAD(easy_strerror);
        LOAD(slist_append);
        LOAD(slist_free_all);
#undef LOAD
        if (c->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
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
        if (c->global_done)
                c->global_cleanup();
        /* libcurl may have loaded libraries (OpenSSL) that keep exit handlers: never unload it. */
        free(c);
}

void httpc_answer_done(httpc_answer *a) {
        free(a->body);
        *a = (httpc_answer){0};
}

/* What the callbacks fill while the exchange runs. */
typedef struct transfer {
        const httpc_request *req;
        httpc_answer *a;
        size_t cap;
        bool too_big, no_memory;
} transfer;

static size_t on_body(char *p, size_t size, size_t n, void *userdata) {
        transfer *t = userdata;
        size_t len = size * n; /* curl promises size == 1 */
        if (len > t->req->answer_max - t->a->body_len) {
                t->too_big = true;
                return 0;
        }
        if (t->a->body_len + len + 1 > t->cap) {
                size_t cap = t->cap ? t->cap : HTTPC_ANSWER_INITIAL;
                while (cap < t->a->body_len + len + 1)
                        cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
                cap = MIN(cap, t->req->answer_max + 1);
                char *b = realloc(t->a->body, cap);
                if (!b) {
                        t->no_memory = true;
                        return 0;
                }
                t->a->body = b;
                t->cap = cap;
        }
        memcpy(t->a->body + t->a->body_len, p, len);
        t->a->body_len += len;
        t->a->body[t->a->body_len] = 0;
        return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *userdata) {
        transfer *t = userdata;
        size_t len = size * n;
        if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) { /* a new response (after an interim one) */
                t->a->captured_count = 0;
                t->a->captured[0] = 0;
                return len;
        }
        const char *name = t->req->capture_header;
        size_t nl = name ? strlen(name) : 0;
        if (!name || len <= nl || p[nl] != ':' || strncasecmp(p, name, nl) != 0)
                return len;
        const char *v = p + nl + 1, *end = p + len;
        while (v < end && (*v == ' ' || *v == '\t'))
                v++;
        while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
                end--;
        if (t->a->captured_count++ == 0 && (size_t) (end - v) < sizeof(t->a->captured)) {
                memcpy(t->a->captured, v, (size_t) (end - v));
                t->a->captured[end - v] = 0;
        }
        return len;
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
        for (size_t i = 0; i < ELEMENTSOF(proto); i++)
                if (cc == proto[i])
                        return -EPROTO;
        return -EIO;
}

static long ms_long(uint64_t ms) {
        return ms > (uint64_t) INT32_MAX ? (long) INT32_MAX : (long) ms;
}

int httpc_post(httpc *c, const httpc_request *req, httpc_answer *ret, hull_error *e) {
        httpc_answer a = {0};
        transfer t = {.req = req, .a = &a};
        struct curl_slist *headers = NULL;
        char errbuf[CURL_ERROR_SIZE] = "";
        const char *where = req->unix_socket ? req->unix_socket : req->url;
        size_t n_headers = 0;
        int r = 0;

        for (const char *const *h = req->headers; h && *h; h++) {
                if (++n_headers > HTTPC_HEADERS_MAX)
                        return hull_err(e, -E2BIG, "http: more than %u request headers", HTTPC_HEADERS_MAX);
                struct curl_slist *l = c->slist_append(headers, *h);
                if (!l) {
                        c->slist_free_all(headers);
                        return hull_err(e, -ENOMEM, "http: out of memory");
                }
                headers = l;
        }
        /* No "Expect: 100-continue" round trip before a large body. */
        struct curl_slist *l = c->slist_append(headers, "Expect:");
        if (!l) {
                c->slist_free_all(headers);
                return hull_err(e, -ENOMEM, "http: out of memory");
        }
        headers = l;

        CURL *h = c->easy_init();
        if (!h) {
                c->slist_free_all(headers);
                return hull_err(e, -ENOMEM, "http: cannot make a libcurl handle");
        }
        CURLcode cc = CURLE_OK;
#define SET(opt, val)                                                                                                  \
        if (cc == CURLE_OK)                                                                                            \
                cc = c->easy_setopt(h, opt, val);
        SET(CURLOPT_URL, req->url);
        SET(CURLOPT_ERRORBUFFER, errbuf);
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_FOLLOWLOCATION, 0L);
        SET(CURLOPT_PROXY, ""); /* never a proxy from the environment */
        SET(CURLOPT_PROTOCOLS_STR, "http,https");
        SET(CURLOPT_USERAGENT, "hull/" HULL_VERSION);
        SET(CURLOPT_HTTPHEADER, headers);
        SET(CURLOPT_POST, 1L);
        SET(CURLOPT_POSTFIELDS, req->body);
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->body_len);
        SET(CURLOPT_CONNECTTIMEOUT_MS,
            ms_long(req->connect_timeout_ms ? req->connect_timeout_ms : HTTPC_CONNECT_TIMEOUT_MS));
        SET(CURLOPT_TIMEOUT_MS, ms_long(req->timeout_ms));
        SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) req->answer_max);
        SET(CURLOPT_WRITEFUNCTION, on_body);
        SET(CURLOPT_WRITEDATA, &t);
        SET(CURLOPT_HEADERFUNCTION, on_header);
        SET(CURLOPT_HEADERDATA, &t);
        if (req->unix_socket)
                SET(CURLOPT_UNIX_SOCKET_PATH, req->unix_socket);
#undef SET
        if (cc != CURLE_OK) {
                r = hull_err(e, -EIO, "http: libcurl refused an option: %s", c->easy_strerror(cc));
                goto out;
        }

        cc = c->easy_perform(h);
        if (t.too_big || cc == CURLE_FILESIZE_EXCEEDED) {
                r = hull_err(e, -EFBIG, "http: the answer from %s is over %zu bytes", where, req->answer_max);
                goto out;
        }
        if (t.no_memory) {
                r = hull_err(e, -ENOMEM, "http: out of memory for the answer from %s", where);
                goto out;
        }
        if (cc != CURLE_OK) {
                /* hull_err appends the errno's text after the parenthesis. */
                r = errno_of(cc);
                const char *why = errbuf[0] ? errbuf : c->easy_strerror(cc);
                if (r == -ETIMEDOUT)
                        r = hull_err(e, r, "http: %s did not answer in time (%s)", where, why);
                else
                        r = hull_err(e, r, "http: cannot reach %s (%s)", where, why);
                goto out;
        }
        long status = 0;
        char *ct = NULL;
        if (c->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK ||
            c->easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct) != CURLE_OK) {
                r = hull_err(e, -EIO, "http: libcurl lost the answer's status");
                goto out;
        }
        a.status = status;
        if (ct && strlen(ct) < sizeof(a.content_type))
                memcpy(a.content_type, ct, strlen(ct) + 1);
        if (!a.body && !(a.body = calloc(1, 1))) {
                r = hull_err(e, -ENOMEM, "http: out of memory");
                goto out;
        }
        *ret = a;
        a = (httpc_answer){0};
out:
        c->easy_cleanup(h);
        c->slist_free_all(headers);
        httpc_answer_done(&a);
        return r;
}
