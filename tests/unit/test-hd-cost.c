/* test-hd-cost.c: what the store's fast paths must not cost again (issue 26), counted, never
 * timed: a JSON put parses the JSON once (validation and shape in one pass, not two), and a
 * table adopted from a file only this process can reach (the daemon's O_TMPFILE upload) is
 * parsed in place, with no copy into the store, while any other file is still copied first. A
 * result in memory (a tool's bytes) is validated, written and hashed once each, never read back;
 * a json_t result is serialized once, streamed into the store. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "hd-store.h"
#include "limits.h"
#include "macro.h"
#include "test.h"

static char dir[64];
static int dir_fd;

static hd_store_io io_now(hd_store *s) {
        hd_store_io io;
        hd_store_io_get(s, &io);
        return io;
}

/* Files in the store besides the manifest and the handles named (a put's ".tmp-" files
 * included): none may be left over. */
static int strays(void) {
        int n = 0;
        DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d)))
                if ((de->d_name[0] != '.' && !hd_store_owns_name(de->d_name)) || strncmp(de->d_name, ".tmp-", 5) == 0)
                        n++;
        if (d)
                closedir(d);
        return n;
}

/* A JSON array of objects filling nearly cap bytes, each with an id and a name, or (numbers) an id
 * and an array of a real and a boolean. NULL when no memory. */
static char *json_array_of(size_t cap, bool numbers, size_t *ret_len) {
        char *buf = malloc(cap);
        CHECK(buf != NULL);
        if (!buf)
                return NULL;
        size_t len = 0;
        buf[len++] = '[';
        for (int i = 0; len + 64 < cap; i++) {
                if (i)
                        buf[len++] = ',';
                len += (size_t) (numbers ? snprintf(buf + len, cap - len, "{\"id\":%d,\"v\":[%d.5,true]}", i, i)
                                         : snprintf(buf + len, cap - len, "{\"id\":%d,\"name\":\"n%d\"}", i, i));
        }
        buf[len++] = ']';
        *ret_len = len;
        return buf;
}

static void test_json_once(hd_store *s) {
        size_t len = 0;
        char *buf = json_array_of(1 << 20, false, &len);
        if (!buf)
                return;
        hull_error e = {0};
        json_t *sum = NULL;
        hd_store_io a = io_now(s);
        CHECK_EQ_INT(hd_put(s, "big", HD_FORMAT_JSON, "test", buf, len, &sum, &e), 0);
        hd_store_io b = io_now(s);
        CHECK_EQ_INT(b.bytes_scanned - a.bytes_scanned, len); /* one pass, not two */
        CHECK_EQ_INT(b.bytes_copied - a.bytes_copied, 0);
        /* a byte result: written once and hashed once, on the way in (the file is not read back) */
        CHECK_EQ_INT(b.bytes_written - a.bytes_written, len);
        CHECK_EQ_INT(b.bytes_hashed - a.bytes_hashed, len);
        CHECK_EQ_INT(b.values_serialized - a.values_serialized, 0);
        CHECK(json_object_get(sum, "shape") != NULL);
        json_decref(sum);
        /* text: checked, written and hashed once each */
        a = io_now(s);
        CHECK_EQ_INT(hd_put(s, "text", HD_FORMAT_TEXT, "test", buf, len, &sum, &e), 0);
        b = io_now(s);
        CHECK_EQ_INT(b.bytes_written - a.bytes_written, len);
        CHECK_EQ_INT(b.bytes_hashed - a.bytes_hashed, len);
        CHECK_EQ_INT(b.bytes_scanned - a.bytes_scanned, 0);
        json_decref(sum);
        /* invalid JSON is still refused, with the parser's reason, and leaves nothing behind:
         * refused before any byte is written */
        buf[len - 1] = ',';
        sum = NULL;
        a = io_now(s);
        CHECK(hd_put(s, "bad", HD_FORMAT_JSON, "test", buf, len, &sum, &e) < 0);
        b = io_now(s);
        CHECK_EQ_INT(b.bytes_written - a.bytes_written, 0);
        CHECK(e.msg[0] != '\0');
        CHECK_EQ_INT(hd_summary(s, "bad", &sum, NULL), -ENOENT);
        CHECK(faccessat(dir_fd, "bad.json", F_OK, 0) < 0);
        CHECK_EQ_INT(strays(), 0);
        free(buf);
}

