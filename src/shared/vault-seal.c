/* vault-seal.c: see vault-seal.h. The key ring (its text, HULL_VAULT_KEY, $HULL_HOME/vault.key)
 * and the AES-256-GCM envelope of the vaults' secrets, through libcrypto (dlib-crypto.h). */
#include "vault-seal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "dlib-crypto.h"
#include "fs-util.h"
#include "macro.h"
#include "sha256.h"

#define ENVELOPE_PREFIX "hv1."

static void key_id_of(const uint8_t key[VAULT_KEY_BYTES], char ret[VAULT_KEY_ID_MAX]) {
        static const char label[] = "hull-vault-key"; /* its NUL too */
        sha256_ctx c;
        uint8_t d[SHA256_DIGEST_SIZE];
        char hex[SHA256_HEX_SIZE];
        if (sha256_init(&c) < 0 || sha256_update(&c, label, sizeof(label)) < 0 ||
            sha256_update(&c, key, VAULT_KEY_BYTES) < 0 || sha256_final(&c, d) < 0) {
                sha256_done(&c);
                snprintf(ret, VAULT_KEY_ID_MAX, "unknown");
                return;
        }
        sha256_to_hex(d, hex);
        snprintf(ret, VAULT_KEY_ID_MAX, "%.*s", (int) VAULT_KEY_ID_MAX - 1, hex);
}

void vault_keyring_wipe(vault_keyring *k) {
        if (k)
                explicit_bzero(k, sizeof(*k));
}

void vault_free_secret(char *s) {
        if (!s)
                return;
        explicit_bzero(s, strlen(s));
        free(s);
}

int vault_keyring_parse(const char *text, const char *what, vault_keyring *ret, hull_error *e) {
        *ret = (vault_keyring){0};
        if (!text || strlen(text) > VAULT_KEY_FILE_MAX)
                return hull_fail(e, -EINVAL, "vault: %s: more than %u bytes", what, VAULT_KEY_FILE_MAX);
        unsigned line = 0;
        for (const char *p = text; *p;) {
                size_t n = strcspn(p, "\n,");
                line++;
                const char *s = p, *end = p + n;
                p = *end ? end + 1 : end;
                const char *hash = memchr(s, '#', (size_t) (end - s));
                if (hash)
                        end = hash;
                while (s < end && (*s == ' ' || *s == '\t' || *s == '\r'))
                        s++;
                while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
                        end--;
                if (s == end)
                        continue;
                if (ret->n >= VAULT_KEYS_MAX) {
                        vault_keyring_wipe(ret);
                        return hull_fail(e, -EINVAL, "vault: %s: more than %u keys", what, VAULT_KEYS_MAX);
                }
                void *raw = NULL;
                size_t len = 0;
                int r = base64_decode(s, (size_t) (end - s), &raw, &len);
                if (r == -ENOSYS) {
                        vault_keyring_wipe(ret);
                        return hull_fail(e, r, "vault: libcrypto cannot be loaded (install libssl3)");
                }
                if (r < 0 || len != VAULT_KEY_BYTES) {
                        if (raw)
                                explicit_bzero(raw, len);
                        free(raw);
                        vault_keyring_wipe(ret);
                        return hull_fail(e, -EINVAL,
                                         "vault: %s: entry %u is not a key (base64 of %u random bytes, as `hull vault "
                                         "rotate-key` or `openssl rand -base64 %u` makes)",
                                         what, line, VAULT_KEY_BYTES, VAULT_KEY_BYTES);
                }
                vault_key *k = &ret->keys[ret->n++];
                memcpy(k->key, raw, VAULT_KEY_BYTES);
                explicit_bzero(raw, len);
                free(raw);
                key_id_of(k->key, k->id);
        }
        if (ret->n == 0)
                return hull_fail(e, -EINVAL, "vault: %s holds no key", what);
        return 0;
}

int vault_key_generate(char **ret_b64, char ret_id[VAULT_KEY_ID_MAX], hull_error *e) {
        if (!dlib_crypto_load(e))
                return -ENOSYS;
        uint8_t key[VAULT_KEY_BYTES];
        if (RAND_bytes(key, (int) sizeof(key)) != 1)
                return hull_fail(e, -EIO, "vault: OpenSSL's random generator failed");
        key_id_of(key, ret_id);
        int r = base64_encode(key, sizeof(key), true, ret_b64, NULL);
        explicit_bzero(key, sizeof(key));
        return r < 0 ? hull_fail(e, r, "vault: cannot encode a key") : 0;
}

