/* v1-inputs.c: input files a /v1 session's client hands in (hull's extension POST
 * /v1/sessions/{id}/inputs): kept in memory, bounded, until the session's next turn, whose worker
 * adds each to the session's sandbox as a handle and a file under /workspace/inputs/<handle>/
 * (ss_handles_add_input, which records it) before the model is asked anything. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hd-store.h"
#include "limits.h"
#include "macro.h"
#include "utf8.h"
#include "v1-run-internal.h"

struct v1_input {
        struct v1_input *next;
        char handle[HD_ID_MAX + 1];
        char name[HULL_API_INPUT_NAME_MAX + 1];
        hd_format format;
        void *data;
        size_t len;
};

static void input_free(v1_input *in) {
        if (!in)
                return;
        free(in->data);
        free(in);
}

void v1_inputs_free(live *l) {
        while (l->inputs) {
                v1_input *in = l->inputs;
                l->inputs = in->next;
                input_free(in);
        }
        l->inputs_bytes = 0;
}

/* A display name: one path segment of printable UTF-8, not "." or "..". */
static bool name_is_valid(const char *name) {
        size_t n = strlen(name);
        if (n == 0 || n > HULL_API_INPUT_NAME_MAX || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return false;
        for (const char *p = name; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f || *p == '/' || *p == '\\')
                        return false;
        return utf8_is_valid(name, n);
}

static hd_format format_named(const char *f) {
        static const struct {
                const char *word;
                hd_format format;
        } words[] = {{"binary", HD_FORMAT_BINARY},
                     {"csv", HD_FORMAT_CSV},
                     {"tsv", HD_FORMAT_TSV},
                     {"json", HD_FORMAT_JSON_ARRAY},
                     {"jsonl", HD_FORMAT_JSON_LINES}};
        if (!f) /* the file as it is, under /workspace/inputs */
                return HD_FORMAT_BINARY;
        for (size_t i = 0; i < ELEMENTSOF(words); i++)
                if (strcmp(f, words[i].word) == 0)
                        return words[i].format;
        return _HD_FORMAT_INVALID;
        return HD_FORMAT_BINARY;
}

/* The handle's default name: the name's stem, letters, digits and '_' ("input" when it does not
 * start with a letter). */
static void handle_of(const char *name, char ret[static HD_ID_MAX + 1]) {
        size_t o = 0;
        for (const char *p = name; *p && *p != '.' && o < 32; p++)
                ret[o++] = (char) (((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z') || (*p >= '0' && *p <= '9') ? *p : '_');
        ret[o] = '\0';
        if (o == 0 || !((ret[0] | 0x20) >= 'a' && (ret[0] | 0x20) <= 'z'))
                snprintf(ret, HD_ID_MAX + 1, "input");
}

int v1_engine_add_input(v1_engine *g, const char *session_id, const char *handle, const char *name, const char *format,
                        const void *data, size_t len, json_t **ret, v1_err *err) {
        if (!name || !name_is_valid(name))
                return v1_fail(err, 400, "",
                               "name: give the file's name (one path segment of printable UTF-8, at most "
                               "%u bytes, no '/'), e.g. ?name=sales.csv",
                               HULL_API_INPUT_NAME_MAX);
        char hid[HD_ID_MAX + 1];
        if (handle) {
                if (!hd_id_is_valid(handle))
                        return v1_fail(
                                err, 400, "",
                                "handle: '%.64s' is not a handle name (a letter or digit, then up to 63 letters, "
                                "digits, '_', '.', '-')",
                                handle);
                snprintf(hid, sizeof(hid), "%s", handle);
        } else
                handle_of(name, hid);
        hd_format f = format_named(format);
        if (f < 0)
                return v1_fail(err, 400, "",
                               "format: '%.32s' is not one of binary, csv, tsv, json (an array of "
                               "objects), jsonl",
                               format);
        if (len > V1_INPUT_BYTES_MAX)
                return v1_fail(err, 413, "", "the input is %zu bytes, more than one request takes (%u MiB)", len,
                               V1_INPUT_BYTES_MAX >> 20);
        _cleanup_(v1_live_unrefp) live *l = NULL;
        int r = v1_live_get(g, session_id, &l, err);
        if (r < 0)
                return r;
        v1_input *in = calloc(1, sizeof(*in));
        if (!in || !(in->data = malloc(len ? len : 1))) {
                input_free(in);
                return v1_fail(err, 500, "", "out of memory");
        }
        memcpy(in->data, data, len);
        in->len = len;
        in->format = f;
        snprintf(in->handle, sizeof(in->handle), "%s", hid);
        snprintf(in->name, sizeof(in->name), "%s", name);
        pthread_mutex_lock(&l->lock);
        size_t n = 0;
        bool dup = false;
        for (v1_input *p = l->inputs; p; p = p->next) {
                n++;
                dup |= strcmp(p->handle, hid) == 0;
        }
        if (l->deleted)
                r = v1_fail(err, 404, "session_not_found", "no session %.64s", session_id);
        else if (json_is_string(json_object_get(l->obj, "archived_at")))
                r = v1_fail(err, 409, "session_archived", "session %.64s is archived: it takes no more inputs",
                            session_id);
        else if (dup)
                r = v1_fail(err, 409, "input_exists",
                            "an input named handle %s already waits for the session's next turn; give another "
                            "?handle=",
                            hid);
        else if (n >= V1_INPUTS_PENDING_MAX || l->inputs_bytes + len > V1_INPUTS_PENDING_BYTES)
                r = v1_fail(
                        err, 409, "too_many_inputs",
                        "session %.64s already holds %zu inputs (%zu bytes) for its next turn (at most %u, %u MiB): "
                        "send a message first",
                        session_id, n, l->inputs_bytes, V1_INPUTS_PENDING_MAX, V1_INPUTS_PENDING_BYTES >> 20);
        if (r >= 0) {
                v1_input **tail = &l->inputs;
                while (*tail)
                        tail = &(*tail)->next;
                *tail = in;
                l->inputs_bytes += len;
                in = NULL;
        }
        pthread_mutex_unlock(&l->lock);
        input_free(in);
        if (r < 0)
                return r;
        char path[HD_ID_MAX + HULL_API_INPUT_NAME_MAX + 32];
        snprintf(path, sizeof(path), "/workspace/inputs/%s/%s", hid, name);
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s}", "type", "session_input", "handle", hid, "name", name,
                              "path", path, "bytes", (json_int_t) len, "status", "pending");
        if (!o)
                return v1_fail(err, 500, "", "out of memory");
        *ret = o;
        return 0;
}

int v1_inputs_apply(live *l, const char **ret_type, hull_error *e) {
        ss_manager *ss = l->g->cfg.ss;
        for (;;) {
                pthread_mutex_lock(&l->lock);
                v1_input *in = l->inputs;
                if (in) {
                        l->inputs = in->next;
                        l->inputs_bytes -= in->len;
                }
                pthread_mutex_unlock(&l->lock);
                if (!in)
                        return 0;
                int r = 0;
                if (!l->box || !ss)
                        r = hull_fail(e, -EOPNOTSUPP,
                                      "input %s: the session's agent has no tool that opens a sandbox, so its inputs "
                                      "have nowhere to go (enable the agent toolset)",
                                      in->name);
                else if ((r = ss_call_begin(ss, l->box, -1, e)) >= 0) {
                        json_t *sum = NULL, *record = NULL;
                        r = ss_handles_add_input(ss, l->box, in->handle, in->name, in->format, in->data, in->len, &sum,
                                                 &record, e);
                        ss_call_end(ss, l->box);
                        json_decref(sum);
                        json_decref(record);
                        if (r < 0) {
                                char msg[HULL_ERROR_MSG_MAX];
                                memcpy(msg, e->msg, sizeof(msg));
                                hull_fail(e, r, "input %.200s: %.300s", in->name, msg);
                        }
                }
                input_free(in);
                if (r < 0) {
                        *ret_type = "invalid_request_error";
                        pthread_mutex_lock(&l->lock);
                        v1_inputs_free(l); /* the rest went with the turn that could not take them */
                        pthread_mutex_unlock(&l->lock);
                        return r;
                }
        }
}