/* A long text put from its NUL-terminated string (hd_put_text, a tool's long output): its length
 * found beside its hash, each byte written and hashed exactly once, never scanned as JSON; over
 * its bound or not UTF-8: refused with no handle, no file and no byte written. A refused text is
 * hashed whole all the same: the hash runs beside the check, not after its verdict. */
static void test_text_stream(hd_store *s) {
        size_t len = HD_HASH_THREAD_MIN + 3 * HD_IO_CHUNK + 7;
        char *text = malloc(len + 1);
        CHECK(text != NULL);
        if (!text)
                return;
        for (size_t i = 0; i < len;) { /* "line é\n": two-byte characters across the chunks */
                static const char line[] = "line \xc3\xa9\n";
                size_t m = MIN(sizeof(line) - 1, len - i);
                memcpy(text + i, line, m);
                i += m;
        }
        CHECK_EQ_INT(len % 8, 7); /* ends with "line \xc3\xa9": no character cut */
        text[len] = '\0';
        hull_error e = {0};
        json_t *sum = NULL;
        hd_store_io a = io_now(s);
        CHECK_EQ_INT(hd_put_text(s, "long", "test", text, len, &sum, &e), 0); /* the bound is inclusive */
        hd_store_io b = io_now(s);
        CHECK_EQ_INT(b.bytes_written - a.bytes_written, len);
        CHECK_EQ_INT(b.bytes_hashed - a.bytes_hashed, len);
        CHECK_EQ_INT(b.bytes_scanned - a.bytes_scanned, 0);
        CHECK_EQ_INT(json_integer_value(json_object_get(sum, "bytes")), len);
        CHECK_EQ_STR(json_string_value(json_object_get(sum, "kind")), "text");
        json_decref(sum);
        int fd = openat(dir_fd, "long.txt", O_RDONLY | O_CLOEXEC);
        char *got = malloc(len + 1);
        CHECK(fd >= 0 && got && read(fd, got, len + 1) == (ssize_t) len && memcmp(got, text, len) == 0);
        if (fd >= 0)
                close(fd);
        free(got);
        /* the same bytes with their length (hd_put): hashed on a thread from HD_HASH_THREAD_MIN */
        a = io_now(s);
        CHECK_EQ_INT(hd_put(s, "sized", HD_FORMAT_TEXT, "test", text, len, &sum, &e), 0);
        b = io_now(s);
        CHECK_EQ_INT(b.bytes_written - a.bytes_written, len);
        CHECK_EQ_INT(b.bytes_hashed - a.bytes_hashed, len);
        json_decref(sum);
        /* not JSON: refused by the scan, no handle, no file (a big JSON is written beside its
         * scan: what was written is removed) */
        a = io_now(s);
        CHECK(hd_put(s, "notjson", HD_FORMAT_JSON, "test", text, len, &sum, &e) < 0);
        b = io_now(s);
        CHECK(b.bytes_written - a.bytes_written <= len && b.bytes_hashed - a.bytes_hashed <= len);
        CHECK_EQ_INT(b.bytes_scanned - a.bytes_scanned, len);
        CHECK_EQ_INT(hd_summary(s, "notjson", &sum, NULL), -ENOENT);
        CHECK_EQ_INT(strays(), 0);
        /* one byte over its bound */
        a = io_now(s);
        CHECK_EQ_INT(hd_put_text(s, "over", "test", text, len - 1, &sum, &e), -EFBIG);
        b = io_now(s);
        CHECK_EQ_INT(b.bytes_written - a.bytes_written, 0);
        CHECK_EQ_INT(hd_summary(s, "over", &sum, NULL), -ENOENT);
        /* a byte that is not UTF-8, past the first chunks: refused, nothing written, all hashed */
        text[HD_HASH_THREAD_MIN + HD_IO_CHUNK] = (char) 0xff;
        a = io_now(s);
        CHECK_EQ_INT(hd_put_text(s, "bad", "test", text, 0, &sum, &e), -EILSEQ);
        b = io_now(s);
        CHECK_EQ_INT(b.bytes_written - a.bytes_written, 0);
        CHECK_EQ_INT(b.bytes_hashed - a.bytes_hashed, len);
        CHECK_EQ_INT(hd_summary(s, "bad", &sum, NULL), -ENOENT);
        /* a short text (found and hashed at once) and its bound */
        text[100] = '\0';
        CHECK_EQ_INT(hd_put_text(s, "short", "test", text, 99, &sum, &e), -EFBIG);
        a = io_now(s);
        CHECK_EQ_INT(hd_put_text(s, "short", "test", text, 100, &sum, &e), 0);
        b = io_now(s);
        CHECK_EQ_INT(b.bytes_written - a.bytes_written, 100);
        CHECK_EQ_INT(b.bytes_hashed - a.bytes_hashed, 100);
        json_decref(sum);
        CHECK_EQ_INT(strays(), 0);
        free(text);
}

