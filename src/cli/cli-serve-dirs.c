/* cli-serve-dirs.c: the directories hull serve makes at start (cli-serve-dirs.h). */
#include "cli-serve-dirs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "home.h"
#include "limits.h"
#include "macro.h"

/* A fresh directory for the runs' work directories, searchable by the sandbox user. */
int serve_make_work_root(const char *parent, char *buf, size_t size, hull_error *e) {
        if (!parent) {
                parent = getenv("TMPDIR");
                if (!parent || parent[0] != '/')
                        parent = "/tmp";
        }
        if ((size_t) snprintf(buf, size, "%s/hull-serve.XXXXXX", parent) >= size)
                return hull_err(e, -ENAMETOOLONG, "serve: the work directory path is too long");
        if (!mkdtemp(buf))
                return hull_err_hint(e, negative_errno(), "pass --work-dir DIR",
                                     "serve: cannot create a directory in %s", parent);
        if (chmod(buf, 0711) < 0)
                return hull_err(e, negative_errno(), "serve: cannot set the mode of %s", buf);
        return 0;
}

/* A state directory (audit logs, handle stores): given, or $HULL_HOME/leaf (src/shared/home.h);
 * made when missing. The handle stores' directory must be reachable by the sandbox user (home.h
 * checks it), the audit logs' need not (0700). */
int serve_make_state_dir(const char *dir, const char *leaf, mode_t mode, char *buf, size_t size, hull_error *e) {
        char home[SBX_PATH_MAX];
        int r;

        if (dir) {
                if ((size_t) snprintf(buf, size, "%s", dir) >= size)
                        return hull_err(e, -ENAMETOOLONG, "serve: the state directory path is too long");
        } else {
                r = home_resolve(home, e);
                if (r < 0)
                        return r;
                r = home_mkdir(home, 0711, mode == 0711, e);
                if (r < 0)
                        return r;
                if ((size_t) snprintf(buf, size, "%s/%s", home, leaf) >= size)
                        return hull_err(e, -ENAMETOOLONG, "serve: the state directory path is too long");
        }
        return home_mkdir(buf, mode, mode == 0711, e);
}
