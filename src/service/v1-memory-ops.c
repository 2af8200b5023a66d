/* v1-memory-ops.c: the operations of memory stores over the store (see v1-memory.h): a change
 * of a memory as one new version (a lost race read again, a precondition checked each time), the
 * list of memories with its path-ordered cursor and depth roll-ups, and redaction. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "sha256.h"
#include "utf8.h"
#include "v1-memory.h"
#include "v1-run.h"

/* The store's refusal as a v1_err. */
static int store_fail(int r, const hull_error *he, const char *what, const char *id, v1_err *e) {
        if (r == -ENOENT)
                return v1_fail(e, 404, NULL, "no %s %.64s", what, id ? id : "");
        if (r == -EINVAL)
                return v1_fail(e, 400, NULL, "%s", he->msg);
        return v1_fail(e, 500, NULL, "the %s could not be read or stored: %s", what, he->msg);
}

int v1_memory_store_get(store *s, const char *id, json_t **ret, v1_err *e) {
        hull_error he = {0};
        int r = store_get(s, STORE_MEMORY_STORE, id, 0, ret, &he);
        return r < 0 ? store_fail(r, &he, "memory store", id, e) : 0;
}

int v1_memory_read(store *s, const char *store_id, const char *memory_id, const char *path, json_t **ret, v1_err *e) {
        hull_error he = {0};
        int r = store_memory_get(s, store_id, memory_id, path, ret, &he);
        if (r == -ENOENT) {
                json_auto_t *st = NULL;
                if ((r = v1_memory_store_get(s, store_id, &st, e)) < 0)
                        return r;
                return v1_fail(e, 404, NULL, "memory store %.64s has no memory %.200s", store_id,
                               memory_id ? memory_id : path);
        }
        return r < 0 ? store_fail(r, &he, "memory", memory_id, e) : 0;
}

static json_t *actor_json(const v1_memory_actor *a) {
        if (a->session_id)
                return json_pack("{s:s, s:s}", "type", "session_actor", "session_id", a->session_id);
        return json_pack("{s:s, s:s}", "type", "api_actor", "api_key_id", a->api_key_id ? a->api_key_id : "");
}

/* The version a change makes (content NULL: a delete). */
static json_t *version_new(const char *vid, const char *store_id, const char *memory_id, const char *op,
                           const char *now, const char *path, const char *content, size_t len, const char *sha,
                           const v1_memory_actor *a) {
        json_t *v = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:n, s:n}", "id", vid, "type", "memory_version",
                              "memory_id", memory_id, "memory_store_id", store_id, "operation", op, "created_at", now,
                              "path", path, "created_by", actor_json(a), "redacted_at", "redacted_by");
        if (!v)
                return NULL;
        json_object_set_new(v, "content", content ? json_stringn(content, len) : json_null());
        json_object_set_new(v, "content_sha256", content ? json_string(sha) : json_null());
        json_object_set_new(v, "content_size_bytes", content ? json_integer((json_int_t) len) : json_null());
        return v;
}

/* The memory after a change: cur (NULL: new) with path, content and the head vid. */
static json_t *memory_next(const json_t *cur, const char *id, const char *store_id, const char *now, const char *path,
                           const char *content, size_t len, const char *sha, const char *vid) {
        json_t *m = cur ? json_deep_copy(cur)
                        : json_pack("{s:s, s:s, s:s, s:s}", "id", id, "type", "memory", "memory_store_id", store_id,
                                    "created_at", now);
        if (!m)
                return NULL;
        json_object_set_new(m, "path", json_string(path));
        json_object_set_new(m, "content", json_stringn(content, len));
        json_object_set_new(m, "content_sha256", json_string(sha));
        json_object_set_new(m, "content_size_bytes", json_integer((json_int_t) len));
        json_object_set_new(m, "memory_version_id", json_string(vid));
        json_object_set_new(m, "updated_at", json_string(now));
        return m;
}

static int precondition_failed(v1_err *e, const char *id, const char *want, const char *have) {
        int r = v1_fail(
                e, 409, NULL,
                "memory %.64s has content_sha256 %.64s, not %.64s: it changed since you read it (read it again, "
                "then retry with its new content_sha256)",
                id, have ? have : "(deleted)", want);
        snprintf(e->type, sizeof(e->type), "memory_precondition_failed_error");
        return r;
}

