/* test-hd-store.c: the handle store: summaries of every kind, ids, integrity, manifest
 * forgery, hostile SQLite files, inspect, query and read; hostile queries and files exhausting
 * their memory budget while another SQLite connection of the process keeps working. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dlib-sqlite3.h"
#include "fs-util.h"
#include "hd-store.h"
#include "test.h"

static char dir[64];
static int dir_fd;

static hd_store *open_store(void) {
        hd_store *s = NULL;
        hull_error e = {0};
        if (hd_store_open(dir_fd, NULL, &s, &e) < 0) {
                printf("# open: %s\n", e.msg);
                exit(1);
        }
        return s;
}

static const char *str(json_t *o, const char *k) {
        return json_string_value(json_object_get(o, k));
}
static long long num(json_t *o, const char *k) {
        return json_integer_value(json_object_get(o, k));
}

static double since(const struct timespec *t0) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double) (t.tv_sec - t0->tv_sec) + (double) (t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void test_kinds(hd_store *s) {
        json_t *sum = NULL;
        hull_error e = {0};
        /* json */
        const char *j = "{\"b\": [1, 2, 3], \"a\": {\"x\": \"y\"}}";
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_JSON, "tool x", j, strlen(j), &sum, &e), 0);
        CHECK_EQ_STR(str(sum, "id"), "h1");
        CHECK_EQ_STR(str(sum, "kind"), "json");
        CHECK_EQ_STR(str(sum, "path"), "h1.json");
        CHECK_EQ_INT(num(sum, "bytes"), strlen(j));
        CHECK_EQ_STR(str(sum, "preview"), j);
        CHECK_EQ_STR(str(json_object_get(sum, "shape"), "type"), "object");
        CHECK(json_object_get(sum, "digest") == NULL);
        char *first = json_dumps(sum, JSON_COMPACT);
        json_decref(sum);
        /* the same bytes give the same summary (but for id and path) */
        CHECK_EQ_INT(hd_put(s, "same", HD_FORMAT_JSON, "tool x", j, strlen(j), &sum, &e), 0);
        json_object_set_new(sum, "id", json_string("h1"));
        json_object_set_new(sum, "path", json_string("h1.json"));
        char *second = json_dumps(sum, JSON_COMPACT);
        CHECK_EQ_STR(first, second);
        free(first);
        free(second);
        json_decref(sum);
        /* not JSON */
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_JSON, "t", "{", 1, NULL, &e), -EBADMSG);
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_JSON, "t", "", 0, NULL, &e), -EBADMSG);
        /* text: unicode preview cut at a character boundary, 800 characters */
        size_t n = 3000;
        char *t = malloc(n * 2);
        for (size_t i = 0; i < n; i++)
                memcpy(t + 2 * i, "\xc3\xa9", 2);
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_TEXT, "t", t, n * 2, &sum, &e), 0);
        CHECK_EQ_INT(json_string_length(json_object_get(sum, "preview")), 1600);
        CHECK_EQ_STR(str(sum, "kind"), "text");
        json_decref(sum);
        t[5] = (char) 0xff;
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_TEXT, "t", t, n * 2, NULL, &e), -EILSEQ);
        CHECK(strstr(e.msg, "binary") != NULL);
        /* binary: no content leaks into the preview */
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_BINARY, "t", t, n * 2, &sum, &e), 0);
        CHECK_EQ_STR(str(sum, "preview"), "<binary, 6000 bytes>");
        json_decref(sum);
        free(t);
        /* empty text and binary are fine */
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_TEXT, "t", "", 0, &sum, &e), 0);
        CHECK_EQ_STR(str(sum, "preview"), "");
        json_decref(sum);
}

