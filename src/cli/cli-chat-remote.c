/* cli-chat-remote.c: `hull chat --server URL AGENT_ID`: a conversation with an agent of a hull
 * serve (or any Claude Managed Agents compatible /v1 API) from the terminal. It makes an
 * environment and a session (unless --session), opens the session's event stream before sending
 * anything (so no event of the turn is missed), then sends each line as a user.message and shows
 * the turn: the answer's text as it streams (event_delta previews, else the agent.message), each
 * tool call as one line on stderr, a y/n question for a tool call waiting for confirmation
 * (user.tool_confirmation), Ctrl-C as user.interrupt; the turn ends at session.status_idle (not
 * requires_action). Two libcurl clients: one holds the stream on a thread of its own, the other
 * sends. The lines are read by the prompt loop hull chat shares (cli-prompt.c). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli-agent.h"
#include "cli-prompt.h"
#include "cli-client.h"
#include "cli.h"
#include "dynbuf.h"
#include "http-client.h"
#include "limits.h"
#include "macro.h"
#include "sse.h"
#include "time-util.h"

#define CMD "chat"

enum {
        OPT_SERVER = 0x100,
        OPT_API_KEY,
        OPT_SESSION,
        OPT_ENVIRONMENT,
        OPT_INSECURE,
        OPT_YES,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"server", required_argument, NULL, OPT_SERVER},
        {"api-key", required_argument, NULL, OPT_API_KEY},
        {"session", required_argument, NULL, OPT_SESSION},
        {"environment", required_argument, NULL, OPT_ENVIRONMENT},
        {"insecure", no_argument, NULL, OPT_INSECURE},
        {"yes", no_argument, NULL, OPT_YES},
        {},
};

void cli_chat_remote_help(void) {
        printf("Usage: hull chat --server URL [--api-key KEY] [--session ID | --environment ID] [--yes] AGENT_ID\n\n"
               "Talk with an agent of hull serve's /v1 API (Claude Managed Agents compatible) from the\n"
               "terminal: a session is made for AGENT_ID (in a new environment \"hull-chat\" unless\n"
               "--environment), each line you type is sent as a user.message, the answer streams as it\n"
               "comes, tool calls show as one line each on stderr, a tool call that needs your approval\n"
               "asks y/n. Ctrl-C interrupts the turn; Ctrl-D or /exit ends the chat (the session stays on\n"
               "the server: continue it with --session ID).\n\n"
               "Options:\n"
               "  --server URL       the server (http://127.0.0.1:8750 for a local hull serve)\n"
               "  --api-key KEY      the API key (default $HULL_SERVE_KEY; 'hull key create' makes one)\n"
               "  --session ID       continue this session instead of making one (AGENT_ID is then optional)\n"
               "  --environment ID   make the session in this environment\n"
               "  --yes              allow every tool call that asks, without asking\n"
               "  --insecure         allow cleartext http to a host that is not loopback\n\n"
               "In the chat: /exit ends it, /id prints the session's id.\n");
}

#define usage_error(...) cli_usage_error(CMD, CLI_EXIT_USAGE, __VA_ARGS__)

/* An id the server gave or the user typed, safe in a URL path and a JSON string. */
static bool id_is_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > CLI_REMOTE_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
                      s[i] == '_' || s[i] == '-'))
                        return false;
        return true;
}

typedef struct remote {
        cli_client c;                         /* the base URL, the sending client, a bearer token from $HULL_TOKEN */
        char key_header[AUTH_TOKEN_MAX + 16]; /* "x-api-key: ..." or "" */
        const char *headers[6];               /* for JSON calls */
        const char *stream_headers[6];
        char session_id[CLI_REMOTE_ID_MAX + 1];
        bool yes, stdout_tty;
        int exit_status; /* the chat's: the last failed turn's status */

        /* the stream's thread */
        httpc *sh;
        pthread_t thread;
        bool thread_started;
        atomic_bool cancel;
        sse_decoder dec;
        dynbuf err_body; /* a refused stream's answer */

        pthread_mutex_t lock; /* what follows */
        pthread_cond_t cond;
        bool ready;                           /* the stream's answer came (status) or it failed */
        long status;                          /* the stream's HTTP status */
        bool over;                            /* the stream ended */
        hull_error err;                       /* why, when it failed */
        bool turn_over;                       /* session.status_idle (not requires_action), terminated or deleted */
        bool ended;                           /* the session is terminated or deleted */
        json_t *asks;                         /* tool_use event ids to confirm, in order */
        json_t *customs;                      /* agent.custom_tool_use event ids to answer */
        json_t *tool_uses;                    /* event id -> the agent.tool_use event, for asking */
        char delta_id[CLI_REMOTE_ID_MAX + 1]; /* the message whose deltas were shown */
        bool line_open;                       /* the answer's last line has no newline yet */
} remote;

