/* api-agui.c: see api-agui.h. The handler (on the polling thread, like /v1's) checks the input,
 * finds or makes the thread's session, starts watching it, sends the run's client events and
 * answers with a stream; a worker thread of this API then turns the watched events into AG-UI
 * frames until the turn ends (RUN_FINISHED or RUN_ERROR), the client goes, or hull serve stops. */
#include "api-agui.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agui.h"
#include "http-forward.h"
#include "v1-run.h"
#include "macro.h"
#include "time-util.h"
#include "utf8.h"
#include "v1-shape.h"

struct api_agui {
        api_agui_config cfg;
        pthread_mutex_t lock; /* stopping, workers */
        pthread_cond_t cond;
        bool stopping;
        unsigned workers;
        pthread_mutex_t env_lock; /* making the default environment: once, whatever runs at once */
        http_relays relays;       /* runs forwarded to the node that holds their sandbox */
};

/* The environment a new thread gets when it names none, none is configured and none exists. */
#define AGUI_DEFAULT_ENVIRONMENT "default"

typedef struct job {
        api_agui *a;
        pthread_mutex_t lock; /* queue, overflow, skip_previews */
        pthread_cond_t cond;
        json_t *queue; /* copies of the watched events, in order */
        bool overflow; /* a logged event did not fit: the run ends with an error */
        bool skip_previews;
        char session_id[STORE_ID_MAX];
        agui_run run;
        http_sse *sse;
        v1_watch *watch;
} job;

/* ---- answers ---- */

static void answer_error(http_req *r, unsigned status, const char *type, const char *code, const char *fmt, ...)
        _printf_(5, 6);
