/* store-util.c: what every backend of the store shares (store-backend.h): RFC 3339 times, the
 * checks of a resource's and an event's columns, JSON in and out, and list cursors with the
 * pagination over a backend's fetch. Pure: no I/O, no backend. */
#include "store-backend.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base64.h"
#include "macro.h"

typedef struct kind_info {
        const char *name; /* in messages: "agent" */
        char tag;         /* its cursors' first byte */
} kind_info;

static const kind_info kinds[_STORE_KIND_MAX] = {
        [STORE_AGENT] = {"agent", 'a'},
        [STORE_ENVIRONMENT] = {"environment", 'e'},
        [STORE_SESSION] = {"session", 's'},
        [STORE_MEMORY_STORE] = {"memory store", 'm'},
};

const char *store_kind_name(store_kind k) {
        return kinds[k].name;
}

char store_kind_tag(store_kind k) {
        return kinds[k].tag;
}

/* ---- times ---- */

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
        y -= m <= 2;
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        unsigned yoe = (unsigned) (y - era * 400);
        unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
        unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + (int64_t) doe - 719468;
}

static bool digits(const char *p, int n, unsigned *ret) {
        unsigned v = 0;
        for (int i = 0; i < n; i++) {
                if (p[i] < '0' || p[i] > '9')
                        return false;
                v = v * 10 + (unsigned) (p[i] - '0');
        }
        *ret = v;
        return true;
}

int store_time_ms(const char *s, int64_t *ret) {
        unsigned y, mo, d, h, mi, sec, ms = 0;
        if (!s || strnlen(s, 20) < 20)
                return -EINVAL;
        if (!digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' || !digits(s + 8, 2, &d) ||
            (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(s + 11, 2, &h) || s[13] != ':' ||
            !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &sec))
                return -EINVAL;
        const char *p = s + 19;
        if (*p == '.') {
                unsigned n = 0;
                for (p++; *p >= '0' && *p <= '9'; p++, n++)
                        if (n < 3)
                                ms = ms * 10 + (unsigned) (*p - '0');
                if (n == 0)
                        return -EINVAL;
                for (; n < 3; n++)
                        ms *= 10;
        }
        int64_t off_min = 0;
        if (*p == 'Z' || *p == 'z')
                p++;
        else if (*p == '+' || *p == '-') {
                unsigned oh, om;
                if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om) || oh > 23 || om > 59)
                        return -EINVAL;
                off_min = (int64_t) (oh * 60 + om) * (*p == '-' ? -1 : 1);
                p += 6;
        } else
                return -EINVAL;
        if (*p)
                return -EINVAL;
        static const unsigned mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 ||
            sec > 60)
                return -EINVAL;
        int64_t days = days_from_civil(y, mo, d);
        *ret = (((days * 24 + h) * 60 + mi) * 60 + sec) * 1000 + ms - off_min * 60000;
        return 0;
}

void store_now_rfc3339(char ret[static STORE_TIME_MAX]) {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        unsigned year = (unsigned) (tm.tm_year + 1900) % 10000;
        snprintf(ret, STORE_TIME_MAX, "%04u-%02u-%02uT%02u:%02u:%02u.%03uZ", year, (unsigned) (tm.tm_mon + 1) % 100,
                 (unsigned) tm.tm_mday % 100, (unsigned) tm.tm_hour % 100, (unsigned) tm.tm_min % 100,
                 (unsigned) tm.tm_sec % 100, (unsigned) (ts.tv_nsec / 1000000) % 1000);
}

/* ---- JSON in and out ---- */

int store_dump(const json_t *o, const char *what, char **ret, hull_error *e) {
        char *p = json_dumps(o, JSON_COMPACT);
        if (!p)
                return hull_err(e, -ENOMEM, "store: cannot serialise %s", what);
        size_t n = strlen(p);
        if (n > STORE_OBJECT_BYTES_MAX) {
                free(p);
                return hull_fail(e, -E2BIG, "store: %s is %zu bytes of JSON, more than the %u kept", what, n,
                                 STORE_OBJECT_BYTES_MAX);
        }
        *ret = p;
        return 0;
}

