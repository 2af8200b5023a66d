/* http-forward.c: see http-forward.h. */
#include "http-forward.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http-client.h"
#include "macro.h"

#define NODE_ID_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

int http_forward_hop(const http_req *r, char ret_from[static 64]) {
        unsigned n = 0;
        const char *v = http_req_header(r, HTTP_FORWARD_HOP_HEADER, &n);
        if (n == 0)
                return 0;
        size_t len = v ? strlen(v) : 0;
        if (n > 1 || len == 0 || len >= 64 || strspn(v, NODE_ID_CHARS) != len)
                return -EINVAL;
        if (ret_from)
                snprintf(ret_from, 64, "%s", v);
        return 1;
}

int http_forward_escape(const char *p, bool path, char *buf, size_t size) {
        static const char hex[] = "0123456789ABCDEF";
        size_t k = 0;
        for (const unsigned char *c = (const unsigned char *) p; *c; c++) {
                bool plain = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
                             *c == '-' || *c == '.' || *c == '_' || *c == '~' || (path && *c == '/');
                if (k + (plain ? 1 : 3) >= size)
                        return -ENAMETOOLONG;
                if (plain)
                        buf[k++] = (char) *c;
                else {
                        buf[k++] = '%';
                        buf[k++] = hex[*c >> 4];
                        buf[k++] = hex[*c & 15];
                }
        }
        if (k >= size)
                return -ENAMETOOLONG;
        buf[k] = '\0';
        return (int) k;
}

typedef struct fwd_url {
        char *url;
        size_t len, size;
        bool full;
} fwd_url;

static void url_add(fwd_url *u, const char *s, bool escape, bool path) {
        if (u->full)
                return;
        int n = escape ? http_forward_escape(s, path, u->url + u->len, u->size - u->len)
                       : (int) snprintf(u->url + u->len, u->size - u->len, "%s", s);
        if (n < 0 || (size_t) n >= u->size - u->len)
                u->full = true;
        else
                u->len += (size_t) n;
}

static void add_query(void *data, const char *name, const char *value) {
        fwd_url *u = data;
        url_add(u, strchr(u->url, '?') ? "&" : "?", false, false);
        url_add(u, name, true, false);
        url_add(u, "=", false, false);
        url_add(u, value ? value : "", true, false);
}

/* The caller's headers the owner needs to answer as this node would. */
typedef struct fwd_headers {
        char *lines[HTTPC_HEADERS_MAX];
        size_t n;
} fwd_headers;

static void keep_header(void *data, const char *name, const char *value) {
        static const char *const pass[] = {"authorization",  "x-api-key",    "anthropic-version",
                                           "anthropic-beta", "content-type", "accept"};
        fwd_headers *h = data;
        bool wanted = false;
        for (size_t i = 0; i < ELEMENTSOF(pass); i++)
                wanted |= strcasecmp(name, pass[i]) == 0;
        if (!wanted || h->n + 2 >= HTTPC_HEADERS_MAX)
                return;
        if (asprintf(&h->lines[h->n], "%s: %s", name, value ? value : "") >= 0)
                h->n++;
        else
                h->lines[h->n] = NULL;
}

static int keep_answer_header(void *ud, const char *name, const char *value) {
        http_req *r = ud;
        if (strncasecmp(name, "x-hull-", 7) == 0 || strcasecmp(name, "retry-after") == 0)
                (void) http_answer_header(r, name, value);
        return 0;
}

int http_forward(http_req *r, const char *base_url, const char *from_node, const char *to_node, hull_error *e) {
        char url[NODE_FORWARD_URL_MAX];
        fwd_url u = {.url = url, .size = sizeof(url)};
        url[0] = '\0';
        url_add(&u, base_url, false, false);
        while (u.len > 0 && url[u.len - 1] == '/')
                url[--u.len] = '\0';
        url_add(&u, http_req_path(r), true, true);
        http_req_each_query(r, add_query, &u);
        if (u.full)
                return hull_fail(e, -ENAMETOOLONG, "the forwarded URL is over %u bytes", NODE_FORWARD_URL_MAX);
        fwd_headers h = {0};
        http_req_each_header(r, keep_header, &h);
        int r_ = asprintf(&h.lines[h.n], "%s: %s", HTTP_FORWARD_HOP_HEADER, from_node);
        if (r_ >= 0)
                h.n++;
        h.lines[h.n] = NULL;
        size_t body_len = 0;
        const char *body = http_req_body(r, &body_len);
        _cleanup_httpc_ httpc *c = NULL;
        int rr = r_ < 0 ? hull_err(e, -ENOMEM, "out of memory") : httpc_new(&c, e);
        httpc_answer a = {0};
        if (rr >= 0) {
                httpc_request req = {.method = http_req_method(r),
                                     .url = url,
                                     .headers = (const char *const *) h.lines,
                                     .body_from = HTTPC_BODY_BUFFER,
                                     .body = body_len ? body : NULL,
                                     .body_len = body_len,
                                     .on_header = keep_answer_header,
                                     .userdata = r,
                                     .connect_timeout_ms = NODE_FORWARD_CONNECT_MS,
                                     .timeout_ms = NODE_FORWARD_TIMEOUT_MS,
                                     .answer_max = NODE_FORWARD_ANSWER_MAX};
                rr = httpc_perform(c, &req, &a, e);
        }
        for (size_t i = 0; i < h.n; i++) {
                explicit_bzero(h.lines[i], strlen(h.lines[i])); /* the caller's key */
                free(h.lines[i]);
        }
        if (rr < 0)
                return rr;
        if (a.status < 100 || a.status > 599) {
                httpc_answer_done(&a);
                return hull_fail(e, -EPROTO, "node %s answered with HTTP status %ld", to_node, a.status);
        }
        (void) http_answer_header(r, HTTP_FORWARD_NODE_HEADER, to_node);
        char ctype[HTTPC_HEADER_VALUE_MAX];
        snprintf(ctype, sizeof(ctype), "%s", a.content_type[0] ? a.content_type : "application/octet-stream");
        char *out = TAKE_PTR(a.body);
        size_t out_len = a.body_len;
        unsigned status = (unsigned) a.status;
        httpc_answer_done(&a);
        (void) http_answer(r, status, ctype, out, out_len);
        return 0;
}
