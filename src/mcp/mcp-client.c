/* mcp-client.c: see mcp-client.h. Messages and requests over a server's stdio or Streamable
 * HTTP, the lifecycle and tools; the server's process (and quoting what it wrote) is
 * mcp-client-proc.c. */
#include "mcp-client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dynbuf.h"
#include "http-client.h"
#include "macro.h"
#include "mcp-client-internal.h"
#include "mcp-jsonrpc.h"
#include "sse.h"
#include "time-util.h"

#ifndef HULL_VERSION
#define HULL_VERSION "0.0.0"
#endif

#define MCP_PROTOCOL_LATEST "2025-11-25"
static const char *const accepted_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
bool mcp_server_name_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;
        if (n == 0 || n > MCP_SERVER_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char ch = name[i];
                if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                      ch == '-'))
                        return false;
        }
        return true;
}

const char *mcp_client_name(const mcp_client *c) {
        return c->name;
}

const char *mcp_client_protocol_version(const mcp_client *c) {
        return c->version;
}

const json_t *mcp_client_server_info(const mcp_client *c) {
        return c->server_info;
}

const json_t *mcp_client_capabilities(const mcp_client *c) {
        return c->capabilities;
}

const char *mcp_client_instructions(const mcp_client *c) {
        return c->instructions;
}

void mcp_client_on_message(mcp_client *c, mcp_message_fn fn, void *ud) {
        c->on_message = fn;
        c->on_message_ud = ud;
}

bool mcp_client_alive(const mcp_client *c, hull_error *e) {
        if (c->broken.err == 0)
                return true;
        if (e)
                *e = c->broken;
        return false;
}

static void http_close(mcp_client *c);

void mcp_client_free(mcp_client *c) {
        if (!c)
                return;
        http_close(c);
        c->in_fd = safe_close(c->in_fd);
        if (c->pid > 0 && !mcpc_reap(c, MCP_CLOSE_GRACE_MS)) {
                mcpc_kill_group(c, SIGTERM);
                if (!mcpc_reap(c, MCP_CLOSE_GRACE_MS)) {
                        mcpc_kill_group(c, SIGKILL);
                        (void) mcpc_reap(c, 5000);
                        if (c->pid > 0) /* cannot happen unless the kernel is stuck: block */
                                (void) waitpid(c->pid, NULL, 0);
                }
        }
        /* the rest of its process group (the children of a wrapper such as npx) goes with it */
        if (c->pgid > 0 && kill(-c->pgid, 0) == 0) {
                (void) kill(-c->pgid, SIGTERM);
                uint64_t until = now_mono_ms() + MCP_CLOSE_GRACE_MS;
                while (kill(-c->pgid, 0) == 0 && now_mono_ms() < until)
                        (void) poll(NULL, 0, 20);
                (void) kill(-c->pgid, SIGKILL);
        }
        safe_close(c->out_fd);
        safe_close(c->err_fd);
        mcp_framer_done(&c->framer);
        dynbuf_free(&c->outq);
        mcp_msg_done(&c->reply);
        json_decref(c->server_info);
        json_decref(c->capabilities);
        free(c->instructions);
        free(c);
}

/* ---- messages ---- */

static int queue(mcp_client *c, json_t *msg, hull_error *e) {
        if (!msg)
                return mcpc_broke(c, e, -ENOMEM, "out of memory");
        int r = mcp_msg_write(msg, &c->outq);
        json_decref(msg);
        if (r < 0)
                return r == -E2BIG ? hull_fail(e, r, "mcp: %s: a request over %u bytes cannot be sent", c->name,
                                               MCP_MESSAGE_MAX)
                                   : mcpc_broke(c, e, r, "out of memory");
        return 0;
}

static int post_pending(mcp_client *c, hull_error *e);

/* Send one message now (HTTP: a POST of its own) or queue it for the server's stdin. */
static int send_msg(mcp_client *c, json_t *msg, hull_error *e) {
        int r = queue(c, msg, e);
        return r < 0 || !c->http ? r : post_pending(c, e);
}

/* Write what is queued, as far as the pipe takes it now. */
static int flush(mcp_client *c, hull_error *e) {
        while (c->outq.len > 0) {
                if (c->in_fd < 0)
                        return mcpc_server_gone(c, e);
                ssize_t k = write(c->in_fd, c->outq.buf, c->outq.len);
                if (k > 0) {
                        dynbuf_consume(&c->outq, (size_t) k);
                        continue;
                }
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return 0;
                return mcpc_server_gone(c, e);
        }
        return 0;
}

static void on_progress(mcp_client *c, const json_t *params) {
        const mcp_call_opts *o = c->wait_opts;
        const json_t *tok = json_object_get(params, "progressToken");
        if (!o || !o->progress || !json_is_integer(tok) || json_integer_value(tok) != c->wait_id)
                return; /* not the call's (or a cancelled one's: late progress is dropped) */
        const json_t *p = json_object_get(params, "progress"), *t = json_object_get(params, "total");
        if (!json_is_number(p))
                return;
        o->progress(o->progress_ud, json_number_value(p), json_is_number(t) ? json_number_value(t) : 0,
                    json_string_value(json_object_get(params, "message")));
}

