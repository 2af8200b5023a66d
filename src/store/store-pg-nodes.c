/* store-pg-nodes.c: the PostgreSQL backend's nodes and leases (store_node_ops): the nodes table
 * (one row a live hull serve --node-id, its heartbeat the database's now()), session_leases (one
 * row a session whose turns a node owns, renewed with that node's heartbeat), and the LISTEN
 * connection store_events_wait reads hull_events' NOTIFYs on (store-pg-events.c sends them).
 *
 * Every time is the server's now(), so nodes' clocks never meet. A lease whose expires_at passed
 * is dead whoever held it: claiming it or reaping it hands it to the caller with its old node
 * named (dead_node), and the caller cuts the turn that node ran. */
#include "store-pg-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pg_node_join(store *base, const store_node *n, uint64_t ttl_ms, hull_error *e) {
        pg_store *s = pg_of(base);
        char cap[PG_INT_MAX], ttl[PG_INT_MAX];
        const char *v[] = {
                n->id, n->instance, n->advertise, pg_int(cap, n->capacity), n->tiers, pg_int(ttl, (int64_t) ttl_ms)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *mine = NULL;
        int r = pg_exec(pc, "SELECT 1 FROM nodes WHERE id = $1 AND instance = $2", 2, v, "cannot read the node", &mine,
                        e);
        if (r < 0)
                return r;
        bool again = PQntuples(mine) > 0; /* this process's own row (its URL now known): its leases stay */
        _cleanup_res_ PGresult *res = NULL;
        r = pg_exec(pc,
                    "INSERT INTO nodes (id, instance, advertise, capacity, tiers, started_at, heartbeat_at)"
                    " VALUES ($1, $2, $3, $4::bigint, $5, now(), now())"
                    " ON CONFLICT (id) DO UPDATE SET instance = EXCLUDED.instance, advertise = EXCLUDED.advertise,"
                    " capacity = EXCLUDED.capacity, tiers = EXCLUDED.tiers, started_at = now(), heartbeat_at = now()"
                    " WHERE nodes.instance = EXCLUDED.instance"
                    " OR nodes.heartbeat_at < now() - ($6::bigint * interval '1 millisecond')"
                    " RETURNING id",
                    6, v, "cannot register the node", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 1 && again)
                return 0;
        if (PQntuples(res) == 1) {
                /* the leases an earlier life of this id held are dead now: the reaper cuts their turns */
                /* ... and the sandboxes it held died with it */
                const char *w[] = {n->id};
                return pg_exec(pc,
                               "WITH o AS (DELETE FROM sandbox_owners WHERE node_id = $1)"
                               " UPDATE session_leases SET expires_at = now() - interval '1 millisecond'"
                               " WHERE node_id = $1",
                               1, w, "cannot expire the node's old leases", NULL, e);
        }
        _cleanup_res_ PGresult *live = NULL;
        const char *w[] = {n->id};
        r = pg_exec(pc,
                    "SELECT advertise, (extract(epoch FROM now() - heartbeat_at) * 1000)::bigint FROM nodes"
                    " WHERE id = $1",
                    1, w, "cannot read the node", &live, e);
        if (r < 0)
                return r;
        return hull_fail(e, -EEXIST,
                         "node '%s' is already running (at %.200s, its last heartbeat %" PRId64
                         " ms ago): give each node its own --node-id, or start this one once that node has "
                         "stopped (a node killed is taken for dead %" PRIu64 " ms after its last heartbeat)",
                         n->id, PQntuples(live) ? PQgetvalue(live, 0, 0) : "?",
                         PQntuples(live) ? pg_get_int(live, 0, 1) : 0, ttl_ms);
}

