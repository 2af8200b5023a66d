/* cli-handle.c: `hull handle list|inspect|query|get|add`, a client of the data handles of a
 * session of a running `hull serve` (/hull.v1.Handles/..., issue 4). Each subcommand is one or a
 * few POSTs through cli-client (the same connection options, request IDs and error reporting as
 * `hull session`); answers are the handle store's JSON (hd-store.h), read defensively with
 * src/shared/protojson: 64-bit integers as numbers or strings, absent fields as their zero
 * value; tables are printed by cli-table. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli-handle.h"
#include "cli-client.h"
#include "cli-table.h"
#include "cli.h"
#include "limits.h"
#include "macro.h"
#include "parse-util.h"
#include "protojson.h"
#include "sha256.h"
#include "utf8.h"

#define CMD "handle"

#define PATH_LIST "/hull.v1.Handles/List"
#define PATH_INSPECT "/hull.v1.Handles/Inspect"
#define PATH_QUERY "/hull.v1.Handles/Query"
#define PATH_READ "/hull.v1.Handles/Read"
#define PATH_UPLOAD "/hull.v1.Handles/Upload"

/* What one call may carry or ask for: the handle store's bounds (hd-store.h), which the daemon
 * passes on, and the request body's. */
#define HANDLE_CLI_ID_MAX HD_ID_MAX
_Static_assert(HD_ID_MAX == HULL_API_HANDLE_ID_MAX, "the store and the daemon agree on ids");
#define HANDLE_CLI_ROWS_MAX HD_INSPECT_ROWS_MAX /* --head, --tail: the store refuses more */
#define HANDLE_CLI_QUERY_HANDLES_MAX HD_QUERY_HANDLES_MAX
#define HANDLE_CLI_SQL_MAX HD_SQLITE_SQL_MAX
/* An upload streams as it is read: the daemon bounds its size (--handle-max) and its time. */
#define HANDLE_CLI_UPLOAD_MS SERVE_UPLOAD_RECEIVE_MS
#define HANDLE_CLI_NAME_MAX HULL_API_INPUT_NAME_MAX
#define HANDLE_CLI_LIST_MAX 100000U /* handles printed by list (a store holds at most HD_HANDLES_MAX) */
#define HANDLE_CLI_SHAPES_MAX 64U   /* tables list inspects for their rows and columns when List omits them */

enum {
        OPT_HEAD = CLI_OPT_OWN,
        OPT_TAIL,
        OPT_STATS,
        OPT_CSV,
        OPT_HANDLE,
        OPT_MAX_ROWS,
        OPT_OFFSET,
        OPT_LIMIT,
        OPT_OUTPUT,
        OPT_NAME,
        OPT_INPUT_ID,
        OPT_FORMAT,
};
#define BIT(o) CLI_OPT_BIT(o)
#define OPT_JSON CLI_OPT_JSON

static const struct option options[] = {
        CLI_CLIENT_OPTIONS,
        {"head", required_argument, NULL, OPT_HEAD},
        {"tail", required_argument, NULL, OPT_TAIL},
        {"stats", no_argument, NULL, OPT_STATS},
        {"csv", no_argument, NULL, OPT_CSV},
        {"handle", required_argument, NULL, OPT_HANDLE},
        {"max-rows", required_argument, NULL, OPT_MAX_ROWS},
        {"offset", required_argument, NULL, OPT_OFFSET},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"output", required_argument, NULL, OPT_OUTPUT},
        {"name", required_argument, NULL, OPT_NAME},
        {"input-id", required_argument, NULL, OPT_INPUT_ID},
        {"format", required_argument, NULL, OPT_FORMAT},
        {},
};

/* What the command line said. Strings point into argv. */
typedef struct handle_args {
        cli_client_args c; /* the connection, --json, the positional arguments */
        bool stats, csv;
        bool has_head, has_tail, has_limit;
        uint64_t head, tail, max_rows, offset, limit;
        const char *handles[HANDLE_CLI_QUERY_HANDLES_MAX];
        size_t n_handles;
        const char *output, *name, *input_id, *format;
} handle_args;

typedef struct handle_sub {
        cli_client_sub s; /* its name, options and help */
        size_t n_pos;     /* positional arguments: the session ID and n_pos - 1 more */
        const char *pos_what;
        int (*run)(cli_client *c, const handle_args *a);
} handle_sub;

#define usage_error(...) cli_usage_error(CMD, CLI_EXIT_USAGE, __VA_ARGS__)

/* ---- small helpers ---- */

static int bad_answer(const char *what) {
        cli_error(CMD, "the daemon's answer is malformed: %s", what);
        return CLI_EXIT_FAILURE;
}

/* What a ProtoJSON reader found wrong with an answer. */
static int bad_field(const hull_error *e) {
        return bad_answer(e->msg);
}

/* A field of an answer by either spelling, or NULL: absent, null, or (malformed) given twice. */
static json_t *field(const json_t *o, const char *camel, const char *snake) {
        json_t *v = NULL;
        (void) pj_field(o, camel, snake, &v, NULL);
        return v;
}

static int out_of_memory(void) {
        cli_error(CMD, "out of memory");
        return CLI_EXIT_FAILURE;
}

static int finish_stdout(void) {
        if (fflush(stdout) != 0 || ferror(stdout)) {
                cli_error(CMD, "cannot write to stdout");
                return CLI_EXIT_FAILURE;
        }
        return CLI_EXIT_OK;
}

static int print_json(const json_t *o) {
        if (json_dumpf(o, stdout, JSON_COMPACT | JSON_ENSURE_ASCII) < 0 || fputc('\n', stdout) == EOF) {
                cli_error(CMD, "cannot write the answer to stdout");
                return CLI_EXIT_FAILURE;
        }
        return finish_stdout();
}

/* A handle id as the store takes it: [A-Za-z0-9][A-Za-z0-9_.-]{0,63}. */
static bool id_char(char c, bool first) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               (!first && (c == '_' || c == '.' || c == '-'));
}

static bool handle_id_is_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > HANDLE_CLI_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!id_char(s[i], i == 0))
                        return false;
        return true;
}

