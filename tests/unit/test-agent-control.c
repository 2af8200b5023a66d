/* test-agent-control.c: the agent loop (fake model and world of agent-testlib.h) under control:
 * always_ask approved, denied, deferred and resumed, the deny policy, MCP tool events, max turns
 * and tool calls, an interrupt during a long bash and during a model request, pause_turn, a model
 * failure, a conversation continued, bad configurations, and a big value without a handle store;
 * every event in order and the conversation's shape valid after every turn. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent-testlib.h"
#include "test.h"

/* ---- the cases ---- */

static const step std_steps_end[] = {{.content = "[{\"type\":\"text\",\"text\":\"done\"}]", .stop = MODEL_STOP_END}};

static void test_permissions(world *w) {
        static const step steps[] = {
                {.content = "[{\"type\":\"tool_use\",\"id\":\"p1\",\"name\":\"echo\",\"input\":{\"text\":\"a\"}},"
                            "{\"type\":\"tool_use\",\"id\":\"p2\",\"name\":\"echo\",\"input\":{\"text\":\"b\"}}]",
                 .stop = MODEL_STOP_TOOL_USE},
                {.content = "[{\"type\":\"text\",\"text\":\"done\"}]", .stop = MODEL_STOP_END},
        };
        const tool_def *tools[] = {&echo_tool};
        tool_policy ask[] = {TOOL_ALWAYS_ASK}, deny[] = {TOOL_DENY};
        agent_turn_result res = {0};
        hull_error e = {0};
        unsigned asked = 0;

        /* approved at once (a terminal's y) */
        fake *f = NULL;
        model_client *m = fake_new(steps, 2, &f);
        agent_config cfg = {.policies = ask, .decide = decide_allow, .decide_ud = &asked};
        agent *a = make(w, m, tools, 1, &cfg);
        echo_runs = 0;
        CHECK_EQ_INT(agent_turn(a, "go", NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_END_TURN);
        CHECK_EQ_INT(asked, 2);
        CHECK_EQ_INT(echo_runs, 2);
        CHECK_EQ_STR(str(event(&w->rec, "agent.tool_use", 0), "evaluated_permission"), "ask");
        agent_turn_result_done(&res);
        agent_free(a);
        model_client_free(m);

        /* denied, with the user's words for the model */
        m = fake_new(steps, 2, &f);
        asked = 0;
        cfg = (agent_config){.policies = ask, .decide = decide_deny, .decide_ud = &asked};
        a = make(w, m, tools, 1, &cfg);
        echo_runs = 0;
        CHECK_EQ_INT(agent_turn(a, "go", NULL, &res, &e), 0);
        CHECK_EQ_INT(echo_runs, 0);
        bool err = false;
        CHECK(has(result_text(agent_conversation(a), 0, &err), "the user denied this call of echo: not on my machine"));
        CHECK(err);
        agent_turn_result_done(&res);
        agent_free(a);
        model_client_free(m);

        /* deferred (no decide: the /v1 API's way), decided, resumed, one call at a time */
        m = fake_new(steps, 2, &f);
        cfg = (agent_config){.policies = ask};
        a = make(w, m, tools, 1, &cfg);
        echo_runs = 0;
        CHECK_EQ_INT(agent_turn(a, "go", NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_REQUIRES_ACTION);
        CHECK_EQ_INT(json_array_size(res.pending), 1);
        char first[BUS_ID_MAX];
        snprintf(first, sizeof(first), "%s", json_string_value(json_array_get(res.pending, 0)));
        CHECK_EQ_STR(first, str(event(&w->rec, "agent.tool_use", 0), "id"));
        json_t *idle = event(&w->rec, "session.status_idle", 0);
        CHECK_EQ_STR(str(json_object_get(idle, "stop_reason"), "type"), "requires_action");
        CHECK_EQ_STR(json_string_value(
                             json_array_get(json_object_get(json_object_get(idle, "stop_reason"), "event_ids"), 0)),
                     first);
        agent_turn_result_done(&res);
        CHECK_EQ_INT(agent_turn(a, "again", NULL, &res, &e), -EBUSY);
        CHECK_EQ_INT(agent_resume(a, NULL, &res, &e), -EAGAIN);
        CHECK_EQ_INT(agent_decide(a, "evt_nope", true, NULL, &e), -ENOENT);
        CHECK_EQ_INT(agent_decide(a, first, true, NULL, &e), 0);
        CHECK_EQ_INT(agent_resume(a, NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_REQUIRES_ACTION); /* the second call asks too */
        CHECK_EQ_INT(echo_runs, 1);
        char second[BUS_ID_MAX];
        snprintf(second, sizeof(second), "%s", json_string_value(json_array_get(res.pending, 0)));
        CHECK(strcmp(first, second) != 0);
        agent_turn_result_done(&res);
        CHECK_EQ_INT(agent_decide(a, second, false, "no more", &e), 0);
        CHECK_EQ_INT(agent_resume(a, NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_END_TURN);
        CHECK_EQ_STR(res.text, "done");
        CHECK_EQ_INT(echo_runs, 1);
        CHECK_EQ_INT(res.tool_calls, 2);
        CHECK_EQ_INT(res.model_requests, 2);
        CHECK(has(result_text(agent_conversation(a), 1, NULL), "denied this call of echo: no more"));
        CHECK(shape_ok(agent_conversation(a)));
        CHECK_EQ_INT(count(&w->rec, "session.status_running"), 3);
        /* each result names its announced call */
        CHECK_EQ_STR(str(event(&w->rec, "agent.tool_result", 0), "tool_use_id"), first);
        CHECK_EQ_STR(str(event(&w->rec, "agent.tool_result", 1), "tool_use_id"), second);
        CHECK(events_sound(&w->rec));
        agent_turn_result_done(&res);
        CHECK_EQ_INT(agent_resume(a, NULL, &res, &e), -EINVAL);
        agent_free(a);
        model_client_free(m);

        /* deny: never runs, never asks */
        m = fake_new(steps, 2, &f);
        asked = 0;
        cfg = (agent_config){.policies = deny, .decide = decide_allow, .decide_ud = &asked};
        a = make(w, m, tools, 1, &cfg);
        echo_runs = 0;
        CHECK_EQ_INT(agent_turn(a, "go", NULL, &res, &e), 0);
        CHECK_EQ_INT(echo_runs + asked, 0);
        CHECK(has(result_text(agent_conversation(a), 0, &err), "not allowed here (its permission policy is deny)"));
        CHECK_EQ_STR(str(event(&w->rec, "agent.tool_use", 0), "evaluated_permission"), "deny");
        agent_turn_result_done(&res);
        agent_free(a);
        model_client_free(m);

        /* a client tool (the /v1 API's custom tools): announced, the turn pauses, the client's
         * result goes to the model; never run here */
        tool_def client_echo = echo_tool;
        client_echo.run = NULL;
        client_echo.client = true;
        const tool_def *ctools[] = {&client_echo};
        m = fake_new(steps, 2, &f);
        cfg = (agent_config){0};
        a = make(w, m, ctools, 1, &cfg);
        CHECK_EQ_INT(agent_turn(a, "go", NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_REQUIRES_ACTION);
        json_t *cu = event(&w->rec, "agent.custom_tool_use", 0);
        CHECK(cu != NULL);
        CHECK_EQ_STR(str(cu, "name"), "echo");
        CHECK_EQ_STR(json_string_value(json_array_get(res.pending, 0)), str(cu, "id"));
        snprintf(first, sizeof(first), "%s", str(cu, "id"));
        agent_turn_result_done(&res);
        CHECK_EQ_INT(agent_decide(a, first, true, NULL, &e), -ENOENT); /* not a confirmation */
        CHECK_EQ_INT(agent_supply(a, "evt_nope", "x", false, &e), -ENOENT);
        CHECK_EQ_INT(agent_resume(a, NULL, &res, &e), -EAGAIN);
        CHECK_EQ_INT(agent_supply(a, first, "from the client", false, &e), 0);
        CHECK_EQ_INT(agent_resume(a, NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_REQUIRES_ACTION); /* the second call */
        snprintf(second, sizeof(second), "%s", json_string_value(json_array_get(res.pending, 0)));
        agent_turn_result_done(&res);
        CHECK_EQ_INT(agent_supply(a, second, "it broke", true, &e), 0);
        CHECK_EQ_INT(agent_resume(a, NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_END_TURN);
        CHECK(has(result_text(agent_conversation(a), 0, &err), "from the client"));
        CHECK(!err);
        CHECK(has(result_text(agent_conversation(a), 1, &err), "it broke"));
        CHECK(err);
        CHECK_EQ_INT(count(&w->rec, "agent.tool_result"), 0);
        CHECK(shape_ok(agent_conversation(a)));
        agent_turn_result_done(&res);
        agent_free(a);
        model_client_free(m);
}

/* An MCP server's tool (tool_def.mcp_server): announced as agent.mcp_tool_use with the server's
 * name and its own tool name, confirmed by that event's id, answered as agent.mcp_tool_result. */
static void test_mcp_events(world *w) {
        static const step steps[] = {
                {.content = "[{\"type\":\"tool_use\",\"id\":\"m1\",\"name\":\"srv__echo\",\"input\":{\"text\":\"a\"}}]",
                 .stop = MODEL_STOP_TOOL_USE},
                {.content = "[{\"type\":\"text\",\"text\":\"done\"}]", .stop = MODEL_STOP_END},
        };
        tool_def mcp_echo = echo_tool;
        mcp_echo.name = "srv__echo";
        mcp_echo.mcp_server = "srv";
        mcp_echo.mcp_tool = "echo";
        const tool_def *tools[] = {&mcp_echo};
        tool_policy ask[] = {TOOL_ALWAYS_ASK};
        agent_turn_result res = {0};
        hull_error e = {0};
        fake *f = NULL;
        model_client *m = fake_new(steps, 2, &f);
        agent_config cfg = {.policies = ask};
        agent *a = make(w, m, tools, 1, &cfg);
        echo_runs = 0;
        CHECK_EQ_INT(agent_turn(a, "go", NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_REQUIRES_ACTION);
        json_t *use = event(&w->rec, "agent.mcp_tool_use", 0);
        CHECK(use != NULL);
        CHECK_EQ_INT(count(&w->rec, "agent.tool_use"), 0);
        CHECK_EQ_STR(str(use, "name"), "echo");
        CHECK_EQ_STR(str(use, "mcp_server_name"), "srv");
        CHECK_EQ_STR(str(use, "evaluated_permission"), "ask");
        char id[BUS_ID_MAX];
        snprintf(id, sizeof(id), "%s", str(use, "id"));
        CHECK_EQ_STR(json_string_value(json_array_get(res.pending, 0)), id);
        agent_turn_result_done(&res);
        CHECK_EQ_INT(agent_decide(a, id, true, NULL, &e), 0);
        CHECK_EQ_INT(agent_resume(a, NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_END_TURN);
        CHECK_EQ_INT(echo_runs, 1);
        json_t *result = event(&w->rec, "agent.mcp_tool_result", 0);
        CHECK(result != NULL);
        CHECK_EQ_INT(count(&w->rec, "agent.tool_result"), 0);
        CHECK_EQ_STR(str(result, "mcp_tool_use_id"), id);
        CHECK_EQ_STR(str(json_array_get(json_object_get(result, "content"), 0), "text"), "echo: a");
        CHECK(!json_is_true(json_object_get(result, "is_error")));
        CHECK(shape_ok(agent_conversation(a)));
        agent_turn_result_done(&res);
        agent_free(a);
        model_client_free(m);
}

static void test_bounds(world *w) {
        static const step loop_steps[] = {
                {.content = "[{\"type\":\"tool_use\",\"id\":\"l1\",\"name\":\"echo\",\"input\":{\"text\":\"1\"}},"
                            "{\"type\":\"tool_use\",\"id\":\"l2\",\"name\":\"echo\",\"input\":{\"text\":\"2\"}}]",
                 .stop = MODEL_STOP_TOOL_USE},
                {.content = "[{\"type\":\"tool_use\",\"id\":\"l3\",\"name\":\"echo\",\"input\":{\"text\":\"3\"}},"
                            "{\"type\":\"tool_use\",\"id\":\"l4\",\"name\":\"echo\",\"input\":{\"text\":\"4\"}}]",
                 .stop = MODEL_STOP_TOOL_USE},
                {.content = "[{\"type\":\"tool_use\",\"id\":\"l5\",\"name\":\"echo\",\"input\":{\"text\":\"5\"}}]",
                 .stop = MODEL_STOP_TOOL_USE},
                {.content = "[{\"type\":\"text\",\"text\":\"never\"}]", .stop = MODEL_STOP_END},
        };
        const tool_def *tools[] = {&echo_tool};
        agent_turn_result res = {0};
        hull_error e = {0};
        fake *f = NULL;
        model_client *m = fake_new(loop_steps, 4, &f);
        agent_config cfg = {.max_turns = 2};
        agent *a = make(w, m, tools, 1, &cfg);
        CHECK_EQ_INT(agent_turn(a, "go", NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_MAX_TURNS);
        CHECK_EQ_INT(res.model_requests, 2);
        CHECK(has(e.msg, "limit of 2 model requests"));
        CHECK(shape_ok(agent_conversation(a)));
        CHECK_EQ_STR(str(event(&w->rec, "session.status_idle", 0), "hull_stop"), "max_turns");
        agent_turn_result_done(&res);
        agent_free(a);
        model_client_free(m);

        m = fake_new(loop_steps, 4, &f);
        cfg = (agent_config){.max_tool_calls = 3};
        a = make(w, m, tools, 1, &cfg);
        echo_runs = 0;
        CHECK_EQ_INT(agent_turn(a, "go", NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_MAX_TOOL_CALLS);
        CHECK_EQ_INT(echo_runs, 3);
        CHECK(has(result_text(agent_conversation(a), 3, NULL),
                  "did not run: the turn reached its limit of tool calls"));
        CHECK(shape_ok(agent_conversation(a)));
        CHECK_EQ_STR(str(json_object_get(event(&w->rec, "session.error", 0), "error"), "type"),
                     "tool_use_limit_reached_error");
        agent_turn_result_done(&res);
        /* the next turn starts afresh, after the results */
        CHECK_EQ_INT(agent_turn(a, "and now?", NULL, &res, &e), 0);
        CHECK(shape_ok(agent_conversation(a)));
        agent_turn_result_done(&res);
        agent_free(a);
        model_client_free(m);

        /* the wall clock */
        static const step slow_steps[] = {
                {.content = "[{\"type\":\"tool_use\",\"id\":\"w1\",\"name\":\"slow\",\"input\":{}}]",
                 .stop = MODEL_STOP_TOOL_USE},
                {.content = "[{\"type\":\"text\",\"text\":\"late\"}]", .stop = MODEL_STOP_END},
        };
        const tool_def *slow[] = {&slow_tool};
        m = fake_new(slow_steps, 2, &f);
        cfg = (agent_config){.wall_ms = 1000};
        a = make(w, m, slow, 1, &cfg);
        CHECK_EQ_INT(agent_turn(a, "go", NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_WALL_CLOCK);
        CHECK(shape_ok(agent_conversation(a)));
        agent_turn_result_done(&res);
        agent_free(a);
        model_client_free(m);
}

typedef struct interrupter {
        atomic_bool *flag;
        unsigned ms;
} interrupter;

static void *interrupt_later(void *ud) {
        interrupter *i = ud;
        usleep(i->ms * 1000);
        atomic_store(i->flag, true);
        return NULL;
}

static void test_interrupt(world *w) {
        agent_turn_result res = {0};
        hull_error e = {0};
        atomic_bool flag;
        interrupter it = {.flag = &flag, .ms = 700};
        pthread_t th;
        fake *f = NULL;
        struct timespec t0, t1;

        /* during a model request */
        static const step wait_steps[] = {{.wait_cancel = true}};
        model_client *m = fake_new(wait_steps, 1, &f);
        const tool_def *tools[] = {&echo_tool, &tool_bash};
        agent *a = make(w, m, tools, 2, NULL);
        atomic_init(&flag, false);
        pthread_create(&th, NULL, interrupt_later, &it);
        CHECK_EQ_INT(agent_turn(a, "go", &flag, &res, &e), 0);
        pthread_join(th, NULL);
        CHECK_EQ_INT(res.stop, AGENT_STOP_INTERRUPTED);
        CHECK_EQ_STR(str(event(&w->rec, "session.status_idle", 0), "hull_stop"), "interrupted");
        CHECK(shape_ok(agent_conversation(a)));
        agent_turn_result_done(&res);
        agent_free(a);
        model_client_free(m);

        if (!w->session) {
                printf("skip - interrupt during bash: needs root (a real session)\n");
                return;
        }
        /* during a long bash: the command is stopped, the calls after it do not run */
        static const step bash_steps[] = {
                {.content = "[{\"type\":\"tool_use\",\"id\":\"i1\",\"name\":\"bash\",\"input\":{\"command\":\"echo "
                            "started; sleep 60\"}},{\"type\":\"tool_use\",\"id\":\"i2\",\"name\":\"echo\",\"input\":"
                            "{\"text\":\"later\"}}]",
                 .stop = MODEL_STOP_TOOL_USE},
                {.content = "[{\"type\":\"text\",\"text\":\"never\"}]", .stop = MODEL_STOP_END},
        };
        m = fake_new(bash_steps, 2, &f);
        a = make(w, m, tools, 2, NULL);
        atomic_store(&flag, false);
        echo_runs = 0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        pthread_create(&th, NULL, interrupt_later, &it);
        CHECK_EQ_INT(agent_turn(a, "go", &flag, &res, &e), 0);
        pthread_join(th, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
        CHECK_EQ_INT(res.stop, AGENT_STOP_INTERRUPTED);
        TEST_RESULT(secs < 30, "the interrupted turn ended after %.1f s (the command wanted 60 s)", secs);
        const json_t *conv = agent_conversation(a);
        CHECK(has(result_text(conv, 0, NULL), "started") && has(result_text(conv, 0, NULL), "interrupted"));
        CHECK(has(result_text(conv, 1, NULL), "did not run: the turn was interrupted"));
        CHECK_EQ_INT(echo_runs, 0);
        CHECK(shape_ok(conv));
        CHECK_EQ_INT(json_array_size(f->requests), 1);
        agent_turn_result_done(&res);
        agent_free(a);
        model_client_free(m);
}

static void test_pause_and_failures(world *w) {
        static const step steps[] = {
                {.content = "[{\"type\":\"text\",\"text\":\"part one, \"}]", .stop = MODEL_STOP_PAUSE},
                {.content = "[{\"type\":\"text\",\"text\":\"part two\"}]", .stop = MODEL_STOP_END},
                {.fail = MODEL_FAIL_RATE_LIMITED},
                {.content = "[{\"type\":\"text\",\"text\":\"I cannot help with that.\"}]", .stop = MODEL_STOP_REFUSAL},
        };
        fake *f = NULL;
        model_client *m = fake_new(steps, 4, &f);
        const tool_def *tools[] = {&echo_tool};
        agent *a = make(w, m, tools, 1, NULL);
        agent_turn_result res = {0};
        hull_error e = {0};
        CHECK_EQ_INT(agent_turn(a, "go", NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_END_TURN);
        const json_t *conv = agent_conversation(a);
        CHECK_EQ_INT(json_array_size(conv), 2); /* the paused answer and its continuation are one message */
        CHECK_EQ_INT(json_array_size(json_object_get(json_array_get(conv, 1), "content")), 2);
        /* the second request re-sent the paused turn as it was */
        json_t *sent = json_object_get(json_array_get(f->requests, 1), "messages");
        CHECK_EQ_STR(str(json_array_get(sent, 1), "role"), "assistant");
        agent_turn_result_done(&res);

        recorder_reset(&w->rec);
        CHECK_EQ_INT(agent_turn(a, "again", NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_ERROR);
        CHECK_EQ_INT(res.failure.kind, MODEL_FAIL_RATE_LIMITED);
        CHECK(has(e.msg, "429"));
        json_t *err = json_object_get(event(&w->rec, "session.error", 0), "error");
        CHECK_EQ_STR(str(err, "type"), "model_rate_limited_error");
        CHECK_EQ_STR(str(json_object_get(err, "retry_status"), "type"), "exhausted");
        CHECK_EQ_STR(str(json_object_get(event(&w->rec, "session.status_idle", 0), "stop_reason"), "type"),
                     "retries_exhausted");
        CHECK(json_is_true(json_object_get(event(&w->rec, "span.model_request_end", 0), "is_error")));
        agent_turn_result_done(&res);
        /* the failed turn's message stays; the next one joins it (one user message) */
        CHECK_EQ_INT(agent_turn(a, "please", NULL, &res, &e), 0);
        CHECK_EQ_INT(res.stop, AGENT_STOP_REFUSAL);
        CHECK(shape_ok(agent_conversation(a)));
        agent_turn_result_done(&res);
        agent_free(a);
        model_client_free(m);
}

static void test_new(world *w) {
        fake *f = NULL;
        model_client *m = fake_new(std_steps_end, 1, &f);
        agent_config cfg = {.model = m, .bus = w->bus};
        agent *a = NULL;
        hull_error e = {0};
        static const char *const bad[] = {
                "{}",
                "[{\"role\":\"system\",\"content\":[]}]",
                "[{\"role\":\"user\",\"content\":\"hi\"}]",
                "[{\"role\":\"user\",\"content\":[{\"type\":\"tool_use\",\"id\":\"x\",\"name\":\"n\",\"input\":{}}]}]",
                "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}]},{\"role\":\"assistant\","
                "\"content\":[{\"type\":\"tool_use\",\"id\":\"x\",\"name\":\"n\",\"input\":{}}]},{\"role\":\"user\","
                "\"content\":[{\"type\":\"text\",\"text\":\"b\"}]}]",
                "[{\"role\":\"user\",\"content\":[{\"type\":\"image\"}]}]",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                json_t *c = json_loads(bad[i], 0, NULL);
                if (i == 3 || i == 4) /* the checker of these tests refuses them too */
                        TEST_RESULT(!json_is_array(c) || !shape_ok(c), "the shape check refuses conversation %zu", i);
                a = NULL;
                int r = agent_new(&cfg, c, &a, &e);
                TEST_RESULT(r == -EINVAL && !a, "refused conversation %zu (%s)", i, e.msg);
                json_decref(c);
        }
        /* saved with calls pending: they are answered, and the conversation goes on */
        json_t *c =
                json_loads("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}]},{\"role\":"
                           "\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"x\",\"name\":\"n\",\"input\":"
                           "{}}]}]",
                           0, NULL);
        CHECK_EQ_INT(agent_new(&cfg, c, &a, &e), 0);
        json_decref(c);
        agent_turn_result res = {0};
        CHECK_EQ_INT(agent_turn(a, "go on", NULL, &res, &e), 0);
        CHECK(shape_ok(agent_conversation(a)));
        CHECK(has(result_text(agent_conversation(a), 0, NULL), "not run"));
        agent_turn_result_done(&res);
        agent_free(a);
        /* tools that are not valid */
        tool_def nameless = echo_tool;
        nameless.name = "bad name";
        tool_def schemaless = echo_tool;
        schemaless.input_schema = "{\"type\": \"array\"}";
        const tool_def *twice[] = {&echo_tool, &echo_tool}, *bad_name[] = {&nameless}, *bad_schema[] = {&schemaless};
        cfg.tools = twice;
        cfg.n_tools = 2;
        CHECK_EQ_INT(agent_new(&cfg, NULL, &a, &e), -EINVAL);
        cfg.tools = bad_name;
        cfg.n_tools = 1;
        CHECK_EQ_INT(agent_new(&cfg, NULL, &a, &e), -EINVAL);
        cfg.tools = bad_schema;
        CHECK_EQ_INT(agent_new(&cfg, NULL, &a, &e), -EINVAL);
        CHECK(has(e.msg, "not a JSON Schema object"));
        model_client_free(m);
}

/* Without a session: a big value is cut, with a note, instead of kept. */
static void test_no_store(world *w) {
        static const step steps[] = {
                {.content = "[{\"type\":\"tool_use\",\"id\":\"n1\",\"name\":\"big\",\"input\":{}}]",
                 .stop = MODEL_STOP_TOOL_USE},
                {.content = "[{\"type\":\"text\",\"text\":\"ok\"}]", .stop = MODEL_STOP_END},
        };
        fake *f = NULL;
        model_client *m = fake_new(steps, 2, &f);
        const tool_def *tools[] = {&big_tool};
        agent_config cfg = {.model = m, .bus = w->bus, .tools = tools, .n_tools = 1};
        agent *a = NULL;
        hull_error e = {0};
        CHECK_EQ_INT(agent_new(&cfg, NULL, &a, &e), 0);
        agent_turn_result res = {0};
        CHECK_EQ_INT(agent_turn(a, "go", NULL, &res, &e), 0);
        CHECK(has(result_text(agent_conversation(a), 0, NULL), "no handle store"));
        agent_turn_result_done(&res);
        agent_free(a);
        model_client_free(m);
}

int main(void) {
        world w = {0};
        signal(SIGPIPE, SIG_IGN);
        alarm(600);
        world_open(&w);
        test_permissions(&w);
        test_mcp_events(&w);
        test_bounds(&w);
        test_interrupt(&w);
        test_pause_and_failures(&w);
        test_new(&w);
        test_no_store(&w);
        world_close(&w);
        return test_done();
}
