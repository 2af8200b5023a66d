/* v1-vault-auth.c: see v1-vault.h. The credentials' secrets sealed and opened with the key ring
 * ($HULL_HOME's, read at each use), an MCP OAuth token refreshed at its token endpoint (RFC 6749
 * §6: grant_type=refresh_token, the client authenticated as the credential says), the header a
 * session's MCP connection gets, mcp_oauth_validate, and the rekey after a key rotation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base64.h"
#include "egress.h"
#include "svc-agent.h"
#include "home.h"
#include "http-client.h"
#include "macro.h"
#include "time-util.h"
#include "v1-vault-internal.h"
#include "v1-vault.h"
#include "v1-webhook.h"
#include "vault-seal.h"

/* ---- sealing ---- */

static int ring_load(vault_keyring *k, hull_error *e) {
        char home[SBX_PATH_MAX];
        int r = home_resolve(home, e);
        if (r < 0)
                return r;
        return vault_keyring_load(home, k, e);
}

int v1v_seal(const char *id, const json_t *secrets, char **ret, char ret_kid[VAULT_KEY_ID_MAX], hull_error *e) {
        _cleanup_(vault_keyring_wipep) vault_keyring k = {0};
        int r = ring_load(&k, e);
        if (r < 0)
                return r;
        _cleanup_secret_ char *text = json_dumps(secrets, JSON_COMPACT);
        if (!text)
                return hull_err(e, -ENOMEM, "vault: cannot seal");
        if ((r = vault_seal(&k, id, text, strlen(text), ret, e)) < 0)
                return r;
        snprintf(ret_kid, VAULT_KEY_ID_MAX, "%s", k.keys[0].id);
        return 0;
}

void v1v_secrets_free(json_t *o) {
        if (!o)
                return;
        const char *k;
        json_t *v;
        json_object_foreach(o, k, v) if (json_is_string(v)) {
                /* jansson keeps the text it was given; wipe it where it lies */
                char *p = (char *) json_string_value(v);
                explicit_bzero(p, json_string_length(v));
        }
        json_decref(o);
}

int v1v_open(const char *id, const char *sealed, json_t **ret, bool *ret_stale, hull_error *e) {
        _cleanup_(vault_keyring_wipep) vault_keyring k = {0};
        int r = ring_load(&k, e);
        if (r < 0)
                return r;
        _cleanup_secret_ char *text = NULL;
        size_t n = 0;
        if ((r = vault_open(&k, id, sealed, &text, &n, e)) < 0)
                return r;
        json_t *o = json_loadb(text, n, 0, NULL);
        if (!json_is_object(o)) {
                json_decref(o);
                return hull_fail(e, -EBADMSG, "vault: credential %s: its opened secrets are not an object", id);
        }
        if (ret_stale) {
                char kid[VAULT_KEY_ID_MAX];
                *ret_stale = vault_sealed_key_id(sealed, kid) == 0 && strcmp(kid, k.keys[0].id) != 0;
        }
        *ret = o;
        return 0;
}

int v1v_put_credential(store *s, const json_t *obj, const json_t *secrets, bool create, v1_err *e) {
        const char *id = json_string_value(json_object_get(obj, "id"));
        _cleanup_free_ char *sealed = NULL;
        char kid[VAULT_KEY_ID_MAX];
        hull_error he = {0};
        int r = v1v_seal(id, secrets, &sealed, kid, &he);
        if (r < 0)
                return v1_fail(e, 500, "vault_key_unavailable", "the credential's secrets cannot be sealed: %s",
                               he.msg);
        r = store_vault_put(s, STORE_VAULT_CREDENTIAL, obj, sealed, kid, create, &he);
        if (r == -EEXIST)
                return v1_fail(e, 409, "credential_conflict",
                               "the vault already has an active credential for that mcp_server_url: archive or delete "
                               "it first, or update it");
        if (r == -ENOENT)
                return v1_fail(e, 404, "credential_not_found", "no credential %.64s", id);
        if (r < 0)
                return v1_fail(e, 500, NULL, "the credential could not be stored: %s", he.msg);
        return 0;
}

/* ---- the egress guard ---- */

/* url through the egress guard with st's allowlist (what names a token endpoint is an API
 * caller, not the operator): *t the URL to use and its addresses, pin[0] their pin (NULL-ended). */
static int guard(const settings *st, const char *what, const char *url, egress_target *t, char *pin, hull_error *e) {
        int r = svc_egress_check(st, what, url, VAULT_TOKEN_TIMEOUT_MS, t, e);
        if (r < 0)
                return r;
        if (!t->literal && egress_target_pin(t, pin) < 0)
                return hull_fail(e, -ENAMETOOLONG, "%s: the URL's host name is too long", what);
        return 0;
}