static void remote_done(remote *r) {
        if (r->thread_started) {
                atomic_store(&r->cancel, true);
                pthread_join(r->thread, NULL);
        }
        if (r->sh)
                httpc_free(r->sh);
        sse_done(&r->dec);
        dynbuf_free(&r->err_body);
        json_decref(r->asks);
        json_decref(r->customs);
        json_decref(r->tool_uses);
        pthread_mutex_destroy(&r->lock);
        pthread_cond_destroy(&r->cond);
        explicit_bzero(r->key_header, sizeof(r->key_header));
        cli_client_done(&r->c);
}

/* ---- errors ---- */

/* One line for a failed answer: the /v1 envelope's status, type, message and request id, or the
 * first bytes of whatever else came. */
static void report_answer(const char *what, long status, const char *body, size_t len) {
        json_error_t je;
        _cleanup_(json_decrefp) json_t *o = json_loadb(body, len, 0, &je);
        const json_t *err = json_object_get(o, "error");
        const char *type = json_string_value(json_object_get(err, "type"));
        const char *msg = json_string_value(json_object_get(err, "message"));
        const char *rid = json_string_value(json_object_get(o, "request_id"));
        if (type || msg) {
                fprintf(stderr, "hull: %s: %s: HTTP %ld %s: ", CMD, what, status, type ? type : "error");
                cli_term_write(stderr, msg ? msg : "(no message)", strlen(msg ? msg : "(no message)"), false, true);
                fprintf(stderr, "%s%s%s\n", rid ? " (request " : "", rid ? rid : "", rid ? ")" : "");
                return;
        }
        size_t k = MIN(len, (size_t) SESSION_CLI_ERROR_SHOWN);
        fprintf(stderr, "hull: %s: %s: HTTP %ld%s", CMD, what, status, k ? ": " : "");
        cli_term_write(stderr, body, k, false, true);
        fputc('\n', stderr);
}

/* ---- calls ---- */

/* method path with body (NULL: none): on a 2xx JSON object, 0 with *ret (may be NULL); else
 * the failure printed, CLI_EXIT_FAILURE. */
static int call(remote *r, const char *method, const char *path, const json_t *body, const char *what, json_t **ret) {
        char url[HTTPC_URL_MAX];
        if ((size_t) snprintf(url, sizeof(url), "%s%s", r->c.base, path) >= sizeof(url)) {
                cli_error(CMD, "%s: the URL is too long", what);
                return CLI_EXIT_FAILURE;
        }
        _cleanup_free_ char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        if (body && !text) {
                cli_error(CMD, "out of memory");
                return CLI_EXIT_FAILURE;
        }
        httpc_request hr = {.method = method,
                            .url = url,
                            .headers = r->headers,
                            .body = text,
                            .body_len = text ? strlen(text) : 0,
                            .timeout_ms = CLI_REMOTE_CALL_MS,
                            .answer_max = V1_BODY_MAX};
        httpc_answer a;
        hull_error e = {0};
        int k = httpc_perform(r->c.http, &hr, &a, &e);
        if (k < 0) {
                if (k == -ECONNREFUSED)
                        cli_error(CMD, "%s: %s (is 'hull serve' running there? see --server)", what, e.msg);
                else
                        cli_error(CMD, "%s: %s", what, e.msg);
                return CLI_EXIT_FAILURE;
        }
        if (a.status < 200 || a.status > 299) {
                report_answer(what, a.status, a.body, a.body_len);
                httpc_answer_done(&a);
                return CLI_EXIT_FAILURE;
        }
        json_error_t je;
        json_t *o = json_loadb(a.body, a.body_len, 0, &je);
        httpc_answer_done(&a);
        if (!json_is_object(o)) {
                json_decref(o);
                cli_error(CMD, "%s: the answer is not a JSON object", what);
                return CLI_EXIT_FAILURE;
        }
        if (ret)
                *ret = o;
        else
                json_decref(o);
        return 0;
}

