/* agui.c: see agui.h. */
#include "agui.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dynbuf.h"
#include "macro.h"

/* ---- the input ---- */

static int bad(char msg[static V1_ERROR_MSG_MAX], const char *fmt, ...) _printf_(2, 3);
static int bad(char msg[static V1_ERROR_MSG_MAX], const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, V1_ERROR_MSG_MAX, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

/* An id: 1..max-1 bytes, no control characters (chars: the only ones allowed, or NULL). */
static bool id_ok(const json_t *v, size_t max, const char *chars) {
        const char *s = json_string_value(v);
        size_t n = json_is_string(v) ? json_string_length(v) : 0;
        if (!s || n == 0 || n >= max || strlen(s) != n)
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c < 0x20 || c == 0x7f)
                        return false;
                if (chars &&
                    !(('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || strchr(chars, c)))
                        return false;
        }
        return true;
}

static bool opt_string(const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);
        return !v || json_is_string(v);
}

static const char *const roles[] = {"developer", "system", "assistant", "user", "tool", "activity", "reasoning"};

static int check_messages(const json_t *msgs, char msg[static V1_ERROR_MSG_MAX]) {
        if (!json_is_array(msgs))
                return bad(msg, "messages must be an array of AG-UI messages ({id, role, content})");
        if (json_array_size(msgs) > AGUI_MESSAGES_MAX)
                return bad(msg,
                           "messages holds %zu messages, more than %u: hull keeps the thread's history itself, "
                           "send the new message (and fewer before it)",
                           json_array_size(msgs), AGUI_MESSAGES_MAX);
        size_t i;
        const json_t *m;
        json_array_foreach(msgs, i, m) {
                if (!json_is_object(m))
                        return bad(msg, "messages[%zu] must be an object", i);
                if (!json_is_string(json_object_get(m, "id")))
                        return bad(msg, "messages[%zu].id must be a string", i);
                const char *role = json_string_value(json_object_get(m, "role"));
                bool known = false;
                for (size_t k = 0; role && k < ELEMENTSOF(roles); k++)
                        known |= strcmp(role, roles[k]) == 0;
                if (!known)
                        return bad(msg,
                                   "messages[%zu].role must be one of developer, system, assistant, user, tool, "
                                   "activity, reasoning",
                                   i);
        }
        return 0;
}

/* The text of a user message's content: a string, or text parts joined by "\n\n". */
static int user_text(const json_t *m, size_t idx, json_t **ret, char msg[static V1_ERROR_MSG_MAX]) {
        const json_t *c = json_object_get(m, "content");
        if (json_is_string(c)) {
                if (json_string_length(c) == 0)
                        return bad(msg, "messages[%zu].content is empty: send the user's text", idx);
                *ret = json_stringn(json_string_value(c), json_string_length(c));
                return *ret ? 0 : bad(msg, "messages[%zu].content is not UTF-8", idx);
        }
        if (!json_is_array(c) || json_array_size(c) == 0)
                return bad(msg,
                           "messages[%zu].content must be a string or an array of {\"type\":\"text\",\"text\"} parts",
                           idx);
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, V1_TEXT_MAX);
        size_t i;
        const json_t *p;
        json_array_foreach(c, i, p) {
                const char *type = json_string_value(json_object_get(p, "type"));
                const json_t *t = json_object_get(p, "text");
                if (!type || strcmp(type, "text") != 0 || !json_is_string(t))
                        return bad(msg,
                                   "messages[%zu].content[%zu]: hull takes text parts only ({\"type\":\"text\","
                                   "\"text\"}), got type '%.40s'",
                                   idx, i, type ? type : "(none)");
                if ((b.len > 0 && dynbuf_add(&b, "\n\n", 2) < 0) ||
                    dynbuf_add(&b, json_string_value(t), json_string_length(t)) < 0)
                        return bad(msg, "messages[%zu].content is over %u bytes", idx, V1_TEXT_MAX);
        }
        if (b.len == 0)
                return bad(msg, "messages[%zu].content has no text: send the user's text", idx);
        *ret = json_stringn((const char *) b.buf, b.len);
        return *ret ? 0 : bad(msg, "messages[%zu].content is not UTF-8", idx);
}

