/* sbx-record-internal.h: what the run-record files share: error messages about data, printable
 * copies of untrusted text, and the ProtoJSON readers and digest-field encoders every message
 * digest is made of. Not a public interface. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx-record.h"

/* A message field by its two ProtoJSON spellings; snake is NULL when both are the same. */
typedef struct rec_pj_field {
        const char *camel, *snake;
} rec_pj_field;

/* A short, printable copy of untrusted text for an error message (no control bytes, at most 40
 * bytes then "..."), and a digest shown as its first 16 hex digits. */
#define PRINTABLE_SIZE 48

/* The readers check a field's ProtoJSON type (and range) before returning it; the *_field
 * encoders write one digest field from a JSON value. Each is described in sbx-record-pj.c. */
const char *printable(const char *s, size_t len, char buf[PRINTABLE_SIZE]);
const char *short_digest(const char *s, size_t len, char buf[PRINTABLE_SIZE]);
int rec_pj_check_message(const json_t *msg, const char *what, const rec_pj_field *fields, size_t n, hull_error *e);
const json_t *rec_pj_get(const json_t *msg, const rec_pj_field *f);
int rec_pj_string(const json_t *v, const char *what, const char **ret, size_t *ret_len, hull_error *e);
int rec_pj_int(const json_t *v, const char *what, int64_t min, int64_t max, int64_t *ret, hull_error *e);
int rec_pj_uint64(const json_t *v, const char *what, uint64_t *ret, hull_error *e);
int rec_pj_bool(const json_t *v, const char *what, bool *ret, hull_error *e);
int rec_pj_double(const json_t *v, const char *what, double *ret, hull_error *e);
int rec_pj_outcome(const json_t *v, const char *what, int64_t *ret, hull_error *e);
int rec_pj_array(const json_t *v, const char *what, hull_error *e);
int rec_pj_bytes_field(rec_encoder *enc, const char *name, const json_t *v, const char *what, hull_error *e);
int rec_pj_string_field(rec_encoder *enc, const char *name, const json_t *v, const char *what, hull_error *e);
int rec_pj_int_field(rec_encoder *enc, const char *name, const json_t *v, const char *what, int64_t min, int64_t max,
                     hull_error *e);
int rec_pj_bool_field(rec_encoder *enc, const char *name, const json_t *v, const char *what, hull_error *e);
int rec_pj_doubles_field(rec_encoder *enc, const char *name, const json_t *v, const char *what, hull_error *e);
int rec_pj_strings_group(rec_encoder *enc, const char *count_name, const char *name, const json_t *v, const char *what,
                         hull_error *e);
int rec_pj_advice(const json_t *v, const char *what, hull_error *e);
