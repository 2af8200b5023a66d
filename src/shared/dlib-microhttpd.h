/* dlib-microhttpd.h: libmicrohttpd (libmicrohttpd.so.12) through the loader (dlib.h), for
 * hull serve's HTTP server.
 *
 * Why not linked: linked (shared; its static archive needs GnuTLS's, which needs static
 * libraries Debian does not ship), every hull command would load it and GnuTLS with ten more
 * libraries, about 1 ms of hull exec's start-up.
 *
 * Call dlib_load(DLIB_MICROHTTPD, e) before the first MHD_* call; the macros below turn the
 * usual names into the table's pointers. A function not in the list is one line to add. */
#pragma once

#include <microhttpd.h>

#include "dlib.h"

#define DLIB_MICROHTTPD_FUNCS(X)                                                                                       \
        X(MHD_add_response_header)                                                                                     \
        X(MHD_create_response_from_buffer)                                                                             \
        X(MHD_create_response_from_callback)                                                                           \
        X(MHD_create_response_from_fd64)                                                                               \
        X(MHD_destroy_response)                                                                                        \
        X(MHD_get_connection_info)                                                                                     \
        X(MHD_get_connection_values)                                                                                   \
        X(MHD_get_connection_values_n)                                                                                 \
        X(MHD_get_daemon_info)                                                                                         \
        X(MHD_queue_response)                                                                                          \
        X(MHD_quiesce_daemon)                                                                                          \
        X(MHD_resume_connection)                                                                                       \
        X(MHD_start_daemon)                                                                                            \
        X(MHD_stop_daemon)                                                                                             \
        X(MHD_suspend_connection)

typedef struct dlib_microhttpd {
#define X(f) __typeof__(f) *f;
        DLIB_MICROHTTPD_FUNCS(X)
#undef X
} dlib_microhttpd;

/* The table: written once by dlib_load(DLIB_MICROHTTPD), read-only after. */
extern dlib_microhttpd dlib_microhttpd_api;

/* dlib_load(DLIB_MICROHTTPD, e), typed: the table, or NULL with *e filled (-ENOSYS). */
static inline const dlib_microhttpd *dlib_microhttpd_load(hull_error *e) {
        return dlib_load(DLIB_MICROHTTPD, e) < 0 ? NULL : &dlib_microhttpd_api;
}

#ifndef DLIB_NO_MACROS
#define MHD_add_response_header (dlib_microhttpd_api.MHD_add_response_header)
#define MHD_create_response_from_buffer (dlib_microhttpd_api.MHD_create_response_from_buffer)
#define MHD_create_response_from_callback (dlib_microhttpd_api.MHD_create_response_from_callback)
#define MHD_create_response_from_fd64 (dlib_microhttpd_api.MHD_create_response_from_fd64)
#define MHD_destroy_response (dlib_microhttpd_api.MHD_destroy_response)
#define MHD_get_connection_info (dlib_microhttpd_api.MHD_get_connection_info)
#define MHD_get_connection_values (dlib_microhttpd_api.MHD_get_connection_values)
#define MHD_get_connection_values_n (dlib_microhttpd_api.MHD_get_connection_values_n)
#define MHD_get_daemon_info (dlib_microhttpd_api.MHD_get_daemon_info)
#define MHD_queue_response (dlib_microhttpd_api.MHD_queue_response)
#define MHD_quiesce_daemon (dlib_microhttpd_api.MHD_quiesce_daemon)
#define MHD_resume_connection (dlib_microhttpd_api.MHD_resume_connection)
#define MHD_start_daemon (dlib_microhttpd_api.MHD_start_daemon)
#define MHD_stop_daemon (dlib_microhttpd_api.MHD_stop_daemon)
#define MHD_suspend_connection (dlib_microhttpd_api.MHD_suspend_connection)
#endif
