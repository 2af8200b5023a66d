/* mcp-client.h: a client of one MCP server over stdio (shared/reference/mcp.md §2-§4, §6, §8-§11):
 * the server is spawned as a child process with pipes on its stdin, stdout and stderr (in a process
 * group of its own, OUTSIDE any sandbox: it runs with hull's privileges, as configured; or, with
 * cfg->sandbox, inside one: see mcp_sandbox), and
 * initialized (protocol version 2025-11-25 asked; 2025-11-25, 2025-06-18 or 2025-03-26 accepted;
 * client capabilities {}); then its tools are listed (every page) and called.
 *
 * Single-threaded: nothing reads the server between calls; each call first handles what arrived
 * in the meantime. While a call waits, the client answers the server's ping (and refuses its other
 * requests with -32601), hands notifications/progress of the call to the caller and
 * notifications/message to the events callback, drains stderr (its tail is kept to explain a
 * failure) and watches the caller's cancel fd and deadline: a cancelled or late call is abandoned
 * with notifications/cancelled and its late answer ignored.
 *
 * Every failure is a clear error, never a hang: a server that cannot be started, exits, closes
 * its stdout, writes a line that is not JSON-RPC, writes a line over MCP_MESSAGE_MAX, or does not
 * answer in time. After such a failure the client is broken: every later call fails at once with
 * the same message (mcp_client_alive says so).
 *
 * The process must ignore SIGPIPE (a server gone while hull writes to it is an EPIPE). */
#pragma once

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "limits.h"

typedef struct mcp_client mcp_client;

/* Log messages (notifications/message) of the server: level ("info", "error", ...), logger (may
 * be NULL) and data (any JSON) are borrowed for the call. */
typedef void (*mcp_message_fn)(void *ud, const char *server, const char *level, const char *logger, const json_t *data);

/* A stdio server run inside a hull sandbox (`hull exec --stdio`, sbx.h's stdio): the container
 * tier, the server's directory (cwd, else hull's) read-write at /workspace and its working
 * directory, the host's /usr read-only, nothing else of the host; only env's entries (passed by
 * name with --pass-env, never on a command line) beside the sandbox's defaults and, with hosts
 * allowed, the proxy variables; no network at all unless allow_hosts or allow_package_managers,
 * then only through hull's proxy to those (sbx-net.h). The spawned process is hull exec: killing
 * its process group ends the sandbox. A directory that is / or $HOME is refused (-EINVAL). */
typedef struct mcp_sandbox {
        const char *exe;                /* hull's binary; NULL: /proc/self/exe */
        const char *const *allow_hosts; /* NULL-terminated, or NULL: none */
        bool allow_package_managers;    /* the apt, npm and PyPI registries this host uses */
        bool allow_loopback;            /* TESTING ONLY: hull exec --net-allow-loopback */
} mcp_sandbox;

typedef struct mcp_stdio_config {
        const char *name;           /* the server's name for hull: [a-zA-Z0-9_-]{1,MCP_SERVER_NAME_MAX} */
        const char *const *argv;    /* the command (looked up in PATH) and its arguments, NULL-terminated */
        const char *const *env;     /* "K=V" entries added to hull's environment, NULL-terminated; NULL: none */
        const char *cwd;            /* the server's working directory; NULL: hull's */
        const mcp_sandbox *sandbox; /* NULL: the server runs outside any sandbox, as hull's user */
        uint64_t init_timeout_ms;   /* the start and initialize; 0: MCP_INIT_TIMEOUT_MS */
        const atomic_bool *cancel;  /* set (another thread, a signal handler): initialize gives up at
                                     * once, -ECANCELED; NULL: only the deadline ends it */
        mcp_message_fn on_message;  /* may be NULL: log messages are dropped */
        void *on_message_ud;
} mcp_stdio_config;

/* Is name a valid server name? */
bool mcp_server_name_valid(const char *name);

/* Spawn the server and initialize it. Returns 0 with *ret; or a negative errno with *e:
 * "mcp: NAME: cannot start 'CMD': No such file or directory", "mcp: NAME: the server exited
 * (status 1) before answering initialize; its stderr ended with: ...", -ETIMEDOUT, -EPROTO for a
 * server that is not speaking MCP or speaks a version hull does not, -E2BIG for an oversized
 * message, -ECANCELED when cfg->cancel was set ("mcp: NAME: initialize was interrupted"). Nothing
 * is left running on failure. */
int mcp_client_spawn(const mcp_stdio_config *cfg, mcp_client **ret, hull_error *e);

