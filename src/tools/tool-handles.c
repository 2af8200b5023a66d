/* tool-handles.c: the tools that look into a session's data handles without loading them
 * (inspect_handle, query_handle, read_handle) and publish_file, which delivers a file of the
 * workspace the way the hull module's publish() does (ss_publish). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tool-util.h"
#include "tools-sandbox.h"

_Static_assert(TOOL_HANDLE_TEXT_MAX == 49152, "read_handle's schema says 49152");
_Static_assert(HD_INSPECT_ROWS_MAX == 100, "inspect_handle's schema says 100");

/* The ids of the session's handles (of kind, or all), for a message: "a, b, c". */
static void list_ids(const tool_ctx *c, const char *kind, char *buf, size_t size) {
        json_t *list = NULL;
        size_t i, o = 0, n = 0;
        json_t *h;
        buf[0] = '\0';
        if (ss_handles_list(c->ss, c->session, &list, NULL) < 0)
                return;
        json_array_foreach(list, i, h) {
                const char *k = json_string_value(json_object_get(h, "kind"));
                if (kind && (!k || strcmp(k, kind) != 0))
                        continue;
                if (n++ >= TOOL_HANDLES_LISTED_MAX) {
                        snprintf(buf + o, size - o, ", ...");
                        break;
                }
                int w = snprintf(buf + o, size - o, "%s%s", o ? ", " : "",
                                 json_string_value(json_object_get(h, "id")) ?: "?");
                if (w < 0 || (size_t) w >= size - o)
                        break;
                o += (size_t) w;
        }
        json_decref(list);
        if (!buf[0])
                snprintf(buf, size, "none");
}

static int handle_error(const tool_ctx *c, tool_output *ret, const char *tool, const char *id, int r,
                        const hull_error *he) {
        char ids[1024];
        switch (-r) {
        case ENOENT:
                list_ids(c, NULL, ids, sizeof(ids));
                return tool_error(ret, "%s: there is no handle %.64s; the handles are: %s", tool, id, ids);
        case EOPNOTSUPP:
                return tool_error(ret, "%s: this session keeps no handles", tool);
        default:
                return tool_error(ret, "%s: %s", tool, he->msg);
        }
}

/* A JSON answer as text, cut at TOOL_HANDLE_TEXT_MAX with a note. */
static int json_answer(tool_output *ret, const json_t *v, const char *too_long) {
        _cleanup_free_ char *d = json_dumps(v, JSON_COMPACT);
        if (!d)
                return tool_error(ret, "the answer could not be serialized");
        size_t len = strlen(d);
        if (len <= TOOL_HANDLE_TEXT_MAX) {
                ret->text = TAKE_PTR(d);
                return 0;
        }
        size_t keep = TOOL_HANDLE_TEXT_MAX;
        while (keep > 0 && ((unsigned char) d[keep] & 0xc0) == 0x80)
                keep--;
        if (asprintf(&ret->text, "%.*s\n[... cut at %zu of %zu bytes: %s]", (int) keep, d, keep, len, too_long) < 0)
                ret->text = NULL;
        return 0;
}

/* ---- inspect_handle ---- */

static int inspect_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        const char *id = json_string_value(json_object_get(input, "handle_id"));
        int64_t rows = tool_int(input, "rows", TOOL_HANDLE_ROWS_DEFAULT);
        ss_inspect_opts o = {.head = (uint32_t) (rows < 0 ? 0 : MIN(rows, (int64_t) HD_INSPECT_ROWS_MAX)),
                             .stats = tool_bool(input, "stats", false)};
        json_auto_t *v = NULL;
        hull_error he = {0};
        int r = ss_handles_inspect(c->ss, c->session, id, &o, &v, &he);
        if (r < 0)
                return handle_error(c, ret, "inspect_handle", id, r, &he);
        return json_answer(ret, v, "ask for fewer rows");
}

