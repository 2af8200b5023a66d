/* v1-webhook.c: see v1-webhook.h. The catalog, the events' payloads into the outbox, and the
 * subscriptions: checked, their secrets made and sealed (vault-seal.h, the ring the vaults use,
 * bound to the subscription's id), never in an answer but the one that made them. */
#include "v1-webhook.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"
#include "home.h"
#include "macro.h"
#include "store-webhook.h"
#include "svc-agent.h"
#include "time-util.h"
#include "utf8.h"
#include "v1-run.h"
#include "v1-shape-internal.h"
#include "vault-seal.h"
#include "webhook-sign.h"

/* The SDK's BetaWebhookEvent data types (@anthropic-ai/sdk resources/beta/webhooks.d.ts). */
const char *const v1_webhook_types[] = {"session.created",
                                        "session.pending",
                                        "session.running",
                                        "session.idled",
                                        "session.requires_action",
                                        "session.archived",
                                        "session.deleted",
                                        "session.updated",
                                        "session.status_rescheduled",
                                        "session.status_run_started",
                                        "session.status_idled",
                                        "session.status_terminated",
                                        "session.outcome_evaluation_ended",
                                        "session.budget_reached",
                                        "session.thread_created",
                                        "session.thread_idled",
                                        "session.thread_terminated",
                                        "vault.created",
                                        "vault.archived",
                                        "vault.deleted",
                                        "vault_credential.created",
                                        "vault_credential.archived",
                                        "vault_credential.deleted",
                                        "vault_credential.refresh_failed",
                                        "agent.created",
                                        "agent.updated",
                                        "agent.archived",
                                        "agent.deleted",
                                        "environment.created",
                                        "environment.updated",
                                        "environment.archived",
                                        "environment.deleted",
                                        "deployment.created",
                                        "deployment.updated",
                                        "deployment.paused",
                                        "deployment.unpaused",
                                        "deployment.archived",
                                        "deployment.deleted",
                                        "deployment_run.started",
                                        "deployment_run.succeeded",
                                        "deployment_run.failed",
                                        "memory_store.created",
                                        "memory_store.archived",
                                        "memory_store.deleted",
                                        "user_profile.enforcement_action_opened",
                                        "user_profile.enforcement_action_resolved",
                                        "user_profile.program_status_updated",
                                        "external_key.failed",
                                        "external_key.recovered",
                                        "external_storage.failed",
                                        "external_storage.recovered",
                                        NULL};

bool v1_webhook_type_known(const char *type) {
        return type && v1_in_list(type, v1_webhook_types);
}

/* The payload of an event, as the SDK's BetaWebhookEvent. */
static json_t *payload(const char *event_id, const char *type, const char *id, const char *parent) {
        char now[STORE_TIME_MAX];
        store_now_rfc3339(now);
        json_t *data = json_pack("{s:s, s:s, s:s}", "type", type, "id", id, "organization_id", V1_WEBHOOK_ORG_ID);
        if (!data)
                return NULL;
        bool org_only = strncmp(type, "user_profile.", 13) == 0 || strncmp(type, "external_", 9) == 0;
        if (!org_only)
                json_object_set_new(data, "workspace_id", json_string(V1_WEBHOOK_WORKSPACE_ID));
        if (parent)
                json_object_set_new(data,
                                    strncmp(type, "vault_credential.", 17) == 0 ? "vault_id"
                                    : strncmp(type, "user_profile.", 13) == 0   ? "enforcement_action_id"
                                                                                : "session_thread_id",
                                    json_string(parent));
        return json_pack("{s:s, s:s, s:s, s:o}", "type", "event", "id", event_id, "created_at", now, "data", data);
}

static int enqueue(store *s, const char *type, const char *id, const char *parent, const char *only,
                   char ret_event[static STORE_ID_MAX], hull_error *e) {
        hull_error dummy = {0};
        if (!e)
                e = &dummy;
        if (!v1_webhook_type_known(type) || !id || !id[0])
                return hull_err(e, -EINVAL, "webhook: %s is not an event type of the catalog", type ? type : "(null)");
        v1_id_new("whe_", ret_event);
        json_auto_t *p = payload(ret_event, type, id, parent);
        _cleanup_free_ char *body = p ? json_dumps(p, JSON_COMPACT) : NULL;
        if (!body)
                return hull_err(e, -ENOMEM, "webhook: out of memory");
        return store_webhook_enqueue(s, type, ret_event, only, (int64_t) now_unix_ms(), body, NULL, e);
}

