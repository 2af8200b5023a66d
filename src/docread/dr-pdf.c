/* dr-pdf.c: PDF for hull-docread through poppler (poppler-glib): each page's text in poppler's
 * reading order (columns one after the other, as pdftotext prints them), headings from the
 * outline or else from font sizes, tables found from the words' positions (dr_find_tables), and
 * pages without a text layer rendered and recognized by OCR when asked. */
#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <poppler.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* glib defines MIN and MAX as macro.h does */
#undef MIN
#undef MAX
#include "docread.h"

_Static_assert(DOCREAD_THREADS_MAX < DOCREAD_PIDS, "the parser's threads fit its sandbox");

typedef struct page_ctx {
        dr_doc *d;
        unsigned page, n;
} page_ctx;

static int table_found(void *ud, const dr_grid *g) {
        page_ctx *p = ud;
        char name[32];
        snprintf(name, sizeof(name), "p%u_t%u", p->page, ++p->n);
        return dr_doc_add_table(p->d, name, p->page, g);
}

static size_t utf8_len(unsigned char c) {
        return c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
}

/* The page's text, in poppler's reading order, to d->text, with a space (a tab past a wide gap)
 * where poppler glued two words of a line whose glyphs a gap separates (text drawn piece by piece
 * carries no space characters); and its words with their boxes for the table finder. */
static int page_layout(PopplerPage *pg, const char *text, dr_doc *d, unsigned page) {
        PopplerRectangle *rects = NULL;
        guint n_rects = 0;
        if (!poppler_page_get_text_layout(pg, &rects, &n_rects) || n_rects == 0) {
                g_free(rects);
                return dynbuf_add_str(&d->text, text);
        }
        size_t cap = MIN((size_t) n_rects, (size_t) DOCREAD_WORDS_MAX);
        dr_word *w = malloc(cap * sizeof(dr_word));
        if (!w) {
                g_free(rects);
                return dr_fail(d, -ENOMEM, "out of memory");
        }
        size_t n = 0, ci = 0;
        dr_word *cur = NULL;
        const PopplerRectangle *prev = NULL;
        int r = 0;
        const char *p = text, *run = text; /* text[run..p) is still to be copied to d->text */
        for (; *p && ci < n_rects && r >= 0; ci++) {
                size_t l = utf8_len((unsigned char) *p);
                bool space = *p == ' ' || *p == '\n' || *p == '\t' || *p == '\r' || *p == '\f';
                const PopplerRectangle *rc = &rects[ci];
                double h = rc->y2 - rc->y1;
                bool gap = false;
                if (!space && prev && h > 0 && fabs(rc->y1 - prev->y1) < 0.5 * h && rc->x1 - prev->x2 > 0.15 * h) {
                        gap = true;
                        r = dynbuf_add(&d->text, run, (size_t) (p - run));
                        if (r >= 0)
                                r = dynbuf_add(&d->text, rc->x1 - prev->x2 > 0.9 * h ? "\t" : " ", 1);
                        run = p;
                }
                if (space)
                        cur = NULL;
                else if (!cur || gap) {
                        if (n < cap) {
                                cur = &w[n++];
                                *cur = (dr_word){rc->x1, rc->y1, rc->x2, rc->y2, p, 0};
                        } else
                                cur = NULL;
                }
                if (cur) {
                        cur->x0 = MIN(cur->x0, rc->x1);
                        cur->y0 = MIN(cur->y0, rc->y1);
                        cur->x1 = MAX(cur->x1, rc->x2);
                        cur->y1 = MAX(cur->y1, rc->y2);
                        cur->len += l;
                }
                prev = space ? NULL : rc;
                size_t k = 0;
                while (k < l && p[k])
                        k++;
                p += k;
        }
        if (r >= 0) /* the rest: what follows the last box too */
                r = dynbuf_add_str(&d->text, run);
        if (r >= 0) {
                page_ctx pc = {.d = d, .page = page};
                r = dr_find_tables(w, n, table_found, &pc);
                if (r < 0 && !d->error[0])
                        dr_fail(d, r, "page %u: tables: %s", page, strerror(-r));
        }
        free(w);
        g_free(rects);
        return r < 0 ? r : 0;
}

