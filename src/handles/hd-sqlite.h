/* hd-sqlite.h: SQLite for the handle store, loaded with dlopen() on first use.
 *
 * Why not linked: Debian's libsqlite3.a links fine statically, but its SQL math functions
 * (acos, log, pow, ...) add libm.so.6 to hull's DT_NEEDED, which hull exec's benchmarked
 * start-up does not have today, and glibc's libm.a cannot be linked into a PIE. Loaded, only a
 * process that touches a handle pays, once. A side effect is wanted: this SQLite instance is
 * the handle store's alone, so its process-wide hard heap limit (HD_SQLITE_HEAP_MAX) bounds
 * hostile handle files without touching any other SQLite user in the process.
 *
 * hd-*.c call the functions by their usual names, which the macros below turn into the
 * loaded table's pointers. */
#pragma once

#include <sqlite3.h>

#include "error.h"

#define HD_SQLITE_SONAME "libsqlite3.so.0"

#define HD_SQLITE_FUNCS(X)                                                                                             \
        X(sqlite3_bind_double)                                                                                         \
        X(sqlite3_bind_int64)                                                                                          \
        X(sqlite3_bind_null)                                                                                           \
        X(sqlite3_bind_text)                                                                                           \
        X(sqlite3_busy_timeout)                                                                                        \
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
        X(sqlite3_create_function_v2)                                                                                  \
        X(sqlite3_db_config)                                                                                           \
        X(sqlite3_errcode)                                                                                             \
        X(sqlite3_errmsg)                                                                                              \
        X(sqlite3_exec)                                                                                                \
        X(sqlite3_extended_errcode)                                                                                    \
        X(sqlite3_finalize)                                                                                            \
        X(sqlite3_free)                                                                                                \
        X(sqlite3_hard_heap_limit64)                                                                                   \
        X(sqlite3_libversion)                                                                                          \
        X(sqlite3_limit)                                                                                               \
        X(sqlite3_open_v2)                                                                                             \
        X(sqlite3_prepare_v2)                                                                                          \
        X(sqlite3_progress_handler)                                                                                    \
        X(sqlite3_reset)                                                                                               \
        X(sqlite3_result_int64)                                                                                        \
        X(sqlite3_set_authorizer)                                                                                      \
        X(sqlite3_soft_heap_limit64)                                                                                   \
        X(sqlite3_step)                                                                                                \
        X(sqlite3_stmt_readonly)                                                                                       \
        X(sqlite3_aggregate_context)                                                                                   \
        X(sqlite3_value_blob)                                                                                          \
        X(sqlite3_value_bytes)                                                                                         \
        X(sqlite3_value_double)                                                                                        \
        X(sqlite3_value_int64)                                                                                         \
        X(sqlite3_value_type)

typedef struct hd_sqlite_api {
#define X(f) __typeof__(f) *f;
        HD_SQLITE_FUNCS(X)
#undef X
} hd_sqlite_api;

/* Load the library (once per process; thread-safe) and set its hard heap limit. Returns the
 * table, or NULL with *e filled (-ENOSYS: libsqlite3.so.0 missing or too old). */
const hd_sqlite_api *hd_sqlite_load(hull_error *e);

/* The table after a successful hd_sqlite_load(); used by the macros below. */
extern hd_sqlite_api hd_sqlite;

#ifndef HD_SQLITE_NO_MACROS
#define sqlite3_bind_double hd_sqlite.sqlite3_bind_double
#define sqlite3_bind_int64 hd_sqlite.sqlite3_bind_int64
#define sqlite3_bind_null hd_sqlite.sqlite3_bind_null
#define sqlite3_bind_text hd_sqlite.sqlite3_bind_text
#define sqlite3_busy_timeout hd_sqlite.sqlite3_busy_timeout
#define sqlite3_close_v2 hd_sqlite.sqlite3_close_v2
#define sqlite3_column_blob hd_sqlite.sqlite3_column_blob
#define sqlite3_column_bytes hd_sqlite.sqlite3_column_bytes
#define sqlite3_column_count hd_sqlite.sqlite3_column_count
#define sqlite3_column_decltype hd_sqlite.sqlite3_column_decltype
#define sqlite3_column_double hd_sqlite.sqlite3_column_double
#define sqlite3_column_int64 hd_sqlite.sqlite3_column_int64
#define sqlite3_column_name hd_sqlite.sqlite3_column_name
#define sqlite3_column_text hd_sqlite.sqlite3_column_text
#define sqlite3_column_type hd_sqlite.sqlite3_column_type
#define sqlite3_create_function_v2 hd_sqlite.sqlite3_create_function_v2
#define sqlite3_db_config hd_sqlite.sqlite3_db_config
#define sqlite3_errcode hd_sqlite.sqlite3_errcode
#define sqlite3_errmsg hd_sqlite.sqlite3_errmsg
#define sqlite3_exec hd_sqlite.sqlite3_exec
#define sqlite3_extended_errcode hd_sqlite.sqlite3_extended_errcode
#define sqlite3_finalize hd_sqlite.sqlite3_finalize
#define sqlite3_free hd_sqlite.sqlite3_free
#define sqlite3_hard_heap_limit64 hd_sqlite.sqlite3_hard_heap_limit64
#define sqlite3_libversion hd_sqlite.sqlite3_libversion
#define sqlite3_limit hd_sqlite.sqlite3_limit
#define sqlite3_open_v2 hd_sqlite.sqlite3_open_v2
#define sqlite3_prepare_v2 hd_sqlite.sqlite3_prepare_v2
#define sqlite3_progress_handler hd_sqlite.sqlite3_progress_handler
#define sqlite3_reset hd_sqlite.sqlite3_reset
#define sqlite3_result_int64 hd_sqlite.sqlite3_result_int64
#define sqlite3_set_authorizer hd_sqlite.sqlite3_set_authorizer
#define sqlite3_soft_heap_limit64 hd_sqlite.sqlite3_soft_heap_limit64
#define sqlite3_step hd_sqlite.sqlite3_step
#define sqlite3_stmt_readonly hd_sqlite.sqlite3_stmt_readonly
#define sqlite3_aggregate_context hd_sqlite.sqlite3_aggregate_context
#define sqlite3_value_blob hd_sqlite.sqlite3_value_blob
#define sqlite3_value_bytes hd_sqlite.sqlite3_value_bytes
#define sqlite3_value_double hd_sqlite.sqlite3_value_double
#define sqlite3_value_int64 hd_sqlite.sqlite3_value_int64
#define sqlite3_value_type hd_sqlite.sqlite3_value_type
#endif

#ifndef HD_SQLITE_NO_MACROS
static inline void hd_sqlite_finalizep(sqlite3_stmt **p) {
        if (*p)
                sqlite3_finalize(*p);
}
static inline void hd_sqlite_closep(sqlite3 **p) {
        if (*p)
                sqlite3_close_v2(*p);
}
#endif
#define _cleanup_stmt_ _cleanup_(hd_sqlite_finalizep)
#define _cleanup_db_ _cleanup_(hd_sqlite_closep)
