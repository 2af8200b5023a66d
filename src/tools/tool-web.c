/* tool-web.c: web_fetch and web_search (see tool-web.h). */
#include "tool-web.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hd-json.h"
#include "html-text.h"
#include "macro.h"
#include "time-util.h"
#include "utf8.h"
#include "webfetch.h"

/* ---- shared ---- */

static uint64_t deadline_of(const tool_ctx *c, uint64_t timeout_ms) {
        uint64_t d = now_mono_ms() + timeout_ms;
        return c->deadline_mono_ms ? MIN(d, c->deadline_mono_ms) : d;
}

/* An error result for the model: {"status": status or null, "error": msg, "url": url}. */
static int error_result(tool_output *ret, long status, const char *msg, const char *url) {
        json_t *v = json_pack("{s:o, s:s, s:s}", "status", status > 0 ? json_integer(status) : json_null(), "error",
                              msg, "url", url ? url : "");
        if (!v)
                return -ENOMEM;
        *ret = (tool_output){.value = v, .is_error = true};
        return 0;
}

/* s (n bytes, any bytes) as valid UTF-8 of at most max characters, "…" ending a clipped one. */
static json_t *clipped(const char *s, size_t n, size_t max_chars) {
        _cleanup_free_ char *v = NULL;
        size_t vl = 0, chars = 0, i = 0;
        if (utf8_make_valid(s, n, &v, &vl) < 0)
                return NULL;
        for (; i < vl && chars < max_chars; i++)
                if (((unsigned char) v[i] & 0xc0) != 0x80)
                        chars++;
        while (i < vl && ((unsigned char) v[i] & 0xc0) == 0x80)
                i++;
        if (i >= vl)
                return json_stringn(v, vl);
        /* clipped: one character fewer, and the ellipsis */
        while (i > 0 && ((unsigned char) v[--i] & 0xc0) == 0x80)
                ;
        _cleanup_free_ char *out = malloc(i + 4);
        if (!out)
                return NULL;
        memcpy(out, v, i);
        memcpy(out + i, "\xe2\x80\xa6", 3);
        return json_stringn(out, i + 3);
}

static int set_str(json_t *o, const char *key, const char *s, size_t n, size_t max_chars) {
        json_t *v = clipped(s, n, max_chars);
        return v && json_object_set_new(o, key, v) == 0 ? 0 : -ENOMEM;
}

/* ---- web_fetch ---- */

typedef enum body_kind {
        BODY_HTML,
        BODY_JSON,
        BODY_CSV,
        BODY_TEXT,
        BODY_BINARY,
} body_kind;

/* The media type of a Content-Type (lowercase, no parameters) and its charset parameter. */
static void media_type(const char *ct, char *type, size_t type_size, char *charset, size_t charset_size) {
        size_t n = strcspn(ct, ";");
        while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
                n--;
        size_t i = 0, k = 0;
        while (ct[i] == ' ' || ct[i] == '\t')
                i++;
        for (; i < n && k + 1 < type_size; i++)
                type[k++] = (ct[i] >= 'A' && ct[i] <= 'Z') ? (char) (ct[i] - 'A' + 'a') : ct[i];
        type[k] = '\0';
        charset[0] = '\0';
        for (const char *p = strchr(ct, ';'); p; p = strchr(p + 1, ';')) {
                const char *q = p + 1;
                while (*q == ' ' || *q == '\t')
                        q++;
                if (strncasecmp(q, "charset=", 8) != 0)
                        continue;
                q += 8;
                if (*q == '"')
                        q++;
                size_t m = strcspn(q, "\"; \t");
                if (m < charset_size) {
                        memcpy(charset, q, m);
                        charset[m] = '\0';
                }
                break;
        }
}

