/* cli-session.c: `hull session open|exec|cell|read|write|persist|close|list`, a client of the
 * sessions of a running `hull serve`: one POST per call through cli-client (the connection, the
 * request IDs every answer must echo, the errors), the request built and the answer read with
 * jansson (bytes as base64, 64-bit integers as strings or numbers, fields at their zero value
 * omitted, as in ProtoJSON). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli-client.h"
#include "cli-session.h"
#include "cli.h"
#include "dynbuf.h"
#include "limits.h"
#include "macro.h"
#include "parse-util.h"
#include "protojson.h"
#include "sha256.h"
#include "utf8.h"

#define CMD "session"
#define PROTOCOL 3
#define REQUEST_ID_HEADER "Plimsoll-Request-Id"
#define SESSION_END_PREFIX "SESSION_END_"

#define PATH_OPEN "/plimsoll.v1.SandboxService/OpenSession"
#define PATH_SESSION_RUN "/plimsoll.v1.SandboxService/SessionRun"
#define PATH_CLOSE "/plimsoll.v1.SandboxService/CloseSession"
#define PATH_EXEC "/hull.v1.Workspace/Exec"
#define PATH_READ "/hull.v1.Workspace/Read"
#define PATH_WRITE "/hull.v1.Workspace/Write"
#define PATH_PERSIST "/hull.v1.Workspace/Persist"
#define PATH_LIST "/hull.v1.Sessions/List"

#define DEFAULT_URL CLI_SERVE_DEFAULT_URL
_Static_assert(SERVE_DEFAULT_PORT == 8750, "DEFAULT_URL names hull serve's default port");

enum {
        OPT_OWNER = CLI_OPT_OWN,
        OPT_LIFETIME,
        OPT_IDLE,
        OPT_LANGUAGE,
        OPT_TIMEOUT,
        OPT_ENV,
        OPT_PYTHON,
        OPT_JAVASCRIPT,
        OPT_FILE,
        OPT_OFFSET,
        OPT_LIMIT,
        OPT_FORCE,
        OPT_TIER,
};
#define BIT(o) CLI_OPT_BIT(o)
#define OPT_JSON CLI_OPT_JSON

static const struct option options[] = {
        CLI_CLIENT_OPTIONS,
        {"owner", required_argument, NULL, OPT_OWNER},
        {"lifetime", required_argument, NULL, OPT_LIFETIME},
        {"idle", required_argument, NULL, OPT_IDLE},
        {"language", required_argument, NULL, OPT_LANGUAGE},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"env", required_argument, NULL, OPT_ENV},
        {"python", no_argument, NULL, OPT_PYTHON},
        {"javascript", no_argument, NULL, OPT_JAVASCRIPT},
        {"file", required_argument, NULL, OPT_FILE},
        {"offset", required_argument, NULL, OPT_OFFSET},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"force", no_argument, NULL, OPT_FORCE},
        {"tier", required_argument, NULL, OPT_TIER},
        {},
};

/* What the command line said. Strings point into argv. */
typedef struct session_args {
        cli_client_args c; /* the connection, --json, the positional arguments */
        bool force;
        const char *owner;
        const char *environment; /* open --env NAME: hull's extension hullEnvironment */
        const char *tier;        /* open --tier container|kernel: the request's minimumIsolation */
        bool has_lifetime, has_idle, has_timeout, has_limit;
        uint64_t lifetime_ms, idle_ms, timeout_ms, offset, limit;
        const char *languages[PLIM_LANGUAGES_MAX];
        size_t n_languages;
        const char *language; /* cell: "python" (default) or "javascript" */
        const char *env[HULL_API_ENV_MAX];
        size_t n_env;
        const char *files[PLIM_FILES_MAX];
        size_t n_files;
} session_args;

typedef struct session_sub {
        cli_client_sub s; /* its name, options and help */
        size_t min_pos, max_pos;
        int (*run)(cli_client *c, const session_args *a);
} session_sub;

#define usage_error(...) cli_usage_error(CMD, CLI_EXIT_USAGE, __VA_ARGS__)

/* ---- small helpers ---- */

static bool owner_is_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > PLIM_OWNER_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
                      strchr("._:-", s[i])))
                        return false;
        return true;
}

/* A cell file's path as the protocol wants it: relative and clean. */
static bool cell_path_is_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > PLIM_PATH_MAX || s[0] == '/')
                return false;
        for (const char *seg = s;;) {
                const char *end = strchrnul(seg, '/');
                size_t len = (size_t) (end - seg);
                if (len == 0 || (len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
                        return false;
                if (!*end)
                        break;
                seg = end + 1;
        }
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f || s[i] == '\\')
                        return false;
        return true;
}

/* "950ms", "12.5s", "5m", "5m30s", "2h", "2h05m". */
static void format_ms(uint64_t ms, char *buf, size_t size) {
        uint64_t s = ms / 1000;
        if (ms < 1000)
                snprintf(buf, size, "%" PRIu64 "ms", ms);
        else if (ms < 60000)
                snprintf(buf, size, ms % 1000 ? "%.1fs" : "%.0fs", (double) ms / 1000.0);
        else if (s < 3600)
                snprintf(buf, size, s % 60 ? "%" PRIu64 "m%02" PRIu64 "s" : "%" PRIu64 "m", s / 60, s % 60);
        else
                snprintf(buf, size, (s / 60) % 60 ? "%" PRIu64 "h%02" PRIu64 "m" : "%" PRIu64 "h", s / 3600,
                         (s / 60) % 60);
}

