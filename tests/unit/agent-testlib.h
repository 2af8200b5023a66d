/* agent-testlib.h: what test-agent and test-agent-control share: a scripted fake model
 * (model_client_wrap; answers in model.h's neutral form, every request recorded), the status
 * bus recorded and judged (ids, times, links), the conversation's shape checked for both APIs,
 * tools of the tests' own, and the world the cases run in: a bus and, as root, a real
 * in-process session (ss_box_local). Each test binary includes it once. Tests only. */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "bus.h"
#include "fs-util.h"
#include "ss.h"
#include "test.h"
#include "tools-sandbox.h"

/* ---- the fake model ---- */

typedef struct step {
        const char *content; /* the answer's content blocks, a JSON array */
        model_stop stop;
        model_fail fail;   /* != NONE: the call fails so */
        bool wait_cancel;  /* block until the call is cancelled */
        const char *delta; /* streamed text handed to on_text first */
} step;

typedef struct fake {
        const step *steps;
        size_t n, next;
        json_t *requests; /* each: {"system", "messages", "tools"} */
} fake;

static inline int fake_call(void *impl, const model_request *r, const model_call_opts *o, model_response *ret,
                            model_failure *ret_fail, hull_error *e) {
        fake *f = impl;
        json_array_append_new(f->requests, json_pack("{s:s, s:O, s:O?}", "system", r->system ? r->system : "",
                                                     "messages", r->messages, "tools", r->tools));
        /* a deep copy: the loop changes its conversation later */
        json_t *last = json_array_get(f->requests, json_array_size(f->requests) - 1);
        json_object_set_new(last, "messages", json_deep_copy(r->messages));
        if (f->next >= f->n)
                return hull_fail(e, -EIO, "fake: the script ran out");
        const step *s = &f->steps[f->next++];
        if (s->wait_cancel) {
                for (int i = 0; i < 3000 && !(o->cancel && atomic_load(o->cancel)); i++)
                        usleep(10000);
                ret_fail->kind = MODEL_FAIL_CANCELED;
                return hull_fail(e, -ECANCELED, "model: cancelled");
        }
        if (s->fail != MODEL_FAIL_NONE) {
                ret_fail->kind = s->fail;
                ret_fail->status = 429;
                return hull_fail(e, -EAGAIN, "model: fake failure (429 rate_limit_error)");
        }
        if (s->delta && o->on_text)
                o->on_text(o->ud, s->delta, strlen(s->delta));
        json_error_t je;
        json_t *content = json_loads(s->content, 0, &je);
        if (!content)
                return hull_fail(e, -EPROTO, "fake: bad step JSON: %s", je.text);
        *ret = (model_response){.message = json_pack("{s:s, s:o}", "role", "assistant", "content", content),
                                .stop = s->stop,
                                .usage = {.known = true, .input_tokens = 100, .output_tokens = 10}};
        return 0;
}

static inline void fake_free(void *impl) {
        fake *f = impl;
        json_decref(f->requests);
        free(f);
}

static const model_ops fake_ops = {.call = fake_call, .free = fake_free};

static inline model_client *fake_new(const step *steps, size_t n, fake **ret) {
        fake *f = calloc(1, sizeof(*f));
        model_client *c = NULL;
        *f = (fake){.steps = steps, .n = n, .requests = json_array()};
        if (model_client_wrap(&fake_ops, f, &c) < 0)
                return NULL;
        *ret = f;
        return c;
}

/* ---- the bus, recorded ---- */

typedef struct recorder {
        pthread_mutex_t lock;
        json_t *events;    /* persisted, in order */
        unsigned deltas;   /* ephemeral text deltas */
        unsigned progress; /* hull.tool_progress */
} recorder;

static inline void record(void *ud, const json_t *ev, bool persisted) {
        recorder *r = ud;
        pthread_mutex_lock(&r->lock);
        if (persisted)
                json_array_append_new(r->events, json_deep_copy(ev));
        else
                r->deltas++;
        const char *t = json_string_value(json_object_get(ev, "type"));
        if (t && strcmp(t, "hull.tool_progress") == 0)
                r->progress++;
        pthread_mutex_unlock(&r->lock);
}

