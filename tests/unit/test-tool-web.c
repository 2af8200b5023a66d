/* test-tool-web.c: web_fetch and web_search as the loop calls them (tool_def.run with a
 * tool_ctx), against servers on 127.0.0.1 (allowlisted for web_fetch; web_search's base URL
 * points at a Tavily-shaped server). web_fetch: each content type's answer (HTML inline and as a
 * text handle, JSON and CSV as handles, text, binary, an oversize binary refused, a truncated
 * text and CSV), HTTP errors, a refused URL and a refused address as error results, a redirect
 * and its final URL, progress notes, a cancel. web_search: the request the provider gets, the
 * answer clipped, a refused key, not offered without one. */
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http-server.h"
#include "http-testlib.h"
#include "test.h"
#include "time-util.h"
#include "tool-web.h"
#include "utf8.h"

/* ---- the server ---- */

static char long_content[4096];
static atomic_uint search_requests;
static char last_search[4096];

static void answer(http_req *r, const char *type, const char *body, size_t n) {
        char *b = malloc(n + 1);
        if (b)
                memcpy(b, body, n);
        http_answer(r, 200, type, b, b ? n : 0);
}

static void h_short(http_req *r) {
        static const char page[] = "<html><head><title>Short page</title></head><body><h1>Hello</h1>"
                                   "<p>A <a href=\"https://example.org/\">link</a>.</p></body></html>";
        answer(r, "text/html; charset=utf-8", page, strlen(page));
}

static void h_long_html(http_req *r) {
        char *b = malloc(64 << 10);
        size_t n = 0;
        if (!b)
                return (void) http_answer_text(r, 500, "no memory\n");
        n += (size_t) snprintf(b, 64 << 10, "<html><head><title>Long</title></head><body>");
        for (int i = 0; i < 400; i++)
                n += (size_t) snprintf(b + n, (64 << 10) - n, "<p>Paragraph %d of the long page.</p>", i);
        n += (size_t) snprintf(b + n, (64 << 10) - n, "</body></html>");
        http_answer(r, 200, "text/html", b, n);
}

static void h_json(http_req *r) {
        static const char j[] =
                "{\"rows\": [{\"region\": \"north\", \"sales\": 10}, {\"region\": \"south\", \"sales\": 20}]}";
        answer(r, "application/json", j, strlen(j));
}

static void h_bad_json(http_req *r) {
        static const char j[] = "{\"rows\": [1, 2";
        answer(r, "application/vnd.api+json", j, strlen(j));
}

static void h_csv(http_req *r) {
        static const char c[] = "region,sales\nnorth,10\nsouth,20\neast,30\n";
        answer(r, "text/csv; charset=utf-8", c, strlen(c));
}

static void h_text(http_req *r) {
        answer(r, "text/plain", "plain words\n", 12);
}

static void h_long_text(http_req *r) {
        char *b = malloc(20000);
        if (b)
                memset(b, 't', 20000);
        http_answer(r, 200, "text/plain", b, b ? 20000 : 0);
}

static void h_octet_text(http_req *r) {
        static const char t[] = "caf\xc3\xa9 au lait\n";
        answer(r, "application/octet-stream", t, strlen(t));
}

static void h_binary(http_req *r) {
        char *b = malloc(3000);
        if (b)
                for (int i = 0; i < 3000; i++)
                        b[i] = (char) (i * 7);
        http_answer(r, 200, "image/png", b, b ? 3000 : 0);
}

static void h_missing(http_req *r) {
        http_answer_text(r, 404, "no such page here\n");
}

static void h_redirect(http_req *r) {
        http_answer_header(r, "Location", "/short.html");
        http_answer_text(r, 301, "moved\n");
}

