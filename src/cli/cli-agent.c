/* cli-agent.c: see cli-agent.h. The process is single-threaded while it clones (the zygote, then
 * the session's init); the model's HTTP transfers and the tools run after that, in this thread. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli-agent.h"
#include "cli-tools.h"
#include "cli.h"
#include "dotenv.h"
#include "fs-util.h"
#include "cli-env.h"
#include "home.h"
#include "limits.h"
#include "macro.h"
#include "sbx-session.h"
#include "parse-util.h"
#include "ss.h"
#include "time-util.h"

struct cli_agent {
        cli_agent_opts o;
        settings st;
        dotenv *env;
        char id[CLI_AGENT_ID_MAX];
        char dir[SBX_PATH_MAX];
        int zygote_fd;
        pid_t zygote_pid;
        ss_manager *ss;
        ss_session *s;
        model_client *model;
        bus *bus;
        svc_agent_recipe recipe; /* its tools' lists are gone once built: the rest (svc_agent_config) */
        cli_tools *tools;
        agent *agent;
        FILE *transcript;
        int dir_fd;   /* the directory, locked (flock) while this process uses it */
        bool created; /* this process made the directory (a new run or chat) */
        /* the terminal */
        bool stdout_tty;   /* stdout is a terminal: the answer's text goes without control characters */
        bool streamed;     /* answer text was streamed since the last model request started */
        bool line_open;    /* the last thing printed on stdout did not end a line */
        unsigned requests; /* model requests so far */
        uint64_t request_started_ms;
};

const char *cli_agent_id(const cli_agent *a) {
        return a->id;
}

const char *cli_agent_dir(const cli_agent *a) {
        return a->dir;
}

/* ---- the shared options ---- */

int cli_agent_option(const char *cmd, int c, const char *arg, cli_agent_args *args, cli_agent_opts *o) {
        uint64_t v;
        switch (c) {
        case CLI_AGENT_OPT_TOOL:
        case CLI_AGENT_OPT_HEADER: {
                bool tool = c == CLI_AGENT_OPT_TOOL;
                size_t *n = tool ? &args->n_tools : &args->n_headers;
                if (*n >= CLI_RUN_INPUTS_MAX)
                        return cli_usage_error(cmd, -1, "at most %u --%s options", CLI_RUN_INPUTS_MAX,
                                               tool ? "tool" : "header");
                if (!arg[0])
                        return cli_usage_error(cmd, -1, "--%s wants a value", tool ? "tool" : "header");
                (tool ? args->tools : args->headers)[(*n)++] = arg;
                return 1;
        }
        case CLI_AGENT_OPT_MODEL:
                o->flags.model = arg;
                return 1;
        case CLI_AGENT_OPT_PROVIDER:
                if (model_api_from_string(arg) < 0)
                        return cli_usage_error(cmd, -1, "--provider wants openai or anthropic, not '%s'", arg);
                o->flags.provider = arg;
                return 1;
        case CLI_AGENT_OPT_BASE_URL:
                o->flags.base_url = arg;
                return 1;
        case CLI_AGENT_OPT_API_KEY:
                o->flags.api_key = arg;
                return 1;
        case CLI_AGENT_OPT_NO_STREAM:
                o->flags.stream = 0;
                return 1;
        case CLI_AGENT_OPT_VERBOSE:
                o->verbose = true;
                return 1;
        case CLI_AGENT_OPT_YES:
                o->yes = true;
                return 1;
        case CLI_AGENT_OPT_MAX_TURNS:
                if (parse_uint64(arg, 1, CLI_RUN_TURNS_MAX, &v) < 0)
                        return cli_usage_error(cmd, -1, "--max-turns wants a count from 1 to %u, not '%s'",
                                               CLI_RUN_TURNS_MAX, arg);
                o->max_turns = (unsigned) v;
                return 1;
        case CLI_AGENT_OPT_TIMEOUT:
                if (parse_duration_ms(arg, 1000, SERVE_SESSION_LIFETIME_MS_MAX, &v) < 0)
                        return cli_usage_error(cmd, -1,
                                               "--timeout wants a duration from 1s to 12h (90s, 10m), not '%s'", arg);
                o->wall_ms = v;
                return 1;
        case CLI_AGENT_OPT_INSTRUCTIONS:
                o->instructions = arg;
                return 1;
        case CLI_AGENT_OPT_NO_CGROUP:
                o->no_cgroup = true;
                return 1;
        case CLI_AGENT_OPT_TIER:
                if (strcmp(arg, "kernel") != 0 && strcmp(arg, "container") != 0)
                        return cli_usage_error(cmd, -1, "--tier wants container or kernel (gVisor), not '%s'", arg);
                o->kernel = strcmp(arg, "kernel") == 0;
                return 1;
        case CLI_AGENT_OPT_ENV:
                if (!env_name_is_valid(arg))
                        return cli_usage_error(cmd, -1, "--env wants an environment's name (hull env list), not '%s'",
                                               arg);
                o->environment = arg;
                return 1;
        case CLI_AGENT_OPT_MCP: {
                const char *eq = strchr(arg, '=');
                if (args->n_mcp >= MCP_SERVERS_MAX)
                        return cli_usage_error(cmd, -1, "at most %u --mcp options", MCP_SERVERS_MAX);
                if (!eq || eq == arg || !eq[1])
                        return cli_usage_error(cmd, -1, "--mcp wants NAME=COMMAND [ARGS...], not '%s'", arg);
                args->mcp[args->n_mcp++] = arg;
                return 1;
        }
        case CLI_AGENT_OPT_MCP_SANDBOX:
                if (args->n_mcp_sandbox >= MCP_SERVERS_MAX)
                        return cli_usage_error(cmd, -1, "at most %u --mcp-sandbox options", MCP_SERVERS_MAX);
                if (!mcp_server_name_valid(arg))
                        return cli_usage_error(cmd, -1,
                                               "--mcp-sandbox wants a server's NAME (of --mcp or config.json), "
                                               "not '%s'",
                                               arg);
                args->mcp_sandbox[args->n_mcp_sandbox++] = arg;
                return 1;
        default:
                return 0;
        }
}