static void test_tables(hd_store *s) {
        json_t *sum = NULL;
        hull_error e = {0};
        const char *csv =
                "id,price,ok,day,name,empty\n1,2.5,true,2024-01-01,\"a, \"\"b\"\"\",\n2,3,false,2024-01-02,c,\n"
                "3,,true,2024-01-03 "
                "10:00,d,\n4,1,false,2024-01-04,e,\n5,1,true,2024-01-05,f,\n6,1,true,2024-01-06,g,\n";
        CHECK_EQ_INT(hd_put(s, "sales", HD_FORMAT_CSV, "csv", csv, strlen(csv), &sum, &e), 0);
        json_t *schema = json_object_get(sum, "schema");
        CHECK_EQ_STR(str(schema, "id"), "integer");
        CHECK_EQ_STR(str(schema, "price"), "real");
        CHECK_EQ_STR(str(schema, "ok"), "boolean");
        CHECK_EQ_STR(str(schema, "day"), "timestamp");
        CHECK_EQ_STR(str(schema, "name"), "text");
        CHECK_EQ_STR(str(schema, "empty"), "text");
        CHECK_EQ_INT(num(sum, "n_rows"), 6);
        CHECK_EQ_INT(num(sum, "n_cols"), 6);
        CHECK_EQ_STR(str(sum, "path"), "sales.sqlite");
        const char *p = str(sum, "preview");
        CHECK(p && strncmp(p, "id,price,ok,day,name,empty\n1,2.5,1,2024-01-01,\"a, \"\"b\"\"\",\n", 55) == 0);
        CHECK(p && strstr(p, "\n... (5 of 6 rows)") != NULL);
        json_decref(sum);
        /* a long cell is cut at HD_PREVIEW_CELL_CHARS characters, then "…"; a quoted one stays quoted */
        {
                char longcsv[400], want[200];
                memset(want, 0, sizeof(want));
                memset(want, 'x', HD_PREVIEW_CELL_CHARS);
                snprintf(longcsv, sizeof(longcsv), "a,b\n%s%s,\"q,\"\"%s\"\n", want, "yyyyyyyyyy", "z");
                CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_CSV, "csv", longcsv, strlen(longcsv), &sum, &e), 0);
                char expect[300];
                snprintf(expect, sizeof(expect), "a,b\n%s\xe2\x80\xa6,\"q,\"\"z\"", want);
                CHECK_EQ_STR(str(sum, "preview"), expect);
                json_decref(sum);
        }
        /* ragged */
        const char *ragged = "a,b,c,d,e\n1,2,3,4,5\n1,2,3,4\n";
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_CSV, "csv", ragged, strlen(ragged), NULL, &e), -EBADMSG);
        CHECK(strstr(e.msg, "line 3 has 4 fields, the header has 5") != NULL);
        printf("# %s\n", e.msg);
        /* TSV, JSON array, JSON lines */
        const char *tsv = "k\tv\nx\t1\ny\t2\n";
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_TSV, "tsv", tsv, strlen(tsv), &sum, &e), 0);
        CHECK_EQ_STR(str(json_object_get(sum, "schema"), "v"), "integer");
        json_decref(sum);
        const char *arr = "[{\"a\": 1, \"b\": \"x\"}, {\"b\": \"y\", \"c\": 2.5, \"a\": null}, {\"d\": {\"n\": 1}}]";
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_JSON_ARRAY, "json", arr, strlen(arr), &sum, &e), 0);
        CHECK_EQ_INT(num(sum, "n_rows"), 3);
        CHECK_EQ_INT(num(sum, "n_cols"), 4);
        char *keys = json_dumps(json_object_get(sum, "schema"), JSON_COMPACT | JSON_PRESERVE_ORDER);
        CHECK_EQ_STR(keys, "{\"a\":\"integer\",\"b\":\"text\",\"c\":\"real\",\"d\":\"text\"}");
        free(keys);
        json_decref(sum);
        const char *lines =
                "{\"t\": \"2024-01-01T00:00:00Z\", \"ok\": true}\n\n{\"t\": \"2024-01-02T00:00:00Z\", \"ok\": false}\n";
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_JSON_LINES, "jsonl", lines, strlen(lines), &sum, &e), 0);
        CHECK_EQ_STR(str(json_object_get(sum, "schema"), "t"), "timestamp");
        CHECK_EQ_STR(str(json_object_get(sum, "schema"), "ok"), "boolean");
        json_decref(sum);
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_JSON_LINES, "jsonl", "{\"a\":1}\n[1]\n", 12, NULL, &e), -EBADMSG);
        CHECK(strstr(e.msg, "record 2") != NULL);
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_CSV, "csv", "", 0, NULL, &e), -ENODATA);
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_JSON_ARRAY, "j", "[]", 2, NULL, &e), -ENODATA);
        /* empty table: header only */
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_CSV, "csv", "a,b\n", 4, &sum, &e), 0);
        CHECK_EQ_INT(num(sum, "n_rows"), 0);
        json_decref(sum);
        /* too many columns */
        char *wide = malloc(8000);
        size_t o = 0;
        for (int i = 0; i < 1001; i++)
                o += (size_t) snprintf(wide + o, 8000 - o, "%sc%d", i ? "," : "", i);
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_CSV, "csv", wide, o, NULL, &e), -E2BIG);
        free(wide);
}

