/* store.c: the store's front (store.h): it picks a backend by the path or URL store_open gets,
 * checks every argument, serialises what is written and computes each list's filters and cursor
 * digest, then calls the backend through its store_ops (store-backend.h). No SQL here: a backend
 * gets only what is already valid, so each one answers the same errors the same way. */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "store-backend.h"

#define TAG_VERSIONS 'v'
#define TAG_EVENTS 'E'

/* ---- open: a path or sqlite:PATH is SQLite; postgres:// or postgresql:// is PostgreSQL ---- */

static bool has_prefix(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool store_url_is_pg(const char *url) {
        return url && (has_prefix(url, "postgres://") || has_prefix(url, "postgresql://"));
}

int store_open(const char *path, store **ret, hull_error *e) {
        /* The URL is never repeated in a message: it may hold a password. */
        if (store_url_is_pg(path))
                return store_pg_open(path, ret, e);
        if (path && has_prefix(path, "sqlite://"))
                path += strlen("sqlite://");
        else if (path && has_prefix(path, "sqlite:"))
                path += strlen("sqlite:");
        return store_sqlite_open(path, ret, e);
}

void store_url_describe(const char *url, char *buf, size_t size) {
        if (!store_url_is_pg(url)) {
                snprintf(buf, size, "%s", url ? url : "");
                return;
        }
        /* scheme://[user[:password]@]rest: the password and the query (password=...) go */
        const char *auth = strstr(url, "://") + 3;
        size_t end = strcspn(auth, "/?#");
        const char *at = memrchr(auth, '@', end);
        const char *colon = at ? memchr(auth, ':', (size_t) (at - auth)) : NULL;
        size_t rest = strcspn(at ? at : auth, "?");
        if (colon)
                snprintf(buf, size, "%.*s:***%.*s", (int) (colon - url), url, (int) rest, at);
        else
                snprintf(buf, size, "%.*s", (int) (auth - url) + (int) ((at ? at : auth) - auth) + (int) rest, url);
}

const char *store_backend_name(store *s) {
        return s->ops->name;
}

void store_close(store *s) {
        if (!s)
                return;
        s->ops->close(s);
}

int store_schema_version(void) {
        return store_sqlite_schema_version();
}

int store_backend_schema_version(store *s) {
        return strcmp(s->ops->name, "postgresql") == 0 ? store_pg_schema_version() : store_sqlite_schema_version();
}

int store_user_version(store *s) {
        return s->ops->user_version(s);
}

/* ---- resources ---- */

int store_insert(store *s, store_kind k, const json_t *obj, hull_error *e) {
        store_cols c;
        int r = store_kind_check(k, e);
        if (r < 0 || (r = store_read_cols(k, obj, &c, e)) < 0)
                return r;
        if (k == STORE_AGENT && c.version != 1)
                return hull_fail(e, -EINVAL, "store: a new agent's version must be 1, not %" PRId64, c.version);
        _cleanup_free_ char *body = NULL;
        r = store_dump(obj, store_kind_name(k), &body, e);
        if (r < 0)
                return r;
        return s->ops->insert(s, k, &c, body, e);
}

static int get_check(store_kind k, const char *id, int64_t version, hull_error *e) {
        int r = store_kind_check(k, e);
        if (r < 0 || (r = store_id_check(store_kind_name(k), id, e)) < 0)
                return r;
        if (version < 0 || (version > 0 && k != STORE_AGENT))
                return hull_fail(e, -EINVAL, "store: a version is for agents only, and >= 1");
        return 0;
}

int store_get(store *s, store_kind k, const char *id, int64_t version, json_t **ret, hull_error *e) {
        int r = get_check(k, id, version, e);
        if (r < 0)
                return r;
        return s->ops->get(s, k, id, version, ret, NULL, NULL, e);
}

int store_get_raw(store *s, store_kind k, const char *id, int64_t version, char **ret, size_t *ret_len, hull_error *e) {
        int r = get_check(k, id, version, e);
        if (r < 0)
                return r;
        return s->ops->get(s, k, id, version, NULL, ret, ret_len, e);
}

int store_update(store *s, store_kind k, const json_t *obj, hull_error *e) {
        store_cols c;
        int r = store_kind_check(k, e);
        if (r < 0 || (r = store_read_cols(k, obj, &c, e)) < 0)
                return r;
        _cleanup_free_ char *body = NULL;
        r = store_dump(obj, store_kind_name(k), &body, e);
        if (r < 0)
                return r;
        return s->ops->update(s, k, &c, body, e);
}

int store_delete(store *s, store_kind k, const char *id, hull_error *e) {
        int r = store_kind_check(k, e);
        if (r < 0 || (r = store_id_check(store_kind_name(k), id, e)) < 0)
                return r;
        return s->ops->remove(s, k, id, e);
}

/* ---- lists: the filters and the digest of the query its cursors carry ---- */

static void fnv(uint32_t *h, const void *p, size_t n) {
        const unsigned char *b = p;
        for (size_t i = 0; i < n; i++) {
                *h ^= b[i];
                *h *= 16777619U;
        }
}
static void fnv_str(uint32_t *h, const char *s) {
        fnv(h, s ? "S" : "N", 1);
        if (s)
                fnv(h, s, strlen(s) + 1);
}
static void fnv_int(uint32_t *h, int64_t v) {
        fnv(h, &v, sizeof(v));
}

/* The created_at filters (on created_ms or processed_ms); fed to the digest too. */
static int time_filters(store_listing *l, uint32_t *h, const char *gt, const char *gte, const char *lt, const char *lte,
                        hull_error *e) {
        const struct {
                const char *v, *name;
        } t[_STORE_TIME_MAX] = {
                [STORE_TIME_GT] = {gt, "gt"},
                [STORE_TIME_GTE] = {gte, "gte"},
                [STORE_TIME_LT] = {lt, "lt"},
                [STORE_TIME_LTE] = {lte, "lte"},
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                fnv_str(h, t[i].v);
                if (!t[i].v)
                        continue;
                if (store_time_ms(t[i].v, &l->time_ms[i]) < 0)
                        return hull_fail(e, -EINVAL,
                                         "store: created_at[%s] \"%.40s\" is not an RFC 3339 time (like "
                                         "2026-12-02T10:00:00Z)",
                                         t[i].name, t[i].v);
                l->has_time[i] = true;
        }
        return 0;
}

/* A JSON array of the n strings, as text (store_listing.in_set). */
static int string_set(const char *what, const char *const *v, size_t n, uint32_t *h, char **ret, hull_error *e) {
        _cleanup_(json_decrefp) json_t *a = json_array();
        if (!a)
                return hull_err(e, -ENOMEM, "store: cannot list");
        for (size_t i = 0; i < n; i++) {
                if (!v[i] || json_array_append_new(a, json_string(v[i])) < 0)
                        return hull_fail(e, -EINVAL, "store: %s filter %zu is not a UTF-8 string", what, i + 1);
                fnv_str(h, v[i]);
        }
        return store_dump(a, what, ret, e);
}

/* The filters of a list of resources of kind k (not of an agent's versions). */
static int objects_listing(store_kind k, const store_list_q *q, store_listing *l, uint32_t *h, char **ret_set,
                           hull_error *e) {
        l->bidirectional = k == STORE_SESSION;
        fnv_int(h, q->descending);
        fnv_int(h, q->include_archived);
        l->include_archived = q->include_archived;
        int r = time_filters(l, h, q->created_gt, q->created_gte, q->created_lt, q->created_lte, e);
        if (r < 0)
                return r;
        if (k == STORE_SESSION) {
                fnv_str(h, q->agent_id);
                fnv_int(h, q->agent_version);
                fnv_str(h, q->memory_store_id);
                if (q->memory_store_id && (r = store_id_check("memory store", q->memory_store_id, e)) < 0)
                        return r;
                l->memory_store_id = q->memory_store_id;
                fnv_int(h, (int64_t) q->n_statuses);
                l->agent_id = q->agent_id;
                l->agent_version = q->agent_version;
                if (q->n_statuses) {
                        r = string_set("status", q->statuses, q->n_statuses, h, ret_set, e);
                        if (r < 0)
                                return r;
                        l->in_set = *ret_set;
                }
        }
        return 0;
}

int store_list(store *s, store_kind k, const store_list_q *q, store_page *ret, hull_error *e) {
        unsigned limit = 0;
        int r = store_kind_check(k, e);
        if (r < 0 || (r = store_limit_check(q->limit, STORE_PAGE_MAX, &limit, e)) < 0)
                return r;
        uint32_t h = 2166136261U;
        store_listing l = {.of = STORE_LIST_OBJECTS,
                           .tag = store_kind_tag(k),
                           .with_id = true,
                           .what = store_kind_name(k),
                           .descending = q->descending,
                           .kind = k};
        _cleanup_free_ char *statuses = NULL;
        if (k == STORE_AGENT && q->versions_of) {
                if ((r = store_id_check("agent", q->versions_of, e)) < 0)
                        return r;
                l.of = STORE_LIST_VERSIONS;
                l.tag = TAG_VERSIONS;
                l.with_id = false;
                l.descending = false;
                l.what = "agent version";
                l.versions_of = q->versions_of;
                fnv_str(&h, q->versions_of);
        } else if ((r = objects_listing(k, q, &l, &h, &statuses, e)) < 0)
                return r;
        fnv(&h, &l.tag, 1);
        l.digest = h;
        return s->ops->list(s, &l, q->page, limit, ret, NULL, e);
}

void store_page_done(store_page *p) {
        if (!p)
                return;
        json_decref(p->data);
        *p = (store_page){0};
}

int store_sessions_with_status(store *s, const char *const *statuses, size_t n, json_t **ret, hull_error *e) {
        uint32_t h = 0;
        _cleanup_free_ char *set = NULL;
        int r = string_set("status", statuses, n, &h, &set, e);
        if (r < 0)
                return r;
        return s->ops->sessions_with_status(s, set, ret, e);
}

/* ---- events ---- */

int store_events_append(store *s, const char *session_id, json_t *const *events, size_t n, int64_t *ret_first_seq,
                        hull_error *e) {
        int r = store_id_check("session", session_id, e);
        if (r < 0)
                return r;
        if (n > 0 && !events)
                return hull_fail(e, -EINVAL, "store: no events to append");
        for (size_t i = 0; i < n; i++) {
                store_event_cols c;
                if ((r = store_read_event(events[i], i, &c, e)) < 0)
                        return r;
        }
        return s->ops->events_append(s, session_id, events, n, ret_first_seq, e);
}

/* A tail to add to a kept conversation (store_conversation_append_text): ",{...},{...}" of
 * tail_len bytes, NUL-terminated, in a whole text of total_len within the bound. */
static int conversation_tail_check(const char *tail, size_t tail_len, size_t total_len, hull_error *e) {
        if (!tail || tail_len < 2 || tail[0] != ',' || strlen(tail) != tail_len || total_len < tail_len + 2)
                return hull_fail(e, -EINVAL, "store: no messages to add to a conversation");
        if (total_len > STORE_OBJECT_BYTES_MAX)
                return hull_fail(e, -E2BIG, "store: a conversation is %zu bytes of JSON, more than the %u kept",
                                 total_len, STORE_OBJECT_BYTES_MAX);
        return 0;
}

store_conv_write *store_conv_admit(store_conv_write *conv, bool whole_only) {
        if (!conv)
                return NULL;
        hull_error ignore = {0};
        int k = !conv->text                  ? -EINVAL
                : conv->append && whole_only ? -EOPNOTSUPP
                : conv->append               ? conversation_tail_check(conv->text, conv->len, conv->total_len, &ignore)
                                             : store_conversation_text_check(conv->text, conv->len, &ignore);
        conv->result = k < 0 ? k : -ECANCELED; /* 0 only once committed */
        return k < 0 ? NULL : conv;
}

int store_events_append_object(store *s, const char *session_id, json_t *const *events, size_t n, const json_t *session,
                               store_conv_write *conv, char **ret_texts, int64_t *ret_first_seq, hull_error *e) {
        int r = store_id_check("session", session_id, e);
        if (r < 0)
                return r;
        if (!s->ops->events_append_object)
                return hull_fail(e, -EOPNOTSUPP, "store: events and their session in one transaction: not here");
        if (n > 0 && !events)
                return hull_fail(e, -EINVAL, "store: no events to append");
        for (size_t i = 0; i < n; i++) {
                store_event_cols ec;
                if ((r = store_read_event(events[i], i, &ec, e)) < 0)
                        return r;
        }
        store_conv_write *cw = store_conv_admit(conv, false); /* given to the backend only when it may be written */
        if (!session)
                return s->ops->events_append_object(s, session_id, events, n, NULL, NULL, cw, ret_texts, ret_first_seq,
                                                    e);
        store_cols c;
        if ((r = store_read_cols(STORE_SESSION, session, &c, e)) < 0)
                return r;
        if (strcmp(c.id, session_id) != 0)
                return hull_fail(e, -EINVAL, "store: the session object is not session %s's", session_id);
        _cleanup_free_ char *body = NULL;
        if ((r = store_dump(session, store_kind_name(STORE_SESSION), &body, e)) < 0)
                return r;
        return s->ops->events_append_object(s, session_id, events, n, &c, body, cw, ret_texts, ret_first_seq, e);
}

int store_events_list(store *s, const char *session_id, const store_events_q *q, store_page *ret, int64_t **ret_seqs,
                      hull_error *e) {
        unsigned limit = 0;
        int r = store_id_check("session", session_id, e);
        if (r < 0 || (r = store_limit_check(q->limit, STORE_EVENTS_PAGE_MAX, &limit, e)) < 0)
                return r;
        if (q->after_seq < 0)
                return hull_fail(e, -EINVAL, "store: after_seq must be >= 0");
        uint32_t h = 2166136261U;
        store_listing l = {.of = STORE_LIST_EVENTS,
                           .tag = TAG_EVENTS,
                           .what = "event",
                           .descending = q->descending,
                           .session_id = session_id,
                           .after_seq = q->after_seq};
        fnv_str(&h, session_id);
        fnv_int(&h, q->descending);
        fnv_int(&h, q->after_seq);
        _cleanup_free_ char *types = NULL;
        fnv_int(&h, (int64_t) q->n_types);
        if (q->n_types) {
                r = string_set("type", q->types, q->n_types, &h, &types, e);
                if (r < 0)
                        return r;
                l.in_set = types;
        }
        r = time_filters(&l, &h, q->created_gt, q->created_gte, q->created_lt, q->created_lte, e);
        if (r < 0)
                return r;
        fnv(&h, &l.tag, 1);
        l.digest = h;
        r = s->ops->list(s, &l, q->page, limit, ret, ret_seqs, e);
        if (r < 0)
                return r;
        ret->prev_page[0] = 0;
        return 0;
}

int store_events_set_processed(store *s, const char *session_id, const char *event_id, const char *processed_at,
                               hull_error *e) {
        int r = store_id_check("session", session_id, e);
        if (r < 0 || (r = store_id_check("event", event_id, e)) < 0)
                return r;
        int64_t ms;
        if (store_time_ms(processed_at, &ms) < 0)
                return hull_fail(e, -EINVAL, "store: event %s: processed_at must be an RFC 3339 time", event_id);
        return s->ops->events_set_processed(s, session_id, event_id, processed_at, ms, e);
}

int store_events_last_seq(store *s, const char *session_id, int64_t *ret, hull_error *e) {
        int r = store_id_check("session", session_id, e);
        if (r < 0)
                return r;
        return s->ops->events_last_seq(s, session_id, ret, e);
}

int store_events_seq_of(store *s, const char *session_id, const char *event_id, int64_t *ret, hull_error *e) {
        int r = store_id_check("session", session_id, e);
        if (r < 0 || (r = store_id_check("event", event_id, e)) < 0)
                return r;
        return s->ops->events_seq_of(s, session_id, event_id, ret, e);
}

/* ---- conversations ---- */

int store_conversation_put(store *s, const char *session_id, const json_t *messages, hull_error *e) {
        if (!messages)
                return hull_fail(e, -EINVAL, "store: no conversation to keep");
        _cleanup_free_ char *body = NULL;
        int r = store_dump(messages, "a conversation", &body, e);
        return r < 0 ? r : store_conversation_put_text(s, session_id, body, strlen(body), e);
}

int store_conversation_text_check(const char *body, size_t len, hull_error *e) {
        if (!body || len < 2 || body[0] != '[' || body[len - 1] != ']' || strlen(body) != len)
                return hull_fail(e, -EINVAL, "store: no conversation to keep");
        if (len > STORE_OBJECT_BYTES_MAX)
                return hull_fail(e, -E2BIG, "store: a conversation is %zu bytes of JSON, more than the %u kept", len,
                                 STORE_OBJECT_BYTES_MAX);
        return 0;
}

int store_conversation_put_text(store *s, const char *session_id, const char *body, size_t len, hull_error *e) {
        int r = store_id_check("session", session_id, e);
        if (r >= 0)
                r = store_conversation_text_check(body, len, e);
        return r < 0 ? r : s->ops->conversation_put(s, session_id, body, e);
}

int store_conversation_append_text(store *s, const char *session_id, const char *tail, size_t tail_len,
                                   size_t total_len, hull_error *e) {
        int r = store_id_check("session", session_id, e);
        if (r < 0)
                return r;
        if ((r = conversation_tail_check(tail, tail_len, total_len, e)) < 0)
                return r;
        return s->ops->conversation_append(s, session_id, tail, e);
}

int store_conversation_join(const char *base, size_t base_len, const char *parts, size_t parts_len, json_t **ret,
                            hull_error *e) {
        if (base_len < 2 || base[base_len - 1] != ']')
                return hull_fail(e, -EBADMSG, "store: a kept conversation is not an array's text");
        if (parts_len > STORE_OBJECT_BYTES_MAX)
                return hull_fail(e, -EBADMSG, "store: a kept conversation is too long");
        _cleanup_free_ char *text = malloc(base_len + parts_len + 1);
        if (!text)
                return hull_err(e, -ENOMEM, "store: out of memory");
        memcpy(text, base, base_len - 1);
        memcpy(text + base_len - 1, parts, parts_len);
        text[base_len - 1 + parts_len] = ']';
        return store_load(text, base_len + parts_len, "a conversation", ret, e);
}

int store_conversation_get(store *s, const char *session_id, json_t **ret, hull_error *e) {
        int r = store_id_check("session", session_id, e);
        if (r < 0)
                return r;
        return s->ops->conversation_get(s, session_id, ret, e);
}

/* ---- API keys ---- */

int store_key_add(store *s, const store_key *k, hull_error *e) {
        int r;
        if ((r = store_text_check("id", k->id, sizeof(k->id), false, e)) < 0 ||
            (r = store_text_check("name", k->name, sizeof(k->name), true, e)) < 0 ||
            (r = store_text_check("created_at", k->created_at, sizeof(k->created_at), false, e)) < 0 ||
            (r = store_text_check("hint", k->hint, sizeof(k->hint), true, e)) < 0)
                return r;
        bool hex = strnlen(k->digest_hex, sizeof(k->digest_hex)) == 64;
        for (size_t i = 0; hex && i < 64; i++)
                hex = (k->digest_hex[i] >= '0' && k->digest_hex[i] <= '9') ||
                      (k->digest_hex[i] >= 'a' && k->digest_hex[i] <= 'f');
        if (!hex)
                return hull_fail(e, -EINVAL, "store: a key's digest must be 64 lowercase hex digits");
        return s->ops->key_add(s, k, e);
}

int store_key_list(store *s, store_key **ret, size_t *ret_n, hull_error *e) {
        return s->ops->key_list(s, ret, ret_n, e);
}

int store_key_delete(store *s, const char *id, hull_error *e) {
        int r = store_id_check("key", id, e);
        if (r < 0)
                return r;
        return s->ops->key_delete(s, id, e);
}

int store_key_find(store *s, const char digest_hex[static 65], store_key *ret, hull_error *e) {
        return s->ops->key_find(s, digest_hex, ret, e);
}

int store_key_count(store *s, size_t *ret, hull_error *e) {
        return s->ops->key_count(s, ret, e);
}

uint64_t store_prepares(store *s) {
        return s->ops->prepares ? s->ops->prepares(s) : 0;
}

/* ---- the sandboxes of a session; AG-UI threads ---- */

int store_sandbox_add(store *s, const char *session_id, const char *fingerprint, const char *opened_at, hull_error *e) {
        int r = store_id_check("session", session_id, e);
        if (r < 0)
                return r;
        if (!fingerprint || strlen(fingerprint) != 64 || strspn(fingerprint, "0123456789abcdef") != 64)
                return hull_fail(e, -EINVAL, "store: a sandbox's fingerprint must be 64 lowercase hex digits");
        int64_t ms;
        if (store_time_ms(opened_at, &ms) < 0 || strlen(opened_at) >= STORE_TIME_MAX)
                return hull_fail(e, -EINVAL, "store: a sandbox's opened_at must be an RFC 3339 time");
        return s->ops->sandbox_add(s, session_id, fingerprint, opened_at, e);
}

int store_sandbox_list(store *s, const char *session_id, json_t **ret, hull_error *e) {
        int r = store_id_check("session", session_id, e);
        if (r < 0)
                return r;
        return s->ops->sandbox_list(s, session_id, ret, e);
}

int store_thread_get(store *s, const char *thread_id, char ret[static STORE_ID_MAX], hull_error *e) {
        int r = store_thread_check(thread_id, e);
        if (r < 0)
                return r;
        return s->ops->thread_get(s, thread_id, ret, e);
}

int store_thread_put(store *s, const char *thread_id, const char *session_id, hull_error *e) {
        int r = store_thread_check(thread_id, e);
        if (r < 0 || (r = store_id_check("session", session_id, e)) < 0)
                return r;
        return s->ops->thread_put(s, thread_id, session_id, e);
}

/* ---- hull's named environments ---- */

int store_env_put(store *s, const char *name, const json_t *spec, const char *digest, json_t **ret, hull_error *e) {
        int r = store_text_check("name", name, STORE_NAME_MAX, false, e);
        if (r < 0)
                return r;
        return s->ops->env_put(s, name, spec, digest, ret, e);
}

int store_env_get(store *s, const char *name, int64_t version, json_t **ret, hull_error *e) {
        return s->ops->env_get(s, name, version, ret, e);
}

int store_env_list(store *s, bool all_versions, json_t **ret, hull_error *e) {
        return s->ops->env_list(s, all_versions, ret, e);
}

int store_env_delete(store *s, const char *name, hull_error *e) {
        return s->ops->env_delete(s, name, e);
}

/* ---- hull db: copy and check ---- */

static int found_row(void *ud, json_t *row, hull_error *e) {
        (void) row;
        (void) e;
        *(bool *) ud = true;
        return 1;
}

int store_is_empty(store *s, hull_error *e) {
        for (size_t i = 0; i < store_n_tables; i++) {
                bool any = false;
                int r = s->ops->rows_read(s, &store_tables[i], found_row, &any, e);
                if (r < 0)
                        return r;
                if (any)
                        return 0;
        }
        return 1;
}

typedef struct copy_state {
        store *to;
        const store_table *t;
        json_t *batch;
        size_t rows;
} copy_state;

static int copy_flush(copy_state *c, hull_error *e) {
        if (json_array_size(c->batch) == 0)
                return 0;
        int r = c->to->ops->rows_write(c->to, c->t, c->batch, e);
        if (r < 0)
                return r;
        c->rows += json_array_size(c->batch);
        json_array_clear(c->batch);
        return 0;
}

static int copy_row(void *ud, json_t *row, hull_error *e) {
        copy_state *c = ud;
        if (json_array_append(c->batch, row) < 0)
                return hull_err(e, -ENOMEM, "store: out of memory");
        return json_array_size(c->batch) >= STORE_COPY_BATCH ? copy_flush(c, e) : 0;
}

int store_copy(store *from, store *to, store_copy_progress_fn progress, void *ud, hull_error *e) {
        int r = store_is_empty(to, e);
        if (r < 0)
                return r;
        if (r == 0)
                return hull_fail(e, -ENOTEMPTY, "store: the target database is not empty (copy only into a new one)");
        if (store_user_version(from) != store_user_version(to))
                return hull_fail(e, -EPROTO,
                                 "store: the databases' schema versions differ (%d and %d): open the "
                                 "source with this hull first",
                                 store_user_version(from), store_user_version(to));
        _cleanup_(json_decrefp) json_t *batch = json_array();
        if (!batch)
                return hull_err(e, -ENOMEM, "store: out of memory");
        for (size_t i = 0; i < store_n_tables; i++) {
                copy_state c = {.to = to, .t = &store_tables[i], .batch = batch};
                if ((r = from->ops->rows_read(from, c.t, copy_row, &c, e)) < 0 || (r = copy_flush(&c, e)) < 0)
                        return r;
                if (progress)
                        progress(ud, c.t->name, c.rows);
        }
        return 0;
}

int store_check(store *s, json_t **ret, hull_error *e) {
        _cleanup_(json_decrefp) json_t *problems = NULL;
        int r = s->ops->check(s, &problems, e);
        if (r < 0)
                return r;
        int v = store_user_version(s), want = store_backend_schema_version(s);
        if (v != want) {
                char line[160];
                snprintf(line, sizeof(line), "schema version %d, not %d", v, want);
                if (json_array_insert_new(problems, 0, json_string(line)) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        }
        *ret = TAKE_PTR(problems);
        return 0;
}
