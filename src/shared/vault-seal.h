/* vault-seal.h: the vaults' secrets sealed at rest (issue 22): a key ring read from outside the
 * database, and an envelope of OpenSSL's AES-256-GCM around each credential's secrets.
 *
 * The key ring is HULL_VAULT_KEY when set, else the file $HULL_HOME/vault.key (made on first use
 * with one random key, mode 0600; refused when others may read it). Either holds base64 keys of
 * VAULT_KEY_BYTES, one a line (or comma-separated), '#' starting a comment: the first is the
 * current key (every seal uses it), the others only open what they sealed before. A key's id is
 * the first 16 hex digits of SHA-256("hull-vault-key\0" key), so a key is named without a table.
 *
 * An envelope is "hv1.<key id>.<base64(nonce | ciphertext | tag)>": the key id beside each
 * ciphertext, a random nonce per seal, and associated data (the credential's id) bound into the
 * tag, so a ciphertext moved to another row does not open. Rotation without downtime: put a new
 * key first (`hull vault rotate-key` does), the old one after it; new seals use the new key,
 * old envelopes still open and are sealed again with it when next used (or by `hull vault
 * rekey`); once none names the old key, drop its line. The ring is read anew at each use, so a
 * running hull serve takes the new file at its next seal. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "limits.h"

typedef struct vault_key {
        char id[VAULT_KEY_ID_MAX];
        uint8_t key[VAULT_KEY_BYTES];
} vault_key;

typedef struct vault_keyring {
        vault_key keys[VAULT_KEYS_MAX]; /* keys[0]: the current key */
        size_t n;
} vault_keyring;

/* The ring of text (at most VAULT_KEY_FILE_MAX bytes; what names where it came from in errors).
 * Pure. -EINVAL with *e for a line that is not base64 of VAULT_KEY_BYTES, no key, or more than
 * VAULT_KEYS_MAX. The message never holds a key. */
int vault_keyring_parse(const char *text, const char *what, vault_keyring *ret, hull_error *e);

/* The ring of HULL_VAULT_KEY, else of home/vault.key (made with a new key when missing). -EACCES
 * for a file others may read or that is not a regular file of this user; the errors of
 * vault_keyring_parse. */
int vault_keyring_load(const char *home, vault_keyring *ret, hull_error *e);

/* Wipe the keys. */
void vault_keyring_wipe(vault_keyring *k);
static inline void vault_keyring_wipep(vault_keyring *k) {
        vault_keyring_wipe(k);
}

/* A new random key as base64 text (malloc'd), and its id. */
int vault_key_generate(char **ret_b64, char ret_id[VAULT_KEY_ID_MAX], hull_error *e);

/* Seal n bytes (at most VAULT_SECRET_MAX) with the ring's current key, bound to aad (a string).
 * *ret: the envelope (malloc'd). */
int vault_seal(const vault_keyring *k, const char *aad, const void *p, size_t n, char **ret, hull_error *e);

/* Open an envelope sealed with aad. *ret: the plaintext, NUL-terminated (malloc'd; wipe it and
 * free it with vault_free_secret), *ret_len its bytes. -ENOKEY when the ring lacks its key (the
 * message names the key id), -EBADMSG when it is not an envelope or does not open (tampered, or
 * sealed for another aad). */
int vault_open(const vault_keyring *k, const char *aad, const char *sealed, char **ret, size_t *ret_len, hull_error *e);

/* The key id of an envelope into ret; -EBADMSG when it is not one. Pure. */
int vault_sealed_key_id(const char *sealed, char ret[VAULT_KEY_ID_MAX]);

/* Wipe a NUL-terminated secret and free it (NULL is fine). */
void vault_free_secret(char *s);
static inline void vault_free_secretp(char **s) {
        vault_free_secret(*s);
}
#define _cleanup_secret_ _cleanup_(vault_free_secretp)