/* home/vault.key made with one new key (written aside, then linked into place: another process
 * making it at the same time loses the link and reads the winner's). */
static int key_file_make(const char *path, hull_error *e) {
        _cleanup_secret_ char *b64 = NULL;
        char id[VAULT_KEY_ID_MAX], tmp[SBX_PATH_MAX + 32], text[128];
        int r = vault_key_generate(&b64, id, e);
        if (r < 0)
                return r;
        if ((size_t) snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int) getpid()) >= sizeof(tmp))
                return hull_fail(e, -ENAMETOOLONG, "vault: the key file's path is too long");
        int n = snprintf(text, sizeof(text), "%s\n", b64);
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return hull_err(e, negative_errno(), "vault: cannot make %s", tmp);
        r = loop_write(fd, text, (size_t) n);
        explicit_bzero(text, sizeof(text));
        if (r < 0 || fsync(fd) < 0) {
                r = r < 0 ? r : negative_errno();
                (void) unlink(tmp);
                return hull_err(e, r, "vault: cannot write %s", tmp);
        }
        r = link(tmp, path) < 0 ? negative_errno() : 0;
        (void) unlink(tmp);
        if (r < 0 && r != -EEXIST)
                return hull_err(e, r, "vault: cannot make %s", path);
        return 0;
}

static int key_file_read(const char *path, char *buf, size_t size, hull_error *e) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return hull_err(e, negative_errno(), "vault: cannot open the key file %s", path);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return hull_err(e, negative_errno(), "vault: cannot stat %s", path);
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
                return hull_fail(e, -EACCES, "vault: %s is not a regular file of this user", path);
        if (st.st_mode & 077)
                return hull_fail(e, -EACCES,
                                 "vault: %s may be read by others (mode %04o): chmod 600 it (and rotate its keys if "
                                 "someone may have read them)",
                                 path, (unsigned) (st.st_mode & 07777));
        ssize_t n = loop_read(fd, buf, size - 1);
        if (n < 0)
                return hull_err(e, (int) n, "vault: cannot read %s", path);
        if ((size_t) n >= size - 1)
                return hull_fail(e, -EINVAL, "vault: %s is over %u bytes", path, VAULT_KEY_FILE_MAX);
        buf[n] = '\0';
        return 0;
}

int vault_keyring_load(const char *home, vault_keyring *ret, hull_error *e) {
        *ret = (vault_keyring){0};
        if (!dlib_crypto_load(e))
                return -ENOSYS;
        const char *env = getenv("HULL_VAULT_KEY");
        if (env && env[0])
                return vault_keyring_parse(env, "HULL_VAULT_KEY", ret, e);
        char path[SBX_PATH_MAX], buf[VAULT_KEY_FILE_MAX + 2];
        if (path_join(path, sizeof(path), home, "vault.key") < 0)
                return hull_fail(e, -ENAMETOOLONG, "vault: the key file's path is too long");
        int r;
        if (access(path, F_OK) < 0 && errno == ENOENT && (r = key_file_make(path, e)) < 0)
                return r;
        r = key_file_read(path, buf, sizeof(buf), e);
        if (r >= 0)
                r = vault_keyring_parse(buf, path, ret, e);
        explicit_bzero(buf, sizeof(buf));
        return r;
}

static void ctx_freep(EVP_CIPHER_CTX **c) {
        if (*c)
                EVP_CIPHER_CTX_free(*c);
}

int vault_seal(const vault_keyring *k, const char *aad, const void *p, size_t n, char **ret, hull_error *e) {
        if (!k || k->n == 0)
                return hull_fail(e, -ENOKEY, "vault: no key to seal with");
        if (n > VAULT_SECRET_MAX)
                return hull_fail(e, -E2BIG, "vault: the secrets are over %u bytes", VAULT_SECRET_MAX);
        if (!dlib_crypto_load(e))
                return -ENOSYS;
        size_t total = VAULT_NONCE_BYTES + n + VAULT_TAG_BYTES;
        _cleanup_free_ uint8_t *buf = malloc(total);
        if (!buf)
                return hull_err(e, -ENOMEM, "vault: cannot seal");
        if (RAND_bytes(buf, VAULT_NONCE_BYTES) != 1)
                return hull_fail(e, -EIO, "vault: OpenSSL's random generator failed");
        _cleanup_(ctx_freep) EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
        int len = 0, fin = 0;
        bool ok = c && EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
                  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, VAULT_NONCE_BYTES, NULL) == 1 &&
                  EVP_EncryptInit_ex(c, NULL, NULL, k->keys[0].key, buf) == 1 &&
                  EVP_EncryptUpdate(c, NULL, &len, (const uint8_t *) aad, (int) strlen(aad)) == 1 &&
                  EVP_EncryptUpdate(c, buf + VAULT_NONCE_BYTES, &len, p, (int) n) == 1 &&
                  EVP_EncryptFinal_ex(c, buf + VAULT_NONCE_BYTES + len, &fin) == 1 && (size_t) (len + fin) == n &&
                  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, VAULT_TAG_BYTES, buf + VAULT_NONCE_BYTES + n) == 1;
        if (!ok)
                return hull_fail(e, -EIO, "vault: AES-256-GCM failed to seal");
        _cleanup_free_ char *b64 = NULL;
        int r = base64_encode(buf, total, false, &b64, NULL);
        if (r < 0)
                return hull_fail(e, r, "vault: cannot encode the sealed secrets");
        if (asprintf(ret, ENVELOPE_PREFIX "%s.%s", k->keys[0].id, b64) < 0)
                return hull_err(e, -ENOMEM, "vault: cannot seal");
        return 0;
}