/* A big JSON put (from HD_HASH_THREAD_MIN on): hashed and written on a thread beside its scan,
 * each byte scanned, written and hashed exactly once; refused at its last byte (the thread
 * has written most of it by then): no handle and no file left. */
static void test_json_beside(hd_store *s) {
        size_t len = 0;
        char *buf = json_array_of(HD_HASH_THREAD_MIN + 2 * HD_IO_CHUNK, true, &len);
        if (!buf)
                return;
        hull_error e = {0};
        json_t *sum = NULL;
        hd_store_io a = io_now(s);
        CHECK_EQ_INT(hd_put(s, "bigjson", HD_FORMAT_JSON, "test", buf, len, &sum, &e), 0);
        hd_store_io b = io_now(s);
        CHECK_EQ_INT(b.bytes_scanned - a.bytes_scanned, len);
        CHECK_EQ_INT(b.bytes_written - a.bytes_written, len);
        CHECK_EQ_INT(b.bytes_hashed - a.bytes_hashed, len);
        CHECK(json_object_get(sum, "shape") != NULL);
        json_decref(sum);
        int fd = openat(dir_fd, "bigjson.json", O_RDONLY | O_CLOEXEC);
        char *got = malloc(len + 1);
        CHECK(fd >= 0 && got && read(fd, got, len + 1) == (ssize_t) len && memcmp(got, buf, len) == 0);
        if (fd >= 0)
                close(fd);
        free(got);
        buf[len - 1] = ',';
        CHECK(hd_put(s, "badjson", HD_FORMAT_JSON, "test", buf, len, &sum, &e) < 0);
        CHECK(e.msg[0] != '\0');
        CHECK_EQ_INT(hd_summary(s, "badjson", &sum, NULL), -ENOENT);
        CHECK_EQ_INT(strays(), 0);
        free(buf);
}

/* A json_t result: serialized once, streamed into the store (no string of it), each byte
 * written, hashed and scanned once; the stored bytes are json_dumps's; too big: refused with
 * no handle and no file. */
static void test_value_stream(hd_store *s) {
        json_t *v = json_array();
        for (int i = 0; i < 20000; i++)
                json_array_append_new(v, json_pack("{s:i, s:s, s:f, s:b}", "id", i, "name", "x\"y", "score",
                                                   (double) i / 8.0, "ok", i % 2));
        char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        CHECK(want != NULL);
        if (!want) {
                json_decref(v);
                return;
        }
        size_t len = strlen(want);
        hull_error e = {0};
        json_t *sum = NULL;
        hd_store_io a = io_now(s);
        CHECK_EQ_INT(hd_put_value(s, "val", "test", v, JSON_COMPACT | JSON_ENCODE_ANY, 0, &sum, &e), 0);
        hd_store_io b = io_now(s);
        CHECK_EQ_INT(b.values_serialized - a.values_serialized, 1);
        CHECK_EQ_INT(b.bytes_written - a.bytes_written, len);
        CHECK_EQ_INT(b.bytes_hashed - a.bytes_hashed, len);
        CHECK_EQ_INT(b.bytes_scanned - a.bytes_scanned, len);
        CHECK_EQ_INT(json_integer_value(json_object_get(sum, "bytes")), len);
        CHECK(json_object_get(sum, "shape") != NULL);
        json_decref(sum);
        /* the same bytes as json_dumps, and their digest checks out */
        int fd = openat(dir_fd, "val.json", O_RDONLY | O_CLOEXEC);
        char *got = malloc(len + 1);
        CHECK(fd >= 0 && got && read(fd, got, len + 1) == (ssize_t) len && memcmp(got, want, len) == 0);
        if (fd >= 0)
                close(fd);
        free(got);
        /* a second store on the directory has verified nothing yet: its reads hash the files */
        hd_store *fresh = NULL;
        CHECK_EQ_INT(hd_store_open(dir_fd, NULL, &fresh, &e), 0);
        const char *ids[] = {"big", "text", "val", "long", "sized", "short", "bigjson"};
        for (size_t i = 0; fresh && i < ELEMENTSOF(ids); i++) {
                CHECK_EQ_INT(hd_read(fresh, ids[i], 0, 16, &sum, &e), 0);
                json_decref(sum);
        }
        hd_store_free(fresh);
        /* over the bound: refused, nothing left */
        CHECK_EQ_INT(hd_put_value(s, "toobig", "test", v, JSON_COMPACT, len / 2, &sum, &e), -EFBIG);
        CHECK_EQ_INT(hd_summary(s, "toobig", &sum, NULL), -ENOENT);
        CHECK_EQ_INT(strays(), 0);
        free(want);
        json_decref(v);
}

