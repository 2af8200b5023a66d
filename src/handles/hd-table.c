/* hd-table.c: reading table handles: checking adopted SQLite files defensively, summaries and
 * inspect (with a HyperLogLog distinct estimate). Ingest is in hd-table-ingest.c, queries in
 * hd-table-query.c, what they share in hd-table-db.c. See hd-store.h for the contracts. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dynbuf.h"
#include "hd-internal.h"
#include "hd-json.h"
#include "hd-table-internal.h"
#include "hd-table.h"
#include "limits.h"
#include "utf8.h"

/* ---- reading tables ---- */

/* The one table's name (and checks: see hd_adopt_fd). *ret is freed by the caller. */
static int one_table(sqlite3 *db, budget *b, bool strict, char **ret, hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, "SELECT type, name, coalesce(sql, '') FROM sqlite_schema", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return hdt_sql_fail(db, rc, b, e, "the table file cannot be read");
        _cleanup_free_ char *table = NULL;
        unsigned tables = 0;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *type = (const char *) sqlite3_column_text(st, 0);
                const char *name = (const char *) sqlite3_column_text(st, 1);
                const char *sql = (const char *) sqlite3_column_text(st, 2);
                if (!type || !name || !sql)
                        return hull_err(e, -EBADMSG, "handles: the table file has a malformed schema");
                if (strcmp(type, "index") == 0)
                        continue;
                if (strcmp(type, "table") != 0)
                        return hull_err_hint(e, -EBADMSG, "save plain tables only",
                                             "handles: the table file holds a %s (%.64s): only one table is allowed",
                                             type, name);
                if (strncmp(name, "sqlite_", 7) == 0 && strncasecmp(sql, "CREATE VIRTUAL", 14) != 0)
                        continue; /* sqlite_sequence, sqlite_stat1: SQLite's own */
                if (strncasecmp(sql, "CREATE VIRTUAL", 14) == 0)
                        return hull_err_hint(e, -EBADMSG, "save plain tables only",
                                             "handles: the table file holds a virtual table (%.64s)", name);
                if (++tables > 1)
                        return hull_err_hint(e, -EBADMSG, "save one table per handle",
                                             "handles: the table file holds more than one table");
                free(table);
                table = strdup(name);
                if (!table)
                        return hull_err(e, -ENOMEM, "handles: cannot read a table");
        }
        if (rc != SQLITE_DONE)
                return hdt_sql_fail(db, rc, b, e, "the table file cannot be read");
        if (!table)
                return hull_err(e, -EBADMSG, "handles: the table file holds no table");
        if (strict && !utf8_is_valid(table, strlen(table)))
                return hull_err(e, -EBADMSG, "handles: the table name is not UTF-8");
        *ret = TAKE_PTR(table);
        return 0;
}

typedef struct table_info {
        char *name, *qname;
        json_t *schema;  /* {column: type} in order */
        json_t *columns; /* [names] */
        int64_t n_rows;
} table_info;

static void table_info_done(table_info *t) {
        free(t->name);
        free(t->qname);
        json_decref(t->schema);
        json_decref(t->columns);
}

