/* dlib-sqlite3.h: SQLite (libsqlite3.so.0) through the loader (dlib.h).
 *
 * Why not linked: Debian's libsqlite3.a links fine statically, but its SQL math functions
 * (acos, log, pow, ...) add libm.so.6 to hull's DT_NEEDED, which hull exec's benchmarked
 * start-up does not have, and glibc's libm.a cannot be linked into a PIE.
 *
 * Loading also installs hull's accounting allocator (sqlite-mem.h) before any other SQLite call,
 * so untrusted work is bounded per operation, never by a process-wide limit.
 *
 * Call dlib_sqlite3_load() before the first sqlite3_* call; the macros below turn the usual
 * names into the table's pointers. */
#pragma once

#include <sqlite3.h>

#include "dlib.h"

#define DLIB_SQLITE3_FUNCS(X)                                                                                          \
        X(sqlite3_aggregate_context)                                                                                   \
        X(sqlite3_bind_double)                                                                                         \
        X(sqlite3_bind_int64)                                                                                          \
        X(sqlite3_bind_parameter_count)                                                                                \
        X(sqlite3_bind_null)                                                                                           \
        X(sqlite3_bind_text)                                                                                           \
        X(sqlite3_busy_timeout)                                                                                        \
        X(sqlite3_changes)                                                                                             \
        X(sqlite3_clear_bindings)                                                                                      \
        X(sqlite3_close_v2)                                                                                            \
        X(sqlite3_column_blob)                                                                                         \
        X(sqlite3_column_bytes)                                                                                        \
        X(sqlite3_column_count)                                                                                        \
        X(sqlite3_column_decltype)                                                                                     \
        X(sqlite3_column_double)                                                                                       \
        X(sqlite3_column_int64)                                                                                        \
        X(sqlite3_column_name)                                                                                         \
        X(sqlite3_column_text)                                                                                         \
        X(sqlite3_column_type)                                                                                         \
        X(sqlite3_config)                                                                                              \
        X(sqlite3_create_function_v2)                                                                                  \
        X(sqlite3_db_config)                                                                                           \
        X(sqlite3_errcode)                                                                                             \
        X(sqlite3_errmsg)                                                                                              \
        X(sqlite3_exec)                                                                                                \
        X(sqlite3_extended_errcode)                                                                                    \
        X(sqlite3_finalize)                                                                                            \
        X(sqlite3_free)                                                                                                \
        X(sqlite3_get_autocommit)                                                                                      \
        X(sqlite3_initialize)                                                                                          \
        X(sqlite3_libversion)                                                                                          \
        X(sqlite3_limit)                                                                                               \
        X(sqlite3_open_v2)                                                                                             \
        X(sqlite3_prepare_v2)                                                                                          \
        X(sqlite3_progress_handler)                                                                                    \
        X(sqlite3_reset)                                                                                               \
        X(sqlite3_result_int64)                                                                                        \
        X(sqlite3_set_authorizer)                                                                                      \
        X(sqlite3_step)                                                                                                \
        X(sqlite3_stmt_readonly)                                                                                       \
        X(sqlite3_value_blob)                                                                                          \
        X(sqlite3_value_bytes)                                                                                         \
        X(sqlite3_value_double)                                                                                        \
        X(sqlite3_value_int64)                                                                                         \
        X(sqlite3_value_type)

typedef struct dlib_sqlite3 {
#define X(f) __typeof__(f) *f;
        DLIB_SQLITE3_FUNCS(X)
#undef X
} dlib_sqlite3;

/* The table: written once by dlib_load(DLIB_SQLITE3), read-only after. */
extern dlib_sqlite3 dlib_sqlite3_api;

/* dlib_load(DLIB_SQLITE3, e), typed: the table, or NULL with *e filled (-ENOSYS). */
static inline const dlib_sqlite3 *dlib_sqlite3_load(hull_error *e) {
        return dlib_load(DLIB_SQLITE3, e) < 0 ? NULL : &dlib_sqlite3_api;
}

