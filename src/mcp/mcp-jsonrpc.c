/* mcp-jsonrpc.c: JSON-RPC 2.0 framing, parsing and building for MCP (see mcp-jsonrpc.h). */
#include "mcp-jsonrpc.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "limits.h"

void mcp_framer_init(mcp_framer *f, size_t max) {
        *f = (mcp_framer){.max = max};
        /* One byte more: a line of max bytes may wait for its "\n" behind a "\r". */
        dynbuf_init(&f->line, max < SIZE_MAX ? max + 1 : max);
}

void mcp_framer_done(mcp_framer *f) {
        dynbuf_free(&f->line);
}

static int framer_deliver(mcp_framer *f, mcp_line_handler h, void *ud) {
        size_t len = f->line.len;
        if (len > 0 && f->line.buf[len - 1] == '\r')
                len--;
        if (len > f->max)
                return -E2BIG;
        int r = 0;
        if (len > 0) {
                f->line.buf[len] = '\0';
                f->count++;
                r = h(ud, f->line.buf, len);
        }
        dynbuf_reset(&f->line);
        return r;
}

int mcp_framer_feed(mcp_framer *f, const void *p, size_t n, mcp_line_handler h, void *ud) {
        const char *s = p;
        if (f->error)
                return f->error;
        while (n > 0) {
                const char *nl = memchr(s, '\n', n);
                size_t take = nl ? (size_t) (nl - s) : n;
                int r = take > 0 ? dynbuf_add(&f->line, s, take) : 0;
                if (r < 0)
                        return f->error = r;
                if (!nl) {
                        /* Already over the bound, unless the extra byte is a "\r" before the "\n". */
                        if (f->line.len > f->max && f->line.buf[f->line.len - 1] != '\r')
                                return f->error = -E2BIG;
                        break;
                }
                r = framer_deliver(f, h, ud);
                if (r < 0)
                        return f->error = r;
                s += take + 1;
                n -= take + 1;
        }
        return 0;
}

int mcp_framer_finish(mcp_framer *f) {
        if (f->error)
                return f->error;
        return f->line.len > 0 ? 1 : 0;
}

bool mcp_id_valid(const json_t *id) {
        return id && (json_is_string(id) || json_is_integer(id));
}

bool mcp_id_equal(const json_t *a, const json_t *b) {
        if (!mcp_id_valid(a) || !mcp_id_valid(b))
                return false;
        if (json_is_integer(a))
                return json_is_integer(b) && json_integer_value(a) == json_integer_value(b);
        return json_is_string(b) && json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
}

void mcp_msg_done(mcp_msg *m) {
        json_decref(m->root);
        *m = (mcp_msg){0};
}

static int parse_method(json_t *o, mcp_msg *m, hull_error *e) {
        json_t *method = json_object_get(o, "method");
        if (!json_is_string(method))
                return hull_fail(e, -EINVAL, "mcp: invalid message: \"method\" is not a string");
        size_t len = json_string_length(method);
        if (len == 0 || len > MCP_METHOD_MAX || strlen(json_string_value(method)) != len)
                return hull_fail(e, -EINVAL,
                                 "mcp: invalid message: \"method\" is empty, longer than %u bytes or holds a NUL",
                                 MCP_METHOD_MAX);
        if (json_object_get(o, "result") || json_object_get(o, "error"))
                return hull_fail(e, -EINVAL, "mcp: invalid message: a request with a \"result\" or an \"error\"");
        json_t *params = json_object_get(o, "params");
        if (params && !json_is_object(params))
                return hull_fail(e, -EINVAL, "mcp: invalid message: \"params\" is not an object");
        json_t *id = json_object_get(o, "id");
        if (id && !mcp_id_valid(id))
                return hull_fail(e, -EINVAL, "mcp: invalid message: \"id\" is not a string or an integer");
        m->kind = id ? MCP_MSG_REQUEST : MCP_MSG_NOTIFICATION;
        m->id = id;
        m->method = json_string_value(method);
        m->params = params;
        return 0;
}

static int parse_response(json_t *o, mcp_msg *m, hull_error *e) {
        json_t *id = json_object_get(o, "id");
        json_t *result = json_object_get(o, "result");
        json_t *error = json_object_get(o, "error");
        if (result && error)
                return hull_fail(e, -EINVAL, "mcp: invalid message: both \"result\" and \"error\"");
        if (result) {
                if (!mcp_id_valid(id))
                        return hull_fail(e, -EINVAL,
                                         "mcp: invalid message: a result without a string or integer \"id\"");
                if (!json_is_object(result))
                        return hull_fail(e, -EINVAL, "mcp: invalid message: \"result\" is not an object");
                m->kind = MCP_MSG_RESULT;
                m->id = id;
                m->result = result;
                return 0;
        }
        if (!error)
                return hull_fail(e, -EINVAL, "mcp: invalid message: no \"method\", \"result\" or \"error\"");
        /* An error may have no id, or (the SDK's HTTP error bodies) a null one: both mean unknown. */
        if (id && !json_is_null(id) && !mcp_id_valid(id))
                return hull_fail(e, -EINVAL, "mcp: invalid message: \"id\" is not a string or an integer");
        json_t *code = json_object_get(error, "code");
        json_t *msg = json_object_get(error, "message");
        if (!json_is_object(error) || !json_is_integer(code) || (msg && !json_is_string(msg)))
                return hull_fail(e, -EINVAL,
                                 "mcp: invalid message: \"error\" is not an object with an integer \"code\" and a "
                                 "string \"message\"");
        m->kind = MCP_MSG_ERROR;
        m->id = mcp_id_valid(id) ? id : NULL;
        m->error_code = json_integer_value(code);
        m->error_msg = msg ? json_string_value(msg) : "";
        m->error_data = json_object_get(error, "data");
        return 0;
}

