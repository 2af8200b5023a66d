/* dr-office.c: Office Open XML (.docx, .xlsx, .pptx) and OpenDocument (.odt, .ods, .odp) for
 * hull-docread: the zip read through libarchive with bounds on entries and on what they expand
 * to (a zip bomb stops with an error), the XML through libxml2 (dr-xml.h). Word and Writer give
 * paragraphs, headings (Heading N styles, text:h) and tables; every sheet of Excel and Calc is a
 * table, dates and booleans kept as such; PowerPoint and Impress give each slide's text, its
 * title as a heading and its tables. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr-xml.h"
#include "parse-util.h"

typedef struct zentry {
        char *name;
        char *data;
        size_t len;
} zentry;

typedef struct zip {
        zentry *e;
        size_t n;
} zip;

static void zip_done(zip *z) {
        for (size_t i = 0; i < z->n; i++) {
                free(z->e[i].name);
                free(z->e[i].data);
        }
        free(z->e);
}

static bool wanted(const char *name) {
        static const char *const pats[] = {
                "mimetype",
                "content.xml",
                "word/document.xml",
                "xl/workbook.xml",
                "xl/_rels/workbook.xml.rels",
                "xl/sharedStrings.xml",
                "xl/styles.xml",
                "xl/worksheets/*.xml",
                "ppt/presentation.xml",
                "ppt/_rels/presentation.xml.rels",
                "ppt/slides/slide*.xml",
        };
        for (size_t i = 0; i < ELEMENTSOF(pats); i++)
                if (fnmatch(pats[i], name, FNM_PATHNAME) == 0)
                        return true;
        return false;
}

static int zip_load(const char *buf, size_t len, zip *z, dr_doc *d) {
        struct archive *a = archive_read_new();
        if (!a)
                return dr_fail(d, -ENOMEM, "out of memory");
        archive_read_support_format_zip(a);
        int r = 0;
        if (archive_read_open_memory(a, buf, len) != ARCHIVE_OK) {
                r = dr_fail(d, -EBADMSG, "not a readable zip archive: %s", archive_error_string(a) ?: "?");
                archive_read_free(a);
                return r;
        }
        uint64_t total = 0;
        size_t entries = 0;
        struct archive_entry *ae;
        int k;
        while ((k = archive_read_next_header(a, &ae)) == ARCHIVE_OK) {
                if (++entries > DOCREAD_ZIP_ENTRIES_MAX) {
                        r = dr_fail(d, -E2BIG, "the archive has more than %u entries", DOCREAD_ZIP_ENTRIES_MAX);
                        break;
                }
                const char *name = archive_entry_pathname(ae);
                if (!name || !wanted(name) || archive_entry_filetype(ae) != AE_IFREG)
                        continue;
                if (archive_entry_size_is_set(ae) &&
                    (uint64_t) archive_entry_size(ae) > MIN(DOCREAD_ZIP_ENTRY_MAX, DOCREAD_ZIP_TOTAL_MAX - total)) {
                        r = dr_fail(d, -EFBIG,
                                    "the archive's entry %.128s says it expands to %lld MiB, past %llu MiB (a "
                                    "zip bomb?): not read",
                                    name, (long long) (archive_entry_size(ae) >> 20), DOCREAD_ZIP_ENTRY_MAX >> 20);
                        break;
                }
                dynbuf b;
                dynbuf_init(&b, DOCREAD_ZIP_ENTRY_MAX);
                if (archive_entry_size_is_set(ae) && archive_entry_size(ae) > 0) /* one allocation, no doubling */
                        (void) dynbuf_reserve(&b, (size_t) archive_entry_size(ae) + 1);
                char chunk[65536];
                la_ssize_t got;
                while ((got = archive_read_data(a, chunk, sizeof(chunk))) > 0) {
                        total += (uint64_t) got;
                        if (total > DOCREAD_ZIP_TOTAL_MAX || dynbuf_add(&b, chunk, (size_t) got) < 0) {
                                got = -2;
                                break;
                        }
                }
                if (got == -2) {
                        dynbuf_free(&b);
                        r = dr_fail(d, -EFBIG,
                                    "the archive's entry %.128s expands past %llu MiB (a zip bomb?): not read", name,
                                    (total > DOCREAD_ZIP_TOTAL_MAX ? DOCREAD_ZIP_TOTAL_MAX : DOCREAD_ZIP_ENTRY_MAX) >>
                                            20);
                        break;
                }
                if (got < 0) {
                        dynbuf_free(&b);
                        r = dr_fail(d, -EBADMSG, "the archive's entry %.128s cannot be read: %s", name,
                                    archive_error_string(a) ?: "damaged");
                        break;
                }
                zentry *ne = realloc(z->e, (z->n + 1) * sizeof(zentry));
                if (!ne) {
                        dynbuf_free(&b);
                        r = dr_fail(d, -ENOMEM, "out of memory");
                        break;
                }
                z->e = ne;
                z->e[z->n].name = strdup(name);
                z->e[z->n].data = dynbuf_take(&b, &z->e[z->n].len);
                if (!z->e[z->n].name || !z->e[z->n].data) {
                        free(z->e[z->n].name);
                        free(z->e[z->n].data);
                        r = dr_fail(d, -ENOMEM, "out of memory");
                        break;
                }
                z->n++;
        }
        if (r == 0 && k != ARCHIVE_EOF)
                r = dr_fail(d, -EBADMSG, "the zip archive is damaged: %s", archive_error_string(a) ?: "?");
        archive_read_free(a);
        return r;
}

