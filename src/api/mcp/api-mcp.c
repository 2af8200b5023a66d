/* api-mcp.c: see api-mcp.h. A table of MCP sessions (each an mcp_conn over one sandbox session of
 * the core, reference-counted: a request in flight keeps its entry alive after a DELETE); the
 * route's handler parses the message on the polling thread and answers what does not block
 * there (ping, tools/list, notifications); initialize, tools/call and DELETE go to a thread
 * http_req_spawn makes, or, for a call answered as an event stream, to a worker thread of this
 * API (counted, so that shutdown waits for it). */
#include "api-mcp.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "auth.h"
#include "fs-util.h"
#include "http-forward.h"
#include "limits.h"
#include "macro.h"
#include "mcp-jsonrpc.h"
#include "time-util.h"
#include "tool-catalog.h"
#include "mcp-server.h"
#include "tools-sandbox.h"
#include "utf8.h"

#define MCP_ERR_SERVER (-32000)
#define MCP_ERR_SESSION (-32001)
#define MCP_ERR_CANCELLED (-32800) /* LSP's RequestCancelled */

typedef struct entry {
        char id[PLIM_SESSION_ID_MAX + 1 + STORE_ID_MAX]; /* the core's; ".<node>" with several nodes */
        char principal[SERVE_SHORT_STR_MAX];
        ss_session *session;
        mcp_conn *conn;
        char *instructions;
        unsigned refs; /* the table's, and one per request using it */
        bool listed;
} entry;

struct api_mcp {
        api_mcp_config cfg;
        const tool_def *tools[MCP_OFFER_MAX]; /* hull mcp's (tool_catalog_mcp_offer) */
        size_t n_tools;

        pthread_mutex_t lock; /* the table, stopping, workers */
        pthread_cond_t cond;  /* a worker ended */
        entry *table[MCP_HTTP_SESSIONS_MAX];
        size_t n;
        bool stopping;
        unsigned workers;
        http_relays relays; /* requests forwarded to the node of their session */
};

/* ---- the table ---- */

static void entry_unref(api_mcp *a, entry *en) {
        if (!en)
                return;
        pthread_mutex_lock(&a->lock);
        bool last = --en->refs == 0;
        pthread_mutex_unlock(&a->lock);
        if (!last)
                return;
        mcp_conn_free(en->conn);
        if (en->session)
                ss_unref(a->cfg.ss, en->session);
        free(en->instructions);
        free(en);
}

/* Take en out of the table (under a->lock); the caller then ends it (end_entry). */
static void unlist_locked(api_mcp *a, entry *en) {
        for (size_t i = 0; i < a->n; i++)
                if (a->table[i] == en) {
                        a->table[i] = a->table[--a->n];
                        en->listed = false;
                        return;
                }
}

/* Close en's sandbox session (a call in flight is cancelled) and drop the table's reference. */
static void end_entry(api_mcp *a, entry *en) {
        ss_close_info ci;
        ss_close(a->cfg.ss, en->session, &ci);
        entry_unref(a, en);
}

/* Take the entries whose sandbox session ended (idle, lifetime, eviction) out of the table. */
static void sweep(api_mcp *a) {
        entry *gone[MCP_HTTP_SESSIONS_MAX];
        size_t n = 0;
        char detail[PLIM_END_DETAIL_MAX];
        pthread_mutex_lock(&a->lock);
        for (size_t i = 0; i < a->n;) {
                entry *en = a->table[i];
                if (ss_end_state(a->cfg.ss, en->session, detail) != SS_END_NONE) {
                        unlist_locked(a, en);
                        gone[n++] = en;
                } else
                        i++;
        }
        pthread_mutex_unlock(&a->lock);
        for (size_t i = 0; i < n; i++)
                end_entry(a, gone[i]);
}

/* The caller's session id names: a reference, or NULL (unknown, another caller's, ended: an
 * ended one leaves the table). */