static void test_ids(hd_store *s) {
        hull_error e = {0};
        static const char *const bad[] = {
                "../x", "a/b", "",   "..",  "a\\b",
                "_x",   ".x",  "-x", "a b", "x1234567890123456789012345678901234567890123456789012345678901234"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                TEST_RESULT(hd_put(s, bad[i], HD_FORMAT_TEXT, "t", "x", 1, NULL, &e) == -EINVAL,
                            "bad id \"%s\" refused", bad[i]);
        CHECK(hd_id_is_valid("A.b-c_9"));
        CHECK(hd_store_owns_name("_manifest.json"));
        CHECK(hd_store_owns_name("h1.json") && hd_store_owns_name("sales.sqlite") && hd_store_owns_name("n.txt") &&
              hd_store_owns_name("b.bin"));
        CHECK(!hd_store_owns_name("hull.py") && !hd_store_owns_name(".sqlite") && !hd_store_owns_name("x") &&
              !hd_store_owns_name("x.csv"));
        CHECK_EQ_INT(hd_put(s, "sales", HD_FORMAT_TEXT, "t", "x", 1, NULL, &e), -EEXIST);
        CHECK(strstr(e.msg, "handle sales already exists") != NULL);
        json_t *sum = NULL;
        CHECK_EQ_INT(hd_put(s, "h40", HD_FORMAT_TEXT, "t", "x", 1, NULL, &e), 0);
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_TEXT, "t", "x", 1, &sum, &e), 0);
        CHECK_EQ_STR(str(sum, "id"), "h41");
        json_decref(sum);
}

static void test_spill(hd_store *s) {
        hull_error e = {0};
        json_t *sum = (json_t *) 1;
        CHECK_EQ_INT(hd_spill(s, "small", "{}", 2, false, &sum, &e), 0);
        CHECK(sum == (json_t *) 1);
        char *big = malloc(20000);
        memset(big, 'a', 20000);
        CHECK_EQ_INT(hd_spill(s, "big", big, 20000, false, &sum, &e), 1);
        CHECK_EQ_STR(str(sum, "kind"), "text");
        json_decref(sum);
        big[0] = '[';
        for (int i = 1; i < 19999; i++)
                big[i] = i % 2 ? '1' : ',';
        big[19998] = '1';
        big[19999] = ']';
        CHECK_EQ_INT(hd_spill(s, "big", big, 20000, false, &sum, &e), 1);
        CHECK_EQ_STR(str(sum, "kind"), "json");
        json_decref(sum);
        big[0] = (char) 0xff;
        CHECK_EQ_INT(hd_spill(s, "big", big, 20000, false, &sum, &e), 1);
        CHECK_EQ_STR(str(sum, "kind"), "binary");
        json_decref(sum);
        CHECK_EQ_INT(hd_spill(s, "rows", "[{\"a\":1}]", 9, true, &sum, &e), 1);
        CHECK_EQ_STR(str(sum, "kind"), "table");
        json_decref(sum);
        free(big);
        /* over the maximum: refused, telling the source to paginate */
        hd_store *small = NULL;
        hd_store_opts o = {.spill_threshold_bytes = 10, .max_spill_bytes = 100};
        CHECK_EQ_INT(hd_store_open(dir_fd, &o, &small, &e), 0);
        char x[200] = {0};
        CHECK_EQ_INT(hd_spill(small, "fetch_url", x, sizeof(x), false, &sum, &e), -EFBIG);
        CHECK(strstr(e.msg, "paginate") != NULL);
        hd_store_free(small);
}