static void answer_error(http_req *r, unsigned status, const char *type, const char *code, const char *fmt, ...) {
        char msg[V1_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        /* a "%.64s" may cut a character: valid UTF-8 first, or jansson refuses the string */
        _cleanup_free_ char *text = NULL;
        size_t text_len;
        if (utf8_make_valid(msg, strlen(msg), &text, &text_len) < 0) {
                (void) http_answer_text(r, 500, "out of memory\n");
                return;
        }
        json_error_t je;
        json_auto_t *body = json_pack_ex(&je, 0, "{s:s, s:{s:s, s:s}, s:s}", "type", "error", "error", "type", type,
                                         "message", text, "request_id", http_req_id(r));
        if (body && code && code[0])
                json_object_set_new(json_object_get(body, "error"), "details", json_pack("{s:s}", "error_code", code));
        char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
        if (!s) { /* only what happened: out of memory, or what jansson said */
                char why[JSON_ERROR_TEXT_LENGTH + 64];
                snprintf(why, sizeof(why), "%s\n",
                         body || json_error_code(&je) == json_error_out_of_memory ? "out of memory" : je.text);
                (void) http_answer_text(r, 500, why);
                return;
        }
        if (status >= 400 && status < 500 && status != 429)
                (void) http_answer_header(r, "x-should-retry", "false");
        http_req_note(r, "error=%s", code && code[0] ? code : type);
        (void) http_answer(r, status, "application/json", s, strlen(s));
}

static const char *type_of(unsigned status) {
        return status == 400   ? "invalid_request_error"
               : status == 401 ? "authentication_error"
               : status == 403 ? "permission_error"
               : status == 404 ? "not_found_error"
               : status == 409 ? "conflict_error"
               : status == 413 ? "request_too_large"
               : status == 429 ? "rate_limit_error"
               : status == 503 ? "overloaded_error"
                               : "api_error";
}

static void fail_v1(http_req *r, const v1_err *e) {
        unsigned st = e->status ? e->status : 500;
        answer_error(r, st, e->type[0] ? e->type : type_of(st), e->code, "%s", e->msg[0] ? e->msg : "internal error");
}

static void agui_begin(http_req *r) {
        char id[STORE_ID_MAX];
        v1_id_new("req_", id);
        http_req_set_id(r, id);
        (void) http_answer_header(r, "request-id", id);
}

static void agui_refuse(http_req *r, http_refusal why, unsigned status, const char *msg) {
        answer_error(r, status, type_of(status), "", "%s", msg);
}

static const http_api agui_api = {.name = "agui", .begin = agui_begin, .refuse = agui_refuse};

/* ---- the worker ---- */

static void job_free(job *j) {
        if (!j)
                return;
        v1_engine_unwatch(j->watch);
        agui_run_done(&j->run);
        json_decref(j->queue);
        pthread_mutex_destroy(&j->lock);
        pthread_cond_destroy(&j->cond);
        free(j);
}

/* The engine's watcher: a copy of each event, queued (under the session's lock: never blocks). */
static int on_event(void *ud, int64_t seq, const json_t *ev, const char *json_text, size_t len) {
        job *j = ud;
        pthread_mutex_lock(&j->lock);
        const char *type = json_string_value(json_object_get(ev, "type")) ?: "";
        if (seq == 0 && (j->skip_previews || json_array_size(j->queue) >= AGUI_QUEUE_MAX))
                j->skip_previews = true; /* the agent.message brings what they would have */
        else if (json_array_size(j->queue) >= AGUI_QUEUE_MAX)
                j->overflow = true;
        else {
                json_array_append_new(j->queue, json_deep_copy(ev));
                if (strcmp(type, "agent.message") == 0)
                        j->skip_previews = false;
        }
        pthread_cond_signal(&j->cond);
        pthread_mutex_unlock(&j->lock);
        return 0; /* what does not fit is this API's to tell (overflow) */
}

/* Held (job_free unwatches), so never caught up by the engine: nothing to wait for or close. */
static const v1_watch_ops watch_ops = {.deliver = on_event};

/* Send each of evs as a "data:" frame. Returns 0, or -EPIPE once the client is gone. */
static int send_all(job *j, const json_t *evs) {
        size_t i;
        const json_t *ev;
        json_array_foreach(evs, i, ev) {
                _cleanup_free_ char *s = json_dumps(ev, JSON_COMPACT);
                if (!s)
                        continue;
                size_t n = strlen(s);
                int r = http_sse_send(j->sse, NULL, s, n);
                if (r == -EAGAIN && http_sse_wait(j->sse, n + 16, AGUI_SEND_WAIT_MS) == 0)
                        r = http_sse_send(j->sse, NULL, s, n);
                if (r < 0 && r != -E2BIG)
                        return -EPIPE;
        }
        return 0;
}

static void add_snapshot(job *j, json_t *out) {
        json_t *data = NULL, *box = NULL;
        hull_error e = {0};
        if (v1_engine_handles(j->a->cfg.store, j->a->cfg.engine, j->session_id, &data, &box, &e) < 0)
                return;
        json_t *ev = json_pack("{s:s, s:{s:s, s:o, s:o}}", "type", "STATE_SNAPSHOT", "snapshot", "session_id",
                               j->session_id, "handles", data, "sandbox", box);
        if (ev)
                json_array_append_new(out, ev);
}

/* Is hull serve stopping (this API first, before the server ends every stream; or the engine)? */
static bool stopping(api_agui *a) {
        pthread_mutex_lock(&a->lock);
        bool st = a->stopping;
        pthread_mutex_unlock(&a->lock);
        return st || v1_engine_stopping(a->cfg.engine);
}

static void *worker_main(void *ud) {
        job *j = ud;
        api_agui *a = j->a;
        json_auto_t *out = json_array();
        agui_started(&j->run, out);
        add_snapshot(j, out);
        bool gone = send_all(j, out) < 0;
        while (!gone && !j->run.ended) {
                json_array_clear(out);
                pthread_mutex_lock(&j->lock);
                if (json_array_size(j->queue) == 0 && !j->overflow) { /* wake every second to see a stop */
                        struct timespec until;
                        clock_gettime(CLOCK_REALTIME, &until);
                        until.tv_sec += 1;
                        (void) pthread_cond_timedwait(&j->cond, &j->lock, &until);
                }
                json_auto_t *evs = TAKE_PTR(j->queue);
                j->queue = json_array();
                bool overflow = j->overflow;
                pthread_mutex_unlock(&j->lock);
                if (!evs) {
                        agui_fail(&j->run, "out_of_memory", "hull serve ran out of memory", out);
                        (void) send_all(j, out);
                        break;
                }
                size_t i;
                json_t *ev;
                json_array_foreach(evs, i, ev) {
                        unsigned f = agui_translate(&j->run, ev, out);
                        if (f & AGUI_STATE)
                                add_snapshot(j, out);
                        if (f & AGUI_ENDED)
                                break;
                }
                if (!j->run.ended && overflow)
                        agui_fail(&j->run, "stream_overflow",
                                  "the client read the stream too slowly and events were lost; the turn goes on "
                                  "(GET /v1/sessions/ID/events has them all)",
                                  out);
                else if (!j->run.ended && json_array_size(evs) == 0 && stopping(a))
                        agui_fail(&j->run, "shutting_down", "hull serve is shutting down", out);
                gone = send_all(j, out) < 0;
        }
        http_sse_close(j->sse);
        job_free(j);
        pthread_mutex_lock(&a->lock);
        a->workers--;
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->lock);
        return NULL;
}