void cli_agent_args_done(cli_agent_args *args, cli_agent_opts *o) {
        args->headers[args->n_headers] = NULL;
        o->flags.headers = args->n_headers ? args->headers : NULL;
        o->flags.n_headers = args->n_headers;
        o->tool_names = args->n_tools ? args->tools : NULL;
        o->n_tool_names = args->n_tools;
        o->mcp_specs = args->n_mcp ? args->mcp : NULL;
        o->n_mcp_specs = args->n_mcp;
        o->mcp_sandboxed = args->n_mcp_sandbox ? args->mcp_sandbox : NULL;
        o->n_mcp_sandboxed = args->n_mcp_sandbox;
}

/* ---- showing the bus ---- */

static const char *str_of(const json_t *o, const char *key) {
        const char *s = json_string_value(json_object_get(o, key));
        return s ? s : "";
}

/* The length of a sequence at p that must not reach a terminal as it is: a control character
 * (C0, DEL; keep_lines: not \n and \t), a C1 control (U+0080-U+009F) or a bidi or zero-width
 * format character (U+200B-U+200F, U+202A-U+202E, U+2066-U+2069), which could move the cursor,
 * rewrite what was shown or reorder it. 0: p may be shown. */
static size_t unsafe_len(const unsigned char *p, size_t left, bool keep_lines) {
        if (p[0] < 0x20 || p[0] == 0x7f)
                return keep_lines && (p[0] == '\n' || p[0] == '\t') ? 0 : 1;
        if (left >= 2 && p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
                return 2;
        if (left >= 3 && p[0] == 0xe2 && p[1] == 0x80 &&
            ((p[2] >= 0x8b && p[2] <= 0x8f) || (p[2] >= 0xaa && p[2] <= 0xae)))
                return 3;
        if (left >= 3 && p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)
                return 3;
        return 0;
}

/* Write n bytes of untrusted text (the model's, a tool's) to f, what could drive a terminal
 * shown as '?' (when sanitize: f is or may be a terminal). */
void cli_term_write(FILE *f, const char *t, size_t n, bool keep_lines, bool sanitize) {
        if (!sanitize) {
                fwrite(t, 1, n, f);
                return;
        }
        const unsigned char *p = (const unsigned char *) t;
        size_t start = 0;
        for (size_t i = 0; i < n;) {
                size_t k = unsafe_len(p + i, n - i, keep_lines);
                if (!k) {
                        i++;
                        continue;
                }
                fwrite(t + start, 1, i - start, f);
                fputc('?', f);
                i += k;
                start = i;
        }
        fwrite(t + start, 1, n - start, f);
}

/* One line of a tool call's input for people: the field a person recognises, else the JSON; cut
 * at size bytes, line ends as spaces, what could drive a terminal as '?'. */
void cli_input_line(const json_t *input, char *buf, size_t size) {
        static const char *const keys[] = {"command", "file_path", "path", "pattern",  "url",
                                           "query",   "sql",       "code", "handle_id"};
        const char *v = NULL;
        for (size_t i = 0; i < ELEMENTSOF(keys) && !v; i++)
                v = json_string_value(json_object_get(input, keys[i]));
        _cleanup_free_ char *dumped = NULL;
        if (!v)
                v = dumped = json_dumps(input, JSON_COMPACT);
        if (!v)
                v = "";
        const unsigned char *p = (const unsigned char *) v;
        size_t n = strlen(v), o = 0, i = 0;
        while (i < n && o + 4 < size) {
                size_t k = unsafe_len(p + i, n - i, false);
                buf[o++] = k ? (p[i] == '\n' || p[i] == '\t' ? ' ' : '?') : v[i];
                i += k ? k : 1;
        }
        if (i < n) { /* cut: never inside a character */
                while (o > 0 && ((unsigned char) buf[o - 1] & 0xc0) == 0x80)
                        o--;
                if (o > 0 && ((unsigned char) buf[o - 1] & 0xc0) == 0xc0)
                        o--;
                memcpy(buf + o, "...", 4);
        } else
                buf[o] = '\0';
}

static void end_line(cli_agent *a) {
        if (a->line_open) {
                fputc('\n', stdout);
                fflush(stdout);
                a->line_open = false;
        }
}

static void show(void *ud, const json_t *ev, bool persisted) {
        cli_agent *a = ud;
        const char *type = str_of(ev, "type");
        char line[CLI_AGENT_LINE_MAX];

        if (persisted && a->transcript) {
                if (json_dumpf(ev, a->transcript, JSON_COMPACT) == 0)
                        fputc('\n', a->transcript);
                fflush(a->transcript);
        }
        if (strcmp(type, "hull.text_delta") == 0) {
                if (a->o.print_answer) {
                        const char *t = str_of(ev, "text");
                        cli_term_write(stdout, t, strlen(t), true, a->stdout_tty);
                        fflush(stdout);
                        if (*t)
                                a->line_open = t[strlen(t) - 1] != '\n';
                }
                a->streamed = true;
                return;
        }
        if (strcmp(type, "agent.message") == 0) {
                if (a->o.print_answer && !a->streamed) {
                        const json_t *c;
                        size_t i;
                        json_array_foreach(json_object_get(ev, "content"), i, c) {
                                const char *t = str_of(c, "text");
                                cli_term_write(stdout, t, strlen(t), true, a->stdout_tty);
                                if (*t)
                                        a->line_open = t[strlen(t) - 1] != '\n';
                        }
                        fflush(stdout);
                }
                return;
        }
        if (strcmp(type, "span.model_request_start") == 0) {
                end_line(a); /* the text of the request before (it asked for tools) ends its line */
                a->streamed = false;
                a->requests++;
                a->request_started_ms = now_mono_ms();
                if (a->o.verbose)
                        fprintf(stderr, "hull: model request %u\n", a->requests);
                return;
        }
        if (!a->o.verbose && !a->o.compact)
                return;
        if (strcmp(type, "span.model_request_end") == 0) {
                const json_t *u = json_object_get(ev, "model_usage");
                if (a->o.verbose)
                        fprintf(stderr,
                                "hull: model answered in %" PRIu64 " ms (%" PRId64 " tokens in, %" PRId64 " out)%s\n",
                                now_mono_ms() - a->request_started_ms,
                                (int64_t) json_integer_value(json_object_get(u, "input_tokens")),
                                (int64_t) json_integer_value(json_object_get(u, "output_tokens")),
                                json_is_true(json_object_get(ev, "is_error")) ? " with an error" : "");
        } else if (strcmp(type, "agent.tool_use") == 0 || strcmp(type, "agent.mcp_tool_use") == 0) {
                cli_input_line(json_object_get(ev, "input"), line, sizeof(line));
                end_line(a);
                const char *srv = str_of(ev, "mcp_server_name");
                fprintf(stderr, "hull: %s%s%s %s%s\n", srv, srv[0] ? "/" : "", str_of(ev, "name"), line,
                        strcmp(str_of(ev, "evaluated_permission"), "deny") == 0 ? " (denied by policy)" : "");
        } else if (strcmp(type, "hull.tool_progress") == 0) {
                fprintf(stderr, "hull:   ... %" PRId64 " s%s%s\n",
                        (int64_t) json_integer_value(json_object_get(ev, "elapsed_ms")) / 1000,
                        json_object_get(ev, "note") ? ": " : "", str_of(ev, "note"));
        } else if (strcmp(type, "agent.tool_result") == 0 || strcmp(type, "agent.mcp_tool_result") == 0) {
                const json_t *c = json_array_get(json_object_get(ev, "content"), 0);
                const char *t = str_of(c, "text");
                size_t n = strcspn(t, "\n");
                bool err = json_is_true(json_object_get(ev, "is_error"));
                bool show_text = err || a->o.verbose;
                fprintf(stderr, "hull:   %s in %" PRId64 " ms%s", err ? "failed" : "done",
                        (int64_t) json_integer_value(json_object_get(ev, "hull_duration_ms")), show_text ? ": " : "");
                if (show_text) {
                        size_t shown = n > CLI_AGENT_LINE_MAX ? CLI_AGENT_LINE_MAX : n;
                        while (shown > 0 && shown < n && ((unsigned char) t[shown] & 0xc0) == 0x80)
                                shown--;
                        cli_term_write(stderr, t, shown, false, true);
                        fputs(shown < n || t[n] ? " ..." : "", stderr);
                }
                fputc('\n', stderr);
        } else if (strcmp(type, "hull.mcp_message") == 0 && a->o.verbose) {
                const json_t *d = json_object_get(ev, "data");
                _cleanup_free_ char *dumped = json_is_string(d) ? NULL : json_dumps(d, JSON_COMPACT | JSON_ENCODE_ANY);
                const char *t = json_is_string(d) ? json_string_value(d) : dumped ? dumped : "";
                size_t n = strlen(t);
                end_line(a);
                fprintf(stderr, "hull: %s %s: ", str_of(ev, "source"), str_of(ev, "level"));
                cli_term_write(stderr, t, n > CLI_AGENT_LINE_MAX ? CLI_AGENT_LINE_MAX : n, false, true);
                fputc('\n', stderr);
        } else if (strcmp(type, "hull.network") == 0) {
                size_t i;
                const json_t *l;
                end_line(a);
                json_array_foreach(json_object_get(ev, "connections"), i, l) {
                        const char *t = json_string_value(l) ? json_string_value(l) : "";
                        size_t n = strlen(t);
                        fputs("hull:   network: ", stderr);
                        cli_term_write(stderr, t, n > CLI_AGENT_LINE_MAX ? CLI_AGENT_LINE_MAX : n, false, true);
                        fputc('\n', stderr);
                }
        } else if (strcmp(type, "hull.handle_created") == 0) {
                const json_t *h = json_object_get(ev, "handle");
                fprintf(stderr, "hull:   handle %s (%s, %" PRId64 " bytes)\n", str_of(h, "id"), str_of(h, "kind"),
                        (int64_t) json_integer_value(json_object_get(h, "bytes")));
        } else if (strcmp(type, "agent.thread_context_compacted") == 0) {
                fprintf(stderr, "hull: context budget: %" PRId64 " older tool results replaced by their summaries\n",
                        (int64_t) json_integer_value(json_object_get(ev, "hull_elided")));
        } else if (strcmp(type, "session.error") == 0) {
                const json_t *err = json_object_get(ev, "error");
                const char *retry = str_of(json_object_get(err, "retry_status"), "type");
                end_line(a);
                if (strcmp(retry, "retrying") != 0)
                        return; /* the final error is printed by the command */
                fputs("hull: ", stderr);
                cli_term_write(stderr, str_of(err, "message"), strlen(str_of(err, "message")), false, true);
                fputs(" (retrying)\n", stderr);
        }
}

/* An MCP server's log message (notifications/message): hull.mcp_message on the bus. */
static void mcp_message(void *ud, const char *server, const char *level, const char *logger, const json_t *data) {
        cli_agent *a = ud;
        char source[MCP_SERVER_NAME_MAX + 8];
        if (!a->bus)
                return;
        snprintf(source, sizeof(source), "mcp:%s", server);
        json_t *ev = json_pack("{s:s, s:s, s:s, s:O?}", "type", "hull.mcp_message", "source", source, "level", level,
                               "data", data);
        if (ev && logger)
                json_object_set_new(ev, "logger", json_string(logger));
        if (ev)
                (void) bus_emit(a->bus, ev, NULL);
}

/* ---- asking on the terminal ---- */

static agent_decision decide(void *ud, const char *tool_use_id, const char *name, const json_t *input,
                             char **ret_message) {
        cli_agent *a = ud;
        char answer[16];

        if (a->o.yes)
                return AGENT_ALLOW;
        FILE *tty = fopen("/dev/tty", "r+e");
        if (!tty) {
                *ret_message = strdup("denied: nobody can be asked (no terminal); the user may run hull with --yes, "
                                      "or set the tool's policy in config.json");
                return AGENT_DENY;
        }
        /* the whole input, as JSON with every non-ASCII character escaped: what is approved is
         * what is shown */
        _cleanup_free_ char *all = json_dumps(input, JSON_COMPACT | JSON_ENSURE_ASCII);
        size_t len = all ? strlen(all) : 0;
        end_line(a);
        fprintf(tty, "hull: %s wants to run with this input:\n", name);
        cli_term_write(tty, all ? all : "{}", len > CLI_APPROVAL_SHOWN_MAX ? CLI_APPROVAL_SHOWN_MAX : len, false, true);
        if (len > CLI_APPROVAL_SHOWN_MAX)
                fprintf(tty, "\n[... %zu more bytes not shown: answer N unless you trust all of it]",
                        len - CLI_APPROVAL_SHOWN_MAX);
        fprintf(tty, "\nhull: allow %s? [y/N] ", name);
        fflush(tty);
        bool yes = fgets(answer, sizeof(answer), tty) && (answer[0] == 'y' || answer[0] == 'Y');
        fclose(tty);
        if (!yes)
                *ret_message = strdup("denied by the user");
        (void) tool_use_id;
        return yes ? AGENT_ALLOW : AGENT_DENY;
}

/* ---- the directory ---- */

typedef enum close_mode {
        CLOSE_KEEP,    /* save the workspace, the handles and the conversation */
        CLOSE_REMOVE,  /* remove the directory */
        CLOSE_DISCARD, /* a failed open: save nothing; remove the directory if this process made it */
} close_mode;

static int close_all(cli_agent *a, close_mode mode, hull_error *e);

static int make_id(char ret[CLI_AGENT_ID_MAX]) {
        uint8_t rnd[3];
        time_t t = time(NULL);
        struct tm tm;
        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
                return -EIO;
        gmtime_r(&t, &tm);
        snprintf(ret, CLI_AGENT_ID_MAX, "%04d%02d%02d-%02d%02d%02d-%02x%02x%02x", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, rnd[0], rnd[1], rnd[2]);
        return 0;
}

/* A conversation's id as hull makes them (a handle id's characters), short enough to keep. */
static bool id_is_valid(const char *id) {
        return strlen(id) < CLI_AGENT_ID_MAX && hd_id_is_valid(id);
}

/* DIR/NAME into ret, or -ENAMETOOLONG with *e. */
static int join(char ret[SBX_PATH_MAX], const char *dir, const char *name, hull_error *e) {
        if (path_join(ret, SBX_PATH_MAX, dir, name) < 0)
                return hull_fail(e, -ENAMETOOLONG, "the path %.64s.../%.64s is too long (a shorter HULL_HOME?)", dir,
                                 name);
        return 0;
}

static int write_file_at(const char *dir, const char *name, const char *data, size_t len, hull_error *e) {
        char path[SBX_PATH_MAX], tmp[SBX_PATH_MAX], tmp_name[SBX_PATH_MAX];
        int r = join(path, dir, name, e);
        if (r < 0)
                return r;
        if ((size_t) snprintf(tmp_name, sizeof(tmp_name), ".%s.tmp", name) >= sizeof(tmp_name))
                return hull_fail(e, -ENAMETOOLONG, "the name %.64s is too long", name);
        r = join(tmp, dir, tmp_name, e);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return hull_err(e, -errno, "cannot write %s", tmp);
        r = loop_write(fd, data, len);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlink(tmp);
                return hull_err(e, r, "cannot write %s", path);
        }
        return 0;
}