/* Headings by font size: a short line set larger than the body text. The lines and the sizes
 * are gathered over every page read, then judged once (the body's size is the one most
 * characters have). */
typedef struct cand {
        double size;
        unsigned page;
        char *text;
} cand;

typedef struct sizes {
        double size[64], count[64];
        size_t n;
        cand *c;
        size_t n_c, cap_c;
} sizes;

static void sizes_done(sizes *sz) {
        for (size_t i = 0; i < sz->n_c; i++)
                free(sz->c[i].text);
        free(sz->c);
}

static void size_count(sizes *sz, double fs, double chars) {
        fs = round(fs * 2) / 2;
        size_t k = 0;
        while (k < sz->n && sz->size[k] != fs)
                k++;
        if (k == sz->n && sz->n < ELEMENTSOF(sz->size))
                sz->size[sz->n++] = fs;
        if (k < sz->n)
                sz->count[k] += chars;
}

static void page_lines(PopplerPage *pg, const char *text, sizes *sz, unsigned page) {
        GList *attrs = poppler_page_get_text_attributes(pg);
        for (GList *a = attrs; a; a = a->next) {
                PopplerTextAttributes *t = a->data;
                size_count(sz, t->font_size, t->end_index - t->start_index + 1);
        }
        GList *a = attrs;
        size_t ci = 0;
        for (const char *p = text; *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t) (nl - p) : strlen(p);
                while (a && ((PopplerTextAttributes *) a->data)->end_index < (int) ci)
                        a = a->next;
                if (a && len >= 2 && len <= 120 && sz->n_c < DOCREAD_WORDS_MAX) {
                        if (sz->n_c == sz->cap_c) {
                                size_t cap = MAX(sz->cap_c * 2, (size_t) 256);
                                cand *c = realloc(sz->c, cap * sizeof(cand));
                                if (!c)
                                        break;
                                sz->c = c;
                                sz->cap_c = cap;
                        }
                        char *copy = strndup(p, len);
                        if (copy)
                                sz->c[sz->n_c++] = (cand){((PopplerTextAttributes *) a->data)->font_size, page, copy};
                }
                for (size_t i = 0; i < len + (nl != NULL); i += utf8_len((unsigned char) p[i]))
                        ci++;
                p += len + (nl != NULL);
        }
        poppler_page_free_text_attributes(attrs);
}

static void headings_by_size(const sizes *sz, dr_doc *d) {
        if (sz->n == 0)
                return;
        size_t best = 0;
        for (size_t k = 1; k < sz->n; k++)
                if (sz->count[k] > sz->count[best])
                        best = k;
        double body = sz->size[best], big[3] = {0};
        for (int slot = 0; slot < 3; slot++)
                for (size_t k = 0; k < sz->n; k++)
                        if (sz->size[k] >= 1.15 * body && (slot == 0 || sz->size[k] < big[slot - 1]) &&
                            sz->size[k] > big[slot])
                                big[slot] = sz->size[k];
        for (size_t i = 0; i < sz->n_c; i++) {
                double fs = round(sz->c[i].size * 2) / 2;
                for (int k = 0; k < 3; k++)
                        if (big[k] > 0 && fs == big[k])
                                dr_doc_add_heading(d, k + 1, sz->c[i].text, strlen(sz->c[i].text), sz->c[i].page);
        }
}