/* An attribute's number in [0, max], or def when absent or malformed. */
static long num(const char *v, long def, long max) {
        uint64_t u;
        return v && parse_uint64(v, 0, (uint64_t) max, &u) >= 0 ? (long) u : def;
}

static const zentry *zget(const zip *z, const char *name) {
        for (size_t i = 0; i < z->n; i++)
                if (strcmp(z->e[i].name, name) == 0)
                        return &z->e[i];
        return NULL;
}

static xmlDoc *zxml(const zip *z, const char *name, dr_doc *d) {
        const zentry *e = zget(z, name);
        if (!e) {
                dr_fail(d, -EBADMSG, "the document has no %s: damaged, or not what its name says", name);
                return NULL;
        }
        xmlDoc *x = dr_xml_parse(e->data, e->len);
        if (!x)
                dr_fail(d, -EBADMSG, "%s is not well-formed XML: the document is damaged", name);
        return x;
}

static void xml_freep(xmlDoc **x) {
        if (*x)
                xmlFreeDoc(*x);
}
#define _cleanup_xml_ _cleanup_(xml_freep)

static int cell_text(const xmlNode *n, dr_grid *g, size_t row, size_t col) {
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, DOCREAD_CELL_MAX * 4);
        int r = dr_xml_text(n, &b);
        if (r == -E2BIG)
                r = 0;
        return r < 0 ? r : dr_grid_set(g, row, col, b.buf ?: "", b.len);
}

/* A table of rows (row_name) of cells (cell_name) into the text (tab-separated) and d's tables. */
static int xml_table(const xmlNode *t, const char *row_name, const char *cell_name, const char *name, unsigned page,
                     dr_doc *d) {
        dr_grid g;
        dr_grid_init(&g, 0);
        size_t row = 0;
        int r = 0;
        for (const xmlNode *tr = t->children; tr && r >= 0; tr = tr->next) {
                if (!dr_xml_is(tr, row_name))
                        continue;
                size_t col = 0;
                for (const xmlNode *tc = tr->children; tc && r >= 0; tc = tc->next)
                        if (dr_xml_is(tc, cell_name))
                                r = cell_text(tc, &g, row, col++);
                row++;
        }
        for (size_t i = 0; r >= 0 && i < g.rows; i++) {
                for (size_t c = 0; r >= 0 && c < g.cols; c++)
                        r = dynbuf_addf(&d->text, "%s%s", c ? "\t" : "", g.cells[i * g.cols + c] ?: "");
                if (r >= 0)
                        r = dynbuf_add(&d->text, "\n", 1);
        }
        if (r >= 0)
                r = dr_doc_add_table(d, name, page, &g);
        dr_grid_done(&g);
        return r;
}

/* ---- .docx ---- */

static int docx_heading(const xmlNode *p) {
        xmlNode *st = dr_xml_child(dr_xml_child(p, "pPr"), "pStyle");
        _cleanup_free_ char *v = st ? dr_xml_attr(st, "val") : NULL;
        if (!v)
                return 0;
        if (strcmp(v, "Title") == 0)
                return 1;
        if (strncasecmp(v, "Heading", 7) == 0 && v[7] >= '1' && v[7] <= '9')
                return v[7] - '0';
        return 0;
}

static int docx_body(const xmlNode *body, unsigned *n_tables, dr_doc *d) {
        int r = 0;
        for (const xmlNode *c = body->children; c && r >= 0; c = c->next) {
                if (dr_xml_is(c, "p")) {
                        size_t at = d->text.len;
                        r = dr_xml_text(c, &d->text);
                        if (r >= 0)
                                r = dynbuf_add(&d->text, "\n", 1);
                        int level = docx_heading(c);
                        if (r >= 0 && level)
                                r = dr_doc_add_heading(d, level, d->text.buf + at, d->text.len - at, 0);
                } else if (dr_xml_is(c, "tbl")) {
                        char name[32];
                        snprintf(name, sizeof(name), "table_%u", ++*n_tables);
                        r = xml_table(c, "tr", "tc", name, 0, d);
                } else if (dr_xml_is(c, "sdt"))
                        r = docx_body(dr_xml_child(c, "sdtContent") ?: c, n_tables, d);
        }
        return r;
}

