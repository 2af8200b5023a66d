/* api-v1.c: see api-v1.h. */
#include "api-v1.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api-v1-stream.h"
#include "auth.h"
#include "dynbuf.h"
#include "fs-util.h"
#include "hd-store.h"
#include "macro.h"
#include "parse-util.h"
#include "sha256.h"

struct api_v1 {
        api_v1_config cfg;
};

enum {
        T_AGENT_CREATE = 1,
        T_AGENT_LIST,
        T_AGENT_GET,
        T_AGENT_UPDATE,
        T_AGENT_ARCHIVE,
        T_AGENT_VERSIONS,
        T_ENV_CREATE,
        T_ENV_LIST,
        T_ENV_GET,
        T_ENV_UPDATE,
        T_ENV_DELETE,
        T_ENV_ARCHIVE,
        T_SESSION_CREATE,
        T_SESSION_LIST,
        T_SESSION_GET,
        T_SESSION_UPDATE,
        T_SESSION_DELETE,
        T_SESSION_ARCHIVE,
        T_EVENTS_LIST,
        T_EVENTS_SEND,
        T_EVENTS_STREAM,
        T_KEY_CREATE,
        T_KEY_LIST,
        T_KEY_DELETE,
        T_HANDLES_LIST, /* hull's extensions (no anthropic-beta) */
        T_HANDLE_GET,
        T_RECORDS,
        T_AUDIT_LOG,
        T_NETWORK_LOG,
};

#define V1_BETA "managed-agents-2026-04-01"

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

static void answer_error(http_req *r, unsigned status, const char *type, const char *code, const char *msg) {
        json_auto_t *body = json_pack("{s:s, s:{s:s, s:s}, s:s}", "type", "error", "error", "type",
                                      type && type[0] ? type : type_of_status(status), "message", msg, "request_id",
                                      http_req_id(r));
        if (body && code && code[0])
                json_object_set_new(json_object_get(body, "error"), "details", json_pack("{s:s}", "error_code", code));
        if (status >= 400 && status < 500 && status != 429)
                (void) http_answer_header(r, "x-should-retry", "false");
        char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
        if (!s) {
                (void) http_answer_text(r, 500, "out of memory\n");
                return;
        }
        http_req_note(r, "error=%s", code && code[0] ? code : type_of_status(status));
        (void) http_answer(r, status, "application/json", s, strlen(s));
}

static void fail(http_req *r, const v1_err *e) {
        answer_error(r, e->status ? e->status : 500, e->type, e->code, e->msg[0] ? e->msg : "internal error");
}

