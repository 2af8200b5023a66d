/* test-vault-seal.c: the vaults' key ring (its text, HULL_VAULT_KEY, the key file made 0600 on
 * first use and refused when others may read it) and the AES-256-GCM envelope: round trips, the
 * key id beside the ciphertext, a random nonce per seal, tampering, the wrong aad, a missing key,
 * and rotation (a new current key opens nothing old until the old key stays in the ring). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "test.h"
#include "vault-seal.h"

static const char key_a[] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="; /* "0123456789abcdef" x2 */
static const char key_b[] = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=";

static void test_parse(void) {
        vault_keyring k;
        hull_error e = {0};
        CHECK_EQ_INT(vault_keyring_parse(key_a, "t", &k, &e), 0);
        CHECK_EQ_INT((int) k.n, 1);
        CHECK_EQ_INT((int) strlen(k.keys[0].id), 16);
        char text[256];
        snprintf(text, sizeof(text), "# current\n  %s  \n%s # old\n\n", key_b, key_a);
        vault_keyring k2;
        CHECK_EQ_INT(vault_keyring_parse(text, "t", &k2, &e), 0);
        CHECK_EQ_INT((int) k2.n, 2);
        CHECK_EQ_STR(k2.keys[1].id, k.keys[0].id); /* an id is the key's, wherever it stands */
        snprintf(text, sizeof(text), "%s,%s", key_b, key_a);
        CHECK_EQ_INT(vault_keyring_parse(text, "t", &k2, &e), 0);
        CHECK_EQ_INT((int) k2.n, 2);

        CHECK_EQ_INT(vault_keyring_parse("", "t", &k, &e), -EINVAL);
        CHECK_EQ_INT(vault_keyring_parse("# nothing\n", "t", &k, &e), -EINVAL);
        CHECK_EQ_INT(vault_keyring_parse("c2hvcnQ=", "t", &k, &e), -EINVAL); /* 5 bytes */
        CHECK(strstr(e.msg, "entry 1") != NULL);
        CHECK_EQ_INT(vault_keyring_parse("not base64!", "t", &k, &e), -EINVAL);
        CHECK(strstr(e.msg, "not base64") == NULL); /* the message never quotes the text */
        char many[1024] = "";
        for (unsigned i = 0; i <= VAULT_KEYS_MAX; i++)
                snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s\n", key_a);
        CHECK_EQ_INT(vault_keyring_parse(many, "t", &k, &e), -EINVAL);
        vault_keyring_wipe(&k);
        vault_keyring_wipe(&k2);
}