/* Render the page at DOCREAD_OCR_DPI and recognize it. */
static int page_ocr(PopplerPage *pg, const dr_opts *o, dr_doc *d, unsigned page) {
        double pw, ph;
        poppler_page_get_size(pg, &pw, &ph);
        double scale = DOCREAD_OCR_DPI / 72.0;
        double w = ceil(pw * scale), h = ceil(ph * scale);
        if (!(w >= 1 && h >= 1) || w * h > (double) DOCREAD_OCR_PIXELS_MAX)
                return dr_fail(d, -E2BIG, "page %u is too large to render for OCR (%.0f x %.0f points)", page, pw, ph);
        cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int) w, (int) h);
        if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
                cairo_surface_destroy(s);
                return dr_fail(d, -ENOMEM, "page %u: cannot render it for OCR", page);
        }
        cairo_t *cr = cairo_create(s);
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_paint(cr);
        cairo_scale(cr, scale, scale);
        poppler_page_render_for_printing(pg, cr);
        cairo_destroy(cr);
        cairo_surface_flush(s);
        int iw = cairo_image_surface_get_width(s), ih = cairo_image_surface_get_height(s);
        int stride = cairo_image_surface_get_stride(s);
        unsigned char *src = cairo_image_surface_get_data(s);
        unsigned char *gray = malloc((size_t) iw * (size_t) ih);
        if (!gray) {
                cairo_surface_destroy(s);
                return dr_fail(d, -ENOMEM, "out of memory");
        }
        for (int y = 0; y < ih; y++) {
                const uint32_t *row = (const uint32_t *) (src + (size_t) y * (size_t) stride);
                for (int x = 0; x < iw; x++) {
                        uint32_t v = row[x];
                        gray[(size_t) y * (size_t) iw + (size_t) x] =
                                (unsigned char) ((((v >> 16) & 0xff) * 299 + ((v >> 8) & 0xff) * 587 +
                                                  (v & 0xff) * 114) /
                                                 1000);
                }
        }
        cairo_surface_destroy(s);
        int r = dr_ocr_gray(gray, iw, ih, iw, DOCREAD_OCR_DPI, o, &d->text, d);
        free(gray);
        if (r >= 0)
                d->ocr_used = true;
        return r;
}

