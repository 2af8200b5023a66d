/* test-model.c: the providers' pure parts (model-internal.h): requests encoded from the neutral
 * conversation (model-apis.md §1.6 and §2.6 byte for byte in their messages and tools, the
 * conversation carried over from a decoded answer), whole answers decoded, the §1.7 and §2.7
 * transcripts assembled into exactly the §1.6 and §2.6 answers whatever the split of their bytes,
 * the compatible servers' quirks (§1.8), errors read in every shape and named, the retry delay. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model-internal.h"
#include "test.h"

static char *slurp(const char *name, size_t *ret_len) {
        char path[512];
        snprintf(path, sizeof(path), "%s/model/%s", TEST_DATA_DIR, name);
        FILE *f = fopen(path, "rb");
        if (!f) {
                printf("not ok - cannot open %s\n", path);
                exit(1);
        }
        dynbuf b;
        dynbuf_init(&b, 1 << 20);
        char buf[4096];
        for (size_t n; (n = fread(buf, 1, sizeof(buf), f)) > 0;)
                dynbuf_add(&b, buf, n);
        fclose(f);
        return dynbuf_take(&b, ret_len);
}

static json_t *load(const char *name) {
        size_t len;
        char *s = slurp(name, &len);
        json_t *j = json_loadb(s, len, 0, NULL);
        free(s);
        return j;
}

/* A JSON value's compact text, for reports (static: two in turn). */
static const char *dump(const json_t *j) {
        static char bufs[2][4096];
        static unsigned turn;
        char *b = bufs[turn++ % 2];
        char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        snprintf(b, sizeof(bufs[0]), "%s", s ? s : "(null)");
        free(s);
        return b;
}

