/* dr-ocr.c: OCR for hull-docread through tesseract's C API (Debian's tesseract-ocr and its
 * traineddata): a rendered PDF page or an image file to text. The languages asked for must be
 * installed (their .traineddata in tesseract's data directory); an error names the installed
 * ones. Leptonica decodes image files. */
#include <dirent.h>
#include <errno.h>
#include <leptonica/allheaders.h>
#include <stdio.h>
#include <string.h>
#include <tesseract/capi.h>
#include <unistd.h>

#include "docread.h"

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

static int recognize(TessBaseAPI *api, dynbuf *out, dr_doc *d) {
        char *text = TessBaseAPIGetUTF8Text(api);
        if (!text)
                return dr_fail(d, -EIO, "OCR failed on the image");
        int r = dynbuf_add_str(out, text);
        TessDeleteText(text);
        return r < 0 ? dr_fail(d, r, "the recognized text passes %llu MiB", DOCREAD_TEXT_MAX >> 20) : 0;
}

static int start(const dr_opts *o, dr_doc *d, TessBaseAPI **ret) {
        const char *dir = datadir();
        const char *langs = o->langs[0] ? o->langs : "eng";
        int r = check_langs(dir, langs, d);
        if (r < 0)
                return r;
        TessBaseAPI *api = TessBaseAPICreate();
        if (!api)
                return dr_fail(d, -ENOMEM, "out of memory");
        if (TessBaseAPIInit3(api, dir, langs) != 0) {
                TessBaseAPIDelete(api);
                return dr_fail(d, -EIO, "tesseract could not load the languages %s", langs);
        }
        *ret = api;
        return 0;
}

int dr_ocr_gray(const unsigned char *px, int w, int h, int stride, int dpi, const dr_opts *o, dynbuf *out, dr_doc *d) {
        TessBaseAPI *api;
        int r = start(o, d, &api);
        if (r < 0)
                return r;
        TessBaseAPISetImage(api, px, w, h, 1, stride);
        TessBaseAPISetSourceResolution(api, dpi);
        r = recognize(api, out, d);
        TessBaseAPIEnd(api);
        TessBaseAPIDelete(api);
        return r;
}

int dr_ocr_image(const char *buf, size_t len, const dr_opts *o, dynbuf *out, dr_doc *d) {
        setMsgSeverity(L_SEVERITY_NONE);
        PIX *pix = pixReadMem((const l_uint8 *) buf, len);
        if (!pix)
                return dr_fail(d, -EBADMSG, "the image cannot be decoded (PNG, JPEG, TIFF, GIF, BMP, WebP are read)");
        if ((uint64_t) pixGetWidth(pix) * (uint64_t) pixGetHeight(pix) > DOCREAD_OCR_PIXELS_MAX) {
                pixDestroy(&pix);
                return dr_fail(d, -E2BIG, "the image has more than %llu megapixels", DOCREAD_OCR_PIXELS_MAX >> 20);
        }
        TessBaseAPI *api;
        int r = start(o, d, &api);
        if (r >= 0) {
                TessBaseAPISetImage2(api, pix);
                if (pixGetXRes(pix) < 70)
                        TessBaseAPISetSourceResolution(api, DOCREAD_OCR_DPI);
                r = recognize(api, out, d);
                TessBaseAPIEnd(api);
                TessBaseAPIDelete(api);
        }
        pixDestroy(&pix);
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