/* ---- refresh ---- */

typedef struct form {
        char *text;
        size_t len;
        httpc *c;
} form;

static int form_add(form *f, const char *k, const char *v) {
        if (!v)
                return 0;
        _cleanup_secret_ char *esc = NULL;
        if (httpc_escape(f->c, v, &esc) < 0)
                return -ENOMEM;
        size_t n = strlen(k) + strlen(esc) + 2;
        char *t = malloc(f->len + n + 1);
        if (!t)
                return -ENOMEM;
        int w = snprintf(t, f->len + n + 1, "%s%s%s=%s", f->text ? f->text : "", f->len ? "&" : "", k, esc);
        if (f->text) {
                explicit_bzero(f->text, f->len);
                free(f->text);
        }
        f->text = t;
        f->len = (size_t) w;
        return 0;
}

/* What the API shows of an answer: status, type, the body cut to VAULT_PROBE_BODY_MAX with every
 * token in it blanked (a token endpoint's answer holds new tokens). */
static json_t *http_json(const httpc_answer *a) {
        json_auto_t *j = json_loadb(a->body, a->body_len, 0, NULL);
        _cleanup_free_ char *shown = NULL;
        if (json_is_object(j)) {
                static const char *const secret_keys[] = {"access_token", "refresh_token", "id_token", NULL};
                for (const char *const *k = secret_keys; *k; k++)
                        if (json_object_get(j, *k))
                                json_object_set_new(j, *k, json_string("[redacted]"));
                shown = json_dumps(j, JSON_COMPACT);
        }
        const char *body = shown ? shown : "[not shown: not a JSON object]";
        size_t n = strlen(body);
        bool cut = n > VAULT_PROBE_BODY_MAX;
        return json_pack("{s:i, s:s, s:s%, s:b}", "status_code", (int) a->status, "content_type", a->content_type,
                         "body", body, cut ? (size_t) VAULT_PROBE_BODY_MAX : n, "body_truncated", cut);
}

static int refresh_answer(json_t *obj, json_t *secrets, const httpc_answer *a, hull_error *e) {
        const char *id = json_string_value(json_object_get(obj, "id"));
        json_auto_t *j = json_loadb(a->body, a->body_len, 0, NULL);
        const char *access = json_string_value(json_object_get(j, "access_token"));
        if (a->status != 200 || !access || !access[0]) {
                if (j)
                        v1v_secrets_free(TAKE_PTR(j));
                return hull_fail(e, -EACCES,
                                 "credential %s: its token endpoint refused the refresh (HTTP %ld%s): renew the "
                                 "credential's tokens",
                                 id, a->status, a->status == 200 ? ", no access_token" : "");
        }
        json_object_set_new(secrets, "access_token", json_string(access));
        const char *rt = json_string_value(json_object_get(j, "refresh_token"));
        if (rt && rt[0]) /* rotated */
                json_object_set_new(secrets, "refresh_token", json_string(rt));
        json_t *auth = json_object_get(obj, "auth");
        json_t *in = json_object_get(j, "expires_in");
        if (json_is_integer(in) && json_integer_value(in) > 0) {
                time_t t = time(NULL) + (time_t) json_integer_value(in);
                struct tm tm;
                char buf[STORE_TIME_MAX];
                gmtime_r(&t, &tm);
                strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
                json_object_set_new(auth, "expires_at", json_string(buf));
        } else
                json_object_set_new(auth, "expires_at", json_null());
        v1v_secrets_free(TAKE_PTR(j));
        return 0;
}