/* An SQL identifier as written in a query: bare when plain, else double-quoted. */
static void sql_ident(const char *s, char *buf, size_t size) {
        bool plain = s[0] && !(s[0] >= '0' && s[0] <= '9');
        for (const char *p = s; plain && *p; p++)
                plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_';
        if (plain) {
                snprintf(buf, size, "%s", s);
                return;
        }
        size_t o = 0;
        if (size < 3) {
                buf[0] = 0;
                return;
        }
        buf[o++] = '"';
        for (const char *p = s; *p && o + 3 < size; p++) {
                if (*p == '"')
                        buf[o++] = '"';
                buf[o++] = *p;
        }
        buf[o++] = '"';
        buf[o] = 0;
}

/* A summary, one field a line; the preview indented below. */
static int print_summary(const json_t *s) {
        const char *id, *kind, *source, *path, *table, *preview;
        int64_t bytes, n_rows, n_cols;
        hull_error e = {0};
        if (!json_is_object(s))
                return bad_answer("a handle's summary is not an object");
        if (pj_string(s, "id", NULL, NULL, SIZE_MAX, &id, NULL, &e) < 0 ||
            pj_string(s, "kind", NULL, NULL, SIZE_MAX, &kind, NULL, &e) < 0 ||
            pj_string(s, "source", NULL, NULL, SIZE_MAX, &source, NULL, &e) < 0 ||
            pj_string(s, "path", NULL, NULL, SIZE_MAX, &path, NULL, &e) < 0 ||
            pj_string(s, "table", NULL, NULL, SIZE_MAX, &table, NULL, &e) < 0 ||
            pj_string(s, "preview", NULL, NULL, SIZE_MAX, &preview, NULL, &e) < 0 ||
            pj_int(s, "bytes", NULL, INT64_MIN, INT64_MAX, NULL, &bytes, &e) < 0 ||
            pj_int(s, "n_rows", "nRows", INT64_MIN, INT64_MAX, NULL, &n_rows, &e) < 0 ||
            pj_int(s, "n_cols", "nCols", INT64_MIN, INT64_MAX, NULL, &n_cols, &e) < 0)
                return bad_field(&e);
        if (!id[0])
                return bad_answer("a handle's summary has no id");
        printf("id       %s\nkind     %s\nsource   %s\nbytes    %" PRId64 "\npath     %s\n", id, kind,
               source[0] ? source : "-", bytes, path[0] ? path : "-");
        if (strcmp(kind, "table") == 0) {
                char qid[2 * HANDLE_CLI_ID_MAX + 3], qtable[2 * HD_COLUMN_NAME_MAX + 3];
                sql_ident(id, qid, sizeof(qid));
                sql_ident(table[0] ? table : "data", qtable, sizeof(qtable));
                printf("rows     %" PRId64 " rows \xc3\x97 %" PRId64 " columns\nquery as %s.%s\n", n_rows, n_cols, qid,
                       qtable);
                const json_t *schema = field(s, "schema", NULL);
                if (json_is_object(schema)) {
                        const char *col;
                        const json_t *type;
                        bool first = true;
                        fputs("schema   ", stdout);
                        json_object_foreach((json_t *) schema, col, type) {
                                printf("%s%s %s", first ? "" : ", ", col,
                                       json_is_string(type) ? json_string_value(type) : "?");
                                first = false;
                        }
                        putchar('\n');
                }
        }
        const json_t *shape = field(s, "shape", NULL);
        if (shape) {
                _cleanup_free_ char *d = json_dumps(shape, JSON_COMPACT);
                printf("shape    %s\n", d ? d : "?");
        }
        if (preview[0]) {
                fputs("preview\n  ", stdout);
                for (const char *p = preview; *p; p++) {
                        if (*p == '\n') {
                                if (p[1])
                                        fputs("\n  ", stdout);
                        } else
                                putchar((unsigned char) *p < 0x20 && *p != '\t' ? '?' : *p);
                }
                putchar('\n');
        }
        return 0;
}

/* The summaries of the session's handles (List). Returns 0 with *ret (the answer) and
 * *ret_handles (in it), or an exit status. */
static int list_handles(cli_client *c, const char *session, json_t **ret, const json_t **ret_handles) {
        json_t *ans = NULL;
        int r = cli_call(c, PATH_LIST, json_pack("{s:s}", "sessionId", session), SESSION_CLI_CALL_MS_DEFAULT, &ans);
        if (r)
                return r;
        json_t *h;
        hull_error e = {0};
        if (pj_array(ans, "handles", NULL, NULL, SIZE_MAX, &h, &e) < 0) {
                json_decref(ans);
                return bad_field(&e);
        }
        for (size_t i = 0; h && i < json_array_size(h); i++) {
                const char *id, *kind;
                const json_t *s = json_array_get(h, i);
                if (!json_is_object(s) || pj_string(s, "id", NULL, NULL, SIZE_MAX, &id, NULL, NULL) < 0 || !id[0] ||
                    pj_string(s, "kind", NULL, NULL, SIZE_MAX, &kind, NULL, NULL) < 0) {
                        json_decref(ans);
                        return bad_answer("a handle of the list has no id or kind");
                }
        }
        *ret = ans;
        *ret_handles = h;
        return 0;
}

/* The summary of handle id in a List answer, or NULL. */
static const json_t *find_handle(const json_t *handles, const char *id) {
        for (size_t i = 0; i < json_array_size(handles); i++) {
                const json_t *s = json_array_get(handles, i);
                const char *sid = json_string_value(json_object_get(s, "id"));
                if (sid && strcmp(sid, id) == 0)
                        return s;
        }
        return NULL;
}

/* ---- the subcommands ---- */

/* When List names tables without their rows and columns (the store's list reads no file), ask
 * Inspect for the first HANDLE_CLI_SHAPES_MAX of them and add n_rows and n_cols to their entries.
 * Returns 0, or CLI_EXIT_FAILURE when one could not be inspected (printed; the rest go on). */
