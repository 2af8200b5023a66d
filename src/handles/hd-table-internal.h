/* hd-table-internal.h: what hd-table.c, hd-table-ingest.c and hd-table-query.c share (defined in
 * hd-table-db.c); not part of any API. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dlib-sqlite3.h"
#include "error.h"
#include "hd-csv.h"

/* The one table of a table file. */
#define TABLE "data"

/* ---- connections ---- */

/* A time budget, enforced by a progress handler (hdt_db_open). */
typedef struct budget {
        uint64_t deadline_ns;
        bool expired;
} budget;

void hdt_budget_start(budget *b, uint64_t ms);

/* Map an SQLite failure to errno and a message (b may be NULL; an expired budget is
 * -ETIMEDOUT). Returns the negative errno, never 0. */
int hdt_sql_fail(sqlite3 *db, int rc, const budget *b, hull_error *e, const char *what);

enum { DB_READ, DB_CREATE };

/* Open name below dir_fd (NULL: the in-memory query connection) read-only (immutable) or created,
 * with SQLite's defensive settings and limits (at most attached attachments) and, when b is not
 * NULL, b's progress handler. Returns 0 and *ret (sqlite3_close), or a negative errno (-ENOSYS:
 * no SQLite). */
int hdt_db_open(int dir_fd, const char *name, int mode, budget *b, unsigned attached, sqlite3 **ret, hull_error *e);

/* "name" with quotes doubled, into a new string (the caller frees); NULL when out of memory. */
char *hdt_quote_ident(const char *name);

/* ---- columns ---- */

typedef struct column {
        char *name;
        hd_type type;
} column;

typedef struct columns {
        column *c;
        size_t n;
        /* open addressing over names, for JSON records */
        int32_t *slots;
        size_t n_slots;
} columns;

/* Free what cs holds (not cs). */
void hdt_columns_done(columns *cs);

/* 64-bit FNV-1a of p[0..n) with seed, mixed. Pure. */
uint64_t hdt_hash_bytes(const void *p, size_t n, uint64_t seed);

/* The index of the column named name[0..n), or -1. */
int hdt_columns_find(columns *cs, const char *name, size_t n);

/* Add a column named name[0..n) (made unique, "col_N" when empty). Returns its index, or -E2BIG,
 * -ENOMEM, -EBADMSG (a NUL byte), -EILSEQ (not UTF-8). */
int hdt_columns_add(columns *cs, const char *name, size_t n, hull_error *e);

/* Step st (an INSERT) and reset it. Returns 0 or hdt_sql_fail's errno. */
int hdt_step_insert(sqlite3 *db, sqlite3_stmt *st, hull_error *e);

/* ---- values ---- */

/* A declared SQL type as a summary's type name ("any" when none). Returns a static string. */
const char *hdt_decl_type_name(const char *decl);

/* p[0..n) as a JSON string (invalid UTF-8 repaired; null when out of memory). New reference. */
json_t *hdt_text_json(const char *p, size_t n);

/* Column i of st's current row as JSON (a blob as "<blob, N bytes>"). New reference. */
json_t *hdt_column_json(sqlite3_stmt *st, int i);
