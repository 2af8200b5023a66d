/* test-hd-exchange.c: the exchange directory's parsers and its jailed reader, with the sheath
 * vectors that apply (shared/reference/sheath-harness.md §8.3-8.5): forged lines, links and FIFOs
 * planted in the exchange directory, over-limit control data, a planted ".hull". Runs in a
 * temporary directory; needs no privilege. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "hd-exchange.h"
#include "test.h"

static char tmp[256];

static bool has_error(const hd_exchange *x, const char *needle) {
        for (size_t i = 0; i < x->n_errors; i++)
                if (strstr(x->errors[i], needle))
                        return true;
        return false;
}

static void show_errors(const hd_exchange *x) {
        for (size_t i = 0; i < x->n_errors; i++)
                printf("# error: %s\n", x->errors[i]);
}

static void write_file(int dir_fd, const char *name, const void *data, size_t len) {
        int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, data, len) != (ssize_t) len) {
                perror(name);
                exit(2);
        }
        close(fd);
}

static void write_str(int dir_fd, const char *name, const char *s) {
        write_file(dir_fd, name, s, strlen(s));
}

static void test_parse_new_handles(void) {
        hd_exchange x;
        hd_exchange_init(&x);
        const char *in = "{\"id\":\"t1\",\"kind\":\"table\",\"file\":\"1.sqlite\",\"source\":\"cell\"}\n"
                         "\n"
                         "{\"id\":\"evil1\",\"kind\":\"json\",\"file\":\"/etc/passwd\",\"source\":\"s\"}\n"
                         "{\"id\":\"evil2\",\"kind\":\"json\",\"file\":\"../secret.txt\",\"source\":\"s\"}\n"
                         "{\"id\":\"evil3\",\"kind\":\"json\",\"file\":[\"a\"],\"source\":\"s\"}\n"
                         "{\"id\":\"evil4\",\"kind\":\"json\",\"file\":\"a\\u0000b\",\"source\":\"s\"}\n"
                         "{\"id\":\"../x\",\"kind\":\"json\",\"file\":\"5.json\",\"source\":\"s\"}\n"
                         "{\"id\":\"k\",\"kind\":\"exe\",\"file\":\"6.bin\",\"source\":\"s\"}\n"
                         "{\"id\":\"m\",\"kind\":\"json\",\"file\":\"emit.json\",\"source\":\"s\"}\n"
                         "{\"id\":\"n\",\"kind\":\"json\",\"file\":\"7.json\",\"source\":\"s\",\"path\":\"/etc\"}\n"
                         "not json at all\n"
                         "{\"id\":\"t1\",\"kind\":\"json\",\"file\":\"8.json\",\"source\":\"s\"}\n"
                         "{\"id\":\"t2\",\"kind\":\"json\",\"file\":\"1.sqlite\",\"source\":\"s\"}\n"
                         "{\"id\":\"j.2-x_y\",\"kind\":\"json\",\"file\":\"2.json\",\"source\":\"run_python\"}";
        CHECK_EQ_INT(hd_exchange_parse_new_handles(in, strlen(in), 0, &x), 0);
        CHECK_EQ_INT(x.n_handles, 2);
        if (x.n_handles == 2) {
                CHECK_EQ_STR(x.handles[0].id, "t1");
                CHECK_EQ_STR(x.handles[0].kind, "table");
                CHECK_EQ_STR(x.handles[0].file, "1.sqlite");
                CHECK_EQ_STR(x.handles[0].source, "cell");
                CHECK_EQ_INT(x.handles[0].fd, -1);
                CHECK_EQ_STR(x.handles[1].id, "j.2-x_y");
                CHECK_EQ_STR(x.handles[1].source, "run_python");
        }
        CHECK_EQ_INT(x.n_errors, 11);
        CHECK(has_error(&x, "line 3: handle evil1: \"/etc/passwd\" is not a payload file name"));
        CHECK(has_error(&x, "line 4: handle evil2: \"../secret.txt\" is not a payload file name"));
        CHECK(has_error(&x, "line 5: \"file\" is not a string"));
        CHECK(has_error(&x, "line 6: not JSON")); /* \u0000 is refused by the JSON parser */
        CHECK(has_error(&x, "line 7: bad handle id \"../x\""));
        CHECK(has_error(&x, "line 8: handle k: unknown kind \"exe\""));
        CHECK(has_error(&x, "line 9: handle m: \"emit.json\" is not a payload file name"));
        CHECK(has_error(&x, "line 10: unknown key \"path\""));
        CHECK(has_error(&x, "line 11: not JSON"));
        CHECK(has_error(&x, "line 12: handle t1 is saved twice in this call"));
        CHECK(has_error(&x, "line 13: handle t2: file 1.sqlite is already handle t1"));
        show_errors(&x);
        hd_exchange_done(&x);
        CHECK(x.n_handles == 0 && x.handles == NULL && x.errors == NULL);

        /* a raw NUL byte, bad UTF-8, a duplicate key, a missing key, a too-long id, a control
         * character in a source, a line over the line cap */
        hd_exchange_init(&x);
        char raw[] = "{\"id\":\"a\",\"kind\":\"json\",\"file\":\"a\0b\",\"source\":\"s\"}\n"
                     "{\"id\":\"b\",\"kind\":\"json\",\"file\":\"\xff.json\",\"source\":\"s\"}\n"
                     "{\"id\":\"c\",\"id\":\"d\",\"kind\":\"json\",\"file\":\"c.json\",\"source\":\"s\"}\n"
                     "{\"id\":\"e\",\"kind\":\"json\",\"file\":\"e.json\"}\n"
                     "{\"id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"kind\":\"json\","
                     "\"file\":\"f.json\",\"source\":\"s\"}\n"
                     "{\"id\":\"g\",\"kind\":\"json\",\"file\":\"g.json\",\"source\":\"a\\nb\"}\n"
                     "{\"id\":\"ok\",\"kind\":\"binary\",\"file\":\"ok.bin\",\"source\":\"s\"}\n";
        CHECK_EQ_INT(hd_exchange_parse_new_handles(raw, sizeof(raw) - 1, 0, &x), 0);
        CHECK_EQ_INT(x.n_handles, 1);
        CHECK(x.n_handles == 1 && strcmp(x.handles[0].id, "ok") == 0);
        CHECK_EQ_INT(x.n_errors, 6);
        CHECK(has_error(&x, "line 1: not JSON"));
        CHECK(has_error(&x, "line 2: not JSON"));
        CHECK(has_error(&x, "line 3: not JSON"));
        CHECK(has_error(&x, "line 4: \"source\" is missing"));
        CHECK(has_error(&x, "line 5: bad handle id"));
        CHECK(has_error(&x, "line 6: handle g: the source must be"));
        hd_exchange_done(&x);

        size_t big = HD_EXCHANGE_LINE_MAX + 100;
        char *longline = malloc(big + 1);
        memset(longline, ' ', big);
        memcpy(longline, "{\"id\":\"x\"}", 10);
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_parse_new_handles(longline, big, 0, &x), 0);
        CHECK(x.n_handles == 0 && has_error(&x, "line 1: longer than"));
        hd_exchange_done(&x);
        free(longline);

        /* §8.5: ten saves with a cap of two adopt two, with "too many new handles" */
        char ten[1024] = "";
        for (int i = 0; i < 10; i++) {
                char l[128];
                snprintf(l, sizeof(l), "{\"id\":\"h%d\",\"kind\":\"text\",\"file\":\"%d.txt\",\"source\":\"s\"}\n", i,
                         i);
                strcat(ten, l);
        }
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_parse_new_handles(ten, strlen(ten), 2, &x), 0);
        CHECK_EQ_INT(x.n_handles, 2);
        CHECK(has_error(&x, "too many new handles: 2 adopted, 8 more refused (at most 2 per call)"));
        show_errors(&x);
        hd_exchange_done(&x);

        /* the error list is bounded */
        hd_exchange_init(&x);
        char junk[4096] = "";
        for (int i = 0; i < 100; i++)
                strcat(junk, "x\n");
        CHECK_EQ_INT(hd_exchange_parse_new_handles(junk, strlen(junk), 0, &x), 0);
        CHECK_EQ_INT(x.n_errors, HD_EXCHANGE_ERRORS_MAX);
        CHECK_EQ_INT(x.errors_dropped, 100 - HD_EXCHANGE_ERRORS_MAX);
        hd_exchange_done(&x);
}

