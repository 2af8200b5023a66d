/* mock-body.c: see mock-body.h. Why reusing a value is sound: the walk reads the body front to
 * back and decides only on the bytes it has read, so while two bodies have the same bytes the
 * walk of the second is where the walk of the first was, at the same offsets, in the same role (a
 * member's value or an element of "messages"). A value's parse depends on its bytes and on the one
 * byte after it when it is a number or a literal (jansson reads one byte past those, and gives it
 * back; an object, an array or a string ends on its own closing byte); when both bodies have the
 * same bytes up to there, the first body's value is what jansson makes of the second's. Where the
 * bodies differ, jansson parses. */
#include "mock-body.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json-scan.h"
#include "limits.h"
#include "macro.h"

/* A value of a walked body: its bytes [start, end) and what they parse to. */
typedef struct mb_value {
        size_t start, end;
        json_t *v;
} mb_value;

/* A body walked whole, kept for the next ones. Changed only before it is in the cache. */
typedef struct mb_snap {
        unsigned refs; /* under the cache's lock: its slot, and each walk that uses it */
        uint64_t used; /* the cache's tick when it was last a base */
        char *bytes;
        size_t len;
        mb_value *vals; /* the member values and the elements of "messages", in the order read */
        size_t n_vals, cap_vals;
        size_t rest_at; /* after "messages"'s "]" (0: no such array walked) ... */
        json_t *rest;   /* ... and the members after it, in their order */
} mb_snap;

struct mock_body_cache {
        pthread_mutex_t lock;
        mb_snap *slot[MOCK_BODY_CACHE_SLOTS];
        uint64_t tick;
        size_t bytes; /* of the bodies in the slots */
};

static void snap_free(mb_snap *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n_vals; i++)
                json_decref(s->vals[i].v);
        free(s->vals);
        json_decref(s->rest);
        free(s->bytes);
        free(s);
}

int mock_body_cache_new(mock_body_cache **ret) {
        mock_body_cache *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        pthread_mutex_init(&c->lock, NULL);
        *ret = c;
        return 0;
}

void mock_body_cache_free(mock_body_cache *c) {
        if (!c)
                return;
        for (size_t i = 0; i < MOCK_BODY_CACHE_SLOTS; i++)
                snap_free(c->slot[i]);
        pthread_mutex_destroy(&c->lock);
        free(c);
}

/* ---- the walk ---- */

typedef struct walk {
        const char *b;
        size_t n, p;         /* the body, and where the walk is */
        const mb_snap *base; /* an earlier body (NULL: none) ... */
        size_t same, bi;     /* ... the bytes both begin with, its next value */
        mb_snap *out;        /* what this body's walk found */
        size_t parsed;       /* bytes handed to jansson */
} walk;