static int fill_table_shapes(cli_client *c, const char *session, const json_t *handles) {
        int ret = 0;
        size_t asked = 0;
        for (size_t i = 0; i < json_array_size(handles); i++) {
                json_t *s = json_array_get(handles, i);
                const char *id = json_string_value(json_object_get(s, "id"));
                if (strcmp(json_string_value(json_object_get(s, "kind")), "table") != 0 || field(s, "n_rows", "nRows"))
                        continue;
                if (asked++ >= HANDLE_CLI_SHAPES_MAX)
                        break;
                json_auto_t *sum = NULL;
                if (cli_call(c, PATH_INSPECT, json_pack("{s:s, s:s}", "sessionId", session, "id", id),
                             SESSION_CLI_CALL_MS_DEFAULT, &sum) != 0) {
                        ret = CLI_EXIT_FAILURE;
                        continue;
                }
                const json_t *rows = field(sum, "n_rows", "nRows"), *cols = field(sum, "n_cols", "nCols");
                if (rows && cols) {
                        json_object_set(s, "n_rows", (json_t *) rows);
                        json_object_set(s, "n_cols", (json_t *) cols);
                }
        }
        return ret;
}

static int sub_list(cli_client *c, const handle_args *a) {
        json_auto_t *ans = NULL;
        const json_t *handles;
        int r = list_handles(c, a->c.pos[0], &ans, &handles);
        if (r)
                return r;
        if (a->c.json)
                return print_json(ans);
        int shapes = fill_table_shapes(c, a->c.pos[0], handles);
        size_t w = 2;
        for (size_t i = 0; i < json_array_size(handles); i++)
                w = MAX(w, strlen(json_string_value(json_object_get(json_array_get(handles, i), "id"))));
        printf("%-*s  %-6s  %10s  %-12s  %s\n", (int) w, "ID", "KIND", "BYTES", "ROWSxCOLS", "SOURCE");
        for (size_t i = 0; i < json_array_size(handles) && i < HANDLE_CLI_LIST_MAX; i++) {
                const json_t *s = json_array_get(handles, i);
                const char *id, *kind, *source;
                int64_t bytes, n_rows, n_cols;
                char shape[48] = "-";
                hull_error e = {0};
                if (pj_string(s, "id", NULL, "handles[].", SIZE_MAX, &id, NULL, &e) < 0 ||
                    pj_string(s, "kind", NULL, "handles[].", SIZE_MAX, &kind, NULL, &e) < 0 ||
                    pj_string(s, "source", NULL, "handles[].", SIZE_MAX, &source, NULL, &e) < 0 ||
                    pj_int(s, "bytes", NULL, INT64_MIN, INT64_MAX, NULL, &bytes, &e) < 0 ||
                    pj_int(s, "n_rows", "nRows", INT64_MIN, INT64_MAX, NULL, &n_rows, &e) < 0 ||
                    pj_int(s, "n_cols", "nCols", INT64_MIN, INT64_MAX, NULL, &n_cols, &e) < 0)
                        return bad_field(&e);
                if (strcmp(kind, "table") == 0 && field(s, "n_rows", "nRows"))
                        snprintf(shape, sizeof(shape), "%" PRId64 "x%" PRId64, n_rows, n_cols);
                _cleanup_free_ char *src = cli_cell_text(field(s, "source", NULL), false);
                printf("%-*s  %-6s  %10" PRId64 "  %-12s  %s\n", (int) w, id, kind, bytes, shape,
                       src && src[0] && strcmp(src, "NULL") ? src : "-");
        }
        if (json_array_size(handles) > HANDLE_CLI_LIST_MAX)
                cli_error(CMD, "%zu more handles not shown (use --json)",
                          json_array_size(handles) - HANDLE_CLI_LIST_MAX);
        r = finish_stdout();
        return r ? r : shapes;
}

/* One row of the stats table: the column, then its statistics (the mean shortened for people). */
static json_t *stats_row(const char *col, const json_t *st) {
        static const char *const names[] = {"count", "nulls", "min", "max", "mean", "distinct"};
        json_t *row = json_pack("[s]", col);
        for (size_t k = 0; row && k < ELEMENTSOF(names); k++) {
                const json_t *v = json_object_get(st, names[k]);
                if (strcmp(names[k], "mean") == 0 && json_is_real(v)) {
                        char b[64];
                        snprintf(b, sizeof(b), "%.6g", json_real_value(v));
                        json_array_append_new(row, json_real(strtod(b, NULL)));
                } else
                        json_array_append(row, v ? (json_t *) v : json_null());
        }
        return row;
}

/* The stats of inspect as aligned text, one line a column, in the table's order. */
static int print_stats(const json_t *columns, const json_t *stats) {
        json_auto_t *header = json_pack("[s, s, s, s, s, s, s]", "column", "count", "nulls", "min", "max", "mean",
                                        "distinct"),
                    *rows = json_array();
        if (!header || !rows)
                return out_of_memory();
        const char *col;
        const json_t *st;
        json_object_foreach((json_t *) stats, col, st) {
                if (!json_is_object(st))
                        return bad_answer("a column's stats is not an object");
        }
        if (json_is_array(columns))
                for (size_t i = 0; i < json_array_size(columns); i++) {
                        col = json_string_value(json_array_get(columns, i));
                        if (col && (st = json_object_get(stats, col)))
                                json_array_append_new(rows, stats_row(col, st));
                }
        else
                json_object_foreach((json_t *) stats, col, st) json_array_append_new(rows, stats_row(col, st));
        fputs("stats\n", stdout);
        return cli_print_aligned(CMD, header, rows, "  ");
}