static void test_parse_publish(void) {
        hd_exchange x;
        hd_exchange_init(&x);
        const char *in = "{\"path\":\"outputs/a.csv\",\"description\":\"the table\"}\n"
                         "{\"path\":\"/etc/hosts\",\"description\":\"\"}\n"
                         "{\"path\":\"../secret.txt\",\"description\":\"\"}\n"
                         "{\"path\":\"handles/_manifest.json\",\"description\":\"\"}\n"
                         "{\"path\":[\"outputs/a\"],\"description\":\"\"}\n"
                         "{\"path\":\"outputs/a\\u0000b\",\"description\":\"\"}\n"
                         "{\"path\":\"outputs/../.hull/x-0/emit.json\",\"description\":\"\"}\n"
                         "{\"path\":\"outputs\",\"description\":\"\"}\n"
                         "{\"path\":\"outputs/a\\nb\",\"description\":\"\"}\n"
                         "{\"path\":\"outputs/x\"}\n"
                         "not json\n"
                         "{\"path\":\"./outputs//sub/b.txt\",\"description\":\"x\"}\n";
        CHECK_EQ_INT(hd_exchange_parse_publish(in, strlen(in), 0, &x), 0);
        CHECK_EQ_INT(x.n_publish, 2);
        if (x.n_publish == 2) {
                CHECK_EQ_STR(x.publish[0].path, "outputs/a.csv");
                CHECK_EQ_STR(x.publish[0].description, "the table");
                CHECK_EQ_STR(x.publish[1].path, "outputs/sub/b.txt");
        }
        CHECK_EQ_INT(x.n_errors, 10);
        CHECK(has_error(&x, "line 2: \"/etc/hosts\" is not a path relative to /workspace"));
        CHECK(has_error(&x, "line 3: \"../secret.txt\" is not a path relative"));
        CHECK(has_error(&x, "line 4: \"handles/_manifest.json\" is not under outputs/"));
        CHECK(has_error(&x, "line 5: \"path\" is not a string"));
        CHECK(has_error(&x, "line 6: not JSON"));
        CHECK(has_error(&x, "line 7: \"outputs/../.hull/x-0/emit.json\" is not a path relative"));
        CHECK(has_error(&x, "line 8: \"outputs\" is not under outputs/"));
        CHECK(has_error(&x, "line 9: \"outputs/a?b\" is not a path relative"));
        CHECK(has_error(&x, "line 10: \"description\" is missing"));
        show_errors(&x);
        hd_exchange_done(&x);

        /* §8.3: more than 64 requests are dropped ("too many") */
        size_t cap = 65 * 64;
        char *many = malloc(cap), *p = many;
        for (int i = 0; i < 65; i++)
                p += snprintf(p, cap - (size_t) (p - many), "{\"path\":\"outputs/f%d\",\"description\":\"\"}\n", i);
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_parse_publish(many, (size_t) (p - many), 0, &x), 0);
        CHECK_EQ_INT(x.n_publish, 64);
        CHECK(has_error(&x, "too many publish requests: 64 accepted, 1 more refused"));
        hd_exchange_done(&x);
        free(many);

        char desc[HD_EXCHANGE_DESCRIPTION_MAX + 100];
        int n = snprintf(desc, sizeof(desc), "{\"path\":\"outputs/x\",\"description\":\"");
        memset(desc + n, 'd', HD_EXCHANGE_DESCRIPTION_MAX + 1);
        strcpy(desc + n + HD_EXCHANGE_DESCRIPTION_MAX + 1, "\"}");
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_parse_publish(desc, strlen(desc), 0, &x), 0);
        CHECK(x.n_publish == 0 && has_error(&x, "description of \"outputs/x\" is longer than"));
        hd_exchange_done(&x);
}

