/* cli-key.h: what hull key and hull init share: $HULL_HOME's database (hull.db, src/store) opened
 * from the command line, and the ids of what they make. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "limits.h"
#include "store.h"

/* The state root into home: dir (--home, an absolute path) or $HULL_HOME or the default, made
 * when missing (0711, reachable by the sandbox user as hull serve needs it). Returns 0 or a
 * negative errno with *e. */
int cli_home(const char *dir, char home[static SBX_PATH_MAX], hull_error *e);

/* -EINVAL with *e unless db is a database hull serve --db and HULL_DB take: an absolute path,
 * sqlite:PATH, or a postgres:// or postgresql:// URL (never repeated in *e: it may hold a
 * password). */
int cli_db_check(const char *db, hull_error *e);

/* The database db names (--db; NULL: $HULL_DB when set, else hull.db under home), opened (made
 * and migrated when missing). *ret_given (may be NULL) says whether --db or HULL_DB named it:
 * then a failure is the caller's usage error (exit 2). Returns 0 or a negative errno with *e. */
int cli_store_open_db(const char *db, const char *home, store **ret, bool *ret_given, hull_error *e);
/* cli_store_open_db(NULL, home, ret, NULL, e). */
int cli_store_open(const char *home, store **ret, hull_error *e);

/* prefix and 24 random lowercase hex digits ("key_", "agent_"). Returns 0 or a negative errno. */
int cli_random_id(const char *prefix, char ret[static STORE_ID_MAX]);
