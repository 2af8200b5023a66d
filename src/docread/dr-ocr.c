/* dr-ocr.c: OCR for hull-docread through tesseract's C API (Debian's tesseract-ocr and its
 * traineddata): a rendered PDF page or an image file to text. The languages asked for must be
 * installed (their .traineddata in tesseract's data directory); an error names the installed
 * ones. Leptonica decodes image files. Both are opened (dlopen) only when OCR is asked for:
 * linked, they and what they pull in (curl, TLS, Kerberos, ICU: 56 libraries) cost every
 * document ~9 ms of start-up (loading, relocating, C++ constructors), as much as pdftotext
 * takes for 15 pages. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <leptonica/allheaders.h>
#include <stdio.h>
#include <string.h>
#include <tesseract/capi.h>
#include <unistd.h>

#include "docread.h"

/* The functions used, resolved from the two libraries. */
typedef struct ocr_lib {
        void *tess, *lept;
        __typeof__(&TessBaseAPICreate) create;
        __typeof__(&TessBaseAPIInit3) init3;
        __typeof__(&TessBaseAPIDelete) del;
        __typeof__(&TessBaseAPIEnd) end;
        __typeof__(&TessBaseAPISetImage) set_image;
        __typeof__(&TessBaseAPISetImage2) set_image2;
        __typeof__(&TessBaseAPISetSourceResolution) set_resolution;
        __typeof__(&TessBaseAPIGetUTF8Text) utf8_text;
        __typeof__(&TessDeleteText) delete_text;
        __typeof__(&setMsgSeverity) msg_severity;
        __typeof__(&pixReadMem) read_mem;
        __typeof__(&pixGetWidth) width;
        __typeof__(&pixGetHeight) height;
        __typeof__(&pixGetXRes) xres;
        __typeof__(&pixDestroy) destroy;
} ocr_lib;

static void ocr_lib_done(ocr_lib *l) {
        if (l->tess)
                dlclose(l->tess);
        if (l->lept)
                dlclose(l->lept);
        *l = (ocr_lib){0};
}

static int ocr_lib_open(ocr_lib *l, dr_doc *d) {
        *l = (ocr_lib){0};
        /* RTLD_NODELETE: tesseract's C++ statics stay put until exit */
        l->lept = dlopen(DOCREAD_LEPT_SO, RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);
        l->tess = l->lept ? dlopen(DOCREAD_TESSERACT_SO, RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE) : NULL;
        bool ok = l->tess && dr_dlsym(l->tess, "TessBaseAPICreate", &l->create) &&
                  dr_dlsym(l->tess, "TessBaseAPIInit3", &l->init3) && dr_dlsym(l->tess, "TessBaseAPIDelete", &l->del) &&
                  dr_dlsym(l->tess, "TessBaseAPIEnd", &l->end) &&
                  dr_dlsym(l->tess, "TessBaseAPISetImage", &l->set_image) &&
                  dr_dlsym(l->tess, "TessBaseAPISetImage2", &l->set_image2) &&
                  dr_dlsym(l->tess, "TessBaseAPISetSourceResolution", &l->set_resolution) &&
                  dr_dlsym(l->tess, "TessBaseAPIGetUTF8Text", &l->utf8_text) &&
                  dr_dlsym(l->tess, "TessDeleteText", &l->delete_text) &&
                  dr_dlsym(l->lept, "setMsgSeverity", &l->msg_severity) &&
                  dr_dlsym(l->lept, "pixReadMem", &l->read_mem) && dr_dlsym(l->lept, "pixGetWidth", &l->width) &&
                  dr_dlsym(l->lept, "pixGetHeight", &l->height) && dr_dlsym(l->lept, "pixGetXRes", &l->xres) &&
                  dr_dlsym(l->lept, "pixDestroy", &l->destroy);
        if (!ok) {
                const char *why = dlerror();
                ocr_lib_done(l);
                return dr_fail(d, -ENOENT, "OCR needs tesseract (Debian: libtesseract5, liblept5): %s",
                               why ? why : "a function is missing");
        }
        return 0;
}

static const char *const datadirs[] = {
        "/usr/share/tesseract-ocr/5/tessdata",
        "/usr/share/tesseract-ocr/4.00/tessdata",
        "/usr/share/tessdata",
};

static const char *datadir(void) {
        for (size_t i = 0; i < ELEMENTSOF(datadirs); i++) {
                if (access(datadirs[i], R_OK) == 0)
                        return datadirs[i];
        }
        return NULL;
}

static void installed(const char *dir, char *buf, size_t size) {
        buf[0] = '\0';
        DIR *d = dir ? opendir(dir) : NULL;
        if (!d) {
                snprintf(buf, size, "none");
                return;
        }
        size_t o = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                const char *dot = strstr(de->d_name, ".traineddata");
                if (!dot || dot[strlen(".traineddata")] || dot == de->d_name ||
                    strcmp(de->d_name, "osd.traineddata") == 0)
                        continue;
                int w = snprintf(buf + o, size - o, "%s%.*s", o ? ", " : "", (int) (dot - de->d_name), de->d_name);
                if (w < 0 || (size_t) w >= size - o)
                        break;
                o += (size_t) w;
        }
        closedir(d);
        if (!buf[0])
                snprintf(buf, size, "none");
}

