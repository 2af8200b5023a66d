/* model.c: what every provider shares: the client shell over an implementation, the names of
 * the enums, and the token estimate. The HTTP providers are in model-http.c (model_client_new). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "model-internal.h"
#include "model.h"

struct model_client {
        const model_ops *ops;
        void *impl;
};

static const char *const api_names[_MODEL_API_MAX] = {
        [MODEL_API_OPENAI] = "openai",
        [MODEL_API_ANTHROPIC] = "anthropic",
};

const char *model_api_to_string(model_api a) {
        return a < _MODEL_API_MAX ? api_names[a] : "unknown";
}

int model_api_from_string(const char *s) {
        for (int a = 0; s && a < _MODEL_API_MAX; a++)
                if (strcmp(s, api_names[a]) == 0)
                        return a;
        return -EINVAL;
}

static const char *const fail_names[_MODEL_FAIL_MAX] = {
        [MODEL_FAIL_NONE] = "none",
        [MODEL_FAIL_AUTH] = "auth",
        [MODEL_FAIL_NOT_FOUND] = "not_found",
        [MODEL_FAIL_CONTEXT] = "context",
        [MODEL_FAIL_BAD_REQUEST] = "bad_request",
        [MODEL_FAIL_RATE_LIMITED] = "rate_limited",
        [MODEL_FAIL_OVERLOADED] = "overloaded",
        [MODEL_FAIL_SERVER] = "server",
        [MODEL_FAIL_BILLING] = "billing",
        [MODEL_FAIL_UNREACHABLE] = "unreachable",
        [MODEL_FAIL_TIMEOUT] = "timeout",
        [MODEL_FAIL_TRUNCATED] = "truncated",
        [MODEL_FAIL_MALFORMED] = "malformed",
        [MODEL_FAIL_CANCELED] = "canceled",
};

const char *model_fail_to_string(model_fail f) {
        return f < _MODEL_FAIL_MAX ? fail_names[f] : "unknown";
}

void model_response_done(model_response *r) {
        if (!r)
                return;
        json_decref(r->message);
        r->message = NULL;
}

int model_client_wrap(const model_ops *ops, void *impl, model_client **ret) {
        model_client *c;

        if (!ops || !ops->call || !ret)
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->ops = ops;
        c->impl = impl;
        *ret = c;
        return 0;
}

void model_client_free(model_client *c) {
        if (!c)
                return;
        if (c->ops->free)
                c->ops->free(c->impl);
        free(c);
}

int model_call(model_client *c, const model_request *r, const model_call_opts *o, model_response *ret,
               model_failure *ret_fail, hull_error *e) {
        static const model_call_opts none = {0};
        model_failure fail = {0};
        int k;

        if (!c || !r || !ret)
                return hull_fail(e, -EINVAL, "model: internal error: a call without a client or a request");
        k = c->ops->call(c->impl, r, o ? o : &none, ret, &fail, e);
        if (ret_fail)
                *ret_fail = fail;
        return k;
}

/* About 4 bytes a token for English and code, and a few tokens of framing per message. */
uint64_t model_json_text_bytes(const json_t *j) {
        uint64_t n = 0;
        const char *key;
        const json_t *v;
        size_t i;

        switch (json_typeof(j)) {
        case JSON_STRING:
                return json_string_length(j);
        case JSON_OBJECT:
                json_object_foreach((json_t *) j, key, v) n += strlen(key) + 2 + model_json_text_bytes(v);
                return n;
        case JSON_ARRAY:
                json_array_foreach(j, i, v) n += 1 + model_json_text_bytes(v);
                return n;
        case JSON_INTEGER:
        case JSON_REAL:
        case JSON_TRUE:
        case JSON_FALSE:
        case JSON_NULL:
                return 4;
        }
        return 0;
}

uint64_t model_estimate_tokens(const model_request *r) {
        uint64_t bytes = 0, messages = 0;

        if (!r)
                return 0;
        if (r->system)
                bytes += strlen(r->system);
        if (r->messages) { /* (each message's from the cache where it holds it) */
                bytes += r->cache ? model_wire_cache_text_bytes(r->cache, r->messages)
                                  : model_json_text_bytes(r->messages);
                messages = json_array_size(r->messages);
        }
        if (r->tools)
                bytes += model_json_text_bytes(r->tools);
        return (bytes + 3) / 4 + 4 * messages;
}