static inline const char *type_of(const json_t *ev) {
        return json_string_value(json_object_get(ev, "type"));
}

static inline const char *str(const json_t *o, const char *k) {
        return json_string_value(json_object_get(o, k));
}

/* The n-th (from 0) event of a type, or NULL. */
static inline json_t *event(recorder *r, const char *type, size_t n) {
        size_t i;
        json_t *ev;
        json_array_foreach(r->events, i, ev) {
                if (strcmp(type_of(ev), type) == 0 && n-- == 0)
                        return ev;
        }
        return NULL;
}

static inline size_t count(recorder *r, const char *type) {
        size_t n = 0;
        while (event(r, type, n))
                n++;
        return n;
}

/* Every event has a unique id and an RFC 3339 time; every agent.tool_result names the
 * agent.tool_use before it; every span end names its start; the last is session.status_idle. */
static inline bool events_sound(recorder *r) {
        size_t i, j;
        json_t *ev, *o;
        bool ok = json_array_size(r->events) > 0;
        json_array_foreach(r->events, i, ev) {
                const char *id = str(ev, "id"), *at = str(ev, "processed_at");
                if (!id || !at || strlen(at) != 24 || at[10] != 'T' || at[23] != 'Z') {
                        printf("# event %zu without an id or a time\n", i);
                        ok = false;
                }
                json_array_foreach(r->events, j, o) {
                        if (j < i && id && str(o, "id") && strcmp(str(o, "id"), id) == 0) {
                                printf("# event id %s twice\n", id);
                                ok = false;
                        }
                }
                const char *link = strcmp(type_of(ev), "agent.tool_result") == 0 ? str(ev, "tool_use_id")
                                   : strcmp(type_of(ev), "span.model_request_end") == 0
                                           ? str(ev, "model_request_start_id")
                                           : NULL;
                const char *want =
                        strcmp(type_of(ev), "agent.tool_result") == 0 ? "agent.tool_use" : "span.model_request_start";
                if (link) {
                        bool found = false;
                        json_array_foreach(r->events, j, o) {
                                if (j < i && strcmp(type_of(o), want) == 0 && strcmp(str(o, "id"), link) == 0)
                                        found = true;
                        }
                        if (!found) {
                                printf("# event %zu (%s) links to %s, which is not an earlier %s\n", i, type_of(ev),
                                       link, want);
                                ok = false;
                        }
                }
        }
        json_t *last = json_array_get(r->events, json_array_size(r->events) - 1);
        if (!last || strcmp(type_of(last), "session.status_idle") != 0) {
                printf("# the last event is %s\n", last ? type_of(last) : "none");
                ok = false;
        }
        return ok;
}

static inline void recorder_reset(recorder *r) {
        pthread_mutex_lock(&r->lock);
        json_array_clear(r->events);
        r->deltas = r->progress = 0;
        pthread_mutex_unlock(&r->lock);
}

/* ---- the conversation's shape ---- */

/* Valid for both APIs: starts with the user, roles alternate, each assistant message's tool calls
 * (unique ids) are answered first thing in the next user message, one result each, and no result
 * answers anything else. */