/* One line from the server's stdout. */
static int on_line(void *ud, const char *line, size_t len) {
        mcp_client *c = ud;
        mcp_msg m = {0};
        hull_error pe = {0};
        char q[MCP_QUOTE_MAX + 4];
        int r = mcp_msg_parse(line, len, &m, &pe);
        if (r < 0 && c->http)
                return mcpc_broke(c, NULL, -EPROTO,
                                  "the server answered with something that is not a JSON-RPC message (%s): '%s'",
                                  pe.msg + (strncmp(pe.msg, "mcp: ", 5) == 0 ? 5 : 0), mcpc_quote(line, len, q));
        if (r < 0)
                return mcpc_broke(
                        c, NULL, -EPROTO,
                        "the server wrote a line that is not a JSON-RPC message on its stdout (%s): '%s' (an MCP "
                        "stdio server must write nothing else there)",
                        pe.msg + (strncmp(pe.msg, "mcp: ", 5) == 0 ? 5 : 0), mcpc_quote(line, len, q));
        switch (m.kind) {
        case MCP_MSG_RESULT:
        case MCP_MSG_ERROR:
                if (c->waiting && !c->reply.root && m.id && json_is_integer(m.id) &&
                    json_integer_value(m.id) == c->wait_id) {
                        c->reply = m;
                        return 0;
                }
                break; /* a cancelled request's late answer, or an id-less error: nothing waits for it */
        case MCP_MSG_REQUEST: {
                json_t *answer = strcmp(m.method, "ping") == 0
                                         ? mcp_result_new(m.id, NULL)
                                         : mcp_error_new(m.id, MCP_ERR_METHOD_NOT_FOUND, "Method not found", NULL);
                r = send_msg(c, answer, NULL);
                mcp_msg_done(&m);
                return r == -ENOMEM ? r : 0;
        }
        case MCP_MSG_NOTIFICATION:
                if (strcmp(m.method, "notifications/progress") == 0)
                        on_progress(c, m.params);
                else if (strcmp(m.method, "notifications/message") == 0 && c->on_message) {
                        const char *level = json_string_value(json_object_get(m.params, "level"));
                        c->on_message(c->on_message_ud, c->name, level ? level : "info",
                                      json_string_value(json_object_get(m.params, "logger")),
                                      json_object_get(m.params, "data"));
                }
                break;
        }
        mcp_msg_done(&m);
        return 0;
}

/* Read what stdout has now and handle its lines. */
static int read_stdout(mcp_client *c, hull_error *e) {
        char buf[MCP_READ_CHUNK];
        for (;;) {
                ssize_t k = read(c->out_fd, buf, sizeof(buf));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return 0;
                if (k <= 0) {
                        c->out_fd = safe_close(c->out_fd);
                        return mcpc_server_gone(c, e);
                }
                int r = mcp_framer_feed(&c->framer, buf, (size_t) k, on_line, c);
                if (r == -E2BIG)
                        return mcpc_broke(
                                c, e, -E2BIG,
                                "the server wrote a message over %u bytes on its stdout (hull's limit for one "
                                "message)",
                                MCP_MESSAGE_MAX);
                if (r < 0)
                        return mcpc_broke(c, e, r, "cannot read the server's output");
                if (c->broken.err)
                        return mcpc_broke(c, e, c->broken.err, "(already broken)");
                if (c->reply.root)
                        return 0;
        }
}

/* Wait for the reply to the request queued for stdin: 0 once it is in c->reply, -ETIMEDOUT,
 * -ECANCELED, or the connection's error. */
static int stdio_wait(mcp_client *c, uint64_t deadline, int cancel_fd, const atomic_bool *cancel, hull_error *e) {
        for (;;) {
                int r = flush(c, e);
                if (r < 0)
                        return r;
                if (c->reply.root)
                        return 0;
                if (cancel && atomic_load(cancel))
                        return -ECANCELED;
                uint64_t now = now_mono_ms();
                if (now >= deadline)
                        return -ETIMEDOUT;
                struct pollfd pf[4] = {
                        {.fd = c->out_fd, .events = POLLIN},
                        {.fd = c->err_fd, .events = POLLIN},
                        {.fd = c->outq.len ? c->in_fd : -1, .events = POLLOUT},
                        {.fd = cancel_fd, .events = POLLIN},
                };
                /* a flag is looked at between polls (a signal handler's also wakes poll: EINTR) */
                int k = poll(pf, 4, (int) MIN(deadline - now, cancel ? (uint64_t) MCP_CANCEL_POLL_MS : 1000ULL));
                if (k < 0 && errno != EINTR)
                        return mcpc_broke(c, e, -errno, "poll failed: %m");
                if (k <= 0)
                        continue;
                if (pf[1].revents)
                        mcpc_drain_stderr(c);
                if (pf[0].revents) {
                        r = read_stdout(c, e);
                        if (r < 0)
                                return r;
                }
                if (pf[3].revents)
                        return -ECANCELED;
        }
}

