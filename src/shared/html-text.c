/* html-text.c: HTML to readable text over libxml2's HTML parser (see html-text.h). The tree is
 * walked without recursion; the text goes through a small writer that collapses whitespace and
 * places line breaks and line prefixes only where text follows them. */
#include "html-text.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dlib-xml2.h"
#include "dynbuf.h"
#include "macro.h"
#include "utf8.h"

void html_text_done(html_text *t) {
        if (!t)
                return;
        free(t->text);
        free(t->title);
        *t = (html_text){0};
}

/* ---- the writer ---- */

typedef struct writer {
        dynbuf b;
        bool full;                         /* max reached: nothing more is written */
        unsigned breaks;                   /* line breaks owed before the next text: 0, 1 or 2 (a blank line) */
        bool space;                        /* a space owed before the next text on this line */
        bool line_start;                   /* the current line has no text yet */
        char prefix[HTML_TEXT_PREFIX_MAX]; /* written at the start of the next line with text */
} writer;

static void w_init(writer *w, size_t max) {
        *w = (writer){.line_start = true};
        dynbuf_init(&w->b, max);
}

/* Append n bytes, or as many whole characters of them as fit (then the writer is full). */
static int w_raw(writer *w, const char *p, size_t n) {
        if (w->full)
                return 0;
        size_t room = w->b.max - w->b.len;
        if (n > room) {
                n = room;
                while (n > 0 && ((unsigned char) p[n] & 0xc0) == 0x80) /* not inside a character */
                        n--;
                w->full = true;
        }
        return n ? dynbuf_add(&w->b, p, n) : 0;
}

/* Line breaks at the end of the text: 0, 1 or 2. */
static unsigned trailing_breaks(const writer *w) {
        unsigned k = 0;
        while (k < 2 && w->b.len > k && w->b.buf[w->b.len - 1 - k] == '\n')
                k++;
        return k;
}

/* The line breaks owed, less those already written (never at the very start). */
static int w_breaks(writer *w) {
        unsigned owed = MIN(w->breaks, 2U), have = trailing_breaks(w);
        w->breaks = 0;
        return w->b.len > 0 && owed > have ? w_raw(w, "\n\n", owed - have) : 0;
}

/* What is owed before text: the line breaks, then the line's prefix or a space. */
static int w_settle(writer *w) {
        int r = w_breaks(w);
        if (r == 0 && w->line_start) {
                r = w_raw(w, w->prefix, strlen(w->prefix));
                w->prefix[0] = '\0';
                w->line_start = false;
        } else if (r == 0 && w->space)
                r = w_raw(w, " ", 1);
        w->space = false;
        return r;
}

static void w_break(writer *w, unsigned n) {
        w->breaks = MAX(w->breaks, n);
        w->space = false;
        w->line_start = true;
}

/* A br: the breaks owed and one line break now, so that consecutive ones make a blank line
 * (never more than one). */
static int w_br(writer *w) {
        w->space = false;
        w->line_start = true;
        int r = w_breaks(w);
        if (r == 0 && w->b.len > 0 && trailing_breaks(w) < 2)
                r = w_raw(w, "\n", 1);
        return r;
}