static int table_load_info(sqlite3 *db, budget *b, bool check, table_info *t, hull_error *e) {
        int k = one_table(db, b, check, &t->name, e);
        if (k < 0)
                return k;
        t->qname = hdt_quote_ident(t->name);
        t->schema = json_object();
        t->columns = json_array();
        if (!t->qname || !t->schema || !t->columns)
                return hull_err(e, -ENOMEM, "handles: cannot read a table");
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, "SELECT name, coalesce(type, ''), hidden FROM pragma_table_xinfo(?)", -1, &st,
                                    NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
        if (rc != SQLITE_OK)
                return hdt_sql_fail(db, rc, b, e, "the table file cannot be read");
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *name = (const char *) sqlite3_column_text(st, 0);
                const char *type = (const char *) sqlite3_column_text(st, 1);
                if (!name)
                        return hull_err(e, -EBADMSG, "handles: a column has no name");
                if (sqlite3_column_int64(st, 2) != 0)
                        return hull_err_hint(e, -EBADMSG, "save plain columns",
                                             "handles: column %.64s is generated or hidden", name);
                if (json_array_size(t->columns) >= HD_TABLE_COLUMNS_MAX)
                        return hull_err(e, -E2BIG, "handles: the table has more than %u columns", HD_TABLE_COLUMNS_MAX);
                if (!utf8_is_valid(name, strlen(name)))
                        return hull_err(e, -EBADMSG, "handles: a column name is not UTF-8");
                if (json_object_get(t->schema, name))
                        return hull_err(e, -EBADMSG, "handles: column %.64s appears twice", name);
                json_object_set_new(t->schema, name, json_string(hdt_decl_type_name(type)));
                json_array_append_new(t->columns, json_string(name));
        }
        if (rc != SQLITE_DONE)
                return hdt_sql_fail(db, rc, b, e, "the table file cannot be read");
        if (json_array_size(t->columns) == 0)
                return hull_err(e, -EBADMSG, "handles: the table has no columns");
        sqlite3_finalize(TAKE_PTR(st));
        char sql[HD_COLUMN_NAME_MAX * 2 + 64];
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", t->qname);
        rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
                t->n_rows = sqlite3_column_int64(st, 0);
        else
                return hdt_sql_fail(db, rc, b, e, "the table cannot be counted");
        return 0;
}