/* ---- Streamable HTTP ---- */

/* One POST's answer as it arrives. */
typedef struct http_answer {
        mcp_client *c;
        long status;
        bool sse;
        bool got_reply; /* the awaited reply came: the transfer is stopped */
        bool init;      /* the initialize POST: its Mcp-Session-Id is kept */
        sse_decoder dec;
        dynbuf body; /* a JSON answer, or an error's body (bounded) */
} http_answer;

#define HTTP_STOP (-ECHILD) /* on_data's "got it, stop": never an error of libcurl's */

static int http_on_response(void *ud, long status, const char *content_type) {
        http_answer *a = ud;
        size_t n = strcspn(content_type, "; \t");
        a->status = status;
        a->sse = n == strlen("text/event-stream") && strncasecmp(content_type, "text/event-stream", n) == 0;
        return 0;
}

static int http_on_header(void *ud, const char *name, const char *value) {
        http_answer *a = ud;
        if (a->init && strcasecmp(name, "Mcp-Session-Id") == 0) {
                size_t n = strlen(value);
                bool visible = n > 0 && n < sizeof(a->c->session_id);
                for (size_t i = 0; i < n && visible; i++)
                        visible = value[i] >= 0x21 && value[i] <= 0x7e;
                if (!visible)
                        return -EPROTO; /* the spec: visible ASCII only */
                memcpy(a->c->session_id, value, n + 1);
        }
        return 0;
}

static int http_on_event(void *ud, const sse_event *ev) {
        http_answer *a = ud;
        if (ev->data_len == 0)
                return 0; /* the priming event (an id only) or a keep-alive */
        if (ev->name_len && strcmp(ev->name, "message") != 0)
                return 0;
        return on_line(a->c, ev->data, ev->data_len);
}

static int http_on_data(void *ud, const char *p, size_t n) {
        http_answer *a = ud;
        if (a->status / 100 == 2 && a->sse) {
                int r = sse_feed(&a->dec, p, n, http_on_event, a);
                if (r < 0)
                        return r;
                if (a->c->reply.root) {
                        a->got_reply = true;
                        return HTTP_STOP;
                }
                return 0;
        }
        return dynbuf_add(&a->body, p, n) == -ENOMEM ? -ENOMEM : 0; /* past the bound: the rest is dropped */
}

/* POST body (one JSON-RPC message) on h, or (body NULL) GET the event stream that resumes after
 * last_event_id; the answer's messages are dispatched as they come (the reply awaited goes to
 * c->reply). timeout_ms bounds the exchange, cancel_fd (-1: none) and cancel stop it. */
static int http_send(mcp_client *c, httpc *h, const char *body, size_t len, const char *last_event_id,
                     uint64_t timeout_ms, int cancel_fd, const atomic_bool *cancel, bool init, http_answer *a,
                     hull_error *e) {
        char sid[HTTPC_HEADER_VALUE_MAX + 32], ver[64], lei[MCP_EVENT_ID_MAX + 32];
        const char *headers[HTTPC_HEADERS_MAX + 1];
        size_t n = 0;
        if (body) {
                headers[n++] = "Content-Type: application/json";
                headers[n++] = "Accept: application/json, text/event-stream";
        } else {
                headers[n++] = "Accept: text/event-stream";
                snprintf(lei, sizeof(lei), "Last-Event-ID: %s", last_event_id);
                headers[n++] = lei;
        }
        if (!init && c->session_id[0]) {
                snprintf(sid, sizeof(sid), "Mcp-Session-Id: %s", c->session_id);
                headers[n++] = sid;
        }
        if (!init && c->version[0]) {
                snprintf(ver, sizeof(ver), "MCP-Protocol-Version: %s", c->version);
                headers[n++] = ver;
        }
        for (size_t i = 0; i < c->n_headers && n < HTTPC_HEADERS_MAX; i++)
                headers[n++] = c->headers[i];
        headers[n] = NULL;
        *a = (http_answer){.c = c, .init = init};
        sse_init(&a->dec, (size_t) MCP_MESSAGE_MAX + 1024);
        dynbuf_init(&a->body, MCP_MESSAGE_MAX);
        httpc_request req = {
                .method = body ? "POST" : "GET",
                .url = c->url,
                .headers = headers,
                .body = body,
                .body_len = len,
                .on_data = http_on_data,
                .on_response = http_on_response,
                .on_header = http_on_header,
                .userdata = a,
                .cancel = cancel,
                .cancel_fd = cancel_fd > 0 ? cancel_fd : 0,
                .timeout_ms = timeout_ms ? timeout_ms : 1,
                .resolve = (const char *const *) c->resolve,
        };
        httpc_answer ans = {0};
        int r = httpc_perform(h, &req, &ans, e);
        if (r == HTTP_STOP && a->got_reply)
                r = 0;
        httpc_answer_done(&ans);
        if (r < 0)
                return r;
        if (a->status / 100 != 2) {
                char q[MCP_QUOTE_MAX + 4];
                r = hull_fail(e, a->status == 401 || a->status == 403 ? -EACCES : -EREMOTEIO,
                              "mcp: %s: %s %s: HTTP %ld%s%s", c->name, body ? "POST" : "GET", c->url, a->status,
                              a->body.len ? ": " : "", mcpc_quote(a->body.buf ? a->body.buf : "", a->body.len, q));
                if (a->status == 404 && c->session_id[0])
                        r = mcpc_broke(c, e, -ENOTCONN, "the server ended the session (HTTP 404 for session %s)",
                                       c->session_id);
                return r;
        }
        if (!a->sse && a->body.len > 0) {
                /* one JSON-RPC message as application/json */
                r = on_line(c, a->body.buf, a->body.len);
                if (r < 0)
                        return mcpc_broke(c, e, r, "(already broken)");
        } else if (a->sse && !a->got_reply) {
                r = sse_finish(&a->dec);
                if (r < 0)
                        return mcpc_broke(c, e, r == -E2BIG ? -E2BIG : -EPROTO,
                                          "the server's event stream is malformed or has a message over %u bytes",
                                          MCP_MESSAGE_MAX);
        }
        return 0;
}

