/* api-v1-workspace.c: hull's extensions of /v1 for programs that drive a session (the Python
 * face, python/hull): input files handed in for the next turn (POST .../inputs), a handle's
 * stored bytes (GET .../handles/{name}/content: a binary or published file, a table's SQLite
 * database, a json or text handle's text) and read-only SQL over the session's table handles
 * (POST .../query). Reads run on a thread of their own, inside a call of the session's sandbox. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-v1-internal.h"
#include "hd-store.h"
#include "macro.h"
#include "parse-util.h"

/* POST /v1/sessions/{id}/inputs?name=NAME[&handle=ID][&format=F], the file's bytes as the body. */
static void input_add(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *id = http_req_param(r, "id");
        static const char *const allowed[] = {"name", "handle", "format", NULL};
        query q;
        if (v1a_refuse_query(r, &q, allowed, NULL))
                return;
        size_t len;
        const char *body = http_req_body(r, &len);
        json_t *answer = NULL;
        v1_err err = {0};
        int rr = v1_engine_add_input(a->cfg.engine, id, http_req_query(r, "handle"), http_req_query(r, "name"),
                                     http_req_query(r, "format"), body, len, &answer, &err);
        http_req_body_release(r);
        if (rr < 0) {
                v1a_fail(r, &err);
                return;
        }
        v1a_answer_json(r, 202, answer);
}

/* The session's open sandbox, claimed for one call, into *ret; false once r is answered. */
static bool sandbox_claim(api_v1 *a, http_req *r, const char *id, ss_session **ret) {
        ss_session *box = NULL;
        (void) v1_engine_sandbox(a->cfg.engine, id, &box);
        if (!box) {
                v1a_failf(r, 404, "sandbox_not_open",
                          "session %.64s has no sandbox open now, so no handles to read (a turn that uses a tool "
                          "opens one; it closes when idle too long)",
                          id);
                return false;
        }
        ss_manager *ss = v1_engine_ss(a->cfg.engine);
        hull_error e = {0};
        int rr = ss_call_begin(ss, box, -1, &e);
        if (rr < 0) {
                ss_unref(ss, box);
                v1a_failf(r, rr == -EBUSY ? 409 : 404, rr == -EBUSY ? "sandbox_busy" : "sandbox_not_open", "%s", e.msg);
                return false;
        }
        *ret = box;
        return true;
}

static void sandbox_release(api_v1 *a, ss_session *box) {
        ss_manager *ss = v1_engine_ss(a->cfg.engine);
        ss_call_end(ss, box);
        ss_unref(ss, box);
}

static const char *content_type_of(const char *kind) {
        if (strcmp(kind, "table") == 0)
                return "application/vnd.sqlite3";
        if (strcmp(kind, "json") == 0)
                return "application/json";
        if (strcmp(kind, "text") == 0)
                return "text/plain; charset=utf-8";
        return "application/octet-stream";
}

/* GET /v1/sessions/{id}/handles/{name}/content[?offset=N][&limit=N]: the bytes, at most
 * HULL_API_BINARY_READ_MAX a request; x-hull-total-bytes says how many there are. */
static void handle_content(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *id = http_req_param(r, "id"), *name = http_req_param(r, "name");
        static const char *const allowed[] = {"offset", "limit", NULL};
        query q;
        uint64_t offset = 0, limit = HULL_API_BINARY_READ_MAX;
        if (v1a_refuse_query(r, &q, allowed, NULL) ||
            v1a_refuse_int(r, "offset", http_req_query(r, "offset"), 0, UINT64_MAX / 2, &offset) ||
            v1a_refuse_int(r, "limit", http_req_query(r, "limit"), 1, HULL_API_BINARY_READ_MAX, &limit) ||
            v1a_refuse_session(a, r, id))
                return;
        if (!hd_id_is_valid(name)) {
                v1a_failf(r, 404, "handle_not_found", "no handle %.64s: not a handle name", name);
                return;
        }
        ss_session *box = NULL;
        if (!sandbox_claim(a, r, id, &box))
                return;
        void *data = NULL;
        size_t len = 0;
        uint64_t total = 0;
        json_auto_t *sum = NULL;
        hull_error e = {0};
        int rr = ss_handles_read_bytes(v1_engine_ss(a->cfg.engine), box, name, offset, limit, &data, &len, &total, &sum,
                                       &e);
        sandbox_release(a, box);
        if (rr == -ENOENT) {
                v1a_failf(r, 404, "handle_not_found",
                          "the session's sandbox has no handle %.64s (GET .../handles lists them)", name);
                return;
        }
        if (rr < 0) {
                v1a_failf(r, rr == -EBADMSG ? 409 : 500, rr == -EBADMSG ? "handle_tampered" : "",
                          "handle %.64s could not be read: %s", name, e.msg);
                return;
        }
        char num[32];
        snprintf(num, sizeof(num), "%" PRIu64, total);
        (void) http_answer_header(r, "x-hull-total-bytes", num);
        snprintf(num, sizeof(num), "%" PRIu64, offset < total ? offset : total);
        (void) http_answer_header(r, "x-hull-offset", num);
        (void) http_answer_header(r, "x-hull-handle-kind", json_string_value(json_object_get(sum, "kind")) ?: "");
        (void) http_answer(r, 200, content_type_of(json_string_value(json_object_get(sum, "kind")) ?: ""), data, len);
}