/* ---- the directory ---- */

/* Hold the directory for this process: a second hull chat of the same conversation would share
 * its live store and overwrite its files. */
static int lock_dir(cli_agent *a, hull_error *e) {
        a->dir_fd = open(a->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (a->dir_fd < 0)
                return hull_err(e, -errno, "cannot open %s", a->dir);
        if (flock(a->dir_fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK
                               ? hull_fail(e, -EBUSY, "%s is in use by another hull process (one at a time)", a->id)
                               : hull_err(e, -errno, "cannot lock %s", a->dir);
        return 0;
}

/* A kept conversation.json: a regular file (no link followed, no FIFO), bounded, JSON. */
static int load_conversation(const char *path, const char *id, json_t **ret, hull_error *e) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0)
                return hull_fail(e, errno == ENOENT ? -ENOENT : -EINVAL, "conversation %s cannot be read: %s", id,
                                 strerror(errno));
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t) st.st_size > CLI_CONVERSATION_BYTES_MAX)
                return hull_fail(e, -EINVAL,
                                 "conversation %s: conversation.json is not a regular file of at most %u MiB", id,
                                 CLI_CONVERSATION_BYTES_MAX >> 20);
        json_error_t je;
        json_t *c = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
        if (!c)
                return hull_fail(e, -EINVAL, "conversation %s cannot be read: line %d: %s", id, je.line, je.text);
        *ret = c;
        return 0;
}