static entry *lookup(api_mcp *a, const char *id, const char *principal) {
        entry *en = NULL;
        char detail[PLIM_END_DETAIL_MAX];
        bool ended = false;
        pthread_mutex_lock(&a->lock);
        for (size_t i = 0; i < a->n; i++)
                if (strcmp(a->table[i]->id, id) == 0 && strcmp(a->table[i]->principal, principal) == 0) {
                        en = a->table[i];
                        break;
                }
        if (en && ss_end_state(a->cfg.ss, en->session, detail) != SS_END_NONE) {
                unlist_locked(a, en);
                ended = true;
        } else if (en)
                en->refs++;
        pthread_mutex_unlock(&a->lock);
        if (ended) {
                end_entry(a, en);
                en = NULL;
        }
        return en;
}

unsigned api_mcp_open_count(api_mcp *a) {
        pthread_mutex_lock(&a->lock);
        unsigned n = (unsigned) a->n;
        pthread_mutex_unlock(&a->lock);
        return n;
}

/* ---- answers ---- */

/* A JSON-RPC message as the answer (msg stolen). */
static void answer_msg(http_req *r, unsigned status, json_t *msg) {
        char *s = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
        bool built = msg != NULL;
        json_decref(msg);
        if (!s) { /* no message: made for want of memory or from a string that is not UTF-8 */
                (void) http_answer_text(r, 500,
                                        built ? "out of memory\n" : "internal error: the answer could not be made\n");
                return;
        }
        (void) http_answer(r, status, "application/json", s, strlen(s));
}