static bool blank(char c) { /* jansson's whitespace */
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_blank(walk *w) {
        while (w->p < w->n && blank(w->b[w->p]))
                w->p++;
}

static bool eat(walk *w, char c) {
        skip_blank(w);
        if (w->p >= w->n || w->b[w->p] != c)
                return false;
        w->p++;
        return true;
}

/* May the JSON text s (valid: jansson parsed it) be nested deeper than limit? jansson counts a
 * value in each array or object as one more level and refuses a body past JSON_PARSER_MAX_DEPTH;
 * a value parsed on its own has fewer levels around it. A scalar in the deepest array is one level
 * more than the arrays: when that may go past the limit, jansson decides on the whole body. */
static bool too_deep(const char *s, size_t n, size_t limit) {
        return limit == 0 || !json_depth_ok(s, n, (unsigned) (limit - 1));
}

/* Does v end on a byte that closes it ("}", "]", "\"")? jansson reads nothing after such a value;
 * after a number or a literal, one byte. */
static bool closed(const json_t *v) {
        return json_is_object(v) || json_is_array(v) || json_is_string(v);
}

static int keep(mb_snap *s, size_t start, size_t end, json_t *v) {
        if (s->n_vals == s->cap_vals) {
                size_t cap = s->cap_vals ? s->cap_vals * 2 : 64;
                mb_value *nv = reallocarray(s->vals, cap, sizeof(*nv));
                if (!nv)
                        return -ENOMEM;
                s->vals = nv;
                s->cap_vals = cap;
        }
        s->vals[s->n_vals++] = (mb_value){.start = start, .end = end, .v = json_incref(v)};
        return 0;
}

/* One JSON value at w->p, parsed or the base's (see above), w->p moved past it; around: the
 * arrays and objects around it in the body. A new reference, or NULL. */
static json_t *value(walk *w, size_t around) {
        skip_blank(w);
        size_t at = w->p;
        const mb_snap *s = w->base;
        while (s && w->bi < s->n_vals && s->vals[w->bi].start < at)
                w->bi++;
        json_t *v;
        size_t end;
        const mb_value *had = s && w->bi < s->n_vals && s->vals[w->bi].start == at ? &s->vals[w->bi] : NULL;
        if (had && (had->end < w->same || (had->end == w->same && closed(had->v)))) {
                v = json_incref(had->v);
                end = had->end;
        } else {
                json_error_t err;
                v = json_loadb(w->b + at, w->n - at, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &err);
                if (!v || err.position <= 0 || (size_t) err.position > w->n - at) {
                        json_decref(v);
                        return NULL;
                }
                end = at + (size_t) err.position;
                w->parsed += end - at;
                if (too_deep(w->b + at, end - at, JSON_PARSER_MAX_DEPTH - around)) {
                        json_decref(v);
                        return NULL;
                }
        }
        if (keep(w->out, at, end, v) < 0) {
                json_decref(v);
                return NULL;
        }
        w->p = end;
        return v;
}

/* "messages"'s array at w->p ("["), element by element. */
static json_t *messages(walk *w) {
        json_t *a = json_array();
        if (!a || !eat(w, '['))
                goto fail;
        skip_blank(w);
        if (w->p < w->n && w->b[w->p] == ']') {
                w->p++;
                return a;
        }
        for (;;) {
                json_t *v = value(w, 2);
                if (!v || json_array_append_new(a, v) < 0)
                        goto fail;
                if (eat(w, ']'))
                        return a;
                if (!eat(w, ','))
                        goto fail;
        }
fail:
        json_decref(a);
        return NULL;
}

/* The rest of the body after "messages" is the base's, byte for byte: its members are. */
static bool same_rest(walk *w, json_t *root) {
        const mb_snap *s = w->base;
        if (!s || !s->rest_at || s->len - s->rest_at != w->n - w->p ||
            memcmp(s->bytes + s->rest_at, w->b + w->p, w->n - w->p) != 0)
                return false;
        const char *k;
        json_t *v;
        json_object_foreach(s->rest, k, v) {
                if (json_object_get(root, k) || json_object_set(root, k, v) < 0 ||
                    json_object_set(w->out->rest, k, v) < 0)
                        return false;
        }
        w->p = w->n;
        return true;
}

/* The body as an object, member by member. NULL: not walked (not JSON, or not what the walk
 * follows: jansson decides on the whole). */
static json_t *walk_body(walk *w) {
        json_t *root = json_object();
        if (!root || !(w->out->rest = json_object()) || !eat(w, '{'))
                goto fail;
        bool after = false; /* past "messages"'s array */
        if (eat(w, '}'))
                goto end;
        for (;;) {
                skip_blank(w);
                if (w->p >= w->n || w->b[w->p] != '"')
                        goto fail;
                json_error_t err;
                json_t *key = json_loadb(w->b + w->p, w->n - w->p, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &err);
                if (!json_is_string(key) || err.position <= 0 || (size_t) err.position > w->n - w->p) {
                        json_decref(key);
                        goto fail;
                }
                w->p += (size_t) err.position;
                w->parsed += (size_t) err.position;
                const char *k = json_string_value(key);
                bool dup = json_object_get(root, k) != NULL; /* which one wins is jansson's to say */
                bool is_messages = !after && strcmp(k, "messages") == 0;
                json_t *v = NULL;
                if (!dup && eat(w, ':')) {
                        skip_blank(w);
                        v = is_messages && w->p < w->n && w->b[w->p] == '[' ? messages(w) : value(w, 1);
                }
                int r = v ? json_object_set_new(root, k, v) : -1;
                if (r == 0 && after)
                        r = json_object_set(w->out->rest, k, v);
                json_decref(key);
                if (r < 0)
                        goto fail;
                if (is_messages && json_is_array(v)) {
                        after = true;
                        w->out->rest_at = w->p;
                        if (same_rest(w, root))
                                return root;
                }
                if (eat(w, '}'))
                        break;
                if (!eat(w, ','))
                        goto fail;
        }
end:
        skip_blank(w);
        if (w->p == w->n)
                return root;
fail:
        json_decref(root);
        return NULL;
}

/* ---- the cache ---- */

static size_t same_bytes(const char *a, size_t an, const char *b, size_t bn) {
        size_t n = MIN(an, bn), i = 0;
        while (i + 64 <= n && memcmp(a + i, b + i, 64) == 0)
                i += 64;
        while (i < n && a[i] == b[i])
                i++;
        return i;
}

/* The kept body that begins with the most of body's bytes (none: NULL), held. */
static mb_snap *base_take(mock_body_cache *c, const char *body, size_t len, size_t *ret_same) {
        mb_snap *best = NULL;
        size_t best_same = 0;
        pthread_mutex_lock(&c->lock);
        for (size_t i = 0; i < MOCK_BODY_CACHE_SLOTS; i++) {
                mb_snap *s = c->slot[i];
                size_t n = s ? same_bytes(s->bytes, s->len, body, len) : 0;
                if (n > best_same) {
                        best = s;
                        best_same = n;
                }
        }
        if (best) {
                best->refs++;
                best->used = ++c->tick;
        }
        pthread_mutex_unlock(&c->lock);
        *ret_same = best_same;
        return best;
}

static size_t oldest(const mock_body_cache *c) { /* MOCK_BODY_CACHE_SLOTS: all empty */
        size_t at = MOCK_BODY_CACHE_SLOTS;
        for (size_t i = 0; i < MOCK_BODY_CACHE_SLOTS; i++)
                if (c->slot[i] && (at == MOCK_BODY_CACHE_SLOTS || c->slot[i]->used < c->slot[at]->used))
                        at = i;
        return at;
}

/* Let base go (NULL: none) and keep out (NULL: nothing): in base's slot when out continues base's
 * conversation (it begins with base's bytes up to the end of its messages) and the slot still
 * holds it, else in an empty one, else in the one least recently a base; the oldest others go
 * while the bodies are more than MOCK_BODY_CACHE_BYTES. */
static void base_put(mock_body_cache *c, mb_snap *base, size_t same, mb_snap *out) {
        mb_snap *gone[MOCK_BODY_CACHE_SLOTS + 2];
        size_t n_gone = 0;
        pthread_mutex_lock(&c->lock);
        if (base && --base->refs == 0)
                gone[n_gone++] = base;
        size_t at = MOCK_BODY_CACHE_SLOTS;
        for (size_t i = 0; out && i < MOCK_BODY_CACHE_SLOTS && at == MOCK_BODY_CACHE_SLOTS; i++)
                if (base && c->slot[i] == base && base->rest_at && same + 1 >= base->rest_at)
                        at = i;
        for (size_t i = 0; out && i < MOCK_BODY_CACHE_SLOTS && at == MOCK_BODY_CACHE_SLOTS; i++)
                if (!c->slot[i])
                        at = i;
        if (out && at == MOCK_BODY_CACHE_SLOTS)
                at = oldest(c);
        while (at < MOCK_BODY_CACHE_SLOTS) { /* slot at emptied for out */
                mb_snap *old = TAKE_PTR(c->slot[at]);
                if (old) {
                        c->bytes -= old->len;
                        if (--old->refs == 0)
                                gone[n_gone++] = old;
                }
                if (c->bytes + out->len <= MOCK_BODY_CACHE_BYTES) {
                        out->refs = 1;
                        out->used = ++c->tick;
                        c->slot[at] = TAKE_PTR(out);
                        c->bytes += c->slot[at]->len;
                        break;
                }
                size_t next = oldest(c);
                if (next < MOCK_BODY_CACHE_SLOTS) { /* the oldest goes too; out takes its slot */
                        at = next;
                        continue;
                }
                break;
        }
        if (out)
                gone[n_gone++] = out; /* not kept */
        pthread_mutex_unlock(&c->lock);
        for (size_t i = 0; i < n_gone; i++)
                snap_free(gone[i]);
}

void mock_body_parse(mock_body_cache *c, const char *body, size_t len, json_t **ret, size_t *ret_parsed) {
        size_t same = 0;
        bool fits = len <= MOCK_BODY_CACHE_BYTES; /* else not kept, nor compared with the kept ones */
        mb_snap *base = fits ? base_take(c, body, len, &same) : NULL;
        mb_snap *out = fits ? calloc(1, sizeof(*out)) : NULL;
        walk w = {.b = body, .n = len, .base = base, .same = same, .out = out};
        json_t *root = out ? walk_body(&w) : NULL;
        if (root && (out->bytes = malloc(len + 1))) {
                memcpy(out->bytes, body, len);
                out->len = len;
        } else {
                snap_free(TAKE_PTR(out));
                if (!root) { /* jansson on the whole: it accepts and refuses, and builds */
                        root = json_loadb(body, len, JSON_DECODE_ANY, NULL);
                        w.parsed += len;
                }
        }
        base_put(c, base, same, out);
        *ret = root;
        if (ret_parsed)
                *ret_parsed = w.parsed;
}
