/* sbx-record-pj.c: the ProtoJSON side of run records: reading each field of a message with its
 * type checked (records are verified from files anyone may have edited), and writing a field's
 * content into a digest straight from its JSON value (base64 decoded on the way). */
#include "sbx-record-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* ---- errors ---- */

/* A short, printable copy of untrusted text for an error message: no control bytes, no
 * newlines, at most 40 bytes (then "..."). */
const char *printable(const char *s, size_t len, char buf[PRINTABLE_SIZE]) {
        size_t o = 0;
        for (size_t i = 0; i < len && o < PRINTABLE_SIZE - 4; i++) {
                unsigned char c = (unsigned char) s[i];
                buf[o++] = c >= 0x20 && c < 0x7f ? (char) c : '?';
                if (o == 40 && i + 1 < len) {
                        memcpy(buf + o, "...", 3);
                        o += 3;
                        break;
                }
        }
        buf[o] = '\0';
        return buf;
}

/* A digest for an error message: its first 16 hex digits, or a printable copy when it is not
 * a digest at all. */
const char *short_digest(const char *s, size_t len, char buf[PRINTABLE_SIZE]) {
        if (len == 0)
                return "(empty)";
        if (sha256_hex_is_valid(s, len)) {
                snprintf(buf, PRINTABLE_SIZE, "%.16s...", s);
                return buf;
        }
        char pb[PRINTABLE_SIZE];
        snprintf(buf, PRINTABLE_SIZE, "'%s'", printable(s, len, pb));
        return buf;
}

/* ---- ProtoJSON reading ---- */

/* Refuse what is not an object, field names the message does not define, names with a NUL, and
 * a field given under both of its spellings. */
int rec_pj_check_message(const json_t *msg, const char *what, const rec_pj_field *fields, size_t n, hull_error *e) {
        char pb[PRINTABLE_SIZE];
        if (!json_is_object(msg))
                return hull_fail(e, -EINVAL, "%s is not a JSON object", what);
        for (void *it = json_object_iter((json_t *) msg); it; it = json_object_iter_next((json_t *) msg, it)) {
                const char *key = json_object_iter_key(it);
                size_t klen = json_object_iter_key_len(it), i;
                if (strlen(key) != klen)
                        return hull_fail(e, -EINVAL, "%s has a field name containing a NUL byte", what);
                for (i = 0; i < n; i++)
                        if (strcmp(key, fields[i].camel) == 0 || (fields[i].snake && strcmp(key, fields[i].snake) == 0))
                                break;
                if (i == n)
                        return hull_fail(e, -EINVAL, "%s has an unknown field '%s'", what, printable(key, klen, pb));
                if (fields[i].snake && strcmp(key, fields[i].snake) == 0 && json_object_get(msg, fields[i].camel))
                        return hull_fail(e, -EINVAL, "%s has both '%s' and '%s'", what, fields[i].camel,
                                         fields[i].snake);
        }
        return 0;
}

/* The field's value, or NULL when absent or JSON null (the field's zero value). */
const json_t *rec_pj_get(const json_t *msg, const rec_pj_field *f) {
        const json_t *v = json_object_get(msg, f->camel);
        if (!v && f->snake)
                v = json_object_get(msg, f->snake);
        return json_is_null(v) ? NULL : v;
}

int rec_pj_string(const json_t *v, const char *what, const char **ret, size_t *ret_len, hull_error *e) {
        if (!v) {
                *ret = "";
                *ret_len = 0;
                return 0;
        }
        if (!json_is_string(v))
                return hull_fail(e, -EINVAL, "%s is not a string", what);
        *ret = json_string_value(v);
        *ret_len = json_string_length(v);
        return 0;
}

/* A decimal integer string as ProtoJSON writes 64-bit integers: an optional '-', digits. */
static bool is_decimal(const char *s, size_t len, bool allow_minus) {
        size_t i = 0;
        if (allow_minus && len > 0 && s[0] == '-')
                i = 1;
        if (i == len)
                return false;
        for (; i < len; i++)
                if (s[i] < '0' || s[i] > '9')
                        return false;
        return true;
}

