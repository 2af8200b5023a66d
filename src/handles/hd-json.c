/* hd-json.c: one pass over JSON bytes with an explicit bit stack (no recursion), validating and
 * collecting a bounded shape. See hd-json.h. */
#include "hd-json.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"

enum {
        T_OBJECT = 1U << 0,
        T_ARRAY = 1U << 1,
        T_STRING = 1U << 2,
        T_NUMBER = 1U << 3,
        T_BOOLEAN = 1U << 4,
        T_NULL = 1U << 5,
};
static const char *const type_names[] = {"object", "array", "string", "number", "boolean", "null"};

typedef struct shape_node shape_node;
struct shape_node {
        unsigned types;
        uint64_t n_obj, keys_min, keys_max; /* object instances and their key counts */
        uint64_t n_arr, len_min, len_max;   /* array instances and their lengths */
        unsigned n_keys;
        bool keys_more;
        char key[HD_SHAPE_KEYS_MAX][HD_SHAPE_KEY_BYTES];
        size_t key_len[HD_SHAPE_KEYS_MAX];
        shape_node *child[HD_SHAPE_KEYS_MAX];
        shape_node *items;
};

/* Per open container at depth <= HD_SHAPE_LEVELS. */
typedef struct level {
        shape_node *node;  /* the container's node, NULL when not described */
        shape_node *value; /* where the next value in it goes (current key's child or items) */
        uint64_t count;    /* keys or elements so far */
} scan_level;

typedef struct scan {
        const unsigned char *p, *start, *end;
        uint8_t *stack; /* 1 bit per depth: 1 = object */
        unsigned depth;
        bool want_shape;
        shape_node *nodes;
        unsigned n_nodes;
        scan_level lv[HD_SHAPE_LEVELS + 2];
        hull_error *e;
} scan;

/* 0 plain string byte, 1 quote, 2 backslash, 3 control, 4 non-ASCII */
static uint8_t str_class[256];
static uint8_t ws_class[256];
static void init_tables(void) {
        if (str_class['"'])
                return;
        for (unsigned c = 0; c < 256; c++)
                str_class[c] = c < 0x20 ? 3 : c >= 0x80 ? 4 : 0;
        str_class['\\'] = 2;
        ws_class[' '] = ws_class['\t'] = ws_class['\n'] = ws_class['\r'] = 1;
        str_class['"'] = 1; /* last: marks the tables ready (benign if two threads race: same values) */
}

static int fail(scan *s, int err, const char *what) {
        size_t off = (size_t) (s->p - s->start);
        uint64_t line = 1;
        for (const unsigned char *q = s->start; q < s->p && q < s->end; q++)
                line += *q == '\n';
        if (s->p >= s->end)
                return hull_err(s->e, err, "not JSON: %s at the end (byte %zu, line %" PRIu64 ")", what, off, line);
        if (*s->p >= 0x20 && *s->p < 0x7f)
                return hull_err(s->e, err, "not JSON: %s: '%c' at byte %zu (line %" PRIu64 ")", what, *s->p, off, line);
        return hull_err(s->e, err, "not JSON: %s: byte 0x%02x at byte %zu (line %" PRIu64 ")", what, *s->p, off, line);
}

static inline void skip_ws(scan *s) {
        while (s->p < s->end && ws_class[*s->p])
                s->p++;
}

/* Length of the valid UTF-8 sequence at p, or 0. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end) {
        unsigned char c = p[0];
        size_t len;
        uint32_t cp, min;
        if (c >= 0xc2 && c <= 0xdf)
                len = 2, cp = c & 0x1f, min = 0x80;
        else if (c >= 0xe0 && c <= 0xef)
                len = 3, cp = c & 0x0f, min = 0x800;
        else if (c >= 0xf0 && c <= 0xf4)
                len = 4, cp = c & 0x07, min = 0x10000;
        else
                return 0;
        if ((size_t) (end - p) < len)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (p[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return len;
}

static inline bool is_hex(unsigned char c) {
        return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* At the opening quote. Leaves p after the closing quote; *ret_raw and *ret_n: the raw content. */
