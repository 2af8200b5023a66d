/* cli-serve-dirs.h: the directories hull serve makes at start: its runs' work root and its state
 * directories. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* A fresh directory for the runs' work directories (under parent, else $TMPDIR or /tmp),
 * searchable by the sandbox user. */
int serve_make_work_root(const char *parent, char *buf, size_t size, hull_error *e);
/* A state directory (audit logs, handle stores): given, or $HULL_HOME/leaf (src/shared/home.h);
 * made when missing. */
int serve_make_state_dir(const char *dir, const char *leaf, mode_t mode, char *buf, size_t size, hull_error *e);
