/* mcp-server.h: hull as a Model Context Protocol server over stdio (`hull mcp`): a client (Claude
 * Desktop, Claude Code, any MCP host) calls hull's sandbox tools (run_python, bash, read, write,
 * edit, glob, grep, the handle tools, run_javascript) in one session that lives as long as the
 * connection.
 *
 * The wire is mcp-jsonrpc's: one JSON-RPC message per line on in_fd and out_fd; nothing else is
 * ever written to out_fd. Answered: initialize (protocol versions 2025-11-25, 2025-06-18,
 * 2025-03-26; another asked gets 2025-11-25), ping, tools/list, tools/call;
 * notifications/initialized and notifications/cancelled are heard, other notifications ignored.
 * A message that is not JSON, or not JSON-RPC, is answered with -32700 or -32600 (without an id,
 * unless it is a JSON-RPC 2.0 request with a valid id and something else wrong); an
 * unknown method with -32601; tools/call without a known tool's name with -32602. A call whose
 * arguments do not match the tool's schema, or that fails, is an isError result saying why (the
 * model can correct itself). The server serves on after any of these.
 *
 * Calls run one at a time, in the order they came, through the agent loop's tool-call runner
 * (tool-run.h): arguments validated against the tool's schema (schema.h), the session claimed
 * (ss_call_begin), the tool's deadline and the client's cancellation turned into the tool's
 * cancel fd, the result shaped by the spill middleware (spill.h: big results become handles). A
 * reader thread keeps reading while a call runs: it answers ping at once, hears
 * notifications/cancelled (the call in flight is stopped and not answered; a queued one is
 * dropped) and queues the rest (at most MCP_SERVER_QUEUE_MAX; the reader then waits). A request
 * that carried _meta.progressToken gets notifications/progress every MCP_PROGRESS_MS while its
 * call runs (progress: seconds elapsed).
 *
 * Every call that ran is on the session's record: the operations the tools run record
 * themselves in the session's audit log (ss.h: exec, cell, write, edit), and a call of a
 * read-only tool (tool_def.record_kind: read, glob, grep, inspect_handle, query_handle) gets one
 * record from the server (ss_record_read_only): its arguments as received and what it answered,
 * or, cancelled by the client, a version 3 record ("canceled") and no answer.
 *
 * Threads: mcp_server_run is called from the thread that opened the session (its init is that
 * thread's child); it starts the reader thread and, per call, a watcher thread. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "dlog.h"
#include "error.h"
#include "mcp-jsonrpc.h"
#include "tool.h"

typedef struct mcp_server_config {
        ss_manager *ss;      /* the session's manager */
        ss_session *session; /* the session every call runs in (borrowed) */
        const tool_def *const *tools;
        size_t n_tools;
        const char *name, *version; /* serverInfo */
        const char *instructions;   /* initialize's instructions (for the model), or NULL */
        /* Set (by a signal handler) to end: the call in flight is cancelled, nothing more is read. */
        const atomic_bool *stop;
        const dlog *log; /* stderr lines; NULL: none */
} mcp_server_config;

/* Is version one this server speaks? */
bool mcp_server_version_supported(const char *version);

/* Serve until in_fd reaches its end (the calls already read are answered first), out_fd breaks,
 * or *stop is set. Returns 0 on the end of the input or a stop, or a negative errno with *e: the
 * input broke (-E2BIG: a line over MCP_MESSAGE_MAX; -EIO), the output broke (-EPIPE), or a thread
 * could not be started. */
int mcp_server_run(const mcp_server_config *c, int in_fd, int out_fd, hull_error *e);

/* ---- one connection over any transport (hull serve's /mcp: one per MCP session) ----
 * The same methods as mcp_server_run, one parsed message at a time: the transport frames, parses
 * and routes (a request to mcp_conn_request, a notification to mcp_conn_notify). Requests may
 * come from several threads at once; tools/call runs one at a time (a second waits for the
 * first). c->session must outlive the connection. */
typedef struct mcp_conn mcp_conn;

/* Where one request's messages go: its progress notifications, then its answer (msg is stolen,
 * a whole JSON-RPC message). Returns 0 or a negative errno (-E2BIG: the message is too large;
 * the answer is then replaced by an error). Called from the requesting thread and the call's
 * watcher thread, one message at a time. */
typedef int mcp_send_fn(void *ud, json_t *msg);

/* A connection (the config is copied; what it points to must outlive it). Returns 0 with *ret,
 * or a negative errno with *e (a tool's schema is bad, no memory). */
int mcp_conn_new(const mcp_server_config *c, mcp_conn **ret, hull_error *e);
/* Free it: no request may be in it. NULL: nothing. */
void mcp_conn_free(mcp_conn *c);
/* Answer request m (MCP_MSG_REQUEST) through send: initialize, ping, tools/list, tools/call (runs
 * the tool: blocks for the call), other methods -32601. Returns 0 or send's error. */
int mcp_conn_request(mcp_conn *c, const mcp_msg *m, mcp_send_fn *send, void *ud);
/* A notification: notifications/cancelled stops the call it names (not answered then); others
 * are ignored. */
void mcp_conn_notify(mcp_conn *c, const mcp_msg *m);
