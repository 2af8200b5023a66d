/* cli-serve-node.c: see cli-serve-node.h. */
#include "cli-serve-node.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-key.h"
#include "cli.h"
#include "home.h"
#include "parse-util.h"
#include "sha256.h"
#include "v1-run.h"

#define usage_error(...) cli_usage_error("serve", CLI_EXIT_USAGE, __VA_ARGS__)

int cli_serve_node_set(serve_node *n, char which, const char *arg) {
        if (which == 'i') {
                size_t len = strlen(arg);
                if (len == 0 || len >= STORE_ID_MAX ||
                    strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != len)
                        return usage_error("--node-id wants 1 to %u letters, digits, '.', '_' or '-', got '%.80s'",
                                           STORE_ID_MAX - 1, arg);
                n->id = arg;
        } else if (which == 'a') {
                if (strlen(arg) >= NODE_URL_MAX ||
                    (strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0))
                        return usage_error("--advertise wants this node's http:// or https:// URL (under %u bytes), "
                                           "got '%.80s'",
                                           NODE_URL_MAX, arg);
                n->advertise = arg;
        } else if (parse_uint64(arg, 1, NODE_CAPACITY_MAX, &n->capacity) < 0)
                return usage_error("--capacity wants a whole number from 1 to %u, got '%.80s'", NODE_CAPACITY_MAX, arg);
        return 0;
}

/* HULL_SERVE_KEY's key added when it is not there yet. */
static int add_serve_key(store *st, hull_error *e) {
        const char *k = getenv("HULL_SERVE_KEY");
        if (!k || !k[0])
                return 0;
        size_t n = strlen(k);
        if (n < AUTH_TOKEN_MIN || n > AUTH_TOKEN_MAX)
                return hull_fail(e, -EINVAL, "serve: HULL_SERVE_KEY must be %u to %u characters", AUTH_TOKEN_MIN,
                                 AUTH_TOKEN_MAX);
        store_key key = {0};
        if (sha256_hex(k, n, key.digest_hex) < 0)
                return hull_fail(e, -EIO, "serve: cannot hash HULL_SERVE_KEY");
        if (store_key_find(st, key.digest_hex, &key, e) != 0)
                return 0;
        v1_id_new("key_", key.id);
        snprintf(key.name, sizeof(key.name), "HULL_SERVE_KEY");
        store_now_rfc3339(key.created_at);
        snprintf(key.hint, sizeof(key.hint), "%.9s...", k);
        return store_key_add(st, &key, e);
}

/* Join the nodes sharing the database. */
static int join(store *st, serve_node *n, const char *listen, const char *tiers, hull_error *e) {
        if (!n->id) {
                if (n->advertise || n->capacity)
                        return hull_fail(e, -EINVAL,
                                         "serve: --advertise and --capacity need --node-id (one node of "
                                         "several sharing a PostgreSQL --db)");
                return 0;
        }
        if (strcmp(store_backend_name(st), "postgresql") != 0)
                return hull_fail(e, -EOPNOTSUPP,
                                 "serve: --node-id needs a PostgreSQL --db (postgres://...): on SQLite hull serve is "
                                 "the only node, so leave --node-id out");
        if (!n->advertise)
                snprintf(n->advertise_default, sizeof(n->advertise_default), "http://%s", listen);
        v1_id_new("node_", n->instance);
        n->row = (store_node){.id = n->id,
                              .instance = n->instance,
                              .advertise = n->advertise ? n->advertise : n->advertise_default,
                              .capacity = n->capacity ? (unsigned) n->capacity : NODE_CAPACITY_DEFAULT,
                              .tiers = tiers};
        int r = store_node_join(st, &n->row, NODE_LEASE_TTL_MS, e);
        if (r < 0) {
                n->row.id = NULL;
                if (r == -EEXIST) { /* the store's message names the node; say who refused */
                        char why[HULL_ERROR_MSG_MAX];
                        snprintf(why, sizeof(why), "%s", e->msg);
                        return hull_fail(e, r, "serve: %s", why);
                }
        }
        return r;
}

int cli_serve_open_store(const char *db, serve_node *n, const char *listen, const char *tiers, char *db_path,
                         size_t size, bool *ret_given, store **ret, hull_error *e) {
        if (!db)
                db = getenv("HULL_DB");
        *ret_given = db && db[0];
        if (*ret_given) {
                int r = cli_db_check(db, e);
                if (r < 0)
                        return r;
                snprintf(db_path, size, "%s", db);
        } else {
                char home[SBX_PATH_MAX];
                int r = home_resolve(home, e);
                if (r >= 0)
                        r = home_mkdir(home, 0711, true, e);
                if (r < 0)
                        return r;
                if ((size_t) snprintf(db_path, size, "%s/hull.db", home) >= size)
                        return hull_err(e, -ENAMETOOLONG, "serve: the path of hull.db is too long");
        }
        int r = store_open(db_path, ret, e);
        if (r < 0)
                return r;
        if ((r = add_serve_key(*ret, e)) < 0)
                return r;
        if ((r = join(*ret, n, listen, tiers, e)) < 0)
                *ret_given = true; /* a usage error (exit 2): what the options asked cannot be */
        return r;
}

void cli_serve_close_store(store *st, serve_node *n) {
        hull_error e = {0};
        if (st && n->row.id) /* gone at once: a restart need not wait for the heartbeat to age */
                (void) store_node_leave(st, n->row.id, n->row.instance, &e);
        n->row.id = NULL;
        if (st)
                store_close(st);
}

void cli_serve_node_listening(store *st, serve_node *n, const char *addr, const dlog *log) {
        if (!n->row.id || n->advertise)
                return;
        snprintf(n->advertise_default, sizeof(n->advertise_default), "http://%s", addr);
        hull_error e = {0};
        if (store_node_join(st, &n->row, NODE_LEASE_TTL_MS, &e) < 0) /* this instance's row: updated */
                dlog_log(log, DLOG_WARN, "event=node-advertise-failed error=\"%s\"", e.msg);
}
