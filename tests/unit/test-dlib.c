/* test-dlib.c: the loader: every library hull loads resolves into a complete table (each
 * pointer the one dlsym gives), the typed macros call through it, a missing soname or symbol is
 * an error naming the Debian package, and a library is loaded once. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "dlib-archive.h"
#include "dlib-crypto.h"
#include "dlib-curl.h"
#include "dlib-microhttpd.h"
#include "dlib-sqlite3.h"
#include "dlib-edit.h"
#include "dlib-xml2.h"
#include "test.h"

static void check_complete(dlib_id id) {
        const dlib_info *info = dlib_info_get(id);
        hull_error e = {0};
        CHECK(info != NULL);
        CHECK(info->soname && strncmp(info->soname, "lib", 3) == 0 && strstr(info->soname, ".so."));
        CHECK(info->package && info->package[0]);
        CHECK(info->n_symbols > 0);
        CHECK_EQ_INT(dlib_load(id, &e), 0);
        const void *const *slots = dlib_table(id);
        CHECK(slots != NULL);
        if (!slots)
                return;
        void *h = dlopen(info->soname, RTLD_NOW | RTLD_NOLOAD); /* already loaded: the same object */
        CHECK(h != NULL);
        size_t same = 0;
        for (size_t i = 0; i < info->n_symbols; i++)
                if (slots[i] && h && slots[i] == dlsym(h, info->symbols[i]))
                        same++;
        TEST_RESULT(same == info->n_symbols, "%s: %zu of %zu pointers are %s's own", info->soname, same,
                    info->n_symbols, info->soname);
        if (h)
                dlclose(h);
}

static void *load_in_thread(void *arg) {
        (void) arg;
        return (void *) dlib_sqlite3_load(NULL);
}

int main(void) {
        for (dlib_id id = 0; id < _DLIB_MAX; id++)
                check_complete(id);
        CHECK(dlib_info_get(_DLIB_MAX) == NULL);
        hull_error e = {0};
        CHECK_EQ_INT(dlib_load(_DLIB_MAX, &e), -EINVAL);

        /* the packages named are the Debian packages that ship each soname */
        CHECK_EQ_STR(dlib_info_get(DLIB_SQLITE3)->package, "libsqlite3-0");
        CHECK_EQ_STR(dlib_info_get(DLIB_ARCHIVE)->package, "libarchive13");
        CHECK_EQ_STR(dlib_info_get(DLIB_MICROHTTPD)->package, "libmicrohttpd12");
        CHECK_EQ_STR(dlib_info_get(DLIB_CURL)->package, "libcurl4");
        CHECK_EQ_STR(dlib_info_get(DLIB_CRYPTO)->package, "libssl3");
        CHECK_EQ_STR(dlib_info_get(DLIB_XML2)->package, "libxml2");
        CHECK_EQ_STR(dlib_info_get(DLIB_EDIT)->package, "libedit2");

        /* calls by the usual names go through the tables */
        CHECK(strncmp(sqlite3_libversion(), "3.", 2) == 0);
        CHECK_EQ_STR(curl_easy_strerror(CURLE_OK), "No error");
        unsigned char b64[9];
        CHECK_EQ_INT(EVP_EncodeBlock(b64, (const unsigned char *) "hull", 4), 8);
        CHECK_EQ_STR((const char *) b64, "aHVsbA==");
        struct archive *a = archive_read_new();
        CHECK(a != NULL);
        CHECK_EQ_INT(archive_read_support_format_tar(a), ARCHIVE_OK);
        CHECK_EQ_INT(archive_read_free(a), ARCHIVE_OK);
        CHECK(dlib_microhttpd_load(NULL) == &dlib_microhttpd_api);
        htmlDocPtr doc = htmlReadMemory("<p>hull", 7, NULL, "UTF-8", HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING);
        CHECK(doc != NULL);
        if (doc)
                xmlFreeDoc(doc);

        /* loaded once: every thread gets the same table */
        pthread_t t[4];
        void *got[4];
        for (int i = 0; i < 4; i++)
                CHECK_EQ_INT(pthread_create(&t[i], NULL, load_in_thread, NULL), 0);
        for (int i = 0; i < 4; i++) {
                pthread_join(t[i], &got[i]);
                CHECK(got[i] == &dlib_sqlite3_api);
        }

        /* a missing soname: -ENOSYS, and the message names the soname and the package */
        static const char *const one[] = {"sqlite3_libversion"};
        dlib_info missing = {.name = "sqlite",
                             .soname = "libhull-no-such-library.so.7",
                             .package = "hull-no-such-package",
                             .symbols = one,
                             .n_symbols = 1};
        void *slot[1] = {NULL};
        e = (hull_error){0};
        CHECK_EQ_INT(dlib_open(&missing, slot, sizeof(slot), &e), -ENOSYS);
        CHECK_EQ_INT(e.err, -ENOSYS);
        CHECK(strncmp(e.msg, "sqlite: cannot load libhull-no-such-library.so.7: ", 50) == 0);
        CHECK(strstr(e.msg, "(install hull-no-such-package (scripts/install-deps.sh does))") != NULL);
        CHECK(strstr(e.msg, "Function not implemented") == NULL);
        printf("# %s\n", e.msg);

        /* a library without a function of the table: the same, naming the function */
        static const char *const two[] = {"sqlite3_libversion", "sqlite3_hull_no_such_function"};
        dlib_info old = {.name = "sqlite",
                         .soname = "libsqlite3.so.0",
                         .package = "libsqlite3-0",
                         .symbols = two,
                         .n_symbols = 2};
        void *slots[2] = {NULL};
        e = (hull_error){0};
        CHECK_EQ_INT(dlib_open(&old, slots, sizeof(slots), &e), -ENOSYS);
        CHECK(strstr(e.msg, "libsqlite3.so.0 has no sqlite3_hull_no_such_function") != NULL);
        CHECK(strstr(e.msg, "(install libsqlite3-0 (scripts/install-deps.sh does))") != NULL);
        printf("# %s\n", e.msg);

        /* a table of the wrong size is refused before anything is opened */
        CHECK_EQ_INT(dlib_open(&old, slots, sizeof(void *), &e), -EINVAL);
        return test_done();
}