#ifndef DLIB_NO_MACROS
#define sqlite3_aggregate_context (dlib_sqlite3_api.sqlite3_aggregate_context)
#define sqlite3_bind_double (dlib_sqlite3_api.sqlite3_bind_double)
#define sqlite3_bind_int64 (dlib_sqlite3_api.sqlite3_bind_int64)
#define sqlite3_bind_parameter_count (dlib_sqlite3_api.sqlite3_bind_parameter_count)
#define sqlite3_bind_null (dlib_sqlite3_api.sqlite3_bind_null)
#define sqlite3_bind_text (dlib_sqlite3_api.sqlite3_bind_text)
#define sqlite3_busy_timeout (dlib_sqlite3_api.sqlite3_busy_timeout)
#define sqlite3_changes (dlib_sqlite3_api.sqlite3_changes)
#define sqlite3_clear_bindings (dlib_sqlite3_api.sqlite3_clear_bindings)
#define sqlite3_close_v2 (dlib_sqlite3_api.sqlite3_close_v2)
#define sqlite3_column_blob (dlib_sqlite3_api.sqlite3_column_blob)
#define sqlite3_column_bytes (dlib_sqlite3_api.sqlite3_column_bytes)
#define sqlite3_column_count (dlib_sqlite3_api.sqlite3_column_count)
#define sqlite3_column_decltype (dlib_sqlite3_api.sqlite3_column_decltype)
#define sqlite3_column_double (dlib_sqlite3_api.sqlite3_column_double)
#define sqlite3_column_int64 (dlib_sqlite3_api.sqlite3_column_int64)
#define sqlite3_column_name (dlib_sqlite3_api.sqlite3_column_name)
#define sqlite3_column_text (dlib_sqlite3_api.sqlite3_column_text)
#define sqlite3_column_type (dlib_sqlite3_api.sqlite3_column_type)
#define sqlite3_config (dlib_sqlite3_api.sqlite3_config)
#define sqlite3_create_function_v2 (dlib_sqlite3_api.sqlite3_create_function_v2)
#define sqlite3_db_config (dlib_sqlite3_api.sqlite3_db_config)
#define sqlite3_errcode (dlib_sqlite3_api.sqlite3_errcode)
#define sqlite3_errmsg (dlib_sqlite3_api.sqlite3_errmsg)
#define sqlite3_exec (dlib_sqlite3_api.sqlite3_exec)
#define sqlite3_extended_errcode (dlib_sqlite3_api.sqlite3_extended_errcode)
#define sqlite3_finalize (dlib_sqlite3_api.sqlite3_finalize)
#define sqlite3_free (dlib_sqlite3_api.sqlite3_free)
#define sqlite3_get_autocommit (dlib_sqlite3_api.sqlite3_get_autocommit)
#define sqlite3_initialize (dlib_sqlite3_api.sqlite3_initialize)
#define sqlite3_libversion (dlib_sqlite3_api.sqlite3_libversion)
#define sqlite3_limit (dlib_sqlite3_api.sqlite3_limit)
#define sqlite3_open_v2 (dlib_sqlite3_api.sqlite3_open_v2)
#define sqlite3_prepare_v2 (dlib_sqlite3_api.sqlite3_prepare_v2)
#define sqlite3_progress_handler (dlib_sqlite3_api.sqlite3_progress_handler)
#define sqlite3_reset (dlib_sqlite3_api.sqlite3_reset)
#define sqlite3_result_int64 (dlib_sqlite3_api.sqlite3_result_int64)
#define sqlite3_set_authorizer (dlib_sqlite3_api.sqlite3_set_authorizer)
#define sqlite3_step (dlib_sqlite3_api.sqlite3_step)
#define sqlite3_stmt_readonly (dlib_sqlite3_api.sqlite3_stmt_readonly)
#define sqlite3_value_blob (dlib_sqlite3_api.sqlite3_value_blob)
#define sqlite3_value_bytes (dlib_sqlite3_api.sqlite3_value_bytes)
#define sqlite3_value_double (dlib_sqlite3_api.sqlite3_value_double)
#define sqlite3_value_int64 (dlib_sqlite3_api.sqlite3_value_int64)
#define sqlite3_value_type (dlib_sqlite3_api.sqlite3_value_type)

static inline void sqlite3_finalizep(sqlite3_stmt **p) {
        if (*p)
                sqlite3_finalize(*p);
}
static inline void sqlite3_closep(sqlite3 **p) {
        if (*p)
                sqlite3_close_v2(*p);
}
#define _cleanup_stmt_ _cleanup_(sqlite3_finalizep)
#define _cleanup_db_ _cleanup_(sqlite3_closep)
#endif
