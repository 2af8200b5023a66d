/* hd-store.h: the data handle store of one session: big or structured results kept on disk as
 * typed files, shown to the model as compact summaries hull derives itself, and queried,
 * inspected and read in bounded slices (issue 4).
 *
 * The store is a directory owned by the host (the sandbox sees it read-only at /handles):
 *
 *   <id>.json  <id>.txt  <id>.sqlite (a table: one SQLite table, typed columns)  <id>.bin
 *   _manifest.json  {id: {id, kind, source, path, bytes, digest, created, summary}}, rewritten
 *                   atomically (a temporary file renamed over it) on every put
 *
 * Trust:
 * - Summaries are derived from the bytes on disk, never from what a caller claims; the same
 *   bytes give the same summary (keys in a fixed order, no times).
 * - On open, the manifest is read but believed only as far as it can be checked: the id must be
 *   valid, the kind known, the path exactly "<id>.<ext of kind>", the file a regular file (not a
 *   link) of the recorded size, the digest well formed. Any other record is skipped, and files
 *   without a record are ignored. Summaries in the manifest are never read back: each is
 *   derived again from the file on first use.
 * - Digest: SHA-256 of the whole file (lowercase hex), recorded at creation. Every read of a
 *   stored handle (summary, inspect, query, read) checks it: the file is hashed again unless
 *   its identity (device, inode, size, mtime and ctime in nanoseconds) is unchanged since the
 *   last successful check by this store object. Any write to the file changes its ctime, and
 *   ctime cannot be set by a user, so an unchanged identity means unchanged bytes; a fresh
 *   store object (a reopen) hashes each file once on first use. A mismatch is -EBADMSG,
 *   "handle hX tampered". (SHA-256 runs at about 1.8 GB/s here with SHA-NI: 55 ms per 100 MB.)
 * - Ids: hull's own are "h1", "h2", ... in order; a caller's id must match
 *   [A-Za-z0-9][A-Za-z0-9_.-]{0,63}; an explicit "hN" moves the counter past N; an id is never
 *   reused and a record never changes.
 * - Files are opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
 *   and O_NOFOLLOW, and read only when fstat() says regular. New files are written under a
 *   temporary name (".tmp-*", which no id can collide with), checked, then renamed into place;
 *   stored files are mode 0444.
 * - Tables adopted from sandboxed code are opened read-only with SQLite's defensive settings
 *   (see hd_adopt_fd) and must hold exactly one ordinary table.
 *
 * Summaries ({} marks a JSON object; every value derived from the file):
 *   {"id", "kind": "json"|"text"|"table"|"binary", "source", "bytes", "path", "preview",
 *    tables: "table" (its name), "schema": {column: integer|real|text|boolean|date|timestamp|
 *            blob|any}, "n_rows", "n_cols"; the preview is the header and the first
 *            HD_PREVIEW_ROWS rows as CSV, then "... (5 of N rows)" when there are more;
 *    json:   "shape" (hd-json.h); text and json previews are the first HD_PREVIEW_CHARS
 *            characters (cut at a character boundary); binary: "<binary, N bytes>"}
 *
 * SQLite's memory: every operation that may run SQLite (put, adopt, spill, summary, inspect,
 * query, read) charges what SQLite allocates on its thread to a budget of its own
 * (sqlite_mem_bytes; src/shared/sqlite-mem.h) and fails past it with -ENOMEM, "handles: the
 * query needs more than N MiB of memory"; other SQLite connections of the process are untouched.
 *
 * Every function returns 0 (or a documented count) or a negative errno and fills *e (when not
 * NULL) with one line saying what was wrong and what to do. Outputs (ret_*) are written only on
 * success; a json_t * returned is the caller's (json_decref). A store may be used from several
 * threads at once (a mutex inside; long work such as an ingest or a query runs outside it). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "hd-types.h"
#include "limits.h"

typedef struct hd_store hd_store;

typedef enum hd_kind {
        HD_KIND_JSON,
        HD_KIND_TEXT,
        HD_KIND_TABLE,
        HD_KIND_BINARY,
        _HD_KIND_MAX,
        _HD_KIND_INVALID = -EINVAL,
} hd_kind;

/* hd_format (what bytes handed to the store are) is in hd-types.h. */

const char *hd_kind_to_string(hd_kind k);
hd_kind hd_kind_from_string(const char *s); /* -EINVAL when unknown */
hd_kind hd_format_kind(hd_format f);

/* Does id match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}? Pure. */
bool hd_id_is_valid(const char *id);

/* Is name one the store gives its files: _manifest.json, or <id>.<the extension of a kind>?
 * (What a copy of a store takes: hull.py, temporaries and anything else are not the store's.)
 * Pure. */
bool hd_store_owns_name(const char *name);

