/* v1-vault.h: the /v1 vaults and their credentials (issue 22; cma-api-more.md §3): bodies checked
 * and turned into the objects the API answers (never a secret in them), the secrets sealed with
 * the key ring (vault-seal.h) into the store, and what a session's MCP connections get from its
 * vaults: the Authorization header of the credential whose mcp_server_url matches, an MCP OAuth
 * access token refreshed at its token endpoint when it has expired or was refused (the new tokens
 * sealed and stored). v1-vault.c: the routes' work; v1-vault-auth.c: secrets, refresh, validate.
 *
 * Credential types: static_bearer {token, mcp_server_url} and mcp_oauth {access_token,
 * mcp_server_url, expires_at?, refresh?: {client_id, refresh_token, token_endpoint,
 * token_endpoint_auth: {type: none|client_secret_basic|client_secret_post, client_secret?},
 * resource?, scope?}}. environment_variable is refused (400: hull does not substitute secrets in
 * a sandbox's traffic). Every refusal fills a v1_err (v1-shape.h) naming the field; a message
 * never quotes a secret. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "error.h"
#include "settings.h"
#include "store.h"
#include "v1-shape.h"

/* ---- vaults ---- */
int v1_vault_create(store *s, const json_t *body, json_t **ret, v1_err *e);
/* display_name?, metadata? (patch); an archived vault cannot change (400). */
int v1_vault_update(store *s, const char *id, const json_t *body, json_t **ret, v1_err *e);
int v1_vault_archive(store *s, const char *id, json_t **ret, v1_err *e);
int v1_vault_delete(store *s, const char *id, v1_err *e);

/* ---- credentials ---- */
/* 409 conflict_error when the vault has an active credential for that mcp_server_url, or
 * VAULT_CREDENTIALS_MAX of them; 400 in an archived vault. */
int v1_credential_create(store *s, const char *vault_id, const json_t *body, json_t **ret, v1_err *e);
/* auth? (its type must be the stored one; mcp_server_url, token_endpoint, client_id, resource
 * immutable), display_name?, metadata? (patch). */
int v1_credential_update(store *s, const char *vault_id, const char *id, const json_t *body, json_t **ret, v1_err *e);
int v1_credential_archive(store *s, const char *vault_id, const char *id, json_t **ret, v1_err *e);
int v1_credential_delete(store *s, const char *vault_id, const char *id, v1_err *e);
/* mcp_oauth_validate: refresh when a refresh token is there, then MCP initialize with the access
 * token: the vault_credential_validation object. 400 for a static_bearer credential. */
int v1_credential_validate(store *s, const settings *st, const char *vault_id, const char *id, json_t **ret, v1_err *e);

/* ---- sessions ---- */

/* A session's vault_ids (an array of at most VAULT_IDS_MAX distinct ids): each must name a vault
 * that is not archived (404 vault_not_found / 400 vault_archived). */
int v1_vault_ids_check(store *s, const json_t *vault_ids, v1_err *e);

/* The "Authorization: Bearer ..." header line for an MCP server at url from the first of
 * vault_ids with an active credential of that mcp_server_url (*ret NULL: none matches, connect
 * without). An mcp_oauth token that expires within VAULT_REFRESH_EARLY_S, or any when
 * force_refresh (the server refused it), is refreshed first. *ret_cred_id: the credential's
 * ("" none). Returns 0, or a negative errno with *e (a refresh that failed, a key ring that
 * lacks the key: the message names the credential, never a secret). Free *ret with
 * vault_free_secret. */
int v1_vault_auth_header(store *s, const settings *st, const json_t *vault_ids, const char *url, bool force_refresh,
                         char **ret, char ret_cred_id[STORE_ID_MAX], hull_error *e);

/* Seal again with the current key every credential sealed with another (hull vault rekey);
 * *ret_n how many. */
int v1_vault_rekey(store *s, size_t *ret_n, hull_error *e);