/* ---- the thread's session ---- */

/* The newest environment that is not archived; -ENOENT when there is none. */
static int newest_environment(store *st, char ret[static STORE_ID_MAX]) {
        store_list_q q = {.limit = 1, .descending = true};
        store_page p = {0};
        hull_error e = {0};
        int r = store_list(st, STORE_ENVIRONMENT, &q, &p, &e);
        const char *id = r >= 0 ? json_string_value(json_object_get(json_array_get(p.data, 0), "id")) : NULL;
        if (id)
                snprintf(ret, STORE_ID_MAX, "%s", id);
        store_page_done(&p);
        return id ? 0 : -ENOENT;
}

/* The newest environment into ret, or, when there is none, one made for the purpose: named
 * "default", /v1's defaults (a cloud config, no packages, /v1's default networking). Made once:
 * under env_lock the newest is looked for again, so runs that start at once share one. Returns 0,
 * or a negative errno with *e saying why. */
static int default_environment(api_agui *a, char ret[static STORE_ID_MAX], hull_error *e) {
        if (newest_environment(a->cfg.store, ret) == 0)
                return 0;
        pthread_mutex_lock(&a->env_lock);
        int r = newest_environment(a->cfg.store, ret);
        if (r == -ENOENT) {
                char id[STORE_ID_MAX], now[STORE_TIME_MAX];
                v1_id_new("env_", id);
                store_now_rfc3339(now);
                json_auto_t *body = json_pack("{s:s, s:s, s:{s:s}}", "name", AGUI_DEFAULT_ENVIRONMENT, "description",
                                              "made by hull serve for AG-UI threads that name no environment", "config",
                                              "type", "cloud");
                json_auto_t *obj = NULL;
                v1_err err = {0};
                if (!body)
                        r = hull_fail(e, -ENOMEM, "out of memory");
                else if ((r = v1_environment_create(body, id, now, &obj, &err)) < 0)
                        r = hull_fail(e, r, "%s", err.msg[0] ? err.msg : "out of memory");
                else if ((r = store_insert(a->cfg.store, STORE_ENVIRONMENT, obj, e)) >= 0) {
                        snprintf(ret, STORE_ID_MAX, "%s", id);
                        dlog_log(a->cfg.log, DLOG_INFO, "event=agui-default-environment environment=%s", id);
                }
        }
        pthread_mutex_unlock(&a->env_lock);
        return r;
}

/* The session of in's thread into sid, made when the thread is new. Returns true once r is
 * answered (refused). */
