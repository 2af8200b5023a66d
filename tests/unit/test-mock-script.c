/* test-mock-script.c: hull mock-model's script parser and answers: the streaming transcripts of
 * model-apis.md §1.7 and §2.7 byte for byte, whole answers, errors in each envelope, faults in
 * streams, the quirks, the writes a stream is cut into, and the errors a bad script gets. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mock-script.h"
#include "test.h"

static mock_script *parse(const char *text) {
        mock_script *s = NULL;
        hull_error e = {0};
        if (mock_script_parse(text, strlen(text), &s, &e) < 0) {
                printf("# parse failed: %s\n", e.msg);
                return NULL;
        }
        return s;
}

/* The error message of a script that must be refused ("" when it was accepted). */
static const char *refusal(const char *text, hull_error *e) {
        mock_script *s = NULL;
        *e = (hull_error){0};
        if (mock_script_parse(text, strlen(text), &s, e) == 0) {
                mock_script_free(s);
                return "";
        }
        return e->msg;
}

static char *read_data(const char *name) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", TEST_DATA_DIR, name);
        FILE *f = fopen(path, "rb");
        if (!f)
                return NULL;
        char *buf = calloc(1, 1 << 16);
        size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
        fclose(f);
        if (buf)
                buf[n] = '\0';
        return buf;
}

static char *join(const mock_answer *a) {
        size_t n = 0;
        for (size_t i = 0; i < a->events.n; i++)
                n += strlen(a->events.v[i]);
        char *s = calloc(1, n + 1);
        for (size_t i = 0; s && i < a->events.n; i++)
                strncat(s, a->events.v[i], n);
        return s;
}

static const char *header(const mock_answer *a, const char *name) {
        for (size_t i = 0; i < a->n_headers; i++)
                if (strcmp(a->headers[i].name, name) == 0)
                        return a->headers[i].value;
        return NULL;
}

static void test_openai_transcript(void) {
        mock_script *s = parse("{\"steps\": [{\"id\": \"chatcmpl-7Qm2\", \"created\": 1767225600,"
                               " \"tool_calls\": [{\"id\": \"call_Xk12\", \"name\": \"read_file\","
                               " \"input\": {\"path\": \"notes.txt\"},"
                               " \"arguments\": [\"{\\\"pa\", \"th\\\":\\\"notes.txt\\\"}\"]}],"
                               " \"usage\": {\"input_tokens\": 61, \"output_tokens\": 18}}]}");
        CHECK(s != NULL);
        if (!s)
                return;
        mock_request rq = {.api = MOCK_API_OPENAI, .model = "gpt-5.4", .stream = true, .include_usage = true, .seq = 1};
        mock_answer a;
        CHECK_EQ_INT(mock_render(&s->steps[0], &rq, &a), 0);
        char *want = read_data("mock-openai-stream.txt"), *got = join(&a);
        CHECK(want && got && strcmp(want, got) == 0);
        if (want && got && strcmp(want, got) != 0)
                printf("# got:\n%s\n# want:\n%s\n", got, want);
        CHECK(a.stream && !a.abort && a.status == 200);
        CHECK_EQ_STR(header(&a, "x-request-id"), "req_mock000001");
        free(want);
        free(got);
        mock_answer_done(&a);

        /* the same step whole: §1.6's Response 1 */
        rq.stream = false;
        CHECK_EQ_INT(mock_render(&s->steps[0], &rq, &a), 0);
        json_t *j = json_loadb(a.body, a.body_len, 0, NULL);
        CHECK(j != NULL);
        json_t *msg = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "message");
        json_t *call = json_array_get(json_object_get(msg, "tool_calls"), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(j, "object")), "chat.completion");
        CHECK_EQ_STR(json_string_value(json_object_get(j, "model")), "gpt-5.4");
        CHECK(json_is_null(json_object_get(msg, "content")) && json_is_null(json_object_get(msg, "refusal")));
        CHECK_EQ_STR(json_string_value(json_object_get(call, "id")), "call_Xk12");
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(call, "function"), "arguments")),
                     "{\"path\":\"notes.txt\"}");
        CHECK_EQ_STR(
                json_string_value(json_object_get(json_array_get(json_object_get(j, "choices"), 0), "finish_reason")),
                "tool_calls");
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "usage"), "total_tokens")), 79);
        json_decref(j);
        mock_answer_done(&a);
        mock_script_free(s);
}