static int sub_inspect(cli_client *c, const handle_args *a) {
        json_t *req = json_pack("{s:s, s:s}", "sessionId", a->c.pos[0], "id", a->c.pos[1]);
        if (!req)
                return out_of_memory();
        if (a->has_head)
                json_object_set_new(req, "head", json_integer((json_int_t) a->head));
        if (a->has_tail)
                json_object_set_new(req, "tail", json_integer((json_int_t) a->tail));
        if (a->stats)
                json_object_set_new(req, "stats", json_true());
        json_auto_t *ans = NULL;
        int r = cli_call(c, PATH_INSPECT, req, SESSION_CLI_CALL_MS_DEFAULT, &ans);
        if (r)
                return r;
        if (a->c.json)
                return print_json(ans);
        r = print_summary(ans);
        if (r)
                return r;
        const json_t *columns = field(ans, "columns", NULL);
        const char *const parts[] = {"head", "tail"};
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                const json_t *rows = field(ans, parts[i], NULL);
                if (!rows)
                        continue;
                if (!json_is_array(rows) || !json_is_array(columns))
                        return bad_answer("columns, head or tail is not a list");
                printf("%s (%zu row%s)\n", parts[i], json_array_size(rows), json_array_size(rows) == 1 ? "" : "s");
                r = a->csv ? cli_print_csv(CMD, columns, rows) : cli_print_aligned(CMD, columns, rows, "  ");
                if (r)
                        return r;
        }
        const json_t *stats = field(ans, "stats", NULL);
        if (stats) {
                if (!json_is_object(stats))
                        return bad_answer("stats is not an object");
                r = print_stats(columns, stats);
                if (r)
                        return r;
                bool cut;
                if (pj_bool(ans, "stats_truncated", "statsTruncated", &cut, NULL) == 0 && cut)
                        printf("  (stats cover the first %u columns)\n", HD_STATS_COLUMNS_MAX);
        } else if (a->stats && json_is_array(columns))
                cli_error(CMD, "the daemon sent no stats (only tables have them)");
        return finish_stdout();
}

static int sub_query(cli_client *c, const handle_args *a) {
        /* The statement: the argument, or stdin for '-'. */
        _cleanup_free_ char *sql = NULL;
        size_t sql_len;
        if (strcmp(a->c.pos[1], "-") == 0) {
                int r = cli_read_input(NULL, HANDLE_CLI_SQL_MAX, &sql, &sql_len);
                if (r == -EFBIG)
                        return usage_error("the SQL on stdin is over %u bytes", HANDLE_CLI_SQL_MAX);
                if (r < 0) {
                        cli_error(CMD, "cannot read the SQL from stdin: %s", strerror(-r));
                        return CLI_EXIT_FAILURE;
                }
        } else {
                sql_len = strlen(a->c.pos[1]);
                if (sql_len > HANDLE_CLI_SQL_MAX)
                        return usage_error("the SQL is over %u bytes", HANDLE_CLI_SQL_MAX);
                if (!(sql = strdup(a->c.pos[1])))
                        return out_of_memory();
        }
        if (strspn(sql, " \t\r\n") == sql_len)
                return usage_error("the SQL is empty%s", "");
        if (memchr(sql, 0, sql_len) || !utf8_is_valid(sql, sql_len))
                return usage_error("the SQL must be UTF-8 without NUL bytes%s", "");

        json_auto_t *ids = json_array();
        if (!ids)
                return out_of_memory();
        if (a->n_handles)
                for (size_t i = 0; i < a->n_handles; i++)
                        json_array_append_new(ids, json_string(a->handles[i]));
        else {
                /* Every table handle of the session; when there are too many to attach, those the
                 * SQL names. */
                json_auto_t *list = NULL;
                const json_t *handles;
                int r = list_handles(c, a->c.pos[0], &list, &handles);
                if (r)
                        return r;
                size_t tables = 0;
                for (int pass = 0; pass < 2; pass++)
                        for (size_t i = 0; i < json_array_size(handles); i++) {
                                const json_t *s = json_array_get(handles, i);
                                const char *id = json_string_value(json_object_get(s, "id"));
                                if (strcmp(json_string_value(json_object_get(s, "kind")), "table") != 0)
                                        continue;
                                if (pass == 0)
                                        tables++;
                                else if (tables <= HANDLE_CLI_QUERY_HANDLES_MAX || strstr(sql, id))
                                        json_array_append_new(ids, json_string(id));
                        }
                if (tables == 0) {
                        cli_error(CMD, "session %s has no table handle to query (see 'hull handle list')", a->c.pos[0]);
                        return CLI_EXIT_FAILURE;
                }
                if (json_array_size(ids) > HANDLE_CLI_QUERY_HANDLES_MAX || json_array_size(ids) == 0) {
                        cli_error(CMD,
                                  "session %s has %zu table handles and a query attaches at most %u: name them with "
                                  "--handle",
                                  a->c.pos[0], tables, HANDLE_CLI_QUERY_HANDLES_MAX);
                        return CLI_EXIT_FAILURE;
                }
        }
        json_t *req = json_pack("{s:s, s:s, s:O}", "sessionId", a->c.pos[0], "sql", sql, "handles", ids);
        if (!req)
                return out_of_memory();
        if (a->max_rows)
                json_object_set_new(req, "maxRows", json_integer((json_int_t) a->max_rows));
        json_auto_t *ans = NULL;
        int r = cli_call(c, PATH_QUERY, req, SESSION_CLI_CALL_MS_DEFAULT, &ans);
        if (r)
                return r;
        if (a->c.json)
                return print_json(ans);
        const json_t *handle = field(ans, "handle", NULL);
        if (handle) {
                /* Too big to answer inline: the result is a new table handle. */
                const char *id;
                if (pj_string(handle, "id", NULL, NULL, SIZE_MAX, &id, NULL, NULL) < 0 || !id[0])
                        return bad_answer("the result's handle has no id");
                cli_error(CMD,
                          "the result is too large to print: it is the new table handle %s (see 'hull handle "
                          "inspect' and 'hull handle query')",
                          id);
                r = print_summary(handle);
                return r ? r : finish_stdout();
        }
        const json_t *columns = field(ans, "columns", NULL), *rows = field(ans, "rows", NULL);
        if (!json_is_array(columns) || (rows && !json_is_array(rows)))
                return bad_answer("columns or rows is not a list");
        for (size_t i = 0; i < json_array_size(columns); i++)
                if (!json_is_string(json_array_get(columns, i)))
                        return bad_answer("a column name is not a string");
        r = cli_print_csv(CMD, columns, rows);
        return r ? r : finish_stdout();
}

