/* v1-run.c: see v1-run.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "bus.h"
#include "dynbuf.h"
#include "egress.h"
#include "env-layer.h"
#include "home.h"
#include "macro.h"
#include "mcp-client.h"
#include "mcp-tools.h"
#include "model.h"
#include "sbx-net.h"
#include "time-util.h"
#include "tool-web.h"
#include "tools-sandbox.h"
#include "v1-run.h"

/* ---- a session at work ---- */

typedef struct sub {
        struct sub *next;
        http_sse *sse;
        bool deltas;
        bool live;      /* caught up: gets every new event as it is logged */
        int64_t sent;   /* the last sequence number it was sent */
        struct live *l; /* the pump's */
        bool pumped;    /* a pump thread owns it: unlinked, it is only marked dead */
        bool dead;
        size_t need; /* bytes the frame that did not fit needs */
} sub;

struct v1_watch {
        struct v1_watch *next;
        v1_watch_fn *fn;
        void *ud;
        struct live *l; /* a reference */
};

typedef struct live {
        struct live *next;
        v1_engine *g;
        char id[STORE_ID_MAX];
        unsigned refs;        /* the table's, and each user's (under g->lock) */
        pthread_mutex_t lock; /* the log, the subscribers, the state below */
        json_t *obj;          /* the session object, as stored */
        int64_t last_seq;     /* the log's last sequence number */
        sub *subs;
        v1_watch *watches;
        /* the turn */
        bool running; /* a worker exists */
        bool joinable;
        pthread_t worker;
        atomic_bool interrupt;
        json_t *queue;             /* texts of user messages waiting for a turn */
        bool resume_ready;         /* the paused call is decided: the worker resumes it */
        char ask_id[STORE_ID_MAX]; /* the call the turn paused on ("" none) */
        bool ask_client;           /* ... a custom tool's (else a confirmation) */
        json_t *stash;             /* confirmations and results that came before the pause */
        uint64_t turn_started_ms;
        uint64_t used_ms; /* when its last turn ended (which idle agent goes first) */
        bool deleted;
        /* the agent (the worker's while it runs, else under lock) */
        agent *agent;
        bus *bus;
        model_client *model;
        tool_web *web;
        tool_def *defs;
        const tool_def **def_ptrs;
        tool_policy *policies;
        size_t n_defs;
        json_t *schemas; /* the custom tools' input schemas as text (kept for defs) */
        /* the agent's MCP servers: connected when its tools are built, closed with the session */
        mcp_client *mcps[V1_MCP_SERVERS_MAX];
        size_t n_mcps;
        mcp_toolset *mcp_set;
        char mcp_failed[V1_NAME_MAX + 1]; /* the server that could not be reached ("" none) */
        bool needs_box;
        ss_session *box;
        char box_id[PLIM_SESSION_ID_MAX + 1];
        char principal[STORE_ID_MAX + 8];
        /* the agent.message being previewed */
        char preview_id[STORE_ID_MAX];
} live;

struct v1_engine {
        v1_engine_config cfg;
        pthread_mutex_t lock; /* the table */
        live *lives;
        bool stopping;
        atomic_uint pumps; /* pump threads alive (each holds a session) */
};

static const char ping_frame[] = "event: ping\ndata: {\"type\":\"ping\"}\n\n";

void v1_id_new(const char *prefix, char ret[static STORE_ID_MAX]) {
        static const char b32[] = "0123456789abcdefghjkmnpqrstvwxyz";
        uint8_t r[26];
        if (getrandom(r, sizeof(r), 0) != (ssize_t) sizeof(r)) { /* never on Linux >= 3.17 with a seeded pool */
                uint64_t t = now_mono_us() ^ ((uint64_t) (uintptr_t) ret << 17);
                for (size_t i = 0; i < sizeof(r); i++)
                        r[i] = (uint8_t) (t >> (i % 8 * 8)) ^ (uint8_t) i;
        }
        size_t n = (size_t) snprintf(ret, STORE_ID_MAX, "%s", prefix);
        for (size_t i = 0; i < sizeof(r) && n + 1 < STORE_ID_MAX; i++)
                ret[n++] = b32[r[i] & 31];
        ret[n] = '\0';
}

static void now_time(char ret[static STORE_TIME_MAX]) {
        store_now_rfc3339(ret);
}

static int store_fail(v1_err *err, const hull_error *e) {
        return v1_fail(err, 500, "", "the event log could not be written: %s (nothing was stored; try again)",
                       e->msg[0] ? e->msg : "unknown error");
}

/* ---- subscribers ---- */

static int frame(dynbuf *b, int64_t seq, const char *type, const json_t *ev) {
        _cleanup_free_ char *data = json_dumps(ev, JSON_COMPACT);
        if (!data)
                return -ENOMEM;
        dynbuf_reset(b);
        if (seq > 0 && dynbuf_addf(b, "id: %" PRId64 "\n", seq) < 0)
                return -ENOMEM;
        return dynbuf_addf(b, "event: %s\ndata: %s\n\n", type, data);
}

static void sub_free(sub *s, bool cut) {
        if (s->pumped) { /* the pump ends it */
                s->dead = true;
                return;
        }
        if (cut)
                http_sse_close(s->sse);
        free(s);
}

static void subs_unlink(live *l, sub *s) {
        for (sub **p = &l->subs; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        return;
                }
}

/* Unlink and end the subscribers for which drop is true (under l->lock). */
static void subs_sweep(live *l, bool (*drop)(sub *s, void *ud), void *ud) {
        for (sub **p = &l->subs; *p;) {
                sub *s = *p;
                if (drop(s, ud)) {
                        *p = s->next;
                        sub_free(s, true);
                } else
                        p = &s->next;
        }
}

typedef struct fan {
        live *l;
        const char *buf;
        size_t len;
        int64_t seq;
        bool deltas_only;
} fan;

static void lag(live *l, sub *s);

static bool fan_one(sub *s, void *ud) {
        fan *f = ud;
        if (!s->live || (f->deltas_only && !s->deltas))
                return false;
        int r = http_sse_send_raw(s->sse, f->buf, f->len);
        if (r == -EAGAIN && f->seq > 0) { /* too slow for now: it catches up from the log */
                s->live = false;
                s->need = f->len;
                lag(f->l, s);
                return s->dead; /* no thread for it: it loses its stream */
        }
        if (r == 0 && f->seq > 0)
                s->sent = f->seq;
        return r < 0 && r != -EAGAIN; /* gone (a preview that does not fit is only skipped) */
}

/* Send one event to every live subscriber (under l->lock). seq 0: a preview, not logged. */
static void fanout(live *l, int64_t seq, const json_t *ev, bool deltas_only) {
        for (v1_watch *w = l->watches; w; w = w->next)
                w->fn(w->ud, seq, ev);
        if (!l->subs)
                return;
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, SERVE_SSE_QUEUE_MAX);
        const char *type = json_string_value(json_object_get(ev, "type"));
        if (!type || frame(&b, seq, type, ev) < 0)
                return;
        fan f = {.l = l, .buf = b.buf, .len = b.len, .seq = seq, .deltas_only = deltas_only};
        subs_sweep(l, fan_one, &f);
}

/* ---- the log ---- */

static void add_int(json_t *o, const char *key, json_int_t n) {
        json_object_set_new(o, key, json_integer(json_integer_value(json_object_get(o, key)) + n));
}

/* The session object follows an event (under l->lock). Returns true when it changed. */
static bool follow(live *l, const json_t *ev, const char *now) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        json_t *o = l->obj;
        if (!type || !o)
                return false;
        if (strcmp(type, "session.status_running") == 0) {
                l->turn_started_ms = now_mono_ms();
                json_object_set_new(o, "status", json_string("running"));
        } else if (strcmp(type, "session.status_idle") == 0) {
                json_object_set_new(o, "status", json_string("idle"));
                json_t *stats = json_object_get(o, "stats");
                if (json_is_object(stats) && l->turn_started_ms) {
                        double active = json_number_value(json_object_get(stats, "active_seconds"));
                        active += (double) (now_mono_ms() - l->turn_started_ms) / 1000.0;
                        json_object_set_new(stats, "active_seconds", json_real(active));
                }
                l->turn_started_ms = 0;
        } else if (strcmp(type, "session.usage") == 0) {
                const json_t *u = json_object_get(ev, "usage");
                json_t *su = json_object_get(o, "usage");
                if (!json_is_object(su)) {
                        su = json_object();
                        json_object_set_new(o, "usage", su);
                }
                add_int(su, "input_tokens", json_integer_value(json_object_get(u, "input_tokens")));
                add_int(su, "output_tokens", json_integer_value(json_object_get(u, "output_tokens")));
                add_int(su, "cache_read_input_tokens",
                        json_integer_value(json_object_get(u, "cache_read_input_tokens")));
                json_t *cc = json_object_get(su, "cache_creation");
                if (!json_is_object(cc)) {
                        cc = json_object();
                        json_object_set_new(su, "cache_creation", cc);
                }
                add_int(cc, "ephemeral_5m_input_tokens",
                        json_integer_value(json_object_get(u, "cache_creation_input_tokens")));
        } else
                return false;
        json_object_set_new(o, "updated_at", json_string(now));
        return true;
}