static bool is_space(unsigned char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Text, whitespace collapsed (a no-break space, U+00A0, is a space). */
static int w_text(writer *w, const char *s, size_t n) {
        size_t i = 0;
        while (i < n && !w->full) {
                if (is_space((unsigned char) s[i])) {
                        i++;
                        w->space = true;
                        continue;
                }
                if ((unsigned char) s[i] == 0xc2 && i + 1 < n && (unsigned char) s[i + 1] == 0xa0) {
                        i += 2;
                        w->space = true;
                        continue;
                }
                size_t j = i;
                while (j < n && !is_space((unsigned char) s[j]) &&
                       !((unsigned char) s[j] == 0xc2 && j + 1 < n && (unsigned char) s[j + 1] == 0xa0))
                        j++;
                int r = w_settle(w);
                if (r == 0)
                        r = w_raw(w, s + i, j - i);
                if (r < 0)
                        return r;
                i = j;
        }
        return 0;
}

/* Text of a pre: every character kept, line breaks included (CR dropped). */
static int w_pre(writer *w, const char *s, size_t n) {
        for (size_t i = 0; i < n && !w->full;) {
                if (s[i] == '\r') {
                        i++;
                        continue;
                }
                if (s[i] == '\n') {
                        int r = w_settle(w);
                        if (r == 0)
                                r = w_raw(w, "\n", 1);
                        if (r < 0)
                                return r;
                        w->line_start = true;
                        i++;
                        continue;
                }
                size_t j = i;
                while (j < n && s[j] != '\n' && s[j] != '\r')
                        j++;
                int r = w_settle(w);
                if (r == 0)
                        r = w_raw(w, s + i, j - i);
                if (r < 0)
                        return r;
                i = j;
        }
        return 0;
}

/* ---- elements ---- */

typedef enum kind {
        K_INLINE, /* text flows through it */
        K_SKIP,   /* nothing of it is text */
        K_LINE,   /* a line break before and after */
        K_BLOCK,  /* a blank line before and after */
        K_HEADING,
        K_LIST, /* ul, ol: a block, and one level of nesting */
        K_ITEM,
        K_CELL,
        K_BR,
        K_PRE,
        K_LINK,
} kind;

static const struct {
        const char *name;
        kind k;
} kinds[] = {
        {"script", K_SKIP},    {"style", K_SKIP},      {"noscript", K_SKIP},    {"template", K_SKIP},
        {"svg", K_SKIP},       {"math", K_SKIP},       {"head", K_SKIP},        {"iframe", K_SKIP},
        {"object", K_SKIP},    {"embed", K_SKIP},      {"canvas", K_SKIP},      {"select", K_SKIP},
        {"title", K_SKIP},     {"p", K_BLOCK},         {"blockquote", K_BLOCK}, {"table", K_BLOCK},
        {"dl", K_BLOCK},       {"figure", K_BLOCK},    {"hr", K_BLOCK},         {"form", K_BLOCK},
        {"fieldset", K_BLOCK}, {"address", K_BLOCK},   {"div", K_LINE},         {"section", K_LINE},
        {"article", K_LINE},   {"header", K_LINE},     {"footer", K_LINE},      {"nav", K_LINE},
        {"aside", K_LINE},     {"main", K_LINE},       {"tr", K_LINE},          {"dt", K_LINE},
        {"dd", K_LINE},        {"figcaption", K_LINE}, {"details", K_LINE},     {"summary", K_LINE},
        {"caption", K_LINE},   {"thead", K_LINE},      {"tbody", K_LINE},       {"tfoot", K_LINE},
        {"option", K_LINE},    {"legend", K_LINE},     {"center", K_LINE},      {"body", K_LINE},
        {"h1", K_HEADING},     {"h2", K_HEADING},      {"h3", K_HEADING},       {"h4", K_HEADING},
        {"h5", K_HEADING},     {"h6", K_HEADING},      {"ul", K_LIST},          {"ol", K_LIST},
        {"menu", K_LIST},      {"li", K_ITEM},         {"td", K_CELL},          {"th", K_CELL},
        {"br", K_BR},          {"pre", K_PRE},         {"listing", K_PRE},      {"xmp", K_PRE},
        {"a", K_LINK},
};

static kind kind_of(const xmlNode *n) {
        const char *name = (const char *) n->name;
        if (!name)
                return K_INLINE;
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                if (kinds[i].name[0] == name[0] && strcmp(name, kinds[i].name) == 0)
                        return kinds[i].k;
        return K_INLINE;
}

/* An attribute's value (its first text child), or NULL. */
static const char *attr(const xmlNode *n, const char *name) {
        for (const xmlAttr *a = n->properties; a; a = a->next)
                if (a->name && strcasecmp((const char *) a->name, name) == 0)
                        return a->children && a->children->type == XML_TEXT_NODE ? (const char *) a->children->content
                                                                                 : NULL;
        return NULL;
}

typedef struct open_link {
        const xmlNode *node;
        size_t start; /* the text's length when the link began */
} open_link;

typedef struct walk {
        writer w;
        unsigned pre;   /* inside this many pre */
        unsigned lists; /* list nesting */
        open_link links[HTML_TEXT_LINK_NEST_MAX];
        unsigned n_links;
} walk;

static void set_prefix(walk *s, const char *lead) {
        size_t n = 0, indent = 2 * (size_t) (MIN(s->lists, HTML_TEXT_LIST_DEPTH_MAX) - (s->lists ? 1 : 0));
        for (; n < indent && n + 1 < sizeof(s->w.prefix); n++)
                s->w.prefix[n] = ' ';
        size_t l = MIN(strlen(lead), sizeof(s->w.prefix) - 1 - n);
        memcpy(s->w.prefix + n, lead, l);
        s->w.prefix[n + l] = '\0';
}

/* Has an element sibling before it that is a cell. */
static bool cell_before(const xmlNode *n) {
        for (const xmlNode *p = n->prev; p; p = p->prev)
                if (p->type == XML_ELEMENT_NODE)
                        return kind_of(p) == K_CELL;
        return false;
}

/* Entering n: its text, or what it opens. Returns true when its children are to be walked (and
 * leave() called for it after them). */
static bool enter(walk *s, const xmlNode *n, int *r) {
        writer *w = &s->w;
        if (n->type == XML_TEXT_NODE || n->type == XML_CDATA_SECTION_NODE) {
                const char *t = (const char *) n->content;
                if (t)
                        *r = s->pre ? w_pre(w, t, strlen(t)) : w_text(w, t, strlen(t));
                return false;
        }
        if (n->type != XML_ELEMENT_NODE)
                return false;
        switch (kind_of(n)) {
        case K_SKIP:
                return false;
        case K_INLINE:
                break;
        case K_LINE:
                w_break(w, 1);
                break;
        case K_BLOCK:
                w_break(w, 2);
                break;
        case K_HEADING: {
                static const char *const marks[] = {"# ", "## ", "### ", "#### ", "##### ", "###### "};
                unsigned level = (unsigned) (n->name[1] - '1');
                w_break(w, 2);
                snprintf(w->prefix, sizeof(w->prefix), "%s", marks[MIN(level, 5U)]);
                break;
        }
        case K_LIST:
                w_break(w, s->lists ? 1 : 2);
                s->lists++;
                break;
        case K_ITEM:
                w_break(w, 1);
                set_prefix(s, "- ");
                break;
        case K_CELL:
                if (cell_before(n)) {
                        w->space = false;
                        *r = w_settle(w);
                        if (*r == 0)
                                *r = w_raw(w, " | ", 3);
                }
                break;
        case K_BR:
                *r = w_br(w);
                return false;
        case K_PRE:
                w_break(w, 2);
                s->pre++;
                break;
        case K_LINK:
                if (s->n_links < HTML_TEXT_LINK_NEST_MAX)
                        s->links[s->n_links++] = (open_link){n, w->b.len};
                break;
        }
        return true;
}

static bool absolute_http(const char *href) {
        return href && (strncasecmp(href, "http://", 7) == 0 || strncasecmp(href, "https://", 8) == 0);
}

static void leave(walk *s, const xmlNode *n, int *r) {
        writer *w = &s->w;
        switch (kind_of(n)) {
        case K_LINE:
                w_break(w, 1);
                break;
        case K_ITEM:
                w_break(w, 1);
                w->prefix[0] = '\0';
                break;
        case K_BLOCK:
        case K_HEADING:
                w_break(w, 2);
                w->prefix[0] = '\0';
                break;
        case K_LIST:
                s->lists--;
                w_break(w, s->lists ? 1 : 2);
                break;
        case K_PRE:
                s->pre--;
                w_break(w, 2);
                break;
        case K_LINK: {
                if (s->n_links == 0 || s->links[s->n_links - 1].node != n)
                        break;
                size_t start = s->links[--s->n_links].start;
                const char *href = attr(n, "href");
                if (!absolute_http(href) || strlen(href) > HTML_TEXT_HREF_MAX || w->b.len == start)
                        break;
                size_t tl = w->b.len - start, hl = strlen(href);
                /* the text is the URL itself */
                const char *text = w->b.buf + start;
                while (tl > 0 && (text[0] == ' ' || text[0] == '\n')) { /* owed before the link's text */
                        text++;
                        tl--;
                }
                if (tl == hl && memcmp(text, href, hl) == 0)
                        break;
                w->space = true;
                *r = w_settle(w);
                if (*r == 0)
                        *r = w_raw(w, "(", 1);
                if (*r == 0)
                        *r = w_raw(w, href, hl);
                if (*r == 0)
                        *r = w_raw(w, ")", 1);
                break;
        }
        case K_INLINE:
        case K_SKIP:
        case K_CELL:
        case K_BR:
                break;
        }
}

static bool is_document(const xmlNode *n) {
        return n->type == XML_DOCUMENT_NODE || n->type == XML_HTML_DOCUMENT_NODE;
}

/* The first title element's text (not one inside svg or math), whitespace collapsed. */
static int find_title(const xmlNode *first, char **ret) {
        const xmlNode *n = first;
        while (n) {
                bool down = false;
                if (n->type == XML_ELEMENT_NODE && n->name) {
                        const char *name = (const char *) n->name;
                        if (strcmp(name, "title") == 0) {
                                writer w;
                                w_init(&w, HTML_TEXT_TITLE_MAX);
                                for (const xmlNode *c = n->children; c; c = c->next)
                                        if ((c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) &&
                                            c->content &&
                                            w_text(&w, (const char *) c->content, strlen((const char *) c->content)) <
                                                    0) {
                                                dynbuf_free(&w.b);
                                                return -ENOMEM;
                                        }
                                if (w.b.len == 0) {
                                        dynbuf_free(&w.b);
                                        return 0;
                                }
                                *ret = dynbuf_take(&w.b, NULL);
                                return *ret ? 0 : -ENOMEM;
                        }
                        down = strcmp(name, "svg") != 0 && strcmp(name, "math") != 0;
                }
                if (down && n->children) {
                        n = n->children;
                        continue;
                }
                while (n && !n->next) {
                        n = n->parent;
                        if (n && is_document(n))
                                n = NULL;
                }
                if (n)
                        n = n->next;
        }
        return 0;
}

static void silent(void *ctx, const char *msg, ...) {
}
static void silent_structured(void *ctx, xmlErrorPtr error) {
}

static void free_docp(htmlDocPtr *d) {
        if (*d)
                xmlFreeDoc(*d);
}

/* A charset name as libxml2 may take it: letters, digits, '-', '_', '.', ':'. */
static bool charset_ok(const char *s) {
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > 40)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
                      s[i] == '-' || s[i] == '_' || s[i] == '.' || s[i] == ':'))
                        return false;
        return true;
}