static void test_emit_and_rel(void) {
        hull_error e = {0};
        CHECK_EQ_INT(hd_exchange_check_emit("{\"a\":[1,2.5,null,\"\\u00e9\"]}", 27, NULL), 0);
        CHECK_EQ_INT(hd_exchange_check_emit("42", 2, NULL), 0);
        CHECK_EQ_INT(hd_exchange_check_emit("\"s\"", 3, NULL), 0);
        CHECK_EQ_INT(hd_exchange_check_emit("{\"a\": NaN}", 10, &e), -EBADMSG);
        CHECK(strstr(e.msg, "malformed emit payload") != NULL);
        CHECK_EQ_INT(hd_exchange_check_emit("{\"a\":1,\"a\":2}", 13, NULL), -EBADMSG);
        CHECK_EQ_INT(hd_exchange_check_emit("", 0, NULL), -EBADMSG);
        CHECK_EQ_INT(hd_exchange_check_emit("1 2", 3, NULL), -EBADMSG);
        CHECK_EQ_INT(hd_exchange_check_emit("\"a\0b\"", 5, NULL), -EBADMSG);

        CHECK(hd_exchange_rel_is_valid(".hull/x-0123456789abcdef"));
        CHECK(!hd_exchange_rel_is_valid(".hull/x-0123456789ABCDEF"));
        CHECK(!hd_exchange_rel_is_valid(".hull/x-0123456789abcde"));
        CHECK(!hd_exchange_rel_is_valid(".hull/x-0123456789abcdef0"));
        CHECK(!hd_exchange_rel_is_valid(".hull/../x-0123456789abc"));
        CHECK(!hd_exchange_rel_is_valid("/hull/x-0123456789abcdef"));
        CHECK(!hd_exchange_rel_is_valid(NULL));
}

