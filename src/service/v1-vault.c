/* v1-vault.c: see v1-vault.h. The vaults' and credentials' bodies checked and turned into their
 * objects and secrets, and the routes' work over the store. */
#include "v1-vault.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "v1-run.h"
#include "v1-shape-internal.h"
#include "v1-vault-internal.h"
#include "v1-webhook.h"
#include "vault-seal.h"

#define URL_MAX 2048U
#define DISPLAY_NAME_MAX 255U

/* A store error as the API's (404 naming what, 409 for a conflict, else 500). */
static int store_fail(int r, const hull_error *he, const char *what, const char *id, v1_err *e) {
        if (r == -ENOENT)
                return v1_fail(e, 404, strcmp(what, "vault") == 0 ? "vault_not_found" : "credential_not_found",
                               "no %s %.64s", what, id);
        if (r == -EEXIST)
                return v1_fail(e, 409, "credential_conflict",
                               "the vault already has an active credential for that mcp_server_url: archive or delete "
                               "it first, or update it");
        if (r == -EINVAL)
                return v1_fail(e, 400, NULL, "%s", he->msg);
        return v1_fail(e, 500, NULL, "the %s could not be read or stored: %s", what, he->msg);
}

static int display_name(const json_t *body, bool required, bool nullable, const char **ret, v1_err *e) {
        return v1_get_str(body, "display_name", "", DISPLAY_NAME_MAX,
                          (required ? F_REQUIRED : 0) | (nullable ? F_NULLABLE : F_NONEMPTY), ret, e);
}

static int url_field(const json_t *o, const char *key, const char *path, bool required, const char **ret, v1_err *e) {
        int r = v1_get_str(o, key, path, URL_MAX, (required ? F_REQUIRED : 0) | F_NONEMPTY, ret, e);
        if (r < 0 || !*ret)
                return r;
        if (strncmp(*ret, "http://", 7) != 0 && strncmp(*ret, "https://", 8) != 0) {
                v1_path p;
                v1_path_key(p, path, key);
                return v1_fail(e, 400, NULL, "%s: must be an http:// or https:// URL", p);
        }
        return 0;
}

/* ---- vaults ---- */

int v1_vault_create(store *s, const json_t *body, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"display_name", "metadata", NULL};
        const char *name;
        int r = v1_check_object(body, "", keys, e);
        if (r < 0 || (r = display_name(body, true, false, &name, e)) < 0)
                return r;
        json_auto_t *metadata = NULL;
        const json_t *m = json_object_get(body, "metadata");
        if (m && !json_is_null(m) && (r = v1_metadata_patch(NULL, m, "metadata", &metadata, e)) < 0)
                return r;
        char id[STORE_ID_MAX], now[STORE_TIME_MAX];
        v1_id_new("vlt_", id);
        store_now_rfc3339(now);
        json_auto_t *o = json_pack("{s:s, s:s, s:s, s:O?, s:s, s:s, s:n}", "id", id, "type", "vault", "display_name",
                                   name, "metadata", metadata, "created_at", now, "updated_at", now, "archived_at");
        if (!o)
                return -ENOMEM;
        if (!metadata)
                json_object_set_new(o, "metadata", json_object());
        hull_error he = {0};
        if ((r = store_vault_put(s, STORE_VAULT, o, NULL, NULL, true, &he)) < 0)
                return store_fail(r, &he, "vault", id, e);
        v1_webhook_emit(s, "vault.created", id, NULL, NULL);
        *ret = TAKE_PTR(o);
        return 0;
}

static int vault_get(store *s, const char *id, json_t **ret, v1_err *e) {
        hull_error he = {0};
        int r = store_vault_get(s, STORE_VAULT, NULL, id, ret, NULL, &he);
        return r < 0 ? store_fail(r, &he, "vault", id, e) : 0;
}

