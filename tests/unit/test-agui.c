/* test-agui.c: AG-UI over /v1 events (agui.c): a RunAgentInput taken (a user message as text or
 * text parts, resume entries as confirmations and custom tool results) and refused (each bad
 * field named), and session events translated: previews streamed as TEXT_MESSAGE_CONTENT with
 * the rest at the agent.message, tool calls as START/ARGS/END then RESULT, handles asking for a
 * snapshot, the end of a turn as RUN_FINISHED (interrupt, cancelled, usage) or RUN_ERROR; frontend
 * tools as /v1 custom tools (merged into a session's tools), context before the user's text, tool
 * messages as custom tool results, and a frontend call ending the run without an interrupt. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agui.h"
#include "macro.h"
#include "test.h"

static json_t *J(const char *s) {
        json_error_t err;
        json_t *j = json_loads(s, JSON_REJECT_DUPLICATES, &err);
        if (!j) {
                fprintf(stderr, "bad test JSON: %s: %s\n", err.text, s);
                abort();
        }
        return j;
}

static const char *type_at(const json_t *out, size_t i) {
        return json_string_value(json_object_get(json_array_get(out, i), "type")) ?: "(none)";
}

static const char *str_at(const json_t *out, size_t i, const char *key) {
        return json_string_value(json_object_get(json_array_get(out, i), key)) ?: "(none)";
}

static void refused(const char *body, const char *needle) {
        json_auto_t *b = J(body);
        agui_input in = {0};
        char msg[V1_ERROR_MSG_MAX] = "";
        CHECK_EQ_INT(agui_input_parse(b, &in, msg), -EINVAL);
        CHECK(in.events == NULL);
        if (!strstr(msg, needle))
                fprintf(stderr, "message '%s' does not name '%s'\n", msg, needle);
        CHECK(strstr(msg, needle) != NULL);
}

static void test_input(void) {
        char msg[V1_ERROR_MSG_MAX];
        json_auto_t *b = J("{\"threadId\":\"t-1\",\"runId\":\"r-1\",\"state\":{},\"tools\":[],\"context\":[],"
                           "\"messages\":[{\"id\":\"a\",\"role\":\"assistant\",\"content\":\"x\"},"
                           "{\"id\":\"u\",\"role\":\"user\",\"content\":\"What is 6*7?\"}],"
                           "\"forwardedProps\":{\"agent_id\":\"agent_1\",\"other\":1},\"extra\":true}");
        agui_input in = {0};
        CHECK_EQ_INT(agui_input_parse(b, &in, msg), 0);
        CHECK_EQ_STR(in.thread_id, "t-1");
        CHECK_EQ_STR(in.run_id, "r-1");
        CHECK_EQ_STR(in.agent_id, "agent_1");
        CHECK(in.environment_id == NULL);
        CHECK_EQ_INT(json_array_size(in.events), 1);
        json_t *ev = json_array_get(in.events, 0);
        CHECK_EQ_STR(json_string_value(json_object_get(ev, "type")), "user.message");
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(ev, "content"), 0), "text")),
                     "What is 6*7?");
        agui_input_done(&in);

        json_auto_t *parts =
                J("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[{\"id\":\"u\",\"role\":\"user\","
                  "\"content\":[{\"type\":\"text\",\"text\":\"one\"},{\"type\":\"text\",\"text\":\"two\"}]}]}");
        CHECK_EQ_INT(agui_input_parse(parts, &in, msg), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(
                             json_array_get(json_object_get(json_array_get(in.events, 0), "content"), 0), "text")),
                     "one\n\ntwo");
        agui_input_done(&in);

        json_auto_t *resume = J("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[],\"resume\":["
                                "{\"interruptId\":\"sevt_a\",\"status\":\"resolved\"},"
                                "{\"interruptId\":\"sevt_b\",\"status\":\"cancelled\"},"
                                "{\"interruptId\":\"sevt_c\",\"status\":\"resolved\",\"payload\":{\"n\":1}}]}");
        CHECK_EQ_INT(agui_input_parse(resume, &in, msg), 0);
        CHECK_EQ_INT(json_array_size(in.events), 3);
        CHECK_EQ_STR(str_at(in.events, 0, "type"), "user.tool_confirmation");
        CHECK_EQ_STR(str_at(in.events, 0, "result"), "allow");
        CHECK_EQ_STR(str_at(in.events, 1, "result"), "deny");
        CHECK_EQ_STR(str_at(in.events, 2, "type"), "user.custom_tool_result");
        CHECK_EQ_STR(str_at(in.events, 2, "custom_tool_use_id"), "sevt_c");
        agui_input_done(&in);

        refused("[]", "RunAgentInput");
        refused("{\"runId\":\"r\",\"messages\":[]}", "threadId");
        refused("{\"threadId\":\"a b\",\"runId\":\"r\",\"messages\":[]}", "threadId");
        refused("{\"threadId\":\"t\",\"runId\":\"\",\"messages\":[]}", "runId");
        refused("{\"threadId\":\"t\",\"runId\":\"r\"}", "messages");
        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[]}", "last of messages");
        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[{\"id\":\"m\",\"role\":\"system\",\"content\":\"x\"}"
                "]"
                "}",
                "last of messages");
        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[{\"id\":\"m\",\"role\":\"wizard\"}]}", "role");
        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[{\"role\":\"user\"}]}", "messages[0].id");
        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[{\"id\":\"m\",\"role\":\"user\",\"content\":\"\"}]}",
                "empty");
        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[{\"id\":\"m\",\"role\":\"user\",\"content\":"
                "[{\"type\":\"image\"}]}]}",
                "text parts");
        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[],\"tools\":[{\"name\":\"x\"}]}", "tools[0]");
        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[],\"context\":{}}", "context");
        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[],\"forwardedProps\":null}", "forwardedProps");
        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[],\"forwardedProps\":{\"agent_id\":\"a b\"}}",
                "agent_id");
        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[],\"resume\":[{\"interruptId\":\"x\",\"status\":"
                "\"maybe\"}]}",
                "resume[0]");
}

/* Translate the events of evs in order; the AG-UI events out, and the flags of each in flags. */
static json_t *translate(agui_run *r, const char *evs, unsigned *ret_flags) {
        json_auto_t *in = J(evs);
        json_t *out = json_array();
        unsigned all = 0;
        size_t i;
        json_t *ev;
        json_array_foreach(in, i, ev) all |= agui_translate(r, ev, out);
        *ret_flags = all;
        return out;
}