static bool refuse_thread(api_agui *a, http_req *r, const agui_input *in, char sid[static STORE_ID_MAX]) {
        hull_error e = {0};
        int rr = store_thread_get(a->cfg.store, in->thread_id, sid, &e);
        if (rr == 0)
                return false;
        if (rr != -ENOENT) {
                answer_error(r, 500, "api_error", "", "the thread could not be read: %s", e.msg);
                return true;
        }
        const char *agent_id = in->agent_id ? in->agent_id : a->cfg.agent_id;
        if (!agent_id) {
                answer_error(r, 400, "invalid_request_error", "agui_no_agent",
                             "thread %s is new and no agent is named: send forwardedProps.agent_id (GET /v1/agents "
                             "lists them) or start hull serve with --agui-agent AGENT_ID",
                             in->thread_id);
                return true;
        }
        char env[STORE_ID_MAX];
        if (in->environment_id || a->cfg.environment_id)
                snprintf(env, sizeof(env), "%s", in->environment_id ? in->environment_id : a->cfg.environment_id);
        else if (default_environment(a, env, &e) < 0) {
                answer_error(r, 500, "api_error", "",
                             "thread %s is new, names no environment and there is none; the default one could not "
                             "be made: %s",
                             in->thread_id, e.msg);
                return true;
        }
        char title[V1_NAME_MAX];
        snprintf(title, sizeof(title), "AG-UI thread %s", in->thread_id);
        json_auto_t *body = json_pack("{s:s, s:s, s:s, s:{s:s}}", "agent", agent_id, "environment_id", env, "title",
                                      title, "metadata", "agui_thread_id", in->thread_id);
        v1_session_req req = {0};
        v1_err err = {0};
        if (!body || v1_session_parse(body, &req, &err) < 0) {
                fail_v1(r, &err);
                return true;
        }
        json_auto_t *agent = NULL, *envo = NULL, *obj = NULL;
        rr = store_get(a->cfg.store, STORE_AGENT, agent_id, 0, &agent, &e);
        if (rr < 0 || json_is_string(json_object_get(agent, "archived_at"))) {
                answer_error(r,
                             rr == -ENOENT ? 404
                             : rr < 0      ? 500
                                           : 400,
                             rr == -ENOENT ? "not_found_error" : "invalid_request_error",
                             rr == -ENOENT ? "agent_not_found" : "agent_archived",
                             "agent %.64s %s (GET /v1/agents lists them)", agent_id,
                             rr == -ENOENT ? "does not exist"
                             : rr < 0      ? "could not be read"
                                           : "is archived");
                return true;
        }
        rr = store_get(a->cfg.store, STORE_ENVIRONMENT, env, 0, &envo, &e);
        if (rr < 0 || json_is_string(json_object_get(envo, "archived_at"))) {
                answer_error(r,
                             rr == -ENOENT ? 404
                             : rr < 0      ? 500
                                           : 400,
                             rr == -ENOENT ? "not_found_error" : "invalid_request_error",
                             rr == -ENOENT ? "environment_not_found" : "environment_archived",
                             "environment %.64s %s (GET /v1/environments lists them)", env,
                             rr == -ENOENT ? "does not exist"
                             : rr < 0      ? "could not be read"
                                           : "is archived");
                return true;
        }
        char now[STORE_TIME_MAX];
        v1_id_new("sesn_", sid);
        store_now_rfc3339(now);
        if (v1_session_create(body, &req, agent, sid, now, &obj, &err) < 0) {
                fail_v1(r, &err);
                return true;
        }
        if ((rr = store_insert(a->cfg.store, STORE_SESSION, obj, &e)) < 0) {
                answer_error(r, 500, "api_error", "", "the thread's session could not be stored: %s", e.msg);
                return true;
        }
        rr = store_thread_put(a->cfg.store, in->thread_id, sid, &e);
        if (rr == -EEXIST) { /* another run of the thread made one first: that one it is */
                (void) store_delete(a->cfg.store, STORE_SESSION, sid, &e);
                rr = store_thread_get(a->cfg.store, in->thread_id, sid, &e);
        }
        if (rr < 0) {
                answer_error(r, 500, "api_error", "", "the thread could not be kept: %s", e.msg);
                return true;
        }
        dlog_log(a->cfg.log, DLOG_INFO, "event=agui-thread thread=%s session=%s agent=%s", in->thread_id, sid,
                 agent_id);
        return false;
}

/* The run's frontend tools made the session's own custom tools (the agent version's tools less
 * an earlier run's frontend tools, plus these): an update of the session (session.updated) when
 * they changed. Returns true once r is answered (refused). */
static bool refuse_tools(api_agui *a, http_req *r, const char *sid, const json_t *sess, const json_t *frontend) {
        const json_t *snap = json_object_get(sess, "agent");
        const char *agent_id = json_string_value(json_object_get(snap, "id"));
        json_int_t version = json_integer_value(json_object_get(snap, "version"));
        json_auto_t *agent = NULL, *tools = NULL, *body = NULL, *updated = NULL;
        hull_error e = {0};
        if (!agent_id || store_get(a->cfg.store, STORE_AGENT, agent_id, version, &agent, &e) < 0) {
                answer_error(r, 500, "api_error", "", "the thread's agent could not be read: %s",
                             e.msg[0] ? e.msg : "no agent");
                return true;
        }
        if (agui_tools_merge(json_object_get(snap, "tools"), json_object_get(agent, "tools"), frontend, &tools) < 0) {
                answer_error(r, 500, "api_error", "", "out of memory");
                return true;
        }
        if (!tools)
                return false;
        v1_err err = {0};
        body = json_pack("{s:{s:O}}", "agent", "tools", tools);
        if (!body || v1_engine_update(a->cfg.engine, sid, body, &updated, &err) < 0) {
                if (!body)
                        answer_error(r, 500, "api_error", "", "out of memory");
                else
                        answer_error(r, err.status ? err.status : 500, err.type[0] ? err.type : "api_error", err.code,
                                     "tools: the client's tools could not be given to the session: %s", err.msg);
                return true;
        }
        dlog_log(a->cfg.log, DLOG_INFO, "event=agui-tools session=%s tools=%zu", sid, json_array_size(frontend));
        return false;
}