int store_load(const char *p, size_t n, const char *what, json_t **ret, hull_error *e) {
        if (!p)
                return hull_fail(e, -EBADMSG, "store: %s: stored body is missing (hull.db is damaged)", what);
        json_error_t err;
        json_t *o = json_loadb(p, n, JSON_ALLOW_NUL, &err);
        if (!o)
                return hull_fail(e, -EBADMSG, "store: %s: stored body is not JSON (%s; hull.db is damaged)", what,
                                 err.text);
        *ret = o;
        return 0;
}

/* ---- what the columns need of a resource ---- */

int store_id_check(const char *what, const char *id, hull_error *e) {
        if (!id || !*id || strnlen(id, STORE_ID_MAX) >= STORE_ID_MAX)
                return hull_fail(e, -EINVAL, "store: %s id must be a string of 1 to %u bytes", what, STORE_ID_MAX - 1);
        return 0;
}

int store_kind_check(store_kind k, hull_error *e) {
        if ((unsigned) k >= _STORE_KIND_MAX)
                return hull_fail(e, -EINVAL, "store: unknown kind of resource %d", (int) k);
        return 0;
}

int store_read_cols(store_kind k, const json_t *obj, store_cols *c, hull_error *e) {
        const char *what = kinds[k].name;
        if (!json_is_object(obj))
                return hull_fail(e, -EINVAL, "store: %s must be a JSON object", what);
        *c = (store_cols){.id = json_string_value(json_object_get(obj, "id"))};
        int r = store_id_check(what, c->id, e);
        if (r < 0)
                return r;
        if (store_time_ms(json_string_value(json_object_get(obj, "created_at")), &c->created_ms) < 0)
                return hull_fail(e, -EINVAL, "store: %s %s: \"created_at\" must be an RFC 3339 time", what, c->id);
        json_t *a = json_object_get(obj, "archived_at");
        if (a && !json_is_null(a) && !json_is_string(a))
                return hull_fail(e, -EINVAL, "store: %s %s: \"archived_at\" must be null or a string", what, c->id);
        c->archived = json_is_string(a);
        if (k == STORE_AGENT) {
                json_t *v = json_object_get(obj, "version");
                if (!json_is_integer(v) || json_integer_value(v) < 1)
                        return hull_fail(e, -EINVAL, "store: agent %s: \"version\" must be an integer >= 1", c->id);
                c->version = json_integer_value(v);
        } else if (k == STORE_SESSION) {
                c->status = json_string_value(json_object_get(obj, "status"));
                if (!c->status)
                        return hull_fail(e, -EINVAL, "store: session %s: \"status\" must be a string", c->id);
                json_t *ag = json_object_get(obj, "agent");
                c->agent_id = json_string_value(json_object_get(ag, "id"));
                json_t *v = json_object_get(ag, "version");
                if (!c->agent_id || !json_is_integer(v) || json_integer_value(v) < 1)
                        return hull_fail(e, -EINVAL,
                                         "store: session %s: \"agent\" must be an object with \"id\" and \"version\"",
                                         c->id);
                c->agent_version = json_integer_value(v);
        }
        return 0;
}

int store_read_event(const json_t *ev, size_t i, store_event_cols *c, hull_error *e) {
        if (!json_is_object(ev))
                return hull_fail(e, -EINVAL, "store: event %zu must be a JSON object", i + 1);
        c->id = json_string_value(json_object_get(ev, "id"));
        c->type = json_string_value(json_object_get(ev, "type"));
        if (!c->id || !*c->id || strnlen(c->id, STORE_ID_MAX) >= STORE_ID_MAX)
                return hull_fail(e, -EINVAL, "store: event %zu: \"id\" must be a string of 1 to %u bytes", i + 1,
                                 STORE_ID_MAX - 1);
        if (!c->type || !*c->type)
                return hull_fail(e, -EINVAL, "store: event %s: \"type\" must be a string", c->id);
        json_t *p = json_object_get(ev, "processed_at");
        c->processed = p && !json_is_null(p);
        if (c->processed && store_time_ms(json_string_value(p), &c->processed_ms) < 0)
                return hull_fail(e, -EINVAL, "store: event %s: \"processed_at\" must be null or an RFC 3339 time",
                                 c->id);
        return 0;
}