static void test_integrity(void) {
        hull_error e = {0};
        hd_store *s = open_store();
        json_t *sum = NULL;
        CHECK_EQ_INT(hd_put(s, "victim", HD_FORMAT_TEXT, "t", "hello world", 11, NULL, &e), 0);
        /* tamper (same length): chmod is ours; the store sealed it 0444 */
        fchmodat(dir_fd, "victim.txt", 0644, 0);
        int fd = openat(dir_fd, "victim.txt", O_WRONLY);
        CHECK(write(fd, "HELLO", 5) == 5);
        close(fd);
        CHECK_EQ_INT(hd_summary(s, "victim", &sum, &e), -EBADMSG);
        CHECK(strstr(e.msg, "handle victim tampered") != NULL);
        json_t *r = NULL;
        CHECK_EQ_INT(hd_read(s, "victim", 0, 10, &r, &e), -EBADMSG);
        /* tampered table too */
        CHECK_EQ_INT(hd_summary(s, "sales", &sum, &e), 0);
        json_decref(sum);
        fchmodat(dir_fd, "sales.sqlite", 0644, 0);
        fd = openat(dir_fd, "sales.sqlite", O_WRONLY);
        CHECK(pwrite(fd, "X", 1, 200) == 1);
        close(fd);
        const char *ids[] = {"sales"};
        CHECK_EQ_INT(hd_query(s, "SELECT 1", ids, 1, NULL, &r, &e), -EBADMSG);
        CHECK(strstr(e.msg, "tampered") != NULL);
        hd_store_free(s);

        /* manifest forgery: a record pointing elsewhere, a record for a missing file, garbage */
        s = open_store();
        CHECK_EQ_INT(hd_put(s, "good", HD_FORMAT_TEXT, "t", "fine", 4, NULL, &e), 0);
        hd_store_free(s);
        fchmodat(dir_fd, "_manifest.json", 0644, 0);
        fd = openat(dir_fd, "_manifest.json", O_RDONLY);
        char buf[65536];
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        buf[n] = 0;
        json_t *m = json_loads(buf, 0, NULL);
        json_object_set_new(m, "forged",
                            json_pack("{s:s,s:s,s:s,s:s,s:i,s:s}", "id", "forged", "kind", "text", "source", "x",
                                      "path", "../../etc/passwd", "bytes", 4, "digest",
                                      "0000000000000000000000000000000000000000000000000000000000000000"));
        json_object_set_new(m, "ghost",
                            json_pack("{s:s,s:s,s:s,s:s,s:i,s:s}", "id", "ghost", "kind", "text", "source", "x", "path",
                                      "ghost.txt", "bytes", 4, "digest",
                                      "0000000000000000000000000000000000000000000000000000000000000000"));
        json_object_set_new(m, "junk", json_string("junk"));
        json_object_set_new(json_object_get(m, "good"), "summary", json_pack("{s:s}", "preview", "all clean!"));
        symlinkat("/etc/hostname", dir_fd, "linked.txt");
        json_object_set_new(m, "linked",
                            json_pack("{s:s,s:s,s:s,s:s,s:i,s:s}", "id", "linked", "kind", "text", "source", "x",
                                      "path", "linked.txt", "bytes", 4, "digest",
                                      "0000000000000000000000000000000000000000000000000000000000000000"));
        json_dump_file(m, "/dev/null", 0);
        char *text = json_dumps(m, 0);
        unlinkat(dir_fd, "_manifest.json", 0);
        fd = openat(dir_fd, "_manifest.json", O_WRONLY | O_CREAT, 0644);
        CHECK(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        close(fd);
        free(text);
        json_decref(m);
        s = open_store();
        CHECK_EQ_INT(hd_summary(s, "forged", &sum, &e), -ENOENT);
        CHECK_EQ_INT(hd_summary(s, "ghost", &sum, &e), -ENOENT);
        CHECK_EQ_INT(hd_summary(s, "linked", &sum, &e), -ENOENT);
        CHECK_EQ_INT(hd_summary(s, "good", &sum, &e), 0);
        CHECK_EQ_STR(str(sum, "preview"), "fine"); /* derived, not the forged one */
        json_decref(sum);
        /* ids survive a reopen: reuse still refused, counter past the highest hN */
        CHECK_EQ_INT(hd_put(s, "good", HD_FORMAT_TEXT, "t", "x", 1, NULL, &e), -EEXIST);
        CHECK_EQ_INT(hd_put(s, NULL, HD_FORMAT_TEXT, "t", "x", 1, &sum, &e), 0);
        CHECK_EQ_STR(str(sum, "id"), "h46"); /* h42..h45 were spills */
        json_decref(sum);
        hd_store_free(s);
}

static void sqlite_file(const char *path, const char *sql) {
        char cmd[4096];
        unlink(path);
        snprintf(cmd, sizeof(cmd), "sqlite3 %s \"%s\"", path, sql);
        if (system(cmd) != 0)
                abort();
}

static int adopt_path(hd_store *s, const char *id, const char *path, hull_error *e) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        json_t *sum = NULL;
        int r = hd_adopt_fd(s, fd, id, HD_FORMAT_SQLITE, "sandbox", &sum, e);
        TEST_RESULT(since(&t0) < 15.0, "adopting %s took %.2f s", id, since(&t0));
        json_decref(sum);
        close(fd);
        return r;
}