int v1_webhook_emit(store *s, const char *type, const char *id, const char *parent, hull_error *e) {
        char ev[STORE_ID_MAX];
        return enqueue(s, type, id, parent, NULL, ev, e);
}

int v1_webhook_delivery(const char *type, const char *id, json_t *into, hull_error *e) {
        if (!v1_webhook_type_known(type) || !id || !id[0])
                return hull_err(e, -EINVAL, "webhook: %s is not an event type of the catalog", type ? type : "(null)");
        char event[STORE_ID_MAX];
        v1_id_new("whe_", event);
        json_auto_t *p = payload(event, type, id, NULL);
        _cleanup_free_ char *body = p ? json_dumps(p, JSON_COMPACT) : NULL;
        json_t *d = body ? json_pack("{s:s, s:s, s:I, s:s}", "e", event, "t", type, "c", (json_int_t) now_unix_ms(),
                                     "b", body)
                         : NULL;
        if (!d || json_array_append_new(into, d) < 0)
                return hull_err(e, -ENOMEM, "webhook: out of memory");
        return 0;
}

size_t v1_webhook_session_types(const json_t *ev, bool *announced, const char *ret[V1_WEBHOOK_PER_EVENT_MAX]) {
        static const char *const map[][2] = {
                {"session.status_running", "session.status_run_started"},
                {"session.status_idle", "session.status_idled"},
                {"session.status_rescheduled", "session.status_rescheduled"},
                {"session.status_terminated", "session.status_terminated"},
        };
        const char *type = json_string_value(json_object_get(ev, "type"));
        size_t n = 0;
        if (!type)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (strcmp(type, map[i][0]) == 0)
                        ret[n++] = map[i][1];
        /* session.budget_reached at most once per budget; a change of the budget re-arms it */
        const char *stop = json_string_value(json_object_get(json_object_get(ev, "stop_reason"), "type"));
        if (strcmp(type, "session.status_idle") == 0 && stop && strcmp(stop, "budget_reached") == 0) {
                if (!*announced)
                        ret[n++] = "session.budget_reached";
                *announced = true;
        } else if (strcmp(type, "session.updated") == 0 && json_object_get(ev, "budget"))
                *announced = false;
        else if (strcmp(type, "span.outcome_evaluation_end") == 0) /* a verdict */
                ret[n++] = "session.outcome_evaluation_ended";
        return n;
}

/* ---- secrets ---- */

static int ring(vault_keyring *k, hull_error *e) {
        char home[SBX_PATH_MAX];
        int r = home_resolve(home, e);
        return r < 0 ? r : vault_keyring_load(home, k, e);
}

static int seal(const char *id, const v1_webhook_secrets *sec, char **ret, char ret_kid[VAULT_KEY_ID_MAX],
                hull_error *e) {
        _cleanup_(vault_keyring_wipep) vault_keyring k = {0};
        int r = ring(&k, e);
        if (r < 0)
                return r;
        char text[3 * WEBHOOK_SECRET_MAX + 96];
        int n = snprintf(text, sizeof(text), "{\"secret\":\"%s\",\"previous\":\"%s\",\"previous_until_ms\":%lld}",
                         sec->secret, sec->previous, (long long) sec->previous_until_ms);
        r = vault_seal(&k, id, text, (size_t) n, ret, e);
        explicit_bzero(text, sizeof(text));
        if (r >= 0)
                snprintf(ret_kid, VAULT_KEY_ID_MAX, "%s", k.keys[0].id);
        return r;
}

