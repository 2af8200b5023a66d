/* schema.c: the JSON Schema subset of tool inputs (schema.h). The validator walks the schema and
 * the value together; every problem becomes one line naming the field's path, and the walk goes
 * on so the model sees all of them at once (up to SCHEMA_ERRORS_MAX). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "schema.h"

static const char *const kinds[] = {"string", "integer", "number", "boolean", "array", "object", "null"};

static bool kind_known(const char *k) {
        for (size_t i = 0; k && i < ELEMENTSOF(kinds); i++)
                if (strcmp(k, kinds[i]) == 0)
                        return true;
        return false;
}

/* ---- the schema's own check ---- */

static int check_at(const json_t *s, const char *path, unsigned depth, hull_error *e);

static int check_types(const json_t *t, const char *path, hull_error *e) {
        if (json_is_string(t)) {
                if (!kind_known(json_string_value(t)))
                        return hull_fail(e, -EINVAL, "%s.type: unknown type \"%.40s\"", path, json_string_value(t));
                return 0;
        }
        if (!json_is_array(t) || json_array_size(t) == 0)
                return hull_fail(e, -EINVAL, "%s.type: not a type name or a non-empty array of them", path);
        size_t i;
        const json_t *k;
        json_array_foreach(t, i, k) {
                if (!json_is_string(k) || !kind_known(json_string_value(k)))
                        return hull_fail(e, -EINVAL, "%s.type[%zu]: not a known type name", path, i);
        }
        return 0;
}

static int check_count(const json_t *s, const char *key, const char *path, hull_error *e) {
        const json_t *v = json_object_get(s, key);
        if (v && (!json_is_integer(v) || json_integer_value(v) < 0))
                return hull_fail(e, -EINVAL, "%s.%s: not a non-negative integer", path, key);
        return 0;
}

static int check_at(const json_t *s, const char *path, unsigned depth, hull_error *e) {
        char sub[SCHEMA_PATH_MAX];
        int r;
        if (depth > SCHEMA_DEPTH_MAX)
                return hull_fail(e, -EINVAL, "%s: nested deeper than %u levels", path, SCHEMA_DEPTH_MAX);
        if (!json_is_object(s))
                return hull_fail(e, -EINVAL, "%s: a schema must be an object", path);
        const json_t *t = json_object_get(s, "type");
        if (t && (r = check_types(t, path, e)) < 0)
                return r;
        const json_t *props = json_object_get(s, "properties");
        if (props) {
                const char *key;
                const json_t *v;
                if (!json_is_object(props))
                        return hull_fail(e, -EINVAL, "%s.properties: not an object", path);
                json_object_foreach((json_t *) props, key, v) {
                        snprintf(sub, sizeof(sub), "%s.properties.%s", path, key);
                        if ((r = check_at(v, sub, depth + 1, e)) < 0)
                                return r;
                }
        }
        const json_t *req = json_object_get(s, "required");
        if (req) {
                size_t i;
                const json_t *k;
                if (!json_is_array(req))
                        return hull_fail(e, -EINVAL, "%s.required: not an array", path);
                json_array_foreach(req, i, k) {
                        if (!json_is_string(k))
                                return hull_fail(e, -EINVAL, "%s.required[%zu]: not a string", path, i);
                }
        }
        const json_t *add = json_object_get(s, "additionalProperties");
        if (add && !json_is_boolean(add)) {
                snprintf(sub, sizeof(sub), "%s.additionalProperties", path);
                if ((r = check_at(add, sub, depth + 1, e)) < 0)
                        return r;
        }
        const json_t *items = json_object_get(s, "items");
        if (items) {
                snprintf(sub, sizeof(sub), "%s.items", path);
                if ((r = check_at(items, sub, depth + 1, e)) < 0)
                        return r;
        }
        const json_t *en = json_object_get(s, "enum");
        if (en && (!json_is_array(en) || json_array_size(en) == 0))
                return hull_fail(e, -EINVAL, "%s.enum: not a non-empty array", path);
        static const char *const bounds[] = {"minimum", "maximum"};
        for (size_t i = 0; i < ELEMENTSOF(bounds); i++) {
                const json_t *b = json_object_get(s, bounds[i]);
                if (b && !json_is_number(b))
                        return hull_fail(e, -EINVAL, "%s.%s: not a number", path, bounds[i]);
        }
        static const char *const counts[] = {"minLength", "maxLength", "minItems", "maxItems"};
        for (size_t i = 0; i < ELEMENTSOF(counts); i++)
                if ((r = check_count(s, counts[i], path, e)) < 0)
                        return r;
        return 0;
}