/* Log events (each gets an id unless it has one, and its processed_at), then tell the
 * subscribers (under l->lock). Returns 0, or -1 with *e (nothing logged). */
static int log_append_locked(live *l, json_t *const *evs, size_t n, hull_error *e) {
        char now[STORE_TIME_MAX];
        now_time(now);
        for (size_t i = 0; i < n; i++) {
                if (!json_is_string(json_object_get(evs[i], "id"))) {
                        char id[STORE_ID_MAX];
                        v1_id_new("sevt_", id);
                        json_object_set_new(evs[i], "id", json_string(id));
                }
                if (!json_object_get(evs[i], "processed_at")) /* null: queued behind the turn that runs */
                        json_object_set_new(evs[i], "processed_at", json_string(now));
        }
        int64_t first = 0;
        int r = store_events_append(l->g->cfg.store, l->id, evs, n, &first, e);
        if (r < 0)
                return r;
        l->last_seq = first + (int64_t) n - 1;
        /* the session object first: whoever sees session.status_idle and asks finds it idle */
        bool changed = false;
        for (size_t i = 0; i < n; i++)
                changed |= follow(l, evs[i], now);
        if (changed) {
                hull_error ue = {0};
                if (store_update(l->g->cfg.store, STORE_SESSION, l->obj, &ue) < 0)
                        dlog_log(l->g->cfg.log, DLOG_WARN, "event=v1-session-update-failed session=%s error=\"%s\"",
                                 l->id, ue.msg);
        }
        for (size_t i = 0; i < n; i++)
                fanout(l, first + (int64_t) i, evs[i], false);
        return 0;
}

/* Log events the server makes (steals the references; under l->lock). */
static void log_server_locked(live *l, json_t *const *evs, size_t n) {
        hull_error e = {0};
        bool ok = true;
        for (size_t i = 0; i < n; i++)
                ok &= evs[i] != NULL;
        if (!ok || log_append_locked(l, evs, n, &e) < 0)
                dlog_log(l->g->cfg.log, DLOG_ERROR, "event=v1-log-failed session=%s error=\"%s\"", l->id,
                         ok ? e.msg : "out of memory");
        for (size_t i = 0; i < n; i++)
                json_decref(evs[i]);
}

/* A turn that could not run: session.error (naming the MCP server when server is not NULL), then
 * idle. */
static void log_failure_server_locked(live *l, const char *type, const char *msg, bool running, const char *server) {
        json_t *evs[3];
        size_t n = 0;
        if (!running)
                evs[n++] = json_pack("{s:s}", "type", "session.status_running");
        evs[n++] = json_pack("{s:s, s:{s:s, s:s, s:{s:s}}}", "type", "session.error", "error", "type", type, "message",
                             msg, "retry_status", "type", "terminal");
        if (evs[n - 1] && server)
                json_object_set_new(json_object_get(evs[n - 1], "error"), "mcp_server_name", json_string(server));
        evs[n++] = json_pack("{s:s, s:{s:s}, s:n}", "type", "session.status_idle", "stop_reason", "type", "end_turn",
                             "stop_details");
        log_server_locked(l, evs, n);
}

static void log_failure_locked(live *l, const char *type, const char *msg, bool running) {
        log_failure_server_locked(l, type, msg, running, NULL);
}

/* ---- the table ---- */

/* The tools, built by tools_build, and the MCP connections with them. */
static void tools_drop(live *l) {
        mcp_toolset_free(TAKE_PTR(l->mcp_set));
        for (size_t i = 0; i < l->n_mcps; i++)
                mcp_client_free(TAKE_PTR(l->mcps[i]));
        l->n_mcps = 0;
        free(TAKE_PTR(l->defs));
        free(TAKE_PTR(l->def_ptrs));
        free(TAKE_PTR(l->policies));
        json_decref(TAKE_PTR(l->schemas));
        l->n_defs = 0;
        l->needs_box = false;
}

static void live_free(live *l) {
        while (l->subs) {
                sub *s = l->subs;
                l->subs = s->next;
                sub_free(s, true);
        }
        if (l->agent)
                agent_free(l->agent);
        if (l->bus)
                bus_free(l->bus);
        if (l->model)
                model_client_free(l->model);
        if (l->box && l->g->cfg.ss) {
                ss_close_info ci;
                ss_close(l->g->cfg.ss, l->box, &ci);
                ss_unref(l->g->cfg.ss, l->box);
        }
        if (l->web)
                tool_web_free(l->web);
        tools_drop(l);
        json_decref(l->obj);
        json_decref(l->queue);
        json_decref(l->stash);
        pthread_mutex_destroy(&l->lock);
        free(l);
}

static void live_unref(live *l) {
        if (!l)
                return;
        v1_engine *g = l->g;
        pthread_mutex_lock(&g->lock);
        bool last = --l->refs == 0;
        pthread_mutex_unlock(&g->lock);
        if (last) {
                if (l->joinable)
                        pthread_join(l->worker, NULL);
                live_free(l);
        }
}
static void live_unrefp(live **l) {
        live_unref(*l);
}

/* The live state of a session (a reference), made from the store when there is none. -ENOENT
 * (404) when the store has no such session. */
static int live_get(v1_engine *g, const char *id, live **ret, v1_err *err) {
        pthread_mutex_lock(&g->lock);
        for (live *l = g->lives; l; l = l->next)
                if (strcmp(l->id, id) == 0) {
                        l->refs++;
                        pthread_mutex_unlock(&g->lock);
                        *ret = l;
                        return 0;
                }
        pthread_mutex_unlock(&g->lock);

        hull_error e = {0};
        json_t *obj = NULL;
        int r = store_get(g->cfg.store, STORE_SESSION, id, 0, &obj, &e);
        if (r == -ENOENT)
                return v1_fail(err, 404, "session_not_found", "no session %.64s (GET /v1/sessions lists them)", id);
        if (r < 0)
                return v1_fail(err, 500, "", "the session could not be read: %s", e.msg);
        int64_t last = 0;
        if (store_events_last_seq(g->cfg.store, id, &last, &e) < 0) {
                json_decref(obj);
                return v1_fail(err, 500, "", "the session's log could not be read: %s", e.msg);
        }
        live *l = calloc(1, sizeof(*l));
        if (!l) {
                json_decref(obj);
                return v1_fail(err, 500, "", "out of memory");
        }
        pthread_mutex_init(&l->lock, NULL);
        l->g = g;
        snprintf(l->id, sizeof(l->id), "%s", id);
        snprintf(l->principal, sizeof(l->principal), "v1:%s", id);
        l->obj = obj;
        l->last_seq = last;
        l->queue = json_array();
        l->stash = json_array();
        l->refs = 2; /* the table's and the caller's */

        pthread_mutex_lock(&g->lock);
        for (live *o = g->lives; o; o = o->next) /* another thread made it meanwhile */
                if (strcmp(o->id, id) == 0) {
                        o->refs++;
                        pthread_mutex_unlock(&g->lock);
                        l->refs = 1;
                        live_unref(l);
                        *ret = o;
                        return 0;
                }
        l->next = g->lives;
        g->lives = l;
        pthread_mutex_unlock(&g->lock);
        *ret = l;
        return 0;
}

/* ---- the agent ---- */

/* The bus names events: the agent.message being previewed keeps the id its preview showed. */
static void make_id(void *ud, const json_t *event, char ret[BUS_ID_MAX]) {
        live *l = ud;
        const char *type = json_string_value(json_object_get(event, "type"));
        char id[STORE_ID_MAX];
        pthread_mutex_lock(&l->lock);
        if (type && strcmp(type, "agent.message") == 0 && l->preview_id[0]) {
                snprintf(id, sizeof(id), "%s", l->preview_id);
                l->preview_id[0] = '\0';
        } else
                v1_id_new("sevt_", id);
        pthread_mutex_unlock(&l->lock);
        snprintf(ret, BUS_ID_MAX, "%.*s", BUS_ID_MAX - 1, id); /* "sevt_" and 26: it fits */
}

