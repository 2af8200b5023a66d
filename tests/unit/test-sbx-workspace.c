/* test-sbx-workspace.c: the workspace operations and every escape attempt against them: "..",
 * absolute paths, links in the middle and at the end, FIFOs, directories where files belong,
 * ambiguous edits, links during walks, catastrophic regexes, and crafted archives. A canary
 * directory beside the workspace must stay untouched throughout. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs-util.h"
#include "sbx-workspace.h"
#include "test.h"

static char base[64];     /* /tmp/hull-test-ws.XXXXXX */
static char outside[128]; /* the canary: holds only "secret" */

static double now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void put(int dfd, const char *rel, const void *data, size_t len) {
        int fd = openat(dfd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, data, len) != (ssize_t) len) {
                perror(rel);
                exit(2);
        }
        close(fd);
}

static void puts_at(int dfd, const char *rel, const char *s) {
        put(dfd, rel, s, strlen(s));
}

/* Whole content of a file (NUL-terminated, *len set), or NULL. */
static char *slurp(int dfd, const char *rel, size_t *len) {
        int fd = openat(dfd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        struct stat st;
        fstat(fd, &st);
        char *b = malloc((size_t) st.st_size + 1);
        ssize_t n = read(fd, b, (size_t) st.st_size);
        close(fd);
        b[n < 0 ? 0 : n] = '\0';
        if (len)
                *len = n < 0 ? 0 : (size_t) n;
        return b;
}

static bool exists_at(int dfd, const char *rel) {
        struct stat st;
        return fstatat(dfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static bool exists(const char *path) {
        struct stat st;
        return lstat(path, &st) == 0;
}

/* The canary holds exactly its one file, unchanged. */
static bool canary_intact(void) {
        DIR *d = opendir(outside);
        int n = 0;
        if (!d)
                return false;
        for (struct dirent *de; (de = readdir(d));)
                if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        n++;
        closedir(d);
        char p[256];
        snprintf(p, sizeof(p), "%s/secret", outside);
        int fd = open(p, O_RDONLY);
        char buf[32] = {0};
        ssize_t r = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
                close(fd);
        struct stat st;
        return n == 1 && r > 0 && strcmp(buf, "secret foo\n") == 0 && stat(p, &st) == 0 && st.st_nlink == 1;
}

static int fresh_ws(const char *name) {
        char p[256];
        snprintf(p, sizeof(p), "%s/%s", base, name);
        rm_rf_at(AT_FDCWD, p);
        if (mkdir(p, 0755) < 0)
                exit(2);
        return open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static bool msg_has(const hull_error *e, const char *s) {
        bool ok = strstr(e->msg, s) != NULL;
        if (!ok)
                printf("# message: %s\n", e->msg);
        return ok;
}

/* ---- path jail ---- */

static void test_path_check(void) {
        hull_error e = {0};
        char norm[WS_PATH_MAX + 1];
        CHECK_EQ_INT(ws_path_check("a", 1, &e), 0);
        CHECK_EQ_INT(ws_path_check("a/b/c.txt", 9, &e), 0);
        CHECK_EQ_INT(ws_path_check("./a//b/", 7, &e), 0);
        CHECK_EQ_INT(ws_path_check(".", 1, &e), 0);
        CHECK_EQ_INT(ws_path_check("..a/b..", 7, &e), 0);
        CHECK_EQ_INT(ws_path_check("", 0, &e), -EINVAL);
        CHECK_EQ_INT(ws_path_check("/etc/passwd", 11, &e), -EPERM);
        CHECK(msg_has(&e, "is absolute"));
        CHECK_EQ_INT(ws_path_check("../x", 4, &e), -EPERM);
        CHECK(msg_has(&e, "workspace: path '../x' leaves the workspace (use a path relative to /workspace"));
        CHECK_EQ_INT(ws_path_check("a/../../b", 9, &e), -EPERM);
        CHECK_EQ_INT(ws_path_check("a/..", 4, &e), -EPERM);
        CHECK_EQ_INT(ws_path_check("..", 2, &e), -EPERM);
        CHECK_EQ_INT(ws_path_check("a\0b", 3, &e), -EINVAL);
        CHECK(msg_has(&e, "NUL"));

        static char big[WS_PATH_MAX + 2];
        memset(big, 'a', sizeof(big) - 1);
        CHECK_EQ_INT(ws_path_check(big, WS_PATH_MAX + 1, &e), -ENAMETOOLONG);
        char name[WS_NAME_MAX + 2];
        memset(name, 'n', sizeof(name) - 1);
        name[sizeof(name) - 1] = '\0';
        CHECK_EQ_INT(ws_path_check(name, WS_NAME_MAX + 1, &e), -ENAMETOOLONG);
        CHECK_EQ_INT(ws_path_check(name, WS_NAME_MAX, &e), 0);
        char deep[(WS_PATH_DEPTH_MAX + 1) * 2 + 1];
        for (unsigned i = 0; i <= WS_PATH_DEPTH_MAX; i++)
                memcpy(deep + 2 * i, "d/", 2);
        deep[(WS_PATH_DEPTH_MAX + 1) * 2 - 1] = '\0';
        CHECK_EQ_INT(ws_path_check(deep, strlen(deep), &e), -ENAMETOOLONG);
        CHECK_EQ_INT(ws_path_check(deep + 2, strlen(deep + 2), &e), 0);

        CHECK_EQ_INT(ws_path_normalize("./a//b/", 7, norm, sizeof(norm), &e), 0);
        CHECK_EQ_STR(norm, "a/b");
        CHECK_EQ_INT(ws_path_normalize("./", 2, norm, sizeof(norm), &e), 0);
        CHECK_EQ_STR(norm, ".");
        CHECK_EQ_INT(ws_path_normalize("abc", 3, norm, 3, &e), -ENOBUFS);
}

/* ws_path_resolve: sheath's path-jail vectors (../shared/reference/sheath-harness.md §8.1), the
 * absolute /workspace form a model echoes, and one message for every escape. */
static void test_path_resolve(int root) {
        hull_error e = {0}, e2 = {0};
        char out[WS_PATH_MAX + 1];
        static const struct {
                const char *in, *want;
        } ok[] = {
                {"data.csv", "data.csv"},                 /* 1 */
                {"sub/dir/data.csv", "sub/dir/data.csv"}, /* 2 */
                {".", "."},                               /* 3 */
                {"sub/../data.csv", "data.csv"},          /* 4 */
                {"/workspace/data.csv", "data.csv"},      /* 5: absolute inside the root */
                {"/workspace", "."},
                {"/workspace/", "."},
                {"/workspace/a/./b//c/", "a/b/c"},
                {"a/b/../../c", "c"},
                {"a/..", "."},
                {"./x", "x"},
                {"/mnt/memory/prefs/a.md", ".memory/prefs/a.md"}, /* a /v1 session's memory stores */
                {"/mnt/memory", ".memory"},
                {"/mnt/memory/prefs/../b.md", ".memory/b.md"},
        };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                int r = ws_path_resolve(ok[i].in, strlen(ok[i].in), out, sizeof(out), &e);
                CHECK_EQ_INT(r, 0);
                if (r == 0)
                        CHECK_EQ_STR(out, ok[i].want);
        }
        /* 6-8: escapes, one message whatever is (or is not) on the host at the path */
        static const char *const escapes[] = {"../escape.txt",
                                              "sub/../../escape.txt",
                                              "/etc/passwd",
                                              "/workspace/../etc/passwd",
                                              "/workspacex/a",
                                              "..",
                                              "/",
                                              "/tmp",
                                              "/mnt/memory/..",
                                              "/mnt/memory/a/../../x",
                                              "/mnt/memoryx/a",
                                              "/mnt"};
        for (size_t i = 0; i < ELEMENTSOF(escapes); i++) {
                CHECK_EQ_INT(ws_path_resolve(escapes[i], strlen(escapes[i]), out, sizeof(out), &e), -EPERM);
                CHECK(msg_has(&e, "is outside /workspace"));
        }
        char exists_path[256], missing_path[256];
        snprintf(exists_path, sizeof(exists_path), "%s/secret", outside);
        snprintf(missing_path, sizeof(missing_path), "%s/sekret", outside);
        CHECK_EQ_INT(ws_path_resolve(exists_path, strlen(exists_path), out, sizeof(out), &e), -EPERM);
        CHECK_EQ_INT(ws_path_resolve(missing_path, strlen(missing_path), out, sizeof(out), &e2), -EPERM);
        /* the same words but for the path itself */
        CHECK(strstr(e.msg, "/secret' is outside /workspace") && strstr(e2.msg, "/sekret' is outside /workspace"));
        CHECK_EQ_INT(strlen(e.msg), strlen(e2.msg));
        /* 10, 11: empty and blank */
        CHECK_EQ_INT(ws_path_resolve("", 0, out, sizeof(out), &e), -EINVAL);
        CHECK_EQ_INT(ws_path_resolve("   ", 3, out, sizeof(out), &e), -EINVAL);
        CHECK(msg_has(&e, "blank path"));
        CHECK_EQ_INT(ws_path_resolve("a\0b", 3, out, sizeof(out), &e), -EINVAL);
        CHECK_EQ_INT(ws_path_resolve("abc", 3, out, 2, &e), -ENOBUFS);
        /* 9: a link inside the root to a directory outside it: resolved lexically, refused on open */
        char target[256];
        snprintf(target, sizeof(target), "%s", outside);
        CHECK_EQ_INT(symlinkat(target, root, "resolve-link"), 0);
        CHECK_EQ_INT(ws_path_resolve("/workspace/resolve-link/secret", 30, out, sizeof(out), &e), 0);
        CHECK_EQ_STR(out, "resolve-link/secret");
        CHECK_EQ_INT(ws_open(root, out, O_RDONLY, 0, &e), -ELOOP);
        CHECK(msg_has(&e, "symbolic link"));
        /* a link to a missing target gives the same answer as one to an existing one */
        CHECK_EQ_INT(symlinkat("/nonexistent-hull-dir", root, "resolve-link2"), 0);
        CHECK_EQ_INT(ws_open(root, "resolve-link2/secret", O_RDONLY, 0, &e2), -ELOOP);
        unlinkat(root, "resolve-link", 0);
        unlinkat(root, "resolve-link2", 0);
        /* a result deeper than the checker allows is refused like any other path */
        char deep[2 * WS_PATH_DEPTH_MAX + 8];
        size_t o = 0;
        for (unsigned i = 0; i <= WS_PATH_DEPTH_MAX; i++) {
                deep[o++] = 'd';
                deep[o++] = '/';
        }
        deep[o] = '\0';
        CHECK_EQ_INT(ws_path_resolve(deep, o, out, sizeof(out), &e), -ENAMETOOLONG);
}

static void test_open(int root) {
        hull_error e = {0};
        char p[256];
        int fd;
        puts_at(root, "ok.txt", "fine\n");
        fd = ws_open(root, "ok.txt", O_RDONLY, 0, &e);
        CHECK(fd >= 0);
        close(fd);
        CHECK_EQ_INT(ws_open(root, "../outside/secret", O_RDONLY, 0, &e), -EPERM);
        CHECK_EQ_INT(ws_open(root, "/etc/passwd", O_RDONLY, 0, &e), -EPERM);
        CHECK_EQ_INT(ws_open(root, "nope/x", O_RDONLY, 0, &e), -ENOENT);
        CHECK(msg_has(&e, "does not exist"));

        /* a link to outside in the middle, at the end; an absolute one; even one to inside */
        CHECK_EQ_INT(symlinkat(outside, root, "out"), 0);
        snprintf(p, sizeof(p), "%s/secret", outside);
        CHECK_EQ_INT(symlinkat(p, root, "secret-link"), 0);
        CHECK_EQ_INT(symlinkat("/etc", root, "etc"), 0);
        CHECK_EQ_INT(symlinkat("ok.txt", root, "inside-link"), 0);
        CHECK_EQ_INT(ws_open(root, "out/secret", O_RDONLY, 0, &e), -ELOOP);
        CHECK(msg_has(&e, "goes through a symbolic link"));
        CHECK_EQ_INT(ws_open(root, "secret-link", O_RDONLY, 0, &e), -ELOOP);
        CHECK_EQ_INT(ws_open(root, "etc/passwd", O_RDONLY, 0, &e), -ELOOP);
        CHECK_EQ_INT(ws_open(root, "inside-link", O_RDONLY, 0, &e), -ELOOP);
        CHECK_EQ_INT(ws_open(root, "out/new", O_WRONLY | O_CREAT, 0644, &e), -ELOOP);
        CHECK(canary_intact());
}

/* ---- read, write, edit ---- */

static void test_read(int root) {
        hull_error e = {0};
        ws_read_result r = {0};
        puts_at(root, "hello.txt", "hello\nworld\n");
        CHECK_EQ_INT(ws_read(root, "hello.txt", 0, 0, &r, &e), 0);
        CHECK_EQ_INT(r.len, 12);
        CHECK_EQ_INT(r.size, 12);
        CHECK(r.eof);
        CHECK_EQ_STR(r.data, "hello\nworld\n");
        ws_read_result_done(&r);
        CHECK_EQ_INT(ws_read(root, "./hello.txt", 6, 3, &r, &e), 0);
        CHECK_EQ_INT(r.len, 3);
        CHECK(!r.eof);
        CHECK_EQ_STR(r.data, "wor");
        ws_read_result_done(&r);
        CHECK_EQ_INT(ws_read(root, "hello.txt", 100, 10, &r, &e), 0);
        CHECK_EQ_INT(r.len, 0);
        CHECK(r.eof);
        ws_read_result_done(&r);

        const char bin[] = {'\0', '\x01', '\xff', '\0', 'x'};
        put(root, "bin.dat", bin, sizeof(bin));
        CHECK_EQ_INT(ws_read(root, "bin.dat", 0, 0, &r, &e), 0);
        CHECK(r.len == sizeof(bin) && memcmp(r.data, bin, sizeof(bin)) == 0);
        ws_read_result_done(&r);

        /* a FIFO is refused at once (no blocking open), so are directories and links */
        CHECK_EQ_INT(mkfifoat(root, "fifo", 0644), 0);
        double t0 = now_ms();
        CHECK_EQ_INT(ws_read(root, "fifo", 0, 0, &r, &e), -EINVAL);
        CHECK(msg_has(&e, "FIFO"));
        CHECK(now_ms() - t0 < 1000);
        mkdirat(root, "adir", 0755);
        CHECK_EQ_INT(ws_read(root, "adir", 0, 0, &r, &e), -EISDIR);
        CHECK_EQ_INT(ws_read(root, "secret-link", 0, 0, &r, &e), -ELOOP);
        CHECK_EQ_INT(ws_read(root, "out/secret", 0, 0, &r, &e), -ELOOP);
        CHECK_EQ_INT(ws_read(root, "../outside/secret", 0, 0, &r, &e), -EPERM);
        CHECK_EQ_INT(ws_read(root, "hello.txt", 0, WS_READ_MAX_BYTES + 1, &r, &e), -EINVAL);
}

static bool no_temp_files(int dfd) {
        DIR *d = fdopendir(dup(dfd));
        bool ok = true;
        rewinddir(d);
        for (struct dirent *de; (de = readdir(d));)
                if (strncmp(de->d_name, ".hull-tmp-", 10) == 0)
                        ok = false;
        closedir(d);
        return ok;
}

static void test_write(int root) {
        hull_error e = {0};
        struct stat st;
        char p[256];
        size_t len;
        char *s;
        umask(077);
        CHECK_EQ_INT(ws_write(root, "new/dir/file.txt", "abc", 3, 0, &e), -ENOENT);
        CHECK_EQ_INT(ws_write(root, "new/dir/file.txt", "abc", 3, WS_WRITE_MKDIRS | WS_WRITE_FSYNC, &e), 0);
        s = slurp(root, "new/dir/file.txt", &len);
        CHECK(s && len == 3 && memcmp(s, "abc", 3) == 0);
        free(s);
        CHECK(fstatat(root, "new/dir/file.txt", &st, 0) == 0 && (st.st_mode & 0777) == 0644);
        CHECK(fstatat(root, "new/dir", &st, 0) == 0 && (st.st_mode & 0777) == 0755);
        CHECK_EQ_INT(ws_write(root, "new/dir/file.txt", "replaced", 8, 0, &e), 0);
        s = slurp(root, "new/dir/file.txt", NULL);
        CHECK_EQ_STR(s, "replaced");
        free(s);
        CHECK_EQ_INT(ws_write(root, "empty", NULL, 0, 0, &e), 0);
        CHECK(fstatat(root, "empty", &st, 0) == 0 && st.st_size == 0);

        /* a planted link at the target is replaced, never written through */
        snprintf(p, sizeof(p), "%s/target.txt", outside);
        CHECK_EQ_INT(symlinkat(p, root, "planted"), 0);
        CHECK_EQ_INT(ws_write(root, "planted", "mine", 4, 0, &e), 0);
        CHECK(fstatat(root, "planted", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode));
        CHECK(!exists(p));
        /* a link as a parent is refused, with or without MKDIRS */
        CHECK_EQ_INT(ws_write(root, "out/x", "x", 1, 0, &e), -ELOOP);
        CHECK_EQ_INT(ws_write(root, "out/x", "x", 1, WS_WRITE_MKDIRS, &e), -ELOOP);
        CHECK_EQ_INT(ws_write(root, "out/sub/x", "x", 1, WS_WRITE_MKDIRS, &e), -ELOOP);
        CHECK_EQ_INT(ws_write(root, "../outside/x", "x", 1, WS_WRITE_MKDIRS, &e), -EPERM);
        CHECK_EQ_INT(ws_write(root, "/tmp/x", "x", 1, 0, &e), -EPERM);
        /* a directory where a file is expected */
        CHECK_EQ_INT(ws_write(root, "adir", "x", 1, 0, &e), -EISDIR);
        CHECK_EQ_INT(ws_write(root, "newfile/", "x", 1, 0, &e), -EISDIR);
        CHECK_EQ_INT(ws_write(root, ".", "x", 1, 0, &e), -EISDIR);
        CHECK_EQ_INT(ws_write(root, "hello.txt/x", "x", 1, 0, &e), -ENOTDIR);
        CHECK_EQ_INT(ws_write(root, "big", "x", WS_WRITE_MAX_BYTES + 1, 0, &e), -EFBIG);
        CHECK(no_temp_files(root));
        CHECK(canary_intact());

        /* new files go to the workspace owner (root only: others cannot give files away) */
        if (geteuid() == 0) {
                int sub = fresh_ws("owned");
                CHECK_EQ_INT(fchown(sub, 4242, 4343), 0);
                CHECK_EQ_INT(ws_write(sub, "d/f", "x", 1, WS_WRITE_MKDIRS, &e), 0);
                CHECK(fstatat(sub, "d/f", &st, 0) == 0 && st.st_uid == 4242 && st.st_gid == 4343);
                CHECK(fstatat(sub, "d", &st, 0) == 0 && st.st_uid == 4242);
                close(sub);
        }
        umask(022);
}

static void test_edit(int root) {
        hull_error e = {0};
        struct stat st;
        char *s;
        puts_at(root, "code.py", "a = 1\nb = 2\na = 1\n");
        fchmodat(root, "code.py", 0600, 0);
        CHECK_EQ_INT(ws_edit(root, "code.py", "a = 1", 5, "a = 9", 5, 0, &e), -ENOTUNIQ);
        CHECK(msg_has(&e, "occurs 2 times"));
        CHECK_EQ_INT(ws_edit(root, "code.py", "zzz", 3, "y", 1, 0, &e), -ENODATA);
        CHECK(msg_has(&e, "not found"));
        CHECK_EQ_INT(ws_edit(root, "code.py", "b = 2", 5, "b = 3 # new", 11, 0, &e), 0);
        s = slurp(root, "code.py", NULL);
        CHECK_EQ_STR(s, "a = 1\nb = 3 # new\na = 1\n");
        free(s);
        CHECK(fstatat(root, "code.py", &st, 0) == 0 && (st.st_mode & 0777) == 0600);
        CHECK_EQ_INT(ws_edit(root, "code.py", "\na = 1\n", 7, "", 0, 0, &e), 0);
        s = slurp(root, "code.py", NULL);
        CHECK_EQ_STR(s, "a = 1\nb = 3 # new");
        free(s);
        /* overlapping occurrences are ambiguous too */
        puts_at(root, "aaa", "aaa");
        CHECK_EQ_INT(ws_edit(root, "aaa", "aa", 2, "b", 1, 0, &e), -ENOTUNIQ);
        CHECK_EQ_INT(ws_edit(root, "code.py", "", 0, "x", 1, 0, &e), -EINVAL);
        CHECK_EQ_INT(ws_edit(root, "secret-link", "secret", 6, "owned", 5, 0, &e), -ELOOP);
        CHECK_EQ_INT(ws_edit(root, "out/secret", "secret", 6, "owned", 5, 0, &e), -ELOOP);
        CHECK_EQ_INT(ws_edit(root, "fifo", "a", 1, "b", 1, 0, &e), -EINVAL);
        CHECK_EQ_INT(ws_edit(root, "adir", "a", 1, "b", 1, 0, &e), -EISDIR);
        CHECK_EQ_INT(ws_edit(root, "missing.py", "a", 1, "b", 1, 0, &e), -ENOENT);
        CHECK(no_temp_files(root));
        CHECK(canary_intact());
}

/* ---- glob ---- */

static bool result_is(const ws_glob_result *r, const char *const *want, size_t n) {
        bool ok = r->count == n;
        for (size_t i = 0; ok && i < n; i++)
                ok = strcmp(r->paths[i], want[i]) == 0;
        if (!ok)
                for (size_t i = 0; i < r->count; i++)
                        printf("# got %s\n", r->paths[i]);
        return ok;
}

static void test_glob_match(void) {
        CHECK(ws_glob_match("*.py", "a.py", false));
        CHECK(!ws_glob_match("*.py", ".a.py", false));
        CHECK(ws_glob_match("*.py", ".a.py", true));
        CHECK(ws_glob_match(".*.py", ".a.py", false));
        CHECK(!ws_glob_match("*.py", "d/a.py", false));
        CHECK(ws_glob_match("**/x", "x", false));
        CHECK(ws_glob_match("**/x", "a/b/x", false));
        CHECK(!ws_glob_match("**/x", "a/.git/x", false));
        CHECK(ws_glob_match("a/**/b", "a/b", false));
        CHECK(ws_glob_match("a/**/b", "a/x/y/b", false));
        CHECK(ws_glob_match("a/**", "a/x/y", false));
        CHECK(ws_glob_match("[a-c]?.txt", "b\xc3\xa9.txt", false));
        CHECK(!ws_glob_match("[!a]*", "abc", false));
        CHECK(ws_glob_match("[!a]*", "bbc", false));
        CHECK(ws_glob_match("\\*", "*", false));
        CHECK(!ws_glob_match("\\*", "x", false));
        CHECK(ws_glob_match("[]]", "]", false));
        CHECK(ws_glob_match("a[", "a[", false));
        CHECK(ws_glob_match("**/**/**/c", "a/b/c", false));
        CHECK(!ws_glob_match("../*", "x", false));
        /* no exponential blow-up on many stars */
        char name[256];
        memset(name, 'a', 255);
        name[255] = '\0';
        double t0 = now_ms();
        CHECK(!ws_glob_match("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", name, false));
        CHECK(now_ms() - t0 < 100);
}

static void test_glob(void) {
        hull_error e = {0};
        ws_glob_result r = {0};
        int root = fresh_ws("glob");
        mkdirat(root, "src", 0755);
        mkdirat(root, "src/sub", 0755);
        mkdirat(root, ".git", 0755);
        puts_at(root, "src/a.py", "x");
        puts_at(root, "src/b.txt", "x");
        puts_at(root, "src/sub/c.py", "x");
        puts_at(root, "src/.hidden.py", "x");
        puts_at(root, ".git/config", "x");
        puts_at(root, "top.py", "x");
        symlinkat(outside, root, "link_out");
        symlinkat("a.py", root, "src/link.py");
        mkfifoat(root, "src/pipe.py", 0644);

        static const char *const py[] = {"src/a.py", "src/link.py", "src/pipe.py", "src/sub/c.py", "top.py"};
        CHECK_EQ_INT(ws_glob(root, "**/*.py", NULL, &r, &e), 0);
        CHECK(result_is(&r, py, 5));
        CHECK_EQ_INT(r.stopped, 0);
        ws_glob_result_done(&r);

        static const char *const top[] = {"top.py"};
        CHECK_EQ_INT(ws_glob(root, "*.py", NULL, &r, &e), 0);
        CHECK(result_is(&r, top, 1));
        ws_glob_result_done(&r);

        static const char *const src[] = {"src/a.py", "src/b.txt", "src/link.py", "src/pipe.py", "src/sub/"};
        CHECK_EQ_INT(ws_glob(root, "src/*", NULL, &r, &e), 0);
        CHECK(result_is(&r, src, 5));
        ws_glob_result_done(&r);

        /* a link to a directory is listed, never entered */
        static const char *const lnk[] = {"link_out"};
        CHECK_EQ_INT(ws_glob(root, "link_out/**", NULL, &r, &e), 0);
        CHECK(result_is(&r, lnk, 1));
        ws_glob_result_done(&r);
        CHECK_EQ_INT(ws_glob(root, "**/secret", NULL, &r, &e), 0);
        CHECK_EQ_INT(r.count, 0);
        ws_glob_result_done(&r);

        ws_glob_opts hidden = {.hidden = true};
        CHECK_EQ_INT(ws_glob(root, "**/*.py", &hidden, &r, &e), 0);
        CHECK_EQ_INT(r.count, 6);
        ws_glob_result_done(&r);
        CHECK_EQ_INT(ws_glob(root, "**", &hidden, &r, &e), 0);
        CHECK_EQ_INT(r.count, 12);
        ws_glob_result_done(&r);

        ws_glob_opts few = {.results_max = 2};
        CHECK_EQ_INT(ws_glob(root, "**", &few, &r, &e), 0);
        CHECK_EQ_INT(r.count, 2);
        CHECK(r.stopped & WS_STOP_RESULTS);
        CHECK(ws_stop_reason(r.stopped) != NULL);
        ws_glob_result_done(&r);
        ws_glob_opts small = {.entries_max = 3};
        CHECK_EQ_INT(ws_glob(root, "**", &small, &r, &e), 0);
        CHECK(r.stopped & WS_STOP_ENTRIES);
        ws_glob_result_done(&r);

        CHECK_EQ_INT(ws_glob(root, "../*", NULL, &r, &e), -EPERM);
        CHECK_EQ_INT(ws_glob(root, "/etc/*", NULL, &r, &e), -EPERM);
        CHECK_EQ_INT(ws_glob(root, ".", NULL, &r, &e), -EINVAL);
        ws_glob_opts bad = {.results_max = WS_GLOB_RESULTS_MAX + 1};
        CHECK_EQ_INT(ws_glob(root, "**", &bad, &r, &e), -EINVAL);

        /* a tree deeper than the path rules allow is cut, and says so */
        int d = openat(root, ".", O_RDONLY | O_DIRECTORY);
        for (unsigned i = 0; i < WS_PATH_DEPTH_MAX + 6; i++) {
                mkdirat(d, "d", 0755);
                int n = openat(d, "d", O_RDONLY | O_DIRECTORY);
                close(d);
                d = n;
        }
        puts_at(d, "zz", "deep");
        close(d);
        CHECK_EQ_INT(ws_glob(root, "**/zz", NULL, &r, &e), 0);
        CHECK_EQ_INT(r.count, 0);
        CHECK(r.stopped & WS_STOP_DEPTH);
        ws_glob_result_done(&r);
        close(root);
        CHECK(canary_intact());
}

/* ---- grep ---- */

static void fill_file(int dfd, const char *name, size_t total, const char *line) {
        size_t ll = strlen(line);
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        char *buf = malloc(1 << 20);
        size_t used = 0;
        for (size_t done = 0; done < total; done += ll) {
                if (used + ll > (1 << 20)) {
                        write(fd, buf, used);
                        used = 0;
                }
                memcpy(buf + used, line, ll);
                used += ll;
        }
        write(fd, buf, used);
        free(buf);
        close(fd);
}

static void test_grep(void) {
        hull_error e = {0};
        ws_grep_result r = {0};
        char p[256];
        int root = fresh_ws("grep");
        mkdirat(root, "src", 0755);
        mkdirat(root, ".hidden", 0755);
        puts_at(root, "src/a.py", "def foo():\n    return 1\n");
        puts_at(root, "src/b.txt", "foo bar\nbaz\r\nlast foo");
        put(root, "src/bin.dat", "foo\0bar\n", 8);
        puts_at(root, ".hidden/x", "foo\n");
        snprintf(p, sizeof(p), "%s/secret", outside);
        symlinkat(p, root, "src/secret-link");
        symlinkat(outside, root, "out");
        mkfifoat(root, "src/fifo", 0644);

        CHECK_EQ_INT(ws_grep(root, "foo", NULL, &r, &e), 0);
        CHECK_EQ_INT(r.count, 3);
        if (r.count == 3) {
                CHECK_EQ_STR(r.matches[0].path, "src/a.py");
                CHECK_EQ_INT(r.matches[0].line, 1);
                CHECK_EQ_INT(r.matches[0].column, 5);
                CHECK_EQ_STR(r.matches[0].text, "def foo():");
                CHECK_EQ_STR(r.matches[1].path, "src/b.txt");
                CHECK_EQ_INT(r.matches[1].line, 1);
                CHECK_EQ_INT(r.matches[2].line, 3);
                CHECK_EQ_STR(r.matches[2].text, "last foo");
        }
        CHECK_EQ_INT(r.files_binary, 1);
        CHECK_EQ_INT(r.files_searched, 2);
        CHECK_EQ_INT(r.stopped, 0);
        ws_grep_result_done(&r);

        ws_grep_opts o = {.ignore_case = true, .glob = "*.py"};
        CHECK_EQ_INT(ws_grep(root, "FOO", &o, &r, &e), 0);
        CHECK(r.count == 1 && strcmp(r.matches[0].path, "src/a.py") == 0);
        ws_grep_result_done(&r);
        ws_grep_opts crlf = {.path = "src/b.txt"};
        CHECK_EQ_INT(ws_grep(root, "baz$", &crlf, &r, &e), 0);
        CHECK(r.count == 1 && r.matches[0].line == 2 && strcmp(r.matches[0].path, "src/b.txt") == 0);
        ws_grep_result_done(&r);
        ws_grep_opts hid = {.hidden = true};
        CHECK_EQ_INT(ws_grep(root, "foo", &hid, &r, &e), 0);
        CHECK_EQ_INT(r.count, 4);
        ws_grep_result_done(&r);
        ws_grep_opts one = {.matches_max = 1};
        CHECK_EQ_INT(ws_grep(root, "foo", &one, &r, &e), 0);
        CHECK(r.count == 1 && (r.stopped & WS_STOP_RESULTS));
        ws_grep_result_done(&r);

        ws_grep_opts through = {.path = "out"};
        CHECK_EQ_INT(ws_grep(root, "secret", &through, &r, &e), -ELOOP);
        ws_grep_opts up = {.path = "../outside"};
        CHECK_EQ_INT(ws_grep(root, "secret", &up, &r, &e), -EPERM);
        ws_grep_opts fifo = {.path = "src/fifo"};
        CHECK_EQ_INT(ws_grep(root, "x", &fifo, &r, &e), -EINVAL);
        CHECK_EQ_INT(ws_grep(root, "(", NULL, &r, &e), -EINVAL);
        CHECK(msg_has(&e, "offset"));
        CHECK_EQ_INT(ws_grep(root,
                             "((((((((((((((((((((((((((((((((((((((((((((((((((((x))))))))))))))))))))))))))))))))))))"
                             "))))))))))))))))",
                             NULL, &r, &e),
                     -EINVAL);

        /* long lines: only the head is searched; the text is a window around the match */
        char *lng = malloc(20001);
        memset(lng, 'x', 20000);
        memcpy(lng + 3000, "needle", 6);
        memcpy(lng + 15000, "hidden", 6);
        lng[20000] = '\0';
        puts_at(root, "long.txt", lng);
        free(lng);
        ws_grep_opts lo = {.path = "long.txt"};
        CHECK_EQ_INT(ws_grep(root, "needle|hidden", &lo, &r, &e), 0);
        CHECK_EQ_INT(r.count, 1);
        if (r.count == 1) {
                CHECK(r.matches[0].text_cut);
                CHECK(r.matches[0].text_len <= WS_GREP_TEXT_MAX);
                CHECK(strstr(r.matches[0].text, "needle") != NULL);
                CHECK_EQ_INT(r.matches[0].column, 3001);
        }
        CHECK_EQ_INT(r.lines_long, 1);
        ws_grep_result_done(&r);

        /* a 10 MB file of ordinary text is searched completely and fast */
        mkdirat(root, "big", 0755);
        fill_file(root, "big/text.txt", 10 << 20, "the quick brown fox jumps over the lazy dog\n");
        puts_at(root, "big/zz-end.txt", "the end is here\n");
        ws_grep_opts bo = {.path = "big"};
        double t0 = now_ms();
        CHECK_EQ_INT(ws_grep(root, "end is", &bo, &r, &e), 0);
        printf("# 10 MB literal search: %.0f ms\n", now_ms() - t0);
        CHECK_EQ_INT(r.count, 1);
        CHECK_EQ_INT(r.stopped, 0);
        ws_grep_result_done(&r);
        ws_grep_opts bytes = {.path = "big", .bytes_max = 1 << 20};
        CHECK_EQ_INT(ws_grep(root, "end is", &bytes, &r, &e), 0);
        CHECK(r.stopped & WS_STOP_BYTES);
        CHECK(r.bytes_read <= 1 << 20);
        ws_grep_result_done(&r);

        /* catastrophic regexes on 10 MB of adversarial input end within the budget */
        mkdirat(root, "evil", 0755);
        char line[4097];
        memset(line, 'a', 4094);
        line[4094] = '!';
        line[4095] = '\n';
        line[4096] = '\0';
        fill_file(root, "evil/anchored.txt", 10 << 20, line);
        for (int i = 0; i < 4094; i++)
                line[i] = i % 16 == 15 ? '!' : 'a'; /* the per-start-position worst case */
        fill_file(root, "evil/segments.txt", 10 << 20, line);
        const char *pats[] = {"^(a+)+$", "(a+)+$", "(*NO_JIT)(a+)+$", "(a|aa)+$", "(.*a){12}$"};
        for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
                ws_grep_opts ev = {.path = "evil", .time_ms = 1000};
                t0 = now_ms();
                int rc = ws_grep(root, pats[i], &ev, &r, &e);
                double dt = now_ms() - t0;
                printf("# %s: %.0f ms, %llu bytes, %llu lines limited, stopped: %s\n", pats[i], dt,
                       (unsigned long long) r.bytes_read, (unsigned long long) r.lines_limited,
                       rc == 0 && r.stopped ? ws_stop_reason(r.stopped) : "no");
                CHECK_EQ_INT(rc, 0);
                CHECK(dt < 2000);
                CHECK(r.stopped & (WS_STOP_TIME | WS_STOP_MATCH_LIMIT));
                ws_grep_result_done(&r);
        }
        close(root);
        CHECK(canary_intact());
}

/* ---- persist and hydrate ---- */

/* Compare two trees: types, permission bits, file bytes, link targets. Returns differences. */
static int tree_diff(int a, int b, const char *rel) {
        int diffs = 0;
        DIR *d = fdopendir(dup(a));
        rewinddir(d);
        int nb = 0, na = 0;
        for (struct dirent *de; (de = readdir(d));) {
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                na++;
                struct stat sa, sb;
                fstatat(a, de->d_name, &sa, AT_SYMLINK_NOFOLLOW);
                if (fstatat(b, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
                        printf("# missing %s/%s\n", rel, de->d_name);
                        diffs++;
                        continue;
                }
                if ((sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT) ||
                    (!S_ISLNK(sa.st_mode) && (sa.st_mode & 0777) != (sb.st_mode & 0777))) {
                        printf("# mode differs %s/%s: %o %o\n", rel, de->d_name, sa.st_mode, sb.st_mode);
                        diffs++;
                        continue;
                }
                if (S_ISREG(sa.st_mode)) {
                        size_t la, lb;
                        char *ca = slurp(a, de->d_name, &la), *cb = slurp(b, de->d_name, &lb);
                        if (!ca || !cb || la != lb || memcmp(ca, cb, la) != 0 || sa.st_mtime != sb.st_mtime) {
                                printf("# content differs %s/%s\n", rel, de->d_name);
                                diffs++;
                        }
                        free(ca);
                        free(cb);
                } else if (S_ISLNK(sa.st_mode)) {
                        char ta[4096] = {0}, tb[4096] = {0};
                        readlinkat(a, de->d_name, ta, sizeof(ta) - 1);
                        readlinkat(b, de->d_name, tb, sizeof(tb) - 1);
                        if (strcmp(ta, tb) != 0) {
                                printf("# link differs %s/%s\n", rel, de->d_name);
                                diffs++;
                        }
                } else if (S_ISDIR(sa.st_mode)) {
                        int ca = openat(a, de->d_name, O_RDONLY | O_DIRECTORY),
                            cb = openat(b, de->d_name, O_RDONLY | O_DIRECTORY);
                        char sub[4096];
                        snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name);
                        diffs += tree_diff(ca, cb, sub);
                        close(ca);
                        close(cb);
                }
        }
        closedir(d);
        d = fdopendir(dup(b));
        rewinddir(d);
        for (struct dirent *de; (de = readdir(d));)
                if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        nb++;
        closedir(d);
        if (na != nb) {
                printf("# %s: %d entries vs %d\n", rel, na, nb);
                diffs++;
        }
        return diffs;
}

static void test_round_trip(void) {
        hull_error e = {0};
        ws_tar_stats st = {0}, st2 = {0};
        void *buf = NULL;
        size_t len = 0;
        int src = fresh_ws("rt-src");
        mkdirat(src, "pkg", 0755);
        mkdirat(src, "pkg/deep", 0700);
        mkdirat(src, "pkg/deep/er", 0755);
        mkdirat(src, "empty-dir", 0755);
        puts_at(src, "pkg/__init__.py", "print('hi')\n");
        char bin[3000];
        for (size_t i = 0; i < sizeof(bin); i++)
                bin[i] = (char) (i * 7);
        put(src, "pkg/deep/er/blob.bin", bin, sizeof(bin));
        puts_at(src, "empty", "");
        puts_at(src, "run.sh", "#!/bin/sh\necho hi\n");
        fchmodat(src, "run.sh", 0755, 0);
        puts_at(src, "caf\xc3\xa9.txt", "non-ASCII name\n");
        puts_at(src, "raw\xff.txt", "invalid UTF-8 name\n");
        char longname[200];
        memset(longname, 'L', 150);
        strcpy(longname + 150, ".txt");
        puts_at(src, longname, "long name\n");
        symlinkat("pkg/__init__.py", src, "rel-link");
        symlinkat("/usr/bin/python3", src, "python");
        symlinkat("../../etc/passwd", src, "dangling-out");
        linkat(src, "run.sh", src, "run-hard.sh", 0);

        CHECK_EQ_INT(ws_persist_mem(src, NULL, &buf, &len, &st, &e), 0);
        CHECK_EQ_INT(st.files, 8);
        CHECK_EQ_INT(st.dirs, 4);
        CHECK_EQ_INT(st.symlinks, 3);
        CHECK_EQ_INT(st.skipped, 0);
        int dst = fresh_ws("rt-dst");
        CHECK_EQ_INT(ws_hydrate_mem(dst, buf, len, NULL, &st2, &e), 0);
        CHECK_EQ_INT(st2.files, 8);
        CHECK_EQ_INT(st2.dirs, 4);
        CHECK_EQ_INT(st2.symlinks, 3);
        CHECK_EQ_INT(st2.bytes, st.bytes);
        CHECK_EQ_INT(tree_diff(src, dst, "."), 0);
        /* hydrating again never overwrites */
        CHECK_EQ_INT(ws_hydrate_mem(dst, buf, len, NULL, NULL, &e), -EEXIST);
        CHECK(msg_has(&e, "already exists"));
        free(buf);

        /* through an fd, with a FIFO and a socket-free tree: the FIFO is skipped, no hang */
        mkfifoat(src, "pipe", 0644);
        char tarpath[256];
        snprintf(tarpath, sizeof(tarpath), "%s/snap.tar", base);
        int out = open(tarpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
        CHECK_EQ_INT(ws_persist_fd(src, out, NULL, &st, &e), 0);
        CHECK_EQ_INT(st.skipped, 1);
        lseek(out, 0, SEEK_SET);
        int dst2 = fresh_ws("rt-dst2");
        CHECK_EQ_INT(ws_hydrate_fd(dst2, out, NULL, NULL, &e), 0);
        close(out);
        unlinkat(src, "pipe", 0);
        CHECK_EQ_INT(tree_diff(src, dst2, "."), 0);

        /* caps: size and entries; a persist that does not fit fails instead of truncating */
        char big[20000];
        memset(big, 'b', sizeof(big));
        put(src, "big.bin", big, sizeof(big));
        ws_tar_limits tiny = {.bytes_max = 10000};
        CHECK_EQ_INT(ws_persist_mem(src, &tiny, &buf, &len, NULL, &e), -EFBIG);
        ws_tar_limits few = {.entries_max = 3};
        CHECK_EQ_INT(ws_persist_mem(src, &few, &buf, &len, NULL, &e), -E2BIG);
        close(src);
        close(dst);
        close(dst2);
        CHECK(canary_intact());
}

/* ---- crafted archives ---- */

typedef struct tarbuf {
        char *buf;
        size_t used, cap;
        struct archive *a;
} tarbuf;

static void tb_start(tarbuf *t) {
        t->cap = 4 << 20;
        t->buf = calloc(1, t->cap);
        t->used = 0;
        t->a = archive_write_new();
        archive_write_set_format_pax_restricted(t->a);
        archive_write_set_bytes_in_last_block(t->a, 1);
        archive_write_open_memory(t->a, t->buf, t->cap, &t->used);
}

static void tb_add(tarbuf *t, const char *path, unsigned type, const char *data, const char *symlink,
                   const char *hardlink, dev_t rdev) {
        struct archive_entry *en = archive_entry_new();
        archive_entry_copy_pathname(en, path);
        archive_entry_set_perm(en, 0644);
        if (hardlink)
                archive_entry_copy_hardlink(en, hardlink);
        else
                archive_entry_set_filetype(en, type);
        if (symlink)
                archive_entry_copy_symlink(en, symlink);
        if (rdev)
                archive_entry_set_rdev(en, rdev);
        archive_entry_set_size(en, data ? (la_int64_t) strlen(data) : 0);
        if (archive_write_header(t->a, en) != ARCHIVE_OK)
                printf("# writing %s: %s\n", path, archive_error_string(t->a));
        if (data)
                archive_write_data(t->a, data, strlen(data));
        archive_entry_free(en);
}

static void tb_end(tarbuf *t) {
        archive_write_close(t->a);
        archive_write_free(t->a);
}

/* A hand-made ustar header (libarchive's writer will not declare a size it is not given). */
static void ustar(char h[512], const char *name, char type, unsigned long long size, const char *link) {
        unsigned sum = 0;
        memset(h, 0, 512);
        snprintf(h, 100, "%s", name);
        memcpy(h + 100, "0000644", 7);
        memcpy(h + 108, "0000000", 7);
        memcpy(h + 116, "0000000", 7);
        snprintf(h + 124, 12, "%011llo", size);
        memcpy(h + 136, "00000000000", 11);
        h[156] = type;
        if (link)
                snprintf(h + 157, 100, "%s", link);
        memcpy(h + 257, "ustar", 6);
        memcpy(h + 263, "00", 2);
        memset(h + 148, ' ', 8);
        for (int i = 0; i < 512; i++)
                sum += (unsigned char) h[i];
        snprintf(h + 148, 8, "%06o", sum);
        h[155] = ' ';
}

/* Hydrate t into a fresh workspace; returns the result, checks the canary. */
static int hydrate_into(const char *ws, tarbuf *t, const ws_tar_limits *lim, hull_error *e, int *ret_root) {
        int root = fresh_ws(ws);
        int r = ws_hydrate_mem(root, t->buf, t->used, lim, NULL, e);
        printf("# %s: %d %s\n", ws, r, r < 0 ? e->msg : "");
        if (ret_root)
                *ret_root = root;
        else
                close(root);
        CHECK(canary_intact());
        return r;
}

/* Crafted archives: absolute paths and ".." out of the workspace. */
static void crafted_paths(void) {
        hull_error e = {0};
        tarbuf t;
        char p[256], abs_target[256];

        snprintf(abs_target, sizeof(abs_target), "%s/abs-escape", base);
        tb_start(&t);
        tb_add(&t, abs_target, AE_IFREG, "pwned\n", NULL, NULL, 0);
        tb_end(&t);
        CHECK_EQ_INT(hydrate_into("c-abs", &t, NULL, &e, NULL), -EPERM);
        CHECK(msg_has(&e, "is absolute"));
        CHECK(!exists(abs_target));
        free(t.buf);

        tb_start(&t);
        tb_add(&t, "ok.txt", AE_IFREG, "fine\n", NULL, NULL, 0);
        tb_add(&t, "../escape.txt", AE_IFREG, "pwned\n", NULL, NULL, 0);
        tb_end(&t);
        CHECK_EQ_INT(hydrate_into("c-dotdot", &t, NULL, &e, NULL), -EPERM);
        CHECK(msg_has(&e, "leaves the workspace"));
        snprintf(p, sizeof(p), "%s/escape.txt", base);
        CHECK(!exists(p));
        free(t.buf);

        tb_start(&t);
        tb_add(&t, "a/b/../../../../outside/x", AE_IFREG, "pwned\n", NULL, NULL, 0);
        tb_end(&t);
        CHECK_EQ_INT(hydrate_into("c-dotdot2", &t, NULL, &e, NULL), -EPERM);
        free(t.buf);
}

/* Crafted archives: symbolic links out (in the archive or planted before), hard links. */
static void crafted_links(void) {
        hull_error e = {0};
        tarbuf t;
        int root;

        /* a link out, then a file through it */
        tb_start(&t);
        tb_add(&t, "evil", AE_IFLNK, NULL, outside, NULL, 0);
        tb_add(&t, "evil/pwned", AE_IFREG, "pwned\n", NULL, NULL, 0);
        tb_end(&t);
        CHECK_EQ_INT(hydrate_into("c-linkout", &t, NULL, &e, NULL), -ELOOP);
        CHECK(msg_has(&e, "symbolic link"));
        free(t.buf);
        /* the same with a directory entry through the link, and with a relative link */
        tb_start(&t);
        tb_add(&t, "up", AE_IFLNK, NULL, "../outside", NULL, 0);
        tb_add(&t, "up/newdir", AE_IFDIR, NULL, NULL, NULL, 0);
        tb_add(&t, "up/newdir/f", AE_IFREG, "pwned\n", NULL, NULL, 0);
        tb_end(&t);
        CHECK_EQ_INT(hydrate_into("c-linkout2", &t, NULL, &e, NULL), -ELOOP);
        free(t.buf);

        /* a link planted by sandboxed code before the hydrate: evil -> /etc, then evil/... */
        tb_start(&t);
        tb_add(&t, "evil/hull-ws-test-canary", AE_IFREG, "pwned\n", NULL, NULL, 0);
        tb_add(&t, "evil2/secret", AE_IFREG, "pwned\n", NULL, NULL, 0);
        tb_end(&t);
        root = fresh_ws("c-planted");
        symlinkat("/etc", root, "evil");
        CHECK_EQ_INT(ws_hydrate_mem(root, t.buf, t.used, NULL, NULL, &e), -ELOOP);
        CHECK(!exists("/etc/hull-ws-test-canary"));
        unlink("/etc/hull-ws-test-canary"); /* only if the test failed */
        unlinkat(root, "evil", 0);
        symlinkat(outside, root, "evil");
        symlinkat(outside, root, "evil2");
        CHECK_EQ_INT(ws_hydrate_mem(root, t.buf, t.used, NULL, NULL, &e), -ELOOP);
        close(root);
        CHECK(canary_intact());
        free(t.buf);

        /* hard links: to an absolute path, out with "..", through a link, to a missing file */
        const char *hard[] = {"/etc/passwd", "../outside/secret", "lnk/secret", "nothing-here"};
        const int want[] = {-EPERM, -EPERM, -ELOOP, -EPERM};
        for (size_t i = 0; i < 4; i++) {
                tb_start(&t);
                tb_add(&t, "lnk", AE_IFLNK, NULL, outside, NULL, 0);
                tb_add(&t, "h", AE_IFREG, NULL, NULL, hard[i], 0);
                tb_end(&t);
                CHECK_EQ_INT(hydrate_into("c-hard", &t, NULL, &e, &root), want[i]);
                CHECK(!exists_at(root, "h"));
                close(root);
                free(t.buf);
        }
        /* a hard link inside is fine and shares the inode */
        tb_start(&t);
        tb_add(&t, "f", AE_IFREG, "data\n", NULL, NULL, 0);
        tb_add(&t, "d/g", AE_IFREG, NULL, NULL, "f", 0);
        tb_end(&t);
        CHECK_EQ_INT(hydrate_into("c-hard-ok", &t, NULL, &e, &root), 0);
        struct stat s1, s2;
        CHECK(fstatat(root, "f", &s1, 0) == 0 && fstatat(root, "d/g", &s2, 0) == 0 && s1.st_ino == s2.st_ino);
        close(root);
        free(t.buf);
}

/* Crafted archives: special files, sizes and counts over the caps, duplicates, garbage. */
static void crafted_others(void) {
        hull_error e = {0};
        tarbuf t;
        char p[256];
        int root;

        /* device nodes, FIFOs, sockets */
        const unsigned types[] = {AE_IFCHR, AE_IFBLK, AE_IFIFO};
        for (size_t i = 0; i < 3; i++) {
                tb_start(&t);
                tb_add(&t, "dev", types[i], NULL, NULL, NULL, makedev(1, 3));
                tb_end(&t);
                CHECK_EQ_INT(hydrate_into("c-dev", &t, NULL, &e, &root), -EPERM);
                CHECK(!exists_at(root, "dev"));
                close(root);
                free(t.buf);
        }

        /* a huge declared size (8 GiB, no data): refused before reading anything */
        t.cap = 3 * 512;
        t.buf = calloc(1, t.cap);
        t.used = t.cap;
        ustar(t.buf, "huge.bin", '0', 077777777777ULL, NULL);
        double t0 = now_ms();
        CHECK_EQ_INT(hydrate_into("c-huge", &t, NULL, &e, &root), -EFBIG);
        CHECK(now_ms() - t0 < 1000);
        CHECK(!exists_at(root, "huge.bin"));
        close(root);
        free(t.buf);
        /* sizes under the per-file cap that add up over the total */
        tb_start(&t);
        tb_add(&t, "a", AE_IFREG, "0123456789", NULL, NULL, 0);
        tb_add(&t, "b", AE_IFREG, "0123456789", NULL, NULL, 0);
        tb_end(&t);
        ws_tar_limits caps = {.bytes_max = 15, .file_bytes_max = 12};
        CHECK_EQ_INT(hydrate_into("c-total", &t, &caps, &e, NULL), -EFBIG);
        ws_tar_limits caps2 = {.file_bytes_max = 5};
        CHECK_EQ_INT(hydrate_into("c-file", &t, &caps2, &e, NULL), -EFBIG);
        free(t.buf);

        /* too many entries */
        tb_start(&t);
        for (int i = 0; i < 300; i++) {
                snprintf(p, sizeof(p), "d%03d", i);
                tb_add(&t, p, AE_IFDIR, NULL, NULL, NULL, 0);
        }
        tb_end(&t);
        ws_tar_limits ents = {.entries_max = 100};
        CHECK_EQ_INT(hydrate_into("c-many", &t, &ents, &e, NULL), -E2BIG);
        free(t.buf);

        /* duplicates never overwrite: not a file, not a link over a file */
        tb_start(&t);
        tb_add(&t, "./dup", AE_IFREG, "first\n", NULL, NULL, 0);
        tb_add(&t, "dup", AE_IFLNK, NULL, outside, NULL, 0);
        tb_end(&t);
        CHECK_EQ_INT(hydrate_into("c-dup", &t, NULL, &e, &root), -EEXIST);
        char *s = slurp(root, "dup", NULL);
        CHECK_EQ_STR(s, "first\n");
        free(s);
        close(root);
        free(t.buf);

        /* a file where a directory must go; garbage; a truncated archive */
        tb_start(&t);
        tb_add(&t, "f", AE_IFREG, "x", NULL, NULL, 0);
        tb_add(&t, "f/g", AE_IFREG, "x", NULL, NULL, 0);
        tb_end(&t);
        CHECK_EQ_INT(hydrate_into("c-notdir", &t, NULL, &e, NULL), -ENOTDIR);
        t.used = 700; /* cut inside the second header's data */
        CHECK(hydrate_into("c-trunc", &t, NULL, &e, NULL) < 0);
        free(t.buf);
        t.buf = strdup("this is not a tar archive at all, just some bytes that go on for a while ..........");
        t.used = strlen(t.buf);
        CHECK_EQ_INT(hydrate_into("c-garbage", &t, NULL, &e, NULL), -EINVAL);
        free(t.buf);
}

static void test_crafted(void) {
        crafted_paths();
        crafted_links();
        crafted_others();
}

/* Sandboxed code swapping a directory and a link to the canary (RENAME_EXCHANGE) as fast as it
 * can while the host writes, edits, reads and hydrates below that directory: every operation
 * either lands in the real directory or is refused; the canary never changes. */
static void test_race(void) {
        hull_error e = {0};
        ws_read_result rr = {0};
        tarbuf t;
        char name[64];
        int root = fresh_ws("race");
        mkdirat(root, "d", 0755);
        puts_at(root, "d/f", "x\n");
        symlinkat(outside, root, "l");
        pid_t pid = fork();
        if (pid == 0) {
                double end = now_ms() + 600;
                while (now_ms() < end)
                        renameat2(root, "d", root, "l", RENAME_EXCHANGE);
                _exit(0);
        }
        unsigned ok = 0, refused = 0;
        double end = now_ms() + 500;
        for (unsigned i = 0; now_ms() < end; i++) {
                snprintf(name, sizeof(name), "d/w%u", i);
                *(ws_write(root, name, "w\n", 2, WS_WRITE_MKDIRS, &e) == 0 ? &ok : &refused) += 1;
                *(ws_edit(root, "d/f", "x", 1, "x", 1, 0, &e) == 0 ? &ok : &refused) += 1;
                if (ws_read(root, "d/f", 0, 0, &rr, &e) == 0) {
                        ok++;
                        ws_read_result_done(&rr);
                } else
                        refused++;
                tb_start(&t);
                snprintf(name, sizeof(name), "d/h%u", i);
                tb_add(&t, name, AE_IFREG, "h\n", NULL, NULL, 0);
                tb_end(&t);
                *(ws_hydrate_mem(root, t.buf, t.used, NULL, NULL, &e) == 0 ? &ok : &refused) += 1;
                free(t.buf);
        }
        waitpid(pid, NULL, 0);
        printf("# race: %u operations done, %u refused\n", ok, refused);
        CHECK(ok > 0);
        CHECK(canary_intact());
        close(root);
}

int main(void) {
        char p[256];
        alarm(120); /* a hang (a FIFO opened for reading, a runaway regex) fails the test */
        snprintf(base, sizeof(base), "/tmp/hull-test-ws.XXXXXX");
        if (!mkdtemp(base))
                return 1;
        snprintf(outside, sizeof(outside), "%s/outside", base);
        mkdir(outside, 0755);
        snprintf(p, sizeof(p), "%s/secret", outside);
        int fd = open(p, O_WRONLY | O_CREAT, 0644);
        write(fd, "secret foo\n", 11);
        close(fd);
        int root = fresh_ws("ws");

        test_path_check();
        test_path_resolve(root);
        test_open(root);
        test_read(root);
        test_write(root);
        test_edit(root);
        test_glob_match();
        test_glob();
        test_grep();
        test_round_trip();
        test_crafted();
        test_race();

        close(root);
        CHECK(canary_intact());
        CHECK_EQ_INT(rm_rf_at(AT_FDCWD, base), 0);
        return test_done();
}