/* ---- a thread whose sandbox is on another node ---- */

typedef struct fwd {
        api_agui *a;
        store_owner o;
        const char *self;
        char session_id[STORE_ID_MAX];
} fwd;

static void forward_thread(http_req *r) {
        fwd *f = http_req_ctx(r);
        hull_error e = {0};
        if (http_forward_stream(r, f->o.advertise, f->self, f->o.node_id, &f->a->relays, &e) < 0) {
                (void) http_answer_header(r, "retry-after", "2");
                answer_error(r, 503, "overloaded_error", "sandbox_node_unreachable",
                             "the thread's session %s has its sandbox on node %s (%s), which could not be reached: "
                             "%s; try again",
                             f->session_id, f->o.node_id, f->o.advertise, e.msg);
        }
}

/* A run of a session whose sandbox another live node holds: handed on to that node, so that the
 * turn runs in that sandbox (its files, its variables) and its stream comes back from there (true:
 * r is answered or its thread's). A run forwarded already runs here; so does one whose sandbox
 * went with a node that stopped (the turn opens a new sandbox, as a /v1 message would). */
static bool forwarded(http_req *r, api_agui *a, const char *sid) {
        char from[64];
        int hop = http_forward_hop(r, from);
        if (hop < 0) {
                answer_error(r, 400, "invalid_request_error", "bad_forward_header",
                             "the %s header names the hull node that forwarded the request (one node id, once): "
                             "a client never sends it",
                             HTTP_FORWARD_HOP_HEADER);
                return true;
        }
        if (hop > 0)
                return false;
        fwd *f = calloc(1, sizeof(*f));
        v1_err err = {0};
        int rr = f ? v1_engine_sandbox_node(a->cfg.engine, sid, &f->o, &f->self, &err)
                   : v1_fail(&err, 500, "", "out of memory");
        if (rr == 0 || rr == -EHOSTDOWN) {
                free(f);
                return false;
        }
        if (rr < 0) {
                free(f);
                fail_v1(r, &err);
                return true;
        }
        f->a = a;
        snprintf(f->session_id, sizeof(f->session_id), "%s", sid);
        http_req_note(r, "agui_forward=%s", f->o.node_id);
        http_req_set_ctx(r, f, free);
        if (http_req_spawn(r, forward_thread) < 0)
                answer_error(r, 503, "overloaded_error", "", "no thread for the request; retry later");
        return true;
}

/* ---- the route ---- */