static void on_bus(void *ud, const json_t *event, bool persisted) {
        live *l = ud;
        const char *type = json_string_value(json_object_get(event, "type"));
        if (!type)
                return;
        pthread_mutex_lock(&l->lock);
        if (persisted) {
                json_t *copy = json_deep_copy(event);
                if (strcmp(type, "agent.custom_tool_use") == 0 ||
                    ((strcmp(type, "agent.tool_use") == 0 || strcmp(type, "agent.mcp_tool_use") == 0) &&
                     strcmp(json_string_value(json_object_get(event, "evaluated_permission")) ?: "", "ask") == 0)) {
                        snprintf(l->ask_id, sizeof(l->ask_id), "%s", json_string_value(json_object_get(event, "id")));
                        l->ask_client = type[6] == 'c';
                }
                /* the SDK's readers of tool calls look at content[0] too (cma-api.md §9) */
                if (copy && (strcmp(type, "agent.tool_use") == 0 || strcmp(type, "agent.custom_tool_use") == 0))
                        json_object_set_new(copy, "content",
                                            json_pack("[{s:s, s:O, s:O, s:O}]", "type", "tool_use", "id",
                                                      json_object_get(event, "id"), "name",
                                                      json_object_get(event, "name"), "input",
                                                      json_object_get(event, "input")));
                json_t *evs[1] = {copy};
                log_server_locked(l, evs, 1);
        } else if (strcmp(type, "hull.text_delta") == 0) {
                const char *text = json_string_value(json_object_get(event, "text"));
                if (text) {
                        if (!l->preview_id[0]) {
                                v1_id_new("sevt_", l->preview_id);
                                json_auto_t *start = json_pack("{s:s, s:{s:s, s:s}}", "type", "event_start", "event",
                                                               "type", "agent.message", "id", l->preview_id);
                                if (start)
                                        fanout(l, 0, start, true);
                        }
                        json_auto_t *d = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s}}}", "type", "event_delta",
                                                   "event_id", l->preview_id, "delta", "type", "content_delta",
                                                   "content", "type", "text", "text", text);
                        if (d)
                                fanout(l, 0, d, true);
                }
        }
        pthread_mutex_unlock(&l->lock);
}

static const char *const readonly_tools[] = {"read",           "glob",         "grep",       "web_search",
                                             "inspect_handle", "query_handle", "read_handle"};

static tool_policy policy_of(const json_t *cfg, const char *name) {
        const char *p = json_string_value(json_object_get(json_object_get(cfg, "permission_policy"), "type"));
        if (p && strcmp(p, "always_ask") == 0)
                return TOOL_ALWAYS_ASK;
        if (p && strcmp(p, "auto") == 0) { /* hull's judgement: what only reads runs, the rest asks */
                for (size_t i = 0; i < ELEMENTSOF(readonly_tools); i++)
                        if (strcmp(name, readonly_tools[i]) == 0)
                                return TOOL_ALWAYS_ALLOW;
                return TOOL_ALWAYS_ASK;
        }
        return TOOL_ALWAYS_ALLOW;
}

/* One tool of a toolset, enabled in cfg. Returns 0, or -1 with *e. */
static int add_builtin(live *l, const char *name, const json_t *cfg, hull_error *e) {
        const settings *st = l->g->cfg.settings;
        const tool_def *d = NULL;
        if (strcmp(name, "web_fetch") == 0 || strcmp(name, "web_search") == 0) {
                if (!l->web) {
                        int r = tool_web_new((const char *const *) st->allow_hosts, st->n_allow_hosts,
                                             (const char *const *) st->allow_cidrs, st->n_allow_cidrs,
                                             st->web_max_bytes, st->search_api_key, st->search_base_url, &l->web, e);
                        if (r < 0)
                                return r;
                }
                tool_def w[2];
                size_t n = tool_web_defs(l->web, w);
                for (size_t i = 0; i < n; i++)
                        if (strcmp(w[i].name, name) == 0) {
                                l->defs[l->n_defs] = w[i];
                                d = &l->defs[l->n_defs];
                        }
                if (!d) {
                        dlog_log(l->g->cfg.log, DLOG_WARN,
                                 "event=v1-tool-unavailable session=%s tool=%s msg=\"no search key configured\"", l->id,
                                 name);
                        return 0;
                }
        } else {
                d = tools_sandbox_find(name);
                if (!d)
                        return 0; /* v1-shape admits only known names */
                l->defs[l->n_defs] = *d;
        }
        l->policies[l->n_defs] = policy_of(cfg, name);
        l->needs_box |= l->defs[l->n_defs].needs_session;
        l->n_defs++;
        return 0;
}

/* The toolset config of an MCP server's tool: its entry in the mcp_toolset's configs, else the
 * toolset's default_config; NULL when the agent has no mcp_toolset for the server. */
static const json_t *mcp_config(const json_t *tools, const char *server, const char *tool) {
        size_t i;
        json_t *ts;
        json_array_foreach(tools, i, ts) {
                if (strcmp(json_string_value(json_object_get(ts, "type")) ?: "", "mcp_toolset") != 0 ||
                    strcmp(json_string_value(json_object_get(ts, "mcp_server_name")) ?: "", server) != 0)
                        continue;
                size_t j;
                json_t *c;
                json_array_foreach(json_object_get(ts, "configs"), j,
                                   c) if (strcmp(json_string_value(json_object_get(c, "name")) ?: "", tool) ==
                                          0) return c;
                return json_object_get(ts, "default_config");
        }
        return NULL;
}

/* An agent's MCP server URL through the egress guard, as web_fetch's URLs are (an agent's author
 * names it, not the operator): no loopback, private, link-local or other internal address unless
 * the operator's allowlist (config.json's web.allow_hosts / web.allow_cidrs) admits it, never a
 * cloud metadata endpoint. *ret: the URL to use and the addresses checked (pinned by mcp_build). */
static int mcp_egress(const settings *st, const char *name, const char *url, egress_target *ret, hull_error *e) {
        const char *allow[EGRESS_ALLOW_MAX];
        size_t n = 0;
        for (size_t i = 0; st && i < st->n_allow_hosts && n < EGRESS_ALLOW_MAX; i++)
                allow[n++] = st->allow_hosts[i];
        for (size_t i = 0; st && i < st->n_allow_cidrs && n < EGRESS_ALLOW_MAX; i++)
                allow[n++] = st->allow_cidrs[i];
        _cleanup_egress_policy_ egress_policy *p = NULL;
        hull_error why = {0};
        int r = egress_policy_new(allow, n, NULL, NULL, &p, &why);
        if (r < 0)
                return hull_fail(e, r, "mcp: %s: cannot check the URL: %s", name, why.msg);
        r = egress_check_url(p, url, now_mono_ms() + MCP_INIT_TIMEOUT_MS, ret, &why);
        if (r < 0)
                return hull_fail(e, r, "mcp: %s: %.200s refused: %s%s", name, url, why.msg,
                                 r == -EACCES && !strstr(why.msg, "metadata")
                                         ? " (hull serve's operator may admit it with web.allow_cidrs or "
                                           "web.allow_hosts in $HULL_HOME/config.json)"
                                         : "");
        return 0;
}

/* Connect to the agent's MCP servers (Streamable HTTP) and add their enabled tools to l->defs.
 * Returns 0, or -1 with *e, *ret_type and l->mcp_failed (the server that failed). */
static int mcp_build(live *l, const json_t *agent_obj, size_t cap, const char **ret_type, hull_error *e) {
        const json_t *servers = json_object_get(agent_obj, "mcp_servers");
        const json_t *tools = json_object_get(agent_obj, "tools");
        size_t i;
        json_t *srv;
        json_array_foreach(servers, i, srv) {
                const char *name = json_string_value(json_object_get(srv, "name"));
                const char *url = json_string_value(json_object_get(srv, "url"));
                if (!name || !url || l->n_mcps >= V1_MCP_SERVERS_MAX)
                        continue;
                mcp_http_config hc = {.name = name, .url = url, .cancel = &l->interrupt};
                if (!mcp_server_name_valid(name)) {
                        *ret_type = "mcp_connection_failed_error";
                        snprintf(l->mcp_failed, sizeof(l->mcp_failed), "%s", name);
                        return hull_fail(e, -EINVAL,
                                         "mcp: the server name '%.64s' cannot prefix tool names (hull takes letters, "
                                         "digits, '_' and '-', at most %u bytes): rename it in the agent",
                                         name, MCP_SERVER_NAME_MAX);
                }
                egress_target t = {0};
                char pin[EGRESS_PIN_MAX];
                const char *pins[2] = {pin, NULL};
                int r = mcp_egress(l->g->cfg.settings, name, url, &t, e);
                if (r >= 0 && !t.literal && egress_target_pin(&t, pin) < 0)
                        r = hull_fail(e, -ENAMETOOLONG, "mcp: %s: the URL's host name is too long", name);
                if (r >= 0) {
                        hc.url = t.url;
                        hc.resolve = t.literal ? NULL : pins;
                        r = mcp_client_connect(&hc, &l->mcps[l->n_mcps], e);
                }
                egress_target_done(&t);
                if (r < 0) {
                        *ret_type = "mcp_connection_failed_error";
                        snprintf(l->mcp_failed, sizeof(l->mcp_failed), "%s", name);
                        return -1;
                }
                l->n_mcps++;
        }
        if (l->n_mcps == 0)
                return 0;
        if (mcp_toolset_new(l->mcps, l->n_mcps, &l->interrupt, &l->mcp_set, e) < 0) {
                *ret_type = "mcp_connection_failed_error";
                /* the server whose connection broke; else (an error answer) the message names it */
                size_t k = 0;
                while (k + 1 < l->n_mcps && mcp_client_alive(l->mcps[k], NULL))
                        k++;
                snprintf(l->mcp_failed, sizeof(l->mcp_failed), "%s", mcp_client_name(l->mcps[k]));
                return -1;
        }
        for (size_t k = 0; k < mcp_toolset_count(l->mcp_set) && l->n_defs < cap - 1; k++) {
                const tool_def *d = mcp_toolset_def(l->mcp_set, k);
                const json_t *cfg = mcp_config(tools, d->mcp_server, d->mcp_tool);
                if (!cfg || !json_is_true(json_object_get(cfg, "enabled")))
                        continue;
                l->defs[l->n_defs] = *d;
                /* what the agent's config says; "auto" asks (hull cannot tell what an MCP tool does) */
                const char *p = json_string_value(json_object_get(json_object_get(cfg, "permission_policy"), "type"));
                l->policies[l->n_defs++] = p && strcmp(p, "always_allow") == 0 ? TOOL_ALWAYS_ALLOW : TOOL_ALWAYS_ASK;
                l->needs_box = true; /* a big result becomes a handle, kept in the session's sandbox */
        }
        return 0;
}

