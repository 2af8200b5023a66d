/* api-v1-resources.c: the /v1 resources' routes: agents (with versions), environments,
 * sessions and their events, and API keys, each over the store and the /v1 engine. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-v1-internal.h"
#include "v1-webhook.h"
#include "api-v1-stream.h"
#include "auth.h"
#include "http-forward.h"
#include "macro.h"
#include "v1-work.h"
#include "parse-util.h"
#include "sha256.h"
#include "v1-vault.h"
#include "v1-memory.h"
#include "v1-resources.h"
#include "v1-session-start.h"

/* ---- agents and environments ---- */

static const char *const list_args[] = {"limit",           "page",           "include_archived", "created_at[gt]",
                                        "created_at[gte]", "created_at[lt]", "created_at[lte]",  NULL};

/* A list query from q (limit, page, archived, created_at). Returns true once r is refused. */
static bool refuse_list_query(http_req *r, const query *q, store_list_q *ret) {
        uint64_t limit = STORE_PAGE_DEFAULT;
        bool arch;
        if (v1a_refuse_int(r, "limit", q->limit, 1, STORE_PAGE_MAX, &limit) ||
            v1a_refuse_bool(r, "include_archived", q->include_archived, &arch) ||
            v1a_refuse_time(r, "created_at[gt]", q->created_gt) ||
            v1a_refuse_time(r, "created_at[gte]", q->created_gte) ||
            v1a_refuse_time(r, "created_at[lt]", q->created_lt) ||
            v1a_refuse_time(r, "created_at[lte]", q->created_lte))
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
        if (v1a_refuse_query(r, &q, allowed, k == STORE_SESSION ? "statuses" : NULL) || refuse_list_query(r, &q, &lq))
                return;
        bool desc = k == STORE_SESSION;
        uint64_t av = 0;
        if (k == STORE_SESSION) {
                if (v1a_refuse_order(r, q.order, true, &desc) ||
                    v1a_refuse_int(r, "agent_version", q.agent_version, 1, INT64_MAX, &av))
                        return;
                for (size_t i = 0; i < q.n_list; i++) {
                        static const char *const known[] = {"idle", "running", "rescheduling", "terminated"};
                        bool ok = false;
                        for (size_t j = 0; j < ELEMENTSOF(known); j++)
                                ok |= strcmp(q.list[i], known[j]) == 0;
                        if (!ok) {
                                v1a_failf(r, 400, "",
                                          "statuses: '%.40s' is not one of idle, running, rescheduling, terminated",
                                          q.list[i]);
                                return;
                        }
                }
                lq.agent_id = q.agent_id;
                lq.agent_version = (int64_t) av;
                lq.memory_store_id = q.memory_store_id && q.memory_store_id[0] ? q.memory_store_id : NULL;
                lq.statuses = q.list;
                lq.n_statuses = q.n_list;
        }
        lq.descending = desc;
        store_page p = {0};
        hull_error e = {0};
        int rr = store_list(a->cfg.store, k, &lq, &p, &e);
        if (rr < 0) {
                v1a_answer_store_error(r, rr, &e, "page", NULL);
                return;
        }
        v1a_answer_json(r, 200, v1a_page_json(&p, bidirectional));
        store_page_done(&p);
}

static void agent_get(api_v1 *a, http_req *r) {
        static const char *const allowed[] = {"version", NULL};
        query q;
        uint64_t version = 0;
        if (v1a_refuse_query(r, &q, allowed, NULL) || v1a_refuse_int(r, "version", q.version, 1, INT64_MAX, &version))
                return;
        const char *id = http_req_param(r, "id");
        json_t *obj = NULL;
        hull_error e = {0};
        int rr = store_get(a->cfg.store, STORE_AGENT, id, (int64_t) version, &obj, &e);
        if (rr == -ENOENT && version)
                v1a_failf(r, 404, "agent_version_not_found", "agent %.64s has no version %" PRIu64, id, version);
        else if (rr < 0)
                v1a_answer_store_error(r, rr, &e, "agent", id);
        else
                v1a_answer_json(r, 200, obj);
}

