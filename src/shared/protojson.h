/* protojson.h: reading and writing ProtoJSON, protobuf's JSON mapping, as the daemon reads requests
 * and the CLI reads answers (jansson values): a field by its lowerCamelCase name or its proto
 * (snake_case) name, null read as absent and an absent field as its zero value, 64-bit integers as
 * JSON numbers or decimal strings, bytes as base64 (src/shared/base64: either alphabet, padded or
 * not). Pure: no I/O, no logging; fuzzed (fuzz/fuzz-protojson.c).
 *
 * Every reader returns 0, or a negative errno with *e (may be NULL) saying which field and what
 * is wrong with it, e.g. "timeoutMs must be an integer from 0 to 300000": -EINVAL for a wrong type
 * or value, -E2BIG for one over its bound, -ENOMEM. Outputs are written only on success. camel and
 * snake are the two spellings of a field (snake NULL or equal to camel: one spelling); where is
 * put before the name in a message ("files[2]." ; NULL or "" for none). Strings returned point
 * into o. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* The field's value, or NULL when absent or null. Both spellings present: -EINVAL, "X is given
 * twice (as X and Y)". */
int pj_field(const json_t *o, const char *camel, const char *snake, json_t **ret, hull_error *e);

/* A string of at most max bytes (absent: "" and 0). With ret_len NULL a NUL inside is refused,
 * so *ret is a whole C string; with ret_len the string may hold NULs. */
int pj_string(const json_t *o, const char *camel, const char *snake, const char *where, size_t max, const char **ret,
              size_t *ret_len, hull_error *e);

/* An integer, a JSON integer or a decimal string ("-12"; no sign, space or exponent else), within
 * [min, max]; absent: 0. *ret_present (may be NULL) says whether the field was there. */
int pj_int(const json_t *o, const char *camel, const char *snake, int64_t min, int64_t max, bool *ret_present,
           int64_t *ret, hull_error *e);

/* An unsigned 64-bit integer, a JSON integer or a decimal string of digits; absent: 0. */
int pj_uint64(const json_t *o, const char *camel, const char *snake, uint64_t *ret, hull_error *e);

/* A boolean; absent: false. */
int pj_bool(const json_t *o, const char *camel, const char *snake, bool *ret, hull_error *e);

/* Bytes: a base64 string decoded into a new buffer of at most max bytes (the caller frees; a NUL
 * follows, not counted). Absent: *ret NULL, *ret_len 0. Over max is refused before the string is
 * decoded when its length already says so. */
int pj_bytes(const json_t *o, const char *camel, const char *snake, const char *where, size_t max, void **ret,
             size_t *ret_len, hull_error *e);

/* An array of at most max entries (absent: *ret NULL). */
int pj_array(const json_t *o, const char *camel, const char *snake, const char *where, size_t max, json_t **ret,
             hull_error *e);

/* New JSON values as ProtoJSON writes them: bytes as standard padded base64, a 64-bit integer as
 * a decimal string. NULL when out of memory. */
json_t *pj_new_bytes(const void *p, size_t n);
json_t *pj_new_int64(int64_t v);
json_t *pj_new_uint64(uint64_t v);