int html_to_text(const char *html, size_t len, const char *charset, size_t max, html_text *ret, hull_error *e) {
        __attribute__((cleanup(free_docp))) htmlDocPtr doc = NULL;
        _cleanup_free_ char *title = NULL;
        walk s = {0};
        int r = dlib_load(DLIB_XML2, e);
        if (r < 0)
                return r;
        max = max ? max : HTML_TEXT_MAX_DEFAULT;
        bool input_cut = len > HTML_TEXT_INPUT_MAX;
        len = MIN(len, (size_t) HTML_TEXT_INPUT_MAX);
        /* libxml2 reports through handlers of the calling thread; none is wanted here. HUGE
         * lifts its nesting limit (256), past which it drops the rest of a page: the walk below
         * has no depth limit, and the input is bounded above. */
        xmlSetGenericErrorFunc(NULL, silent);
        xmlSetStructuredErrorFunc(NULL, silent_structured);
        int opts = HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NONET |
                   HTML_PARSE_COMPACT | XML_PARSE_HUGE;
        if (len > 0) {
                doc = htmlReadMemory(html, (int) len, NULL, charset_ok(charset) ? charset : NULL, opts);
                if (!doc && charset_ok(charset)) /* a charset libxml2 does not know */
                        doc = htmlReadMemory(html, (int) len, NULL, NULL, opts);
        }
        w_init(&s.w, max);
        if (doc) {
                const xmlNode *first = doc->children;
                r = find_title(first, &title);
                if (r < 0)
                        return hull_err(e, r, "html: out of memory");
                if (title) {
                        r = w_text(&s.w, title, strlen(title));
                        w_break(&s.w, 2);
                }
                const xmlNode *n = first;
                while (n && r == 0 && !s.w.full) {
                        if (enter(&s, n, &r) && n->children) {
                                n = n->children;
                                continue;
                        }
                        if (n->type == XML_ELEMENT_NODE && kind_of(n) != K_SKIP && kind_of(n) != K_BR)
                                leave(&s, n, &r); /* entered, without children */
                        while (n && !n->next) {
                                n = n->parent;
                                if (n && is_document(n))
                                        n = NULL;
                                if (n)
                                        leave(&s, n, &r);
                        }
                        if (n)
                                n = n->next;
                }
        }
        if (r < 0) {
                dynbuf_free(&s.w.b);
                return hull_err(e, r, "html: out of memory");
        }
        bool truncated = s.w.full || input_cut;
        while (s.w.b.len > 0 && (s.w.b.buf[s.w.b.len - 1] == '\n' || s.w.b.buf[s.w.b.len - 1] == ' '))
                s.w.b.buf[--s.w.b.len] = '\0';
        size_t n = 0;
        _cleanup_free_ char *raw = dynbuf_take(&s.w.b, &n);
        if (!raw)
                return hull_err(e, -ENOMEM, "html: out of memory");
        html_text t = {.truncated = truncated};
        /* libxml2 hands out UTF-8; make sure of it, within max */
        if (utf8_is_valid(raw, n)) {
                t.text = TAKE_PTR(raw);
                t.len = n;
        } else {
                if (utf8_make_valid(raw, n, &t.text, &t.len) < 0)
                        return hull_err(e, -ENOMEM, "html: out of memory");
                while (t.len > max) {
                        t.truncated = true;
                        t.len--;
                        while (t.len > 0 && ((unsigned char) t.text[t.len] & 0xc0) == 0x80)
                                t.len--;
                        t.text[t.len] = '\0';
                }
        }
        t.title = TAKE_PTR(title);
        *ret = t;
        return 0;
}
