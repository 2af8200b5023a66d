/* test-fs-util.c: rm_rf_at removes a tree but never what its links point to; loop_pread. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "test.h"

static int exists(const char *p) {
        struct stat st;
        return lstat(p, &st) == 0;
}

/* loop_pread reads at an offset and leaves the file offset alone; a read past the end is short. */
static void test_pread(void) {
        char path[] = "/tmp/hull-test-pread.XXXXXX";
        int fd = mkstemp(path);
        CHECK(fd >= 0);
        if (fd < 0)
                return;
        unlink(path);
        CHECK(write(fd, "0123456789", 10) == 10);
        CHECK(lseek(fd, 2, SEEK_SET) == 2);
        char buf[16] = "";
        CHECK(loop_pread(fd, buf, 4, 5) == 4 && memcmp(buf, "5678", 4) == 0);
        CHECK(loop_pread(fd, buf, 8, 7) == 3 && memcmp(buf, "789", 3) == 0);
        CHECK(loop_pread(fd, buf, 4, 20) == 0);
        CHECK(lseek(fd, 0, SEEK_CUR) == 2);
        close(fd);
        CHECK(loop_pread(fd, buf, 4, 0) == -EBADF);
}

int main(void) {
        test_pread();
        char base[] = "/tmp/hull-test-fs.XXXXXX";
        char tree[512], outside[512], p[600];
        if (!mkdtemp(base))
                return 1;
        snprintf(tree, sizeof(tree), "%s/tree", base);
        snprintf(outside, sizeof(outside), "%s/outside", base);
        mkdir(tree, 0755);
        mkdir(outside, 0755);
        snprintf(p, sizeof(p), "%s/keep", outside);
        close(open(p, O_CREAT | O_WRONLY, 0644));
        snprintf(p, sizeof(p), "%s/sub", tree);
        mkdir(p, 0755);
        snprintf(p, sizeof(p), "%s/sub/file", tree);
        close(open(p, O_CREAT | O_WRONLY, 0644));
        snprintf(p, sizeof(p), "%s/link-to-outside", tree);
        CHECK_EQ_INT(symlink(outside, p), 0);
        snprintf(p, sizeof(p), "%s/sub/locked", tree);
        mkdir(p, 0755);
        snprintf(p, sizeof(p), "%s/sub/locked/f", tree);
        close(open(p, O_CREAT | O_WRONLY, 0644));
        snprintf(p, sizeof(p), "%s/sub/locked", tree);
        chmod(p, 0);

        CHECK_EQ_INT(rm_rf_at(AT_FDCWD, tree), 0);
        CHECK(!exists(tree));
        snprintf(p, sizeof(p), "%s/keep", outside);
        CHECK(exists(p));

        /* a link given as the top is removed, its target kept */
        snprintf(p, sizeof(p), "%s/toplink", base);
        symlink(outside, p);
        CHECK_EQ_INT(rm_rf_at(AT_FDCWD, p), 0);
        CHECK(!exists(p));
        CHECK(exists(outside));

        CHECK_EQ_INT(rm_rf_at(AT_FDCWD, base), 0);
        CHECK(!exists(base));
        return test_done();
}
