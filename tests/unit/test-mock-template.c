/* test-mock-template.c: the placeholders of hull mock-model's answers: the tool results of
 * requests in both wire formats, the placeholders and their filters, escaping inside JSON,
 * malformed ones refused by the script's parser, and a rendered answer in each format, whole and
 * streamed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mock-script.h"
#include "mock-template.h"
#include "test.h"

static const char openai_req[] =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"a\",\"content\":\"  one\\r\\ntwo \\\"q\\\" \\\\ \\u00e9\\n\"},"
        "{\"role\":\"tool\",\"tool_call_id\":\"b\",\"content\":[{\"type\":\"text\",\"text\":\"p1\"},"
        "{\"type\":\"image_url\"},{\"type\":\"text\",\"text\":\"p2\"}]},"
        "{\"role\":\"user\",\"content\":\"and?\"}]}";

static const char anthropic_req[] =
        "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"first\"}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t2\",\"content\":"
        "[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
        "{\"type\":\"tool_result\",\"tool_use_id\":\"t3\",\"content\":\"third\"},{\"type\":\"text\",\"text\":\"x\"}]}]"
        "}";

static mock_results results_of(mock_api api, const char *req) {
        mock_results r = {0};
        json_t *j = json_loads(req, 0, NULL);
        CHECK(j != NULL);
        CHECK_EQ_INT(mock_results_of(api, j, &r), 0);
        json_decref(j);
        return r;
}

static char *expand(const char *s, const mock_results *r, bool json) {
        char *out = NULL;
        CHECK_EQ_INT(mock_template_expand(s, r, json, &out), 0);
        return out;
}

#define CHECK_EXPAND(s, r, json, want)                                                                                 \
        do {                                                                                                           \
                char *_o = expand((s), (r), (json));                                                                   \
                CHECK_EQ_STR(_o, (want));                                                                              \
                free(_o);                                                                                              \
        } while (0)

static void test_results(void) {
        mock_results o = results_of(MOCK_API_OPENAI, openai_req);
        CHECK_EQ_INT(o.all.n, 2);
        CHECK_EQ_STR(o.all.v[0], "  one\r\ntwo \"q\" \\ \xc3\xa9\n");
        CHECK_EQ_STR(o.all.v[1], "p1\np2");
        CHECK_EQ_STR(o.last, "p1\np2"); /* a later user message does not hide it */
        mock_results_done(&o);

        mock_results a = results_of(MOCK_API_ANTHROPIC, anthropic_req);
        CHECK_EQ_INT(a.all.n, 3);
        CHECK_EQ_STR(a.all.v[0], "first");
        CHECK_EQ_STR(a.all.v[1], "a\nb");
        CHECK_EQ_STR(a.last, "third");
        mock_results_done(&a);

        /* Anthropic: the last user message has no tool_result: no last one */
        mock_results n = results_of(MOCK_API_ANTHROPIC,
                                    "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
                                    "\"content\":\"old\"}]},{\"role\":\"user\",\"content\":\"hi\"}]}");
        CHECK_EQ_INT(n.all.n, 1);
        CHECK(n.last == NULL);
        CHECK_EXPAND("[{{last_tool_result}}|{{tool_result:1}}]", &n, false, "[|old]");
        mock_results_done(&n);

        mock_results none = results_of(MOCK_API_OPENAI, "{\"messages\":[]}");
        CHECK_EQ_INT(none.all.n, 0);
        CHECK(none.last == NULL);
        mock_results_done(&none);
}

static void test_expand(void) {
        mock_results o = results_of(MOCK_API_OPENAI, openai_req);
        CHECK_EXPAND("got {{last_tool_result}}.", &o, false, "got p1\np2.");
        CHECK_EXPAND("{{tool_result:1}}", &o, false, "  one\r\ntwo \"q\" \\ \xc3\xa9\n");
        CHECK_EXPAND("{{tool_result:1|trim}}", &o, false, "one\r\ntwo \"q\" \\ \xc3\xa9");
        CHECK_EXPAND("{{tool_result:1|line:1}}", &o, false, "  one"); /* its \r off */
        CHECK_EXPAND("{{tool_result:1|line:1|trim}}", &o, false, "one");
        CHECK_EXPAND("{{tool_result:1|line:2}}", &o, false, "two \"q\" \\ \xc3\xa9");
        CHECK_EXPAND("{{tool_result:1|line:3}}", &o, false, "");
        CHECK_EXPAND("{{tool_result:1|line:4}}", &o, false, "");
        CHECK_EXPAND("{{last_tool_result|line:2}}", &o, false, "p2");
        CHECK_EXPAND("<{{tool_result:3}}><{{tool_result:999999999}}>", &o, false, "<><>");
        CHECK_EXPAND("{{tool_result:2}}{{tool_result:2}}", &o, false, "p1\np2p1\np2");
        /* not ours: as written */
        CHECK_EXPAND("{{name}} {{ last_tool_result }} {{{tool_result:2|line:1}}} {{", &o, false,
                     "{{name}} {{ last_tool_result }} {p1} {{");
        CHECK_EXPAND("no placeholder", &o, false, "no placeholder");
        CHECK_EXPAND("", &o, false, "");
        /* inside JSON: escaped, quotes not added */
        CHECK_EXPAND("{\"r\":\"{{tool_result:1}}\"}", &o, true,
                     "{\"r\":\"  one\\r\\ntwo \\\"q\\\" \\\\ \xc3\xa9\\n\"}");
        CHECK_EXPAND("{\"r\":\"{{last_tool_result}}\"}", &o, true, "{\"r\":\"p1\\np2\"}");
        /* no results at all */
        CHECK_EXPAND("[{{last_tool_result|trim}}][{{tool_result:1|line:1}}]", NULL, false, "[][]");
        mock_results_done(&o);
}

