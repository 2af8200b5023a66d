/* v1-shape.c: the checkers every /v1 request body goes through (v1-shape-internal.h): fields'
 * paths, v1_fail, objects with known fields only, strings, enums and booleans, and metadata. The
 * resources are shaped in v1-shape-agent.c, -env.c, -session.c and -event.c (see v1-shape.h; the
 * wire is ../shared/reference/cma-api.md §2-5). Pure: jansson only. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "v1-shape-internal.h"

/* A field's path; a path too long for the buffer is cut short (it only ever names the field). */
void v1_path_key(v1_path p, const char *base, const char *key) {
        int k = !base || !*base ? snprintf(p, V1_FIELD_PATH_MAX, "%.100s", key)
                                : snprintf(p, V1_FIELD_PATH_MAX, "%s.%.64s", base, key);
        if (k < 0)
                p[0] = '\0';
}

void v1_path_idx(v1_path p, const char *base, size_t i) {
        if (snprintf(p, V1_FIELD_PATH_MAX, "%s[%zu]", base, i) < 0)
                p[0] = '\0';
}

int v1_fail(v1_err *e, unsigned status, const char *code, const char *fmt, ...) {
        const char *type;
        int r;
        switch (status) {
        case 400:
        case 422:
                type = "invalid_request_error", r = -EINVAL;
                break;
        case 401:
                type = "authentication_error", r = -EACCES;
                break;
        case 403:
                type = "permission_error", r = -EPERM;
                break;
        case 404:
                type = "not_found_error", r = -ENOENT;
                break;
        case 409:
                type = "conflict_error", r = eq(code, "version_conflict") ? -ESTALE : -EBUSY;
                break;
        case 413:
                type = "request_too_large", r = -E2BIG;
                break;
        case 429:
                type = "rate_limit_error", r = -EAGAIN;
                break;
        case 529:
                type = "overloaded_error", r = -EAGAIN;
                break;
        default:
                type = "api_error", r = -EIO;
                break;
        }
        if (!e)
                return r;
        e->status = status;
        snprintf(e->type, sizeof(e->type), "%s", type);
        snprintf(e->code, sizeof(e->code), "%s", code ? code : "");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
        va_end(ap);
        return r;
}

/* "a, b, c" from a NULL-ended list. */
const char *v1_join(const char *const *v, char *buf, size_t n) {
        size_t off = 0;
        buf[0] = '\0';
        for (size_t i = 0; v[i] && off < n; i++) {
                int k = snprintf(buf + off, n - off, "%s%s", i ? ", " : "", v[i]);
                if (k < 0)
                        break;
                off += (size_t) k;
        }
        return buf;
}

bool v1_in_list(const char *s, const char *const *v) {
        for (size_t i = 0; v[i]; i++)
                if (eq(s, v[i]))
                        return true;
        return false;
}

const char *v1_json_kind(const json_t *v) {
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "an object";
        case JSON_ARRAY:
                return "an array";
        case JSON_STRING:
                return "a string";
        case JSON_INTEGER:
        case JSON_REAL:
                return "a number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "a boolean";
        case JSON_NULL:
        default:
                return "null";
        }
}

int v1_want(const json_t *v, json_type t, const char *path, const char *what, v1_err *e) {
        if (v && json_typeof(v) == t)
                return 0;
        return v1_fail(e, 400, NULL, "%s: must be %s, not %s", path, what, v ? v1_json_kind(v) : "missing");
}

int v1_check_object(const json_t *o, const char *path, const char *const *known, v1_err *e) {
        if (!json_is_object(o))
                return v1_fail(e, 400, NULL, "%s: must be an object, not %s", *path ? path : "body",
                               o ? v1_json_kind(o) : "missing");
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) o, k, v) {
                if (!v1_in_list(k, known)) {
                        char list[384];
                        v1_path p;
                        v1_path_key(p, path, k);
                        return v1_fail(e, 400, NULL, "%s: unknown field (known: %s)", p,
                                       v1_join(known, list, sizeof(list)));
                }
        }
        return 0;
}