typedef struct mcp_http_config {
        const char *name;           /* as mcp_stdio_config's */
        const char *url;            /* the MCP endpoint, http:// or https:// (e.g. http://127.0.0.1:3001/mcp) */
        const char *const *headers; /* "Name: value" lines sent with every request (Authorization),
                                     * NULL-terminated; NULL: none */
        const char *const *resolve; /* names pinned to addresses for every request (httpc_request.resolve:
                                     * "HOST:PORT:ADDR,...", e.g. egress_target_pin's), NULL-terminated;
                                     * NULL: names resolved as usual */
        uint64_t init_timeout_ms;   /* initialize; 0: MCP_INIT_TIMEOUT_MS */
        const atomic_bool *cancel;  /* as mcp_stdio_config's */
        mcp_message_fn on_message;
        void *on_message_ud;
} mcp_http_config;

/* Connect to a Streamable HTTP server (2025-11-25, §5): every message a POST (Accept: JSON and
 * SSE; Mcp-Session-Id from the initialize answer and MCP-Protocol-Version on every later
 * request; the caller's headers), the answer read as one JSON message or as an event stream
 * whose messages are handled like stdio's lines until the reply comes (the server's requests
 * answered with POSTs of their own). A stream that breaks or ends before the reply is resumed
 * (resumability and redelivery): a GET with Last-Event-ID, the last event id seen, and the
 * session's headers, after the server's retry (else MCP_RESUME_DELAY_MS times the attempt), at
 * most MCP_RESUME_TRIES times in a row without a new event, then an error. No standing GET
 * stream: log messages come only on a request's stream. Closed with DELETE. The errors of mcp_client_spawn, and
 * libcurl's (-ECONNREFUSED, -EHOSTUNREACH), -EACCES for HTTP 401 and 403, -EREMOTEIO for another HTTP error status. */
int mcp_client_connect(const mcp_http_config *cfg, mcp_client **ret, hull_error *e);

/* Close the server's stdin, wait MCP_CLOSE_GRACE_MS for it to exit, then SIGTERM its process
 * group, wait again, then SIGKILL; reap it; free c. NULL is fine. */
void mcp_client_free(mcp_client *c);
static inline void mcp_client_freep(mcp_client **c) {
        mcp_client_free(*c);
}
#define _cleanup_mcp_client_ _cleanup_(mcp_client_freep)

/* Set (or clear, with fn NULL) the log-message callback. */
void mcp_client_on_message(mcp_client *c, mcp_message_fn fn, void *ud);

const char *mcp_client_name(const mcp_client *c);
const char *mcp_client_protocol_version(const mcp_client *c); /* as negotiated */
const json_t *mcp_client_server_info(const mcp_client *c);    /* the server's serverInfo ({} when none) */
const char *mcp_client_instructions(const mcp_client *c);     /* the server's instructions; NULL: none */
const json_t *mcp_client_capabilities(const mcp_client *c);   /* the server's capabilities ({} when none) */
/* False once the connection failed (the server exited, hung, wrote garbage); *e (may be NULL)
 * then gets the failure again. */
bool mcp_client_alive(const mcp_client *c, hull_error *e);

/* How one call waits. */
typedef struct mcp_call_opts {
        uint64_t deadline_mono_ms; /* 0: now + MCP_REQUEST_TIMEOUT_MS */
        int cancel_fd;             /* readable: give up (-ECANCELED); -1: none */
        const atomic_bool *cancel; /* set: give up (-ECANCELED); NULL: none */
        /* notifications/progress of this call (progress increases; total <= 0 when unknown;
         * message may be NULL). NULL: no progressToken is sent. */
        void (*progress)(void *ud, double progress, double total, const char *message);
        void *progress_ud;
} mcp_call_opts;

/* The server's tools, every page of tools/list (at most MCP_TOOLS_MAX tools, MCP_LIST_PAGES_MAX
 * pages): a new JSON array of Tool objects (each with a string "name" and an object
 * "inputSchema"; entries without them are left out). o may be NULL. Returns 0 with *ret, or a
 * negative errno with *e: the connection's errors, -EREMOTEIO for a JSON-RPC error answer,
 * -EPROTO for a malformed answer. */
int mcp_client_list_tools(mcp_client *c, const mcp_call_opts *o, json_t **ret, hull_error *e);

/* Call tool with arguments (an object, or NULL for none). Returns 0 with *ret, the server's
 * CallToolResult (a new reference; check its "isError"), or a negative errno with *e:
 * -ECANCELED (cancel_fd), -ETIMEDOUT (the deadline; notifications/cancelled was sent), -EREMOTEIO
 * (a JSON-RPC error answer: "mcp: NAME: tools/call TOOL: error -32602: ..."), or the connection's
 * errors. */
int mcp_client_call_tool(mcp_client *c, const char *tool, const json_t *arguments, const mcp_call_opts *o, json_t **ret,
                         hull_error *e);

/* Any request (method, params stolen, may be NULL); the result object in *ret (a new reference).
 * The errors of mcp_client_call_tool. */
int mcp_client_request(mcp_client *c, const char *method, json_t *params, const mcp_call_opts *o, json_t **ret,
                       hull_error *e);
