/* mcp-client-internal.h: the MCP client as its two files see it: the struct, and what
 * mcp-client.c (messages, requests, the lifecycle, tools) asks of mcp-client-proc.c (the server's
 * process, quoting). Not for other files. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "dynbuf.h"
#include "error.h"
#include "http-client.h"
#include "limits.h"
#include "macro.h"
#include "mcp-client.h"
#include "mcp-jsonrpc.h"

struct mcp_client {
        char name[MCP_SERVER_NAME_MAX + 1];
        char command[MCP_QUOTE_MAX + 4]; /* argv[0], for messages */
        pid_t pid;                       /* the server (the leader of its process group); 0 once reaped */
        pid_t pgid;                      /* its process group (its pid, kept after the reaping) */
        int status;                      /* its wait status once reaped */
        int in_fd, out_fd, err_fd;       /* its stdin (we write), stdout, stderr (we read); -1 when closed */
        mcp_framer framer;
        dynbuf outq; /* bytes waiting to go to its stdin */
        int64_t next_id;
        char tail[MCP_STDERR_TAIL]; /* the last bytes of its stderr (a ring) */
        size_t tail_len, tail_at;
        hull_error broken; /* set once the connection failed */
        char version[16];
        json_t *server_info;
        json_t *capabilities; /* the server's, from initialize */
        char *instructions;
        mcp_message_fn on_message;
        void *on_message_ud;
        /* the request being waited for */
        int64_t wait_id;
        bool waiting;
        mcp_msg reply; /* its answer, once here (reply.root != NULL) */
        const mcp_call_opts *wait_opts;
        const char *what; /* "initialize", "tools/call echo": for messages */
        /* Streamable HTTP (http != NULL): POSTs on http; the answers to the server's requests,
         * notifications and DELETE on side (usable from inside http's callbacks) */
        httpc *http, *side;
        char *url;
        char **headers; /* the caller's "Name: value" lines */
        size_t n_headers;
        char **resolve; /* the caller's pins, NULL-terminated; NULL: none */
        char session_id[HTTPC_HEADER_VALUE_MAX];
};

/* At most MCP_QUOTE_MAX bytes of p, control bytes and non-ASCII as '?', into buf. Returns buf. */
const char *mcpc_quote(const char *p, size_t n, char buf[MCP_QUOTE_MAX + 4]);

/* The last line of stderr with text in it (for an error message), or "". Returns buf. */
const char *mcpc_stderr_last_line(const mcp_client *c, char buf[MCP_QUOTE_MAX + 4]);

/* Mark the connection failed (the first failure stays) and return its error (a negative errno),
 * copied to *e when e is not NULL. */
int mcpc_broke(mcp_client *c, hull_error *e, int err, const char *fmt, ...) _printf_(4, 5);

/* Read what the server's stderr has now (non-blocking), keeping its last bytes. */
void mcpc_drain_stderr(mcp_client *c);

/* Reap the server if it has exited, waiting at most wait_ms for it (reading its stderr
 * meanwhile). Returns true once reaped. */
bool mcpc_reap(mcp_client *c, uint64_t wait_ms);

/* The server is gone (EOF on stdout, EPIPE on stdin): mcpc_broke with its status and the end of
 * its stderr. */
int mcpc_server_gone(mcp_client *c, hull_error *e);

/* Send sig to the server's process group. */
void mcpc_kill_group(mcp_client *c, int sig);

/* Start the server of cfg (in its own process group; sandboxed when cfg asks), its stdin, stdout
 * and stderr pipes in c. Returns 0 or a negative errno with *e set. */
int mcpc_spawn(mcp_client *c, const mcp_stdio_config *cfg, hull_error *e);