int v1_webhook_secrets_open(const char *id, const char *sealed, v1_webhook_secrets *ret, hull_error *e) {
        _cleanup_(vault_keyring_wipep) vault_keyring k = {0};
        int r = ring(&k, e);
        if (r < 0)
                return r;
        _cleanup_secret_ char *text = NULL;
        size_t n = 0;
        if ((r = vault_open(&k, id, sealed, &text, &n, e)) < 0)
                return r;
        json_t *o = json_loadb(text, n, 0, NULL);
        const char *cur = json_string_value(json_object_get(o, "secret"));
        const char *prev = json_string_value(json_object_get(o, "previous"));
        bool ok = cur && prev && strlen(cur) < WEBHOOK_SECRET_MAX && strlen(prev) < WEBHOOK_SECRET_MAX;
        if (ok) {
                snprintf(ret->secret, sizeof(ret->secret), "%s", cur);
                snprintf(ret->previous, sizeof(ret->previous), "%s", prev);
                ret->previous_until_ms = json_integer_value(json_object_get(o, "previous_until_ms"));
        }
        if (o) { /* wipe the texts jansson copied */
                if (cur)
                        explicit_bzero((char *) cur, strlen(cur));
                if (prev)
                        explicit_bzero((char *) prev, strlen(prev));
                json_decref(o);
        }
        return ok ? 0 : hull_err(e, -EBADMSG, "webhook %s: its opened secrets are not what hull sealed", id);
}

/* ---- subscriptions ---- */

static int store_failed(int r, const hull_error *he, const char *id, v1_err *err) {
        if (r == -ENOENT)
                return v1_fail(err, 404, "webhook_not_found", "no webhook %.64s (GET /v1/webhooks lists them)",
                               id ? id : "");
        return v1_fail(err, 500, NULL, "webhook: %s", he->msg);
}

/* url: a string the egress guard admits (st's allowlist), checked now; the delivery checks it
 * again at each attempt (a name's addresses can change). */
static int check_url(const settings *st, const json_t *v, const char **ret, v1_err *err) {
        const char *url = json_string_value(v);
        if (!url)
                return v1_fail(err, 400, NULL, "url: required, a string (the http:// or https:// URL to POST to)");
        if (strlen(url) >= WEBHOOK_URL_MAX || !utf8_is_valid(url, strlen(url)))
                return v1_fail(err, 400, NULL, "url: at most %u bytes of UTF-8", WEBHOOK_URL_MAX - 1);
        _cleanup_(egress_target_done) egress_target t = {0};
        hull_error he = {0};
        if (svc_egress_check(st, "webhook url", url, WEBHOOK_CONNECT_TIMEOUT_MS, &t, &he) < 0)
                return v1_fail(err, 400, "webhook_url_refused", "%s", he.msg);
        *ret = url;
        return 0;
}

static int check_types(const json_t *v, v1_err *err) {
        if (!json_is_array(v) || json_array_size(v) == 0)
                return v1_fail(err, 400, NULL,
                               "event_types: required, a non-empty array of event types (session.created, ...: "
                               "docs/WEBHOOKS.md lists them)");
        if (json_array_size(v) > WEBHOOK_TYPES_MAX)
                return v1_fail(err, 400, NULL, "event_types: at most %u", WEBHOOK_TYPES_MAX);
        size_t i, j;
        json_t *t, *u;
        json_array_foreach(v, i, t) {
                const char *s = json_string_value(t);
                if (!s)
                        return v1_fail(err, 400, NULL, "event_types[%zu]: must be a string", i);
                if (!v1_webhook_type_known(s))
                        return v1_fail(err, 400, "unknown_event_type",
                                       "event_types[%zu]: %.80s is not an event type (the catalog: session.created, "
                                       "agent.created, vault.created, ...; docs/WEBHOOKS.md lists every one)",
                                       i, s);
                json_array_foreach(v, j, u) if (j < i && json_equal(t, u)) return v1_fail(
                        err, 400, NULL, "event_types[%zu]: %s is named twice", i, s);
        }
        return 0;
}

static int check_desc(const json_t *v, v1_err *err) {
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v) || json_string_length(v) >= WEBHOOK_DESC_MAX)
                return v1_fail(err, 400, NULL, "description: a string of at most %u bytes", WEBHOOK_DESC_MAX - 1);
        return 0;
}