static bool ends_with(const char *s, const char *suffix) {
        size_t n = strlen(s), m = strlen(suffix);
        return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Text by its first bytes: valid UTF-8 (a character cut at the end of the window is fine) and
 * no NUL. */
static bool looks_like_text(const char *p, size_t n) {
        size_t w = MIN(n, (size_t) WEBFETCH_SNIFF_BYTES);
        if (memchr(p, '\0', w))
                return false;
        if (w < n) /* the window may end inside a character */
                for (size_t back = 0; back < 3 && w > 0 && ((unsigned char) p[w] & 0xc0) == 0x80; back++)
                        w--;
        return utf8_is_valid(p, w);
}

static bool looks_like_html(const char *p, size_t n) {
        size_t i = 0;
        while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
                i++;
        return (n - i >= 14 && strncasecmp(p + i, "<!doctype html", 14) == 0) ||
               (n - i >= 5 && strncasecmp(p + i, "<html", 5) == 0);
}

static body_kind kind_of(const char *type, const char *body, size_t len) {
        if (strcmp(type, "text/html") == 0 || strcmp(type, "application/xhtml+xml") == 0)
                return BODY_HTML;
        if (strcmp(type, "application/json") == 0 || strcmp(type, "text/json") == 0 || ends_with(type, "+json"))
                return BODY_JSON;
        if (strcmp(type, "text/csv") == 0 || strcmp(type, "application/csv") == 0)
                return BODY_CSV;
        if (strncmp(type, "text/", 5) == 0 || strcmp(type, "application/xml") == 0 || ends_with(type, "+xml") ||
            strcmp(type, "application/javascript") == 0 || strcmp(type, "application/x-javascript") == 0 ||
            strcmp(type, "application/ecmascript") == 0 || strcmp(type, "application/yaml") == 0 ||
            strcmp(type, "application/x-yaml") == 0 || strcmp(type, "application/toml") == 0 ||
            strcmp(type, "application/x-ndjson") == 0 || strcmp(type, "application/jsonl") == 0)
                return BODY_TEXT;
        if (!looks_like_text(body, len))
                return BODY_BINARY;
        return looks_like_html(body, len) ? BODY_HTML : BODY_TEXT;
}

/* The facts every answer starts with. */
static json_t *facts(const webfetch_result *f) {
        json_t *v = json_pack("{s:I, s:s, s:s, s:I}", "status", (json_int_t) f->status, "content_type", f->content_type,
                              "url", f->url, "bytes", (json_int_t) f->body_len);
        if (v && f->truncated) {
                if (json_object_set_new(v, "truncated", json_true()) < 0 ||
                    (f->full_bytes >= 0 && json_object_set_new(v, "full_bytes", json_integer(f->full_bytes)) < 0)) {
                        json_decref(v);
                        return NULL;
                }
        }
        return v;
}

/* The answer: value (consumed) with data (n bytes, copied) kept as a handle of format. */
static int spill(tool_output *ret, json_t *value, const char *data, size_t n, const char *format, const char *url) {
        char *d = malloc(n + 1), *src = strdup(url);
        if (!d || !src) {
                free(d);
                free(src);
                json_decref(value);
                return -ENOMEM;
        }
        memcpy(d, data, n);
        d[n] = '\0';
        *ret = (tool_output){
                .value = value, .spill_data = d, .spill_len = n, .spill_format = format, .spill_source = src};
        return 0;
}

/* Text (valid UTF-8) inline when short, else a text handle. */
static int text_answer(tool_output *ret, json_t *v, const char *text, size_t n, const char *url) {
        if (n <= WEBFETCH_INLINE_TEXT_MAX) {
                if (json_object_set_new(v, "text", json_stringn(text, n)) < 0) {
                        json_decref(v);
                        return -ENOMEM;
                }
                *ret = (tool_output){.value = v};
                return 0;
        }
        return spill(ret, v, text, n, "text", url);
}

static int answer_html(tool_output *ret, json_t *v, const webfetch_result *f, const char *charset, hull_error *e) {
        html_text t = {0};
        int r = html_to_text(f->body, f->body_len, charset[0] ? charset : NULL, 0, &t, e);
        if (r < 0) {
                json_decref(v);
                return r;
        }
        if ((t.title && json_object_set_new(v, "title", json_string(t.title)) < 0) ||
            (t.len == 0 && json_object_set_new(v, "note", json_string("the page has no readable text")) < 0)) {
                html_text_done(&t);
                json_decref(v);
                return -ENOMEM;
        }
        r = text_answer(ret, v, t.text, t.len, f->url);
        html_text_done(&t);
        return r;
}

static int answer_text(tool_output *ret, json_t *v, const webfetch_result *f, const char *note) {
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        if (utf8_make_valid(f->body, f->body_len, &text, &n) < 0 ||
            (note && json_object_set_new(v, "note", json_string(note)) < 0)) {
                json_decref(v);
                return -ENOMEM;
        }
        return text_answer(ret, v, text, n, f->url);
}

static int answer_body(tool_output *ret, const webfetch_result *f, size_t max_bytes, hull_error *e) {
        char type[HTTPC_HEADER_VALUE_MAX], charset[64];
        media_type(f->content_type, type, sizeof(type), charset, sizeof(charset));
        body_kind k = kind_of(type, f->body, f->body_len);
        json_t *v = facts(f);
        if (!v)
                return -ENOMEM;
        switch (k) {
        case BODY_HTML:
                return answer_html(ret, v, f, charset, e);
        case BODY_JSON:
                if (f->truncated)
                        return answer_text(ret, v, f, "the JSON was cut at max_bytes, so it is kept as text");
                if (hd_json_scan(f->body, f->body_len, NULL, NULL, NULL, NULL) < 0)
                        return answer_text(ret, v, f, "the body is not valid JSON, so it is kept as text");
                return spill(ret, v, f->body, f->body_len, "json", f->url);
        case BODY_CSV: {
                size_t n = f->body_len;
                if (f->truncated) { /* the last, partial record dropped */
                        while (n > 0 && f->body[n - 1] != '\n')
                                n--;
                }
                return spill(ret, v, f->body, n, "csv", f->url);
        }
        case BODY_TEXT:
                return answer_text(ret, v, f, NULL);
        case BODY_BINARY:
                break;
        }
        if (f->truncated) {
                char msg[HULL_ERROR_MSG_MAX];
                snprintf(msg, sizeof(msg),
                         "the body is binary (%s) and larger than max_bytes (%zu bytes%s): binary files are not cut; "
                         "give a larger max_bytes (at most %llu)",
                         type[0] ? type : "no content type", max_bytes, f->full_bytes >= 0 ? ", more declared" : "",
                         (unsigned long long) WEBFETCH_MAX_BYTES_MAX);
                json_decref(v);
                return error_result(ret, f->status, msg, f->url);
        }
        return spill(ret, v, f->body, f->body_len, "binary", f->url);
}

static void on_request(void *userdata, unsigned hop, const char *url) {
        const tool_ctx *c = userdata;
        char note[256];
        if (!c->progress)
                return;
        if (hop)
                snprintf(note, sizeof(note), "redirect %u: %.200s", hop, url);
        else
                snprintf(note, sizeof(note), "GET %.200s", url);
        c->progress(c->progress_ud, note);
}

static int web_fetch_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        const tool_web_config *cfg = c->env;
        const char *url = json_string_value(json_object_get(input, "url"));
        json_t *mb = json_object_get(input, "max_bytes");
        uint64_t max = cfg->fetch_max_bytes ? cfg->fetch_max_bytes : WEBFETCH_MAX_BYTES_DEFAULT;
        _cleanup_httpc_ httpc *client = NULL;
        webfetch_result f = {0};
        hull_error why = {0};
        int r;

        if (!url)
                return error_result(ret, 0, "web_fetch: url must be a string", "");
        if (mb) {
                if (!json_is_integer(mb) || json_integer_value(mb) < 1 ||
                    (uint64_t) json_integer_value(mb) > WEBFETCH_MAX_BYTES_MAX) {
                        char msg[128];
                        snprintf(msg, sizeof(msg), "web_fetch: max_bytes must be an integer from 1 to %llu",
                                 (unsigned long long) WEBFETCH_MAX_BYTES_MAX);
                        return error_result(ret, 0, msg, url);
                }
                max = (uint64_t) json_integer_value(mb);
        }
        r = httpc_new(&client, e);
        if (r < 0)
                return r;
        webfetch_request req = {
                .url = url,
                .max_bytes = (size_t) max,
                .deadline_mono_ms =
                        deadline_of(c, cfg->fetch_timeout_ms ? cfg->fetch_timeout_ms : WEBFETCH_TIMEOUT_MS_DEFAULT),
                .cancel = c->cancel,
                .on_request = on_request,
                .userdata = (void *) c,
        };
        r = webfetch(client, cfg->egress, &req, &f, &why);
        if (r == -ECANCELED || r == -ENOMEM || r == -ENOSYS) {
                if (e)
                        *e = why;
                return r;
        }
        if (r < 0)
                return error_result(ret, 0, why.msg, url);
        if (f.status < 200 || f.status > 299) {
                char msg[HULL_ERROR_MSG_MAX];
                snprintf(msg, sizeof(msg), "the server answered HTTP %ld", f.status);
                r = error_result(ret, f.status, msg, f.url);
                if (r == 0 && f.body_len > 0 && looks_like_text(f.body, f.body_len) &&
                    set_str(ret->value, "body", f.body, MIN(f.body_len, (size_t) WEBFETCH_ERROR_SHOWN * 4),
                            WEBFETCH_ERROR_SHOWN) < 0)
                        r = -ENOMEM;
                webfetch_result_done(&f);
                return r == -ENOMEM ? hull_err(e, r, "web_fetch: out of memory") : r;
        }
        r = answer_body(ret, &f, (size_t) max, e);
        webfetch_result_done(&f);
        if (r == -ENOMEM)
                return hull_err(e, r, "web_fetch: out of memory");
        return r;
}

