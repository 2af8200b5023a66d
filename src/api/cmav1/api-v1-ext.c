/* api-v1-ext.c: hull's extensions of /v1 for the console and AG-UI: a session's handles (with
 * previews), its run records, its audit log and its network log, read from files on a thread of
 * each request's own. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api-v1-internal.h"
#include "fs-util.h"
#include "hd-store.h"
#include "macro.h"
#include "parse-util.h"

/* ---- hull's extensions: a session's handles, its run records and audit logs ---- */

static void box_unrefp(api_v1 *a, ss_session **box) {
        if (*box)
                ss_unref(v1_engine_ss(a->cfg.engine), *box);
}

static void handles_list(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *id = http_req_param(r, "id");
        if (v1a_refuse_session(a, r, id))
                return;
        json_t *data = NULL, *state = NULL;
        hull_error e = {0};
        if (v1_engine_handles(a->cfg.store, a->cfg.engine, id, &data, &state, &e) < 0) {
                v1a_failf(r, 500, "", "%s", e.msg);
                return;
        }
        v1a_answer_json(r, 200, json_pack("{s:o, s:b, s:o}", "data", data, "has_more", false, "sandbox", state));
}

static void answer_handle_error(http_req *r, int rr, const hull_error *e, const char *name) {
        if (rr == -ENOENT)
                v1a_failf(r, 404, "handle_not_found",
                          "the session's sandbox has no handle %.64s (GET .../handles lists them)", name);
        else if (rr == -EBADMSG)
                v1a_failf(r, 409, "handle_tampered", "%s", e->msg);
        else
                v1a_failf(r, 500, "", "handle %.64s could not be read: %s", name, e->msg);
}

static void handle_get(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *id = http_req_param(r, "id"), *name = http_req_param(r, "name");
        static const char *const allowed[] = {"rows", NULL};
        query q;
        uint64_t rows = V1_HANDLE_ROWS_DEFAULT;
        if (v1a_refuse_query(r, &q, allowed, NULL) || v1a_refuse_int(r, "rows", q.rows, 1, V1_HANDLE_ROWS_MAX, &rows) ||
            v1a_refuse_session(a, r, id))
                return;
        ss_session *box = NULL;
        (void) v1_engine_sandbox(a->cfg.engine, id, &box);
        if (!box) {
                v1a_failf(
                        r, 404, "handle_not_found",
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
                v1a_failf(r, 500, "", "out of memory");
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
        v1a_answer_json(r, 200, o);
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
        if (v1a_refuse_query(r, &q, allowed, NULL) ||
            v1a_refuse_int(r, "limit", q.limit, 1, V1_RECORDS_PAGE_MAX, &limit) || v1a_refuse_session(a, r, id))
                return;
        if (q.page && q.page[0] && parse_uint64(q.page, 0, UINT32_MAX, &start) < 0) {
                v1a_failf(r, 400, "", "page '%.40s' is not a cursor of this route (give next_page as it came)", q.page);
                return;
        }
        json_auto_t *boxes = NULL;
        hull_error e = {0};
        int rr = store_sandbox_list(a->cfg.store, id, &boxes, &e);
        if (rr < 0) {
                v1a_answer_store_error(r, rr, &e, "session", id);
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
                        v1a_failf(r, 500, "", "%s", e.msg);
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
        v1a_answer_json(r, 200,
                        json_pack("{s:O, s:O, s:b, s:s?}", "data", data, "sandboxes", boxes, "has_more", more,
                                  "next_page", more ? next : NULL));
}

static void audit_log(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *id = http_req_param(r, "id");
        static const char *const allowed[] = {"sandbox", NULL};
        query q;
        if (v1a_refuse_query(r, &q, allowed, NULL) || v1a_refuse_session(a, r, id))
                return;
        json_auto_t *boxes = NULL;
        hull_error e = {0};
        int rr = store_sandbox_list(a->cfg.store, id, &boxes, &e);
        if (rr < 0) {
                v1a_answer_store_error(r, rr, &e, "session", id);
                return;
        }
        const char *fp = NULL;
        if (q.sandbox) {
                if (box_index(boxes, q.sandbox) < 0) {
                        v1a_failf(r, 404, "audit_log_not_found",
                                  "sandbox %.64s is not one of session %.64s's (GET .../records lists them)", q.sandbox,
                                  id);
                        return;
                }
                fp = q.sandbox;
        } else if (json_array_size(boxes) > 0)
                fp = json_string_value(
                        json_object_get(json_array_get(boxes, json_array_size(boxes) - 1), "fingerprint"));
        if (!fp) {
                v1a_failf(r, 404, "audit_log_not_found",
                          "session %.64s has opened no sandbox, so it has no run records", id);
                return;
        }
        char *log = NULL, name[REC_DIGEST_HEX_SIZE + 32];
        size_t len = 0;
        snprintf(name, sizeof(name), "session-%s.jsonl", fp);
        rr = log_read(a, name, &log, &len, &e);
        if (rr == -ENOENT) {
                v1a_failf(r, 404, "audit_log_not_found", "the audit log of sandbox %.64s is not there%s", fp,
                          a->cfg.audit_dir ? " (nothing was recorded yet)" : " (hull serve keeps no audit logs)");
                return;
        }
        if (rr < 0) {
                v1a_failf(r, rr == -EFBIG ? 413 : 500, "", "%s", e.msg);
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
        if (v1a_refuse_query(r, &q, (const char *const[]){NULL}, NULL) || v1a_refuse_session(a, r, id))
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
                v1a_failf(r, rr == -EFBIG ? 413 : 500, "", "%s", e.msg);
                return;
        }
        (void) http_answer(r, 200, "text/plain; charset=utf-8", log, len);
}

/* ---- the routes' handlers: each reads files, on a thread of its own ---- */

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
SPAWNED(handles_list)
SPAWNED(handle_get)
SPAWNED(records_list)
SPAWNED(audit_log)
SPAWNED(network_log)