static void failf(http_req *r, unsigned status, int64_t code, const char *fmt, ...) _printf_(4, 5);
static void failf(http_req *r, unsigned status, int64_t code, const char *fmt, ...) {
        char msg[HULL_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        _cleanup_free_ char *text = NULL; /* a message may quote the client, cut anywhere */
        size_t text_len;
        json_t *m =
                utf8_make_valid(msg, strlen(msg), &text, &text_len) < 0 ? NULL : mcp_error_new(NULL, code, text, NULL);
        if (m)
                json_object_set_new(m, "id", json_null());
        http_req_note(r, "mcp_error=%lld", (long long) code);
        answer_msg(r, status, m);
}

static void mcp_refuse(http_req *r, http_refusal why, unsigned status, const char *msg) {
        if (why == HTTP_REFUSAL_METHOD)
                failf(r, status, MCP_ERR_SERVER,
                      "%s (/mcp takes POST for messages and DELETE to end a session; no "
                      "GET stream is offered)",
                      msg);
        else
                failf(r, status, MCP_ERR_SERVER, "%s", msg);
}

static const http_api mcp_api = {.name = "mcp", .refuse = mcp_refuse};

/* The answer of a request given as JSON: the last response sent (progress is dropped). */
typedef struct collect {
        json_t *answer;
} collect;

static int collect_send(void *ud, json_t *msg) {
        collect *c = ud;
        if (!json_object_get(msg, "result") && !json_object_get(msg, "error")) {
                json_decref(msg); /* a notification: no way to send it on a JSON answer */
                return 0;
        }
        char *s = json_dumps(msg, JSON_COMPACT);
        size_t len = s ? strlen(s) : 0;
        free(s);
        if (!s) {
                json_decref(msg);
                return -ENOMEM;
        }
        if (len > MCP_MESSAGE_MAX) {
                json_decref(msg);
                return -E2BIG;
        }
        json_decref(c->answer);
        c->answer = msg;
        return 0;
}

/* The collected answer of request id; none: the client cancelled it (notifications/cancelled),
 * and the POST still needs an answer. */
static void answer_collected(http_req *r, collect *c, json_t *id) {
        if (!c->answer) {
                http_req_note(r, "cancelled=true");
                answer_msg(r, 200,
                           mcp_error_new(id, MCP_ERR_CANCELLED, "the request was cancelled (notifications/cancelled)",
                                         NULL));
                return;
        }
        answer_msg(r, 200, TAKE_PTR(c->answer));
}

/* ---- the head: headers every message must get right ---- */

static bool media_is(const char *v, const char *type) {
        size_t n = strlen(type);
        while (*v == ' ')
                v++;
        return strncasecmp(v, type, n) == 0 && (v[n] == '\0' || v[n] == ';' || v[n] == ' ');
}

static bool accepts(http_req *r, const char *type) {
        const char *v = http_req_header(r, "Accept", NULL);
        if (!v)
                return false;
        for (const char *p = v; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
                if (media_is(p, type))
                        return true;
        return false;
}

static bool origin_ok(const char *o) {
        static const char *const hosts[] = {"localhost", "127.0.0.1", "[::1]"};
        const char *h = NULL;
        if (strncasecmp(o, "http://", 7) == 0)
                h = o + 7;
        else if (strncasecmp(o, "https://", 8) == 0)
                h = o + 8;
        if (!h)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(hosts); i++) {
                size_t n = strlen(hosts[i]);
                if (strncasecmp(h, hosts[i], n) == 0 && (h[n] == '\0' || h[n] == ':' || h[n] == '/'))
                        return true;
        }
        return false;
}

static int mcp_head(http_req *r) {
        unsigned n = 0;
        const char *v = http_req_header(r, "Origin", &n);
        if (n > 0 && (!v || !origin_ok(v))) {
                failf(r, 403, MCP_ERR_SERVER,
                      "Forbidden: the Origin %.80s is not a local one; /mcp serves local pages and programs only",
                      v ? v : "(given twice)");
                return 1;
        }
        v = http_req_header(r, "MCP-Protocol-Version", &n);
        if (n > 0 && !mcp_server_version_supported(v)) {
                failf(r, 400, MCP_ERR_SERVER,
                      "Bad Request: Unsupported protocol version: %.40s (supported versions: 2025-11-25, 2025-06-18, "
                      "2025-03-26)",
                      v ? v : "(given twice)");
                return 1;
        }
        if (strcmp(http_req_method(r), "POST") == 0) {
                v = http_req_header(r, "Content-Type", &n);
                if (!v || !media_is(v, "application/json")) {
                        failf(r, 415, MCP_ERR_SERVER,
                              "Unsupported Media Type: a message is sent as Content-Type: application/json");
                        return 1;
                }
                if (http_req_header(r, "Accept", NULL) && !accepts(r, "application/json") &&
                    !accepts(r, "text/event-stream") && !accepts(r, "*/*")) {
                        failf(r, 406, MCP_ERR_SERVER,
                              "Not Acceptable: the client must accept application/json and text/event-stream");
                        return 1;
                }
        }
        return 0;
}

/* ---- a request's state ---- */

typedef struct job {
        api_mcp *a;
        char node[STORE_ID_MAX]; /* forwarded: the node the session id names */
        entry *en;               /* a reference, or NULL (initialize) */
        mcp_msg m;
        http_sse *sse; /* an event-stream answer's producer */
} job;

static void job_free(void *p) {
        job *j = p;
        if (!j)
                return;
        entry_unref(j->a, j->en);
        mcp_msg_done(&j->m);
        free(j);
}

/* ---- initialize: a session ---- */

static void init_thread(http_req *r) {
        job *j = http_req_ctx(r);
        api_mcp *a = j->a;
        hull_error e = {0};
        ss_session *s = NULL;

        sweep(a);
        pthread_mutex_lock(&a->lock);
        bool full = a->n >= MCP_HTTP_SESSIONS_MAX, stopping = a->stopping;
        pthread_mutex_unlock(&a->lock);
        if (stopping) {
                failf(r, 503, MCP_ERR_SERVER, "Service Unavailable: hull serve is stopping");
                return;
        }
        if (full) {
                failf(r, 503, MCP_ERR_SERVER,
                      "Service Unavailable: %u MCP sessions are open; end one (DELETE /mcp) or retry later",
                      MCP_HTTP_SESSIONS_MAX);
                return;
        }
        ss_open_opts oo = {.principal = http_req_principal(r), .owner = "mcp"};
        int k = ss_open(a->cfg.ss, &oo, &s, &e);
        if (k < 0) {
                failf(r, k == -EUSERS || k == -EAGAIN ? 503 : 500, MCP_ERR_SERVER, "no sandbox session: %s",
                      e.msg[0] ? e.msg : strerror(-k));
                return;
        }
        entry *en = calloc(1, sizeof(*en));
        ss_info info;
        ss_session_info(a->cfg.ss, s, &info);
        if (!en || asprintf(&en->instructions,
                            "hull runs these tools in one sandbox session kept for this MCP session: files under "
                            "/workspace persist between calls, and run_python keeps its variables and imports. In "
                            "run_python, save(id, obj) keeps a value (a pandas DataFrame becomes a table) as a data "
                            "handle and load(id) gives it back; inspect_handle describes a handle and query_handle "
                            "runs SQL over table handles. Paths are confined to /workspace. Every tool call (reads "
                            "included) is recorded in the session's audit log on the host: "
                            "%s/session-%s.jsonl (hull verify checks it).",
                            a->cfg.audit_dir ? a->cfg.audit_dir : "(none)", info.fingerprint) < 0) {
                if (en)
                        en->instructions = NULL;
                free(en);
                ss_close_info ci;
                ss_close(a->cfg.ss, s, &ci);
                ss_unref(a->cfg.ss, s);
                failf(r, 500, MCP_ERR_INTERNAL, "out of memory");
                return;
        }
        if (a->cfg.node_id) /* the id names this node: the other nodes forward its requests here */
                snprintf(en->id, sizeof(en->id), "%s.%s", info.id, a->cfg.node_id);
        else
                snprintf(en->id, sizeof(en->id), "%s", info.id);
        snprintf(en->principal, sizeof(en->principal), "%s", http_req_principal(r));
        en->session = s;
        en->refs = 1; /* this request's */
        mcp_server_config mc = {.ss = a->cfg.ss,
                                .session = s,
                                .tools = a->tools,
                                .n_tools = a->n_tools,
                                .name = "hull",
                                .version = a->cfg.version,
                                .instructions = en->instructions,
                                .log = a->cfg.log};
        k = mcp_conn_new(&mc, &en->conn, &e);
        if (k < 0) {
                end_entry(a, en);
                failf(r, 500, MCP_ERR_INTERNAL, "%s", e.msg);
                return;
        }
        collect c = {0};
        (void) mcp_conn_request(en->conn, &j->m, collect_send, &c);
        pthread_mutex_lock(&a->lock);
        bool listed = !a->stopping && a->n < MCP_HTTP_SESSIONS_MAX;
        if (listed) {
                a->table[a->n++] = en;
                en->listed = true;
        }
        pthread_mutex_unlock(&a->lock);
        if (!listed) {
                json_decref(c.answer);
                end_entry(a, en);
                failf(r, 503, MCP_ERR_SERVER, "Service Unavailable: no room for the session; retry later");
                return;
        }
        dlog_log(a->cfg.log, DLOG_INFO, "event=mcp_session_open id=%s principal=%s", en->id, en->principal);
        (void) http_answer_header(r, "Mcp-Session-Id", en->id);
        answer_collected(r, &c, j->m.id);
}

/* ---- a call ---- */

static void call_thread(http_req *r) {
        job *j = http_req_ctx(r);
        collect c = {0};
        (void) mcp_conn_request(j->en->conn, &j->m, collect_send, &c);
        answer_collected(r, &c, j->m.id);
}

/* An event-stream answer: each message one "message" event. */
static int sse_send(void *ud, json_t *msg) {
        job *j = ud;
        char *s = json_dumps(msg, JSON_COMPACT);
        json_decref(msg);
        if (!s)
                return -ENOMEM;
        size_t len = strlen(s);
        int r = len > MCP_MESSAGE_MAX ? -E2BIG : http_sse_send(j->sse, "message", s, len);
        if (r == -EAGAIN && http_sse_wait(j->sse, len + 64, MCP_HTTP_SSE_WAIT_MS) == 0)
                r = http_sse_send(j->sse, "message", s, len);
        free(s);
        return r;
}

static void *stream_main(void *ud) {
        job *j = ud;
        api_mcp *a = j->a;
        (void) mcp_conn_request(j->en->conn, &j->m, sse_send, j);
        http_sse_close(j->sse);
        job_free(j);
        pthread_mutex_lock(&a->lock);
        a->workers--;
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->lock);
        return NULL;
}