static const char web_fetch_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"url\":{\"type\":\"string\",\"description\":\"an http:// or https:// URL\"},"
        "\"max_bytes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":104857600,"
        "\"description\":\"the most bytes of the body to read (default 10000000); text past it is cut\"}},"
        "\"required\":[\"url\"],\"additionalProperties\":false}";
_Static_assert(WEBFETCH_MAX_BYTES_MAX == 104857600ULL, "web_fetch's schema names WEBFETCH_MAX_BYTES_MAX");

int tool_web_fetch_def(const tool_web_config *cfg, tool_def *ret, hull_error *e) {
        if (!cfg || !cfg->egress)
                return hull_fail(e, -EINVAL, "web_fetch: no egress policy configured");
        *ret = (tool_def){
                .name = "web_fetch",
                .description = "Fetch a URL over http or https (public addresses only; private hosts only when "
                               "the operator allowed them). Redirects are followed and each one checked. Answers "
                               "the HTTP status, content type and final URL, then: a web page as readable text "
                               "(inline when short, else a text handle), JSON as a json handle and CSV as a table "
                               "handle (inspect or query them), other text inline or as a handle, binary files as "
                               "a binary handle. A body over max_bytes is cut (marked truncated). Errors come back "
                               "as {status, error, url}.",
                .input_schema = web_fetch_schema,
                .default_policy = TOOL_ALWAYS_ALLOW,
                .timeout_ms = (cfg->fetch_timeout_ms ? cfg->fetch_timeout_ms : WEBFETCH_TIMEOUT_MS_DEFAULT) + 5000,
                .needs_session = false,
                .run = web_fetch_run,
                .env = cfg,
        };
        return 0;
}