const tool_def tool_inspect_handle = {
        .name = "inspect_handle",
        .description = "Look closer at a data handle: its summary and, for a table, its columns, its first rows "
                       "(rows, default 20) and with stats per-column statistics (count, nulls, min, max, mean, "
                       "distinct). For a text or JSON handle use read_handle.",
        .input_schema =
                "{\"type\": \"object\", \"properties\": {"
                "\"handle_id\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"The handle's id\"}, "
                "\"rows\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 100, \"description\": "
                "\"Rows of a table to show (default 20)\"}, "
                "\"stats\": {\"type\": \"boolean\", \"description\": \"Per-column statistics of a table\"}}, "
                "\"required\": [\"handle_id\"], \"additionalProperties\": false}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .timeout_ms = TOOL_FILES_TIMEOUT_MS,
        .needs_session = true,
        .record_kind = "inspect_handle",
        .run = inspect_run,
};

/* ---- query_handle ---- */

/* Add id (a table handle's, found in list) to ids unless it is there. */
static void add_id(const char **ids, size_t *n, size_t max, const char *id) {
        for (size_t i = 0; i < *n; i++)
                if (strcmp(ids[i], id) == 0)
                        return;
        if (*n < max)
                ids[*n] = id;
        (*n)++;
}

/* The table handle a name of the SQL is: exact for a quoted name, in any case for a plain one (as
 * SQLite compares them). */
static const char *table_named(const json_t *list, const char *name, size_t len, bool quoted) {
        size_t i;
        json_t *h;
        json_array_foreach(list, i, h) {
                const char *id = json_string_value(json_object_get(h, "id"));
                const char *kind = json_string_value(json_object_get(h, "kind"));
                if (!id || !kind || strcmp(kind, "table") != 0 || strlen(id) != len)
                        continue;
                if (quoted ? memcmp(id, name, len) == 0 : strncasecmp(id, name, len) == 0)
                        return id;
        }
        return NULL;
}

/* The table handles sql names by id: its identifiers (plain, "double", `back` or [bracket]
 * quoted), outside string literals and comments. Returns how many (more than max: only max
 * written). */
static size_t tables_in(const char *sql, const json_t *list, const char **ids, size_t max) {
        size_t n = 0;
        char name[HD_ID_MAX + 1];
        for (const char *p = sql; *p;) {
                if (*p == '\'') { /* a string literal, '' inside */
                        for (p++; *p && !(p[0] == '\'' && p[1] != '\''); p += p[0] == '\'' ? 2 : 1)
                                ;
                        if (*p)
                                p++;
                } else if (p[0] == '-' && p[1] == '-') {
                        p = strchr(p, '\n') ?: p + strlen(p);
                } else if (p[0] == '/' && p[1] == '*') {
                        const char *end = strstr(p + 2, "*/");
                        p = end ? end + 2 : p + strlen(p);
                } else if (*p == '"' || *p == '`' || *p == '[') {
                        char close = *p == '[' ? ']' : *p;
                        size_t k = 0;
                        bool fits = true;
                        for (p++; *p; p++) {
                                if (*p == close && p[1] == close && close != ']')
                                        p++; /* a doubled quote is one */
                                else if (*p == close)
                                        break;
                                if (k < HD_ID_MAX)
                                        name[k++] = *p;
                                else
                                        fits = false;
                        }
                        if (*p)
                                p++;
                        const char *id = fits ? table_named(list, name, k, true) : NULL;
                        if (id)
                                add_id(ids, &n, max, id);
                } else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                           *p == '_' || (unsigned char) *p >= 0x80) {
                        const char *s = p;
                        while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                               *p == '_' || *p == '$' || (unsigned char) *p >= 0x80)
                                p++;
                        const char *id = table_named(list, s, (size_t) (p - s), false);
                        if (id)
                                add_id(ids, &n, max, id);
                } else
                        p++;
        }
        return n;
}

