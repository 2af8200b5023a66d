/* store-webhook.h: outbound webhooks (/v1/webhooks, issue 23) in the store: each subscription (its
 * JSON object, which holds no secret, its event types and whether it is enabled, and its secrets
 * sealed by the caller with the id of the key that sealed them) and the outbox: one row a
 * delivery (an event to a subscription) until it is delivered or dropped, with when it is next
 * due and how often it was tried. Deliveries live in the database, so they survive a restart and
 * every node sharing a PostgreSQL store takes its share (a claimed row is another's again after
 * its claim ends). Every function returns 0 or a negative errno with *e: -ENOENT (no such
 * subscription), -EEXIST (its id is taken). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* The subscription obj ("id", "event_types", "status": "enabled" or else disabled) stored
 * (create), or its object replaced (sealed NULL: the secrets kept). */
int store_webhook_put(store *s, bool create, const json_t *obj, int64_t created_ms, const char *sealed,
                      const char *key_id, hull_error *e);
/* Its object (a new reference) and, when ret_sealed is not NULL, its sealed secrets (malloc'd). */
int store_webhook_get(store *s, const char *id, json_t **ret, char **ret_sealed, hull_error *e);
/* Every subscription (at most WEBHOOKS_MAX), newest first, as a JSON array. */
int store_webhook_list(store *s, json_t **ret, hull_error *e);
/* The subscription and its pending deliveries. */
int store_webhook_delete(store *s, const char *id, hull_error *e);

/* One delivery of the event (event_id, its type, the JSON payload body) to each enabled
 * subscription that asked for its type, or (webhook_id not NULL) to that one only, whatever its
 * types: in one statement, due now. *ret_n (may be NULL): how many. A wake-up set with
 * store_webhook_set_wake is called after a commit that added any. */
int store_webhook_enqueue(store *s, const char *type, const char *event_id, const char *webhook_id, int64_t created_ms,
                          const char *body, size_t *ret_n, hull_error *e);
/* Up to max deliveries due by now_ms to enabled subscriptions, claimed until until_ms (no other
 * claim takes them before), oldest due first: a JSON array of {"event_id", "webhook_id",
 * "attempts", "body"}. */
int store_webhook_claim(store *s, int64_t now_ms, int64_t until_ms, unsigned max, json_t **ret, hull_error *e);
/* A delivery's end (due_ms < 0: delivered or dropped, its row goes) or its next attempt: due at
 * due_ms, attempts so far. -ENOENT when it is gone (its subscription deleted meanwhile). */
int store_webhook_settle(store *s, const char *event_id, const char *webhook_id, int64_t due_ms, int64_t attempts,
                         hull_error *e);
/* How many deliveries wait (webhook_id NULL: for every subscription). */
int store_webhook_pending(store *s, const char *webhook_id, int64_t *ret, hull_error *e);

/* fn(ud) after each enqueue that added a delivery (the delivery worker's wake-up); NULL: none.
 * Set before other threads use s. */
void store_webhook_set_wake(store *s, void (*fn)(void *ud), void *ud);