/* POST one event to the session. */
static int send_event(remote *r, json_t *ev /* consumed */, const char *what) {
        char path[64 + CLI_REMOTE_ID_MAX];
        _cleanup_(json_decrefp) json_t *body = json_pack("{s:[o]}", "events", ev);
        if (!body) {
                cli_error(CMD, "out of memory");
                return CLI_EXIT_FAILURE;
        }
        snprintf(path, sizeof(path), "/v1/sessions/%s/events", r->session_id);
        return call(r, "POST", path, body, what, NULL);
}

/* ---- the stream ---- */

static const char *str_of(const json_t *o, const char *key) {
        const char *s = json_string_value(json_object_get(o, key));
        return s ? s : "";
}

static void end_line(remote *r) {
        if (r->line_open) {
                fputc('\n', stdout);
                fflush(stdout);
                r->line_open = false;
        }
}

static void show_text(remote *r, const char *t) {
        size_t n = strlen(t);
        cli_term_write(stdout, t, n, true, r->stdout_tty);
        fflush(stdout);
        if (n)
                r->line_open = t[n - 1] != '\n';
}

/* One event of the stream (called on the stream's thread, r->lock not held). */
static int on_event(void *ud, const sse_event *ev) {
        remote *r = ud;
        char line[CLI_AGENT_LINE_MAX];
        if (strcmp(ev->name, "ping") == 0)
                return 0;
        _cleanup_(json_decrefp) json_t *o = json_loadb(ev->data, ev->data_len, 0, NULL);
        if (!json_is_object(o))
                return 0; /* not ours to understand: a comment-like frame */
        const char *type = ev->name[0] ? ev->name : str_of(o, "type");

        if (strcmp(type, "event_delta") == 0) {
                const json_t *c = json_object_get(json_object_get(o, "delta"), "content");
                snprintf(r->delta_id, sizeof(r->delta_id), "%s", str_of(o, "event_id"));
                show_text(r, str_of(c, "text"));
                return 0;
        }
        if (strcmp(type, "agent.message") == 0) {
                if (!r->delta_id[0] || strcmp(r->delta_id, str_of(o, "id")) != 0) {
                        size_t i;
                        const json_t *c;
                        json_array_foreach(json_object_get(o, "content"), i, c) show_text(r, str_of(c, "text"));
                }
                r->delta_id[0] = '\0';
                end_line(r);
                return 0;
        }
        if (strcmp(type, "agent.tool_use") == 0 || strcmp(type, "agent.mcp_tool_use") == 0 ||
            strcmp(type, "agent.custom_tool_use") == 0) {
                cli_input_line(json_object_get(o, "input"), line, sizeof(line));
                end_line(r);
                const char *perm = str_of(o, "evaluated_permission");
                fprintf(stderr, "hull: %s%s %s%s\n", strcmp(type, "agent.custom_tool_use") == 0 ? "custom tool " : "",
                        str_of(o, "name"), line,
                        strcmp(perm, "deny") == 0  ? " (denied by policy)"
                        : strcmp(perm, "ask") == 0 ? " (waits for approval)"
                                                   : "");
                pthread_mutex_lock(&r->lock);
                if (strcmp(type, "agent.custom_tool_use") == 0)
                        json_array_append_new(r->customs, json_string(str_of(o, "id")));
                else if (json_object_size(r->tool_uses) < CLI_REMOTE_TOOL_USES_MAX)
                        json_object_set(r->tool_uses, str_of(o, "id"), o);
                pthread_mutex_unlock(&r->lock);
                return 0;
        }
        if (strcmp(type, "agent.tool_result") == 0 || strcmp(type, "agent.mcp_tool_result") == 0) {
                if (!json_is_true(json_object_get(o, "is_error")))
                        return 0;
                const char *t = str_of(json_array_get(json_object_get(o, "content"), 0), "text");
                size_t n = strcspn(t, "\n");
                fputs("hull:   failed: ", stderr);
                cli_term_write(stderr, t, MIN(n, (size_t) CLI_AGENT_LINE_MAX), false, true);
                fputs(n > CLI_AGENT_LINE_MAX || t[n] ? " ...\n" : "\n", stderr);
                return 0;
        }
        if (strcmp(type, "session.error") == 0 || strcmp(type, "error") == 0) {
                const json_t *err = json_object_get(o, "error");
                const char *retry = str_of(json_object_get(err, "retry_status"), "type");
                end_line(r);
                fprintf(stderr, "hull: %s: %s: ", CMD, str_of(err, "type"));
                cli_term_write(stderr, str_of(err, "message"), strlen(str_of(err, "message")), false, true);
                fprintf(stderr, "%s%s%s\n", retry[0] ? " (" : "", retry, retry[0] ? ")" : "");
                if (strcmp(type, "error") == 0) {
                        pthread_mutex_lock(&r->lock);
                        r->turn_over = r->ended = true;
                        pthread_cond_broadcast(&r->cond);
                        pthread_mutex_unlock(&r->lock);
                }
                return 0;
        }
        if (strcmp(type, "session.status_idle") == 0) {
                const json_t *stop = json_object_get(o, "stop_reason");
                const char *why = str_of(stop, "type");
                end_line(r);
                pthread_mutex_lock(&r->lock);
                if (strcmp(why, "requires_action") == 0) {
                        size_t i;
                        const json_t *id;
                        json_array_clear(r->asks);
                        json_array_foreach(json_object_get(stop, "event_ids"), i, id) {
                                if (json_object_get(r->tool_uses, json_string_value(id)))
                                        json_array_append(r->asks, (json_t *) id);
                        }
                } else {
                        if (strcmp(why, "end_turn") != 0)
                                fprintf(stderr, "hull: %s: the turn ended: %s\n", CMD, why[0] ? why : "(no reason)");
                        r->turn_over = true;
                }
                pthread_cond_broadcast(&r->cond);
                pthread_mutex_unlock(&r->lock);
                return 0;
        }
        if (strcmp(type, "session.status_terminated") == 0 || strcmp(type, "session.deleted") == 0) {
                end_line(r);
                fprintf(stderr, "hull: %s: the session %s\n", CMD,
                        strcmp(type, "session.deleted") == 0 ? "was deleted" : "is terminated");
                pthread_mutex_lock(&r->lock);
                r->turn_over = r->ended = true;
                pthread_cond_broadcast(&r->cond);
                pthread_mutex_unlock(&r->lock);
        }
        return 0;
}