typedef struct hd_store_opts {
        uint64_t spill_threshold_bytes; /* 0: HD_SPILL_THRESHOLD_DEFAULT */
        uint64_t max_spill_bytes;       /* 0: HD_MAX_SPILL_DEFAULT; at most HD_MAX_SPILL_MAX; also
                                         * bounds every put, adopt and query result */
        uint64_t sqlite_mem_bytes;      /* SQLite memory of one operation: 0: HD_SQLITE_MEM_DEFAULT;
                                         * 1 MiB to HD_SQLITE_MEM_MAX */
} hd_store_opts;

/* Open the store rooted at dir_fd (duplicated; the caller keeps its fd), reading and checking
 * _manifest.json when present (see above; no file is hashed here). opts may be NULL. Returns 0
 * and *ret (free with hd_store_free), or -EINVAL (bad options), -ENOTDIR, -ENOMEM, -EFBIG (a
 * manifest over HD_MANIFEST_MAX_BYTES). A manifest that is not JSON is ignored (the store starts
 * empty and rewrites it on the next put). */
int hd_store_open(int dir_fd, const hd_store_opts *opts, hd_store **ret, hull_error *e);
hd_store *hd_store_free(hd_store *s);

/* Store len bytes of data (copied) as a new handle. id: NULL for the next "hN", or a caller's
 * id (checked, never reused). source: a short description of where the data came from (at most
 * HD_SOURCE_MAX bytes; invalid UTF-8 is repaired). Tables in CSV/TSV/JSON formats are ingested
 * into a new SQLite file: column types inferred over all rows, empty cells and missing keys
 * NULL. Returns 0 and *ret_summary (may be NULL), or a negative errno: -EINVAL (bad id or
 * format), -EEXIST ("handle hX already exists"), -EFBIG (over max_spill_bytes), -EBADMSG (not
 * JSON, a ragged row naming its line, a hostile SQLite file), -EILSEQ (text not UTF-8), -E2BIG
 * (over HD_TABLE_COLUMNS_MAX columns), -ENOSPC (HD_HANDLES_MAX reached), -ENODATA (no columns:
 * an empty CSV or JSON array), or an I/O error. On failure nothing is stored. */
int hd_put(hd_store *s, const char *id, hd_format format, const char *source, const void *data, size_t len,
           json_t **ret_summary, hull_error *e);

/* Like hd_put(HD_FORMAT_JSON) with the JSON of v as json_dump_callback writes it with flags:
 * streamed into the store's file and hashed on the way, never held whole in memory. max: at most
 * this many bytes (0: max_spill_bytes; never above it). Errors as hd_put; -EFBIG once the text
 * passes max (nothing is stored). */
int hd_put_value(hd_store *s, const char *id, const char *source, const json_t *v, size_t flags, uint64_t max,
                 json_t **ret_summary, hull_error *e);

/* Like hd_put(HD_FORMAT_TEXT) for the NUL-terminated text: its length is found beside its hash
 * (a long tool output's strlen is not paid before the hash starts). max: at most this many bytes
 * (0: max_spill_bytes; never above it). Errors as hd_put; -EFBIG past max, -EILSEQ when the text
 * is not UTF-8 (nothing is stored). */
int hd_put_text(hd_store *s, const char *id, const char *source, const char *text, uint64_t max, json_t **ret_summary,
                hull_error *e);

/* Like hd_put with the bytes of fd, a regular file the caller opened and validated (the sandbox
 * bridge: a file sandboxed code wrote). The bytes are copied into the store first (at most
 * max_spill_bytes; a file that grows past it while copied is refused) and only the copy is
 * parsed, so the writer cannot change them afterwards. HD_FORMAT_SQLITE: the copy is opened
 * read-only with SQLITE_DBCONFIG_DEFENSIVE, trusted_schema, triggers, views and extensions off,
 * mmap off, cell_size_check on, sqlite3_limit on length, SQL, columns and attachments, a time
 * budget (HD_SQLITE_CHECK_MS) through a progress handler and the operation's memory budget; its header
 * must be sane (page size, page count against the file size), PRAGMA quick_check must pass and
 * it must hold exactly one ordinary table (no views, triggers, virtual tables or generated
 * columns; indexes are allowed). Errors as hd_put, plus -EINVAL (fd not a regular file). */
int hd_adopt_fd(hd_store *s, int fd, const char *id, hd_format format, const char *source, json_t **ret_summary,
                hull_error *e);

/* Like hd_adopt_fd, for a file only this process can reach (an upload the daemon wrote into an
 * O_TMPFILE: unlinked, owned by this user, no access for group or others, checked here): a
 * table (CSV, TSV, JSON) is parsed straight from it, with no copy into the store first. Any
 * other file, or another format, is copied as hd_adopt_fd does. */
int hd_adopt_own_fd(hd_store *s, int fd, const char *id, hd_format format, const char *source, json_t **ret_summary,
                    hull_error *e);

/* What the store's puts have cost since it opened, counted for the regression tests of the
 * fast paths (issue 26): bytes copied from a caller's file into the store, bytes of JSON parsed
 * (validation with the shape: once per JSON handle), bytes written into the store's files and
 * bytes hashed (each once: hashed on the way in, never read back), and values serialized
 * (hd_put_value: once each, streamed). */