/* Answer j's call as an event stream on a worker of this API. Returns 0 (j is the worker's) or
 * -1 (nothing was answered; j is still the caller's). */
static int stream_call(http_req *r, job *j) {
        api_mcp *a = j->a;
        pthread_attr_t attr;
        pthread_t t;
        pthread_mutex_lock(&a->lock);
        bool stopping = a->stopping;
        if (!stopping)
                a->workers++;
        pthread_mutex_unlock(&a->lock);
        if (stopping)
                return -1;
        (void) http_answer_header(r, "X-Accel-Buffering", "no");
        if (http_answer_sse(r, MCP_HTTP_SSE_QUEUE, 0, &j->sse) < 0)
                goto fail;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int k = pthread_create(&t, &attr, stream_main, j);
        pthread_attr_destroy(&attr);
        if (k == 0)
                return 0;
        /* the stream is the answer already: it carries the error */
        json_t *m = mcp_error_new(j->m.id, MCP_ERR_INTERNAL, "no thread for the call; retry later", NULL);
        (void) sse_send(j, m);
        http_sse_close(j->sse);
        job_free(j);
        pthread_mutex_lock(&a->lock);
        a->workers--;
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->lock);
        return 0;
fail:
        pthread_mutex_lock(&a->lock);
        a->workers--;
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->lock);
        return -1;
}