int v1_webhook_create(store *s, const settings *st, const json_t *body, json_t **ret, v1_err *err) {
        static const char *const keys[] = {"url", "event_types", "description", NULL};
        const char *url = NULL;
        int r;
        if ((r = v1_check_object(body, "", keys, err)) < 0 ||
            (r = check_url(st, json_object_get(body, "url"), &url, err)) < 0 ||
            (r = check_types(json_object_get(body, "event_types"), err)) < 0 ||
            (r = check_desc(json_object_get(body, "description"), err)) < 0)
                return r;
        hull_error he = {0};
        json_auto_t *all = NULL;
        if ((r = store_webhook_list(s, &all, &he)) < 0)
                return store_failed(r, &he, NULL, err);
        if (json_array_size(all) >= WEBHOOKS_MAX)
                return v1_fail(err, 409, "too_many_webhooks", "there are %u webhooks already: delete one first",
                               WEBHOOKS_MAX);
        char id[STORE_ID_MAX], now[STORE_TIME_MAX], kid[VAULT_KEY_ID_MAX];
        v1_id_new("wh_", id);
        store_now_rfc3339(now);
        v1_webhook_secrets sec = {0};
        _cleanup_free_ char *sealed = NULL;
        if ((r = webhook_secret_new(sec.secret, &he)) < 0 || (r = seal(id, &sec, &sealed, kid, &he)) < 0) {
                explicit_bzero(&sec, sizeof(sec));
                return v1_fail(err, 500, "vault_key_unavailable", "the webhook's secret cannot be sealed: %s", he.msg);
        }
        json_auto_t *o = json_pack("{s:s, s:s, s:s, s:O, s:O?, s:s, s:n, s:i, s:n, s:s, s:s, s:n}", "type", "webhook",
                                   "id", id, "url", url, "event_types", json_object_get(body, "event_types"),
                                   "description", json_object_get(body, "description"), "status", "enabled",
                                   "disabled_reason", "consecutive_failures", 0, "failing_since", "created_at", now,
                                   "updated_at", now, "secret_rotated_at");
        if (!o || (r = store_webhook_put(s, true, o, (int64_t) now_unix_ms(), sealed, kid, &he)) < 0) {
                explicit_bzero(&sec, sizeof(sec));
                return o ? store_failed(r, &he, id, err) : -ENOMEM;
        }
        json_t *out = json_deep_copy(o);
        if (out)
                json_object_set_new(out, "secret", json_string(sec.secret));
        explicit_bzero(&sec, sizeof(sec));
        if (!out)
                return -ENOMEM;
        *ret = out;
        return 0;
}

int v1_webhook_update(store *s, const settings *st, const char *id, const json_t *body, json_t **ret, v1_err *err) {
        static const char *const keys[] = {"url", "event_types", "description", "status", NULL};
        int r = v1_check_object(body, "", keys, err);
        if (r < 0)
                return r;
        hull_error he = {0};
        json_auto_t *cur = NULL;
        if ((r = store_webhook_get(s, id, &cur, NULL, &he)) < 0)
                return store_failed(r, &he, id, err);
        const char *url = NULL;
        json_t *v;
        if ((v = json_object_get(body, "url")) && (r = check_url(st, v, &url, err)) < 0)
                return r;
        if (url)
                json_object_set_new(cur, "url", json_string(url));
        if ((v = json_object_get(body, "event_types"))) {
                if ((r = check_types(v, err)) < 0)
                        return r;
                json_object_set(cur, "event_types", v);
        }
        if ((v = json_object_get(body, "description"))) {
                if ((r = check_desc(v, err)) < 0)
                        return r;
                json_object_set(cur, "description", v);
        }
        if ((v = json_object_get(body, "status"))) {
                const char *sv = json_string_value(v);
                if (!sv || (strcmp(sv, "enabled") != 0 && strcmp(sv, "disabled") != 0))
                        return v1_fail(err, 400, NULL, "status: \"enabled\" or \"disabled\"");
                json_object_set_new(cur, "status", json_string(sv));
                json_object_set_new(cur, "disabled_reason",
                                    strcmp(sv, "enabled") == 0 ? json_null() : json_string("disabled by a caller"));
                if (strcmp(sv, "enabled") == 0) { /* a new start: the failures so far are forgotten */
                        json_object_set_new(cur, "consecutive_failures", json_integer(0));
                        json_object_set_new(cur, "failing_since", json_null());
                }
        }
        char now[STORE_TIME_MAX];
        store_now_rfc3339(now);
        json_object_set_new(cur, "updated_at", json_string(now));
        if ((r = store_webhook_put(s, false, cur, 0, NULL, NULL, &he)) < 0)
                return store_failed(r, &he, id, err);
        *ret = TAKE_PTR(cur);
        return 0;
}

