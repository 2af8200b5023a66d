/* model-internal.h: the pure parts of the HTTP providers (no I/O, no clock), shared by
 * model-openai.c, model-anthropic.c, model-wire.c and model-http.c and reached by the unit tests
 * and fuzz targets: encoding a request, decoding a whole answer, assembling a streamed one from
 * its server-sent events, reading an API's error leniently and naming the failure, the retry
 * delay a server asks for. Not a public interface: model.h is. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dynbuf.h"
#include "model.h"
#include "sse.h"

/* What a request is encoded with, resolved from a model_config. */
typedef struct model_wire_cfg {
        model_api api;
        const char *model;
        bool compat;                /* OpenAI: role "system" and max_tokens (model.h) */
        bool stream;                /* ask for a streamed answer */
        uint32_t max_output_tokens; /* never 0 here */
        const char *effort;         /* model.h's; NULL: none sent */
        bool fast;                  /* Anthropic: speed "fast" */
        bool cache;                 /* Anthropic: cache_control on the system prompt and the last tool */
} model_wire_cfg;

/* The request's JSON body. Returns 0 with *ret (malloc'd, NUL-terminated) and *ret_len, -EINVAL
 * with *e when the conversation or the tools are not in model.h's form (naming the entry), or
 * -ENOMEM. */
int model_openai_encode(const model_wire_cfg *w, const model_request *r, char **ret, size_t *ret_len, hull_error *e);
int model_anthropic_encode(const model_wire_cfg *w, const model_request *r, char **ret, size_t *ret_len, hull_error *e);

/* ---- the body from its messages' wire JSON (model-cache.c) ---- */

/* The text bytes model_estimate_tokens counts in a JSON value (model.c). */
uint64_t model_json_text_bytes(const json_t *j);
/* model_json_text_bytes(messages), each message's taken from c where it holds it. */
uint64_t model_wire_cache_text_bytes(const model_wire_cache *c, const json_t *messages);

/* Append messages[i]'s wire messages (none, one or more) to msgs, its content being blocks.
 * Returns 0, -EINVAL with *e naming the block, -ENOMEM (without *e). */
typedef int (*model_encode_fn)(json_t *msgs, const json_t *blocks, size_t i, hull_error *e);

/* The request's body: head's members, "messages": [lead (NULL: none), each message's wire JSON],
 * then tail's members (either NULL: none), byte for byte what json_dumps(JSON_COMPACT) writes for
 * one object holding them in that order. A message's wire JSON is taken from c (NULL: none) where
 * it holds it (model.h), else made by user or assistant, and kept there. Returns 0 with *ret
 * (malloc'd, NUL-terminated) and *ret_len, or the encoder's error with *e. */
int model_wire_body(model_wire_cache *c, model_api api, const json_t *head, const json_t *lead, const json_t *messages,
                    model_encode_fn user, model_encode_fn assistant, const json_t *tail, char **ret, size_t *ret_len,
                    hull_error *e);

/* An error an API reported, in an error answer's body, a 200's body or a stream's error event. */
typedef struct model_api_error {
        char type[MODEL_SHORT_STR_MAX];      /* error.type ("invalid_request_error"), "" */
        char code[MODEL_SHORT_STR_MAX];      /* error.code as text (a string or a number), "" */
        char message[MODEL_ERROR_QUOTE_MAX]; /* one line, bounded; the body's first bytes when no envelope */
        long numeric_code;                   /* error.code when it is a number (llama.cpp: 400), else 0 */
        bool spend_limit;                    /* Anthropic's details.error_code enforced_spend_limit_reached */
} model_api_error;

/* Read an error leniently (model-apis.md §3): {"error":{...}} with "code" a string, a number or
 * null; {"error":"text"}; {"type":"error","error":{...}} (Anthropic); the flat vLLM
 * {"object":"error","message":...}; FastAPI's {"detail":...}. Returns true with *ret when j holds
 * an error in one of these shapes, false otherwise (*ret untouched). */
bool model_error_from_json(const json_t *j, model_api_error *ret);
/* The same over a body's bytes; when they hold no known shape (not JSON: a proxy's HTML, plain
 * text, nothing), *ret's message is their first bytes, made one printable line, and it returns
 * false. Never fails. */
bool model_error_parse(const char *body, size_t len, model_api_error *ret);

/* What kind of failure an error is: by the HTTP status (a 2xx one, as for an error inside a 200 or
 * a stream, falls back on a numeric code, then on the error's type), with context overflow
 * (context_length_exceeded, llama.cpp's exceed_context_size_error, "prompt is too long", "context
 * size", "maximum context length", ...) and billing (insufficient_quota, billing_error,
 * enforced_spend_limit_reached) told apart. */
model_fail model_error_kind(long status, const model_api_error *err);

/* Whether a failure may be retried (before anything was handed on): rate limits, overload,
 * server errors, 408 and 409, timeouts other than the caller's deadline, a cut stream, no
 * connection. */
bool model_fail_retryable(model_fail kind, long status);

/* The delay a server asks for before a retry, from its retry-after-ms (float milliseconds) and
 * retry-after (float seconds or an HTTP date, compared with now_unix_s) headers, either NULL.
 * Returns true with *ret_ms when one holds a delay within [0, MODEL_RETRY_AFTER_MAX_MS] (for
 * Anthropic, a delay of 0 counts as none, as its SDK has it); false: use the backoff. */
bool model_retry_after(model_api api, const char *retry_after_ms, const char *retry_after, int64_t now_unix_s,
                       uint64_t *ret_ms);

/* The backoff before retry n (1, 2, ...): 0.5 s * 2^(n-1) up to 8 s, less up to 25 % by jitter
 * (a random value in [0, 1)). */