static uint32_t be32(const unsigned char *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

int hd_table_check(int dir_fd, const char *name, uint64_t size, hull_error *e) {
        if (size == 0)
                return hull_err_hint(e, -EBADMSG, "save a table with data", "handles: the table file is empty");
        unsigned char h[100];
        _cleanup_close_ int fd = hd_openat(dir_fd, name, O_RDONLY | O_NOFOLLOW, 0);
        if (fd < 0)
                return hull_err(e, fd, "handles: cannot open the table file");
        ssize_t n = pread(fd, h, sizeof(h), 0);
        if (n != (ssize_t) sizeof(h) || memcmp(h, "SQLite format 3", 16) != 0)
                return hull_err_hint(e, -EBADMSG, "save tables as SQLite databases",
                                     "handles: the table file is not an SQLite database");
        uint32_t page = (uint32_t) h[16] << 8 | h[17];
        if (page == 1)
                page = 65536;
        if (page < 512 || page > 65536 || (page & (page - 1)) != 0 || size % page != 0)
                return hull_err(e, -EBADMSG,
                                "handles: the table file has a bad page size (%u) for its %" PRIu64 " bytes", page,
                                size);
        if (h[18] != 1 || h[19] != 1)
                return hull_err_hint(e, -EBADMSG,
                                     "switch it out of WAL mode (PRAGMA journal_mode=DELETE) before saving",
                                     "handles: the table file is in WAL mode or from an unknown version");
        uint32_t pages = be32(h + 28);
        if (be32(h + 24) == be32(h + 92) && pages != 0 && (uint64_t) pages * page != size)
                return hull_err(e, -EBADMSG,
                                "handles: the table file claims %" PRIu32 " pages of %u bytes but holds %" PRIu64
                                " bytes",
                                pages, page, size);
        if (size / page > HD_SQLITE_PAGE_COUNT_MAX)
                return hull_err(e, -EFBIG, "handles: the table file has too many pages");
        budget b;
        hdt_budget_start(&b, HD_SQLITE_CHECK_MS);
        _cleanup_db_ sqlite3 *db = NULL;
        int k = hdt_db_open(dir_fd, name, DB_READ, &b, 0, &db, e);
        if (k < 0)
                return k;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return hdt_sql_fail(db, rc, &b, e, "the table file is malformed");
        const char *verdict = (const char *) sqlite3_column_text(st, 0);
        if (!verdict || strcmp(verdict, "ok") != 0)
                return hull_err(e, -EBADMSG, "handles: the table file is malformed: %.200s", verdict ? verdict : "?");
        sqlite3_finalize(TAKE_PTR(st));
        _cleanup_(table_info_done) table_info t = {0};
        return table_load_info(db, &b, true, &t, e);
}

/* One cell as CSV: at most HD_PREVIEW_CELL_CHARS characters (then "…"), quoted when it holds a
 * comma, a quote or a line break. Returns 0 or the errors of dynbuf_add. */
static int csv_cell(dynbuf *b, const char *p, size_t n) {
        size_t cut = 0, chars = 0;
        while (cut < n && chars < HD_PREVIEW_CELL_CHARS) {
                unsigned char c = (unsigned char) p[cut];
                cut += c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
                chars++;
        }
        cut = MIN(cut, n);
        bool quote = memchr(p, ',', cut) || memchr(p, '"', cut) || memchr(p, '\n', cut) || memchr(p, '\r', cut);
        int r = quote ? dynbuf_add(b, "\"", 1) : 0;
        for (size_t i = 0; r >= 0 && i < cut;) {
                const char *q = memchr(p + i, '"', cut - i);
                size_t k = q ? (size_t) (q - (p + i)) + 1 : cut - i;
                r = dynbuf_add(b, p + i, k);
                if (r >= 0 && q)
                        r = dynbuf_add(b, "\"", 1); /* a quote is doubled */
                i += k;
        }
        if (r >= 0 && cut < n)
                r = dynbuf_add(b, "\xe2\x80\xa6", 3); /* … */
        if (r >= 0 && quote)
                r = dynbuf_add(b, "\"", 1);
        return r;
}

static int preview(sqlite3 *db, budget *b, const table_info *t, json_t *summary, hull_error *e) {
        _cleanup_dynbuf_ dynbuf csv;
        dynbuf_init(&csv, HD_PREVIEW_TABLE_BYTES);
        int r = 0;
        size_t i;
        json_t *c;
        json_array_foreach(t->columns, i, c) {
                if (r >= 0 && i)
                        r = dynbuf_add(&csv, ",", 1);
                if (r >= 0)
                        r = csv_cell(&csv, json_string_value(c), json_string_length(c));
        }
        if (r < 0)
                return hull_err(e, r, "handles: cannot preview");
        char sql[HD_COLUMN_NAME_MAX * 2 + 64];
        snprintf(sql, sizeof(sql), "SELECT * FROM %s LIMIT %u", t->qname, HD_PREVIEW_ROWS);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return hdt_sql_fail(db, rc, b, e, "the table cannot be read");
        unsigned shown = 0;
        while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                shown++;
                r = dynbuf_add(&csv, "\n", 1);
                for (int j = 0; r >= 0 && j < sqlite3_column_count(st); j++) {
                        if (j)
                                r = dynbuf_add(&csv, ",", 1);
                        int type = sqlite3_column_type(st, j);
                        if (r < 0 || type == SQLITE_NULL)
                                continue;
                        if (type == SQLITE_BLOB) {
                                char bl[48];
                                snprintf(bl, sizeof(bl), "<blob, %d bytes>", sqlite3_column_bytes(st, j));
                                r = csv_cell(&csv, bl, strlen(bl));
                                continue;
                        }
                        const char *p = (const char *) sqlite3_column_text(st, j);
                        r = csv_cell(&csv, p ? p : "", (size_t) sqlite3_column_bytes(st, j));
                }
        }
        if (r < 0)
                return hull_err(e, r, "handles: cannot preview");
        if (rc != SQLITE_DONE)
                return hdt_sql_fail(db, rc, b, e, "the table cannot be read");
        if ((int64_t) shown < t->n_rows &&
            (r = dynbuf_addf(&csv, "\n... (%u of %" PRId64 " rows)", shown, t->n_rows)) < 0)
                return hull_err(e, r, "handles: cannot preview");
        json_object_set_new(summary, "preview", hdt_text_json(csv.buf ? csv.buf : "", csv.len));
        return 0;
}