/* Where get writes: stdout, or a temporary file renamed over -o FILE once complete. */
typedef struct sink {
        FILE *f;
        const char *path;
        char *tmp;
} sink;

static void sink_abort(sink *s) {
        if (s->f && s->f != stdout)
                fclose(s->f);
        if (s->tmp)
                (void) unlink(s->tmp);
        free(s->tmp);
        *s = (sink){0};
}

static int sink_open(sink *s, const char *path) {
        if (!path || strcmp(path, "-") == 0) {
                s->f = stdout;
                return 0;
        }
        s->path = path;
        if (asprintf(&s->tmp, "%s.tmp-XXXXXX", path) < 0) {
                s->tmp = NULL;
                return out_of_memory();
        }
        int fd = mkostemp(s->tmp, O_CLOEXEC);
        if (fd < 0) {
                cli_error(CMD, "cannot create a file beside %s: %m", path);
                free(s->tmp);
                s->tmp = NULL;
                return CLI_EXIT_FAILURE;
        }
        (void) fchmod(fd, 0644);
        s->f = fdopen(fd, "w");
        if (!s->f) {
                close(fd);
                cli_error(CMD, "cannot write %s: %m", s->tmp);
                sink_abort(s);
                return CLI_EXIT_FAILURE;
        }
        return 0;
}

static int sink_finish(sink *s) {
        if (s->f == stdout)
                return finish_stdout();
        if (fflush(s->f) != 0 || fsync(fileno(s->f)) < 0 || fclose(s->f) != 0) {
                s->f = NULL;
                cli_error(CMD, "cannot write %s: %m", s->path);
                sink_abort(s);
                return CLI_EXIT_FAILURE;
        }
        s->f = NULL;
        if (rename(s->tmp, s->path) < 0) {
                cli_error(CMD, "cannot rename %s to %s: %m", s->tmp, s->path);
                sink_abort(s);
                return CLI_EXIT_FAILURE;
        }
        free(s->tmp);
        s->tmp = NULL;
        return CLI_EXIT_OK;
}

/* One Read answer of a json or text handle (text) or a binary one (content, base64, and the
 * whole file's sha256): its bytes, checked against what was asked. */
static int read_slice(const json_t *ans, bool binary, uint64_t offset, uint64_t asked, char **ret, size_t *ret_len,
                      uint64_t *ret_offset, bool *ret_eof, const char **ret_sha256) {
        int64_t got_offset, length, total;
        bool eof;
        const char *digest = "";
        hull_error e = {0};
        if (pj_int(ans, "offset", NULL, INT64_MIN, INT64_MAX, NULL, &got_offset, &e) < 0 ||
            pj_int(ans, "length", NULL, INT64_MIN, INT64_MAX, NULL, &length, &e) < 0 ||
            pj_int(ans, "total_bytes", "totalBytes", INT64_MIN, INT64_MAX, NULL, &total, &e) < 0 ||
            pj_bool(ans, "eof", NULL, &eof, &e) < 0 ||
            (binary && pj_string(ans, "sha256", NULL, NULL, SIZE_MAX, &digest, NULL, &e) < 0))
                return bad_field(&e);
        _cleanup_free_ char *data = NULL;
        size_t n;
        if (binary) {
                void *p;
                if (pj_bytes(ans, "content", NULL, NULL, PLIM_ANSWER_MAX, &p, &n, &e) < 0)
                        return bad_field(&e);
                if (!p && !(p = strdup("")))
                        return out_of_memory();
                data = p;
        } else {
                const json_t *text = field(ans, "text", NULL);
                if (text && !json_is_string(text))
                        return bad_answer("text is not a string");
                n = text ? json_string_length(text) : 0;
                if (!(data = malloc(n + 1)))
                        return out_of_memory();
                memcpy(data, text ? json_string_value(text) : "", n);
        }
        /* The daemon may move a text slice's start forward to a character boundary (at most 3
         * bytes), never back, and answers at most what was asked, within the handle. */
        if (length < 0 || (uint64_t) length != n || n > asked || got_offset < 0 || (uint64_t) got_offset < offset ||
            (uint64_t) got_offset - offset > (binary ? 0 : 3) ||
            (total >= 0 && (uint64_t) got_offset + n > (uint64_t) total) ||
            (eof && total >= 0 && (uint64_t) got_offset + n != (uint64_t) total))
                return bad_answer("the slice's offset and length do not match what was asked and sent");
        *ret = TAKE_PTR(data);
        *ret_len = n;
        *ret_offset = (uint64_t) got_offset;
        *ret_eof = eof;
        *ret_sha256 = digest;
        return 0;
}

