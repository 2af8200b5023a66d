/* home.c: see home.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "home.h"

int home_resolve(char ret[SBX_PATH_MAX], hull_error *e) {
        const char *h = getenv("HULL_HOME");

        if (h && h[0]) {
                if (h[0] != '/')
                        return hull_fail(e, -EINVAL,
                                         "HULL_HOME=%s is not an absolute path (set it to one, e.g. $PWD/%s)", h, h);
                if ((size_t) snprintf(ret, SBX_PATH_MAX, "%s", h) >= SBX_PATH_MAX)
                        return hull_fail(e, -ENAMETOOLONG, "HULL_HOME is longer than %u bytes", SBX_PATH_MAX - 1);
        } else if (geteuid() == 0)
                snprintf(ret, SBX_PATH_MAX, "/var/lib/hull");
        else {
                const char *home = getenv("HOME");
                if (!home || home[0] != '/')
                        return hull_fail(e, -EINVAL,
                                         "no HOME for hull's state directory (set HULL_HOME to a directory)");
                if ((size_t) snprintf(ret, SBX_PATH_MAX, "%s/.local/state/hull", home) >= SBX_PATH_MAX)
                        return hull_fail(e, -ENAMETOOLONG, "hull's state directory path is too long (set HULL_HOME)");
        }
        /* no trailing slashes, so leaves join cleanly */
        for (size_t n = strlen(ret); n > 1 && ret[n - 1] == '/'; n--)
                ret[n - 1] = '\0';
        return 0;
}

int home_mkdir(const char *dir, mode_t mode, bool sandbox_reachable, hull_error *e) {
        char buf[SBX_PATH_MAX];
        bool as_root = geteuid() == 0;

        if (dir[0] != '/')
                return hull_fail(e, -EINVAL, "%s: not an absolute path", dir);
        if ((size_t) snprintf(buf, sizeof(buf), "%s", dir) >= sizeof(buf))
                return hull_fail(e, -ENAMETOOLONG, "%s: the path is too long", dir);
        if (sandbox_reachable && as_root)
                mode = 0711;
        for (char *p = buf + 1;; p++) {
                if (*p != '/' && *p != '\0')
                        continue;
                char c = *p;
                *p = '\0';
                if (buf[0] && mkdir(buf, c == '\0' ? mode : 0711) < 0 && errno != EEXIST)
                        return hull_err_hint(e, -errno, "set HULL_HOME or pass another directory", "cannot create %s",
                                             buf);
                *p = c;
                if (c == '\0')
                        break;
        }
        struct stat st;
        if (stat(buf, &st) < 0)
                return hull_err(e, -errno, "cannot stat %s", buf);
        if (!S_ISDIR(st.st_mode))
                return hull_fail(e, -ENOTDIR, "%s is not a directory (set HULL_HOME or pass another directory)", buf);
        if (!(sandbox_reachable && as_root))
                return 0;
        if ((st.st_mode & 07777) != 0711 && chmod(buf, 0711) < 0)
                return hull_err(e, -errno, "cannot set the mode of %s", buf);
        /* the sandbox user (another uid) must be able to reach it: its session init binds it from
         * inside its user namespace */
        for (char *p = strrchr(buf, '/'); p; p = strrchr(buf, '/')) {
                *p = '\0';
                const char *up = buf[0] ? buf : "/";
                if (stat(up, &st) == 0 && !(st.st_mode & S_IXOTH))
                        return hull_fail(e, -EACCES,
                                         "the sandbox user cannot reach %s: %s is not searchable by others (run "
                                         "'chmod o+x %s', or set HULL_HOME to a directory under a searchable one)",
                                         dir, up, up);
                if (!buf[0])
                        break;
        }
        return 0;
}

int home_dir(const char *home, const char *leaf, mode_t mode, bool sandbox_reachable, char ret[SBX_PATH_MAX],
             hull_error *e) {
        char buf[SBX_PATH_MAX];

        if ((size_t) snprintf(buf, sizeof(buf), "%s/%s", home, leaf) >= sizeof(buf))
                return hull_fail(e, -ENAMETOOLONG, "%s/%s: the path is too long", home, leaf);
        int r = home_mkdir(buf, mode, sandbox_reachable, e);
        if (r < 0)
                return r;
        memcpy(ret, buf, strlen(buf) + 1);
        return 0;
}
