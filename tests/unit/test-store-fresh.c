/* test-store-fresh.c: a fresh hull.db is made in one go (store-sqlite.c's make_fresh: built beside
 * its place, then linked in) and equals one made by the numbered migrations one by one (an empty
 * file already there takes that way): the same sqlite_master (types, names, tables, SQL), the same
 * user_version, WAL mode and 0600. Made in one go, its WAL holds nothing after the open (the
 * migrations, one transaction each, leave their pages there), and no temporary file is left. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlib-sqlite3.h"
#include "fs-util.h"
#include "store.h"
#include "test.h"

static char dir[64];

/* sqlite_master without rootpage (where each b-tree landed), in name order, and the pragmas */
static char *schema_of(const char *path) {
        sqlite3 *db = NULL;
        CHECK_EQ_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        sqlite3_stmt *st = NULL;
        CHECK_EQ_INT(sqlite3_prepare_v2(db,
                                        "SELECT type || '|' || name || '|' || tbl_name || '|' || ifnull(sql, '') FROM "
                                        "sqlite_master ORDER BY name",
                                        -1, &st, NULL),
                     SQLITE_OK);
        size_t cap = 1 << 16, len = 0;
        char *out = calloc(1, cap);
        while (st && sqlite3_step(st) == SQLITE_ROW)
                len += (size_t) snprintf(out + len, cap - len, "%s\n", (const char *) sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        static const char *const pragmas[] = {"PRAGMA user_version", "PRAGMA journal_mode"};
        for (size_t i = 0; i < ELEMENTSOF(pragmas); i++) {
                CHECK_EQ_INT(sqlite3_prepare_v2(db, pragmas[i], -1, &st, NULL), SQLITE_OK);
                if (st && sqlite3_step(st) == SQLITE_ROW)
                        len += (size_t) snprintf(out + len, cap - len, "%s=%s\n", pragmas[i],
                                                 (const char *) sqlite3_column_text(st, 0));
                sqlite3_finalize(st);
        }
        CHECK(len < cap - 1);
        sqlite3_close_v2(db);
        return out;
}

static long wal_size(const char *path) {
        char wal[160];
        snprintf(wal, sizeof(wal), "%s-wal", path);
        struct stat st;
        return stat(wal, &st) == 0 ? (long) st.st_size : 0;
}

int main(void) {
        hull_error e = {0};
        if (!dlib_sqlite3_load(&e)) {
                printf("skip - sqlite: %s\n", e.msg);
                return 77;
        }
        snprintf(dir, sizeof(dir), "/tmp/hull-test-store-fresh-XXXXXX");
        if (!mkdtemp(dir))
                return 1;
        char fresh[128], migrated[128];
        snprintf(fresh, sizeof(fresh), "%s/fresh.db", dir);
        snprintf(migrated, sizeof(migrated), "%s/migrated.db", dir);

        /* no file: made in one go */
        store *s = NULL;
        CHECK_EQ_INT(store_open(fresh, &s, &e), 0);
        CHECK_EQ_INT(store_user_version(s), store_schema_version());
        TEST_RESULT(wal_size(fresh) == 0, "a fresh store's WAL is empty after its open (%ld bytes)", wal_size(fresh));
        store_close(s);

        /* an empty file there: the numbered migrations, one transaction each */
        int fd = open(migrated, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        CHECK(fd >= 0);
        close(fd);
        s = NULL;
        CHECK_EQ_INT(store_open(migrated, &s, &e), 0);
        CHECK_EQ_INT(store_user_version(s), store_schema_version());
        TEST_RESULT(wal_size(migrated) > 0, "the migrations wrote their pages to the WAL (%ld bytes)",
                    wal_size(migrated));
        store_close(s);

        char *a = schema_of(fresh), *b = schema_of(migrated);
        TEST_RESULT(strcmp(a, b) == 0, "one go and the migrations give one schema (%zu bytes)", strlen(a));
        if (strcmp(a, b) != 0)
                printf("# one go:\n%s# migrations:\n%s", a, b);
        char want[64];
        snprintf(want, sizeof(want), "PRAGMA user_version=%d\nPRAGMA journal_mode=wal\n", store_schema_version());
        TEST_RESULT(strstr(a, want) != NULL, "user_version %d and WAL mode", store_schema_version());
        TEST_RESULT(strstr(a, "table|sessions|sessions|CREATE TABLE sessions") != NULL, "the sessions table is there");
        free(a);
        free(b);

        struct stat st;
        CHECK(stat(fresh, &st) == 0 && (st.st_mode & 0777) == 0600 && st.st_nlink == 1);
        /* nothing left beside it: only the two stores and their -wal/-shm */
        DIR *d = opendir(dir);
        CHECK(d != NULL);
        unsigned stray = 0;
        for (struct dirent *de; d && (de = readdir(d));)
                if (strstr(de->d_name, ".new-"))
                        stray++;
        if (d)
                closedir(d);
        TEST_RESULT(stray == 0, "no temporary file left (%u)", stray);

        /* reopened: the same store, nothing made again */
        s = NULL;
        CHECK_EQ_INT(store_open(fresh, &s, &e), 0);
        CHECK_EQ_INT(store_user_version(s), store_schema_version());
        store_close(s);

        rm_rf_at(AT_FDCWD, dir);
        return test_done();
}