/* Create a resource of kind k with make (v1_agent_create or v1_environment_create). */
static void create_kind(api_v1 *a, http_req *r, store_kind k, const char *prefix,
                        int (*make)(const json_t *, const char *, const char *, json_t **, v1_err *)) {
        json_auto_t *body = v1a_body_object(r, false);
        if (!body)
                return;
        char id[STORE_ID_MAX], now[STORE_TIME_MAX];
        v1_id_new(prefix, id);
        store_now_rfc3339(now);
        json_t *obj = NULL;
        v1_err err = {0};
        if (make(body, id, now, &obj, &err) < 0) {
                v1a_fail(r, &err);
                return;
        }
        if (k == STORE_AGENT && v1a_refuse_skills(a, r, json_object_get(obj, "skills"))) {
                json_decref(obj);
                return;
        }
        hull_error e = {0};
        int rr = store_insert(a->cfg.store, k, obj, &e);
        if (rr < 0) {
                json_decref(obj);
                v1a_answer_store_error(r, rr, &e, k == STORE_AGENT ? "agent" : "environment", id);
                return;
        }
        v1_webhook_emit(a->cfg.store, k == STORE_AGENT ? "agent.created" : "environment.created", id, NULL, NULL);
        v1a_answer_json(r, 200, obj);
}

