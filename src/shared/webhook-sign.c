/* webhook-sign.c: see webhook-sign.h. */
#include "webhook-sign.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "dlib-crypto.h"
#include "macro.h"

#define PREFIX "whsec_"

int webhook_secret_new(char ret[static WEBHOOK_SECRET_MAX], hull_error *e) {
        if (!dlib_crypto_load(e))
                return -ENOSYS;
        uint8_t key[WEBHOOK_SECRET_BYTES];
        if (RAND_bytes(key, sizeof(key)) != 1)
                return hull_err(e, -EIO, "webhook: no random bytes for a secret");
        memcpy(ret, PREFIX, strlen(PREFIX));
        int r = base64_encode_to(ret + strlen(PREFIX), WEBHOOK_SECRET_MAX - strlen(PREFIX), key, sizeof(key), true,
                                 NULL);
        explicit_bzero(key, sizeof(key));
        return r < 0 ? hull_err(e, r, "webhook: cannot encode a secret") : 0;
}

int webhook_sign(const char *secret, const char *msg_id, int64_t timestamp, const char *body, size_t n,
                 char ret[static WEBHOOK_SIG_MAX], hull_error *e) {
        if (!dlib_crypto_load(e))
                return -ENOSYS;
        if (!secret || strncmp(secret, PREFIX, strlen(PREFIX)) != 0)
                return hull_err(e, -EINVAL, "webhook: a secret starts with " PREFIX);
        const char *b = secret + strlen(PREFIX);
        _cleanup_free_ void *key = NULL;
        size_t klen = 0;
        if (base64_decode(b, strlen(b), &key, &klen) < 0 || klen == 0 || klen > 64) {
                if (key)
                        explicit_bzero(key, klen);
                return hull_err(e, -EINVAL, "webhook: a secret is " PREFIX " and base64 of 1 to 64 bytes");
        }
        /* "<id>.<timestamp>." then the body: HMAC over the parts without copying the body */
        char head[STORE_ID_MAX + 32];
        int hl = snprintf(head, sizeof(head), "%s.%" PRId64 ".", msg_id, timestamp);
        if (hl < 0 || (size_t) hl >= sizeof(head)) {
                explicit_bzero(key, klen);
                return hull_err(e, -EINVAL, "webhook: a message id is at most %u bytes", STORE_ID_MAX - 1);
        }
        _cleanup_free_ uint8_t *msg = malloc((size_t) hl + n + 1);
        if (!msg) {
                explicit_bzero(key, klen);
                return hull_err(e, -ENOMEM, "webhook: out of memory");
        }
        memcpy(msg, head, (size_t) hl);
        if (n)
                memcpy(msg + hl, body, n);
        uint8_t mac[32];
        unsigned mlen = 0;
        bool ok = HMAC(EVP_sha256(), key, (int) klen, msg, (size_t) hl + n, mac, &mlen) && mlen == sizeof(mac);
        explicit_bzero(key, klen);
        if (!ok)
                return hull_err(e, -EIO, "webhook: HMAC-SHA256 failed");
        memcpy(ret, "v1,", 3);
        int r = base64_encode_to(ret + 3, WEBHOOK_SIG_MAX - 3, mac, sizeof(mac), true, NULL);
        return r < 0 ? hull_err(e, r, "webhook: cannot encode a signature") : 0;
}
