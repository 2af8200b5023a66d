/* hd-sqlite.c: see hd-sqlite.h. */
#define HD_SQLITE_NO_MACROS
#include "hd-sqlite.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "limits.h"

/* Written once under pthread_once, read-only after. */
hd_sqlite_api hd_sqlite;
static char load_error[HULL_ERROR_MSG_MAX];
static bool loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
        void *h = dlopen(HD_SQLITE_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
                const char *why = dlerror();
                snprintf(load_error, sizeof(load_error), "%s", why ? why : "not found");
                return;
        }
#define X(f)                                                                                                           \
        *(void **) &hd_sqlite.f = dlsym(h, #f);                                                                        \
        if (!hd_sqlite.f) {                                                                                            \
                snprintf(load_error, sizeof(load_error), "%s has no %s", HD_SQLITE_SONAME, #f);                        \
                return;                                                                                                \
        }
        HD_SQLITE_FUNCS(X)
#undef X
        hd_sqlite.sqlite3_hard_heap_limit64((sqlite3_int64) HD_SQLITE_HEAP_MAX);
        loaded = true;
}

const hd_sqlite_api *hd_sqlite_load(hull_error *e) {
        pthread_once(&once, load);
        if (!loaded) {
                hull_err_hint(e, -ENOSYS, "install libsqlite3-0 (scripts/install-deps.sh)",
                              "handles: cannot load %s: %s", HD_SQLITE_SONAME, load_error);
                return NULL;
        }
        return &hd_sqlite;
}