int v1v_refresh(const settings *st, json_t *obj, json_t *secrets, json_t **ret_http, const char **ret_status,
                hull_error *e) {
        const char *id = json_string_value(json_object_get(obj, "id"));
        const json_t *rf = json_object_get(json_object_get(obj, "auth"), "refresh");
        const char *rt = json_string_value(json_object_get(secrets, "refresh_token"));
        if (ret_http)
                *ret_http = NULL;
        if (ret_status)
                *ret_status = "no_refresh_token";
        if (!json_is_object(rf) || !rt)
                return hull_fail(e, -ENOKEY, "credential %s has no refresh token: renew its access token", id);
        const char *auth = json_string_value(json_object_get(json_object_get(rf, "token_endpoint_auth"), "type"));
        const char *client = json_string_value(json_object_get(rf, "client_id"));
        const char *secret = json_string_value(json_object_get(secrets, "client_secret"));
        _cleanup_(httpc_freep) httpc *c = NULL;
        int r = httpc_new(&c, e);
        if (r < 0)
                return r;
        form f = {.c = c};
        bool basic = auth && strcmp(auth, "client_secret_basic") == 0;
        r = form_add(&f, "grant_type", "refresh_token");
        r = r ?: form_add(&f, "refresh_token", rt);
        r = r ?: form_add(&f, "client_id", basic ? NULL : client);
        r = r ?: form_add(&f, "client_secret", auth && strcmp(auth, "client_secret_post") == 0 ? secret : NULL);
        r = r ?: form_add(&f, "scope", json_string_value(json_object_get(rf, "scope")));
        r = r ?: form_add(&f, "resource", json_string_value(json_object_get(rf, "resource")));
        _cleanup_secret_ char *form_text = f.text, *basic_hdr = NULL, *pair = NULL, *b64 = NULL;
        if (r < 0)
                return hull_err(e, -ENOMEM, "credential %s: cannot refresh", id);
        if (basic && (asprintf(&pair, "%s:%s", client ? client : "", secret ? secret : "") < 0 ||
                      base64_encode(pair, strlen(pair), true, &b64, NULL) < 0 ||
                      asprintf(&basic_hdr, "Authorization: Basic %s", b64) < 0))
                return hull_err(e, -ENOMEM, "credential %s: cannot refresh", id);
        const char *headers[] = {"Content-Type: application/x-www-form-urlencoded", "Accept: application/json",
                                 basic_hdr, NULL};
        _cleanup_(egress_target_done) egress_target t = {0};
        char pin[EGRESS_PIN_MAX];
        const char *pins[2] = {pin, NULL};
        char what[STORE_ID_MAX + 32];
        snprintf(what, sizeof(what), "credential %s: token_endpoint", id);
        if ((r = guard(st, what, json_string_value(json_object_get(rf, "token_endpoint")), &t, pin, e)) < 0) {
                if (ret_status)
                        *ret_status = "connect_error";
                return r;
        }
        httpc_request req = {.url = t.url,
                             .resolve = t.literal ? NULL : pins,
                             .headers = headers,
                             .body = f.text,
                             .body_len = f.len,
                             .timeout_ms = VAULT_TOKEN_TIMEOUT_MS,
                             .answer_max = VAULT_TOKEN_ANSWER_MAX};
        httpc_answer a = {0};
        hull_error he = {0};
        if ((r = httpc_post(c, &req, &a, &he)) < 0) {
                if (ret_status)
                        *ret_status = "connect_error";
                return hull_fail(e, r, "credential %s: its token endpoint cannot be reached: %s", id, he.msg);
        }
        if (ret_http)
                *ret_http = http_json(&a);
        r = refresh_answer(obj, secrets, &a, e);
        if (ret_status)
                *ret_status = r < 0 ? "failed" : "succeeded";
        if (a.body)
                explicit_bzero(a.body, a.body_len);
        httpc_answer_done(&a);
        return r;
}

/* ---- what a session's MCP connection gets ---- */

static bool expiring(const json_t *auth) {
        int64_t ms;
        const char *t = json_string_value(json_object_get(auth, "expires_at"));
        if (!t || store_time_ms(t, &ms) < 0)
                return false;
        return ms / 1000 <= (int64_t) time(NULL) + VAULT_REFRESH_EARLY_S;
}

/* The active credential of vault_id for url, with its secrets: 1, 0 (none), or a negative errno. */
static int find(store *s, const char *vault_id, const char *url, json_t **ret, json_t **ret_secrets, bool *ret_stale,
                hull_error *e) {
        store_list_q q = {.limit = VAULT_CREDENTIALS_MAX};
        store_page p = {0};
        int r = store_vault_list(s, STORE_VAULT_CREDENTIAL, vault_id, &q, &p, e);
        if (r == -ENOENT)
                return 0; /* deleted since the session began: nothing from it */
        if (r < 0)
                return r;
        size_t i;
        json_t *c;
        const char *id = NULL;
        json_array_foreach(p.data, i, c) {
                const char *u = json_string_value(json_object_get(json_object_get(c, "auth"), "mcp_server_url"));
                if (u && strcmp(u, url) == 0)
                        id = json_string_value(json_object_get(c, "id"));
        }
        char cid[STORE_ID_MAX];
        snprintf(cid, sizeof(cid), "%s", id ? id : "");
        store_page_done(&p);
        if (!cid[0])
                return 0;
        _cleanup_secret_ char *sealed = NULL;
        if ((r = store_vault_get(s, STORE_VAULT_CREDENTIAL, vault_id, cid, ret, &sealed, e)) < 0)
                return r;
        if ((r = v1v_open(cid, sealed, ret_secrets, ret_stale, e)) < 0) {
                json_decref(TAKE_PTR(*ret));
                return r;
        }
        return 1;
}

