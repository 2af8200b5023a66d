/* v1-vault-internal.h: what v1-vault.c (the routes' work) and v1-vault-auth.c (the secrets,
 * their refresh and validation) share. Not for use outside src/service/v1-vault*.c. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "error.h"
#include "limits.h"
#include "settings.h"
#include "store.h"
#include "v1-shape.h"

/* The secrets (a JSON object) sealed for credential id with the current key: *ret the envelope
 * (malloc'd), ret_kid its key's id. */
int v1v_seal(const char *id, const json_t *secrets, char **ret, char ret_kid[VAULT_KEY_ID_MAX], hull_error *e);

/* The secrets of credential id opened (a new object: wipe it with v1v_secrets_free);
 * *ret_stale (may be NULL): sealed with a key that is no longer the current one. */
int v1v_open(const char *id, const char *sealed, json_t **ret, bool *ret_stale, hull_error *e);

/* Wipe every string of a secrets object, then free it. */
void v1v_secrets_free(json_t *o);
static inline void v1v_secrets_freep(json_t **o) {
        v1v_secrets_free(*o);
}

/* Store the credential obj with its secrets sealed anew (create: insert). 409 / 404 / 500 in *e. */
int v1v_put_credential(store *s, const json_t *obj, const json_t *secrets, bool create, v1_err *e);

/* The refresh of an mcp_oauth credential at its token endpoint: the new access token (and
 * refresh token, when the endpoint rotates it) and expiry into obj and secrets. Returns 0, or a
 * negative errno with *e and (may be NULL) *ret_probe {status, why} for validate. */
int v1v_refresh(const settings *st, json_t *obj, json_t *secrets, json_t **ret_http, const char **ret_status,
                hull_error *e);