int hd_table_summary(int dir_fd, const char *name, json_t *summary, hull_error *e) {
        budget b;
        hdt_budget_start(&b, HD_SQLITE_CHECK_MS);
        _cleanup_db_ sqlite3 *db = NULL;
        int k = hdt_db_open(dir_fd, name, DB_READ, &b, 0, &db, e);
        if (k < 0)
                return k;
        _cleanup_(table_info_done) table_info t = {0};
        k = table_load_info(db, &b, false, &t, e);
        if (k < 0)
                return k;
        json_object_set_new(summary, "table", json_string(t.name));
        json_object_set(summary, "schema", t.schema);
        json_object_set_new(summary, "n_rows", json_integer(t.n_rows));
        json_object_set_new(summary, "n_cols", json_integer((json_int_t) json_array_size(t.columns)));
        return preview(db, &b, &t, summary, e);
}

/* ---- inspect ---- */

/* HyperLogLog: 2^HD_HLL_BITS one-byte registers over a 64-bit hash of each value's type and
 * bytes (integers and reals by their 8 bytes, so 1 and 1.0 count as two). */
#define HLL_M (1U << HD_HLL_BITS)

static void hll_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
        uint8_t *reg = sqlite3_aggregate_context(ctx, HLL_M);
        if (!reg || argc != 1)
                return;
        sqlite3_value *v = argv[0];
        int type = sqlite3_value_type(v);
        uint64_t h;
        if (type == SQLITE_NULL)
                return;
        if (type == SQLITE_INTEGER) {
                int64_t x = sqlite3_value_int64(v);
                h = hdt_hash_bytes(&x, sizeof(x), 1);
        } else if (type == SQLITE_FLOAT) {
                double x = sqlite3_value_double(v);
                h = hdt_hash_bytes(&x, sizeof(x), 2);
        } else {
                const void *p = sqlite3_value_blob(v);
                h = hdt_hash_bytes(p ? p : "", (size_t) sqlite3_value_bytes(v), 3);
        }
        unsigned idx = (unsigned) (h >> (64 - HD_HLL_BITS));
        uint64_t rest = h << HD_HLL_BITS;
        uint8_t rho = rest ? (uint8_t) (__builtin_clzll(rest) + 1) : (uint8_t) (64 - HD_HLL_BITS + 1);
        if (rho > reg[idx])
                reg[idx] = rho;
}

/* ln(x) for x > 0 without libm (hull links no libm). */
static double ln(double x) {
        int k = 0;
        while (x > 2.0)
                x /= 2.0, k++;
        while (x < 1.0)
                x *= 2.0, k--;
        double y = (x - 1.0) / (x + 1.0), y2 = y * y, term = y, sum = 0;
        for (int i = 1; i < 60; i += 2) {
                sum += term / i;
                term *= y2;
        }
        return 2.0 * sum + k * 0.69314718055994530942;
}

static void hll_final(sqlite3_context *ctx) {
        uint8_t *reg = sqlite3_aggregate_context(ctx, 0);
        if (!reg) {
                sqlite3_result_int64(ctx, 0);
                return;
        }
        double sum = 0, m = HLL_M;
        unsigned zeros = 0;
        for (unsigned i = 0; i < HLL_M; i++) {
                sum += 1.0 / (double) (1ULL << reg[i]);
                zeros += reg[i] == 0;
        }
        double est = (0.7213 / (1.0 + 1.079 / m)) * m * m / sum;
        if (est <= 2.5 * m && zeros > 0)
                est = m * ln(m / zeros);
        sqlite3_result_int64(ctx, (sqlite3_int64) (est + 0.5));
}

static int rows_json(sqlite3 *db, budget *b, const char *sql, json_t **ret, hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return hdt_sql_fail(db, rc, b, e, "the table cannot be read");
        json_t *rows = json_array();
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                json_t *row = json_array();
                for (int j = 0; j < sqlite3_column_count(st); j++)
                        json_array_append_new(row, hdt_column_json(st, j));
                json_array_append_new(rows, row);
        }
        if (rc != SQLITE_DONE) {
                json_decref(rows);
                return hdt_sql_fail(db, rc, b, e, "the table cannot be read");
        }
        *ret = rows;
        return 0;
}