/* A SessionEnd by name (with or without its prefix) or number; absent: 0 (open). */
static int get_session_end(const json_t *o, const char *camel, const char *snake, unsigned *ret, hull_error *e) {
        json_t *v;
        const char *s;
        int r = pj_field(o, camel, snake, &v, e);
        if (r < 0)
                return r;
        if (!v) {
                *ret = 0;
                return 0;
        }
        if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= UINT16_MAX &&
            cli_session_end_name((unsigned) json_integer_value(v))) {
                *ret = (unsigned) json_integer_value(v);
                return 0;
        }
        if ((s = json_string_value(v))) {
                if (strncmp(s, SESSION_END_PREFIX, strlen(SESSION_END_PREFIX)) == 0)
                        s += strlen(SESSION_END_PREFIX);
                for (unsigned i = 0; cli_session_end_name(i); i++)
                        if (strcmp(s, cli_session_end_name(i)) == 0) {
                                *ret = (unsigned) i;
                                return 0;
                        }
        }
        if (e) {
                hull_err(e, 0, "%s is not a SessionEnd name or number", camel);
                e->err = -EINVAL;
        }
        return -EINVAL;
}

static int bad_answer(const char *what) {
        cli_error(CMD, "the daemon's answer is malformed: %s", what);
        return CLI_EXIT_FAILURE;
}

/* What a ProtoJSON reader found wrong with an answer. */
static int bad_field(const hull_error *e) {
        return bad_answer(e->msg);
}

static int print_json(const json_t *o) {
        if (json_dumpf(o, stdout, JSON_COMPACT | JSON_ENSURE_ASCII) < 0 || fputc('\n', stdout) == EOF ||
            fflush(stdout) == EOF) {
                cli_error(CMD, "cannot write the answer to stdout");
                return CLI_EXIT_FAILURE;
        }
        return CLI_EXIT_OK;
}

/* The exit status of something that ran in the session: 124 when it timed out. */
static int ran_status(int64_t exit_code, bool timed_out) {
        if (timed_out)
                return 124;
        return exit_code >= 0 && exit_code <= 255 ? (int) exit_code : CLI_EXIT_FAILURE;
}

/* ---- the subcommands ---- */

static uint64_t call_ms(const session_args *a) {
        return a->has_timeout ? a->timeout_ms : SESSION_CLI_CALL_MS_DEFAULT;
}

static int do_close(cli_client *c, const char *id, json_t **ret) {
        json_t *req = json_pack("{s:i, s:s}", "protocol", PROTOCOL, "sessionId", id);
        return cli_call(c, PATH_CLOSE, req, SESSION_CLI_CALL_MS_DEFAULT, ret);
}

