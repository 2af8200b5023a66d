/* model.h: language-model providers behind one interface. Two wire formats: OpenAI Chat
 * Completions (OpenAI, Azure OpenAI, DeepSeek, vLLM, llama.cpp's server, Ollama, ...) and the
 * Anthropic Messages API; both with tool calling, streamed (server-sent events, decoded by the
 * pure src/shared/sse decoder) or not. What is sent and what is tolerated follow
 * ../shared/reference/model-apis.md, its robust-parsing checklist (§3) and the deviations of
 * OpenAI-compatible servers (§1.8) included.
 *
 * The conversation is kept in one provider-neutral form, JSON (jansson), so that a run's
 * transcript, `hull chat`'s resume and the /v1 API store the same thing whatever the model:
 *
 *   messages := [ message, ... ]            (turns alternate user / assistant)
 *   message  := {"role":"user"|"assistant", "content":[ block, ... ]}
 *   block    := {"type":"text", "text":S}
 *             | {"type":"tool_use", "id":S, "name":S, "input":OBJECT,          (assistant only)
 *                "arguments":S?,        OpenAI: the arguments string exactly as received,
 *                                       echoed byte for byte (absent: input serialized)
 *                "input_error":S?}      the model's arguments were not a JSON object: input is
 *                                       {} and the loop answers the call with this error
 *             | {"type":"tool_result", "tool_use_id":S, "content":S, "is_error":B}   (user only;
 *                                       a user message holding results holds them first)
 *             | {"type":"opaque", "api":"anthropic"|"openai", "block":ANY}
 *                                       a block hull does not use (thinking, redacted_thinking,
 *                                       server tools), kept to echo back to the API that made it
 *                                       and dropped for the other
 * Fields named "hull_*" may be added to any block (a tool result's short form for the context
 * budget, say); encoders send only the fields above.
 *
 * A model call is blocking and single-threaded per client; another thread (or a signal handler)
 * cancels it through an atomic flag. Retries (408, 409, 429, >= 500 and connection errors, at
 * most max_retries, honouring retry-after-ms / retry-after / x-should-retry, backoff 0.5 s * 2^n
 * up to 8 s with jitter) happen inside model_call, never once streamed content was handed on;
 * each retry is announced through on_retry. Nothing here prints. */
#pragma once

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "limits.h"

typedef enum model_api {
        MODEL_API_OPENAI,    /* POST {base_url}/chat/completions; base_url ends in /v1 */
        MODEL_API_ANTHROPIC, /* POST {base_url}/v1/messages; base_url has no /v1 */
        _MODEL_API_MAX,
} model_api;

const char *model_api_to_string(model_api a); /* "openai", "anthropic" */
int model_api_from_string(const char *s);     /* a model_api, or -EINVAL */

typedef struct model_config {
        model_api api;
        const char *base_url;       /* NULL: https://api.openai.com/v1 or https://api.anthropic.com */
        const char *api_key;        /* NULL or "": no credential header (local servers) */
        const char *model;          /* required: sent as is */
        const char *const *headers; /* extra "Name: value" lines (Azure's api-key, gateways), NULL-ended */
        size_t n_headers;
        /* An OpenAI-compatible server rather than api.openai.com: the system prompt goes as role
         * "system" (not "developer") and the output cap as max_tokens (not max_completion_tokens).
         * Default: true unless base_url's host is api.openai.com. */
        int compat;                    /* -1: decide from base_url, 0, 1 */
        bool stream;                   /* stream answers (the default in hull run) */
        uint32_t max_output_tokens;    /* 0: MODEL_MAX_OUTPUT_TOKENS_DEFAULT */
        const char *anthropic_version; /* NULL: "2023-06-01" */
        uint64_t request_timeout_ms;   /* one HTTP exchange; 0: MODEL_REQUEST_TIMEOUT_MS */
        uint64_t idle_timeout_ms;      /* a stream silent this long is cut; 0: MODEL_IDLE_TIMEOUT_MS */
        uint64_t connect_timeout_ms;   /* 0: MODEL_CONNECT_TIMEOUT_MS */
        unsigned max_retries;          /* retries after the first try (0: none); MODEL_RETRIES_DEFAULT is 2 */
        /* The model object's effort ("low", "medium", "high", "xhigh", "max"; NULL: the API's
         * default): Anthropic's output_config.effort, OpenAI's reasoning_effort (xhigh and max as
         * "high"). fast (speed "fast"): Anthropic's speed "fast"; other APIs have none. */
        const char *effort;
        bool fast;
        /* Anthropic: no cache_control on the system prompt and the tools (prompt caching is on by
         * default: the breakpoints are free, a repeated prefix is read from the cache). */
        bool no_prompt_cache;
} model_config;