static int tools_build(live *l, const json_t *agent_obj, const char **ret_type, hull_error *e) {
        const json_t *tools = json_object_get(agent_obj, "tools");
        size_t cap = V1_TOOLS_MAX + 8;
        l->defs = calloc(cap, sizeof(*l->defs));
        l->def_ptrs = calloc(cap, sizeof(*l->def_ptrs));
        l->policies = calloc(cap, sizeof(*l->policies));
        l->schemas = json_array();
        if (!l->defs || !l->def_ptrs || !l->policies || !l->schemas)
                return hull_err(e, -ENOMEM, "out of memory");
        size_t i;
        json_t *ts;
        json_array_foreach(tools, i, ts) {
                const char *type = json_string_value(json_object_get(ts, "type"));
                if (!type)
                        continue;
                if (strcmp(type, "agent_toolset_20260401") == 0 || strcmp(type, "hull_toolset_20261201") == 0) {
                        size_t j;
                        json_t *c;
                        json_array_foreach(json_object_get(ts, "configs"), j, c) {
                                if (l->n_defs >= cap - 1)
                                        break;
                                const char *name = json_string_value(json_object_get(c, "name"));
                                if (name && json_is_true(json_object_get(c, "enabled")) &&
                                    add_builtin(l, name, c, e) < 0)
                                        return -1;
                        }
                } else if (strcmp(type, "custom") == 0 && l->n_defs < cap - 1) {
                        char *schema = json_dumps(json_object_get(ts, "input_schema"), JSON_COMPACT);
                        if (!schema || json_array_append_new(l->schemas, json_string(schema)) < 0) {
                                free(schema);
                                return hull_err(e, -ENOMEM, "out of memory");
                        }
                        free(schema);
                        const json_t *kept = json_array_get(l->schemas, json_array_size(l->schemas) - 1);
                        l->defs[l->n_defs] = (tool_def){
                                .name = json_string_value(json_object_get(ts, "name")),
                                .description = json_string_value(json_object_get(ts, "description")) ?: "",
                                .input_schema = json_string_value(kept),
                                .default_policy = TOOL_ALWAYS_ALLOW,
                                .client = true,
                        };
                        l->policies[l->n_defs++] = TOOL_ALWAYS_ALLOW;
                }
                /* mcp_toolset: below, once its server is connected */
        }
        if (mcp_build(l, agent_obj, cap, ret_type, e) < 0)
                return -1;
        for (size_t k = 0; k < l->n_defs; k++)
                l->def_ptrs[k] = &l->defs[k];
        return 0;
}

/* Is the sandbox still there? (Its idle time or lifetime may have ended it.) */
static bool box_alive(live *l) {
        char detail[PLIM_END_DETAIL_MAX];
        return l->box && ss_end_state(l->g->cfg.ss, l->box, detail) == SS_END_NONE;
}

/* The session's environment_id into eid ("" when it has none). */
static void env_id_of(live *l, char eid[V1_NAME_MAX + 1]) {
        pthread_mutex_lock(&l->lock);
        snprintf(eid, V1_NAME_MAX + 1, "%s", json_string_value(json_object_get(l->obj, "environment_id")) ?: "");
        pthread_mutex_unlock(&l->lock);
}

/* The layer of the session's /v1 environment when its config lists packages: its directory into
 * layer ("" when it has none), built first when missing by `hull env build --spec` (a child
 * process: hull serve's threads do not fork, posix_spawn execs at once), which the flock of
 * env-layer makes the only build of that spec. Returns 0 or a negative errno with *e. */
static int env_layer_of(live *l, char layer[SBX_PATH_MAX], hull_error *e) {
        v1_engine *g = l->g;
        char eid[V1_NAME_MAX + 1], home[SBX_PATH_MAX], digest[ENV_DIGEST_HEX];
        _cleanup_(json_decrefp) json_t *env = NULL, *pk = NULL;
        _cleanup_(env_spec_done) env_spec s = {0};
        int r;
        layer[0] = '\0';
        env_id_of(l, eid);
        if (!eid[0] || !g->cfg.store)
                return 0;
        if ((r = store_get(g->cfg.store, STORE_ENVIRONMENT, eid, 0, &env, e)) < 0)
                return r == -ENOENT ? hull_fail(e, r, "environment %.64s no longer exists", eid) : r;
        json_t *packages = json_object_get(json_object_get(env, "config"), "packages");
        if (!packages || json_is_null(packages))
                return 0;
        pk = json_pack("{s:O}", "packages", packages);
        if (!pk)
                return hull_err(e, -ENOMEM, "out of memory");
        hull_error pe = {0};
        if ((r = env_spec_from_json(pk, &s, &pe)) < 0)
                return hull_fail(e, r, "environment %.64s: %s", eid, pe.msg);
        if (!env_spec_has_packages(&s))
                return 0;
        if ((r = home_resolve(home, e)) < 0 || (r = env_layer_digest(&s, digest, e)) < 0 ||
            (r = env_layer_path(home, digest, layer, e)) < 0)
                return r;
        if (env_layer_exists(home, digest))
                return 0;
        _cleanup_free_ char *text = json_dumps(pk, JSON_COMPACT);
        if (!text)
                return hull_err(e, -ENOMEM, "out of memory");
        char *argv[] = {(char *) "hull",
                        (char *) "env",
                        (char *) "build",
                        (char *) "--home",
                        home,
                        (char *) "--spec",
                        text,
                        NULL};
        extern char **environ;
        pid_t pid;
        int err = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ);
        if (err != 0)
                return hull_err(e, -err, "environment %.64s: cannot start the build of its packages", eid);
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return hull_err(e, negative_errno(), "environment %.64s: waiting for its build", eid);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !env_layer_exists(home, digest)) {
                layer[0] = '\0';
                return hull_fail(e, -EIO,
                                 "environment %.64s: its packages could not be installed (hull serve's log has the "
                                 "build's output; try 'hull env build --spec' with the environment's packages)",
                                 eid);
        }
        return 0;
}

/* The network of the session's sandbox from its /v1 environment's config.networking: limited
 * gives *pol (hosts into hosts, the operator's CIDRs and loopback override) and *ret_log_fd, the
 * proxy's log (netlog_dir/network-<id>.log, appended to; -1 without a netlog_dir); anything else
 * (no environment, unrestricted: not offered, see docs/SECURITY.md) none. Returns 0 or a
 * negative errno with *e. */
static int env_net_of(live *l, sbx_net_mode *ret_mode, sbx_net_policy *pol, char **hosts, int *ret_log_fd,
                      hull_error *e) {
        v1_engine *g = l->g;
        char eid[V1_NAME_MAX + 1];
        _cleanup_(json_decrefp) json_t *env = NULL;
        int r;
        *ret_mode = SBX_NET_NONE;
        *ret_log_fd = -1;
        env_id_of(l, eid);
        if (!eid[0] || !g->cfg.store)
                return 0;
        if ((r = store_get(g->cfg.store, STORE_ENVIRONMENT, eid, 0, &env, e)) < 0)
                return r == -ENOENT ? hull_fail(e, r, "environment %.64s no longer exists", eid) : r;
        const json_t *net = json_object_get(json_object_get(env, "config"), "networking");
        const char *type = json_string_value(json_object_get(net, "type"));
        if (type && g->cfg.allow_unrestricted && strcmp(type, "unrestricted") == 0) {
                *ret_mode = SBX_NET_UNRESTRICTED;
                return 0;
        }
        if (!type || strcmp(type, "limited") != 0)
                return 0;
        size_t i, n = 0;
        json_t *h;
        json_array_foreach(json_object_get(net, "allowed_hosts"), i, h) {
                const char *s = json_string_value(h);
                if (!s || !sbx_net_pattern_valid(s))
                        return hull_fail(e, -EINVAL,
                                         "environment %.64s: networking.allowed_hosts[%zu] '%.64s' is not a host name, "
                                         "'*.suffix' or an address",
                                         eid, i, s ?: "");
                if (n >= SBX_NET_ALLOW_MAX)
                        return hull_fail(e, -E2BIG, "environment %.64s: more than %u allowed_hosts", eid,
                                         SBX_NET_ALLOW_MAX);
                hosts[n++] = (char *) s; /* env is gone on return: copied below */
        }
        hosts[n] = NULL;
        for (size_t k = 0; k < n; k++)
                if (!(hosts[k] = strdup(hosts[k]))) {
                        for (size_t j = 0; j < k; j++)
                                free(hosts[j]);
                        hosts[0] = NULL;
                        return hull_err(e, -ENOMEM, "out of memory");
                }
        *pol = (sbx_net_policy){.allowed_hosts = hosts,
                                .allow_package_managers = json_is_true(json_object_get(net, "allow_package_managers")),
                                .allow_loopback = g->cfg.net_allow_loopback,
                                .allow_cidrs = g->cfg.net_allow_cidrs,
                                .log_fd = -1};
        if (g->cfg.netlog_dir) {
                char path[SBX_PATH_MAX];
                if ((size_t) snprintf(path, sizeof(path), "%s/network-%s.log", g->cfg.netlog_dir, l->id) >=
                    sizeof(path))
                        return hull_err(e, -ENAMETOOLONG, "the network log's path is too long");
                /* read too: the session core follows it for the turn's hull.network events */
                int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd < 0)
                        return hull_err(e, negative_errno(), "cannot open the session's network log %s", path);
                *ret_log_fd = fd;
        }
        *ret_mode = SBX_NET_LIMITED;
        return 0;
}

