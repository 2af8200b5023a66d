/* mcp-jsonrpc.h: JSON-RPC 2.0 messages as the Model Context Protocol exchanges them, for the MCP
 * client (mcp-client) and the MCP server (mcp-server). Pure: bytes in, jansson values out, and
 * back; no I/O, no logging. Fuzzed: fuzz/fuzz-mcp-jsonrpc.c.
 *
 * Two pieces:
 * - the stdio framing: one message per line ("\n"; one trailing "\r" stripped; empty lines
 *   skipped), resumable (bytes may be fed in any split) and bounded (a line over the max given at
 *   init, MCP_MESSAGE_MAX by default, is a sticky -E2BIG: the peer is broken, the connection over);
 * - one message: parsed and classified (request, notification, result, error), or built and
 *   serialised as one compact line with exactly the members MCP's strict peers accept
 *   (jsonrpc, id, method, params / jsonrpc, id, result / jsonrpc, id?, error).
 *
 * Parsing is lenient where the spec lets it be (member order, unknown extra members, an error
 * with "id": null as the SDK's HTTP error bodies have it) and strict where a wrong reading would
 * route a message wrongly (jsonrpc must be "2.0", an id is a string or an integer, params and
 * result are objects, no batches). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dynbuf.h"
#include "error.h"

/* JSON-RPC and MCP error codes (reference: shared/reference/mcp.md §12) */
#define MCP_ERR_PARSE (-32700)
#define MCP_ERR_INVALID_REQUEST (-32600)
#define MCP_ERR_METHOD_NOT_FOUND (-32601)
#define MCP_ERR_INVALID_PARAMS (-32602)
#define MCP_ERR_INTERNAL (-32603)
#define MCP_ERR_SERVER (-32000) /* implementation-defined: transport errors, connection closed */

/* ---- stdio framing ---- */

typedef struct mcp_framer {
        dynbuf line;  /* the current line, without its end */
        size_t max;   /* bytes a line may have */
        size_t count; /* lines delivered */
        int error;    /* sticky: the first error */
} mcp_framer;

/* Called for each complete, non-empty line (without its "\n" and one trailing "\r");
 * line[len] == '\0'; valid only during the call. Returns 0 to go on, or a negative errno that
 * stops the framer (mcp_framer_feed returns it, and so does every later call). */
typedef int (*mcp_line_handler)(void *ud, const char *line, size_t len);

/* An empty framer whose lines may be at most max bytes (without their end). Allocates nothing. */
void mcp_framer_init(mcp_framer *f, size_t max);

/* Free what the framer holds. */
void mcp_framer_done(mcp_framer *f);

/* Frame n more bytes, calling h for each line they complete. Returns 0, -E2BIG when a line is
 * over the bound, -ENOMEM, or the handler's error; after an error nothing more is framed and the
 * same error is returned again. */
int mcp_framer_feed(mcp_framer *f, const void *p, size_t n, mcp_line_handler h, void *ud);

/* The end of the input. Returns 0 when it ended between lines, 1 when a line was cut (bytes
 * without their "\n": dropped, the caller says whether that is an error), or the sticky error. */
int mcp_framer_finish(mcp_framer *f);

/* ---- messages ---- */

typedef enum mcp_msg_kind {
        MCP_MSG_REQUEST,      /* method and id: expects exactly one response */
        MCP_MSG_NOTIFICATION, /* method, no id: never answered */
        MCP_MSG_RESULT,       /* id and result */
        MCP_MSG_ERROR,        /* error; id may be absent (NULL) */
} mcp_msg_kind;

typedef struct mcp_msg {
        mcp_msg_kind kind;
        json_t *root;          /* the whole message (owned) */
        json_t *id;            /* a string or an integer; NULL for a notification or an id-less error */
        const char *method;    /* request, notification: a non-empty string */
        json_t *params;        /* request, notification: an object, or NULL when absent */
        json_t *result;        /* result: an object */
        int64_t error_code;    /* error */
        const char *error_msg; /* error: a string ("" when empty) */
        json_t *error_data;    /* error: any value, or NULL */
} mcp_msg;

/* Parse one message of n bytes (a line without its end, or an HTTP body). All pointers in *ret
 * point into ret->root, freed by mcp_msg_done. Returns 0; -EBADMSG when the bytes are not one
 * JSON value of valid UTF-8 (answer MCP_ERR_PARSE); -EINVAL when they are JSON but not a JSON-RPC
 * 2.0 message (a batch, a missing or wrong "jsonrpc", a null or fractional id, params not an
 * object, ...: answer MCP_ERR_INVALID_REQUEST); -E2BIG over MCP_MESSAGE_MAX; -ENOMEM. *e says
 * what was wrong. */
int mcp_msg_parse(const char *p, size_t n, mcp_msg *ret, hull_error *e);

/* Free what a parsed message holds; *m is zeroed. Safe on a zeroed message. */
void mcp_msg_done(mcp_msg *m);

/* True when id is a valid JSON-RPC id for MCP: a string or an integer. */
bool mcp_id_valid(const json_t *id);

/* True when a and b are the same id (same type and value). */
bool mcp_id_equal(const json_t *a, const json_t *b);

/* New messages (NULL when out of memory, or when id is not a valid id). id is borrowed (a
 * reference is taken); params, result and data are stolen, even on failure, and may be NULL
 * (params: no "params" member; result: {}; data: no "data" member). */
json_t *mcp_request_new(json_t *id, const char *method, json_t *params);
json_t *mcp_notification_new(const char *method, json_t *params);
json_t *mcp_result_new(json_t *id, json_t *result);
/* id NULL: the message has no "id" member (the request's id is unknown). */
json_t *mcp_error_new(json_t *id, int64_t code, const char *message, json_t *data);

/* Append msg to out as one compact line of JSON followed by "\n". Returns 0, -E2BIG when the
 * line would be over MCP_MESSAGE_MAX or over out's bound (out is then unchanged), -ENOMEM. */
int mcp_msg_write(const json_t *msg, dynbuf *out);