static int sub_get(cli_client *c, const handle_args *a) {
        const char *id = a->c.pos[1];
        /* The kind first: tables are not read as bytes. */
        json_auto_t *list = NULL;
        const json_t *handles;
        int r = list_handles(c, a->c.pos[0], &list, &handles);
        if (r)
                return r;
        const json_t *s = find_handle(handles, id);
        if (!s) {
                cli_error(CMD, "session %s has no handle '%s' (see 'hull handle list')", a->c.pos[0], id);
                return CLI_EXIT_FAILURE;
        }
        const char *kind = json_string_value(json_object_get(s, "kind"));
        if (strcmp(kind, "table") == 0) {
                cli_error(CMD,
                          "%s is a table: use 'hull handle inspect %s %s --head N' or 'hull handle query %s "
                          "\"SELECT ... FROM %s.data\"' (CSV)",
                          id, a->c.pos[0], id, a->c.pos[0], id);
                return CLI_EXIT_FAILURE;
        }
        bool binary = strcmp(kind, "binary") == 0;
        if (!binary && strcmp(kind, "json") != 0 && strcmp(kind, "text") != 0) {
                cli_error(CMD, "%s is of a kind this hull does not know ('%s')", id, kind);
                return CLI_EXIT_FAILURE;
        }

        _cleanup_(sink_abort) sink out = {0};
        r = sink_open(&out, a->output);
        if (r)
                return r;
        /* A binary handle read whole is checked against the digest the daemon sends. */
        _cleanup_sha256_ sha256_ctx hash = {0};
        bool whole = binary && a->offset == 0 && !a->has_limit;
        if (whole && sha256_init(&hash) < 0)
                return out_of_memory();
        uint64_t offset = a->offset, left = a->has_limit ? a->limit : UINT64_MAX;
        for (;;) {
                /* Binary reads could go to HULL_API_BINARY_READ_MAX, but the daemon checks the limit
                 * against the store's text bound before it knows the kind. */
                uint64_t ask = MIN(left, (uint64_t) HD_READ_MAX_BYTES);
                json_t *req = json_pack("{s:s, s:s, s:I, s:I}", "sessionId", a->c.pos[0], "id", id, "offset",
                                        (json_int_t) offset, "limit", (json_int_t) ask);
                json_auto_t *ans = NULL;
                r = cli_call(c, PATH_READ, req, SESSION_CLI_CALL_MS_DEFAULT, &ans);
                if (r)
                        return r;
                _cleanup_free_ char *data = NULL;
                size_t n;
                uint64_t at;
                bool eof;
                const char *digest;
                r = read_slice(ans, binary, offset, ask, &data, &n, &at, &eof, &digest);
                if (r)
                        return r;
                if (n && fwrite(data, 1, n, out.f) != n) {
                        cli_error(CMD, "cannot write %s", a->output ? a->output : "to stdout");
                        return CLI_EXIT_FAILURE;
                }
                if (whole && sha256_update(&hash, data, n) < 0)
                        return out_of_memory();
                left -= n;
                offset = at + n;
                if (eof) {
                        char got[SHA256_HEX_SIZE];
                        if (whole && (sha256_final_hex(&hash, got) < 0 || strcmp(got, digest) != 0)) {
                                cli_error(CMD,
                                          "the bytes of %s do not match the SHA-256 the daemon sent (%s): not written",
                                          id, digest[0] ? digest : "none");
                                return CLI_EXIT_FAILURE;
                        }
                        break;
                }
                if (left == 0 || (n == 0 && a->has_limit)) /* what was asked, or no whole character left in it */
                        break;
                if (n == 0)
                        return bad_answer("no bytes and no end of the handle");
        }
        return sink_finish(&out);
}

/* A handle id made from a file name: characters outside [A-Za-z0-9_.-] as '_', leading ones
 * that may not start an id dropped, at most 64 bytes; "input" when nothing is left. */
static void id_from_name(const char *name, char *buf, size_t size) {
        size_t o = 0;
        for (const char *p = name; *p && o + 1 < size && o < HANDLE_CLI_ID_MAX; p++) {
                if (o == 0 && !id_char(*p, true))
                        continue;
                buf[o++] = id_char(*p, false) ? *p : '_';
        }
        buf[o] = 0;
        if (o == 0)
                snprintf(buf, size, "input");
}

/* An input's format: --format, else from the file's extension (.csv, .tsv/.tab, .json,
 * .jsonl/.ndjson), else binary. */
static const char *input_format(const handle_args *a, const char *name) {
        static const struct {
                const char *ext, *format;
        } by_ext[] = {{".csv", "csv"},       {".tsv", "tsv"},       {".tab", "tsv"},      {".json", "json"},
                      {".jsonl", "jsonl"},   {".ndjson", "jsonl"},  {".pdf", "document"}, {".docx", "document"},
                      {".xlsx", "document"}, {".pptx", "document"}, {".odt", "document"}, {".ods", "document"},
                      {".odp", "document"},  {".html", "document"}, {".htm", "document"}, {".md", "document"}};
        if (a->format)
                return a->format;
        const char *dot = strrchr(name, '.');
        for (size_t i = 0; dot && i < ELEMENTSOF(by_ext); i++)
                if (strcasecmp(dot, by_ext[i].ext) == 0)
                        return by_ext[i].format;
        return "binary";
}

static int sub_add(cli_client *c, const handle_args *a) {
        const char *file = a->c.pos[1];
        bool std = strcmp(file, "-") == 0;
        const char *name = a->name;
        if (!name) {
                if (std)
                        return usage_error("reading stdin, 'add' wants --name NAME%s", "");
                const char *slash = strrchr(file, '/');
                name = slash ? slash + 1 : file;
                if (!name[0] || strlen(name) > HANDLE_CLI_NAME_MAX || !utf8_is_valid(name, strlen(name)))
                        return usage_error("the file name '%s' cannot name the input: pass --name NAME", file);
        }
        const char *format = input_format(a, name);
        if (strcmp(format, "binary") != 0 && strcmp(format, "csv") != 0 && strcmp(format, "tsv") != 0 &&
            strcmp(format, "json") != 0 && strcmp(format, "jsonl") != 0 && strcmp(format, "document") != 0)
                return usage_error("--format wants binary, csv, tsv, json (an array of objects), jsonl or document, "
                                   "not '%s'",
                                   format);
        char id[HANDLE_CLI_ID_MAX + 1];
        if (a->input_id)
                snprintf(id, sizeof(id), "%s", a->input_id);
        else
                id_from_name(name, id, sizeof(id));

        /* The file streams to the daemon as it is read: no size limit here but the daemon's. */
        _cleanup_close_ int fd = std ? -1 : open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        if (!std && (fd < 0 || fstat(fd, &st) < 0)) {
                cli_error(CMD, "cannot open %s: %m", file);
                return CLI_EXIT_FAILURE;
        }
        if (!std && !S_ISREG(st.st_mode)) {
                cli_error(CMD, "%s is not a regular file", file);
                return CLI_EXIT_FAILURE;
        }
        _cleanup_free_ char *q_sid = NULL, *q_id = NULL, *q_name = NULL;
        if (cli_escape(c, a->c.pos[0], &q_sid) < 0 || cli_escape(c, id, &q_id) < 0 || cli_escape(c, name, &q_name) < 0)
                return out_of_memory();
        char path[HTTPC_URL_MAX];
        if ((size_t) snprintf(path, sizeof(path), PATH_UPLOAD "?sessionId=%s&inputId=%s&name=%s&format=%s", q_sid, q_id,
                              q_name, format) >= sizeof(path))
                return usage_error("the name '%s' is too long", name);
        json_auto_t *ans = NULL;
        int r = cli_upload(c, path, std ? STDIN_FILENO : fd, std ? -1 : (int64_t) st.st_size, HANDLE_CLI_UPLOAD_MS,
                           &ans);
        if (r)
                return r;
        if (a->c.json)
                return print_json(ans);
        const char *got;
        if (pj_string(ans, "id", NULL, NULL, SIZE_MAX, &got, NULL, NULL) < 0 || !handle_id_is_valid(got))
                return bad_answer("the new handle has no valid id");
        printf("%s\n", got);
        json_t *doc = json_object_get(ans, "document");
        const char *summary = json_string_value(json_object_get(doc, "summary"));
        const char *doc_error = json_string_value(json_object_get(doc, "error"));
        if (summary) /* the server's text: shown without control characters but newlines and tabs */
                for (const char *p = summary; *p; p++)
                        putchar((unsigned char) *p >= 0x20 || *p == '\n' || *p == '\t' ? *p : '?');
        if (doc_error) {
                cli_error(CMD, "the document was kept as %s but not read: %.400s", got, doc_error);
                finish_stdout();
                return CLI_EXIT_FAILURE;
        }
        return finish_stdout();
}

