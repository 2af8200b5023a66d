/* cli-session.h: `hull session`, a client of hull serve's sessions (cli-session.c), and what the
 * other clients of hull serve (cli-handle.c) share with it: the connection, one call with its
 * request ID and error reporting. Answers are read with src/shared/protojson. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "http-client.h"
#include "limits.h"

int cli_session_main(int argc, char **argv);
void cli_session_help(void);

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

/* Read a whole file (or stdin for NULL or "-") of at most max bytes into a new NUL-terminated
 * buffer. Returns 0, -EFBIG (over max), -EISDIR, or the errno of open/read. */
int cli_read_input(const char *path, size_t max, char **ret, size_t *ret_len);
int cli_write_all_fd(int fd, const char *p, size_t n);
/* fwrite and fflush: 0 or -EIO. */
int cli_write_out(FILE *f, const char *p, size_t n);
