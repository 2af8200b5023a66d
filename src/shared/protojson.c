/* protojson.c: ProtoJSON field readers and writers (see protojson.h). The messages name the field
 * as the caller spelled it first (its camelCase name), prefixed by where it sits. */
#include "protojson.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "macro.h"

/* Messages are hull_fail's (no ": strerror" tail): they are about a field, not a system call. */

int pj_field(const json_t *o, const char *camel, const char *snake, json_t **ret, hull_error *e) {
        json_t *a = json_object_get(o, camel);
        json_t *b = snake && strcmp(camel, snake) != 0 ? json_object_get(o, snake) : NULL;
        if (json_is_null(a))
                a = NULL;
        if (json_is_null(b))
                b = NULL;
        if (a && b)
                return hull_fail(e, -EINVAL, "%s is given twice (as %s and %s)", camel, camel, snake);
        *ret = a ? a : b;
        return 0;
}

int pj_string(const json_t *o, const char *camel, const char *snake, const char *where, size_t max, const char **ret,
              size_t *ret_len, hull_error *e) {
        json_t *v;
        int r = pj_field(o, camel, snake, &v, e);
        if (r < 0)
                return r;
        where = where ? where : "";
        if (!v) {
                *ret = "";
                if (ret_len)
                        *ret_len = 0;
                return 0;
        }
        if (!json_is_string(v))
                return hull_fail(e, -EINVAL, "%s%s must be a string", where, camel);
        size_t n = json_string_length(v);
        if (n > max)
                return hull_fail(e, -E2BIG, "%s%s is %zu bytes, over the limit of %zu", where, camel, n, max);
        if (!ret_len && memchr(json_string_value(v), '\0', n))
                return hull_fail(e, -EINVAL, "%s%s contains a NUL character", where, camel);
        *ret = json_string_value(v);
        if (ret_len)
                *ret_len = n;
        return 0;
}

/* A decimal string of n bytes (by its length, not strlen: "3\u0000x" is not 3) as an integer:
 * an optional '-' when negative is allowed, then 1 to 20 digits, nothing else. */
static bool parse_decimal(const char *s, size_t n, bool negative_ok, int64_t *ret_signed, uint64_t *ret_unsigned) {
        size_t i = negative_ok && n > 0 && s[0] == '-';
        if (i == n || n - i > 20)
                return false;
        for (size_t j = i; j < n; j++)
                if (s[j] < '0' || s[j] > '9')
                        return false;
        char *end;
        errno = 0;
        if (negative_ok) {
                long long x = strtoll(s, &end, 10);
                if (errno || end != s + n)
                        return false;
                *ret_signed = x;
        } else {
                unsigned long long x = strtoull(s, &end, 10);
                if (errno || end != s + n)
                        return false;
                *ret_unsigned = x;
        }
        return true;
}

int pj_int(const json_t *o, const char *camel, const char *snake, int64_t min, int64_t max, bool *ret_present,
           int64_t *ret, hull_error *e) {
        json_t *v;
        int64_t x = 0;
        int r = pj_field(o, camel, snake, &v, e);
        if (r < 0)
                return r;
        if (v) {
                if (json_is_integer(v))
                        x = json_integer_value(v);
                else if (!json_is_string(v) ||
                         !parse_decimal(json_string_value(v), json_string_length(v), true, &x, &(uint64_t){0}))
                        goto bad;
                if (x < min || x > max)
                        goto bad;
        }
        if (ret_present)
                *ret_present = v != NULL;
        *ret = x;
        return 0;
bad:
        return hull_fail(e, -EINVAL, "%s must be an integer from %" PRId64 " to %" PRId64, camel, min, max);
}

int pj_uint64(const json_t *o, const char *camel, const char *snake, uint64_t *ret, hull_error *e) {
        json_t *v;
        uint64_t x = 0;
        int r = pj_field(o, camel, snake, &v, e);
        if (r < 0)
                return r;
        if (v) {
                if (json_is_integer(v) && json_integer_value(v) >= 0)
                        x = (uint64_t) json_integer_value(v);
                else if (!json_is_string(v) ||
                         !parse_decimal(json_string_value(v), json_string_length(v), false, &(int64_t){0}, &x))
                        return hull_fail(e, -EINVAL, "%s must be an integer from 0 to %" PRIu64, camel, UINT64_MAX);
        }
        *ret = x;
        return 0;
}

int pj_bool(const json_t *o, const char *camel, const char *snake, bool *ret, hull_error *e) {
        json_t *v;
        int r = pj_field(o, camel, snake, &v, e);
        if (r < 0)
                return r;
        if (v && !json_is_boolean(v))
                return hull_fail(e, -EINVAL, "%s must be true or false", camel);
        *ret = v && json_is_true(v);
        return 0;
}

int pj_bytes(const json_t *o, const char *camel, const char *snake, const char *where, size_t max, void **ret,
             size_t *ret_len, hull_error *e) {
        json_t *v;
        void *buf;
        size_t len;
        int r = pj_field(o, camel, snake, &v, e);
        if (r < 0)
                return r;
        where = where ? where : "";
        if (!v) {
                *ret = NULL;
                *ret_len = 0;
                return 0;
        }
        if (!json_is_string(v))
                return hull_fail(e, -EINVAL, "%s%s must be a base64 string", where, camel);
        /* Bound before decoding: 4 digits per 3 bytes. */
        if (json_string_length(v) / 4 > max / 3 + 1)
                goto big;
        r = base64_decode(json_string_value(v), json_string_length(v), &buf, &len);
        if (r == -ENOMEM)
                return hull_fail(e, r, "out of memory");
        if (r < 0)
                return hull_fail(e, -EINVAL, "%s%s is not base64 (standard or URL-safe, padded or not)", where, camel);
        if (len > max) {
                free(buf);
                goto big;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
big:
        return hull_fail(e, -E2BIG, "%s%s is over the limit of %zu bytes", where, camel, max);
}

int pj_array(const json_t *o, const char *camel, const char *snake, const char *where, size_t max, json_t **ret,
             hull_error *e) {
        json_t *v;
        int r = pj_field(o, camel, snake, &v, e);
        if (r < 0)
                return r;
        where = where ? where : "";
        if (v && !json_is_array(v))
                return hull_fail(e, -EINVAL, "%s%s must be an array", where, camel);
        if (v && json_array_size(v) > max)
                return hull_fail(e, -E2BIG, "%s%s has %zu entries, over the limit of %zu", where, camel,
                                 json_array_size(v), max);
        *ret = v;
        return 0;
}

json_t *pj_new_bytes(const void *p, size_t n) {
        _cleanup_free_ char *b = NULL;
        size_t len;
        return base64_encode(p, n, true, &b, &len) < 0 ? NULL : json_stringn(b, len);
}

json_t *pj_new_int64(int64_t v) {
        char buf[sizeof("-9223372036854775808")];
        snprintf(buf, sizeof(buf), "%" PRId64, v);
        return json_string(buf);
}

json_t *pj_new_uint64(uint64_t v) {
        char buf[sizeof("18446744073709551615")];
        snprintf(buf, sizeof(buf), "%" PRIu64, v);
        return json_string(buf);
}