static int pg_node_beat(store *base, const char *node_id, const char *instance, uint64_t ttl_ms, unsigned running,
                        hull_error *e) {
        pg_store *s = pg_of(base);
        char ttl[PG_INT_MAX], run[PG_INT_MAX];
        const char *v[] = {node_id, instance, pg_int(ttl, (int64_t) ttl_ms), pg_int(run, running)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(
                pc,
                "WITH n AS (UPDATE nodes SET heartbeat_at = now(), running = $4::bigint WHERE id = $1 AND instance = $2"
                "  RETURNING id),"
                " l AS (UPDATE session_leases SET expires_at = now() + ($3::bigint * interval '1 millisecond')"
                "  WHERE node_id = $1 AND expires_at >= now() AND EXISTS (SELECT 1 FROM n))"
                " SELECT count(*) FROM n",
                4, v, "cannot renew the node's heartbeat", &res, e);
        if (r < 0)
                return r;
        if (pg_get_int(res, 0, 0) == 0)
                return hull_fail(e, -ESTALE, "node '%s' was taken for dead (its row is gone or another's)", node_id);
        return 0;
}

static int pg_node_roomiest(store *base, const char *except_id, uint64_t ttl_ms, char *ret_id, char *ret_url,
                            hull_error *e) {
        pg_store *s = pg_of(base);
        char ttl[PG_INT_MAX];
        const char *v[] = {except_id, pg_int(ttl, (int64_t) ttl_ms)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc,
                        "SELECT id, advertise FROM nodes WHERE id <> $1 AND running < capacity"
                        " AND heartbeat_at >= now() - ($2::bigint * interval '1 millisecond')"
                        " ORDER BY capacity - running DESC, id LIMIT 1",
                        2, v, "cannot read the nodes", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no other node has room");
        snprintf(ret_id, STORE_ID_MAX, "%s", PQgetvalue(res, 0, 0));
        snprintf(ret_url, NODE_URL_MAX, "%s", PQgetvalue(res, 0, 1));
        return 0;
}

static int pg_node_leave(store *base, const char *node_id, const char *instance, hull_error *e) {
        pg_store *s = pg_of(base);
        const char *v[] = {node_id, instance};
        PG_LOCKED(s);
        return pg_exec(pc,
                       "WITH n AS (DELETE FROM nodes WHERE id = $1 AND instance = $2 RETURNING id),"
                       " o AS (DELETE FROM sandbox_owners WHERE node_id IN (SELECT id FROM n))"
                       " DELETE FROM session_leases WHERE node_id IN (SELECT id FROM n)",
                       2, v, "cannot remove the node", NULL, e);
}

/* What a release with ret_pending answers: the messages queued in the log, when the lease stayed. */
#define PENDING_SQL                                                                                                    \
        " SELECT body FROM events WHERE session_id = $1 AND processed_ms IS NULL"                                      \
        "  AND type IN ('user.message', 'system.message') AND NOT EXISTS (SELECT 1 FROM d)"                            \
        "  AND EXISTS (SELECT 1 FROM session_leases WHERE session_id = $1 AND node_id = $2)"                           \
        " ORDER BY seq"

/* One try of a claim (in a transaction). -EAGAIN: another node inserted the row meanwhile. */
static int claim_once(pg_conn *pc, const char *const v[3], store_lease *ret, hull_error *e) {
        _cleanup_pg_tx_ pg_tx t = {0};
        int r = pg_tx_begin(pc, &t, e);
        if (r < 0)
                return r;
        _cleanup_res_ PGresult *res = NULL;
        r = pg_exec(pc,
                    "SELECT l.node_id, l.expires_at < now(), coalesce(n.advertise, '') FROM session_leases l"
                    " LEFT JOIN nodes n ON n.id = l.node_id WHERE l.session_id = $1 FOR UPDATE OF l",
                    1, v, "cannot read the session's lease", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0) {
                _cleanup_res_ PGresult *ins = NULL;
                r = pg_exec(pc,
                            "INSERT INTO session_leases (session_id, node_id, expires_at)"
                            " VALUES ($1, $2, now() + ($3::bigint * interval '1 millisecond'))"
                            " ON CONFLICT (session_id) DO NOTHING",
                            3, v, "cannot claim the session's lease", &ins, e);
                if (r == -EEXIST && strcmp(pc->sqlstate, "23503") == 0)
                        return hull_fail(e, -ENOENT, "store: no session %s", v[0]);
                if (r < 0)
                        return r;
                if (pg_changes(ins) == 0)
                        return -EAGAIN;
        } else {
                const char *owner = PQgetvalue(res, 0, 0);
                bool expired = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
                if (!expired && strcmp(owner, v[1]) != 0) {
                        snprintf(ret->node_id, sizeof(ret->node_id), "%s", owner);
                        snprintf(ret->advertise, sizeof(ret->advertise), "%s", PQgetvalue(res, 0, 2));
                        return -EBUSY;
                }
                if (expired)
                        snprintf(ret->dead_node, sizeof(ret->dead_node), "%s", owner);
                r = pg_exec(pc,
                            "UPDATE session_leases SET node_id = $2,"
                            " expires_at = now() + ($3::bigint * interval '1 millisecond') WHERE session_id = $1",
                            3, v, "cannot claim the session's lease", NULL, e);
                if (r < 0)
                        return r;
        }
        snprintf(ret->node_id, sizeof(ret->node_id), "%s", v[1]);
        return pg_tx_commit(&t, e);
}

static int pg_lease_claim(store *base, const char *session_id, const char *node_id, uint64_t ttl_ms, store_lease *ret,
                          hull_error *e) {
        pg_store *s = pg_of(base);
        char ttl[PG_INT_MAX];
        const char *v[] = {session_id, node_id, pg_int(ttl, (int64_t) ttl_ms)};
        PG_LOCKED(s);
        int r = -EAGAIN;
        for (unsigned i = 0; r == -EAGAIN && i < STORE_PG_RETRIES; i++)
                r = claim_once(pc, v, ret, e);
        if (r == -EAGAIN)
                return hull_fail(e, -EBUSY, "store: the lease of session %s is contended; try again", session_id);
        return r;
}

static int pg_lease_release(store *base, const char *session_id, const char *node_id, json_t **ret_pending,
                            hull_error *e) {
        pg_store *s = pg_of(base);
        const char *v[] = {session_id, node_id};
        PG_LOCKED(s);
        if (!ret_pending)
                return pg_exec_hot(pc, "DELETE FROM session_leases WHERE session_id = $1 AND node_id = $2", 2, v,
                                   "cannot release the session's lease", NULL, e);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec_hot(pc,
                            "WITH d AS (DELETE FROM session_leases WHERE session_id = $1 AND node_id = $2"
                            "  AND NOT EXISTS (SELECT 1 FROM events WHERE session_id = $1"
                            "  AND processed_ms IS NULL AND type IN ('user.message', 'system.message'))"
                            "  RETURNING 1)" PENDING_SQL,
                            2, v, "cannot release the session's lease", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return 0;
        _cleanup_(json_decrefp) json_t *a = json_array();
        if (!a)
                return hull_err(e, -ENOMEM, "store: out of memory");
        for (int i = 0; i < PQntuples(res); i++) {
                json_t *ev = NULL;
                if ((r = pg_load(res, i, 0, "an event", &ev, e)) < 0)
                        return r;
                json_array_append_new(a, ev);
        }
        *ret_pending = TAKE_PTR(a);
        return -EAGAIN;
}

static int pg_leases_reap(store *base, const char *node_id, uint64_t ttl_ms, json_t **ret, hull_error *e) {
        pg_store *s = pg_of(base);
        char ttl[PG_INT_MAX];
        const char *v[] = {node_id, pg_int(ttl, (int64_t) ttl_ms)};
        _cleanup_(json_decrefp) json_t *a = json_array();
        if (!a)
                return hull_err(e, -ENOMEM, "store: out of memory");
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc,
                        "UPDATE session_leases l SET node_id = $1,"
                        " expires_at = now() + ($2::bigint * interval '1 millisecond')"
                        " FROM (SELECT session_id, node_id FROM session_leases WHERE expires_at < now()"
                        "  FOR UPDATE SKIP LOCKED) old"
                        " WHERE l.session_id = old.session_id RETURNING l.session_id, old.node_id",
                        2, v, "cannot take the dead nodes' leases", &res, e);
        if (r < 0)
                return r;
        /* the sandboxes of dead nodes (or of their earlier lives) are gone: no owner to forward to */
        r = pg_exec(pc,
                    "DELETE FROM sandbox_owners o WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = o.node_id"
                    " AND n.instance = o.instance"
                    " AND n.heartbeat_at >= now() - ($1::bigint * interval '1 millisecond'))",
                    1, v + 1, "cannot forget the dead nodes' sandboxes", NULL, e);
        if (r < 0)
                return r;
        for (int i = 0; i < PQntuples(res); i++)
                if (json_array_append_new(a, json_pack("{s:s, s:s}", "session_id", PQgetvalue(res, i, 0), "dead_node",
                                                       PQgetvalue(res, i, 1))) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        *ret = TAKE_PTR(a);
        return 0;
}

/* The LISTEN connection, made when there is none. */
static int listen_ready(pg_store *s, hull_error *e) {
        if (s->listen && PQstatus(s->listen) == CONNECTION_OK)
                return 0;
        if (s->listen)
                PQfinish(s->listen);
        s->listen = pg_connect_url(s->url);
        if (!s->listen)
                return hull_err(e, -ENOMEM, "store: out of memory");
        PGresult *res = PQstatus(s->listen) == CONNECTION_OK ? PQexec(s->listen, "LISTEN hull_events") : NULL;
        bool ok = res && PQresultStatus(res) == PGRES_COMMAND_OK;
        if (res)
                PQclear(res);
        if (!ok) {
                PQfinish(s->listen);
                s->listen = NULL;
                return hull_fail(e, -ECONNRESET, "store: cannot LISTEN on PostgreSQL (it is down?)");
        }
        pg_cache_listen(&s->cache, PG_LISTEN_NEW); /* what came while there was none is lost */
        return 0;
}

/* The entry a NOTIFY names forgotten (before any callback runs: they may take long). */
static void forget_notified(pg_store *s, const char *extra) {
        const char *colon = strrchr(extra, ':');
        if (strcmp(extra, "keys") == 0)
                pg_cache_keys_forget(&s->cache);
        else if (colon && (size_t) (colon - extra) < STORE_ID_MAX) {
                char id[STORE_ID_MAX];
                snprintf(id, sizeof(id), "%.*s", (int) (colon - extra), extra);
                pg_cache_forget(&s->cache, id);
        }
}

static int pg_events_wait(store *base, int timeout_ms, store_wake_fn fn, void *ud, hull_error *e) {
        pg_store *s = pg_of(base);
        int r = listen_ready(s, e);
        if (r < 0)
                return r;
        struct pollfd p = {.fd = PQsocket(s->listen), .events = POLLIN};
        pg_cache_listen(&s->cache, PG_LISTEN_WAITING);
        if (poll(&p, 1, timeout_ms) < 0 && errno != EINTR) {
                pg_cache_listen(&s->cache, PG_LISTEN_LOST);
                return hull_fail(e, -errno, "store: poll: %s", strerror(errno));
        }
        if (PQconsumeInput(s->listen) != 1) {
                pg_cache_listen(&s->cache, PG_LISTEN_LOST);
                PQfinish(s->listen);
                s->listen = NULL;
                return hull_fail(e, -ECONNRESET, "store: the LISTEN connection was lost (made again next time)");
        }
        /* every NOTIFY read forgets its entry first, then the callbacks (which may take long) */
        PGnotify **got = NULL, *n;
        size_t k = 0, cap = 0;
        while ((n = PQnotifies(s->listen))) {
                forget_notified(s, n->extra);
                size_t want = k < cap ? cap : cap ? 2 * cap : 16;
                PGnotify **more = want == cap ? got : realloc(got, want * sizeof(*got));
                if (!more) { /* no memory to keep it: forgotten above, its streams wait for the poll */
                        PQfreemem(n);
                        continue;
                }
                got = more;
                cap = want;
                got[k++] = n;
        }
        pg_cache_listen(&s->cache, PG_LISTEN_DRAINED);
        for (size_t i = 0; i < k; i++) {
                const char *colon = strrchr(got[i]->extra, ':');
                if (colon && (size_t) (colon - got[i]->extra) < STORE_ID_MAX) {
                        char id[STORE_ID_MAX];
                        snprintf(id, sizeof(id), "%.*s", (int) (colon - got[i]->extra), got[i]->extra);
                        fn(ud, id, strtoll(colon + 1, NULL, 10));
                }
                PQfreemem(got[i]);
        }
        free(got);
        return 0;
}

static int pg_owner_set(store *base, const char *session_id, const char *node_id, const char *instance, hull_error *e) {
        pg_store *s = pg_of(base);
        const char *v[] = {session_id, node_id, instance};
        PG_LOCKED(s);
        int r = pg_exec(pc,
                        "INSERT INTO sandbox_owners (session_id, node_id, instance) VALUES ($1, $2, $3)"
                        " ON CONFLICT (session_id) DO UPDATE SET node_id = EXCLUDED.node_id,"
                        " instance = EXCLUDED.instance",
                        3, v, "cannot record the sandbox's node", NULL, e);
        if (r == -EEXIST && strcmp(pc->sqlstate, "23503") == 0)
                return hull_fail(e, -ENOENT, "store: no session %s", session_id);
        return r;
}

static int pg_owner_get(store *base, const char *session_id, uint64_t ttl_ms, store_owner *ret, hull_error *e) {
        pg_store *s = pg_of(base);
        char ttl[PG_INT_MAX];
        const char *v[] = {session_id, pg_int(ttl, (int64_t) ttl_ms)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec_hot(pc,
                            "SELECT o.node_id, coalesce(n.advertise, ''),"
                            " coalesce(n.heartbeat_at >= now() - ($2::bigint * interval '1 millisecond'), false),"
                            " coalesce((extract(epoch FROM now() - n.heartbeat_at) * 1000)::bigint, -1)"
                            " FROM sandbox_owners o LEFT JOIN nodes n ON n.id = o.node_id AND n.instance = o.instance"
                            " WHERE o.session_id = $1",
                            2, v, "cannot read the sandbox's node", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return -ENOENT;
        snprintf(ret->node_id, sizeof(ret->node_id), "%s", PQgetvalue(res, 0, 0));
        snprintf(ret->advertise, sizeof(ret->advertise), "%s", PQgetvalue(res, 0, 1));
        ret->alive = strcmp(PQgetvalue(res, 0, 2), "t") == 0;
        ret->beat_age_ms = pg_get_int(res, 0, 3);
        return 0;
}

static int pg_node_get(store *base, const char *node_id, uint64_t ttl_ms, store_owner *ret, hull_error *e) {
        pg_store *s = pg_of(base);
        char ttl[PG_INT_MAX];
        const char *v[] = {node_id, pg_int(ttl, (int64_t) ttl_ms)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc,
                        "SELECT advertise, heartbeat_at >= now() - ($2::bigint * interval '1 millisecond'),"
                        " (extract(epoch FROM now() - heartbeat_at) * 1000)::bigint FROM nodes WHERE id = $1",
                        2, v, "cannot read the node", &res, e);
        if (r < 0)
                return r;
        snprintf(ret->node_id, sizeof(ret->node_id), "%s", node_id);
        ret->beat_age_ms = -1;
        if (PQntuples(res) == 0)
                return -ENOENT;
        snprintf(ret->advertise, sizeof(ret->advertise), "%s", PQgetvalue(res, 0, 0));
        ret->alive = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
        ret->beat_age_ms = pg_get_int(res, 0, 2);
        return 0;
}

static bool pg_unreachable(store *base) {
        return __atomic_load_n(&pg_of(base)->down, __ATOMIC_RELAXED) != 0;
}

const store_node_ops pg_node_ops = {
        .join = pg_node_join,
        .beat = pg_node_beat,
        .roomiest = pg_node_roomiest,
        .leave = pg_node_leave,
        .lease_claim = pg_lease_claim,
        .lease_release = pg_lease_release,
        .leases_reap = pg_leases_reap,
        .events_wait = pg_events_wait,
        .append_with_session = pg_events_append_session,
        .append_claim = pg_events_append_claim,
        .session_cached = pg_session_cached,
        .session_seq = pg_session_seq,
        .owner_set = pg_owner_set,
        .owner_get = pg_owner_get,
        .node_get = pg_node_get,
        .unreachable = pg_unreachable,
};
