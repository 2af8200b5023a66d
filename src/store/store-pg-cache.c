/* store-pg-cache.c: what a node answers from memory instead of PostgreSQL: the stored body of the
 * sessions read lately (the GET of a session, without a round trip) and the
 * count of API keys (asked by every authenticated request).
 *
 * Trusted only while the LISTEN connection is read (store_events_wait, the node's thread: it is in
 * its poll, or it read the connection at most STORE_PG_CACHE_TRUST_MS ago). Every write of a
 * session row, by any node, NOTIFYs hull_events "id:last_seq" in the writing statement (an append,
 * an update, a delete), and every write of api_keys NOTIFYs "keys": reading one forgets that entry
 * before any callback runs. This store's own writes forget their entry at once (a write this node
 * acknowledged is in its next read). A lost LISTEN connection forgets everything, and nothing is
 * kept until it is made again. A read that raced a write is not kept: each forget bumps gen, and a
 * read's result is kept only when gen did not move while it ran.
 *
 * Only the reads that may be a little late use it (store_session_get_cached: the GET of a session;
 * the key count): a read that a write is made from (a read-modify-write) always asks PostgreSQL.
 *
 * So another node's write is seen here once its NOTIFY was read: at once when the node's thread is
 * waiting (PostgreSQL sends the NOTIFY at commit), at most STORE_PG_CACHE_TRUST_MS after the
 * commit when the thread is busy elsewhere (after that every read goes to PostgreSQL again), and
 * not while the pool's last try to reach the server failed (a silent network partition: once the
 * node's heartbeat, every NODE_HEARTBEAT_MS, fails or hangs past the trust window). Not
 * used without a node's thread (nothing reads the LISTEN connection: every read asks PostgreSQL). */
#include "store-pg-internal.h"

#include <stdlib.h>
#include <string.h>

#include "time-util.h"

static size_t slot_of(const char *id) {
        uint32_t h = 2166136261U;
        for (const unsigned char *p = (const unsigned char *) id; *p; p++)
                h = (h ^ *p) * 16777619U;
        return h % STORE_PG_CACHE_SLOTS;
}

static bool trusted(const pg_cache *c) {
        if (c->down && __atomic_load_n(c->down, __ATOMIC_RELAXED)) /* the pool cannot reach the server */
                return false;
        return c->connected && (c->waiting || now_mono_ms() - c->drained_ms <= STORE_PG_CACHE_TRUST_MS);
}

static void forget_all(pg_cache *c) {
        for (size_t i = 0; c->slots && i < STORE_PG_CACHE_SLOTS; i++) {
                free(c->slots[i].body);
                c->slots[i] = (pg_cached){0};
        }
        c->keys_known = false;
        c->gen++;
}

void pg_cache_init(pg_cache *c, const int *down) {
        *c = (pg_cache){.down = down};
        pthread_mutex_init(&c->lock, NULL);
}

void pg_cache_done(pg_cache *c) {
        forget_all(c);
        free(c->slots);
        pthread_mutex_destroy(&c->lock);
}

uint64_t pg_cache_gen(pg_cache *c) {
        pthread_mutex_lock(&c->lock);
        uint64_t g = c->gen;
        pthread_mutex_unlock(&c->lock);
        return g;
}

int pg_cache_session_get(pg_cache *c, const char *id, char **ret, size_t *ret_len) {
        int r = 0;
        pthread_mutex_lock(&c->lock);
        pg_cached *x = c->slots ? &c->slots[slot_of(id)] : NULL;
        if (trusted(c) && x && x->body && strcmp(x->id, id) == 0) {
                char *copy = malloc(x->len + 1);
                if (copy) {
                        memcpy(copy, x->body, x->len + 1);
                        *ret = copy;
                        *ret_len = x->len;
                        r = 1;
                }
        }
        pthread_mutex_unlock(&c->lock);
        return r;
}

void pg_cache_session_put(pg_cache *c, const char *id, const char *body, size_t len, uint64_t gen) {
        if (strlen(id) >= STORE_ID_MAX)
                return;
        pthread_mutex_lock(&c->lock);
        if (!c->slots)
                c->slots = calloc(STORE_PG_CACHE_SLOTS, sizeof(*c->slots));
        char *copy = c->slots && gen == c->gen && trusted(c) ? malloc(len + 1) : NULL;
        if (copy) {
                pg_cached *x = &c->slots[slot_of(id)];
                memcpy(copy, body, len);
                copy[len] = '\0';
                free(x->body);
                snprintf(x->id, sizeof(x->id), "%s", id);
                x->body = copy;
                x->len = len;
        }
        pthread_mutex_unlock(&c->lock);
}

void pg_cache_forget(pg_cache *c, const char *id) {
        pthread_mutex_lock(&c->lock);
        pg_cached *x = c->slots ? &c->slots[slot_of(id)] : NULL;
        if (x && x->body && strcmp(x->id, id) == 0) {
                free(x->body);
                *x = (pg_cached){0};
        }
        c->gen++;
        pthread_mutex_unlock(&c->lock);
}

bool pg_cache_keys_get(pg_cache *c, size_t *ret) {
        pthread_mutex_lock(&c->lock);
        bool ok = trusted(c) && c->keys_known;
        if (ok)
                *ret = c->keys;
        pthread_mutex_unlock(&c->lock);
        return ok;
}

void pg_cache_keys_put(pg_cache *c, size_t n, uint64_t gen) {
        pthread_mutex_lock(&c->lock);
        if (gen == c->gen && trusted(c)) {
                c->keys = n;
                c->keys_known = true;
        }
        pthread_mutex_unlock(&c->lock);
}

void pg_cache_keys_forget(pg_cache *c) {
        pthread_mutex_lock(&c->lock);
        c->keys_known = false;
        c->gen++;
        pthread_mutex_unlock(&c->lock);
}

void pg_cache_listen(pg_cache *c, pg_listen_state st) {
        pthread_mutex_lock(&c->lock);
        switch (st) {
        case PG_LISTEN_NEW: /* what was sent while there was none is lost */
                forget_all(c);
                c->connected = true;
                c->drained_ms = now_mono_ms();
                break;
        case PG_LISTEN_WAITING:
                c->waiting = c->connected;
                break;
        case PG_LISTEN_DRAINED:
                c->waiting = false;
                c->drained_ms = now_mono_ms();
                break;
        case PG_LISTEN_LOST:
                forget_all(c);
                c->connected = c->waiting = false;
                break;
        }
        pthread_mutex_unlock(&c->lock);
}

int pg_session_cached(store *base, const char *id, char **ret, size_t *ret_len, hull_error *e) {
        pg_store *s = pg_of(base);
        if (pg_cache_session_get(&s->cache, id, ret, ret_len) == 1)
                return 0;
        uint64_t gen = pg_cache_gen(&s->cache);
        int r = pg_get(base, STORE_SESSION, id, 0, NULL, ret, ret_len, e);
        if (r == 0)
                pg_cache_session_put(&s->cache, id, *ret, *ret_len, gen);
        return r;
}