/* ---- open ---- */

static int start_engine(cli_agent *a, hull_error *e) {
        char audit[SBX_PATH_MAX], stores[SBX_PATH_MAX], kept[SBX_PATH_MAX], manifest[SBX_PATH_MAX];
        int r;

        r = home_dir(a->dir, ".hull", 0700, false, audit, e);
        if (r < 0)
                return r;
        /* the live stores in .stores (removed at the end); the handles kept in handles/ */
        r = home_dir(a->dir, ".stores", 0711, true, stores, e);
        if (r < 0)
                return r;
        r = join(kept, a->dir, "handles", e);
        if (r >= 0)
                r = join(manifest, kept, "_manifest.json", e);
        if (r < 0)
                return r;
        /* the zygote first: numpy and pandas load while the rest starts (a failure: cold python) */
        a->zygote_fd = -1;
        if (access("/usr/bin/python3", X_OK) == 0) {
                hull_error ze = {0};
                a->zygote_fd = sbx_zygote_start(&a->zygote_pid, &ze);
                if (a->zygote_fd < 0 && a->o.verbose)
                        fprintf(stderr, "hull: python starts cold: %s\n", ze.msg);
        }
        r = ss_new_local(a->zygote_fd, !a->o.no_cgroup, audit, stores, &a->ss, e);
        if (r < 0)
                return r;
        ss_open_opts oo = {.principal = "cli",
                           .owner = "",
                           .handles_from = access(manifest, F_OK) == 0 ? kept : NULL,
                           .tier = a->o.kernel ? SBX_TIER_KERNEL : SBX_TIER_CONTAINER};
        _cleanup_(svc_env_done) svc_env env = {.policy.log_fd = -1};
        if (a->o.environment) {
                char home[SBX_PATH_MAX];
                if ((r = home_resolve(home, e)) < 0 ||
                    (r = cli_env_resolve(home, a->o.environment, true, &env, NULL, e)) < 0)
                        return r;
                a->recipe.env = &env; /* its layer, its network, how its records name it */
                svc_agent_open_opts(&a->recipe, &oo);
                a->recipe.env = NULL;
        }
        return ss_open(a->ss, &oo, &a->s, e);
}

