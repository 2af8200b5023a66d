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

/* ---- shared by the message digests (sbx-record.c) and the records, chain and log
 * (sbx-record-chain.c) ---- */

/* The fields of a software rule, of a result, and the four payload kinds by name. */
enum { RULE_MODE, RULE_IDENTITIES, RULE__N };
extern const rec_pj_field rec_rule_fields[RULE__N];
enum {
        RS_SANDBOX,
        RS_ISOLATION,
        RS_DURATION,
        RS_RECORD,
        RS_SOFTWARE,
        RS_ENVIRONMENT,
        RS_JS,
        RS_PROJECT,
        RS_MODULE,
        RS_CELL,
        RS__N
};
extern const rec_pj_field rec_response_fields[RS__N];
extern const char *const rec_kinds[4]; /* javascript, project, module, cell */

typedef struct rec_request_info {
        uint32_t protocol;
        int kind;           /* 0 none, 1..4 */
        const json_t *rule; /* NULL when absent */
        const char *floor;  /* minimumIsolation */
        size_t floor_len;
} rec_request_info;

/* rec_request_digest, also filling *info. */
int rec_request_digest_info(const json_t *req, char ret[REC_DIGEST_HEX_SIZE], rec_request_info *info, hull_error *e);

/* rec_result_digest, also giving the payload's kind (1..4) in *ret_kind. */
int rec_result_digest_kind(const json_t *res, char ret[REC_DIGEST_HEX_SIZE], int *ret_kind, hull_error *e);