static int path_conflict(v1_err *e, const char *path, const char *other) {
        int r = v1_fail(e, 409, NULL,
                        "another memory (%.64s) has the path %.300s: choose another path or update that one", other,
                        path);
        snprintf(e->type, sizeof(e->type), "memory_path_conflict_error");
        return r;
}

/* The checks of q before any read: the path, the content's size. */
static int req_check(const v1_memory_req *q, v1_err *e) {
        int r;
        if (!q->memory_id && (!q->path || !q->content))
                return v1_fail(e, 400, NULL, "a new memory needs a path and a content (\"\" is a content)");
        if (q->path && (r = v1_memory_path_check(q->path, strlen(q->path), false, "path", e)) < 0)
                return r;
        if (q->content && q->content_len > MEMORY_CONTENT_MAX)
                return v1_fail(e, 413, "memory_content_too_large",
                               "content: %zu bytes, at most %u: split it into several memories", q->content_len,
                               MEMORY_CONTENT_MAX);
        if (q->content && !utf8_is_valid(q->content, q->content_len))
                return v1_fail(e, 400, NULL, "content: must be valid UTF-8 text");
        if (q->expect_sha256 && !sha256_hex_is_valid(q->expect_sha256, strlen(q->expect_sha256)))
                return v1_fail(e, 400, NULL, "content_sha256: must be 64 lowercase hex digits");
        return 0;
}

/* One attempt of q against the memory as it is now (cur: NULL for a new one). 1: a lost race
 * (read again), 0 done. */
static int attempt(store *s, const v1_memory_req *q, const json_t *cur, json_t **ret, v1_err *e) {
        const char *cur_sha = json_string_value(json_object_get(cur, "content_sha256"));
        const char *cur_path = json_string_value(json_object_get(cur, "path"));
        json_t *cc = json_object_get(cur, "content");
        const char *content = q->content ? q->content : json_string_value(cc);
        size_t len = q->content ? q->content_len : json_string_length(cc);
        const char *path = q->path ? q->path : cur_path;
        bool same = cur && !q->remove && len == json_string_length(cc) &&
                    memcmp(content, json_string_value(cc), len) == 0 && strcmp(path, cur_path) == 0;
        if (q->expect_sha256 && (!cur_sha || strcmp(q->expect_sha256, cur_sha) != 0) && !same)
                return precondition_failed(e, q->memory_id, q->expect_sha256, cur_sha);
        if (same) { /* nothing to change: no version */
                if (ret)
                        *ret = json_incref((json_t *) cur);
                return 0;
        }
        char vid[STORE_ID_MAX], mid[STORE_ID_MAX], now[STORE_TIME_MAX], sha[SHA256_HEX_SIZE] = "";
        v1_id_new("memver_", vid);
        store_now_rfc3339(now);
        if (!q->memory_id)
                v1_id_new("mem_", mid);
        else
                snprintf(mid, sizeof(mid), "%s", q->memory_id);
        if (!q->remove && sha256_hex(content, len, sha) < 0)
                return -ENOMEM;
        const char *op = q->remove ? "deleted" : cur ? "modified" : "created";
        json_auto_t *ver =
                version_new(vid, q->store_id, mid, op, now, path, q->remove ? NULL : content, len, sha, &q->actor);
        json_auto_t *mem = q->remove ? NULL : memory_next(cur, mid, q->store_id, now, path, content, len, sha, vid);
        if (!ver || (!q->remove && !mem))
                return -ENOMEM;
        store_memory_change c = {.store_id = q->store_id,
                                 .memory_id = mid,
                                 .expect_version_id = json_string_value(json_object_get(cur, "memory_version_id")),
                                 .memory = mem,
                                 .version = ver,
                                 .session_id = q->actor.session_id,
                                 .memories_max = MEMORY_PER_STORE_MAX};
        char conflict[STORE_ID_MAX] = "";
        hull_error he = {0};
        int r = store_memory_apply(s, &c, conflict, &he);
        if (r == -ESTALE)
                return 1;
        if (r == -EEXIST)
                return path_conflict(e, path, conflict);
        if (r == -ENOSPC)
                return v1_fail(e, 400, "memory_store_full",
                               "memory store %.64s holds %u memories, its most: delete some first", q->store_id,
                               MEMORY_PER_STORE_MAX);
        if (r < 0)
                return store_fail(r, &he, "memory store", q->store_id, e);
        if (ret)
                *ret = mem ? json_incref(mem) : NULL;
        return 0;
}

