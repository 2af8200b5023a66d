/* test-model-cache.c: a request's body put together from its messages' wire JSON kept from the
 * requests before (model-cache.c) is byte for byte the body encoded as one tree (no cache), for
 * both APIs, every option, conversations of every block kind growing one message at a time,
 * changed in place at their end and before it; and a request encodes only what is new: the count
 * of messages encoded per request stays the same however long the conversation grows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model-internal.h"
#include "test.h"

/* Every kind of block: text (plain, empty, unicode and escapes), tool_use with input or only
 * arguments, tool_result (text, error, an array content with an image), opaque blocks of both
 * APIs, an assistant turn with nothing Anthropic sends, a string content. */
static const char CONVERSATION[] =
        "[{\"role\":\"user\",\"content\":\"hi \\u00e9\\u4e16 \\\"q\\\" \\\\ \\n\"},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"opaque\",\"api\":\"anthropic\",\"block\":{\"type\":"
        "\"thinking\",\"thinking\":\"hm\",\"signature\":\"sig==\"}},{\"type\":\"text\",\"text\":\"\"},"
        "{\"type\":\"opaque\",\"api\":\"openai\",\"block\":{\"type\":\"refusal\",\"refusal\":\"no\"}},"
        "{\"type\":\"text\",\"text\":\"Let me look.\"},"
        "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"a\",\"input\":{\"x\":1,\"y\":[1.5,null,\"s\"]}},"
        "{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"b\",\"input\":{},\"arguments\":\"{ }\"}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"note\"},{\"type\":\"tool_result\","
        "\"tool_use_id\":\"t1\",\"content\":\"one\",\"is_error\":false},{\"type\":\"tool_result\","
        "\"tool_use_id\":\"t2\",\"content\":[{\"type\":\"text\",\"text\":\"see\"},{\"type\":\"image\",\"source\":"
        "{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"iVBORw0KGgo=\"}}],\"is_error\":true}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"\"}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"go on\"}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t3\",\"name\":\"glob\",\"input\":"
        "{\"pattern\":\"*\"}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t3\",\"content\":\"a\\nb\"}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]},"
        "{\"role\":\"user\",\"content\":\"again\"}]";

static const char TOOLS[] = "[{\"name\":\"glob\",\"description\":\"find files\",\"input_schema\":{\"type\":\"object\","
                            "\"properties\":{\"pattern\":{\"type\":\"string\"}}}},{\"name\":\"bare\"}]";

static int encode(const model_wire_cfg *w, const model_request *r, char **ret, size_t *ret_len, hull_error *e) {
        return w->api == MODEL_API_OPENAI ? model_openai_encode(w, r, ret, ret_len, e)
                                          : model_anthropic_encode(w, r, ret, ret_len, e);
}

/* The body with r's cache and without: the same bytes. */
static void check_same(const model_wire_cfg *w, const model_request *r, const char *what) {
        model_request plain = *r;
        char *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;
        hull_error e = {0};

        plain.cache = NULL;
        /* the estimate from the sizes kept, before and after the request is made */
        CHECK_EQ_INT(model_estimate_tokens(r), model_estimate_tokens(&plain));
        int ka = encode(w, &plain, &a, &la, &e), kb = encode(w, r, &b, &lb, &e);
        CHECK_EQ_INT(model_estimate_tokens(r), model_estimate_tokens(&plain));
        TEST_RESULT(ka == 0 && kb == 0 && la == lb && strlen(b) == lb && memcmp(a, b, la) == 0,
                    "%s (api %d, %zu messages): cached == uncached (got %s, want %s)", what, (int) w->api,
                    json_array_size(r->messages), b ? b : "(null)", a ? a : "(null)");
        free(a);
        free(b);
}

/* The conversation grown one message at a time through one cache, under one configuration. */
static void check_growth(const model_wire_cfg *w, const char *system, const json_t *tools) {
        json_t *all = json_loads(CONVERSATION, 0, NULL), *msgs = json_array();
        model_wire_cache *c = NULL;
        size_t n = json_array_size(all);
        uint64_t most = 0;

        CHECK(all && msgs && model_wire_cache_new(&c) == 0);
        for (size_t i = 0; i < n; i++) {
                json_array_append(msgs, json_array_get(all, i));
                model_request r = {.system = system, .messages = msgs, .tools = tools, .cache = c};
                uint64_t before = model_wire_cache_encoded(c);
                check_same(w, &r, "growing");
                /* what is new: the message added and the one last before it (kept once followed) */
                most = MAX(most, model_wire_cache_encoded(c) - before);
        }
        CHECK_EQ_INT(most, 2);
        model_wire_cache_free(c);
        json_decref(msgs);
        json_decref(all);
}

static void test_same_bytes(void) {
        json_t *tools = json_loads(TOOLS, 0, NULL);
        for (int api = MODEL_API_OPENAI; api <= MODEL_API_ANTHROPIC; api++)
                for (unsigned opt = 0; opt < 16; opt++) {
                        model_wire_cfg w = {.api = (model_api) api,
                                            .model = "m\\\"odel",
                                            .compat = opt & 1,
                                            .stream = opt & 2,
                                            .max_output_tokens = 77,
                                            .effort = opt & 4 ? "max" : NULL,
                                            .fast = opt & 4,
                                            .cache = opt & 8};
                        check_growth(&w, NULL, NULL);
                        check_growth(&w, "sys \"prompt\"\n\u00e9", tools);
                }
        json_decref(tools);
}

/* The conversation changed in place: at its end (the user's text after results, an answer
 * continued), before it (a tool result shortened, then forgotten), a message replaced, a cache
 * moved from one API to the other. */
