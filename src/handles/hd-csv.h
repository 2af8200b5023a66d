/* hd-csv.h: a CSV/TSV record reader (RFC 4180 quoting) and the cell type inference used when
 * delimited text or JSON records become a table. Pure: bytes in, fields out, no I/O, no
 * allocation. Fields point into the caller's buffer. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct hd_csv {
        const char *buf;
        size_t len, pos;
        char delim;    /* ',' or '\t' */
        uint64_t line; /* line of the next record (1-based) */
} hd_csv;

typedef struct hd_csv_field {
        const char *p; /* the field's bytes (inside the quotes when quoted) */
        size_t n;
        bool escaped; /* quoted and containing "" pairs: use hd_csv_unescape() */
        bool quoted;
} hd_csv_field;

/* Start reading buf[0..len); a UTF-8 byte order mark is skipped. */
void hd_csv_init(hd_csv *c, const char *buf, size_t len, char delim);

/* Read the next record into fields[0..max). Records end at "\n" or "\r\n" outside quotes; a
 * quoted field ('"' first) may hold delimiters, newlines and "" for a quote. *ret_line is the
 * line the record began on. Returns the number of fields (>= 1), 0 at the end of the input, or
 * a negative errno: -EBADMSG (a quoted field not closed, text after a closing quote), -E2BIG
 * (more than max fields), -EFBIG (a field longer than HD_FIELD_MAX); the message names the line. */
int hd_csv_next(hd_csv *c, hd_csv_field *fields, size_t max, uint64_t *ret_line, hull_error *e);

/* Copy an escaped field to out (f->n bytes always suffice), turning "" into ". Returns the
 * length. */
size_t hd_csv_unescape(const hd_csv_field *f, char *out);

/* Inferred column types, ordered so that hd_type_merge() is a join. */
typedef enum hd_type {
        HD_TYPE_NULL,      /* only empty cells so far */
        HD_TYPE_INTEGER,   /* [+-]digits, no leading zeros, at most 18 digits */
        HD_TYPE_REAL,      /* decimal or exponent notation */
        HD_TYPE_BOOLEAN,   /* true/false (any of true, True, TRUE) */
        HD_TYPE_DATE,      /* YYYY-MM-DD */
        HD_TYPE_TIMESTAMP, /* YYYY-MM-DD[T ]HH:MM[:SS[.frac]][Z|+HH:MM|-HHMM] */
        HD_TYPE_TEXT,
        _HD_TYPE_MAX,
} hd_type;

/* Classify one cell (an empty cell is HD_TYPE_NULL). Pure. */
hd_type hd_classify(const char *p, size_t n);

/* The type of a column holding values of types a and b: NULL joins anything, INTEGER+REAL is
 * REAL, DATE+TIMESTAMP is TIMESTAMP, any other mix is TEXT. */
hd_type hd_type_merge(hd_type a, hd_type b);

/* "integer", "real", ... as shown in schemas ("text" for HD_TYPE_NULL); the SQL type declared
 * for it ("INTEGER", "REAL", "BOOLEAN", "DATE", "TIMESTAMP", "TEXT"). */
const char *hd_type_name(hd_type t);
const char *hd_type_sql(hd_type t);

/* Parse a cell classified INTEGER / BOOLEAN. */
int64_t hd_parse_integer(const char *p, size_t n);
bool hd_parse_boolean(const char *p, size_t n);