static void test_seal_open(void) {
        _cleanup_(vault_keyring_wipep) vault_keyring k = {0};
        hull_error e = {0};
        CHECK_EQ_INT(vault_keyring_parse(key_a, "t", &k, &e), 0);
        const char secret[] = "{\"token\":\"s3cr3t-PLAINTEXT-xyz\"}";
        char *a = NULL, *b = NULL, *plain = NULL;
        size_t n = 0;
        CHECK_EQ_INT(vault_seal(&k, "vcrd_1", secret, strlen(secret), &a, &e), 0);
        CHECK_EQ_INT(vault_seal(&k, "vcrd_1", secret, strlen(secret), &b, &e), 0);
        CHECK(a && b && strcmp(a, b) != 0); /* a new nonce each time */
        CHECK(strstr(a, "s3cr3t") == NULL && strncmp(a, "hv1.", 4) == 0);
        char id[VAULT_KEY_ID_MAX];
        CHECK_EQ_INT(vault_sealed_key_id(a, id), 0);
        CHECK_EQ_STR(id, k.keys[0].id);
        CHECK_EQ_INT(vault_open(&k, "vcrd_1", a, &plain, &n, &e), 0);
        CHECK(plain && n == strlen(secret) && strcmp(plain, secret) == 0);
        vault_free_secret(plain);
        plain = NULL;

        /* another credential's aad: does not open */
        CHECK_EQ_INT(vault_open(&k, "vcrd_2", a, &plain, &n, &e), -EBADMSG);
        CHECK(strstr(e.msg, "s3cr3t") == NULL);
        /* one character changed anywhere in the ciphertext or tag */
        size_t len = strlen(a);
        for (size_t i = 4 + 17; i < len; i += 7) {
                char *t = strdup(a);
                t[i] = t[i] == 'A' ? 'B' : 'A';
                int r = vault_open(&k, "vcrd_1", t, &plain, &n, &e);
                TEST_RESULT(r == -EBADMSG, "altered at %zu: %d", i, r);
                if (r == 0)
                        vault_free_secret(TAKE_PTR(plain));
                free(t);
        }
        CHECK_EQ_INT(vault_open(&k, "vcrd_1", "plain text", &plain, &n, &e), -EBADMSG);
        CHECK_EQ_INT(vault_open(&k, "vcrd_1", "hv1.0123456789abcdef.AAAA", &plain, &n, &e), -ENOKEY);
        CHECK(strstr(e.msg, "0123456789abcdef") != NULL);
        CHECK_EQ_INT(vault_open(&k, "vcrd_1", "hv1..AAAA", &plain, &n, &e), -EBADMSG);

        /* rotation: b first, a kept: old envelopes open, new ones name b */
        _cleanup_(vault_keyring_wipep) vault_keyring r2 = {0}, only_b = {0};
        char text[256];
        snprintf(text, sizeof(text), "%s\n%s\n", key_b, key_a);
        CHECK_EQ_INT(vault_keyring_parse(text, "t", &r2, &e), 0);
        CHECK_EQ_INT(vault_open(&r2, "vcrd_1", a, &plain, &n, &e), 0);
        vault_free_secret(TAKE_PTR(plain));
        char *c = NULL;
        CHECK_EQ_INT(vault_seal(&r2, "vcrd_1", secret, strlen(secret), &c, &e), 0);
        CHECK_EQ_INT(vault_sealed_key_id(c, id), 0);
        CHECK_EQ_STR(id, r2.keys[0].id);
        CHECK_EQ_INT(vault_keyring_parse(key_b, "t", &only_b, &e), 0);
        CHECK_EQ_INT(vault_open(&only_b, "vcrd_1", c, &plain, &n, &e), 0);
        vault_free_secret(TAKE_PTR(plain));
        CHECK_EQ_INT(vault_open(&only_b, "vcrd_1", a, &plain, &n, &e), -ENOKEY);

        char *big = calloc(1, VAULT_SECRET_MAX + 2);
        memset(big, 'x', VAULT_SECRET_MAX + 1);
        CHECK_EQ_INT(vault_seal(&k, "x", big, VAULT_SECRET_MAX + 1, &plain, &e), -E2BIG);
        free(big);
        free(a);
        free(b);
        free(c);
}

static void test_key_file(void) {
        char dir[] = "/tmp/test-vault-seal-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        unsetenv("HULL_VAULT_KEY");
        _cleanup_(vault_keyring_wipep) vault_keyring k = {0}, again = {0};
        hull_error e = {0};
        CHECK_EQ_INT(vault_keyring_load(dir, &k, &e), 0);
        char path[256];
        snprintf(path, sizeof(path), "%s/vault.key", dir);
        struct stat st;
        CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
        CHECK_EQ_INT(vault_keyring_load(dir, &again, &e), 0); /* the same key the second time */
        CHECK_EQ_STR(again.keys[0].id, k.keys[0].id);
        CHECK(chmod(path, 0644) == 0);
        CHECK_EQ_INT(vault_keyring_load(dir, &again, &e), -EACCES);
        CHECK(strstr(e.msg, "chmod 600") != NULL);
        CHECK(chmod(path, 0600) == 0);

        setenv("HULL_VAULT_KEY", key_b, 1);
        CHECK_EQ_INT(vault_keyring_load(dir, &again, &e), 0);
        CHECK(strcmp(again.keys[0].id, k.keys[0].id) != 0);
        setenv("HULL_VAULT_KEY", "bad", 1);
        CHECK_EQ_INT(vault_keyring_load(dir, &again, &e), -EINVAL);
        CHECK(strstr(e.msg, "HULL_VAULT_KEY") != NULL);
        unsetenv("HULL_VAULT_KEY");

        char *b64 = NULL, id[VAULT_KEY_ID_MAX];
        CHECK_EQ_INT(vault_key_generate(&b64, id, &e), 0);
        CHECK_EQ_INT(vault_keyring_parse(b64, "t", &again, &e), 0);
        CHECK_EQ_STR(again.keys[0].id, id);
        vault_free_secret(b64);
        unlink(path);
        rmdir(dir);
}

int main(void) {
        test_parse();
        test_seal_open();
        test_key_file();
        return test_done();
}