int vault_sealed_key_id(const char *sealed, char ret[VAULT_KEY_ID_MAX]) {
        if (!sealed || strncmp(sealed, ENVELOPE_PREFIX, strlen(ENVELOPE_PREFIX)) != 0)
                return -EBADMSG;
        const char *id = sealed + strlen(ENVELOPE_PREFIX);
        size_t n = strcspn(id, ".");
        if (n == 0 || n >= VAULT_KEY_ID_MAX || id[n] != '.')
                return -EBADMSG;
        memcpy(ret, id, n);
        ret[n] = '\0';
        return 0;
}

int vault_open(const vault_keyring *k, const char *aad, const char *sealed, char **ret, size_t *ret_len,
               hull_error *e) {
        char id[VAULT_KEY_ID_MAX];
        if (vault_sealed_key_id(sealed, id) < 0)
                return hull_fail(e, -EBADMSG, "vault: the stored secrets are not a sealed envelope");
        const vault_key *key = NULL;
        for (size_t i = 0; k && i < k->n && !key; i++)
                if (strcmp(k->keys[i].id, id) == 0)
                        key = &k->keys[i];
        if (!key)
                return hull_fail(e, -ENOKEY,
                                 "vault: the secrets were sealed with key %s, which the key ring (HULL_VAULT_KEY or "
                                 "$HULL_HOME/vault.key) no longer holds: put that key back after the current one",
                                 id);
        if (!dlib_crypto_load(e))
                return -ENOSYS;
        const char *b64 = sealed + strlen(ENVELOPE_PREFIX) + strlen(id) + 1;
        _cleanup_free_ uint8_t *raw = NULL;
        size_t len = 0;
        if (base64_decode(b64, strlen(b64), (void **) &raw, &len) < 0 || len < VAULT_NONCE_BYTES + VAULT_TAG_BYTES ||
            len - VAULT_NONCE_BYTES - VAULT_TAG_BYTES > VAULT_SECRET_MAX)
                return hull_fail(e, -EBADMSG, "vault: the stored secrets are not a sealed envelope");
        size_t n = len - VAULT_NONCE_BYTES - VAULT_TAG_BYTES;
        char *out = malloc(n + 1);
        if (!out)
                return hull_err(e, -ENOMEM, "vault: cannot open");
        _cleanup_(ctx_freep) EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
        int l = 0, fin = 0;
        bool ok = c && EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
                  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, VAULT_NONCE_BYTES, NULL) == 1 &&
                  EVP_DecryptInit_ex(c, NULL, NULL, key->key, raw) == 1 &&
                  EVP_DecryptUpdate(c, NULL, &l, (const uint8_t *) aad, (int) strlen(aad)) == 1 &&
                  EVP_DecryptUpdate(c, (uint8_t *) out, &l, raw + VAULT_NONCE_BYTES, (int) n) == 1 &&
                  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, VAULT_TAG_BYTES, raw + VAULT_NONCE_BYTES + n) == 1 &&
                  EVP_DecryptFinal_ex(c, (uint8_t *) out + l, &fin) == 1 && (size_t) (l + fin) == n;
        if (!ok) {
                explicit_bzero(out, n + 1);
                free(out);
                return hull_fail(e, -EBADMSG,
                                 "vault: the stored secrets do not open with key %s (altered, or moved from another "
                                 "credential)",
                                 id);
        }
        out[n] = '\0';
        *ret = out;
        if (ret_len)
                *ret_len = n;
        return 0;
}