#define CHECK_JSON(a, b)                                                                                               \
        do {                                                                                                           \
                const json_t *_a = (a), *_b = (b);                                                                     \
                TEST_RESULT(_a &&_b &&json_equal(_a, _b), "%s == %s (got %s, want %s)", #a, #b, dump(_a), dump(_b));   \
        } while (0)
/* The same against JSON text. */
#define CHECK_JSON_TEXT(a, text)                                                                                       \
        do {                                                                                                           \
                json_t *_w = json_loads((text), 0, NULL);                                                              \
                CHECK_JSON(a, _w);                                                                                     \
                json_decref(_w);                                                                                       \
        } while (0)

static json_t *parse(const char *s) {
        json_error_t je;
        json_t *j = json_loads(s, 0, &je);
        if (!j)
                printf("not ok - bad JSON in the test: %s: %s\n", je.text, s);
        return j;
}

/* ---- what the stream hands on ---- */

typedef struct handed {
        dynbuf text;
        char tools[512];
        unsigned n_tools;
} handed;

static int on_text(void *ud, const char *p, size_t n) {
        handed *h = ud;
        return dynbuf_add(&h->text, p, n);
}

static int on_tool(void *ud, const char *id, const char *name) {
        handed *h = ud;
        size_t n = strlen(h->tools);
        snprintf(h->tools + n, sizeof(h->tools) - n, "%s%s=%s", n ? "," : "", id, name);
        h->n_tools++;
        return 0;
}

typedef struct feed {
        model_stream *ms;
        const model_call_opts *o;
        hull_error *e;
        int end; /* the assembler's last non-zero result */
} feed;

static int on_event(void *ud, const sse_event *ev) {
        feed *f = ud;
        int r = model_stream_event(f->ms, ev, f->o, f->e);
        if (r != 0)
                f->end = r;
        return r < 0 ? r : 0;
}

/* Assemble bytes fed in pieces of piece bytes (0: whole; cut: one split there instead). Returns
 * the first error or model_stream_finish's result; *ret and *h as they came. */
static int assemble(model_api api, const char *bytes, size_t len, size_t piece, size_t cut, model_response *ret,
                    handed *h, hull_error *e) {
        model_stream *ms = NULL;
        sse_decoder d;
        model_call_opts o = {.on_text = on_text, .on_tool_use = on_tool, .ud = h};
        feed f = {.o = &o, .e = e};
        int r = 0;

        *h = (handed){0};
        dynbuf_init(&h->text, 1 << 20);
        if (model_stream_new(api, &ms) < 0)
                return -ENOMEM;
        f.ms = ms;
        sse_init(&d, MODEL_STREAM_EVENT_MAX);
        if (cut) {
                r = sse_feed(&d, bytes, cut, on_event, &f);
                if (r == 0)
                        r = sse_feed(&d, bytes + cut, len - cut, on_event, &f);
        } else
                for (size_t at = 0; at < len && r == 0;) {
                        size_t n = piece ? MIN(piece, len - at) : len - at;
                        r = sse_feed(&d, bytes + at, n, on_event, &f);
                        at += n;
                }
        if (r == 0) {
                sse_finish(&d);
                r = model_stream_finish(ms, ret, e);
        }
        sse_done(&d);
        model_stream_free(ms);
        return r;
}

static void handed_done(handed *h) {
        dynbuf_free(&h->text);
}

/* ---- requests ---- */

static json_t *neutral_tools(const json_t *api_tools, model_api api) {
        json_t *out = json_array(), *t;
        size_t i;
        json_array_foreach(api_tools, i, t) {
                const json_t *f = api == MODEL_API_OPENAI ? json_object_get(t, "function") : t;
                json_array_append_new(
                        out, json_pack("{s:O, s:O, s:O}", "name", json_object_get(f, "name"), "description",
                                       json_object_get(f, "description"), "input_schema",
                                       json_object_get(f, api == MODEL_API_OPENAI ? "parameters" : "input_schema")));
        }
        return out;
}

static json_t *encode(model_api api, const model_wire_cfg *w, const model_request *r) {
        char *body = NULL;
        size_t len = 0;
        hull_error e = {0};
        int k = api == MODEL_API_OPENAI ? model_openai_encode(w, r, &body, &len, &e)
                                        : model_anthropic_encode(w, r, &body, &len, &e);
        if (k < 0) {
                printf("not ok - encode: %d %s\n", k, e.msg);
                return NULL;
        }
        CHECK_EQ_INT(strlen(body), len);
        json_t *j = json_loadb(body, len, 0, NULL);
        free(body);
        return j;
}

static int decode(model_api api, const char *body, model_response *ret, model_api_error *err, hull_error *e) {
        return api == MODEL_API_OPENAI ? model_openai_decode(body, strlen(body), ret, err, e)
                                       : model_anthropic_decode(body, strlen(body), ret, err, e);
}

/* The §1.6 / §2.6 exchange: request 1 from the neutral conversation, response 1 decoded, request 2
 * from the conversation carried on with the decoded assistant turn and the tool's result. */
static void test_exchange(model_api api) {
        const char *p = api == MODEL_API_OPENAI ? "openai" : "anthropic";
        char name[64];
        snprintf(name, sizeof(name), "%s-request-1.json", p);
        json_t *req1 = load(name);
        snprintf(name, sizeof(name), "%s-request-2.json", p);
        json_t *req2 = load(name);
        snprintf(name, sizeof(name), "%s-response-1.json", p);
        size_t len;
        char *resp1 = slurp(name, &len);
        json_t *tools = neutral_tools(json_object_get(req1, "tools"), api);
        json_t *msgs =
                parse("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What does notes.txt say?\"}]}]");
        model_wire_cfg w = {.api = api,
                            .model = json_string_value(json_object_get(req1, "model")),
                            .compat = false,
                            .max_output_tokens = 1024};
        model_request r = {.system = "You are a file assistant.", .messages = msgs, .tools = tools};

        json_t *got = encode(api, &w, &r);
        CHECK_JSON(json_object_get(got, "messages"), json_object_get(req1, "messages"));
        CHECK_JSON(json_object_get(got, "tools"), json_object_get(req1, "tools"));
        CHECK_JSON(json_object_get(got, "model"), json_object_get(req1, "model"));
        if (api == MODEL_API_OPENAI) {
                CHECK_EQ_INT(json_integer_value(json_object_get(got, "max_completion_tokens")), 1024);
                CHECK(json_is_false(json_object_get(got, "store")));
                CHECK(!json_object_get(got, "max_tokens") && !json_object_get(got, "stream"));
        } else {
                CHECK_EQ_INT(json_integer_value(json_object_get(got, "max_tokens")), 1024);
                CHECK_JSON(json_object_get(got, "system"), json_object_get(req1, "system"));
                CHECK(!json_object_get(got, "stream"));
        }
        json_decref(got);

        /* response 1, then request 2 carries the assistant turn as decoded */
        model_response a = {0};
        model_api_error err;
        hull_error e = {0};
        CHECK_EQ_INT(decode(api, resp1, &a, &err, &e), 0);
        CHECK_EQ_INT(a.stop, MODEL_STOP_TOOL_USE);
        CHECK_EQ_STR(a.stop_raw, api == MODEL_API_OPENAI ? "tool_calls" : "tool_use");
        CHECK_EQ_STR(a.model, json_string_value(json_object_get(req1, "model")));
        CHECK(a.usage.known);
        CHECK_EQ_INT(a.usage.input_tokens, api == MODEL_API_OPENAI ? 61 : 412);
        CHECK_EQ_INT(a.usage.output_tokens, api == MODEL_API_OPENAI ? 18 : 55);
        const char *tool_id = api == MODEL_API_OPENAI ? "call_Xk12" : "toolu_01Xy";
        json_array_append(msgs, a.message);
        json_array_append_new(msgs,
                              json_pack("{s:s, s:[{s:s, s:s, s:s, s:b}]}", "role", "user", "content", "type",
                                        "tool_result", "tool_use_id", tool_id, "content", "buy milk", "is_error", 0));
        got = encode(api, &w, &r);
        CHECK_JSON(json_object_get(got, "messages"), json_object_get(req2, "messages"));
        CHECK_JSON(json_object_get(got, "tools"), json_object_get(req2, "tools"));
        json_decref(got);
        model_response_done(&a);

        /* response 2: the final text */
        free(resp1);
        snprintf(name, sizeof(name), "%s-response-2.json", p);
        resp1 = slurp(name, &len);
        CHECK_EQ_INT(decode(api, resp1, &a, &err, &e), 0);
        CHECK_JSON_TEXT(a.message,
                        ("{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"notes.txt says: "
                         "buy milk\"}]}"));
        CHECK_EQ_INT(a.stop, MODEL_STOP_END);
        model_response_done(&a);
        free(resp1);
        json_decref(req1);
        json_decref(req2);
        json_decref(tools);
        json_decref(msgs);
}

static void test_encode_openai(void) {
        json_t *msgs = parse(
                "[{\"role\":\"user\",\"content\":\"hi\"},"
                "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Let me look.\"},"
                "{\"type\":\"opaque\",\"api\":\"anthropic\",\"block\":{\"type\":\"thinking\",\"thinking\":\"hm\"}},"
                "{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"a\",\"input\":{\"x\":1},\"arguments\":\"{ \\\"x\\\" : "
                "1 }\"},"
                "{\"type\":\"tool_use\",\"id\":\"c2\",\"name\":\"b\",\"input\":{\"y\":[true]}}]},"
                "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"c1\",\"content\":\"one\","
                "\"is_error\":false},{\"type\":\"tool_result\",\"tool_use_id\":\"c2\",\"content\":\"boom\",\"is_"
                "error\":"
                "true},{\"type\":\"text\",\"text\":\"and now?\"}]}]");
        model_wire_cfg w = {
                .api = MODEL_API_OPENAI, .model = "m", .compat = true, .stream = true, .max_output_tokens = 9};
        model_request r = {.system = "sys", .messages = msgs};
        json_t *got = encode(MODEL_API_OPENAI, &w, &r);
        json_t *want = parse("[{\"role\":\"system\",\"content\":\"sys\"},{\"role\":\"user\",\"content\":\"hi\"},"
                             "{\"role\":\"assistant\",\"content\":\"Let me look.\",\"tool_calls\":["
                             "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"a\",\"arguments\":\"{ "
                             "\\\"x\\\" : 1 }\"}},"
                             "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"b\",\"arguments\":\"{"
                             "\\\"y\\\":[true]}\"}}]},"
                             "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"one\"},"
                             "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"boom\"},"
                             "{\"role\":\"user\",\"content\":\"and now?\"}]");
        /* compat: "system" and max_tokens; streaming asks for usage; store false; no tools: none sent */
        CHECK_JSON(json_object_get(got, "messages"), want);
        CHECK_EQ_INT(json_integer_value(json_object_get(got, "max_tokens")), 9);
        CHECK(!json_object_get(got, "max_completion_tokens") && !json_object_get(got, "tools"));
        CHECK(json_is_true(json_object_get(got, "stream")) && json_is_false(json_object_get(got, "store")));
        CHECK(json_is_true(json_object_get(json_object_get(got, "stream_options"), "include_usage")));
        CHECK(!json_object_get(got, "reasoning_effort"));
        json_decref(got);
        /* the model object's effort: reasoning_effort, "max" as OpenAI's highest; speed: none here */
        w.effort = "max";
        w.fast = true;
        got = encode(MODEL_API_OPENAI, &w, &r);
        CHECK_EQ_STR(json_string_value(json_object_get(got, "reasoning_effort")), "high");
        CHECK(!json_object_get(got, "speed"));
        w.effort = NULL;
        w.fast = false;
        json_decref(got);
        json_decref(want);
        json_decref(msgs);

        /* an OpenAI opaque block is a content part; a turn with no text and no call has "" */
        msgs = parse("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":"
                     "\"b\"}]},{\"role\":\"assistant\",\"content\":[{\"type\":\"opaque\",\"api\":\"openai\",\"block\":"
                     "{\"type\":\"refusal\",\"refusal\":\"no\"}}]},{\"role\":\"assistant\",\"content\":[]},"
                     "{\"role\":\"user\",\"content\":\"c\"}]");
        r = (model_request){.messages = msgs};
        w.stream = false;
        got = encode(MODEL_API_OPENAI, &w, &r);
        want = parse("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":"
                     "\"b\"}]},{\"role\":\"assistant\",\"content\":[{\"type\":\"refusal\",\"refusal\":\"no\"}]},"
                     "{\"role\":\"assistant\",\"content\":\"\"},{\"role\":\"user\",\"content\":\"c\"}]");
        CHECK_JSON(json_object_get(got, "messages"), want);
        CHECK(!json_object_get(got, "stream") && !json_object_get(got, "stream_options"));
        json_decref(got);
        json_decref(want);
        json_decref(msgs);
}

static void test_encode_anthropic(void) {
        /* the results go first even when the text came first; is_error only when true; empty text
         * dropped; thinking echoed exactly, OpenAI's opaque dropped; an empty assistant turn left out */
        json_t *msgs = parse(
                "[{\"role\":\"user\",\"content\":\"hi\"},"
                "{\"role\":\"assistant\",\"content\":[{\"type\":\"opaque\",\"api\":\"anthropic\",\"block\":{\"type\":"
                "\"thinking\",\"thinking\":\"hm\",\"signature\":\"sig==\"}},{\"type\":\"text\",\"text\":\"\"},"
                "{\"type\":\"opaque\",\"api\":\"openai\",\"block\":{\"type\":\"refusal\",\"refusal\":\"no\"}},"
                "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"a\",\"input\":{\"x\":1},\"arguments\":\"{ "
                "\\\"x\\\":1}\"},"
                "{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"b\",\"input\":{}}]},"
                "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"note\"},{\"type\":\"tool_result\","
                "\"tool_use_id\":\"t1\",\"content\":\"one\",\"is_error\":false},{\"type\":\"tool_result\","
                "\"tool_use_id\":\"t2\",\"content\":\"boom\",\"is_error\":true}]},"
                "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"\"}]},"
                "{\"role\":\"user\",\"content\":\"go on\"}]");
        model_wire_cfg w = {.api = MODEL_API_ANTHROPIC, .model = "m", .stream = true, .max_output_tokens = 7};
        model_request r = {.messages = msgs};
        json_t *got = encode(MODEL_API_ANTHROPIC, &w, &r);
        json_t *want = parse(
                "[{\"role\":\"user\",\"content\":\"hi\"},"
                "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hm\",\"signature\":\"sig=="
                "\"},"
                "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"a\",\"input\":{\"x\":1}},"
                "{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"b\",\"input\":{}}]},"
                "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"one\"},"
                "{\"type\":\"tool_result\",\"tool_use_id\":\"t2\",\"content\":\"boom\",\"is_error\":true},"
                "{\"type\":\"text\",\"text\":\"note\"}]},"
                "{\"role\":\"user\",\"content\":\"go on\"}]");
        CHECK_JSON(json_object_get(got, "messages"), want);
        CHECK(json_is_true(json_object_get(got, "stream")) && !json_object_get(got, "system"));
        CHECK(!json_object_get(got, "store") && !json_object_get(got, "tools"));
        CHECK_EQ_INT(json_integer_value(json_object_get(got, "max_tokens")), 7);
        json_decref(got);
        json_decref(want);
        json_decref(msgs);
}

static void test_encode_errors(void) {
        static const char *const bad[] = {
                "[]",
                "[{\"role\":\"system\",\"content\":\"x\"}]",
                "[{\"role\":\"user\",\"content\":7}]",
                "[{\"role\":\"user\",\"content\":[{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"b\",\"input\":{}}]}]",
                "[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"a\",\"content\":"
                "\"\"}]}]",
                "[{\"role\":\"user\",\"content\":[{\"type\":\"image\"}]}]",
                "[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]",
                "[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"a\"}]}]",
                "[{\"role\":\"user\",\"content\":[{\"type\":\"opaque\",\"api\":\"openai\"}]}]",
        };
        for (model_api api = 0; api < _MODEL_API_MAX; api++)
                for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                        json_t *msgs = parse(bad[i]);
                        model_wire_cfg w = {.api = api, .model = "m", .max_output_tokens = 1};
                        model_request r = {.messages = msgs};
                        char *body = NULL;
                        size_t len;
                        hull_error e = {0};
                        int k = api == MODEL_API_OPENAI ? model_openai_encode(&w, &r, &body, &len, &e)
                                                        : model_anthropic_encode(&w, &r, &body, &len, &e);
                        TEST_RESULT(k == -EINVAL && strncmp(e.msg, "model: ", 7) == 0 && !body,
                                    "%s refused: %s (%d: %s)", model_api_to_string(api), bad[i], k, e.msg);
                        json_decref(msgs);
                }
        json_t *msgs = parse("[{\"role\":\"user\",\"content\":\"x\"}]"), *tools = parse("[{\"description\":\"d\"}]");
        model_wire_cfg w = {.api = MODEL_API_OPENAI, .model = "m", .max_output_tokens = 1};
        model_request r = {.messages = msgs, .tools = tools};
        char *body = NULL;
        size_t len;
        hull_error e = {0};
        CHECK_EQ_INT(model_openai_encode(&w, &r, &body, &len, &e), -EINVAL);
        CHECK(strstr(e.msg, "tools[0]") != NULL);
        json_decref(msgs);
        json_decref(tools);
}