/* An integer field: a JSON integer, an integral JSON number, or a decimal string; in [min, max]. */
int rec_pj_int(const json_t *v, const char *what, int64_t min, int64_t max, int64_t *ret, hull_error *e) {
        int64_t x;
        if (!v)
                x = 0;
        else if (json_is_integer(v))
                x = json_integer_value(v);
        else if (json_is_real(v)) {
                double d = json_real_value(v);
                if (!(d >= -0x1p63 && d < 0x1p63) || (double) (int64_t) d != d)
                        return hull_fail(e, -EINVAL, "%s is not an integer", what);
                x = (int64_t) d;
        } else if (json_is_string(v)) {
                const char *s = json_string_value(v);
                size_t len = json_string_length(v);
                if (len > 24 || !is_decimal(s, len, true))
                        return hull_fail(e, -EINVAL, "%s is not an integer", what);
                errno = 0;
                long long ll = strtoll(s, NULL, 10);
                if (errno == ERANGE)
                        return hull_fail(e, -EINVAL, "%s is out of range", what);
                x = ll;
        } else
                return hull_fail(e, -EINVAL, "%s is not an integer", what);
        if (x < min || x > max)
                return hull_fail(e, -EINVAL, "%s is out of range (%" PRId64 ")", what, x);
        *ret = x;
        return 0;
}

int rec_pj_uint64(const json_t *v, const char *what, uint64_t *ret, hull_error *e) {
        if (!v) {
                *ret = 0;
                return 0;
        }
        if (json_is_string(v)) {
                const char *s = json_string_value(v);
                size_t len = json_string_length(v);
                if (len > 24 || !is_decimal(s, len, false))
                        return hull_fail(e, -EINVAL, "%s is not an unsigned integer", what);
                errno = 0;
                unsigned long long ull = strtoull(s, NULL, 10);
                if (errno == ERANGE)
                        return hull_fail(e, -EINVAL, "%s is out of range", what);
                *ret = ull;
                return 0;
        }
        if (json_is_real(v)) {
                double d = json_real_value(v);
                if (!(d >= 0 && d < 0x1p64) || (double) (uint64_t) d != d)
                        return hull_fail(e, -EINVAL, "%s is not an unsigned integer", what);
                *ret = (uint64_t) d;
                return 0;
        }
        int64_t x = 0;
        int r = rec_pj_int(v, what, 0, INT64_MAX, &x, e);
        if (r < 0)
                return r;
        *ret = (uint64_t) x;
        return 0;
}

int rec_pj_bool(const json_t *v, const char *what, bool *ret, hull_error *e) {
        if (!v) {
                *ret = false;
                return 0;
        }
        if (!json_is_boolean(v))
                return hull_fail(e, -EINVAL, "%s is not true or false", what);
        *ret = json_is_true(v);
        return 0;
}

