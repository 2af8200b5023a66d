/* store-node.c: the front of the nodes and leases (store.h's store_node_*, store_lease*,
 * store_events_wait): checks the arguments and calls the backend's store_node_ops, which only
 * PostgreSQL has (SQLite serves one node: -EOPNOTSUPP). */
#include <errno.h>
#include <string.h>

#include "store-backend.h"

static int no_nodes(store *s, hull_error *e) {
        if (s->ops->node)
                return 0;
        return hull_fail(e, -EOPNOTSUPP,
                         "store: nodes need a PostgreSQL database (--db postgres://...); %s serves one node",
                         s->ops->name);
}

/* A node id: 1 to 63 bytes of [A-Za-z0-9._-]. */
static int node_id_check(const char *id, hull_error *e) {
        size_t n = id ? strlen(id) : 0;
        if (n == 0 || n >= STORE_ID_MAX ||
            strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n)
                return hull_fail(e, -EINVAL,
                                 "store: a node id is 1 to %u letters, digits, '.', '_' or '-', got '%.64s'",
                                 STORE_ID_MAX - 1, id ? id : "");
        return 0;
}

int store_node_join(store *s, const store_node *n, uint64_t ttl_ms, hull_error *e) {
        int r = no_nodes(s, e);
        if (r >= 0)
                r = node_id_check(n->id, e);
        if (r < 0)
                return r;
        if (!n->instance || !n->instance[0] || !n->advertise || strlen(n->advertise) >= NODE_URL_MAX || !n->tiers)
                return hull_fail(e, -EINVAL, "store: a node needs an instance, an advertise URL (< %u bytes), tiers",
                                 NODE_URL_MAX);
        return s->ops->node->join(s, n, ttl_ms, e);
}

int store_node_beat(store *s, const char *node_id, const char *instance, uint64_t ttl_ms, unsigned running,
                    hull_error *e) {
        int r = no_nodes(s, e);
        if (r >= 0)
                r = node_id_check(node_id, e);
        return r < 0 ? r : s->ops->node->beat(s, node_id, instance, ttl_ms, running, e);
}

int store_node_roomiest(store *s, const char *except_id, uint64_t ttl_ms, char ret_id[static STORE_ID_MAX],
                        char ret_url[static NODE_URL_MAX], hull_error *e) {
        int r = no_nodes(s, e);
        return r < 0 ? r : s->ops->node->roomiest(s, except_id, ttl_ms, ret_id, ret_url, e);
}

int store_node_leave(store *s, const char *node_id, const char *instance, hull_error *e) {
        int r = no_nodes(s, e);
        if (r >= 0)
                r = node_id_check(node_id, e);
        return r < 0 ? r : s->ops->node->leave(s, node_id, instance, e);
}

int store_lease_claim(store *s, const char *session_id, const char *node_id, uint64_t ttl_ms, store_lease *ret,
                      hull_error *e) {
        int r = no_nodes(s, e);
        if (r >= 0)
                r = node_id_check(node_id, e);
        if (r >= 0)
                r = store_id_check("session", session_id, e);
        if (r < 0)
                return r;
        memset(ret, 0, sizeof(*ret));
        return s->ops->node->lease_claim(s, session_id, node_id, ttl_ms, ret, e);
}

int store_lease_release(store *s, const char *session_id, const char *node_id, json_t **ret_pending, hull_error *e) {
        int r = no_nodes(s, e);
        if (r >= 0)
                r = node_id_check(node_id, e);
        if (r >= 0)
                r = store_id_check("session", session_id, e);
        return r < 0 ? r : s->ops->node->lease_release(s, session_id, node_id, ret_pending, e);
}

int store_leases_reap(store *s, const char *node_id, uint64_t ttl_ms, json_t **ret, hull_error *e) {
        int r = no_nodes(s, e);
        if (r >= 0)
                r = node_id_check(node_id, e);
        return r < 0 ? r : s->ops->node->leases_reap(s, node_id, ttl_ms, ret, e);
}

int store_events_wait(store *s, int timeout_ms, store_wake_fn fn, void *ud, hull_error *e) {
        int r = no_nodes(s, e);
        return r < 0 ? r : s->ops->node->events_wait(s, timeout_ms, fn, ud, e);
}

int store_session_get_cached(store *s, const char *id, char **ret, size_t *ret_len, hull_error *e) {
        if (!s->ops->node)
                return store_get_raw(s, STORE_SESSION, id, 0, ret, ret_len, e);
        int r = store_id_check("session", id, e);
        return r < 0 ? r : s->ops->node->session_cached(s, id, ret, ret_len, e);
}