static void http_answer_done(http_answer *a) {
        sse_done(&a->dec);
        dynbuf_free(&a->body);
}

/* POST the messages queued (answers to the server's requests, notifications), one each, on the
 * side client: the server answers 202. */
static int post_pending(mcp_client *c, hull_error *e) {
        int r = 0;
        while (c->outq.len > 0) {
                char *nl = memchr(c->outq.buf, '\n', c->outq.len);
                size_t n = nl ? (size_t) (nl - c->outq.buf) : c->outq.len;
                http_answer a;
                int k = http_send(c, c->side, c->outq.buf, n, NULL, 10000, 0, NULL, false, &a, e);
                http_answer_done(&a);
                if (k < 0 && r == 0)
                        r = k;
                dynbuf_consume(&c->outq, MIN(n + 1, c->outq.len));
        }
        return r;
}

/* The error of an exchange that failed (pe) as the request's. */
static int http_fail(mcp_client *c, int r, const hull_error *pe, hull_error *e) {
        if (c->broken.err) { /* the stream carried something that is not JSON-RPC */
                if (e)
                        *e = c->broken;
                return c->broken.err;
        }
        if (strncmp(pe->msg, "mcp: ", 5) == 0) {
                if (e)
                        *e = *pe;
                return r;
        }
        return hull_fail(e, r, "mcp: %s: %s: %s", c->name, c->what ? c->what : "a request", pe->msg);
}

/* Whether an answer that ended (r: how) without the reply may be resumed: an event stream the
 * server accepted, with an event id seen, cut or ended early (not by hull: no deadline or cancel). */
static bool http_resumable(const mcp_client *c, const http_answer *a, int r, const char *last_id) {
        return !c->reply.root && c->broken.err == 0 && a->sse && a->status / 100 == 2 && last_id[0] &&
               r != -ETIMEDOUT && r != -ECANCELED && r != -ENOMEM;
}

/* Sleep ms, or less when the deadline, cancel_fd or cancel comes first: 0, -ETIMEDOUT, -ECANCELED. */
static int http_pause(uint64_t ms, uint64_t deadline, int cancel_fd, const atomic_bool *cancel) {
        uint64_t until = now_mono_ms() + ms;
        if (until >= deadline)
                return -ETIMEDOUT;
        for (;;) {
                if (cancel && atomic_load(cancel))
                        return -ECANCELED;
                uint64_t now = now_mono_ms();
                if (now >= until)
                        return 0;
                struct pollfd pf = {.fd = cancel_fd, .events = POLLIN};
                int k = poll(&pf, 1, (int) MIN(until - now, (uint64_t) MCP_CANCEL_POLL_MS));
                if (k > 0 && pf.revents)
                        return -ECANCELED;
        }
}

/* Keep the stream's last event id (and the server's retry) from an answer. */
static void http_keep_id(const http_answer *a, char last_id[MCP_EVENT_ID_MAX + 1], long *retry_ms, bool *progressed) {
        const char *id = sse_last_id(&a->dec);
        if (id && id[0] && strlen(id) <= MCP_EVENT_ID_MAX && strcmp(id, last_id) != 0) {
                memcpy(last_id, id, strlen(id) + 1);
                *progressed = true;
        }
        if (a->dec.retry_ms >= 0)
                *retry_ms = a->dec.retry_ms;
}

