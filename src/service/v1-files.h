/* v1-files.h: the files of the /v1 API (/v1/files, the files-api-2025-04-14 beta): an upload
 * streamed from its multipart form into a node-local file while its SHA-256 is computed, then kept
 * in the store as a content-addressed blob (store.h: chunks in the database, so every node that
 * shares a PostgreSQL database reaches the bytes), the file objects, and a node-local copy of each
 * blob (cache_dir/<sha256>, checked against its digest when made) to send a download from and to
 * mount in a sandbox. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"
#include "v1-shape.h"

typedef struct v1_files_config {
        store *store;
        const char *cache_dir; /* the node-local copies (made 0700 when missing) */
        uint64_t file_max;     /* bytes of one file; 0: V1_FILE_BYTES_MAX */
} v1_files_config;

typedef struct v1_files v1_files;

/* Returns 0 with *ret, or a negative errno with *e (the cache directory cannot be made). */
int v1_files_new(const v1_files_config *cfg, v1_files **ret, hull_error *e);
void v1_files_free(v1_files *f);
uint64_t v1_files_max(const v1_files *f);

/* ---- an upload: begin (the request's head), write (each piece of its body), finish ---- */

typedef struct v1_upload v1_upload;

/* An upload of a body whose Content-Type is content_type (multipart/form-data with a boundary).
 * Returns 0 with *ret, or -EINVAL (400) / -ENOMEM with *err. */
int v1_upload_begin(v1_files *f, const char *content_type, v1_upload **ret, v1_err *err);
/* n more bytes of the body. Returns 0, -EFBIG (the file is over the bound), -EBADMSG (the form is
 * malformed) or -EIO; the upload then takes nothing more, and v1_upload_finish says why. */
int v1_upload_write(v1_upload *u, const void *p, size_t n);
/* The body ended (body_err: the server's error while receiving it, or 0): the file kept and its
 * object into *ret (a new reference), or a negative errno with *err (400 malformed or no file,
 * 413 too large, 500). */
int v1_upload_finish(v1_files *f, v1_upload *u, int body_err, json_t **ret, v1_err *err);
void v1_upload_free(v1_upload *u);

/* ---- the files ---- */

/* The file object of id (404 when none). */
int v1_file_get(v1_files *f, const char *id, json_t **ret, v1_err *err);
/* A page of files, newest first: {data, next_page} (the SDK's PageCursor; next_page the cursor of
 * the next page or null) with the older Page envelope's has_more, first_id and last_id. */
int v1_file_list(v1_files *f, const store_files_q *q, json_t **ret, v1_err *err);
/* The files named by ids (n of them; those that name none, or not of scope_id's session, left
 * out) as one page. */
int v1_file_list_ids(v1_files *f, const char *const *ids, size_t n, const char *scope_id, json_t **ret, v1_err *err);
/* Delete id: *ret the API's {"id", "type": "file_deleted"} (404 when none). */
int v1_file_delete(v1_files *f, const char *id, json_t **ret, v1_err *err);
/* The bytes of file id: *ret_fd a read-only fd of its node-local copy (made from the store when
 * this node has none), *ret_size, and its object (*ret_obj, a new reference). */
int v1_file_open(v1_files *f, const char *id, int *ret_fd, uint64_t *ret_size, json_t **ret_obj, v1_err *err);