/* ---- web_search ---- */

/* A message for a provider's error answer: its own words when it gave some. */
static void provider_error(const char *body, size_t n, char *out, size_t size) {
        json_t *j = json_loadb(body, n, 0, NULL);
        const char *m = NULL;
        if (j) {
                json_t *d = json_object_get(j, "detail");
                m = json_string_value(json_object_get(d, "error"));
                if (!m)
                        m = json_string_value(d);
                if (!m)
                        m = json_string_value(json_object_get(j, "error"));
                if (!m)
                        m = json_string_value(json_object_get(j, "message"));
        }
        if (m)
                snprintf(out, size, "%.200s", m);
        else if (n > 0 && looks_like_text(body, n))
                snprintf(out, size, "%.*s", (int) MIN(n, (size_t) 200), body);
        else
                snprintf(out, size, "no details");
        json_decref(j);
}

static int tavily_search(httpc *c, const tool_web_config *cfg, const char *base_url, const char *query,
                         unsigned max_results, uint64_t deadline_mono_ms, const atomic_bool *cancel, json_t **ret,
                         hull_error *e) {
        char url[EGRESS_URL_MAX + 16], auth[512], why[256];
        size_t bl = strlen(base_url);
        while (bl > 0 && base_url[bl - 1] == '/')
                bl--;
        snprintf(url, sizeof(url), "%.*s/search", (int) MIN(bl, (size_t) EGRESS_URL_MAX), base_url);
        if (strlen(cfg->search_api_key) > 400)
                return hull_fail(e, -EINVAL, "web_search: the search API key is longer than 400 bytes");
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", cfg->search_api_key);
        json_t *req = json_pack("{s:s, s:s, s:I, s:b, s:s}", "api_key", cfg->search_api_key, "query", query,
                                "max_results", (json_int_t) max_results, "include_answer", 1, "search_depth", "basic");
        _cleanup_free_ char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
        json_decref(req);
        if (!body)
                return hull_err(e, -ENOMEM, "web_search: out of memory");
        const char *headers[] = {"Content-Type: application/json", "Accept: application/json", auth, NULL};
        uint64_t now = now_mono_ms();
        httpc_answer a = {0};
        int r = httpc_post(c,
                           &(httpc_request){.url = url,
                                            .headers = headers,
                                            .body = body,
                                            .body_len = strlen(body),
                                            .cancel = cancel,
                                            .timeout_ms = deadline_mono_ms > now ? deadline_mono_ms - now : 1,
                                            .answer_max = WEBSEARCH_ANSWER_MAX},
                           &a, e);
        if (r < 0)
                return r;
        if (a.status != 200) {
                provider_error(a.body, a.body_len, why, sizeof(why));
                long st = a.status;
                httpc_answer_done(&a);
                return hull_fail(e, -EPROTO, "web_search: the search provider answered HTTP %ld: %s%s", st, why,
                                 st == 401 || st == 403 ? " (check the search API key)" : "");
        }
        json_error_t je;
        json_t *j = json_loadb(a.body, a.body_len, 0, &je);
        httpc_answer_done(&a);
        json_t *results = json_object_get(j, "results");
        if (!json_is_array(results)) {
                json_decref(j);
                return hull_fail(e, -EPROTO, "web_search: the search provider's answer has no results list");
        }
        json_t *out = json_pack("{s:o, s:[]}", "answer", json_null(), "results");
        json_t *list = json_object_get(out, "results");
        const char *answer = json_string_value(json_object_get(j, "answer"));
        r = out ? 0 : -ENOMEM;
        if (r == 0 && answer)
                r = set_str(out, "answer", answer, strlen(answer), WEBSEARCH_FIELD_CHARS);
        size_t i;
        json_t *it;
        json_array_foreach(results, i, it) {
                if (r < 0 || i >= max_results)
                        break;
                json_t *o = json_object();
                const char *title = json_string_value(json_object_get(it, "title"));
                const char *rurl = json_string_value(json_object_get(it, "url"));
                const char *content = json_string_value(json_object_get(it, "content"));
                json_t *score = json_object_get(it, "score");
                if (!o || json_array_append_new(list, o) < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (r == 0)
                        r = set_str(o, "title", title ? title : "", title ? strlen(title) : 0, WEBSEARCH_FIELD_CHARS);
                if (r == 0)
                        r = set_str(o, "url", rurl ? rurl : "", rurl ? strlen(rurl) : 0, WEBSEARCH_FIELD_CHARS);
                if (r == 0)
                        r = set_str(o, "content", content ? content : "", content ? strlen(content) : 0,
                                    WEBSEARCH_SNIPPET_CHARS);
                if (r == 0 &&
                    json_object_set_new(o, "score",
                                        json_is_number(score) ? json_real(json_number_value(score)) : json_null()) < 0)
                        r = -ENOMEM;
        }
        json_decref(j);
        if (r < 0) {
                json_decref(out);
                return hull_err(e, -ENOMEM, "web_search: out of memory");
        }
        *ret = out;
        return 0;
}

static const tool_web_search_provider providers[] = {
        {"tavily", "https://api.tavily.com", tavily_search},
};

const tool_web_search_provider *tool_web_search_provider_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(providers); i++)
                if (name && strcmp(name, providers[i].name) == 0)
                        return &providers[i];
        return NULL;
}