static void test_changes(void) {
        json_t *msgs = json_loads(CONVERSATION, 0, NULL), *tools = json_loads(TOOLS, 0, NULL);
        model_wire_cache *c = NULL;
        model_wire_cfg w = {.api = MODEL_API_ANTHROPIC, .model = "m", .max_output_tokens = 7, .cache = true};
        model_request r = {.system = "sys", .messages = msgs, .tools = tools};
        size_t n = json_array_size(msgs);

        CHECK(model_wire_cache_new(&c) == 0);
        r.cache = c;
        check_same(&w, &r, "first");
        CHECK_EQ_INT(model_wire_cache_encoded(c), n);
        check_same(&w, &r, "again");
        CHECK_EQ_INT(model_wire_cache_encoded(c), n + 1); /* only the last */

        /* the last message grows in place */
        json_t *last = json_array_get(msgs, n - 1);
        json_object_set_new(last, "content", json_pack("[{s:s, s:s}]", "type", "text", "text", "again"));
        json_array_append_new(json_object_get(last, "content"), json_pack("{s:s, s:s}", "type", "text", "text", "+"));
        check_same(&w, &r, "last extended");

        /* a block added to an earlier message: its block count tells */
        json_array_append_new(json_object_get(json_array_get(msgs, 4), "content"),
                              json_pack("{s:s, s:s}", "type", "text", "text", "added"));
        uint64_t before = model_wire_cache_encoded(c);
        check_same(&w, &r, "earlier extended");
        CHECK_EQ_INT(model_wire_cache_encoded(c) - before, n - 4);

        /* a block of an earlier message changed in place, as the context's fit does: forgotten */
        json_t *result = json_array_get(json_object_get(json_array_get(msgs, 6), "content"), 0);
        json_object_set_new(result, "content", json_string("short"));
        model_wire_cache_forget(c);
        before = model_wire_cache_encoded(c);
        check_same(&w, &r, "forgotten");
        CHECK_EQ_INT(model_wire_cache_encoded(c) - before, n);

        /* a message replaced by another object */
        json_array_set_new(msgs, 2, json_pack("{s:s, s:s}", "role", "user", "content", "replaced"));
        before = model_wire_cache_encoded(c);
        check_same(&w, &r, "replaced");
        CHECK_EQ_INT(model_wire_cache_encoded(c) - before, n - 2);

        /* the conversation cut short (a new array, as a restart reads it) */
        json_t *cut = json_array();
        for (size_t i = 0; i < 3; i++)
                json_array_append(cut, json_array_get(msgs, i));
        r.messages = cut;
        check_same(&w, &r, "cut");
        r.messages = msgs;

        /* the other API: nothing of the first reused */
        w.api = MODEL_API_OPENAI;
        before = model_wire_cache_encoded(c);
        check_same(&w, &r, "openai");
        CHECK_EQ_INT(model_wire_cache_encoded(c) - before, n);

        /* a malformed later message: the same error, and the cache still right after */
        json_array_append_new(msgs, json_pack("{s:s, s:[{s:s}]}", "role", "assistant", "content", "type", "bogus"));
        char *body = NULL;
        size_t len = 0;
        hull_error e = {0};
        CHECK_EQ_INT(encode(&w, &r, &body, &len, &e), -EINVAL);
        CHECK(body == NULL && strstr(e.msg, "messages[") != NULL);
        json_array_remove(msgs, json_array_size(msgs) - 1);
        check_same(&w, &r, "after an error");

        json_decref(cut);
        model_wire_cache_free(c);
        model_wire_cache_free(NULL);
        json_decref(tools);
        json_decref(msgs);
}

/* The conversation's own text (what the store keeps) from kept messages' text: json_dumps's
 * bytes, as it grows and changes; each time only the new messages dumped. */
static void test_text(void) {
        json_t *all = json_loads(CONVERSATION, 0, NULL), *msgs = json_array();
        model_wire_cache *c = NULL;
        uint64_t most = 0;

        CHECK(model_wire_cache_new(&c) == 0);
        for (size_t round = 0; round < 3; round++)
                for (size_t i = 0; i < json_array_size(all); i++) {
                        json_array_append(msgs, json_array_get(all, i));
                        if (round == 1 && i == 3) /* changed in place before the end, then forgotten */
                                json_object_set_new(json_array_get(msgs, 1), "content", json_string("new"));
                        if (round == 1 && i == 3)
                                model_wire_cache_forget(c);
                        char *got = NULL, *want = json_dumps(msgs, JSON_COMPACT);
                        size_t len = 0;
                        uint64_t before = model_wire_cache_encoded(c);
                        CHECK_EQ_INT(model_conversation_text(c, msgs, &got, &len), 0);
                        TEST_RESULT(got && want && len == strlen(want) && strcmp(got, want) == 0,
                                    "text of %zu messages == json_dumps (got %s, want %s)", json_array_size(msgs),
                                    got ? got : "(null)", want);
                        if (!(round == 1 && i == 3))
                                most = MAX(most, model_wire_cache_encoded(c) - before);
                        free(got);
                        free(want);
                }
        CHECK_EQ_INT(most, 2); /* however long it grew: 27 messages */
        /* a cache that made a request's body starts again for the text */
        model_request r = {.messages = msgs, .cache = c};
        model_wire_cfg w = {.api = MODEL_API_ANTHROPIC, .model = "m", .max_output_tokens = 7};
        check_same(&w, &r, "after the text");
        model_wire_cache_free(c);
        json_decref(msgs);
        json_decref(all);
}

int main(void) {
        test_same_bytes();
        test_changes();
        test_text();
        return test_done();
}