int v1_vault_auth_header(store *s, const settings *st, const json_t *vault_ids, const char *url, bool force_refresh,
                         char **ret, char ret_cred_id[STORE_ID_MAX], hull_error *e) {
        *ret = NULL;
        ret_cred_id[0] = '\0';
        size_t i;
        json_t *v;
        json_array_foreach(vault_ids, i, v) {
                const char *vid = json_string_value(v);
                json_auto_t *cred = NULL;
                _cleanup_(v1v_secrets_freep) json_t *secrets = NULL;
                bool stale = false;
                int r = vid ? find(s, vid, url, &cred, &secrets, &stale, e) : 0;
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                snprintf(ret_cred_id, STORE_ID_MAX, "%s", json_string_value(json_object_get(cred, "id")));
                json_t *auth = json_object_get(cred, "auth");
                bool oauth = strcmp(json_string_value(json_object_get(auth, "type")) ?: "", "mcp_oauth") == 0;
                if (oauth && (force_refresh || expiring(auth))) {
                        if ((r = v1v_refresh(st, cred, secrets, NULL, NULL, e)) < 0) {
                                /* another session (or process) may have refreshed it first, its
                                 * rotation making this refresh token stale: its new tokens then */
                                json_auto_t *again = NULL;
                                _cleanup_(v1v_secrets_freep) json_t *fresh = NULL;
                                hull_error ae = {0};
                                if (find(s, vid, url, &again, &fresh, NULL, &ae) != 1 ||
                                    json_equal(json_object_get(fresh, "access_token"),
                                               json_object_get(secrets, "access_token")) ||
                                    (force_refresh ? false : expiring(json_object_get(again, "auth")))) {
                                        (void) v1_webhook_emit(s, "vault_credential.refresh_failed", ret_cred_id, vid,
                                                               NULL);
                                        return r;
                                }
                                json_decref(cred);
                                cred = TAKE_PTR(again);
                                v1v_secrets_free(secrets);
                                secrets = TAKE_PTR(fresh);
                        } else
                                stale = true; /* stored anew below */
                }
                if (stale) {
                        v1_err ve = {0};
                        if (v1v_put_credential(s, cred, secrets, false, &ve) < 0)
                                return hull_fail(e, -EIO, "credential %s: its new tokens cannot be stored: %s",
                                                 ret_cred_id, ve.msg);
                }
                const char *tok = json_string_value(json_object_get(secrets, oauth ? "access_token" : "token"));
                if (!tok || asprintf(ret, "Authorization: Bearer %s", tok) < 0)
                        return hull_err(e, -ENOMEM, "credential %s: cannot make its header", ret_cred_id);
                return 0;
        }
        return 0;
}

/* ---- validate ---- */

/* MCP initialize at the server with the access token: the probe's answer, and whether it took it. */
static int probe(const settings *st, const char *url, const char *token, json_t **ret, bool *ret_ok, hull_error *e) {
        _cleanup_(egress_target_done) egress_target t = {0};
        char pin[EGRESS_PIN_MAX];
        const char *pins[2] = {pin, NULL};
        int r = guard(st, "mcp_server_url", url, &t, pin, e);
        if (r < 0)
                return r;
        _cleanup_(httpc_freep) httpc *c = NULL;
        if ((r = httpc_new(&c, e)) < 0)
                return r;
        _cleanup_secret_ char *hdr = NULL;
        if (asprintf(&hdr, "Authorization: Bearer %s", token) < 0)
                return -ENOMEM;
        const char *headers[] = {"Content-Type: application/json", "Accept: application/json, text/event-stream", hdr,
                                 NULL};
        static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                                   "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{"
                                   "\"name\":\"hull-validate\",\"version\":\"1\"}}}";
        httpc_request req = {.url = t.url,
                             .resolve = t.literal ? NULL : pins,
                             .headers = headers,
                             .body = body,
                             .body_len = sizeof(body) - 1,
                             .timeout_ms = VAULT_TOKEN_TIMEOUT_MS,
                             .answer_max = VAULT_TOKEN_ANSWER_MAX,
                             .answer_truncate = true};
        httpc_answer a = {0};
        if ((r = httpc_post(c, &req, &a, e)) < 0)
                return r;
        *ret_ok = a.status >= 200 && a.status < 300;
        *ret = json_pack("{s:s, s:o}", "method", "initialize", "http_response", http_json(&a));
        httpc_answer_done(&a);
        return 0;
}