/* A frontend tool {name, description, parameters?} → a /v1 custom tool appended to out. */
static int frontend_tool(const json_t *v, size_t idx, json_t *out, char msg[static V1_ERROR_MSG_MAX]) {
        const json_t *name = json_object_get(v, "name"), *params = json_object_get(v, "parameters");
        if (!json_is_object(v) || !json_is_string(name) || !json_is_string(json_object_get(v, "description")))
                return bad(msg, "tools[%zu] must be an object with a string name and description", idx);
        if (!id_ok(name, AGUI_TOOL_NAME_MAX + 1, "_-"))
                return bad(msg, "tools[%zu].name '%.64s' is not a tool name hull takes (1 to %u of a-z A-Z 0-9 _ -)",
                           idx, json_string_value(name), AGUI_TOOL_NAME_MAX);
        const json_t *ptype = json_object_get(params, "type");
        if (params && !(json_is_object(params) &&
                        (!ptype || (json_is_string(ptype) && strcmp(json_string_value(ptype), "object") == 0))))
                return bad(msg, "tools[%zu].parameters must be a JSON Schema object with type \"object\"", idx);
        json_t *schema = params ? json_deep_copy(params) : json_object();
        if (schema && !ptype)
                json_object_set_new(schema, "type", json_string("object"));
        json_t *t = schema ? json_pack("{s:s, s:O, s:O, s:o}", "type", "custom", "name", name, "description",
                                       json_object_get(v, "description"), "input_schema", schema)
                           : NULL;
        if (!t || json_array_append_new(out, t) < 0)
                return bad(msg, "out of memory");
        return 0;
}

static const char *role_of(const json_t *m) {
        return json_string_value(json_object_get(m, "role")) ?: "";
}

static bool last_is_tool(const json_t *msgs) {
        size_t n = json_array_size(msgs);
        return n > 0 && strcmp(role_of(json_array_get(msgs, n - 1)), "tool") == 0;
}

/* The trailing role "tool" messages (after the last other message) → user.custom_tool_result. */
static int tool_results(const json_t *msgs, json_t *events, char msg[static V1_ERROR_MSG_MAX]) {
        size_t n = json_array_size(msgs), first = n;
        while (first > 0 && strcmp(role_of(json_array_get(msgs, first - 1)), "tool") == 0)
                first--;
        if (n - first > V1_EVENTS_PER_SEND_MAX)
                return bad(msg, "messages ends with %zu tool results, more than %u", n - first, V1_EVENTS_PER_SEND_MAX);
        for (size_t i = first; i < n; i++) {
                const json_t *m = json_array_get(msgs, i), *call = json_object_get(m, "toolCallId"),
                             *c = json_object_get(m, "content"), *err = json_object_get(m, "error");
                if (!id_ok(call, STORE_ID_MAX, "_-"))
                        return bad(msg,
                                   "messages[%zu].toolCallId must be the id of a tool call of the run before "
                                   "(TOOL_CALL_START's toolCallId)",
                                   i);
                if (!json_is_string(c) || (err && !json_is_string(err)))
                        return bad(msg, "messages[%zu]: a tool message's content (and error) must be strings", i);
                const char *text = json_string_length(c) > 0 ? json_string_value(c) : json_string_value(err);
                json_t *ev =
                        json_pack("{s:s, s:O, s:[{s:s, s:s}]}", "type", "user.custom_tool_result", "custom_tool_use_id",
                                  call, "content", "type", "text", "text", text && text[0] ? text : "(no output)");
                if (ev && err)
                        json_object_set_new(ev, "is_error", json_true());
                if (!ev || json_array_append_new(events, ev) < 0)
                        return bad(msg, "out of memory");
        }
        return 0;
}