static void hosts_free(char **hosts) {
        for (size_t i = 0; hosts[i]; i++)
                free(hosts[i]);
}

/* The agent, ready for a turn (the worker's, or under l->lock while no worker runs). Returns 0,
 * or -1 with *e and *ret_type (the session.error's type). */
static int agent_ready(live *l, const char **ret_type, hull_error *e) {
        v1_engine *g = l->g;
        *ret_type = "unknown_error";
        if (l->agent && (!l->needs_box || box_alive(l)))
                return 0;
        if (!g->cfg.settings) {
                *ret_type = "model_request_failed_error";
                return hull_fail(e, -EINVAL, "no model is configured for hull serve: %s",
                                 g->cfg.settings_error ? g->cfg.settings_error : "see hull serve --help");
        }
        pthread_mutex_lock(&l->lock);
        json_t *agent_obj = json_incref(json_object_get(l->obj, "agent"));
        const char *system = json_string_value(json_object_get(agent_obj, "system"));
        pthread_mutex_unlock(&l->lock);
        _cleanup_(json_decrefp) json_t *agent_ref = agent_obj;
        json_auto_t *conv = NULL;
        int r;

        if (l->agent) { /* the sandbox ended: a new one, the conversation goes on */
                conv = json_incref((json_t *) agent_conversation(l->agent));
                agent_free(TAKE_PTR(l->agent));
        } else if ((r = store_conversation_get(g->cfg.store, l->id, &conv, e)) < 0)
                return r;
        if (l->box && !box_alive(l)) {
                pthread_mutex_lock(&l->lock);
                l->box_id[0] = '\0';
                pthread_mutex_unlock(&l->lock);
                ss_unref(g->cfg.ss, TAKE_PTR(l->box));
        }
        if (!l->defs && tools_build(l, agent_obj, ret_type, e) < 0) {
                tools_drop(l); /* the next turn tries again */
                return -1;
        }
        if (!l->model) {
                model_config mc = g->cfg.settings->model;
                const char *mid = json_string_value(json_object_get(json_object_get(agent_obj, "model"), "id"));
                if (!g->cfg.force_model && mid && mid[0])
                        mc.model = mid;
                r = model_client_new(&mc, &l->model, e);
                if (r < 0) {
                        *ret_type = "model_request_failed_error";
                        return r;
                }
        }
        if (!l->bus) {
                r = bus_new(make_id, l, &l->bus);
                if (r < 0 || bus_subscribe(l->bus, on_bus, l) < 0)
                        return hull_err(e, r < 0 ? r : -ENOMEM, "the session's status bus cannot start");
        }
        if (l->needs_box && g->cfg.ss && !l->box) {
                ss_open_opts o = {.principal = l->principal, .owner = ""}; /* no per-owner eviction */
                char layer[SBX_PATH_MAX];
                if ((r = env_layer_of(l, layer, e)) < 0)
                        return r;
                o.layer_dir = layer[0] ? layer : NULL;
                char *hosts[SBX_NET_ALLOW_MAX + 1] = {0};
                sbx_net_policy pol;
                _cleanup_close_ int log_fd = -1;
                if ((r = env_net_of(l, &o.net, &pol, hosts, &log_fd, e)) < 0) {
                        hosts_free(hosts);
                        return r;
                }
                if (o.net == SBX_NET_LIMITED) {
                        pol.log_fd = log_fd; /* the keeper gets its own copy */
                        o.net_policy = &pol;
                }
                /* the sandbox's records name its environment: the /v1 environment's id, the
                 * layer's digest (its directory's name), the network */
                char eid[V1_NAME_MAX + 1], desc[ENV_DESC_MAX];
                env_id_of(l, eid);
                const char *slash = strrchr(layer, '/');
                if (eid[0] &&
                    env_describe(eid, NULL, slash ? slash + 1 : NULL, sbx_net_mode_to_string(o.net), desc) == 0)
                        o.environment = desc;
                r = ss_open(g->cfg.ss, &o, &l->box, e);
                hosts_free(hosts);
                if (r < 0)
                        return r;
                ss_info info;
                ss_session_info(g->cfg.ss, l->box, &info);
                pthread_mutex_lock(&l->lock);
                snprintf(l->box_id, sizeof(l->box_id), "%s", info.id);
                pthread_mutex_unlock(&l->lock);
                /* its audit log is found again by this (GET .../records); not fatal */
                char now[STORE_TIME_MAX];
                hull_error se = {0};
                now_time(now);
                if (store_sandbox_add(g->cfg.store, l->id, info.fingerprint, now, &se) < 0)
                        dlog_log(g->cfg.log, DLOG_WARN, "event=v1-sandbox-not-kept session=%s error=\"%s\"", l->id,
                                 se.msg);
        }
        agent_config ac = {
                .model = l->model,
                .bus = l->bus,
                .instructions = system && system[0] ? system : NULL,
                .tools = l->def_ptrs,
                .policies = l->policies,
                .n_tools = l->n_defs,
                .ss = l->box ? g->cfg.ss : NULL,
                .session = l->box,
                .max_turns = g->cfg.settings->max_turns,
                .max_tool_calls = g->cfg.settings->max_tool_calls,
                .context_tokens = g->cfg.settings->context_tokens,
        };
        return agent_new(&ac, conv, &l->agent, e);
}

/* ---- the worker ---- */

static json_t *stash_take(live *l, const char *id) {
        size_t i;
        json_t *ev;
        json_array_foreach(l->stash, i, ev) {
                const char *k = json_string_value(json_object_get(ev, "tool_use_id"))
                                        ?: json_string_value(json_object_get(ev, "custom_tool_use_id"));
                if (k && strcmp(k, id) == 0) {
                        json_t *t = json_incref(ev);
                        json_array_remove(l->stash, i);
                        return t;
                }
        }
        return NULL;
}

static char *result_text(const json_t *ev) {
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, V1_TEXT_MAX);
        size_t i;
        json_t *blk;
        json_array_foreach(json_object_get(ev, "content"), i, blk) {
                const char *t = json_string_value(json_object_get(blk, "text"));
                if (t && (dynbuf_addf(&b, "%s%s", b.len ? "\n" : "", t) < 0))
                        break;
        }
        return strdup(b.len ? b.buf : "");
}

/* Apply a decision or a result to the paused call (under l->lock, the agent not running).
 * Returns 0 when it matched. */
static int apply_locked(live *l, const json_t *ev) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        hull_error e = {0};
        int r;
        if (!l->agent || !l->ask_id[0])
                return -ENOENT;
        if (strcmp(type, "user.tool_confirmation") == 0) {
                bool allow = strcmp(json_string_value(json_object_get(ev, "result")) ?: "", "allow") == 0;
                r = agent_decide(l->agent, l->ask_id, allow, json_string_value(json_object_get(ev, "deny_message")),
                                 &e);
        } else {
                _cleanup_free_ char *text = result_text(ev);
                r = agent_supply(l->agent, l->ask_id, text, json_is_true(json_object_get(ev, "is_error")), &e);
        }
        if (r < 0)
                return r;
        l->ask_id[0] = '\0';
        l->resume_ready = true;
        return 0;
}

/* End the paused call without running it (an interrupt, a new message instead). */
static void drop_paused_locked(live *l, const char *why) {
        if (!l->agent || !l->ask_id[0])
                return;
        hull_error e = {0};
        if (l->ask_client)
                (void) agent_supply(l->agent, l->ask_id, why, true, &e);
        else
                (void) agent_decide(l->agent, l->ask_id, false, why, &e);
        l->ask_id[0] = '\0';
        l->resume_ready = true;
}

/* The events of a message that waited for the turn before it: processed now. */
static void mark_processed_locked(live *l, const json_t *ids) {
        char now[STORE_TIME_MAX];
        now_time(now);
        size_t i;
        json_t *id;
        json_array_foreach(ids, i, id) {
                hull_error e = {0};
                if (store_events_set_processed(l->g->cfg.store, l->id, json_string_value(id), now, &e) < 0)
                        dlog_log(l->g->cfg.log, DLOG_WARN, "event=v1-processed-at-not-set session=%s error=\"%s\"",
                                 l->id, e.msg);
        }
}