int schema_check(const json_t *schema, hull_error *e) {
        return check_at(schema, "schema", 0, e);
}

/* ---- validation ---- */

typedef struct vctx {
        dynbuf out;
        unsigned lines, more;
        bool nomem;
} vctx;

static void problem(vctx *c, const char *path, const char *fmt, ...) _printf_(3, 4);
static void problem(vctx *c, const char *path, const char *fmt, ...) {
        if (c->lines >= SCHEMA_ERRORS_MAX) {
                c->more++;
                return;
        }
        va_list ap;
        va_start(ap, fmt);
        int r = dynbuf_addf(&c->out, "%s%s: ", c->lines ? "\n" : "", path);
        if (r >= 0)
                r = dynbuf_vaddf(&c->out, fmt, ap);
        va_end(ap);
        if (r < 0)
                c->nomem = true;
        c->lines++;
}

/* A key or a string from the model, fit to quote: printable ASCII kept, the rest '?', cut. */
static void shown(const char *s, size_t len, char ret[SCHEMA_SHOWN_MAX + 4]) {
        size_t n = 0;
        for (size_t i = 0; i < len && n < SCHEMA_SHOWN_MAX; i++)
                ret[n++] = (unsigned char) s[i] >= 0x20 && (unsigned char) s[i] < 0x7f && s[i] != '"' ? s[i] : '?';
        if (len > SCHEMA_SHOWN_MAX) {
                memcpy(ret + n, "...", 3);
                n += 3;
        }
        ret[n] = '\0';
}

static void sub_path(char *ret, const char *path, const char *key) {
        char k[SCHEMA_SHOWN_MAX + 4];
        shown(key, strlen(key), k);
        snprintf(ret, SCHEMA_PATH_MAX, "%s.%s", path, k);
}

static const char *kind_of(const json_t *v) {
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "an object";
        case JSON_ARRAY:
                return "an array";
        case JSON_STRING:
                return "a string";
        case JSON_INTEGER:
                return "an integer";
        case JSON_REAL:
                return "a number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "a boolean";
        case JSON_NULL:
                return "null";
        }
        return "a value";
}

static const char *article(const char *kind) {
        if (strcmp(kind, "integer") == 0 || strcmp(kind, "array") == 0 || strcmp(kind, "object") == 0)
                return "an ";
        if (strcmp(kind, "null") == 0)
                return "";
        return "a ";
}

static bool is_integral(const json_t *v) {
        if (json_is_integer(v))
                return true;
        if (!json_is_real(v))
                return false;
        /* no libm (hull links none): within +-2^53 a double is integral when it survives int64 */
        double d = json_real_value(v);
        return isfinite(d) && d > -9007199254740992.0 && d < 9007199254740992.0 && d == (double) (int64_t) d;
}

static bool kind_matches(const char *k, const json_t *v) {
        if (strcmp(k, "string") == 0)
                return json_is_string(v);
        if (strcmp(k, "integer") == 0)
                return is_integral(v);
        if (strcmp(k, "number") == 0)
                return json_is_number(v);
        if (strcmp(k, "boolean") == 0)
                return json_is_boolean(v);
        if (strcmp(k, "array") == 0)
                return json_is_array(v);
        if (strcmp(k, "object") == 0)
                return json_is_object(v);
        if (strcmp(k, "null") == 0)
                return json_is_null(v);
        return false;
}