int store_text_check(const char *what, const char *v, size_t max, bool empty_ok, hull_error *e) {
        size_t n = strnlen(v, max);
        if (n >= max || (!empty_ok && n == 0))
                return hull_fail(e, -EINVAL, "store: a key's %s must be %s%zu bytes at most", what,
                                 empty_ok ? "" : "1 to ", max - 1);
        return 0;
}

int store_thread_check(const char *thread_id, hull_error *e) {
        size_t n = thread_id ? strnlen(thread_id, STORE_THREAD_ID_MAX) : 0;
        if (n == 0 || n >= STORE_THREAD_ID_MAX)
                return hull_fail(e, -EINVAL, "store: a thread id must be 1 to %u bytes", STORE_THREAD_ID_MAX - 1);
        return 0;
}

int store_limit_check(unsigned limit, unsigned max, unsigned *ret, hull_error *e) {
        if (limit > max)
                return hull_fail(e, -EINVAL, "store: limit %u is out of 1..%u", limit, max);
        *ret = limit ? limit : STORE_PAGE_DEFAULT;
        return 0;
}

/* ---- list cursors ----
 * A list is ordered by a key (created_ms then id, an agent's version, an event's seq). A cursor
 * names one row's key, a direction ('n': the rows after it in the list's order, 'p': the rows
 * before it) and a digest of the query it came from, as base64url of "TD.FFFFFFFF.KEY.ID" (T the
 * list's tag, D the direction, F the digest, KEY in hex). */

static int cursor_encode(const store_listing *l, char dir, const store_rowkey *k, char ret[static STORE_CURSOR_MAX]) {
        char raw[STORE_CURSOR_MAX];
        int n = snprintf(raw, sizeof(raw), "%c%c.%08" PRIx32 ".%" PRIx64 ".%s", l->tag, dir, l->digest,
                         (uint64_t) k->key, l->with_id ? k->id : "");
        if (n < 0 || (size_t) n >= sizeof(raw))
                return -EOVERFLOW;
        char out[STORE_CURSOR_MAX + 4];
        size_t len;
        if (base64_encode_to(out, sizeof(out), raw, (size_t) n, false, &len) < 0 || len >= STORE_CURSOR_MAX)
                return -EOVERFLOW;
        for (size_t i = 0; i < len; i++)
                out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
        memcpy(ret, out, len + 1);
        return 0;
}

static bool hex64(const char *p, size_t n, uint64_t *ret) {
        uint64_t v = 0;
        if (n == 0 || n > 16)
                return false;
        for (size_t i = 0; i < n; i++) {
                int d = p[i] >= '0' && p[i] <= '9' ? p[i] - '0' : p[i] >= 'a' && p[i] <= 'f' ? p[i] - 'a' + 10 : -1;
                if (d < 0)
                        return false;
                v = v << 4 | (uint64_t) d;
        }
        *ret = v;
        return true;
}