static int query_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        const char *sql = json_string_value(json_object_get(input, "sql"));
        int64_t max_rows = tool_int(input, "max_rows", 0);
        json_auto_t *list = NULL;
        hull_error he = {0};
        int r = ss_handles_list(c->ss, c->session, &list, &he);
        if (r < 0)
                return handle_error(c, ret, "query_handle", "", r, &he);
        const char *ids[HD_QUERY_HANDLES_MAX];
        size_t n = tables_in(sql, list, ids, HD_QUERY_HANDLES_MAX);
        if (n > HD_QUERY_HANDLES_MAX)
                return tool_error(ret, "query_handle: the query names %zu table handles; one query may use at most %u",
                                  n, HD_QUERY_HANDLES_MAX);
        char tables[1024];
        list_ids(c, "table", tables, sizeof(tables));
        if (strcmp(tables, "none") == 0)
                return tool_error(ret, "query_handle: this session has no table handles (a CSV input, a table saved "
                                       "with save(id, dataframe), or a large query result is one)");
        json_auto_t *v = NULL;
        r = ss_handles_query(c->ss, c->session, sql, n ? ids : NULL, n, max_rows > 0 ? (uint64_t) max_rows : 0, &v,
                             &he);
        if (r < 0)
                return tool_error(ret, "query_handle: %s; the table handles are: %s (name each by its id: FROM sales)",
                                  he.msg, tables);
        json_t *h = json_object_get(v, "handle");
        if (!h)
                return json_answer(ret, v, "select fewer columns, or aggregate");
        _cleanup_free_ char *d = json_dumps(h, JSON_COMPACT);
        if (asprintf(&ret->text,
                     "The result has %" PRId64 " rows: it was kept as the table handle %s. Its summary:\n%s",
                     (int64_t) json_integer_value(json_object_get(h, "n_rows")),
                     json_string_value(json_object_get(h, "id")) ?: "?", d ? d : "{}") < 0)
                return hull_err(e, -ENOMEM, "query_handle: out of memory");
        ret->handles = json_pack("[O]", h);
        return 0;
}

const tool_def tool_query_handle = {
        .name = "query_handle",
        .description = "Run one read-only SQLite query over the session's table handles, each named by its id as a "
                       "table: SELECT region, sum(amount) FROM sales GROUP BY 1 (quote an id that is not a plain "
                       "name: \"my-data\"). Up to 50 rows come back as JSON; a larger result becomes a new table "
                       "handle.",
        .input_schema = "{\"type\": \"object\", \"properties\": {"
                        "\"sql\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"One SELECT statement\"}, "
                        "\"max_rows\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 10000000, \"description\": "
                        "\"Refuse a result of more rows than this (default 1000000)\"}}, "
                        "\"required\": [\"sql\"], \"additionalProperties\": false}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .timeout_ms = TOOL_FILES_TIMEOUT_MS,
        .needs_session = true,
        .record_kind = "query_handle",
        .run = query_run,
};

/* ---- read_handle ---- */

static int read_handle_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        const char *id = json_string_value(json_object_get(input, "handle_id"));
        int64_t offset = tool_int(input, "offset", 0), limit = tool_int(input, "limit", HD_READ_DEFAULT_BYTES);
        json_auto_t *v = NULL;
        hull_error he = {0};
        int r = ss_handles_read(c->ss, c->session, id, offset < 0 ? 0 : (uint64_t) offset,
                                limit < 1 ? 1 : MIN((uint64_t) limit, (uint64_t) TOOL_HANDLE_TEXT_MAX), &v, &he);
        if (r == -EMEDIUMTYPE)
                return tool_error(ret, "read_handle: %.64s is a table: use query_handle or inspect_handle", id);
        if (r < 0)
                return handle_error(c, ret, "read_handle", id, r, &he);
        uint64_t off = (uint64_t) json_integer_value(json_object_get(v, "offset"));
        uint64_t len = (uint64_t) json_integer_value(json_object_get(v, "length"));
        uint64_t total = (uint64_t) json_integer_value(json_object_get(v, "total_bytes"));
        const json_t *text = json_object_get(v, "text");
        if (!json_is_string(text))
                return tool_error(ret,
                                  "read_handle: %.64s is a binary file of %" PRIu64
                                  " bytes: work with it in code (load(\"%.64s\") in run_python gives its path)",
                                  id, total, id);
        _cleanup_dynbuf_ dynbuf b;
        tool_buf_init(&b);
        tool_add_bytes(&b, json_string_value(text), json_string_length(text));
        if (json_is_true(json_object_get(v, "eof")) && off == 0)
                ; /* all of it */
        else if (json_is_true(json_object_get(v, "eof")))
                (void) dynbuf_addf(&b, "\n[bytes %" PRIu64 "-%" PRIu64 " of %" PRIu64 ": the end]", off, off + len,
                                   total);
        else
                (void) dynbuf_addf(&b,
                                   "\n[bytes %" PRIu64 "-%" PRIu64 " of %" PRIu64 ": continue with offset=%" PRIu64 "]",
                                   off, off + len, total, off + len);
        (void) e;
        return tool_text(ret, &b, false);
}