static int web_search_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        const tool_web_config *cfg = c->env;
        const tool_web_search_provider *p =
                tool_web_search_provider_find(cfg->search_provider ? cfg->search_provider : "tavily");
        const char *query = json_string_value(json_object_get(input, "query"));
        json_t *mr = json_object_get(input, "max_results");
        unsigned max = cfg->search_max_results ? MIN(cfg->search_max_results, WEBSEARCH_RESULTS_MAX)
                                               : WEBSEARCH_RESULTS_DEFAULT;
        _cleanup_httpc_ httpc *client = NULL;
        hull_error why = {0};
        json_t *out = NULL;

        if (!p)
                return hull_fail(e, -EINVAL, "web_search: no search provider");
        if (!query || !query[0] || strlen(query) > WEBSEARCH_QUERY_MAX) {
                char msg[128];
                snprintf(msg, sizeof(msg), "web_search: query must be a string of 1 to %u bytes", WEBSEARCH_QUERY_MAX);
                json_t *v = json_pack("{s:s}", "error", msg);
                if (!v)
                        return hull_err(e, -ENOMEM, "web_search: out of memory");
                *ret = (tool_output){.value = v, .is_error = true};
                return 0;
        }
        if (mr) {
                if (!json_is_integer(mr) || json_integer_value(mr) < 1 ||
                    json_integer_value(mr) > WEBSEARCH_RESULTS_MAX) {
                        char msg[128];
                        snprintf(msg, sizeof(msg), "web_search: max_results must be an integer from 1 to %u",
                                 WEBSEARCH_RESULTS_MAX);
                        json_t *v = json_pack("{s:s}", "error", msg);
                        if (!v)
                                return hull_err(e, -ENOMEM, "web_search: out of memory");
                        *ret = (tool_output){.value = v, .is_error = true};
                        return 0;
                }
                max = (unsigned) json_integer_value(mr);
        }
        int r = httpc_new(&client, e);
        if (r < 0)
                return r;
        r = p->search(client, cfg, cfg->search_base_url ? cfg->search_base_url : p->default_base_url, query, max,
                      deadline_of(c, cfg->search_timeout_ms ? cfg->search_timeout_ms : WEBSEARCH_TIMEOUT_MS_DEFAULT),
                      c->cancel, &out, &why);
        if (r == -ECANCELED || r == -ENOMEM) {
                if (e)
                        *e = why;
                return r;
        }
        if (r < 0) {
                json_t *v = json_pack("{s:s}", "error", why.msg);
                if (!v)
                        return hull_err(e, -ENOMEM, "web_search: out of memory");
                *ret = (tool_output){.value = v, .is_error = true};
                return 0;
        }
        *ret = (tool_output){.value = out};
        return 0;
}