static inline bool shape_ok(const json_t *msgs) {
        size_t i, j, k;
        const json_t *m, *b;
        for (i = 0; i < json_array_size(msgs); i++) {
                m = json_array_get(msgs, i);
                const char *role = str(m, "role");
                if (!role || strcmp(role, i % 2 == 0 ? "user" : "assistant") != 0) {
                        printf("# message %zu has role %s\n", i, role ? role : "(none)");
                        return false;
                }
                const json_t *content = json_object_get(m, "content");
                size_t calls = 0;
                json_array_foreach(content, j, b) {
                        if (strcmp(str(b, "type"), "tool_use") != 0)
                                continue;
                        calls++;
                        const json_t *next = json_array_get(msgs, i + 1);
                        /* the results come first in the next message; find this one among them */
                        bool found = false;
                        const json_t *rb;
                        json_array_foreach(json_object_get(next, "content"), k, rb) {
                                if (strcmp(str(rb, "type"), "tool_result") != 0)
                                        break;
                                if (strcmp(str(rb, "tool_use_id"), str(b, "id")) == 0)
                                        found = true;
                        }
                        if (!found) {
                                printf("# message %zu: the call %s has no result first in the next\n", i, str(b, "id"));
                                return false;
                        }
                }
                size_t results = 0;
                json_array_foreach(content, j, b) {
                        if (strcmp(str(b, "type"), "tool_result") != 0)
                                continue;
                        results++;
                        if (j + 1 != results) {
                                printf("# message %zu: a result after other content\n", i);
                                return false;
                        }
                }
                if (strcmp(role, "user") == 0 && i > 0) {
                        size_t prev_calls = 0;
                        json_array_foreach(json_object_get(json_array_get(msgs, i - 1), "content"), j, b) {
                                prev_calls += strcmp(str(b, "type"), "tool_use") == 0;
                        }
                        if (results != prev_calls) {
                                printf("# message %zu: %zu results for %zu calls\n", i, results, prev_calls);
                                return false;
                        }
                }
                (void) calls;
        }
        return true;
}

/* ---- tools of the test's own ---- */

static inline int echo_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        unsigned *runs = (unsigned *) c->env;
        if (runs)
                (*runs)++;
        return asprintf(&ret->text, "echo: %s", json_string_value(json_object_get(input, "text"))) < 0 ? -ENOMEM : 0;
}

static unsigned echo_runs;
static const tool_def echo_tool = {
        .name = "echo",
        .description = "Echo text back.",
        .input_schema = "{\"type\": \"object\", \"properties\": {\"text\": {\"type\": \"string\"}}, \"required\": "
                        "[\"text\"], \"additionalProperties\": false}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .run = echo_run,
        .env = &echo_runs,
};

/* A big structured value: the loop keeps it as a handle. */
static inline int big_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        json_t *rows = json_array();
        for (int i = 0; i < 2000; i++)
                json_array_append_new(rows, json_pack("{s:i, s:s}", "n", i, "label", "some row"));
        ret->value = json_pack("{s:o}", "rows", rows);
        return 0;
}

static const tool_def big_tool = {
        .name = "big",
        .description = "A big value.",
        .input_schema = "{\"type\": \"object\"}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .run = big_run,
};

/* A tool that never finishes by itself: it waits for its cancel fd. */
static inline int stuck_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        struct pollfd p = {.fd = c->cancel_fd, .events = POLLIN};
        (void) poll(&p, 1, 30000);
        return hull_fail(e, -ECANCELED, "stuck: stopped");
}

static const tool_def stuck_tool = {
        .name = "stuck",
        .description = "Never ends by itself.",
        .input_schema = "{\"type\": \"object\"}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .timeout_ms = 300,
        .run = stuck_run,
};

/* A slow tool saying how it goes. */
static inline int slow_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        for (int i = 0; i < 25; i++) {
                usleep(100000);
                c->progress(c->progress_ud, "still going");
        }
        ret->text = strdup("slow: done");
        return 0;
}

static const tool_def slow_tool = {
        .name = "slow",
        .description = "Takes 2.5 s.",
        .input_schema = "{\"type\": \"object\"}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .run = slow_run,
};

/* ---- helpers ---- */

typedef struct world {
        ss_manager *ss;
        ss_session *session; /* NULL when not root */
        bus *bus;
        recorder rec;
        bool root;    /* root with /usr/bin/python3: the session's directory below is made */
        char tmp[64]; /* the session's directory, removed by world_close() */
} world;

static inline agent_decision decide_allow(void *ud, const char *id, const char *name, const json_t *input, char **msg) {
        (*(unsigned *) ud)++;
        return AGENT_ALLOW;
}