int v1_vault_update(store *s, const char *id, const json_t *body, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"display_name", "metadata", NULL};
        const char *name;
        int r = v1_check_object(body, "", keys, e);
        if (r < 0 || (r = display_name(body, false, false, &name, e)) < 0)
                return r;
        json_auto_t *cur = NULL;
        if ((r = vault_get(s, id, &cur, e)) < 0)
                return r;
        if (json_is_string(json_object_get(cur, "archived_at")))
                return v1_fail(e, 400, "vault_archived", "vault %.64s is archived: it cannot change", id);
        const json_t *m = json_object_get(body, "metadata");
        if (m && !json_is_null(m)) {
                json_t *metadata = NULL;
                if ((r = v1_metadata_patch(json_object_get(cur, "metadata"), m, "metadata", &metadata, e)) < 0)
                        return r;
                json_object_set_new(cur, "metadata", metadata);
        }
        if (name)
                json_object_set_new(cur, "display_name", json_string(name));
        char now[STORE_TIME_MAX];
        store_now_rfc3339(now);
        json_object_set_new(cur, "updated_at", json_string(now));
        hull_error he = {0};
        if ((r = store_vault_put(s, STORE_VAULT, cur, NULL, NULL, false, &he)) < 0)
                return store_fail(r, &he, "vault", id, e);
        *ret = TAKE_PTR(cur);
        return 0;
}

int v1_vault_archive(store *s, const char *id, json_t **ret, v1_err *e) {
        json_auto_t *cur = NULL;
        int r = vault_get(s, id, &cur, e);
        if (r < 0)
                return r;
        if (!json_is_string(json_object_get(cur, "archived_at"))) {
                char now[STORE_TIME_MAX];
                store_now_rfc3339(now);
                json_object_set_new(cur, "archived_at", json_string(now));
                json_object_set_new(cur, "updated_at", json_string(now));
                hull_error he = {0};
                if ((r = store_vault_put(s, STORE_VAULT, cur, NULL, NULL, false, &he)) < 0)
                        return store_fail(r, &he, "vault", id, e);
                v1_webhook_emit(s, "vault.archived", id, NULL, NULL);
        }
        *ret = TAKE_PTR(cur);
        return 0;
}

int v1_vault_delete(store *s, const char *id, v1_err *e) {
        hull_error he = {0};
        int r = store_vault_delete(s, STORE_VAULT, NULL, id, &he);
        if (r >= 0)
                v1_webhook_emit(s, "vault.deleted", id, NULL, NULL);
        return r < 0 ? store_fail(r, &he, "vault", id, e) : 0;
}

/* ---- credentials: the auth object ---- */

/* refresh's token_endpoint_auth into pub ({type}) and secrets (client_secret). */
static int endpoint_auth(const json_t *a, const char *path, bool update, json_t *pub, json_t *secrets, v1_err *e) {
        static const char *const keys[] = {"type", "client_secret", NULL};
        static const char *const types[] = {"none", "client_secret_basic", "client_secret_post", NULL};
        const char *type, *secret;
        int r = v1_want(a, JSON_OBJECT, path, "an object", e);
        if (r < 0 || (r = v1_check_object(a, path, keys, e)) < 0 ||
            (r = v1_get_enum(a, "type", path, types, NULL, &type, e)) < 0 ||
            (r = v1_get_str(a, "client_secret", path, VAULT_SECRET_MAX / 4, F_NONEMPTY | F_NULLABLE, &secret, e)) < 0)
                return r;
        bool needs = strcmp(type, "none") != 0;
        if (update && needs && !secret) /* the secret kept */
                secret = json_string_value(json_object_get(secrets, "client_secret"));
        if (needs && !secret)
                return v1_fail(e, 400, NULL, "%s.client_secret: required with %s", path, type);
        if (!needs && secret)
                return v1_fail(e, 400, NULL, "%s.client_secret: not taken with type none", path);
        json_object_set_new(pub, "token_endpoint_auth", json_pack("{s:s}", "type", type));
        if (secret)
                json_object_set_new(secrets, "client_secret", json_string(secret));
        else
                json_object_del(secrets, "client_secret");
        return 0;
}

/* A create's refresh (an object): pub gets {client_id, token_endpoint, token_endpoint_auth:{type},
 * resource?, scope?}, secrets refresh_token and client_secret. */
