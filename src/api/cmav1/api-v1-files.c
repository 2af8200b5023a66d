/* api-v1-files.c: the /v1/files routes (the files-api-2025-04-14 beta): an upload streamed through
 * the route's sink into the service's upload (src/service/v1-files.c), the list in the Files
 * API's Page envelope (limit, before_id, after_id, scope_id), a file's metadata, its bytes
 * (/content, sent from the node-local copy) and its deletion. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-v1-internal.h"
#include "macro.h"
#include "parse-util.h"
#include "utf8.h"
#include "v1-files.h"

/* The version and an id that can name a file. Returns 1 once r is refused. */
static int files_head(http_req *r) {
        unsigned n = 0;
        const char *v = http_req_header(r, "anthropic-version", &n);
        if (n == 0 || !v || (strcmp(v, "2023-06-01") != 0 && strcmp(v, "2026-10-21") != 0)) {
                v1a_failf(r, 400, n ? "unsupported_anthropic_version" : "missing_anthropic_version",
                          "send anthropic-version: 2023-06-01 (or 2026-10-21)");
                return 1;
        }
        /* the SDK sends files-api-2025-04-14 only when its caller asks for it: no beta is needed */
        const char *id = http_req_param(r, "id");
        if (id) {
                bool ok = utf8_is_valid(id, strlen(id));
                for (const char *p = id; ok && *p; p++)
                        ok = (unsigned char) *p >= 0x20 && *p != 0x7f;
                if (!ok) {
                        v1a_failf(r, 404, "file_not_found", "no file with that id: it is not printable UTF-8 text");
                        return 1;
                }
        }
        return 0;
}

/* ---- upload ---- */

static void upload_free(void *p) {
        v1_upload_free(p);
}

static int upload_head(http_req *r) {
        if (files_head(r))
                return 1;
        api_v1 *a = http_req_data(r);
        unsigned n = 0;
        const char *ct = http_req_header(r, "content-type", &n);
        v1_upload *u = NULL;
        v1_err err = {0};
        if (v1_upload_begin(a->cfg.files, ct, &u, &err) < 0) {
                v1a_fail(r, &err);
                return 1;
        }
        http_req_set_ctx(r, u, upload_free);
        return 0;
}

static int upload_sink(http_req *r, const void *data, size_t n) {
        return v1_upload_write(http_req_ctx(r), data, n);
}

static void upload_thread(http_req *r) {
        api_v1 *a = http_req_data(r);
        json_t *obj = NULL;
        v1_err err = {0};
        int body_err = http_req_body_error(r);
        if (v1_upload_finish(a->cfg.files, http_req_ctx(r), body_err, &obj, &err) < 0) {
                v1a_fail(r, &err);
                return;
        }
        http_req_note(r, "file=%s", json_string_value(json_object_get(obj, "id")));
        v1a_answer_json(r, 200, obj);
}

static void files_upload(http_req *r) {
        if (http_req_spawn(r, upload_thread) < 0)
                v1a_failf(r, 503, "", "no thread could be made for the upload; retry");
}

/* ---- list ---- */

#define FILES_IDS_MAX 100U /* ids[] of one list (the SDK's bound) */

typedef struct files_query {
        const char *limit, *before_id, *after_id, *scope_id, *page;
        const char *ids[FILES_IDS_MAX];
        size_t n_ids;
        bool too_many;
        char bad[64];
} files_query;

static void files_query_arg(void *data, const char *name, const char *value) {
        files_query *q = data;
        if (strcmp(name, "ids") == 0 || strcmp(name, "ids[]") == 0) {
                bool dup = false;
                for (size_t i = 0; i < q->n_ids; i++)
                        dup |= strcmp(q->ids[i], value) == 0;
                if (!dup && value[0] && q->n_ids < FILES_IDS_MAX)
                        q->ids[q->n_ids++] = value;
                else if (!dup && value[0])
                        q->too_many = true;
                return;
        }
        const char **slot = strcmp(name, "limit") == 0       ? &q->limit
                            : strcmp(name, "page") == 0      ? &q->page
                            : strcmp(name, "before_id") == 0 ? &q->before_id
                            : strcmp(name, "after_id") == 0  ? &q->after_id
                            : strcmp(name, "scope_id") == 0  ? &q->scope_id
                                                             : NULL;
        if (strcmp(name, "beta") == 0)
                return;
        if (!slot || *slot) {
                if (!q->bad[0])
                        snprintf(q->bad, sizeof(q->bad), "%.40s%s", name, slot ? " (given twice)" : "");
                return;
        }
        *slot = value[0] ? value : NULL; /* a JSON null the SDK sent as "key=" */
}

