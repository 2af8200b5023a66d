/* mcp-server.c: see mcp-server.h. Two threads share the connection: the reader (stdin: framing,
 * parsing, ping, cancellation, the queue) and the caller of mcp_server_run (the calls, one at a
 * time, through the tool-call runner, tool-run.h, whose watcher thread per call turns its
 * deadline, the client's cancellation and a stop into the tool's cancel fd and sends progress).
 * Every message goes out whole, under one lock. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dynbuf.h"
#include "fs-util.h"
#include "limits.h"
#include "macro.h"
#include "mcp-jsonrpc.h"
#include "mcp-server.h"
#include "schema.h"
#include "time-util.h"
#include "tool-run.h"

#define MCP_LATEST_VERSION "2025-11-25"

static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

bool mcp_server_version_supported(const char *version) {
        for (size_t i = 0; version && i < ELEMENTSOF(versions); i++)
                if (strcmp(version, versions[i]) == 0)
                        return true;
        return false;
}

struct mcp_conn {
        mcp_server_config cfg; /* a copy */
        const mcp_server_config *c;
        json_t **schemas; /* the tools' input schemas, parsed */
        int in_fd, out_fd;

        pthread_mutex_t lock; /* the queue, the input's state and the call in flight */
        pthread_cond_t cond;  /* signalled when the queue or the input's state changes */
        mcp_msg queue[MCP_SERVER_QUEUE_MAX];
        size_t head, n;
        bool eof, quit;
        int read_error;
        hull_error read_e;
        json_t *current_id; /* the request whose call runs, or NULL */
        int call_efd;       /* that call's cancel fd */
        bool cancelled;     /* the client cancelled it: no answer */
        atomic_bool interrupt;

        pthread_mutex_t call_lock; /* calls run one at a time */

        pthread_mutex_t out_lock; /* stdio's output */
        dynbuf out;
        int out_error;
};

typedef struct mcp_conn server;

/* Where one request's messages go (its answer, its progress). */
typedef struct outlet {
        mcp_send_fn *send;
        void *ud;
} outlet;

static bool stopping(const server *s) {
        return s->c->stop && atomic_load(s->c->stop);
}

/* ---- output ---- */

/* Send msg (stolen) through o. */
static int send_msg(const outlet *o, json_t *msg) {
        if (!msg)
                return -ENOMEM;
        return o->send(o->ud, msg);
}

/* stdio's outlet: msg (stolen) as one line. Returns 0 or the output's (sticky) error. */
static int stdio_send(void *ud, json_t *msg) {
        server *s = ud;
        int r;
        pthread_mutex_lock(&s->out_lock);
        r = s->out_error;
        if (r >= 0) {
                dynbuf_reset(&s->out);
                r = mcp_msg_write(msg, &s->out);
                if (r >= 0) {
                        r = loop_write(s->out_fd, s->out.buf, s->out.len);
                        if (r < 0)
                                s->out_error = r;
                }
        }
        pthread_mutex_unlock(&s->out_lock);
        json_decref(msg);
        return r;
}