/* POST the request queued and wait for its reply: 0 once it is in c->reply, -ETIMEDOUT,
 * -ECANCELED, or the exchange's error. An event stream that breaks before the reply is resumed
 * (2025-11-25, transports: resumability and redelivery): a GET with Last-Event-ID (the last event
 * id seen) and the session's headers, after the server's retry (or MCP_RESUME_DELAY_MS), at most
 * MCP_RESUME_TRIES times in a row without a new event; the server replays what followed. */
static int http_wait(mcp_client *c, uint64_t deadline, int cancel_fd, const atomic_bool *cancel, bool init,
                     hull_error *e) {
        _cleanup_free_ char *body = NULL;
        size_t len = 0;
        char *nl = memchr(c->outq.buf, '\n', c->outq.len);
        len = nl ? (size_t) (nl - c->outq.buf) : c->outq.len;
        body = strndup(c->outq.buf, len);
        dynbuf_consume(&c->outq, MIN(len + 1, c->outq.len));
        if (!body)
                return mcpc_broke(c, e, -ENOMEM, "out of memory");
        uint64_t now = now_mono_ms();
        if (now >= deadline)
                return -ETIMEDOUT;
        http_answer a;
        hull_error pe = {0};
        char last_id[MCP_EVENT_ID_MAX + 1] = "";
        long retry_ms = -1;
        bool progressed = false;
        int r = http_send(c, c->http, body, len, NULL, deadline - now, cancel_fd, cancel, init, &a, &pe);
        http_keep_id(&a, last_id, &retry_ms, &progressed);
        bool resume = http_resumable(c, &a, r, last_id);
        http_answer_done(&a);
        unsigned tries = 0;
        while (resume) {
                if (tries++ >= MCP_RESUME_TRIES)
                        return hull_fail(e, r < 0 ? r : -EPROTO,
                                         "mcp: %s: %s: the server's event stream broke before the reply, and %u "
                                         "resumptions from event '%s' (GET with Last-Event-ID) brought nothing new%s%s",
                                         c->name, c->what ? c->what : "a request", MCP_RESUME_TRIES, last_id,
                                         r < 0 ? ": " : "", r < 0 ? pe.msg : "");
                uint64_t delay = retry_ms >= 0 ? (uint64_t) retry_ms : (uint64_t) MCP_RESUME_DELAY_MS * tries;
                int k = http_pause(MIN(delay, (uint64_t) MCP_RESUME_DELAY_MAX_MS), deadline, cancel_fd, cancel);
                if (k < 0)
                        return k;
                progressed = false;
                pe = (hull_error){0};
                now = now_mono_ms();
                r = http_send(c, c->http, NULL, 0, last_id, deadline > now ? deadline - now : 1, cancel_fd, cancel,
                              false, &a, &pe);
                http_keep_id(&a, last_id, &retry_ms, &progressed);
                bool again = http_resumable(c, &a, r, last_id);
                bool refused = r < 0 && a.status / 100 != 2 && a.status != 0;
                http_answer_done(&a);
                if (c->reply.root)
                        return 0;
                if (r == -ETIMEDOUT || r == -ECANCELED)
                        return r;
                if (refused || (r == 0 && !again))
                        return hull_fail(e, r < 0 ? r : -EPROTO,
                                         "mcp: %s: %s: the server's event stream broke before the reply and cannot be "
                                         "resumed from event '%s'%s%s",
                                         c->name, c->what ? c->what : "a request", last_id, r < 0 ? ": " : "",
                                         r < 0 ? pe.msg : " (the GET answer is not an event stream)");
                if (!again)
                        return http_fail(c, r, &pe, e);
                if (progressed)
                        tries = 0; /* new events came: the stream lives, only this connection broke */
        }
        if (r == -ETIMEDOUT || r == -ECANCELED)
                return r;
        if (r < 0)
                return http_fail(c, r, &pe, e);
        if (!c->reply.root)
                return hull_fail(e, -EPROTO, "mcp: %s: %s: the server ended its answer without the reply", c->name,
                                 c->what ? c->what : "a request");
        return 0;
}

