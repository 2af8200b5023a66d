/* api-v1.c: see api-v1.h. The answers in the /v1 envelope, the admission of a request (each
 * route's head: versions, beta, ids, queries), the route table whose routes carry their own
 * handlers (api-v1-resources.c, api-v1-ext.c, api-v1-stream.c), the keys for the server. */
#include "api-v1.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-v1-internal.h"
#include "http-forward.h"
#include "macro.h"
#include "parse-util.h"
#include "utf8.h"
#include "store-work.h"
#include "v1-work.h"

/* ---- answers ---- */

static const char *type_of_status(unsigned status) {
        switch (status) {
        case 400:
                return "invalid_request_error";
        case 401:
                return "authentication_error";
        case 403:
                return "permission_error";
        case 404:
                return "not_found_error";
        case 405:
                return "invalid_request_error";
        case 409:
                return "conflict_error";
        case 413:
                return "request_too_large";
        case 429:
                return "rate_limit_error";
        case 503:
        case 529:
                return "overloaded_error";
        default:
                return "api_error";
        }
}

/* The store this request's API reads (the /v1 routes' and the fallback's data is the api_v1). */
static store *store_of(http_req *r) {
        api_v1 *a = http_req_data(r);
        return a ? a->cfg.store : NULL;
}

void v1a_answer_error(http_req *r, unsigned status, const char *type, const char *code, const char *msg) {
        /* A failure while the database cannot be reached (PostgreSQL restarting, stopped, away) is
         * not the server's fault: 503 with retry-after, and the client tries again. */
        char down[V1_ERROR_MSG_MAX];
        if (status == 500 && store_unreachable(store_of(r))) {
                snprintf(down, sizeof(down), "the database cannot be reached now (nothing was done): %s; try again",
                         msg);
                msg = down;
                status = 503;
                type = NULL;
        }
        if (status == 503)
                (void) http_answer_header(r, "retry-after", V1_RETRY_AFTER_S);
        /* A message may quote what the client sent (an id from the path, percent-decoded to any
         * bytes) or be cut inside a character by a "%.64s": made valid UTF-8 first, or jansson
         * refuses the string and there is no JSON to answer with. */
        _cleanup_free_ char *text = NULL;
        size_t text_len;
        if (utf8_make_valid(msg, strlen(msg), &text, &text_len) < 0) {
                (void) http_answer_text(r, 500, "out of memory\n");
                return;
        }
        json_error_t je;
        json_auto_t *body = json_pack_ex(&je, 0, "{s:s, s:{s:s, s:s}, s:s}", "type", "error", "error", "type",
                                         type && type[0] ? type : type_of_status(status), "message", text, "request_id",
                                         http_req_id(r));
        if (body && code && code[0])
                json_object_set_new(json_object_get(body, "error"), "details", json_pack("{s:s}", "error_code", code));
        if (status >= 400 && status < 500 && status != 429)
                (void) http_answer_header(r, "x-should-retry", "false");
        char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
        if (!s) { /* only what happened: out of memory, or what jansson said */
                char why[JSON_ERROR_TEXT_LENGTH + 64];
                snprintf(why, sizeof(why), "%s\n",
                         body || json_error_code(&je) == json_error_out_of_memory ? "out of memory" : je.text);
                (void) http_answer_text(r, 500, why);
                return;
        }
        http_req_note(r, "error=%s", code && code[0] ? code : type_of_status(status));
        (void) http_answer(r, status, "application/json", s, strlen(s));
}

void v1a_fail(http_req *r, const v1_err *e) {
        v1a_answer_error(r, e->status ? e->status : 500, e->type, e->code, e->msg[0] ? e->msg : "internal error");
}

