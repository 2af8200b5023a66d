/* tool-util.c: the helpers the built-in tools share: error results, paths through the jail, text
 * from untrusted bytes, arguments, and the short lines that describe handles. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "time-util.h"
#include "tool-util.h"
#include "utf8.h"

void tool_buf_init(dynbuf *b) {
        /* room for a note after the text is cut */
        dynbuf_init(b, AGENT_TOOL_TEXT_MAX);
}

int tool_error(tool_output *o, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *t = NULL;
        if (vasprintf(&t, fmt, ap) < 0)
                t = NULL;
        va_end(ap);
        free(o->text);
        o->text = t ? t : strdup("the tool failed (out of memory)");
        o->is_error = true;
        return 0;
}

int tool_text(tool_output *o, dynbuf *b, bool is_error) {
        char *t = dynbuf_take(b, NULL);
        free(o->text);
        o->text = t ? t : strdup("(the result could not be kept: out of memory)");
        o->is_error = is_error || !t;
        return 0;
}

int tool_path(const json_t *input, const char *key, bool optional, char ret[WS_PATH_MAX + 1], tool_output *o) {
        const json_t *v = json_object_get(input, key);
        hull_error e = {0};
        if (!v && optional) {
                snprintf(ret, WS_PATH_MAX + 1, ".");
                return 0;
        }
        if (!json_is_string(v)) {
                tool_error(o, "%s: a path is required", key);
                return 1;
        }
        if (ws_path_resolve(json_string_value(v), json_string_length(v), ret, WS_PATH_MAX + 1, &e) < 0) {
                tool_error(o, "%s", e.msg);
                return 1;
        }
        return 0;
}

const char *tool_shown_path(const char *rel, char ret[WS_PATH_MAX + 16]) {
        if (strcmp(rel, ".") == 0)
                snprintf(ret, WS_PATH_MAX + 16, "/workspace");
        else
                snprintf(ret, WS_PATH_MAX + 16, "/workspace/%s", rel);
        return ret;
}

void tool_add_bytes(dynbuf *b, const char *data, size_t len) {
        static const char replacement[] = "\xef\xbf\xbd";
        size_t start = 0;
        for (size_t i = 0; i <= len; i++) {
                if (i < len && data[i] != '\0')
                        continue;
                if (i > start) {
                        if (utf8_is_valid(data + start, i - start))
                                (void) dynbuf_add(b, data + start, i - start);
                        else {
                                _cleanup_free_ char *fixed = NULL;
                                size_t n;
                                if (utf8_make_valid(data + start, i - start, &fixed, &n) == 0)
                                        (void) dynbuf_add(b, fixed, n);
                        }
                }
                if (i < len)
                        (void) dynbuf_add(b, replacement, sizeof(replacement) - 1);
                start = i + 1;
        }
}

/* Where a head of half bytes ends in data: moved back to a character boundary. */
static size_t head_end(const char *data, size_t len, size_t half) {
        size_t h = MIN(half, len);
        while (h > 0 && h < len && ((unsigned char) data[h] & 0xc0) == 0x80)
                h--;
        return h;
}

void tool_add_stream(dynbuf *b, const char *header, const char *data, size_t len, bool truncated, size_t half) {
        if (len == 0)
                return;
        if (b->len > 0 && b->buf[b->len - 1] != '\n')
                (void) dynbuf_add_str(b, "\n");
        if (header)
                (void) dynbuf_addf(b, "%s\n", header);
        if (half > 0 && len > 2 * half)
                truncated = true; /* more than the caller's bound: shown as head and tail */
        if (!truncated || half == 0 || half >= len) {
                tool_add_bytes(b, data, len);
        } else {
                size_t h = head_end(data, len, half);
                tool_add_bytes(b, data, h);
                (void) dynbuf_add_str(b, "\n[... the middle of this output was cut: write it to a file and search "
                                         "or read parts of it ...]\n");
                tool_add_bytes(b, data + h, len - h);
        }
        if (b->len > 0 && b->buf[b->len - 1] != '\n')
                (void) dynbuf_add_str(b, "\n");
}

uint64_t tool_time_left(const tool_ctx *c, uint64_t want) {
        uint64_t now = now_mono_ms(), left = c->deadline_mono_ms > now ? c->deadline_mono_ms - now : 1;
        if (want && want < left)
                left = want;
        return left ? left : 1;
}

int64_t tool_int(const json_t *input, const char *key, int64_t def) {
        const json_t *v = json_object_get(input, key);
        if (json_is_integer(v))
                return json_integer_value(v);
        if (json_is_real(v) && isfinite(json_real_value(v)))
                return (int64_t) json_real_value(v);
        return def;
}

bool tool_bool(const json_t *input, const char *key, bool def) {
        const json_t *v = json_object_get(input, key);
        return json_is_boolean(v) ? json_is_true(v) : def;
}

void tool_add_handles(dynbuf *b, const json_t *summaries) {
        size_t i;
        const json_t *h;
        if (json_array_size(summaries) == 0)
                return;
        if (b->len > 0 && b->buf[b->len - 1] != '\n')
                (void) dynbuf_add_str(b, "\n");
        (void) dynbuf_add_str(b, "New handles (use their ids with the handle tools, or load(id) in run_python):\n");
        json_array_foreach(summaries, i, h) {
                _cleanup_free_ char *d = json_dumps(h, JSON_COMPACT);
                (void) dynbuf_addf(b, "%s\n", d ? d : "{}");
        }
}