/* The agent's recipe (svc-agent.h): hull's tools (--tool: only those) and the MCP servers of
 * config.json and --mcp, their policies from the settings; built into a->tools. */
static int build_tools(cli_agent *a, hull_error *e) {
        const cli_agent_opts *o = &a->o;
        svc_agent_tool named[CLI_RUN_INPUTS_MAX];
        _cleanup_(cli_mcp_list_done) cli_mcp_list ml = {0};
        svc_agent *built = NULL;
        int r;
        for (size_t i = 0; i < o->n_tool_names && i < CLI_RUN_INPUTS_MAX; i++)
                named[i] = (svc_agent_tool){.rule = {.name = o->tool_names[i], .enabled = true, .from_settings = true}};
        r = cli_mcp_list_make(&a->st, o->mcp_specs, o->n_mcp_specs, o->mcp_sandboxed, o->n_mcp_sandboxed, &ml, e);
        if (r < 0)
                return r;
        if (ml.n > 0) /* a server gone while hull writes to it is an EPIPE, not the end of hull */
                signal(SIGPIPE, SIG_IGN);
        a->recipe = (svc_agent_recipe){
                .st = &a->st,
                .model = &a->st.model,
                .instructions = o->instructions,
                .all_builtins = !o->tool_names,
                .all_rule = {.enabled = true, .from_settings = true},
                .tools = named,
                .n_tools = o->tool_names ? o->n_tool_names : 0,
                .mcp = ml.mcp,
                .n_mcp = ml.n,
                .strict = true,
                .max_tools = CLI_TOOLS_MAX,
                .cancel = o->interrupt,
                .on_message = mcp_message,
                .on_message_ud = a,
                .max_turns = o->max_turns,
                .wall_ms = o->wall_ms,
        };
        r = svc_agent_build(&a->recipe, &built, NULL, e);
        a->recipe.tools = NULL; /* named and ml go now */
        a->recipe.n_tools = 0;
        a->recipe.mcp = NULL;
        a->recipe.n_mcp = 0;
        if (r < 0)
                return r;
        return cli_tools_new(built, &a->tools, e);
}