/* Update (or archive, with archive) a resource of kind k. */
static void update_kind(api_v1 *a, http_req *r, store_kind k, bool archive) {
        const char *what = k == STORE_AGENT ? "agent" : "environment";
        const char *id = http_req_param(r, "id");
        json_auto_t *body = v1a_body_object(r, archive);
        if (!body)
                return;
        if (archive && json_object_size(body) > 0) {
                v1a_failf(r, 400, "", "archive takes no body");
                return;
        }
        hull_error e = {0};
        for (int attempt = 0; attempt < 3; attempt++) {
                json_auto_t *cur = NULL;
                int rr = store_get(a->cfg.store, k, id, 0, &cur, &e);
                if (rr < 0) {
                        v1a_answer_store_error(r, rr, &e, what, id);
                        return;
                }
                char now[STORE_TIME_MAX];
                store_now_rfc3339(now);
                json_t *next = NULL;
                v1_err err = {0};
                if (archive) {
                        if (json_is_string(json_object_get(cur, "archived_at"))) {
                                v1a_answer_json(r, 200, json_incref(cur));
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
                        v1a_fail(r, &err);
                        return;
                }
                if (next && k == STORE_AGENT && json_object_get(body, "skills") &&
                    v1a_refuse_skills(a, r, json_object_get(next, "skills"))) {
                        json_decref(next);
                        return;
                }
                if (!next) { /* nothing changed */
                        v1a_answer_json(r, 200, json_incref(cur));
                        return;
                }
                rr = store_update(a->cfg.store, k, next, &e);
                if (rr == -ESTALE) { /* someone else's version came first */
                        json_decref(next);
                        if (json_object_get(body, "version")) {
                                v1a_failf(r, 409, "version_conflict",
                                          "%s %.64s was updated meanwhile: read it again and send the new version",
                                          what, id);
                                return;
                        }
                        continue;
                }
                if (rr < 0) {
                        json_decref(next);
                        v1a_answer_store_error(r, rr, &e, what, id);
                        return;
                }
                char type[32];
                snprintf(type, sizeof(type), "%s.%s", what, archive ? "archived" : "updated");
                v1_webhook_emit(a->cfg.store, type, id, NULL, NULL);
                v1a_answer_json(r, 200, next);
                return;
        }
        v1a_failf(r, 409, "version_conflict", "%s %.64s is being updated by others: try again", what, id);
}

/* ---- sessions ---- */

static void session_create(api_v1 *a, http_req *r) {
        json_auto_t *body = v1a_body_object(r, false);
        if (!body)
                return;
        v1_starter st = {
                .store = a->cfg.store, .engine = a->cfg.engine, .files = a->cfg.files, .mnt_root = a->cfg.mnt_root};
        v1_err err = {0};
        json_t *obj = NULL;
        if (v1_session_start(&st, body, NULL, &obj, &err) < 0) { /* v1-session-start.h */
                v1a_fail(r, &err);
                return;
        }
        v1a_answer_json(r, 200, obj);
}

static void session_get(api_v1 *a, http_req *r) {
        const char *id = http_req_param(r, "id");
        char *body = NULL;
        size_t len = 0;
        hull_error e = {0};
        int rr = store_session_get_cached(a->cfg.store, id, &body, &len, &e); /* a node: from memory */
        if (rr == -ENOENT)
                v1a_failf(r, 404, "session_not_found", "no session %.64s (GET /v1/sessions lists them)", id);
        else if (rr < 0)
                v1a_answer_store_error(r, rr, &e, "session", id);
        else /* stored as this API answers it */
                (void) http_answer(r, 200, "application/json", body, len);
}

typedef enum session_op { SESSION_UPDATE, SESSION_ARCHIVE, SESSION_DELETE } session_op;

static void session_update(api_v1 *a, http_req *r, session_op op) {
        const char *id = http_req_param(r, "id");
        v1_err err = {0};
        json_t *obj = NULL;
        int rr;
        if (op == SESSION_ARCHIVE) {
                json_auto_t *body = v1a_body_object(r, true);
                if (!body)
                        return;
                rr = v1_engine_archive(a->cfg.engine, id, &obj, &err);
        } else if (op == SESSION_DELETE) {
                json_auto_t *gone = NULL;
                hull_error e = {0};
                (void) store_get(a->cfg.store, STORE_SESSION, id, 0, &gone, &e);
                rr = v1_engine_delete(a->cfg.engine, id, &err);
                if (rr >= 0 && gone && a->cfg.mnt_root) { /* its repositories' clones go too */
                        char dir[4200];
                        snprintf(dir, sizeof(dir), "%s/%s", a->cfg.mnt_root, id);
                        v1_resources_forget(a->cfg.mnt_root, dir, json_object_get(gone, "resources"));
                }
                if (rr >= 0)
                        obj = json_pack("{s:s, s:s}", "id", id, "type", "session_deleted");
        } else {
                json_auto_t *body = v1a_body_object(r, false);
                if (!body)
                        return;
                rr = v1_engine_update(a->cfg.engine, id, body, &obj, &err);
        }
        if (rr >= 0) /* after the change is in the store */
                v1_webhook_emit(a->cfg.store,
                                op == SESSION_ARCHIVE  ? "session.archived"
                                : op == SESSION_DELETE ? "session.deleted"
                                                       : "session.updated",
                                id, NULL, NULL);
        if (rr < 0)
                v1a_fail(r, &err);
        else
                v1a_answer_json(r, 200, obj);
}

/* Does the session exist? Returns true once r is refused. */
bool v1a_refuse_session(api_v1 *a, http_req *r, const char *id) {
        json_auto_t *obj = NULL;
        hull_error e = {0};
        int rr = store_get(a->cfg.store, STORE_SESSION, id, 0, &obj, &e);
        if (rr == -ENOENT) {
                v1a_failf(r, 404, "session_not_found", "no session %.64s (GET /v1/sessions lists them)", id);
                return true;
        }
        if (rr < 0) {
                v1a_answer_store_error(r, rr, &e, "session", id);
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
        if (v1a_refuse_query(r, &q, allowed, "types") ||
            v1a_refuse_int(r, "limit", q.limit, 1, STORE_EVENTS_PAGE_MAX, &limit) ||
            v1a_refuse_order(r, q.order, false, &desc) || v1a_refuse_time(r, "created_at[gt]", q.created_gt) ||
            v1a_refuse_time(r, "created_at[gte]", q.created_gte) ||
            v1a_refuse_time(r, "created_at[lt]", q.created_lt) ||
            v1a_refuse_time(r, "created_at[lte]", q.created_lte) || v1a_refuse_session(a, r, id))
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
                v1a_answer_store_error(r, rr, &e, "events of session", id);
                return;
        }
        v1a_answer_json(r, 200, v1a_page_json(&p, false));
        store_page_done(&p);
}

static void events_send(api_v1 *a, http_req *r) {
        const char *id = http_req_param(r, "id");
        json_auto_t *body = v1a_body_object(r, false);
        if (!body)
                return;
        json_auto_t *events = NULL, *echo = NULL;
        v1_err err = {0};
        if (v1_events_parse(body, &events, &err) < 0 || v1_engine_send(a->cfg.engine, id, events, &echo, &err) < 0) {
                v1a_fail(r, &err);
                return;
        }
        v1_err ignored = {0}; /* a dormant self_hosted session: queued again for the workers */
        char eid[STORE_ID_MAX];
        if (v1_engine_env_id(a->cfg.engine, id, eid, sizeof(eid))) {
                if (v1_work_enqueue_env(a->cfg.store, id, eid, &ignored) == 1) /* its environment is cloud */
                        v1_engine_env_not_hosted(a->cfg.engine, id);
        } else
                (void) v1_work_enqueue(a->cfg.store, id, &ignored);
        v1a_answer_json(r, 200, json_pack("{s:O}", "data", echo));
}

/* With several nodes a session's turns run where its sandbox is (its files, interpreters and
 * handles): events for a session whose sandbox another live node holds are forwarded there, on a
 * thread of their own (the forward waits on the other node). No sandbox yet, or its node gone:
 * sent here, where the turn then opens one. Forwarded here already: answered here, without a look
 * at the holder; a bad hop header is refused on the spawned path (v1a_forwarded_turn). */
static void events_send_spawned(http_req *r) {
        if (!v1a_forwarded_turn(r))
                events_send(http_req_data(r), r);
}

static void events_send_at_sandbox(api_v1 *a, http_req *r) {
        store_owner o;
        const char *self = NULL;
        v1_err err = {0};
        char from[64];
        int hop = http_forward_hop(r, from);
        if (hop > 0 ||
            (hop == 0 && v1_engine_send_where(a->cfg.engine, http_req_param(r, "id"), &o, &self, &err) != 1)) {
                events_send(a, r);
                return;
        }
        if (http_req_spawn(r, events_send_spawned) < 0)
                v1a_failf(r, 503, "", "no thread could be made for the request; retry");
}

static void events_stream(api_v1 *a, http_req *r) {
        static const char *const allowed[] = {"event_deltas", "last_event_id", NULL};
        query q;
        const char *id = http_req_param(r, "id");
        if (v1a_refuse_query(r, &q, allowed, "event_deltas"))
                return;
        bool deltas = false;
        for (size_t i = 0; i < q.n_list; i++) {
                if (strcmp(q.list[i], "agent.message") == 0)
                        deltas = true;
                else if (strcmp(q.list[i], "agent.thinking") != 0) { /* hull's model text has no thinking previews */
                        v1a_failf(r, 400, "", "event_deltas: '%.40s' is not agent.message or agent.thinking",
                                  q.list[i]);
                        return;
                }
        }
        unsigned n = 0;
        const char *last = http_req_header(r, "last-event-id", &n);
        if (q.last_event_id)
                last = q.last_event_id;
        int64_t after = -1;
        if (v1a_refuse_session(a, r, id))
                return;
        if (last && last[0]) {
                uint64_t seq;
                hull_error e = {0};
                if (parse_uint64(last, 0, INT64_MAX, &seq) == 0)
                        after = (int64_t) seq;
                else if (store_events_seq_of(a->cfg.store, id, last, &after, &e) < 0) {
                        v1a_failf(r, 400, "",
                                  "Last-Event-ID '%.64s' is neither a sequence number (the id: line of a frame) nor an "
                                  "event "
                                  "of this session",
                                  last);
                        return;
                }
        } else if (n > 1) {
                v1a_failf(r, 400, "", "Last-Event-ID is given twice");
                return;
        }
        http_sse *sse = NULL;
        (void) http_answer_header(r, "cache-control", "no-cache");
        if (http_answer_sse(r, V1_STREAM_QUEUE_BYTES, 0, &sse) < 0) {
                v1a_failf(r, 500, "", "the stream could not start");
                return;
        }
        v1_err err = {0};
        (void) api_v1_stream(a->cfg.engine, id, after, deltas, sse, &err);
}

static void agent_versions(api_v1 *a, http_req *r) {
        static const char *const ver_list[] = {"limit", "page", NULL};
        query q;
        uint64_t limit = STORE_PAGE_DEFAULT;
        if (v1a_refuse_query(r, &q, ver_list, NULL) || v1a_refuse_int(r, "limit", q.limit, 1, STORE_PAGE_MAX, &limit))
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
                v1a_answer_store_error(r, rr, &e, "agent", id);
        else
                v1a_answer_json(r, 200, v1a_page_json(&p, false));
        store_page_done(&p);
        return;
}

static void environment_get(api_v1 *a, http_req *r) {
        const char *id = http_req_param(r, "id");
        json_t *obj = NULL;
        hull_error e = {0};
        int rr = store_get(a->cfg.store, STORE_ENVIRONMENT, id, 0, &obj, &e);
        if (rr < 0)
                v1a_answer_store_error(r, rr, &e, "environment", id);
        else
                v1a_answer_json(r, 200, obj);
        return;
}

static void environment_delete(api_v1 *a, http_req *r) {
        const char *id = http_req_param(r, "id");
        hull_error e = {0};
        int rr = store_delete(a->cfg.store, STORE_ENVIRONMENT, id, &e);
        if (rr < 0)
                v1a_answer_store_error(r, rr, &e, "environment", id);
        else {
                v1_webhook_emit(a->cfg.store, "environment.deleted", id, NULL, NULL);
                v1a_answer_json(r, 200, json_pack("{s:s, s:s}", "id", id, "type", "environment_deleted"));
        }
        return;
}

/* ---- API keys ---- */

static json_t *key_json(const store_key *k) {
        return json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", k->id, "type", "api_key", "name", k->name, "created_at",
                         k->created_at, "hint", k->hint);
}

