/* test-store-files.c: the store's files and blobs on each backend (SQLite, and PostgreSQL when
 * tests/unit/test-store-pg.sh gives HULL_TEST_PG_URL): a blob of several chunks kept and read back
 * byte for byte, two files sharing one blob (kept until the last goes), an empty file, the files
 * list newest first paged both ways and by scope, unknown ids, and the rows copied by hull db. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlib-sqlite3.h"
#include "fs-util.h"
#include "sha256.h"
#include "store-testlib.h"
#include "store.h"
#include "test.h"

static char dir[64];

/* A temporary file of n bytes of a pattern (seeded), its digest into sha. */
static int blob_file(size_t n, unsigned seed, char sha[static SHA256_HEX_SIZE]) {
        char path[128];
        snprintf(path, sizeof(path), "%s/blob-XXXXXX", dir);
        int fd = mkstemp(path);
        unlink(path);
        unsigned char *b = malloc(n ? n : 1);
        for (size_t i = 0; i < n; i++)
                b[i] = (unsigned char) ((i * 31 + seed) ^ (i >> 11));
        CHECK(write(fd, b, n) == (ssize_t) n);
        sha256_hex(b, n, sha);
        free(b);
        return fd;
}

typedef struct sink {
        sha256_ctx c;
        size_t n;
} sink;

static int to_sink(void *ud, const void *p, size_t n, hull_error *e) {
        (void) e;
        sink *s = ud;
        s->n += n;
        return sha256_update(&s->c, p, n);
}

static json_t *file_obj(const char *id, unsigned sec, size_t size) {
        char t[STORE_TIME_MAX];
        return json_pack("{s:s, s:s, s:s, s:s, s:I}", "id", id, "type", "file", "created_at", time_of(sec, t),
                         "filename", "x.bin", "size_bytes", (json_int_t) size);
}

static void read_back(store *s, const char *sha, size_t want_n) {
        sink k = {0};
        hull_error e = {0};
        sha256_init(&k.c);
        CHECK_EQ_INT(store_blob_read(s, sha, to_sink, &k, &e), 0);
        char got[SHA256_HEX_SIZE];
        sha256_final_hex(&k.c, got);
        sha256_done(&k.c);
        CHECK(k.n == want_n);
        CHECK_EQ_STR(got, sha);
}

static void test_files(store *s) {
        hull_error e = {0};
        char sha[SHA256_HEX_SIZE], sha0[SHA256_HEX_SIZE];
        size_t big = 2 * STORE_BLOB_CHUNK_BYTES + 12345;
        int fd = blob_file(big, 7, sha), fd0 = blob_file(0, 0, sha0);
        json_t *a = file_obj("file_a", 1, big), *b = file_obj("file_b", 2, big), *z = file_obj("file_z", 3, 0);
        CHECK_EQ_INT(store_file_insert(s, a, NULL, sha, (int64_t) big, fd, &e), 0);
        CHECK_EQ_INT(store_file_insert(s, b, "sesn_1", sha, (int64_t) big, fd, &e), 0); /* the same bytes */
        CHECK_EQ_INT(store_file_insert(s, z, NULL, sha0, 0, fd0, &e), 0);
        CHECK_EQ_INT(store_file_insert(s, a, NULL, sha, (int64_t) big, fd, &e), -EEXIST);
        CHECK_EQ_INT(store_file_insert(s, a, NULL, "nothex", (int64_t) big, fd, &e), -EINVAL);
        read_back(s, sha, big);
        read_back(s, sha0, 0);

        json_t *got = NULL;
        char gsha[SHA256_HEX_SIZE];
        CHECK_EQ_INT(store_file_get(s, "file_b", &got, gsha, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(got, "id")), "file_b");
        CHECK_EQ_STR(gsha, sha);
        json_decref(got);
        CHECK_EQ_INT(store_file_get(s, "file_nope", &got, NULL, &e), -ENOENT);

        /* newest first, paged down and back up */
        json_t *page = NULL;
        bool more = false;
        CHECK_EQ_INT(store_file_list(s, &(store_files_q){.limit = 2}, &page, &more, &e), 0);
        CHECK(json_array_size(page) == 2 && more);
        CHECK_EQ_STR(sid(json_array_get(page, 0)), "file_z");
        CHECK_EQ_STR(sid(json_array_get(page, 1)), "file_b");
        json_decref(page);
        CHECK_EQ_INT(store_file_list(s, &(store_files_q){.limit = 2, .after_id = "file_b"}, &page, &more, &e), 0);
        CHECK(json_array_size(page) == 1 && !more);
        CHECK_EQ_STR(sid(json_array_get(page, 0)), "file_a");
        json_decref(page);
        CHECK_EQ_INT(store_file_list(s, &(store_files_q){.limit = 1, .before_id = "file_a"}, &page, &more, &e), 0);
        CHECK(json_array_size(page) == 1 && more);
        CHECK_EQ_STR(sid(json_array_get(page, 0)), "file_b");
        json_decref(page);
        CHECK_EQ_INT(store_file_list(s, &(store_files_q){.limit = 5, .scope_id = "sesn_1"}, &page, &more, &e), 0);
        CHECK(json_array_size(page) == 1 && !more);
        json_decref(page);
        CHECK_EQ_INT(store_file_list(s, &(store_files_q){.limit = 5, .after_id = "file_gone"}, &page, &more, &e),
                     -ENOENT);

        /* the blob stays while a file holds it */
        CHECK_EQ_INT(store_file_delete(s, "file_a", &e), 0);
        read_back(s, sha, big);
        CHECK_EQ_INT(store_file_delete(s, "file_a", &e), -ENOENT);
        CHECK_EQ_INT(store_file_delete(s, "file_b", &e), 0);
        sink k = {0};
        CHECK_EQ_INT(store_blob_read(s, sha, to_sink, &k, &e), -ENOENT);
        json_decref(a);
        json_decref(b);
        json_decref(z);
        close(fd);
        close(fd0);
}

static void test_backend(const char *url) {
        printf("# store at %s\n", url);
        store *s = NULL;
        hull_error e = {0};
        if (store_open(url, &s, &e) < 0) {
                printf("not ok - open %s: %s\n", url, e.msg);
                exit(1);
        }
        test_files(s);
        store_close(s);
}

int main(void) {
        hull_error e = {0};
        if (!dlib_sqlite3_load(&e)) {
                printf("skip - sqlite: %s\n", e.msg);
                return 77;
        }
        snprintf(dir, sizeof(dir), "/tmp/hull-test-store-files-XXXXXX");
        if (!mkdtemp(dir))
                return 1;
        char db[128];
        snprintf(db, sizeof(db), "%s/hull.db", dir);
        const char *pg = getenv("HULL_TEST_PG_URL");
        test_backend(db);
        if (pg && *pg)
                test_backend(pg);
        rm_rf_at(AT_FDCWD, dir);
        return test_done();
}
