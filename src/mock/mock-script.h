/* mock-script.h: hull mock-model's script (docs/MOCK-MODEL.md) and its answers. A script is a
 * list of steps, each answering one model request (or several: "times"): text, tool calls, an
 * HTTP error, a broken stream, the quirks of OpenAI-compatible servers. mock_script_parse() checks
 * and parses it (pure, fuzzed); mock_render() turns one step into the bytes of an answer in one
 * of two wire formats, OpenAI Chat Completions or Anthropic Messages, whole or as server-sent
 * events (pure): the server (mock-model.c) only sends them, paced as the step says. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "limits.h"

typedef enum mock_api {
        MOCK_API_OPENAI,    /* POST /v1/chat/completions */
        MOCK_API_ANTHROPIC, /* POST /v1/messages */
} mock_api;

/* An error in words each API has its own for. */
typedef enum mock_error_kind {
        MOCK_ERR_BAD_REQUEST,      /* 400 */
        MOCK_ERR_CONTEXT_OVERFLOW, /* 400: context_length_exceeded, "prompt is too long" */
        MOCK_ERR_AUTH,             /* 401 */
        MOCK_ERR_PERMISSION,       /* 403 */
        MOCK_ERR_NOT_FOUND,        /* 404: model_not_found, not_found_error */
        MOCK_ERR_RATE_LIMIT,       /* 429 */
        MOCK_ERR_QUOTA,            /* 429 insufficient_quota */
        MOCK_ERR_SERVER,           /* 500 */
        MOCK_ERR_OVERLOADED,       /* 529 (overloaded_error) */
        MOCK_ERR_TIMEOUT,          /* 504 */
        _MOCK_ERR_MAX,
} mock_error_kind;

/* How an event stream is cut into writes. */
typedef enum mock_writes {
        MOCK_WRITES_EVENT,  /* one write per event */
        MOCK_WRITES_BYTES,  /* pieces of write_bytes bytes (1: every byte alone) */
        MOCK_WRITES_UTF8,   /* a cut inside every multi-byte UTF-8 character */
        MOCK_WRITES_CRLF,   /* a cut between every CR and its LF */
        MOCK_WRITES_ESCAPE, /* a cut after every backslash (inside JSON escapes) */
} mock_writes;

typedef enum mock_eol {
        MOCK_EOL_LF,
        MOCK_EOL_CRLF,
        MOCK_EOL_CR,
} mock_eol;

/* What OpenAI-compatible servers do differently (model-apis.md §1.8), for OpenAI streams. */
enum {
        MOCK_QUIRK_USAGE_EVERY_CHUNK = 1U << 0, /* the usage on every chunk (vLLM) */
        MOCK_QUIRK_USAGE_ON_FINISH = 1U << 1,   /* the usage on the finish chunk, no usage chunk (llama.cpp) */
        MOCK_QUIRK_NO_USAGE_CHUNK = 1U << 2,    /* no usage chunk, whatever include_usage says */
        MOCK_QUIRK_NO_INDEX = 1U << 3,          /* tool-call fragments without index (old Ollama) */
        MOCK_QUIRK_REUSE_INDEX = 1U << 4,       /* every call at index 0, each with its own id (Ollama) */
        MOCK_QUIRK_ONE_PIECE_CALLS = 1U << 5,   /* each call whole in one fragment */
        MOCK_QUIRK_NO_TYPE = 1U << 6,           /* the first fragment of a call without type */
};

typedef struct mock_strs {
        char **v;
        size_t n;
} mock_strs;

typedef struct mock_call {
        char *id; /* NULL: made up (call_..., toolu_...) */
        char *name;
        char *arguments;  /* the input's JSON text (OpenAI's "arguments", Anthropic's partial_json) */
        mock_strs pieces; /* the arguments as streamed, when the script cuts them (n 0: by delta_bytes) */
        json_t *input;    /* Anthropic's input: an object ({} when the arguments are not one) */
} mock_call;

typedef struct mock_error {
        mock_error_kind kind;
        unsigned status;                    /* 200 (an error object on a 200), or 400 to 599 */
        char *type, *message;               /* NULL: the kind's, in the API's words */
        json_t *code, *param;               /* NULL: the kind's; else as given (null too) */
        bool flat;                          /* vLLM's flat {"object":"error",...} (OpenAI) */
        char *retry_after, *retry_after_ms; /* header values; NULL: none */
        int should_retry;                   /* x-should-retry: -1 none, 0 false, 1 true */
        size_t after_events;                /* in a stream: after this many events */
} mock_error;