static void key_create(api_v1 *a, http_req *r) {
        json_auto_t *body = v1a_body_object(r, true);
        if (!body)
                return;
        const char *name = "";
        const char *k;
        json_t *v;
        json_object_foreach(body, k, v) {
                if (strcmp(k, "name") != 0) {
                        v1a_failf(r, 400, "", "unknown field '%.40s' (an API key takes only a name)", k);
                        return;
                }
                if (!json_is_string(v) || !auth_name_is_valid(json_string_value(v))) {
                        v1a_failf(r, 400, "",
                                  "name must be 1 to %u characters of letters, digits, '.', '_', ':' or '-'",
                                  AUTH_NAME_MAX);
                        return;
                }
                name = json_string_value(v);
        }
        char token[AUTH_NEW_TOKEN_SIZE], digest[65];
        if (auth_token_new(token, digest) < 0) {
                v1a_failf(r, 500, "", "no key could be made (getrandom or libcrypto failed)");
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
                v1a_answer_store_error(r, rr, &e, "key", NULL);
                return;
        }
        json_t *o = key_json(&key);
        if (o)
                json_object_set_new(o, "key", json_string(token));
        explicit_bzero(token, sizeof(token));
        v1a_answer_json(r, 200, o);
}

static void key_list(api_v1 *a, http_req *r) {
        store_key *keys = NULL;
        size_t n = 0;
        hull_error e = {0};
        int rr = store_key_list(a->cfg.store, &keys, &n, &e);
        if (rr < 0) {
                v1a_answer_store_error(r, rr, &e, "keys", NULL);
                return;
        }
        json_t *data = json_array();
        for (size_t i = 0; data && i < n; i++)
                json_array_append_new(data, key_json(&keys[i]));
        free(keys);
        v1a_answer_json(r, 200, json_pack("{s:o, s:n}", "data", data, "next_page"));
}