typedef struct hd_store_io {
        uint64_t bytes_copied;
        uint64_t bytes_scanned;
        uint64_t bytes_written;
        uint64_t bytes_hashed;
        uint64_t values_serialized;
} hd_store_io;
void hd_store_io_get(hd_store *s, hd_store_io *ret);

/* The spill rule for a tool result of len bytes: over max_spill_bytes → -EFBIG with a message
 * telling the source to paginate or filter; is_table (the result is a table) or over
 * spill_threshold_bytes → a new "hN" handle (tables: tried as a JSON array of objects, JSON
 * lines, then CSV; others: JSON if it is JSON, else text if UTF-8, else binary), returning 1 and
 * *ret_summary; otherwise 0 and *ret_summary = NULL (the caller passes the result inline).
 * Lossless: all bytes are kept. */
int hd_spill(hd_store *s, const char *source, const void *data, size_t len, bool is_table, json_t **ret_summary,
             hull_error *e);

/* The summary of handle id (checked against its digest). Returns 0 and *ret, -ENOENT (no such
 * handle), -EBADMSG (tampered), or an I/O error. */
int hd_summary(hd_store *s, const char *id, json_t **ret, hull_error *e);

/* All handles as an array of {id, kind, source, bytes, path} in creation order (no file is
 * read). Returns 0 and *ret. */
int hd_list(hd_store *s, json_t **ret, hull_error *e);

/* The summary plus, for tables, "columns" and "head"/"tail" rows (arrays of values) and with
 * stats "stats": {column: {count (non-NULL), nulls, min, max, mean (over integer and real values
 * only; null when none), distinct (a HyperLogLog estimate over every value, 2^HD_HLL_BITS
 * registers, about 3% error; exact below a few hundred)}} for the first HD_STATS_COLUMNS_MAX
 * columns ("stats_truncated": true beyond). One scan of the table, bounded by HD_INSPECT_MS.
 * For json and text, head/tail/stats are ignored (use hd_read). opts (hd_inspect_opts, in
 * hd-types.h) may be NULL. Returns 0 and *ret, or hd_summary's errors, -EINVAL (too many rows asked), -ETIMEDOUT. */
int hd_inspect(hd_store *s, const char *id, const hd_inspect_opts *opts, json_t **ret, hull_error *e);

typedef struct hd_query_opts {
        uint64_t time_ms;      /* 0: HD_QUERY_MS_DEFAULT; at most HD_QUERY_MS_MAX */
        uint64_t max_rows;     /* 0: HD_QUERY_ROWS_DEFAULT; at most HD_QUERY_ROWS_MAX */
        const char *result_id; /* id of the result handle; NULL for the next "hN" */
} hd_query_opts;

/* Run one read-only SQL statement over table handles ids[0..n_ids) (1 to HD_QUERY_HANDLES_MAX),
 * each attached read-only under its id as schema name, its table named by the id alone too (a
 * temporary view): SELECT region, sum(x) FROM sales GROUP BY 1, or FROM sales.data (quote ids
 * that are not plain identifiers: "my-data", "my-data".data). An authorizer allows only
 * reading (SELECT, reads, recursive CTEs, functions other than load_extension and a few
 * others); ATTACH, DETACH, writes, transactions and PRAGMAs are denied, and the statement must
 * be read-only and alone. Returns 0 and *ret:
 *   - {"columns": [...], "rows": [[...], ...], "n_rows": N} when the result has at most
 *     HD_QUERY_INLINE_ROWS rows and HD_QUERY_INLINE_BYTES bytes as JSON;
 *   - otherwise {"handle": summary} of a new table handle holding the whole result (typed from
 *     the values: integer, real, text, blob; declared types kept when all values fit them).
 * Errors: -EINVAL (no statement, more than one, bad ids), -ENOENT (no such handle), -EMEDIUMTYPE
 * (a handle that is not a table), -EBADMSG (tampered, or an SQL error: the message is
 * SQLite's), -EPERM (denied by the authorizer), -ETIMEDOUT (the time budget), -EFBIG (more than
 * max_rows rows or over max_spill_bytes). */
int hd_query(hd_store *s, const char *sql, const char *const *ids, size_t n_ids, const hd_query_opts *opts,
             json_t **ret, hull_error *e);

/* Read up to limit bytes (0: HD_READ_DEFAULT_BYTES; at most HD_READ_MAX_BYTES) of a json or
 * text handle from byte offset, moved forward to a character boundary, the end moved back to
 * one. Returns 0 and *ret = {"id", "offset", "length", "total_bytes", "eof", "text"} (offset
 * and length as adjusted), or -ENOENT, -EBADMSG (tampered), -EMEDIUMTYPE (a table or binary
 * handle: use hd_inspect or hd_query), -EINVAL (limit too large). */
int hd_read(hd_store *s, const char *id, uint64_t offset, uint64_t limit, json_t **ret, hull_error *e);