/* The context block before the user's text (API.md: "AG-UI context"). */
static int with_context(const json_t *ctx, json_t **text, char msg[static V1_ERROR_MSG_MAX]) {
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, V1_TEXT_MAX);
        static const char head[] = "<agui_context>\n", tail[] = "</agui_context>\n\n";
        int r = dynbuf_add(&b, head, sizeof(head) - 1);
        size_t i;
        const json_t *v;
        json_array_foreach(ctx, i, v) {
                const json_t *d = json_object_get(v, "description"), *val = json_object_get(v, "value");
                if (r >= 0)
                        r = dynbuf_add(&b, "- ", 2);
                if (r >= 0)
                        r = dynbuf_add(&b, json_string_value(d), json_string_length(d));
                if (r >= 0)
                        r = dynbuf_add(&b, ": ", 2);
                if (r >= 0)
                        r = dynbuf_add(&b, json_string_value(val), json_string_length(val));
                if (r >= 0)
                        r = dynbuf_add(&b, "\n", 1);
        }
        if (r >= 0)
                r = dynbuf_add(&b, tail, sizeof(tail) - 1);
        if (r >= 0)
                r = dynbuf_add(&b, json_string_value(*text), json_string_length(*text));
        if (r < 0)
                return bad(msg, "context and the message are over %u bytes together", V1_TEXT_MAX);
        json_t *t = json_stringn((const char *) b.buf, b.len);
        if (!t)
                return bad(msg, "context is not UTF-8");
        json_decref(*text);
        *text = t;
        return 0;
}

