/* cli-agent.h: what `hull run` and `hull chat` share: an agent with its own session engine in
 * this process (no daemon), its directory under $HULL_HOME (runs/<id>/ or chats/<id>/: the
 * workspace, the handles, the run records, the transcript, the conversation), the status bus
 * shown on the terminal (the answer streamed on stdout; --verbose: every step on stderr), and a
 * y/n prompt for always_ask tools. */
#pragma once

#include <getopt.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "agent.h"
#include "error.h"
#include "limits.h"
#include "settings.h"

typedef enum cli_agent_kind {
        CLI_AGENT_RUN,  /* $HULL_HOME/runs/<id>/ */
        CLI_AGENT_CHAT, /* $HULL_HOME/chats/<id>/ */
} cli_agent_kind;

typedef struct cli_agent_opts {
        cli_agent_kind kind;
        const char *resume_id;         /* chat: continue this conversation; NULL: a new one */
        settings_flags flags;          /* --provider, --model, --base-url, --api-key, --header, --no-stream */
        const char *const *tool_names; /* --tool: only these (NULL: every built-in) */
        size_t n_tool_names;
        const char *const *mcp_specs; /* --mcp NAME=COMMAND ARGS...: MCP servers whose tools are offered too */
        size_t n_mcp_specs;
        const char *const *mcp_sandboxed; /* --mcp-sandbox NAME: these stdio servers run inside a sandbox */
        size_t n_mcp_sandboxed;
        const char *instructions; /* after hull's manual; NULL: none */
        unsigned max_turns;       /* 0: the settings' or the default */
        uint64_t wall_ms;         /* per turn; 0: the default */
        bool verbose;             /* every step on stderr */
        bool compact;             /* tool calls as one line each on stderr (chat) */
        bool print_answer;        /* stream the answer's text to stdout */
        bool yes;                 /* approve always_ask calls without asking */
        bool no_cgroup;
        const char *environment;      /* --env NAME: the session sees that environment's layer (hull env) */
        bool kernel;                  /* --tier kernel: the session is one gVisor sandbox */
        const atomic_bool *interrupt; /* set by the caller's SIGINT handler */
} cli_agent_opts;

/* The options hull run and hull chat share: their getopt entries and their parsing. */
enum {
        CLI_AGENT_OPT_TOOL = 0x200,
        CLI_AGENT_OPT_MODEL,
        CLI_AGENT_OPT_PROVIDER,
        CLI_AGENT_OPT_BASE_URL,
        CLI_AGENT_OPT_API_KEY,
        CLI_AGENT_OPT_HEADER,
        CLI_AGENT_OPT_NO_STREAM,
        CLI_AGENT_OPT_VERBOSE,
        CLI_AGENT_OPT_YES,
        CLI_AGENT_OPT_MAX_TURNS,
        CLI_AGENT_OPT_TIMEOUT,
        CLI_AGENT_OPT_INSTRUCTIONS,
        CLI_AGENT_OPT_NO_CGROUP,
        CLI_AGENT_OPT_MCP,
        CLI_AGENT_OPT_ENV,
        CLI_AGENT_OPT_TIER,
        CLI_AGENT_OPT_MCP_SANDBOX,
};
#define CLI_AGENT_OPTIONS                                                                                              \
        {"tool", required_argument, NULL, CLI_AGENT_OPT_TOOL},                                                         \
                {"model", required_argument, NULL, CLI_AGENT_OPT_MODEL},                                               \
                {"provider", required_argument, NULL, CLI_AGENT_OPT_PROVIDER},                                         \
                {"base-url", required_argument, NULL, CLI_AGENT_OPT_BASE_URL},                                         \
                {"api-key", required_argument, NULL, CLI_AGENT_OPT_API_KEY},                                           \
                {"header", required_argument, NULL, CLI_AGENT_OPT_HEADER},                                             \
                {"no-stream", no_argument, NULL, CLI_AGENT_OPT_NO_STREAM},                                             \
                {"verbose", no_argument, NULL, CLI_AGENT_OPT_VERBOSE}, {"yes", no_argument, NULL, CLI_AGENT_OPT_YES},  \
                {"max-turns", required_argument, NULL, CLI_AGENT_OPT_MAX_TURNS},                                       \
                {"timeout", required_argument, NULL, CLI_AGENT_OPT_TIMEOUT},                                           \
                {"instructions", required_argument, NULL, CLI_AGENT_OPT_INSTRUCTIONS},                                 \
                {"mcp", required_argument, NULL, CLI_AGENT_OPT_MCP},                                                   \
                {"mcp-sandbox", required_argument, NULL, CLI_AGENT_OPT_MCP_SANDBOX},                                   \
                {"env", required_argument, NULL, CLI_AGENT_OPT_ENV},                                                   \
                {"tier", required_argument, NULL, CLI_AGENT_OPT_TIER}, {                                               \
                "no-cgroup", no_argument, NULL, CLI_AGENT_OPT_NO_CGROUP                                                \
        }