int cli_agent_open(const cli_agent_opts *o, cli_agent **ret, hull_error *e) {
        _cleanup_free_ cli_agent *a = calloc(1, sizeof(*a));
        char home[SBX_PATH_MAX], config[SBX_PATH_MAX], parent[SBX_PATH_MAX];
        _cleanup_(json_decrefp) json_t *conversation = NULL;
        int r;

        if (!a)
                return -ENOMEM;
        a->o = *o;
        a->zygote_fd = -1;
        a->dir_fd = -1;
        a->stdout_tty = isatty(STDOUT_FILENO);
        r = dotenv_load(".env", &a->env, e);
        if (r < 0)
                goto fail;
        r = home_resolve(home, e);
        if (r < 0)
                goto fail;
        r = home_mkdir(home, 0711, true, e);
        if (r < 0)
                goto fail;
        r = join(config, home, "config.json", e);
        if (r < 0)
                goto fail;
        r = settings_load(&o->flags, config, a->env, &a->st, e);
        if (r < 0)
                goto fail;
        /* what can fail on the user's settings fails before a directory is made */
        r = build_tools(a, e);
        if (r < 0)
                goto fail;
        /* the model client (libcurl loaded) before the zygote, whose imports take a CPU from here on */
        r = model_client_new(a->recipe.model, &a->model, e);
        if (r < 0)
                goto fail;
        r = home_dir(home, o->kind == CLI_AGENT_RUN ? "runs" : "chats", 0711, true, parent, e);
        if (r < 0)
                goto fail;
        if (o->resume_id) {
                if (!id_is_valid(o->resume_id)) {
                        r = hull_fail(e, -EINVAL, "'%.64s' is not a conversation id (hull chat --list shows them)",
                                      o->resume_id);
                        goto fail;
                }
                snprintf(a->id, sizeof(a->id), "%s", o->resume_id);
                char path[SBX_PATH_MAX];
                r = join(a->dir, parent, a->id, e);
                if (r >= 0)
                        r = join(path, a->dir, "conversation.json", e);
                if (r < 0)
                        goto fail;
                if (access(a->dir, F_OK) < 0) {
                        r = hull_fail(e, -ENOENT, "no conversation %s (hull chat --list shows them)", a->id);
                        goto fail;
                }
                r = lock_dir(a, e);
                if (r < 0)
                        goto fail;
                r = load_conversation(path, a->id, &conversation, e);
                if (r < 0)
                        goto fail;
        } else {
                r = make_id(a->id);
                if (r < 0) {
                        r = hull_err(e, r, "cannot make an id");
                        goto fail;
                }
                r = join(a->dir, parent, a->id, e);
                if (r < 0)
                        goto fail;
                if (mkdir(a->dir, 0711) < 0) {
                        r = hull_err(e, -errno, "cannot create %s", a->dir);
                        goto fail;
                }
                a->created = true;
                r = lock_dir(a, e);
                if (r < 0)
                        goto fail;
        }
        r = start_engine(a, e);
        if (r < 0)
                goto fail;
        if (o->resume_id) {
                r = cli_tools_restore(a->ss, a->s, a->dir, e);
                if (r < 0)
                        goto fail;
        }
        /* python warms up while the first model request is in flight */
        cli_tools_warm_start(a->tools, a->ss, a->s);
        r = bus_new(NULL, NULL, &a->bus);
        if (r < 0)
                goto fail;
        char tpath[SBX_PATH_MAX];
        r = join(tpath, a->dir, "transcript.jsonl", e);
        if (r < 0)
                goto fail;
        int tfd = open(tpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (tfd >= 0)
                a->transcript = fdopen(tfd, "a");
        if (!a->transcript) {
                r = hull_err(e, -errno, "cannot write %s", tpath);
                if (tfd >= 0)
                        close(tfd);
                goto fail;
        }
        r = bus_subscribe(a->bus, show, a);
        if (r < 0)
                goto fail;
        agent_config ac = {
                .model = a->model,
                .bus = a->bus,
                .ss = a->ss,
                .session = a->s,
                .decide = decide,
                .decide_ud = a,
        };
        svc_agent_config(&a->recipe, NULL, &ac);
        ac.tools = cli_tools_defs(a->tools);
        ac.policies = cli_tools_policies(a->tools);
        ac.n_tools = cli_tools_count(a->tools);
        r = agent_new(&ac, conversation, &a->agent, e);
        if (r < 0)
                goto fail;
        *ret = TAKE_PTR(a);
        return 0;
fail:
        close_all(TAKE_PTR(a), CLOSE_DISCARD, NULL);
        return r;
}

/* ---- inputs ---- */

static hd_format format_of(const char *name) {
        static const struct {
                const char *ext;
                hd_format f;
        } by_ext[] = {{".csv", HD_FORMAT_CSV},          {".tsv", HD_FORMAT_TSV},
                      {".tab", HD_FORMAT_TSV},          {".json", HD_FORMAT_JSON_ARRAY},
                      {".jsonl", HD_FORMAT_JSON_LINES}, {".ndjson", HD_FORMAT_JSON_LINES}};
        size_t n = strlen(name);
        for (size_t i = 0; i < ELEMENTSOF(by_ext); i++) {
                size_t k = strlen(by_ext[i].ext);
                if (n > k && strcasecmp(name + n - k, by_ext[i].ext) == 0)
                        return by_ext[i].f;
        }
        return HD_FORMAT_BINARY;
}

/* An input id from the file name: its stem, letters, digits and _ (sales-2024.csv -> sales_2024),
 * made unique among the session's handles. */
static void input_id_of(cli_agent *a, const char *name, char ret[HD_EXCHANGE_ID_MAX]) {
        char stem[HD_EXCHANGE_ID_MAX - 8];
        size_t o = 0;
        for (const char *p = name; *p && *p != '.' && o + 1 < sizeof(stem); p++)
                stem[o++] =
                        (char) ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ? *p
                                                                                                                 : '_');
        stem[o] = '\0';
        if (o == 0 || !((stem[0] >= 'a' && stem[0] <= 'z') || (stem[0] >= 'A' && stem[0] <= 'Z')))
                snprintf(stem, sizeof(stem), "input");
        _cleanup_(json_decrefp) json_t *list = NULL;
        ss_handles_list(a->ss, a->s, &list, NULL);
        for (unsigned n = 1;; n++) {
                if (n == 1)
                        snprintf(ret, HD_EXCHANGE_ID_MAX, "%s", stem);
                else
                        snprintf(ret, HD_EXCHANGE_ID_MAX, "%s_%u", stem, n);
                bool taken = false;
                size_t i;
                json_t *h;
                json_array_foreach(list, i, h) taken = taken || strcmp(str_of(h, "id"), ret) == 0;
                if (!taken)
                        return;
        }
}