static int sub_open(cli_client *c, const session_args *a) {
        json_t *req = json_pack("{s:i}", "protocol", PROTOCOL);
        if (!req)
                return bad_answer("out of memory");
        if (a->owner)
                json_object_set_new(req, "owner", json_string(a->owner));
        if (a->environment)
                json_object_set_new(req, "hullEnvironment", json_string(a->environment));
        if (a->tier) /* the floor: hull serve gives a session of at least that tier, or refuses */
                json_object_set_new(req, "minimumIsolation", json_string(a->tier));
        if (a->has_lifetime)
                json_object_set_new(req, "lifetimeMs", json_integer((json_int_t) a->lifetime_ms));
        if (a->has_idle)
                json_object_set_new(req, "idleTimeoutMs", json_integer((json_int_t) a->idle_ms));
        if (a->n_languages) {
                json_t *l = json_array();
                for (size_t i = 0; i < a->n_languages; i++)
                        json_array_append_new(l, json_string(a->languages[i]));
                json_object_set_new(req, "languages", l);
        }
        json_auto_t *ans = NULL;
        int r = cli_call(c, PATH_OPEN, req, SESSION_CLI_CALL_MS_DEFAULT, &ans);
        if (r != 0)
                return r;
        const char *id, *fp;
        char want[SHA256_HEX_SIZE];
        hull_error e = {0};
        if (pj_string(ans, "sessionId", "session_id", NULL, SIZE_MAX, &id, NULL, &e) < 0)
                return bad_field(&e);
        if (!cli_session_id_is_valid(id))
                return bad_answer("sessionId is not 1 to 64 lowercase hex digits");
        if (pj_string(ans, "session", NULL, NULL, SIZE_MAX, &fp, NULL, &e) < 0 ||
            sha256_hex(id, strlen(id), want) < 0 || strcmp(fp, want) != 0) {
                /* The fingerprint must be the ID's SHA-256, or the run records cannot be tied to it. */
                json_auto_t *closed = NULL;
                cli_error(CMD, "the daemon's session fingerprint is not the SHA-256 of the session ID; closing it");
                (void) do_close(c, id, &closed);
                return CLI_EXIT_FAILURE;
        }
        if (a->c.json)
                return print_json(ans);
        printf("%s\n", id);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

/* stdout, stderr, their truncation flags: written raw, a note for each truncated stream. */
static int print_streams(const json_t *o, const char *what) {
        _cleanup_free_ void *out = NULL, *err = NULL;
        size_t out_len, err_len;
        bool out_trunc, err_trunc;
        hull_error e = {0};
        if (pj_bytes(o, "stdout", NULL, NULL, PLIM_ANSWER_MAX, &out, &out_len, &e) < 0 ||
            pj_bytes(o, "stderr", NULL, NULL, PLIM_ANSWER_MAX, &err, &err_len, &e) < 0 ||
            pj_bool(o, "stdoutTruncated", "stdout_truncated", &out_trunc, &e) < 0 ||
            pj_bool(o, "stderrTruncated", "stderr_truncated", &err_trunc, &e) < 0)
                return bad_field(&e);
        if (cli_write_out(stdout, out, out_len) < 0 || cli_write_out(stderr, err, err_len) < 0)
                return CLI_EXIT_FAILURE;
        if (out_trunc)
                cli_error(CMD, "the %s's stdout was cut by the daemon (the rest is lost)", what);
        if (err_trunc)
                cli_error(CMD, "the %s's stderr was cut by the daemon (the rest is lost)", what);
        return 0;
}

/* Append word w as /bin/sh reads it back as one word: as it is when it is only
 * [A-Za-z0-9_@%+=:,./-] (the set of Python's shlex.quote), else in single quotes, each ' in it
 * written '"'"'. Returns 0 or the errors of dynbuf_add. */
static int shell_quote_add(dynbuf *b, const char *w) {
        static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-";
        size_t n = strlen(w);
        if (n > 0 && strspn(w, safe) == n)
                return dynbuf_add(b, w, n);
        int r = dynbuf_add(b, "'", 1);
        for (const char *p = w; r >= 0;) {
                const char *q = strchrnul(p, '\'');
                r = dynbuf_add(b, p, (size_t) (q - p));
                if (r < 0 || !*q)
                        break;
                r = dynbuf_add_str(b, "'\"'\"'");
                p = q + 1;
        }
        return r < 0 ? r : dynbuf_add(b, "'", 1);
}

/* The command line of exec: one argument is a command line for the shell, as it is; several are
 * one command's words, each quoted so that the shell hands them over unchanged. */
static int exec_command(const session_args *a, dynbuf *b) {
        if (a->c.n_pos == 2)
                return dynbuf_add_str(b, a->c.pos[1]);
        for (size_t i = 1; i < a->c.n_pos; i++) {
                int r = i > 1 ? dynbuf_add(b, " ", 1) : 0;
                if (r < 0 || (r = shell_quote_add(b, a->c.pos[i])) < 0)
                        return r;
        }
        return 0;
}

static int sub_exec(cli_client *c, const session_args *a) {
        const char *id = a->c.pos[0];
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, HULL_API_COMMAND_MAX);
        int r = exec_command(a, &b);
        if (r == -E2BIG)
                return usage_error("the command is over %u bytes%s", HULL_API_COMMAND_MAX,
                                   a->c.n_pos > 2 ? " (its words quoted for the shell)" : "");
        if (r < 0)
                return bad_answer("out of memory");
        const char *cmd = b.buf ? b.buf : "";
        if (!cmd[0])
                return usage_error("the command is empty%s", "");
        if (!utf8_is_valid(cmd, b.len))
                return usage_error("the command is not UTF-8%s", "");

        json_t *req = json_pack("{s:s, s:s}", "sessionId", id, "command", cmd);
        if (!req)
                return bad_answer("out of memory");
        if (a->has_timeout)
                json_object_set_new(req, "timeoutMs", json_integer((json_int_t) a->timeout_ms));
        if (a->n_env) {
                json_t *env = json_object();
                for (size_t i = 0; i < a->n_env; i++) {
                        const char *eq = strchr(a->env[i], '=');
                        char name[HULL_API_ENV_NAME_MAX + 1];
                        memcpy(name, a->env[i], (size_t) (eq - a->env[i]));
                        name[eq - a->env[i]] = 0;
                        json_object_set_new(env, name, json_string(eq + 1));
                }
                json_object_set_new(req, "env", env);
        }
        json_auto_t *ans = NULL;
        r = cli_call(c, PATH_EXEC, req, call_ms(a), &ans);
        if (r != 0)
                return r;
        int64_t exit_code;
        bool timed_out;
        hull_error e = {0};
        if (pj_int(ans, "exitCode", "exit_code", INT64_MIN, INT64_MAX, NULL, &exit_code, &e) < 0 ||
            pj_bool(ans, "timedOut", "timed_out", &timed_out, &e) < 0)
                return bad_field(&e);
        if (a->c.json) {
                r = print_json(ans);
                return r ? r : ran_status(exit_code, timed_out);
        }
        r = print_streams(ans, "command");
        if (r)
                return r;
        if (timed_out)
                cli_error(CMD, "the command timed out and was stopped (raise --timeout)");
        return ran_status(exit_code, timed_out);
}