/* What went wrong with a model call, as a loop or a user needs to know it. */
typedef enum model_fail {
        MODEL_FAIL_NONE,
        MODEL_FAIL_AUTH,         /* 401, 403: the key is wrong or lacks permission */
        MODEL_FAIL_NOT_FOUND,    /* 404: unknown model or wrong base URL */
        MODEL_FAIL_CONTEXT,      /* the prompt is over the model's context window */
        MODEL_FAIL_BAD_REQUEST,  /* another 400/422: what hull sent was refused */
        MODEL_FAIL_RATE_LIMITED, /* 429 (after the retries) */
        MODEL_FAIL_OVERLOADED,   /* 529, 503 (after the retries) */
        MODEL_FAIL_SERVER,       /* other >= 500 (after the retries) */
        MODEL_FAIL_BILLING,      /* 402, insufficient_quota, enforced_spend_limit_reached */
        MODEL_FAIL_UNREACHABLE,  /* no connection: refused, unresolved, TLS */
        MODEL_FAIL_TIMEOUT,      /* the request's, the stream's idle or the caller's deadline */
        MODEL_FAIL_TRUNCATED,    /* the stream ended before its end marker */
        MODEL_FAIL_MALFORMED,    /* an answer that is not the wire format (not JSON, wrong shape) */
        MODEL_FAIL_CANCELED,     /* *cancel was set */
        _MODEL_FAIL_MAX,
} model_fail;

const char *model_fail_to_string(model_fail f); /* "auth", "not_found", "context", ... */

typedef struct model_failure {
        model_fail kind;
        long status;                           /* the HTTP status, 0 when none came */
        unsigned attempts;                     /* requests made */
        char request_id[MODEL_REQUEST_ID_MAX]; /* x-request-id / request-id, "" when none */
        char api_type[MODEL_SHORT_STR_MAX];    /* the API's error type/code ("invalid_request_error"), "" */
} model_failure;

/* In Anthropic's terms for both APIs: input_tokens are those not read from or written to the
 * prompt cache (OpenAI's prompt_tokens less its cached_tokens, which are cache_read); the whole
 * prompt is input + cache_read + cache_creation. */
typedef struct model_usage {
        bool known; /* the API reported usage */
        uint64_t input_tokens, output_tokens;
        uint64_t cache_read_input_tokens, cache_creation_input_tokens;
} model_usage;

typedef enum model_stop {
        MODEL_STOP_END,        /* end_turn, stop, stop_sequence */
        MODEL_STOP_TOOL_USE,   /* tool calls present (whatever finish_reason said) */
        MODEL_STOP_MAX_TOKENS, /* length, max_tokens: the last block may be cut */
        MODEL_STOP_REFUSAL,    /* refusal, content_filter */
        MODEL_STOP_PAUSE,      /* pause_turn: send the assistant turn back to continue */
        MODEL_STOP_OTHER,      /* an unknown reason (stop_raw says which) */
        _MODEL_STOP_MAX,
} model_stop;

/* The wire JSON of a conversation's messages, kept from one request to the next so that a call
 * encodes only what is new (a conversation only grows at its end). An entry is reused while
 * messages[i] is the very message it was made from (held by a reference, so the pointer cannot
 * be another's), still has as many blocks, and was not the last message then (the last may still
 * be extended in place). Whoever changes an earlier message in place calls
 * model_wire_cache_forget. One per conversation, used by one thread at a time. */
typedef struct model_wire_cache model_wire_cache;
/* Returns 0 with *ret, or -ENOMEM. */
int model_wire_cache_new(model_wire_cache **ret);
void model_wire_cache_free(model_wire_cache *c); /* NULL: nothing */
void model_wire_cache_forget(model_wire_cache *c);
/* How many messages were encoded (not taken from the cache) since the cache was made: what the
 * tests count. */