static void test_turn(void) {
        agui_run r;
        agui_run_init(&r, "t-1", "r-1");
        json_auto_t *start = json_array();
        agui_started(&r, start);
        CHECK_EQ_STR(type_at(start, 0), "RUN_STARTED");
        CHECK_EQ_STR(str_at(start, 0, "threadId"), "t-1");
        CHECK_EQ_STR(str_at(start, 0, "runId"), "r-1");
        unsigned f;
        json_auto_t *out = translate(
                &r,
                "[{\"type\":\"user.message\",\"id\":\"sevt_u\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]},"
                "{\"type\":\"session.status_running\"},{\"type\":\"span.model_request_start\",\"id\":\"s1\"},"
                "{\"type\":\"event_start\",\"event\":{\"type\":\"agent.message\",\"id\":\"sevt_m1\"}},"
                "{\"type\":\"event_delta\",\"event_id\":\"sevt_m1\",\"delta\":{\"content\":{\"text\":\"Let \"}}},"
                "{\"type\":\"event_delta\",\"event_id\":\"sevt_m1\",\"delta\":{\"content\":{\"text\":\"me\"}}},"
                "{\"type\":\"agent.message\",\"id\":\"sevt_m1\",\"content\":[{\"type\":\"text\",\"text\":\"Let me "
                "check.\"}]},"
                "{\"type\":\"agent.tool_use\",\"id\":\"sevt_t1\",\"name\":\"run_python\",\"input\":{\"code\":\"1\"}},"
                "{\"type\":\"agent.tool_result\",\"id\":\"sevt_r1\",\"tool_use_id\":\"sevt_t1\",\"content\":[{\"type\":"
                "\"text\",\"text\":\"1\"}],\"hull_handles\":[\"h1\"]},"
                "{\"type\":\"agent.message\",\"id\":\"sevt_m2\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]},"
                "{\"type\":\"session.usage\",\"usage\":{\"input_tokens\":7,\"output_tokens\":3}},"
                "{\"type\":\"session.status_idle\",\"stop_reason\":{\"type\":\"end_turn\"}}]",
                &f);
        CHECK(f & AGUI_STATE);
        CHECK(f & AGUI_ENDED);
        static const char *const want[] = {"TEXT_MESSAGE_START",   "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT",
                                           "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",     "TOOL_CALL_START",
                                           "TOOL_CALL_ARGS",       "TOOL_CALL_END",        "TOOL_CALL_RESULT",
                                           "TEXT_MESSAGE_START",   "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
                                           "RUN_FINISHED"};
        CHECK_EQ_INT(json_array_size(out), ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                CHECK_EQ_STR(type_at(out, i), want[i]);
        CHECK_EQ_STR(str_at(out, 0, "messageId"), "sevt_m1");
        CHECK_EQ_STR(str_at(out, 0, "role"), "assistant");
        CHECK_EQ_STR(str_at(out, 1, "delta"), "Let ");
        CHECK_EQ_STR(str_at(out, 2, "delta"), "me");
        CHECK_EQ_STR(str_at(out, 3, "delta"), " check."); /* the rest the previews did not bring */
        CHECK_EQ_STR(str_at(out, 5, "toolCallId"), "sevt_t1");
        CHECK_EQ_STR(str_at(out, 5, "toolCallName"), "run_python");
        CHECK_EQ_STR(str_at(out, 5, "parentMessageId"), "sevt_m1");
        CHECK_EQ_STR(str_at(out, 6, "delta"), "{\"code\":\"1\"}");
        CHECK_EQ_STR(str_at(out, 8, "toolCallId"), "sevt_t1");
        CHECK_EQ_STR(str_at(out, 8, "messageId"), "sevt_r1");
        CHECK_EQ_STR(str_at(out, 8, "content"), "1");
        CHECK_EQ_STR(str_at(out, 8, "role"), "tool");
        CHECK_EQ_STR(str_at(out, 10, "delta"), "done");
        json_t *fin = json_array_get(out, 12);
        CHECK(json_object_get(fin, "outcome") == NULL);
        CHECK_EQ_INT(
                json_integer_value(json_object_get(json_array_get(json_object_get(fin, "usage"), 0), "totalTokens")),
                10);
        /* after the end: nothing more */
        json_auto_t *more = translate(&r, "[{\"type\":\"agent.message\",\"id\":\"x\",\"content\":[]}]", &f);
        CHECK_EQ_INT(json_array_size(more), 0);
        CHECK(f & AGUI_ENDED);
}

static void test_ends(void) {
        agui_run r;
        unsigned f;
        agui_run_init(&r, "t", "r");
        json_auto_t *ask = translate(&r,
                                     "[{\"type\":\"agent.tool_use\",\"id\":\"sevt_a\",\"name\":\"bash\",\"input\":{}},"
                                     "{\"type\":\"agent.custom_tool_use\",\"id\":\"sevt_c\",\"name\":\"lookup\"},"
                                     "{\"type\":\"session.status_idle\",\"stop_reason\":{\"type\":\"requires_action\","
                                     "\"event_ids\":[\"sevt_c\"]}}]",
                                     &f);
        json_t *fin = json_array_get(ask, json_array_size(ask) - 1);
        CHECK_EQ_STR(json_string_value(json_object_get(fin, "type")), "RUN_FINISHED");
        json_t *it = json_array_get(json_object_get(json_object_get(fin, "outcome"), "interrupts"), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(fin, "outcome"), "type")), "interrupt");
        CHECK_EQ_STR(json_string_value(json_object_get(it, "id")), "sevt_c");
        CHECK_EQ_STR(json_string_value(json_object_get(it, "reason")), "custom_tool_result");
        CHECK_EQ_STR(json_string_value(json_object_get(it, "toolCallId")), "sevt_c");
        CHECK_EQ_STR(str_at(ask, 0, "toolCallName"), "bash");
        CHECK_EQ_STR(str_at(ask, 1, "delta"), "{}");

        agui_run_init(&r, "t", "r");
        json_auto_t *err = translate(
                &r,
                "[{\"type\":\"event_delta\",\"event_id\":\"sevt_x\",\"delta\":{\"content\":{\"text\":\"par\"}}},"
                "{\"type\":\"session.error\",\"error\":{\"type\":\"model_overloaded_error\",\"message\":\"busy\"}},"
                "{\"type\":\"session.status_idle\",\"stop_reason\":{\"type\":\"retries_exhausted\"}}]",
                &f);
        CHECK_EQ_INT(json_array_size(err), 4); /* START, CONTENT, END (closed before the error), RUN_ERROR */
        CHECK_EQ_STR(type_at(err, 2), "TEXT_MESSAGE_END");
        CHECK_EQ_STR(type_at(err, 3), "RUN_ERROR");
        CHECK_EQ_STR(str_at(err, 3, "code"), "model_overloaded_error");
        CHECK_EQ_STR(str_at(err, 3, "message"), "busy");

        agui_run_init(&r, "t", "r");
        json_auto_t *cut = translate(&r,
                                     "[{\"type\":\"user.interrupt\"},{\"type\":\"session.status_idle\","
                                     "\"stop_reason\":{\"type\":\"end_turn\"}}]",
                                     &f);
        CHECK_EQ_STR(json_string_value(json_object_get(
                             json_object_get(json_array_get(cut, json_array_size(cut) - 1), "outcome"), "type")),
                     "cancelled");

        agui_run_init(&r, "t", "r");
        json_auto_t *mcp = translate(&r,
                                     "[{\"type\":\"agent.mcp_tool_use\",\"id\":\"sevt_m\",\"name\":\"echo\","
                                     "\"mcp_server_name\":\"ev\",\"input\":{\"m\":1}},"
                                     "{\"type\":\"agent.mcp_tool_result\",\"id\":\"sevt_r\",\"mcp_tool_use_id\":"
                                     "\"sevt_m\",\"content\":[{\"type\":\"text\",\"text\":\"1\"}]}]",
                                     &f);
        CHECK_EQ_STR(str_at(mcp, 0, "toolCallName"), "ev__echo");
        CHECK_EQ_STR(str_at(mcp, 3, "toolCallId"), "sevt_m");
        CHECK(!(f & AGUI_STATE));
        json_auto_t *failed = json_array();
        agui_fail(&r, "shutting_down", "hull serve is shutting down", failed);
        CHECK_EQ_STR(type_at(failed, 0), "RUN_ERROR");
        agui_fail(&r, "again", "again", failed);
        CHECK_EQ_INT(json_array_size(failed), 1);
}