static void test_hostile(void) {
        hull_error e = {0};
        hd_store *s = open_store();
        char p[128];
        snprintf(p, sizeof(p), "%s.db", dir);
        sqlite_file(
                p,
                "CREATE TABLE frame(x INTEGER, y TEXT); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c "
                "WHERE i < 5000) INSERT INTO frame SELECT i, 'row ' || i FROM c;");
        CHECK_EQ_INT(adopt_path(s, "frame", p, &e), 0);
        json_t *sum = NULL;
        CHECK_EQ_INT(hd_summary(s, "frame", &sum, &e), 0);
        CHECK_EQ_INT(num(sum, "n_rows"), 5000);
        CHECK_EQ_STR(str(sum, "table"), "frame");
        json_decref(sum);
        /* corrupted pages: flip bytes in the middle of a valid database */
        int fd = open(p, O_RDWR);
        struct stat st;
        fstat(fd, &st);
        unsigned char junk[512];
        memset(junk, 0xa5, sizeof(junk));
        for (off_t off = 4096; off + 512 < st.st_size; off += 8192)
                CHECK(pwrite(fd, junk, sizeof(junk), off + 100) == 512);
        close(fd);
        CHECK_EQ_INT(adopt_path(s, "corrupt", p, &e), -EBADMSG);
        printf("# corrupt: %s\n", e.msg);
        /* page-1 btree header smashed */
        sqlite_file(p, "CREATE TABLE data(x); INSERT INTO data VALUES (1);");
        fd = open(p, O_RDWR);
        CHECK(pwrite(fd, junk, 200, 100) == 200);
        close(fd);
        CHECK_EQ_INT(adopt_path(s, "corrupt2", p, &e), -EBADMSG);
        printf("# corrupt page 1: %s\n", e.msg);
        /* a view calling functions */
        sqlite_file(p,
                    "CREATE TABLE data(x); INSERT INTO data VALUES (1); CREATE VIEW v AS SELECT load_extension('x'), "
                    "randomblob(1000000000) FROM data;");
        CHECK_EQ_INT(adopt_path(s, "view", p, &e), -EBADMSG);
        CHECK(strstr(e.msg, "view") != NULL);
        /* a trigger */
        sqlite_file(
                p, "CREATE TABLE data(x); CREATE TABLE t2(y); CREATE TRIGGER tr AFTER INSERT ON data BEGIN INSERT INTO "
                   "t2 VALUES (1); END;");
        CHECK_EQ_INT(adopt_path(s, "trigger", p, &e), -EBADMSG);
        /* two tables */
        sqlite_file(p, "CREATE TABLE a(x); CREATE TABLE b(y);");
        CHECK_EQ_INT(adopt_path(s, "two", p, &e), -EBADMSG);
        CHECK(strstr(e.msg, "more than one table") != NULL);
        /* a generated column calling a function */
        sqlite_file(p, "CREATE TABLE data(x, y AS (abs(x)));");
        CHECK_EQ_INT(adopt_path(s, "generated", p, &e), -EBADMSG);
        /* a virtual table */
        sqlite_file(p, "CREATE VIRTUAL TABLE data USING fts5(x);");
        CHECK_EQ_INT(adopt_path(s, "virtual", p, &e), -EBADMSG);
        /* a huge page count in the header */
        sqlite_file(p, "CREATE TABLE data(x); INSERT INTO data VALUES (1);");
        fd = open(p, O_RDWR);
        unsigned char ff[4] = {0x7f, 0xff, 0xff, 0xff};
        CHECK(pwrite(fd, ff, 4, 28) == 4);
        close(fd);
        CHECK_EQ_INT(adopt_path(s, "huge", p, &e), -EBADMSG);
        printf("# huge: %s\n", e.msg);
        /* zero length, not SQLite */
        fd = open(p, O_WRONLY | O_TRUNC);
        close(fd);
        CHECK_EQ_INT(adopt_path(s, "zero", p, &e), -EBADMSG);
        fd = open(p, O_WRONLY | O_TRUNC);
        CHECK(write(fd, "hello, this is not a database at all, not even close; padding padding padding padding padding",
                    93) == 93);
        close(fd);
        CHECK_EQ_INT(adopt_path(s, "text", p, &e), -EBADMSG);
        CHECK(strstr(e.msg, "not an SQLite database") != NULL);
        unlink(p);
        /* nothing of the refused files is left behind */
        json_t *l = NULL;
        hd_list(s, &l, &e);
        size_t i;
        json_t *v;
        json_array_foreach(l, i, v) CHECK(strcmp(str(v, "id"), "corrupt") != 0 && strcmp(str(v, "id"), "huge") != 0);
        json_decref(l);
        hd_store_free(s);
}

