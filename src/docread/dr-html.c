/* dr-html.c: HTML for hull-docread through libxml2's HTML parser: the visible text (scripts,
 * styles and the head left out, a line per block), h1 to h6 as headings, every table (its rows
 * under thead, tbody or tfoot too) as a table. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "dr-xml.h"

typedef struct hctx {
        dr_doc *d;
        unsigned n_tables;
} hctx;

static bool skipped(const xmlNode *n) {
        static const char *const names[] = {"script", "style", "head", "noscript", "template", "svg"};
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strcasecmp((const char *) n->name, names[i]) == 0)
                        return true;
        return false;
}

static bool block(const xmlNode *n) {
        static const char *const names[] = {"p",       "div",    "br",     "li", "tr", "h1",  "h2",         "h3",
                                            "h4",      "h5",     "h6",     "ul", "ol", "pre", "blockquote", "section",
                                            "article", "header", "footer", "dt", "dd", "hr",  "title"};
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strcasecmp((const char *) n->name, names[i]) == 0)
                        return true;
        return false;
}

static int html_text(const xmlNode *n, dynbuf *b, unsigned depth) {
        int r = 0;
        if (depth > 256)
                return 0;
        for (const xmlNode *c = n->children; c && r >= 0; c = c->next) {
                if (c->type == XML_TEXT_NODE && c->content) {
                        const char *t = (const char *) c->content;
                        bool sp = false;
                        for (; *t && r >= 0; t++) {
                                if (*t == ' ' || *t == '\n' || *t == '\t' || *t == '\r') {
                                        sp = true;
                                        continue;
                                }
                                if (sp && b->len && b->buf[b->len - 1] != '\n' && b->buf[b->len - 1] != ' ')
                                        r = dynbuf_add(b, " ", 1);
                                sp = false;
                                if (r >= 0)
                                        r = dynbuf_add(b, t, 1);
                        }
                        if (sp && r >= 0 && b->len && b->buf[b->len - 1] != '\n' && b->buf[b->len - 1] != ' ')
                                r = dynbuf_add(b, " ", 1);
                } else if (c->type == XML_ELEMENT_NODE && !skipped(c)) {
                        if (strcasecmp((const char *) c->name, "td") == 0 ||
                            strcasecmp((const char *) c->name, "th") == 0)
                                if (b->len && b->buf[b->len - 1] != '\n')
                                        r = dynbuf_add(b, "\t", 1);
                        if (r >= 0)
                                r = html_text(c, b, depth + 1);
                        if (r >= 0 && block(c) && b->len && b->buf[b->len - 1] != '\n')
                                r = dynbuf_add(b, "\n", 1);
                }
        }
        return r;
}

/* Rows of table t (not of tables nested in it) into g. */
static int table_rows(const xmlNode *t, dr_grid *g, size_t *row) {
        int r = 0;
        for (const xmlNode *c = t->children; c && r >= 0; c = c->next) {
                if (c->type != XML_ELEMENT_NODE)
                        continue;
                const char *nm = (const char *) c->name;
                if (strcasecmp(nm, "thead") == 0 || strcasecmp(nm, "tbody") == 0 || strcasecmp(nm, "tfoot") == 0)
                        r = table_rows(c, g, row);
                else if (strcasecmp(nm, "tr") == 0) {
                        size_t col = 0;
                        for (const xmlNode *td = c->children; td && r >= 0; td = td->next) {
                                if (td->type != XML_ELEMENT_NODE || (strcasecmp((const char *) td->name, "td") != 0 &&
                                                                     strcasecmp((const char *) td->name, "th") != 0))
                                        continue;
                                _cleanup_dynbuf_ dynbuf b;
                                dynbuf_init(&b, DOCREAD_CELL_MAX * 4);
                                r = html_text(td, &b, 0);
                                if (r == -E2BIG)
                                        r = 0;
                                if (r >= 0)
                                        r = dr_grid_set(g, *row, col++, b.buf ?: "", b.len);
                        }
                        (*row)++;
                }
        }
        return r;
}

static int walk(const xmlNode *n, hctx *h, unsigned depth) {
        int r = 0;
        if (depth > 256)
                return 0;
        for (const xmlNode *c = n->children; c && r >= 0; c = c->next) {
                if (c->type != XML_ELEMENT_NODE || skipped(c))
                        continue;
                const char *nm = (const char *) c->name;
                if ((nm[0] == 'h' || nm[0] == 'H') && nm[1] >= '1' && nm[1] <= '6' && !nm[2]) {
                        _cleanup_dynbuf_ dynbuf b;
                        dynbuf_init(&b, 4096);
                        if (html_text(c, &b, 0) >= 0 && b.len)
                                r = dr_doc_add_heading(h->d, nm[1] - '0', b.buf, b.len, 1);
                } else if (strcasecmp(nm, "table") == 0) {
                        dr_grid g;
                        dr_grid_init(&g, 0);
                        size_t row = 0;
                        char name[32];
                        snprintf(name, sizeof(name), "table_%u", ++h->n_tables);
                        r = table_rows(c, &g, &row);
                        if (r >= 0)
                                r = dr_doc_add_table(h->d, name, 1, &g);
                        dr_grid_done(&g);
                } else
                        r = walk(c, h, depth + 1);
        }
        return r;
}

int dr_html(const char *buf, size_t len, const dr_opts *o, dr_doc *d) {
        d->format = "html";
        if (len > INT32_MAX)
                return dr_fail(d, -EFBIG, "the page is too large");
        htmlDocPtr x =
                htmlReadMemory(buf, (int) len, NULL, NULL,
                               HTML_PARSE_NONET | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_RECOVER);
        if (!x)
                return dr_fail(d, -EBADMSG, "the HTML cannot be parsed");
        xmlNode *root = xmlDocGetRootElement(x);
        hctx h = {.d = d};
        int r = root ? html_text(root, &d->text, 0) : 0;
        if (r >= 0 && root)
                r = walk(root, &h, 0);
        xmlFreeDoc(x);
        d->pages = d->pages_read = 1;
        return r < 0 && !d->error[0] ? dr_fail(d, r, "the text does not fit (%s)", strerror(-r)) : r;
}