static int csv_fd(bool own, size_t *ret_len) {
        int fd = own ? openat(dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)
                     : openat(dir_fd, "upload.csv", O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
        size_t len = 0;
        char line[64];
        len += (size_t) write(fd, "id,name,x\n", 10);
        for (int i = 0; i < 20000; i++) {
                int n = snprintf(line, sizeof(line), "%d,name %d,%d.5\n", i, i, i % 7);
                len += (size_t) write(fd, line, (size_t) n);
        }
        *ret_len = len;
        return fd;
}

static void test_adopt(hd_store *s) {
        hull_error e = {0};
        json_t *sum = NULL;
        size_t len = 0;
        /* the daemon's upload: unlinked, ours, 0600: parsed in place */
        int fd = csv_fd(true, &len);
        CHECK(fd >= 0);
        hd_store_io a = io_now(s);
        CHECK_EQ_INT(hd_adopt_own_fd(s, fd, "own", HD_FORMAT_CSV, "test", &sum, &e), 0);
        hd_store_io b = io_now(s);
        CHECK_EQ_INT(b.bytes_copied - a.bytes_copied, 0);
        CHECK_EQ_INT(json_integer_value(json_object_get(sum, "n_rows")), 20000);
        json_decref(sum);
        close(fd);
        /* a file with a name (anyone with access may change it): still copied first, even
         * through hd_adopt_own_fd */
        fd = csv_fd(false, &len);
        a = io_now(s);
        CHECK_EQ_INT(hd_adopt_own_fd(s, fd, "named", HD_FORMAT_CSV, "test", &sum, &e), 0);
        b = io_now(s);
        CHECK_EQ_INT(b.bytes_copied - a.bytes_copied, len);
        json_decref(sum);
        a = io_now(s);
        CHECK_EQ_INT(hd_adopt_fd(s, fd, "plain", HD_FORMAT_CSV, "test", &sum, &e), 0);
        b = io_now(s);
        CHECK_EQ_INT(b.bytes_copied - a.bytes_copied, len);
        json_decref(sum);
        close(fd);
        CHECK_EQ_INT(unlinkat(dir_fd, "upload.csv", 0), 0);
        /* an O_TMPFILE others may read is not trusted */
        fd = csv_fd(true, &len);
        CHECK_EQ_INT(fchmod(fd, 0644), 0);
        a = io_now(s);
        CHECK_EQ_INT(hd_adopt_own_fd(s, fd, "shared", HD_FORMAT_CSV, "test", &sum, &e), 0);
        b = io_now(s);
        CHECK_EQ_INT(b.bytes_copied - a.bytes_copied, len);
        json_decref(sum);
        close(fd);
        CHECK_EQ_INT(strays(), 0);
}

int main(void) {
        snprintf(dir, sizeof(dir), "/tmp/test-hd-cost-XXXXXX");
        if (!mkdtemp(dir))
                return 1;
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        hd_store *s = NULL;
        hull_error e = {0};
        if (hd_store_open(dir_fd, NULL, &s, &e) < 0) {
                printf("# open: %s\n", e.msg);
                return 1;
        }
        test_json_once(s);
        test_text_stream(s);
        test_json_beside(s);
        test_value_stream(s);
        test_adopt(s);
        hd_store_free(s);
        close(dir_fd);
        rm_rf_at(AT_FDCWD, dir);
        return test_done();
}