static int scan_string(scan *s, const unsigned char **ret_raw, size_t *ret_n) {
        const unsigned char *raw = ++s->p;
        for (;;) {
                while (s->p < s->end && str_class[*s->p] == 0)
                        s->p++;
                if (s->p >= s->end)
                        return fail(s, -EBADMSG, "a string is not closed");
                switch (str_class[*s->p]) {
                case 1:
                        *ret_raw = raw;
                        *ret_n = (size_t) (s->p - raw);
                        s->p++;
                        return 0;
                case 2:
                        if (s->end - s->p < 2)
                                return fail(s, -EBADMSG, "a string is not closed");
                        switch (s->p[1]) {
                        case '"':
                        case '\\':
                        case '/':
                        case 'b':
                        case 'f':
                        case 'n':
                        case 'r':
                        case 't':
                                s->p += 2;
                                break;
                        case 'u':
                                if (s->end - s->p < 6 || !is_hex(s->p[2]) || !is_hex(s->p[3]) || !is_hex(s->p[4]) ||
                                    !is_hex(s->p[5]))
                                        return fail(s, -EBADMSG, "a bad \\u escape");
                                s->p += 6;
                                break;
                        default:
                                return fail(s, -EBADMSG, "a bad escape");
                        }
                        break;
                case 3:
                        return fail(s, -EBADMSG, "a control character in a string");
                default: {
                        size_t k = utf8_len(s->p, s->end);
                        if (k == 0)
                                return fail(s, -EBADMSG, "invalid UTF-8");
                        s->p += k;
                }
                }
        }
}

static int scan_number(scan *s) {
        const unsigned char *p = s->p, *end = s->end;
        if (p < end && *p == '-')
                p++;
        if (p >= end || *p < '0' || *p > '9') {
                s->p = p;
                return fail(s, -EBADMSG, "a bad number");
        }
        if (*p == '0')
                p++;
        else
                while (p < end && *p >= '0' && *p <= '9')
                        p++;
        if (p < end && *p == '.') {
                p++;
                if (p >= end || *p < '0' || *p > '9') {
                        s->p = p;
                        return fail(s, -EBADMSG, "a bad number");
                }
                while (p < end && *p >= '0' && *p <= '9')
                        p++;
        }
        if (p < end && (*p == 'e' || *p == 'E')) {
                p++;
                if (p < end && (*p == '+' || *p == '-'))
                        p++;
                if (p >= end || *p < '0' || *p > '9') {
                        s->p = p;
                        return fail(s, -EBADMSG, "a bad number");
                }
                while (p < end && *p >= '0' && *p <= '9')
                        p++;
        }
        s->p = p;
        return 0;
}

static shape_node *new_node(scan *s) {
        if (s->n_nodes >= HD_SHAPE_NODES_MAX)
                return NULL;
        shape_node *n = &s->nodes[s->n_nodes++];
        memset(n, 0, sizeof(*n));
        return n;
}

/* A value of type t begins at the current depth; returns its node (or NULL). */
static shape_node *value_node(scan *s, unsigned t) {
        shape_node *n = NULL;
        if (!s->want_shape)
                return NULL;
        if (s->depth == 0)
                n = s->nodes; /* the root */
        else if (s->depth <= HD_SHAPE_LEVELS)
                n = s->lv[s->depth - 1].value;
        if (n)
                n->types |= t;
        return n;
}

static inline bool top_is_object(const scan *s) {
        unsigned d = s->depth - 1;
        return (s->stack[d >> 3] >> (d & 7)) & 1;
}