static void answer_query_error(http_req *r, int rr, const hull_error *e) {
        switch (rr) {
        case -ENOENT:
                v1a_failf(r, 404, "handle_not_found", "%s", e->msg);
                break;
        case -ETIMEDOUT:
        case -EFBIG:
        case -ENOMEM:
        case -EINVAL:
        case -EBADMSG:
        case -EPERM:
        case -EMEDIUMTYPE:
                v1a_failf(r, 400, "query_refused", "%s", e->msg);
                break;
        default:
                v1a_failf(r, 500, "", "the query could not run: %s", e->msg);
        }
}

/* POST /v1/sessions/{id}/query {"sql": TEXT, "handles"?: [ID...], "max_rows"?: N}: one read-only
 * statement over table handles (each attached under its id: SELECT ... FROM h1.data), answered
 * inline ({"columns", "rows", "n_rows"}) or, when large, as a new table handle ({"handle"}). */
static void query_run(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *id = http_req_param(r, "id");
        if (v1a_refuse_session(a, r, id))
                return;
        json_auto_t *body = v1a_body_object(r, false);
        if (!body)
                return;
        const char *k;
        json_t *v;
        json_object_foreach(body, k,
                            v) if (strcmp(k, "sql") != 0 && strcmp(k, "handles") != 0 && strcmp(k, "max_rows") != 0) {
                v1a_failf(r, 400, "", "%.64s: unknown field (the body takes sql, handles, max_rows)", k);
                return;
        }
        const char *sql = json_string_value(json_object_get(body, "sql"));
        if (!sql || !sql[0] || strlen(sql) > V1_TEXT_MAX) {
                v1a_failf(r, 400, "",
                          "sql: give one read-only SQL statement as a string (at most %u bytes), e.g. "
                          "SELECT * FROM h1.data LIMIT 10",
                          V1_TEXT_MAX);
                return;
        }
        const json_t *hs = json_object_get(body, "handles");
        const char *ids[HULL_API_QUERY_HANDLES_MAX];
        size_t n = 0;
        if (hs && (!json_is_array(hs) || json_array_size(hs) > HULL_API_QUERY_HANDLES_MAX)) {
                v1a_failf(r, 400, "", "handles: an array of at most %u handle names", HULL_API_QUERY_HANDLES_MAX);
                return;
        }
        size_t i;
        json_array_foreach(hs, i, v) {
                ids[n] = json_string_value(v);
                if (!ids[n] || !hd_id_is_valid(ids[n])) {
                        v1a_failf(r, 400, "", "handles[%zu]: not a handle name", i);
                        return;
                }
                n++;
        }
        const json_t *mr = json_object_get(body, "max_rows");
        if (mr && (!json_is_integer(mr) || json_integer_value(mr) < 1 ||
                   json_integer_value(mr) > (json_int_t) V1_QUERY_ROWS_MAX)) {
                v1a_failf(r, 400, "", "max_rows: an integer from 1 to %u", V1_QUERY_ROWS_MAX);
                return;
        }
        ss_session *box = NULL;
        if (!sandbox_claim(a, r, id, &box))
                return;
        json_auto_t *out = NULL;
        hull_error e = {0};
        int rr = ss_handles_query(v1_engine_ss(a->cfg.engine), box, sql, n ? ids : NULL, n,
                                  mr ? (uint64_t) json_integer_value(mr) : 0, &out, &e);
        sandbox_release(a, box);
        if (rr < 0) {
                answer_query_error(r, rr, &e);
                return;
        }
        json_t *h = json_object_get(out, "handle");
        json_t *o = h ? json_pack("{s:s, s:o}", "type", "query_result", "handle", v1_handle_json(h))
                      : json_pack("{s:s, s:O, s:O, s:O}", "type", "query_result", "columns",
                                  json_object_get(out, "columns"), "rows", json_object_get(out, "rows"), "n_rows",
                                  json_object_get(out, "n_rows"));
        v1a_answer_json(r, 200, o);
}

/* ... or on the node that holds the session's sandbox (v1a_forwarded) */
#define SPAWNED(name)                                                                                                  \
        static void name##_here(http_req *r) {                                                                         \
                if (!v1a_forwarded(r))                                                                                 \
                        name(r);                                                                                       \
        }                                                                                                              \
        void v1a_##name(http_req *r) {                                                                                 \
                if (http_req_spawn(r, name##_here) < 0)                                                                \
                        v1a_failf(r, 503, "", "no thread could be made for the request; retry");                       \
        }
SPAWNED(input_add)
SPAWNED(handle_content)
SPAWNED(query_run)
