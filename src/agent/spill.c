/* spill.c: the spill middleware between a tool and the model. Big or structured results are kept
 * out of the conversation: stored as a handle of the session (through the session core, which
 * keeps them within the session's bounds), and the model sees the handle's summary, derived by
 * the store from the bytes. Small results pass as they are. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-internal.h"
#include "dynbuf.h"
#include "ss.h"
#include "utf8.h"

/* The JSON of a value the model sees or a handle keeps: as json_dumps gave it before. */
#define SPILL_JSON_FLAGS (JSON_COMPACT | JSON_ENCODE_ANY)

static int claim(ss_manager *ss, ss_session *s, bool *claimed, hull_error *e) {
        if (*claimed)
                return 0;
        if (!ss || !s)
                return hull_fail(e, -EOPNOTSUPP, "this agent has no session to keep handles in");
        int r = ss_call_begin(ss, s, -1, e);
        if (r >= 0)
                *claimed = true;
        return r;
}

static hd_format format_of(const char *name) {
        static const struct {
                const char *name;
                hd_format f;
        } map[] = {
                {"json", HD_FORMAT_JSON},
                {"text", HD_FORMAT_TEXT},
                {"binary", HD_FORMAT_BINARY},
                {"csv", HD_FORMAT_CSV},
                {"tsv", HD_FORMAT_TSV},
                {"jsonl", HD_FORMAT_JSON_LINES},
                {"json_lines", HD_FORMAT_JSON_LINES},
                {"json_array", HD_FORMAT_JSON_ARRAY},
        };
        for (size_t i = 0; name && i < ELEMENTSOF(map); i++)
                if (strcmp(name, map[i].name) == 0)
                        return map[i].f;
        return HD_FORMAT_BINARY;
}

/* A value that is already a handle's summary is shown as it is, never stored again. */
static bool is_summary(const json_t *v) {
        return json_is_object(v) && json_is_string(json_object_get(v, "id")) &&
               json_is_string(json_object_get(v, "kind")) && json_is_string(json_object_get(v, "path"));
}

static void set_text(call_result *res, char *text) {
        free(res->text);
        res->text = text;
}

/* What the model reads instead of a stored result. */
static char *handle_text(const json_t *sum, size_t len, const char *format) {
        const char *id = json_string_value(json_object_get(sum, "id"));
        _cleanup_free_ char *dump = json_dumps(sum, JSON_COMPACT);
        char *t = NULL;
        if (asprintf(&t,
                     "The result (%zu bytes of %s) was kept as handle %s instead of being shown here. Its "
                     "summary:\n%s\nLook closer with the handle tools, or load(\"%s\") in code.",
                     len, format, id ? id : "?", dump ? dump : "{}", id ? id : "?") < 0)
                return NULL;
        return t;
}

/* No store to keep a big result in: the start of it, and why the rest is missing. */
static char *cut_text(const char *data, size_t len, const char *tool, const char *why) {
        size_t keep = len;
        if (keep > AGENT_TOOL_TEXT_MAX) {
                keep = AGENT_TOOL_TEXT_MAX;
                while (keep > 0 && ((unsigned char) data[keep] & 0xc0) == 0x80)
                        keep--;
        }
        _cleanup_free_ char *head = NULL;
        size_t hl;
        if (utf8_make_valid(data, keep, &head, &hl) < 0)
                return NULL;
        char *t = NULL;
        if (asprintf(&t, "%s\n[... %s returned %zu bytes; only the first %zu are shown: %s]", head, tool, len, keep,
                     why) < 0)
                return NULL;
        return t;
}

/* The model's text once data was kept as a handle (r 0, its summary sum) or not (r < 0: why, in
 * e; -EOPNOTSUPP: no store). Returns r, or 0 without a store. */
