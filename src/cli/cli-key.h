/* cli-key.h: what hull key and hull init share: $HULL_HOME's database (hull.db, src/store) opened
 * from the command line, and the ids of what they make. */
#pragma once

#include <stddef.h>

#include "error.h"
#include "limits.h"
#include "store.h"

/* The state root into home: dir (--home, an absolute path) or $HULL_HOME or the default, made
 * when missing (0711, reachable by the sandbox user as hull serve needs it). Returns 0 or a
 * negative errno with *e. */
int cli_home(const char *dir, char home[static SBX_PATH_MAX], hull_error *e);

/* hull.db under home, opened (made and migrated when missing). */
int cli_store_open(const char *home, store **ret, hull_error *e);

/* prefix and 24 random lowercase hex digits ("key_", "agent_"). Returns 0 or a negative errno. */
int cli_random_id(const char *prefix, char ret[static STORE_ID_MAX]);