/* Past V1_AGENTS_KEPT_MAX sessions holding an agent in memory, the one idle longest (no turn,
 * no pause) lets its agent and model client go; its conversation is in the store, and its next
 * turn makes them again. Never under a session's lock. */
static void evict(v1_engine *g, live *self) {
        live *victim = NULL;
        unsigned n = 0;
        pthread_mutex_lock(&g->lock);
        for (live *l = g->lives; l; l = l->next) {
                if (!l->agent)
                        continue;
                n++;
                if (l != self && !l->running && !l->ask_id[0] && (!victim || l->used_ms < victim->used_ms))
                        victim = l;
        }
        if (n <= V1_AGENTS_KEPT_MAX || !victim) {
                pthread_mutex_unlock(&g->lock);
                return;
        }
        victim->refs++;
        pthread_mutex_unlock(&g->lock);
        pthread_mutex_lock(&victim->lock);
        if (!victim->running && !victim->ask_id[0] && victim->agent) {
                agent_free(TAKE_PTR(victim->agent));
                model_client_free(TAKE_PTR(victim->model));
        }
        pthread_mutex_unlock(&victim->lock);
        live_unref(victim);
}

/* Forget the messages that waited (each marked processed: nothing will answer it). */
static void drop_queue_locked(live *l) {
        size_t i;
        json_t *entry;
        json_array_foreach(l->queue, i, entry) mark_processed_locked(l, json_object_get(entry, "queued"));
        json_array_clear(l->queue);
}

static void *worker_main(void *arg) {
        live *l = arg;
        v1_engine *g = l->g;
        pthread_mutex_lock(&l->lock);
        for (;;) {
                if (g->stopping || l->deleted)
                        break;
                bool resume = l->resume_ready;
                _cleanup_free_ char *text = NULL;
                if (resume)
                        l->resume_ready = false;
                else if (json_array_size(l->queue) > 0) {
                        json_t *entry = json_array_get(l->queue, 0);
                        text = strdup(json_string_value(json_object_get(entry, "text")));
                        mark_processed_locked(l, json_object_get(entry, "queued"));
                        json_array_remove(l->queue, 0);
                        atomic_store(&l->interrupt, false);
                        if (!text)
                                continue;
                } else
                        break;
                pthread_mutex_unlock(&l->lock);

                hull_error e = {0};
                const char *etype = "unknown_error";
                agent_turn_result res = {0};
                int r = agent_ready(l, &etype, &e);
                if (r >= 0)
                        r = resume ? agent_resume(l->agent, &l->interrupt, &res, &e)
                                   : agent_turn(l->agent, text, &l->interrupt, &res, &e);
                if (r >= 0) {
                        hull_error ce = {0};
                        if (store_conversation_put(g->cfg.store, l->id, agent_conversation(l->agent), &ce) < 0)
                                dlog_log(g->cfg.log, DLOG_WARN,
                                         "event=v1-conversation-not-saved session=%s error=\"%s\"", l->id, ce.msg);
                }
                pthread_mutex_lock(&l->lock);
                if (r < 0 && (r == -ECANCELED || e.err == -ECANCELED) && atomic_load(&l->interrupt)) {
                        /* interrupted while the agent's MCP servers were connecting: no error, the
                         * turn just ends (the next one connects again) */
                        json_t *evs[2] = {json_pack("{s:s}", "type", "session.status_running"),
                                          json_pack("{s:s, s:{s:s}, s:n}", "type", "session.status_idle", "stop_reason",
                                                    "type", "end_turn", "stop_details")};
                        log_server_locked(l, evs, 2);
                        l->mcp_failed[0] = '\0';
                        agent_turn_result_done(&res);
                        continue;
                }
                if (r < 0) {
                        char msg[HULL_ERROR_MSG_MAX + 64];
                        snprintf(msg, sizeof(msg), "the turn could not run: %s", e.msg);
                        log_failure_server_locked(l, etype, msg, false, l->mcp_failed[0] ? l->mcp_failed : NULL);
                        l->mcp_failed[0] = '\0';
                        agent_turn_result_done(&res);
                        continue;
                }
                if (res.stop != AGENT_STOP_REQUIRES_ACTION)
                        l->ask_id[0] = '\0'; /* a call announced, answered without a pause */
                else if (l->ask_id[0]) {
                        json_t *early = stash_take(l, l->ask_id);
                        if (early && apply_locked(l, early) < 0)
                                l->resume_ready = false;
                        json_decref(early);
                }
                agent_turn_result_done(&res);
        }
        l->running = false;
        l->used_ms = now_mono_ms();
        pthread_mutex_unlock(&l->lock);
        evict(g, l);
        return NULL;
}

/* Start the worker when there is work and none runs (under l->lock). */
static void kick_locked(live *l) {
        if (l->running || l->g->stopping || (!l->resume_ready && json_array_size(l->queue) == 0))
                return;
        if (l->joinable) { /* the last one has ended (running is false) */
                pthread_join(l->worker, NULL);
                l->joinable = false;
        }
        l->running = true;
        if (pthread_create(&l->worker, NULL, worker_main, l) != 0) {
                l->running = false;
                drop_queue_locked(l);
                log_failure_locked(l, "unknown_error", "no thread could be started for the turn; try again", false);
                return;
        }
        l->joinable = true;
}

/* ---- the API's calls ---- */

static bool archived(const json_t *obj) {
        return json_is_string(json_object_get(obj, "archived_at"));
}

/* Does the log hold an event of type with this id? */
static bool logged(live *l, const char *id) {
        int64_t seq;
        hull_error e = {0};
        return store_events_seq_of(l->g->cfg.store, l->id, id, &seq, &e) == 0;
}

/* Can ev be taken now (under l->lock)? */
static int admit_locked(live *l, const json_t *ev, v1_err *err) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        bool conf = strcmp(type, "user.tool_confirmation") == 0;
        if (!conf && strcmp(type, "user.custom_tool_result") != 0)
                return 0;
        const char *id = json_string_value(json_object_get(ev, conf ? "tool_use_id" : "custom_tool_use_id"));
        if (id && l->ask_id[0] && strcmp(id, l->ask_id) == 0) {
                if (l->ask_client == conf)
                        return v1_fail(err, 400, "", "%s is %s, not %s", id,
                                       l->ask_client
                                               ? "a custom tool call (send user.custom_tool_result)"
                                               : "a tool call awaiting confirmation (send user.tool_confirmation)",
                                       conf ? "a call awaiting confirmation" : "a custom tool call");
                return 0;
        }
        if (id && l->running && logged(l, id)) /* the turn has not paused on it yet */
                return 0;
        return v1_fail(err, 400, "",
                       "no %s %.64s waits for %s (the session's events show what waits: "
                       "session.status_idle with stop_reason requires_action)",
                       conf ? "tool call" : "custom tool call", id ? id : "(none)",
                       conf ? "a confirmation" : "a result");
}

int v1_engine_send(v1_engine *g, const char *session_id, const json_t *events, json_t **ret_echo, v1_err *err) {
        _cleanup_(live_unrefp) live *l = NULL;
        int r = live_get(g, session_id, &l, err);
        if (r < 0)
                return r;
        size_t n = json_array_size(events);
        json_t **evs = calloc(n ? n : 1, sizeof(*evs));
        json_auto_t *echo = json_array();
        if (!evs || !echo) {
                free(evs);
                return v1_fail(err, 500, "", "out of memory");
        }
        pthread_mutex_lock(&l->lock);
        if (l->deleted)
                r = v1_fail(err, 404, "session_not_found", "no session %.64s", session_id);
        else if (archived(l->obj))
                r = v1_fail(err, 409, "session_archived", "session %.64s is archived: it takes no more events",
                            session_id);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = admit_locked(l, json_array_get(events, i), err);
                if (r >= 0 && !(evs[i] = json_deep_copy(json_array_get(events, i))))
                        r = v1_fail(err, 500, "", "out of memory");
        }
        /* a message behind a running turn (or another message) waits: processed_at null till then */
        bool waits = l->running || json_array_size(l->queue) > 0;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const char *type = json_string_value(json_object_get(evs[i], "type"));
                bool msg = strcmp(type, "user.message") == 0;
                if ((msg || strcmp(type, "system.message") == 0) && waits)
                        json_object_set_new(evs[i], "processed_at", json_null());
                waits |= msg;
        }
        hull_error e = {0};
        if (r >= 0 && log_append_locked(l, evs, n, &e) < 0)
                r = store_fail(err, &e);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                json_t *ev = evs[i];
                const char *type = json_string_value(json_object_get(ev, "type"));
                json_array_append(echo, ev);
                if (strcmp(type, "user.message") == 0 || strcmp(type, "system.message") == 0) {
                        _cleanup_free_ char *text = v1_user_message_text(ev);
                        if (!text)
                                continue;
                        bool queued = json_is_null(json_object_get(ev, "processed_at"));
                        json_t *id = json_object_get(ev, "id");
                        size_t q = json_array_size(l->queue);
                        json_t *last = q ? json_array_get(l->queue, q - 1) : NULL;
                        if (type[0] == 's' && last) { /* it goes with the message before it */
                                const char *prev = json_string_value(json_object_get(last, "text"));
                                _cleanup_free_ char *joined = NULL;
                                if (asprintf(&joined, "%s\n\n[system] %s", prev ? prev : "", text) >= 0)
                                        json_object_set_new(last, "text", json_string(joined));
                                if (queued)
                                        json_array_append(json_object_get(last, "queued"), id);
                                continue;
                        }
                        if (!l->running && type[0] == 'u')
                                drop_paused_locked(l, "the user sent a new message instead");
                        json_t *entry = json_pack("{s:s, s:[]}", "text", text, "queued");
                        if (entry && queued)
                                json_array_append(json_object_get(entry, "queued"), id);
                        if (entry)
                                json_array_append_new(l->queue, entry);
                } else if (strcmp(type, "user.interrupt") == 0) {
                        atomic_store(&l->interrupt, true);
                        drop_queue_locked(l); /* what waited is not answered: the interrupt ends it */
                        if (!l->running && l->ask_id[0])
                                drop_paused_locked(l, "the user interrupted the turn");
                } else if (l->ask_id[0] && !l->running && apply_locked(l, ev) == 0)
                        ;
                else
                        json_array_append(l->stash, ev); /* before the pause: the worker applies it */
        }
        if (r >= 0)
                kick_locked(l);
        pthread_mutex_unlock(&l->lock);
        for (size_t i = 0; i < n; i++)
                json_decref(evs[i]);
        free(evs);
        if (r < 0)
                return r;
        *ret_echo = TAKE_PTR(echo);
        return 0;
}