int v1_memory_write(store *s, const v1_memory_req *q, json_t **ret, v1_err *e) {
        if (ret)
                *ret = NULL;
        int r = req_check(q, e);
        if (r < 0)
                return r;
        json_auto_t *st = NULL;
        if ((r = v1_memory_store_get(s, q->store_id, &st, e)) < 0)
                return r;
        if (json_is_string(json_object_get(st, "archived_at")))
                return v1_fail(e, 400, "memory_store_archived",
                               "memory store %.64s is archived: its memories can be read, not changed", q->store_id);
        for (unsigned i = 0; i < MEMORY_APPLY_TRIES; i++) {
                json_auto_t *cur = NULL;
                if (q->memory_id && (r = v1_memory_read(s, q->store_id, q->memory_id, NULL, &cur, e)) < 0)
                        return r;
                if ((r = attempt(s, q, cur, ret, e)) <= 0)
                        return r;
                if (!q->memory_id) /* a new one's id was taken: another try, another id */
                        continue;
        }
        return v1_fail(e, 409, "memory_busy", "memory %.64s is being changed by others: try again",
                       q->memory_id ? q->memory_id : q->path);
}

/* ---- the list ---- */

static void hex_of(const char *s, char *out) {
        static const char digits[] = "0123456789abcdef";
        for (; *s; s++) {
                *out++ = digits[(unsigned char) *s >> 4];
                *out++ = digits[(unsigned char) *s & 15];
        }
        *out = '\0';
}

/* A cursor: 'i' (from, inclusive) or 'x' (after) and the path in hex. */
static int cursor_read(const char *page, char *from, bool *inclusive, v1_err *e) {
        size_t n = strlen(page);
        if (n < 3 || (page[0] != 'i' && page[0] != 'x') || (n - 1) % 2 || (n - 1) / 2 > STORE_MEMORY_PATH_MAX)
                return v1_fail(e, 400, NULL, "page: not a cursor of this list (pass next_page as it came)");
        for (size_t i = 1; i < n; i += 2) {
                unsigned v;
                if (sscanf(page + i, "%2x", &v) != 1 || !strchr("0123456789abcdef", page[i]) ||
                    !strchr("0123456789abcdef", page[i + 1]) || v == 0)
                        return v1_fail(e, 400, NULL, "page: not a cursor of this list (pass next_page as it came)");
                from[(i - 1) / 2] = (char) v;
        }
        from[(n - 1) / 2] = '\0';
        *inclusive = page[0] == 'i';
        return 0;
}

/* The least path above every path under p (which ends with "/"): its "/" made "0". */
static void bump(const char *p, char *out) {
        size_t n = strlen(p);
        memcpy(out, p, n + 1);
        out[n - 1] = '0';
}

typedef struct listing {
        json_t *data;
        char from[STORE_MEMORY_PATH_MAX + 2];
        bool inclusive;
} listing;

/* One memory into the list, or its roll-up at depth; false when the scan must start again. */
static bool list_take(listing *l, const json_t *m, size_t plen, unsigned depth, bool full) {
        const char *path = json_string_value(json_object_get(m, "path"));
        if (!path)
                return true;
        if (depth > 0) {
                const char *p = path + plen;
                for (unsigned d = 0; (p = strchr(p, '/')); d++, p++)
                        if (d + 1 >= depth) {
                                char pre[STORE_MEMORY_PATH_MAX + 2];
                                size_t k = (size_t) (p - path) + 1;
                                memcpy(pre, path, k);
                                pre[k] = '\0';
                                json_array_append_new(l->data,
                                                      json_pack("{s:s, s:s}", "type", "memory_prefix", "path", pre));
                                bump(pre, l->from);
                                l->inclusive = true;
                                return false;
                        }
        }
        json_array_append_new(l->data, v1_memory_view(m, full));
        snprintf(l->from, sizeof(l->from), "%s", path);
        l->inclusive = false;
        return true;
}