static int stream_response(void *ud, long status, const char *content_type) {
        remote *r = ud;
        (void) content_type;
        pthread_mutex_lock(&r->lock);
        r->status = status;
        r->ready = true;
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
        return 0;
}

static int stream_data(void *ud, const char *p, size_t n) {
        remote *r = ud;
        if (r->status != 200) /* set before the first byte, on this thread */
                return dynbuf_add(&r->err_body, p, MIN(n, (size_t) CLI_REMOTE_ERROR_BODY_MAX - r->err_body.len));
        return sse_feed(&r->dec, p, n, on_event, r);
}

static void *stream_main(void *ud) {
        remote *r = ud;
        char url[HTTPC_URL_MAX + CLI_REMOTE_ID_MAX + 128];
        hull_error e = {0};
        int k;
        snprintf(url, sizeof(url), "%s/v1/sessions/%s/events/stream?event_deltas%%5B%%5D=agent.message", r->c.base,
                 r->session_id);
        httpc_request hr = {.method = "GET",
                            .url = url,
                            .headers = r->stream_headers,
                            .on_data = stream_data,
                            .on_response = stream_response,
                            .userdata = r,
                            .cancel = &r->cancel,
                            .idle_timeout_ms = CLI_REMOTE_STREAM_IDLE_MS};
        httpc_answer a;
        k = httpc_perform(r->sh, &hr, &a, &e);
        if (k >= 0)
                httpc_answer_done(&a);
        pthread_mutex_lock(&r->lock);
        if (k < 0)
                r->err = e;
        else if (r->status != 200)
                hull_fail(&r->err, -EPROTO, "the event stream was refused");
        else
                hull_fail(&r->err, -EPIPE, "the server ended the event stream");
        r->over = r->ready = true;
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
        return NULL;
}