/* ---- answers ---- */

static void check_decoded(model_api api, const char *body, const char *want_content, model_stop stop) {
        model_response a = {0};
        model_api_error err;
        hull_error e = {0};
        int k = decode(api, body, &a, &err, &e);
        json_t *want = parse(want_content);
        TEST_RESULT(k == 0 && json_equal(json_object_get(a.message, "content"), want) && a.stop == stop,
                    "%s decodes %s (%d %s: got %s stop %d, want %s stop %d)", model_api_to_string(api), body, k, e.msg,
                    dump(json_object_get(a.message, "content")), a.stop, dump(want), stop);
        json_decref(want);
        model_response_done(&a);
}

static void test_decode(void) {
        /* OpenAI: finish_reason stop with calls is a tool turn; arguments as an object serialized;
         * invalid arguments are an input_error; "" is {}; no id: one made up; content parts */
        check_decoded(
                MODEL_API_OPENAI,
                "{\"choices\":[{\"message\":{\"content\":\"hi\",\"tool_calls\":[{\"type\":\"function\",\"function\":"
                "{\"name\":\"a\",\"arguments\":{\"k\":\"v\"}}},{\"id\":\"c2\",\"function\":{\"name\":\"b\","
                "\"arguments\":\"{nope\"}},{\"id\":\"c3\",\"function\":{\"name\":\"c\",\"arguments\":\"\"}}]},"
                "\"finish_reason\":\"stop\"}]}",
                "[{\"type\":\"text\",\"text\":\"hi\"},"
                "{\"type\":\"tool_use\",\"id\":\"call_0\",\"name\":\"a\",\"input\":{\"k\":\"v\"},\"arguments\":"
                "\"{\\\"k\\\":\\\"v\\\"}\"},"
                "{\"type\":\"tool_use\",\"id\":\"c2\",\"name\":\"b\",\"input\":{},\"arguments\":\"{nope\","
                "\"input_error\":\"the arguments are not valid JSON (string or '}' expected near 'nope', at byte "
                "5)\"},"
                "{\"type\":\"tool_use\",\"id\":\"c3\",\"name\":\"c\",\"input\":{},\"arguments\":\"\"}]",
                MODEL_STOP_TOOL_USE);
        check_decoded(MODEL_API_OPENAI,
                      "{\"choices\":[{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\","
                      "\"text\":\"b\"}]},\"finish_reason\":\"length\"}]}",
                      "[{\"type\":\"text\",\"text\":\"ab\"}]", MODEL_STOP_MAX_TOKENS);
        check_decoded(
                MODEL_API_OPENAI,
                "{\"choices\":[{\"message\":{\"content\":null,\"refusal\":\"I can't.\"},\"finish_reason\":\"stop\"}]}",
                "[{\"type\":\"opaque\",\"api\":\"openai\",\"block\":{\"type\":\"refusal\",\"refusal\":\"I "
                "can't.\"}}]",
                MODEL_STOP_REFUSAL);
        check_decoded(
                MODEL_API_OPENAI,
                "{\"choices\":[{\"index\":1,\"message\":{\"content\":\"no\"}},{\"index\":0,\"message\":{\"content\":"
                "\"yes\",\"reasoning_content\":\"hmm\"},\"finish_reason\":\"eos\"}],\"timings\":{}}",
                "[{\"type\":\"text\",\"text\":\"yes\"}]", MODEL_STOP_OTHER);
        check_decoded(
                MODEL_API_OPENAI,
                "{\"choices\":[{\"message\":{\"content\":\"x\",\"tool_calls\":[{\"id\":\"c\",\"function\":{"
                "\"name\":\"n\",\"arguments\":\"[1]\"}}]},\"finish_reason\":\"tool_calls\"}]}",
                "[{\"type\":\"text\",\"text\":\"x\"},{\"type\":\"tool_use\",\"id\":\"c\",\"name\":\"n\",\"input\":"
                "{},\"arguments\":\"[1]\",\"input_error\":\"the arguments are an array, not a JSON object\"}]",
                MODEL_STOP_TOOL_USE);
        /* Anthropic: unknown blocks kept opaque; thinking kept; a non-object input is an input_error */
        check_decoded(
                MODEL_API_ANTHROPIC,
                "{\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\",\"signature\":\"s\"},{\"type\":\"text\","
                "\"text\":\"a\",\"citations\":null},{\"type\":\"server_tool_use\",\"id\":\"s1\",\"name\":"
                "\"web_search\",\"input\":{\"q\":1}},{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":"
                "\"x\"}],\"stop_reason\":\"tool_use\",\"usage\":{\"input_tokens\":3,\"output_tokens\":4}}",
                "[{\"type\":\"opaque\",\"api\":\"anthropic\",\"block\":{\"type\":\"thinking\",\"thinking\":\"t\","
                "\"signature\":\"s\"}},{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"opaque\",\"api\":"
                "\"anthropic\",\"block\":{\"type\":\"server_tool_use\",\"id\":\"s1\",\"name\":\"web_search\","
                "\"input\":{\"q\":1}}},{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{},"
                "\"input_error\":\"the input is not a JSON object\"}]",
                MODEL_STOP_TOOL_USE);
        check_decoded(MODEL_API_ANTHROPIC, "{\"content\":[],\"stop_reason\":\"pause_turn\"}", "[]", MODEL_STOP_PAUSE);
        check_decoded(MODEL_API_ANTHROPIC, "{\"content\":[],\"stop_reason\":\"refusal\"}", "[]", MODEL_STOP_REFUSAL);
        check_decoded(MODEL_API_ANTHROPIC, "{\"content\":[],\"stop_reason\":\"model_context_window_exceeded\"}", "[]",
                      MODEL_STOP_MAX_TOKENS);
        check_decoded(MODEL_API_ANTHROPIC, "{\"content\":[],\"stop_reason\":\"something_new\"}", "[]",
                      MODEL_STOP_OTHER);

        /* usage: OpenAI's cached tokens are cache reads, not input */
        model_response a = {0};
        model_api_error err = {0};
        hull_error e = {0};
        CHECK_EQ_INT(decode(MODEL_API_OPENAI,
                            "{\"choices\":[{\"message\":{\"content\":\"x\"}}],\"usage\":{\"prompt_tokens\":100,"
                            "\"completion_tokens\":5,\"prompt_tokens_details\":{\"cached_tokens\":60}}}",
                            &a, &err, &e),
                     0);
        CHECK(a.usage.known && a.usage.input_tokens == 40 && a.usage.cache_read_input_tokens == 60 &&
              a.usage.output_tokens == 5);
        model_response_done(&a);
        CHECK_EQ_INT(decode(MODEL_API_ANTHROPIC,
                            "{\"content\":[],\"usage\":{\"input_tokens\":10,\"output_tokens\":1,"
                            "\"cache_read_input_tokens\":20,\"cache_creation_input_tokens\":null}}",
                            &a, &err, &e),
                     0);
        CHECK(a.usage.known && a.usage.input_tokens == 10 && a.usage.cache_read_input_tokens == 20 &&
              a.usage.cache_creation_input_tokens == 0);
        model_response_done(&a);
        CHECK_EQ_INT(decode(MODEL_API_OPENAI, "{\"choices\":[{\"message\":{\"content\":\"x\"}}]}", &a, &err, &e), 0);
        CHECK(!a.usage.known);
        model_response_done(&a);

        /* errors in the body; not the format */
        CHECK_EQ_INT(
                decode(MODEL_API_OPENAI,
                       "{\"error\":{\"message\":\"bad\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":"
                       "\"context_length_exceeded\"}}",
                       &a, &err, &e),
                -EBADMSG);
        CHECK_EQ_STR(err.code, "context_length_exceeded");
        CHECK_EQ_INT(decode(MODEL_API_ANTHROPIC,
                            "{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model: x\"}}",
                            &a, &err, &e),
                     -EBADMSG);
        CHECK_EQ_STR(err.type, "not_found_error");
        CHECK_EQ_STR(err.message, "model: x");
        CHECK_EQ_INT(decode(MODEL_API_OPENAI, "<html>502 Bad Gateway</html>", &a, &err, &e), -EPROTO);
        CHECK(strstr(e.msg, "not JSON") && strstr(e.msg, "<html>502"));
        CHECK_EQ_INT(decode(MODEL_API_OPENAI, "{\"choices\":[]}", &a, &err, &e), -EPROTO);
        CHECK_EQ_INT(decode(MODEL_API_OPENAI, "{\"id\":\"x\"}", &a, &err, &e), -EPROTO);
        CHECK_EQ_INT(decode(MODEL_API_OPENAI, "[1]", &a, &err, &e), -EPROTO);
        CHECK_EQ_INT(decode(MODEL_API_ANTHROPIC, "{\"content\":\"x\"}", &a, &err, &e), -EPROTO);
        CHECK_EQ_INT(decode(MODEL_API_ANTHROPIC, "", &a, &err, &e), -EPROTO);
}

