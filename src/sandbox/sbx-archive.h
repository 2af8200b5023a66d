/* sbx-archive.h: libarchive for the workspace's persist and hydrate, loaded with dlopen() on
 * first use. Linked, every hull command would map libarchive and its ten compression and crypto
 * libraries at start-up (about 2 ms, more than hull exec's whole sandbox set-up); loaded, only a
 * persist or a hydrate pays, once per process. sbx-workspace.c calls the functions by their
 * usual names, which the macros below turn into the loaded table's pointers. */
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include "error.h"

#define WS_ARCHIVE_SONAME "libarchive.so.13"

#define WS_ARCHIVE_FUNCS(X)                                                                                            \
        X(archive_entry_clear)                                                                                         \
        X(archive_entry_copy_pathname)                                                                                 \
        X(archive_entry_copy_symlink)                                                                                  \
        X(archive_entry_filetype)                                                                                      \
        X(archive_entry_free)                                                                                          \
        X(archive_entry_hardlink)                                                                                      \
        X(archive_entry_mtime)                                                                                         \
        X(archive_entry_mtime_is_set)                                                                                  \
        X(archive_entry_mtime_nsec)                                                                                    \
        X(archive_entry_new)                                                                                           \
        X(archive_entry_pathname)                                                                                      \
        X(archive_entry_perm)                                                                                          \
        X(archive_entry_set_filetype)                                                                                  \
        X(archive_entry_set_gid)                                                                                       \
        X(archive_entry_set_mtime)                                                                                     \
        X(archive_entry_set_perm)                                                                                      \
        X(archive_entry_set_size)                                                                                      \
        X(archive_entry_set_uid)                                                                                       \
        X(archive_entry_size)                                                                                          \
        X(archive_entry_symlink)                                                                                       \
        X(archive_error_string)                                                                                        \
        X(archive_read_data_block)                                                                                     \
        X(archive_read_free)                                                                                           \
        X(archive_read_new)                                                                                            \
        X(archive_read_next_header)                                                                                    \
        X(archive_read_open_fd)                                                                                        \
        X(archive_read_open_memory)                                                                                    \
        X(archive_read_support_format_tar)                                                                             \
        X(archive_set_error)                                                                                           \
        X(archive_write_close)                                                                                         \
        X(archive_write_data)                                                                                          \
        X(archive_write_finish_entry)                                                                                  \
        X(archive_write_free)                                                                                          \
        X(archive_write_header)                                                                                        \
        X(archive_write_new)                                                                                           \
        X(archive_write_open)                                                                                          \
        X(archive_write_set_bytes_in_last_block)                                                                       \
        X(archive_write_set_format_pax_restricted)

typedef struct ws_archive_api {
#define X(f) __typeof__(f) *f;
        WS_ARCHIVE_FUNCS(X)
#undef X
} ws_archive_api;

/* The loaded table, or NULL (with *e saying why) when libarchive cannot be loaded. Loaded once
 * per process (pthread_once); the table never changes after. Thread-safe. */
const ws_archive_api *ws_archive_load(hull_error *e);

/* The table once ws_archive_load() succeeded (callers check that first). */
const ws_archive_api *ws_archive_api_get(void);

#ifndef WS_ARCHIVE_NO_MACROS
#define archive_entry_clear (ws_archive_api_get()->archive_entry_clear)
#define archive_entry_copy_pathname (ws_archive_api_get()->archive_entry_copy_pathname)
#define archive_entry_copy_symlink (ws_archive_api_get()->archive_entry_copy_symlink)
#define archive_entry_filetype (ws_archive_api_get()->archive_entry_filetype)
#define archive_entry_free (ws_archive_api_get()->archive_entry_free)
#define archive_entry_hardlink (ws_archive_api_get()->archive_entry_hardlink)
#define archive_entry_mtime (ws_archive_api_get()->archive_entry_mtime)
#define archive_entry_mtime_is_set (ws_archive_api_get()->archive_entry_mtime_is_set)
#define archive_entry_mtime_nsec (ws_archive_api_get()->archive_entry_mtime_nsec)
#define archive_entry_new (ws_archive_api_get()->archive_entry_new)
#define archive_entry_pathname (ws_archive_api_get()->archive_entry_pathname)
#define archive_entry_perm (ws_archive_api_get()->archive_entry_perm)
#define archive_entry_set_filetype (ws_archive_api_get()->archive_entry_set_filetype)
#define archive_entry_set_gid (ws_archive_api_get()->archive_entry_set_gid)
#define archive_entry_set_mtime (ws_archive_api_get()->archive_entry_set_mtime)
#define archive_entry_set_perm (ws_archive_api_get()->archive_entry_set_perm)
#define archive_entry_set_size (ws_archive_api_get()->archive_entry_set_size)
#define archive_entry_set_uid (ws_archive_api_get()->archive_entry_set_uid)
#define archive_entry_size (ws_archive_api_get()->archive_entry_size)
#define archive_entry_symlink (ws_archive_api_get()->archive_entry_symlink)
#define archive_error_string (ws_archive_api_get()->archive_error_string)
#define archive_read_data_block (ws_archive_api_get()->archive_read_data_block)
#define archive_read_free (ws_archive_api_get()->archive_read_free)
#define archive_read_new (ws_archive_api_get()->archive_read_new)
#define archive_read_next_header (ws_archive_api_get()->archive_read_next_header)
#define archive_read_open_fd (ws_archive_api_get()->archive_read_open_fd)
#define archive_read_open_memory (ws_archive_api_get()->archive_read_open_memory)
#define archive_read_support_format_tar (ws_archive_api_get()->archive_read_support_format_tar)
#define archive_set_error (ws_archive_api_get()->archive_set_error)
#define archive_write_close (ws_archive_api_get()->archive_write_close)
#define archive_write_data (ws_archive_api_get()->archive_write_data)
#define archive_write_finish_entry (ws_archive_api_get()->archive_write_finish_entry)
#define archive_write_free (ws_archive_api_get()->archive_write_free)
#define archive_write_header (ws_archive_api_get()->archive_write_header)
#define archive_write_new (ws_archive_api_get()->archive_write_new)
#define archive_write_open (ws_archive_api_get()->archive_write_open)
#define archive_write_set_bytes_in_last_block (ws_archive_api_get()->archive_write_set_bytes_in_last_block)
#define archive_write_set_format_pax_restricted (ws_archive_api_get()->archive_write_set_format_pax_restricted)
#endif