/* Open the stream and wait for its answer. */
static int stream_open(remote *r) {
        hull_error e = {0};
        if (httpc_new(&r->sh, &e) < 0) {
                cli_report(CMD, &e);
                return CLI_EXIT_FAILURE;
        }
        if (pthread_create(&r->thread, NULL, stream_main, r) != 0) {
                cli_error(CMD, "cannot start the stream's thread");
                return CLI_EXIT_FAILURE;
        }
        r->thread_started = true;
        pthread_mutex_lock(&r->lock);
        while (!r->ready)
                pthread_cond_wait(&r->cond, &r->lock);
        bool over = r->over;
        long status = r->status;
        pthread_mutex_unlock(&r->lock);
        if (status == 200 && !over)
                return 0;
        pthread_join(r->thread, NULL);
        r->thread_started = false;
        if (status && status != 200)
                report_answer("the event stream", status, r->err_body.buf ? r->err_body.buf : "", r->err_body.len);
        else
                cli_error(CMD, "the event stream: %s", r->err.msg);
        return CLI_EXIT_FAILURE;
}

/* ---- the turn ---- */

/* Ask y/n about a tool call; stdin's next line when it is not a terminal. */
static bool ask(remote *r, const json_t *tu) {
        if (r->yes)
                return true;
        const char *name = str_of(tu, "name");
        _cleanup_free_ char *all = json_dumps(json_object_get(tu, "input"), JSON_COMPACT | JSON_ENSURE_ASCII);
        size_t len = all ? strlen(all) : 0;
        end_line(r);
        fprintf(stderr, "hull: %s wants to run with this input:\n", name);
        cli_term_write(stderr, all ? all : "{}", MIN(len, (size_t) CLI_APPROVAL_SHOWN_MAX), false, true);
        if (len > CLI_APPROVAL_SHOWN_MAX)
                fprintf(stderr, "\n[... %zu more bytes not shown: answer N unless you trust all of it]",
                        len - CLI_APPROVAL_SHOWN_MAX);
        fprintf(stderr, "\nhull: allow %s? [y/N] ", name);
        fflush(stderr);
        char answer[16];
        bool yes = fgets(answer, sizeof(answer), stdin) && (answer[0] == 'y' || answer[0] == 'Y');
        if (!strchr(answer, '\n') && !feof(stdin)) { /* the rest of a long answer */
                int ch;
                while ((ch = getchar()) != EOF && ch != '\n')
                        ;
        }
        if (!isatty(STDIN_FILENO))
                fputs(yes ? "y\n" : "n\n", stderr);
        return yes;
}

/* Answer what waits: confirmations asked, custom tools refused (this client runs none). */
static int answer_actions(remote *r) {
        _cleanup_(json_decrefp) json_t *asks = json_array(), *customs = json_array(), *tus = json_array();
        size_t i;
        json_t *id;
        if (!asks || !customs || !tus) {
                cli_error(CMD, "out of memory");
                return CLI_EXIT_FAILURE;
        }
        pthread_mutex_lock(&r->lock);
        json_t *t = r->asks; /* the lists taken, fresh ones left */
        r->asks = asks;
        asks = t;
        t = r->customs;
        r->customs = customs;
        customs = t;
        json_array_foreach(asks, i, id) json_array_append(tus, json_object_get(r->tool_uses, json_string_value(id)));
        pthread_mutex_unlock(&r->lock);
        json_array_foreach(customs, i, id) {
                json_t *ev = json_pack("{s:s,s:O,s:b,s:[{s:s,s:s}]}", "type", "user.custom_tool_result",
                                       "custom_tool_use_id", id, "is_error", 1, "content", "type", "text", "text",
                                       "hull chat cannot run custom tools: answer them with the API");
                fprintf(stderr, "hull: %s: a custom tool call was answered with an error (hull chat runs none)\n", CMD);
                if (send_event(r, ev, "sending the custom tool's result") != 0)
                        return CLI_EXIT_FAILURE;
        }
        json_array_foreach(asks, i, id) {
                bool yes = ask(r, json_array_get(tus, i));
                json_t *ev = yes ? json_pack("{s:s,s:O,s:s}", "type", "user.tool_confirmation", "tool_use_id", id,
                                             "result", "allow")
                                 : json_pack("{s:s,s:O,s:s,s:s}", "type", "user.tool_confirmation", "tool_use_id", id,
                                             "result", "deny", "deny_message", "the user said no");
                if (send_event(r, ev, "sending the confirmation") != 0)
                        return CLI_EXIT_FAILURE;
        }
        return 0;
}

