/* store-webhook-backend.h: what a backend of the store implements for webhooks (store-webhook.h),
 * as rows: webhooks (id, created_ms, types as ",a,b,", enabled, body, key_id, sealed) and
 * webhook_deliveries (event_id, webhook_id, created_ms, due_ms, attempts, body). The front
 * (store-webhook.c) checks the arguments and makes the JSON. Only src/store/ includes it. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "store-backend.h"

typedef struct store_webhook_row {
        const char *id, *types, *body, *key_id, *sealed; /* sealed NULL on an update: kept */
        int64_t created_ms;
        bool enabled;
} store_webhook_row;

typedef struct store_webhook_ops {
        int (*put)(store *s, bool create, const store_webhook_row *w, hull_error *e);
        int (*get)(store *s, const char *id, json_t **ret, char **ret_sealed, hull_error *e);
        int (*list)(store *s, unsigned max, json_t *out, hull_error *e);
        int (*remove)(store *s, const char *id, hull_error *e);
        int (*enqueue)(store *s, const char *type, const char *event_id, const char *webhook_id, int64_t created_ms,
                       const char *body, size_t *ret_n, hull_error *e);
        int (*claim)(store *s, int64_t now_ms, int64_t until_ms, unsigned max, json_t *out, hull_error *e);
        int (*settle)(store *s, const char *event_id, const char *webhook_id, int64_t due_ms, int64_t attempts,
                      hull_error *e);
        int (*pending)(store *s, const char *webhook_id, int64_t *ret, hull_error *e);
} store_webhook_ops;

extern const store_webhook_ops sqlt_webhook_ops;
extern const store_webhook_ops pg_webhook_ops;