static void h_search(http_req *r) {
        size_t n = 0;
        const char *body = http_req_body(r, &n);
        json_t *j = json_loadb(body ? body : "", n, 0, NULL);
        const char *auth = http_req_header(r, "Authorization", NULL);
        atomic_fetch_add(&search_requests, 1);
        snprintf(last_search, sizeof(last_search), "%.*s", (int) MIN(n, sizeof(last_search) - 1), body ? body : "");
        const char *key = json_string_value(json_object_get(j, "api_key"));
        if (!key || strcmp(key, "tvly-test") != 0 || !auth || strcmp(auth, "Bearer tvly-test") != 0) {
                json_decref(j);
                static const char d[] = "{\"detail\": {\"error\": \"Unauthorized: missing or invalid API key.\"}}";
                char *b = strdup(d);
                http_answer(r, 401, "application/json", b, b ? strlen(d) : 0);
                return;
        }
        json_t *results = json_array();
        for (int i = 0; i < 7; i++)
                json_array_append_new(results, json_pack("{s:s, s:s, s:s, s:f, s:s}", "title", "A result", "url",
                                                         "https://example.org/r", "content", long_content, "score",
                                                         0.9 - i * 0.1, "raw_content", "not passed on"));
        json_t *a = json_pack("{s:s, s:s, s:o, s:f}", "query", json_string_value(json_object_get(j, "query")), "answer",
                              "The short answer.", "results", results, "response_time", 0.5);
        char *out = json_dumps(a, JSON_COMPACT);
        json_decref(a);
        json_decref(j);
        http_answer(r, 200, "application/json", out, out ? strlen(out) : 0);
}

static const http_api api = {.name = "tool-web-test"};
static const http_route routes[] = {
        {.methods = HTTP_GET, .pattern = "/short.html", .handler = h_short},
        {.methods = HTTP_GET, .pattern = "/long.html", .handler = h_long_html},
        {.methods = HTTP_GET, .pattern = "/data.json", .handler = h_json},
        {.methods = HTTP_GET, .pattern = "/bad.json", .handler = h_bad_json},
        {.methods = HTTP_GET, .pattern = "/data.csv", .handler = h_csv},
        {.methods = HTTP_GET, .pattern = "/plain.txt", .handler = h_text},
        {.methods = HTTP_GET, .pattern = "/long.txt", .handler = h_long_text},
        {.methods = HTTP_GET, .pattern = "/octet", .handler = h_octet_text},
        {.methods = HTTP_GET, .pattern = "/image.png", .handler = h_binary},
        {.methods = HTTP_GET, .pattern = "/missing", .handler = h_missing},
        {.methods = HTTP_GET, .pattern = "/redirect", .handler = h_redirect},
        {.methods = HTTP_POST, .pattern = "/v1/search", .body_max = 65536, .handler = h_search},
};

/* ---- calling the tools ---- */

static char notes[4096];
static void on_progress(void *ud, const char *note) {
        size_t used = strlen(notes);
        snprintf(notes + used, sizeof(notes) - used, "%s;", note);
}

static int call(const tool_def *d, const char *input_json, const atomic_bool *cancel, tool_output *ret, hull_error *e) {
        json_t *in = json_loads(input_json, 0, NULL);
        tool_ctx c = {
                .cancel = cancel, .deadline_mono_ms = now_mono_ms() + 30000, .progress = on_progress, .env = d->env};
        *ret = (tool_output){0};
        int r = d->run(&c, in, ret, e);
        json_decref(in);
        return r;
}

static const char *str(const json_t *v, const char *key) {
        return json_string_value(json_object_get(v, key));
}
static json_int_t num(const json_t *v, const char *key) {
        return json_integer_value(json_object_get(v, key));
}

/* What the cases share: the loopback server's port and URLs, the tools made from it. */
typedef struct web_ctx {
        unsigned port;
        char base[64], search_base[128];
        tool_def fetch;         /* loopback allowed */
        tool_def fetch_none;    /* nothing allowed */
        tool_def search;        /* the fake Tavily, the right key */
        tool_def search_badkey; /* the same, a key it refuses */
} web_ctx;