static void test_check(void) {
        hull_error e = {0};
        CHECK_EQ_INT(mock_template_check("plain {{x}} {", &e), 0);
        CHECK_EQ_INT(mock_template_check("{{last_tool_result}} {{tool_result:12|line:3|trim}}", &e), 2);
        static const char *const bad[] = {
                "{{last_tool_results}}",   "{{tool_result}}",        "{{tool_result:0}}",
                "{{tool_result:x}}",       "{{tool_result:1|line}}", "{{tool_result:1|line:0}}",
                "{{last_tool_result|up}}", "{{last_tool_result",     "{{tool_result:1000000000}}",
                "{{last_tool_result|}}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                e = (hull_error){0};
                CHECK_EQ_INT(mock_template_check(bad[i], &e), -EINVAL);
                CHECK(strstr(e.msg, "{{tool_result:N}}") != NULL);
        }
        /* malformed at run time (never from a checked script): as written */
        CHECK_EXPAND("{{tool_result:0}}", NULL, false, "{{tool_result:0}}");

        /* the script's parser: where, and what to write */
        mock_script *s = NULL;
        const char *t = "{\"steps\":[{\"text\":\"ok\"},{\"text\":\"{{tool_result:0}}\"}]}";
        CHECK_EQ_INT(mock_script_parse(t, strlen(t), &s, &e), -EINVAL);
        CHECK(strstr(e.msg, "step 2: text: ") != NULL && strstr(e.msg, "{{tool_result:0}}") != NULL);
        t = "{\"steps\":[{\"tool_calls\":[{\"name\":\"w\",\"input\":{\"p\":\"{{last_tool_result|x}}\"}}]}]}";
        CHECK_EQ_INT(mock_script_parse(t, strlen(t), &s, &e), -EINVAL);
        CHECK(strstr(e.msg, "step 1: tool_calls[0].input: ") != NULL);
        t = "{\"steps\":[{\"text\":[\"{{last_tool\",\"_result}}\"]}]}";
        CHECK_EQ_INT(mock_script_parse(t, strlen(t), &s, &e), -EINVAL);
        CHECK(strstr(e.msg, "step 1: text: ") != NULL);
        t = "{\"steps\":[{\"tool_calls\":[{\"name\":\"w\",\"arguments\":\"{}\",\"input\":{\"p\":\"{{tool_result:x}}\"}}"
            "]}]}";
        CHECK_EQ_INT(mock_script_parse(t, strlen(t), &s, &e), -EINVAL);
        CHECK(strstr(e.msg, "step 1: tool_calls[0].input: ") != NULL);
        t = "{\"steps\":[{\"tool_calls\":[{\"name\":\"w\",\"arguments\":\"{}\",\"input\":{\"p\":\"{{tool_result:1}}\"}}"
            "]}]}";
        CHECK_EQ_INT(mock_script_parse(t, strlen(t), &s, &e), 0);
        if (s) {
                CHECK(s->steps[0].templated);
                mock_script_free(s);
                s = NULL;
        }
        t = "{\"steps\":[{\"text\":\"a\"},{\"text\":[\"x {{last_tool_result}}\",\"y\"]}]}";
        CHECK_EQ_INT(mock_script_parse(t, strlen(t), &s, &e), 0);
        if (s) {
                CHECK(!s->steps[0].templated && s->steps[1].templated);
                mock_script_free(s);
        }
}

static char *joined(const mock_answer *a) {
        size_t n = 0;
        for (size_t i = 0; i < a->events.n; i++)
                n += strlen(a->events.v[i]);
        char *s = calloc(1, n + 1);
        for (size_t i = 0; s && i < a->events.n; i++)
                strcat(s, a->events.v[i]);
        return s;
}