/* Send text and show the turn until it ends. */
static int turn(remote *r, const char *text) {
        json_t *ev = json_pack("{s:s,s:[{s:s,s:s}]}", "type", "user.message", "content", "type", "text", "text", text);
        pthread_mutex_lock(&r->lock);
        r->turn_over = false;
        pthread_mutex_unlock(&r->lock);
        atomic_store(cli_prompt_interrupt(), false);
        int k = send_event(r, ev, "sending the message");
        if (k != 0)
                return k;
        bool interrupt_sent = false;
        for (;;) {
                pthread_mutex_lock(&r->lock);
                struct timespec until = timespec_after_ms(CLOCK_REALTIME, 100); /* a look at Ctrl-C this often */
                if (!r->turn_over && !r->over && !json_array_size(r->asks) && !json_array_size(r->customs))
                        pthread_cond_timedwait(&r->cond, &r->lock, &until);
                bool done = r->turn_over, over = r->over, ended = r->ended;
                bool act = json_array_size(r->asks) || json_array_size(r->customs);
                hull_error err = r->err;
                pthread_mutex_unlock(&r->lock);
                if (done)
                        return ended ? CLI_EXIT_FAILURE : 0;
                if (over) {
                        end_line(r);
                        cli_error(CMD, "%s", err.msg);
                        return CLI_EXIT_FAILURE;
                }
                if (act && (k = answer_actions(r)) != 0)
                        return k;
                if (atomic_load(cli_prompt_interrupt()) && !interrupt_sent) {
                        end_line(r);
                        fprintf(stderr, "hull: interrupting\n");
                        interrupt_sent = true;
                        k = send_event(r, json_pack("{s:s}", "type", "user.interrupt"), "sending the interrupt");
                        if (k != 0)
                                return k;
                        atomic_store(cli_prompt_interrupt(), false);
                } else if (atomic_load(cli_prompt_interrupt()) && interrupt_sent) {
                        fprintf(stderr, "hull: %s: left the turn running on the server\n", CMD);
                        return 0;
                }
        }
}

/* ---- setting up ---- */

static int make_session(remote *r, const char *agent_id, const char *env_id) {
        _cleanup_(json_decrefp) json_t *env = NULL, *sess = NULL, *body = NULL;
        if (!env_id) {
                body = json_pack("{s:s,s:{s:s,s:{s:s}}}", "name", "hull-chat", "config", "type", "cloud", "networking",
                                 "type", "unrestricted");
                if (!body || call(r, "POST", "/v1/environments", body, "making an environment", &env) != 0)
                        return CLI_EXIT_FAILURE;
                env_id = str_of(env, "id");
                if (!id_is_valid(env_id)) {
                        cli_error(CMD, "making an environment: the answer has no usable \"id\"");
                        return CLI_EXIT_FAILURE;
                }
                json_decref(body);
        }
        body = json_pack("{s:s,s:s}", "agent", agent_id, "environment_id", env_id);
        if (!body || call(r, "POST", "/v1/sessions", body, "making a session", &sess) != 0)
                return CLI_EXIT_FAILURE;
        const char *id = str_of(sess, "id");
        if (!id_is_valid(id)) {
                cli_error(CMD, "making a session: the answer has no usable \"id\"");
                return CLI_EXIT_FAILURE;
        }
        snprintf(r->session_id, sizeof(r->session_id), "%s", id);
        return 0;
}

/* One line typed: /id, or a turn. A failed turn is the chat's exit status; the chat ends when the
 * stream or the session is gone. */
static int on_line(void *userdata, const char *line) {
        remote *r = userdata;
        if (strcmp(line, "/id") == 0) {
                printf("%s\n", r->session_id);
                fflush(stdout);
                return CLI_PROMPT_GO_ON;
        }
        int k = turn(r, line);
        if (k != 0) {
                r->exit_status = k;
                pthread_mutex_lock(&r->lock);
                bool gone = r->over || r->ended;
                pthread_mutex_unlock(&r->lock);
                if (gone)
                        return CLI_PROMPT_END;
        }
        return CLI_PROMPT_GO_ON;
}