int v1_webhook_rotate(store *s, const char *id, uint64_t grace_ms, json_t **ret, v1_err *err) {
        hull_error he = {0};
        json_auto_t *cur = NULL;
        _cleanup_free_ char *sealed = NULL, *resealed = NULL;
        int r = store_webhook_get(s, id, &cur, &sealed, &he);
        if (r < 0)
                return store_failed(r, &he, id, err);
        v1_webhook_secrets sec = {0};
        char kid[VAULT_KEY_ID_MAX], now[STORE_TIME_MAX];
        if ((r = v1_webhook_secrets_open(id, sealed, &sec, &he)) >= 0) {
                memcpy(sec.previous, sec.secret, sizeof(sec.previous));
                sec.previous_until_ms = (int64_t) (now_unix_ms() + grace_ms);
                r = webhook_secret_new(sec.secret, &he);
        }
        if (r >= 0)
                r = seal(id, &sec, &resealed, kid, &he);
        if (r < 0) {
                explicit_bzero(&sec, sizeof(sec));
                return v1_fail(err, 500, "vault_key_unavailable", "the webhook's secret cannot be rotated: %s", he.msg);
        }
        store_now_rfc3339(now);
        json_object_set_new(cur, "secret_rotated_at", json_string(now));
        json_object_set_new(cur, "updated_at", json_string(now));
        if ((r = store_webhook_put(s, false, cur, 0, resealed, kid, &he)) < 0) {
                explicit_bzero(&sec, sizeof(sec));
                return store_failed(r, &he, id, err);
        }
        json_t *out = json_deep_copy(cur);
        if (out)
                json_object_set_new(out, "secret", json_string(sec.secret));
        explicit_bzero(&sec, sizeof(sec));
        if (!out)
                return -ENOMEM;
        *ret = out;
        return 0;
}

int v1_webhook_test(store *s, const char *id, const char *event_type, json_t **ret, v1_err *err) {
        hull_error he = {0};
        json_auto_t *cur = NULL;
        int r = store_webhook_get(s, id, &cur, NULL, &he);
        if (r < 0)
                return store_failed(r, &he, id, err);
        if (!event_type)
                event_type = json_string_value(json_array_get(json_object_get(cur, "event_types"), 0));
        if (!v1_webhook_type_known(event_type))
                return v1_fail(err, 400, "unknown_event_type", "event_type: %.80s is not an event type of the catalog",
                               event_type ? event_type : "(none)");
        char ev[STORE_ID_MAX];
        if ((r = enqueue(s, event_type, id, NULL, id, ev, &he)) < 0)
                return store_failed(r, &he, id, err);
        *ret = json_pack("{s:s, s:s, s:s, s:s}", "type", "webhook_test", "webhook_id", id, "event_id", ev, "event_type",
                         event_type);
        return *ret ? 0 : -ENOMEM;
}

int v1_webhook_delete(store *s, const char *id, v1_err *err) {
        hull_error he = {0};
        int r = store_webhook_delete(s, id, &he);
        return r < 0 ? store_failed(r, &he, id, err) : 0;
}

int v1_webhook_list(store *s, const char *page, unsigned limit, json_t **ret, v1_err *err) {
        hull_error he = {0};
        json_auto_t *all = NULL;
        int r = store_webhook_list(s, &all, &he);
        if (r < 0)
                return store_failed(r, &he, NULL, err);
        size_t start = 0, i;
        json_t *v;
        if (page) {
                start = SIZE_MAX;
                json_array_foreach(all, i, v) if (strcmp(json_string_value(json_object_get(v, "id")) ?: "", page) == 0)
                        start = i + 1;
                if (start == SIZE_MAX)
                        return v1_fail(err, 400, NULL, "page: not a cursor of this list (start again without page)");
        }
        json_t *data = json_array();
        for (i = start; data && i < json_array_size(all) && json_array_size(data) < limit; i++)
                json_array_append(data, json_array_get(all, i));
        bool more = i < json_array_size(all);
        const char *last = json_string_value(json_object_get(json_array_get(data, json_array_size(data) - 1), "id"));
        *ret = json_pack("{s:o?, s:s?}", "data", data, "next_page", more ? last : NULL);
        return *ret ? 0 : -ENOMEM;
}