static void files_list(http_req *r) {
        api_v1 *a = http_req_data(r);
        files_query fq = {0};
        http_req_each_query(r, files_query_arg, &fq);
        if (fq.bad[0]) {
                v1a_failf(r, 400, "",
                          "unknown query parameter '%s' (this route takes: limit, page, ids[], before_id, after_id, "
                          "scope_id)",
                          fq.bad);
                return;
        }
        if (fq.too_many || (fq.n_ids && (fq.page || fq.limit || fq.before_id || fq.after_id))) {
                v1a_failf(r, 400, "",
                          fq.too_many ? "ids[] names more than %u files"
                                      : "ids[] cannot go with page, limit, before_id or after_id",
                          FILES_IDS_MAX);
                return;
        }
        if (fq.page && !fq.after_id) /* the SDK's cursor: the last id of the page before */
                fq.after_id = fq.page;
        uint64_t limit = V1_FILES_PAGE_DEFAULT;
        if (fq.limit && parse_uint64(fq.limit, 1, UINT64_MAX, &limit) < 0) {
                v1a_failf(r, 400, "", "limit must be a positive integer, got '%.40s'", fq.limit);
                return;
        }
        if (fq.before_id && fq.after_id) {
                v1a_failf(r, 400, "", "give before_id or after_id, not both");
                return;
        }
        store_files_q q = {.limit = (unsigned) MIN(limit, (uint64_t) V1_FILES_PAGE_MAX), /* clamped, never refused */
                           .before_id = fq.before_id,
                           .after_id = fq.after_id,
                           .scope_id = fq.scope_id};
        json_t *page = NULL;
        v1_err err = {0};
        if (fq.n_ids ? v1_file_list_ids(a->cfg.files, fq.ids, fq.n_ids, fq.scope_id, &page, &err) < 0
                     : v1_file_list(a->cfg.files, &q, &page, &err) < 0)
                v1a_fail(r, &err);
        else
                v1a_answer_json(r, 200, page);
}

/* ---- one file ---- */

static void files_get(http_req *r) {
        api_v1 *a = http_req_data(r);
        json_t *obj = NULL;
        v1_err err = {0};
        if (v1_file_get(a->cfg.files, http_req_param(r, "id"), &obj, &err) < 0)
                v1a_fail(r, &err);
        else
                v1a_answer_json(r, 200, obj);
}

static void files_delete(http_req *r) {
        api_v1 *a = http_req_data(r);
        json_t *obj = NULL;
        v1_err err = {0};
        if (v1_file_delete(a->cfg.files, http_req_param(r, "id"), &obj, &err) < 0)
                v1a_fail(r, &err);
        else
                v1a_answer_json(r, 200, obj);
}

/* A filename in a Content-Disposition: quotes, backslashes and bytes outside printable ASCII
 * become '_' in the plain form; the UTF-8 form (RFC 5987) carries the name percent-encoded. */
static void disposition(const char *name, char *buf, size_t size) {
        char plain[V1_FILE_NAME_MAX], enc[3 * V1_FILE_NAME_MAX];
        size_t n = 0, m = 0;
        for (const char *p = name; *p && n + 1 < sizeof(plain); p++)
                plain[n++] = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '_';
        plain[n] = '\0';
        for (const unsigned char *p = (const unsigned char *) name; *p && m + 4 < sizeof(enc); p++) {
                if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    strchr("!#$&+-.^_`|~", *p))
                        enc[m++] = (char) *p;
                else
                        m += (size_t) snprintf(enc + m, sizeof(enc) - m, "%%%02X", *p);
        }
        enc[m] = '\0';
        snprintf(buf, size, "attachment; filename=\"%s\"; filename*=UTF-8''%s", plain, enc);
}

static void content_thread(http_req *r) {
        api_v1 *a = http_req_data(r);
        int fd = -1;
        uint64_t size = 0;
        json_auto_t *obj = NULL;
        v1_err err = {0};
        if (v1_file_open(a->cfg.files, http_req_param(r, "id"), &fd, &size, &obj, &err) < 0) {
                v1a_fail(r, &err);
                return;
        }
        char cd[4 * V1_FILE_NAME_MAX + 64];
        disposition(json_string_value(json_object_get(obj, "filename")) ?: "file", cd, sizeof(cd));
        (void) http_answer_header(r, "content-disposition", cd);
        const char *mime = json_string_value(json_object_get(obj, "mime_type"));
        if (http_answer_fd(r, 200, mime && mime[0] ? mime : "application/octet-stream", fd, size) < 0)
                v1a_failf(r, 500, "", "out of memory");
}

static void files_content(http_req *r) {
        if (http_req_spawn(r, content_thread) < 0)
                v1a_failf(r, 503, "", "no thread could be made for the download; retry");
}

#define FILES_ROUTE(m, p, fn)                                                                                          \
        { .methods = (m), .pattern = (p), .scope = "v1", .head = files_head, .handler = (fn) }

const http_route v1a_files_routes[] = {
        {
                .methods = HTTP_POST,
                .pattern = "/v1/files",
                .scope = "v1",
                .body_max = V1_FILE_BYTES_MAX + V1_FILE_UPLOAD_OVERHEAD,
                .sink = upload_sink,
                .receive_ms = SERVE_UPLOAD_RECEIVE_MS,
                .head = upload_head,
                .handler = files_upload,
        },
        FILES_ROUTE(HTTP_GET, "/v1/files", files_list),
        FILES_ROUTE(HTTP_GET, "/v1/files/{id}", files_get),
        FILES_ROUTE(HTTP_DELETE, "/v1/files/{id}", files_delete),
        FILES_ROUTE(HTTP_GET, "/v1/files/{id}/content", files_content),
};
const size_t v1a_n_files_routes = ELEMENTSOF(v1a_files_routes);