static int docx(const zip *z, dr_doc *d) {
        d->format = "docx";
        _cleanup_xml_ xmlDoc *x = zxml(z, "word/document.xml", d);
        if (!x)
                return -EBADMSG;
        xmlNode *body = dr_xml_child(xmlDocGetRootElement(x), "body");
        if (!body)
                return dr_fail(d, -EBADMSG, "word/document.xml has no body");
        d->pages = d->pages_read = 1;
        unsigned n = 0;
        int r = docx_body(body, &n, d);
        return r < 0 && !d->error[0] ? dr_fail(d, r, "the text does not fit (%s)", strerror(-r)) : r;
}

/* ---- .xlsx ---- */

typedef struct xlsx {
        char **strings; /* shared strings */
        size_t n_strings;
        uint8_t *date_style; /* per cellXfs index: 0 number, 1 date, 2 date and time */
        size_t n_styles;
} xlsx;

static void xlsx_done(xlsx *x) {
        for (size_t i = 0; i < x->n_strings; i++)
                free(x->strings[i]);
        free(x->strings);
        free(x->date_style);
}

static int xlsx_strings(const zip *z, xlsx *x, dr_doc *d) {
        if (!zget(z, "xl/sharedStrings.xml"))
                return 0;
        _cleanup_xml_ xmlDoc *doc = zxml(z, "xl/sharedStrings.xml", d);
        if (!doc)
                return -EBADMSG;
        xmlNode *root = xmlDocGetRootElement(doc);
        size_t n = 0;
        for (xmlNode *si = root ? root->children : NULL; si; si = si->next)
                n += dr_xml_is(si, "si");
        x->strings = calloc(MAX(n, (size_t) 1), sizeof(char *));
        if (!x->strings)
                return dr_fail(d, -ENOMEM, "out of memory");
        for (xmlNode *si = root ? root->children : NULL; si; si = si->next) {
                if (!dr_xml_is(si, "si"))
                        continue;
                dynbuf b;
                dynbuf_init(&b, DOCREAD_CELL_MAX * 4);
                if (dr_xml_text(si, &b) == -ENOMEM) {
                        dynbuf_free(&b);
                        return dr_fail(d, -ENOMEM, "out of memory");
                }
                x->strings[x->n_strings++] = dynbuf_take(&b, NULL);
        }
        return 0;
}

/* A number format code's kind: 1 date, 2 date and time, 0 neither. */
static uint8_t format_kind(int id, const char *code) {
        if ((id >= 14 && id <= 17) || id == 22 || (id >= 27 && id <= 36) || (id >= 50 && id <= 58))
                return id == 22 ? 2 : 1;
        if (!code)
                return 0;
        bool date = false, time = false, quoted = false;
        for (const char *p = code; *p; p++) {
                if (*p == '"')
                        quoted = !quoted;
                else if (*p == '[') {
                        const char *e = strchr(p, ']');
                        if (!e)
                                break;
                        p = e;
                } else if (*p == '\\' && p[1])
                        p++;
                else if (!quoted && (*p == 'y' || *p == 'Y' || *p == 'd' || *p == 'D'))
                        date = true;
                else if (!quoted && (*p == 'h' || *p == 'H' || *p == 's' || *p == 'S'))
                        time = true;
        }
        return date ? (time ? 2 : 1) : 0;
}

static int xlsx_styles(const zip *z, xlsx *x, dr_doc *d) {
        if (!zget(z, "xl/styles.xml"))
                return 0;
        _cleanup_xml_ xmlDoc *doc = zxml(z, "xl/styles.xml", d);
        if (!doc)
                return -EBADMSG;
        xmlNode *root = xmlDocGetRootElement(doc);
        xmlNode *fmts = dr_xml_child(root, "numFmts"), *xfs = dr_xml_child(root, "cellXfs");
        size_t n = 0;
        for (xmlNode *c = xfs ? xfs->children : NULL; c; c = c->next)
                n += dr_xml_is(c, "xf");
        x->date_style = calloc(MAX(n, (size_t) 1), 1);
        if (!x->date_style)
                return dr_fail(d, -ENOMEM, "out of memory");
        for (xmlNode *c = xfs ? xfs->children : NULL; c; c = c->next) {
                if (!dr_xml_is(c, "xf"))
                        continue;
                _cleanup_free_ char *idv = dr_xml_attr(c, "numFmtId");
                int id = (int) num(idv, 0, 100000);
                _cleanup_free_ char *code = NULL;
                for (xmlNode *f = fmts ? fmts->children : NULL; f && !code; f = f->next) {
                        _cleanup_free_ char *fid = dr_xml_is(f, "numFmt") ? dr_xml_attr(f, "numFmtId") : NULL;
                        if (fid && num(fid, -1, 100000) == id)
                                code = dr_xml_attr(f, "formatCode");
                }
                x->date_style[x->n_styles++] = format_kind(id, code);
        }
        return 0;
}

