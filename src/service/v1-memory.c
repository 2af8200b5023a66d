/* v1-memory.c: the shapes of memory stores (see v1-memory.h): a store's create and update
 * bodies, a memory's path, and the views of memories and versions. Pure. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "utf8.h"
#include "v1-memory.h"
#include "v1-shape-internal.h"

static const char *const STORE_FIELDS[] = {"name", "description", "metadata", NULL};

/* A name: 1 to MEMORY_STORE_NAME_MAX bytes of text without a control character. */
static int name_check(const json_t *v, v1_err *e) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (!s || n == 0 || n > MEMORY_STORE_NAME_MAX || strlen(s) != n)
                return v1_fail(e, 400, NULL, "name: must be a string of 1 to %u bytes", MEMORY_STORE_NAME_MAX);
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return v1_fail(e, 400, NULL, "name: must not hold a control character");
        return 0;
}

static int desc_check(const json_t *v, v1_err *e) {
        if (json_is_null(v))
                return 0;
        const char *s = json_string_value(v);
        if (!s || json_string_length(v) > MEMORY_STORE_DESC_MAX || strlen(s) != json_string_length(v))
                return v1_fail(e, 400, NULL, "description: must be a string of at most %u bytes (\"\" or null clears)",
                               MEMORY_STORE_DESC_MAX);
        return 0;
}

int v1_memory_store_create(const json_t *body, const char *id, const char *now, json_t **ret, v1_err *e) {
        int r = v1_check_object(body, "", STORE_FIELDS, e);
        if (r < 0)
                return r;
        const json_t *name = json_object_get(body, "name"), *desc = json_object_get(body, "description");
        const json_t *meta = json_object_get(body, "metadata");
        if (!name)
                return v1_fail(e, 400, NULL, "name: required (the store's name, e.g. \"user-preferences\")");
        if ((r = name_check(name, e)) < 0 || (desc && (r = desc_check(desc, e)) < 0))
                return r;
        json_auto_t *m = NULL;
        if (meta && !json_is_null(meta)) {
                if ((r = v1_metadata_check(meta, "metadata", e)) < 0)
                        return r;
                m = json_deep_copy(meta);
        } else
                m = json_object();
        const char *d = json_string_value(desc);
        *ret = json_pack("{s:s, s:s, s:O, s:s, s:O, s:s, s:s, s:n}", "id", id, "type", "memory_store", "name", name,
                         "description", d ? d : "", "metadata", m, "created_at", now, "updated_at", now, "archived_at");
        return *ret ? 0 : -ENOMEM;
}

int v1_memory_store_update(const json_t *cur, const json_t *body, const char *now, json_t **ret, v1_err *e) {
        int r = v1_check_object(body, "", STORE_FIELDS, e);
        if (r < 0)
                return r;
        if (json_is_string(json_object_get(cur, "archived_at")))
                return v1_fail(e, 400, "memory_store_archived",
                               "the memory store is archived and cannot be updated (create a new one)");
        json_auto_t *next = json_deep_copy(cur);
        if (!next)
                return -ENOMEM;
        const json_t *name = json_object_get(body, "name"), *desc = json_object_get(body, "description");
        const json_t *meta = json_object_get(body, "metadata");
        if (name && ((r = name_check(name, e)) < 0 || json_object_set(next, "name", (json_t *) name) < 0))
                return r < 0 ? r : -ENOMEM;
        if (desc) {
                if ((r = desc_check(desc, e)) < 0)
                        return r;
                const char *d = json_string_value(desc);
                json_object_set_new(next, "description", json_string(d ? d : ""));
        }
        if (meta && !json_is_null(meta)) {
                json_t *patched = NULL;
                if ((r = v1_metadata_patch(json_object_get(cur, "metadata"), meta, "metadata", &patched, e)) < 0)
                        return r;
                json_object_set_new(next, "metadata", patched);
        }
        if (json_equal(next, (json_t *) cur)) {
                *ret = NULL;
                return 0;
        }
        json_object_set_new(next, "updated_at", json_string(now));
        *ret = TAKE_PTR(next);
        return 0;
}

/* The code point at p (n bytes left, valid UTF-8), its length in *ret_len. */
static uint32_t code_point(const unsigned char *p, size_t *ret_len) {
        if (p[0] < 0x80) {
                *ret_len = 1;
                return p[0];
        }
        if ((p[0] & 0xe0) == 0xc0) {
                *ret_len = 2;
                return (uint32_t) (p[0] & 0x1f) << 6 | (p[1] & 0x3f);
        }
        if ((p[0] & 0xf0) == 0xe0) {
                *ret_len = 3;
                return (uint32_t) (p[0] & 0x0f) << 12 | (uint32_t) (p[1] & 0x3f) << 6 | (p[2] & 0x3f);
        }
        *ret_len = 4;
        return (uint32_t) (p[0] & 0x07) << 18 | (uint32_t) (p[1] & 0x3f) << 12 | (uint32_t) (p[2] & 0x3f) << 6 |
               (p[3] & 0x3f);
}

/* Control (C0, DEL, C1) and format characters (the invisible ones that make two paths look alike). */
static bool refused_char(uint32_t c) {
        return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0xad || (c >= 0x200b && c <= 0x200f) ||
               (c >= 0x202a && c <= 0x202e) || (c >= 0x2060 && c <= 0x2064) || c == 0xfeff;
}

int v1_memory_path_check(const char *path, size_t len, bool prefix, const char *field, v1_err *e) {
        if (!path || len == 0 || path[0] != '/')
                return v1_fail(e, 400, NULL, "%s: must start with \"/\" (e.g. \"/notes/todo.md\")", field);
        if (len > STORE_MEMORY_PATH_MAX)
                return v1_fail(e, 400, NULL, "%s: %zu bytes, at most %u", field, len, STORE_MEMORY_PATH_MAX);
        if (memchr(path, '\0', len))
                return v1_fail(e, 400, NULL, "%s: must not hold a NUL character", field);
        if (!utf8_is_valid(path, len))
                return v1_fail(e, 400, NULL, "%s: must be valid UTF-8", field);
        const unsigned char *p = (const unsigned char *) path;
        for (size_t i = 0, n; i < len; i += n)
                if (refused_char(code_point(p + i, &n)))
                        return v1_fail(e, 400, NULL, "%s: must not hold a control or format character (byte %zu)",
                                       field, i);
        if (prefix) {
                if (path[len - 1] != '/')
                        return v1_fail(e, 400, NULL, "%s: must end with \"/\" (e.g. \"/notes/\")", field);
                if (len == 1)
                        return 0;
                len--; /* its segments, less the last "/" */
        } else if (len == 1)
                return v1_fail(e, 400, NULL, "%s: must name a memory after \"/\" (e.g. \"/notes/todo.md\")", field);
        for (size_t i = 1; i <= len;) {
                size_t k = i;
                while (k < len && path[k] != '/')
                        k++;
                size_t seg = k - i;
                if (seg == 0 || (seg == 1 && path[i] == '.') || (seg == 2 && path[i] == '.' && path[i + 1] == '.'))
                        return v1_fail(e, 400, NULL,
                                       "%s: a segment is empty, \".\" or \"..\" (paths are absolute within the store, "
                                       "e.g. \"/notes/todo.md\")",
                                       field);
                i = k + 1;
        }
        return 0;
}

json_t *v1_memory_view(const json_t *obj, bool full) {
        json_t *v = json_deep_copy(obj);
        if (v && !full && json_object_get(v, "content"))
                json_object_set_new(v, "content", json_null());
        return v;
}
