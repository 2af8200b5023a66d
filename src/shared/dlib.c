/* dlib.c: see dlib.h. The one place that names each loaded library's soname and package. */
#define DLIB_NO_MACROS
#include "dlib.h"
#include "dlib-archive.h"
#include "dlib-crypto.h"
#include "dlib-curl.h"
#include "dlib-edit.h"
#include "dlib-microhttpd.h"
#include "dlib-pq.h"
#include "dlib-sqlite3.h"
#include "dlib-xml2.h"
#include "sqlite-mem.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

#define NAME(f) #f,
static const char *const sqlite3_symbols[] = {DLIB_SQLITE3_FUNCS(NAME)};
static const char *const archive_symbols[] = {DLIB_ARCHIVE_FUNCS(NAME)};
static const char *const microhttpd_symbols[] = {DLIB_MICROHTTPD_FUNCS(NAME)};
static const char *const curl_symbols[] = {DLIB_CURL_FUNCS(NAME)};
static const char *const crypto_symbols[] = {DLIB_CRYPTO_FUNCS(NAME)};
static const char *const xml2_symbols[] = {DLIB_XML2_FUNCS(NAME)};
static const char *const edit_symbols[] = {DLIB_EDIT_FUNCS(NAME)};
static const char *const pq_symbols[] = {DLIB_PQ_FUNCS(NAME)};
#undef NAME

/* A table is filled as an array of pointers: each struct is exactly its list's pointers. */
_Static_assert(sizeof(dlib_sqlite3) == ELEMENTSOF(sqlite3_symbols) * sizeof(void *), "dlib_sqlite3 layout");
_Static_assert(sizeof(dlib_archive) == ELEMENTSOF(archive_symbols) * sizeof(void *), "dlib_archive layout");
_Static_assert(sizeof(dlib_microhttpd) == ELEMENTSOF(microhttpd_symbols) * sizeof(void *), "dlib_microhttpd layout");
_Static_assert(sizeof(dlib_curl) == ELEMENTSOF(curl_symbols) * sizeof(void *), "dlib_curl layout");
_Static_assert(sizeof(dlib_crypto) == ELEMENTSOF(crypto_symbols) * sizeof(void *), "dlib_crypto layout");
_Static_assert(sizeof(dlib_xml2) == ELEMENTSOF(xml2_symbols) * sizeof(void *), "dlib_xml2 layout");
_Static_assert(sizeof(dlib_edit) == ELEMENTSOF(edit_symbols) * sizeof(void *), "dlib_edit layout");
_Static_assert(sizeof(dlib_pq) == ELEMENTSOF(pq_symbols) * sizeof(void *), "dlib_pq layout");

/* libxml2 wants its parser initialised once, before parsers run on several threads. */
static int xml2_init(hull_error *e) {
        dlib_xml2_api.xmlInitParser();
        return 0;
}

static const dlib_info infos[_DLIB_MAX] = {
        [DLIB_SQLITE3] = {"sqlite", "libsqlite3.so.0", "libsqlite3-0", sqlite3_symbols, ELEMENTSOF(sqlite3_symbols),
                          sqlmem_install},
        [DLIB_ARCHIVE] = {"libarchive", "libarchive.so.13", "libarchive13", archive_symbols,
                          ELEMENTSOF(archive_symbols)},
        [DLIB_MICROHTTPD] = {"libmicrohttpd", "libmicrohttpd.so.12", "libmicrohttpd12", microhttpd_symbols,
                             ELEMENTSOF(microhttpd_symbols)},
        [DLIB_CURL] = {"libcurl", "libcurl.so.4", "libcurl4", curl_symbols, ELEMENTSOF(curl_symbols)},
        [DLIB_CRYPTO] = {"libcrypto", "libcrypto.so.3", "libssl3", crypto_symbols, ELEMENTSOF(crypto_symbols)},
        [DLIB_XML2] = {"libxml2", "libxml2.so.2", "libxml2", xml2_symbols, ELEMENTSOF(xml2_symbols), xml2_init},
        [DLIB_EDIT] = {"libedit", "libedit.so.2", "libedit2", edit_symbols, ELEMENTSOF(edit_symbols)},
        [DLIB_PQ] = {"libpq", "libpq.so.5", "libpq5", pq_symbols, ELEMENTSOF(pq_symbols)},
};

/* The process-wide cache of loaded tables (the accepted exception to "no global mutable
 * state"): each written once under its pthread_once, read-only after. */
dlib_sqlite3 dlib_sqlite3_api;
dlib_archive dlib_archive_api;
dlib_microhttpd dlib_microhttpd_api;
dlib_curl dlib_curl_api;
dlib_crypto dlib_crypto_api;
dlib_xml2 dlib_xml2_api;
dlib_edit dlib_edit_api;
dlib_pq dlib_pq_api;

typedef struct dlib_state {
        void *table;
        size_t table_size;
        pthread_once_t once;
        bool loaded;
        hull_error error; /* why it did not load, returned to every caller */
} dlib_state;