/* ---- streams ---- */

/* The transcript of §1.7 / §2.7 turns into exactly response 1, whatever the split of its bytes. */
static void test_transcript(model_api api) {
        const char *p = api == MODEL_API_OPENAI ? "openai" : "anthropic";
        char name[64];
        size_t len, rlen;
        snprintf(name, sizeof(name), "%s-stream-1.sse", p);
        char *bytes = slurp(name, &len);
        snprintf(name, sizeof(name), "%s-response-1.json", p);
        char *resp = slurp(name, &rlen);
        model_response want = {0}, got = {0};
        model_api_error err;
        hull_error e = {0};
        handed h;
        CHECK_EQ_INT(decode(api, resp, &want, &err, &e), 0);

        CHECK_EQ_INT(assemble(api, bytes, len, 0, 0, &got, &h, &e), 0);
        CHECK_JSON(got.message, want.message);
        CHECK(got.stop == want.stop && strcmp(got.stop_raw, want.stop_raw) == 0 && strcmp(got.model, want.model) == 0);
        CHECK(got.usage.known && memcmp(&got.usage, &want.usage, sizeof(got.usage)) == 0);
        CHECK_EQ_STR(h.text.buf ? h.text.buf : "", api == MODEL_API_OPENAI ? "" : "I'll read it.");
        CHECK_EQ_STR(h.tools, api == MODEL_API_OPENAI ? "call_Xk12=read_file" : "toolu_01Xy=read_file");
        handed_done(&h);
        model_response_done(&got);

        /* split at every position, and a byte at a time (inside UTF-8, "\r\n" and escapes) */
        unsigned bad = 0;
        for (size_t cut = 1; cut < len; cut++) {
                int k = assemble(api, bytes, len, 0, cut, &got, &h, &e);
                if (k != 0 || !json_equal(got.message, want.message) ||
                    memcmp(&got.usage, &want.usage, sizeof(got.usage)) != 0)
                        bad++;
                if (k == 0)
                        model_response_done(&got);
                handed_done(&h);
        }
        TEST_RESULT(bad == 0, "%s: the transcript split at each of %zu positions (%u differ)", p, len - 1, bad);
        CHECK_EQ_INT(assemble(api, bytes, len, 1, 0, &got, &h, &e), 0);
        CHECK_JSON(got.message, want.message);
        model_response_done(&got);
        handed_done(&h);

        /* cut anywhere before its end marker: truncated (an error, never a short answer) */
        size_t end =
                (size_t) (strstr(bytes, api == MODEL_API_OPENAI ? "data: {\"id\":\"chatcmpl-7Qm2\",\"object\":"
                                                                  "\"chat.completion.chunk\",\"created\":1767225600,"
                                                                  "\"model\":\"gpt-5.4\",\"choices\":[{\"index\":0,"
                                                                  "\"delta\":{},"
                                                                : "event: message_stop") -
                          bytes);
        bad = 0;
        for (size_t at = 0; at < end; at += 7) {
                int k = assemble(api, bytes, at, 0, 0, &got, &h, &e);
                if (k != -EPIPE)
                        bad++;
                if (k == 0)
                        model_response_done(&got);
                handed_done(&h);
        }
        TEST_RESULT(bad == 0, "%s: the transcript cut before its end is truncated (%u were not)", p, bad);
        /* OpenAI: a finish_reason followed by the end is complete even without [DONE] */
        if (api == MODEL_API_OPENAI) {
                const char *done = strstr(bytes, "data: [DONE]");
                CHECK_EQ_INT(assemble(api, bytes, (size_t) (done - bytes), 0, 0, &got, &h, &e), 0);
                CHECK_JSON(got.message, want.message);
                model_response_done(&got);
                handed_done(&h);
        }
        model_response_done(&want);
        free(bytes);
        free(resp);
}