int hd_table_inspect(int dir_fd, const char *name, const hd_inspect_opts *o, json_t *out, hull_error *e) {
        budget b;
        hdt_budget_start(&b, HD_INSPECT_MS);
        _cleanup_db_ sqlite3 *db = NULL;
        int k = hdt_db_open(dir_fd, name, DB_READ, &b, 0, &db, e);
        if (k < 0)
                return k;
        _cleanup_(table_info_done) table_info t = {0};
        k = table_load_info(db, &b, false, &t, e);
        if (k < 0)
                return k;
        json_object_set(out, "columns", t.columns);
        char sql[HD_COLUMN_NAME_MAX * 2 + 128];
        json_t *rows;
        if (o->head) {
                snprintf(sql, sizeof(sql), "SELECT * FROM %s LIMIT %u", t.qname, o->head);
                k = rows_json(db, &b, sql, &rows, e);
                if (k < 0)
                        return k;
                json_object_set_new(out, "head", rows);
        }
        if (o->tail) {
                int64_t off = t.n_rows > (int64_t) o->tail ? t.n_rows - (int64_t) o->tail : 0;
                snprintf(sql, sizeof(sql), "SELECT * FROM %s LIMIT %u OFFSET %" PRId64, t.qname, o->tail, off);
                k = rows_json(db, &b, sql, &rows, e);
                if (k < 0)
                        return k;
                json_object_set_new(out, "tail", rows);
        }
        if (!o->stats)
                return 0;
        int rc = sqlite3_create_function_v2(db, "hd_hll", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL, hll_step,
                                            hll_final, NULL);
        if (rc != SQLITE_OK)
                return hdt_sql_fail(db, rc, &b, e, "cannot compute stats");
        size_t ncol = MIN(json_array_size(t.columns), (size_t) HD_STATS_COLUMNS_MAX);
        size_t cap = 64 + ncol * (HD_COLUMN_NAME_MAX * 2 + 8) * 7, len = 0;
        _cleanup_free_ char *q = malloc(cap);
        if (!q)
                return hull_err(e, -ENOMEM, "handles: cannot compute stats");
        len += (size_t) snprintf(q + len, cap - len, "SELECT ");
        for (size_t i = 0; i < ncol; i++) {
                _cleanup_free_ char *c = hdt_quote_ident(json_string_value(json_array_get(t.columns, i)));
                if (!c)
                        return hull_err(e, -ENOMEM, "handles: cannot compute stats");
                len += (size_t) snprintf(q + len, cap - len,
                                         "%scount(%s), count(*) - count(%s), min(%s), max(%s), "
                                         "avg(CASE WHEN typeof(%s) IN ('integer', 'real') THEN %s END), hd_hll(%s)",
                                         i ? ", " : "", c, c, c, c, c, c, c);
        }
        snprintf(q + len, cap - len, " FROM %s", t.qname);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        rc = sqlite3_prepare_v2(db, q, -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return hdt_sql_fail(db, rc, &b, e, "computing stats");
        json_t *stats = json_object();
        for (size_t i = 0; i < ncol; i++) {
                int c = (int) i * 6;
                json_object_set_new(stats, json_string_value(json_array_get(t.columns, i)),
                                    json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "count", hdt_column_json(st, c),
                                              "nulls", hdt_column_json(st, c + 1), "min", hdt_column_json(st, c + 2),
                                              "max", hdt_column_json(st, c + 3), "mean", hdt_column_json(st, c + 4),
                                              "distinct", hdt_column_json(st, c + 5)));
        }
        json_object_set_new(out, "stats", stats);
        if (ncol < json_array_size(t.columns))
                json_object_set_new(out, "stats_truncated", json_true());
        return 0;
}