/* Does s have at least min characters other than white space? (Stops when it knows.) */
static bool has_visible_chars(const char *s, size_t min) {
        size_t n = 0;
        for (; *s && n < min; s++)
                n += !(*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r' || *s == '\f');
        return n >= min;
}

static int read_page(PopplerDocument *doc, int i, sizes *sz, const dr_opts *o, dr_doc *d) {
        unsigned page = (unsigned) i + 1;
        PopplerPage *pg = poppler_document_get_page(doc, i);
        if (!pg)
                return dr_fail(d, -EBADMSG, "page %u cannot be read: the PDF is damaged", page);
        int r = dynbuf_addf(&d->text, "%s[page %u]\n", d->text.len ? "\n" : "", page);
        char *text = poppler_page_get_text(pg);
        if (r >= 0 && text && has_visible_chars(text, 8)) {
                r = page_layout(pg, text, d, page);
                if (r >= 0 && sz)
                        page_lines(pg, text, sz, page);
        } else if (r >= 0 && o->ocr) {
                r = page_ocr(pg, o, d, page);
        } else if (r >= 0) {
                if (text && *text)
                        r = dynbuf_add_str(&d->text, text);
                dr_note(d, "page %u has no text layer (a scan?): read it again with ocr: true", page);
        }
        g_free(text);
        g_object_unref(pg);
        if (r == -E2BIG && !d->error[0])
                return dr_fail(d, r, "the text passes %llu MiB at page %u: read fewer pages (pages: \"1-%u\")",
                               DOCREAD_TEXT_MAX >> 20, page, page > 1 ? page - 1 : 1);
        if (r < 0 && !d->error[0])
                return dr_fail(d, r, "page %u: %s", page, strerror(-r));
        d->pages_read += r >= 0;
        return r;
}

/* Headings from the outline (the bookmarks), when the PDF has one. */
static void outline(PopplerDocument *doc, PopplerIndexIter *it, int level, dr_doc *d) {
        do {
                PopplerAction *a = poppler_index_iter_get_action(it);
                if (a && a->type == POPPLER_ACTION_GOTO_DEST && a->any.title) {
                        unsigned page = 0;
                        PopplerDest *dest = a->goto_dest.dest;
                        if (dest && dest->type == POPPLER_DEST_NAMED) {
                                PopplerDest *nd = poppler_document_find_dest(doc, dest->named_dest);
                                if (nd) {
                                        page = (unsigned) MAX(nd->page_num, 0);
                                        poppler_dest_free(nd);
                                }
                        } else if (dest)
                                page = (unsigned) MAX(dest->page_num, 0);
                        dr_doc_add_heading(d, level, a->any.title, strlen(a->any.title), page);
                }
                if (a)
                        poppler_action_free(a);
                PopplerIndexIter *child = poppler_index_iter_get_child(it);
                if (child && level < 6)
                        outline(doc, child, level + 1, d);
                if (child)
                        poppler_index_iter_free(child);
        } while (json_array_size(d->headings) < DOCREAD_HEADINGS_MAX && poppler_index_iter_next(it));
}

/* ---- pages on several threads ----
 * The wanted pages are cut into runs (parts), a few for each thread, which the threads take in
 * turn (pages differ in cost: a thread done early takes the next run). Each thread reads with its
 * own PopplerDocument opened from the same bytes (poppler is safe across documents, not within
 * one) into the part's own text, tables, notes and font sizes; the parts are joined in page order.
 * What a page yields depends on the page alone but for the document-wide bounds (the text's bytes,
 * the tables, the notes, the heading candidates): a read that meets one of them, or fails, is read
 * again on one thread, so that the answer is the one-thread answer byte for byte. */

typedef struct part {
        int first, end; /* pages [first, end), from 0 */
        dr_doc d;
        sizes sz;
        int r; /* -ECANCELED until read */
} part;

typedef struct par_read {
        const char *buf; /* the document's bytes */
        size_t len;
        const dr_opts *o;
        bool by_size;
        part p[DOCREAD_PARTS_MAX];
        unsigned n;
        atomic_uint next;   /* the part the next thread free takes */
        atomic_bool stop;   /* a part that fails stops the others: the read is done again anyway */
        atomic_size_t text; /* the bytes of text all parts hold: past DOCREAD_TEXT_MAX, they stop */
} par_read;

typedef struct worker {
        par_read *ps;
        PopplerDocument *doc; /* the main thread's is the document dr_pdf opened */
        bool own_doc, started;
        pthread_t thread;
} worker;

static void part_done(part *p) {
        dynbuf_free(&p->d.text);
        json_decref(p->d.tables);
        json_decref(p->d.notes);
        sizes_done(&p->sz);
}

static void part_read(par_read *ps, part *p, PopplerDocument *doc) {
        p->r = p->d.tables && p->d.notes ? 0 : -ENOMEM;
        for (int i = p->first; i < p->end && p->r >= 0; i++) {
                if (atomic_load_explicit(&ps->stop, memory_order_relaxed))
                        p->r = -ECANCELED;
                else if (dr_page_wanted(ps->o, (unsigned) i + 1)) {
                        size_t before = p->d.text.len;
                        p->r = read_page(doc, i, ps->by_size ? &p->sz : NULL, ps->o, &p->d);
                        size_t added = p->d.text.len - before;
                        if (atomic_fetch_add_explicit(&ps->text, added, memory_order_relaxed) + added >
                            DOCREAD_TEXT_MAX)
                                p->r = -E2BIG;
                }
        }
        if (p->r < 0)
                atomic_store_explicit(&ps->stop, true, memory_order_relaxed);
}

static void *worker_run(void *ud) {
        worker *w = ud;
        par_read *ps = w->ps;
        if (!w->doc) {
                GBytes *bytes = g_bytes_new_static(ps->buf, ps->len);
                w->doc = poppler_document_new_from_bytes(bytes, NULL, NULL);
                g_bytes_unref(bytes);
                w->own_doc = w->doc != NULL;
        }
        if (!w->doc) /* the parts are left to the others (the main thread's document is open) */
                return NULL;
        for (;;) {
                unsigned k = atomic_fetch_add_explicit(&ps->next, 1, memory_order_relaxed);
                if (k >= ps->n || atomic_load_explicit(&ps->stop, memory_order_relaxed))
                        break;
                part_read(ps, &ps->p[k], w->doc);
        }
        return NULL;
}

/* Threads for n wanted pages: opts->threads when given, else one for each DOCREAD_THREAD_PAGES, at
 * most DOCREAD_THREADS_MAX and the CPUs the process may run on. */
static unsigned threads_for(const dr_opts *o, unsigned n) {
        if (o->threads)
                return MAX(MIN(MIN(o->threads, DOCREAD_THREADS_MAX), n), 1U);
        cpu_set_t set;
        unsigned cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? (unsigned) CPU_COUNT(&set) : 1;
        return MAX(MIN(MIN(cpus, DOCREAD_THREADS_MAX), n / DOCREAD_THREAD_PAGES), 1U);
}

/* Join the parts into d and sz, in page order. Returns 1, 0 when a part failed or a document-wide
 * bound is met (the pages are to be read again on one thread; d and sz are untouched then), or
 * -ENOMEM. */
static int parts_join(part *parts, unsigned n, sizes *sz, dr_doc *d) {
        size_t text = 0, tables = 0, notes = 0, cands = 0;
        for (unsigned k = 0; k < n; k++) {
                const part *p = &parts[k];
                if (p->r < 0 || p->sz.n == ELEMENTSOF(p->sz.size))
                        return 0;
                text += p->d.text.len + (text > 0 && p->d.text.len > 0);
                tables += json_array_size(p->d.tables);
                notes += json_array_size(p->d.notes);
                cands += p->sz.n_c;
        }
        if (text > DOCREAD_TEXT_MAX || tables >= DOCREAD_TABLES_MAX || notes >= DOCREAD_HEADINGS_MAX ||
            cands >= DOCREAD_WORDS_MAX)
                return 0;
        if (dynbuf_reserve(&d->text, text) < 0 || (cands > 0 && !(sz->c = malloc(cands * sizeof(cand)))))
                return dr_fail(d, -ENOMEM, "out of memory");
        if (sz) /* NULL: the outline gave the headings */
                sz->cap_c = cands;
        for (unsigned k = 0; k < n; k++) {
                part *p = &parts[k];
                if (d->text.len > 0 && p->d.text.len > 0)
                        dynbuf_add(&d->text, "\n", 1);
                dynbuf_add(&d->text, p->d.text.buf, p->d.text.len);
                if (json_array_extend(d->tables, p->d.tables) < 0 || json_array_extend(d->notes, p->d.notes) < 0)
                        return dr_fail(d, -ENOMEM, "out of memory");
                d->pages_read += p->d.pages_read;
                if (!sz)
                        continue;
                for (size_t i = 0; i < p->sz.n; i++)
                        size_count(sz, p->sz.size[i], p->sz.count[i]);
                if (p->sz.n_c > 0)
                        memcpy(sz->c + sz->n_c, p->sz.c, p->sz.n_c * sizeof(cand));
                sz->n_c += p->sz.n_c;
                p->sz.n_c = 0; /* the candidates' texts are sz's now */
        }
        return 1;
}

/* Cut the wanted pages of the first n into ps->n runs of as many wanted pages. */
static void parts_cut(par_read *ps, int n, unsigned want) {
        int i = 0;
        for (unsigned k = 0, seen = 0; k < ps->n; k++) {
                part *p = &ps->p[k];
                *p = (part){.first = i, .d = {.tables = json_array(), .notes = json_array()}, .r = -ECANCELED};
                dynbuf_init(&p->d.text, DOCREAD_TEXT_MAX);
                unsigned until = (unsigned) (((uint64_t) want * (k + 1)) / ps->n);
                for (; i < n && (seen < until || k + 1 == ps->n); i++)
                        seen += dr_page_wanted(ps->o, (unsigned) i + 1);
                p->end = i;
        }
}

/* Read the wanted pages of the first n on several threads. Returns as parts_join. */
static int pages_parallel(PopplerDocument *doc, const char *buf, size_t len, int n, unsigned want, unsigned threads,
                          sizes *sz, const dr_opts *o, dr_doc *d) {
        par_read *ps = calloc(1, sizeof(par_read));
        if (!ps)
                return 0;
        ps->buf = buf;
        ps->len = len;
        ps->o = o;
        ps->by_size = sz != NULL;
        ps->n = MIN(MIN(threads * DOCREAD_THREAD_PARTS, want), (unsigned) DOCREAD_PARTS_MAX);
        parts_cut(ps, n, want);
        worker w[DOCREAD_THREADS_MAX] = {0};
        pthread_attr_t attr;
        bool attr_ok = pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, DOCREAD_THREAD_STACK) == 0;
        for (unsigned k = 0; k < threads; k++) {
                w[k] = (worker){.ps = ps, .doc = k == 0 ? doc : NULL};
                if (k > 0 && attr_ok) /* one that cannot start leaves its parts to the others */
                        w[k].started = pthread_create(&w[k].thread, &attr, worker_run, &w[k]) == 0;
        }
        if (attr_ok)
                pthread_attr_destroy(&attr);
        worker_run(&w[0]);
        for (unsigned k = 1; k < threads; k++)
                if (w[k].started)
                        pthread_join(w[k].thread, NULL);
        int r = parts_join(ps->p, ps->n, sz, d);
        for (unsigned k = 0; k < ps->n; k++)
                part_done(&ps->p[k]);
        for (unsigned k = 1; k < threads; k++)
                if (w[k].own_doc)
                        g_object_unref(w[k].doc);
        free(ps);
        if (r > 0) {
                d->threads = 1;
                for (unsigned k = 1; k < threads; k++)
                        d->threads += w[k].started;
        }
        return r;
}