static void test_frontend(void) {
        char msg[V1_ERROR_MSG_MAX];
        json_auto_t *b = J("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[{\"id\":\"u\",\"role\":\"user\","
                           "\"content\":\"hi\"}],\"tools\":[{\"name\":\"pick\",\"description\":\"d\"},"
                           "{\"name\":\"go\",\"description\":\"e\",\"parameters\":{\"type\":\"object\","
                           "\"properties\":{\"x\":{\"type\":\"string\"}}}}],"
                           "\"context\":[{\"description\":\"page\",\"value\":\"editor\"}],\"state\":{\"a\":1}}");
        agui_input in = {0};
        CHECK_EQ_INT(agui_input_parse(b, &in, msg), 0);
        CHECK_EQ_INT(json_array_size(in.tools), 2);
        json_t *t0 = json_array_get(in.tools, 0);
        CHECK_EQ_STR(json_string_value(json_object_get(t0, "type")), "custom");
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(t0, "input_schema"), "type")), "object");
        CHECK(json_object_get(
                      json_object_get(json_object_get(json_array_get(in.tools, 1), "input_schema"), "properties"),
                      "x") != NULL);
        const char *text = json_string_value(
                json_object_get(json_array_get(json_object_get(json_array_get(in.events, 0), "content"), 0), "text"));
        CHECK_EQ_STR(text, "<agui_context>\n- page: editor\n</agui_context>\n\nhi");

        /* merge: the agent's own custom tool stays, an earlier run's frontend tool goes */
        json_auto_t *agent = J("[{\"type\":\"agent_toolset_20260401\"},{\"type\":\"custom\",\"name\":\"own\"}]");
        json_auto_t *sess = J("[{\"type\":\"agent_toolset_20260401\"},{\"type\":\"custom\",\"name\":\"own\"},"
                              "{\"type\":\"custom\",\"name\":\"old\"}]");
        json_t *merged = NULL;
        CHECK_EQ_INT(agui_tools_merge(sess, agent, in.tools, &merged), 0);
        CHECK_EQ_INT(json_array_size(merged), 4);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(merged, 1), "name")), "own");
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(merged, 2), "name")), "pick");
        json_t *again = NULL;
        CHECK_EQ_INT(agui_tools_merge(merged, agent, in.tools, &again), 0);
        CHECK(again == NULL); /* unchanged: no update */
        json_decref(merged);
        CHECK_EQ_INT(agui_tools_merge(agent, agent, NULL, &again), 0);
        CHECK(again == NULL);

        /* the run: a frontend call ends it without an interrupt; the agent's own custom tool asks */
        agui_run r;
        unsigned f;
        agui_run_init(&r, "t", "r");
        agui_run_frontend(&r, in.tools);
        json_auto_t *out = translate(&r,
                                     "[{\"type\":\"agent.custom_tool_use\",\"id\":\"sevt_p\",\"name\":\"pick\","
                                     "\"input\":{}},{\"type\":\"session.status_idle\",\"stop_reason\":{\"type\":"
                                     "\"requires_action\",\"event_ids\":[\"sevt_p\"]}}]",
                                     &f);
        CHECK(f & AGUI_ENDED);
        CHECK_EQ_STR(type_at(out, 0), "TOOL_CALL_START");
        CHECK_EQ_STR(str_at(out, 0, "toolCallName"), "pick");
        json_t *fin = json_array_get(out, json_array_size(out) - 1);
        CHECK_EQ_STR(json_string_value(json_object_get(fin, "type")), "RUN_FINISHED");
        CHECK(json_object_get(fin, "outcome") == NULL);
        agui_run_done(&r);
        agui_input_done(&in);

        /* tool messages (the trailing ones) → custom tool results */
        json_auto_t *tb = J("{\"threadId\":\"t\",\"runId\":\"r2\",\"messages\":[{\"id\":\"u\",\"role\":\"user\","
                            "\"content\":\"hi\"},{\"id\":\"a\",\"role\":\"assistant\",\"toolCalls\":[]},"
                            "{\"id\":\"m1\",\"role\":\"tool\",\"toolCallId\":\"sevt_p\",\"content\":\"teal\"},"
                            "{\"id\":\"m2\",\"role\":\"tool\",\"toolCallId\":\"sevt_q\",\"content\":\"\","
                            "\"error\":\"no\"}]}");
        CHECK_EQ_INT(agui_input_parse(tb, &in, msg), 0);
        CHECK_EQ_INT(json_array_size(in.events), 2);
        CHECK(in.tools == NULL);
        json_t *e0 = json_array_get(in.events, 0), *e1 = json_array_get(in.events, 1);
        CHECK_EQ_STR(json_string_value(json_object_get(e0, "type")), "user.custom_tool_result");
        CHECK_EQ_STR(json_string_value(json_object_get(e0, "custom_tool_use_id")), "sevt_p");
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(e0, "content"), 0), "text")),
                     "teal");
        CHECK(json_object_get(e0, "is_error") == NULL);
        CHECK(json_is_true(json_object_get(e1, "is_error")));
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(e1, "content"), 0), "text")),
                     "no");
        agui_input_done(&in);

        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[{\"id\":\"u\",\"role\":\"user\",\"content\":"
                "\"hi\"}],\"tools\":[{\"name\":\"a.b\",\"description\":\"d\"}]}",
                "tools[0].name");
        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[{\"id\":\"u\",\"role\":\"user\",\"content\":"
                "\"hi\"}],\"tools\":[{\"name\":\"a\",\"description\":\"d\",\"parameters\":[]}]}",
                "tools[0].parameters");
        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[{\"id\":\"m\",\"role\":\"tool\",\"content\":"
                "\"x\"}]}",
                "messages[0].toolCallId");
        refused("{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[{\"id\":\"m\",\"role\":\"tool\",\"toolCallId\":"
                "\"c\",\"content\":{}}]}",
                "messages[0]: a tool message");
}

int main(void) {
        test_input();
        test_turn();
        test_ends();
        test_frontend();
        return test_done();
}