static const char web_search_schema[] = "{\"type\":\"object\",\"properties\":{"
                                        "\"query\":{\"type\":\"string\",\"description\":\"what to search for\"},"
                                        "\"max_results\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":20,"
                                        "\"description\":\"how many results (default 5)\"}},"
                                        "\"required\":[\"query\"],\"additionalProperties\":false}";
_Static_assert(WEBSEARCH_RESULTS_MAX == 20, "web_search's schema names WEBSEARCH_RESULTS_MAX");

int tool_web_search_def(const tool_web_config *cfg, tool_def *ret, hull_error *e) {
        if (!cfg || !cfg->search_api_key || !cfg->search_api_key[0])
                return -ENOENT;
        const char *name = cfg->search_provider ? cfg->search_provider : "tavily";
        const tool_web_search_provider *p = tool_web_search_provider_find(name);
        if (!p)
                return hull_fail(e, -EINVAL, "web_search: unknown search provider '%.64s' (known: tavily)", name);
        const char *base = cfg->search_base_url ? cfg->search_base_url : p->default_base_url;
        if ((strncasecmp(base, "http://", 7) != 0 && strncasecmp(base, "https://", 8) != 0) ||
            strlen(base) > EGRESS_URL_MAX)
                return hull_fail(e, -EINVAL, "web_search: the search base URL '%.200s' is not an http(s) URL", base);
        *ret = (tool_def){
                .name = "web_search",
                .description = "Search the web. Answers a short answer (when the provider gives one) and results "
                               "{title, url, content, score}, each content a snippet of at most 500 characters; "
                               "read a result in full with web_fetch.",
                .input_schema = web_search_schema,
                .default_policy = TOOL_ALWAYS_ALLOW,
                .timeout_ms = (cfg->search_timeout_ms ? cfg->search_timeout_ms : WEBSEARCH_TIMEOUT_MS_DEFAULT) + 5000,
                .needs_session = false,
                .run = web_search_run,
                .env = cfg,
        };
        return 0;
}