static int send_error(const outlet *s, json_t *id, int64_t code, const char *fmt, ...) _printf_(4, 5);
static int send_error(const outlet *s, json_t *id, int64_t code, const char *fmt, ...) {
        char msg[HULL_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return send_msg(s, mcp_error_new(id, code, msg, NULL));
}

static void logf_(server *s, dlog_level lvl, const char *fmt, ...) _printf_(3, 4);
static void logf_(server *s, dlog_level lvl, const char *fmt, ...) {
        char line[SERVE_LOG_LINE_MAX];
        va_list ap;
        if (!s->c->log)
                return;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        dlog_log(s->c->log, lvl, "%s", line);
}

/* ---- the reader ---- */

static void cancel_request(server *s, const json_t *params) {
        const json_t *id = json_object_get(params, "requestId");
        if (!mcp_id_valid(id))
                return;
        pthread_mutex_lock(&s->lock);
        if (s->current_id && mcp_id_equal(s->current_id, id)) {
                uint64_t one = 1;
                s->cancelled = true;
                atomic_store(&s->interrupt, true);
                if (s->call_efd >= 0)
                        (void) !write(s->call_efd, &one, sizeof(one));
        } else
                for (size_t i = 0; i < s->n; i++) {
                        mcp_msg *m = &s->queue[(s->head + i) % MCP_SERVER_QUEUE_MAX];
                        if (!mcp_id_equal(m->id, id))
                                continue;
                        mcp_msg_done(m);
                        for (size_t k = i; k + 1 < s->n; k++)
                                s->queue[(s->head + k) % MCP_SERVER_QUEUE_MAX] =
                                        s->queue[(s->head + k + 1) % MCP_SERVER_QUEUE_MAX];
                        s->n--;
                        break;
                }
        pthread_mutex_unlock(&s->lock);
}

static int on_line(void *ud, const char *line, size_t len) {
        server *s = ud;
        const outlet so = {stdio_send, s};
        mcp_msg m = {0};
        hull_error e = {0};
        int r = mcp_msg_parse(line, len, &m, &e);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                /* JSON but not a valid message: a JSON-RPC 2.0 request with a valid id (its params
                 * wrong) gets its id back; anything else is answered without one */
                _cleanup_(json_decrefp) json_t *raw = r == -EINVAL ? json_loadb(line, len, 0, NULL) : NULL;
                const char *version = json_string_value(json_object_get(raw, "jsonrpc"));
                bool request =
                        json_is_object(raw) && json_object_get(raw, "method") && version && strcmp(version, "2.0") == 0;
                json_t *id = request ? json_object_get(raw, "id") : NULL;
                logf_(s, DLOG_WARN, "event=mcp_bad_message error=%d", r);
                r = send_error(&so, mcp_id_valid(id) ? id : NULL,
                               r == -EBADMSG ? MCP_ERR_PARSE : MCP_ERR_INVALID_REQUEST, "%s", e.msg);
                return r == -EPIPE ? r : 0;
        }
        switch (m.kind) {
        case MCP_MSG_NOTIFICATION:
                if (strcmp(m.method, "notifications/cancelled") == 0)
                        cancel_request(s, m.params);
                mcp_msg_done(&m);
                return 0;
        case MCP_MSG_RESULT:
        case MCP_MSG_ERROR: /* this server asks nothing: a stray answer */
                mcp_msg_done(&m);
                return 0;
        case MCP_MSG_REQUEST:
                break;
        }
        if (strcmp(m.method, "ping") == 0) { /* at once, even while a call runs */
                r = send_msg(&so, mcp_result_new(m.id, json_object()));
                mcp_msg_done(&m);
                return r == -EPIPE ? r : 0;
        }
        pthread_mutex_lock(&s->lock);
        while (s->n >= MCP_SERVER_QUEUE_MAX && !s->quit && !stopping(s)) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += 1;
                (void) pthread_cond_timedwait(&s->cond, &s->lock, &ts);
        }
        if (s->n >= MCP_SERVER_QUEUE_MAX) {
                pthread_mutex_unlock(&s->lock);
                mcp_msg_done(&m);
                return -ECANCELED;
        }
        s->queue[(s->head + s->n) % MCP_SERVER_QUEUE_MAX] = m;
        s->n++;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        return 0;
}