typedef struct mock_cut {
        size_t after_events; /* SIZE_MAX: before the last event ([DONE], message_stop) */
        bool mid_line;       /* then half of the next event's data line */
        bool clean;          /* end the body (a proxy's end) instead of closing the connection */
} mock_cut;

typedef struct mock_header {
        char *name, *value;
} mock_header;

typedef struct mock_step {
        unsigned times; /* requests it answers (the last step repeats when the script runs out) */
        bool has_text;
        char *text;       /* the whole text ("" when has_text is false) */
        mock_strs pieces; /* the text as streamed, when the script cuts it (n 0: by delta_bytes) */
        mock_call *calls;
        size_t n_calls;
        char *finish_reason, *stop_reason; /* OpenAI's, Anthropic's; NULL: from the content */
        char *id, *model;                  /* NULL: made up, the request's */
        int64_t created;                   /* 0: now */
        bool has_usage;
        int64_t input_tokens, output_tokens, cache_read, cache_creation; /* -1: a guess */
        bool usage_cache; /* the cache counts were scripted: OpenAI's usage gets prompt_tokens_details */
        size_t delta_bytes;
        unsigned quirks;          /* MOCK_QUIRK_* */
        mock_error *error;        /* an HTTP error answers instead */
        mock_error *stream_error; /* an error event in the stream (an HTTP error without one) */
        mock_cut *cut;            /* the stream is cut */
        uint64_t delay_ms;        /* before the answer */
        uint64_t event_delay_ms;  /* between events */
        uint64_t ping_ms;         /* during a gap, a ping this often */
        uint64_t write_delay_ms;  /* between the writes of a cut-up stream */
        mock_writes writes;
        size_t write_bytes;
        mock_eol eol;
        mock_header headers[MOCK_STEP_HEADERS_MAX];
        size_t n_headers;
        bool templated; /* its text or a call's input quotes tool results (mock-template.h) */
} mock_step;

typedef struct mock_script {
        mock_step *steps;
        size_t n_steps;
        bool then_error;  /* when the steps run out: 500 (else the last one repeats) */
        mock_strs models; /* n 0: any model; else another is 404 */
} mock_script;

/* Parse and check a script (JSON text, len bytes). Returns 0 with *ret (mock_script_free), or
 * -EINVAL with *e saying where ("step 3: tool_calls[0].name: ...") and what is expected, or
 * -ENOMEM. Pure. */
int mock_script_parse(const char *text, size_t len, mock_script **ret, hull_error *e);
void mock_script_free(mock_script *s);

/* Does the script know model (true when it lists none)? */
bool mock_script_has_model(const mock_script *s, const char *model);

/* The request an answer is for. */
typedef struct mock_request {
        mock_api api;
        const char *model; /* the request's */
        bool stream, include_usage;
        uint64_t seq;        /* the request's number: the made-up ids are built on it */
        int64_t now;         /* unix seconds */
        uint64_t body_bytes; /* the input tokens' guess is a quarter of this */
} mock_request;

typedef struct mock_answer {
        unsigned status;
        mock_header headers[MOCK_STEP_HEADERS_MAX + 4];
        size_t n_headers;
        bool stream; /* events (text/event-stream), else body (application/json) */
        char *body;
        size_t body_len;
        mock_strs events; /* each framed, its blank line included (the last one may be cut) */
        bool abort;       /* after the events the connection closes, the body unended */
        char *ping;       /* one keep-alive in the API's framing (an event or a comment) */
} mock_answer;

/* The answer of step st to rq. Returns 0 with *ret filled (mock_answer_done), or -ENOMEM. Pure. */
int mock_render(const mock_step *st, const mock_request *rq, mock_answer *ret);

/* An error answer in api's envelope: err's fields, else the kind's words (the model's name in
 * them). Returns 0 with *ret filled, or -ENOMEM. Pure. */
int mock_render_error(mock_api api, const mock_error *err, const char *model, uint64_t seq, mock_answer *ret);

void mock_answer_done(mock_answer *a);

/* The length of the next write of n bytes at p, cut as w says (bytes: MOCK_WRITES_BYTES's size);
 * at least 1 when n > 0. Pure. */
size_t mock_next_write(const char *p, size_t n, mock_writes w, size_t bytes);

/* The kind's HTTP status. */
unsigned mock_error_kind_status(mock_error_kind k);