/* ---- usage ---- */

static const handle_sub subs[] = {
        {{"list", BIT(OPT_JSON), NULL, "list SESSION [--json]",
          "List the session's data handles: id, kind (json, text, table, binary), size in bytes, rows x\n"
          "columns of tables, and where each came from.\n"},
         1,
         "a session ID",
         sub_list},
        {{"inspect", BIT(OPT_JSON) | BIT(OPT_HEAD) | BIT(OPT_TAIL) | BIT(OPT_STATS) | BIT(OPT_CSV), NULL,
          "inspect SESSION ID [--head N] [--tail N] [--stats] [--csv] [--json]",
          "Show a handle's summary (derived by hull from its bytes: kind, size, schema, preview), and for\n"
          "a table its first or last rows and per-column statistics.\n\n"
          "  --head N           the first N rows of a table (at most 100)\n"
          "  --tail N           the last N rows of a table (at most 100)\n"
          "  --stats            per column: count, nulls, min, max, mean, distinct (an estimate)\n"
          "  --csv              rows as CSV instead of aligned text\n"},
         2,
         "a session ID and a handle ID",
         sub_inspect},
        {{"query", BIT(OPT_JSON) | BIT(OPT_HANDLE) | BIT(OPT_MAX_ROWS), NULL,
          "query SESSION SQL|- [--handle ID]... [--max-rows N] [--json]",
          "Run one read-only SQL statement (SQLite; '-': read it from stdin) over table handles, each\n"
          "attached under its id: SELECT region, sum(x) FROM sales.data GROUP BY 1 (quote ids that are\n"
          "not plain identifiers: \"my-data\".data; 'inspect' shows the name). Prints the rows as CSV\n"
          "with a header; a large result becomes a new table handle, whose summary is printed.\n\n"
          "  --handle ID        attach this table handle (repeatable, at most 10; default: every table\n"
          "                     handle of the session)\n"
          "  --max-rows N       refuse a result of more than N rows\n"},
         2,
         "a session ID and an SQL statement",
         sub_query},
        {{"get", BIT(OPT_OFFSET) | BIT(OPT_LIMIT) | BIT(OPT_OUTPUT),
          "ho:", "get SESSION ID [--offset N] [--limit N] [-o FILE]",
          "Write the bytes of a json, text or binary handle to stdout (or FILE), exactly; a binary one\n"
          "read whole is checked against the daemon's SHA-256. Tables are read with 'query' or\n"
          "'inspect'.\n\n"
          "  --offset N         start at byte N (for text, moved forward to a character boundary)\n"
          "  --limit N          at most N bytes (default: to the end)\n"
          "  -o, --output FILE  write FILE instead (created beside it, renamed over it once complete)\n"},
         2,
         "a session ID and a handle ID",
         sub_get},
        {{"add", BIT(OPT_JSON) | BIT(OPT_NAME) | BIT(OPT_INPUT_ID) | BIT(OPT_FORMAT), NULL,
          "add SESSION FILE|- [--format F] [--name NAME] [--input-id ID] [--json]",
          "Upload a local file (any size the daemon allows: --handle-max, 1 GiB by default) into the\n"
          "session as an input, streamed as it is read: a read-only handle under inputs/, binary, or a\n"
          "table when the file is CSV, TSV or JSON (types inferred over every row). Prints its id.\n"
          "A document (PDF, Office, OpenDocument, HTML, Markdown) is also read in a sandbox into a text\n"
          "handle and a table handle per table (read_document's reading), whose summary is printed.\n"
          "Adding the same file under the same input ID again returns the first.\n\n"
          "  --format F         binary, csv, tsv, json (an array of objects), jsonl or document (default:\n"
          "                     from the extension: .csv, .tsv/.tab, .json, .jsonl/.ndjson; .pdf, .docx,\n"
          "                     .xlsx, .pptx, .odt, .ods, .odp, .html/.htm, .md are documents; else binary)\n"
          "  --name NAME        its display name (default: FILE's name; required for stdin)\n"
          "  --input-id ID      its handle id, [A-Za-z0-9][A-Za-z0-9_.-]{0,63} (default: made from the name)\n"},
         2,
         "a session ID and a file",
         sub_add},
};