static void *reader_main(void *ud) {
        server *s = ud;
        _cleanup_free_ char *buf = malloc(MCP_READ_CHUNK);
        mcp_framer f;
        int r = 0;

        mcp_framer_init(&f, MCP_MESSAGE_MAX);
        if (!buf)
                r = -ENOMEM;
        while (r >= 0) {
                pthread_mutex_lock(&s->lock);
                bool quit = s->quit;
                pthread_mutex_unlock(&s->lock);
                if (quit || stopping(s))
                        break;
                struct pollfd p = {.fd = s->in_fd, .events = POLLIN};
                int k = poll(&p, 1, MCP_SERVER_TICK_MS);
                if (k < 0 && errno != EINTR) {
                        r = -errno;
                        break;
                }
                if (k <= 0)
                        continue;
                ssize_t n = read(s->in_fd, buf, MCP_READ_CHUNK);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n < 0) {
                        r = -errno;
                        break;
                }
                if (n == 0) {
                        if (mcp_framer_finish(&f) == 1)
                                logf_(s, DLOG_WARN, "event=mcp_input_cut note=the_last_line_had_no_end");
                        break;
                }
                r = mcp_framer_feed(&f, buf, (size_t) n, on_line, s);
        }
        mcp_framer_done(&f);
        pthread_mutex_lock(&s->lock);
        s->eof = true;
        if (r < 0 && r != -ECANCELED) {
                s->read_error = r;
                if (r == -E2BIG)
                        hull_fail(&s->read_e, r,
                                  "mcp: a message from the client is over %u MiB: the connection is over",
                                  MCP_MESSAGE_MAX >> 20);
                else if (r == -EPIPE)
                        hull_fail(&s->read_e, r, "mcp: the client's end of stdout closed");
                else
                        hull_err(&s->read_e, r, "mcp: cannot read stdin");
        }
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

/* ---- one call's hooks (tool-run.h) ---- */

/* What the runner tells this server of one call: progress for the request's token, hull
 * stopping, the cancel fd notifications/cancelled writes to, and whether the client cancelled. */
typedef struct call_hooks {
        server *s;
        const outlet *o;
        const json_t *token; /* the request's progressToken, or NULL */
        double last_progress;
} call_hooks;

static bool call_progress(void *ud, uint64_t elapsed_ms, const char *note) {
        call_hooks *h = ud;
        double p = (double) elapsed_ms / 1000.0;
        if (p <= h->last_progress)
                return false;
        char msg[AGENT_ERROR_TEXT_MAX + 64];
        snprintf(msg, sizeof(msg), "running for %" PRIu64 " s%s%s", elapsed_ms / 1000, note && note[0] ? ": " : "",
                 note ? note : "");
        json_t *params = json_pack("{s:O, s:f, s:s}", "progressToken", h->token, "progress", p, "message", msg);
        if (params)
                (void) send_msg(h->o, mcp_notification_new("notifications/progress", params));
        h->last_progress = p;
        return true;
}

/* hull stopping ends the call as an interrupt does */
static bool call_should_fire(void *ud) {
        call_hooks *h = ud;
        if (!stopping(h->s))
                return false;
        atomic_store(&h->s->interrupt, true);
        return true;
}

static void call_cancel_fd(void *ud, int fd) {
        call_hooks *h = ud;
        pthread_mutex_lock(&h->s->lock);
        h->s->call_efd = fd;
        if (fd >= 0 && h->s->cancelled) { /* cancelled before it started */
                uint64_t one = 1;
                (void) !write(fd, &one, sizeof(one));
        }
        pthread_mutex_unlock(&h->s->lock);
}

static bool call_cancelled(void *ud) {
        call_hooks *h = ud;
        pthread_mutex_lock(&h->s->lock);
        bool cancelled = h->s->cancelled;
        pthread_mutex_unlock(&h->s->lock);
        return cancelled;
}

/* ---- the methods ---- */

static json_t *text_content(const char *text, bool is_error) {
        return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", text ? text : "", "isError",
                         is_error);
}

static int do_initialize(server *s, const mcp_msg *m, const outlet *o) {
        const char *asked = json_string_value(json_object_get(m->params, "protocolVersion"));
        const char *version = mcp_server_version_supported(asked) ? asked : MCP_LATEST_VERSION;
        const json_t *ci = json_object_get(m->params, "clientInfo");
        char name[64], ver[64];
        logf_(s, DLOG_INFO, "event=mcp_initialize client=%s client_version=%s asked=%s protocol=%s",
              dlog_clean(json_string_value(json_object_get(ci, "name")) ?: "?", name, sizeof(name)),
              dlog_clean(json_string_value(json_object_get(ci, "version")) ?: "?", ver, sizeof(ver)),
              asked ? (mcp_server_version_supported(asked) ? asked : "other") : "none", version);
        json_t *res = json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}}", "protocolVersion", version, "capabilities",
                                "tools", "listChanged", false, "serverInfo", "name", s->c->name, "title", "hull",
                                "version", s->c->version);
        if (res && s->c->instructions)
                json_object_set_new(res, "instructions", json_string(s->c->instructions));
        return send_msg(o, mcp_result_new(m->id, res));
}