static void handle(http_req *r) {
        api_agui *a = http_req_data(r);
        size_t len;
        const char *b = http_req_body(r, &len);
        json_error_t je;
        json_auto_t *body = json_loadb(b, len, JSON_REJECT_DUPLICATES, &je);
        if (!body) {
                answer_error(r, 400, "invalid_request_error", "", "the body is not JSON: %s (line %d, column %d)",
                             je.text, je.line, je.column);
                return;
        }
        _cleanup_(agui_input_done) agui_input in = {0};
        char msg[V1_ERROR_MSG_MAX];
        if (agui_input_parse(body, &in, msg) < 0) {
                answer_error(r, 400, "invalid_request_error", "", "%s", msg);
                return;
        }
        char sid[STORE_ID_MAX];
        if (refuse_thread(a, r, &in, sid) || forwarded(r, a, sid))
                return;
        http_req_body_release(r); /* kept until here: a forwarded run sends it on */
        job *j = calloc(1, sizeof(*j));
        if (!j || !(j->queue = json_array())) {
                free(j);
                answer_error(r, 500, "api_error", "", "out of memory");
                return;
        }
        j->a = a;
        pthread_mutex_init(&j->lock, NULL);
        pthread_cond_init(&j->cond, NULL);
        snprintf(j->session_id, sizeof(j->session_id), "%s", sid);
        agui_run_init(&j->run, in.thread_id, in.run_id);
        int64_t last = 0;
        json_auto_t *sess = NULL, *batch = NULL, *checked = NULL, *echo = NULL;
        v1_err err = {0};
        v1_watch_opts wo = {.after_seq = V1_WATCH_LIVE, .deltas = true};
        if (v1_engine_watch(a->cfg.engine, sid, &watch_ops, j, &wo, &last, &sess, &j->watch, &err) < 0) {
                job_free(j);
                fail_v1(r, &err);
                return;
        }
        const char *agent = json_string_value(json_object_get(json_object_get(sess, "agent"), "id"));
        const char *status = json_string_value(json_object_get(sess, "status"));
        bool resume =
                json_array_size(in.events) > 0 &&
                strcmp(json_string_value(json_object_get(json_array_get(in.events, 0), "type")), "user.message") != 0;
        if (in.agent_id && agent && strcmp(agent, in.agent_id) != 0) {
                job_free(j);
                answer_error(r, 409, "conflict_error", "agui_agent_mismatch",
                             "thread %s runs agent %s, not %s: start a new thread for another agent", in.thread_id,
                             agent, in.agent_id);
                return;
        }
        if (status && strcmp(status, "idle") != 0 && !resume) {
                job_free(j);
                answer_error(r, 409, "conflict_error", "agui_thread_busy",
                             "thread %s's session %s is %s: wait for its run to finish (or interrupt it with "
                             "POST /v1/sessions/%s/events)",
                             in.thread_id, sid, status, sid);
                return;
        }
        if (in.tools && !resume && refuse_tools(a, r, sid, sess, in.tools)) {
                job_free(j);
                return;
        }
        agui_run_frontend(&j->run, in.tools);
        batch = json_pack("{s:O}", "events", in.events);
        if (!batch || v1_events_parse(batch, &checked, &err) < 0 ||
            v1_engine_send(a->cfg.engine, sid, checked, &echo, &err) < 0) {
                job_free(j);
                fail_v1(r, &err);
                return;
        }
        pthread_mutex_lock(&a->lock);
        bool stopping = a->stopping;
        if (!stopping)
                a->workers++;
        pthread_mutex_unlock(&a->lock);
        if (stopping) {
                job_free(j);
                answer_error(r, 503, "overloaded_error", "", "hull serve is shutting down");
                return;
        }
        (void) http_answer_header(r, "cache-control", "no-cache");
        (void) http_answer_header(r, "x-accel-buffering", "no");
        pthread_attr_t attr;
        pthread_t t;
        if (http_answer_sse(r, AGUI_SSE_QUEUE_BYTES, 0, &j->sse) < 0)
                goto fail;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int k = pthread_create(&t, &attr, worker_main, j);
        pthread_attr_destroy(&attr);
        if (k == 0)
                return;
        http_sse_close(j->sse); /* the turn goes on; the client sees the stream end */
fail:
        job_free(j);
        pthread_mutex_lock(&a->lock);
        a->workers--;
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->lock);
}

static const http_route routes[] = {
        {.methods = HTTP_POST, .pattern = "/agui", .scope = "v1", .body_max = V1_BODY_MAX, .handler = handle},
};

int api_agui_new(const api_agui_config *cfg, api_agui **ret) {
        api_agui *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->cfg = *cfg;
        pthread_mutex_init(&a->lock, NULL);
        pthread_mutex_init(&a->env_lock, NULL);
        pthread_cond_init(&a->cond, NULL);
        http_relays_init(&a->relays);
        *ret = a;
        return 0;
}

int api_agui_register(api_agui *a, http_server *s) {
        return http_add_routes(s, &agui_api, routes, ELEMENTSOF(routes), a);
}

void api_agui_shutdown(api_agui *a, uint64_t wait_ms) {
        if (!a)
                return;
        struct timespec until = timespec_after_ms(CLOCK_REALTIME, wait_ms);
        pthread_mutex_lock(&a->lock);
        a->stopping = true;
        while (a->workers > 0 && pthread_cond_timedwait(&a->cond, &a->lock, &until) == 0)
                ;
        pthread_mutex_unlock(&a->lock);
        (void) http_relays_stop(&a->relays, wait_ms);
}

void api_agui_free(api_agui *a) {
        if (!a)
                return;
        pthread_mutex_lock(&a->lock);
        unsigned workers = a->workers;
        pthread_mutex_unlock(&a->lock);
        if (workers > 0 || !http_relays_stop(&a->relays, 0)) /* still in use: leave it (the process is ending) */
                return;
        http_relays_free(&a->relays);
        pthread_mutex_destroy(&a->lock);
        pthread_mutex_destroy(&a->env_lock);
        pthread_cond_destroy(&a->cond);
        free(a);
}
