/* v1-shape-event.c: the client events of POST /v1/sessions/{id}/events (and a session's
 * initial_events) checked and copied, and a user.message's text (see v1-shape.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "macro.h"
#include "v1-shape-internal.h"

/* ---- client events ---- */

static const char *const EVENT_TYPES[] = {"user.message",
                                          "user.interrupt",
                                          "user.tool_confirmation",
                                          "user.custom_tool_result",
                                          "user.tool_result",
                                          "system.message",
                                          "user.define_outcome",
                                          NULL};

/* Characters of UTF-8 text (the bytes that start one). */
static size_t utf8_chars(const char *s) {
        size_t n = 0;
        for (; *s; s++)
                n += ((unsigned char) *s & 0xC0) != 0x80;
        return n;
}

/* user.define_outcome: {description, rubric: {type: text, content} | {type: file, file_id},
 * max_iterations? (1..V1_OUTCOME_ITERATIONS_MAX, null or absent: the default)}. A file rubric is
 * read when the event is sent (v1-outcome.c). */
static int parse_outcome(const json_t *ev, const char *path, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"type", "description", "rubric", "max_iterations", NULL};
        static const char *const tkeys[] = {"type", "content", NULL};
        static const char *const fkeys[] = {"type", "file_id", NULL};
        static const char *const rtypes[] = {"text", "file", NULL};
        const char *desc, *rtype, *val;
        v1_path rp;
        v1_path_key(rp, path, "rubric");
        const json_t *rub = json_object_get(ev, "rubric"), *mi = json_object_get(ev, "max_iterations");
        int r;
        if ((r = v1_check_object(ev, path, keys, e)) < 0 ||
            (r = v1_get_str(ev, "description", path, V1_TEXT_MAX, F_REQUIRED | F_NONEMPTY, &desc, e)) < 0)
                return r;
        if (!rub)
                return v1_fail(e, 400, NULL,
                               "%s: required: what the answer must satisfy, {\"type\":\"text\",\"content\":\"...\"} "
                               "or {\"type\":\"file\",\"file_id\":\"file_...\"}",
                               rp);
        if ((r = v1_want(rub, JSON_OBJECT, rp, "an object", e)) < 0 ||
            (r = v1_get_enum(rub, "type", rp, rtypes, NULL, &rtype, e)) < 0)
                return r;
        bool text = eq(rtype, "text");
        if ((r = v1_check_object(rub, rp, text ? tkeys : fkeys, e)) < 0 ||
            (r = v1_get_str(rub, text ? "content" : "file_id", rp, text ? 4 * V1_RUBRIC_MAX : V1_NAME_MAX,
                            F_REQUIRED | F_NONEMPTY, &val, e)) < 0)
                return r;
        if (text && utf8_chars(val) > V1_RUBRIC_MAX)
                return v1_fail(e, 400, NULL, "%s.content: %zu characters, at most %u", rp, utf8_chars(val),
                               V1_RUBRIC_MAX);
        json_int_t iters = V1_OUTCOME_ITERATIONS_DEFAULT;
        if (mi && !json_is_null(mi)) {
                if (!json_is_integer(mi) || json_integer_value(mi) < 1 ||
                    json_integer_value(mi) > V1_OUTCOME_ITERATIONS_MAX)
                        return v1_fail(e, 400, NULL,
                                       "%s.max_iterations: must be a whole number from 1 to %u (or null: %u)", path,
                                       V1_OUTCOME_ITERATIONS_MAX, V1_OUTCOME_ITERATIONS_DEFAULT);
                iters = json_integer_value(mi);
        }
        *ret = json_pack("{s:s, s:s, s:{s:s, s:s}, s:I}", "type", "user.define_outcome", "description", desc, "rubric",
                         "type", rtype, text ? "content" : "file_id", val, "max_iterations", iters);
        return *ret ? 0 : -ENOMEM;
}

/* One content block: text (checked and copied), image, document, search_result (when allowed)
 * and redacted, kept as given once their shape is plausible. */
static int parse_block(const json_t *b, const char *path, const char *const *types, json_t **ret, v1_err *e) {
        static const char *const tkeys[] = {"type", "text", NULL};
        static const char *const rkeys[] = {"type", NULL};
        static const char *const image_src[] = {"base64", "url", "file", NULL};
        static const char *const doc_src[] = {"base64", "text", "url", "file", NULL};
        const char *type, *text;
        int r = v1_want(b, JSON_OBJECT, path, "a content block object", e);
        if (r < 0 || (r = v1_get_enum(b, "type", path, types, NULL, &type, e)) < 0)
                return r;
        if (eq(type, "text")) {
                if ((r = v1_check_object(b, path, tkeys, e)) < 0 ||
                    (r = v1_get_str(b, "text", path, V1_TEXT_MAX, F_REQUIRED, &text, e)) < 0)
                        return r;
                *ret = json_pack("{s:s, s:s}", "type", "text", "text", text);
                return *ret ? 0 : -ENOMEM;
        }
        if (eq(type, "redacted")) {
                if ((r = v1_check_object(b, path, rkeys, e)) < 0)
                        return r;
        } else if (eq(type, "image") || eq(type, "document")) {
                v1_path p;
                const char *st;
                v1_path_key(p, path, "source");
                const json_t *src = json_object_get(b, "source");
                if ((r = v1_want(src, JSON_OBJECT, p, "an object", e)) < 0 ||
                    (r = v1_get_enum(src, "type", p, eq(type, "image") ? image_src : doc_src, NULL, &st, e)) < 0)
                        return r;
        }
        *ret = json_deep_copy(b);
        return *ret ? 0 : -ENOMEM;
}