static int do_tools_list(server *s, const mcp_msg *m, const outlet *o) {
        json_t *tools = json_array();
        for (size_t i = 0; tools && i < s->c->n_tools; i++) {
                const tool_def *d = s->c->tools[i];
                json_array_append_new(tools, json_pack("{s:s, s:s, s:O}", "name", d->name, "description",
                                                       d->description, "inputSchema", s->schemas[i]));
        }
        return send_msg(o, mcp_result_new(m->id, json_pack("{s:o}", "tools", tools)));
}

static size_t find_tool(server *s, const char *name) {
        for (size_t i = 0; name && i < s->c->n_tools; i++)
                if (strcmp(s->c->tools[i]->name, name) == 0)
                        return i;
        return SIZE_MAX;
}

/* Run tool i through the runner (tool-run.h), the way the agent loop does; *res is what the client
 * reads. Every read-only call goes on the record (tool_def.record_kind): returns true when it
 * did, with *ret_cancelled what the record says (a cancellation that comes later does not stop the
 * answer). A record that cannot be made is logged. */
static bool run_tool(server *s, size_t i, const json_t *input, const json_t *token, const outlet *o, call_result *res,
                     bool *ret_cancelled) {
        const tool_def *d = s->c->tools[i];
        call_hooks h = {.s = s, .o = o, .token = token};
        tool_run_ctx c = {.ss = s->c->ss,
                          .session = s->c->session,
                          .interrupt = &s->interrupt,
                          .who = "mcp",
                          .stopped = "cancelled",
                          .record = true,
                          .should_fire = call_should_fire,
                          .cancel_fd = call_cancel_fd,
                          .cancelled = call_cancelled,
                          .progress = token ? call_progress : NULL,
                          .progress_ms = MCP_PROGRESS_MS,
                          .notes = TOOL_RUN_NOTE_KEEP,
                          .ud = &h};
        tool_run_record rec;
        tool_run_call(&c, d, input, res, &rec);
        if (rec.error < 0) {
                char clean[HULL_ERROR_MSG_MAX];
                logf_(s, DLOG_ERROR, "event=mcp_record_failed tool=%s error=\"%s\"", d->name,
                      dlog_clean(rec.e.msg, clean, sizeof(clean)));
        }
        if (rec.made)
                *ret_cancelled = rec.cancelled;
        return rec.made;
}