static int cursor_decode(const store_listing *l, const char *page, store_rowkey *ret, char *ret_dir, hull_error *e) {
        size_t n = strnlen(page, STORE_CURSOR_MAX);
        bool ok = n > 0 && n < STORE_CURSOR_MAX;
        for (size_t i = 0; ok && i < n; i++)
                ok = (page[i] >= 'A' && page[i] <= 'Z') || (page[i] >= 'a' && page[i] <= 'z') ||
                     (page[i] >= '0' && page[i] <= '9') || page[i] == '-' || page[i] == '_';
        _cleanup_free_ char *raw = NULL;
        size_t len = 0;
        if (ok)
                ok = base64_decode(page, n, (void **) &raw, &len) == 0;
        /* "TD." "FFFFFFFF" "." KEY "." ID */
        const char *key = NULL, *dot = NULL;
        if (ok)
                ok = len >= 14 && memchr(raw, 0, len) == NULL && raw[0] == l->tag &&
                     (raw[1] == 'n' || (raw[1] == 'p' && l->bidirectional)) && raw[2] == '.' && raw[11] == '.';
        uint64_t digest = 0, k = 0;
        if (ok)
                ok = hex64(raw + 3, 8, &digest) && digest == l->digest;
        if (ok) {
                key = raw + 12;
                dot = strchr(key, '.');
                ok = dot && hex64(key, (size_t) (dot - key), &k);
        }
        if (ok) {
                size_t idn = strlen(dot + 1);
                ok = l->with_id ? idn > 0 && idn < STORE_ID_MAX : idn == 0;
                if (ok)
                        memcpy(ret->id, dot + 1, idn + 1);
        }
        if (!ok)
                return hull_fail(e, -EINVAL,
                                 "store: page \"%.40s\" is not a cursor of this %s list (pass the next_page or "
                                 "prev_page of the same query, or none to start again)",
                                 page, l->what);
        ret->key = (int64_t) k;
        *ret_dir = raw[1];
        return 0;
}

static int exists_beyond(store_fetch_fn fetch, void *ctx, const store_rowkey *k, bool asc, bool *ret, hull_error *e) {
        size_t n;
        int r = fetch(ctx, k, asc, 1, NULL, NULL, &n, e);
        if (r < 0)
                return r;
        *ret = n > 0;
        return 0;
}

int store_paginate(const store_listing *l, const char *page, unsigned limit, store_fetch_fn fetch, void *ctx,
                   store_page *ret, int64_t **ret_keys, hull_error *e) {
        store_rowkey anchor;
        char dir = 'n';
        if (page) {
                int r = cursor_decode(l, page, &anchor, &dir, e);
                if (r < 0)
                        return r;
        }
        bool prev = dir == 'p';
        bool list_asc = !l->descending, asc = list_asc != prev;
        _cleanup_free_ store_rowkey *keys = calloc(limit + 1, sizeof(*keys));
        _cleanup_(json_decrefp) json_t *rows = json_array();
        if (!keys || !rows)
                return hull_err(e, -ENOMEM, "store: cannot list");
        size_t n;
        int r = fetch(ctx, page ? &anchor : NULL, asc, limit + 1, rows, keys, &n, e);
        if (r < 0)
                return r;
        bool more = n > limit;
        if (more) {
                json_array_remove(rows, limit);
                n = limit;
        }
        _cleanup_(json_decrefp) json_t *data = json_array();
        if (!data)
                return hull_err(e, -ENOMEM, "store: cannot list");
        for (size_t i = 0; i < n; i++)
                if (json_array_append(data, json_array_get(rows, prev ? n - 1 - i : i)) < 0)
                        return hull_err(e, -ENOMEM, "store: cannot list");
        if (prev)
                for (size_t i = 0; i < n / 2; i++) {
                        store_rowkey t = keys[i];
                        keys[i] = keys[n - 1 - i];
                        keys[n - 1 - i] = t;
                }

        store_page p = {0};
        bool before = false, after = false; /* rows before the first / after the last, in the list's order */
        if (!prev) {
                after = more;
                if (l->bidirectional && page && n > 0 &&
                    (r = exists_beyond(fetch, ctx, &keys[0], !list_asc, &before, e)) < 0)
                        return r;
        } else {
                before = more;
                if (n > 0 && (r = exists_beyond(fetch, ctx, &keys[n - 1], list_asc, &after, e)) < 0)
                        return r;
        }
        if ((after && cursor_encode(l, 'n', &keys[n - 1], p.next_page) < 0) ||
            (before && cursor_encode(l, 'p', &keys[0], p.prev_page) < 0))
                return hull_err(e, -EOVERFLOW, "store: cannot make a page cursor");
        if (ret_keys) {
                int64_t *ks = malloc((n ? n : 1) * sizeof(*ks));
                if (!ks)
                        return hull_err(e, -ENOMEM, "store: cannot list");
                for (size_t i = 0; i < n; i++)
                        ks[i] = keys[i].key;
                *ret_keys = ks;
        }
        p.data = TAKE_PTR(data);
        *ret = p;
        return 0;
}

