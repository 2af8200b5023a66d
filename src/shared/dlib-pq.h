/* dlib-pq.h: libpq (libpq.so.5), PostgreSQL's client library, through the loader (dlib.h).
 *
 * Why not linked: only the store's PostgreSQL backend (src/store/store-pg*.c) uses it, and
 * libpq brings its own DT_NEEDED (libssl, libcrypto, libgssapi_krb5, libldap, ...) that every hull
 * command, hull exec's benchmarked start-up first, would map and relocate. Loaded, only a
 * hull serve (or hull db) given a postgres:// URL pays, once.
 *
 * Call dlib_pq_load() before the first PQ* call; the macros below turn the usual names into the
 * table's pointers. */
#pragma once

#include <libpq-fe.h>

#include "dlib.h"

#define DLIB_PQ_FUNCS(X)                                                                                               \
        X(PQclear)                                                                                                     \
        X(PQconsumeInput)                                                                                              \
        X(PQfreemem)                                                                                                   \
        X(PQnotifies)                                                                                                  \
        X(PQsocket)                                                                                                    \
        X(PQcmdTuples)                                                                                                 \
        X(PQconnectdbParams)                                                                                           \
        X(PQerrorMessage)                                                                                              \
        X(PQexec)                                                                                                      \
        X(PQexecParams)                                                                                                \
        X(PQexecPrepared)                                                                                              \
        X(PQfinish)                                                                                                    \
        X(PQgetisnull)                                                                                                 \
        X(PQgetlength)                                                                                                 \
        X(PQgetvalue)                                                                                                  \
        X(PQlibVersion)                                                                                                \
        X(PQntuples)                                                                                                   \
        X(PQprepare)                                                                                                   \
        X(PQreset)                                                                                                     \
        X(PQresultErrorField)                                                                                          \
        X(PQresultErrorMessage)                                                                                        \
        X(PQresultStatus)                                                                                              \
        X(PQserverVersion)                                                                                             \
        X(PQsetNoticeProcessor)                                                                                        \
        X(PQstatus)                                                                                                    \
        X(PQtransactionStatus)

typedef struct dlib_pq {
#define X(f) __typeof__(f) *f;
        DLIB_PQ_FUNCS(X)
#undef X
} dlib_pq;

/* The table: written once by dlib_load(DLIB_PQ), read-only after. */
extern dlib_pq dlib_pq_api;

/* dlib_load(DLIB_PQ, e), typed: the table, or NULL with *e filled (-ENOSYS). */
static inline const dlib_pq *dlib_pq_load(hull_error *e) {
        return dlib_load(DLIB_PQ, e) < 0 ? NULL : &dlib_pq_api;
}

#ifndef DLIB_NO_MACROS
#define PQclear (dlib_pq_api.PQclear)
#define PQconsumeInput (dlib_pq_api.PQconsumeInput)
#define PQfreemem (dlib_pq_api.PQfreemem)
#define PQnotifies (dlib_pq_api.PQnotifies)
#define PQsocket (dlib_pq_api.PQsocket)
#define PQcmdTuples (dlib_pq_api.PQcmdTuples)
#define PQconnectdbParams (dlib_pq_api.PQconnectdbParams)
#define PQerrorMessage (dlib_pq_api.PQerrorMessage)
#define PQexec (dlib_pq_api.PQexec)
#define PQexecParams (dlib_pq_api.PQexecParams)
#define PQexecPrepared (dlib_pq_api.PQexecPrepared)
#define PQfinish (dlib_pq_api.PQfinish)
#define PQgetisnull (dlib_pq_api.PQgetisnull)
#define PQgetlength (dlib_pq_api.PQgetlength)
#define PQgetvalue (dlib_pq_api.PQgetvalue)
#define PQlibVersion (dlib_pq_api.PQlibVersion)
#define PQntuples (dlib_pq_api.PQntuples)
#define PQprepare (dlib_pq_api.PQprepare)
#define PQreset (dlib_pq_api.PQreset)
#define PQresultErrorField (dlib_pq_api.PQresultErrorField)
#define PQresultErrorMessage (dlib_pq_api.PQresultErrorMessage)
#define PQresultStatus (dlib_pq_api.PQresultStatus)
#define PQserverVersion (dlib_pq_api.PQserverVersion)
#define PQsetNoticeProcessor (dlib_pq_api.PQsetNoticeProcessor)
#define PQstatus (dlib_pq_api.PQstatus)
#define PQtransactionStatus (dlib_pq_api.PQtransactionStatus)
#endif
