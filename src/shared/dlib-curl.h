/* dlib-curl.h: libcurl (libcurl.so.4) through the loader (dlib.h), for the HTTP client
 * (src/shared/http-client) and the egress guard's URL parsing (src/shared/egress).
 *
 * Why not linked: hull would gain a DT_NEEDED on libcurl and, through it, OpenSSL's shared
 * libraries and a dozen more, mapped by every hull command.
 *
 * Call dlib_load(DLIB_CURL, e) before the first curl_* call; the macros below turn the usual
 * names into the table's pointers. curl's type-checking macros are off here (they would wrap
 * curl_easy_setopt and curl_easy_getinfo): pass each option the exact type it takes. */
#pragma once

#ifndef CURL_DISABLE_TYPECHECK
#define CURL_DISABLE_TYPECHECK 1
#endif
#include <curl/curl.h>

#include "dlib.h"

#define DLIB_CURL_FUNCS(X)                                                                                             \
        X(curl_easy_cleanup)                                                                                           \
        X(curl_easy_escape)                                                                                            \
        X(curl_easy_getinfo)                                                                                           \
        X(curl_easy_init)                                                                                              \
        X(curl_easy_perform)                                                                                           \
        X(curl_easy_reset)                                                                                             \
        X(curl_easy_setopt)                                                                                            \
        X(curl_easy_strerror)                                                                                          \
        X(curl_free)                                                                                                   \
        X(curl_global_cleanup)                                                                                         \
        X(curl_global_init)                                                                                            \
        X(curl_slist_append)                                                                                           \
        X(curl_slist_free_all)                                                                                         \
        X(curl_url)                                                                                                    \
        X(curl_url_cleanup)                                                                                            \
        X(curl_url_dup)                                                                                                \
        X(curl_url_get)                                                                                                \
        X(curl_url_set)                                                                                                \
        X(curl_url_strerror)

typedef struct dlib_curl {
#define X(f) __typeof__(f) *f;
        DLIB_CURL_FUNCS(X)
#undef X
} dlib_curl;

/* The table: written once by dlib_load(DLIB_CURL), read-only after. */
extern dlib_curl dlib_curl_api;

/* dlib_load(DLIB_CURL, e), typed: the table, or NULL with *e filled (-ENOSYS). */
static inline const dlib_curl *dlib_curl_load(hull_error *e) {
        return dlib_load(DLIB_CURL, e) < 0 ? NULL : &dlib_curl_api;
}

#ifndef DLIB_NO_MACROS
/* curl.h included earlier with its type checks on defines these two as function-like macros. */
#undef curl_easy_getinfo
#undef curl_easy_setopt
#define curl_easy_cleanup (dlib_curl_api.curl_easy_cleanup)
#define curl_easy_getinfo (dlib_curl_api.curl_easy_getinfo)
#define curl_easy_init (dlib_curl_api.curl_easy_init)
#define curl_easy_perform (dlib_curl_api.curl_easy_perform)
#define curl_easy_reset (dlib_curl_api.curl_easy_reset)
#define curl_easy_setopt (dlib_curl_api.curl_easy_setopt)
#define curl_easy_strerror (dlib_curl_api.curl_easy_strerror)
#define curl_global_cleanup (dlib_curl_api.curl_global_cleanup)
#define curl_easy_escape (dlib_curl_api.curl_easy_escape)
#define curl_free (dlib_curl_api.curl_free)
#define curl_global_init (dlib_curl_api.curl_global_init)
#define curl_slist_append (dlib_curl_api.curl_slist_append)
#define curl_slist_free_all (dlib_curl_api.curl_slist_free_all)
/* the URL API (the egress guard parses and joins URLs with it) */
#define curl_url (dlib_curl_api.curl_url)
#define curl_url_cleanup (dlib_curl_api.curl_url_cleanup)
#define curl_url_dup (dlib_curl_api.curl_url_dup)
#define curl_url_get (dlib_curl_api.curl_url_get)
#define curl_url_set (dlib_curl_api.curl_url_set)
#define curl_url_strerror (dlib_curl_api.curl_url_strerror)
#endif