/* ---- DELETE ---- */

static void delete_thread(http_req *r) {
        job *j = http_req_ctx(r);
        api_mcp *a = j->a;
        pthread_mutex_lock(&a->lock);
        bool listed = j->en->listed;
        if (listed)
                unlist_locked(a, j->en);
        pthread_mutex_unlock(&a->lock);
        if (!listed) {
                failf(r, 404, MCP_ERR_SESSION, "Session not found: it ended already");
                return;
        }
        dlog_log(a->cfg.log, DLOG_INFO, "event=mcp_session_close id=%s reason=delete", j->en->id);
        end_entry(a, j->en); /* the table's reference; the job's goes with the request */
        (void) http_answer(r, 200, NULL, NULL, 0);
}

/* ---- the route ---- */

/* Hand j to fn on a thread of its own (j then goes with the request). */
static void spawn(http_req *r, job *j, http_handler_fn *fn) {
        http_req_set_ctx(r, j, job_free);
        if (http_req_spawn(r, fn) < 0)
                failf(r, 503, MCP_ERR_SERVER, "Service Unavailable: no thread for the request; retry later");
}

/* The session the request names; answers and returns NULL when there is none. */
static entry *session_of(http_req *r, api_mcp *a) {
        unsigned n = 0;
        const char *id = http_req_header(r, "Mcp-Session-Id", &n);
        if (n == 0) {
                failf(r, 400, MCP_ERR_SERVER,
                      "Bad Request: no Mcp-Session-Id header: send initialize first, then its Mcp-Session-Id on "
                      "every request");
                return NULL;
        }
        entry *en = id ? lookup(a, id, http_req_principal(r)) : NULL;
        if (!en)
                failf(r, 404, MCP_ERR_SESSION,
                      "Session not found: it was ended (DELETE, idle, lifetime, a restart) or never existed; "
                      "initialize again");
        return en;
}

/* ---- a session of another node ---- */