static void test_query(void) {
        hull_error e = {0};
        hd_store *s = open_store();
        const char *a = "region,x\neu,1\nus,2\neu,3\n", *b = "region,name\neu,Europe\nus,America\n";
        CHECK_EQ_INT(hd_put(s, "qa", HD_FORMAT_CSV, "a", a, strlen(a), NULL, &e), 0);
        CHECK_EQ_INT(hd_put(s, "q-b", HD_FORMAT_CSV, "b", b, strlen(b), NULL, &e), 0);
        const char *ids[] = {"qa", "q-b"};
        json_t *r = NULL;
        int k = hd_query(
                s,
                "SELECT n.name, sum(a.x) AS total FROM qa.data a JOIN \"q-b\".data n USING (region) GROUP BY 1 "
                "ORDER BY 1",
                ids, 2, NULL, &r, &e);
        CHECK_EQ_INT(k, 0);
        if (k < 0)
                printf("# %s\n", e.msg);
        char *d = json_dumps(r, JSON_COMPACT);
        CHECK_EQ_STR(d, "{\"columns\":[\"name\",\"total\"],\"rows\":[[\"America\",2],[\"Europe\",4]],\"n_rows\":2}");
        free(d);
        json_decref(r);
        /* The tables by their ids alone, as a model writes them (the schema form above still works) */
        r = NULL;
        k = hd_query(s,
                     "SELECT n.name, sum(a.x) AS total FROM qa a JOIN \"q-b\" n USING (region) GROUP BY 1 ORDER BY 1",
                     ids, 2, NULL, &r, &e);
        CHECK_EQ_INT(k, 0);
        if (k < 0)
                printf("# %s\n", e.msg);
        d = json_dumps(r, JSON_COMPACT);
        CHECK_EQ_STR(d, "{\"columns\":[\"name\",\"total\"],\"rows\":[[\"America\",2],[\"Europe\",4]],\"n_rows\":2}");
        free(d);
        json_decref(r);
        r = NULL;
        CHECK_EQ_INT(hd_query(s, "SELECT count(*) FROM qa JOIN qa.data USING (region)", ids, 1, NULL, &r, &e), 0);
        CHECK_EQ_INT(json_integer_value(json_array_get(json_array_get(json_object_get(r, "rows"), 0), 0)), 5);
        json_decref(r);
        /* the views are only for reading: no write goes through them either */
        static const char *const view_writes[] = {
                "INSERT INTO qa VALUES ('x', 1)", "DELETE FROM qa",      "DROP VIEW qa",
                "CREATE TEMP VIEW v AS SELECT 1", "UPDATE qa SET x = 0",
        };
        for (size_t i = 0; i < ELEMENTSOF(view_writes); i++) {
                r = NULL;
                k = hd_query(s, view_writes[i], ids, 1, NULL, &r, &e);
                TEST_RESULT(k < 0 && !r, "refused: %s (%d: %s)", view_writes[i], k, e.msg);
        }
        static const char *const writes[] = {
                "INSERT INTO qa.data VALUES ('x', 1)",
                "DELETE FROM qa.data",
                "ATTACH '/tmp/x.db' AS x",
                "PRAGMA writable_schema=ON",
                "DETACH qa",
                "CREATE TABLE t(x)",
                "UPDATE qa.data SET x = 0",
                "SELECT load_extension('/tmp/x')",
                "PRAGMA qa.table_info(data)",
                "DROP TABLE qa.data",
                "SELECT 1; DELETE FROM qa.data",
                "BEGIN",
        };
        for (size_t i = 0; i < ELEMENTSOF(writes); i++) {
                r = NULL;
                k = hd_query(s, writes[i], ids, 1, NULL, &r, &e);
                TEST_RESULT(k < 0 && !r, "refused: %s (%d: %s)", writes[i], k, e.msg);
        }
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        hd_query_opts o = {.time_ms = 500};
        k = hd_query(s, "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) FROM c", ids,
                     1, &o, &r, &e);
        CHECK_EQ_INT(k, -ETIMEDOUT);
        TEST_RESULT(since(&t0) < 2.0, "the runaway query stopped after %.2f s", since(&t0));
        /* a large result becomes a table handle */
        k = hd_query(s,
                     "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000) SELECT i, i * 0.5 "
                     "AS half, 'r' || i AS label FROM c",
                     ids, 1, NULL, &r, &e);
        CHECK_EQ_INT(k, 0);
        json_t *h = json_object_get(r, "handle");
        CHECK_EQ_INT(num(h, "n_rows"), 1000);
        CHECK_EQ_STR(str(json_object_get(h, "schema"), "i"), "integer");
        CHECK_EQ_STR(str(json_object_get(h, "schema"), "half"), "real");
        CHECK_EQ_STR(str(json_object_get(h, "schema"), "label"), "text");
        /* inspect with stats */
        json_t *in = NULL;
        hd_inspect_opts io = {.head = 2, .tail = 1, .stats = true};
        CHECK_EQ_INT(hd_inspect(s, str(h, "id"), &io, &in, &e), 0);
        json_t *st = json_object_get(json_object_get(in, "stats"), "i");
        CHECK_EQ_INT(num(st, "count"), 1000);
        CHECK_EQ_INT(num(st, "nulls"), 0);
        CHECK_EQ_INT(num(st, "min"), 1);
        CHECK_EQ_INT(num(st, "max"), 1000);
        CHECK(json_real_value(json_object_get(st, "mean")) == 500.5);
        long long dist = num(st, "distinct");
        TEST_RESULT(dist > 940 && dist < 1060, "distinct estimate %lld near 1000", dist);
        CHECK(json_is_null(json_object_get(json_object_get(json_object_get(in, "stats"), "label"), "mean")));
        CHECK_EQ_INT(json_integer_value(json_array_get(json_array_get(json_object_get(in, "tail"), 0), 0)), 1000);
        CHECK_EQ_INT(json_array_size(json_object_get(in, "head")), 2);
        json_decref(in);
        json_decref(r);
        /* not a table */
        CHECK_EQ_INT(hd_put(s, "tx", HD_FORMAT_TEXT, "t", "abc\xc3\xa9xyz", 8, NULL, &e), 0);
        const char *tid[] = {"tx"};
        CHECK_EQ_INT(hd_query(s, "SELECT 1", tid, 1, NULL, &r, &e), -EMEDIUMTYPE);
        /* read: UTF-8-safe slices */
        CHECK_EQ_INT(hd_read(s, "tx", 4, 2, &r, &e), 0);
        CHECK_EQ_INT(num(r, "offset"), 5); /* moved past the continuation byte */
        CHECK_EQ_INT(num(r, "total_bytes"), 8);
        json_decref(r);
        CHECK_EQ_INT(hd_read(s, "tx", 0, 4, &r, &e), 0);
        CHECK_EQ_STR(str(r, "text"), "abc"); /* é not split */
        json_decref(r);
        CHECK_EQ_INT(hd_read(s, "qa", 0, 4, &r, &e), -EMEDIUMTYPE);
        hd_store_free(s);
}

