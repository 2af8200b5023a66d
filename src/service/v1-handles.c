/* v1-handles.c: a /v1 session's handles as hull's extensions show them (GET
 * /v1/sessions/{id}/handles, AG-UI's STATE_SNAPSHOT, the console). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "dynbuf.h"
#include "limits.h"
#include "macro.h"
#include "v1-run.h"

/* One line about a handle, from its summary (derived from its bytes by the store). */
static json_t *handle_line(const json_t *sum) {
        const char *id = json_string_value(json_object_get(sum, "id")) ?: "?";
        const char *kind = json_string_value(json_object_get(sum, "kind")) ?: "?";
        json_int_t bytes = json_integer_value(json_object_get(sum, "bytes"));
        dynbuf b;
        dynbuf_init(&b, V1_HANDLE_SUMMARY_MAX * 4);
        int r = dynbuf_addf(&b, "%s %s: ", kind, id);
        if (strcmp(kind, "table") == 0) {
                json_int_t rows = json_integer_value(json_object_get(sum, "n_rows"));
                json_int_t cols = json_integer_value(json_object_get(sum, "n_cols"));
                r = r
                            ?: dynbuf_addf(&b, "%" JSON_INTEGER_FORMAT " rows × %" JSON_INTEGER_FORMAT " columns (",
                                           rows, cols);
                const char *k;
                json_t *v;
                bool first = true;
                json_object_foreach((json_t *) json_object_get(sum, "schema"), k, v) {
                        if (b.len > V1_HANDLE_SUMMARY_MAX)
                                break;
                        r = r ?: dynbuf_addf(&b, "%s%s %s", first ? "" : ", ", k, json_string_value(v) ?: "?");
                        first = false;
                }
                r = r ?: dynbuf_add_str(&b, ")");
        } else if (strcmp(kind, "json") == 0) {
                _cleanup_free_ char *shape = json_dumps(json_object_get(sum, "shape"), JSON_COMPACT);
                r = r ?: dynbuf_addf(&b, "%" JSON_INTEGER_FORMAT " bytes, %.200s", bytes, shape ? shape : "?");
        } else if (strcmp(kind, "text") == 0) {
                const char *pv = json_string_value(json_object_get(sum, "preview")) ?: "";
                r = r ?: dynbuf_addf(&b, "%" JSON_INTEGER_FORMAT " bytes: ", bytes);
                for (size_t i = 0; !r && pv[i] && b.len < V1_HANDLE_SUMMARY_MAX; i++)
                        r = dynbuf_add(&b, (unsigned char) pv[i] < 0x20 ? " " : &pv[i], 1);
        } else
                r = r ?: dynbuf_addf(&b, "%" JSON_INTEGER_FORMAT " bytes", bytes);
        if (r < 0) {
                dynbuf_free(&b);
                return NULL;
        }
        /* cut at a character boundary */
        size_t n = b.len > V1_HANDLE_SUMMARY_MAX ? V1_HANDLE_SUMMARY_MAX : b.len;
        while (n > 0 && n < b.len && ((unsigned char) b.buf[n] & 0xC0) == 0x80)
                n--;
        json_t *s = json_stringn((const char *) b.buf, n); /* NULL if not UTF-8: no summary */
        dynbuf_free(&b);
        return s;
}

/* A handle as the extensions show it, from the store's summary (or the manifest's entry and an
 * error, for one that cannot be read). */
json_t *v1_handle_json(const json_t *sum) {
        json_t *o = json_object();
        if (!o)
                return NULL;
        json_object_set(o, "name", json_object_get(sum, "id"));
        json_object_set(o, "type", json_object_get(sum, "kind"));
        const json_t *err = json_object_get(sum, "error");
        if (err)
                json_object_set(o, "error", (json_t *) err);
        else
                json_object_set_new(o, "summary", handle_line(sum));
        json_object_set(o, "bytes", json_object_get(sum, "bytes"));
        if (json_object_get(sum, "n_rows")) {
                json_object_set(o, "rows", json_object_get(sum, "n_rows"));
                json_object_set(o, "columns", json_object_get(sum, "n_cols"));
        }
        json_object_set(o, "source", json_object_get(sum, "source"));
        return o;
}

int v1_engine_handles(store *st, v1_engine *g, const char *id, json_t **ret_data, json_t **ret_sandbox, hull_error *e) {
        ss_session *box = NULL;
        (void) v1_engine_sandbox(g, id, &box);
        ss_manager *ss = v1_engine_ss(g);
        json_auto_t *data = json_array(), *full = NULL;
        if (!data)
                return hull_err(e, -ENOMEM, "out of memory");
        if (box) {
                int rr = ss_handles_list(ss, box, &full, e);
                if (rr < 0 && rr != -EOPNOTSUPP) {
                        ss_unref(ss, box);
                        return hull_fail(e, rr, "the session's handles could not be read: %s", e->msg);
                }
                size_t i;
                json_t *sum;
                json_array_foreach(full, i, sum) json_array_append_new(data, v1_handle_json(sum));
        }
        json_t *state = NULL;
        if (box) {
                ss_info info;
                ss_session_info(ss, box, &info);
                state = json_pack("{s:s, s:s}", "state", "open", "fingerprint", info.fingerprint);
                ss_unref(ss, box);
        } else {
                json_auto_t *boxes = NULL;
                hull_error se = {0};
                if (store_sandbox_list(st, id, &boxes, &se) < 0 || json_array_size(boxes) == 0)
                        state = json_pack("{s:s}", "state", "none");
                else
                        state = json_pack(
                                "{s:s, s:O}", "state", "closed", "fingerprint",
                                json_object_get(json_array_get(boxes, json_array_size(boxes) - 1), "fingerprint"));
        }
        *ret_data = TAKE_PTR(data);
        *ret_sandbox = state;
        return 0;
}