static void forward_thread(http_req *r) {
        job *j = http_req_ctx(r);
        api_mcp *a = j->a;
        store_owner o;
        hull_error e = {0};
        int k = store_node_get(a->cfg.store, j->node, NODE_LEASE_TTL_MS, &o, &e);
        if (k == -ENOENT || k == -EINVAL || (k >= 0 && (!o.alive || !o.advertise[0]))) {
                char age[48] = "it left";
                if (k >= 0 && o.beat_age_ms >= 0)
                        snprintf(age, sizeof(age), "its last heartbeat %lld ms ago", (long long) o.beat_age_ms);
                failf(r, 404, MCP_ERR_SESSION,
                      "Session not found: it was opened on node %s, which stopped (%s) and took it along; "
                      "initialize again",
                      j->node, age);
                return;
        }
        if (k >= 0)
                k = http_forward_stream(r, o.advertise, a->cfg.node_id, j->node, &a->relays, &e);
        if (k < 0) {
                (void) http_answer_header(r, "retry-after", "2");
                failf(r, 503, MCP_ERR_SERVER,
                      "Service Unavailable: the session is on node %s%s%s%s, which could not be reached: %s; try again",
                      j->node, o.advertise[0] ? " (" : "", o.advertise, o.advertise[0] ? ")" : "", e.msg);
        }
}

/* A request for a session another node opened (its id names the node): handed on to that node
 * (true: r is answered or its thread's). A request forwarded already is answered here. */
static bool forwarded(http_req *r, api_mcp *a) {
        char from[64];
        int hop = http_forward_hop(r, from);
        if (hop < 0) {
                failf(r, 400, MCP_ERR_SERVER,
                      "Bad Request: the %s header names the hull node that forwarded the request (one node id, "
                      "once): a client never sends it",
                      HTTP_FORWARD_HOP_HEADER);
                return true;
        }
        const char *id = http_req_header(r, "Mcp-Session-Id", NULL);
        const char *dot = id ? strchr(id, '.') : NULL;
        if (hop > 0 || !dot || strcmp(dot + 1, a->cfg.node_id) == 0)
                return false;
        job *j = calloc(1, sizeof(*j));
        if (!j) {
                failf(r, 500, MCP_ERR_INTERNAL, "out of memory");
                return true;
        }
        j->a = a;
        snprintf(j->node, sizeof(j->node), "%.*s", (int) sizeof(j->node) - 1, dot + 1);
        http_req_note(r, "mcp_forward=%s", j->node);
        spawn(r, j, forward_thread);
        return true;
}

static void handle(http_req *r) {
        api_mcp *a = http_req_data(r);
        hull_error e = {0};

        if (a->cfg.node_id && forwarded(r, a))
                return;
        if (!a->cfg.ss) {
                failf(r, 503, MCP_ERR_SERVER,
                      "Service Unavailable: sessions are off on this hull serve (--max-sessions 0); /mcp needs them");
                return;
        }
        job *j = calloc(1, sizeof(*j));
        if (!j) {
                failf(r, 500, MCP_ERR_INTERNAL, "out of memory");
                return;
        }
        j->a = a;
        if (strcmp(http_req_method(r), "DELETE") == 0) {
                j->en = session_of(r, a);
                if (j->en)
                        spawn(r, j, delete_thread);
                else
                        job_free(j);
                return;
        }

        size_t len;
        const char *body = http_req_body(r, &len);
        int k = mcp_msg_parse(body, len, &j->m, &e);
        http_req_body_release(r);
        if (k < 0) {
                failf(r, 400, k == -EBADMSG ? MCP_ERR_PARSE : MCP_ERR_INVALID_REQUEST, "%s", e.msg);
                job_free(j);
                return;
        }
        bool is_init = j->m.kind == MCP_MSG_REQUEST && strcmp(j->m.method, "initialize") == 0;
        if (is_init) {
                if (http_req_header(r, "Mcp-Session-Id", NULL)) {
                        failf(r, 400, MCP_ERR_INVALID_REQUEST,
                              "Invalid Request: this session is initialized already; initialize opens a new "
                              "session when sent without Mcp-Session-Id");
                        job_free(j);
                } else
                        spawn(r, j, init_thread);
                return;
        }
        j->en = session_of(r, a);
        if (!j->en) {
                job_free(j);
                return;
        }
        http_req_note(r, "mcp_session=%s", j->en->id);
        if (j->m.kind != MCP_MSG_REQUEST) { /* a notification, or an answer to a request never sent */
                mcp_conn_notify(j->en->conn, &j->m);
                (void) http_answer(r, 202, NULL, NULL, 0);
                job_free(j);
                return;
        }
        http_req_note(r, "method=%.64s", j->m.method);
        if (strcmp(j->m.method, "tools/call") != 0) { /* does not block: answered here */
                collect c = {0};
                (void) mcp_conn_request(j->en->conn, &j->m, collect_send, &c);
                answer_collected(r, &c, j->m.id);
                job_free(j);
                return;
        }
        const json_t *token = json_object_get(json_object_get(j->m.params, "_meta"), "progressToken");
        if (token && mcp_id_valid(token) && accepts(r, "text/event-stream") && stream_call(r, j) == 0)
                return; /* j is the worker's */
        spawn(r, j, call_thread);
}