int v1_credential_validate(store *s, const settings *st, const char *vault_id, const char *id, json_t **ret,
                           v1_err *e) {
        json_auto_t *cred = NULL;
        _cleanup_(v1v_secrets_freep) json_t *secrets = NULL;
        hull_error he = {0};
        _cleanup_secret_ char *sealed = NULL;
        int r = store_vault_get(s, STORE_VAULT_CREDENTIAL, vault_id, id, &cred, &sealed, &he);
        if (r == -ENOENT || r == -EINVAL)
                return v1_fail(e, 404, "credential_not_found", "vault %.64s has no credential %.64s", vault_id, id);
        if (r < 0)
                return v1_fail(e, 500, NULL, "the credential could not be read: %s", he.msg);
        json_t *auth = json_object_get(cred, "auth");
        if (strcmp(json_string_value(json_object_get(auth, "type")) ?: "", "mcp_oauth") != 0)
                return v1_fail(e, 400, "not_mcp_oauth",
                               "credential %.64s is not an mcp_oauth credential: only those are validated", id);
        if ((r = v1v_open(id, sealed, &secrets, NULL, &he)) < 0)
                return v1_fail(e, 500, "vault_key_unavailable", "%s", he.msg);
        bool has_refresh = json_object_get(secrets, "refresh_token") != NULL;
        json_auto_t *refresh = NULL, *mcp = NULL;
        bool ok = true;
        if (has_refresh) {
                json_auto_t *http = NULL;
                const char *status = NULL;
                r = v1v_refresh(st, cred, secrets, &http, &status, &he);
                refresh = json_pack("{s:s, s:O?}", "status", status, "http_response", http);
                if (r < 0)
                        ok = false;
                else if (v1v_put_credential(s, cred, secrets, false, e) < 0)
                        return -EIO;
        }
        if (ok) {
                bool took = false;
                const char *url = json_string_value(json_object_get(auth, "mcp_server_url"));
                if (probe(st, url, json_string_value(json_object_get(secrets, "access_token")) ?: "", &mcp, &took,
                          &he) < 0)
                        mcp = json_pack("{s:s, s:n, s:s}", "method", "initialize", "http_response", "error", he.msg);
                ok = took;
        }
        char now[STORE_TIME_MAX];
        store_now_rfc3339(now);
        *ret = json_pack("{s:s, s:s, s:s, s:s, s:b, s:O?, s:O?, s:s}", "type", "vault_credential_validation",
                         "credential_id", id, "vault_id", vault_id, "status", ok ? "valid" : "invalid",
                         "has_refresh_token", has_refresh, "refresh", refresh, "mcp_probe", mcp, "validated_at", now);
        if (!*ret)
                return -ENOMEM;
        if (!refresh)
                json_object_set_new(*ret, "refresh", json_null());
        if (!mcp)
                json_object_set_new(*ret, "mcp_probe", json_null());
        return 0;
}

/* ---- rekey ---- */

int v1_vault_rekey(store *s, size_t *ret_n, hull_error *e) {
        _cleanup_(vault_keyring_wipep) vault_keyring k = {0};
        int r = ring_load(&k, e);
        if (r < 0)
                return r;
        json_auto_t *stale = NULL;
        if ((r = store_vault_stale(s, k.keys[0].id, &stale, e)) < 0)
                return r;
        *ret_n = 0;
        size_t i;
        json_t *pair;
        json_array_foreach(stale, i, pair) {
                const char *vid = json_string_value(json_array_get(pair, 0));
                const char *cid = json_string_value(json_array_get(pair, 1));
                json_auto_t *cred = NULL;
                _cleanup_(v1v_secrets_freep) json_t *secrets = NULL;
                _cleanup_secret_ char *sealed = NULL;
                if ((r = store_vault_get(s, STORE_VAULT_CREDENTIAL, vid, cid, &cred, &sealed, e)) < 0 ||
                    (r = v1v_open(cid, sealed, &secrets, NULL, e)) < 0)
                        return r;
                v1_err ve = {0};
                if (v1v_put_credential(s, cred, secrets, false, &ve) < 0)
                        return hull_fail(e, -EIO, "credential %s: %s", cid, ve.msg);
                (*ret_n)++;
        }
        return 0;
}