static void test_anthropic_transcript(void) {
        mock_script *s = parse("{\"steps\": [{\"id\": \"msg_01AbC\", \"text\": \"I'll read it.\","
                               " \"tool_calls\": [{\"id\": \"toolu_01Xy\", \"name\": \"read_file\","
                               " \"input\": {\"path\": \"notes.txt\"},"
                               " \"arguments\": [\"\", \"{\\\"path\\\": \\\"no\", \"tes.txt\\\"}\"]}],"
                               " \"usage\": {\"input_tokens\": 412, \"output_tokens\": 55,"
                               " \"cache_read_input_tokens\": 0, \"cache_creation_input_tokens\": 0}}]}");
        CHECK(s != NULL);
        if (!s)
                return;
        mock_request rq = {.api = MOCK_API_ANTHROPIC, .model = "claude-sonnet-4-6", .stream = true, .seq = 2};
        mock_answer a;
        CHECK_EQ_INT(mock_render(&s->steps[0], &rq, &a), 0);
        char *want = read_data("mock-anthropic-stream.txt"), *got = join(&a);
        CHECK(want && got && strcmp(want, got) == 0);
        if (want && got && strcmp(want, got) != 0)
                printf("# got:\n%s\n# want:\n%s\n", got, want);
        CHECK_EQ_STR(header(&a, "request-id"), "req_mock000002");
        free(want);
        free(got);
        mock_answer_done(&a);

        /* whole: §2.6's Response 1 */
        rq.stream = false;
        CHECK_EQ_INT(mock_render(&s->steps[0], &rq, &a), 0);
        json_t *j = json_loadb(a.body, a.body_len, 0, NULL);
        json_t *content = json_object_get(j, "content");
        CHECK_EQ_INT(json_array_size(content), 2);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(content, 0), "text")), "I'll read it.");
        json_t *tool = json_array_get(content, 1);
        CHECK_EQ_STR(json_string_value(json_object_get(tool, "type")), "tool_use");
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(tool, "input"), "path")), "notes.txt");
        CHECK_EQ_STR(json_string_value(json_object_get(j, "stop_reason")), "tool_use");
        CHECK(json_is_null(json_object_get(j, "stop_sequence")));
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "usage"), "output_tokens")), 55);
        json_decref(j);
        mock_answer_done(&a);
        mock_script_free(s);
}