uint64_t model_wire_cache_encoded(const model_wire_cache *c);
/* The conversation's JSON text as json_dumps(messages, JSON_COMPACT) writes it, from a cache of
 * its messages' text (c: one of its own, not a request's, reused in the same way). Returns 0 with
 * *ret (malloc'd, NUL-terminated) and *ret_len, -E2BIG, or -ENOMEM. */
int model_conversation_text(model_wire_cache *c, const json_t *messages, char **ret, size_t *ret_len);

typedef struct model_request {
        const char *system;      /* hull's manual and the user's instructions; NULL: none */
        const json_t *messages;  /* the conversation (above), at least one user message */
        const json_t *tools;     /* [{"name","description","input_schema"}], NULL or []: none */
        model_wire_cache *cache; /* the messages' wire JSON from earlier requests; NULL: encode all */
} model_request;

typedef struct model_response {
        json_t *message; /* {"role":"assistant","content":[...]} in the neutral form */
        model_stop stop;
        char stop_raw[MODEL_SHORT_STR_MAX]; /* as the API said it */
        model_usage usage;
        char request_id[MODEL_REQUEST_ID_MAX];
        char model[MODEL_SHORT_STR_MAX]; /* the model that answered, as the API named it */
        unsigned attempts;
} model_response;
void model_response_done(model_response *r);

typedef struct model_call_opts {
        const atomic_bool *cancel; /* set by another thread: the call ends with MODEL_FAIL_CANCELED */
        uint64_t deadline_mono_ms; /* now_mono_ms() by which the call, retries included, must end; 0: none */
        /* Streamed answers, as they come (all optional; never called for a non-streamed request;
         * a streaming request answered with one JSON document gets its text and calls once, at
         * the end). A callback returning a negative errno stops the call with it (no retry). */
        int (*on_text)(void *ud, const char *text, size_t len);
        int (*on_tool_use)(void *ud, const char *id, const char *name); /* a call starts */
        /* Before each retry: the failure that caused it and the wait. */
        void (*on_retry)(void *ud, unsigned attempt, uint64_t delay_ms, const model_failure *f, const char *msg);
        void *ud;
} model_call_opts;

typedef struct model_client model_client;

/* A provider implementation, for model_client_wrap (tests, and later providers). */
typedef struct model_ops {
        int (*call)(void *impl, const model_request *r, const model_call_opts *o, model_response *ret,
                    model_failure *ret_fail, hull_error *e);
        void (*free)(void *impl);
} model_ops;

/* A client for cfg (copied). Returns 0 with *ret, -EINVAL (a missing model, a base URL that is
 * not http(s)), -ENOENT (libcurl cannot be loaded), -ENOMEM, with *e. */
int model_client_new(const model_config *cfg, model_client **ret, hull_error *e);
/* A client over another implementation (impl is freed with ops->free by model_client_free). */
int model_client_wrap(const model_ops *ops, void *impl, model_client **ret);
void model_client_free(model_client *c);
static inline void model_client_freep(model_client **c) {
        if (*c)
                model_client_free(*c);
}
#define _cleanup_model_client_ _cleanup_(model_client_freep)

/* One model request (with its retries). Returns 0 with *ret (model_response_done), or a negative
 * errno with *ret_fail saying what kind of failure and *e one line for the user, e.g.
 *   "model: anthropic refused the API key (401 authentication_error: invalid x-api-key; set
 *    ANTHROPIC_API_KEY or --api-key) [request req_01]"
 *   "model: the prompt is over the model's context window (400: prompt is too long: ...)"
 *   "model: http://127.0.0.1:9/v1 is unreachable: connection refused (is the server running?)"
 * -ECANCELED, -ETIMEDOUT, -ECONNREFUSED, -EPROTO (malformed or cut answer), -EACCES (auth),
 * -ENOENT (not found), -E2BIG (context), -EAGAIN (rate limited, overloaded after retries),
 * -EIO (server), -EINVAL (request refused, or a conversation not in the neutral form), -EDQUOT
 * (billing), -ENOMEM, or a callback's own error. */
int model_call(model_client *c, const model_request *r, const model_call_opts *o, model_response *ret,
               model_failure *ret_fail, hull_error *e);

/* Rough token estimate of a request's text (bytes / 4 and a per-message overhead): the loop's
 * context budget uses it where the API's own count of the last request is not known. */
uint64_t model_estimate_tokens(const model_request *r);
