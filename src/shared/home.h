/* home.h: $HULL_HOME, the root of all of hull's state for every command: audit logs, handle
 * stores, kept runs and chats (runs/<id>/, chats/<id>/), the configuration file (config.json),
 * later the database. Default: /var/lib/hull as root, ~/.local/state/hull otherwise.
 *
 * Directories a sandbox binds (handle stores, a run's workspace) must be reachable by the sandbox
 * user: as root that is another uid (SBX_ROOT_HOST_UID), so those directories are 0711 and every
 * directory above them must be searchable by others; home_dir checks it and says which directory
 * to change instead of letting a sandbox fail later. Not yet existing directories are made. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "limits.h"

/* The state root: $HULL_HOME (it must be an absolute path), else the default. Not created here.
 * Returns 0 with ret filled, -EINVAL (HULL_HOME relative, or no HOME for the default), or
 * -ENAMETOOLONG, with *e. */
int home_resolve(char ret[SBX_PATH_MAX], hull_error *e);

/* DIR made when missing, with its missing parents (0711) and itself (mode). sandbox_reachable:
 * when running as root, DIR's mode is made 0711 and every directory above it must be searchable
 * by others (-EACCES with *e naming the one that is not and how to fix it). Returns 0 or a
 * negative errno with *e. */
int home_mkdir(const char *dir, mode_t mode, bool sandbox_reachable, hull_error *e);

/* home/leaf made as home_mkdir does, into ret. */
int home_dir(const char *home, const char *leaf, mode_t mode, bool sandbox_reachable, char ret[SBX_PATH_MAX],
             hull_error *e);