/* Excel's serial date (days since 1899-12-30) as YYYY-MM-DD[ HH:MM:SS]. */
static void serial_date(double v, bool with_time, char *buf, size_t size) {
        long days = (long) v;
        long secs = (long) ((v - (double) days) * 86400.0 + 0.5);
        if (secs >= 86400)
                days++, secs -= 86400;
        long zd = days - 25569 + 719468; /* to days since 0000-03-01 (Howard Hinnant's civil_from_days) */
        long era = (zd >= 0 ? zd : zd - 146096) / 146097;
        long doe = zd - era * 146097;
        long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        long y = yoe + era * 400, doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
        long dd = doy - (153 * mp + 2) / 5 + 1, mm = mp < 10 ? mp + 3 : mp - 9;
        y += mm <= 2;
        y = y < 0 ? 0 : y > 9999 ? 9999 : y; /* the caller keeps serials below 10000-01-01 */
        mm = MIN(MAX(mm, 1L), 12L);
        dd = MIN(MAX(dd, 1L), 31L);
        secs = MIN(MAX(secs, 0L), 86399L);
        /* "%04ld-%02ld-%02ld[ %02ld:%02ld:%02ld]" by hand: snprintf was a tenth of reading a
         * sheet of dates; every field is in range here */
        char t[20];
        long f[6] = {y, mm, dd, secs / 3600, secs / 60 % 60, secs % 60};
        size_t o = 0;
        for (int i = 0; i < (with_time ? 6 : 3); i++) {
                if (i > 0)
                        t[o++] = i == 3 ? ' ' : i < 3 ? '-' : ':';
                if (i == 0) {
                        t[o++] = (char) ('0' + f[0] / 1000);
                        t[o++] = (char) ('0' + f[0] / 100 % 10);
                }
                t[o++] = (char) ('0' + f[i] / 10 % 10);
                t[o++] = (char) ('0' + f[i] % 10);
        }
        t[o] = '\0';
        snprintf(buf, size, "%s", t);
}

/* "BC12" → column 54 (0-based), row 11; -1 when malformed. */
static int cell_ref(const char *s, size_t *ret_col, size_t *ret_row) {
        size_t col = 0, row = 0, i = 0;
        for (; s[i] >= 'A' && s[i] <= 'Z' && i < 4; i++)
                col = col * 26 + (size_t) (s[i] - 'A' + 1);
        if (col == 0)
                return -1;
        for (; s[i] >= '0' && s[i] <= '9' && row < 100000000; i++)
                row = row * 10 + (size_t) (s[i] - '0');
        if (row == 0 || s[i])
                return -1;
        *ret_col = col - 1;
        *ret_row = row - 1;
        return 0;
}

typedef struct xcell {
        size_t row, col;
        char type[8];
        long style;
        bool have_ref;
} xcell;

static int xlsx_value(const xlsx *x, const xcell *c, const char *v, dr_grid *g) {
        char buf[128];
        const char *out = v;
        if (strcmp(c->type, "s") == 0) {
                char *end;
                unsigned long i = strtoul(v, &end, 10);
                out = *end == '\0' && i < x->n_strings ? x->strings[i] : "";
        } else if (strcmp(c->type, "b") == 0)
                out = strcmp(v, "1") == 0 ? "true" : "false";
        else if (c->type[0] == '\0' || strcmp(c->type, "n") == 0) {
                if (c->style >= 0 && (size_t) c->style < x->n_styles && x->date_style[c->style]) {
                        char *end;
                        double dv = strtod(v, &end);
                        if (*end == '\0' && dv >= 1 && dv < 2958466) {
                                serial_date(dv, x->date_style[c->style] == 2, buf, sizeof(buf));
                                out = buf;
                        }
                }
        }
        return dr_grid_set(g, c->row, c->col, out, strlen(out));
}

/* An element's attributes r, t and s (NULL: absent; namespaced ones are not they), copied
 * NUL-terminated without an allocation when short. */
typedef struct xattrs {
        const char *v[3];
        char buf[3][32];
        char *heap[3];
} xattrs;

static void xattrs_done(xattrs *a) {
        for (size_t k = 0; k < 3; k++)
                free(a->heap[k]);
}

static int sax_attrs(const xmlChar **at, int n, xattrs *a) {
        *a = (xattrs){0};
        for (int i = 0; i < n; i++, at += 5) { /* localname, prefix, URI, value, end of value */
                const char *ln = (const char *) at[0];
                int k = at[1] || !ln || ln[0] == '\0' || ln[1] != '\0' ? -1
                        : ln[0] == 'r'                                 ? 0
                        : ln[0] == 't'                                 ? 1
                        : ln[0] == 's'                                 ? 2
                                                                       : -1;
                if (k < 0 || a->v[k])
                        continue;
                size_t l = (size_t) (at[4] - at[3]);
                char *dst = l < sizeof(a->buf[k]) ? a->buf[k] : (a->heap[k] = malloc(l + 1));
                if (!dst)
                        return -ENOMEM;
                memcpy(dst, at[3], l);
                dst[l] = '\0';
                a->v[k] = dst;
        }
        return 0;
}

/* A worksheet read by SAX2 callbacks: no node is built for its cells (xmlTextReader built and
 * freed a node for every element, attribute and text: half the time of reading a sheet). */
typedef struct sheet_sax {
        xmlParserCtxt *ctxt;
        const xlsx *x;
        dr_grid *g;
        dr_doc *d;
        const char *name;
        xcell c;
        size_t next_row, next_col;
        bool in_v, in_is;
        dynbuf v;
        int r;
} sheet_sax;