/* ---- copy (hull db copy): the tables, parents first ---- */

const store_table store_tables[] = {
        {"agents", "id, version, latest, created_ms, archived, body", "tiiiit", "id, version"},
        {"environments", "id, created_ms, archived, body", "tiit", "created_ms, id"},
        {"sessions", "id, created_ms, archived, status, agent_id, agent_version, body", "tiittit", "created_ms, id"},
        {"events", "session_id, seq, id, type, processed_ms, body", "tittnt", "session_id, seq"},
        {"conversations", "session_id, body", "tt", "session_id"},
        {"conversation_parts", "session_id, idx, body", "tit", "session_id, idx"},
        {"api_keys", "id, name, digest, created_at, hint", "ttttt", "ord"},
        {"session_sandboxes", "session_id, fingerprint, opened_at", "ttt", "ord"},
        {"agui_threads", "thread_id, session_id", "tt", "thread_id"},
        {"env_specs", "name, version, latest, created_ms, body", "tiiit", "name, version"},
        {"vaults", "id, created_ms, archived, body", "tiit", "created_ms, id"},
        {"vault_credentials", "id, vault_id, created_ms, archived, url, body, key_id, sealed", "ttiitttt",
         "created_ms, id"},
        {"skills", "id, created_ms, body", "tit", "created_ms, id"},
        {"skill_versions", "skill_id, version, created_ms, body, zip", "tiitt", "skill_id, version"},
        {"memory_stores", "id, created_ms, archived, body", "tiit", "created_ms, id"},
        {"memories", "id, store_id, path, version_id, body", "ttttt", "store_id, path"},
        {"memory_versions", "store_id, seq, id, memory_id, session_id, operation, created_ms, body", "tittttit",
         "store_id, seq"},
        {"files", "id, created_ms, sha256, size, scope_id, body", "tititt", "created_ms, id"},
        {"blob_chunks", "sha256, seq, data", "tit", "sha256, seq"},
        {"deployments", "id, created_ms, archived, status, agent_id, claimed_ms, body", "tiittit", "created_ms, id"},
        {"deployment_runs", "id, deployment_id, created_ms, trigger_type, has_error, body", "ttitit", "created_ms, id"},
        {"webhooks", "id, created_ms, types, enabled, body, key_id, sealed", "titittt", "created_ms, id"},
        {"webhook_deliveries", "event_id, webhook_id, created_ms, due_ms, attempts, body", "ttiiit",
         "created_ms, event_id, webhook_id"},
        {"work", "id, env_id, session_id, state, created_ms, polled_ms, lease_ms, heartbeat, worker_id, version, body",
         "ttttiiittit", "created_ms, id"},
        {"work_keys", "digest, scope, work_id, created_ms", "ttti", "digest"},
};
const size_t store_n_tables = ELEMENTSOF(store_tables);

/* ---- a password kept out of messages ---- */

static void replace_all(char *msg, size_t size, const char *secret, size_t n) {
        if (n == 0)
                return;
        for (char *p = msg; (p = memmem(p, strlen(p), secret, n));) {
                size_t tail = strlen(p + n);
                if ((size_t) (p - msg) + 3 + tail >= size) {
                        *p = '\0'; /* no room: cut the message there */
                        return;
                }
                memmove(p + 3, p + n, tail + 1);
                memcpy(p, "***", 3);
                p += 3;
        }
}

void store_redact(const char *url, char *msg, size_t size) {
        if (!url || !msg || size == 0)
                return;
        const char *scheme = strstr(url, "://");
        if (scheme) {
                const char *auth = scheme + 3;
                size_t end = strcspn(auth, "/?#");
                const char *at = memrchr(auth, '@', end);
                const char *colon = at ? memchr(auth, ':', (size_t) (at - auth)) : NULL;
                if (colon)
                        replace_all(msg, size, colon + 1, (size_t) (at - colon - 1));
        }
        for (const char *p = url; (p = strstr(p, "password="));) {
                p += strlen("password=");
                replace_all(msg, size, p, strcspn(p, "& "));
        }
}
