/* dr-markdown.c: Markdown and plain text for hull-docread: the text as it is (valid UTF-8
 * required), ATX headings (# to ######, outside code fences) and pipe tables (a header row, a
 * |---|---| line, then rows) as tables. Pure. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "docread.h"
#include "utf8.h"

static bool is_space(char c) {
        return c == ' ' || c == '\t';
}

/* Is line[0..len) a pipe table's delimiter row (| --- | :---: |)? */
static bool is_delimiter(const char *p, size_t len) {
        size_t dashes = 0, pipes = 0;
        for (size_t i = 0; i < len; i++) {
                if (p[i] == '-')
                        dashes++;
                else if (p[i] == '|')
                        pipes++;
                else if (p[i] != ':' && !is_space(p[i]) && p[i] != '\r')
                        return false;
        }
        return dashes >= 3 && pipes >= 1;
}

static size_t line_len(const char *p, const char *end) {
        const char *nl = memchr(p, '\n', (size_t) (end - p));
        return nl ? (size_t) (nl - p) : (size_t) (end - p);
}

/* Cells of a pipe table row into row r of g (outer pipes optional; \| is a literal pipe). */
static int table_row(dr_grid *g, size_t r, const char *p, size_t len) {
        while (len > 0 && (is_space(p[len - 1]) || p[len - 1] == '\r'))
                len--;
        while (len > 0 && is_space(*p))
                p++, len--;
        if (len > 0 && *p == '|')
                p++, len--;
        if (len > 0 && p[len - 1] == '|' && !(len > 1 && p[len - 2] == '\\'))
                len--;
        size_t c = 0, start = 0;
        for (size_t i = 0; i <= len; i++) {
                if (i < len && !(p[i] == '|' && !(i > 0 && p[i - 1] == '\\')))
                        continue;
                int k = dr_grid_set(g, r, c++, p + start, i - start);
                if (k < 0)
                        return k;
                start = i + 1;
        }
        return 0;
}

static int text_common(const char *buf, size_t len, dr_doc *d) {
        if (!utf8_is_valid(buf, len))
                return dr_fail(d, -EILSEQ, "the text is not UTF-8: convert it to UTF-8 first");
        if (memchr(buf, '\0', len))
                return dr_fail(d, -EILSEQ, "the file holds NUL bytes: it is not a text document");
        d->pages = d->pages_read = 1;
        int r = dynbuf_add(&d->text, buf, MIN(len, (size_t) DOCREAD_TEXT_MAX));
        if (r < 0)
                return dr_fail(d, r, "the text does not fit in %llu MiB", DOCREAD_TEXT_MAX >> 20);
        if (len > DOCREAD_TEXT_MAX)
                dr_note(d, "the text was cut at %llu MiB", DOCREAD_TEXT_MAX >> 20);
        return 0;
}

int dr_plain_text(const char *buf, size_t len, dr_doc *d) {
        d->format = "text";
        return text_common(buf, len, d);
}

int dr_markdown(const char *buf, size_t len, dr_doc *d) {
        d->format = "markdown";
        int r = text_common(buf, len, d);
        if (r < 0)
                return r;
        const char *p = buf, *end = buf + len;
        bool fence = false;
        unsigned n_tables = 0;
        while (p < end) {
                size_t l = line_len(p, end);
                const char *next = p + l + (p + l < end);
                const char *q = p;
                while (q < p + l && is_space(*q) && q - p < 4)
                        q++;
                if ((size_t) (p + l - q) >= 3 && (memcmp(q, "```", 3) == 0 || memcmp(q, "~~~", 3) == 0)) {
                        fence = !fence;
                } else if (!fence && q < p + l && *q == '#') {
                        int level = 0;
                        while (q < p + l && *q == '#')
                                q++, level++;
                        if (level <= 6 && (q == p + l || is_space(*q)) &&
                            (r = dr_doc_add_heading(d, level, q, (size_t) (p + l - q), 1)) < 0)
                                return dr_fail(d, r, "out of memory");
                } else if (!fence && memchr(p, '|', l) && next < end && is_delimiter(next, line_len(next, end))) {
                        dr_grid g;
                        dr_grid_init(&g, 0);
                        size_t row = 0;
                        r = table_row(&g, row++, p, l);
                        next += line_len(next, end);
                        next += next < end;
                        while (r >= 0 && next < end) {
                                size_t nl = line_len(next, end);
                                if (!memchr(next, '|', nl))
                                        break;
                                r = table_row(&g, row++, next, nl);
                                next += nl + (next + nl < end);
                        }
                        char name[32];
                        snprintf(name, sizeof(name), "table_%u", ++n_tables);
                        if (r >= 0)
                                r = dr_doc_add_table(d, name, 1, &g);
                        dr_grid_done(&g);
                        if (r < 0)
                                return dr_fail(d, r, "%s", d->error[0] ? d->error : "out of memory");
                }
                p = next;
        }
        return 0;
}
