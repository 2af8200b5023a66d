/* test-home.c: $HULL_HOME and the default, directories made with their parents, and (as root) a
 * directory the sandbox user could not reach refused at once with the fix named. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "home.h"
#include "test.h"

static void test_resolve(void) {
        char buf[SBX_PATH_MAX];
        hull_error e = {0};

        setenv("HULL_HOME", "/srv/hull//", 1);
        CHECK_EQ_INT(home_resolve(buf, &e), 0);
        CHECK_EQ_STR(buf, "/srv/hull");
        setenv("HULL_HOME", "relative/dir", 1);
        CHECK_EQ_INT(home_resolve(buf, &e), -EINVAL);
        TEST_RESULT(strstr(e.msg, "HULL_HOME=relative/dir") && strstr(e.msg, "absolute"), "relative refused: %s",
                    e.msg);
        unsetenv("HULL_HOME");
        CHECK_EQ_INT(home_resolve(buf, &e), 0);
        if (geteuid() == 0)
                CHECK_EQ_STR(buf, "/var/lib/hull");
        else {
                char want[SBX_PATH_MAX];
                snprintf(want, sizeof(want), "%s/.local/state/hull", getenv("HOME"));
                CHECK_EQ_STR(buf, want);
        }
        setenv("HULL_HOME", "", 1); /* empty: the default */
        CHECK_EQ_INT(home_resolve(buf, &e), 0);
        unsetenv("HULL_HOME");
}

static void test_mkdir(void) {
        char dir[] = "/tmp/test-home.XXXXXX", path[256], got[SBX_PATH_MAX];
        hull_error e = {0};
        struct stat st;

        CHECK(mkdtemp(dir) != NULL);
        CHECK(chmod(dir, 0755) == 0);
        snprintf(path, sizeof(path), "%s/a/b", dir);
        CHECK_EQ_INT(home_mkdir(path, 0700, false, &e), 0);
        CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700);
        CHECK_EQ_INT(home_mkdir(path, 0700, false, &e), 0); /* again: fine */
        CHECK_EQ_INT(home_dir(path, "runs", 0700, false, got, &e), 0);
        snprintf(path, sizeof(path), "%s/a/b/runs", dir);
        CHECK_EQ_STR(got, path);
        if (geteuid() == 0) {
                /* a/b is 0700: the sandbox user (another uid) cannot pass it */
                CHECK_EQ_INT(home_dir(path, "handles", 0700, true, got, &e), -EACCES);
                TEST_RESULT(strstr(e.msg, "chmod o+x") && strstr(e.msg, "/a/b"), "the fix is named: %s", e.msg);
                snprintf(path, sizeof(path), "%s/a/b", dir);
                CHECK(chmod(path, 0711) == 0);
                CHECK_EQ_INT(home_dir(path, "handles", 0700, true, got, &e), 0);
                CHECK(stat(got, &st) == 0 && (st.st_mode & 07777) == 0711);
        } else
                printf("skip - not root: the sandbox-user reachability check applies as root only\n");
        /* a file in the way */
        snprintf(path, sizeof(path), "%s/file", dir);
        FILE *f = fopen(path, "w");
        fclose(f);
        CHECK(home_mkdir(path, 0700, false, &e) == -ENOTDIR);
        snprintf(path, sizeof(path), "%s/file/sub", dir);
        CHECK(home_mkdir(path, 0700, false, &e) < 0);
        TEST_RESULT(strstr(e.msg, "HULL_HOME") != NULL, "says what to change: %s", e.msg);
        CHECK(home_mkdir("rel/dir", 0700, false, &e) == -EINVAL);
        rm_rf_at(AT_FDCWD, dir);
}

int main(void) {
        test_resolve();
        test_mkdir();
        return test_done();
}