/* A step quoting results, rendered in api's format whole and streamed. */
static void test_render(void) {
        const char *t = "{\"steps\":[{\"text\":[\"Read: \",\"{{tool_result:1|line:2}}\"],"
                        "\"tool_calls\":[{\"name\":\"write\",\"input\":{\"content\":\"{{tool_result:1}}\","
                        "\"n\":[\"{{last_tool_result|trim}}\"]}}],\"delta_bytes\":3}]}";
        mock_script *s = NULL;
        hull_error e = {0};
        CHECK_EQ_INT(mock_script_parse(t, strlen(t), &s, &e), 0);
        if (!s)
                return;
        for (int api = 0; api < 2; api++) {
                mock_api which = api ? MOCK_API_ANTHROPIC : MOCK_API_OPENAI;
                mock_results r = results_of(which, api ? anthropic_req : openai_req);
                mock_step x;
                CHECK_EQ_INT(mock_step_expand(&s->steps[0], &r, &x), 0);
                const char *line2 = api ? "" : "two \"q\" \\ \xc3\xa9";
                char want_text[64];
                snprintf(want_text, sizeof(want_text), "Read: %s", line2);
                CHECK_EQ_STR(x.text, want_text);
                CHECK_EQ_INT(x.pieces.n, 2);
                json_t *args = json_loads(x.calls[0].arguments, 0, NULL);
                CHECK(args != NULL);
                CHECK_EQ_STR(json_string_value(json_object_get(args, "content")), r.all.v[0]);
                CHECK_EQ_STR(json_string_value(json_object_get(x.calls[0].input, "content")), r.all.v[0]);
                CHECK_EQ_STR(json_string_value(json_array_get(json_object_get(args, "n"), 0)),
                             api ? "third" : "p1\np2");
                json_decref(args);

                mock_request rq = {.api = which, .model = "m", .seq = 1, .now = 1767225600, .body_bytes = 100};
                mock_answer a;
                CHECK_EQ_INT(mock_render(&x, &rq, &a), 0);
                json_t *j = json_loadb(a.body, a.body_len, 0, NULL);
                CHECK(j != NULL);
                const char *text =
                        api ? json_string_value(
                                      json_object_get(json_array_get(json_object_get(j, "content"), 0), "text"))
                            : json_string_value(json_object_get(
                                      json_object_get(json_array_get(json_object_get(j, "choices"), 0), "message"),
                                      "content"));
                CHECK_EQ_STR(text, want_text);
                json_decref(j);
                mock_answer_done(&a);

                /* streamed in 3-byte deltas: every event still JSON, the escapes whole */
                rq.stream = true;
                CHECK_EQ_INT(mock_render(&x, &rq, &a), 0);
                char *all = joined(&a);
                CHECK(all != NULL);
                size_t bad = 0;
                for (char *line = all ? strtok(all, "\n") : NULL; line; line = strtok(NULL, "\n"))
                        if (strncmp(line, "data: {", 7) == 0) {
                                json_t *ev = json_loads(line + 6, 0, NULL);
                                bad += ev == NULL;
                                json_decref(ev);
                        }
                CHECK_EQ_INT(bad, 0);
                free(all);
                mock_answer_done(&a);
                mock_step_expanded_done(&x);
                mock_results_done(&r);
        }
        mock_script_free(s);
}

/* The whole step's expansion is bounded: 17 copies of a 1 MiB result are too many. */
static void test_too_big(void) {
        char *big = malloc((1U << 20) + 1);
        CHECK(big != NULL);
        if (!big)
                return;
        memset(big, 'a', 1U << 20);
        big[1U << 20] = '\0';
        char *v[] = {big};
        const mock_results r = {.all = {.v = v, .n = 1}, .last = big};
        char text[17 * 21 + 1] = "";
        for (int i = 0; i < 17; i++)
                strncat(text, "{{last_tool_result}}", sizeof(text) - strlen(text) - 1);
        mock_step st = {.text = text}, x;
        CHECK_EQ_INT(mock_step_expand(&st, &r, &x), -E2BIG);
        text[15 * 20] = '\0'; /* 15 MiB: fits */
        CHECK_EQ_INT(mock_step_expand(&st, &r, &x), 0);
        CHECK_EQ_INT(strlen(x.text), 15U << 20);
        mock_step_expanded_done(&x);
        /* spread over a call's input strings too */
        json_t *in = json_object();
        for (int i = 0; i < 17; i++) {
                char k[8];
                snprintf(k, sizeof(k), "k%d", i);
                json_object_set_new(in, k, json_string("{{tool_result:1}}"));
        }
        mock_call call = {.name = (char *) "w", .arguments = (char *) "{}", .input = in};
        mock_step st2 = {.text = (char *) "", .calls = &call, .n_calls = 1};
        CHECK_EQ_INT(mock_step_expand(&st2, &r, &x), -E2BIG);
        json_decref(in);
        free(big);
}

int main(void) {
        test_results();
        test_expand();
        test_check();
        test_render();
        test_too_big();
        return test_done();
}
