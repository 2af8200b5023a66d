/* auth.h: bearer tokens of hull serve. The tokens file holds one line per token,
 *   <sha256 hex of the token> <scope>[,<scope>...] [name]
 * ('#' starts a comment); the daemon never sees or stores a token itself, only its digest, and
 * looks a presented token up by digest in constant time. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "limits.h"

#define AUTH_SCOPE_CODE_RUN "code:run"

typedef struct auth_token {
        uint8_t digest[32];
        char scopes[AUTH_SCOPES_MAX + 1]; /* comma-separated, as in the file */
        char name[AUTH_NAME_MAX + 1];     /* "" when the line has none */
} auth_token;

typedef struct auth_tokens {
        auth_token *v;
        size_t n;
} auth_tokens;

/* Parse a tokens file's bytes. Returns 0 with *ret (free with auth_tokens_done), or -EINVAL
 * with *e naming the line and what is wrong with it, or -ENOMEM. Pure. */
int auth_tokens_parse(const char *buf, size_t len, auth_tokens *ret, hull_error *e);

/* Read and parse the file at path (at most AUTH_TOKENS_FILE_MAX bytes). */
int auth_tokens_load(const char *path, auth_tokens *ret, hull_error *e);

void auth_tokens_done(auth_tokens *t);

typedef enum auth_verdict {
        AUTH_OK,
        AUTH_MISSING,   /* no Authorization header */
        AUTH_MALFORMED, /* not "Bearer <one visible-ASCII token>" */
        AUTH_UNKNOWN,   /* no token with this digest */
        AUTH_NO_SCOPE,  /* a known token without the scope */
        AUTH_CONFLICT,  /* Authorization and x-api-key carry different tokens */
} auth_verdict;

/* The token a request presents: "Authorization: Bearer T" or "x-api-key: T" (either header value
 * may be NULL; both with the same token is fine). AUTH_OK with *ret pointing into the header (n
 * bytes), AUTH_MISSING, AUTH_MALFORMED or AUTH_CONFLICT. */
auth_verdict auth_credential(const char *authorization, const char *x_api_key, const char **ret, size_t *ret_n);

/* Look a presented token up in t (may be NULL or empty) for scope; its SHA-256 digest goes to
 * ret_digest whatever the verdict (AUTH_UNKNOWN without a digest when n is out of bounds), for
 * a second source of keys (hull.db's). */
auth_verdict auth_check_token(const auth_tokens *t, const char *tok, size_t n, const char *scope,
                              const auth_token **ret_who, uint8_t ret_digest[static 32]);

/* Check an Authorization header value (NULL when absent) for a token holding scope (or "*").
 * On AUTH_OK and AUTH_NO_SCOPE, *ret_who (if not NULL) points at the token's entry. */
auth_verdict auth_check(const auth_tokens *t, const char *authorization, const char *scope, const auth_token **ret_who);

const char *auth_verdict_to_string(auth_verdict v);

/* True when name is 1..AUTH_NAME_MAX bytes of [A-Za-z0-9._:-]. */
bool auth_name_is_valid(const char *name);

/* True when scopes is a comma-separated list of [a-z0-9_.:*-]+ within AUTH_SCOPES_MAX bytes. */
bool auth_scopes_are_valid(const char *scopes);

/* A fresh token ("hull_" and 64 hex digits from getrandom) and its digest in hex. Returns 0 or
 * a negative errno. */
#define AUTH_NEW_TOKEN_SIZE (5 + 2 * AUTH_TOKEN_RANDOM_BYTES + 1)
int auth_token_new(char token[static AUTH_NEW_TOKEN_SIZE], char digest_hex[static 65]);