int agui_input_parse(const json_t *body, agui_input *ret, char msg[static V1_ERROR_MSG_MAX]) {
        if (!json_is_object(body))
                return bad(msg, "the body must be an AG-UI RunAgentInput object");
        const json_t *thread = json_object_get(body, "threadId"), *run = json_object_get(body, "runId");
        if (!id_ok(thread, STORE_THREAD_ID_MAX, "_.:-"))
                return bad(msg, "threadId must be 1 to %u characters of letters, digits, '_', '.', ':' or '-'",
                           STORE_THREAD_ID_MAX - 1);
        if (!id_ok(run, AGUI_ID_MAX, NULL))
                return bad(msg, "runId must be a string of 1 to %u bytes without control characters", AGUI_ID_MAX - 1);
        if (!opt_string(body, "parentRunId") || !opt_string(body, "protocolVersion"))
                return bad(msg, "parentRunId and protocolVersion must be strings when given");
        const json_t *msgs = json_object_get(body, "messages");
        int r = check_messages(msgs, msg);
        if (r < 0)
                return r;
        const json_t *tools = json_object_get(body, "tools"), *ctx = json_object_get(body, "context");
        size_t i;
        const json_t *v;
        if (tools && !json_is_array(tools))
                return bad(msg, "tools must be an array of {name, description, parameters?}");
        if (json_array_size(tools) > V1_TOOLS_MAX)
                return bad(msg, "tools holds %zu tools, more than %u", json_array_size(tools), V1_TOOLS_MAX);
        json_auto_t *custom = tools ? json_array() : NULL;
        if (tools && !custom)
                return bad(msg, "out of memory");
        json_array_foreach(tools, i, v) {
                if ((r = frontend_tool(v, i, custom, msg)) < 0)
                        return r;
        }
        if (ctx && !json_is_array(ctx))
                return bad(msg, "context must be an array of {description, value}");
        json_array_foreach(ctx, i, v) {
                if (!json_is_object(v) || !json_is_string(json_object_get(v, "description")) ||
                    !json_is_string(json_object_get(v, "value")))
                        return bad(msg, "context[%zu] must be an object with string description and value", i);
        }
        const json_t *fp = json_object_get(body, "forwardedProps");
        const char *agent = NULL, *env = NULL;
        if (json_is_object(fp)) {
                const json_t *a = json_object_get(fp, "agent_id"), *en = json_object_get(fp, "environment_id");
                if (a && !id_ok(a, STORE_ID_MAX, "_-"))
                        return bad(msg, "forwardedProps.agent_id must be an agent's id (GET /v1/agents lists them)");
                if (en && !id_ok(en, STORE_ID_MAX, "_-"))
                        return bad(msg, "forwardedProps.environment_id must be an environment's id (GET "
                                        "/v1/environments lists them)");
                agent = json_string_value(a);
                env = json_string_value(en);
        } else if (json_is_null(fp))
                return bad(msg, "forwardedProps must not be null (leave it out)");

        json_auto_t *events = json_array();
        if (!events)
                return bad(msg, "out of memory");
        const json_t *resume = json_object_get(body, "resume");
        if (resume && !json_is_array(resume))
                return bad(msg, "resume must be an array of {interruptId, status, payload?}");
        if (json_array_size(resume) > V1_EVENTS_PER_SEND_MAX)
                return bad(msg, "resume holds more than %u entries", V1_EVENTS_PER_SEND_MAX);
        json_array_foreach(resume, i, v) {
                const json_t *iid = json_object_get(v, "interruptId");
                const char *status = json_string_value(json_object_get(v, "status"));
                if (!json_is_object(v) || !id_ok(iid, STORE_ID_MAX, "_-") || !status ||
                    (strcmp(status, "resolved") != 0 && strcmp(status, "cancelled") != 0))
                        return bad(msg,
                                   "resume[%zu] must be {interruptId: an interrupt's id from RUN_FINISHED, status: "
                                   "resolved or cancelled, payload?}",
                                   i);
                const json_t *payload = json_object_get(v, "payload");
                json_t *ev;
                if (payload && strcmp(status, "resolved") == 0) { /* a custom tool's result */
                        char *text =
                                json_is_string(payload) ? NULL : json_dumps(payload, JSON_COMPACT | JSON_ENCODE_ANY);
                        ev = json_pack("{s:s, s:O, s:[{s:s, s:s}]}", "type", "user.custom_tool_result",
                                       "custom_tool_use_id", iid, "content", "type", "text", "text",
                                       text ? text : json_string_value(payload));
                        free(text);
                } else
                        ev = json_pack("{s:s, s:O, s:s}", "type", "user.tool_confirmation", "tool_use_id", iid,
                                       "result", strcmp(status, "resolved") == 0 ? "allow" : "deny");
                if (!ev || json_array_append_new(events, ev) < 0)
                        return bad(msg, "out of memory");
        }
        if (json_array_size(events) == 0 || last_is_tool(msgs)) {
                if ((r = tool_results(msgs, events, msg)) < 0)
                        return r;
        }
        if (json_array_size(events) == 0) {
                size_t n = json_array_size(msgs);
                const json_t *last = n ? json_array_get(msgs, n - 1) : NULL;
                if (!last || strcmp(json_string_value(json_object_get(last, "role")), "user") != 0)
                        return bad(msg, "the last of messages must be the user's new message (role \"user\"), or "
                                        "the results of the client's tools (role \"tool\"): hull keeps the thread's "
                                        "history and runs the agent on it");
                json_t *text = NULL;
                if ((r = user_text(last, n - 1, &text, msg)) < 0)
                        return r;
                if (json_array_size(ctx) > 0 && (r = with_context(ctx, &text, msg)) < 0) {
                        json_decref(text);
                        return r;
                }
                json_t *ev = json_pack("{s:s, s:[{s:s, s:o}]}", "type", "user.message", "content", "type", "text",
                                       "text", text);
                if (!ev || json_array_append_new(events, ev) < 0)
                        return bad(msg, "out of memory");
        }
        *ret = (agui_input){.thread_id = json_string_value(thread),
                            .run_id = json_string_value(run),
                            .agent_id = agent,
                            .environment_id = env,
                            .events = TAKE_PTR(events),
                            .tools = TAKE_PTR(custom)};
        return 0;
}

void agui_input_done(agui_input *in) {
        json_decref(TAKE_PTR(in->events));
        json_decref(TAKE_PTR(in->tools));
}

static bool is_custom(const json_t *t) {
        const char *type = json_string_value(json_object_get(t, "type"));
        return type && strcmp(type, "custom") == 0;
}