/* ---- memory: a hostile query against an event log in the same process ---- */

/* A stand-in for the /v1 store's event log: an ordinary database file, one event appended and
 * read back in a loop, on its own thread and connection, until told to stop. Each round prepares
 * its statements afresh and binds a copied body of 1 MiB, so it allocates from SQLite every time,
 * and much: charged to a hostile query's budget, it would not fit. */
#define EVENT_BODY (1U << 20)

typedef struct event_log {
        char path[128];
        atomic_bool stop;
        atomic_ulong writes, errors;
        char first_error[256];
} event_log;

static const char *event_round(sqlite3 *db, long n, const char *body) {
        _cleanup_stmt_ sqlite3_stmt *ins = NULL, *get = NULL;
        if (sqlite3_prepare_v2(db, "INSERT INTO events(seq, body) VALUES (?1, ?2)", -1, &ins, NULL) != SQLITE_OK ||
            sqlite3_bind_int64(ins, 1, n) != SQLITE_OK ||
            sqlite3_bind_text(ins, 2, body, -1, SQLITE_TRANSIENT) != SQLITE_OK)
                return "prepare the insert";
        if (sqlite3_step(ins) != SQLITE_DONE)
                return "insert";
        if (sqlite3_exec(db, "DELETE FROM events WHERE seq < (SELECT max(seq) FROM events) - 2", NULL, NULL, NULL) !=
            SQLITE_OK)
                return "delete";
        if (sqlite3_prepare_v2(db, "SELECT max(seq), (SELECT body FROM events WHERE seq = ?1) FROM events", -1, &get,
                               NULL) != SQLITE_OK ||
            sqlite3_bind_int64(get, 1, n) != SQLITE_OK)
                return "prepare the read";
        if (sqlite3_step(get) != SQLITE_ROW || sqlite3_column_int64(get, 0) != n)
                return "read back";
        const char *got = (const char *) sqlite3_column_text(get, 1);
        if (!got || strcmp(got, body) != 0)
                return "read back the body";
        return NULL;
}