static void failf(http_req *r, unsigned status, const char *code, const char *fmt, ...) _printf_(4, 5);
static void failf(http_req *r, unsigned status, const char *code, const char *fmt, ...) {
        char msg[V1_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        answer_error(r, status, NULL, code, msg);
}

/* Answer a JSON value (a reference is taken). */
static void answer_json(http_req *r, unsigned status, json_t *v) {
        char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
        json_decref(v);
        if (!s) {
                failf(r, 500, "", "out of memory");
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
        answer_error(r, status, type, "", msg);
}

static const http_api v1_api = {.name = "v1", .begin = v1_begin, .refuse = v1_refuse};

/* Paths under /v1 that no route serves (the server's fallback for the prefix /v1), worded as
 * this API words its errors. */
static void fallback_refuse(http_req *r, http_refusal why, unsigned status, const char *msg) {
        if (why == HTTP_REFUSAL_NOT_FOUND)
                answer_error(r, 404, NULL, "",
                             "no such route: hull serves /v1/agents, /v1/environments, /v1/sessions (with "
                             "/events and /events/stream) and /v1/api-keys");
        else
                v1_refuse(r, why, status, msg);
}

const http_api api_v1_fallback_api = {.name = "v1", .begin = v1_begin, .refuse = fallback_refuse};

/* ---- what a request brings ---- */

/* The API version and, where needed, the beta. Returns true once r is refused. */
static bool refuse_headers(http_req *r, bool beta) {
        unsigned n = 0;
        const char *v = http_req_header(r, "anthropic-version", &n);
        if (n == 0) {
                failf(r, 400, "missing_anthropic_version",
                      "the anthropic-version header is missing: send anthropic-version: 2023-06-01 (or 2026-10-21)");
                return true;
        }
        if (!v || (strcmp(v, "2023-06-01") != 0 && strcmp(v, "2026-10-21") != 0)) {
                failf(r, 400, "unsupported_anthropic_version",
                      "anthropic-version %.40s is not one hull serves: send 2023-06-01 or 2026-10-21",
                      v ? v : "(given twice)");
                return true;
        }
        if (!beta)
                return false;
        v = http_req_header(r, "anthropic-beta", &n);
        if (n == 0) {
                failf(r, 400, "missing_anthropic_beta", "the anthropic-beta header is missing: send anthropic-beta: %s",
                      V1_BETA);
                return true;
        }
        bool found = false;
        for (const char *p = v ? v : ""; *p;) {
                p += strspn(p, " \t,");
                size_t k = strcspn(p, ",");
                size_t t = k;
                while (t > 0 && (p[t - 1] == ' ' || p[t - 1] == '\t'))
                        t--;
                if (t == strlen(V1_BETA) && memcmp(p, V1_BETA, t) == 0)
                        found = true;
                p += k;
        }
        if (!found) {
                failf(r, 400, v ? "unsupported_anthropic_beta" : "malformed_anthropic_beta",
                      "anthropic-beta must list %s (got '%.80s')", V1_BETA, v ? v : "(given twice)");
                return true;
        }
        return false;
}

/* The query: each known argument (an "x[]" is "x"), repeated ones collected. */
#define QUERY_LIST_MAX 16U
typedef struct query {
        const char *limit, *page, *order, *include_archived, *version, *agent_id, *agent_version, *last_event_id;
        const char *rows, *sandbox; /* hull's extensions */
        const char *created_gt, *created_gte, *created_lt, *created_lte;
        const char *list[QUERY_LIST_MAX]; /* statuses[], types[], event_deltas[] */
        size_t n_list;
        const char *list_name;
        const char *const *allowed; /* names this route takes */
        char bad[64];               /* the first unknown or repeated name */
        bool too_many;
} query;

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
static bool refuse_query(http_req *r, query *q, const char *const *allowed, const char *list_name) {
        *q = (query){.allowed = allowed, .list_name = list_name};
        http_req_each_query(r, query_arg, q);
        if (q->bad[0]) {
                failf(r, 400, "", "unknown query parameter '%s' (this route takes: %s%s%s%s%s%s%s)", q->bad,
                      allowed[0] ? allowed[0] : "none", allowed[0] && allowed[1] ? ", " : "",
                      allowed[0] && allowed[1] ? allowed[1] : "", allowed[0] && allowed[1] && allowed[2] ? ", " : "",
                      allowed[0] && allowed[1] && allowed[2] ? allowed[2] : "",
                      allowed[0] && allowed[1] && allowed[2] && allowed[3] ? ", ..." : "", "");
                return true;
        }
        if (q->too_many) {
                failf(r, 400, "", "%s[] is given more than %u times", list_name, QUERY_LIST_MAX);
                return true;
        }
        return false;
}

static bool refuse_bool(http_req *r, const char *name, const char *v, bool *ret) {
        *ret = false;
        if (!v)
                return false;
        if (strcmp(v, "true") == 0)
                *ret = true;
        else if (strcmp(v, "false") != 0) {
                failf(r, 400, "", "%s must be true or false, got '%.40s'", name, v);
                return true;
        }
        return false;
}

static bool refuse_int(http_req *r, const char *name, const char *v, uint64_t min, uint64_t max, uint64_t *ret) {
        if (!v)
                return false;
        if (parse_uint64(v, min, max, ret) < 0) {
                failf(r, 400, "", "%s must be an integer from %" PRIu64 " to %" PRIu64 ", got '%.40s'", name, min, max,
                      v);
                return true;
        }
        return false;
}

/* RFC 3339 in a filter: checked for shape only ("YYYY-MM-DDTHH:MM:SS..."). */
static bool refuse_time(http_req *r, const char *name, const char *v) {
        if (!v)
                return false;
        size_t n = strlen(v);
        bool ok = n >= 20 && n < STORE_TIME_MAX + 8 && v[4] == '-' && v[7] == '-' && (v[10] == 'T' || v[10] == 't') &&
                  v[13] == ':' && v[16] == ':';
        if (!ok) {
                failf(r, 400, "", "%s must be an RFC 3339 time such as 2026-01-01T00:00:00Z, got '%.40s'", name, v);
                return true;
        }
        return false;
}

static bool refuse_order(http_req *r, const char *v, bool def_desc, bool *ret_desc) {
        *ret_desc = def_desc;
        if (!v)
                return false;
        if (strcmp(v, "asc") == 0)
                *ret_desc = false;
        else if (strcmp(v, "desc") == 0)
                *ret_desc = true;
        else {
                failf(r, 400, "", "order must be asc or desc, got '%.20s'", v);
                return true;
        }
        return false;
}

/* The body as a JSON object ("" or none: an empty object when empty_ok). NULL once r is refused. */
static json_t *body_object(http_req *r, bool empty_ok) {
        size_t len;
        const char *b = http_req_body(r, &len);
        if (len == 0 && empty_ok)
                return json_object();
        json_error_t je;
        json_t *v = json_loadb(b, len, JSON_REJECT_DUPLICATES, &je);
        http_req_body_release(r);
        if (!v) {
                failf(r, 400, "", "the body is not JSON: %s (line %d, column %d)", je.text, je.line, je.column);
                return NULL;
        }
        if (!json_is_object(v)) {
                json_decref(v);
                failf(r, 400, "", "the body must be a JSON object");
                return NULL;
        }
        return v;
}

static json_t *page_json(store_page *p, bool prev) {
        json_t *o = json_pack("{s:O, s:s?}", "data", p->data, "next_page", p->next_page[0] ? p->next_page : NULL);
        if (o && !p->next_page[0])
                json_object_set_new(o, "next_page", json_null());
        if (o)
                json_object_set_new(o, "prev_page", prev && p->prev_page[0] ? json_string(p->prev_page) : json_null());
        return o;
}

static void answer_store_error(http_req *r, int err, const hull_error *e, const char *what, const char *id) {
        if (err == -ENOENT)
                failf(r, 404, "", "no %s %.64s", what, id ? id : "");
        else if (err == -EINVAL)
                failf(r, 400, "", "%s", e->msg);
        else
                failf(r, 500, "", "the %s could not be read or stored: %s", what, e->msg);
}

/* ---- agents and environments ---- */

static const char *const list_args[] = {"limit",           "page",           "include_archived", "created_at[gt]",
                                        "created_at[gte]", "created_at[lt]", "created_at[lte]",  NULL};

/* A list query from q (limit, page, archived, created_at). Returns true once r is refused. */
static bool refuse_list_query(http_req *r, const query *q, store_list_q *ret) {
        uint64_t limit = STORE_PAGE_DEFAULT;
        bool arch;
        if (refuse_int(r, "limit", q->limit, 1, STORE_PAGE_MAX, &limit) ||
            refuse_bool(r, "include_archived", q->include_archived, &arch) ||
            refuse_time(r, "created_at[gt]", q->created_gt) || refuse_time(r, "created_at[gte]", q->created_gte) ||
            refuse_time(r, "created_at[lt]", q->created_lt) || refuse_time(r, "created_at[lte]", q->created_lte))
                return true;
        *ret = (store_list_q){.limit = (unsigned) limit,
                              .page = q->page && q->page[0] ? q->page : NULL,
                              .include_archived = arch,
                              .created_gt = q->created_gt,
                              .created_gte = q->created_gte,
                              .created_lt = q->created_lt,
                              .created_lte = q->created_lte};
        return false;
}

static void list_kind(api_v1 *a, http_req *r, store_kind k, const char *const *allowed, bool bidirectional) {
        query q;
        store_list_q lq;
        if (refuse_query(r, &q, allowed, k == STORE_SESSION ? "statuses" : NULL) || refuse_list_query(r, &q, &lq))
                return;
        bool desc = k == STORE_SESSION;
        uint64_t av = 0;
        if (k == STORE_SESSION) {
                if (refuse_order(r, q.order, true, &desc) ||
                    refuse_int(r, "agent_version", q.agent_version, 1, INT64_MAX, &av))
                        return;
                for (size_t i = 0; i < q.n_list; i++) {
                        static const char *const known[] = {"idle", "running", "rescheduling", "terminated"};
                        bool ok = false;
                        for (size_t j = 0; j < ELEMENTSOF(known); j++)
                                ok |= strcmp(q.list[i], known[j]) == 0;
                        if (!ok) {
                                failf(r, 400, "",
                                      "statuses: '%.40s' is not one of idle, running, rescheduling, terminated",
                                      q.list[i]);
                                return;
                        }
                }
                lq.agent_id = q.agent_id;
                lq.agent_version = (int64_t) av;
                lq.statuses = q.list;
                lq.n_statuses = q.n_list;
        }
        lq.descending = desc;
        store_page p = {0};
        hull_error e = {0};
        int rr = store_list(a->cfg.store, k, &lq, &p, &e);
        if (rr < 0) {
                answer_store_error(r, rr, &e, "page", NULL);
                return;
        }
        answer_json(r, 200, page_json(&p, bidirectional));
        store_page_done(&p);
}

static void agent_get(api_v1 *a, http_req *r) {
        static const char *const allowed[] = {"version", NULL};
        query q;
        uint64_t version = 0;
        if (refuse_query(r, &q, allowed, NULL) || refuse_int(r, "version", q.version, 1, INT64_MAX, &version))
                return;
        const char *id = http_req_param(r, "id");
        json_t *obj = NULL;
        hull_error e = {0};
        int rr = store_get(a->cfg.store, STORE_AGENT, id, (int64_t) version, &obj, &e);
        if (rr == -ENOENT && version)
                failf(r, 404, "agent_version_not_found", "agent %.64s has no version %" PRIu64, id, version);
        else if (rr < 0)
                answer_store_error(r, rr, &e, "agent", id);
        else
                answer_json(r, 200, obj);
}

/* Create a resource of kind k with make (v1_agent_create or v1_environment_create). */
static void create_kind(api_v1 *a, http_req *r, store_kind k, const char *prefix,
                        int (*make)(const json_t *, const char *, const char *, json_t **, v1_err *)) {
        json_auto_t *body = body_object(r, false);
        if (!body)
                return;
        char id[STORE_ID_MAX], now[STORE_TIME_MAX];
        v1_id_new(prefix, id);
        store_now_rfc3339(now);
        json_t *obj = NULL;
        v1_err err = {0};
        if (make(body, id, now, &obj, &err) < 0) {
                fail(r, &err);
                return;
        }
        hull_error e = {0};
        int rr = store_insert(a->cfg.store, k, obj, &e);
        if (rr < 0) {
                json_decref(obj);
                answer_store_error(r, rr, &e, k == STORE_AGENT ? "agent" : "environment", id);
                return;
        }
        answer_json(r, 200, obj);
}

/* Update (or archive, with archive) a resource of kind k. */
static void update_kind(api_v1 *a, http_req *r, store_kind k, bool archive) {
        const char *what = k == STORE_AGENT ? "agent" : "environment";
        const char *id = http_req_param(r, "id");
        json_auto_t *body = body_object(r, archive);
        if (!body)
                return;
        if (archive && json_object_size(body) > 0) {
                failf(r, 400, "", "archive takes no body");
                return;
        }
        hull_error e = {0};
        for (int attempt = 0; attempt < 3; attempt++) {
                json_auto_t *cur = NULL;
                int rr = store_get(a->cfg.store, k, id, 0, &cur, &e);
                if (rr < 0) {
                        answer_store_error(r, rr, &e, what, id);
                        return;
                }
                char now[STORE_TIME_MAX];
                store_now_rfc3339(now);
                json_t *next = NULL;
                v1_err err = {0};
                if (archive) {
                        if (json_is_string(json_object_get(cur, "archived_at"))) {
                                answer_json(r, 200, json_incref(cur));
                                return;
                        }
                        next = json_deep_copy(cur);
                        if (next) {
                                json_object_set_new(next, "archived_at", json_string(now));
                                json_object_set_new(next, "updated_at", json_string(now));
                                if (k == STORE_AGENT) /* a version of its own, like any change */
                                        json_object_set_new(
                                                next, "version",
                                                json_integer(json_integer_value(json_object_get(cur, "version")) + 1));
                        }
                } else if ((k == STORE_AGENT ? v1_agent_update(cur, body, now, &next, &err)
                                             : v1_environment_update(cur, body, now, &next, &err)) < 0) {
                        fail(r, &err);
                        return;
                }
                if (!next) { /* nothing changed */
                        answer_json(r, 200, json_incref(cur));
                        return;
                }
                rr = store_update(a->cfg.store, k, next, &e);
                if (rr == -ESTALE) { /* someone else's version came first */
                        json_decref(next);
                        if (json_object_get(body, "version")) {
                                failf(r, 409, "version_conflict",
                                      "%s %.64s was updated meanwhile: read it again and send the new version", what,
                                      id);
                                return;
                        }
                        continue;
                }
                if (rr < 0) {
                        json_decref(next);
                        answer_store_error(r, rr, &e, what, id);
                        return;
                }
                answer_json(r, 200, next);
                return;
        }
        failf(r, 409, "version_conflict", "%s %.64s is being updated by others: try again", what, id);
}

/* ---- sessions ---- */

static void session_create(api_v1 *a, http_req *r) {
        json_auto_t *body = body_object(r, false);
        if (!body)
                return;
        v1_session_req req = {0};
        v1_err err = {0};
        if (v1_session_parse(body, &req, &err) < 0) {
                fail(r, &err);
                return;
        }
        hull_error e = {0};
        json_auto_t *agent = NULL, *env = NULL;
        int rr = store_get(a->cfg.store, STORE_AGENT, req.agent_id, req.agent_version, &agent, &e);
        if (rr == -ENOENT) {
                failf(r, 404, "agent_not_found", "no agent %.64s%s (GET /v1/agents lists them)", req.agent_id,
                      req.agent_version ? " at that version" : "");
                return;
        }
        if (rr < 0) {
                answer_store_error(r, rr, &e, "agent", req.agent_id);
                return;
        }
        if (json_is_string(json_object_get(agent, "archived_at"))) {
                failf(r, 400, "agent_archived", "agent %.64s is archived: sessions cannot start with it", req.agent_id);
                return;
        }
        rr = store_get(a->cfg.store, STORE_ENVIRONMENT, req.environment_id, 0, &env, &e);
        if (rr == -ENOENT) {
                failf(r, 404, "environment_not_found", "no environment %.64s (GET /v1/environments lists them)",
                      req.environment_id);
                return;
        }
        if (rr < 0) {
                answer_store_error(r, rr, &e, "environment", req.environment_id);
                return;
        }
        if (json_is_string(json_object_get(env, "archived_at"))) {
                failf(r, 400, "environment_archived", "environment %.64s is archived", req.environment_id);
                return;
        }
        char id[STORE_ID_MAX], now[STORE_TIME_MAX];
        v1_id_new("sesn_", id);
        store_now_rfc3339(now);
        json_t *obj = NULL;
        if (v1_session_create(body, &req, agent, id, now, &obj, &err) < 0) {
                fail(r, &err);
                return;
        }
        rr = store_insert(a->cfg.store, STORE_SESSION, obj, &e);
        if (rr < 0) {
                json_decref(obj);
                answer_store_error(r, rr, &e, "session", id);
                return;
        }
        if (json_array_size(req.initial_events) > 0) {
                json_auto_t *echo = NULL;
                if (v1_engine_send(a->cfg.engine, id, req.initial_events, &echo, &err) < 0) {
                        json_decref(obj);
                        fail(r, &err);
                        return;
                }
                json_decref(obj);
                obj = NULL;
                if (store_get(a->cfg.store, STORE_SESSION, id, 0, &obj, &e) < 0) {
                        answer_store_error(r, -EIO, &e, "session", id);
                        return;
                }
        }
        answer_json(r, 200, obj);
}

static void session_get(api_v1 *a, http_req *r) {
        const char *id = http_req_param(r, "id");
        char *body = NULL;
        size_t len = 0;
        hull_error e = {0};
        int rr = store_get_raw(a->cfg.store, STORE_SESSION, id, 0, &body, &len, &e);
        if (rr == -ENOENT)
                failf(r, 404, "session_not_found", "no session %.64s (GET /v1/sessions lists them)", id);
        else if (rr < 0)
                answer_store_error(r, rr, &e, "session", id);
        else /* stored as this API answers it */
                (void) http_answer(r, 200, "application/json", body, len);
}

static void session_update(api_v1 *a, http_req *r, int tag) {
        const char *id = http_req_param(r, "id");
        v1_err err = {0};
        json_t *obj = NULL;
        int rr;
        if (tag == T_SESSION_ARCHIVE) {
                json_auto_t *body = body_object(r, true);
                if (!body)
                        return;
                rr = v1_engine_archive(a->cfg.engine, id, &obj, &err);
        } else if (tag == T_SESSION_DELETE) {
                rr = v1_engine_delete(a->cfg.engine, id, &err);
                if (rr >= 0)
                        obj = json_pack("{s:s, s:s}", "id", id, "type", "session_deleted");
        } else {
                json_auto_t *body = body_object(r, false);
                if (!body)
                        return;
                rr = v1_engine_update(a->cfg.engine, id, body, &obj, &err);
        }
        if (rr < 0)
                fail(r, &err);
        else
                answer_json(r, 200, obj);
}

/* Does the session exist? Returns true once r is refused. */
static bool refuse_session(api_v1 *a, http_req *r, const char *id) {
        json_auto_t *obj = NULL;
        hull_error e = {0};
        int rr = store_get(a->cfg.store, STORE_SESSION, id, 0, &obj, &e);
        if (rr == -ENOENT) {
                failf(r, 404, "session_not_found", "no session %.64s (GET /v1/sessions lists them)", id);
                return true;
        }
        if (rr < 0) {
                answer_store_error(r, rr, &e, "session", id);
                return true;
        }
        return false;
}

static void events_list(api_v1 *a, http_req *r) {
        static const char *const allowed[] = {
                "limit",           "page",           "order",           "types", "created_at[gt]",
                "created_at[gte]", "created_at[lt]", "created_at[lte]", NULL};
        query q;
        uint64_t limit = STORE_PAGE_DEFAULT;
        bool desc;
        const char *id = http_req_param(r, "id");
        if (refuse_query(r, &q, allowed, "types") ||
            refuse_int(r, "limit", q.limit, 1, STORE_EVENTS_PAGE_MAX, &limit) ||
            refuse_order(r, q.order, false, &desc) || refuse_time(r, "created_at[gt]", q.created_gt) ||
            refuse_time(r, "created_at[gte]", q.created_gte) || refuse_time(r, "created_at[lt]", q.created_lt) ||
            refuse_time(r, "created_at[lte]", q.created_lte) || refuse_session(a, r, id))
                return;
        store_events_q eq = {.limit = (unsigned) limit,
                             .page = q.page && q.page[0] ? q.page : NULL,
                             .descending = desc,
                             .types = q.list,
                             .n_types = q.n_list,
                             .created_gt = q.created_gt,
                             .created_gte = q.created_gte,
                             .created_lt = q.created_lt,
                             .created_lte = q.created_lte};
        store_page p = {0};
        hull_error e = {0};
        int rr = store_events_list(a->cfg.store, id, &eq, &p, NULL, &e);
        if (rr < 0) {
                answer_store_error(r, rr, &e, "events of session", id);
                return;
        }
        answer_json(r, 200, page_json(&p, false));
        store_page_done(&p);
}

static void events_send(api_v1 *a, http_req *r) {
        const char *id = http_req_param(r, "id");
        json_auto_t *body = body_object(r, false);
        if (!body)
                return;
        json_auto_t *events = NULL, *echo = NULL;
        v1_err err = {0};
        if (v1_events_parse(body, &events, &err) < 0 || v1_engine_send(a->cfg.engine, id, events, &echo, &err) < 0) {
                fail(r, &err);
                return;
        }
        answer_json(r, 200, json_pack("{s:O}", "data", echo));
}

static void events_stream(api_v1 *a, http_req *r) {
        static const char *const allowed[] = {"event_deltas", "last_event_id", NULL};
        query q;
        const char *id = http_req_param(r, "id");
        if (refuse_query(r, &q, allowed, "event_deltas"))
                return;
        bool deltas = false;
        for (size_t i = 0; i < q.n_list; i++) {
                if (strcmp(q.list[i], "agent.message") == 0)
                        deltas = true;
                else if (strcmp(q.list[i], "agent.thinking") != 0) { /* hull's model text has no thinking previews */
                        failf(r, 400, "", "event_deltas: '%.40s' is not agent.message or agent.thinking", q.list[i]);
                        return;
                }
        }
        unsigned n = 0;
        const char *last = http_req_header(r, "last-event-id", &n);
        if (q.last_event_id)
                last = q.last_event_id;
        int64_t after = -1;
        if (refuse_session(a, r, id))
                return;
        if (last && last[0]) {
                uint64_t seq;
                hull_error e = {0};
                if (parse_uint64(last, 0, INT64_MAX, &seq) == 0)
                        after = (int64_t) seq;
                else if (store_events_seq_of(a->cfg.store, id, last, &after, &e) < 0) {
                        failf(r, 400, "",
                              "Last-Event-ID '%.64s' is neither a sequence number (the id: line of a frame) nor an "
                              "event "
                              "of this session",
                              last);
                        return;
                }
        } else if (n > 1) {
                failf(r, 400, "", "Last-Event-ID is given twice");
                return;
        }
        http_sse *sse = NULL;
        (void) http_answer_header(r, "cache-control", "no-cache");
        if (http_answer_sse(r, V1_STREAM_QUEUE_BYTES, 0, &sse) < 0) {
                failf(r, 500, "", "the stream could not start");
                return;
        }
        v1_err err = {0};
        (void) api_v1_stream(a->cfg.engine, id, after, deltas, sse, &err);
}

/* ---- hull's extensions: a session's handles, its run records and audit logs ---- */

static void box_unrefp(api_v1 *a, ss_session **box) {
        if (*box)
                ss_unref(v1_engine_ss(a->cfg.engine), *box);
}

static void handles_list(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *id = http_req_param(r, "id");
        if (refuse_session(a, r, id))
                return;
        json_t *data = NULL, *state = NULL;
        hull_error e = {0};
        if (v1_engine_handles(a->cfg.store, a->cfg.engine, id, &data, &state, &e) < 0) {
                failf(r, 500, "", "%s", e.msg);
                return;
        }
        answer_json(r, 200, json_pack("{s:o, s:b, s:o}", "data", data, "has_more", false, "sandbox", state));
}

static void answer_handle_error(http_req *r, int rr, const hull_error *e, const char *name) {
        if (rr == -ENOENT)
                failf(r, 404, "handle_not_found",
                      "the session's sandbox has no handle %.64s (GET .../handles lists them)", name);
        else if (rr == -EBADMSG)
                failf(r, 409, "handle_tampered", "%s", e->msg);
        else
                failf(r, 500, "", "handle %.64s could not be read: %s", name, e->msg);
}

static void handle_get(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *id = http_req_param(r, "id"), *name = http_req_param(r, "name");
        static const char *const allowed[] = {"rows", NULL};
        query q;
        uint64_t rows = V1_HANDLE_ROWS_DEFAULT;
        if (refuse_query(r, &q, allowed, NULL) || refuse_int(r, "rows", q.rows, 1, V1_HANDLE_ROWS_MAX, &rows) ||
            refuse_session(a, r, id))
                return;
        ss_session *box = NULL;
        (void) v1_engine_sandbox(a->cfg.engine, id, &box);
        if (!box) {
                failf(r, 404, "handle_not_found",
                      "session %.64s has no sandbox open now, so no handle %.64s (a turn that uses a tool opens one)",
                      id, name);
                return;
        }
        ss_manager *ss = v1_engine_ss(a->cfg.engine);
        hull_error e = {0};
        json_auto_t *sum = NULL, *more = NULL;
        ss_inspect_opts io = {.head = (uint32_t) rows};
        int rr = hd_id_is_valid(name) ? ss_handles_inspect(ss, box, name, &io, &sum, &e) : -ENOENT;
        const char *kind = json_string_value(json_object_get(sum, "kind")) ?: "";
        if (rr >= 0 && (strcmp(kind, "json") == 0 || strcmp(kind, "text") == 0))
                rr = ss_handles_read(ss, box, name, 0,
                                     strcmp(kind, "json") == 0 ? V1_HANDLE_JSON_PREVIEW_BYTES
                                                               : V1_HANDLE_TEXT_PREVIEW_BYTES,
                                     &more, &e);
        box_unrefp(a, &box);
        if (rr < 0) {
                answer_handle_error(r, rr, &e, name);
                return;
        }
        json_t *o = v1_handle_json(sum), *pv = NULL;
        if (!o) {
                failf(r, 500, "", "out of memory");
                return;
        }
        if (strcmp(kind, "table") == 0) {
                json_t *cols = json_array();
                size_t i;
                json_t *c;
                json_array_foreach(json_object_get(sum, "columns"), i, c) json_array_append_new(
                        cols, json_pack("{s:O, s:O?}", "name", c, "type",
                                        json_object_get(json_object_get(sum, "schema"), json_string_value(c))));
                json_t *head = json_object_get(sum, "head");
                pv = json_pack("{s:o, s:O, s:b}", "columns", cols, "rows", head ? head : json_array(), "truncated",
                               json_integer_value(json_object_get(sum, "n_rows")) > (json_int_t) json_array_size(head));
        } else if (strcmp(kind, "json") == 0)
                pv = json_pack("{s:O?, s:O, s:b}", "shape", json_object_get(sum, "shape"), "text",
                               json_object_get(more, "text"), "truncated", !json_is_true(json_object_get(more, "eof")));
        else if (strcmp(kind, "text") == 0)
                pv = json_pack("{s:O, s:b}", "text", json_object_get(more, "text"), "truncated",
                               !json_is_true(json_object_get(more, "eof")));
        if (pv)
                json_object_set_new(o, "preview", pv);
        answer_json(r, 200, o);
}

/* ---- run records ---- */

/* A file of the directory hull serve writes audit logs in (name: an audit log
 * "session-<fingerprint>.jsonl", or a network log "network-<session id>.log"), whole (malloc'd),
 * or -ENOENT. */
static int log_read(api_v1 *a, const char *name, char **ret, size_t *ret_len, hull_error *e) {
        if (!a->cfg.audit_dir)
                return -ENOENT;
        _cleanup_close_ int dfd = open(a->cfg.audit_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int fd = dfd < 0 ? -1 : openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ENOENT : hull_err(e, negative_errno(), "cannot open the audit log %s", name);
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return hull_fail(e, -EINVAL, "the audit log %s is not a regular file", name);
        if ((uint64_t) st.st_size > V1_AUDIT_LOG_ANSWER_MAX)
                return hull_fail(e, -EFBIG,
                                 "the audit log %s is %" PRIu64
                                 " bytes, more than hull serves over HTTP (%u MiB); read it in %s",
                                 name, (uint64_t) st.st_size, V1_AUDIT_LOG_ANSWER_MAX >> 20, a->cfg.audit_dir);
        size_t n = (size_t) st.st_size;
        _cleanup_free_ char *buf = malloc(n + 1);
        if (!buf)
                return hull_fail(e, -ENOMEM, "out of memory");
        ssize_t k = loop_read(fd, buf, n); /* a line appended meanwhile is for the next read */
        if (k < 0)
                return hull_err(e, (int) k, "cannot read the audit log %s", name);
        buf[k] = '\0';
        *ret_len = (size_t) k;
        *ret = TAKE_PTR(buf);
        return 0;
}

/* Is fp one of the session's sandboxes? Its index in boxes, or -1. */
static ssize_t box_index(const json_t *boxes, const char *fp) {
        size_t i;
        json_t *b;
        json_array_foreach(boxes, i, b) if (strcmp(json_string_value(json_object_get(b, "fingerprint")) ?: "", fp) ==
                                            0) return (ssize_t) i;
        return -1;
}

static void records_list(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *id = http_req_param(r, "id");
        static const char *const allowed[] = {"limit", "page", NULL};
        query q;
        uint64_t limit = V1_RECORDS_PAGE_MAX, start = 0;
        if (refuse_query(r, &q, allowed, NULL) || refuse_int(r, "limit", q.limit, 1, V1_RECORDS_PAGE_MAX, &limit) ||
            refuse_session(a, r, id))
                return;
        if (q.page && q.page[0] && parse_uint64(q.page, 0, UINT32_MAX, &start) < 0) {
                failf(r, 400, "", "page '%.40s' is not a cursor of this route (give next_page as it came)", q.page);
                return;
        }
        json_auto_t *boxes = NULL;
        hull_error e = {0};
        int rr = store_sandbox_list(a->cfg.store, id, &boxes, &e);
        if (rr < 0) {
                answer_store_error(r, rr, &e, "session", id);
                return;
        }
        json_auto_t *data = json_array();
        uint64_t index = 0, bytes = 0;
        bool more = false;
        size_t i;
        json_t *b;
        json_array_foreach(boxes, i, b) {
                const char *fp = json_string_value(json_object_get(b, "fingerprint"));
                _cleanup_free_ char *log = NULL;
                size_t len = 0;
                char name[REC_DIGEST_HEX_SIZE + 32];
                snprintf(name, sizeof(name), "session-%s.jsonl", fp);
                rr = log_read(a, name, &log, &len, &e);
                if (rr == -ENOENT) {
                        json_object_set_new(b, "records", json_integer(0));
                        continue;
                }
                if (rr < 0) {
                        failf(r, 500, "", "%s", e.msg);
                        return;
                }
                json_int_t n = 0;
                for (char *p = log, *end = log + len; p < end;) {
                        char *nl = memchr(p, '\n', (size_t) (end - p));
                        size_t ll = nl ? (size_t) (nl - p) : (size_t) (end - p);
                        if (!nl) /* a line still being written (or cut by a crash): not yet a record */
                                break;
                        n++;
                        if (index++ >= start && !more) {
                                if (json_array_size(data) >= limit ||
                                    (json_array_size(data) > 0 && bytes + ll > V1_RECORDS_PAGE_BYTES))
                                        more = true;
                                else {
                                        json_t *entry = json_loadb(p, ll, JSON_REJECT_DUPLICATES, NULL);
                                        json_array_append_new(data, json_pack("{s:s, s:I, s:s%, s:o?}", "sandbox", fp,
                                                                              "line", n, "raw", p, ll, "entry", entry));
                                        bytes += ll;
                                }
                        }
                        p += ll + 1;
                }
                json_object_set_new(b, "records", json_integer(n));
        }
        char next[32];
        snprintf(next, sizeof(next), "%" PRIu64, start + json_array_size(data));
        answer_json(r, 200,
                    json_pack("{s:O, s:O, s:b, s:s?}", "data", data, "sandboxes", boxes, "has_more", more, "next_page",
                              more ? next : NULL));
}

static void audit_log(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *id = http_req_param(r, "id");
        static const char *const allowed[] = {"sandbox", NULL};
        query q;
        if (refuse_query(r, &q, allowed, NULL) || refuse_session(a, r, id))
                return;
        json_auto_t *boxes = NULL;
        hull_error e = {0};
        int rr = store_sandbox_list(a->cfg.store, id, &boxes, &e);
        if (rr < 0) {
                answer_store_error(r, rr, &e, "session", id);
                return;
        }
        const char *fp = NULL;
        if (q.sandbox) {
                if (box_index(boxes, q.sandbox) < 0) {
                        failf(r, 404, "audit_log_not_found",
                              "sandbox %.64s is not one of session %.64s's (GET .../records lists them)", q.sandbox,
                              id);
                        return;
                }
                fp = q.sandbox;
        } else if (json_array_size(boxes) > 0)
                fp = json_string_value(
                        json_object_get(json_array_get(boxes, json_array_size(boxes) - 1), "fingerprint"));
        if (!fp) {
                failf(r, 404, "audit_log_not_found", "session %.64s has opened no sandbox, so it has no run records",
                      id);
                return;
        }
        char *log = NULL, name[REC_DIGEST_HEX_SIZE + 32];
        size_t len = 0;
        snprintf(name, sizeof(name), "session-%s.jsonl", fp);
        rr = log_read(a, name, &log, &len, &e);
        if (rr == -ENOENT) {
                failf(r, 404, "audit_log_not_found", "the audit log of sandbox %.64s is not there%s", fp,
                      a->cfg.audit_dir ? " (nothing was recorded yet)" : " (hull serve keeps no audit logs)");
                return;
        }
        if (rr < 0) {
                failf(r, rr == -EFBIG ? 413 : 500, "", "%s", e.msg);
                return;
        }
        char disp[REC_DIGEST_HEX_SIZE + 64];
        snprintf(disp, sizeof(disp), "attachment; filename=\"session-%s.jsonl\"", fp);
        (void) http_answer_header(r, "content-disposition", disp);
        (void) http_answer(r, 200, "application/x-ndjson", log, len);
}

/* GET /v1/sessions/{id}/network_log: the connection log of the limited network of the
 * session's sandboxes (one line per connection, as sbx-net.h writes them), text/plain. */
static void network_log(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *id = http_req_param(r, "id");
        query q;
        if (refuse_query(r, &q, (const char *const[]){NULL}, NULL) || refuse_session(a, r, id))
                return;
        char name[STORE_ID_MAX + 32];
        snprintf(name, sizeof(name), "network-%s.log", id);
        char *log = NULL;
        size_t len = 0;
        hull_error e = {0};
        int rr = log_read(a, name, &log, &len, &e);
        if (rr == -ENOENT) { /* no limited network (yet), or no log kept: an empty log */
                (void) http_answer(r, 200, "text/plain; charset=utf-8", NULL, 0);
                return;
        }
        if (rr < 0) {
                failf(r, rr == -EFBIG ? 413 : 500, "", "%s", e.msg);
                return;
        }
        (void) http_answer(r, 200, "text/plain; charset=utf-8", log, len);
}

/* ---- API keys ---- */

static json_t *key_json(const store_key *k) {
        return json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", k->id, "type", "api_key", "name", k->name, "created_at",
                         k->created_at, "hint", k->hint);
}

static void key_create(api_v1 *a, http_req *r) {
        json_auto_t *body = body_object(r, true);
        if (!body)
                return;
        const char *name = "";
        const char *k;
        json_t *v;
        json_object_foreach(body, k, v) {
                if (strcmp(k, "name") != 0) {
                        failf(r, 400, "", "unknown field '%.40s' (an API key takes only a name)", k);
                        return;
                }
                if (!json_is_string(v) || !auth_name_is_valid(json_string_value(v))) {
                        failf(r, 400, "", "name must be 1 to %u characters of letters, digits, '.', '_', ':' or '-'",
                              AUTH_NAME_MAX);
                        return;
                }
                name = json_string_value(v);
        }
        char token[AUTH_NEW_TOKEN_SIZE], digest[65];
        if (auth_token_new(token, digest) < 0) {
                failf(r, 500, "", "no key could be made (getrandom or libcrypto failed)");
                return;
        }
        store_key key = {0};
        v1_id_new("key_", key.id);
        snprintf(key.name, sizeof(key.name), "%s", name);
        memcpy(key.digest_hex, digest, sizeof(key.digest_hex));
        store_now_rfc3339(key.created_at);
        snprintf(key.hint, sizeof(key.hint), "%.9s...", token);
        hull_error e = {0};
        int rr = store_key_add(a->cfg.store, &key, &e);
        if (rr < 0) {
                explicit_bzero(token, sizeof(token));
                answer_store_error(r, rr, &e, "key", NULL);
                return;
        }
        json_t *o = key_json(&key);
        if (o)
                json_object_set_new(o, "key", json_string(token));
        explicit_bzero(token, sizeof(token));
        answer_json(r, 200, o);
}

static void key_list(api_v1 *a, http_req *r) {
        store_key *keys = NULL;
        size_t n = 0;
        hull_error e = {0};
        int rr = store_key_list(a->cfg.store, &keys, &n, &e);
        if (rr < 0) {
                answer_store_error(r, rr, &e, "keys", NULL);
                return;
        }
        json_t *data = json_array();
        for (size_t i = 0; data && i < n; i++)
                json_array_append_new(data, key_json(&keys[i]));
        free(keys);
        answer_json(r, 200, json_pack("{s:o, s:n}", "data", data, "next_page"));
}

static void key_delete(api_v1 *a, http_req *r) {
        const char *id = http_req_param(r, "id");
        hull_error e = {0};
        int rr = store_key_delete(a->cfg.store, id, &e);
        if (rr < 0)
                answer_store_error(r, rr, &e, "key", id);
        else
                answer_json(r, 200, json_pack("{s:s, s:s}", "id", id, "type", "api_key_deleted"));
}

/* ---- the dispatcher ---- */

static void handle(http_req *r) {
        api_v1 *a = http_req_data(r);
        int tag = http_req_tag(r);
        bool keys = tag >= T_KEY_CREATE;
        if (refuse_headers(r, !keys))
                return;
        if (tag >= T_HANDLES_LIST) { /* they read files: on a thread of their own */
                http_handler_fn *fn = tag == T_HANDLES_LIST ? handles_list
                                      : tag == T_HANDLE_GET ? handle_get
                                      : tag == T_RECORDS    ? records_list
                                      : tag == T_AUDIT_LOG  ? audit_log
                                                            : network_log;
                if (http_req_spawn(r, fn) < 0)
                        failf(r, 503, "", "no thread could be made for the request; retry");
                return;
        }
        /* routes without a query of their own take none (but beta) */
        static const char *const none[] = {NULL};
        static const char *const sess_list[] = {
                "limit",    "page",           "order",           "include_archived", "agent_id",        "agent_version",
                "statuses", "created_at[gt]", "created_at[gte]", "created_at[lt]",   "created_at[lte]", NULL};
        static const char *const ver_list[] = {"limit", "page", NULL};
        query q;
        switch (tag) {
        case T_AGENT_LIST:
                list_kind(a, r, STORE_AGENT, list_args, false);
                return;
        case T_ENV_LIST:
                list_kind(a, r, STORE_ENVIRONMENT, list_args, false);
                return;
        case T_SESSION_LIST:
                list_kind(a, r, STORE_SESSION, sess_list, true);
                return;
        case T_AGENT_GET:
                agent_get(a, r);
                return;
        case T_EVENTS_LIST:
                events_list(a, r);
                return;
        case T_EVENTS_STREAM:
                events_stream(a, r);
                return;
        case T_AGENT_VERSIONS: {
                uint64_t limit = STORE_PAGE_DEFAULT;
                if (refuse_query(r, &q, ver_list, NULL) || refuse_int(r, "limit", q.limit, 1, STORE_PAGE_MAX, &limit))
                        return;
                const char *id = http_req_param(r, "id");
                store_list_q lq = {.limit = (unsigned) limit,
                                   .page = q.page && q.page[0] ? q.page : NULL,
                                   .versions_of = id,
                                   .include_archived = true};
                store_page p = {0};
                hull_error e = {0};
                int rr = store_list(a->cfg.store, STORE_AGENT, &lq, &p, &e);
                if (rr >= 0 && json_array_size(p.data) == 0 && !lq.page) {
                        json_auto_t *cur = NULL;
                        rr = store_get(a->cfg.store, STORE_AGENT, id, 0, &cur, &e);
                }
                if (rr < 0)
                        answer_store_error(r, rr, &e, "agent", id);
                else
                        answer_json(r, 200, page_json(&p, false));
                store_page_done(&p);
                return;
        }
        default:
                break;
        }
        if (refuse_query(r, &q, none, NULL))
                return;
        switch (tag) {
        case T_AGENT_CREATE:
                create_kind(a, r, STORE_AGENT, "agent_", v1_agent_create);
                return;
        case T_AGENT_UPDATE:
                update_kind(a, r, STORE_AGENT, false);
                return;
        case T_AGENT_ARCHIVE:
                update_kind(a, r, STORE_AGENT, true);
                return;
        case T_ENV_CREATE:
                create_kind(a, r, STORE_ENVIRONMENT, "env_", v1_environment_create);
                return;
        case T_ENV_GET: {
                const char *id = http_req_param(r, "id");
                json_t *obj = NULL;
                hull_error e = {0};
                int rr = store_get(a->cfg.store, STORE_ENVIRONMENT, id, 0, &obj, &e);
                if (rr < 0)
                        answer_store_error(r, rr, &e, "environment", id);
                else
                        answer_json(r, 200, obj);
                return;
        }
        case T_ENV_UPDATE:
                update_kind(a, r, STORE_ENVIRONMENT, false);
                return;
        case T_ENV_ARCHIVE:
                update_kind(a, r, STORE_ENVIRONMENT, true);
                return;
        case T_ENV_DELETE: {
                const char *id = http_req_param(r, "id");
                hull_error e = {0};
                int rr = store_delete(a->cfg.store, STORE_ENVIRONMENT, id, &e);
                if (rr < 0)
                        answer_store_error(r, rr, &e, "environment", id);
                else
                        answer_json(r, 200, json_pack("{s:s, s:s}", "id", id, "type", "environment_deleted"));
                return;
        }
        case T_SESSION_CREATE:
                session_create(a, r);
                return;
        case T_SESSION_GET:
                session_get(a, r);
                return;
        case T_SESSION_UPDATE:
        case T_SESSION_ARCHIVE:
        case T_SESSION_DELETE:
                session_update(a, r, tag);
                return;
        case T_EVENTS_SEND:
                events_send(a, r);
                return;
        case T_KEY_CREATE:
                key_create(a, r);
                return;
        case T_KEY_LIST:
                key_list(a, r);
                return;
        case T_KEY_DELETE:
                key_delete(a, r);
                return;
        default:
                failf(r, 404, "", "no such route");
        }
}

#define ROUTE(m, p, t, body)                                                                                           \
        { .methods = (m), .pattern = (p), .scope = "v1", .body_max = (body), .handler = handle, .tag = (t) }

static const http_route routes[] = {
        ROUTE(HTTP_POST, "/v1/agents", T_AGENT_CREATE, V1_BODY_MAX),
        ROUTE(HTTP_GET, "/v1/agents", T_AGENT_LIST, 0),
        ROUTE(HTTP_GET, "/v1/agents/{id}", T_AGENT_GET, 0),
        ROUTE(HTTP_POST, "/v1/agents/{id}", T_AGENT_UPDATE, V1_BODY_MAX),
        ROUTE(HTTP_POST, "/v1/agents/{id}/archive", T_AGENT_ARCHIVE, V1_BODY_MAX),
        ROUTE(HTTP_GET, "/v1/agents/{id}/versions", T_AGENT_VERSIONS, 0),
        ROUTE(HTTP_POST, "/v1/environments", T_ENV_CREATE, V1_BODY_MAX),
        ROUTE(HTTP_GET, "/v1/environments", T_ENV_LIST, 0),
        ROUTE(HTTP_GET, "/v1/environments/{id}", T_ENV_GET, 0),
        ROUTE(HTTP_POST, "/v1/environments/{id}", T_ENV_UPDATE, V1_BODY_MAX),
        ROUTE(HTTP_DELETE, "/v1/environments/{id}", T_ENV_DELETE, 0),
        ROUTE(HTTP_POST, "/v1/environments/{id}/archive", T_ENV_ARCHIVE, V1_BODY_MAX),
        ROUTE(HTTP_POST, "/v1/sessions", T_SESSION_CREATE, V1_BODY_MAX),
        ROUTE(HTTP_GET, "/v1/sessions", T_SESSION_LIST, 0),
        ROUTE(HTTP_GET, "/v1/sessions/{id}", T_SESSION_GET, 0),
        ROUTE(HTTP_POST, "/v1/sessions/{id}", T_SESSION_UPDATE, V1_BODY_MAX),
        ROUTE(HTTP_DELETE, "/v1/sessions/{id}", T_SESSION_DELETE, 0),
        ROUTE(HTTP_POST, "/v1/sessions/{id}/archive", T_SESSION_ARCHIVE, V1_BODY_MAX),
        ROUTE(HTTP_GET, "/v1/sessions/{id}/events", T_EVENTS_LIST, 0),
        ROUTE(HTTP_POST, "/v1/sessions/{id}/events", T_EVENTS_SEND, V1_BODY_MAX),
        ROUTE(HTTP_GET, "/v1/sessions/{id}/events/stream", T_EVENTS_STREAM, 0),
        ROUTE(HTTP_POST, "/v1/api-keys", T_KEY_CREATE, V1_BODY_MAX),
        ROUTE(HTTP_GET, "/v1/api-keys", T_KEY_LIST, 0),
        ROUTE(HTTP_DELETE, "/v1/api-keys/{id}", T_KEY_DELETE, 0),
        ROUTE(HTTP_GET, "/v1/sessions/{id}/handles", T_HANDLES_LIST, 0),
        ROUTE(HTTP_GET, "/v1/sessions/{id}/handles/{name}", T_HANDLE_GET, 0),
        ROUTE(HTTP_GET, "/v1/sessions/{id}/records", T_RECORDS, 0),
        ROUTE(HTTP_GET, "/v1/sessions/{id}/audit_log", T_AUDIT_LOG, 0),
        ROUTE(HTTP_GET, "/v1/sessions/{id}/network_log", T_NETWORK_LOG, 0),
};

int api_v1_new(const api_v1_config *cfg, api_v1 **ret) {
        api_v1 *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->cfg = *cfg;
        *ret = a;
        return 0;
}

int api_v1_register(api_v1 *a, http_server *s) {
        return http_add_routes(s, &v1_api, routes, ELEMENTSOF(routes), a);
}

void api_v1_free(api_v1 *a) {
        free(a);
}

/* ---- keys for the HTTP server ---- */

static size_t keys_count(void *ud) {
        size_t n = 0;
        hull_error e = {0};
        if (store_key_count(ud, &n, &e) < 0)
                return 1; /* cannot tell: ask for a key rather than let anyone in */
        return n;
}

static int keys_find(void *ud, const uint8_t digest[static 32], char ret_id[static AUTH_NAME_MAX + 1]) {
        char hex[65];
        for (size_t i = 0; i < 32; i++)
                snprintf(hex + 2 * i, 3, "%02x", digest[i]);
        store_key k;
        hull_error e = {0};
        int r = store_key_find(ud, hex, &k, &e);
        explicit_bzero(hex, sizeof(hex));
        if (r == 1)
                snprintf(ret_id, AUTH_NAME_MAX + 1, "%s", k.id);
        return r == 1 ? 1 : 0;
}

http_keys api_v1_keys(store *s) {
        return (http_keys){.count = keys_count, .find = keys_find, .ud = s};
}
