/* dlib-crypto.h: OpenSSL's libcrypto (libcrypto.so.3) through the loader (dlib.h), for SHA-256
 * (sha256.h), base64 (base64.h) and constant-time comparison.
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
#include <openssl/sha.h>

#include "dlib.h"

#define DLIB_CRYPTO_FUNCS(X)                                                                                           \
        X(CRYPTO_memcmp)                                                                                               \
        X(EVP_DecodeBlock)                                                                                             \
        X(EVP_EncodeBlock)                                                                                             \
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
#define SHA256_Final (dlib_crypto_api.SHA256_Final)
#define SHA256_Init (dlib_crypto_api.SHA256_Init)
#define SHA256_Update (dlib_crypto_api.SHA256_Update)
#endif
