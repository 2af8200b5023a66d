/* test-sqlite-mem.c: SQLite's accounting allocator: allocations inside a scope are charged to
 * its budget and refused past it; outside a scope nothing is charged or refused; a free credits
 * the budget the block was charged to, on any thread and after its scope ended; scopes nest. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "dlib-sqlite3.h"
#include "sqlite-mem.h"
#include "test.h"

#define MIB (1ULL << 20)

static sqlite3 *open_memory(void) {
        sqlite3 *db = NULL;
        if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
                return NULL;
        return db;
}

/* The rc of one statement that makes a blob of n bytes. */
static int blob(sqlite3 *db, unsigned n) {
        char sql[64];
        snprintf(sql, sizeof(sql), "SELECT length(randomblob(%u))", n);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        return rc == SQLITE_ROW && sqlite3_column_int64(st, 0) == n ? SQLITE_OK : rc;
}

static void *blob_elsewhere(void *db) {
        return (void *) (intptr_t) blob(db, 8 * MIB);
}

static void *close_elsewhere(void *db) {
        sqlite3_close_v2(db);
        return NULL;
}

int main(void) {
        hull_error e = {0};
        CHECK(dlib_sqlite3_load(&e) != NULL);

        /* outside a scope: not charged, not bounded here */
        sqlmem_scope none = {0};
        CHECK(!sqlmem_refused(&none));
        CHECK_EQ_INT(sqlmem_used(&none), 0);
        sqlite3 *free_db = open_memory();
        CHECK(free_db != NULL);
        CHECK_EQ_INT(blob(free_db, 8 * MIB), SQLITE_OK);

        /* inside: charged, and refused past the budget with SQLITE_NOMEM */
        sqlmem_scope s = {0};
        CHECK_EQ_INT(sqlmem_begin(&s, 4 * MIB), 0);
        sqlite3 *db = open_memory();
        CHECK(db != NULL);
        uint64_t opened = sqlmem_used(&s);
        TEST_RESULT(opened > 0 && opened < MIB, "a connection charged %llu bytes", (unsigned long long) opened);
        CHECK_EQ_INT(blob(db, MIB), SQLITE_OK);
        CHECK(!sqlmem_refused(&s));
        CHECK_EQ_INT(blob(db, 8 * MIB), SQLITE_NOMEM);
        CHECK(sqlmem_refused(&s));
        /* another thread, at the same time, is not charged */
        pthread_t t;
        void *rc;
        CHECK_EQ_INT(pthread_create(&t, NULL, blob_elsewhere, free_db), 0);
        pthread_join(t, &rc);
        CHECK_EQ_INT((intptr_t) rc, SQLITE_OK);
        /* nothing of the failed statement stays charged */
        CHECK_EQ_INT(sqlmem_used(&s), opened);
        /* a nested scope shares the budget */
        sqlmem_scope inner = {0};
        CHECK_EQ_INT(sqlmem_begin(&inner, 64 * MIB), 0);
        CHECK(inner.budget == s.budget);
        CHECK_EQ_INT(blob(db, 8 * MIB), SQLITE_NOMEM);
        sqlmem_end(&inner);
        CHECK(inner.budget == NULL);
        sqlmem_end(&inner); /* twice is harmless */
        /* an unbounded scope inside it charges nobody, and the budget is back after it */
        uint64_t before = sqlmem_used(&s);
        sqlmem_scope free_scope;
        sqlmem_begin_unbounded(&free_scope);
        CHECK_EQ_INT(blob(db, 8 * MIB), SQLITE_OK);
        CHECK(!sqlmem_refused(&free_scope));
        CHECK_EQ_INT(sqlmem_used(&s), before);
        sqlmem_end(&free_scope);
        sqlmem_end(&free_scope); /* twice is harmless */
        CHECK_EQ_INT(blob(db, 8 * MIB), SQLITE_NOMEM);
        /* the connection outlives the scope and is closed on another thread: its blocks credit
         * the ended budget, which is freed with the last one (ASan watches) */
        sqlmem_end(&s);
        CHECK(s.budget == NULL);
        CHECK(!sqlmem_refused(&s));
        CHECK_EQ_INT(pthread_create(&t, NULL, close_elsewhere, db), 0);
        pthread_join(t, NULL);
        /* after the scope: not bounded any more */
        CHECK_EQ_INT(blob(free_db, 8 * MIB), SQLITE_OK);

        /* a scope whose connection is closed inside it gives every byte back */
        CHECK_EQ_INT(sqlmem_begin(&s, 4 * MIB), 0);
        db = open_memory();
        CHECK(db != NULL);
        CHECK_EQ_INT(blob(db, 2 * MIB), SQLITE_OK);
        sqlite3_close_v2(db);
        CHECK_EQ_INT(sqlmem_used(&s), 0);
        sqlmem_end(&s);

        /* a budget refuses a single allocation larger than itself, even when nothing is charged */
        CHECK_EQ_INT(sqlmem_begin(&s, MIB), 0);
        db = open_memory();
        CHECK(db != NULL);
        CHECK_EQ_INT(blob(db, 2 * MIB), SQLITE_NOMEM);
        sqlite3_close_v2(db);
        sqlmem_end(&s);

        sqlite3_close_v2(free_db);
        return test_done();
}