static const http_route routes[] = {
        {
                .methods = HTTP_POST | HTTP_DELETE,
                .pattern = "/mcp",
                .scope = AUTH_SCOPE_CODE_RUN,
                .body_max = MCP_HTTP_BODY_MAX,
                .head = mcp_head,
                .handler = handle,
        },
};

int api_mcp_new(const api_mcp_config *cfg, api_mcp **ret, hull_error *e) {
        api_mcp *a = calloc(1, sizeof(*a));
        if (!a)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        a->cfg = *cfg;
        a->n_tools = tool_catalog_mcp_offer(cfg->javascript, a->tools);
        pthread_mutex_init(&a->lock, NULL);
        pthread_cond_init(&a->cond, NULL);
        http_relays_init(&a->relays);
        *ret = a;
        return 0;
}

int api_mcp_register(api_mcp *a, http_server *s) {
        return http_add_routes(s, &mcp_api, routes, ELEMENTSOF(routes), a);
}

void api_mcp_shutdown(api_mcp *a, uint64_t wait_ms) {
        entry *gone[MCP_HTTP_SESSIONS_MAX];
        size_t n;
        if (!a)
                return;
        pthread_mutex_lock(&a->lock);
        a->stopping = true;
        n = a->n;
        for (size_t i = 0; i < n; i++) {
                gone[i] = a->table[i];
                gone[i]->listed = false;
        }
        a->n = 0;
        pthread_mutex_unlock(&a->lock);
        for (size_t i = 0; i < n; i++) {
                dlog_log(a->cfg.log, DLOG_INFO, "event=mcp_session_close id=%s reason=shutdown", gone[i]->id);
                end_entry(a, gone[i]);
        }
        struct timespec until = timespec_after_ms(CLOCK_REALTIME, wait_ms);
        pthread_mutex_lock(&a->lock);
        while (a->workers > 0 && pthread_cond_timedwait(&a->cond, &a->lock, &until) == 0)
                ;
        pthread_mutex_unlock(&a->lock);
        (void) http_relays_stop(&a->relays, wait_ms);
}

void api_mcp_free(api_mcp *a) {
        if (!a)
                return;
        api_mcp_shutdown(a, MCP_HTTP_SHUTDOWN_WAIT_MS);
        pthread_mutex_lock(&a->lock);
        unsigned workers = a->workers;
        pthread_mutex_unlock(&a->lock);
        if (workers > 0 ||
            !http_relays_stop(&a->relays, 0)) /* a worker still uses a: leave it (the process is ending) */
                return;
        http_relays_free(&a->relays);
        pthread_cond_destroy(&a->cond);
        pthread_mutex_destroy(&a->lock);
        free(a);
}
