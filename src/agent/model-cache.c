/* model-cache.c: a request's body put together from its messages' wire JSON, kept from one
 * request to the next (model.h's model_wire_cache), so that a call of a long conversation encodes
 * only its new messages. The bytes are those json_dumps(JSON_COMPACT) writes for the whole body
 * built as one tree (the encoders' path without a cache; the unit tests compare both). Pure. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"
#include "macro.h"
#include "model-internal.h"

typedef struct wire_entry {
        json_t *msg;    /* the message it was made from (a reference) */
        size_t blocks;  /* its content's blocks then */
        uint64_t bytes; /* model_json_text_bytes of it */
        char *wire;     /* its wire messages, comma-joined, without brackets; NULL when none */
        size_t len;
} wire_entry;

struct model_wire_cache {
        model_api api;
        wire_entry *e;
        size_t n, cap;
        uint64_t encoded;
};

int model_wire_cache_new(model_wire_cache **ret) {
        model_wire_cache *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

/* Drop the entries from i on. */
static void cache_cut(model_wire_cache *c, size_t i) {
        for (size_t k = i; k < c->n; k++) {
                json_decref(c->e[k].msg);
                free(c->e[k].wire);
        }
        c->n = MIN(c->n, i);
}

void model_wire_cache_forget(model_wire_cache *c) {
        if (c)
                cache_cut(c, 0);
}

void model_wire_cache_free(model_wire_cache *c) {
        if (!c)
                return;
        cache_cut(c, 0);
        free(c->e);
        free(c);
}

uint64_t model_wire_cache_encoded(const model_wire_cache *c) {
        return c ? c->encoded : 0;
}

static size_t blocks_of(const json_t *m) {
        const json_t *content = json_object_get(m, "content");
        return json_is_array(content) ? json_array_size(content) : 0;
}

/* messages[i]'s wire messages as JSON text, comma-joined without the array's brackets (*ret NULL
 * when it has none); user NULL: the message itself, as it is. */
static int encode_one(const json_t *messages, size_t i, model_encode_fn user, model_encode_fn assistant, char **ret,
                      size_t *ret_len, hull_error *e) {
        _cleanup_(json_decrefp) json_t *owned = NULL, *tmp = json_array();
        const json_t *blocks;
        model_role role;
        int k;

        if (!tmp)
                return -ENOMEM;
        if (!user) {
                *ret = json_dumps(json_array_get(messages, i), JSON_COMPACT | JSON_ENCODE_ANY);
                *ret_len = *ret ? strlen(*ret) : 0;
                return *ret ? 0 : -ENOMEM;
        }
        k = model_message_blocks(messages, i, &role, &blocks, &owned, e);
        if (k == 0)
                k = role == MODEL_ROLE_USER ? user(tmp, blocks, i, e) : assistant(tmp, blocks, i, e);
        if (k < 0)
                return k;
        if (json_array_size(tmp) == 0) {
                *ret = NULL;
                *ret_len = 0;
                return 0;
        }
        char *s = json_dumps(tmp, JSON_COMPACT);
        if (!s)
                return -ENOMEM;
        size_t len = strlen(s); /* "[...]": the brackets off */
        memmove(s, s + 1, len - 2);
        s[len - 2] = '\0';
        *ret = s;
        *ret_len = len - 2;
        return 0;
}

/* Entry i of c: taken as it is when it was made from messages[i] as it is now, else encoded. */
static int entry_at(model_wire_cache *c, const json_t *messages, size_t i, model_encode_fn user,
                    model_encode_fn assistant, const wire_entry **ret, wire_entry *scratch, hull_error *e) {
        json_t *m = json_array_get(messages, i);
        size_t n = json_array_size(messages);
        int k;

        if (c && i < c->n && c->e[i].msg == m && c->e[i].blocks == blocks_of(m)) {
                *ret = &c->e[i];
                return 0;
        }
        if (c)
                cache_cut(c, i); /* a changed message: what follows it was made after it */
        *scratch = (wire_entry){.msg = m, .blocks = blocks_of(m), .bytes = model_json_text_bytes(m)};
        k = encode_one(messages, i, user, assistant, &scratch->wire, &scratch->len, e);
        if (k < 0)
                return k;
        if (c) {
                c->encoded++;
                /* The last message may still grow in place (the user's text after results, an
                 * answer continued after a pause): kept only once another follows it. */
                if (i + 1 < n && c->n == i) {
                        if (c->n == c->cap) {
                                size_t cap = c->cap ? c->cap * 2 : 64;
                                wire_entry *grown = reallocarray(c->e, cap, sizeof(*grown));
                                if (!grown) {
                                        free(scratch->wire);
                                        return -ENOMEM;
                                }
                                c->e = grown;
                                c->cap = cap;
                        }
                        scratch->msg = json_incref(m);
                        c->e[c->n++] = *scratch;
                        *scratch = (wire_entry){0};
                        *ret = &c->e[i];
                        return 0;
                }
        }
        *ret = scratch;
        return 0;
}

/* "{a,b}" as its members "a,b" after a comma, or nothing when it has none; the closing brace
 * kept when keep_close. */
static int add_members(dynbuf *b, const json_t *o, bool keep_close) {
        if (!o || json_object_size(o) == 0)
                return keep_close ? dynbuf_add(b, "}", 1) : 0;
        _cleanup_free_ char *s = json_dumps(o, JSON_COMPACT);
        if (!s)
                return -ENOMEM;
        size_t len = strlen(s);
        if (!keep_close)
                return dynbuf_add(b, s, len - 1); /* "{...": the opening brace is the body's */
        return dynbuf_add(b, ",", 1) < 0 ? -ENOMEM : dynbuf_add(b, s + 1, len - 1);
}

uint64_t model_wire_cache_text_bytes(const model_wire_cache *c, const json_t *messages) {
        uint64_t n = 0;
        size_t i;
        json_t *m;
        json_array_foreach(messages, i, m) {
                bool kept = i < c->n && c->e[i].msg == m && c->e[i].blocks == blocks_of(m);
                n += 1 + (kept ? c->e[i].bytes : model_json_text_bytes(m));
        }
        return n;
}

int model_conversation_text(model_wire_cache *c, const json_t *messages, char **ret, size_t *ret_len) {
        _cleanup_(dynbuf_freep) dynbuf b;
        size_t n = json_array_size(messages);
        int k;

        dynbuf_init(&b, MODEL_REQUEST_BODY_MAX);
        if (c->api != _MODEL_API_MAX) {
                cache_cut(c, 0);
                c->api = _MODEL_API_MAX; /* the neutral form's text */
        }
        k = dynbuf_add(&b, "[", 1);
        for (size_t i = 0; k >= 0 && i < n; i++) {
                wire_entry scratch = {0};
                const wire_entry *w = NULL;
                k = entry_at(c, messages, i, NULL, NULL, &w, &scratch, NULL);
                if (k >= 0 && i > 0)
                        k = dynbuf_add(&b, ",", 1);
                if (k >= 0)
                        k = dynbuf_add(&b, w->wire, w->len);
                free(scratch.wire);
        }
        if (k >= 0)
                k = dynbuf_add(&b, "]", 1);
        if (k < 0)
                return k;
        *ret = dynbuf_take(&b, ret_len);
        return *ret ? 0 : -ENOMEM;
}

int model_wire_body(model_wire_cache *c, model_api api, const json_t *head, const json_t *lead, const json_t *messages,
                    model_encode_fn user, model_encode_fn assistant, const json_t *tail, char **ret, size_t *ret_len,
                    hull_error *e) {
        _cleanup_(dynbuf_freep) dynbuf b;
        size_t n = json_array_size(messages);
        bool first = true;
        int k;

        dynbuf_init(&b, MODEL_REQUEST_BODY_MAX);
        if (c && c->api != api) {
                cache_cut(c, 0);
                c->api = api;
        }
        k = add_members(&b, head, false);
        if (k >= 0)
                k = dynbuf_add_str(&b, json_object_size(head) ? ",\"messages\":[" : "{\"messages\":[");
        if (k >= 0 && lead) {
                _cleanup_free_ char *s = json_dumps(lead, JSON_COMPACT);
                k = s ? dynbuf_add_str(&b, s) : -ENOMEM;
                first = false;
        }
        for (size_t i = 0; k >= 0 && i < n; i++) {
                wire_entry scratch = {0};
                const wire_entry *w = NULL;
                k = entry_at(c, messages, i, user, assistant, &w, &scratch, e);
                if (k < 0)
                        return k == -ENOMEM ? hull_fail(e, k, "model: out of memory") : k;
                if (w->wire) {
                        k = first ? 0 : dynbuf_add(&b, ",", 1);
                        if (k >= 0)
                                k = dynbuf_add(&b, w->wire, w->len);
                        first = false;
                }
                free(scratch.wire);
        }
        if (k >= 0)
                k = dynbuf_add(&b, "]", 1);
        if (k >= 0)
                k = add_members(&b, tail, true);
        if (k == -ENOMEM || k == -E2BIG)
                return hull_fail(e, k, k == -E2BIG ? "model: the request is too large" : "model: out of memory");
        if (k < 0)
                return k;
        *ret = dynbuf_take(&b, ret_len);
        return *ret ? 0 : hull_fail(e, -ENOMEM, "model: out of memory");
}