typedef struct cli_agent_args {
        const char *tools[CLI_RUN_INPUTS_MAX];
        const char *headers[CLI_RUN_INPUTS_MAX + 1];
        const char *mcp[MCP_SERVERS_MAX];
        const char *mcp_sandbox[MCP_SERVERS_MAX];
        size_t n_tools, n_headers, n_mcp, n_mcp_sandbox;
} cli_agent_args;

/* One getopt result c (with optarg) of the shared options, into o and args: 1 when it was one of
 * them, 0 when it was not, -1 after a usage error was printed (for cmd, "run" or "chat"). */
int cli_agent_option(const char *cmd, int c, const char *arg, cli_agent_args *args, cli_agent_opts *o);
/* After parsing: o's lists point into args. */
void cli_agent_args_done(cli_agent_args *args, cli_agent_opts *o);

typedef struct cli_agent cli_agent;

/* Resolve the settings, make the directory, start the session engine and the session (warming
 * its interpreter), the model client and the agent. Returns 0 with *ret, or a negative errno
 * with *e (CLI_EXIT_USAGE-worthy errors are -EINVAL). */
int cli_agent_open(const cli_agent_opts *o, cli_agent **ret, hull_error *e);

/* Hand a file in as an input handle (a CSV, TSV, JSON or JSON-lines file becomes a table). The
 * summary (a new reference) goes to *ret_summary. */
int cli_agent_add_input(cli_agent *a, const char *path, json_t **ret_summary, hull_error *e);

/* One turn. The result is the agent's (agent_turn_result_done); *e holds the line of an error
 * stop. */
int cli_agent_turn(cli_agent *a, const char *text, agent_turn_result *ret, hull_error *e);

const char *cli_agent_id(const cli_agent *a);
const char *cli_agent_dir(const cli_agent *a);
/* The session's handles (a new reference), [] when there are none. */
json_t *cli_agent_handles(cli_agent *a);

/* Write conversation.json now (hull chat, after each turn). */
int cli_agent_checkpoint(cli_agent *a, hull_error *e);

/* End the session; keep: save the workspace, the conversation and the records in the directory
 * (else it is removed). Returns 0 or a negative errno with *e; frees a either way. */
int cli_agent_close(cli_agent *a, bool keep, hull_error *e);

/* Write n bytes of untrusted text (a model's, a tool's) to f; when sanitize (f is or may be a
 * terminal), what could drive a terminal is shown as '?' (line ends kept when keep_lines). */
void cli_term_write(FILE *f, const char *t, size_t n, bool keep_lines, bool sanitize);

/* One line of a tool call's input for people (the field a person recognises, else the JSON), cut
 * at size bytes, safe for a terminal. */
void cli_input_line(const json_t *input, char *buf, size_t size);