static int parse_content(const json_t *ev, const char *path, bool required, const char *const *types, json_t **ret,
                         v1_err *e) {
        v1_path p;
        v1_path_key(p, path, "content");
        const json_t *c = json_object_get(ev, "content");
        *ret = NULL;
        if (!c && !required)
                return 0;
        int r = v1_want(c, JSON_ARRAY, p, "an array of content blocks", e);
        if (r < 0)
                return r;
        if (required && json_array_size(c) == 0)
                return v1_fail(e, 400, NULL, "%s: must not be empty (at least one block, e.g. {\"type\":\"text\",...})",
                               p);
        if (json_array_size(c) > V1_CONTENT_BLOCKS_MAX)
                return v1_fail(e, 400, NULL, "%s: %zu blocks, at most %u", p, json_array_size(c),
                               V1_CONTENT_BLOCKS_MAX);
        json_auto_t *out = json_array();
        if (!out)
                return -ENOMEM;
        size_t i;
        json_t *b;
        json_array_foreach(c, i, b) {
                v1_path bp;
                json_t *nb;
                v1_path_idx(bp, p, i);
                if ((r = parse_block(b, bp, types, &nb, e)) < 0)
                        return r;
                if (json_array_append_new(out, nb) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

static int parse_event(const json_t *ev, const char *path, json_t **ret, v1_err *e) {
        static const char *const mkeys[] = {"type", "content", NULL};
        static const char *const ikeys[] = {"type", "session_thread_id", NULL};
        static const char *const ckeys[] = {"type", "tool_use_id", "result", "deny_message", NULL};
        static const char *const rkeys[] = {"type", "custom_tool_use_id", "content", "is_error", NULL};
        static const char *const tkeys[] = {"type", "tool_use_id", "content", "is_error", NULL};
        static const char *const msg_blocks[] = {"text", "image", "document", "redacted", NULL};
        static const char *const res_blocks[] = {"text", "image", "document", "search_result", NULL};
        static const char *const sys_blocks[] = {"text", NULL};
        static const char *const results[] = {"allow", "deny", NULL};
        const char *type;
        int r = v1_want(ev, JSON_OBJECT, path, "an event object", e);
        if (r < 0)
                return r;
        r = v1_get_str(ev, "type", path, V1_NAME_MAX, F_REQUIRED, &type, e);
        if (r < 0)
                return r;
        if (eq(type, "user.define_outcome"))
                return parse_outcome(ev, path, ret, e);
        if (!v1_in_list(type, EVENT_TYPES)) {
                char list[256];
                return v1_fail(e, 400, NULL, "%s.type: unknown event type '%.64s' (one of %s)", path, type,
                               v1_join(EVENT_TYPES, list, sizeof(list)));
        }
        json_auto_t *out = json_pack("{s:s}", "type", type);
        json_t *content = NULL;
        if (!out)
                return -ENOMEM;
        if (eq(type, "user.message") || eq(type, "system.message")) {
                if ((r = v1_check_object(ev, path, mkeys, e)) < 0 ||
                    (r = parse_content(ev, path, true, eq(type, "user.message") ? msg_blocks : sys_blocks, &content,
                                       e)) < 0)
                        return r;
                if (json_object_set_new(out, "content", content) < 0)
                        return -ENOMEM;
        } else if (eq(type, "user.interrupt")) {
                const char *tid;
                if ((r = v1_check_object(ev, path, ikeys, e)) < 0 ||
                    (r = v1_get_str(ev, "session_thread_id", path, V1_NAME_MAX, F_NULLABLE, &tid, e)) < 0)
                        return r;
                if (tid && json_object_set_new(out, "session_thread_id", json_string(tid)) < 0)
                        return -ENOMEM;
        } else if (eq(type, "user.tool_confirmation")) {
                const char *id, *res, *dm;
                if ((r = v1_check_object(ev, path, ckeys, e)) < 0 ||
                    (r = v1_get_str(ev, "tool_use_id", path, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &id, e)) < 0 ||
                    (r = v1_get_enum(ev, "result", path, results, NULL, &res, e)) < 0 ||
                    (r = v1_get_str(ev, "deny_message", path, V1_TEXT_MAX, F_NULLABLE, &dm, e)) < 0)
                        return r;
                if (dm && !eq(res, "deny"))
                        return v1_fail(e, 400, NULL, "%s.deny_message: only with \"result\":\"deny\"", path);
                if (json_object_set_new(out, "tool_use_id", json_string(id)) < 0 ||
                    json_object_set_new(out, "result", json_string(res)) < 0 ||
                    (dm && json_object_set_new(out, "deny_message", json_string(dm)) < 0))
                        return -ENOMEM;
        } else if (eq(type, "user.custom_tool_result") || eq(type, "user.tool_result")) {
                const char *id, *key = eq(type, "user.tool_result") ? "tool_use_id" : "custom_tool_use_id";
                int is_error;
                if ((r = v1_check_object(ev, path, key[0] == 't' ? tkeys : rkeys, e)) < 0 ||
                    (r = v1_get_str(ev, key, path, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &id, e)) < 0 ||
                    (r = v1_get_bool(ev, "is_error", path, &is_error, e)) < 0 ||
                    (r = parse_content(ev, path, false, res_blocks, &content, e)) < 0)
                        return r;
                if (json_object_set_new(out, key, json_string(id)) < 0 ||
                    (content && json_object_set_new(out, "content", content) < 0) ||
                    (is_error >= 0 && json_object_set_new(out, "is_error", json_boolean(is_error)) < 0))
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/* An array of events (path names it) checked; only_messages for initial_events. */
int v1_events_parse_array(const json_t *v, const char *path, bool only_messages, json_t **ret, v1_err *e) {
        int r = v1_want(v, JSON_ARRAY, path, "an array of events", e);
        if (r < 0)
                return r;
        size_t n = json_array_size(v);
        if ((!only_messages && n == 0) || n > V1_EVENTS_PER_SEND_MAX)
                return v1_fail(e, 400, NULL, "%s: %zu events, %s %u", path, n, n ? "at most" : "at least 1 and at most",
                               V1_EVENTS_PER_SEND_MAX);
        json_auto_t *out = json_array();
        if (!out)
                return -ENOMEM;
        size_t i;
        json_t *ev;
        json_array_foreach(v, i, ev) {
                v1_path p;
                json_t *one = NULL;
                v1_path_idx(p, path, i);
                if ((r = parse_event(ev, p, &one, e)) < 0)
                        return r;
                const char *type = json_string_value(json_object_get(one, "type"));
                if (json_array_append_new(out, one) < 0)
                        return -ENOMEM;
                if (only_messages && !eq(type, "user.message") && !eq(type, "user.define_outcome"))
                        return v1_fail(
                                e, 400, NULL,
                                "%s.type: only user.message and user.define_outcome events can be initial events", p);
                if (eq(type, "system.message")) {
                        const char *prev =
                                i ? json_string_value(json_object_get(json_array_get(v, i - 1), "type")) : NULL;
                        if (i + 1 != n)
                                return v1_fail(e, 400, NULL, "%s: a system.message must be the last event of the batch",
                                               p);
                        if (!eq(prev, "user.message") && !eq(prev, "user.custom_tool_result") &&
                            !eq(prev, "user.tool_result"))
                                return v1_fail(e, 400, NULL,
                                               "%s: a system.message must directly follow the user.message, "
                                               "user.tool_result or user.custom_tool_result it goes with",
                                               p);
                }
        }
        *ret = TAKE_PTR(out);
        return 0;
}

int v1_events_parse(const json_t *body, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"events", NULL};
        int r = v1_check_object(body, "", keys, e);
        if (r < 0)
                return r;
        const json_t *ev = json_object_get(body, "events");
        if (!ev)
                return v1_fail(e, 400, NULL, "events: required (an array of 1 to %u events)", V1_EVENTS_PER_SEND_MAX);
        return v1_events_parse_array(ev, "events", false, ret, e);
}

char *v1_user_message_text(const json_t *event) {
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, V1_BODY_MAX);
        size_t i;
        json_t *blk;
        json_array_foreach(json_object_get(event, "content"), i, blk) {
                const char *type = json_string_value(json_object_get(blk, "type"));
                const json_t *src = json_object_get(blk, "source");
                const char *st = json_string_value(json_object_get(src, "type"));
                int r;
                if (b.len > 0 && dynbuf_add_str(&b, "\n\n") < 0)
                        return NULL;
                if (eq(type, "text"))
                        r = dynbuf_add_str(&b, json_string_value(json_object_get(blk, "text")) ?: "");
                else if (eq(type, "image") || eq(type, "document")) {
                        const char *where = eq(st, "url")    ? json_string_value(json_object_get(src, "url"))
                                            : eq(st, "file") ? json_string_value(json_object_get(src, "file_id"))
                                                             : NULL;
                        const char *title = json_string_value(json_object_get(blk, "title"));
                        r = dynbuf_addf(&b, "[%s%s%s (%s)%s%.200s]", type, title ? ": " : "", title ? title : "",
                                        st ? st : "unknown source", where ? " " : "", where ? where : "");
                } else
                        r = dynbuf_addf(&b, "[%s block]", type ? type : "unknown");
                if (r < 0)
                        return NULL;
        }
        return dynbuf_take(&b, NULL);
}