static int do_tools_call(server *s, const mcp_msg *m, const outlet *o) {
        const char *name = json_string_value(json_object_get(m->params, "name"));
        const json_t *args = json_object_get(m->params, "arguments");
        const json_t *token = json_object_get(json_object_get(m->params, "_meta"), "progressToken");
        _cleanup_(json_decrefp) json_t *empty = NULL;
        call_result res = {0};
        char names[1024];
        size_t off = 0;

        if (!name)
                return send_error(o, m->id, MCP_ERR_INVALID_PARAMS, "tools/call wants params.name, a tool's name");
        size_t i = find_tool(s, name);
        if (i == SIZE_MAX) {
                names[0] = '\0';
                for (size_t k = 0; k < s->c->n_tools && off + 1 < sizeof(names); k++) {
                        int n = snprintf(names + off, sizeof(names) - off, "%s%s", k ? ", " : "", s->c->tools[k]->name);
                        if (n < 0)
                                break;
                        off += (size_t) n;
                }
                return send_error(o, m->id, MCP_ERR_INVALID_PARAMS, "unknown tool \"%.64s\"; the tools are: %s", name,
                                  names);
        }
        if (args && !json_is_object(args))
                return send_error(o, m->id, MCP_ERR_INVALID_PARAMS, "tools/call: params.arguments must be an object");
        if (!args)
                args = empty = json_object();
        if (!mcp_id_valid(token))
                token = NULL;
        uint64_t started = now_mono_ms();
        bool cancelled = false, settled = false;
        if (tool_run_validate(s->schemas[i], args, "arguments", name, &res) >= 0)
                settled = run_tool(s, i, args, token, o, &res, &cancelled);

        if (!settled) {
                pthread_mutex_lock(&s->lock);
                cancelled = s->cancelled;
                pthread_mutex_unlock(&s->lock);
        }
        logf_(s, DLOG_INFO, "event=mcp_call tool=%s ms=%" PRIu64 " is_error=%s handles=%zu%s", name,
              now_mono_ms() - started, res.is_error ? "true" : "false", json_array_size(res.handles),
              cancelled ? " cancelled=true" : "");
        int r = 0;
        if (!cancelled) { /* a cancelled request is not answered */
                json_t *result = text_content(res.text ? res.text : TOOL_RUN_LOST_TEXT, res.is_error);
                if (result && json_array_size(res.handles))
                        json_object_set_new(result, "structuredContent", json_pack("{s:O}", "handles", res.handles));
                r = send_msg(o, mcp_result_new(m->id, result));
                if (r == -E2BIG)
                        r = send_error(o, m->id, MCP_ERR_INTERNAL, "%s: the result is too large to send", name);
        }
        call_result_done(&res);
        return r;
}

/* A call: one at a time; the call in flight is the one notifications/cancelled can stop. */
static int call(server *s, const mcp_msg *m, const outlet *o) {
        pthread_mutex_lock(&s->call_lock);
        pthread_mutex_lock(&s->lock);
        s->current_id = m->id;
        s->cancelled = false;
        atomic_store(&s->interrupt, false);
        pthread_mutex_unlock(&s->lock);
        int r = do_tools_call(s, m, o);
        pthread_mutex_lock(&s->lock);
        s->current_id = NULL;
        pthread_mutex_unlock(&s->lock);
        pthread_mutex_unlock(&s->call_lock);
        return r;
}

static int handle(server *s, const mcp_msg *m, const outlet *o) {
        if (strcmp(m->method, "initialize") == 0)
                return do_initialize(s, m, o);
        if (strcmp(m->method, "ping") == 0)
                return send_msg(o, mcp_result_new(m->id, json_object()));
        if (strcmp(m->method, "tools/list") == 0)
                return do_tools_list(s, m, o);
        if (strcmp(m->method, "tools/call") == 0)
                return call(s, m, o);
        if (strcmp(m->method, "resources/list") == 0 || strcmp(m->method, "prompts/list") == 0)
                return send_error(o, m->id, MCP_ERR_METHOD_NOT_FOUND,
                                  "Method not found: %.64s (hull offers tools only)", m->method);
        return send_error(o, m->id, MCP_ERR_METHOD_NOT_FOUND, "Method not found: %.64s", m->method);
}

int mcp_conn_request(mcp_conn *c, const mcp_msg *m, mcp_send_fn *send, void *ud) {
        const outlet o = {send, ud};
        return handle(c, m, &o);
}

void mcp_conn_notify(mcp_conn *c, const mcp_msg *m) {
        if (m->kind == MCP_MSG_NOTIFICATION && strcmp(m->method, "notifications/cancelled") == 0)
                cancel_request(c, m->params);
}

/* ---- the server ---- */