static dlib_state states[_DLIB_MAX] = {
        [DLIB_SQLITE3] = {&dlib_sqlite3_api, sizeof(dlib_sqlite3_api), PTHREAD_ONCE_INIT, false, {0}},
        [DLIB_ARCHIVE] = {&dlib_archive_api, sizeof(dlib_archive_api), PTHREAD_ONCE_INIT, false, {0}},
        [DLIB_MICROHTTPD] = {&dlib_microhttpd_api, sizeof(dlib_microhttpd_api), PTHREAD_ONCE_INIT, false, {0}},
        [DLIB_CURL] = {&dlib_curl_api, sizeof(dlib_curl_api), PTHREAD_ONCE_INIT, false, {0}},
        [DLIB_CRYPTO] = {&dlib_crypto_api, sizeof(dlib_crypto_api), PTHREAD_ONCE_INIT, false, {0}},
        [DLIB_XML2] = {&dlib_xml2_api, sizeof(dlib_xml2_api), PTHREAD_ONCE_INIT, false, {0}},
        [DLIB_EDIT] = {&dlib_edit_api, sizeof(dlib_edit_api), PTHREAD_ONCE_INIT, false, {0}},
        [DLIB_PQ] = {&dlib_pq_api, sizeof(dlib_pq_api), PTHREAD_ONCE_INIT, false, {0}},
};

const dlib_info *dlib_info_get(dlib_id id) {
        if ((unsigned) id >= _DLIB_MAX)
                return NULL;
        return &infos[id];
}

/* -ENOSYS with a message that names the package; strerror(ENOSYS) would only mislead. */
_printf_(3, 4) static int missing(hull_error *e, const dlib_info *info, const char *fmt, ...) {
        char why[HULL_ERROR_MSG_MAX], hint[128];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof(why), fmt, ap);
        va_end(ap);
        snprintf(hint, sizeof(hint), "install %s (scripts/install-deps.sh does)", info->package);
        hull_err_hint(e, 0, hint, "%s: %s", info->name, why);
        if (e)
                e->err = -ENOSYS;
        return -ENOSYS;
}

int dlib_open(const dlib_info *info, void *table, size_t table_size, hull_error *e) {
        if (table_size != info->n_symbols * sizeof(void *))
                return hull_err(e, -EINVAL, "%s: the table has %zu bytes, not %zu pointers", info->name, table_size,
                                info->n_symbols);
        void *h = dlopen(info->soname, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
                const char *why = dlerror();
                return missing(e, info, "cannot load %s: %s", info->soname, why ? why : "not found");
        }
        /* Never dlclose()d: the table stays valid for the process, and some libraries (libcurl
         * through OpenSSL) leave exit handlers behind. */
        for (size_t i = 0; i < info->n_symbols; i++) {
                void *f = dlsym(h, info->symbols[i]);
                if (!f)
                        return missing(e, info, "%s has no %s (too old?)", info->soname, info->symbols[i]);
                memcpy((char *) table + i * sizeof(void *), &f, sizeof(f));
        }
        return 0;
}

static void load_one(dlib_id id) {
        dlib_state *s = &states[id];
        const dlib_info *info = &infos[id];
        if (dlib_open(info, s->table, s->table_size, &s->error) < 0) {
                memset(s->table, 0, s->table_size);
                return;
        }
        if (info->init && info->init(&s->error) < 0) {
                memset(s->table, 0, s->table_size);
                return;
        }
        s->loaded = true;
}

/* pthread_once takes no argument: one entry point per library. */
static void load_sqlite3(void) {
        load_one(DLIB_SQLITE3);
}
static void load_archive(void) {
        load_one(DLIB_ARCHIVE);
}
static void load_microhttpd(void) {
        load_one(DLIB_MICROHTTPD);
}
static void load_curl(void) {
        load_one(DLIB_CURL);
}
static void load_crypto(void) {
        load_one(DLIB_CRYPTO);
}
static void load_xml2(void) {
        load_one(DLIB_XML2);
}
static void load_edit(void) {
        load_one(DLIB_EDIT);
}
static void load_pq(void) {
        load_one(DLIB_PQ);
}
static void (*const loaders[_DLIB_MAX])(void) = {
        [DLIB_SQLITE3] = load_sqlite3, [DLIB_ARCHIVE] = load_archive, [DLIB_MICROHTTPD] = load_microhttpd,
        [DLIB_CURL] = load_curl,       [DLIB_CRYPTO] = load_crypto,   [DLIB_XML2] = load_xml2,
        [DLIB_EDIT] = load_edit,       [DLIB_PQ] = load_pq,
};

int dlib_load(dlib_id id, hull_error *e) {
        if ((unsigned) id >= _DLIB_MAX)
                return hull_err(e, -EINVAL, "dlib: no library %d", (int) id);
        dlib_state *s = &states[id];
        pthread_once(&s->once, loaders[id]);
        if (!s->loaded) {
                if (e)
                        *e = s->error;
                return s->error.err < 0 ? s->error.err : -ENOSYS;
        }
        return 0;
}

const void *dlib_table(dlib_id id) {
        if ((unsigned) id >= _DLIB_MAX)
                return NULL;
        dlib_state *s = &states[id];
        pthread_once(&s->once, loaders[id]); /* what makes s->loaded safe to read */
        return s->loaded ? s->table : NULL;
}