/* Does v have one of the schema's types? Otherwise say what was expected. */
static bool type_ok(vctx *c, const json_t *t, const json_t *v, const char *path) {
        if (!t)
                return true;
        if (json_is_string(t)) {
                const char *k = json_string_value(t);
                if (kind_matches(k, v))
                        return true;
                problem(c, path, "expected %s%s, got %s", article(k), k, kind_of(v));
                return false;
        }
        size_t i;
        const json_t *k;
        json_array_foreach(t, i, k) {
                if (kind_matches(json_string_value(k), v))
                        return true;
        }
        char want[128] = "";
        size_t n = 0;
        json_array_foreach(t, i, k) {
                int w = snprintf(want + n, sizeof(want) - n, "%s%s", i ? " or " : "", json_string_value(k));
                if (w < 0 || (size_t) w >= sizeof(want) - n)
                        break;
                n += (size_t) w;
        }
        problem(c, path, "expected %s, got %s", want, kind_of(v));
        return false;
}

static void number_text(const json_t *v, char ret[48]) {
        if (is_integral(v))
                snprintf(ret, 48, "%.0f", json_number_value(v));
        else
                snprintf(ret, 48, "%g", json_number_value(v));
}

static void check_enum(vctx *c, const json_t *en, const json_t *v, const char *path) {
        size_t i;
        const json_t *x;
        json_array_foreach(en, i, x) {
                if (json_equal((json_t *) x, (json_t *) v))
                        return;
        }
        _cleanup_dynbuf_ dynbuf list;
        dynbuf_init(&list, SCHEMA_ENUM_SHOWN_MAX);
        json_array_foreach(en, i, x) {
                char *d = json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY);
                int r = d ? dynbuf_addf(&list, "%s%s", i ? ", " : "", d) : -ENOMEM;
                free(d);
                if (r < 0) {
                        (void) dynbuf_add_str(&list, ", ...");
                        break;
                }
        }
        problem(c, path, "must be one of %s", list.buf ? list.buf : "the listed values");
}

static size_t utf8_chars(const char *s, size_t len) {
        size_t n = 0;
        for (size_t i = 0; i < len; i++)
                n += ((unsigned char) s[i] & 0xc0) != 0x80;
        return n;
}

/* Edit distance of two short strings, or a large number when either is long. */
static size_t distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);
        if (la > SCHEMA_SHOWN_MAX || lb > SCHEMA_SHOWN_MAX)
                return SIZE_MAX;
        size_t prev[SCHEMA_SHOWN_MAX + 1], cur[SCHEMA_SHOWN_MAX + 1];
        for (size_t j = 0; j <= lb; j++)
                prev[j] = j;
        for (size_t i = 1; i <= la; i++) {
                cur[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
                        cur[j] = MIN(MIN(prev[j] + 1, cur[j - 1] + 1), sub);
                }
                memcpy(prev, cur, (lb + 1) * sizeof(size_t));
        }
        return prev[lb];
}

/* The known property closest to key (at most 2 edits, or the same but for case). */
static const char *closest(const json_t *props, const char *key) {
        const char *best = NULL, *k;
        size_t best_d = 3;
        const json_t *v;
        json_object_foreach((json_t *) props, k, v) {
                size_t d = strcasecmp(k, key) == 0 ? 0 : distance(k, key);
                if (d < best_d) {
                        best_d = d;
                        best = k;
                }
        }
        return best;
}

static void validate_at(vctx *c, const json_t *s, const json_t *v, const char *path, unsigned depth);