static int push(scan *s, bool object, shape_node *n) {
        if (s->depth >= HD_JSON_DEPTH_MAX)
                return -ELOOP;
        unsigned d = s->depth;
        if (object)
                s->stack[d >> 3] |= (uint8_t) (1U << (d & 7));
        else
                s->stack[d >> 3] &= (uint8_t) ~(1U << (d & 7));
        if (d <= HD_SHAPE_LEVELS) {
                s->lv[d].node = n; /* counted at every described level */
                s->lv[d].value = NULL;
                s->lv[d].count = 0;
                if (!object && n && d < HD_SHAPE_LEVELS) { /* items described one level less */
                        if (!n->items)
                                n->items = new_node(s);
                        s->lv[d].value = n->items;
                }
        }
        s->depth++;
        return 0;
}

static void pop(scan *s) {
        bool object = top_is_object(s);
        s->depth--;
        unsigned d = s->depth;
        if (d > HD_SHAPE_LEVELS || !s->lv[d].node)
                return;
        shape_node *n = s->lv[d].node;
        uint64_t c = s->lv[d].count;
        if (object) {
                n->keys_min = n->n_obj ? MIN(n->keys_min, c) : c;
                n->keys_max = n->n_obj ? MAX(n->keys_max, c) : c;
                n->n_obj++;
        } else {
                n->len_min = n->n_arr ? MIN(n->len_min, c) : c;
                n->len_max = n->n_arr ? MAX(n->len_max, c) : c;
                n->n_arr++;
        }
}

/* A key (raw, escaped) was read in the object at depth-1: point the next value at its node. */
static void on_key(scan *s, const unsigned char *raw, size_t n) {
        unsigned d = s->depth - 1;
        if (d > HD_SHAPE_LEVELS)
                return;
        s->lv[d].count++;
        s->lv[d].value = NULL;
        shape_node *node = d < HD_SHAPE_LEVELS ? s->lv[d].node : NULL;
        if (!node)
                return;
        size_t k = MIN(n, (size_t) HD_SHAPE_KEY_BYTES);
        for (unsigned i = 0; i < node->n_keys; i++)
                if (node->key_len[i] == k && memcmp(node->key[i], raw, k) == 0) {
                        s->lv[d].value = node->child[i];
                        return;
                }
        if (node->n_keys >= HD_SHAPE_KEYS_MAX) {
                node->keys_more = true;
                return;
        }
        unsigned i = node->n_keys++;
        memcpy(node->key[i], raw, k);
        node->key_len[i] = k;
        node->child[i] = new_node(s);
        s->lv[d].value = node->child[i];
}