int mcp_msg_parse(const char *p, size_t n, mcp_msg *ret, hull_error *e) {
        if (n > MCP_MESSAGE_MAX)
                return hull_fail(e, -E2BIG, "mcp: message of %zu bytes is over the limit of %u bytes", n,
                                 MCP_MESSAGE_MAX);
        json_error_t jerr;
        json_t *o = json_loadb(p, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
        if (!o) {
                if (json_error_code(&jerr) == json_error_out_of_memory)
                        return hull_fail(e, -ENOMEM, "mcp: out of memory parsing a message");
                return hull_fail(e, -EBADMSG, "mcp: message is not valid JSON: %s at byte %d", jerr.text,
                                 jerr.position);
        }
        mcp_msg m = {.root = o};
        int r;
        if (json_is_array(o))
                r = hull_fail(e, -EINVAL,
                              "mcp: invalid message: a JSON array (batches are not part of MCP since 2025-06-18)");
        else if (!json_is_object(o))
                r = hull_fail(e, -EINVAL, "mcp: invalid message: not a JSON object");
        else if (!json_is_string(json_object_get(o, "jsonrpc")) ||
                 strcmp(json_string_value(json_object_get(o, "jsonrpc")), "2.0") != 0)
                r = hull_fail(e, -EINVAL, "mcp: invalid message: \"jsonrpc\" is not \"2.0\"");
        else if (json_object_get(o, "method"))
                r = parse_method(o, &m, e);
        else
                r = parse_response(o, &m, e);
        if (r < 0) {
                mcp_msg_done(&m);
                return r;
        }
        *ret = m;
        return 0;
}

static json_t *envelope(void) {
        json_t *o = json_object();
        if (o && json_object_set_new(o, "jsonrpc", json_string("2.0")) < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

json_t *mcp_request_new(json_t *id, const char *method, json_t *params) {
        if (!mcp_id_valid(id)) {
                json_decref(params);
                return NULL;
        }
        json_t *o = mcp_notification_new(method, params);
        if (o && json_object_set(o, "id", id) < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

json_t *mcp_notification_new(const char *method, json_t *params) {
        json_t *o = envelope();
        if (!o || !method || json_object_set_new(o, "method", json_string(method)) < 0 ||
            (params && json_object_set_new(o, "params", params) < 0)) {
                if (!o)
                        json_decref(params);
                json_decref(o);
                return NULL;
        }
        return o;
}

json_t *mcp_result_new(json_t *id, json_t *result) {
        json_t *o = mcp_id_valid(id) ? envelope() : NULL;
        if (!o || json_object_set(o, "id", id) < 0 ||
            json_object_set_new(o, "result", result ? result : json_object()) < 0) {
                if (!o)
                        json_decref(result);
                json_decref(o);
                return NULL;
        }
        return o;
}

json_t *mcp_error_new(json_t *id, int64_t code, const char *message, json_t *data) {
        json_t *o = (id && !mcp_id_valid(id)) ? NULL : envelope();
        json_t *err = o ? json_object() : NULL;
        if (!err || (id && json_object_set(o, "id", id) < 0) || json_object_set_new(o, "error", err) < 0) {
                json_decref(data);
                json_decref(err);
                json_decref(o);
                return NULL;
        }
        if (json_object_set_new(err, "code", json_integer(code)) < 0 ||
            json_object_set_new(err, "message", json_string(message ? message : "")) < 0 ||
            (data && json_object_set_new(err, "data", data) < 0)) {
                json_decref(o);
                return NULL;
        }
        return o;
}

static int dump_cb(const char *buf, size_t size, void *ud) {
        return dynbuf_add(ud, buf, size) < 0 ? -1 : 0;
}

int mcp_msg_write(const json_t *msg, dynbuf *out) {
        size_t start = out->len;
        dynbuf line;
        int r;
        if (!msg)
                return -ENOMEM;
        /* Serialise into a buffer bounded by the smaller of the two limits, then append it. */
        dynbuf_init(&line, MIN((size_t) MCP_MESSAGE_MAX, out->max - MIN(out->max, start)));
        if (json_dump_callback(msg, dump_cb, &line, JSON_COMPACT | JSON_ENCODE_ANY) < 0)
                r = line.len == 0 && line.max > 0 ? -ENOMEM : -E2BIG;
        else
                r = dynbuf_add(&line, "\n", 1);
        if (r == 0)
                r = dynbuf_add(out, line.buf, line.len);
        dynbuf_free(&line);
        return r;
}
