/* dlib-archive.h: libarchive (libarchive.so.13) through the loader (dlib.h), for the
 * workspace's persist and hydrate.
 *
 * Why not linked: linked, every hull command would map libarchive and its ten compression and
 * crypto libraries at start-up (about 2 ms, more than hull exec's whole sandbox set-up); its
 * static archive needs static libacl, libzstd and liblz4, which Debian does not ship.
 *
 * Call dlib_archive_load() before the first archive_* call; the macros below turn the usual
 * names into the table's pointers. */
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include "dlib.h"

#define DLIB_ARCHIVE_FUNCS(X)                                                                                          \
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
        X(archive_read_support_filter_all)                                                                             \
        X(archive_read_support_format_zip)                                                                             \
        X(archive_set_error)                                                                                           \
        X(archive_write_close)                                                                                         \
        X(archive_write_data)                                                                                          \
        X(archive_write_finish_entry)                                                                                  \
        X(archive_write_free)                                                                                          \
        X(archive_write_header)                                                                                        \
        X(archive_write_new)                                                                                           \
        X(archive_write_open)                                                                                          \
        X(archive_write_set_bytes_in_last_block)                                                                       \
        X(archive_write_set_format_pax_restricted)                                                                     \
        X(archive_write_set_format_zip)

typedef struct dlib_archive {
#define X(f) __typeof__(f) *f;
        DLIB_ARCHIVE_FUNCS(X)
#undef X
} dlib_archive;

/* The table: written once by dlib_load(DLIB_ARCHIVE), read-only after. */
extern dlib_archive dlib_archive_api;

/* dlib_load(DLIB_ARCHIVE, e), typed: the table, or NULL with *e filled (-ENOSYS). */
static inline const dlib_archive *dlib_archive_load(hull_error *e) {
        return dlib_load(DLIB_ARCHIVE, e) < 0 ? NULL : &dlib_archive_api;
}

#ifndef DLIB_NO_MACROS
#define archive_entry_clear (dlib_archive_api.archive_entry_clear)
#define archive_entry_copy_pathname (dlib_archive_api.archive_entry_copy_pathname)
#define archive_entry_copy_symlink (dlib_archive_api.archive_entry_copy_symlink)
#define archive_entry_filetype (dlib_archive_api.archive_entry_filetype)
#define archive_entry_free (dlib_archive_api.archive_entry_free)
#define archive_entry_hardlink (dlib_archive_api.archive_entry_hardlink)
#define archive_entry_mtime (dlib_archive_api.archive_entry_mtime)
#define archive_entry_mtime_is_set (dlib_archive_api.archive_entry_mtime_is_set)
#define archive_entry_mtime_nsec (dlib_archive_api.archive_entry_mtime_nsec)
#define archive_entry_new (dlib_archive_api.archive_entry_new)
#define archive_entry_pathname (dlib_archive_api.archive_entry_pathname)
#define archive_entry_perm (dlib_archive_api.archive_entry_perm)
#define archive_entry_set_filetype (dlib_archive_api.archive_entry_set_filetype)
#define archive_entry_set_gid (dlib_archive_api.archive_entry_set_gid)
#define archive_entry_set_mtime (dlib_archive_api.archive_entry_set_mtime)
#define archive_entry_set_perm (dlib_archive_api.archive_entry_set_perm)
#define archive_entry_set_size (dlib_archive_api.archive_entry_set_size)
#define archive_entry_set_uid (dlib_archive_api.archive_entry_set_uid)
#define archive_entry_size (dlib_archive_api.archive_entry_size)
#define archive_entry_symlink (dlib_archive_api.archive_entry_symlink)
#define archive_error_string (dlib_archive_api.archive_error_string)
#define archive_read_data_block (dlib_archive_api.archive_read_data_block)
#define archive_read_free (dlib_archive_api.archive_read_free)
#define archive_read_new (dlib_archive_api.archive_read_new)
#define archive_read_next_header (dlib_archive_api.archive_read_next_header)
#define archive_read_open_fd (dlib_archive_api.archive_read_open_fd)
#define archive_read_open_memory (dlib_archive_api.archive_read_open_memory)
#define archive_read_support_format_tar (dlib_archive_api.archive_read_support_format_tar)
#define archive_set_error (dlib_archive_api.archive_set_error)
#define archive_write_close (dlib_archive_api.archive_write_close)
#define archive_write_data (dlib_archive_api.archive_write_data)
#define archive_write_finish_entry (dlib_archive_api.archive_write_finish_entry)
#define archive_write_free (dlib_archive_api.archive_write_free)
#define archive_write_header (dlib_archive_api.archive_write_header)
#define archive_write_new (dlib_archive_api.archive_write_new)
#define archive_write_open (dlib_archive_api.archive_write_open)
#define archive_write_set_bytes_in_last_block (dlib_archive_api.archive_write_set_bytes_in_last_block)
#define archive_write_set_format_pax_restricted (dlib_archive_api.archive_write_set_format_pax_restricted)
#define archive_write_set_format_zip (dlib_archive_api.archive_write_set_format_zip)
#define archive_read_support_format_zip (dlib_archive_api.archive_read_support_format_zip)
#define archive_read_support_filter_all (dlib_archive_api.archive_read_support_filter_all)
#endif