int store_session_get_seq(store *s, const char *id, char **ret, size_t *ret_len, int64_t *ret_last_seq, hull_error *e) {
        int r = no_nodes(s, e);
        if (r >= 0)
                r = store_id_check("session", id, e);
        return r < 0 ? r : s->ops->node->session_seq(s, id, ret, ret_len, ret_last_seq, 0, NULL, e);
}

int store_session_get_seq_owner(store *s, const char *id, uint64_t ttl_ms, char **ret, size_t *ret_len,
                                int64_t *ret_last_seq, store_owner *ret_owner, hull_error *e) {
        int r = no_nodes(s, e);
        if (r >= 0)
                r = store_id_check("session", id, e);
        return r < 0 ? r : s->ops->node->session_seq(s, id, ret, ret_len, ret_last_seq, ttl_ms, ret_owner, e);
}

int store_events_append_with_session(store *s, const char *session_id, json_t *const *events, size_t n,
                                     const json_t *session, const char *if_body, const char *deliveries,
                                     store_conv_write *conv, int64_t *ret_first_seq, char **ret_stored, hull_error *e) {
        int r = no_nodes(s, e);
        if (r >= 0)
                r = store_id_check("session", session_id, e);
        if (r >= 0 && (n == 0 || !events || !if_body))
                r = hull_fail(e, -EINVAL, "store: no events to append, or no stored body to compare");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                store_event_cols ec;
                r = store_read_event(events[i], i, &ec, e);
        }
        store_cols c;
        if (r >= 0)
                r = store_read_cols(STORE_SESSION, session, &c, e);
        if (r >= 0 && strcmp(c.id, session_id) != 0)
                r = hull_fail(e, -EINVAL, "store: the session object is not session %s's", session_id);
        _cleanup_free_ char *body = NULL;
        if (r >= 0)
                r = store_dump(session, "a session", &body, e);
        if (r < 0)
                return r;
        store_conv_write *cw = store_conv_admit(conv, true); /* whole texts only (store.h) */
        const char *conversation = cw ? cw->text : NULL;
        size_t queued = 0;
        r = s->ops->node->append_with_session(s, session_id, events, n, &c, body, if_body, deliveries ?: "[]",
                                              conversation, ret_first_seq, &queued, ret_stored, e);
        if (r == 0 && conversation)
                conv->result = 0;
        if (r == 0 && ret_stored) /* the body stored now: ours */
                *ret_stored = TAKE_PTR(body);
        if (r == 0 && queued > 0 && s->webhook_wake)
                s->webhook_wake(s->webhook_wake_ud);
        return r;
}

int store_events_append_claim(store *s, const char *session_id, json_t *const *events, size_t n, const char *node_id,
                              uint64_t ttl_ms, int64_t *ret_first_seq, hull_error *e) {
        int r = no_nodes(s, e);
        if (r >= 0)
                r = node_id_check(node_id, e);
        if (r >= 0)
                r = store_id_check("session", session_id, e);
        if (r >= 0 && (n == 0 || !events))
                r = hull_fail(e, -EINVAL, "store: no events to append");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                store_event_cols ec;
                r = store_read_event(events[i], i, &ec, e);
        }
        return r < 0 ? r : s->ops->node->append_claim(s, session_id, events, n, node_id, ttl_ms, ret_first_seq, e);
}

int store_sandbox_owner_set(store *s, const char *session_id, const char *node_id, const char *instance,
                            hull_error *e) {
        int r = no_nodes(s, e);
        if (r >= 0)
                r = node_id_check(node_id, e);
        if (r >= 0)
                r = store_id_check("session", session_id, e);
        if (r >= 0 && (!instance || !instance[0]))
                r = hull_fail(e, -EINVAL, "store: a sandbox's owner needs the node's instance");
        return r < 0 ? r : s->ops->node->owner_set(s, session_id, node_id, instance, e);
}

int store_sandbox_owner_get(store *s, const char *session_id, uint64_t ttl_ms, store_owner *ret, hull_error *e) {
        int r = no_nodes(s, e);
        if (r >= 0)
                r = store_id_check("session", session_id, e);
        if (r < 0)
                return r;
        memset(ret, 0, sizeof(*ret));
        return s->ops->node->owner_get(s, session_id, ttl_ms, ret, e);
}

int store_node_get(store *s, const char *node_id, uint64_t ttl_ms, store_owner *ret, hull_error *e) {
        int r = no_nodes(s, e);
        if (r >= 0)
                r = node_id_check(node_id, e);
        if (r < 0)
                return r;
        memset(ret, 0, sizeof(*ret));
        return s->ops->node->node_get(s, node_id, ttl_ms, ret, e);
}

bool store_unreachable(store *s) {
        return s && s->ops->node && s->ops->node->unreachable && s->ops->node->unreachable(s);
}