/* Is a custom tool named name among tools? */
static bool has_custom(const json_t *tools, const char *name) {
        size_t i;
        const json_t *t;
        json_array_foreach(tools, i, t) {
                const char *n = json_string_value(json_object_get(t, "name"));
                if (is_custom(t) && n && strcmp(n, name) == 0)
                        return true;
        }
        return false;
}

int agui_tools_merge(const json_t *session_tools, const json_t *agent_tools, const json_t *frontend, json_t **ret) {
        json_auto_t *out = json_array();
        if (!out)
                return -ENOMEM;
        size_t i;
        const json_t *t;
        json_array_foreach(session_tools, i, t) {
                const char *n = json_string_value(json_object_get(t, "name"));
                if (is_custom(t) && !(n && has_custom(agent_tools, n)))
                        continue; /* an earlier run's frontend tool */
                if (json_array_append(out, (json_t *) t) < 0)
                        return -ENOMEM;
        }
        json_array_foreach(frontend, i, t) {
                if (json_array_append(out, (json_t *) t) < 0)
                        return -ENOMEM;
        }
        bool same = session_tools ? json_equal(out, session_tools) : json_array_size(out) == 0;
        *ret = same ? NULL : TAKE_PTR(out);
        return 0;
}

/* ---- the events ---- */

void agui_run_init(agui_run *r, const char *thread_id, const char *run_id) {
        *r = (agui_run){0};
        snprintf(r->thread_id, sizeof(r->thread_id), "%s", thread_id);
        snprintf(r->run_id, sizeof(r->run_id), "%s", run_id);
}

void agui_run_frontend(agui_run *r, const json_t *tools) {
        size_t i;
        const json_t *t;
        json_array_foreach(tools, i, t) {
                const char *n = json_string_value(json_object_get(t, "name"));
                if (!n)
                        continue;
                if (!r->frontend && !(r->frontend = json_object()))
                        return;
                json_object_set_new(r->frontend, n, json_true());
        }
}

void agui_run_done(agui_run *r) {
        json_decref(TAKE_PTR(r->frontend));
        json_decref(TAKE_PTR(r->fe_calls));
}

static void add(json_t *out, json_t *ev) {
        if (ev)
                json_array_append_new(out, ev);
}

void agui_started(agui_run *r, json_t *out) {
        add(out, json_pack("{s:s, s:s, s:s}", "type", "RUN_STARTED", "threadId", r->thread_id, "runId", r->run_id));
}

static void text_start(agui_run *r, const char *id, json_t *out) {
        snprintf(r->text_id, sizeof(r->text_id), "%s", id);
        snprintf(r->last_text, sizeof(r->last_text), "%s", id);
        r->text_sent = 0;
        add(out, json_pack("{s:s, s:s, s:s}", "type", "TEXT_MESSAGE_START", "messageId", id, "role", "assistant"));
}

static void text_delta(agui_run *r, const char *text, size_t len, json_t *out) {
        if (len == 0)
                return;
        json_t *d = json_stringn(text, len);
        if (!d)
                return;
        r->text_sent += len;
        add(out, json_pack("{s:s, s:s, s:o}", "type", "TEXT_MESSAGE_CONTENT", "messageId", r->text_id, "delta", d));
}

static void text_end(agui_run *r, json_t *out) {
        if (!r->text_id[0])
                return;
        add(out, json_pack("{s:s, s:s}", "type", "TEXT_MESSAGE_END", "messageId", r->text_id));
        r->text_id[0] = '\0';
        r->text_sent = 0;
}

/* The text blocks of a content array, joined (malloc'd; NULL when none or out of memory). */
static char *content_text(const json_t *content, size_t *ret_len) {
        size_t len = 0, i;
        const json_t *b;
        json_array_foreach(content, i, b) {
                const json_t *t = json_object_get(b, "text");
                if (json_is_string(t))
                        len += json_string_length(t);
        }
        char *s = malloc(len + 1);
        if (!s)
                return NULL;
        len = 0;
        json_array_foreach(content, i, b) {
                const json_t *t = json_object_get(b, "text");
                if (json_is_string(t)) {
                        memcpy(s + len, json_string_value(t), json_string_length(t));
                        len += json_string_length(t);
                }
        }
        s[len] = '\0';
        *ret_len = len;
        return s;
}

