/* hd-types.h: the types the store's API shares with the table code (hd-table.h), so that the
 * table code needs nothing of hd-store.h. Included by hd-store.h. */
#pragma once

#include <errno.h>
#include <stdbool.h>

/* What bytes handed to the store are; the kind follows from it. */
typedef enum hd_format {
        HD_FORMAT_JSON,       /* kind json: validated, shape derived */
        HD_FORMAT_TEXT,       /* kind text: must be UTF-8 (invalid bytes: -EILSEQ, store as binary) */
        HD_FORMAT_BINARY,     /* kind binary: anything */
        HD_FORMAT_CSV,        /* kind table: RFC 4180, a header row */
        HD_FORMAT_TSV,        /* kind table: tab-separated, same quoting, a header row */
        HD_FORMAT_JSON_ARRAY, /* kind table: a JSON array of objects (keys united, first-seen order) */
        HD_FORMAT_JSON_LINES, /* kind table: one JSON object per line (blank lines skipped) */
        HD_FORMAT_SQLITE,     /* kind table: an SQLite database, checked defensively */
        _HD_FORMAT_MAX,
        _HD_FORMAT_INVALID = -EINVAL,
} hd_format;

typedef struct hd_inspect_opts {
        unsigned head; /* first rows to show (tables; at most HD_INSPECT_ROWS_MAX) */
        unsigned tail; /* last rows to show (tables; at most HD_INSPECT_ROWS_MAX) */
        bool stats;    /* per-column statistics (tables) */
} hd_inspect_opts;