static int serve(server *s, hull_error *e) {
        pthread_t reader;
        int r = pthread_create(&reader, NULL, reader_main, s);
        if (r != 0)
                return hull_err(e, -r, "mcp: cannot start the reader thread");
        for (;;) {
                mcp_msg m;
                pthread_mutex_lock(&s->lock);
                while (s->n == 0 && !s->eof && !stopping(s)) {
                        struct timespec ts;
                        clock_gettime(CLOCK_REALTIME, &ts);
                        ts.tv_nsec += (long) MCP_SERVER_TICK_MS * 1000000L;
                        if (ts.tv_nsec >= 1000000000L) {
                                ts.tv_sec++;
                                ts.tv_nsec -= 1000000000L;
                        }
                        (void) pthread_cond_timedwait(&s->cond, &s->lock, &ts);
                }
                if (s->n == 0 || stopping(s)) {
                        pthread_mutex_unlock(&s->lock);
                        break;
                }
                m = s->queue[s->head];
                s->head = (s->head + 1) % MCP_SERVER_QUEUE_MAX;
                s->n--;
                pthread_cond_broadcast(&s->cond);
                pthread_mutex_unlock(&s->lock);

                (void) mcp_conn_request(s, &m, stdio_send, s);
                mcp_msg_done(&m);
                pthread_mutex_lock(&s->out_lock);
                bool broken = s->out_error < 0;
                pthread_mutex_unlock(&s->out_lock);
                if (broken)
                        break;
        }
        pthread_mutex_lock(&s->lock);
        s->quit = true;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        pthread_join(reader, NULL);

        pthread_mutex_lock(&s->out_lock);
        int out_error = s->out_error;
        pthread_mutex_unlock(&s->out_lock);
        if (out_error < 0)
                return hull_err(e, out_error, "mcp: cannot write to stdout");
        if (s->read_error < 0) {
                if (e)
                        *e = s->read_e;
                return s->read_error;
        }
        return 0;
}

/* The connection's state: the config copied, the schemas parsed. */
static int conn_init(server *s, const mcp_server_config *c, hull_error *e) {
        int r = 0;
        *s = (server){.cfg = *c, .call_efd = -1};
        s->c = &s->cfg;
        s->schemas = calloc(c->n_tools ? c->n_tools : 1, sizeof(json_t *));
        if (!s->schemas)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        for (size_t i = 0; i < c->n_tools && r >= 0; i++) {
                json_error_t je;
                s->schemas[i] = json_loads(c->tools[i]->input_schema, 0, &je);
                if (!s->schemas[i])
                        r = hull_fail(e, -EINVAL, "mcp: the schema of %s is not JSON: %s", c->tools[i]->name, je.text);
                else
                        r = schema_check(s->schemas[i], e);
        }
        if (r < 0) {
                for (size_t i = 0; i < c->n_tools; i++)
                        json_decref(s->schemas[i]);
                free(s->schemas);
                s->schemas = NULL;
                return r;
        }
        dynbuf_init(&s->out, MCP_MESSAGE_MAX + 1);
        pthread_mutex_init(&s->lock, NULL);
        pthread_mutex_init(&s->call_lock, NULL);
        pthread_mutex_init(&s->out_lock, NULL);
        pthread_cond_init(&s->cond, NULL);
        return 0;
}

static void conn_done(server *s) {
        for (size_t i = 0; i < s->n; i++)
                mcp_msg_done(&s->queue[(s->head + i) % MCP_SERVER_QUEUE_MAX]);
        pthread_cond_destroy(&s->cond);
        pthread_mutex_destroy(&s->out_lock);
        pthread_mutex_destroy(&s->call_lock);
        pthread_mutex_destroy(&s->lock);
        dynbuf_free(&s->out);
        for (size_t i = 0; i < s->c->n_tools; i++)
                json_decref(s->schemas[i]);
        free(s->schemas);
}

int mcp_conn_new(const mcp_server_config *c, mcp_conn **ret, hull_error *e) {
        server *s = malloc(sizeof(*s));
        if (!s)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        int r = conn_init(s, c, e);
        if (r < 0) {
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

void mcp_conn_free(mcp_conn *c) {
        if (!c)
                return;
        conn_done(c);
        free(c);
}

int mcp_server_run(const mcp_server_config *c, int in_fd, int out_fd, hull_error *e) {
        server s;
        int r = conn_init(&s, c, e);
        if (r < 0)
                return r;
        s.in_fd = in_fd;
        s.out_fd = out_fd;
        r = serve(&s, e);
        conn_done(&s);
        return r;
}
