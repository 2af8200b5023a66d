/* hd-table.h: table handles as hd-store.c uses them: ingest, the defensive check of an adopted
 * SQLite file, summaries, inspect and queries (hd-table*.c). Internal: the contracts callers see
 * are hd-store.h's. Every function returns 0 or a negative errno and fills *e. */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "hd-types.h"

/* Ingest buf[0..len) in format f (CSV, TSV, JSON_ARRAY, JSON_LINES) into a new SQLite file
 * name below dir_fd (created; removed on failure). */
int hd_table_ingest(int dir_fd, const char *name, hd_format f, const char *buf, size_t len, hull_error *e);

/* Check an SQLite file name below dir_fd of size bytes defensively (hd_adopt_fd's rules). */
int hd_table_check(int dir_fd, const char *name, uint64_t size, hull_error *e);

/* Add "table", "schema", "n_rows", "n_cols" and "preview" to summary from the SQLite file. */
int hd_table_summary(int dir_fd, const char *name, json_t *summary, hull_error *e);

/* Add "columns", "head", "tail" and "stats" for hd_inspect. */
int hd_table_inspect(int dir_fd, const char *name, const hd_inspect_opts *o, json_t *out, hull_error *e);

typedef struct hd_query_table {
        const char *id;   /* schema name */
        const char *name; /* file below dir_fd */
} hd_query_table;

/* Run sql over the tables; small results → *ret_inline; larger → written to the new SQLite
 * file out_name below dir_fd and *ret_inline = NULL. */
int hd_table_query(int dir_fd, const char *sql, const hd_query_table *t, size_t n, uint64_t time_ms, uint64_t max_rows,
                   uint64_t max_bytes, const char *out_name, json_t **ret_inline, hull_error *e);
