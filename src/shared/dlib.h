/* dlib.h: the shared libraries hull loads with dlopen() instead of linking, in one place.
 *
 * Why loaded: hull exec's start-up is benchmarked, and a linked library (with its own
 * dependencies) is mapped and relocated by every hull command, about 1-2 ms each for
 * libarchive and libmicrohttpd; SQLite's static archive would add libm.so.6 to DT_NEEDED.
 * Loaded, only a process that uses one pays, once.
 *
 * For each library this module holds its soname, the Debian package that provides it (named
 * in the error when it is missing), and one table of function pointers typed with __typeof__ of
 * the real declarations (dlib-sqlite3.h, dlib-archive.h, dlib-microhttpd.h, dlib-curl.h,
 * dlib-crypto.h, dlib-xml2.h, dlib-pq.h), behind
 * macros with the functions' usual names. A table is loaded once per process (pthread_once) and
 * never changes after; a library is never unloaded. Thread-safe.
 *
 * Use: include the library's dlib-NAME.h, call dlib_load(DLIB_NAME, e) (or dlib_NAME_load())
 * before the first call, then call the functions by their usual names. */
#pragma once

#include <stddef.h>

#include "error.h"

typedef enum dlib_id {
        DLIB_SQLITE3,
        DLIB_ARCHIVE,
        DLIB_MICROHTTPD,
        DLIB_CURL,
        DLIB_CRYPTO,
        DLIB_XML2,
        DLIB_EDIT,
        DLIB_PQ,
        _DLIB_MAX,
} dlib_id;

typedef struct dlib_info {
        const char *name;           /* layer of the error messages: "sqlite" */
        const char *soname;         /* what dlopen() opens: "libsqlite3.so.0" */
        const char *package;        /* the Debian package that provides it: "libsqlite3-0" */
        const char *const *symbols; /* the table's functions, in its order */
        size_t n_symbols;           /* the table is n_symbols pointers */
        int (*init)(hull_error *e); /* run once after a successful load (or NULL); may fail it */
} dlib_info;

/* What hull knows of library id (never NULL for a valid id). */
const dlib_info *dlib_info_get(dlib_id id);

/* Load library id and fill its table, once per process. Returns 0, or -ENOSYS with *e naming
 * the soname, why it failed and the package to install ("install libsqlite3-0
 * (scripts/install-deps.sh does)"); a failure is remembered and returned again, identically. */
int dlib_load(dlib_id id, hull_error *e);

/* The table of library id (its dlib_NAME struct), loaded first if need be as dlib_load() does;
 * NULL when it cannot be loaded. */
const void *dlib_table(dlib_id id);

/* The loader's one step, for tests: dlopen(info->soname) and resolve info->symbols into table
 * (table_size bytes: info->n_symbols pointers). Returns 0, or -ENOSYS with *e as dlib_load's.
 * Does not run info->init. On failure the table may be partly written. */
int dlib_open(const dlib_info *info, void *table, size_t table_size, hull_error *e);
