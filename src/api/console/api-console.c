/* api-console.c: the web console's embedded files over HTTP (api-console.h). */
#include "api-console.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "console-embed.h"
#include "macro.h"

static bool is_ows(char c) {
        return c == ' ' || c == '\t';
}

/* The length of s[0..n) without leading and trailing spaces and tabs; *p moves past the leading
 * ones. */
static size_t trim(const char **p, size_t n) {
        while (n > 0 && is_ows(**p)) {
                (*p)++;
                n--;
        }
        while (n > 0 && is_ows((*p)[n - 1]))
                n--;
        return n;
}

static bool name_is(const char *p, size_t n, const char *name) {
        return n == strlen(name) && strncasecmp(p, name, n) == 0;
}

/* A q-value of 0 ("0", "0.", "0.0", "0.00", "0.000") refuses a coding; anything else allows it. */
static bool q_zero(const char *p, size_t n) {
        if (n == 0 || p[0] != '0')
                return false;
        for (size_t i = 1; i < n; i++)
                if (p[i] != '.' && p[i] != '0')
                        return false;
        return true;
}

bool console_accepts_gzip(const char *ae) {
        if (!ae)
                return false;
        int gzip = -1, star = -1; /* -1 not named, 0 refused, 1 allowed */
        for (const char *p = ae; *p;) {
                const char *end = strchr(p, ',');
                size_t n = end ? (size_t) (end - p) : strlen(p);
                const char *semi = memchr(p, ';', n);
                const char *name = p;
                size_t name_n = trim(&name, semi ? (size_t) (semi - p) : n);
                bool allowed = true;
                if (semi) { /* parameters: only q counts */
                        const char *par = semi + 1;
                        size_t par_n = n - (size_t) (par - p);
                        par_n = trim(&par, par_n);
                        if (par_n >= 2 && (par[0] == 'q' || par[0] == 'Q') && par[1] == '=') {
                                const char *v = par + 2;
                                allowed = !q_zero(v, trim(&v, par_n - 2));
                        }
                }
                if (name_is(name, name_n, "gzip") || name_is(name, name_n, "x-gzip"))
                        gzip = gzip == 1 ? 1 : allowed;
                else if (name_is(name, name_n, "*"))
                        star = allowed;
                if (!end)
                        break;
                p = end + 1;
        }
        return gzip >= 0 ? gzip == 1 : star == 1;
}

bool console_etag_matches(const char *inm, const char *etag) {
        if (!inm || !etag)
                return false;
        size_t elen = strlen(etag);
        for (const char *p = inm; *p;) {
                const char *end = strchr(p, ',');
                size_t n = end ? (size_t) (end - p) : strlen(p);
                const char *t = p;
                n = trim(&t, n);
                if (n == 1 && t[0] == '*')
                        return true;
                if (n >= 2 && t[0] == 'W' && t[1] == '/') { /* weak comparison: the tag alone counts */
                        t += 2;
                        n -= 2;
                }
                if (n == elen && memcmp(t, etag, n) == 0)
                        return true;
                if (!end)
                        break;
                p = end + 1;
        }
        return false;
}

static const console_asset *asset_find(const char *name) {
        for (size_t i = 0; i < console_assets_n; i++)
                if (strcmp(console_assets[i].name, name) == 0)
                        return &console_assets[i];
        return NULL;
}

static void security_headers(http_req *r) {
        (void) http_answer_header(r, "Content-Security-Policy", CONSOLE_CSP);
        (void) http_answer_header(r, "X-Content-Type-Options", "nosniff");
        (void) http_answer_header(r, "Referrer-Policy", "no-referrer");
}

static void serve_asset(http_req *r, const char *name) {
        const console_asset *a = asset_find(name);
        security_headers(r);
        if (!a) {
                (void) http_answer_text(r, 404,
                                        "no such file in hull's console (open / for the console; the API is under "
                                        "/v1)\n");
                return;
        }
        bool gz = console_accepts_gzip(http_req_header(r, "accept-encoding", NULL));
        /* one tag per representation: the gzip bytes are another entity than the plain ones */
        char etag[48];
        size_t el = strlen(a->etag);
        if (gz && el >= 2 && el + 3 < sizeof(etag))
                snprintf(etag, sizeof(etag), "%.*s-gz\"", (int) (el - 1), a->etag);
        else
                snprintf(etag, sizeof(etag), "%s", a->etag);
        (void) http_answer_header(r, "ETag", etag);
        (void) http_answer_header(r, "Cache-Control", "no-cache");
        (void) http_answer_header(r, "Vary", "Accept-Encoding");
        if (console_etag_matches(http_req_header(r, "if-none-match", NULL), etag)) {
                (void) http_answer(r, 304, NULL, NULL, 0);
                return;
        }
        const unsigned char *src = gz ? a->gz : a->data;
        size_t len = gz ? a->gz_len : a->len;
        char *body = malloc(len ? len : 1);
        if (!body) {
                (void) http_answer_text(r, 503, "out of memory: try again\n");
                return;
        }
        memcpy(body, src, len);
        if (gz)
                (void) http_answer_header(r, "Content-Encoding", "gzip");
        (void) http_answer(r, 200, a->content_type, body, len);
}

static void index_page(http_req *r) {
        serve_asset(r, "index.html");
}

static void console_file(http_req *r) {
        serve_asset(r, http_req_param(r, "file"));
}

/* Plain text refusals (405 for a POST to /, say). */
static const http_api console_api = {.name = "console"};

static const http_route routes[] = {
        {.methods = HTTP_GET | HTTP_HEAD, .pattern = "/", .handler = index_page},
        {.methods = HTTP_GET | HTTP_HEAD, .pattern = "/console/{file}", .handler = console_file},
};

int api_console_register(http_server *s) {
        return http_add_routes(s, &console_api, routes, ELEMENTSOF(routes), NULL);
}