static inline agent_decision decide_deny(void *ud, const char *id, const char *name, const json_t *input, char **msg) {
        (*(unsigned *) ud)++;
        *msg = strdup("not on my machine");
        return AGENT_DENY;
}

/* The text of the n-th tool_result block of the conversation. */
static inline const char *result_text(const json_t *msgs, size_t n, bool *is_error) {
        size_t i, j;
        const json_t *m, *b;
        json_array_foreach(msgs, i, m) {
                json_array_foreach(json_object_get(m, "content"), j, b) {
                        if (strcmp(str(b, "type"), "tool_result") == 0 && n-- == 0) {
                                if (is_error)
                                        *is_error = json_is_true(json_object_get(b, "is_error"));
                                return str(b, "content");
                        }
                }
        }
        return NULL;
}

static inline bool has(const char *s, const char *needle) {
        bool ok = s && strstr(s, needle);
        if (!ok)
                printf("# \"%s\" not in: %.600s\n", needle, s ? s : "(null)");
        return ok;
}

static inline agent *make(world *w, model_client *m, const tool_def *const *tools, size_t n, agent_config *over) {
        agent_config cfg = over ? *over : (agent_config){0};
        cfg.model = m;
        cfg.bus = w->bus;
        cfg.tools = tools;
        cfg.n_tools = n;
        cfg.ss = w->ss;
        cfg.session = w->session;
        if (!cfg.instructions)
                cfg.instructions = "Answer in one line.";
        agent *a = NULL;
        hull_error e = {0};
        if (agent_new(&cfg, NULL, &a, &e) < 0)
                printf("# agent_new: %s\n", e.msg);
        recorder_reset(&w->rec);
        return a;
}

/* The bus, recorded, and as root a session with python warm. */
static inline void world_open(world *w) {
        hull_error e = {0};
        w->rec.events = json_array();
        pthread_mutex_init(&w->rec.lock, NULL);
        bus_new(NULL, NULL, &w->bus);
        bus_subscribe(w->bus, record, &w->rec);
        w->root = geteuid() == 0 && access("/usr/bin/python3", X_OK) == 0;
        snprintf(w->tmp, sizeof(w->tmp), "/tmp/hull-test-agent.XXXXXX");
        if (w->root && mkdtemp(w->tmp) && chmod(w->tmp, 0711) == 0) {
                char handles[128];
                snprintf(handles, sizeof(handles), "%s/handles", w->tmp);
                mkdir(handles, 0711);
                ss_config cfg = {.box = ss_box_local(false),
                                 .zygote_fd = -1,
                                 .max_sessions = 2,
                                 .max_per_owner = 2,
                                 .lifetime_ms = 600000,
                                 .idle_ms = 600000,
                                 .memory_bytes = 512ULL << 20,
                                 .pids = 256,
                                 .tmp_bytes = 64ULL << 20,
                                 .handles_dir = handles,
                                 .provider = "hull",
                                 .isolation = "container",
                                 .no_reaper = true};
                ss_open_opts o = {.principal = "agent"};
                if (ss_new(&cfg, &w->ss, &e) < 0 || ss_open(w->ss, &o, &w->session, &e) < 0)
                        printf("# no session: %s\n", e.msg);
                /* warm python while the first model request would be in flight */
                if (w->session && ss_call_begin(w->ss, w->session, -1, &e) == 0) {
                        CHECK_EQ_INT(ss_warm(w->ss, w->session, SBX_LANG_PYTHON, &e), 0);
                        ss_call_end(w->ss, w->session);
                }
        } else
                printf("skip - the cases with a session make real sandboxes: they need root and /usr/bin/python3\n");
}

/* Frees what world_open() made and removes its directory. */
static inline void world_close(world *w) {
        if (w->session)
                ss_unref(w->ss, w->session);
        if (w->ss) {
                ss_shutdown(w->ss, 1000);
                ss_free(w->ss);
        }
        bus_free(w->bus);
        json_decref(w->rec.events);
        if (w->root)
                (void) rm_rf_at(AT_FDCWD, w->tmp);
}