/* Send a request and wait for its answer (in *ret: a result or an error). */
static int roundtrip(mcp_client *c, const char *method, json_t *params, const mcp_call_opts *o, const char *what,
                     mcp_msg *ret, hull_error *e) {
        uint64_t deadline = o && o->deadline_mono_ms ? o->deadline_mono_ms : now_mono_ms() + MCP_REQUEST_TIMEOUT_MS;
        int cancel_fd = o ? o->cancel_fd : -1;
        int r;

        if (c->broken.err) {
                json_decref(params);
                if (e)
                        *e = c->broken;
                return c->broken.err;
        }
        int64_t id = c->next_id++;
        if (o && o->progress) {
                if (!params)
                        params = json_object();
                json_t *meta = params ? json_object() : NULL;
                if (!meta || json_object_set_new(params, "_meta", meta) < 0 ||
                    json_object_set_new(meta, "progressToken", json_integer(id)) < 0) {
                        json_decref(params);
                        return mcpc_broke(c, e, -ENOMEM, "out of memory");
                }
        }
        json_t *jid = json_integer(id);
        r = queue(c, mcp_request_new(jid, method, params), e);
        json_decref(jid);
        if (r < 0)
                return r;
        c->waiting = true;
        c->wait_id = id;
        c->wait_opts = o;
        c->what = what;
        const atomic_bool *cancel = o ? o->cancel : NULL;
        bool init = strcmp(method, "initialize") == 0;
        r = c->http ? http_wait(c, deadline, cancel_fd, cancel, init, e)
                    : stdio_wait(c, deadline, cancel_fd, cancel, e);
        c->waiting = false;
        c->wait_opts = NULL;
        c->what = NULL;
        if ((r == -ETIMEDOUT || r == -ECANCELED) && init) /* initialize is never cancelled: the caller drops c */
                return hull_fail(e, r, "mcp: %s: initialize: %s", c->name,
                                 r == -ETIMEDOUT ? "no answer in time" : "interrupted");
        if (r == -ETIMEDOUT || r == -ECANCELED) {
                /* Tell the server to stop; its late answer and progress are ignored (the id is not
                 * waited for any more). A server that does not read its stdin is not waited for. */
                json_t *rid = json_integer(id);
                json_t *p = json_pack("{s:o, s:s}", "requestId", rid, "reason",
                                      r == -ETIMEDOUT ? "timed out" : "cancelled by hull's user");
                if (send_msg(c, mcp_notification_new("notifications/cancelled", p), NULL) == 0 && !c->http)
                        (void) flush(c, NULL);
                if (r == -ETIMEDOUT)
                        return hull_fail(e, r, "mcp: %s: %s: no answer in time", c->name, what);
                return hull_fail(e, r, "mcp: %s: %s: cancelled", c->name, what);
        }
        if (r < 0)
                return r;
        *ret = c->reply;
        c->reply = (mcp_msg){0};
        return 0;
}

/* A request whose answer must be a result: its object (a new reference) in *ret. */
static int request_result(mcp_client *c, const char *method, json_t *params, const mcp_call_opts *o, const char *what,
                          json_t **ret, hull_error *e) {
        mcp_msg m = {0};
        int r = roundtrip(c, method, params, o, what, &m, e);
        if (r < 0)
                return r;
        if (m.kind == MCP_MSG_ERROR) {
                char q[MCP_QUOTE_MAX + 4];
                r = hull_fail(e, -EREMOTEIO, "mcp: %s: %s: error %lld: %s", c->name, what, (long long) m.error_code,
                              mcpc_quote(m.error_msg, strlen(m.error_msg), q));
                mcp_msg_done(&m);
                return r;
        }
        *ret = json_incref(m.result);
        mcp_msg_done(&m);
        return 0;
}

int mcp_client_request(mcp_client *c, const char *method, json_t *params, const mcp_call_opts *o, json_t **ret,
                       hull_error *e) {
        return request_result(c, method, params, o, method, ret, e);
}

/* ---- the lifecycle ---- */

static int initialize(mcp_client *c, uint64_t timeout_ms, const atomic_bool *cancel, hull_error *e) {
        json_t *params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", MCP_PROTOCOL_LATEST, "capabilities",
                                   "clientInfo", "name", "hull", "version", HULL_VERSION);
        mcp_call_opts o = {.deadline_mono_ms = now_mono_ms() + timeout_ms, .cancel_fd = -1, .cancel = cancel};
        json_t *res = NULL;
        int r = request_result(c, "initialize", params, &o, "initialize", &res, e);
        if (r == -ETIMEDOUT) {
                char last[MCP_QUOTE_MAX + 4];
                mcpc_stderr_last_line(c, last);
                return mcpc_broke(c, e, r, "the server did not answer initialize within %llu ms%s%s",
                                  (unsigned long long) timeout_ms, last[0] ? "; its stderr ended with: " : "", last);
        }
        if (r == -ECANCELED)
                return mcpc_broke(c, e, r, "initialize was interrupted before the server answered");
        if (r < 0)
                return r;
        const char *v = json_string_value(json_object_get(res, "protocolVersion"));
        bool ok = false;
        for (size_t i = 0; v && i < ELEMENTSOF(accepted_versions); i++)
                ok = ok || strcmp(v, accepted_versions[i]) == 0;
        if (!ok) {
                char q[MCP_QUOTE_MAX + 4];
                r = mcpc_broke(c, e, -EPROTO,
                               "the server answered initialize with protocol version '%s'; hull speaks 2025-11-25, "
                               "2025-06-18 and 2025-03-26",
                               v ? mcpc_quote(v, strlen(v), q) : "(none)");
                json_decref(res);
                return r;
        }
        snprintf(c->version, sizeof(c->version), "%s", v);
        json_t *info = json_object_get(res, "serverInfo");
        c->server_info = json_is_object(info) ? json_incref(info) : json_object();
        json_t *caps = json_object_get(res, "capabilities");
        c->capabilities = json_is_object(caps) ? json_incref(caps) : json_object();
        const char *ins = json_string_value(json_object_get(res, "instructions"));
        if (ins)
                c->instructions = strdup(ins);
        json_decref(res);
        r = send_msg(c, mcp_notification_new("notifications/initialized", NULL), e);
        return r < 0 || c->http ? r : flush(c, e);
}

