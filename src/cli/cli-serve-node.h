/* cli-serve-node.h: hull serve's state store opened (--db, HULL_DB, else $HULL_HOME/hull.db, with
 * HULL_SERVE_KEY's key added) and, with --node-id, this process joined as one node of several
 * sharing a PostgreSQL database (docs/DEPLOY.md, "Nodes"). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "dlog.h"
#include "error.h"
#include "limits.h"
#include "store.h"

typedef struct serve_node {
        const char *id, *advertise; /* --node-id, --advertise (NULL: not given) */
        uint64_t capacity;          /* --capacity (0: not given) */
        char instance[STORE_ID_MAX];
        char advertise_default[NODE_URL_MAX];
        store_node row; /* what joined: row.id NULL when this is the only node */
} serve_node;

/* A node option's value checked and kept in n: which is 'i' (--node-id), 'a' (--advertise) or
 * 'c' (--capacity). Returns 0, or the exit status of a usage error (printed). */
int cli_serve_node_set(serve_node *n, char which, const char *arg);

/* Open the store (db: --db's value or NULL); *ret_given: it came from --db or HULL_DB (a failure
 * is then a usage error). With n->id, join the nodes (tiers: a JSON array; listen: --listen, the
 * default of --advertise): -EOPNOTSUPP on SQLite, -EEXIST when a live node has the id. Returns 0
 * or a negative errno with *e (one line, never the URL's password). */
int cli_serve_open_store(const char *db, serve_node *n, const char *listen, const char *tiers, char *db_path,
                         size_t size, bool *ret_given, store **ret, hull_error *e);

/* Listening at addr (HOST:PORT, the port bound): without --advertise, the node's URL becomes
 * http://addr (a warning logged when it cannot be stored). */
void cli_serve_node_listening(store *st, serve_node *n, const char *addr, const dlog *log);

/* Leave the nodes (when joined: the row and its leases removed) and close the store (NULL: nothing). */
void cli_serve_close_store(store *st, serve_node *n);