static int sub_cell(cli_client *c, const session_args *a) {
        const char *id = a->c.pos[0];
        _cleanup_free_ char *code = NULL;
        size_t code_len;
        const char *src = a->c.n_pos > 1 ? a->c.pos[1] : "-";
        int r;
        if (strcmp(src, "-") == 0) {
                r = cli_read_input(NULL, PLIM_CODE_MAX, &code, &code_len);
                if (r < 0) {
                        if (r == -EFBIG)
                                return usage_error("the code on stdin is over %u bytes", PLIM_CODE_MAX);
                        cli_error(CMD, "cannot read the code from stdin: %s", strerror(-r));
                        return CLI_EXIT_FAILURE;
                }
        } else {
                code_len = strlen(src);
                if (code_len > PLIM_CODE_MAX)
                        return usage_error("the code is over %u bytes", PLIM_CODE_MAX);
                if (!(code = strdup(src)))
                        return bad_answer("out of memory");
        }
        if (code_len == 0)
                return usage_error("the code is empty%s", "");
        if (memchr(code, 0, code_len) || !utf8_is_valid(code, code_len))
                return usage_error("the code must be UTF-8 without NUL bytes%s", "");

        json_t *files = json_array(), *cell = NULL;
        size_t total = 0;
        for (size_t i = 0; files && i < a->n_files; i++) {
                const char *eq = strchr(a->files[i], '=');
                char path[PLIM_PATH_MAX + 1];
                size_t plen = (size_t) (eq - a->files[i]);
                memcpy(path, a->files[i], plen);
                path[plen] = 0;
                for (size_t j = 0; j < i; j++)
                        if (strncmp(a->files[j], a->files[i], plen + 1) == 0) {
                                json_decref(files);
                                return usage_error("--file names the path '%s' twice", path);
                        }
                _cleanup_free_ char *data = NULL;
                size_t data_len;
                r = cli_read_input(eq + 1, PLIM_FILES_BYTES_MAX - total, &data, &data_len);
                if (r < 0) {
                        json_decref(files);
                        if (r == -EFBIG)
                                return usage_error("the --file contents are over %u bytes in all",
                                                   PLIM_FILES_BYTES_MAX);
                        cli_error(CMD, "cannot read %s: %s", eq + 1, strerror(-r));
                        return CLI_EXIT_FAILURE;
                }
                total += data_len;
                /* plimsoll carries a file's content as a JSON string (NULs escaped), not base64. */
                if (!utf8_is_valid(data, data_len)) {
                        json_decref(files);
                        return usage_error("--file %s is not UTF-8 text; cell files travel as text (write binary files "
                                           "with 'hull session write')",
                                           eq + 1);
                }
                json_t *b = json_stringn(data, data_len);
                if (!b || json_array_append_new(files, json_pack("{s:s, s:o}", "path", path, "content", b)) < 0) {
                        json_decref(files);
                        return bad_answer("out of memory");
                }
        }
        if (files)
                cell = json_pack("{s:s, s:s%, s:o}", "language", a->language, "code", code, code_len, "files", files);
        json_t *req = cell ? json_pack("{s:i, s:s, s:o}", "protocol", PROTOCOL, "sessionId", id, "cell", cell) : NULL;
        if (!req)
                return bad_answer("out of memory");
        if (a->has_timeout)
                json_object_set_new(req, "timeoutMs", json_integer((json_int_t) a->timeout_ms));

        json_auto_t *ans = NULL;
        r = cli_call(c, PATH_SESSION_RUN, req, call_ms(a), &ans);
        if (r != 0)
                return r;
        json_t *run = NULL, *res = NULL;
        unsigned ended;
        const char *detail;
        int64_t exit_code;
        bool timed_out;
        hull_error e = {0};
        if (pj_field(ans, "run", NULL, &run, &e) < 0 || (run && pj_field(run, "cell", NULL, &res, &e) < 0))
                return bad_field(&e);
        if (!json_is_object(run) || !json_is_object(res))
                return bad_answer("it carries no run.cell result");
        if (get_session_end(ans, "ended", NULL, &ended, &e) < 0 ||
            pj_string(ans, "endDetail", "end_detail", NULL, SIZE_MAX, &detail, NULL, &e) < 0 ||
            pj_int(res, "exitCode", "exit_code", INT64_MIN, INT64_MAX, NULL, &exit_code, &e) < 0 ||
            pj_bool(res, "timedOut", "timed_out", &timed_out, &e) < 0)
                return bad_field(&e);
        if (a->c.json)
                r = print_json(ans);
        else
                r = print_streams(res, "cell");
        if (r)
                return r;
        if (!a->c.json && timed_out)
                cli_error(CMD, "the cell timed out and was stopped (raise --timeout)");
        if (ended)
                cli_error(CMD, "the session ended during this call: %s%s%s", cli_session_end_name(ended),
                          detail[0] ? ": " : "", detail);
        return ran_status(exit_code, timed_out);
}

static json_t *read_request(const session_args *a, uint64_t offset, uint64_t limit) {
        json_t *req = json_pack("{s:s, s:s}", "sessionId", a->c.pos[0], "path", a->c.pos[1]);
        if (req && offset)
                json_object_set_new(req, "offset", json_integer((json_int_t) offset));
        if (req && limit)
                json_object_set_new(req, "limit", json_integer((json_int_t) limit));
        return req;
}

static int sub_read(cli_client *c, const session_args *a) {
        uint64_t offset = a->offset;
        if (a->c.json) {
                json_auto_t *ans = NULL;
                int r = cli_call(c, PATH_READ, read_request(a, offset, a->has_limit ? a->limit : 0),
                                 SESSION_CLI_CALL_MS_DEFAULT, &ans);
                return r ? r : print_json(ans);
        }
        /* Without --limit, the whole file from --offset on, in the largest pieces the daemon reads. */
        for (;;) {
                json_auto_t *ans = NULL;
                int r = cli_call(c, PATH_READ, read_request(a, offset, a->has_limit ? a->limit : WS_READ_MAX_BYTES),
                                 SESSION_CLI_CALL_MS_DEFAULT, &ans);
                if (r)
                        return r;
                _cleanup_free_ void *data = NULL;
                size_t len;
                bool eof;
                hull_error e = {0};
                if (pj_bytes(ans, "content", NULL, NULL, PLIM_ANSWER_MAX, &data, &len, &e) < 0 ||
                    pj_bool(ans, "eof", NULL, &eof, &e) < 0)
                        return bad_field(&e);
                if (cli_write_out(stdout, data, len) < 0) {
                        cli_error(CMD, "cannot write to stdout");
                        return CLI_EXIT_FAILURE;
                }
                if (eof || a->has_limit)
                        return CLI_EXIT_OK;
                if (len == 0)
                        return bad_answer("no bytes and no end of file");
                offset += len;
        }
}