static void on_alarm(int sig) {
        static const char msg[] = "not ok - the exchange reader hung (a FIFO?)\n";
        (void) sig;
        if (write(1, msg, sizeof(msg) - 1) < 0) {
        }
        _exit(1);
}

/* A fresh workspace in tmp/ws-N with a named exchange directory that is not there yet (as the
 * host leaves it); returns the workspace fd. */
static int new_workspace_named(const char *name, char rel[HD_EXCHANGE_REL_SIZE]) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", tmp, name);
        if (mkdir(path, 0755) < 0) {
                perror(path);
                exit(2);
        }
        int ws = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        hull_error e = {0};
        int r = hd_exchange_name(rel, &e);
        CHECK_EQ_INT(r, 0);
        if (r < 0) {
                printf("# %s\n", e.msg);
                exit(1);
        }
        return ws;
}

/* The same with the directory made as runtime/hull.py makes it on first use. */
static int new_workspace(const char *name, char rel[HD_EXCHANGE_REL_SIZE], int *ret_xfd) {
        int ws = new_workspace_named(name, rel);
        CHECK(mkdirat(ws, ".hull", 0755) == 0 || errno == EEXIST);
        CHECK(mkdirat(ws, rel, 0700) == 0);
        *ret_xfd = openat(ws, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return ws;
}

static void test_name_read_remove(void) {
        char rel[HD_EXCHANGE_REL_SIZE], rel2[HD_EXCHANGE_REL_SIZE];
        hull_error e = {0};
        struct stat st;
        hd_exchange x;

        /* a name only: nothing made, and reading it finds nothing, with no error and nothing to remove */
        int ws0 = new_workspace_named("ws-lazy", rel);
        CHECK(hd_exchange_rel_is_valid(rel));
        CHECK(fstatat(ws0, ".hull", &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_read(ws0, rel, NULL, &x, &e), 0);
        CHECK(x.absent && x.n_handles == 0 && !x.emitted && x.n_publish == 0 && x.n_errors == 0);
        hd_exchange_done(&x);
        CHECK(mkdirat(ws0, ".hull", 0755) == 0); /* .hull there, the call's directory not */
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_read(ws0, rel, NULL, &x, &e), 0);
        CHECK(x.absent && x.n_errors == 0);
        hd_exchange_done(&x);
        close(ws0);

        int xfd;
        int ws = new_workspace("ws-ok", rel, &xfd);
        CHECK(hd_exchange_rel_is_valid(rel));
        CHECK_EQ_INT(hd_exchange_name(rel2, &e), 0);
        CHECK(strcmp(rel, rel2) != 0 && hd_exchange_rel_is_valid(rel2));
        CHECK(mkdirat(ws, rel2, 0700) == 0);

        /* an empty exchange: nothing, no errors */
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_read(ws, rel2, NULL, &x, &e), 0);
        CHECK(!x.absent && x.n_handles == 0 && !x.emitted && x.n_publish == 0 && x.n_errors == 0);
        hd_exchange_done(&x);
        CHECK_EQ_INT(hd_exchange_remove(ws, rel2, &e), 0);
        CHECK(fstatat(ws, rel2, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
        CHECK_EQ_INT(hd_exchange_remove(ws, rel2, &e), 0); /* already gone: fine */

        /* a good call: two handles, an emit, a publish request */
        write_str(xfd, "1.json", "{\"a\": 1}");
        write_str(xfd, "2.txt", "hello");
        write_str(xfd, "new_handles.jsonl",
                  "{\"id\":\"res\",\"kind\":\"json\",\"file\":\"1.json\",\"source\":\"cell\"}\n"
                  "{\"id\":\"greeting\",\"kind\":\"text\",\"file\":\"2.txt\",\"source\":\"cell\"}\n");
        write_str(xfd, "emit.json", "{\"answer\": 42}");
        write_str(xfd, "publish.jsonl", "{\"path\":\"outputs/report.csv\",\"description\":\"the report\"}\n");
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_read(ws, rel, NULL, &x, &e), 0);
        CHECK_EQ_INT(x.n_handles, 2);
        CHECK_EQ_INT(x.n_errors, 0);
        show_errors(&x);
        if (x.n_handles == 2) {
                CHECK_EQ_STR(x.handles[0].id, "res");
                CHECK_EQ_INT(x.handles[0].size, 8);
                char buf[16] = "";
                CHECK(x.handles[1].fd >= 0 && pread(x.handles[1].fd, buf, sizeof(buf), 0) == 5 &&
                      memcmp(buf, "hello", 5) == 0);
                int fl = fcntl(x.handles[1].fd, F_GETFD);
                CHECK(fl >= 0 && (fl & FD_CLOEXEC));
                CHECK((fcntl(x.handles[1].fd, F_GETFL) & O_ACCMODE) == O_RDONLY);
        }
        CHECK(x.emitted && !x.emit_too_large && x.emit && strcmp(x.emit, "{\"answer\": 42}") == 0 && x.emit_len == 14);
        CHECK(x.n_publish == 1 && strcmp(x.publish[0].path, "outputs/report.csv") == 0 &&
              strcmp(x.publish[0].description, "the report") == 0);
        hd_exchange_done(&x);

        /* remove: a link to outside in the exchange is unlinked, its target untouched */
        char outside[512];
        snprintf(outside, sizeof(outside), "%s/outside-victim", tmp);
        write_str(AT_FDCWD, outside, "precious");
        CHECK(symlinkat(outside, xfd, "link") == 0);
        CHECK(mkdirat(xfd, "sub", 0700) == 0);
        CHECK_EQ_INT(hd_exchange_remove(ws, rel, &e), 0);
        CHECK(fstatat(ws, rel, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
        CHECK(stat(outside, &st) == 0 && st.st_size == 8);
        CHECK_EQ_INT(hd_exchange_remove(ws, "../x", &e), -EINVAL);
        close(xfd);
        close(ws);
}

static void test_hostile_exchange(void) {
        char rel[HD_EXCHANGE_REL_SIZE], outside[512];
        int xfd;
        int ws = new_workspace("ws-hostile", rel, &xfd);
        hull_error e = {0};
        hd_exchange x;
        struct stat st;

        snprintf(outside, sizeof(outside), "%s/secret.json", tmp);
        write_str(AT_FDCWD, outside, "{\"secret\": true}");

        /* §8.5: a FIFO planted as new_handles.jsonl: no hang, a clear error; a symbolic link as a
         * payload and as a control file: not followed; a directory as a control file */
        CHECK(mkfifoat(xfd, "new_handles.jsonl", 0600) == 0);
        CHECK(symlinkat(outside, xfd, "emit.json") == 0);
        CHECK(mkdirat(xfd, "publish.jsonl", 0700) == 0);
        signal(SIGALRM, on_alarm);
        alarm(10);
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_read(ws, rel, NULL, &x, &e), 0);
        alarm(0);
        show_errors(&x);
        CHECK(has_error(&x, "control file new_handles.jsonl was replaced (a FIFO); ignored"));
        CHECK(has_error(&x, "control file emit.json was replaced (a symbolic link); ignored"));
        CHECK(has_error(&x, "control file publish.jsonl was replaced (a directory); ignored"));
        CHECK(x.n_handles == 0 && !x.emitted && x.n_publish == 0);
        hd_exchange_done(&x);
        CHECK(unlinkat(xfd, "new_handles.jsonl", 0) == 0 && unlinkat(xfd, "emit.json", 0) == 0 &&
              unlinkat(xfd, "publish.jsonl", AT_REMOVEDIR) == 0);

        /* payloads: a link to outside, a link inside, a FIFO, a directory, a hard link, a missing
         * file, one over the payload cap; one good handle among them */
        CHECK(symlinkat(outside, xfd, "1.json") == 0);
        write_str(xfd, "real.json", "{}");
        CHECK(symlinkat("real.json", xfd, "2.json") == 0);
        CHECK(mkfifoat(xfd, "3.bin", 0600) == 0);
        CHECK(mkdirat(xfd, "4.bin", 0700) == 0);
        write_str(xfd, "5.txt", "linked");
        CHECK(linkat(xfd, "5.txt", xfd, "5-again.txt", 0) == 0);
        char big[2048];
        memset(big, 'b', sizeof(big));
        write_file(xfd, "7.bin", big, sizeof(big));
        write_str(xfd, "8.txt", "fine");
        write_str(xfd, "new_handles.jsonl",
                  "{\"id\":\"l1\",\"kind\":\"json\",\"file\":\"1.json\",\"source\":\"s\"}\n"
                  "{\"id\":\"l2\",\"kind\":\"json\",\"file\":\"2.json\",\"source\":\"s\"}\n"
                  "{\"id\":\"f3\",\"kind\":\"binary\",\"file\":\"3.bin\",\"source\":\"s\"}\n"
                  "{\"id\":\"d4\",\"kind\":\"binary\",\"file\":\"4.bin\",\"source\":\"s\"}\n"
                  "{\"id\":\"h5\",\"kind\":\"text\",\"file\":\"5.txt\",\"source\":\"s\"}\n"
                  "{\"id\":\"m6\",\"kind\":\"text\",\"file\":\"6.txt\",\"source\":\"s\"}\n"
                  "{\"id\":\"b7\",\"kind\":\"binary\",\"file\":\"7.bin\",\"source\":\"s\"}\n"
                  "{\"id\":\"ok\",\"kind\":\"text\",\"file\":\"8.txt\",\"source\":\"s\"}\n");
        write_str(xfd, "emit.json", "{not json");
        hd_exchange_limits lim = {.payload_bytes_max = 1024};
        alarm(10);
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_read(ws, rel, &lim, &x, &e), 0);
        alarm(0);
        show_errors(&x);
        CHECK_EQ_INT(x.n_handles, 1);
        CHECK(x.n_handles == 1 && strcmp(x.handles[0].id, "ok") == 0 && x.handles[0].size == 4);
        CHECK(has_error(&x, "new handle l1 (file 1.json): a symbolic link; not adopted"));
        CHECK(has_error(&x, "new handle l2 (file 2.json): a symbolic link; not adopted"));
        CHECK(has_error(&x, "new handle f3 (file 3.bin): a FIFO; not adopted"));
        CHECK(has_error(&x, "new handle d4 (file 4.bin): a directory; not adopted"));
        CHECK(has_error(&x, "new handle h5 (file 5.txt): a file with other hard links; not adopted"));
        CHECK(has_error(&x, "new handle m6 (file 6.txt): the file is missing; not adopted"));
        CHECK(has_error(&x, "new handle b7 (file 7.bin): too large (2048 bytes, at most 1024); not adopted"));
        /* §8.5: a malformed emit gives "malformed emit" */
        CHECK(!x.emitted && x.emit == NULL && has_error(&x, "malformed emit payload"));
        hd_exchange_done(&x);
        CHECK(stat(outside, &st) == 0 && st.st_size == 16);

        /* §8.5: 20 KB of junk in the new-handles file with a 1 KB cap: "too large"; an emit over
         * the inline cap is handed over as an fd, not parsed */
        char junk[20480];
        memset(junk, 'j', sizeof(junk));
        write_file(xfd, "new_handles.jsonl", junk, sizeof(junk));
        char emit[3000];
        memset(emit, ' ', sizeof(emit));
        memcpy(emit, "[\"x\"", 4);
        emit[sizeof(emit) - 1] = ']';
        write_file(xfd, "emit.json", emit, sizeof(emit));
        write_file(xfd, "publish.jsonl", junk, 2000);
        lim = (hd_exchange_limits){.new_handles_bytes_max = 1024, .emit_inline_max = 1024, .publish_bytes_max = 1024};
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_read(ws, rel, &lim, &x, &e), 0);
        show_errors(&x);
        CHECK(has_error(&x, "control file new_handles.jsonl too large (20480 bytes, at most 1024); ignored"));
        CHECK(has_error(&x, "control file publish.jsonl too large (2000 bytes, at most 1024); ignored"));
        CHECK(x.n_handles == 0 && x.n_publish == 0);
        CHECK(x.emitted && x.emit_too_large && x.emit == NULL && x.emit_fd >= 0 && x.emit_size == sizeof(emit));
        char head[4] = "";
        CHECK(x.emit_fd >= 0 && pread(x.emit_fd, head, 4, 0) == 4 && memcmp(head, "[\"x\"", 4) == 0);
        hd_exchange_done(&x);
        CHECK(x.emit_fd == -1);

        /* an emit over even the payload cap is an error */
        lim = (hd_exchange_limits){.emit_inline_max = 100, .payload_bytes_max = 1000};
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_read(ws, rel, &lim, &x, &e), 0);
        CHECK(!x.emitted && x.emit_fd == -1 && has_error(&x, "control file emit.json too large (3000 bytes"));
        hd_exchange_done(&x);

        /* the exchange directory itself replaced by a link to a directory outside */
        char outdir[512], path[600];
        snprintf(outdir, sizeof(outdir), "%s/outside-dir", tmp);
        CHECK(mkdir(outdir, 0700) == 0);
        snprintf(path, sizeof(path), "%s/new_handles.jsonl", outdir);
        write_str(AT_FDCWD, path, "{\"id\":\"o\",\"kind\":\"text\",\"file\":\"o.txt\",\"source\":\"s\"}\n");
        snprintf(path, sizeof(path), "%s/o.txt", outdir);
        write_str(AT_FDCWD, path, "outside");
        CHECK_EQ_INT(hd_exchange_remove(ws, rel, &e), 0);
        CHECK(symlinkat(outdir, ws, rel) == 0);
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_read(ws, rel, NULL, &x, &e), 0);
        show_errors(&x);
        CHECK(!x.absent && x.n_handles == 0 && has_error(&x, "was replaced by a symbolic link; nothing was adopted"));
        hd_exchange_done(&x);
        CHECK_EQ_INT(hd_exchange_remove(ws, rel, &e), 0); /* the link goes, not what it points to */
        CHECK(fstatat(ws, rel, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
        CHECK(stat(path, &st) == 0 && st.st_size == 7);
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_read(ws, rel, NULL, &x, &e), 0);
        /* removed by the code before the call ended: the same as never made, no note */
        CHECK(x.absent && x.n_errors == 0 && x.n_handles == 0);
        hd_exchange_done(&x);
        /* replaced by a file */
        write_str(ws, rel, "file");
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_read(ws, rel, NULL, &x, &e), 0);
        show_errors(&x);
        CHECK(!x.absent && has_error(&x, "was replaced by a file; nothing was adopted"));
        hd_exchange_done(&x);
        CHECK_EQ_INT(hd_exchange_remove(ws, rel, &e), 0);
        CHECK(fstatat(ws, rel, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
        CHECK_EQ_INT(hd_exchange_read(ws, "x", NULL, &x, &e), -EINVAL);
        close(xfd);
        close(ws);
}

static void test_planted_hull(void) {
        char path[512], outdir[512];
        hull_error e = {0};
        struct stat st;

        /* §8.5-style: ".hull" planted as a symbolic link to a directory outside: refused, the
         * outside directory stays empty, and remove does not reach through it either */
        snprintf(outdir, sizeof(outdir), "%s/victim-dir", tmp);
        CHECK(mkdir(outdir, 0755) == 0);
        snprintf(path, sizeof(path), "%s/victim-dir/x-0123456789abcdef", tmp);
        CHECK(mkdir(path, 0755) == 0);
        snprintf(path, sizeof(path), "%s/ws-link", tmp);
        CHECK(mkdir(path, 0755) == 0);
        int ws = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(symlinkat(outdir, ws, ".hull") == 0);
        CHECK_EQ_INT(hd_exchange_remove(ws, ".hull/x-0123456789abcdef", &e), -ELOOP);
        snprintf(path, sizeof(path), "%s/victim-dir/x-0123456789abcdef", tmp);
        CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
        CHECK(rmdir(path) == 0 && rmdir(outdir) == 0); /* it held nothing else */
        hd_exchange x;
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_read(ws, ".hull/x-0123456789abcdef", NULL, &x, &e), 0);
        show_errors(&x);
        CHECK(!x.absent && has_error(&x, "is below /workspace/.hull, which is a symbolic link: refused"));
        hd_exchange_done(&x);
        close(ws);

        /* ".hull" planted as a file: refused, the file unchanged */
        snprintf(path, sizeof(path), "%s/ws-file", tmp);
        CHECK(mkdir(path, 0755) == 0);
        ws = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        write_str(ws, ".hull", "mine");
        hd_exchange_init(&x);
        CHECK_EQ_INT(hd_exchange_read(ws, ".hull/x-0123456789abcdef", NULL, &x, &e), 0);
        show_errors(&x);
        CHECK(!x.absent && has_error(&x, "is below /workspace/.hull, which is not a directory: refused"));
        hd_exchange_done(&x);
        CHECK_EQ_INT(hd_exchange_remove(ws, ".hull/x-0123456789abcdef", &e), -ENOTDIR);
        CHECK(fstatat(ws, ".hull", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_size == 4);
        close(ws);
}

/* The cheap probe: true only when ".hull" or the directory in it is not there; anything there,
 * a link included (whatever it points at), is left to hd_exchange_read. */
static void test_surely_absent(void) {
        char path[512], outdir[512];
        const char *rel = ".hull/x-0123456789abcdef";
        snprintf(path, sizeof(path), "%s/ws-probe", tmp);
        CHECK(mkdir(path, 0755) == 0);
        int ws = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(ws >= 0);
        CHECK(hd_exchange_surely_absent(ws, rel));             /* no .hull */
        CHECK(!hd_exchange_surely_absent(ws, "../x"));         /* not an exchange path */
        CHECK(!hd_exchange_surely_absent(ws, ".hull/x-0123")); /* nor this */
        CHECK(mkdirat(ws, ".hull", 0755) == 0);
        CHECK(hd_exchange_surely_absent(ws, rel)); /* .hull without it */
        CHECK(mkdirat(ws, rel, 0700) == 0);
        CHECK(!hd_exchange_surely_absent(ws, rel)); /* made by the call */
        CHECK(unlinkat(ws, rel, AT_REMOVEDIR) == 0);
        CHECK(symlinkat("/nonexistent-hull-probe", ws, rel) == 0);
        CHECK(!hd_exchange_surely_absent(ws, rel)); /* a dangling link in its place */
        CHECK(unlinkat(ws, rel, 0) == 0 && unlinkat(ws, ".hull", AT_REMOVEDIR) == 0);
        /* .hull a link: to a directory outside holding the name, or to nothing */
        snprintf(outdir, sizeof(outdir), "%s/probe-outside", tmp);
        CHECK(mkdir(outdir, 0755) == 0);
        CHECK(symlinkat(outdir, ws, ".hull") == 0);
        CHECK(!hd_exchange_surely_absent(ws, rel));
        CHECK(unlinkat(ws, ".hull", 0) == 0);
        CHECK(symlinkat("/nonexistent-hull-probe", ws, ".hull") == 0);
        CHECK(!hd_exchange_surely_absent(ws, rel));
        CHECK(unlinkat(ws, ".hull", 0) == 0);
        /* .hull a file */
        int f = openat(ws, ".hull", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        CHECK(f >= 0);
        close(f);
        CHECK(!hd_exchange_surely_absent(ws, rel));
        close(ws);
}

int main(void) {
        snprintf(tmp, sizeof(tmp), "/tmp/test-hd-exchange.XXXXXX");
        if (!mkdtemp(tmp)) {
                perror("mkdtemp");
                return 2;
        }
        test_parse_new_handles();
        test_parse_publish();
        test_emit_and_rel();
        test_name_read_remove();
        test_hostile_exchange();
        test_planted_hull();
        test_surely_absent();
        rm_rf_at(AT_FDCWD, tmp);
        return test_done();
}