static void sax_stop(sheet_sax *st, int r) {
        if (st->r >= 0)
                st->r = dr_fail(st->d, r, "out of memory");
        xmlStopParser(st->ctxt);
}

static void sax_start(void *ud, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri, int nb_ns,
                      const xmlChar **ns, int nb_attrs, int nb_defaulted, const xmlChar **attrs) {
        sheet_sax *st = ud;
        const char *nm = (const char *) localname;
        if (st->r < 0)
                return;
        if (strcmp(nm, "row") == 0 || strcmp(nm, "c") == 0) {
                _cleanup_(xattrs_done) xattrs a;
                if (sax_attrs(attrs, nb_attrs, &a) < 0)
                        return sax_stop(st, -ENOMEM);
                if (nm[0] == 'r') {
                        long rn = num(a.v[0], 0, 100000000);
                        if (rn >= 1 && (size_t) rn - 1 >= st->next_row)
                                st->next_row = (size_t) rn - 1;
                        st->next_col = 0;
                        return;
                }
                st->c = (xcell){.row = st->next_row, .col = st->next_col, .style = num(a.v[2], -1, 1000000)};
                if (a.v[0] && cell_ref(a.v[0], &st->c.col, &st->c.row) < 0)
                        st->c.col = st->next_col, st->c.row = st->next_row;
                size_t tl = a.v[1] ? strnlen(a.v[1], sizeof(st->c.type) - 1) : 0; /* cut as before */
                if (tl)
                        memcpy(st->c.type, a.v[1], tl);
                st->c.type[tl] = '\0';
                st->next_col = st->c.col + 1;
                dynbuf_reset(&st->v);
        } else if (strcmp(nm, "v") == 0)
                st->in_v = true;
        else if (strcmp(nm, "is") == 0)
                st->in_is = true;
}

static void sax_end(void *ud, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri) {
        sheet_sax *st = ud;
        const char *nm = (const char *) localname;
        if (st->r < 0)
                return;
        if (strcmp(nm, "row") == 0)
                st->next_row++;
        else if (strcmp(nm, "v") == 0)
                st->in_v = false;
        else if (strcmp(nm, "is") == 0)
                st->in_is = false;
        else if (strcmp(nm, "c") == 0 && st->v.len > 0) {
                int r = xlsx_value(st->x, &st->c, st->v.buf, st->g);
                if (r < 0)
                        sax_stop(st, r);
        }
}

/* Text, and whitespace, as the reader's text nodes held it; CDATA sections were never read */
static void sax_text(void *ud, const xmlChar *ch, int len) {
        sheet_sax *st = ud;
        if (st->r >= 0 && (st->in_v || st->in_is) && len > 0 && dynbuf_add(&st->v, ch, (size_t) len) == -ENOMEM)
                sax_stop(st, -ENOMEM);
}

static void sax_cdata(void *ud, const xmlChar *ch, int len) {
}

static void sax_dtd(void *ud, const xmlChar *name, const xmlChar *external_id, const xmlChar *system_id) {
        sheet_sax *st = ud;
        if (st->r >= 0)
                st->r = dr_fail(st->d, -EBADMSG,
                                "%s declares a DTD, which no spreadsheet writes: the workbook is refused", st->name);
        xmlStopParser(st->ctxt);
}

/* One worksheet, streamed (a sheet of a million cells is never a tree in memory). A worksheet
 * with a DTD (entities of its own) is refused: Office Open XML has none. */