/* o[key] as a string of at most max bytes; *ret NULL when absent (or null with F_NULLABLE). */
int v1_get_str(const json_t *o, const char *key, const char *path, size_t max, unsigned flags, const char **ret,
               v1_err *e) {
        v1_path p;
        v1_path_key(p, path, key);
        const json_t *v = json_object_get(o, key);
        *ret = NULL;
        if (!v) {
                if (flags & F_REQUIRED)
                        return v1_fail(e, 400, NULL, "%s: required", p);
                return 0;
        }
        if (json_is_null(v) && (flags & F_NULLABLE))
                return 0;
        if (!json_is_string(v))
                return v1_fail(e, 400, NULL, "%s: must be a string, not %s", p, v1_json_kind(v));
        size_t n = json_string_length(v);
        if (n > max)
                return v1_fail(e, 400, NULL, "%s: too long (%zu bytes, at most %zu)", p, n, max);
        if (n == 0 && (flags & F_NONEMPTY))
                return v1_fail(e, 400, NULL, "%s: must not be empty", p);
        if (strlen(json_string_value(v)) != n)
                return v1_fail(e, 400, NULL, "%s: must not contain NUL characters", p);
        *ret = json_string_value(v);
        return 0;
}

/* o[key] as one of the strings in v (required unless def is given). */
int v1_get_enum(const json_t *o, const char *key, const char *path, const char *const *v, const char *def,
                const char **ret, v1_err *e) {
        const char *s;
        int r = v1_get_str(o, key, path, V1_NAME_MAX, def ? 0 : F_REQUIRED, &s, e);
        if (r < 0)
                return r;
        if (!s) {
                *ret = def;
                return 0;
        }
        if (!v1_in_list(s, v)) {
                char list[256];
                v1_path p;
                v1_path_key(p, path, key);
                return v1_fail(e, 400, NULL, "%s: unknown value '%.64s' (one of %s)", p, s,
                               v1_join(v, list, sizeof(list)));
        }
        *ret = s;
        return 0;
}

int v1_get_bool(const json_t *o, const char *key, const char *path, int *ret, v1_err *e) {
        const json_t *v = json_object_get(o, key);
        if (!v) {
                *ret = -1;
                return 0;
        }
        v1_path p;
        v1_path_key(p, path, key);
        int r = v1_want(v, json_is_true(v) ? JSON_TRUE : JSON_FALSE, p, "a boolean", e);
        if (r < 0)
                return r;
        *ret = json_is_true(v);
        return 0;
}

json_t *v1_str_or_null(const char *s) {
        return s && *s ? json_string(s) : json_null();
}

/* ---- metadata ---- */

int v1_metadata_check(const json_t *m, const char *field, v1_err *e) {
        if (!json_is_object(m))
                return v1_fail(e, 400, NULL, "%s: must be an object of string values, not %s", field,
                               m ? v1_json_kind(m) : "missing");
        if (json_object_size(m) > V1_METADATA_KEYS_MAX)
                return v1_fail(e, 400, NULL, "%s: %zu keys, at most %u", field, json_object_size(m),
                               V1_METADATA_KEYS_MAX);
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) m, k, v) {
                v1_path p;
                v1_path_key(p, field, k);
                size_t kn = strlen(k);
                if (kn == 0 || kn > V1_METADATA_KEY_MAX)
                        return v1_fail(e, 400, NULL, "%s: a key must have 1 to %u bytes", p, V1_METADATA_KEY_MAX);
                if (!json_is_string(v))
                        return v1_fail(e, 400, NULL, "%s: must be a string, not %s", p, v1_json_kind(v));
                if (json_string_length(v) > V1_METADATA_VALUE_MAX)
                        return v1_fail(e, 400, NULL, "%s: too long (%zu bytes, at most %u)", p, json_string_length(v),
                                       V1_METADATA_VALUE_MAX);
        }
        return 0;
}

int v1_metadata_patch(const json_t *cur, const json_t *patch, const char *field, json_t **ret, v1_err *e) {
        if (!json_is_object(patch))
                return v1_fail(e, 400, NULL, "%s: must be an object, not %s", field,
                               patch ? v1_json_kind(patch) : "missing");
        json_auto_t *m = json_is_object(cur) ? json_deep_copy(cur) : json_object();
        if (!m)
                return -ENOMEM;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) patch, k, v) {
                v1_path p;
                v1_path_key(p, field, k);
                if (json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0)) {
                        json_object_del(m, k);
                        continue;
                }
                if (!json_is_string(v))
                        return v1_fail(e, 400, NULL, "%s: must be a string (or null to delete the key), not %s", p,
                                       v1_json_kind(v));
                if (json_object_set(m, k, v) < 0)
                        return -ENOMEM;
        }
        int r = v1_metadata_check(m, field, e);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}