static const char *str(const json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key)) ?: "";
}

static void finish(agui_run *r, const json_t *idle, json_t *out) {
        text_end(r, out);
        r->ended = true;
        const json_t *stop = json_object_get(idle, "stop_reason");
        const char *why = str(stop, "type");
        if (r->error_type[0] && strcmp(why, "requires_action") != 0) {
                add(out,
                    json_pack("{s:s, s:s, s:s}", "type", "RUN_ERROR", "message", r->error_msg, "code", r->error_type));
                return;
        }
        json_t *fin =
                json_pack("{s:s, s:s, s:s}", "type", "RUN_FINISHED", "threadId", r->thread_id, "runId", r->run_id);
        if (!fin)
                return;
        if (strcmp(why, "requires_action") == 0) {
                json_t *ints = json_array();
                size_t i;
                const json_t *id;
                json_array_foreach(json_object_get(stop, "event_ids"), i,
                                   id) if (json_is_string(id) && !json_object_get(r->fe_calls, json_string_value(id)))
                        json_array_append_new(ints, json_pack("{s:O, s:s, s:O}", "id", id, "reason",
                                                              strcmp(json_string_value(id), r->last_custom) == 0
                                                                      ? "custom_tool_result"
                                                                      : "tool_confirmation",
                                                              "toolCallId", id));
                if (json_array_size(ints) > 0)
                        json_object_set_new(fin, "outcome",
                                            json_pack("{s:s, s:o}", "type", "interrupt", "interrupts", ints));
                else
                        json_decref(ints);
        } else if (r->interrupted)
                json_object_set_new(fin, "outcome", json_pack("{s:s}", "type", "cancelled"));
        if (r->input_tokens > 0 || r->output_tokens > 0)
                json_object_set_new(fin, "usage",
                                    json_pack("[{s:I, s:I, s:I}]", "inputTokens", (json_int_t) r->input_tokens,
                                              "outputTokens", (json_int_t) r->output_tokens, "totalTokens",
                                              (json_int_t) (r->input_tokens + r->output_tokens)));
        add(out, fin);
}

