/* store-work-backend.h: what a backend of the store implements for the Work API's queue
 * (store-work.h): the rows of work (the body as JSON text) and work_keys. The front
 * (store-work.c) checks the arguments and makes and reads the JSON. Only src/store/ includes it. */
#pragma once

#include "store-backend.h"
#include "store-work.h"

typedef struct store_work_ops {
        int (*insert)(store *s, const store_work *w, const char *body, hull_error *e);
        /* w's columns filled, *ret_body the body's text (malloc'd) */
        int (*get)(store *s, const char *id, store_work *w, char **ret_body, hull_error *e);
        int (*update)(store *s, const store_work *w, const char *body, hull_error *e);
        int (*expire)(store *s, const char *env_id, int64_t now_ms, hull_error *e);
        int (*due)(store *s, const char *env_id, int64_t reclaim_before_ms, unsigned max, json_t *ids, hull_error *e);
        /* ids of up to max items after the key, in order, into ids */
        int (*list)(store *s, const char *env_id, int64_t after_ms, const char *after_id, unsigned max, json_t *ids,
                    hull_error *e);
        int (*stats)(store *s, const char *env_id, store_work_stats *ret, hull_error *e);
        int (*key_add)(store *s, const char *digest_hex, const char *scope, const char *work_id, int64_t created_ms,
                       hull_error *e);
        int (*key_find)(store *s, const char *digest_hex, char *ret_scope, char *ret_work_id, hull_error *e);
        int (*key_drop)(store *s, const char *work_id, hull_error *e);
} store_work_ops;

extern const store_work_ops sqlt_work_ops;
extern const store_work_ops pg_work_ops;