/* Made-up ids, the model echoed, usage guessed, pieces of the text that concatenate to it. */
static void test_defaults(void) {
        mock_script *s = parse("{\"steps\": [{\"text\": \"Hello, wörld! A longer answer in pieces.\"},"
                               " {\"tool_calls\": [{\"name\": \"a\", \"input\": {\"x\": 1}},"
                               " {\"name\": \"b\", \"arguments\": \"{\\\"y\\\": [1, 2]}\"}]}]}");
        CHECK(s != NULL);
        if (!s)
                return;
        mock_request rq = {
                .api = MOCK_API_OPENAI, .model = "m1", .stream = true, .seq = 7, .now = 1700000000, .body_bytes = 400};
        mock_answer a;
        CHECK_EQ_INT(mock_render(&s->steps[0], &rq, &a), 0);
        CHECK(a.events.n > 4);
        CHECK(strstr(a.events.v[0], "\"delta\":{\"role\":\"assistant\",\"content\":\"\"}") != NULL);
        CHECK(strstr(a.events.v[0], "\"id\":\"chatcmpl-mock000007\"") != NULL);
        CHECK(strstr(a.events.v[0], "\"usage\"") == NULL); /* no include_usage: no usage key */
        CHECK_EQ_STR(a.events.v[a.events.n - 1], "data: [DONE]\n\n");
        CHECK(strstr(a.events.v[a.events.n - 2], "\"finish_reason\":\"stop\"") != NULL);
        mock_answer_done(&a);

        rq.stream = false;
        CHECK_EQ_INT(mock_render(&s->steps[1], &rq, &a), 0);
        json_t *j = json_loadb(a.body, a.body_len, 0, NULL);
        json_t *calls = json_object_get(json_object_get(json_array_get(json_object_get(j, "choices"), 0), "message"),
                                        "tool_calls");
        CHECK_EQ_INT(json_array_size(calls), 2);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(calls, 0), "id")), "call_mock000007_0");
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(calls, 1), "id")), "call_mock000007_1");
        CHECK_EQ_STR(
                json_string_value(json_object_get(json_object_get(json_array_get(calls, 0), "function"), "arguments")),
                "{\"x\":1}");
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "usage"), "prompt_tokens")), 100);
        json_decref(j);
        mock_answer_done(&a);

        /* Anthropic: the unparsed arguments' object as input, toolu_ ids, input_json_delta pieces
         * that concatenate to the arguments */
        rq.api = MOCK_API_ANTHROPIC;
        CHECK_EQ_INT(mock_render(&s->steps[1], &rq, &a), 0);
        j = json_loadb(a.body, a.body_len, 0, NULL);
        json_t *second = json_array_get(json_object_get(j, "content"), 1);
        CHECK_EQ_STR(json_string_value(json_object_get(second, "id")), "toolu_mock000007_1");
        CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(second, "input"), "y")), 2);
        json_decref(j);
        mock_answer_done(&a);
        rq.stream = true;
        CHECK_EQ_INT(mock_render(&s->steps[1], &rq, &a), 0);
        char joined[256] = "";
        for (size_t i = 0; i < a.events.n; i++) {
                const char *d = strstr(a.events.v[i], "data: ");
                json_t *ev = d ? json_loads(d + 6, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
                json_t *delta = json_object_get(ev, "delta");
                if (json_is_integer(json_object_get(ev, "index")) &&
                    json_integer_value(json_object_get(ev, "index")) == 1 && json_object_get(delta, "partial_json"))
                        strncat(joined, json_string_value(json_object_get(delta, "partial_json")),
                                sizeof(joined) - strlen(joined) - 1);
                json_decref(ev);
        }
        CHECK_EQ_STR(joined, "{\"y\": [1, 2]}");
        CHECK(strstr(a.events.v[a.events.n - 2], "\"stop_reason\":\"tool_use\"") != NULL);
        CHECK_EQ_STR(a.events.v[a.events.n - 1], "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
        mock_answer_done(&a);
        mock_script_free(s);
}

static void test_errors(void) {
        mock_script *s =
                parse("{\"steps\": [{\"error\": {\"status\": 404}},"
                      " {\"error\": {\"kind\": \"rate_limit\", \"retry_after_ms\": 1, \"should_retry\": false}},"
                      " {\"error\": {\"kind\": \"context_overflow\"}},"
                      " {\"error\": {\"status\": 400, \"shape\": \"flat\", \"message\": \"bad\"}},"
                      " {\"error\": {\"kind\": \"overloaded\"}}]}");
        CHECK(s != NULL);
        if (!s)
                return;
        mock_request oa = {.api = MOCK_API_OPENAI, .model = "gpt-x", .seq = 3};
        mock_request an = {.api = MOCK_API_ANTHROPIC, .model = "claude-x", .seq = 4, .stream = true};
        mock_answer a;
        CHECK_EQ_INT(mock_render(&s->steps[0], &oa, &a), 0);
        CHECK_EQ_INT(a.status, 404);
        CHECK(!a.stream);
        CHECK_EQ_STR(a.body, "{\"error\":{\"message\":\"The model `gpt-x` does not exist or you do not have access to "
                             "it.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}");
        mock_answer_done(&a);
        CHECK_EQ_INT(mock_render(&s->steps[0], &an, &a), 0);
        CHECK(!a.stream); /* an error before the stream: a status and a JSON body */
        CHECK_EQ_STR(a.body, "{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model: "
                             "claude-x\"},\"request_id\":\"req_mock000004\"}");
        mock_answer_done(&a);
        CHECK_EQ_INT(mock_render(&s->steps[1], &an, &a), 0);
        CHECK_EQ_INT(a.status, 429);
        CHECK_EQ_STR(header(&a, "retry-after-ms"), "1");
        CHECK_EQ_STR(header(&a, "x-should-retry"), "false");
        CHECK(strstr(a.body, "rate_limit_error") != NULL);
        mock_answer_done(&a);
        CHECK_EQ_INT(mock_render(&s->steps[2], &oa, &a), 0);
        CHECK_EQ_INT(a.status, 400);
        CHECK(strstr(a.body, "\"code\":\"context_length_exceeded\"") && strstr(a.body, "\"param\":\"messages\""));
        mock_answer_done(&a);
        CHECK_EQ_INT(mock_render(&s->steps[2], &an, &a), 0);
        CHECK(strstr(a.body, "prompt is too long") != NULL);
        mock_answer_done(&a);
        CHECK_EQ_INT(mock_render(&s->steps[3], &oa, &a), 0);
        CHECK_EQ_STR(a.body, "{\"object\":\"error\",\"message\":\"bad\",\"type\":\"BadRequestError\",\"param\":null,"
                             "\"code\":400}");
        mock_answer_done(&a);
        CHECK_EQ_INT(mock_render(&s->steps[4], &an, &a), 0);
        CHECK_EQ_INT(a.status, 529);
        CHECK(strstr(a.body, "overloaded_error") != NULL);
        mock_answer_done(&a);
        mock_script_free(s);
}

static void test_stream_faults(void) {
        mock_script *s = parse("{\"steps\": [{\"text\": \"abcdefgh\", \"delta_bytes\": 2,"
                               " \"stream_error\": {\"after_events\": 2}},"
                               " {\"text\": \"abc\", \"cut\": {\"after_events\": 1, \"mid_line\": true}},"
                               " {\"text\": \"abc\", \"cut\": {\"clean\": true}},"
                               " {\"text\": \"x\", \"stream_error\": {\"status\": 503}}]}");
        CHECK(s != NULL);
        if (!s)
                return;
        mock_request oa = {.api = MOCK_API_OPENAI, .model = "m", .stream = true, .seq = 1};
        mock_request an = {.api = MOCK_API_ANTHROPIC, .model = "m", .stream = true, .seq = 1};
        mock_answer a;
        CHECK_EQ_INT(mock_render(&s->steps[0], &oa, &a), 0);
        CHECK_EQ_INT(a.events.n, 3);
        CHECK(strncmp(a.events.v[2], "data: {\"error\":{\"message\":", 26) == 0);
        CHECK(!a.abort);
        mock_answer_done(&a);
        CHECK_EQ_INT(mock_render(&s->steps[0], &an, &a), 0);
        CHECK_EQ_INT(a.events.n, 3);
        CHECK(strncmp(a.events.v[2], "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"",
                      68) == 0);
        mock_answer_done(&a);
        /* cut mid-line: the first event whole, half of the second's data line, no blank line */
        CHECK_EQ_INT(mock_render(&s->steps[1], &oa, &a), 0);
        CHECK_EQ_INT(a.events.n, 2);
        CHECK(a.abort);
        CHECK(strncmp(a.events.v[1], "data: {", 7) == 0 && !strchr(a.events.v[1], '\n'));
        mock_answer_done(&a);
        /* a clean cut before the last event: no [DONE], no message_stop, the body ended */
        CHECK_EQ_INT(mock_render(&s->steps[2], &oa, &a), 0);
        CHECK(!a.abort && strstr(a.events.v[a.events.n - 1], "[DONE]") == NULL);
        mock_answer_done(&a);
        CHECK_EQ_INT(mock_render(&s->steps[2], &an, &a), 0);
        CHECK(strncmp(a.events.v[a.events.n - 1], "event: message_delta", 20) == 0);
        mock_answer_done(&a);
        /* a stream error asked for without a stream: an HTTP error */
        oa.stream = false;
        CHECK_EQ_INT(mock_render(&s->steps[3], &oa, &a), 0);
        CHECK_EQ_INT(a.status, 503);
        CHECK(!a.stream);
        mock_answer_done(&a);
        mock_script_free(s);
}

static void test_quirks(void) {
        mock_script *s =
                parse("{\"steps\": [{\"tool_calls\": [{\"name\": \"a\"}, {\"name\": \"b\"}],"
                      " \"finish_reason\": \"stop\","
                      " \"quirks\": [\"reuse_index\", \"one_piece_tool_calls\", \"usage_on_finish\"]},"
                      " {\"tool_calls\": [{\"name\": \"a\"}], \"quirks\": [\"no_index\", \"usage_every_chunk\"],"
                      " \"line_ending\": \"crlf\"}]}");
        CHECK(s != NULL);
        if (!s)
                return;
        mock_request rq = {.api = MOCK_API_OPENAI, .model = "m", .stream = true, .include_usage = true, .seq = 1};
        mock_answer a;
        CHECK_EQ_INT(mock_render(&s->steps[0], &rq, &a), 0);
        /* role, two one-piece calls, finish (with usage), [DONE] */
        CHECK_EQ_INT(a.events.n, 5);
        CHECK(strstr(a.events.v[1], "\"index\":0,\"id\":\"call_mock000001_0\"") != NULL);
        CHECK(strstr(a.events.v[2], "\"index\":0,\"id\":\"call_mock000001_1\"") != NULL);
        CHECK(strstr(a.events.v[2], "\"arguments\":\"{}\"") != NULL);
        CHECK(strstr(a.events.v[3], "\"finish_reason\":\"stop\"") && strstr(a.events.v[3], "\"prompt_tokens\""));
        mock_answer_done(&a);
        CHECK_EQ_INT(mock_render(&s->steps[1], &rq, &a), 0);
        CHECK(strstr(a.events.v[1], "\"index\":0") == NULL || strstr(a.events.v[1], "\"choices\":[{\"index\":0"));
        CHECK(strstr(a.events.v[1], "\"tool_calls\":[{\"id\"") != NULL);
        CHECK(strstr(a.events.v[0], "\"usage\":{\"prompt_tokens\"") != NULL);
        size_t n = strlen(a.events.v[0]);
        CHECK(n > 4 && strcmp(a.events.v[0] + n - 4, "\r\n\r\n") == 0);
        mock_answer_done(&a);
        mock_script_free(s);
}

static void test_writes(void) {
        const char *p = "ab\xc3\xa9"
                        "c\r\nd\\\"e";
        size_t n = strlen(p);
        CHECK_EQ_INT(mock_next_write(p, n, MOCK_WRITES_EVENT, 1), n);
        CHECK_EQ_INT(mock_next_write(p, n, MOCK_WRITES_BYTES, 1), 1);
        CHECK_EQ_INT(mock_next_write(p, n, MOCK_WRITES_BYTES, 4), 4);
        CHECK_EQ_INT(mock_next_write(p, 2, MOCK_WRITES_BYTES, 4), 2);
        CHECK_EQ_INT(mock_next_write(p, n, MOCK_WRITES_UTF8, 1), 3); /* "ab" and the lead byte */
        CHECK_EQ_INT(mock_next_write(p + 3, n - 3, MOCK_WRITES_UTF8, 1), n - 3);
        CHECK_EQ_INT(mock_next_write(p, n, MOCK_WRITES_CRLF, 1), 6); /* up to the CR */
        CHECK_EQ_INT(mock_next_write(p, n, MOCK_WRITES_ESCAPE, 1), 9);
        CHECK_EQ_INT(mock_next_write(p, 0, MOCK_WRITES_BYTES, 1), 0);
}

static void test_bad_scripts(void) {
        hull_error e;
        CHECK(strstr(refusal("{\"steps\": [{\"text\": \"a\"}, {\"tool_calls\": [{\"input\": {}}]}]}", &e),
                     "step 2: tool_calls[0].name: must be a non-empty string") != NULL);
        CHECK(strstr(refusal("{\"steps\": [{\"txt\": \"a\"}]}", &e), "step 1: txt: unknown field") != NULL);
        CHECK(strstr(refusal("{\"steps\": [{\"text\": \"a\"", &e), "not JSON: line 1") != NULL);
        CHECK(strstr(refusal("{\"steps\": []}", &e), "steps: must be a list of 1 to") != NULL);
        CHECK(strstr(refusal("[1]", &e), "must be an object") != NULL);
        CHECK(strstr(refusal("{\"steps\": [{}]}", &e), "step 1:") != NULL);
        CHECK(strstr(refusal("{\"steps\": [{\"text\": \"a\", \"error\": {\"status\": 500}}]}", &e),
                     "an error step answers with the error alone") != NULL);
        CHECK(strstr(refusal("{\"steps\": [{\"error\": {\"status\": 302}}]}", &e), "status must be") != NULL);
        CHECK(strstr(refusal("{\"steps\": [{\"error\": {\"kind\": \"nope\"}}]}", &e), "kind must be one of") != NULL);
        CHECK(strstr(refusal("{\"steps\": [{\"text\": \"a\", \"quirks\": [\"x\"]}]}", &e), "quirks") != NULL);
        CHECK(strstr(refusal("{\"steps\": [{\"text\": \"a\", \"writes\": \"crlf\", \"line_ending\": \"lf\"}]}", &e),
                     "needs line_ending") != NULL);
        CHECK(strstr(refusal("{\"steps\": [{\"text\": \"a\", \"times\": 0}]}", &e), "times: must be a whole") != NULL);
        CHECK(strstr(refusal("{\"steps\": [{\"text\": \"a\"}], \"then\": \"stop\"}", &e), "then:") != NULL);
        CHECK(strstr(refusal("{\"steps\": [{\"text\": \"a\", \"text\": \"b\"}]}", &e), "duplicate") != NULL);
        CHECK_EQ_STR(refusal("{\"comment\": \"ok\", \"steps\": [{\"comment\": \"ok\", \"text\": \"a\"}]}", &e), "");
}

int main(void) {
        test_openai_transcript();
        test_anthropic_transcript();
        test_defaults();
        test_errors();
        test_stream_faults();
        test_quirks();
        test_writes();
        test_bad_scripts();
        return test_done();
}
