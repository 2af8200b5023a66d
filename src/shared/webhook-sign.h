/* webhook-sign.h: Standard Webhooks signatures (https://www.standardwebhooks.com, the scheme the
 * Anthropic SDK's beta.webhooks.unwrap() verifies): a secret is "whsec_" followed by base64 of
 * WEBHOOK_SECRET_BYTES random bytes; a message's signature is
 * "v1," + base64(HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")), key being the
 * secret's bytes (base64-decoded after the prefix). OpenSSL's HMAC and RAND_bytes, loaded with
 * dlib-crypto.h. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "limits.h"

/* A new secret ("whsec_..."). Returns 0, or -ENOSYS (no libcrypto) / -EIO with *e. */
int webhook_secret_new(char ret[static WEBHOOK_SECRET_MAX], hull_error *e);

/* The signature of body (n bytes) sent as msg_id at timestamp (Unix seconds) with secret, as
 * "v1,<base64>" in ret. Returns 0, or -EINVAL (a secret that is not "whsec_" + base64 of 1 to
 * 64 bytes), -ENOSYS, -EIO. The message never holds the secret. */
int webhook_sign(const char *secret, const char *msg_id, int64_t timestamp, const char *body, size_t n,
                 char ret[static WEBHOOK_SIG_MAX], hull_error *e);
