/* cli-client.h: what the clients of a running hull serve share (hull session, hull handle, and
 * hull chat --server for the connection): the connection options with their environment
 * fallbacks ($HULL_URL, $HULL_TOKEN), the HTTP client set up from them, one call with its
 * request ID and its errors printed, and the command line of a client with subcommands.
 * Answers are read with src/shared/protojson. */
#pragma once

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "http-client.h"
#include "limits.h"

#define CLI_SERVE_DEFAULT_URL "http://127.0.0.1:8750"

#define CLI_CONNECTION_HELP                                                                                            \
        "Connection (before or after the subcommand):\n"                                                               \
        "  --url URL          hull serve's address (default $HULL_URL, else " CLI_SERVE_DEFAULT_URL ")\n"              \
        "  --unix PATH        connect to hull serve's unix socket instead (hull serve --socket)\n"                     \
        "  --token-file FILE  send the bearer token in FILE (default $HULL_TOKEN; none: no token)\n"                   \
        "  --insecure         allow cleartext http to a host that is not loopback\n"

/* The daemon we talk to. */
typedef struct cli_client {
        const char *cmd; /* the command whose messages these are: "session", "handle" */
        httpc *http;
        char base[HTTPC_URL_MAX]; /* the URL without a trailing '/' */
        const char *unix_path;
        char auth[AUTH_TOKEN_MAX + 32]; /* "Authorization: Bearer ..." or "" */
} cli_client;

void cli_client_done(cli_client *c);

/* Set c up for command cmd: the address from url (NULL: $HULL_URL, else the default; over
 * unix_path when not NULL), checked (cleartext only to loopback unless insecure); the token from
 * token_file, else $HULL_TOKEN; libcurl loaded; SIGPIPE ignored. Returns 0, or an exit status
 * after printing why (CLI_EXIT_USAGE for a bad URL or token). */
int cli_client_setup(cli_client *c, const char *cmd, const char *url, const char *unix_path, const char *token_file,
                     bool insecure);

/* POST req (consumed; NULL is out of memory) to path with a fresh Plimsoll-Request-Id. On a 200
 * answer that echoes the ID and is a JSON object, return 0 with *ret. Anything else (a Connect
 * error, an unbound or malformed answer, no daemon) is printed as one line and CLI_EXIT_FAILURE
 * returned. */
int cli_call(cli_client *c, const char *path, json_t *req, uint64_t call_ms, json_t **ret);

/* The same with a raw body read from fd (size bytes, or -1: to its end, sent chunked) as
 * application/octet-stream: a streamed upload (path may carry a query string). */
int cli_upload(cli_client *c, const char *path, int fd, int64_t size, uint64_t call_ms, json_t **ret);

/* s percent-encoded for a query argument. Returns 0 with a new string or -ENOMEM. */
int cli_escape(cli_client *c, const char *s, char **ret);

/* 1 to PLIM_SESSION_ID_MAX lowercase hex digits. */
bool cli_session_id_is_valid(const char *s);

/* The name of SessionEnd value end without its prefix ("CLOSED"), or NULL past the last. */
const char *cli_session_end_name(unsigned end);

/* Read a whole file (or stdin for NULL or "-") of at most max bytes into a new NUL-terminated
 * buffer. Returns 0, -EFBIG (over max), -EISDIR, or the errno of open/read. */
int cli_read_input(const char *path, size_t max, char **ret, size_t *ret_len);
int cli_write_all_fd(int fd, const char *p, size_t n);
/* fwrite and fflush: 0 or -EIO. */
int cli_write_out(FILE *f, const char *p, size_t n);

/* ---- the command line of a client with subcommands ---- */

/* getopt's values of the options every client takes; a command's own follow CLI_OPT_OWN. */
enum {
        CLI_OPT_URL = 0x100,
        CLI_OPT_UNIX,
        CLI_OPT_TOKEN_FILE,
        CLI_OPT_INSECURE,
        CLI_OPT_JSON,
        CLI_OPT_OWN,
};
/* An option as a bit of a subcommand's set (at most 32 options in all). */
#define CLI_OPT_BIT(o) (1U << ((o) -CLI_OPT_URL))

/* The first entries of a client's getopt table: --help, the connection, --json. */
#define CLI_CLIENT_OPTIONS                                                                                             \
        {"help", no_argument, NULL, 'h'}, {"url", required_argument, NULL, CLI_OPT_URL},                               \
                {"unix", required_argument, NULL, CLI_OPT_UNIX},                                                       \
                {"token-file", required_argument, NULL, CLI_OPT_TOKEN_FILE},                                           \
                {"insecure", no_argument, NULL, CLI_OPT_INSECURE}, {                                                   \
                "json", no_argument, NULL, CLI_OPT_JSON                                                                \
        }

/* What the command line said that every client uses. Strings point into argv. */
typedef struct cli_client_args {
        const char *url, *unix_path, *token_file;
        bool insecure, json;
        char **pos; /* the subcommand's positional arguments */
        size_t n_pos;
} cli_client_args;

/* The first member of a command's subcommand entry. */
typedef struct cli_client_sub {
        const char *name;
        unsigned opts;         /* its options beyond the connection's, as CLI_OPT_BIT()s */
        const char *shortopts; /* getopt's, "h" when NULL; a short option other than -h goes to own */
        const char *synopsis;  /* "open [--owner O] ..." */
        const char *help;      /* what it does, and its own options */
} cli_client_sub;

/* A client command: its subcommands and options. */
typedef struct cli_client_cmd {
        const char *name;             /* "session": "hull session", "hull: session: ..." */
        const char *subcommands;      /* their names for messages: "open, exec, ..." */
        const struct option *options; /* CLI_CLIENT_OPTIONS, then the command's own, then {} */
        const void *subs;             /* an array of entries whose first member is a cli_client_sub */
        size_t n_subs, sub_size;
        void (*help)(void); /* the command's --help */
        /* One of the command's own options (c from CLI_OPT_OWN on, or a short option) of sub into
         * args. Returns 0, or an exit status after printing a usage error. */
        int (*own)(void *args, const cli_client_sub *sub, int c, const char *arg);
} cli_client_cmd;

/* Parse a client's command line: the connection options, the subcommand, then its options and
 * the connection's (getopt permutes) and its positional arguments into a->pos. Returns 0 with
 * *ret_sub (an entry of cmd->subs); 0 with *ret_sub NULL after --help; CLI_EXIT_USAGE after
 * printing a usage error (no argument at all: the command's help). */
int cli_client_parse(const cli_client_cmd *cmd, int argc, char **argv, cli_client_args *a, void *args,
                     const cli_client_sub **ret_sub);

/* Print a subcommand's --help: its synopsis, help, the connection options and --json when it
 * takes it. */
void cli_client_sub_help(const cli_client_cmd *cmd, const cli_client_sub *sub);