/* An OpenAI stream given as its chunks' JSON, one per line. */
static int openai_chunks(const char *chunks, model_response *ret, handed *h, hull_error *e) {
        dynbuf b;
        dynbuf_init(&b, 1 << 20);
        for (const char *p = chunks; *p;) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t) (nl - p) : strlen(p);
                dynbuf_add_str(&b, "data: ");
                dynbuf_add(&b, p, n);
                dynbuf_add_str(&b, "\n\n");
                p += n + (nl ? 1 : 0);
        }
        int r = assemble(MODEL_API_OPENAI, b.buf, b.len, 0, 0, ret, h, e);
        dynbuf_free(&b);
        return r;
}

static void check_openai_stream(const char *what, const char *chunks, int want_r, const char *want_content,
                                model_stop stop, const char *want_tools) {
        model_response a = {0};
        handed h;
        hull_error e = {0};
        int r = openai_chunks(chunks, &a, &h, &e);
        json_t *want = want_content ? parse(want_content) : NULL;
        TEST_RESULT(r == want_r &&
                            (!want || (json_equal(json_object_get(a.message, "content"), want) && a.stop == stop)) &&
                            (!want_tools || strcmp(h.tools, want_tools) == 0),
                    "openai %s (%d %s: %s stop %d, tools %s)", what, r, e.msg,
                    dump(json_object_get(a.message, "content")), a.stop, h.tools);
        json_decref(want);
        if (r == 0)
                model_response_done(&a);
        handed_done(&h);
}

static void test_openai_quirks(void) {
        /* llama.cpp before #15444: usage on the finish chunk, no separate chunk, no [DONE] */
        model_response a = {0};
        handed h;
        hull_error e = {0};
        CHECK_EQ_INT(openai_chunks("{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"}}],"
                                   "\"timings\":{\"n\":1}}\n"
                                   "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{"
                                   "\"prompt_tokens\":5,\"completion_tokens\":1}}",
                                   &a, &h, &e),
                     0);
        CHECK(a.usage.known && a.usage.input_tokens == 5 && a.usage.output_tokens == 1);
        CHECK_EQ_STR(h.text.buf, "Hi");
        model_response_done(&a);
        handed_done(&h);
        /* vLLM: usage on every chunk: the last one counts; content null, "" or absent */
        CHECK_EQ_INT(
                openai_chunks("{\"choices\":[{\"index\":0,\"delta\":{\"content\":null}}],\"usage\":{"
                              "\"prompt_tokens\":5,\"completion_tokens\":0}}\n"
                              "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"}}],\"usage\":{\"prompt_tokens\":"
                              "5,\"completion_tokens\":1}}\n"
                              "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"A\",\"reasoning_content\":\"r\"}}],"
                              "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2},\"obfuscation\":\"xx\"}\n"
                              "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\",\"stop_reason\":"
                              "null}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n"
                              "{\"choices\":[],\"usage\":null}\n[DONE]",
                              &a, &h, &e),
                0);
        CHECK(a.usage.output_tokens == 3);
        model_response_done(&a);
        handed_done(&h);

        /* no index (Ollama < 0.4.7): each call in one piece with its id */
        check_openai_stream("without index",
                            "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a1\",\"function\":{\"name\":\"x\","
                            "\"arguments\":\"{\\\"n\\\":1}\"}}]}}]}\n"
                            "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a2\",\"function\":{\"name\":\"y\","
                            "\"arguments\":\"{}\"}}]}}]}\n"
                            "{\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n[DONE]",
                            0,
                            "[{\"type\":\"tool_use\",\"id\":\"a1\",\"name\":\"x\",\"input\":{\"n\":1},\"arguments\":"
                            "\"{\\\"n\\\":1}\"},{\"type\":\"tool_use\",\"id\":\"a2\",\"name\":\"y\",\"input\":{},"
                            "\"arguments\":\"{}\"}]",
                            MODEL_STOP_TOOL_USE, "a1=x,a2=y");
        /* index 0 reused with new ids (Ollama), finish_reason stop with calls (gpt-4o, Gemini) */
        check_openai_stream(
                "reused index 0",
                "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":"
                "\"function\",\"function\":{\"name\":\"x\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n"
                "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
                "\"arguments\":\"1}\"}}]}}]}\n"
                "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c2\",\"type\":"
                "\"function\",\"function\":{\"name\":\"y\",\"arguments\":\"{\\\"b\\\":2}\"}}]}}]}\n"
                "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n[DONE]",
                0,
                "[{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"x\",\"input\":{\"a\":1},\"arguments\":"
                "\"{\\\"a\\\":1}\"},{\"type\":\"tool_use\",\"id\":\"c2\",\"name\":\"y\",\"input\":{\"b\":2},"
                "\"arguments\":\"{\\\"b\\\":2}\"}]",
                MODEL_STOP_TOOL_USE, "c1=x,c2=y");
        /* parallel calls by index, interleaved; text after the calls; no type on the first fragment;
         * a name repeated is not concatenated; arguments split inside an escape and a character */
        check_openai_stream(
                "parallel, interleaved",
                "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"p0\","
                "\"function\":{\"name\":\"x\",\"arguments\":\"\"}},{\"index\":1,\"id\":\"p1\",\"function\":"
                "{\"name\":\"y\",\"arguments\":\"{\\\"s\\\":\\\"\\\\\"}}]}}]}\n"
                "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{"
                "\"name\":\"y\",\"arguments\":\"u00e9\\u20ac\\\"}\"}}]}}]}\n"
                "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
                "\"arguments\":\"{}\"}}]}}]}\n"
                "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"}}]}\n"
                "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n[DONE]",
                0,
                "[{\"type\":\"text\",\"text\":\"done\"},{\"type\":\"tool_use\",\"id\":\"p0\",\"name\":\"x\","
                "\"input\":{},\"arguments\":\"{}\"},{\"type\":\"tool_use\",\"id\":\"p1\",\"name\":\"y\","
                "\"input\":{\"s\":\"\\u00e9\\u20ac\"},\"arguments\":\"{\\\"s\\\":\\\"\\\\u00e9\\u20ac\\\"}\"}]",
                MODEL_STOP_TOOL_USE, "p0=x,p1=y");
        /* no id at all: one made up from the completion's id */
        check_openai_stream(
                "without id",
                "{\"id\":\"cmpl-9\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                "\"function\":{\"name\":\"x\",\"arguments\":\"{}\"}}]}}]}\n"
                "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}",
                0,
                "[{\"type\":\"tool_use\",\"id\":\"call_cmpl-9_0\",\"name\":\"x\",\"input\":{},\"arguments\":"
                "\"{}\"}]",
                MODEL_STOP_TOOL_USE, "call_cmpl-9_0=x");
        /* a mid-stream error; a chunk that is not JSON; text only, cut before its finish */
        check_openai_stream("mid-stream error",
                            "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n"
                            "{\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\",\"param\":"
                            "null,\"code\":null}}",
                            -EBADMSG, NULL, MODEL_STOP_END, NULL);
        check_openai_stream("not JSON", "{\"choices\":[]}\nnot json", -EPROTO, NULL, MODEL_STOP_END, NULL);
        check_openai_stream("cut", "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}", -EPIPE, NULL,
                            MODEL_STOP_END, NULL);
        check_openai_stream("the finish chunk's unknown reason",
                            "{\"choices\":[{\"delta\":{},\"finish_reason\":\"eos\"}]}", 0, "[]", MODEL_STOP_OTHER,
                            NULL);
        check_openai_stream("only other choices", "{\"choices\":[{\"index\":1,\"delta\":{\"content\":\"x\"}}]}\n[DONE]",
                            0, "[]", MODEL_STOP_OTHER, NULL);
}