static int xlsx_sheet(const zentry *e, const xlsx *x, dr_grid *g, dr_doc *d) {
        xmlSAXHandler h = {
                .initialized = XML_SAX2_MAGIC,
                .startElementNs = sax_start,
                .endElementNs = sax_end,
                .characters = sax_text,
                .ignorableWhitespace = sax_text,
                .cdataBlock = sax_cdata,
                .internalSubset = sax_dtd,
        };
        sheet_sax st = {.x = x, .g = g, .d = d, .name = e->name};
        /* pushed in pieces: the parser holds no second copy of the sheet */
        st.ctxt = xmlCreatePushParserCtxt(&h, &st, NULL, 0, e->name);
        if (!st.ctxt)
                return dr_fail(d, -ENOMEM, "out of memory");
        xmlCtxtUseOptions(st.ctxt, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
        dynbuf_init(&st.v, DOCREAD_CELL_MAX * 4);
        int k = 0;
        for (size_t o = 0; k == 0 && st.r >= 0 && o < e->len; o += DOCREAD_XML_CHUNK)
                k = xmlParseChunk(st.ctxt, e->data + o, (int) MIN(e->len - o, (size_t) DOCREAD_XML_CHUNK), 0);
        if (k == 0 && st.r >= 0)
                k = xmlParseChunk(st.ctxt, NULL, 0, 1);
        if (st.r >= 0 && (k != 0 || !st.ctxt->wellFormed))
                st.r = dr_fail(d, -EBADMSG, "%s is not well-formed XML: the workbook is damaged", e->name);
        if (st.ctxt->myDoc)
                xmlFreeDoc(st.ctxt->myDoc);
        st.ctxt->myDoc = NULL;
        xmlFreeParserCtxt(st.ctxt);
        dynbuf_free(&st.v);
        return st.r;
}

/* The target of relationship id in a .rels file, as a path in the archive (dir: the base). */
static char *rel_target(const zip *z, const char *rels, const char *dir, const char *id) {
        const zentry *e = zget(z, rels);
        _cleanup_xml_ xmlDoc *x = e ? dr_xml_parse(e->data, e->len) : NULL;
        xmlNode *root = x ? xmlDocGetRootElement(x) : NULL;
        for (xmlNode *c = root ? root->children : NULL; c; c = c->next) {
                _cleanup_free_ char *rid = dr_xml_is(c, "Relationship") ? dr_xml_attr(c, "Id") : NULL;
                if (!rid || strcmp(rid, id) != 0)
                        continue;
                _cleanup_free_ char *t = dr_xml_attr(c, "Target");
                char *out = NULL;
                if (t && t[0] == '/')
                        out = strdup(t + 1);
                else if (t && asprintf(&out, "%s/%s", dir, t) < 0)
                        out = NULL;
                return out;
        }
        return NULL;
}

static int xlsx_read(const zip *z, const dr_opts *o, dr_doc *d) {
        d->format = "xlsx";
        _cleanup_(xlsx_done) xlsx x = {0};
        int r = xlsx_strings(z, &x, d);
        if (r >= 0)
                r = xlsx_styles(z, &x, d);
        if (r < 0)
                return r;
        _cleanup_xml_ xmlDoc *wb = zxml(z, "xl/workbook.xml", d);
        if (!wb)
                return -EBADMSG;
        xmlNode *sheets = dr_xml_child(xmlDocGetRootElement(wb), "sheets");
        unsigned n = 0;
        for (xmlNode *sh = sheets ? sheets->children : NULL; sh && r >= 0; sh = sh->next) {
                if (!dr_xml_is(sh, "sheet"))
                        continue;
                n++;
                if (!dr_page_wanted(o, n))
                        continue;
                _cleanup_free_ char *name = dr_xml_attr(sh, "name");
                _cleanup_free_ char *id = dr_xml_attr(sh, "id");
                _cleanup_free_ char *target = id ? rel_target(z, "xl/_rels/workbook.xml.rels", "xl", id) : NULL;
                const zentry *e = target ? zget(z, target) : NULL;
                if (!e) {
                        dr_note(d, "sheet %s has no worksheet in the file: skipped", name ?: "?");
                        continue;
                }
                r = dynbuf_addf(&d->text, "%s[sheet %u: %s]\n", d->text.len ? "\n" : "", n, name ?: "");
                if (r < 0)
                        return dr_fail(d, r, "the text does not fit");
                dr_grid g;
                dr_grid_init(&g, 0);
                r = xlsx_sheet(e, &x, &g, d);
                if (r >= 0) {
                        r = dynbuf_addf(&d->text, "%zu rows, %zu columns (a table)\n", g.rows, g.cols);
                        if (r >= 0)
                                r = dr_doc_add_table(d, name ?: "sheet", n, &g);
                        d->pages_read++;
                }
                dr_grid_done(&g);
        }
        d->pages = n;
        return r;
}

/* ---- .pptx ---- */

static int pptx_tree(const xmlNode *n, unsigned slide, unsigned *n_tables, dr_doc *d, unsigned depth) {
        int r = 0;
        if (depth > 64)
                return 0;
        for (const xmlNode *c = n->children; c && r >= 0; c = c->next) {
                if (dr_xml_is(c, "sp")) {
                        xmlNode *ph = dr_xml_child(dr_xml_child(dr_xml_child(c, "nvSpPr"), "nvPr"), "ph");
                        _cleanup_free_ char *type = ph ? dr_xml_attr(ph, "type") : NULL;
                        size_t at = d->text.len;
                        r = dr_xml_text(c, &d->text);
                        if (r >= 0 && type && (strcmp(type, "title") == 0 || strcmp(type, "ctrTitle") == 0))
                                r = dr_doc_add_heading(d, 1, d->text.buf + at, d->text.len - at, slide);
                } else if (dr_xml_is(c, "tbl")) {
                        char name[48];
                        snprintf(name, sizeof(name), "slide%u_t%u", slide, ++*n_tables);
                        r = xml_table(c, "tr", "tc", name, slide, d);
                } else if (c->type == XML_ELEMENT_NODE)
                        r = pptx_tree(c, slide, n_tables, d, depth + 1);
        }
        return r;
}

static int pptx(const zip *z, const dr_opts *o, dr_doc *d) {
        d->format = "pptx";
        _cleanup_xml_ xmlDoc *pres = zxml(z, "ppt/presentation.xml", d);
        if (!pres)
                return -EBADMSG;
        xmlNode *lst = dr_xml_child(xmlDocGetRootElement(pres), "sldIdLst");
        unsigned n = 0, n_tables = 0;
        int r = 0;
        for (xmlNode *s = lst ? lst->children : NULL; s && r >= 0; s = s->next) {
                if (!dr_xml_is(s, "sldId"))
                        continue;
                n++;
                if (!dr_page_wanted(o, n))
                        continue;
                _cleanup_free_ char *id = dr_xml_attr(s, "id");
                _cleanup_free_ char *target = NULL;
                /* the relationship id is r:id; the plain id attribute is the slide's number */
                for (xmlAttr *a = s->properties; a; a = a->next)
                        if (strcmp((const char *) a->name, "id") == 0 && a->ns && a->children && a->children->content)
                                target = rel_target(z, "ppt/_rels/presentation.xml.rels", "ppt",
                                                    (const char *) a->children->content);
                const zentry *e = target ? zget(z, target) : NULL;
                _cleanup_xml_ xmlDoc *sx = e ? dr_xml_parse(e->data, e->len) : NULL;
                if (!sx) {
                        dr_note(d, "slide %u cannot be read: skipped", n);
                        continue;
                }
                r = dynbuf_addf(&d->text, "%s[slide %u]\n", d->text.len ? "\n" : "", n);
                if (r >= 0)
                        r = pptx_tree(xmlDocGetRootElement(sx), n, &n_tables, d, 0);
                d->pages_read++;
        }
        d->pages = n;
        return r < 0 && !d->error[0] ? dr_fail(d, r, "the text does not fit (%s)", strerror(-r)) : r;
}

/* ---- OpenDocument ---- */

static long repeat(const xmlNode *n, const char *attr) {
        _cleanup_free_ char *v = dr_xml_attr(n, attr);
        long k = num(v, 1, 100000000);
        return k < 1 ? 1 : k;
}

/* A cell's typed value (ods): the number, date or boolean it holds, else its text. */
static int ods_cell(const xmlNode *tc, dr_grid *g, size_t row, size_t col) {
        _cleanup_free_ char *type = dr_xml_attr(tc, "value-type");
        const char *attr =
                !type ? NULL
                : strcmp(type, "float") == 0 || strcmp(type, "percentage") == 0 || strcmp(type, "currency") == 0
                        ? "value"
                : strcmp(type, "date") == 0    ? "date-value"
                : strcmp(type, "boolean") == 0 ? "boolean-value"
                                               : NULL;
        _cleanup_free_ char *v = attr ? dr_xml_attr(tc, attr) : NULL;
        if (v) {
                char *t = strchr(v, 'T');
                if (t && strcmp(attr, "date-value") == 0) {
                        if (strcmp(t, "T00:00:00") == 0)
                                *t = '\0';
                        else
                                *t = ' ';
                }
                return dr_grid_set(g, row, col, v, strlen(v));
        }
        return cell_text(tc, g, row, col);
}

static int odf_table(const xmlNode *t, const char *name, unsigned page, bool typed, dr_doc *d) {
        dr_grid g;
        dr_grid_init(&g, 0);
        size_t row = 0;
        int r = 0;
        for (const xmlNode *tr = t->children; tr && r >= 0; tr = tr->next) {
                if (!dr_xml_is(tr, "table-row"))
                        continue;
                long rows = MIN(repeat(tr, "number-rows-repeated"), 1000L);
                bool any = false;
                for (const xmlNode *tc = tr->children; tc && !any; tc = tc->next) {
                        _cleanup_free_ char *vt = dr_xml_attr(tc, "value-type");
                        any = dr_xml_is(tc, "table-cell") && (tc->children || vt);
                }
                if (!any) {
                        row += (size_t) rows; /* empty rows, often repeated a million times */
                        continue;
                }
                for (long k = 0; k < rows && r >= 0; k++, row++) {
                        size_t col = 0;
                        for (const xmlNode *tc = tr->children; tc && r >= 0; tc = tc->next) {
                                if (!dr_xml_is(tc, "table-cell") && !dr_xml_is(tc, "covered-table-cell"))
                                        continue;
                                long cols = repeat(tc, "number-columns-repeated");
                                bool empty = !tc->children;
                                _cleanup_free_ char *vt = dr_xml_attr(tc, "value-type");
                                if (empty && !vt) {
                                        col += (size_t) MIN(cols, (long) DOCREAD_TABLE_COLS_MAX);
                                        continue;
                                }
                                for (long j = 0; j < MIN(cols, (long) DOCREAD_TABLE_COLS_MAX) && r >= 0; j++, col++)
                                        r = typed ? ods_cell(tc, &g, row, col) : cell_text(tc, &g, row, col);
                        }
                }
        }
        for (size_t i = 0; r >= 0 && i < g.rows; i++) {
                bool empty = true;
                for (size_t c = 0; c < g.cols; c++)
                        empty = empty && !g.cells[i * g.cols + c];
                for (size_t c = 0; r >= 0 && c < g.cols && !empty; c++)
                        r = dynbuf_addf(&d->text, "%s%s", c ? "\t" : "", g.cells[i * g.cols + c] ?: "");
                if (r >= 0 && !empty)
                        r = dynbuf_add(&d->text, "\n", 1);
        }
        if (r >= 0)
                r = dr_doc_add_table(d, name, page, &g);
        dr_grid_done(&g);
        return r;
}

static int odf_tree(const xmlNode *n, unsigned page, unsigned *n_tables, dr_doc *d, unsigned depth) {
        int r = 0;
        if (depth > 64)
                return 0;
        for (const xmlNode *c = n->children; c && r >= 0; c = c->next) {
                if (dr_xml_is(c, "h") || dr_xml_is(c, "p")) {
                        size_t at = d->text.len;
                        r = dr_xml_text(c, &d->text);
                        if (r >= 0)
                                r = dynbuf_add(&d->text, "\n", 1);
                        _cleanup_free_ char *lv = dr_xml_is(c, "h") ? dr_xml_attr(c, "outline-level") : NULL;
                        if (r >= 0 && dr_xml_is(c, "h"))
                                r = dr_doc_add_heading(d, (int) num(lv, 1, 9), d->text.buf + at, d->text.len - at,
                                                       page);
                } else if (dr_xml_is(c, "table")) {
                        char name[48];
                        snprintf(name, sizeof(name), "table_%u", ++*n_tables);
                        r = odf_table(c, name, page, false, d);
                } else if (c->type == XML_ELEMENT_NODE)
                        r = odf_tree(c, page, n_tables, d, depth + 1);
        }
        return r;
}

static int odf(const zip *z, const char *kind, const dr_opts *o, dr_doc *d) {
        _cleanup_xml_ xmlDoc *x = zxml(z, "content.xml", d);
        if (!x)
                return -EBADMSG;
        xmlNode *body = dr_xml_child(xmlDocGetRootElement(x), "body");
        int r = 0;
        unsigned n = 0, n_tables = 0;
        if (strcmp(kind, "spreadsheet") == 0) {
                d->format = "ods";
                xmlNode *ss = dr_xml_child(body, "spreadsheet");
                for (xmlNode *t = ss ? ss->children : NULL; t && r >= 0; t = t->next) {
                        if (!dr_xml_is(t, "table") || !dr_page_wanted(o, ++n))
                                continue;
                        _cleanup_free_ char *name = dr_xml_attr(t, "name");
                        r = dynbuf_addf(&d->text, "%s[sheet %u: %s]\n", d->text.len ? "\n" : "", n, name ?: "");
                        if (r >= 0)
                                r = odf_table(t, name ?: "sheet", n, true, d);
                        d->pages_read++;
                }
        } else if (strcmp(kind, "presentation") == 0) {
                d->format = "odp";
                xmlNode *pr = dr_xml_child(body, "presentation");
                for (xmlNode *pg = pr ? pr->children : NULL; pg && r >= 0; pg = pg->next) {
                        if (!dr_xml_is(pg, "page") || !dr_page_wanted(o, ++n))
                                continue;
                        r = dynbuf_addf(&d->text, "%s[slide %u]\n", d->text.len ? "\n" : "", n);
                        for (xmlNode *fr = pg->children; fr && r >= 0; fr = fr->next) {
                                _cleanup_free_ char *cls = dr_xml_attr(fr, "class");
                                size_t at = d->text.len;
                                r = odf_tree(fr, n, &n_tables, d, 0);
                                if (r >= 0 && cls && strcmp(cls, "title") == 0)
                                        r = dr_doc_add_heading(d, 1, d->text.buf + at, d->text.len - at, n);
                        }
                        d->pages_read++;
                }
        } else {
                d->format = "odt";
                n = 1;
                d->pages_read = 1;
                r = odf_tree(dr_xml_child(body, "text") ?: body, 0, &n_tables, d, 0);
        }
        d->pages = n;
        return r < 0 && !d->error[0] ? dr_fail(d, r, "the text does not fit (%s)", strerror(-r)) : r;
}

int dr_office(const char *buf, size_t len, const dr_opts *o, dr_doc *d) {
        _cleanup_(zip_done) zip z = {0};
        int r = zip_load(buf, len, &z, d);
        if (r < 0)
                return r;
        const zentry *mt = zget(&z, "mimetype");
        const char *odf_prefix = "application/vnd.oasis.opendocument.";
        if (zget(&z, "word/document.xml"))
                return docx(&z, d);
        if (zget(&z, "xl/workbook.xml"))
                return xlsx_read(&z, o, d);
        if (zget(&z, "ppt/presentation.xml"))
                return pptx(&z, o, d);
        if (mt && mt->len > strlen(odf_prefix) && memcmp(mt->data, odf_prefix, strlen(odf_prefix)) == 0)
                return odf(&z, mt->data + strlen(odf_prefix), o, d);
        return dr_fail(d, -EMEDIUMTYPE,
                       "a zip archive that is no Word, Excel, PowerPoint or OpenDocument file: unpack it with bash "
                       "(unzip) and read its files");
}