static void key_delete(api_v1 *a, http_req *r) {
        const char *id = http_req_param(r, "id");
        hull_error e = {0};
        int rr = store_key_delete(a->cfg.store, id, &e);
        if (rr < 0)
                v1a_answer_store_error(r, rr, &e, "key", id);
        else
                v1a_answer_json(r, 200, json_pack("{s:s, s:s}", "id", id, "type", "api_key_deleted"));
}

/* ---- the routes' handlers: each route names its own ---- */

static const char *const sess_list[] = {
        "limit",    "page",           "order",           "include_archived", "agent_id",        "agent_version",
        "statuses", "created_at[gt]", "created_at[gte]", "created_at[lt]",   "created_at[lte]", "memory_store_id",
        NULL};

#define HANDLER(name, call)                                                                                            \
        void v1a_##name(http_req *r) {                                                                                 \
                api_v1 *a = http_req_data(r);                                                                          \
                call;                                                                                                  \
        }
HANDLER(agent_create, create_kind(a, r, STORE_AGENT, "agent_", v1_agent_create))
HANDLER(agent_list, list_kind(a, r, STORE_AGENT, list_args, false))
HANDLER(agent_get, agent_get(a, r))
HANDLER(agent_update, update_kind(a, r, STORE_AGENT, false))
HANDLER(agent_archive, update_kind(a, r, STORE_AGENT, true))
HANDLER(agent_versions, agent_versions(a, r))
HANDLER(environment_create, create_kind(a, r, STORE_ENVIRONMENT, "env_", v1_environment_create))
HANDLER(environment_list, list_kind(a, r, STORE_ENVIRONMENT, list_args, false))
HANDLER(environment_get, environment_get(a, r))
HANDLER(environment_update, update_kind(a, r, STORE_ENVIRONMENT, false))
HANDLER(environment_archive, update_kind(a, r, STORE_ENVIRONMENT, true))
HANDLER(environment_delete, environment_delete(a, r))
HANDLER(session_create, session_create(a, r))
HANDLER(session_list, list_kind(a, r, STORE_SESSION, sess_list, true))
HANDLER(session_get, session_get(a, r))
HANDLER(session_update, session_update(a, r, SESSION_UPDATE))
HANDLER(session_archive, session_update(a, r, SESSION_ARCHIVE))
HANDLER(session_delete, session_update(a, r, SESSION_DELETE))
HANDLER(events_list, events_list(a, r))
HANDLER(events_send, events_send_at_sandbox(a, r))
HANDLER(events_stream, events_stream(a, r))
HANDLER(key_create, key_create(a, r))
HANDLER(key_list, key_list(a, r))
HANDLER(key_delete, key_delete(a, r))