/* A JSON number as text: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool is_json_number(const char *s, size_t len) {
        size_t i = 0, d;
        if (i < len && s[i] == '-')
                i++;
        if (i < len && s[i] == '0')
                i++;
        else {
                for (d = i; i < len && s[i] >= '0' && s[i] <= '9'; i++)
                        ;
                if (i == d || s[d] == '0')
                        return false;
        }
        if (i < len && s[i] == '.') {
                for (d = ++i; i < len && s[i] >= '0' && s[i] <= '9'; i++)
                        ;
                if (i == d)
                        return false;
        }
        if (i < len && (s[i] == 'e' || s[i] == 'E')) {
                i++;
                if (i < len && (s[i] == '+' || s[i] == '-'))
                        i++;
                for (d = i; i < len && s[i] >= '0' && s[i] <= '9'; i++)
                        ;
                if (i == d)
                        return false;
        }
        return i == len;
}

/* A double: a JSON number, "NaN", "Infinity", "-Infinity", or a number in a string. */
int rec_pj_double(const json_t *v, const char *what, double *ret, hull_error *e) {
        if (!v)
                *ret = 0.0;
        else if (json_is_integer(v))
                *ret = (double) json_integer_value(v);
        else if (json_is_real(v))
                *ret = json_real_value(v);
        else if (json_is_string(v)) {
                const char *s = json_string_value(v);
                size_t len = json_string_length(v);
                if (strcmp(s, "NaN") == 0 && len == 3)
                        *ret = NAN;
                else if (strcmp(s, "Infinity") == 0 && len == 8)
                        *ret = INFINITY;
                else if (strcmp(s, "-Infinity") == 0 && len == 9)
                        *ret = -INFINITY;
                else if (len <= 64 && is_json_number(s, len)) {
                        errno = 0;
                        double d = strtod(s, NULL);
                        if (errno == ERANGE && isinf(d))
                                return hull_fail(e, -EINVAL, "%s is out of range", what);
                        *ret = d;
                } else
                        return hull_fail(e, -EINVAL, "%s is not a number", what);
        } else
                return hull_fail(e, -EINVAL, "%s is not a number", what);
        return 0;
}

static const char *const project_outcomes[] = {
        "PROJECT_OUTCOME_UNSPECIFIED", "PROJECT_OUTCOME_COMPLETED",      "PROJECT_OUTCOME_SETUP_FAILED",
        "PROJECT_OUTCOME_TIMED_OUT",   "PROJECT_OUTCOME_PROTOCOL_ERROR",
};

/* The ProjectOutcome enum: a known name or any int32 number (proto3 enums are open). */
int rec_pj_outcome(const json_t *v, const char *what, int64_t *ret, hull_error *e) {
        char pb[PRINTABLE_SIZE];
        if (json_is_string(v)) {
                for (size_t i = 0; i < ELEMENTSOF(project_outcomes); i++)
                        if (strcmp(json_string_value(v), project_outcomes[i]) == 0 &&
                            json_string_length(v) == strlen(project_outcomes[i])) {
                                *ret = (int64_t) i;
                                return 0;
                        }
                return hull_fail(e, -EINVAL, "%s has an unknown value '%s'", what,
                                 printable(json_string_value(v), json_string_length(v), pb));
        }
        if (v && !json_is_integer(v))
                return hull_fail(e, -EINVAL, "%s is not an enum name or number", what);
        return rec_pj_int(v, what, INT32_MIN, INT32_MAX, ret, e);
}

/* A repeated field: NULL (empty) or an array. */
int rec_pj_array(const json_t *v, const char *what, hull_error *e) {
        if (v && !json_is_array(v))
                return hull_fail(e, -EINVAL, "%s is not an array", what);
        return 0;
}

/* ---- base64 (ProtoJSON bytes: standard or URL-safe alphabet, padded or not) ---- */

static int b64_sextet(unsigned char c, int *alphabet) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+' || c == '/') {
                if (*alphabet == 2)
                        return -1;
                *alphabet = 1;
                return c == '+' ? 62 : 63;
        }
        if (c == '-' || c == '_') {
                if (*alphabet == 1)
                        return -1;
                *alphabet = 2;
                return c == '-' ? 62 : 63;
        }
        return -1;
}

/* Check s and count its data characters and decoded bytes. */
static int b64_measure(const char *s, size_t len, size_t *ret_chars, size_t *ret_bytes) {
        int alphabet = 0;
        size_t pad = 0;
        if (len % 4 == 0 && len > 0 && s[len - 1] == '=')
                pad = s[len - 2] == '=' ? 2 : 1;
        size_t n = len - pad;
        if (n % 4 == 1)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (b64_sextet((unsigned char) s[i], &alphabet) < 0)
                        return -EINVAL;
        *ret_chars = n;
        *ret_bytes = n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0);
        return 0;
}