static int kept(int r, json_t *sum, const hull_error *e, const char *tool, hd_format f, const char *fname,
                const char *data, size_t len, call_result *res) {
        if (r == -EOPNOTSUPP) {
                bool textual = f != HD_FORMAT_BINARY && memchr(data, '\0', len) == NULL;
                set_text(res,
                         textual ? cut_text(data, len, tool, "this agent has no handle store to keep the rest") : NULL);
                if (!textual && asprintf(&res->text,
                                         "%s returned %zu bytes of %s, but this agent has no handle store "
                                         "to keep them",
                                         tool, len, fname) < 0)
                        res->text = NULL;
                return 0;
        }
        if (r < 0) {
                set_text(res, NULL);
                if (asprintf(&res->text, "%s's result (%zu bytes) could not be kept as a handle: %s", tool, len,
                             e->msg) < 0)
                        res->text = NULL;
                res->is_error = true;
                return r;
        }
        set_text(res, handle_text(sum, len, fname));
        json_array_append_new(res->handles, sum);
        return 0;
}

/* Keep data as a handle; on success the model's text is its summary. Returns 0 or the error
 * the model was told of. */
static int keep(ss_manager *ss, ss_session *s, bool *claimed, const char *tool, const char *source, hd_format f,
                const char *fname, const char *data, size_t len, call_result *res) {
        hull_error e = {0};
        json_t *sum = NULL;
        char src[HD_SOURCE_MAX + 1];
        snprintf(src, sizeof(src), "%s", source && source[0] ? source : tool);
        int r = claim(ss, s, claimed, &e);
        if (r >= 0)
                r = ss_handles_spill(ss, s, f, src, data, len, &sum, &e);
        return kept(r, sum, &e, tool, f, fname, data, len, res);
}

/* keep() for a long text output: its length found by the store beside its hash, not by a strlen
 * before it (4 ms of 50 MB); counted here only when the store did not keep it. */
static int keep_text(ss_manager *ss, ss_session *s, bool *claimed, const char *tool, const char *text,
                     call_result *res) {
        hull_error e = {0};
        json_t *sum = NULL;
        int r = claim(ss, s, claimed, &e);
        if (r >= 0)
                r = ss_handles_spill_text(ss, s, tool, text, &sum, &e);
        size_t len = r >= 0 ? (size_t) json_integer_value(json_object_get(sum, "bytes")) : strlen(text);
        return kept(r, sum, &e, tool, HD_FORMAT_TEXT, "text", text, len, res);
}

/* json_dump_callback into a buffer of at most its max: past it, -1 stops the dump (the value is
 * bigger than the spill threshold, and only its size was wanted). */
typedef struct capped {
        dynbuf b;
        bool over;
} capped;
static int dump_capped(const char *p, size_t n, void *ud) {
        capped *c = ud;
        int r = dynbuf_add(&c->b, p, n);
        c->over = r == -E2BIG;
        return r < 0 ? -1 : 0;
}

/* Keep a big value as a handle: its JSON streamed into the store (serialized once, never held
 * whole here). Without a store, the start of its JSON, as keep() shows it. */
static void keep_value(ss_manager *ss, ss_session *s, bool *claimed, const char *tool, const json_t *v,
                       call_result *res) {
        hull_error e = {0};
        json_t *sum = NULL;
        int r = claim(ss, s, claimed, &e);
        if (r >= 0)
                r = ss_handles_spill_value(ss, s, tool, v, SPILL_JSON_FLAGS, &sum, &e);
        if (r == -EOPNOTSUPP) {
                _cleanup_free_ char *dump = json_dumps(v, SPILL_JSON_FLAGS);
                if (!dump)
                        set_text(res, strdup("(the result could not be serialized)"));
                else
                        (void) keep(ss, s, claimed, tool, tool, HD_FORMAT_JSON, "json", dump, strlen(dump), res);
                return;
        }
        if (r < 0) {
                set_text(res, NULL);
                if (asprintf(&res->text, "%s's result could not be kept as a handle: %s", tool, e.msg) < 0)
                        res->text = NULL;
                res->is_error = true;
                return;
        }
        set_text(res, handle_text(sum, (size_t) json_integer_value(json_object_get(sum, "bytes")), "json"));
        json_array_append_new(res->handles, sum);
}