void cli_handle_help(void) {
        printf("Usage: hull handle SUBCOMMAND SESSION [OPTIONS] [ARGS]\n\n"
               "Look at the data handles of a session of a running 'hull serve': results kept out of the\n"
               "model's context as typed files (json, text, table, binary) with a summary hull derives.\n\n"
               "Subcommands:\n");
        for (size_t i = 0; i < ELEMENTSOF(subs); i++)
                printf("  hull handle %s\n", subs[i].s.synopsis);
        printf("\n" CLI_CONNECTION_HELP "\n"
               "SESSION is a session ID as 'hull session open' prints it; ID a handle id as 'list' shows it.\n"
               "Run 'hull handle SUBCOMMAND --help' for one subcommand.\n"
               "Exit status: 0 on success, 1 when the daemon refused or failed (its code and message are\n"
               "printed), 2 on a usage error.\n");
}

/* ---- the command ---- */

static int parse_count(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *ret) {
        if (parse_uint64(arg, min, max, ret) < 0)
                return usage_error("%s wants a number from %" PRIu64 " to %" PRIu64 ", got '%s'", opt, min, max, arg);
        return 0;
}

/* One of handle's own options of subcommand sub (cli_client_cmd.own). Returns 0 or an exit
 * status. */
static int handle_option(void *args, const cli_client_sub *sub, int c, const char *arg) {
        handle_args *a = args;
        int r;
        switch (c == 'o' ? OPT_OUTPUT : c) {
        case OPT_STATS:
                a->stats = true;
                break;
        case OPT_CSV:
                a->csv = true;
                break;
        case OPT_HEAD:
                if ((r = parse_count("--head", arg, 0, HANDLE_CLI_ROWS_MAX, &a->head)))
                        return r;
                a->has_head = true;
                break;
        case OPT_TAIL:
                if ((r = parse_count("--tail", arg, 0, HANDLE_CLI_ROWS_MAX, &a->tail)))
                        return r;
                a->has_tail = true;
                break;
        case OPT_MAX_ROWS:
                if ((r = parse_count("--max-rows", arg, 1, HD_QUERY_ROWS_MAX, &a->max_rows)))
                        return r;
                break;
        case OPT_HANDLE:
                if (!handle_id_is_valid(arg))
                        return usage_error("--handle wants a handle id, [A-Za-z0-9][A-Za-z0-9_.-]{0,63}, got '%s'",
                                           arg);
                for (size_t i = 0; i < a->n_handles; i++)
                        if (strcmp(a->handles[i], arg) == 0)
                                return usage_error("--handle %s is given twice", arg);
                if (a->n_handles >= HANDLE_CLI_QUERY_HANDLES_MAX)
                        return usage_error("too many --handle options (a query attaches at most %u)",
                                           HANDLE_CLI_QUERY_HANDLES_MAX);
                a->handles[a->n_handles++] = arg;
                break;
        case OPT_OFFSET:
                if (parse_size(arg, 0, INT64_MAX, &a->offset) < 0)
                        return usage_error("--offset wants a byte offset such as 0 or 4096, got '%s'", arg);
                break;
        case OPT_LIMIT:
                if (parse_size(arg, 1, INT64_MAX, &a->limit) < 0)
                        return usage_error("--limit wants a byte count such as 4096 or 1M (at least 1), got '%s'", arg);
                a->has_limit = true;
                break;
        case OPT_OUTPUT:
                if (!arg[0])
                        return usage_error("-o wants a file name (or '-' for stdout)%s", "");
                a->output = arg;
                break;
        case OPT_NAME:
                if (!arg[0] || strlen(arg) > HANDLE_CLI_NAME_MAX || !utf8_is_valid(arg, strlen(arg)))
                        return usage_error("--name wants 1 to %u bytes of UTF-8, got '%s'", HANDLE_CLI_NAME_MAX, arg);
                for (const char *p = arg; *p; p++)
                        if ((unsigned char) *p < 0x20 || *p == 0x7f)
                                return usage_error("--name may not hold control characters%s", "");
                a->name = arg;
                break;
        case OPT_INPUT_ID:
                if (!handle_id_is_valid(arg))
                        return usage_error("--input-id wants a handle id, [A-Za-z0-9][A-Za-z0-9_.-]{0,63}, got '%s'",
                                           arg);
                a->input_id = arg;
                break;
        case OPT_FORMAT:
                a->format = arg;
                break;
        default:
                break;
        }
        return 0;
}

#define SUBCOMMANDS "list, inspect, query, get, add"

static const cli_client_cmd handle_cmd = {
        .name = CMD,
        .subcommands = SUBCOMMANDS,
        .options = options,
        .subs = subs,
        .n_subs = ELEMENTSOF(subs),
        .sub_size = sizeof(subs[0]),
        .help = cli_handle_help,
        .own = handle_option,
};

int cli_handle_main(int argc, char **argv) {
        handle_args a = {0};
        const cli_client_sub *found;
        int r = cli_client_parse(&handle_cmd, argc, argv, &a.c, &a, &found);
        if (r || !found)
                return r;
        const handle_sub *sub = (const handle_sub *) found; /* its first member */
        if (a.c.n_pos < sub->n_pos)
                return usage_error("'hull handle %s' wants %s", sub->s.name, sub->pos_what);
        if (a.c.n_pos > sub->n_pos)
                return usage_error("unexpected argument '%s'", a.c.pos[sub->n_pos]);
        if (!cli_session_id_is_valid(a.c.pos[0]))
                return usage_error(
                        "'%s' is not a session ID (1 to 64 lowercase hex digits, as 'hull session open' prints)",
                        a.c.pos[0]);
        if ((sub->run == sub_inspect || sub->run == sub_get) && !handle_id_is_valid(a.c.pos[1]))
                return usage_error("'%s' is not a handle id ([A-Za-z0-9][A-Za-z0-9_.-]{0,63}, as 'list' shows)",
                                   a.c.pos[1]);
        if (sub->run == sub_add && !a.c.pos[1][0])
                return usage_error("the file's name is empty%s", "");
        if (a.csv && a.c.json)
                return usage_error("--csv and --json exclude each other%s", "");

        _cleanup_(cli_client_done) cli_client c = {0};
        r = cli_client_setup(&c, CMD, a.c.url, a.c.unix_path, a.c.token_file, a.c.insecure);
        if (r)
                return r;
        return sub->run(&c, &a);
}