void v1a_failf(http_req *r, unsigned status, const char *code, const char *fmt, ...) _printf_(4, 5);
void v1a_failf(http_req *r, unsigned status, const char *code, const char *fmt, ...) {
        char msg[V1_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        v1a_answer_error(r, status, NULL, code, msg);
}

/* Answer a JSON value (a reference is taken). */
void v1a_answer_json(http_req *r, unsigned status, json_t *v) {
        char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
        bool built = v != NULL;
        json_decref(v);
        if (!s) { /* no value: a json_pack failed, for want of memory or on a string that is not UTF-8 */
                v1a_failf(r, 500, "", "%s", built ? "out of memory" : "internal error: the answer could not be made");
                return;
        }
        (void) http_answer(r, status, "application/json", s, strlen(s));
}

/* ---- the API's wording of the server's refusals ---- */

static void v1_begin(http_req *r) {
        char id[STORE_ID_MAX];
        v1_id_new("req_", id);
        http_req_set_id(r, id);
        (void) http_answer_header(r, "request-id", id);
}

static void v1_refuse(http_req *r, http_refusal why, unsigned status, const char *msg) {
        const char *type = NULL;
        switch (why) {
        case HTTP_REFUSAL_TOO_LARGE:
                type = "request_too_large";
                break;
        case HTTP_REFUSAL_UNAUTHENTICATED:
                type = "authentication_error";
                break;
        case HTTP_REFUSAL_FORBIDDEN:
                type = "permission_error";
                break;
        case HTTP_REFUSAL_BUSY:
                type = "rate_limit_error";
                break;
        case HTTP_REFUSAL_STOPPING:
                type = "overloaded_error";
                break;
        case HTTP_REFUSAL_NOT_FOUND:
        case HTTP_REFUSAL_METHOD:
        case HTTP_REFUSAL_BAD_HEAD:
        case _HTTP_REFUSAL_MAX:
                break;
        }
        v1a_answer_error(r, status, type, "", msg);
}

static const http_api v1_api = {.name = "v1", .begin = v1_begin, .refuse = v1_refuse};

/* Paths under /v1 that no route serves (the server's fallback for the prefix /v1), worded as
 * this API words its errors. */
static void fallback_refuse(http_req *r, http_refusal why, unsigned status, const char *msg) {
        if (why == HTTP_REFUSAL_NOT_FOUND)
                v1a_answer_error(r, 404, NULL, "",
                                 "no such route: hull serves /v1/agents, /v1/environments, /v1/sessions (with "
                                 "/events, /events/stream and /resources), /v1/files, /v1/vaults, /v1/memory_stores, "
                                 "/v1/skills, /v1/deployments, /v1/deployment_runs and /v1/api-keys; GET "
                                 "/v1/capabilities lists what hull supports");
        else
                v1_refuse(r, why, status, msg);
}

const http_api api_v1_fallback_api = {.name = "v1", .begin = v1_begin, .refuse = fallback_refuse};

/* ---- a session's sandbox on another node ---- */

/* gone_is_here: a holder that stopped leaves the request to this node (a turn opens a new sandbox
 * here) instead of answering 409 sandbox_node_gone. */
static bool forwarded(http_req *r, bool gone_is_here) {
        api_v1 *a = http_req_data(r);
        const char *id = http_req_param(r, "id");
        char from[64];
        int hop = http_forward_hop(r, from);
        if (hop < 0) {
                v1a_failf(r, 400, "bad_forward_header",
                          "the %s header names the hull node that forwarded the request (one node id, once): "
                          "a client never sends it",
                          HTTP_FORWARD_HOP_HEADER);
                return true;
        }
        if (hop > 0 || !id) /* forwarded once already: answered here, never sent on again */
                return false;
        store_owner o;
        const char *self = NULL;
        v1_err err = {0};
        int rr = v1_engine_sandbox_node(a->cfg.engine, id, &o, &self, &err);
        if (rr == 0)
                return false;
        if (rr == -EHOSTDOWN && gone_is_here)
                return false;
        if (rr == -EHOSTDOWN) {
                char age[48] = "its row is gone";
                if (o.beat_age_ms >= 0)
                        snprintf(age, sizeof(age), "its last heartbeat %" PRId64 " ms ago", o.beat_age_ms);
                v1a_failf(r, 409, "sandbox_node_gone",
                          "session %.64s's sandbox was on node %s, which stopped (%s): the sandbox and its handles "
                          "went with it; the session's next turn opens a new one",
                          id, o.node_id, age);
                return true;
        }
        if (rr < 0) {
                v1a_fail(r, &err);
                return true;
        }
        hull_error e = {0};
        if (http_forward(r, o.advertise, self, o.node_id, &e) < 0)
                v1a_failf(r, 503, "sandbox_node_unreachable",
                          "session %.64s's sandbox is on node %s (%s), which could not be reached: %s; try again", id,
                          o.node_id, o.advertise, e.msg);
        return true;
}

bool v1a_forwarded(http_req *r) {
        return forwarded(r, false);
}

bool v1a_forwarded_turn(http_req *r) {
        return forwarded(r, true);
}

/* ---- what a request brings ---- */

/* The API version and, where needed (want not NULL), the beta want. Returns true once r is refused. */
static bool refuse_headers_for(http_req *r, const char *want) {
        unsigned n = 0;
        const char *v = http_req_header(r, "anthropic-version", &n);
        if (n == 0) {
                v1a_failf(
                        r, 400, "missing_anthropic_version",
                        "the anthropic-version header is missing: send anthropic-version: 2023-06-01 (or 2026-10-21)");
                return true;
        }
        if (!v || (strcmp(v, "2023-06-01") != 0 && strcmp(v, "2026-10-21") != 0)) {
                v1a_failf(r, 400, "unsupported_anthropic_version",
                          "anthropic-version %.40s is not one hull serves: send 2023-06-01 or 2026-10-21",
                          v ? v : "(given twice)");
                return true;
        }
        if (!want)
                return false;
        v = http_req_header(r, "anthropic-beta", &n);
        if (n == 0) {
                v1a_failf(r, 400, "missing_anthropic_beta",
                          "the anthropic-beta header is missing: send anthropic-beta: %s", want);
                return true;
        }
        bool found = false;
        for (const char *p = v ? v : ""; *p;) {
                p += strspn(p, " \t,");
                size_t k = strcspn(p, ",");
                size_t t = k;
                while (t > 0 && (p[t - 1] == ' ' || p[t - 1] == '\t'))
                        t--;
                if (t == strlen(want) && memcmp(p, want, t) == 0)
                        found = true;
                p += k;
        }
        if (!found) {
                v1a_failf(r, 400, v ? "unsupported_anthropic_beta" : "malformed_anthropic_beta",
                          "anthropic-beta must list %s (got '%.80s')", want, v ? v : "(given twice)");
                return true;
        }
        return false;
}

static bool refuse_headers(http_req *r, bool beta) {
        return refuse_headers_for(r, beta ? V1_BETA : NULL);
}

static void query_arg(void *data, const char *name, const char *value) {
        query *q = data;
        char base[64];
        size_t n = strlen(name);
        if (n >= 2 && strcmp(name + n - 2, "[]") == 0)
                n -= 2;
        if (n >= sizeof(base)) {
                if (!q->bad[0])
                        snprintf(q->bad, sizeof(q->bad), "%.60s", name);
                return;
        }
        memcpy(base, name, n);
        base[n] = '\0';
        if (strcmp(base, "beta") == 0)
                return;
        bool known = false;
        for (const char *const *a = q->allowed; *a; a++)
                known |= strcmp(*a, base) == 0;
        if (!known) {
                if (!q->bad[0])
                        snprintf(q->bad, sizeof(q->bad), "%s", base);
                return;
        }
        if (q->list_name && strcmp(base, q->list_name) == 0) {
                if (q->n_list < QUERY_LIST_MAX)
                        q->list[q->n_list++] = value;
                else
                        q->too_many = true;
                return;
        }
        static const struct {
                const char *name;
                size_t off;
        } fields[] = {
                {"limit", offsetof(query, limit)},
                {"page", offsetof(query, page)},
                {"order", offsetof(query, order)},
                {"include_archived", offsetof(query, include_archived)},
                {"version", offsetof(query, version)},
                {"agent_id", offsetof(query, agent_id)},
                {"agent_version", offsetof(query, agent_version)},
                {"last_event_id", offsetof(query, last_event_id)},
                {"rows", offsetof(query, rows)},
                {"sandbox", offsetof(query, sandbox)},
                {"memory_store_id", offsetof(query, memory_store_id)},
                {"created_at[gt]", offsetof(query, created_gt)},
                {"created_at[gte]", offsetof(query, created_gte)},
                {"created_at[lt]", offsetof(query, created_lt)},
                {"created_at[lte]", offsetof(query, created_lte)},
        };
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                if (strcmp(base, fields[i].name) == 0) {
                        const char **slot = (const char **) ((char *) q + fields[i].off);
                        if (*slot && !q->bad[0])
                                snprintf(q->bad, sizeof(q->bad), "%.40s (given twice)", base);
                        *slot = value;
                }
}

/* Read r's query for a route that takes the names in allowed (list_name: the repeated one).
 * Returns true once r is refused. */
bool v1a_refuse_query(http_req *r, query *q, const char *const *allowed, const char *list_name) {
        *q = (query){.allowed = allowed, .list_name = list_name};
        http_req_each_query(r, query_arg, q);
        if (q->bad[0]) {
                v1a_failf(r, 400, "", "unknown query parameter '%s' (this route takes: %s%s%s%s%s%s%s)", q->bad,
                          allowed[0] ? allowed[0] : "none", allowed[0] && allowed[1] ? ", " : "",
                          allowed[0] && allowed[1] ? allowed[1] : "",
                          allowed[0] && allowed[1] && allowed[2] ? ", " : "",
                          allowed[0] && allowed[1] && allowed[2] ? allowed[2] : "",
                          allowed[0] && allowed[1] && allowed[2] && allowed[3] ? ", ..." : "", "");
                return true;
        }
        if (q->too_many) {
                v1a_failf(r, 400, "", "%s[] is given more than %u times", list_name, QUERY_LIST_MAX);
                return true;
        }
        return false;
}

bool v1a_refuse_bool(http_req *r, const char *name, const char *v, bool *ret) {
        *ret = false;
        if (!v)
                return false;
        if (strcmp(v, "true") == 0)
                *ret = true;
        else if (strcmp(v, "false") != 0) {
                v1a_failf(r, 400, "", "%s must be true or false, got '%.40s'", name, v);
                return true;
        }
        return false;
}

bool v1a_refuse_int(http_req *r, const char *name, const char *v, uint64_t min, uint64_t max, uint64_t *ret) {
        if (!v)
                return false;
        if (parse_uint64(v, min, max, ret) < 0) {
                v1a_failf(r, 400, "", "%s must be an integer from %" PRIu64 " to %" PRIu64 ", got '%.40s'", name, min,
                          max, v);
                return true;
        }
        return false;
}

/* RFC 3339 in a filter: checked for shape only ("YYYY-MM-DDTHH:MM:SS..."). */
bool v1a_refuse_time(http_req *r, const char *name, const char *v) {
        if (!v)
                return false;
        size_t n = strlen(v);
        bool ok = n >= 20 && n < STORE_TIME_MAX + 8 && v[4] == '-' && v[7] == '-' && (v[10] == 'T' || v[10] == 't') &&
                  v[13] == ':' && v[16] == ':';
        if (!ok) {
                v1a_failf(r, 400, "", "%s must be an RFC 3339 time such as 2026-01-01T00:00:00Z, got '%.40s'", name, v);
                return true;
        }
        return false;
}

bool v1a_refuse_order(http_req *r, const char *v, bool def_desc, bool *ret_desc) {
        *ret_desc = def_desc;
        if (!v)
                return false;
        if (strcmp(v, "asc") == 0)
                *ret_desc = false;
        else if (strcmp(v, "desc") == 0)
                *ret_desc = true;
        else {
                v1a_failf(r, 400, "", "order must be asc or desc, got '%.20s'", v);
                return true;
        }
        return false;
}

/* The body as a JSON object ("" or none: an empty object when empty_ok). NULL once r is refused. */
json_t *v1a_body_object(http_req *r, bool empty_ok) {
        size_t len;
        const char *b = http_req_body(r, &len);
        if (len == 0 && empty_ok)
                return json_object();
        json_error_t je;
        json_t *v = json_loadb(b, len, JSON_REJECT_DUPLICATES, &je);
        http_req_body_release(r);
        if (!v) {
                v1a_failf(r, 400, "", "the body is not JSON: %s (line %d, column %d)", je.text, je.line, je.column);
                return NULL;
        }
        if (!json_is_object(v)) {
                json_decref(v);
                v1a_failf(r, 400, "", "the body must be a JSON object");
                return NULL;
        }
        return v;
}

json_t *v1a_page_json(store_page *p, bool prev) {
        json_t *o = json_pack("{s:O, s:s?}", "data", p->data, "next_page", p->next_page[0] ? p->next_page : NULL);
        if (o && !p->next_page[0])
                json_object_set_new(o, "next_page", json_null());
        if (o)
                json_object_set_new(o, "prev_page", prev && p->prev_page[0] ? json_string(p->prev_page) : json_null());
        return o;
}

void v1a_answer_store_error(http_req *r, int err, const hull_error *e, const char *what, const char *id) {
        if (err == -ENOENT)
                v1a_failf(r, 404, "", "no %s %.64s", what, id ? id : "");
        else if (err == -EINVAL)
                v1a_failf(r, 400, "", "%s", e->msg);
        else
                v1a_failf(r, 500, "", "the %s could not be read or stored: %s", what, e->msg);
}

/* ---- admission: each route's head, before any byte of its body ---- */

/* What a route's {id} names (its tag), for the 404 of an id no resource can have. */
enum { R_AGENT = 1, R_ENVIRONMENT, R_SESSION, R_KEY, R_VAULT, R_SKILL };

/* Could a path parameter name anything: UTF-8 text without a control character? The path is
 * percent-decoded, so "%ff" or "%00"-free "%0a" reach here as raw bytes. */
static bool param_is_text(const char *v) {
        for (const char *p = v; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return false;
        return utf8_is_valid(v, strlen(v));
}

/* A route's {id} or {name} that no resource can have: 404 in this API's envelope before it
 * reaches the store, the engine or a message. Returns true once r is refused. */
static bool refuse_malformed_params(http_req *r) {
        int tag = http_req_tag(r);
        const char *id = http_req_param(r, "id"), *name = http_req_param(r, "name");
        if (id && !param_is_text(id)) {
                const char *what = tag == R_AGENT         ? "agent"
                                   : tag == R_ENVIRONMENT ? "environment"
                                   : tag == R_KEY         ? "API key"
                                   : tag == R_VAULT       ? "vault"
                                   : tag == R_SKILL       ? "skill"
                                                          : "session";
                v1a_failf(r, 404, strcmp(what, "session") == 0 ? "session_not_found" : "",
                          "no %s with that id: the id in the path is not printable UTF-8 text", what);
                return true;
        }
        if (name && !param_is_text(name)) {
                v1a_failf(r, 404, "handle_not_found",
                          "no handle with that name: the name in the path is not printable UTF-8 text");
                return true;
        }
        return false;
}

/* The version and the beta, an id that can name something; the handler reads its own query. */
static int head_query(http_req *r) {
        return refuse_headers(r, true) || refuse_malformed_params(r);
}

/* A session's resources (api-v1-session-resources.c): each reads its own query. */
int v1a_head_resources(http_req *r) {
        return head_query(r);
}

/* ... and no query at all (routes without one take none). */
static int head(http_req *r) {
        static const char *const none[] = {NULL};
        query q;
        return head_query(r) || v1a_refuse_query(r, &q, none, NULL);
}

/* hull's API keys: the version (no beta), no query. */
static int head_keys(http_req *r) {
        static const char *const none[] = {NULL};
        query q;
        return refuse_headers(r, false) || refuse_malformed_params(r) || v1a_refuse_query(r, &q, none, NULL);
}

/* skills: the version (the SDKs send the beta skills-2025-10-02 or none: each handler asks
 * which, for its shapes); each reads its own query. */
static int head_skills(http_req *r) {
        return refuse_headers_for(r, NULL) || refuse_malformed_params(r);
}

/* hull's extensions: the version (no beta); each reads its own query. */
static int head_ext(http_req *r) {
        return refuse_headers(r, false) || refuse_malformed_params(r);
}

int v1a_head_ext(http_req *r) {
        return head_ext(r);
}

#define ROUTE(m, p, res, body, hd, fn)                                                                                 \
        {                                                                                                              \
                .methods = (m), .pattern = (p), .scope = "v1", .body_max = (body), .head = (hd), .handler = (fn),      \
                .tag = (res)                                                                                           \
        }

/* ... a route a self-hosted worker's credential may reach: only for its sessions */
#define WROUTE(m, p, res, body, hd, fn)                                                                                \
        {                                                                                                              \
                .methods = (m), .pattern = (p), .scope = "v1", .body_max = (body), .head = (hd), .handler = (fn),      \
                .tag = (res), .scoped_keys = true                                                                      \
        }

static int head_worker(http_req *r) {
        return head(r) || v1a_refuse_worker_session(http_req_data(r), r, http_req_param(r, "id"));
}

static int head_query_worker(http_req *r) {
        return head_query(r) || v1a_refuse_worker_session(http_req_data(r), r, http_req_param(r, "id"));
}

static const http_route routes[] = {
        ROUTE(HTTP_POST, "/v1/agents", R_AGENT, V1_BODY_MAX, head, v1a_agent_create),
        ROUTE(HTTP_GET, "/v1/agents", R_AGENT, 0, head_query, v1a_agent_list),
        ROUTE(HTTP_GET, "/v1/agents/{id}", R_AGENT, 0, head_query, v1a_agent_get),
        ROUTE(HTTP_POST, "/v1/agents/{id}", R_AGENT, V1_BODY_MAX, head, v1a_agent_update),
        ROUTE(HTTP_POST, "/v1/agents/{id}/archive", R_AGENT, V1_BODY_MAX, head, v1a_agent_archive),
        ROUTE(HTTP_GET, "/v1/agents/{id}/versions", R_AGENT, 0, head_query, v1a_agent_versions),
        ROUTE(HTTP_POST, "/v1/environments", R_ENVIRONMENT, V1_BODY_MAX, head, v1a_environment_create),
        ROUTE(HTTP_GET, "/v1/environments", R_ENVIRONMENT, 0, head_query, v1a_environment_list),
        ROUTE(HTTP_GET, "/v1/environments/{id}", R_ENVIRONMENT, 0, head, v1a_environment_get),
        ROUTE(HTTP_POST, "/v1/environments/{id}", R_ENVIRONMENT, V1_BODY_MAX, head, v1a_environment_update),
        ROUTE(HTTP_DELETE, "/v1/environments/{id}", R_ENVIRONMENT, 0, head, v1a_environment_delete),
        ROUTE(HTTP_POST, "/v1/environments/{id}/archive", R_ENVIRONMENT, V1_BODY_MAX, head, v1a_environment_archive),
        ROUTE(HTTP_POST, "/v1/sessions", R_SESSION, V1_BODY_MAX, head, v1a_session_create),
        ROUTE(HTTP_GET, "/v1/sessions", R_SESSION, 0, head_query, v1a_session_list),
        WROUTE(HTTP_GET, "/v1/sessions/{id}", R_SESSION, 0, head_worker, v1a_session_get),
        ROUTE(HTTP_POST, "/v1/sessions/{id}", R_SESSION, V1_BODY_MAX, head, v1a_session_update),
        ROUTE(HTTP_DELETE, "/v1/sessions/{id}", R_SESSION, 0, head, v1a_session_delete),
        ROUTE(HTTP_POST, "/v1/sessions/{id}/archive", R_SESSION, V1_BODY_MAX, head, v1a_session_archive),
        WROUTE(HTTP_GET, "/v1/sessions/{id}/events", R_SESSION, 0, head_query_worker, v1a_events_list),
        WROUTE(HTTP_POST, "/v1/sessions/{id}/events", R_SESSION, V1_BODY_MAX, head_worker, v1a_events_send),
        WROUTE(HTTP_GET, "/v1/sessions/{id}/events/stream", R_SESSION, 0, head_query_worker, v1a_events_stream),
        ROUTE(HTTP_POST, "/v1/api-keys", R_KEY, V1_BODY_MAX, head_keys, v1a_key_create),
        ROUTE(HTTP_GET, "/v1/api-keys", R_KEY, 0, head_keys, v1a_key_list),
        ROUTE(HTTP_DELETE, "/v1/api-keys/{id}", R_KEY, 0, head_keys, v1a_key_delete),
        ROUTE(HTTP_GET, "/v1/sessions/{id}/handles", R_SESSION, 0, head_ext, v1a_handles_list),
        ROUTE(HTTP_GET, "/v1/sessions/{id}/handles/{name}", R_SESSION, 0, head_ext, v1a_handle_get),
        ROUTE(HTTP_GET, "/v1/sessions/{id}/records", R_SESSION, 0, head_ext, v1a_records_list),
        ROUTE(HTTP_GET, "/v1/sessions/{id}/audit_log", R_SESSION, 0, head_ext, v1a_audit_log),
        ROUTE(HTTP_GET, "/v1/sessions/{id}/network_log", R_SESSION, 0, head_ext, v1a_network_log),
        ROUTE(HTTP_POST, "/v1/webhooks", 0, WEBHOOK_REQUEST_MAX, head_ext, v1a_webhook_create),
        ROUTE(HTTP_GET, "/v1/webhooks", 0, 0, head_ext, v1a_webhook_list),
        ROUTE(HTTP_GET, "/v1/webhooks/{id}", 0, 0, head_ext, v1a_webhook_get),
        ROUTE(HTTP_POST, "/v1/webhooks/{id}", 0, WEBHOOK_REQUEST_MAX, head_ext, v1a_webhook_update),
        ROUTE(HTTP_DELETE, "/v1/webhooks/{id}", 0, 0, head_ext, v1a_webhook_delete),
        ROUTE(HTTP_POST, "/v1/webhooks/{id}/rotate_secret", 0, WEBHOOK_REQUEST_MAX, head_ext, v1a_webhook_rotate),
        ROUTE(HTTP_POST, "/v1/webhooks/{id}/test", 0, WEBHOOK_REQUEST_MAX, head_ext, v1a_webhook_test),
        ROUTE(HTTP_POST, "/v1/vaults", R_VAULT, V1_BODY_MAX, head, v1a_vault_create),
        ROUTE(HTTP_GET, "/v1/vaults", R_VAULT, 0, head_query, v1a_vault_list),
        ROUTE(HTTP_GET, "/v1/vaults/{id}", R_VAULT, 0, head, v1a_vault_get),
        ROUTE(HTTP_POST, "/v1/vaults/{id}", R_VAULT, V1_BODY_MAX, head, v1a_vault_update),
        ROUTE(HTTP_DELETE, "/v1/vaults/{id}", R_VAULT, 0, head, v1a_vault_delete),
        ROUTE(HTTP_POST, "/v1/vaults/{id}/archive", R_VAULT, V1_BODY_MAX, head, v1a_vault_archive),
        ROUTE(HTTP_POST, "/v1/vaults/{id}/credentials", R_VAULT, V1_BODY_MAX, head, v1a_credential_create),
        ROUTE(HTTP_GET, "/v1/vaults/{id}/credentials", R_VAULT, 0, head_query, v1a_credential_list),
        ROUTE(HTTP_GET, "/v1/vaults/{id}/credentials/{cred}", R_VAULT, 0, head, v1a_credential_get),
        ROUTE(HTTP_POST, "/v1/vaults/{id}/credentials/{cred}", R_VAULT, V1_BODY_MAX, head, v1a_credential_update),
        ROUTE(HTTP_DELETE, "/v1/vaults/{id}/credentials/{cred}", R_VAULT, 0, head, v1a_credential_delete),
        ROUTE(HTTP_POST, "/v1/vaults/{id}/credentials/{cred}/archive", R_VAULT, V1_BODY_MAX, head,
              v1a_credential_archive),
        ROUTE(HTTP_POST, "/v1/vaults/{id}/credentials/{cred}/mcp_oauth_validate", R_VAULT, V1_BODY_MAX, head,
              v1a_credential_validate),
        ROUTE(HTTP_POST, "/v1/skills", R_SKILL, SKILL_UPLOAD_MAX, head_skills, v1a_skill_create),
        ROUTE(HTTP_GET, "/v1/skills", R_SKILL, 0, head_skills, v1a_skill_list),
        ROUTE(HTTP_GET, "/v1/skills/{id}", R_SKILL, 0, head_skills, v1a_skill_get),
        ROUTE(HTTP_DELETE, "/v1/skills/{id}", R_SKILL, 0, head_skills, v1a_skill_delete),
        ROUTE(HTTP_POST, "/v1/skills/{id}/versions", R_SKILL, SKILL_UPLOAD_MAX, head_skills, v1a_skill_version_create),
        ROUTE(HTTP_GET, "/v1/skills/{id}/versions", R_SKILL, 0, head_skills, v1a_skill_version_list),
        ROUTE(HTTP_GET, "/v1/skills/{id}/versions/{version}", R_SKILL, 0, head_skills, v1a_skill_version_get),
        ROUTE(HTTP_DELETE, "/v1/skills/{id}/versions/{version}", R_SKILL, 0, head_skills, v1a_skill_version_delete),
        ROUTE(HTTP_GET, "/v1/skills/{id}/versions/{version}/content", R_SKILL, 0, head_skills,
              v1a_skill_version_content),
        ROUTE(HTTP_POST, "/v1/sessions/{id}/inputs", R_SESSION, V1_INPUT_BYTES_MAX, head_ext, v1a_input_add),
        ROUTE(HTTP_GET, "/v1/sessions/{id}/handles/{name}/content", R_SESSION, 0, head_ext, v1a_handle_content),
        ROUTE(HTTP_POST, "/v1/sessions/{id}/query", R_SESSION, V1_BODY_MAX, head_ext, v1a_query_run),
};

int api_v1_new(const api_v1_config *cfg, api_v1 **ret) {
        api_v1 *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->cfg = *cfg;
        if (v1_work_pollers_new(&a->pollers) < 0) {
                free(a);
                return -ENOMEM;
        }
        *ret = a;
        return 0;
}

int api_v1_register(api_v1 *a, http_server *s) {
        int r = http_add_routes(s, &v1_api, routes, ELEMENTSOF(routes), a);
        if (r >= 0) /* memory stores (api-v1-memory.c) */
                r = http_add_routes(s, &v1_api, api_v1_memory_routes, api_v1_memory_n_routes, a);
        if (r >= 0 && a->cfg.files)
                r = http_add_routes(s, &v1_api, v1a_files_routes, v1a_n_files_routes, a);
        if (r >= 0 && a->cfg.files)
                r = http_add_routes(s, &v1_api, v1a_resource_routes, v1a_n_resource_routes, a);
        if (r >= 0 && a->cfg.deploy) /* scheduled deployments (api-v1-deployments.c) */
                r = http_add_routes(s, &v1_api, v1a_deploy_routes, v1a_n_deploy_routes, a);
        if (r >= 0) /* the Work API of self-hosted environments (api-v1-work.c) */
                r = http_add_routes(s, &v1_api, v1a_work_routes, v1a_n_work_routes, a);
        if (r >= 0) /* the inventory and the refusals by name (api-v1-capabilities.c) */
                r = http_add_routes(s, &v1_api, v1a_capability_routes, v1a_n_capability_routes, a);
        return r;
}

void v1a_each_route(void (*fn)(void *ud, const http_route *r), void *ud) {
        const struct {
                const http_route *t;
                size_t n;
        } tables[] = {
                {routes, ELEMENTSOF(routes)},
                {api_v1_memory_routes, api_v1_memory_n_routes},
                {v1a_files_routes, v1a_n_files_routes},
                {v1a_resource_routes, v1a_n_resource_routes},
                {v1a_deploy_routes, v1a_n_deploy_routes},
                {v1a_work_routes, v1a_n_work_routes},
                {v1a_capability_routes, v1a_n_capability_routes},
        };
        for (size_t i = 0; i < ELEMENTSOF(tables); i++)
                for (size_t k = 0; k < tables[i].n; k++)
                        fn(ud, &tables[i].t[k]);
}

void api_v1_free(api_v1 *a) {
        if (a)
                v1_work_pollers_free(a->pollers);
        free(a);
}

/* ---- keys for the HTTP server ---- */

static size_t keys_count(void *ud) {
        size_t n = 0;
        hull_error e = {0};
        if (store_key_count(ud, &n, &e) < 0)
                return SIZE_MAX; /* cannot tell: nobody in, 503 (the database away) */
        return n;
}

static int keys_find(void *ud, const uint8_t digest[static 32], char ret_id[static AUTH_NAME_MAX + 1]) {
        char hex[65];
        for (size_t i = 0; i < 32; i++)
                snprintf(hex + 2 * i, 3, "%02x", digest[i]);
        store_key k;
        hull_error e = {0};
        int r = store_key_find(ud, hex, &k, &e);
        char scope[STORE_WORK_SCOPE_MAX];
        if (r == 1)
                snprintf(ret_id, AUTH_NAME_MAX + 1, "%s", k.id);
        else if (r == 0 && (r = store_work_key_find(ud, hex, scope, NULL, &e)) == 1 &&
                 strlen(HTTP_SCOPED_KEY_PREFIX) + strlen(scope) <= AUTH_NAME_MAX) {
                /* a self-hosted worker's: only the routes that take scoped keys, which check its scope */
                snprintf(ret_id, AUTH_NAME_MAX + 1, HTTP_SCOPED_KEY_PREFIX "%.*s",
                         (int) (AUTH_NAME_MAX - strlen(HTTP_SCOPED_KEY_PREFIX)), scope);
        } else if (r == 1)
                r = 0;
        explicit_bzero(hex, sizeof(hex));
        return r == 1 ? 1 : r < 0 ? -1 : 0;
}

http_keys api_v1_keys(store *s) {
        return (http_keys){.count = keys_count, .find = keys_find, .ud = s};
}