/* A bytes field: decoded from base64 straight into the digest, without a copy. */
int rec_pj_bytes_field(rec_encoder *enc, const char *name, const json_t *v, const char *what, hull_error *e) {
        size_t chars, bytes;
        if (!v) {
                rec_field(enc, name, "", 0);
                return 0;
        }
        if (!json_is_string(v))
                return hull_fail(e, -EINVAL, "%s is not a base64 string", what);
        const char *s = json_string_value(v);
        if (b64_measure(s, json_string_length(v), &chars, &bytes) < 0)
                return hull_fail(e, -EINVAL, "%s is not valid base64", what);
        rec_field_begin(enc, name, bytes);
        uint8_t out[REC_B64_DECODE_CHUNK];
        size_t o = 0;
        int alphabet = 0;
        for (size_t i = 0; i < chars; i += 4) {
                uint32_t acc = 0;
                size_t k = MIN((size_t) 4, chars - i);
                for (size_t j = 0; j < 4; j++)
                        acc = acc << 6 | (uint32_t) (j < k ? b64_sextet((unsigned char) s[i + j], &alphabet) : 0);
                for (size_t j = 0; j + 1 < k; j++) /* k characters carry k - 1 bytes */
                        out[o++] = (uint8_t) (acc >> (16 - 8 * j));
                if (o + 3 > sizeof(out)) {
                        rec_field_write(enc, out, o);
                        o = 0;
                }
        }
        rec_field_write(enc, out, o);
        return 0;
}

int rec_pj_string_field(rec_encoder *enc, const char *name, const json_t *v, const char *what, hull_error *e) {
        const char *s = "";
        size_t len = 0;
        int r = rec_pj_string(v, what, &s, &len, e);
        if (r < 0)
                return r;
        rec_field(enc, name, s, len);
        return 0;
}

int rec_pj_int_field(rec_encoder *enc, const char *name, const json_t *v, const char *what, int64_t min, int64_t max,
                     hull_error *e) {
        int64_t x = 0;
        int r = rec_pj_int(v, what, min, max, &x, e);
        if (r < 0)
                return r;
        rec_field_int(enc, name, x);
        return 0;
}

int rec_pj_bool_field(rec_encoder *enc, const char *name, const json_t *v, const char *what, hull_error *e) {
        bool b = false;
        int r = rec_pj_bool(v, what, &b, e);
        if (r < 0)
                return r;
        rec_field_bool(enc, name, b);
        return 0;
}

/* A repeated double as one field: the 8-byte big-endian bits of each, concatenated. */
int rec_pj_doubles_field(rec_encoder *enc, const char *name, const json_t *v, const char *what, hull_error *e) {
        int r = rec_pj_array(v, what, e);
        if (r < 0)
                return r;
        size_t n = json_array_size(v);
        double d = 0;
        rec_field_begin(enc, name, (uint64_t) n * 8);
        for (size_t i = 0; i < n; i++) {
                r = rec_pj_double(json_array_get(v, i), what, &d, e);
                if (r < 0)
                        return r;
                rec_field_write_double(enc, d);
        }
        return 0;
}

/* A repeated string: the count, then one field per element. */
int rec_pj_strings_group(rec_encoder *enc, const char *count_name, const char *name, const json_t *v, const char *what,
                         hull_error *e) {
        int r = rec_pj_array(v, what, e);
        if (r < 0)
                return r;
        rec_field_uint(enc, count_name, json_array_size(v));
        for (size_t i = 0; i < json_array_size(v); i++) {
                if (!json_is_string(json_array_get(v, i)))
                        return hull_fail(e, -EINVAL, "%s has an element that is not a string", what);
                r = rec_pj_string_field(enc, name, json_array_get(v, i), what, e);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* advice[] is never hashed; it only has to be a list of objects. */
int rec_pj_advice(const json_t *v, const char *what, hull_error *e) {
        int r = rec_pj_array(v, what, e);
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_array_size(v); i++)
                if (!json_is_object(json_array_get(v, i)))
                        return hull_fail(e, -EINVAL, "%s has an element that is not an object", what);
        return 0;
}