int v1_memory_list(store *s, const char *store_id, const char *prefix, unsigned depth, const char *page, unsigned limit,
                   bool full, json_t **ret, v1_err *e) {
        const char *pre = prefix ? prefix : "/";
        int r = v1_memory_path_check(pre, strlen(pre), true, "path_prefix", e);
        if (r < 0)
                return r;
        json_auto_t *st = NULL;
        if ((r = v1_memory_store_get(s, store_id, &st, e)) < 0)
                return r;
        listing l = {.data = json_array(), .inclusive = true};
        json_auto_t *data = l.data;
        if (!data)
                return -ENOMEM;
        char below[STORE_MEMORY_PATH_MAX + 2];
        bump(pre, below);
        snprintf(l.from, sizeof(l.from), "%s", pre);
        if (page && (r = cursor_read(page, l.from, &l.inclusive, e)) < 0)
                return r;
        bool more = true;
        hull_error he = {0};
        while (json_array_size(data) < limit && more) {
                json_auto_t *rows = NULL;
                unsigned want = limit - (unsigned) json_array_size(data);
                if ((r = store_memory_scan(s, store_id, l.from, l.inclusive, below, want, &rows, &he)) < 0)
                        return store_fail(r, &he, "memory store", store_id, e);
                more = json_array_size(rows) == want;
                size_t i;
                json_t *m;
                json_array_foreach(rows, i, m) if (!list_take(&l, m, strlen(pre), depth, full)) {
                        more = true;
                        break;
                }
        }
        json_t *next = json_null();
        if (json_array_size(data) >= limit) { /* is there anything after? */
                json_auto_t *rows = NULL;
                if ((r = store_memory_scan(s, store_id, l.from, l.inclusive, below, 1, &rows, &he)) < 0)
                        return store_fail(r, &he, "memory store", store_id, e);
                if (json_array_size(rows) > 0) {
                        char cur[2 * STORE_MEMORY_PATH_MAX + 4];
                        cur[0] = l.inclusive ? 'i' : 'x';
                        hex_of(l.from, cur + 1);
                        next = json_string(cur);
                }
        }
        *ret = json_pack("{s:O, s:o}", "data", data, "next_page", next);
        return *ret ? 0 : -ENOMEM;
}

/* ---- redaction ---- */

int v1_memory_redact(store *s, const char *store_id, const char *version_id, const v1_memory_actor *actor, json_t **ret,
                     v1_err *e) {
        hull_error he = {0};
        json_auto_t *ver = NULL;
        int r = store_memory_version_get(s, store_id, version_id, &ver, &he);
        if (r == -ENOENT) {
                json_auto_t *st = NULL;
                if ((r = v1_memory_store_get(s, store_id, &st, e)) < 0)
                        return r;
                return v1_fail(e, 404, NULL, "memory store %.64s has no memory version %.64s", store_id, version_id);
        }
        if (r < 0)
                return store_fail(r, &he, "memory version", version_id, e);
        if (json_is_string(json_object_get(ver, "redacted_at"))) {
                *ret = TAKE_PTR(ver);
                return 0;
        }
        json_auto_t *mem = NULL;
        const char *mid = json_string_value(json_object_get(ver, "memory_id"));
        if (store_memory_get(s, store_id, mid, NULL, &mem, &he) == 0 &&
            strcmp(json_string_value(json_object_get(mem, "memory_version_id")), version_id) == 0)
                return v1_fail(e, 409, "memory_version_is_current",
                               "version %.64s is memory %.64s's current content: update or delete the memory first, "
                               "then redact this version",
                               version_id, mid);
        char now[STORE_TIME_MAX];
        store_now_rfc3339(now);
        const char *const blank[] = {"content", "content_sha256", "content_size_bytes", "path"};
        for (size_t i = 0; i < ELEMENTSOF(blank); i++)
                json_object_set_new(ver, blank[i], json_null());
        json_object_set_new(ver, "redacted_at", json_string(now));
        json_object_set_new(ver, "redacted_by", actor_json(actor));
        if ((r = store_memory_version_put(s, store_id, ver, &he)) < 0)
                return store_fail(r, &he, "memory version", version_id, e);
        *ret = TAKE_PTR(ver);
        return 0;
}