static int scan_all(scan *s, hd_json_element_fn on_element, void *userdata) {
        const unsigned char *elem_start = NULL;
        int r;

value:
        skip_ws(s);
        if (s->p >= s->end)
                return fail(s, -EBADMSG, "a value is missing");
        if (s->depth == 1 && on_element && !top_is_object(s))
                elem_start = s->p;
        switch (*s->p) {
        case '{': {
                shape_node *n = value_node(s, T_OBJECT);
                s->p++;
                r = push(s, true, n);
                if (r < 0)
                        return r;
                skip_ws(s);
                if (s->p < s->end && *s->p == '}') {
                        s->p++;
                        pop(s);
                        goto done;
                }
                goto key;
        }
        case '[': {
                shape_node *n = value_node(s, T_ARRAY);
                s->p++;
                r = push(s, false, n);
                if (r < 0)
                        return r;
                skip_ws(s);
                if (s->p < s->end && *s->p == ']') {
                        s->p++;
                        pop(s);
                        goto done;
                }
                if (s->depth - 1 <= HD_SHAPE_LEVELS)
                        s->lv[s->depth - 1].count++;
                goto value;
        }
        case '"': {
                const unsigned char *raw;
                size_t n;
                value_node(s, T_STRING);
                r = scan_string(s, &raw, &n);
                if (r < 0)
                        return r;
                goto done;
        }
        case 't':
        case 'f':
        case 'n': {
                const char *lit = *s->p == 't' ? "true" : *s->p == 'f' ? "false" : "null";
                size_t n = strlen(lit);
                if ((size_t) (s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
                        return fail(s, -EBADMSG, "an unexpected character");
                value_node(s, *s->p == 'n' ? T_NULL : T_BOOLEAN);
                s->p += n;
                goto done;
        }
        default:
                if (*s->p != '-' && (*s->p < '0' || *s->p > '9'))
                        return fail(s, -EBADMSG, "an unexpected character");
                value_node(s, T_NUMBER);
                r = scan_number(s);
                if (r < 0)
                        return r;
                goto done;
        }

key:
        skip_ws(s);
        if (s->p >= s->end || *s->p != '"')
                return fail(s, -EBADMSG, "an object key is missing");
        {
                const unsigned char *raw;
                size_t n;
                r = scan_string(s, &raw, &n);
                if (r < 0)
                        return r;
                on_key(s, raw, n);
        }
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':')
                return fail(s, -EBADMSG, "':' is missing after a key");
        s->p++;
        goto value;

done:
        if (s->depth == 1 && elem_start && on_element && !top_is_object(s)) {
                r = on_element((const char *) elem_start, (size_t) (s->p - elem_start), userdata);
                if (r < 0)
                        return r;
                elem_start = NULL;
        }
        if (s->depth == 0) {
                skip_ws(s);
                if (s->p != s->end)
                        return fail(s, -EBADMSG, "text after the value");
                return 0;
        }
        skip_ws(s);
        if (s->p >= s->end)
                return fail(s, -EBADMSG, "a container is not closed");
        if (top_is_object(s)) {
                if (*s->p == ',') {
                        s->p++;
                        goto key;
                }
                if (*s->p == '}') {
                        s->p++;
                        pop(s);
                        goto done;
                }
                return fail(s, -EBADMSG, "',' or '}' expected");
        }
        if (*s->p == ',') {
                s->p++;
                if (s->depth - 1 <= HD_SHAPE_LEVELS)
                        s->lv[s->depth - 1].count++;
                goto value;
        }
        if (*s->p == ']') {
                s->p++;
                pop(s);
                goto done;
        }
        return fail(s, -EBADMSG, "',' or ']' expected");
}

/* Decode a raw key for display: escapes resolved, invalid results shown raw. */
static json_t *key_string(const char *raw, size_t n) {
        char buf[HD_SHAPE_KEY_BYTES * 2 + 8];
        size_t o = 0;
        for (size_t i = 0; i < n && o + 4 < sizeof(buf);) {
                if (raw[i] != '\\') {
                        buf[o++] = raw[i++];
                        continue;
                }
                if (i + 1 >= n)
                        break;
                char c = raw[i + 1];
                const char *map = "\"\"\\\\//b\bf\fn\nr\rt\t";
                const char *m = c != 'u' ? strchr(map, c) : NULL;
                if (m && ((m - map) % 2) == 0) {
                        buf[o++] = m[1];
                        i += 2;
                        continue;
                }
                if (c == 'u' && i + 6 <= n) {
                        char hex[5] = {raw[i + 2], raw[i + 3], raw[i + 4], raw[i + 5], 0};
                        unsigned long cp = strtoul(hex, NULL, 16);
                        i += 6;
                        if (cp >= 0xd800 && cp <= 0xdfff)
                                cp = 0xfffd; /* surrogate halves: shown as a replacement */
                        if (cp == 0)
                                cp = 0xfffd;
                        if (cp < 0x80)
                                buf[o++] = (char) cp;
                        else if (cp < 0x800) {
                                buf[o++] = (char) (0xc0 | (cp >> 6));
                                buf[o++] = (char) (0x80 | (cp & 0x3f));
                        } else {
                                buf[o++] = (char) (0xe0 | (cp >> 12));
                                buf[o++] = (char) (0x80 | ((cp >> 6) & 0x3f));
                                buf[o++] = (char) (0x80 | (cp & 0x3f));
                        }
                        continue;
                }
                break;
        }
        /* the raw prefix may end inside a UTF-8 sequence: cut back to a boundary */
        while (o > 0 && ((unsigned char) buf[o - 1] & 0xc0) == 0x80) {
                size_t b = o - 1;
                while (b > 0 && ((unsigned char) buf[b] & 0xc0) == 0x80)
                        b--;
                if (utf8_len((const unsigned char *) buf + b, (const unsigned char *) buf + o) == o - b)
                        break;
                o = b;
        }
        if (o > 0 && (unsigned char) buf[o - 1] >= 0xc0)
                o--;
        return json_stringn(buf, o);
}

static int set_count(json_t *o, const char *name, uint64_t instances, uint64_t min, uint64_t max) {
        char k[32];
        if (instances == 1 || min == max)
                return json_object_set_new(o, name, json_integer((json_int_t) min));
        snprintf(k, sizeof(k), "%s_min", name);
        if (json_object_set_new(o, k, json_integer((json_int_t) min)) < 0)
                return -1;
        snprintf(k, sizeof(k), "%s_max", name);
        return json_object_set_new(o, k, json_integer((json_int_t) max));
}

static json_t *node_json(const shape_node *n, unsigned level) {
        json_t *o = json_object();
        if (!o)
                return NULL;
        unsigned count = (unsigned) __builtin_popcount(n->types);
        if (count == 1) {
                json_object_set_new(o, "type", json_string(type_names[__builtin_ctz(n->types)]));
        } else {
                json_t *types = json_array();
                for (unsigned i = 0; i < ELEMENTSOF(type_names); i++)
                        if (n->types & (1U << i))
                                json_array_append_new(types, json_string(type_names[i]));
                json_object_set_new(o, "type", json_string(count ? "mixed" : "none"));
                json_object_set_new(o, "types", types);
        }
        if (n->n_obj) {
                set_count(o, "n_keys", n->n_obj, n->keys_min, n->keys_max);
                if (level < HD_SHAPE_LEVELS && n->n_keys > 0) {
                        json_t *keys = json_object();
                        for (unsigned i = 0; i < n->n_keys; i++) {
                                json_t *k = key_string(n->key[i], n->key_len[i]);
                                json_t *c = n->child[i] ? node_json(n->child[i], level + 1) : json_null();
                                if (k && c && json_object_get(keys, json_string_value(k)) == NULL)
                                        json_object_set_new(keys, json_string_value(k), c);
                                else
                                        json_decref(c);
                                json_decref(k);
                        }
                        json_object_set_new(o, "keys", keys);
                        if (n->keys_more)
                                json_object_set_new(o, "keys_truncated", json_true());
                }
        }
        if (n->n_arr) {
                set_count(o, "length", n->n_arr, n->len_min, n->len_max);
                if (level < HD_SHAPE_LEVELS && n->items && n->items->types)
                        json_object_set_new(o, "items", node_json(n->items, level + 1));
        }
        return o;
}

int hd_json_scan(const char *buf, size_t len, json_t **ret_shape, hd_json_element_fn on_element, void *userdata,
                 hull_error *e) {
        init_tables();
        _cleanup_free_ uint8_t *stack = calloc(HD_JSON_DEPTH_MAX / 8 + 1, 1);
        _cleanup_free_ shape_node *nodes = ret_shape ? calloc(HD_SHAPE_NODES_MAX, sizeof(shape_node)) : NULL;
        if (!stack || (ret_shape && !nodes))
                return hull_err(e, -ENOMEM, "handles: cannot scan JSON");
        scan s = {
                .p = (const unsigned char *) buf,
                .start = (const unsigned char *) buf,
                .end = (const unsigned char *) buf + len,
                .stack = stack,
                .want_shape = ret_shape != NULL,
                .nodes = nodes,
                .n_nodes = ret_shape ? 1 : 0,
                .e = e,
        };
        int r = scan_all(&s, on_element, userdata);
        if (r < 0) {
                if (r == -ELOOP)
                        hull_err(e, -ELOOP, "JSON nested deeper than %u levels", HD_JSON_DEPTH_MAX);
                return r;
        }
        if (ret_shape) {
                json_t *shape = node_json(&nodes[0], 0);
                if (!shape)
                        return hull_err(e, -ENOMEM, "handles: cannot describe JSON");
                *ret_shape = shape;
        }
        return 0;
}