static void validate_object(vctx *c, const json_t *s, const json_t *v, const char *path, unsigned depth) {
        const json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
        const json_t *add = json_object_get(s, "additionalProperties");
        char sub[SCHEMA_PATH_MAX], q[SCHEMA_SHOWN_MAX + 4];
        size_t i;
        const json_t *k, *x;
        const char *key;
        json_array_foreach(req, i, k) {
                const char *name = json_string_value(k);
                if (name && !json_object_get(v, name)) {
                        shown(name, strlen(name), q);
                        problem(c, path, "missing required field \"%s\"", q);
                }
        }
        json_object_foreach((json_t *) v, key, x) {
                const json_t *ps = props ? json_object_get(props, key) : NULL;
                sub_path(sub, path, key);
                if (ps)
                        validate_at(c, ps, x, sub, depth + 1);
                else if (json_is_false(add)) {
                        const char *near = props ? closest(props, key) : NULL;
                        shown(key, strlen(key), q);
                        if (near)
                                problem(c, path, "unknown field \"%s\" (did you mean \"%s\"?)", q, near);
                        else
                                problem(c, path, "unknown field \"%s\"", q);
                } else if (json_is_object(add))
                        validate_at(c, add, x, sub, depth + 1);
        }
}

static void validate_at(vctx *c, const json_t *s, const json_t *v, const char *path, unsigned depth) {
        char a[48], b[48];
        if (depth > SCHEMA_DEPTH_MAX || !json_is_object(s))
                return;
        if (!type_ok(c, json_object_get(s, "type"), v, path))
                return;
        const json_t *en = json_object_get(s, "enum");
        if (json_is_array(en))
                check_enum(c, en, v, path);
        if (json_is_number(v)) {
                const json_t *min = json_object_get(s, "minimum"), *max = json_object_get(s, "maximum");
                number_text(v, b);
                if (json_is_number(min) && json_number_value(v) < json_number_value(min)) {
                        number_text(min, a);
                        problem(c, path, "must be >= %s, got %s", a, b);
                }
                if (json_is_number(max) && json_number_value(v) > json_number_value(max)) {
                        number_text(max, a);
                        problem(c, path, "must be <= %s, got %s", a, b);
                }
        }
        if (json_is_string(v)) {
                size_t n = utf8_chars(json_string_value(v), json_string_length(v));
                json_int_t min = json_integer_value(json_object_get(s, "minLength"));
                const json_t *max = json_object_get(s, "maxLength");
                if (min > 0 && n < (size_t) min)
                        problem(c, path, "must be at least %lld characters long, got %zu", (long long) min, n);
                if (json_is_integer(max) && n > (size_t) json_integer_value(max))
                        problem(c, path, "must be at most %lld characters long, got %zu",
                                (long long) json_integer_value(max), n);
        }
        if (json_is_array(v)) {
                size_t n = json_array_size(v), i;
                json_int_t min = json_integer_value(json_object_get(s, "minItems"));
                const json_t *max = json_object_get(s, "maxItems"), *items = json_object_get(s, "items"), *x;
                if (min > 0 && n < (size_t) min)
                        problem(c, path, "must have at least %lld items, got %zu", (long long) min, n);
                if (json_is_integer(max) && n > (size_t) json_integer_value(max))
                        problem(c, path, "must have at most %lld items, got %zu", (long long) json_integer_value(max),
                                n);
                if (json_is_object(items))
                        json_array_foreach(v, i, x) {
                                char sub[SCHEMA_PATH_MAX];
                                snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
                                validate_at(c, items, x, sub, depth + 1);
                                if (c->more > 0)
                                        break; /* enough said */
                        }
        }
        if (json_is_object(v))
                validate_object(c, s, v, path, depth);
}

int schema_validate(const json_t *schema, const json_t *value, const char *root, char **ret_errors) {
        vctx c = {0};
        dynbuf_init(&c.out, SCHEMA_ERRORS_BYTES_MAX);
        if (!schema || !value || !ret_errors)
                return -EINVAL;
        validate_at(&c, schema, value, root ? root : "input", 0);
        if (c.lines == 0) {
                dynbuf_free(&c.out);
                return 0;
        }
        if (c.more)
                (void) dynbuf_addf(&c.out, "\n... and %u more problems", c.more);
        if (c.nomem && c.out.len == 0) {
                dynbuf_free(&c.out);
                return -ENOMEM;
        }
        char *s = dynbuf_take(&c.out, NULL);
        if (!s)
                return -ENOMEM;
        *ret_errors = s;
        return -EINVAL;
}
