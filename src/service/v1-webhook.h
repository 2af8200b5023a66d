/* v1-webhook.h: outbound webhooks (issue 23; hull's extension /v1/webhooks, docs/WEBHOOKS.md):
 * subscriptions (a URL through the egress guard, the event types it wants from the catalog,
 * a whsec_ secret sealed at rest like the vaults' credentials and shown once), the events emitted
 * where they become durable (one line: v1_webhook_emit), and the delivery worker of hull serve
 * (v1-webhook-deliver.c): each delivery from the store's outbox, signed as Standard Webhooks
 * says, retried with jittered exponential backoff, its endpoint disabled on a redirect or after
 * sustained failure.
 *
 * The catalog is the Anthropic SDK's BetaWebhookEvent types; a payload is its shape:
 * {"type":"event","id":"whe_...","created_at":RFC 3339,"data":{"type","id","organization_id",
 * "workspace_id", and "vault_id" for a credential or "session_thread_id" for a thread}}. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "dlog.h"
#include "settings.h"
#include "store.h"
#include "v1-shape.h"

/* hull has one organization and one workspace; the payloads name them so. */
#define V1_WEBHOOK_ORG_ID "org_hull"
#define V1_WEBHOOK_WORKSPACE_ID "wrkspc_default"

/* Is type one of the catalog's? */
bool v1_webhook_type_known(const char *type);
/* The catalog, NULL-ended. */
extern const char *const v1_webhook_types[];

/* The event type (one of the catalog's) about the resource id (parent: a credential's vault_id,
 * a thread's session_thread_id, else NULL) queued for every subscription that wants it. Call it
 * after the change is committed. Returns 0, or a negative errno with *e (may be NULL) when the
 * outbox cannot be written: the change itself stands. */
int v1_webhook_emit(store *s, const char *type, const char *id, const char *parent, hull_error *e);

/* The webhook events a logged session event makes (its status change under the webhook's name,
 * session.budget_reached once per budget, an outcome's verdict) in ret (at most
 * V1_WEBHOOK_PER_EVENT_MAX); *announced: session.budget_reached was sent for the session's budget
 * (updated: a change of the budget re-arms it). Returns how many. */
size_t v1_webhook_session_types(const json_t *ev, bool *announced, const char *ret[V1_WEBHOOK_PER_EVENT_MAX]);
/* What v1_webhook_emit queues for type about id (a session's), as one delivery appended to into,
 * {"e": its whe_ id, "t": type, "c": now in ms, "b": its payload}: for
 * store_events_append_with_session, which queues it in the events' own statement (one commit). */
int v1_webhook_delivery(const char *type, const char *id, json_t *into, hull_error *e);

/* The routes' engine: each returns 0 with *ret (a new reference), or a negative errno with *err
 * (400 for a bad body, a URL the egress guard refuses or an unknown event type; 404; 409 when
 * there are WEBHOOKS_MAX already). st: the egress allowlist (may be NULL). */
int v1_webhook_create(store *s, const settings *st, const json_t *body, json_t **ret, v1_err *err);
int v1_webhook_update(store *s, const settings *st, const char *id, const json_t *body, json_t **ret, v1_err *err);
/* A new secret (in *ret's "secret", this once); the previous one still signs for grace_ms. */
int v1_webhook_rotate(store *s, const char *id, uint64_t grace_ms, json_t **ret, v1_err *err);
/* One delivery of event_type (NULL: the subscription's first) to this subscription now, whatever
 * its types: *ret {"type":"webhook_test","webhook_id","event_id"}. */
int v1_webhook_test(store *s, const char *id, const char *event_type, json_t **ret, v1_err *err);
int v1_webhook_delete(store *s, const char *id, v1_err *err);
/* The subscriptions (no secret), newest first: {"data":[...],"next_page"} from page (a
 * subscription's id: those after it), at most limit. */
int v1_webhook_list(store *s, const char *page, unsigned limit, json_t **ret, v1_err *err);

/* The secrets of a subscription: opened from their envelope (aad: its id). */
typedef struct v1_webhook_secrets {
        char secret[WEBHOOK_SECRET_MAX];
        char previous[WEBHOOK_SECRET_MAX]; /* "" when none */
        int64_t previous_until_ms;         /* Unix ms: previous signs until then */
} v1_webhook_secrets;
int v1_webhook_secrets_open(const char *id, const char *sealed, v1_webhook_secrets *ret, hull_error *e);

/* ---- the delivery worker (v1-webhook-deliver.c) ---- */

typedef struct v1_webhooks v1_webhooks;

/* WEBHOOK_WORKERS threads taking deliveries from s's outbox (woken at each enqueue), each POSTed
 * with libcurl to its URL as the egress guard admits it (st's allowlist), within
 * WEBHOOK_CONNECT_TIMEOUT_MS / WEBHOOK_TIMEOUT_MS; at most WEBHOOK_STORE_CALLS of them in a call
 * of s at once (a PostgreSQL node's other pooled connections stay its requests', however long the
 * outbox is locked). log: what happened to each (never a secret). */
int v1_webhooks_start(store *s, const settings *st, const dlog *log, v1_webhooks **ret, hull_error *e);
/* Stop taking deliveries, wait up to WEBHOOK_STOP_WAIT_MS for those in flight, join the threads.
 * An unfinished delivery stays in the outbox (its claim ends; the next start sends it). */
void v1_webhooks_stop(v1_webhooks *w);