/* The wanted pages among the first DOCREAD_PAGES_MAX, on as many threads as pay off (one when
 * OCR may be asked for: it is not run on several). */
static int read_pages(PopplerDocument *doc, const char *buf, size_t len, sizes *sz, const dr_opts *o, dr_doc *d) {
        int n = MIN(poppler_document_get_n_pages(doc), (int) DOCREAD_PAGES_MAX);
        unsigned want = 0;
        for (int i = 0; i < n; i++)
                want += dr_page_wanted(o, (unsigned) i + 1);
        unsigned threads = o->ocr ? 1 : threads_for(o, want);
        if (threads > 1) {
                int r = pages_parallel(doc, buf, len, n, want, threads, sz, o, d);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        d->threads = 1;
        int r = 0;
        for (int i = 0; i < n && r >= 0; i++)
                if (dr_page_wanted(o, (unsigned) i + 1))
                        r = read_page(doc, i, sz, o, d);
        return r;
}

int dr_pdf(const char *buf, size_t len, const dr_opts *o, dr_doc *d) {
        d->format = "pdf";
        GError *err = NULL;
        GBytes *bytes = g_bytes_new_static(buf, len);
        PopplerDocument *doc = poppler_document_new_from_bytes(bytes, NULL, &err);
        g_bytes_unref(bytes);
        if (!doc) {
                int r = err && err->code == POPPLER_ERROR_ENCRYPTED ? -EACCES : -EBADMSG;
                dr_fail(d, r, "%s: %s", r == -EACCES ? "the PDF is encrypted with a password" : "not a readable PDF",
                        err ? err->message : "poppler could not open it");
                g_clear_error(&err);
                return r;
        }
        int n = poppler_document_get_n_pages(doc);
        int r = 0;
        if (n <= 0)
                r = dr_fail(d, -EBADMSG, "the PDF has no pages");
        else if ((unsigned) n > DOCREAD_PAGES_MAX && !o->have_pages)
                r = dr_fail(d, -E2BIG,
                            "the PDF has %d pages; hull reads at most %u at once: ask for some (pages: \"1-100\")", n,
                            DOCREAD_PAGES_MAX);
        if (r < 0) {
                g_object_unref(doc);
                return r;
        }
        d->pages = (unsigned) n;
        PopplerIndexIter *it = poppler_index_iter_new(doc);
        if (it) {
                outline(doc, it, 1, d);
                poppler_index_iter_free(it);
        }
        _cleanup_(sizes_done) sizes sz = {0};
        bool by_size = json_array_size(d->headings) == 0;
        r = read_pages(doc, buf, len, by_size ? &sz : NULL, o, d);
        if (r >= 0 && by_size)
                headings_by_size(&sz, d);
        g_object_unref(doc);
        return r;
}