int cli_chat_remote_main(int argc, char **argv) {
        const char *server = NULL, *key = NULL, *session = NULL, *env_id = NULL;
        bool insecure = false, yes = false;
        int c;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        cli_chat_remote_help();
                        return CLI_EXIT_OK;
                case OPT_SERVER:
                        server = optarg;
                        break;
                case OPT_API_KEY:
                        key = optarg;
                        break;
                case OPT_SESSION:
                        if (!id_is_valid(optarg))
                                return usage_error("--session wants a session id (sesn_...), got '%.80s'", optarg);
                        session = optarg;
                        break;
                case OPT_ENVIRONMENT:
                        if (!id_is_valid(optarg))
                                return usage_error("--environment wants an environment id (env_...), got '%.80s'",
                                                   optarg);
                        env_id = optarg;
                        break;
                case OPT_INSECURE:
                        insecure = true;
                        break;
                case OPT_YES:
                        yes = true;
                        break;
                default:
                        return usage_error("option '%s' is unknown or lacks its value with --server (run "
                                           "'hull chat --server URL --help')",
                                           argv[optind - 1]);
                }
        }
        const char *agent_id = optind < argc ? argv[optind] : NULL;
        if (optind + 1 < argc)
                return usage_error("one agent id, not also '%s'", argv[optind + 1]);
        if (!agent_id && !session)
                return usage_error(
                        "--server wants the agent's id (agent_...; 'hull init' makes one), or --session ID%s", "");
        if (agent_id && !id_is_valid(agent_id))
                return usage_error("'%.80s' is not an agent id (agent_...)", agent_id);
        if (!server || !server[0])
                return usage_error("--server wants the server's URL%s", "");
        if (!key || !key[0])
                key = getenv("HULL_SERVE_KEY");
        if (key && key[0]) {
                size_t n = strlen(key);
                bool ok = n <= AUTH_TOKEN_MAX;
                for (size_t i = 0; ok && i < n; i++)
                        ok = key[i] > 0x20 && key[i] < 0x7f;
                if (!ok)
                        return usage_error("the API key must be 1 to %u visible ASCII characters", AUTH_TOKEN_MAX);
        }

        _cleanup_(remote_done) remote r = {.yes = yes, .stdout_tty = isatty(STDOUT_FILENO)};
        pthread_mutex_init(&r.lock, NULL);
        pthread_cond_init(&r.cond, NULL);
        sse_init(&r.dec, CLI_REMOTE_EVENT_MAX);
        dynbuf_init(&r.err_body, CLI_REMOTE_ERROR_BODY_MAX);
        r.asks = json_array();
        r.customs = json_array();
        r.tool_uses = json_object();
        if (!r.asks || !r.customs || !r.tool_uses) {
                cli_error(CMD, "out of memory");
                return CLI_EXIT_FAILURE;
        }
        int k = cli_client_setup(&r.c, CMD, server, NULL, NULL, insecure);
        if (k)
                return k;
        if (key && key[0]) {
                snprintf(r.key_header, sizeof(r.key_header), "x-api-key: %s", key);
                explicit_bzero(r.c.auth, sizeof(r.c.auth)); /* the key, not $HULL_TOKEN */
        }
        const char *auth = r.key_header[0] ? r.key_header : r.c.auth[0] ? r.c.auth : NULL;
        const char *common[] = {"anthropic-version: 2023-06-01", "anthropic-beta: managed-agents-2026-04-01"};
        r.headers[0] = r.stream_headers[0] = common[0];
        r.headers[1] = r.stream_headers[1] = common[1];
        r.headers[2] = "content-type: application/json";
        r.stream_headers[2] = "accept: text/event-stream";
        r.headers[3] = r.stream_headers[3] = auth;

        if (session)
                snprintf(r.session_id, sizeof(r.session_id), "%s", session);
        else if ((k = make_session(&r, agent_id, env_id)) != 0)
                return k;
        if ((k = stream_open(&r)) != 0)
                return k;

        cli_prompt_signals();
        fprintf(stderr, "hull: chat: session %s on %s (Ctrl-D or /exit ends it)\n", r.session_id, r.c.base);
        if (cli_prompt_loop(CMD, on_line, &r) < 0) {
                cli_error(CMD, "out of memory");
                return CLI_EXIT_FAILURE;
        }
        end_line(&r);
        fprintf(stderr, "hull: chat: continue this session with `hull chat --server %s --session %s`\n", r.c.base,
                r.session_id);
        return r.exit_status;
}