void spill_shape(ss_manager *ss, ss_session *s, bool *claimed, uint64_t spill_bytes, const char *tool,
                 const tool_output *out, call_result *res) {
        uint64_t threshold = spill_bytes ? spill_bytes : AGENT_SPILL_BYTES_DEFAULT;
        res->is_error = out->is_error;
        res->handles = json_is_array(out->handles) ? json_deep_copy(out->handles) : json_array();
        if (out->spill_data) {
                size_t had = json_array_size(res->handles);
                (void) keep(ss, s, claimed, tool, out->spill_source, format_of(out->spill_format),
                            out->spill_format ? out->spill_format : "binary", out->spill_data, out->spill_len, res);
                /* facts about the body (tool.h): shown with the handle's summary as "handle" */
                if (json_is_object(out->value) && json_array_size(res->handles) > had) {
                        json_t *facts = json_deep_copy(out->value);
                        if (facts &&
                            json_object_set(facts, "handle",
                                            json_array_get(res->handles, json_array_size(res->handles) - 1)) == 0) {
                                char *dump = json_dumps(facts, JSON_COMPACT);
                                if (dump)
                                        set_text(res, dump);
                        }
                        json_decref(facts);
                } else if (json_is_object(out->value)) {
                        /* not kept: the facts still go with the reason, so nothing else is lost */
                        _cleanup_free_ char *dump = json_dumps(out->value, JSON_COMPACT);
                        char *t = NULL;
                        if (dump && asprintf(&t, "%s\n%s", res->text ? res->text : "", dump) >= 0)
                                set_text(res, t);
                }
        } else if (out->value) {
                /* serialized up to the threshold only: a small value is shown, a big one is
                 * streamed into the store by keep_value (one serialization, no giant string) */
                capped c = {.over = false};
                dynbuf_init(&c.b, (size_t) MIN(threshold, (uint64_t) SIZE_MAX / 2));
                bool small = json_dump_callback(out->value, dump_capped, &c, SPILL_JSON_FLAGS) == 0;
                if (small || (c.over && is_summary(out->value))) {
                        char *dump = small ? dynbuf_take(&c.b, NULL) : json_dumps(out->value, SPILL_JSON_FLAGS);
                        set_text(res, dump ? dump : strdup("(the result could not be serialized)"));
                } else if (!c.over)
                        set_text(res, strdup("(the result could not be serialized)"));
                else if (out->value_json) /* the bytes the tool had: kept, not serialized again */
                        (void) keep(ss, s, claimed, tool, tool, HD_FORMAT_JSON, "json", out->value_json,
                                    out->value_json_len, res);
                else
                        keep_value(ss, s, claimed, tool, out->value, res);
                dynbuf_free(&c.b);
        } else if (out->text) {
                if (strnlen(out->text, AGENT_TOOL_TEXT_MAX + 1) <= AGENT_TOOL_TEXT_MAX)
                        set_text(res, strdup(out->text));
                /* most output is valid UTF-8: kept as it is, no copy, checked once (by the store) */
                else if (keep_text(ss, s, claimed, tool, out->text, res) == -EILSEQ) {
                        _cleanup_free_ char *fixed = NULL;
                        size_t fl = 0, len = strlen(out->text);
                        res->is_error = out->is_error;
                        if (utf8_make_valid(out->text, len, &fixed, &fl) == 0)
                                (void) keep(ss, s, claimed, tool, tool, HD_FORMAT_TEXT, "text", fixed, fl, res);
                }
        } else
                set_text(res, strdup("(no output)"));
}

void call_result_done(call_result *c) {
        free(c->text);
        free(c->short_form);
        free(c->net_log);
        json_decref(c->handles);
        *c = (call_result){0};
}

char *spill_short_form(const char *text, const json_t *handles) {
        size_t len = strlen(text), chars = 0, cut = 0;
        while (cut < len && chars < AGENT_SHORT_FORM_CHARS) {
                cut++;
                while (cut < len && ((unsigned char) text[cut] & 0xc0) == 0x80)
                        cut++;
                chars++;
        }
        if (cut == len && json_array_size(handles) == 0)
                return NULL; /* short already */
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, AGENT_SHORT_FORM_CHARS * 4 + 1024);
        (void) dynbuf_add(&b, text, cut);
        (void) dynbuf_addf(&b, "\n[... elided to keep the context small: the result had %zu bytes", len);
        size_t i;
        const json_t *h;
        json_array_foreach(handles, i, h) {
                (void) dynbuf_addf(&b, "%s%s",
                                   i ? ", " : "; its handles: ", json_string_value(json_object_get(h, "id")) ?: "?");
        }
        (void) dynbuf_add_str(&b, "; call the tool again if you need it]");
        return dynbuf_take(&b, NULL);
}