unsigned agui_translate(agui_run *r, const json_t *ev, json_t *out) {
        const char *type = str(ev, "type");
        if (r->ended)
                return AGUI_ENDED;
        if (strcmp(type, "event_start") == 0) { /* a preview of an agent.message */
                const json_t *e = json_object_get(ev, "event");
                const char *id = str(e, "id");
                if (strcmp(str(e, "type"), "agent.message") != 0 || !id[0] || strcmp(id, r->text_id) == 0)
                        return 0;
                text_end(r, out);
                text_start(r, id, out);
        } else if (strcmp(type, "event_delta") == 0) {
                const char *id = str(ev, "event_id");
                const json_t *t = json_object_get(json_object_get(json_object_get(ev, "delta"), "content"), "text");
                if (!id[0] || !json_is_string(t))
                        return 0;
                if (strcmp(id, r->text_id) != 0) {
                        text_end(r, out);
                        text_start(r, id, out);
                }
                text_delta(r, json_string_value(t), json_string_length(t), out);
        } else if (strcmp(type, "agent.message") == 0) {
                const char *id = str(ev, "id");
                size_t len = 0;
                _cleanup_free_ char *text = content_text(json_object_get(ev, "content"), &len);
                if (!id[0] || !text)
                        return 0;
                if (strcmp(id, r->text_id) != 0) {
                        text_end(r, out);
                        text_start(r, id, out);
                }
                /* what the previews did not bring (all of it without previews) */
                if (r->text_sent < len)
                        text_delta(r, text + r->text_sent, len - r->text_sent, out);
                text_end(r, out);
        } else if (strcmp(type, "agent.tool_use") == 0 || strcmp(type, "agent.mcp_tool_use") == 0 ||
                   strcmp(type, "agent.custom_tool_use") == 0) {
                const char *id = str(ev, "id");
                if (!id[0])
                        return 0;
                text_end(r, out);
                if (type[6] == 'c' && json_object_get(r->frontend, str(ev, "name"))) {
                        /* the client's own tool: it runs it and answers in the next run */
                        if (r->fe_calls || (r->fe_calls = json_object()))
                                json_object_set_new(r->fe_calls, id, json_true());
                } else if (type[6] == 'c')
                        snprintf(r->last_custom, sizeof(r->last_custom), "%s", id);
                char name[2 * V1_NAME_MAX + 4];
                if (type[6] == 'm')
                        snprintf(name, sizeof(name), "%s__%s", str(ev, "mcp_server_name"), str(ev, "name"));
                else
                        snprintf(name, sizeof(name), "%s", str(ev, "name"));
                json_t *st =
                        json_pack("{s:s, s:s, s:s}", "type", "TOOL_CALL_START", "toolCallId", id, "toolCallName", name);
                if (st && r->last_text[0])
                        json_object_set_new(st, "parentMessageId", json_string(r->last_text));
                add(out, st);
                const json_t *input = json_object_get(ev, "input");
                char *args = input ? json_dumps(input, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("{}");
                if (args)
                        add(out,
                            json_pack("{s:s, s:s, s:s}", "type", "TOOL_CALL_ARGS", "toolCallId", id, "delta", args));
                free(args);
                add(out, json_pack("{s:s, s:s}", "type", "TOOL_CALL_END", "toolCallId", id));
        } else if (strcmp(type, "agent.tool_result") == 0 || strcmp(type, "agent.mcp_tool_result") == 0) {
                const char *call = str(ev, type[6] == 'm' ? "mcp_tool_use_id" : "tool_use_id");
                const char *id = str(ev, "id");
                size_t len = 0;
                _cleanup_free_ char *text = content_text(json_object_get(ev, "content"), &len);
                if (!call[0] || !id[0] || !text)
                        return 0;
                json_t *c = json_stringn(text, len);
                if (c)
                        add(out, json_pack("{s:s, s:s, s:s, s:o, s:s}", "type", "TOOL_CALL_RESULT", "messageId", id,
                                           "toolCallId", call, "content", c, "role", "tool"));
                return json_array_size(json_object_get(ev, "hull_handles")) > 0 ? AGUI_STATE : 0;
        } else if (strcmp(type, "session.error") == 0) {
                const json_t *err = json_object_get(ev, "error");
                snprintf(r->error_type, sizeof(r->error_type), "%s", str(err, "type")[0] ? str(err, "type") : "error");
                snprintf(r->error_msg, sizeof(r->error_msg), "%s",
                         str(err, "message")[0] ? str(err, "message") : "the session's turn failed");
        } else if (strcmp(type, "session.usage") == 0) {
                const json_t *u = json_object_get(ev, "usage");
                r->input_tokens += json_integer_value(json_object_get(u, "input_tokens"));
                r->output_tokens += json_integer_value(json_object_get(u, "output_tokens"));
        } else if (strcmp(type, "user.interrupt") == 0)
                r->interrupted = true;
        else if (strcmp(type, "session.status_idle") == 0) {
                finish(r, ev, out);
                return AGUI_ENDED;
        } else if (strcmp(type, "session.deleted") == 0) {
                agui_fail(r, "session_deleted", "the thread's session was deleted", out);
                return AGUI_ENDED;
        } else if (strcmp(type, "session.status_terminated") == 0) { /* a fatal error: the thread takes no more runs */
                agui_fail(r, "session_terminated",
                          r->error_msg[0] ? r->error_msg : "the thread's session was terminated", out);
                return AGUI_ENDED;
        }
        return 0;
}

void agui_fail(agui_run *r, const char *code, const char *msg, json_t *out) {
        if (r->ended)
                return;
        text_end(r, out);
        r->ended = true;
        add(out, json_pack("{s:s, s:s, s:s}", "type", "RUN_ERROR", "message", msg, "code", code));
}
