/* tool.h: what an agent tool is. The loop (agent.h) offers tools to the model as JSON schemas,
 * validates each call's arguments against its schema (a clear error result to the model on bad
 * arguments), applies the tool's permission policy, claims the session for the call (tools that
 * need the sandbox), runs it with a deadline, and passes what it returns through the spill
 * middleware (big or structured values become handles, the model sees their summary).
 *
 * Tools are implemented in src/tools/ (the built-ins: bash, read, write, edit, glob, grep,
 * run_python, the handle tools, publish_file, web_fetch, web_search), later by MCP servers
 * (src/mcp/) and by a client (the /v1 API's custom tools). The loop knows them only through
 * this interface; nothing in src/agent includes src/tools. */
#pragma once

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "limits.h"

typedef struct ss_manager ss_manager;
typedef struct ss_session ss_session;

typedef enum tool_policy {
        TOOL_ALWAYS_ALLOW,
        TOOL_ALWAYS_ASK, /* the turn pauses until a decision comes (a y/n prompt, an API event) */
        TOOL_DENY,       /* never runs; the model gets an error result saying so */
        _TOOL_POLICY_MAX,
} tool_policy;

const char *tool_policy_to_string(tool_policy p); /* "always_allow", "always_ask", "deny" */
int tool_policy_from_string(const char *s);       /* a tool_policy, or -EINVAL */

/* What a running tool may use. Everything is borrowed from the loop for the call. */
typedef struct tool_ctx {
        ss_manager *ss;            /* the session the agent works in; the loop holds its call claim */
        ss_session *session;       /* for tools with needs_session; NULL otherwise */
        const atomic_bool *cancel; /* the turn was interrupted: end soon with -ECANCELED */
        /* The same as an fd for poll(): readable once the call must stop (the interrupt, or its
         * deadline passed by AGENT_TOOL_GRACE_MS); hand it to ss_exec/ss_cell as their cancel_fd.
         * -1: none. */
        int cancel_fd;
        uint64_t deadline_mono_ms; /* the call must end by now_mono_ms() == this */
        /* A long call says how it goes (shown by --verbose, stored as hull.tool_progress;
         * rate-limited by the loop). */
        void (*progress)(void *ud, const char *note);
        void *progress_ud;
        const void *env; /* the tool's own configuration (tool_def.env), e.g. the egress policy */
} tool_ctx;

/* What a tool hands back. Exactly one of text and value is set on success. */
typedef struct tool_output {
        char *text;    /* for the model as is (small, already shaped); malloc'd */
        json_t *value; /* a structured result: the spill middleware keeps it inline when its
                        * JSON is at most the spill threshold, else stores it as a handle */
        /* With value: its JSON text as the tool already had it (an MCP server's text content that
         * parses equal to the value): a value too big to show is kept from these bytes instead of
         * being serialized again (the store still checks they are JSON). NULL: none; malloc'd. */
        char *value_json;
        size_t value_json_len;
        bool is_error; /* the call failed in a way the model should see and adapt to */
        /* Handles the tool made itself (their summaries), announced as hull.handle_created. */
        json_t *handles;
        /* A body the tool wants kept as a handle whatever its size (web_fetch's JSON and CSV):
         * its bytes, format name ("json", "csv", "text", "binary") and source; the model sees
         * the summary instead of text/value. NULL: none. With spill_data, value may also be set:
         * an object of facts about the body (web_fetch: status, content type, final URL,
         * truncated); the model then sees that object with the handle's summary added to it as
         * its member "handle". */
        char *spill_data;
        size_t spill_len;
        const char *spill_format;
        char *spill_source;
} tool_output;
void tool_output_done(tool_output *o);

typedef struct tool_def {
        const char *name;         /* [a-zA-Z0-9_-]{1,64} */
        const char *description;  /* for the model */
        const char *input_schema; /* a JSON Schema object, as JSON text (validated by the loop:
                                   * type, properties, required, additionalProperties, enum,
                                   * minimum/maximum, items, of the kinds string, integer,
                                   * number, boolean, array, object) */
        tool_policy default_policy;
        uint64_t timeout_ms; /* the call's deadline; 0: AGENT_TOOL_TIMEOUT_MS */
        bool needs_session;  /* runs in the session sandbox: the loop claims it around the call */
        /* A call that changes nothing: a face that puts every call on the record (hull mcp)
         * appends one record of this read-only kind of hull's (sbx-record.h: "read", "glob",
         * "grep", "inspect_handle", "query_handle") per call: the arguments as received, the
         * answer. NULL: the operations the tool runs record themselves (or it has no session). */
        const char *record_kind;
        /* A tool the client runs (the /v1 API's custom tools): the loop never calls run; a call
         * is announced as agent.custom_tool_use and ends the turn with requires_action until
         * agent_supply() gives its result. */
        bool client;
        /* With client: a built-in the client runs (a /v1 session in a self_hosted environment):
         * announced as agent.tool_use (with "hull_client_run": true) rather than
         * agent.custom_tool_use, and answered by the client's user.tool_result. */
        bool client_builtin;
        /* A tool of an MCP server (src/mcp): its calls are announced as agent.mcp_tool_use with
         * "mcp_server_name" = mcp_server and "name" = mcp_tool (the server's own name for it), and
         * answered as agent.mcp_tool_result ("mcp_tool_use_id"). NULL: a hull tool. */
        const char *mcp_server;
        const char *mcp_tool;
        /* Run the call. input is validated against input_schema. Returns 0 with *ret (also for
         * a failure the model should see: ret->is_error), or a negative errno with *e: the loop
         * turns it into an error result for the model (and ends the turn only for -ECANCELED). */
        int (*run)(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e);
        const void *env; /* handed to run as c->env */
} tool_def;