/* An Anthropic stream given as "name|json" lines. */
static int anthropic_events(const char *events, model_response *ret, handed *h, hull_error *e) {
        dynbuf b;
        dynbuf_init(&b, 1 << 20);
        for (const char *p = events; *p;) {
                const char *nl = strchr(p, '\n'), *bar = strchr(p, '|');
                size_t n = nl ? (size_t) (nl - p) : strlen(p);
                dynbuf_add_str(&b, "event: ");
                dynbuf_add(&b, p, (size_t) (bar - p));
                dynbuf_add_str(&b, "\ndata: ");
                dynbuf_add(&b, bar + 1, n - (size_t) (bar + 1 - p));
                dynbuf_add_str(&b, "\n\n");
                p += n + (nl ? 1 : 0);
        }
        int r = assemble(MODEL_API_ANTHROPIC, b.buf, b.len, 0, 0, ret, h, e);
        dynbuf_free(&b);
        return r;
}

static void check_anthropic_stream(const char *what, const char *events, int want_r, const char *want_content,
                                   model_stop stop) {
        model_response a = {0};
        handed h;
        hull_error e = {0};
        int r = anthropic_events(events, &a, &h, &e);
        json_t *want = want_content ? parse(want_content) : NULL;
        TEST_RESULT(r == want_r &&
                            (!want || (json_equal(json_object_get(a.message, "content"), want) && a.stop == stop)),
                    "anthropic %s (%d %s: %s stop %d)", what, r, e.msg, dump(json_object_get(a.message, "content")),
                    a.stop);
        json_decref(want);
        if (r == 0)
                model_response_done(&a);
        handed_done(&h);
}

#define START                                                                                                          \
        "message_start|{\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"content\":[],\"usage\":{\"input_"    \
        "tokens\":9,\"output_tokens\":1}}}\n"
#define STOP "message_stop|{\"type\":\"message_stop\"}"

