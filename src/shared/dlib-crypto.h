/* dlib-crypto.h: OpenSSL's libcrypto (libcrypto.so.3) through the loader (dlib.h), for SHA-256
 * (sha256.h), base64 (base64.h), constant-time comparison, and the AEAD (AES-256-GCM) and
 * random bytes of the vaults' sealed secrets (vault-seal.h), and HMAC-SHA256 (webhook-sign.h).
 *
 * Why not linked: linked statically (as it was), libcrypto's x86_64 start-up code runs
 * OPENSSL_cpuid_setup() from .init in every hull command: a dozen CPUID instructions, each a
 * trap to the hypervisor in a VM, about 0.05 ms of hull exec, which needs no libcrypto at all.
 * Loaded, only a process that hashes or encodes pays, once. Linked shared, hull would map it
 * at every start.
 *
 * Call dlib_crypto_load() (or dlib_load(DLIB_CRYPTO, e)) before the first call; the macros
 * below turn the usual names into the table's pointers. SHA256_* are deprecated in OpenSSL 3
 * but kept (sha256.c says why not EVP). */
#pragma once

#ifndef OPENSSL_SUPPRESS_DEPRECATED
#define OPENSSL_SUPPRESS_DEPRECATED 1
#endif
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "dlib.h"

#define DLIB_CRYPTO_FUNCS(X)                                                                                           \
        X(CRYPTO_memcmp)                                                                                               \
        X(EVP_DecodeBlock)                                                                                             \
        X(EVP_EncodeBlock)                                                                                             \
        X(EVP_CIPHER_CTX_new)                                                                                          \
        X(EVP_CIPHER_CTX_free)                                                                                         \
        X(EVP_CIPHER_CTX_ctrl)                                                                                         \
        X(EVP_aes_256_gcm)                                                                                             \
        X(EVP_EncryptInit_ex)                                                                                          \
        X(EVP_EncryptUpdate)                                                                                           \
        X(EVP_EncryptFinal_ex)                                                                                         \
        X(EVP_DecryptInit_ex)                                                                                          \
        X(EVP_DecryptUpdate)                                                                                           \
        X(EVP_DecryptFinal_ex)                                                                                         \
        X(EVP_sha256)                                                                                                  \
        X(HMAC)                                                                                                        \
        X(RAND_bytes)                                                                                                  \
        X(SHA256_Final)                                                                                                \
        X(SHA256_Init)                                                                                                 \
        X(SHA256_Update)

typedef struct dlib_crypto {
#define X(f) __typeof__(f) *f;
        DLIB_CRYPTO_FUNCS(X)
#undef X
} dlib_crypto;

/* The table: written once by dlib_load(DLIB_CRYPTO), read-only after. */
extern dlib_crypto dlib_crypto_api;

/* dlib_load(DLIB_CRYPTO, e), typed: the table, or NULL with *e filled (-ENOSYS). */
static inline const dlib_crypto *dlib_crypto_load(hull_error *e) {
        return dlib_load(DLIB_CRYPTO, e) < 0 ? NULL : &dlib_crypto_api;
}

#ifndef DLIB_NO_MACROS
#define CRYPTO_memcmp (dlib_crypto_api.CRYPTO_memcmp)
#define EVP_DecodeBlock (dlib_crypto_api.EVP_DecodeBlock)
#define EVP_EncodeBlock (dlib_crypto_api.EVP_EncodeBlock)
#define EVP_CIPHER_CTX_new (dlib_crypto_api.EVP_CIPHER_CTX_new)
#define EVP_CIPHER_CTX_free (dlib_crypto_api.EVP_CIPHER_CTX_free)
#define EVP_CIPHER_CTX_ctrl (dlib_crypto_api.EVP_CIPHER_CTX_ctrl)
#define EVP_aes_256_gcm (dlib_crypto_api.EVP_aes_256_gcm)
#define EVP_EncryptInit_ex (dlib_crypto_api.EVP_EncryptInit_ex)
#define EVP_EncryptUpdate (dlib_crypto_api.EVP_EncryptUpdate)
#define EVP_EncryptFinal_ex (dlib_crypto_api.EVP_EncryptFinal_ex)
#define EVP_DecryptInit_ex (dlib_crypto_api.EVP_DecryptInit_ex)
#define EVP_DecryptUpdate (dlib_crypto_api.EVP_DecryptUpdate)
#define EVP_DecryptFinal_ex (dlib_crypto_api.EVP_DecryptFinal_ex)
#define EVP_sha256 (dlib_crypto_api.EVP_sha256)
#define HMAC (dlib_crypto_api.HMAC)
#define RAND_bytes (dlib_crypto_api.RAND_bytes)
#define SHA256_Final (dlib_crypto_api.SHA256_Final)
#define SHA256_Init (dlib_crypto_api.SHA256_Init)
#define SHA256_Update (dlib_crypto_api.SHA256_Update)
#endif