int cli_agent_add_input(cli_agent *a, const char *path, json_t **ret_summary, hull_error *e) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        char id[HD_EXCHANGE_ID_MAX];
        struct stat st;
        int r;

        if (fd < 0)
                return hull_err(e, -errno, "--input %s: cannot open it", path);
        if (fstat(fd, &st) < 0)
                return hull_err(e, -errno, "--input %s: cannot stat it", path);
        if (!S_ISREG(st.st_mode))
                return hull_fail(e, -EINVAL, "--input %s: not a regular file", path);
        const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        cli_tools_warm_wait(a->tools);
        r = ss_call_begin(a->ss, a->s, -1, e);
        if (r < 0)
                return r;
        input_id_of(a, name, id);
        json_t *record = NULL;
        r = ss_handles_add_input_fd(a->ss, a->s, id, name, format_of(name), fd, NULL, ret_summary, &record, e);
        json_decref(record);
        ss_call_end(a->ss, a->s);
        if (r < 0 && e) {
                char msg[HULL_ERROR_MSG_MAX];
                memcpy(msg, e->msg, sizeof(msg));
                hull_fail(e, r, "--input %.200s: %.280s", path, msg);
        }
        return r;
}

json_t *cli_agent_handles(cli_agent *a) {
        json_t *list = NULL;
        cli_tools_warm_wait(a->tools);
        if (ss_call_begin(a->ss, a->s, -1, NULL) < 0)
                return json_array();
        ss_handles_list(a->ss, a->s, &list, NULL);
        ss_call_end(a->ss, a->s);
        return list ? list : json_array();
}