uint64_t model_backoff_ms(unsigned n, double jitter);

/* Decode a whole (non-streamed) answer. Returns 0 with *ret (message, stop, usage, model; the
 * caller fills request_id and attempts), -EBADMSG when the body is an error object (in *ret_err),
 * -EPROTO when it is not the API's format (*e says what is wrong: "not JSON", "no choices"), or
 * -ENOMEM. */
int model_openai_decode(const char *body, size_t len, model_response *ret, model_api_error *ret_err, hull_error *e);
int model_anthropic_decode(const char *body, size_t len, model_response *ret, model_api_error *ret_err, hull_error *e);

/* A streamed answer being assembled from its events (either API). */
typedef struct model_stream model_stream;

/* Returns 0 with *ret, or -ENOMEM. */
int model_stream_new(model_api api, model_stream **ret);
void model_stream_free(model_stream *s);
static inline void model_stream_freep(model_stream **s) {
        if (*s)
                model_stream_free(*s);
}
#define _cleanup_model_stream_ _cleanup_(model_stream_freep)

/* Take one decoded event; text deltas go to o->on_text and the start of each tool call to
 * o->on_tool_use as they come (o may be NULL). Returns 0 to go on, 1 when it was the stream's end
 * marker (OpenAI's [DONE], Anthropic's message_stop; later events are ignored), -EBADMSG when
 * the event is an error from the API (model_stream_error says which), -EPROTO when it is not the
 * API's format (*e says what), -E2BIG (over a bound), -ENOMEM, or a callback's own error. */
int model_stream_event(model_stream *s, const sse_event *ev, const model_call_opts *o, hull_error *e);

/* The stream ended (its connection closed cleanly). Returns 0 with *ret when the answer is
 * complete (OpenAI: [DONE], or a finish_reason with the end right after it; Anthropic:
 * message_stop), -EPIPE when it was cut before that (*e says where), -ENOMEM. */
int model_stream_finish(model_stream *s, model_response *ret, hull_error *e);

/* Whether text or a tool call was handed to the callbacks (a retry would repeat them). */
bool model_stream_handed_on(const model_stream *s);
/* The error of the event that returned -EBADMSG. */
const model_api_error *model_stream_error(const model_stream *s);
/* Events taken so far. */
unsigned long model_stream_events(const model_stream *s);

/* ---- helpers the two APIs share (model-wire.c) ---- */

/* Copy at most size - 1 bytes of s[0..len) into buf as one printable line: control bytes become
 * spaces, a cut never splits a UTF-8 sequence, "..." marks a cut. */
void model_quote(char *buf, size_t size, const char *s, size_t len);

/* A tool call's arguments (a JSON text) as its input object: "" or blanks is {}; a JSON object
 * is itself; anything else gives {} and *ret_error (malloc'd) saying what was wrong, for the loop
 * to tell the model. Returns 0 with *ret (new reference), or -ENOMEM. */
int model_parse_arguments(const char *args, size_t len, json_t **ret, char **ret_error);

/* A neutral tool_use block. arguments (may be NULL) is kept as "arguments" (OpenAI's string, echoed
 * byte for byte). NULL when out of memory. */
json_t *model_tool_use_block(const char *id, const char *name, const char *args, size_t args_len, bool keep_args);

/* Set a fixed-size string from a JSON string value (anything else leaves it as is). */
void model_set_str(char *buf, size_t size, const json_t *v);

/* A JSON integer >= 0 as a token count; false when v is not one. */
bool model_json_count(const json_t *v, uint64_t *ret);

/* Reading the neutral conversation (model.h): each message's role and blocks, checked. */
typedef enum model_role {
        MODEL_ROLE_USER,
        MODEL_ROLE_ASSISTANT,
} model_role;

/* messages[i]: its role and its content as an array of blocks (a string content is taken as one
 * text block: *ret_owned then holds the array made for it, which the caller releases). Returns 0,
 * or -EINVAL with *e naming the message. */
int model_message_blocks(const json_t *messages, size_t i, model_role *ret_role, const json_t **ret_blocks,
                         json_t **ret_owned, hull_error *e);

/* A block's type, checked against the role: "text", "tool_use" (assistant), "tool_result" (user),
 * "opaque". Returns the type (a static string) or NULL with *e naming messages[i].content[k]. */
const char *model_block_type(const json_t *block, model_role role, size_t i, size_t k, hull_error *e);

/* ---- the stream assemblers behind model_stream (model-openai.c, model-anthropic.c) ---- */

typedef struct model_stream_ops {
        void *(*new_state)(void); /* NULL when out of memory */
        void (*free_state)(void *st);
        /* As model_stream_event (never called after the end marker). */
        int (*event)(model_stream *s, const sse_event *ev, const model_call_opts *o, hull_error *e);
        /* As model_stream_finish. */
        int (*finish)(model_stream *s, model_response *ret, hull_error *e);
} model_stream_ops;

extern const model_stream_ops model_openai_stream_ops;
extern const model_stream_ops model_anthropic_stream_ops;

struct model_stream {
        const model_stream_ops *ops;
        void *st;             /* the API's own state */
        bool done;            /* the end marker came */
        bool handed_on;       /* text or a call went to the callbacks */
        unsigned long events; /* events taken */
        model_api_error error;
};

/* Hand text, or the start of a call, to the caller (o may be NULL; empty text is not handed on).
 * Returns 0 or the callback's error. */
int model_stream_text(model_stream *s, const model_call_opts *o, const char *p, size_t n);
int model_stream_tool(model_stream *s, const model_call_opts *o, const char *id, const char *name);