static int refresh_create(const json_t *v, json_t *pub, json_t *secrets, v1_err *e) {
        static const char *const keys[] = {
                "client_id", "refresh_token", "token_endpoint", "token_endpoint_auth", "resource", "scope", NULL};
        const char *client_id, *token, *endpoint, *resource, *scope;
        int r = v1_check_object(v, "auth.refresh", keys, e);
        if (r < 0 ||
            (r = v1_get_str(v, "client_id", "auth.refresh", V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &client_id, e)) < 0 ||
            (r = v1_get_str(v, "refresh_token", "auth.refresh", VAULT_SECRET_MAX / 4, F_REQUIRED | F_NONEMPTY, &token,
                            e)) < 0 ||
            (r = url_field(v, "token_endpoint", "auth.refresh", true, &endpoint, e)) < 0 ||
            (r = v1_get_str(v, "resource", "auth.refresh", URL_MAX, F_NULLABLE, &resource, e)) < 0 ||
            (r = v1_get_str(v, "scope", "auth.refresh", V1_NAME_MAX * 4, F_NULLABLE, &scope, e)) < 0)
                return r;
        json_object_set_new(pub, "client_id", json_string(client_id));
        json_object_set_new(pub, "token_endpoint", json_string(endpoint));
        json_object_set_new(pub, "resource", v1_str_or_null(resource));
        json_object_set_new(pub, "scope", v1_str_or_null(scope));
        json_object_set_new(secrets, "refresh_token", json_string(token));
        return endpoint_auth(json_object_get(v, "token_endpoint_auth"), "auth.refresh.token_endpoint_auth", false, pub,
                             secrets, e);
}

static int expires_at(const json_t *a, json_t *pub, v1_err *e) {
        const char *t;
        int r = v1_get_str(a, "expires_at", "auth", STORE_TIME_MAX, F_NULLABLE, &t, e);
        if (r < 0 || !json_object_get(a, "expires_at"))
                return r;
        int64_t ms;
        if (t && store_time_ms(t, &ms) < 0)
                return v1_fail(e, 400, NULL, "auth.expires_at: must be an RFC 3339 time or null");
        json_object_set_new(pub, "expires_at", v1_str_or_null(t));
        return 0;
}

/* A create's auth into *ret_pub (what the API shows) and *ret_secrets. */
static int auth_create(const json_t *a, json_t **ret_pub, json_t **ret_secrets, v1_err *e) {
        static const char *const bearer_keys[] = {"type", "token", "mcp_server_url", NULL};
        static const char *const oauth_keys[] = {"type",       "access_token", "mcp_server_url",
                                                 "expires_at", "refresh",      NULL};
        static const char *const types[] = {"static_bearer", "mcp_oauth", "environment_variable", NULL};
        const char *type, *url, *token;
        int r = v1_want(a, JSON_OBJECT, "auth", "an object", e);
        if (r < 0 || (r = v1_get_enum(a, "type", "auth", types, NULL, &type, e)) < 0)
                return r;
        if (strcmp(type, "environment_variable") == 0)
                return v1_fail(e, 400, "unsupported_credential_type",
                               "auth.type: environment_variable is not supported by hull (it does not substitute "
                               "secrets in a sandbox's traffic): use static_bearer or mcp_oauth");
        bool bearer = strcmp(type, "static_bearer") == 0;
        if ((r = v1_check_object(a, "auth", bearer ? bearer_keys : oauth_keys, e)) < 0 ||
            (r = url_field(a, "mcp_server_url", "auth", true, &url, e)) < 0 ||
            (r = v1_get_str(a, bearer ? "token" : "access_token", "auth", VAULT_SECRET_MAX / 4, F_REQUIRED | F_NONEMPTY,
                            &token, e)) < 0)
                return r;
        json_auto_t *pub = json_pack("{s:s, s:s}", "type", type, "mcp_server_url", url);
        json_auto_t *secrets = json_pack("{s:s}", bearer ? "token" : "access_token", token);
        if (!pub || !secrets)
                return -ENOMEM;
        if (!bearer) {
                json_object_set_new(pub, "expires_at", json_null());
                json_object_set_new(pub, "refresh", json_null());
                if ((r = expires_at(a, pub, e)) < 0)
                        return r;
                const json_t *rf = json_object_get(a, "refresh");
                if (rf && !json_is_null(rf)) {
                        json_t *rp = json_object();
                        json_object_set_new(pub, "refresh", rp);
                        if ((r = v1_want(rf, JSON_OBJECT, "auth.refresh", "an object or null", e)) < 0 ||
                            (r = refresh_create(rf, rp, secrets, e)) < 0) {
                                v1v_secrets_free(TAKE_PTR(secrets));
                                return r;
                        }
                }
        }
        *ret_pub = TAKE_PTR(pub);
        *ret_secrets = TAKE_PTR(secrets);
        return 0;
}