/* ---- turns ---- */

int cli_agent_turn(cli_agent *a, const char *text, agent_turn_result *ret, hull_error *e) {
        int r = agent_turn(a->agent, text, a->o.interrupt, ret, e);
        end_line(a);
        return r;
}

/* ---- close ---- */

int cli_agent_checkpoint(cli_agent *a, hull_error *e) {
        if (!a->agent)
                return 0;
        _cleanup_free_ char *conv = json_dumps(agent_conversation(a->agent), JSON_COMPACT);
        if (!conv)
                return hull_err(e, -ENOMEM, "cannot write the conversation: out of memory");
        return write_file_at(a->dir, "conversation.json", conv, strlen(conv), e);
}

static int close_all(cli_agent *a, close_mode mode, hull_error *e) {
        int r = 0;

        if (!a)
                return 0;
        bool closed = false;
        if (mode != CLOSE_KEEP) {
                /* Nothing more runs in the session: a warm-up still waiting for the zygote's imports
                 * ends now (its socket to the zygote closes) instead of holding up the exit. */
                if (a->zygote_fd >= 0 && a->zygote_pid > 0)
                        (void) kill(a->zygote_pid, SIGKILL);
                if (a->s) {
                        ss_close_info ci;
                        ss_close(a->ss, a->s, &ci);
                        closed = true;
                }
        }
        cli_tools_warm_wait(a->tools);
        /* the workspace and the handles first, the conversation that refers to them last */
        if (mode == CLOSE_KEEP && a->s)
                r = cli_tools_save(a->ss, a->s, a->dir, e);
        if (mode == CLOSE_KEEP && r >= 0)
                r = cli_agent_checkpoint(a, e);
        agent_free(a->agent);
        cli_tools_free(a->tools);
        if (a->s) {
                ss_close_info ci;
                if (!closed)
                        ss_close(a->ss, a->s, &ci);
                ss_unref(a->ss, a->s);
        }
        if (a->ss) {
                ss_shutdown(a->ss, 5000);
                ss_free(a->ss);
        }
        if (a->zygote_fd >= 0)
                close(a->zygote_fd);
        if (a->transcript)
                fclose(a->transcript);
        bus_free(a->bus);
        model_client_free(a->model);
        if (a->dir[0] && (mode == CLOSE_REMOVE || (mode == CLOSE_DISCARD && a->created)))
                (void) rm_rf_at(AT_FDCWD, a->dir);
        else if (a->dir[0] && a->dir_fd >= 0)
                (void) rm_rf_at(a->dir_fd, ".stores"); /* the live store: its handles were exported */
        safe_close(a->dir_fd);
        settings_done(&a->st);
        dotenv_free(a->env);
        free(a);
        return r;
}

int cli_agent_close(cli_agent *a, bool keep, hull_error *e) {
        return close_all(a, keep ? CLOSE_KEEP : CLOSE_REMOVE, e);
}