static void *event_log_main(void *arg) {
        event_log *l = arg;
        sqlite3 *db = NULL;
        _cleanup_free_ char *body = malloc(EVENT_BODY + 1);
        const char *fail = NULL;
        if (sqlite3_open_v2(l->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK ||
            sqlite3_exec(db,
                         "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE events(seq INTEGER "
                         "PRIMARY KEY, body TEXT NOT NULL)",
                         NULL, NULL, NULL) != SQLITE_OK)
                fail = "open";
        if (!body)
                fail = "malloc";
        for (long n = 1; !fail && !atomic_load(&l->stop); n++) {
                memset(body, 'a' + (int) (n % 26), EVENT_BODY);
                body[EVENT_BODY] = '\0';
                fail = event_round(db, n, body);
                if (!fail)
                        atomic_fetch_add(&l->writes, 1);
        }
        if (fail) {
                snprintf(l->first_error, sizeof(l->first_error), "%s: %s", fail, db ? sqlite3_errmsg(db) : "no db");
                atomic_fetch_add(&l->errors, 1);
        }
        sqlite3_close_v2(db);
        return NULL;
}

static void test_memory(void) {
        hull_error e = {0};
        hd_store_opts so = {.sqlite_mem_bytes = 16ULL << 20};
        hd_store *s = NULL;
        CHECK_EQ_INT(hd_store_open(dir_fd, &so, &s, &e), 0);
        const char *csv = "x\n1\n2\n3\n";
        CHECK_EQ_INT(hd_put(s, "mem", HD_FORMAT_CSV, "t", csv, strlen(csv), NULL, &e), 0);
        const char *ids[] = {"mem"};
        CHECK(dlib_sqlite3_load(&e) != NULL);

        event_log l = {0};
        snprintf(l.path, sizeof(l.path), "%s-events.db", dir);
        pthread_t t;
        CHECK_EQ_INT(pthread_create(&t, NULL, event_log_main, &l), 0);
        while (atomic_load(&l.writes) == 0 && atomic_load(&l.errors) == 0)
                usleep(1000);

        /* a string of 32 MB; a sort of a 4,000,000-row join: each needs more than 16 MiB. A bound
         * shared with the event log (a process-wide limit, a budget not per thread) fails the
         * event log here: it allocates over 1 MiB per round. */
        static const char *const hostile[] = {
                "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 400000) "
                "SELECT group_concat(printf('%080d', i)) FROM c",
                "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 2000) SELECT a.i, b.i, "
                "printf('%040d', a.i * b.i) FROM c a, c b, mem.data ORDER BY random()",
        };
        unsigned overlapped = 0, rounds = 0;
        for (; rounds < 20 && overlapped < 4; rounds++) {
                const char *sql = hostile[rounds % ELEMENTSOF(hostile)];
                unsigned long before = atomic_load(&l.writes);
                json_t *r = NULL;
                e = (hull_error){0};
                /* the memory bound is what is tested: a time budget a busy sanitizer build cannot reach */
                const hd_query_opts slow = {.time_ms = HD_QUERY_MS_MAX};
                int k = hd_query(s, sql, ids, 1, &slow, &r, &e);
                TEST_RESULT(k == -ENOMEM && !r, "hostile query %u: %d (%s)", rounds, k, e.msg);
                CHECK(strstr(e.msg, "handles: the query needs more than 16 MiB of memory") == e.msg);
                CHECK_EQ_INT(e.err, -ENOMEM);
                json_decref(r);
                if (atomic_load(&l.writes) > before)
                        overlapped++;
        }
        printf("# %s\n", e.msg);
        /* a crafted file whose one row needs more than the budget to read */
        char p[128];
        snprintf(p, sizeof(p), "%s-big.db", dir);
        sqlite_file(p, "CREATE TABLE data(x TEXT); INSERT INTO data VALUES (printf('%.20000000c', 'x'));");
        unsigned long before = atomic_load(&l.writes);
        e = (hull_error){0};
        CHECK_EQ_INT(adopt_path(s, "big", p, &e), -ENOMEM);
        CHECK(strstr(e.msg, "handles: reading the table needs more than 16 MiB of memory") == e.msg);
        printf("# %s\n", e.msg);
        if (atomic_load(&l.writes) > before)
                overlapped++;
        unlink(p);
        /* the budget is the operation's: the next query runs */
        json_t *r = NULL;
        CHECK_EQ_INT(hd_query(s, "SELECT sum(x) FROM mem.data", ids, 1, NULL, &r, &e), 0);
        CHECK_EQ_INT(json_integer_value(json_array_get(json_array_get(json_object_get(r, "rows"), 0), 0)), 6);
        json_decref(r);

        atomic_store(&l.stop, true);
        pthread_join(t, NULL);
        /* the event log wrote and read back through all of it without one error */
        TEST_RESULT(atomic_load(&l.errors) == 0, "event log errors: %lu (%s)", atomic_load(&l.errors), l.first_error);
        TEST_RESULT(overlapped > 0, "the event log wrote during %u of %u hostile operations (%lu rows)", overlapped,
                    rounds + 1, atomic_load(&l.writes));
        char side[160];
        unlink(l.path);
        snprintf(side, sizeof(side), "%s-wal", l.path);
        unlink(side);
        snprintf(side, sizeof(side), "%s-shm", l.path);
        unlink(side);
        CHECK_EQ_INT(hd_store_open(dir_fd, &(hd_store_opts){.sqlite_mem_bytes = 1000}, &(hd_store *){NULL}, &e),
                     -EINVAL);
        hd_store_free(s);
}

int main(void) {
        snprintf(dir, sizeof(dir), "/tmp/test-hd-store-XXXXXX");
        if (!mkdtemp(dir))
                return 1;
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        hd_store *s = open_store();
        test_kinds(s);
        test_tables(s);
        test_ids(s);
        test_spill(s);
        hd_store_free(s);
        test_integrity();
        test_hostile();
        test_query();
        test_memory();
        close(dir_fd);
        rm_rf_at(AT_FDCWD, dir);
        return test_done();
}