/* An update's refresh: an object changes refresh_token, scope, token_endpoint_auth (the others are
 * immutable); null clears it. */
static int refresh_update(const json_t *v, json_t *pub, json_t *secrets, v1_err *e) {
        static const char *const keys[] = {
                "refresh_token", "scope", "token_endpoint_auth", "client_id", "token_endpoint", "resource", NULL};
        json_t *rp = json_object_get(pub, "refresh");
        if (json_is_null(v)) {
                json_object_set_new(pub, "refresh", json_null());
                json_object_del(secrets, "refresh_token");
                json_object_del(secrets, "client_secret");
                return 0;
        }
        int r = v1_want(v, JSON_OBJECT, "auth.refresh", "an object or null", e);
        if (r < 0 || (r = v1_check_object(v, "auth.refresh", keys, e)) < 0)
                return r;
        if (!json_is_object(rp)) { /* none yet: a whole one, as at create */
                rp = json_object();
                if (!rp || json_object_set_new(pub, "refresh", rp) < 0)
                        return -ENOMEM;
                return refresh_create(v, rp, secrets, e);
        }
        static const char *const fixed[] = {"client_id", "token_endpoint", "resource", NULL};
        for (const char *const *f = fixed; *f; f++) {
                const json_t *given = json_object_get(v, *f);
                if (given && !json_equal(given, json_object_get(rp, *f)))
                        return v1_fail(e, 400, "immutable_field",
                                       "auth.refresh.%s: cannot change (make a new credential instead)", *f);
        }
        const char *token, *scope;
        if ((r = v1_get_str(v, "refresh_token", "auth.refresh", VAULT_SECRET_MAX / 4, F_NONEMPTY | F_NULLABLE, &token,
                            e)) < 0 ||
            (r = v1_get_str(v, "scope", "auth.refresh", V1_NAME_MAX * 4, F_NULLABLE, &scope, e)) < 0)
                return r;
        if (token)
                json_object_set_new(secrets, "refresh_token", json_string(token));
        if (json_object_get(v, "scope"))
                json_object_set_new(rp, "scope", v1_str_or_null(scope));
        const json_t *ea = json_object_get(v, "token_endpoint_auth");
        return ea ? endpoint_auth(ea, "auth.refresh.token_endpoint_auth", true, rp, secrets, e) : 0;
}

/* An update's auth applied to pub and secrets. */
static int auth_update(const json_t *a, json_t *pub, json_t *secrets, v1_err *e) {
        static const char *const bearer_keys[] = {"type", "token", "mcp_server_url", NULL};
        static const char *const oauth_keys[] = {"type",       "access_token", "mcp_server_url",
                                                 "expires_at", "refresh",      NULL};
        const char *type = json_string_value(json_object_get(pub, "type")), *given, *token;
        bool bearer = eq(type, "static_bearer");
        int r = v1_want(a, JSON_OBJECT, "auth", "an object", e);
        if (r < 0 || (r = v1_get_str(a, "type", "auth", V1_NAME_MAX, F_REQUIRED, &given, e)) < 0)
                return r;
        if (!eq(given, type))
                return v1_fail(e, 400, "credential_type_change",
                               "auth.type: this credential is %s; its type cannot change (make a new credential)",
                               type ? type : "?");
        if ((r = v1_check_object(a, "auth", bearer ? bearer_keys : oauth_keys, e)) < 0)
                return r;
        const json_t *u = json_object_get(a, "mcp_server_url");
        if (u && !json_equal(u, json_object_get(pub, "mcp_server_url")))
                return v1_fail(e, 400, "immutable_field",
                               "auth.mcp_server_url: cannot change (make a new credential for another server)");
        if ((r = v1_get_str(a, bearer ? "token" : "access_token", "auth", VAULT_SECRET_MAX / 4, F_NONEMPTY | F_NULLABLE,
                            &token, e)) < 0)
                return r;
        if (token)
                json_object_set_new(secrets, bearer ? "token" : "access_token", json_string(token));
        if (bearer)
                return 0;
        if ((r = expires_at(a, pub, e)) < 0)
                return r;
        const json_t *rf = json_object_get(a, "refresh");
        return rf ? refresh_update(rf, pub, secrets, e) : 0;
}