static void test_anthropic_stream(void) {
        /* thinking with its signature, a server tool, unknown events and deltas, ping anywhere;
         * usage overwritten by message_delta, never added */
        model_response a = {0};
        handed h;
        hull_error e = {0};
        CHECK_EQ_INT(anthropic_events(
                             START
                             "ping|{\"type\": \"ping\"}\n"
                             "content_block_start|{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{"
                             "\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n"
                             "content_block_delta|{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                             "\"thinking_delta\",\"thinking\":\"Let me \"}}\n"
                             "content_block_delta|{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                             "\"thinking_delta\",\"thinking\":\"think.\"}}\n"
                             "content_block_delta|{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                             "\"signature_delta\",\"signature\":\"EqQB==\"}}\n"
                             "content_block_stop|{\"type\":\"content_block_stop\",\"index\":0}\n"
                             "future_event|{\"type\":\"future_event\",\"x\":1}\n"
                             "content_block_start|{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{"
                             "\"type\":\"server_tool_use\",\"id\":\"srv\",\"name\":\"web_search\",\"input\":{}}}\n"
                             "content_block_delta|{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":"
                             "\"input_json_delta\",\"partial_json\":\"{\\\"query\\\": \\\"x\\\"}\"}}\n"
                             "content_block_stop|{\"type\":\"content_block_stop\",\"index\":1}\n"
                             "content_block_start|{\"type\":\"content_block_start\",\"index\":2,\"content_block\":{"
                             "\"type\":\"text\",\"text\":\"\"}}\n"
                             "content_block_delta|{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":"
                             "\"text_delta\",\"text\":\"caf\\u00e9\"}}\n"
                             "content_block_delta|{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":"
                             "\"future_delta\",\"z\":1}}\n"
                             "content_block_stop|{\"type\":\"content_block_stop\",\"index\":2}\n"
                             "message_delta|{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
                             "\"usage\":{\"output_tokens\":20}}\n"
                             "message_delta|{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
                             "\"usage\":{\"output_tokens\":30,\"input_tokens\":11}}\n" STOP,
                             &a, &h, &e),
                     0);
        CHECK_JSON_TEXT(json_object_get(a.message, "content"),
                        ("[{\"type\":\"opaque\",\"api\":\"anthropic\",\"block\":{\"type\":\"thinking\",\"thinking\":"
                         "\"Let me think.\",\"signature\":\"EqQB==\"}},{\"type\":\"opaque\",\"api\":\"anthropic\","
                         "\"block\":{\"type\":\"server_tool_use\",\"id\":\"srv\",\"name\":\"web_search\",\"input\":{"
                         "\"query\":\"x\"}}},{\"type\":\"text\",\"text\":\"caf\\u00e9\"}]"));
        CHECK(a.stop == MODEL_STOP_END && a.usage.output_tokens == 30 && a.usage.input_tokens == 11);
        CHECK_EQ_STR(h.text.buf, "caf\xc3\xa9");
        model_response_done(&a);
        handed_done(&h);

        /* a tool input whose pieces split an escape and a character; "" is {}; max_tokens with a
         * cut input: the call is there, with its input_error */
        check_anthropic_stream(
                "tool input in pieces",
                START "content_block_start|{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
                      "\"tool_use\",\"id\":\"t0\",\"name\":\"a\",\"input\":{}}}\n"
                      "content_block_delta|{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                      "\"input_json_delta\",\"partial_json\":\"{\\\"s\\\": \\\"\\\\\"}}\n"
                      "content_block_delta|{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                      "\"input_json_delta\",\"partial_json\":\"u00e9\\u20ac\\\"}\"}}\n"
                      "content_block_stop|{\"type\":\"content_block_stop\",\"index\":0}\n"
                      "content_block_start|{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":"
                      "\"tool_use\",\"id\":\"t1\",\"name\":\"b\",\"input\":{}}}\n"
                      "content_block_delta|{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":"
                      "\"input_json_delta\",\"partial_json\":\"\"}}\n"
                      "content_block_stop|{\"type\":\"content_block_stop\",\"index\":1}\n"
                      "content_block_start|{\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":"
                      "\"tool_use\",\"id\":\"t2\",\"name\":\"c\",\"input\":{}}}\n"
                      "content_block_delta|{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":"
                      "\"input_json_delta\",\"partial_json\":\"{\\\"q\\\": \\\"unfini\"}}\n"
                      "message_delta|{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{"
                      "\"output_tokens\":5}}\n" STOP,
                0,
                "[{\"type\":\"tool_use\",\"id\":\"t0\",\"name\":\"a\",\"input\":{\"s\":\"\\u00e9\\u20ac\"}},"
                "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"b\",\"input\":{}},"
                "{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"c\",\"input\":{},\"input_error\":\"the arguments are "
                "not valid JSON (premature end of input near '\\\"unfini', at byte 13)\"}]",
                MODEL_STOP_TOOL_USE);
        check_anthropic_stream("an error event",
                               START "ping|{\"type\":\"ping\"}\nerror|{\"type\":\"error\",\"error\":{\"type\":"
                                     "\"overloaded_error\",\"message\":\"Overloaded\"}}",
                               -EBADMSG, NULL, MODEL_STOP_END);
        check_anthropic_stream("without message_stop",
                               START
                               "message_delta|{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
                               "\"usage\":{\"output_tokens\":5}}",
                               -EPIPE, NULL, MODEL_STOP_END);
        check_anthropic_stream("a delta for a block never started",
                               START "content_block_delta|{\"type\":\"content_block_delta\",\"index\":3,\"delta\":{"
                                     "\"type\":\"text_delta\",\"text\":\"x\"}}\n" STOP,
                               -EPROTO, NULL, MODEL_STOP_END);
        check_anthropic_stream("an index out of bounds",
                               START "content_block_start|{\"type\":\"content_block_start\",\"index\":99999,"
                                     "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n" STOP,
                               -EPROTO, NULL, MODEL_STOP_END);
        /* the type from the event's name when the data has none */
        check_anthropic_stream("type from the event name", START "message_stop|{}", 0, "[]", MODEL_STOP_OTHER);
}

/* ---- errors ---- */

static void check_error(const char *body, long status, bool found, const char *type, const char *code,
                        const char *message, model_fail kind) {
        model_api_error x;
        bool f = model_error_parse(body, strlen(body), &x);
        model_fail k = model_error_kind(status, &x);
        TEST_RESULT(f == found && strcmp(x.type, type) == 0 && strcmp(x.code, code) == 0 &&
                            strcmp(x.message, message) == 0 && k == kind,
                    "%ld %s: %d type \"%s\" code \"%s\" message \"%s\" kind %s (want %s)", status, body, f, x.type,
                    x.code, x.message, model_fail_to_string(k), model_fail_to_string(kind));
}

