/* dr-lib.c: libxml2 and libarchive opened when a document needs them (dr-lib.h). */
#define DR_LIB_NO_MACROS
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "dr-lib.h"

dr_lib dr_lib_api;

bool dr_dlsym(void *h, const char *name, void *ret) {
        void *f = h ? dlsym(h, name) : NULL;
        memcpy(ret, &f, sizeof(f));
        return f != NULL;
}

int dr_lib_load(dr_doc *d) {
        if (dr_lib_api.loaded)
                return 0;
        dr_lib l = {0};
        /* never closed: libxml2 keeps its state until exit */
        void *xml = dlopen(DOCREAD_XML2_SO, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        void *ar = xml ? dlopen(DOCREAD_ARCHIVE_SO, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) : NULL;
        bool ok = ar != NULL;
#define X(f) ok = ok && dr_dlsym(xml, #f, &l.f);
        DR_LIB_XML2_FUNCS(X)
#undef X
#define X(f) ok = ok && dr_dlsym(ar, #f, &l.f);
        DR_LIB_ARCHIVE_FUNCS(X)
#undef X
        if (!ok) {
                const char *why = dlerror();
                return dr_fail(d, -ENOENT,
                               "reading this format needs libxml2 and libarchive (Debian: libxml2, "
                               "libarchive13): %s",
                               why ? why : "a function is missing");
        }
        l.xmlInitParser();
        l.loaded = true;
        dr_lib_api = l;
        return 0;
}