/* ---- credentials ---- */

static int credential_get(store *s, const char *vault_id, const char *id, json_t **ret, json_t **ret_secrets,
                          v1_err *e) {
        hull_error he = {0};
        _cleanup_secret_ char *sealed = NULL;
        int r = store_vault_get(s, STORE_VAULT_CREDENTIAL, vault_id, id, ret, ret_secrets ? &sealed : NULL, &he);
        if (r == -ENOENT) {
                json_auto_t *v = NULL;
                if (vault_get(s, vault_id, &v, e) < 0)
                        return -ENOENT;
                return v1_fail(e, 404, "credential_not_found", "vault %.64s has no credential %.64s", vault_id, id);
        }
        if (r < 0)
                return store_fail(r, &he, "credential", id, e);
        if (ret_secrets && (r = v1v_open(id, sealed, ret_secrets, NULL, &he)) < 0) {
                json_decref(TAKE_PTR(*ret));
                return v1_fail(e, 500, "vault_key_unavailable", "%s", he.msg);
        }
        return 0;
}

int v1_credential_create(store *s, const char *vault_id, const json_t *body, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"auth", "display_name", "metadata", NULL};
        const char *name;
        int r = v1_check_object(body, "", keys, e);
        if (r < 0 || (r = display_name(body, false, true, &name, e)) < 0)
                return r;
        json_auto_t *metadata = NULL, *pub = NULL, *vault = NULL;
        _cleanup_(v1v_secrets_freep) json_t *secrets = NULL;
        const json_t *m = json_object_get(body, "metadata");
        if (m && !json_is_null(m) && (r = v1_metadata_patch(NULL, m, "metadata", &metadata, e)) < 0)
                return r;
        if ((r = auth_create(json_object_get(body, "auth"), &pub, &secrets, e)) < 0)
                return r;
        if ((r = vault_get(s, vault_id, &vault, e)) < 0)
                return r;
        if (json_is_string(json_object_get(vault, "archived_at")))
                return v1_fail(e, 400, "vault_archived", "vault %.64s is archived: it takes no new credential",
                               vault_id);
        store_list_q q = {.limit = VAULT_CREDENTIALS_MAX + 1};
        store_page p = {0};
        hull_error he = {0};
        if ((r = store_vault_list(s, STORE_VAULT_CREDENTIAL, vault_id, &q, &p, &he)) < 0)
                return store_fail(r, &he, "vault", vault_id, e);
        size_t n = json_array_size(p.data);
        store_page_done(&p);
        if (n >= VAULT_CREDENTIALS_MAX)
                return v1_fail(e, 409, "too_many_credentials",
                               "vault %.64s has %u active credentials, the most it takes: archive or delete one",
                               vault_id, VAULT_CREDENTIALS_MAX);
        char id[STORE_ID_MAX], now[STORE_TIME_MAX];
        v1_id_new("vcrd_", id);
        store_now_rfc3339(now);
        json_auto_t *o =
                json_pack("{s:s, s:s, s:s, s:o, s:O, s:O?, s:s, s:s, s:n}", "id", id, "type", "vault_credential",
                          "vault_id", vault_id, "display_name", v1_str_or_null(name), "auth", pub, "metadata", metadata,
                          "created_at", now, "updated_at", now, "archived_at");
        if (!o)
                return -ENOMEM;
        if (!metadata)
                json_object_set_new(o, "metadata", json_object());
        if ((r = v1v_put_credential(s, o, secrets, true, e)) < 0)
                return r;
        v1_webhook_emit(s, "vault_credential.created", json_string_value(json_object_get(o, "id")), vault_id, NULL);
        *ret = TAKE_PTR(o);
        return 0;
}