/* ---- the web tools from plain settings ---- */

struct tool_web {
        egress_policy *egress;
        tool_web_config cfg; /* its strings are the ones below */
        char *search_api_key;
        char *search_base_url;
        bool search;
};

void tool_web_free(tool_web *w) {
        if (!w)
                return;
        egress_policy_free(w->egress);
        free(w->search_api_key);
        free(w->search_base_url);
        free(w);
}

int tool_web_new(const char *const *allow_hosts, size_t n_hosts, const char *const *allow_cidrs, size_t n_cidrs,
                 uint64_t max_bytes, const char *search_api_key, const char *search_base_url, tool_web **ret,
                 hull_error *e) {
        if (n_hosts > EGRESS_ALLOW_MAX || n_cidrs > EGRESS_ALLOW_MAX - n_hosts)
                return hull_fail(e, -EINVAL, "web: the egress allowlist has %zu entries, more than %u",
                                 n_hosts + n_cidrs, EGRESS_ALLOW_MAX);
        if (max_bytes > WEBFETCH_MAX_BYTES_MAX)
                return hull_fail(e, -EINVAL, "web: web_fetch's max_bytes %" PRIu64 " is over %llu (100 MiB)", max_bytes,
                                 (unsigned long long) WEBFETCH_MAX_BYTES_MAX);
        /* each list holds what its name says: a CIDR among the hosts or a name among the CIDRs
         * is a mistake worth naming, although the policy would take either */
        for (size_t i = 0; i < n_cidrs; i++) {
                egress_cidr c;
                if (!allow_cidrs[i] || egress_cidr_parse(allow_cidrs[i], &c) < 0)
                        return hull_fail(e, -EINVAL,
                                         "web: egress allow_cidrs entry '%.64s' is not a CIDR (examples: "
                                         "10.1.0.0/16, fd00::/8; host bits must be zero)",
                                         allow_cidrs[i] ? allow_cidrs[i] : "");
        }
        for (size_t i = 0; i < n_hosts; i++)
                if (!allow_hosts[i] || strchr(allow_hosts[i], '/'))
                        return hull_fail(e, -EINVAL,
                                         "web: egress allow_hosts entry '%.64s' is not a host name (a CIDR goes in "
                                         "allow_cidrs)",
                                         allow_hosts[i] ? allow_hosts[i] : "");
        _cleanup_free_ const char **allow = calloc(n_hosts + n_cidrs + 1, sizeof(*allow));
        tool_web *w = calloc(1, sizeof(*w));
        if (!allow || !w) {
                free(w);
                return hull_err(e, -ENOMEM, "web: out of memory");
        }
        for (size_t i = 0; i < n_hosts; i++)
                allow[i] = allow_hosts[i];
        for (size_t i = 0; i < n_cidrs; i++)
                allow[n_hosts + i] = allow_cidrs[i];
        int r = egress_policy_new(allow, n_hosts + n_cidrs, NULL, NULL, &w->egress, e);
        if (r < 0) {
                tool_web_free(w);
                return r;
        }
        if ((search_api_key && !(w->search_api_key = strdup(search_api_key))) ||
            (search_base_url && !(w->search_base_url = strdup(search_base_url)))) {
                tool_web_free(w);
                return hull_err(e, -ENOMEM, "web: out of memory");
        }
        w->cfg = (tool_web_config){
                .egress = w->egress,
                .fetch_max_bytes = max_bytes,
                .search_base_url = w->search_base_url,
                .search_api_key = w->search_api_key,
        };
        tool_def d;
        r = tool_web_search_def(&w->cfg, &d, e); /* the settings checked now, not at the first call */
        if (r < 0 && r != -ENOENT) {
                tool_web_free(w);
                return r;
        }
        w->search = r == 0;
        *ret = w;
        return 0;
}

size_t tool_web_defs(const tool_web *w, tool_def defs[static 2]) {
        hull_error e = {0};
        size_t n = 0;
        /* both were checked by tool_web_new: neither fails here */
        if (tool_web_fetch_def(&w->cfg, &defs[n], &e) == 0)
                n++;
        if (w->search && tool_web_search_def(&w->cfg, &defs[n], &e) == 0)
                n++;
        return n;
}