/* web_fetch on each kind of page: inline text, handles, cuts, a redirect. */
static void test_fetch_pages(web_ctx *ctx) {
        hull_error e = {0};
        char url[256], input[512];
        tool_output o;
        /* a short page: inline text, title first, with status, content type and final URL */
        notes[0] = '\0';
        snprintf(input, sizeof(input), "{\"url\": \"%s/short.html\"}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(!o.is_error && o.value && !o.spill_data && num(o.value, "status") == 200);
        CHECK(str(o.value, "content_type") && strncmp(str(o.value, "content_type"), "text/html", 9) == 0);
        snprintf(url, sizeof(url), "%s/short.html", ctx->base);
        CHECK_EQ_STR(str(o.value, "url"), url);
        CHECK_EQ_STR(str(o.value, "title"), "Short page");
        CHECK_EQ_STR(str(o.value, "text"), "Short page\n\n# Hello\n\nA link (https://example.org/).");
        snprintf(input, sizeof(input), "GET %s/short.html;", ctx->base);
        CHECK_EQ_STR(notes, input);
        tool_output_done(&o);

        /* a redirect: the final URL named, the hop in the progress notes */
        notes[0] = '\0';
        snprintf(input, sizeof(input), "{\"url\": \"%s/redirect\"}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(!o.is_error && str(o.value, "url") && strcmp(str(o.value, "url"), url) == 0);
        CHECK(strstr(notes, "redirect 1: ") != NULL);
        tool_output_done(&o);

        /* a long page: a text handle, the facts beside it */
        snprintf(input, sizeof(input), "{\"url\": \"%s/long.html\"}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(!o.is_error && o.spill_data && strcmp(o.spill_format, "text") == 0 && o.spill_len > 4096);
        CHECK(o.spill_data && strncmp(o.spill_data, "Long\n\nParagraph 0 of the long page.\n\nParagraph 1", 48) == 0);
        CHECK(o.value && num(o.value, "status") == 200 && str(o.value, "title") && !json_object_get(o.value, "text"));
        snprintf(url, sizeof(url), "%s/long.html", ctx->base);
        CHECK_EQ_STR(o.spill_source, url);
        tool_output_done(&o);

        /* JSON: a json handle; JSON that is not: text, said */
        snprintf(input, sizeof(input), "{\"url\": \"%s/data.json\"}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(!o.is_error && o.spill_data && strcmp(o.spill_format, "json") == 0 &&
              strncmp(o.spill_data, "{\"rows\"", 7) == 0 && num(o.value, "status") == 200);
        tool_output_done(&o);
        snprintf(input, sizeof(input), "{\"url\": \"%s/bad.json\"}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(!o.is_error && !o.spill_data && str(o.value, "text") &&
              strcmp(str(o.value, "text"), "{\"rows\": [1, 2") == 0);
        CHECK(str(o.value, "note") && strstr(str(o.value, "note"), "not valid JSON"));
        tool_output_done(&o);

        /* CSV: a table handle; cut by max_bytes, the partial row dropped */
        snprintf(input, sizeof(input), "{\"url\": \"%s/data.csv\"}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(!o.is_error && o.spill_data && strcmp(o.spill_format, "csv") == 0 &&
              strcmp(o.spill_data, "region,sales\nnorth,10\nsouth,20\neast,30\n") == 0);
        tool_output_done(&o);
        snprintf(input, sizeof(input), "{\"url\": \"%s/data.csv\", \"max_bytes\": 25}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(!o.is_error && o.spill_data && strcmp(o.spill_data, "region,sales\nnorth,10\n") == 0 &&
              json_is_true(json_object_get(o.value, "truncated")) && num(o.value, "full_bytes") == 39);
        tool_output_done(&o);

        /* text: inline; long: a text handle; cut: truncated with the full size */
        snprintf(input, sizeof(input), "{\"url\": \"%s/plain.txt\"}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(!o.is_error && str(o.value, "text") && strcmp(str(o.value, "text"), "plain words\n") == 0);
        tool_output_done(&o);
        snprintf(input, sizeof(input), "{\"url\": \"%s/long.txt\"}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(!o.is_error && o.spill_data && o.spill_len == 20000 && strcmp(o.spill_format, "text") == 0);
        tool_output_done(&o);
        snprintf(input, sizeof(input), "{\"url\": \"%s/long.txt\", \"max_bytes\": 100}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(!o.is_error && str(o.value, "text") && strlen(str(o.value, "text")) == 100 &&
              json_is_true(json_object_get(o.value, "truncated")) && num(o.value, "full_bytes") == 20000);
        tool_output_done(&o);
        /* a generic type holding UTF-8 text: text */
        snprintf(input, sizeof(input), "{\"url\": \"%s/octet\"}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(!o.is_error && str(o.value, "text") && strcmp(str(o.value, "text"), "caf\xc3\xa9 au lait\n") == 0);
        tool_output_done(&o);

        /* binary: a binary handle; over max_bytes: an error, not a cut file */
        snprintf(input, sizeof(input), "{\"url\": \"%s/image.png\"}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(!o.is_error && o.spill_data && o.spill_len == 3000 && strcmp(o.spill_format, "binary") == 0);
        tool_output_done(&o);
        snprintf(input, sizeof(input), "{\"url\": \"%s/image.png\", \"max_bytes\": 1000}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(o.is_error && !o.spill_data && num(o.value, "status") == 200 && str(o.value, "error") &&
              strstr(str(o.value, "error"), "binary (image/png) and larger than max_bytes (1000 bytes"));
        tool_output_done(&o);
}

/* The errors web_fetch answers the model, and a cancel. */
static void test_fetch_errors(web_ctx *ctx) {
        hull_error e = {0};
        tool_output o;
        char url[256], input[512];
        /* errors the model sees: {status, error, url} */
        snprintf(input, sizeof(input), "{\"url\": \"%s/missing\"}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(o.is_error && num(o.value, "status") == 404 && str(o.value, "error") &&
              strstr(str(o.value, "error"), "HTTP 404") && str(o.value, "body") &&
              strcmp(str(o.value, "body"), "no such page here\n") == 0);
        tool_output_done(&o);
        snprintf(input, sizeof(input), "{\"url\": \"%s/short.html\"}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch_none, input, NULL, &o, &e), 0);
        CHECK(o.is_error && json_is_null(json_object_get(o.value, "status")) && str(o.value, "error") &&
              strstr(str(o.value, "error"), "blocked by egress policy: blocked internal address 127.0.0.1"));
        snprintf(url, sizeof(url), "%s/short.html", ctx->base);
        CHECK_EQ_STR(str(o.value, "url"), url);
        tool_output_done(&o);
        CHECK_EQ_INT(call(&ctx->fetch, "{\"url\": \"file:///etc/passwd\"}", NULL, &o, &e), 0);
        CHECK(o.is_error && strstr(str(o.value, "error"), "scheme 'file' is not allowed"));
        tool_output_done(&o);
        CHECK_EQ_INT(call(&ctx->fetch, "{\"url\": \"http://169.254.169.254/latest/meta-data/\"}", NULL, &o, &e), 0);
        CHECK(o.is_error && strstr(str(o.value, "error"), "blocked cloud metadata endpoint"));
        tool_output_done(&o);
        snprintf(input, sizeof(input), "{\"url\": \"%s/plain.txt\", \"max_bytes\": 0}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, NULL, &o, &e), 0);
        CHECK(o.is_error && strstr(str(o.value, "error"), "max_bytes must be"));
        tool_output_done(&o);
        /* a cancelled turn ends the call with -ECANCELED */
        atomic_bool cancel = true;
        snprintf(input, sizeof(input), "{\"url\": \"%s/plain.txt\"}", ctx->base);
        CHECK_EQ_INT(call(&ctx->fetch, input, &cancel, &o, &e), -ECANCELED);
        tool_output_done(&o);
}

/* web_search: the request as Tavily takes it, the answer clipped, errors. */
static void test_search(web_ctx *ctx) {
        hull_error e = {0};
        tool_output o;
        /* web_search: the request as Tavily takes it, the answer clipped */
        CHECK_EQ_INT(call(&ctx->search, "{\"query\": \"top regions\", \"max_results\": 3}", NULL, &o, &e), 0);
        CHECK(!o.is_error && o.value && str(o.value, "answer") &&
              strcmp(str(o.value, "answer"), "The short answer.") == 0);
        json_t *results = json_object_get(o.value, "results");
        CHECK(json_array_size(results) == 3);
        json_t *first = json_array_get(results, 0);
        const char *content = str(first, "content");
        size_t chars = 0;
        for (const char *p = content; p && *p; p++)
                chars += ((unsigned char) *p & 0xc0) != 0x80;
        CHECK(content && utf8_is_valid(content, strlen(content)) && chars == WEBSEARCH_SNIPPET_CHARS);
        CHECK(content && strcmp(content + strlen(content) - 3, "\xe2\x80\xa6") == 0);
        CHECK(str(first, "url") && strcmp(str(first, "url"), "https://example.org/r") == 0 &&
              json_is_real(json_object_get(first, "score")) && !json_object_get(first, "raw_content"));
        json_t *sent = json_loads(last_search, 0, NULL);
        CHECK(sent && strcmp(str(sent, "query"), "top regions") == 0 && num(sent, "max_results") == 3 &&
              json_is_true(json_object_get(sent, "include_answer")) && strcmp(str(sent, "api_key"), "tvly-test") == 0);
        json_decref(sent);
        tool_output_done(&o);
        /* the default number of results */
        CHECK_EQ_INT(call(&ctx->search, "{\"query\": \"q\"}", NULL, &o, &e), 0);
        CHECK(json_array_size(json_object_get(o.value, "results")) == WEBSEARCH_RESULTS_DEFAULT);
        tool_output_done(&o);
        /* a refused key: an error result naming the provider's reason and what to check */
        CHECK_EQ_INT(call(&ctx->search_badkey, "{\"query\": \"q\"}", NULL, &o, &e), 0);
        CHECK(o.is_error && str(o.value, "error") &&
              strstr(str(o.value, "error"),
                     "HTTP 401: Unauthorized: missing or invalid API key. (check the search API key)"));
        tool_output_done(&o);
        CHECK_EQ_INT(call(&ctx->search, "{\"query\": \"\"}", NULL, &o, &e), 0);
        CHECK(o.is_error && strstr(str(o.value, "error"), "query must be"));
        tool_output_done(&o);
        unsigned before = atomic_load(&search_requests);
        CHECK_EQ_INT(call(&ctx->search, "{\"query\": \"q\", \"max_results\": 21}", NULL, &o, &e), 0);
        CHECK(o.is_error && atomic_load(&search_requests) == before);
        tool_output_done(&o);
}

/* The tools built from plain settings (what hull run calls), and their checks. */
static void test_from_settings(web_ctx *ctx) {
        hull_error e = {0};
        tool_output o;
        char input[512];
        /* built from plain settings (what hull run calls): web_fetch alone by default, and refusing
         * loopback; the allowlist by CIDR or by host, the default cap and web_search with a key */
        tool_web *w = NULL;
        tool_def defs[2];
        CHECK_EQ_INT(tool_web_new(NULL, 0, NULL, 0, 0, NULL, NULL, &w, &e), 0);
        CHECK(w && tool_web_defs(w, defs) == 1 && strcmp(defs[0].name, "web_fetch") == 0);
        snprintf(input, sizeof(input), "{\"url\": \"%s/plain.txt\"}", ctx->base);
        CHECK_EQ_INT(call(&defs[0], input, NULL, &o, &e), 0);
        CHECK(o.is_error && strstr(str(o.value, "error"), "blocked internal address 127.0.0.1"));
        tool_output_done(&o);
        tool_web_free(w);
        const char *cidrs[] = {"127.0.0.0/8"}, *hosts[] = {"localhost"};
        w = NULL;
        CHECK_EQ_INT(tool_web_new(NULL, 0, cidrs, 1, 100, "tvly-test", ctx->search_base, &w, &e), 0);
        CHECK(w && tool_web_defs(w, defs) == 2 && strcmp(defs[1].name, "web_search") == 0);
        snprintf(input, sizeof(input), "{\"url\": \"%s/long.txt\"}", ctx->base);
        CHECK_EQ_INT(call(&defs[0], input, NULL, &o, &e), 0);
        CHECK(!o.is_error && o.value && json_is_true(json_object_get(o.value, "truncated")) &&
              num(o.value, "full_bytes") == 20000);
        tool_output_done(&o);
        CHECK_EQ_INT(call(&defs[1], "{\"query\": \"q\"}", NULL, &o, &e), 0);
        CHECK(!o.is_error && json_array_size(json_object_get(o.value, "results")) == WEBSEARCH_RESULTS_DEFAULT);
        tool_output_done(&o);
        tool_web_free(w);
        w = NULL;
        CHECK_EQ_INT(tool_web_new(hosts, 1, NULL, 0, 0, "", NULL, &w, &e), 0);
        CHECK(w && tool_web_defs(w, defs) == 1);
        snprintf(input, sizeof(input), "{\"url\": \"http://localhost:%u/plain.txt\"}", ctx->port);
        CHECK_EQ_INT(call(&defs[0], input, NULL, &o, &e), 0);
        CHECK(!o.is_error || strstr(str(o.value, "error"), "could not resolve")); /* no localhost entry: not ours */
        if (!o.is_error)
                CHECK(num(o.value, "status") == 200);
        tool_output_done(&o);
        tool_web_free(w);
        /* each list holds what its name says; bounds and the ctx->base URL checked at once */
        w = NULL;
        CHECK_EQ_INT(tool_web_new(NULL, 0, hosts, 1, 0, NULL, NULL, &w, &e), -EINVAL);
        CHECK(w == NULL && strstr(e.msg, "allow_cidrs entry 'localhost' is not a CIDR"));
        CHECK_EQ_INT(tool_web_new(cidrs, 1, NULL, 0, 0, NULL, NULL, &w, &e), -EINVAL);
        CHECK(strstr(e.msg, "allow_hosts entry '127.0.0.0/8' is not a host name"));
        const char *bad_host[] = {"in valid"};
        CHECK_EQ_INT(tool_web_new(bad_host, 1, NULL, 0, 0, NULL, NULL, &w, &e), -EINVAL);
        CHECK_EQ_INT(tool_web_new(NULL, 0, NULL, 0, WEBFETCH_MAX_BYTES_MAX + 1, NULL, NULL, &w, &e), -EINVAL);
        CHECK_EQ_INT(tool_web_new(NULL, 0, NULL, 0, 0, "k", "ftp://x/", &w, &e), -EINVAL);
        CHECK(w == NULL);
}

int main(void) {
        hull_error e = {0};
        dlog log = {.level = DLOG_ERROR, .fd = 2};
        metrics m;
        metrics_init(&m);
        http_config cfg = {.fallback = &api, .log = &log, .metrics = &m};
        http_server *srv = NULL;
        CHECK(http_listen_parse("127.0.0.1:0", &cfg.listen, &cfg.listen_len) == 0);
        if (http_new(&cfg, &srv, &e) < 0 || http_add_routes(srv, &api, routes, ELEMENTSOF(routes), NULL) < 0 ||
            http_start(srv, &e) < 0) {
                printf("skip - no loopback server: %s\n", e.msg);
                return 77;
        }
        for (size_t i = 0; i + 2 < sizeof(long_content); i += 2)
                memcpy(long_content + i, "\xc3\xa9", 2); /* 2047 characters of é */
        web_ctx ctx = {.port = http_port(srv)};
        snprintf(ctx.base, sizeof(ctx.base), "http://127.0.0.1:%u", ctx.port);

        const char *allow[] = {"127.0.0.1"};
        egress_policy *lo = NULL, *none = NULL;
        CHECK(egress_policy_new(allow, 1, NULL, NULL, &lo, &e) == 0);
        CHECK(egress_policy_new(NULL, 0, NULL, NULL, &none, &e) == 0);
        snprintf(ctx.search_base, sizeof(ctx.search_base), "%s/v1/", ctx.base);
        tool_web_config wc = {.egress = lo, .search_api_key = "tvly-test", .search_base_url = ctx.search_base};
        tool_web_config wc_none = {.egress = none};
        tool_web_config wc_badkey = {.egress = lo, .search_api_key = "wrong", .search_base_url = ctx.search_base};
        tool_def d;
        CHECK(tool_web_fetch_def(&wc, &ctx.fetch, &e) == 0);
        CHECK(tool_web_fetch_def(&wc_none, &ctx.fetch_none, &e) == 0);
        CHECK(tool_web_search_def(&wc, &ctx.search, &e) == 0);
        CHECK(tool_web_search_def(&wc_badkey, &ctx.search_badkey, &e) == 0);

        /* the definitions: names, schemas that are JSON objects, web_search only with a key */
        CHECK(strcmp(ctx.fetch.name, "web_fetch") == 0 && strcmp(ctx.search.name, "web_search") == 0);
        json_t *schema = json_loads(ctx.fetch.input_schema, 0, NULL);
        CHECK(json_is_object(schema) && json_is_object(json_object_get(json_object_get(schema, "properties"), "url")));
        json_decref(schema);
        schema = json_loads(ctx.search.input_schema, 0, NULL);
        CHECK(json_is_object(schema) &&
              json_integer_value(json_object_get(json_object_get(json_object_get(schema, "properties"), "max_results"),
                                                 "maximum")) == WEBSEARCH_RESULTS_MAX);
        json_decref(schema);
        CHECK(!ctx.fetch.needs_session && ctx.fetch.default_policy == TOOL_ALWAYS_ALLOW && ctx.fetch.env == &wc);
        CHECK_EQ_INT(tool_web_search_def(&wc_none, &d, &e), -ENOENT);
        tool_web_config bad = {.egress = lo, .search_api_key = "k", .search_provider = "bing"};
        CHECK_EQ_INT(tool_web_search_def(&bad, &d, &e), -EINVAL);
        CHECK(strstr(e.msg, "unknown search provider 'bing'") != NULL);
        bad = (tool_web_config){.egress = lo, .search_api_key = "k", .search_base_url = "ftp://x/"};
        CHECK_EQ_INT(tool_web_search_def(&bad, &d, &e), -EINVAL);
        CHECK_EQ_INT(tool_web_fetch_def(&(tool_web_config){0}, &d, &e), -EINVAL);
        CHECK(tool_web_search_provider_find("tavily") != NULL && tool_web_search_provider_find("x") == NULL);

        test_fetch_pages(&ctx);
        test_fetch_errors(&ctx);
        test_search(&ctx);
        test_from_settings(&ctx);

        egress_policy_free(lo);
        egress_policy_free(none);
        CHECK_EQ_INT(http_stop(srv), 0);
        return test_done();
}