int v1_credential_update(store *s, const char *vault_id, const char *id, const json_t *body, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"auth", "display_name", "metadata", NULL};
        const char *name;
        int r = v1_check_object(body, "", keys, e);
        if (r < 0 || (r = display_name(body, false, true, &name, e)) < 0)
                return r;
        json_auto_t *cur = NULL;
        _cleanup_(v1v_secrets_freep) json_t *secrets = NULL;
        if ((r = credential_get(s, vault_id, id, &cur, &secrets, e)) < 0)
                return r;
        if (json_is_string(json_object_get(cur, "archived_at")))
                return v1_fail(e, 400, "credential_archived", "credential %.64s is archived: it cannot change", id);
        const json_t *a = json_object_get(body, "auth");
        if (a && (r = auth_update(a, json_object_get(cur, "auth"), secrets, e)) < 0)
                return r;
        if (json_object_get(body, "display_name"))
                json_object_set_new(cur, "display_name", v1_str_or_null(name));
        const json_t *m = json_object_get(body, "metadata");
        if (m && !json_is_null(m)) {
                json_t *metadata = NULL;
                if ((r = v1_metadata_patch(json_object_get(cur, "metadata"), m, "metadata", &metadata, e)) < 0)
                        return r;
                json_object_set_new(cur, "metadata", metadata);
        }
        char now[STORE_TIME_MAX];
        store_now_rfc3339(now);
        json_object_set_new(cur, "updated_at", json_string(now));
        if ((r = v1v_put_credential(s, cur, secrets, false, e)) < 0)
                return r;
        *ret = TAKE_PTR(cur);
        return 0;
}

int v1_credential_archive(store *s, const char *vault_id, const char *id, json_t **ret, v1_err *e) {
        json_auto_t *cur = NULL;
        _cleanup_(v1v_secrets_freep) json_t *secrets = NULL;
        int r = credential_get(s, vault_id, id, &cur, &secrets, e);
        if (r < 0)
                return r;
        if (!json_is_string(json_object_get(cur, "archived_at"))) {
                char now[STORE_TIME_MAX];
                store_now_rfc3339(now);
                json_object_set_new(cur, "archived_at", json_string(now));
                json_object_set_new(cur, "updated_at", json_string(now));
                if ((r = v1v_put_credential(s, cur, secrets, false, e)) < 0)
                        return r;
                v1_webhook_emit(s, "vault_credential.archived", id, vault_id, NULL);
        }
        *ret = TAKE_PTR(cur);
        return 0;
}

int v1_credential_delete(store *s, const char *vault_id, const char *id, v1_err *e) {
        hull_error he = {0};
        int r = store_vault_delete(s, STORE_VAULT_CREDENTIAL, vault_id, id, &he);
        if (r == -ENOENT) {
                json_auto_t *v = NULL;
                if (vault_get(s, vault_id, &v, e) < 0)
                        return -ENOENT;
                return v1_fail(e, 404, "credential_not_found", "vault %.64s has no credential %.64s", vault_id, id);
        }
        if (r >= 0)
                v1_webhook_emit(s, "vault_credential.deleted", id, vault_id, NULL);
        return r < 0 ? store_fail(r, &he, "credential", id, e) : 0;
}

int v1_vault_ids_check(store *s, const json_t *vault_ids, v1_err *e) {
        if (!vault_ids || json_is_null(vault_ids))
                return 0;
        int r = v1_want(vault_ids, JSON_ARRAY, "vault_ids", "an array of vault ids", e);
        if (r < 0)
                return r;
        if (json_array_size(vault_ids) > VAULT_IDS_MAX)
                return v1_fail(e, 400, NULL, "vault_ids: more than %u vaults", VAULT_IDS_MAX);
        size_t i, j;
        json_t *v, *w;
        json_array_foreach(vault_ids, i, v) {
                v1_path p;
                v1_path_idx(p, "vault_ids", i);
                const char *id = json_string_value(v);
                if (!id || !id[0] || strlen(id) >= STORE_ID_MAX)
                        return v1_fail(e, 400, NULL, "%s: must be a vault id (vlt_...)", p);
                json_array_foreach(vault_ids, j, w) {
                        if (j < i && json_equal(v, w))
                                return v1_fail(e, 400, NULL, "%s: %.64s is listed twice", p, id);
                }
                json_auto_t *vault = NULL;
                hull_error he = {0};
                r = store_vault_get(s, STORE_VAULT, NULL, id, &vault, NULL, &he);
                if (r == -ENOENT || r == -EINVAL)
                        return v1_fail(e, 404, "vault_not_found", "%s: no vault %.64s (GET /v1/vaults lists them)", p,
                                       id);
                if (r < 0)
                        return store_fail(r, &he, "vault", id, e);
                if (json_is_string(json_object_get(vault, "archived_at")))
                        return v1_fail(e, 400, "vault_archived", "%s: vault %.64s is archived", p, id);
        }
        return 0;
}