/* ---- streams ---- */

/* Send events after s->sent until the queue is full or the log's end (under l->lock). Returns 1
 * when caught up, 0 when the queue is full, -1 when the stream is gone. */
static int catch_up_locked(live *l, sub *s) {
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, SERVE_SSE_QUEUE_MAX);
        for (;;) {
                if (s->sent >= l->last_seq)
                        return 1;
                store_events_q q = {.limit = 100, .after_seq = s->sent};
                store_page p = {0};
                _cleanup_free_ int64_t *seqs = NULL;
                hull_error e = {0};
                if (store_events_list(l->g->cfg.store, l->id, &q, &p, &seqs, &e) < 0)
                        return -1;
                size_t i;
                json_t *ev;
                int res = 2;
                json_array_foreach(p.data, i, ev) {
                        const char *type = json_string_value(json_object_get(ev, "type"));
                        if (!type || frame(&b, seqs[i], type, ev) < 0) {
                                res = -1;
                                break;
                        }
                        int r = http_sse_send_raw(s->sse, b.buf, b.len);
                        if (r == -EAGAIN) {
                                s->need = b.len;
                                res = 0;
                                break;
                        }
                        if (r < 0) {
                                res = -1;
                                break;
                        }
                        s->sent = seqs[i];
                }
                bool empty = json_array_size(p.data) == 0;
                store_page_done(&p);
                if (res != 2)
                        return res;
                if (empty)
                        return 1;
        }
}

static bool is_sub(sub *s, void *ud) {
        return s == ud;
}

/* A subscriber behind the log, fed from the store as it reads; one that reads nothing for
 * V1_STREAM_STALL_MS loses its stream (it resumes with Last-Event-ID). */
static void *pump_main(void *arg) {
        sub *s = arg;
        live *l = s->l;
        uint64_t progress = now_mono_ms();
        for (;;) {
                int w = http_sse_wait(s->sse, s->need, 1000);
                pthread_mutex_lock(&l->lock);
                int64_t before = s->sent;
                int r = s->dead || w == -EPIPE || l->deleted || l->g->stopping ? -1 : catch_up_locked(l, s);
                if (r == 0 && (w == 0 || s->sent != before))
                        progress = now_mono_ms();
                else if (r == 0 && now_mono_ms() - progress >= V1_STREAM_STALL_MS)
                        r = -1;
                if (r == 1) {
                        s->live = true;
                        s->pumped = false; /* the list's now */
                } else if (r < 0 && !s->dead)
                        subs_unlink(l, s);
                pthread_mutex_unlock(&l->lock);
                if (r < 0) {
                        http_sse_close(s->sse);
                        free(s);
                }
                if (r != 0)
                        break;
        }
        v1_engine *g = l->g;
        live_unref(l);
        atomic_fetch_sub(&g->pumps, 1);
        return NULL;
}

/* Give s a pump (under l->lock); without a thread it loses its stream. */
static void lag(live *l, sub *s) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_mutex_lock(&l->g->lock);
        l->refs++;
        pthread_mutex_unlock(&l->g->lock);
        s->pumped = true;
        atomic_fetch_add(&l->g->pumps, 1);
        if (pthread_create(&t, &a, pump_main, s) != 0) {
                atomic_fetch_sub(&l->g->pumps, 1);
                s->pumped = false;
                s->dead = true; /* swept below by its caller's sweep or the next */
                pthread_mutex_lock(&l->g->lock);
                l->refs--;
                pthread_mutex_unlock(&l->g->lock);
        }
        pthread_attr_destroy(&a);
}

int v1_engine_subscribe(v1_engine *g, const char *session_id, int64_t after_seq, bool deltas, http_sse *sse,
                        v1_err *err) {
        _cleanup_(live_unrefp) live *l = NULL;
        int r = live_get(g, session_id, &l, err);
        if (r < 0) {
                http_sse_close(sse);
                return r;
        }
        sub *s = calloc(1, sizeof(*s));
        if (!s) {
                http_sse_close(sse);
                return v1_fail(err, 500, "", "out of memory");
        }
        http_sse_set_keepalive(sse, ping_frame);
        *s = (sub){.sse = sse, .deltas = deltas, .l = l};
        pthread_mutex_lock(&l->lock);
        if (g->stopping || l->deleted) {
                pthread_mutex_unlock(&l->lock);
                sub_free(s, true);
                return 0;
        }
        s->sent = after_seq < 0 ? l->last_seq : after_seq;
        s->next = l->subs;
        l->subs = s;
        r = catch_up_locked(l, s);
        if (r == 1)
                s->live = true;
        else if (r < 0)
                subs_sweep(l, is_sub, s);
        else { /* the rest of the history as the client reads: a pump of its own */
                lag(l, s);
                if (s->dead)
                        subs_sweep(l, is_sub, s);
        }
        pthread_mutex_unlock(&l->lock);
        return 0;
}

/* ---- the session's life ---- */

int v1_engine_update(v1_engine *g, const char *session_id, const json_t *body, json_t **ret, v1_err *err) {
        _cleanup_(live_unrefp) live *l = NULL;
        int r = live_get(g, session_id, &l, err);
        if (r < 0)
                return r;
        char now[STORE_TIME_MAX];
        now_time(now);
        json_t *next = NULL, *changed = NULL;
        pthread_mutex_lock(&l->lock);
        r = v1_session_update(l->obj, body, now, &next, &changed, err);
        hull_error e = {0};
        if (r >= 0 && next) {
                if (store_update(g->cfg.store, STORE_SESSION, next, &e) < 0)
                        r = v1_fail(err, 500, "", "the session could not be stored: %s", e.msg);
                else {
                        json_decref(l->obj);
                        l->obj = json_incref(next);
                        json_t *ev = json_deep_copy(changed);
                        if (ev) {
                                json_object_set_new(ev, "type", json_string("session.updated"));
                                json_t *evs[1] = {ev};
                                log_server_locked(l, evs, 1);
                        }
                        /* new tools: the agent is made again for the next turn */
                        if (json_object_get(changed, "agent") && !l->running && !l->ask_id[0] && l->agent) {
                                json_auto_t *conv = json_incref((json_t *) agent_conversation(l->agent));
                                hull_error ce = {0};
                                (void) store_conversation_put(g->cfg.store, l->id, conv, &ce);
                                agent_free(TAKE_PTR(l->agent));
                                tools_drop(l); /* and its MCP connections: the new servers are connected then */
                        }
                }
        }
        json_t *out = json_incref(l->obj);
        pthread_mutex_unlock(&l->lock);
        json_decref(next);
        json_decref(changed);
        if (r < 0) {
                json_decref(out);
                return r;
        }
        *ret = out;
        return 0;
}