static void test_errors(void) {
        check_error("{\"error\":{\"message\":\"Incorrect API key provided: sk-...\",\"type\":\"invalid_request_error\","
                    "\"param\":null,\"code\":\"invalid_api_key\"}}",
                    401, true, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-...",
                    MODEL_FAIL_AUTH);
        check_error("{\"error\":{\"message\":\"The model `x` does not exist\",\"type\":\"invalid_request_error\","
                    "\"param\":null,\"code\":\"model_not_found\"}}",
                    404, true, "invalid_request_error", "model_not_found", "The model `x` does not exist",
                    MODEL_FAIL_NOT_FOUND);
        check_error("{\"error\":{\"message\":\"This model's maximum context length is 8192 tokens. However, your "
                    "messages resulted in 9000 tokens.\",\"type\":\"invalid_request_error\",\"param\":\"messages\","
                    "\"code\":\"context_length_exceeded\"}}",
                    400, true, "invalid_request_error", "context_length_exceeded",
                    "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 "
                    "tokens.",
                    MODEL_FAIL_CONTEXT);
        /* llama.cpp: a numeric code and its own type */
        check_error("{\"error\":{\"code\":400,\"message\":\"the request exceeds the available context size, try "
                    "increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":1407,\"n_ctx\":256}}",
                    400, true, "exceed_context_size_error", "400",
                    "the request exceeds the available context size, try increasing it", MODEL_FAIL_CONTEXT);
        check_error(
                "{\"error\":{\"code\":500,\"message\":\"Context size has been exceeded.\",\"type\":\"server_error\"}}",
                500, true, "server_error", "500", "Context size has been exceeded.", MODEL_FAIL_CONTEXT);
        /* ... and inside a 200 (a stream answered with JSON) */
        check_error("{\"error\":{\"code\":400,\"message\":\"bad thing\",\"type\":\"invalid_request_error\"}}", 200,
                    true, "invalid_request_error", "400", "bad thing", MODEL_FAIL_BAD_REQUEST);
        check_error(
                "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: "
                "210000 tokens > 200000 maximum\"},\"request_id\":\"req_1\"}",
                400, true, "invalid_request_error", "", "prompt is too long: 210000 tokens > 200000 maximum",
                MODEL_FAIL_CONTEXT);
        check_error("{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"spend\",\"details\":{"
                    "\"error_code\":\"enforced_spend_limit_reached\"}}}",
                    429, true, "rate_limit_error", "enforced_spend_limit_reached", "spend", MODEL_FAIL_BILLING);
        check_error("{\"error\":{\"message\":\"You exceeded your current quota\",\"type\":\"insufficient_quota\","
                    "\"param\":null,\"code\":\"insufficient_quota\"}}",
                    429, true, "insufficient_quota", "insufficient_quota", "You exceeded your current quota",
                    MODEL_FAIL_BILLING);
        check_error("{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\",\"param\":null,\"code\":"
                    "\"rate_limit_exceeded\"}}",
                    429, true, "requests", "rate_limit_exceeded", "Rate limit reached", MODEL_FAIL_RATE_LIMITED);
        check_error("{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}", 529,
                    true, "overloaded_error", "", "Overloaded", MODEL_FAIL_OVERLOADED);
        check_error("{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}", 200,
                    true, "overloaded_error", "", "Overloaded", MODEL_FAIL_OVERLOADED);
        check_error("{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal\"}}", 200, true,
                    "api_error", "", "Internal", MODEL_FAIL_SERVER);
        check_error("{\"error\":{\"message\":\"busy\",\"type\":\"server_error\"}}", 503, true, "server_error", "",
                    "busy", MODEL_FAIL_OVERLOADED);
        check_error("{\"error\":{\"message\":\"oops\",\"type\":\"server_error\"}}", 500, true, "server_error", "",
                    "oops", MODEL_FAIL_SERVER);
        /* vLLM's flat shape; a string error; FastAPI's detail (a string, a list) */
        check_error("{\"object\":\"error\",\"message\":\"Unexpected message role.\",\"type\":\"BadRequestError\","
                    "\"param\":null,\"code\":400}",
                    400, true, "BadRequestError", "400", "Unexpected message role.", MODEL_FAIL_BAD_REQUEST);
        check_error("{\"error\":\"no such model\"}", 404, true, "", "", "no such model", MODEL_FAIL_NOT_FOUND);
        check_error("{\"detail\":\"Not authenticated\"}", 401, true, "", "", "Not authenticated", MODEL_FAIL_AUTH);
        check_error("{\"detail\":[{\"loc\":[\"body\",\"x\"],\"msg\":\"extra_forbidden\"}]}", 422, true, "", "",
                    "[{\"loc\":[\"body\",\"x\"],\"msg\":\"extra_forbidden\"}]", MODEL_FAIL_BAD_REQUEST);
        /* not JSON: the first bytes, one line */
        check_error("<html>\t<h1>502 Bad Gateway</h1></html>", 502, false, "", "",
                    "<html> <h1>502 Bad Gateway</h1></html>", MODEL_FAIL_SERVER);
        check_error("", 500, false, "", "", "an empty body", MODEL_FAIL_SERVER);
        check_error("{\"ok\":true}", 402, false, "", "", "{\"ok\":true}", MODEL_FAIL_BILLING);
        check_error("{\"error\":{\"message\":\"slow\"}}", 408, true, "", "", "slow", MODEL_FAIL_TIMEOUT);

        CHECK(model_fail_retryable(MODEL_FAIL_RATE_LIMITED, 429) && model_fail_retryable(MODEL_FAIL_SERVER, 500));
        CHECK(model_fail_retryable(MODEL_FAIL_TRUNCATED, 200) && model_fail_retryable(MODEL_FAIL_UNREACHABLE, 0));
        CHECK(model_fail_retryable(MODEL_FAIL_SERVER, 409) && model_fail_retryable(MODEL_FAIL_TIMEOUT, 408));
        CHECK(!model_fail_retryable(MODEL_FAIL_AUTH, 401) && !model_fail_retryable(MODEL_FAIL_CONTEXT, 500));
        CHECK(!model_fail_retryable(MODEL_FAIL_BILLING, 429) && !model_fail_retryable(MODEL_FAIL_MALFORMED, 200));

        /* a long message is cut at a character's start, with "..." */
        char big[600];
        memset(big, 'a', sizeof(big));
        memcpy(big + MODEL_ERROR_QUOTE_MAX - 5, "\xe2\x82\xac", 3);
        char body[800];
        snprintf(body, sizeof(body), "{\"error\":{\"message\":\"%.*s\"}}", (int) sizeof(big), big);
        model_api_error x;
        CHECK(model_error_parse(body, strlen(body), &x));
        CHECK_EQ_INT(strlen(x.message), MODEL_ERROR_QUOTE_MAX - 5 + 3); /* the euro sign did not fit whole */
        CHECK(strcmp(x.message + strlen(x.message) - 3, "...") == 0);
}

static void test_retry_after(void) {
        uint64_t ms = 0;
        CHECK(model_retry_after(MODEL_API_OPENAI, "1", NULL, 0, &ms) && ms == 1);
        CHECK(model_retry_after(MODEL_API_OPENAI, "0", NULL, 0, &ms) && ms == 0);
        CHECK(!model_retry_after(MODEL_API_ANTHROPIC, "0", NULL, 0, &ms)); /* Anthropic: 0 is "use the backoff" */
        CHECK(model_retry_after(MODEL_API_ANTHROPIC, "0", "2", 0, &ms) && ms == 2000);
        CHECK(model_retry_after(MODEL_API_OPENAI, "12.5", "30", 0, &ms) && ms == 13);
        CHECK(model_retry_after(MODEL_API_OPENAI, NULL, "1.5", 0, &ms) && ms == 1500);
        CHECK(model_retry_after(MODEL_API_OPENAI, "soon", "3", 0, &ms) && ms == 3000);
        CHECK(!model_retry_after(MODEL_API_OPENAI, NULL, "61", 0, &ms)); /* over a minute: the backoff */
        CHECK(!model_retry_after(MODEL_API_OPENAI, "-5", NULL, 0, &ms));
        CHECK(!model_retry_after(MODEL_API_OPENAI, "inf", NULL, 0, &ms));
        CHECK(!model_retry_after(MODEL_API_OPENAI, "0x10", NULL, 0, &ms));
        CHECK(!model_retry_after(MODEL_API_OPENAI, NULL, NULL, 0, &ms));
        /* an HTTP date, 7 s after now */
        CHECK(model_retry_after(MODEL_API_OPENAI, NULL, "Thu, 01 Jan 2026 00:00:07 GMT", 1767225600, &ms) &&
              ms == 7000);
        CHECK(!model_retry_after(MODEL_API_OPENAI, NULL, "Thu, 01 Jan 2026 00:00:07 GMT", 1767225610, &ms));
        CHECK(!model_retry_after(MODEL_API_OPENAI, NULL, "Thu, 01 Jan 2026 00:00:07 GMT junk", 1767225600, &ms));

        CHECK_EQ_INT(model_backoff_ms(1, 0), 500);
        CHECK_EQ_INT(model_backoff_ms(2, 0), 1000);
        CHECK_EQ_INT(model_backoff_ms(4, 0), 4000);
        CHECK_EQ_INT(model_backoff_ms(5, 0), 8000);
        CHECK_EQ_INT(model_backoff_ms(40, 0), 8000);
        CHECK(model_backoff_ms(1, 0.999) >= 375 && model_backoff_ms(1, 0.999) < 500);
        CHECK_EQ_INT(model_backoff_ms(1, 7), 500); /* a jitter out of [0, 1) is none */
}

static void test_quote(void) {
        char b[16];
        model_quote(b, sizeof(b), "a\nb\tc\x7f", 6);
        CHECK_EQ_STR(b, "a b c ");
        model_quote(b, sizeof(b), "0123456789abcdefghij", 20);
        CHECK_EQ_STR(b, "0123456789ab...");
        model_quote(b, sizeof(b), "0123456789a\xe2\x82\xac-rest", 18);
        CHECK_EQ_STR(b, "0123456789a...");
        model_quote(b, 4, "abcdef", 6);
        CHECK_EQ_STR(b, "abc");
        model_quote(b, sizeof(b), "", 0);
        CHECK_EQ_STR(b, "");
}

int main(void) {
        test_exchange(MODEL_API_OPENAI);
        test_exchange(MODEL_API_ANTHROPIC);
        test_encode_openai();
        test_encode_anthropic();
        test_encode_errors();
        test_decode();
        test_transcript(MODEL_API_OPENAI);
        test_transcript(MODEL_API_ANTHROPIC);
        test_openai_quirks();
        test_anthropic_stream();
        test_errors();
        test_retry_after();
        test_quote();
        return test_done();
}