const tool_def tool_read_handle = {
        .name = "read_handle",
        .description = "Read a slice of a text or JSON handle: limit bytes (default 8192) from offset. For tables "
                       "use query_handle or inspect_handle.",
        .input_schema =
                "{\"type\": \"object\", \"properties\": {"
                "\"handle_id\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"The handle's id\"}, "
                "\"offset\": {\"type\": \"integer\", \"minimum\": 0, \"description\": \"The byte to start "
                "from (default 0)\"}, "
                "\"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 49152, \"description\": "
                "\"Bytes to read (default 8192)\"}}, "
                "\"required\": [\"handle_id\"], \"additionalProperties\": false}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .timeout_ms = TOOL_FILES_TIMEOUT_MS,
        .needs_session = true,
        .run = read_handle_run,
};

/* ---- publish_file ---- */

static int publish_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        char rel[WS_PATH_MAX + 1], shown[WS_PATH_MAX + 16];
        if (tool_path(input, "path", false, rel, ret))
                return 0;
        tool_shown_path(rel, shown);
        const char *name = json_string_value(json_object_get(input, "name"));
        const char *desc = json_string_value(json_object_get(input, "description"));
        json_t *sum = NULL;
        hull_error pe = {0};
        int r = ss_publish(c->ss, c->session, rel, name, desc, &sum, &pe);
        if (r == -ENOENT)
                return tool_error(ret, "publish_file: %s does not exist: write the file first", shown);
        if (r < 0)
                return tool_error(ret, "publish_file: %s", pe.msg);
        if (asprintf(&ret->text, "%s (%" PRId64 " bytes, handle %s): tell the user the file's name",
                     json_string_value(json_object_get(sum, "source")) ?: shown,
                     (int64_t) json_integer_value(json_object_get(sum, "bytes")),
                     json_string_value(json_object_get(sum, "id")) ?: "?") < 0) {
                json_decref(sum);
                return hull_err(e, -ENOMEM, "publish_file: out of memory");
        }
        ret->handles = json_pack("[o]", sum);
        return 0;
}

const tool_def tool_publish_file = {
        .name = "publish_file",
        .description = "Deliver a file the user asked for: it must be under /workspace/outputs/. Its bytes are kept "
                       "with the session's results under name (default: the file's name) with a description.",
        .input_schema = "{\"type\": \"object\", \"properties\": {"
                        "\"path\": {\"type\": \"string\", \"description\": \"The file, under /workspace/outputs/\"}, "
                        "\"name\": {\"type\": \"string\", \"maxLength\": 255, \"description\": \"The name to "
                        "deliver it under\"}, "
                        "\"description\": {\"type\": \"string\", \"maxLength\": 1024, \"description\": \"What the "
                        "file is\"}}, "
                        "\"required\": [\"path\"], \"additionalProperties\": false}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .timeout_ms = TOOL_FILES_TIMEOUT_MS,
        .needs_session = true,
        .run = publish_run,
};