int v1_engine_archive(v1_engine *g, const char *session_id, json_t **ret, v1_err *err) {
        _cleanup_(live_unrefp) live *l = NULL;
        int r = live_get(g, session_id, &l, err);
        if (r < 0)
                return r;
        pthread_mutex_lock(&l->lock);
        if (l->running)
                r = v1_fail(err, 409, "session_running",
                            "session %.64s is running a turn: interrupt it (user.interrupt) or wait for it to idle, "
                            "then archive",
                            session_id);
        else if (!archived(l->obj)) {
                char now[STORE_TIME_MAX];
                now_time(now);
                json_auto_t *next = json_deep_copy(l->obj);
                hull_error e = {0};
                if (!next)
                        r = v1_fail(err, 500, "", "out of memory");
                else {
                        json_object_set_new(next, "archived_at", json_string(now));
                        json_object_set_new(next, "updated_at", json_string(now));
                        if (store_update(g->cfg.store, STORE_SESSION, next, &e) < 0)
                                r = v1_fail(err, 500, "", "the session could not be stored: %s", e.msg);
                        else {
                                json_decref(l->obj);
                                l->obj = json_incref(next);
                        }
                }
        }
        json_t *out = r >= 0 ? json_incref(l->obj) : NULL;
        pthread_mutex_unlock(&l->lock);
        if (r < 0)
                return r;
        *ret = out;
        return 0;
}

static bool any_sub(sub *s, void *ud) {
        return true;
}

int v1_engine_delete(v1_engine *g, const char *session_id, v1_err *err) {
        _cleanup_(live_unrefp) live *l = NULL;
        int r = live_get(g, session_id, &l, err);
        if (r < 0)
                return r;
        pthread_mutex_lock(&l->lock);
        if (l->deleted) {
                pthread_mutex_unlock(&l->lock);
                return v1_fail(err, 404, "session_not_found", "no session %.64s", session_id);
        }
        l->deleted = true;
        atomic_store(&l->interrupt, true);
        json_array_clear(l->queue);
        json_auto_t *ev = json_pack("{s:s, s:s}", "type", "session.deleted", "id", session_id);
        if (ev) {
                char now[STORE_TIME_MAX];
                now_time(now);
                json_object_set_new(ev, "processed_at", json_string(now));
                for (sub *s = l->subs; s; s = s->next)
                        s->live = true;
                fanout(l, 0, ev, false);
        }
        subs_sweep(l, any_sub, NULL);
        bool joinable = l->joinable;
        l->joinable = false;
        pthread_mutex_unlock(&l->lock);
        if (joinable) /* the turn ends at its next step (interrupted) */
                pthread_join(l->worker, NULL);
        hull_error e = {0};
        r = store_delete(g->cfg.store, STORE_SESSION, session_id, &e);
        /* out of the table: the next request finds nothing */
        pthread_mutex_lock(&g->lock);
        for (live **p = &g->lives; *p; p = &(*p)->next)
                if (*p == l) {
                        *p = l->next;
                        l->refs--;
                        break;
                }
        pthread_mutex_unlock(&g->lock);
        if (r == -ENOENT)
                return v1_fail(err, 404, "session_not_found", "no session %.64s", session_id);
        if (r < 0)
                return v1_fail(err, 500, "", "the session could not be deleted: %s", e.msg);
        return 0;
}

unsigned v1_engine_running(v1_engine *g) {
        unsigned n = 0;
        pthread_mutex_lock(&g->lock);
        for (live *l = g->lives; l; l = l->next)
                n += l->running;
        pthread_mutex_unlock(&g->lock);
        return n;
}

/* ---- start and stop ---- */

/* Turns a crash cut: end each with a session.error and idle. */
static int recover(v1_engine *g, hull_error *e) {
        static const char *const running[] = {"running"};
        json_auto_t *ids = NULL;
        int r = store_sessions_with_status(g->cfg.store, running, 1, &ids, e);
        if (r < 0)
                return r;
        size_t i;
        json_t *id;
        json_array_foreach(ids, i, id) {
                live *l = NULL;
                v1_err err = {0};
                if (live_get(g, json_string_value(id), &l, &err) < 0)
                        continue;
                pthread_mutex_lock(&l->lock);
                log_failure_locked(
                        l, "unknown_error",
                        "hull serve stopped during this turn (it was restarted); what the turn did after its "
                        "last event is lost: send the message again",
                        true);
                pthread_mutex_unlock(&l->lock);
                dlog_log(g->cfg.log, DLOG_WARN, "event=v1-turn-recovered session=%s", l->id);
                live_unref(l);
        }
        return 0;
}

int v1_engine_new(const v1_engine_config *cfg, v1_engine **ret, hull_error *e) {
        v1_engine *g = calloc(1, sizeof(*g));
        if (!g)
                return hull_err(e, -ENOMEM, "v1: out of memory");
        g->cfg = *cfg;
        pthread_mutex_init(&g->lock, NULL);
        int r = recover(g, e);
        if (r < 0) {
                v1_engine_free(g);
                return r;
        }
        *ret = g;
        return 0;
}

void v1_engine_shutdown(v1_engine *g, uint64_t wait_ms) {
        if (!g)
                return;
        pthread_mutex_lock(&g->lock);
        g->stopping = true;
        for (live *l = g->lives; l; l = l->next) {
                atomic_store(&l->interrupt, true);
                l->refs++;
        }
        live *list = g->lives;
        pthread_mutex_unlock(&g->lock);
        uint64_t deadline = now_mono_ms() + wait_ms;
        for (live *l = list; l; l = l->next) {
                pthread_mutex_lock(&l->lock);
                subs_sweep(l, any_sub, NULL);
                bool running = l->running;
                pthread_mutex_unlock(&l->lock);
                while (running && now_mono_ms() < deadline) {
                        struct timespec ts = {0, 10 * 1000 * 1000};
                        nanosleep(&ts, NULL);
                        pthread_mutex_lock(&l->lock);
                        running = l->running;
                        pthread_mutex_unlock(&l->lock);
                }
        }
        pthread_mutex_lock(&g->lock);
        for (live *l = list; l; l = l->next)
                l->refs--;
        pthread_mutex_unlock(&g->lock);
        while (atomic_load(&g->pumps) > 0 && now_mono_ms() < deadline + 2000) { /* their streams ended */
                struct timespec ts = {0, 10 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
}

void v1_engine_free(v1_engine *g) {
        if (!g)
                return;
        if (atomic_load(&g->pumps) > 0) /* a pump still holds a session: leave it all (the process exits) */
                return;
        live *l = g->lives;
        while (l) {
                live *next = l->next;
                bool running;
                pthread_mutex_lock(&l->lock);
                running = l->running;
                pthread_mutex_unlock(&l->lock);
                if (!running) { /* a worker still in a turn keeps its session (the process exits) */
                        if (l->joinable)
                                pthread_join(l->worker, NULL);
                        l->joinable = false;
                        live_free(l);
                }
                l = next;
        }
        pthread_mutex_destroy(&g->lock);
        free(g);
}

int v1_engine_sandbox(v1_engine *g, const char *session_id, ss_session **ret) {
        char box_id[PLIM_SESSION_ID_MAX + 1] = "", principal[STORE_ID_MAX + 8] = "";
        live *found = NULL;
        pthread_mutex_lock(&g->lock); /* never with a session's lock held: the table's lock goes first alone */
        for (live *l = g->lives; l && !found; l = l->next)
                if (strcmp(l->id, session_id) == 0) {
                        l->refs++;
                        found = l;
                }
        pthread_mutex_unlock(&g->lock);
        if (found) {
                pthread_mutex_lock(&found->lock);
                snprintf(box_id, sizeof(box_id), "%s", found->box_id);
                snprintf(principal, sizeof(principal), "%s", found->principal);
                pthread_mutex_unlock(&found->lock);
                live_unref(found);
        }
        ss_session *box = NULL;
        if (box_id[0] && g->cfg.ss && ss_lookup(g->cfg.ss, box_id, principal, &box) == 0) {
                char detail[PLIM_END_DETAIL_MAX];
                if (ss_end_state(g->cfg.ss, box, detail) != SS_END_NONE)
                        ss_unref(g->cfg.ss, TAKE_PTR(box));
        }
        *ret = box;
        return 0;
}

ss_manager *v1_engine_ss(v1_engine *g) {
        return g->cfg.ss;
}

int v1_engine_watch(v1_engine *g, const char *session_id, v1_watch_fn *fn, void *ud, int64_t *ret_last_seq,
                    json_t **ret_session, v1_watch **ret, v1_err *err) {
        live *l = NULL;
        int r = live_get(g, session_id, &l, err);
        if (r < 0)
                return r;
        v1_watch *w = calloc(1, sizeof(*w));
        if (!w) {
                live_unref(l);
                return v1_fail(err, 500, "", "out of memory");
        }
        *w = (v1_watch){.fn = fn, .ud = ud, .l = l};
        pthread_mutex_lock(&l->lock);
        w->next = l->watches;
        l->watches = w;
        *ret_last_seq = l->last_seq;
        *ret_session = json_deep_copy(l->obj);
        pthread_mutex_unlock(&l->lock);
        *ret = w;
        return 0;
}

void v1_engine_unwatch(v1_watch *w) {
        if (!w)
                return;
        live *l = w->l;
        pthread_mutex_lock(&l->lock);
        for (v1_watch **p = &l->watches; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        break;
                }
        pthread_mutex_unlock(&l->lock);
        live_unref(l);
        free(w);
}

bool v1_engine_stopping(v1_engine *g) {
        pthread_mutex_lock(&g->lock);
        bool stopping = g->stopping;
        pthread_mutex_unlock(&g->lock);
        return stopping;
}