static int sub_write(cli_client *c, const session_args *a) {
        const char *src = a->c.n_pos > 2 ? a->c.pos[2] : "-";
        _cleanup_free_ char *data = NULL;
        size_t len;
        int r = cli_read_input(src, SESSION_CLI_WRITE_MAX, &data, &len);
        if (r < 0) {
                if (r == -EFBIG)
                        return usage_error("%s is over %u bytes, the most one write carries",
                                           strcmp(src, "-") ? src : "stdin", SESSION_CLI_WRITE_MAX);
                cli_error(CMD, "cannot read %s: %s", strcmp(src, "-") ? src : "stdin", strerror(-r));
                return CLI_EXIT_FAILURE;
        }
        json_t *b = pj_new_bytes(data, len);
        json_t *req =
                b ? json_pack("{s:s, s:s, s:o}", "sessionId", a->c.pos[0], "path", a->c.pos[1], "content", b) : NULL;
        if (!req)
                return bad_answer("out of memory");
        json_auto_t *ans = NULL;
        r = cli_call(c, PATH_WRITE, req, SESSION_CLI_CALL_MS_DEFAULT, &ans);
        if (r)
                return r;
        int64_t bytes;
        hull_error e = {0};
        if (pj_int(ans, "bytes", NULL, 0, INT64_MAX, NULL, &bytes, &e) < 0)
                return bad_field(&e);
        if (a->c.json)
                return print_json(ans);
        printf("wrote %" PRId64 " bytes to %s\n", bytes, a->c.pos[1]);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

static int sub_persist(cli_client *c, const session_args *a) {
        const char *out = a->c.pos[1];
        struct stat st;
        if (!a->force && lstat(out, &st) == 0) {
                cli_error(CMD, "%s exists (pass --force to overwrite it)", out);
                return CLI_EXIT_FAILURE;
        }
        json_auto_t *ans = NULL;
        int r = cli_call(c, PATH_PERSIST, json_pack("{s:s}", "sessionId", a->c.pos[0]), SESSION_CLI_CALL_MS_DEFAULT,
                         &ans);
        if (r)
                return r;
        _cleanup_free_ void *tar = NULL;
        size_t len;
        int64_t bytes;
        const char *digest;
        char got[SHA256_HEX_SIZE];
        hull_error e = {0};
        if (pj_bytes(ans, "archive", NULL, NULL, PLIM_ANSWER_MAX, &tar, &len, &e) < 0 ||
            pj_int(ans, "bytes", NULL, 0, INT64_MAX, NULL, &bytes, &e) < 0 ||
            pj_string(ans, "sha256", NULL, NULL, SIZE_MAX, &digest, NULL, &e) < 0)
                return bad_field(&e);
        if ((uint64_t) bytes != len)
                return bad_answer("bytes is not the archive's length");
        if (sha256_hex(tar, len, got) < 0 || strcmp(got, digest) != 0)
                return bad_answer("sha256 is not the archive's digest");

        int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | (a->force ? O_TRUNC : O_EXCL);
        _cleanup_close_ int fd = open(out, flags, 0644);
        if (fd < 0) {
                cli_error(CMD, "cannot create %s: %s%s", out, strerror(errno),
                          errno == EEXIST ? " (pass --force to overwrite it)" : "");
                return CLI_EXIT_FAILURE;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || cli_write_all_fd(fd, tar, len) < 0 || fsync(fd) < 0) {
                cli_error(CMD, "cannot write %s: %s", out,
                          S_ISREG(st.st_mode) ? strerror(errno) : "not a regular file");
                if (S_ISREG(st.st_mode))
                        (void) unlink(out);
                return CLI_EXIT_FAILURE;
        }
        if (a->c.json) {
                json_object_del(ans, "archive");
                json_object_set_new(ans, "path", json_string(out));
                return print_json(ans);
        }
        printf("%s\n", got);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

static int sub_close(cli_client *c, const session_args *a) {
        json_auto_t *ans = NULL;
        int r = do_close(c, a->c.pos[0], &ans);
        if (r)
                return r;
        const char *fp, *last;
        int64_t calls;
        unsigned ended;
        char want[SHA256_HEX_SIZE];
        hull_error e = {0};
        if (pj_string(ans, "session", NULL, NULL, SIZE_MAX, &fp, NULL, &e) < 0 ||
            pj_string(ans, "lastRecordSha256", "last_record_sha256", NULL, SIZE_MAX, &last, NULL, &e) < 0 ||
            pj_int(ans, "calls", NULL, 0, INT64_MAX, NULL, &calls, &e) < 0 ||
            get_session_end(ans, "ended", NULL, &ended, &e) < 0)
                return bad_field(&e);
        if (sha256_hex(a->c.pos[0], strlen(a->c.pos[0]), want) < 0 || strcmp(fp, want) != 0)
                return bad_answer("the session fingerprint is not the SHA-256 of the session ID");
        if (a->c.json)
                return print_json(ans);
        printf("closed %s calls=%" PRId64 " last=%s ended=%s\n", fp, calls, last[0] ? last : "-",
               cli_session_end_name(ended));
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

static int sub_list(cli_client *c, const session_args *a) {
        json_auto_t *ans = NULL;
        int r = cli_call(c, PATH_LIST, json_object(), SESSION_CLI_CALL_MS_DEFAULT, &ans);
        if (r)
                return r;
        json_t *sessions;
        hull_error e = {0};
        if (pj_array(ans, "sessions", NULL, NULL, SIZE_MAX, &sessions, &e) < 0)
                return bad_field(&e);
        if (a->c.json)
                return print_json(ans);
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        int64_t now_ms = (int64_t) now.tv_sec * 1000 + now.tv_nsec / 1000000;
        printf("%-32s %6s %8s %10s  %s\n", "SESSION", "CALLS", "IDLE", "EXPIRES", "OWNER");
        for (size_t i = 0; sessions && i < json_array_size(sessions) && i < SESSION_CLI_LIST_MAX; i++) {
                const json_t *s = json_array_get(sessions, i);
                const char *id, *owner;
                int64_t calls, expires, idle;
                char idle_s[32], left_s[32];
                if (!json_is_object(s))
                        return bad_answer("a session of the list is not an object");
                if (pj_string(s, "sessionId", "session_id", "sessions[].", SIZE_MAX, &id, NULL, &e) < 0 ||
                    pj_string(s, "owner", NULL, "sessions[].", SIZE_MAX, &owner, NULL, &e) < 0 ||
                    pj_int(s, "calls", NULL, 0, INT64_MAX, NULL, &calls, &e) < 0 ||
                    pj_int(s, "expiresUnixMs", "expires_unix_ms", 0, INT64_MAX, NULL, &expires, &e) < 0 ||
                    pj_int(s, "idleTimeoutMs", "idle_timeout_ms", 0, INT64_MAX, NULL, &idle, &e) < 0)
                        return bad_field(&e);
                if (!cli_session_id_is_valid(id))
                        return bad_answer("a session of the list has a sessionId that is not 1 to 64 hex digits");
                format_ms(idle > 0 ? (uint64_t) idle : 0, idle_s, sizeof(idle_s));
                if (expires > now_ms) {
                        char d[28];
                        format_ms((uint64_t) (expires - now_ms), d, sizeof(d));
                        snprintf(left_s, sizeof(left_s), "in %s", d);
                } else
                        snprintf(left_s, sizeof(left_s), "%s", expires ? "now" : "-");
                printf("%-32s %6" PRId64 " %8s %10s  %s\n", id, calls, idle_s, left_s, owner[0] ? owner : "-");
        }
        if (sessions && json_array_size(sessions) > SESSION_CLI_LIST_MAX)
                cli_error(CMD, "%zu more sessions not shown (use --json)",
                          json_array_size(sessions) - SESSION_CLI_LIST_MAX);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

/* ---- usage ---- */

#define CONNECTION_HELP CLI_CONNECTION_HELP

static const session_sub subs[] = {
        {{"open",
          BIT(OPT_JSON) | BIT(OPT_OWNER) | BIT(OPT_LIFETIME) | BIT(OPT_IDLE) | BIT(OPT_LANGUAGE) | BIT(OPT_ENV) |
                  BIT(OPT_TIER),
          NULL,
          "open [--owner O] [--env NAME] [--tier container|kernel] [--lifetime DUR] [--idle DUR]\n"
          "       [--language python|javascript]... [--json]",
          "Open a session: one sandbox kept for many calls. Prints its ID, a capability: whoever has it\n"
          "can use the session. With --json, the whole answer (fingerprint, isolation, expiry).\n\n"
          "  --owner O          who the session is for, [A-Za-z0-9._:-]{1,64}\n"
          "  --env NAME         the environment (hull env) whose packages (its layer, built first when\n"
          "                     missing) and network the session gets\n"
          "  --tier T           container, or kernel: the session is one gVisor sandbox (hull serve must\n"
          "                     offer it: runsc passed its self-check, hull serve runs as root)\n"
          "  --lifetime DUR     end it after DUR (may only shorten the daemon's; at most 12h)\n"
          "  --idle DUR         end it after DUR without a call (at least 1s)\n"
          "  --language L       warm an interpreter: python or javascript (repeatable)\n"},
         0,
         0,
         sub_open},
        {{"exec", BIT(OPT_JSON) | BIT(OPT_TIMEOUT) | BIT(OPT_ENV), NULL,
          "exec ID [--timeout DUR] [--env K=V]... [--json] -- COMMAND...",
          "Run COMMAND with /bin/sh -c in the session's workspace: one argument is a command line for\n"
          "the shell ('cd /tmp && ls *.csv'); several are one command's words, handed over as they are\n"
          "(each quoted for the shell). The working directory and exported variables carry over to\n"
          "the next exec.\n"
          "Its stdout and stderr are written as they are; the exit status is the command's (124: it\n"
          "timed out).\n\n"
          "  --timeout DUR      stop it after DUR (default 30s, at most 5m)\n"
          "  --env K=V          set a variable for this command (repeatable)\n"},
         2,
         SIZE_MAX,
         sub_exec},
        {{"cell", BIT(OPT_JSON) | BIT(OPT_TIMEOUT) | BIT(OPT_PYTHON) | BIT(OPT_JAVASCRIPT) | BIT(OPT_FILE), NULL,
          "cell ID [--python|--javascript] [--timeout DUR] [--file PATH=LOCALFILE]... [--json] [CODE|-]",
          "Run CODE (or stdin, when it is '-' or absent) in the session's interpreter, which keeps its\n"
          "variables between cells and prints the value of the last expression. The exit status is 0\n"
          "(it ran), 1 (it raised) or 124 (it timed out).\n\n"
          "  --python           a python cell (the default)\n"
          "  --javascript       a javascript cell\n"
          "  --timeout DUR      stop it after DUR (default 30s, at most 5m)\n"
          "  --file PATH=LOCAL  write LOCAL (UTF-8 text) to PATH in the workspace before the code runs\n"
          "                     (repeatable; 4M in all)\n"},
         1,
         2,
         sub_cell},
        {{"read", BIT(OPT_JSON) | BIT(OPT_OFFSET) | BIT(OPT_LIMIT), NULL,
          "read ID PATH [--offset N] [--limit N] [--json]",
          "Write the bytes of the workspace file PATH to stdout, exactly.\n\n"
          "  --offset N         start at byte N\n"
          "  --limit N          at most N bytes (one call; default: the whole file, at most 16M a call)\n"
          "  --json             the daemon's answer (content in base64, size, eof)\n"},
         2,
         2,
         sub_read},
        {{"write", BIT(OPT_JSON), NULL, "write ID PATH [LOCALFILE|-] [--json]",
          "Write the workspace file PATH (created or replaced) with the bytes of LOCALFILE, or of stdin\n"
          "when it is '-' or absent.\n"},
         2,
         3,
         sub_write},
        {{"persist", BIT(OPT_JSON) | BIT(OPT_FORCE), NULL, "persist ID OUT.tar [--force] [--json]",
          "Save the session's workspace as a tar archive in OUT.tar and print its SHA-256 (checked\n"
          "against the daemon's).\n\n"
          "  --force            overwrite OUT.tar if it exists\n"},
         2,
         2,
         sub_persist},
        {{"close", BIT(OPT_JSON), NULL, "close ID [--json]",
          "Close the session. Prints 'closed FINGERPRINT calls=N last=DIGEST ended=REASON': the calls\n"
          "recorded and the digest of the last run record, which an audit log can be checked against.\n"},
         1,
         1,
         sub_close},
        {{"list", BIT(OPT_JSON), NULL, "list [--json]",
          "List your open sessions: ID, calls, idle timeout, time left, owner.\n"},
         0,
         0,
         sub_list},
};

void cli_session_help(void) {
        printf("Usage: hull session SUBCOMMAND [OPTIONS] [ARGS]\n\n"
               "Drive sessions of a running 'hull serve': one sandbox kept for many calls, with its files,\n"
               "a shell whose working directory and exported variables persist, and python and javascript\n"
               "interpreters.\n\n"
               "Subcommands:\n");
        for (size_t i = 0; i < ELEMENTSOF(subs); i++)
                printf("  hull session %s\n", subs[i].s.synopsis);
        printf("\n" CONNECTION_HELP "\n"
               "ID is a session ID as 'open' prints it (1 to 64 lowercase hex digits). DUR is a duration:\n"
               "1500ms, 30s, 2.5s, 5m, 1h. Run 'hull session SUBCOMMAND --help' for one subcommand.\n"
               "Exit status: 0 on success, 1 when the daemon refused or failed (its code and message are\n"
               "printed), 2 on a usage error; exec and cell exit with the status of what ran (124: timeout).\n");
}

/* ---- the command ---- */

/* One of session's own options of subcommand sub (cli_client_cmd.own). Returns 0 or an exit
 * status. */
static int session_option(void *args, const cli_client_sub *sub, int c, const char *arg) {
        session_args *a = args;
        uint64_t v;
        switch (c) {
        case OPT_FORCE:
                a->force = true;
                break;
        case OPT_OWNER:
                if (!owner_is_valid(arg))
                        return usage_error("--owner wants 1 to 64 characters of [A-Za-z0-9._:-], got '%s'", arg);
                a->owner = arg;
                break;
        case OPT_LIFETIME:
                if (parse_duration_ms(arg, 1, SESSION_CLI_LIFETIME_MS_MAX, &a->lifetime_ms) < 0)
                        return usage_error("--lifetime wants a duration up to 12h such as 30m, got '%s'", arg);
                a->has_lifetime = true;
                break;
        case OPT_IDLE:
                if (parse_duration_ms(arg, SESSION_CLI_IDLE_MS_MIN, SESSION_CLI_LIFETIME_MS_MAX, &a->idle_ms) < 0)
                        return usage_error("--idle wants a duration from 1s to 12h such as 5m, got '%s'", arg);
                a->has_idle = true;
                break;
        case OPT_LANGUAGE:
                if (strcmp(arg, "python") != 0 && strcmp(arg, "javascript") != 0)
                        return usage_error("--language wants python or javascript, got '%s'", arg);
                for (size_t i = 0; i < a->n_languages; i++)
                        if (strcmp(a->languages[i], arg) == 0)
                                return usage_error("--language %s is given twice", arg);
                a->languages[a->n_languages++] = arg; /* two distinct values fit */
                break;
        case OPT_TIMEOUT:
                if (parse_duration_ms(arg, 1, PLIM_TIMEOUT_MS_MAX, &a->timeout_ms) < 0)
                        return usage_error("--timeout wants a duration from 1ms to 5m such as 30s, got '%s'", arg);
                a->has_timeout = true;
                break;
        case OPT_TIER:
                if (strcmp(arg, "container") != 0 && strcmp(arg, "kernel") != 0)
                        return usage_error("--tier wants container or kernel, got '%s'", arg);
                a->tier = arg;
                break;
        case OPT_ENV: {
                if (sub && strcmp(sub->name, "open") == 0) {
                        /* open --env NAME: an environment of `hull env` (checked by hull serve) */
                        if (!arg[0] || strlen(arg) >= ENV_NAME_MAX || strchr(arg, '='))
                                return usage_error("open --env wants an environment's name (see 'hull env "
                                                   "list'), got '%s'",
                                                   arg);
                        if (a->environment)
                                return usage_error("open --env is given twice%s", "");
                        a->environment = arg;
                        break;
                }
                const char *eq = strchr(arg, '=');
                if (parse_env_assignment(arg, HULL_API_ENV_NAME_MAX + 1 + HULL_API_ENV_VALUE_MAX) < 0 || !eq ||
                    (size_t) (eq - arg) > HULL_API_ENV_NAME_MAX || strlen(eq + 1) > HULL_API_ENV_VALUE_MAX ||
                    !utf8_is_valid(eq + 1, strlen(eq + 1)))
                        return usage_error("--env wants NAME=VALUE (NAME [A-Za-z_][A-Za-z0-9_]{0,127}, VALUE UTF-8 up "
                                           "to 8K), got '%s'",
                                           arg);
                for (size_t i = 0; i < a->n_env; i++)
                        if (strncmp(a->env[i], arg, (size_t) (eq - arg) + 1) == 0)
                                return usage_error("--env sets %.*s twice", (int) (eq - arg), arg);
                if (a->n_env >= HULL_API_ENV_MAX)
                        return usage_error("too many --env options (at most %u)", HULL_API_ENV_MAX);
                a->env[a->n_env++] = arg;
                break;
        }
        case OPT_PYTHON:
        case OPT_JAVASCRIPT: {
                const char *l = c == OPT_PYTHON ? "python" : "javascript";
                if (a->language && strcmp(a->language, l) != 0)
                        return usage_error("--python and --javascript exclude each other%s", "");
                a->language = l;
                break;
        }
        case OPT_FILE: {
                const char *eq = strchr(arg, '=');
                char path[PLIM_PATH_MAX + 1];
                if (!eq || (size_t) (eq - arg) > PLIM_PATH_MAX || !eq[1])
                        return usage_error("--file wants PATH=LOCALFILE, got '%s'", arg);
                memcpy(path, arg, (size_t) (eq - arg));
                path[eq - arg] = 0;
                if (!cell_path_is_valid(path))
                        return usage_error("--file wants a clean relative PATH (no '/', '.' or '..' segment at "
                                           "either end or inside, no '\\' or control character), got '%s'",
                                           path);
                if (a->n_files >= PLIM_FILES_MAX)
                        return usage_error("too many --file options (at most %u)", PLIM_FILES_MAX);
                a->files[a->n_files++] = arg;
                break;
        }
        case OPT_OFFSET:
                if (parse_size(arg, 0, INT64_MAX, &v) < 0)
                        return usage_error("--offset wants a byte offset such as 0 or 4096, got '%s'", arg);
                a->offset = v;
                break;
        case OPT_LIMIT:
                if (parse_size(arg, 1, WS_READ_MAX_BYTES, &v) < 0)
                        return usage_error("--limit wants a byte count from 1 to 16M, got '%s'", arg);
                a->limit = v;
                a->has_limit = true;
                break;
        default:
                break;
        }
        return 0;
}

static const cli_client_cmd session_cmd = {
        .name = CMD,
        .subcommands = "open, exec, cell, read, write, persist, close, list",
        .options = options,
        .subs = subs,
        .n_subs = ELEMENTSOF(subs),
        .sub_size = sizeof(subs[0]),
        .help = cli_session_help,
        .own = session_option,
};

int cli_session_main(int argc, char **argv) {
        session_args a = {.language = NULL};
        const cli_client_sub *found;
        int r = cli_client_parse(&session_cmd, argc, argv, &a.c, &a, &found);
        if (r || !found)
                return r;
        const session_sub *sub = (const session_sub *) found; /* its first member */
        if (a.c.n_pos < sub->min_pos)
                return usage_error("'hull session %s' wants %s", sub->s.name,
                                   sub->min_pos == 1                     ? "a session ID"
                                   : strcmp(sub->s.name, "exec") == 0    ? "a session ID and a command"
                                   : strcmp(sub->s.name, "persist") == 0 ? "a session ID and the archive to write"
                                                                         : "a session ID and a path");
        if (a.c.n_pos > sub->max_pos)
                return usage_error("unexpected argument '%s'", a.c.pos[sub->max_pos]);
        if (sub->min_pos > 0 && !cli_session_id_is_valid(a.c.pos[0]))
                return usage_error("'%s' is not a session ID (1 to 64 lowercase hex digits, as 'open' prints)",
                                   a.c.pos[0]);
        if ((sub->run == sub_read || sub->run == sub_write) && (!a.c.pos[1][0] || strlen(a.c.pos[1]) > WS_PATH_MAX))
                return usage_error("the workspace path must be 1 to %u bytes", WS_PATH_MAX);
        if (sub->run == sub_persist && !a.c.pos[1][0])
                return usage_error("the archive's path is empty%s", "");
        if (!a.language)
                a.language = "python";

        _cleanup_(cli_client_done) cli_client c = {0};
        r = cli_client_setup(&c, CMD, a.c.url, a.c.unix_path, a.c.token_file, a.c.insecure);
        if (r)
                return r;
        return sub->run(&c, &a);
}