/* Check each language of langs ("eng+deu") has its traineddata. */
static int check_langs(const char *dir, const char *langs, dr_doc *d) {
        char list[1024];
        if (!dir) {
                installed(NULL, list, sizeof(list));
                return dr_fail(
                        d, -ENOENT,
                        "OCR needs tesseract's language data (Debian: tesseract-ocr-eng), and none is installed");
        }
        for (const char *p = langs; *p;) {
                size_t l = strcspn(p, "+");
                char path[512];
                bool ok = l > 0 && l < 64 && strspn(p, "abcdefghijklmnopqrstuvwxyz_ABCDEFGHIJKLMNOPQRSTUVWXYZ") >= l;
                if (ok) {
                        snprintf(path, sizeof(path), "%s/%.*s.traineddata", dir, (int) l, p);
                        ok = access(path, R_OK) == 0;
                }
                if (!ok) {
                        installed(dir, list, sizeof(list));
                        return dr_fail(d, -ENOENT,
                                       "OCR language '%.*s' is not installed; installed: %s (Debian packages "
                                       "tesseract-ocr-LANG add more)",
                                       (int) MIN(l, (size_t) 64), p, list);
                }
                p += l + (p[l] == '+');
        }
        return 0;
}

static int recognize(const ocr_lib *l, TessBaseAPI *api, dynbuf *out, dr_doc *d) {
        char *text = l->utf8_text(api);
        if (!text)
                return dr_fail(d, -EIO, "OCR failed on the image");
        int r = dynbuf_add_str(out, text);
        l->delete_text(text);
        return r < 0 ? dr_fail(d, r, "the recognized text passes %llu MiB", DOCREAD_TEXT_MAX >> 20) : 0;
}

static int start(const ocr_lib *l, const dr_opts *o, dr_doc *d, TessBaseAPI **ret) {
        const char *dir = datadir();
        const char *langs = o->langs[0] ? o->langs : "eng";
        int r = check_langs(dir, langs, d);
        if (r < 0)
                return r;
        TessBaseAPI *api = l->create();
        if (!api)
                return dr_fail(d, -ENOMEM, "out of memory");
        if (l->init3(api, dir, langs) != 0) {
                l->del(api);
                return dr_fail(d, -EIO, "tesseract could not load the languages %s", langs);
        }
        *ret = api;
        return 0;
}

int dr_ocr_gray(const unsigned char *px, int w, int h, int stride, int dpi, const dr_opts *o, dynbuf *out, dr_doc *d) {
        _cleanup_(ocr_lib_done) ocr_lib l = {0};
        int r = ocr_lib_open(&l, d);
        if (r < 0)
                return r;
        TessBaseAPI *api;
        r = start(&l, o, d, &api);
        if (r < 0)
                return r;
        l.set_image(api, px, w, h, 1, stride);
        l.set_resolution(api, dpi);
        r = recognize(&l, api, out, d);
        l.end(api);
        l.del(api);
        return r;
}

int dr_ocr_image(const char *buf, size_t len, const dr_opts *o, dynbuf *out, dr_doc *d) {
        _cleanup_(ocr_lib_done) ocr_lib l = {0};
        int r = ocr_lib_open(&l, d);
        if (r < 0)
                return r;
        l.msg_severity(L_SEVERITY_NONE);
        PIX *pix = l.read_mem((const l_uint8 *) buf, len);
        if (!pix)
                return dr_fail(d, -EBADMSG, "the image cannot be decoded (PNG, JPEG, TIFF, GIF, BMP, WebP are read)");
        if ((uint64_t) l.width(pix) * (uint64_t) l.height(pix) > DOCREAD_OCR_PIXELS_MAX) {
                l.destroy(&pix);
                return dr_fail(d, -E2BIG, "the image has more than %llu megapixels", DOCREAD_OCR_PIXELS_MAX >> 20);
        }
        TessBaseAPI *api;
        r = start(&l, o, d, &api);
        if (r >= 0) {
                l.set_image2(api, pix);
                if (l.xres(pix) < 70)
                        l.set_resolution(api, DOCREAD_OCR_DPI);
                r = recognize(&l, api, out, d);
                l.end(api);
                l.del(api);
        }
        l.destroy(&pix);
        return r;
}

int dr_image(const char *buf, size_t len, const dr_opts *o, dr_doc *d) {
        d->format = "image";
        d->pages = 1;
        if (!o->ocr) {
                dr_note(d, "an image holds no text layer: read it again with ocr: true to recognize its text");
                return 0;
        }
        int r = dr_ocr_image(buf, len, o, &d->text, d);
        if (r >= 0) {
                d->ocr_used = true;
                d->pages_read = 1;
        }
        return r;
}
