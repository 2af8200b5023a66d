/* sbx-archive.c: see sbx-archive.h. */
#define WS_ARCHIVE_NO_MACROS
#include "sbx-archive.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Written once under pthread_once, read-only after: the one process-wide table. */
static ws_archive_api api;
static char load_error[HULL_ERROR_MSG_MAX];
static bool loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
        void *h = dlopen(WS_ARCHIVE_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
                const char *why = dlerror();
                snprintf(load_error, sizeof(load_error), "%s", why ? why : "not found");
                return;
        }
#define X(f)                                                                                                           \
        *(void **) &api.f = dlsym(h, #f);                                                                              \
        if (!api.f) {                                                                                                  \
                snprintf(load_error, sizeof(load_error), "%s has no %s", WS_ARCHIVE_SONAME, #f);                       \
                return;                                                                                                \
        }
        WS_ARCHIVE_FUNCS(X)
#undef X
        loaded = true;
}

const ws_archive_api *ws_archive_load(hull_error *e) {
        pthread_once(&once, load);
        if (!loaded) {
                hull_err_hint(e, -ENOSYS, "install libarchive13 (scripts/install-deps.sh)",
                              "workspace: cannot load %s: %s", WS_ARCHIVE_SONAME, load_error);
                return NULL;
        }
        return &api;
}

const ws_archive_api *ws_archive_api_get(void) {
        return &api;
}
