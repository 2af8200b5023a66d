/* fuzz-model.h: the body of fuzz-model-openai.c and fuzz-model-anthropic.c (FUZZ_API picks the
 * API). */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model-internal.h"

#define EVENT_MAX 4096U

/* The answer is in the neutral form: an assistant message of known blocks. */
static void check_neutral(const json_t *m) {
        const json_t *content = json_object_get(m, "content"), *b;
        size_t i;
        if (strcmp(json_string_value(json_object_get(m, "role")), "assistant") != 0 || !json_is_array(content))
                abort();
        json_array_foreach(content, i, b) {
                hull_error e = {0};
                if (!model_block_type(b, MODEL_ROLE_ASSISTANT, 0, i, &e))
                        abort();
        }
}

/* It can be sent back, in a conversation, to both APIs. */
static void check_encodes(const json_t *m) {
        json_t *msgs = json_pack("[{s:s, s:s}, O]", "role", "user", "content", "x", m);
        model_request r = {.messages = msgs};
        for (int api = 0; api < _MODEL_API_MAX; api++) {
                model_wire_cfg w = {.api = (model_api) api, .model = "m", .max_output_tokens = 1};
                char *body = NULL;
                size_t len;
                hull_error e = {0};
                int k = api == MODEL_API_OPENAI ? model_openai_encode(&w, &r, &body, &len, &e)
                                                : model_anthropic_encode(&w, &r, &body, &len, &e);
                if (k < 0 && k != -ENOMEM)
                        abort();
                free(body);
        }
        json_decref(msgs);
}

typedef struct run {
        model_stream *ms;
        model_call_opts o;
        dynbuf text;
        unsigned tools;
        hull_error e;
} run;

static int on_text(void *ud, const char *p, size_t n) {
        run *r = ud;
        return dynbuf_add(&r->text, p, n) == -ENOMEM ? -ENOMEM : 0;
}

static int on_tool(void *ud, const char *id, const char *name) {
        run *r = ud;
        if (!id || !name || !id[0])
                abort();
        r->tools++;
        return 0;
}

static int on_event(void *ud, const sse_event *ev) {
        run *r = ud;
        int k = model_stream_event(r->ms, ev, &r->o, &r->e);
        return k < 0 ? k : 0;
}

/* The stream fed in pieces (cuts: sorted offsets); returns its end and the answer's text. */
static char *stream(const uint8_t *data, size_t size, const size_t *cuts, size_t n_cuts, int *ret_end) {
        run r = {0};
        sse_decoder d;
        model_response a = {0};
        size_t at = 0;
        int k = 0;
        char *out = NULL;

        dynbuf_init(&r.text, 1 << 20);
        r.o = (model_call_opts){.on_text = on_text, .on_tool_use = on_tool, .ud = &r};
        if (model_stream_new(FUZZ_API, &r.ms) < 0)
                abort();
        sse_init(&d, EVENT_MAX);
        for (size_t i = 0; i <= n_cuts && k == 0; i++) {
                size_t to = i < n_cuts ? cuts[i] : size;
                k = sse_feed(&d, data + at, to - at, on_event, &r);
                at = to;
        }
        if (k == 0) {
                sse_finish(&d);
                k = model_stream_finish(r.ms, &a, &r.e);
        }
        if (k == 0) {
                const json_t *content = json_object_get(a.message, "content"), *b;
                size_t i, calls = 0;
                dynbuf text;
                dynbuf_init(&text, 1 << 20);
                check_neutral(a.message);
                json_array_foreach(content, i, b) {
                        const char *type = json_string_value(json_object_get(b, "type"));
                        if (strcmp(type, "tool_use") == 0)
                                calls++;
                        if (strcmp(type, "text") == 0)
                                dynbuf_add(&text, json_string_value(json_object_get(b, "text")),
                                           json_string_length(json_object_get(b, "text")));
                }
                /* Every call handed on is in the answer; OpenAI hands on its one text block exactly. */
                if (r.tools > calls ||
                    (FUZZ_API == MODEL_API_OPENAI &&
                     (text.len != r.text.len || (text.len && memcmp(text.buf, r.text.buf, text.len)))))
                        abort();
                if (calls && a.stop != MODEL_STOP_TOOL_USE)
                        abort();
                dynbuf_free(&text);
                out = json_dumps(a.message, JSON_COMPACT | JSON_SORT_KEYS);
                model_response_done(&a);
        }
        *ret_end = k;
        sse_done(&d);
        model_stream_free(r.ms);
        dynbuf_free(&r.text);
        return out ? out : strdup("");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        model_response a = {0};
        model_api_error err;
        hull_error e = {0};
        int k = FUZZ_API == MODEL_API_OPENAI ? model_openai_decode((const char *) data, size, &a, &err, &e)
                                             : model_anthropic_decode((const char *) data, size, &a, &err, &e);
        if (k == 0) {
                check_neutral(a.message);
                check_encodes(a.message);
                model_response_done(&a);
        } else if (k == -EBADMSG)
                (void) model_error_kind(400, &err);
        else if (k != -EPROTO && k != -ENOMEM && k != -E2BIG)
                abort();

        int end, end2;
        char *whole = stream(data, size, NULL, 0, &end);
        size_t step = size <= 512 ? 1 : size / 32;
        for (size_t cut = 1; cut < size; cut += step) {
                char *split = stream(data, size, &cut, 1, &end2);
                if (end2 != end || strcmp(split, whole) != 0)
                        abort();
                free(split);
        }
        if (size <= 16384) {
                size_t *cuts = malloc((size ? size : 1) * sizeof(*cuts));
                if (!cuts)
                        abort();
                for (size_t i = 0; i + 1 < size; i++)
                        cuts[i] = i + 1;
                char *bytes = stream(data, size, cuts, size ? size - 1 : 0, &end2);
                if (end2 != end || strcmp(bytes, whole) != 0)
                        abort();
                free(bytes);
                free(cuts);
        }
        free(whole);
        return 0;
}