int mcp_client_spawn(const mcp_stdio_config *cfg, mcp_client **ret, hull_error *e) {
        if (!mcp_server_name_valid(cfg->name))
                return hull_fail(e, -EINVAL, "mcp: '%.40s' is not a server name (letters, digits, _ and -, at most %u)",
                                 cfg->name ? cfg->name : "", MCP_SERVER_NAME_MAX);
        size_t argc = 0;
        while (cfg->argv && cfg->argv[argc])
                argc++;
        if (argc == 0 || !cfg->argv[0][0])
                return hull_fail(e, -EINVAL, "mcp: %s: no command to start", cfg->name);
        if (argc > MCP_ARGV_MAX)
                return hull_fail(e, -E2BIG, "mcp: %s: more than %u arguments", cfg->name, MCP_ARGV_MAX);
        _cleanup_mcp_client_ mcp_client *c = calloc(1, sizeof(*c));
        if (!c)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        c->in_fd = c->out_fd = c->err_fd = -1;
        c->status = -1;
        snprintf(c->name, sizeof(c->name), "%s", cfg->name);
        mcpc_quote(cfg->argv[0], strlen(cfg->argv[0]), c->command);
        mcp_framer_init(&c->framer, MCP_MESSAGE_MAX);
        dynbuf_init(&c->outq, (size_t) MCP_MESSAGE_MAX * 4);
        c->on_message = cfg->on_message;
        c->on_message_ud = cfg->on_message_ud;
        int r = mcpc_spawn(c, cfg, e);
        if (r < 0)
                return r;
        r = initialize(c, cfg->init_timeout_ms ? cfg->init_timeout_ms : MCP_INIT_TIMEOUT_MS, cfg->cancel, e);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

/* End the HTTP session (DELETE, as the spec asks) and free what the transport holds. */
static void http_close(mcp_client *c) {
        if (c->http && c->session_id[0] && c->broken.err == 0) {
                char sid[HTTPC_HEADER_VALUE_MAX + 32], ver[64];
                const char *headers[HTTPC_HEADERS_MAX + 1];
                size_t n = 0;
                snprintf(sid, sizeof(sid), "Mcp-Session-Id: %s", c->session_id);
                snprintf(ver, sizeof(ver), "MCP-Protocol-Version: %s", c->version);
                headers[n++] = sid;
                headers[n++] = ver;
                for (size_t i = 0; i < c->n_headers && n < HTTPC_HEADERS_MAX; i++)
                        headers[n++] = c->headers[i];
                headers[n] = NULL;
                httpc_request req = {.method = "DELETE",
                                     .url = c->url,
                                     .headers = headers,
                                     .timeout_ms = MCP_CLOSE_GRACE_MS,
                                     .answer_max = 4096,
                                     .answer_truncate = true,
                                     .resolve = (const char *const *) c->resolve};
                httpc_answer a = {0};
                if (httpc_perform(c->side ? c->side : c->http, &req, &a, NULL) == 0)
                        httpc_answer_done(&a);
        }
        if (c->http)
                httpc_free(c->http);
        if (c->side)
                httpc_free(c->side);
        c->http = c->side = NULL;
        for (size_t i = 0; i < c->n_headers; i++)
                free(c->headers[i]);
        free(c->headers);
        for (size_t i = 0; c->resolve && c->resolve[i]; i++)
                free(c->resolve[i]);
        free(c->resolve);
        c->resolve = NULL;
        free(c->url);
        c->headers = NULL;
        c->url = NULL;
        c->n_headers = 0;
}

int mcp_client_connect(const mcp_http_config *cfg, mcp_client **ret, hull_error *e) {
        if (!mcp_server_name_valid(cfg->name))
                return hull_fail(e, -EINVAL, "mcp: '%.40s' is not a server name (letters, digits, _ and -, at most %u)",
                                 cfg->name ? cfg->name : "", MCP_SERVER_NAME_MAX);
        if (!cfg->url || (strncmp(cfg->url, "http://", 7) != 0 && strncmp(cfg->url, "https://", 8) != 0) ||
            strlen(cfg->url) > HTTPC_URL_MAX)
                return hull_fail(e, -EINVAL, "mcp: %s: the URL must be http:// or https://, at most %u bytes",
                                 cfg->name, HTTPC_URL_MAX);
        size_t nh = 0;
        while (cfg->headers && cfg->headers[nh])
                nh++;
        if (nh > HTTPC_HEADERS_MAX - 4)
                return hull_fail(e, -E2BIG, "mcp: %s: more than %u headers", cfg->name, HTTPC_HEADERS_MAX - 4);
        _cleanup_mcp_client_ mcp_client *c = calloc(1, sizeof(*c));
        if (!c)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        c->in_fd = c->out_fd = c->err_fd = -1;
        c->status = -1;
        snprintf(c->name, sizeof(c->name), "%s", cfg->name);
        mcpc_quote(cfg->url, strlen(cfg->url), c->command);
        mcp_framer_init(&c->framer, MCP_MESSAGE_MAX);
        dynbuf_init(&c->outq, (size_t) MCP_MESSAGE_MAX * 4);
        c->on_message = cfg->on_message;
        c->on_message_ud = cfg->on_message_ud;
        c->url = strdup(cfg->url);
        c->headers = calloc(nh + 1, sizeof(*c->headers));
        if (!c->url || !c->headers)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        for (size_t i = 0; i < nh; i++) {
                if (!strchr(cfg->headers[i], ':') || strpbrk(cfg->headers[i], "\r\n"))
                        return hull_fail(e, -EINVAL, "mcp: %s: a header must be one 'Name: value' line", c->name);
                c->headers[i] = strdup(cfg->headers[i]);
                if (!c->headers[i])
                        return hull_err(e, -ENOMEM, "mcp: out of memory");
                c->n_headers++;
        }
        size_t np = 0;
        while (cfg->resolve && cfg->resolve[np])
                np++;
        if (np) {
                c->resolve = calloc(np + 1, sizeof(*c->resolve));
                if (!c->resolve)
                        return hull_err(e, -ENOMEM, "mcp: out of memory");
                for (size_t i = 0; i < np; i++)
                        if (!(c->resolve[i] = strdup(cfg->resolve[i])))
                                return hull_err(e, -ENOMEM, "mcp: out of memory");
        }
        int r = httpc_new(&c->http, e);
        if (r >= 0)
                r = httpc_new(&c->side, e);
        if (r < 0)
                return r;
        httpc_keep_connections(c->http);
        httpc_keep_connections(c->side);
        r = initialize(c, cfg->init_timeout_ms ? cfg->init_timeout_ms : MCP_INIT_TIMEOUT_MS, cfg->cancel, e);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

/* ---- tools ---- */

int mcp_client_list_tools(mcp_client *c, const mcp_call_opts *o, json_t **ret, hull_error *e) {
        _cleanup_(json_decrefp) json_t *all = json_array();
        _cleanup_free_ char *cursor = NULL;
        if (!all)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        for (unsigned page = 0;; page++) {
                if (page >= MCP_LIST_PAGES_MAX)
                        return hull_fail(e, -EPROTO,
                                         "mcp: %s: tools/list: more than %u pages (a cursor that never ends?)", c->name,
                                         MCP_LIST_PAGES_MAX);
                json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : NULL;
                json_t *res = NULL;
                int r = request_result(c, "tools/list", params, o, "tools/list", &res, e);
                if (r < 0)
                        return r;
                json_t *tools = json_object_get(res, "tools");
                if (!json_is_array(tools)) {
                        json_decref(res);
                        return hull_fail(e, -EPROTO, "mcp: %s: tools/list: the answer has no \"tools\" array", c->name);
                }
                size_t i;
                json_t *t;
                json_array_foreach(tools, i, t) {
                        if (!json_is_string(json_object_get(t, "name")) ||
                            !json_is_object(json_object_get(t, "inputSchema")))
                                continue;
                        if (json_array_size(all) >= MCP_TOOLS_MAX) {
                                json_decref(res);
                                return hull_fail(e, -E2BIG, "mcp: %s: tools/list: more than %u tools", c->name,
                                                 MCP_TOOLS_MAX);
                        }
                        json_array_append(all, t);
                }
                const char *next = json_string_value(json_object_get(res, "nextCursor"));
                if (next && cursor && strcmp(next, cursor) == 0) {
                        json_decref(res);
                        return hull_fail(e, -EPROTO, "mcp: %s: tools/list: the server gave the same cursor twice",
                                         c->name);
                }
                free(cursor);
                cursor = next ? strdup(next) : NULL;
                json_decref(res);
                if (next && !cursor)
                        return hull_err(e, -ENOMEM, "mcp: out of memory");
                if (!next)
                        break;
        }
        *ret = TAKE_PTR(all);
        return 0;
}

int mcp_client_call_tool(mcp_client *c, const char *tool, const json_t *arguments, const mcp_call_opts *o, json_t **ret,
                         hull_error *e) {
        char what[MCP_QUOTE_MAX + 16];
        char q[MCP_QUOTE_MAX + 4];
        snprintf(what, sizeof(what), "tools/call %s", mcpc_quote(tool, strlen(tool), q));
        json_t *params = json_pack("{s:s}", "name", tool);
        if (params && arguments && json_object_set_new(params, "arguments", json_deep_copy(arguments)) < 0) {
                json_decref(params);
                params = NULL;
        }
        if (!params)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        return request_result(c, "tools/call", params, o, what, ret, e);
}
