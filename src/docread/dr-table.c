/* dr-table.c: the pure parts of hull-docread: errors and notes, page lists, table grids and their
 * CSV, and finding tables in a PDF page from the positions of its words. No I/O. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docread.h"

int dr_fail(dr_doc *d, int r, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->error, sizeof(d->error), fmt, ap);
        va_end(ap);
        return r;
}

void dr_note(dr_doc *d, const char *fmt, ...) {
        char buf[HULL_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        if (json_array_size(d->notes) < DOCREAD_HEADINGS_MAX)
                json_array_append_new(d->notes, json_string(buf));
}

bool dr_page_wanted(const dr_opts *o, unsigned page) {
        if (!o->have_pages)
                return true;
        return page >= 1 && page <= DOCREAD_PAGES_MAX && o->pages[page - 1];
}

static int parse_num(const char **p, unsigned *ret) {
        unsigned long v = 0;
        if (**p < '0' || **p > '9')
                return -EINVAL;
        while (**p >= '0' && **p <= '9') {
                v = v * 10 + (unsigned long) (**p - '0');
                if (v > DOCREAD_PAGES_MAX)
                        return -EINVAL;
                (*p)++;
        }
        *ret = (unsigned) v;
        return 0;
}

int dr_pages_parse(const char *s, dr_opts *o) {
        memset(o->pages, 0, sizeof(o->pages));
        const char *p = s;
        bool any = false;
        for (;;) {
                unsigned a, b;
                while (*p == ' ')
                        p++;
                if (parse_num(&p, &a) < 0 || a == 0)
                        return -EINVAL;
                b = a;
                if (*p == '-') {
                        p++;
                        if (*p >= '0' && *p <= '9') {
                                if (parse_num(&p, &b) < 0 || b < a)
                                        return -EINVAL;
                        } else
                                b = DOCREAD_PAGES_MAX;
                }
                for (unsigned i = a; i <= b; i++)
                        o->pages[i - 1] = 1;
                any = true;
                while (*p == ' ')
                        p++;
                if (*p == '\0')
                        break;
                if (*p++ != ',')
                        return -EINVAL;
        }
        o->have_pages = any;
        return 0;
}

void dr_grid_init(dr_grid *g, size_t max_cols) {
        *g = (dr_grid){.max_cols = max_cols ? MIN(max_cols, (size_t) DOCREAD_TABLE_COLS_MAX) : DOCREAD_TABLE_COLS_MAX};
}

void dr_grid_done(dr_grid *g) {
        if (g->cells)
                for (size_t i = 0; i < g->rows * g->cols; i++)
                        free(g->cells[i]);
        free(g->cells);
        *g = (dr_grid){.max_cols = g->max_cols};
}

/* Widen every row to cols columns. */
static int grid_widen(dr_grid *g, size_t cols) {
        if (cols <= g->cols)
                return 0;
        size_t rows = g->cap_rows;
        char **n = calloc(rows ? rows * cols : 1, sizeof(char *));
        if (!n)
                return -ENOMEM;
        for (size_t r = 0; r < g->rows; r++)
                for (size_t c = 0; c < g->cols; c++)
                        n[r * cols + c] = g->cells[r * g->cols + c];
        free(g->cells);
        g->cells = n;
        g->cols = cols;
        return 0;
}

static int grid_grow_rows(dr_grid *g, size_t rows) {
        if (rows <= g->cap_rows) {
                g->rows = MAX(g->rows, rows);
                return 0;
        }
        size_t cap = MAX(g->cap_rows * 2, (size_t) 16);
        while (cap < rows)
                cap *= 2;
        size_t cols = MAX(g->cols, (size_t) 1);
        char **n = realloc(g->cells, cap * cols * sizeof(char *));
        if (!n)
                return -ENOMEM;
        memset(n + g->cap_rows * cols, 0, (cap - g->cap_rows) * cols * sizeof(char *));
        g->cells = n;
        g->cap_rows = cap;
        if (g->cols == 0)
                g->cols = 1;
        g->rows = rows;
        return 0;
}

int dr_grid_set(dr_grid *g, size_t row, size_t col, const char *text, size_t len) {
        if (row >= DOCREAD_TABLE_ROWS_MAX || col >= g->max_cols) {
                g->cut = true;
                return 0;
        }
        /* collapse whitespace, trim */
        char *s = malloc(MIN(len, (size_t) DOCREAD_CELL_MAX) + 1);
        if (!s)
                return -ENOMEM;
        size_t o = 0;
        bool space = false;
        for (size_t i = 0; i < len && o < DOCREAD_CELL_MAX; i++) {
                unsigned char ch = (unsigned char) text[i];
                if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v') {
                        space = o > 0;
                        continue;
                }
                if (space && o < DOCREAD_CELL_MAX)
                        s[o++] = ' ';
                space = false;
                s[o++] = (char) ch;
        }
        while (o > 0 && ((unsigned char) s[o - 1] & 0xc0) == 0x80 && o == DOCREAD_CELL_MAX)
                o--; /* never cut inside a character */
        s[o] = '\0';
        if (o == 0) {
                free(s);
                s = NULL;
        }
        int r = grid_grow_rows(g, row + 1);
        if (r >= 0)
                r = grid_widen(g, col + 1);
        if (r < 0) {
                free(s);
                return r;
        }
        char **cell = &g->cells[row * g->cols + col];
        free(*cell);
        *cell = s;
        return 0;
}

static const char *cell(const dr_grid *g, size_t r, size_t c) {
        return g->cells[r * g->cols + c];
}

static int csv_field(dynbuf *b, const char *s) {
        if (!s)
                return 0;
        if (!strpbrk(s, ",\"\n\r"))
                return dynbuf_add_str(b, s);
        int r = dynbuf_add(b, "\"", 1);
        for (const char *p = s; r >= 0 && *p; p++)
                r = *p == '"' ? dynbuf_add(b, "\"\"", 2) : dynbuf_add(b, p, 1);
        return r < 0 ? r : dynbuf_add(b, "\"", 1);
}

static bool row_empty(const dr_grid *g, size_t r) {
        for (size_t c = 0; c < g->cols; c++)
                if (cell(g, r, c))
                        return false;
        return true;
}

/* The header cell c: its text, col_N when empty, with _2, _3 ... when an earlier one has it. */
static void header_name(const dr_grid *g, size_t hr, size_t c, char *buf, size_t size) {
        const char *s = cell(g, hr, c);
        if (!s)
                snprintf(buf, size, "col_%zu", c + 1);
        else
                snprintf(buf, size, "%s", s);
        unsigned dup = 1;
        for (size_t k = 0; k < c; k++) {
                const char *t = cell(g, hr, k);
                if (t && s && strcmp(t, s) == 0)
                        dup++;
        }
        if (dup > 1) {
                size_t l = strlen(buf);
                snprintf(buf + MIN(l, size - 16), 16, "_%u", dup);
        }
}

int dr_grid_csv(const dr_grid *g, char **ret, size_t *ret_len) {
        size_t hr = 0;
        while (hr < g->rows && row_empty(g, hr))
                hr++;
        if (hr >= g->rows)
                return -ENODATA;
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, DOCREAD_OUTPUT_MAX);
        int r = 0;
        char name[DOCREAD_CELL_MAX + 32];
        for (size_t c = 0; r >= 0 && c < g->cols; c++) {
                header_name(g, hr, c, name, sizeof(name));
                if (c)
                        r = dynbuf_add(&b, ",", 1);
                if (r >= 0)
                        r = csv_field(&b, name);
        }
        if (r >= 0)
                r = dynbuf_add(&b, "\n", 1);
        for (size_t row = hr + 1; r >= 0 && row < g->rows; row++) {
                if (row_empty(g, row))
                        continue;
                for (size_t c = 0; r >= 0 && c < g->cols; c++) {
                        if (c)
                                r = dynbuf_add(&b, ",", 1);
                        if (r >= 0)
                                r = csv_field(&b, cell(g, row, c));
                }
                if (r >= 0)
                        r = dynbuf_add(&b, "\n", 1);
        }
        if (r < 0)
                return r;
        *ret = dynbuf_take(&b, ret_len);
        return *ret ? 0 : -ENOMEM;
}

int dr_doc_add_table(dr_doc *d, const char *name, unsigned page, const dr_grid *g) {
        if (json_array_size(d->tables) >= DOCREAD_TABLES_MAX) {
                dr_note(d, "more than %u tables: table %s and later ones were not kept", DOCREAD_TABLES_MAX, name);
                return 0;
        }
        _cleanup_free_ char *csv = NULL;
        size_t len = 0;
        int r = dr_grid_csv(g, &csv, &len);
        if (r == -ENODATA)
                return 0;
        if (r < 0)
                return dr_fail(d, r, "table %s: cannot be kept (%s)", name, strerror(-r));
        size_t rows = 0;
        for (size_t i = 0; i < len; i++)
                rows += csv[i] == '\n';
        json_t *t = json_pack("{s:s, s:I, s:I, s:I, s:s%}", "name", name, "page", (json_int_t) page, "rows",
                              (json_int_t) (rows ? rows - 1 : 0), "cols", (json_int_t) g->cols, "csv", csv, len);
        if (!t || json_array_append_new(d->tables, t) < 0)
                return dr_fail(d, -ENOMEM, "out of memory");
        if (g->cut)
                dr_note(d, "table %s was cut at %u rows or %zu columns", name, DOCREAD_TABLE_ROWS_MAX, g->max_cols);
        return 0;
}

int dr_doc_add_heading(dr_doc *d, int level, const char *text, size_t len, unsigned page) {
        while (len > 0 && (*text == ' ' || *text == '\t' || *text == '#'))
                text++, len--;
        while (len > 0 &&
               (text[len - 1] == ' ' || text[len - 1] == '\t' || text[len - 1] == '\n' || text[len - 1] == '\r'))
                len--;
        if (len == 0 || json_array_size(d->headings) >= DOCREAD_HEADINGS_MAX)
                return 0;
        len = MIN(len, (size_t) 200);
        json_t *h = json_pack("{s:i, s:s%, s:I}", "level", level, "text", text, len, "page", (json_int_t) page);
        if (!h) /* invalid UTF-8 (cut inside a character): skip */
                return 0;
        return json_array_append_new(d->headings, h) < 0 ? -ENOMEM : 0;
}

/* ---- tables from word positions ---- */

typedef struct seg {
        double x0, x1;
        size_t first, n; /* words[first..first+n) of the sorted order */
        size_t chars;
} seg;

typedef struct line {
        double y0, y1, h;
        size_t first, n; /* segments */
} line;

typedef struct finder {
        const dr_word *w;
        size_t *order; /* words sorted into lines, each line left to right */
        size_t *tmp;   /* sort_words's merge space */
        seg *segs;
        line *lines;
        size_t n_segs, n_lines;
} finder;

/* sort_words: the length of the runs sorted by insertion before they are merged */
#define SORT_RUN 8

/* The order of two words: by y (the middle of their boxes) then x (their left edges), or by x
 * only. */
static int word_cmp(const dr_word *w, size_t a, size_t b, bool by_y) {
        const dr_word *x = &w[a], *y = &w[b];
        if (by_y) {
                double cx = (x->y0 + x->y1) / 2, cy = (y->y0 + y->y1) / 2;
                if (cx != cy)
                        return cx < cy ? -1 : 1;
        }
        return x->x0 < y->x0 ? -1 : x->x0 > y->x0 ? 1 : 0;
}

/* Sort word indices a[0..n) by word_cmp, stably (as glibc's qsort_r, a merge sort, did: the
 * order of equal words is theirs on the page), with tmp[0..n) to merge through. A page's words
 * come mostly in order already: runs already in order are not merged again, so such a page
 * costs about n comparisons, not n log n. */
static void sort_words(const dr_word *w, size_t *a, size_t n, size_t *tmp, bool by_y) {
        for (size_t s = 0; s < n; s += SORT_RUN) {
                size_t e = MIN(s + SORT_RUN, n);
                for (size_t i = s + 1; i < e; i++) {
                        size_t v = a[i], j = i;
                        for (; j > s && word_cmp(w, a[j - 1], v, by_y) > 0; j--)
                                a[j] = a[j - 1];
                        a[j] = v;
                }
        }
        for (size_t width = SORT_RUN; width < n; width *= 2)
                for (size_t lo = 0; lo + width < n; lo += 2 * width) {
                        size_t mid = lo + width, hi = MIN(lo + 2 * width, n);
                        if (word_cmp(w, a[mid - 1], a[mid], by_y) <= 0)
                                continue;
                        memcpy(tmp + lo, a + lo, (mid - lo) * sizeof(size_t));
                        size_t i = lo, j = mid, k = lo;
                        while (i < mid && j < hi)
                                a[k++] = word_cmp(w, tmp[i], a[j], by_y) <= 0 ? tmp[i++] : a[j++];
                        while (i < mid)
                                a[k++] = tmp[i++];
                }
}

static void finder_done(finder *f) {
        free(f->order);
        free(f->tmp);
        free(f->segs);
        free(f->lines);
}

/* Words into lines (a word whose middle lies within the line's band joins it), each line left to
 * right, cut into segments at gaps wider than the line's height. */
static int build_lines(finder *f, size_t n) {
        f->order = malloc(MAX(n, (size_t) 1) * sizeof(size_t));
        f->tmp = malloc(MAX(n, (size_t) 1) * sizeof(size_t));
        f->segs = malloc(MAX(n, (size_t) 1) * sizeof(seg));
        f->lines = malloc(MAX(n, (size_t) 1) * sizeof(line));
        if (!f->order || !f->tmp || !f->segs || !f->lines)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                f->order[i] = i;
        sort_words(f->w, f->order, n, f->tmp, true);
        for (size_t i = 0; i < n;) {
                const dr_word *a = &f->w[f->order[i]];
                double y0 = a->y0, y1 = a->y1;
                size_t j = i + 1;
                while (j < n) {
                        const dr_word *b = &f->w[f->order[j]];
                        double mid = (b->y0 + b->y1) / 2;
                        if (mid < y0 || mid > y1)
                                break;
                        j++;
                }
                sort_words(f->w, f->order + i, j - i, f->tmp, false);
                line *l = &f->lines[f->n_lines++];
                *l = (line){.y0 = y0, .y1 = y1, .h = MAX(y1 - y0, 1.0), .first = f->n_segs};
                for (size_t k = i; k < j; k++) {
                        const dr_word *w = &f->w[f->order[k]];
                        seg *s = f->n_segs > l->first ? &f->segs[f->n_segs - 1] : NULL;
                        if (!s || w->x0 - s->x1 > 0.9 * l->h) {
                                s = &f->segs[f->n_segs++];
                                *s = (seg){.x0 = w->x0, .x1 = w->x1, .first = k};
                                l->n++;
                        }
                        s->x1 = MAX(s->x1, w->x1);
                        s->n++;
                        s->chars += w->len + 1;
                }
                i = j;
        }
        return 0;
}

typedef struct range {
        double x0, x1;
} range;

static int cmp_range(const void *a, const void *b) {
        const range *x = a, *y = b;
        return x->x0 < y->x0 ? -1 : x->x0 > y->x0 ? 1 : 0;
}

static size_t column_of(const range *cols, size_t n, const seg *s) {
        for (size_t c = 0; c < n; c++)
                if (s->x0 <= cols[c].x1 && s->x1 >= cols[c].x0)
                        return c;
        return n;
}

/* Lines [a, b) as a table: their segments' spans merged into columns; every line's segments
 * in distinct columns, at least two columns, short cells. Returns 1 (a grid in *g), 0 (not a
 * table) or -ENOMEM. */
static int block_table(const finder *f, size_t a, size_t b, dr_grid *g) {
        size_t n = 0, chars = 0;
        for (size_t l = a; l < b; l++)
                n += f->lines[l].n;
        _cleanup_free_ range *cols = malloc(n * sizeof(range));
        if (!cols)
                return -ENOMEM;
        n = 0;
        for (size_t l = a; l < b; l++)
                for (size_t s = 0; s < f->lines[l].n; s++) {
                        const seg *sg = &f->segs[f->lines[l].first + s];
                        cols[n++] = (range){sg->x0, sg->x1};
                        chars += sg->chars;
                }
        if (chars / n > 30) /* prose set in columns, not a table */
                return 0;
        qsort(cols, n, sizeof(range), cmp_range);
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                if (k > 0 && cols[i].x0 <= cols[k - 1].x1 + 1.0)
                        cols[k - 1].x1 = MAX(cols[k - 1].x1, cols[i].x1);
                else
                        cols[k++] = cols[i];
        }
        if (k < 2 || k > DOCREAD_TABLE_COLS_MAX)
                return 0;
        dr_grid_init(g, k);
        for (size_t l = a; l < b; l++) {
                size_t last = SIZE_MAX;
                for (size_t s = 0; s < f->lines[l].n; s++) {
                        const seg *sg = &f->segs[f->lines[l].first + s];
                        size_t c = column_of(cols, k, sg);
                        if (c == last || c >= k) {
                                dr_grid_done(g);
                                return 0;
                        }
                        last = c;
                        char buf[DOCREAD_CELL_MAX];
                        size_t o = 0;
                        for (size_t w = 0; w < sg->n; w++) {
                                const dr_word *wd = &f->w[f->order[sg->first + w]];
                                if (o + wd->len + 1 >= sizeof(buf))
                                        break;
                                if (o)
                                        buf[o++] = ' ';
                                memcpy(buf + o, wd->text, wd->len);
                                o += wd->len;
                        }
                        if (dr_grid_set(g, l - a, c, buf, o) < 0) {
                                dr_grid_done(g);
                                return -ENOMEM;
                        }
                }
        }
        /* every column must have a cell: a grid widened to k columns keeps the last empty */
        if (g->cols < k && grid_widen(g, k) < 0) {
                dr_grid_done(g);
                return -ENOMEM;
        }
        return 1;
}

int dr_find_tables(const dr_word *words, size_t n, int (*found)(void *ud, const dr_grid *g), void *ud) {
        _cleanup_(finder_done) finder f = {.w = words};
        int r = build_lines(&f, n);
        if (r < 0)
                return r;
        int count = 0;
        for (size_t a = 0; a < f.n_lines;) {
                if (f.lines[a].n < 2) {
                        a++;
                        continue;
                }
                size_t b = a + 1;
                while (b < f.n_lines && f.lines[b].n >= 2 &&
                       f.lines[b].y0 - f.lines[b - 1].y1 <= 2.0 * MAX(f.lines[b].h, f.lines[b - 1].h))
                        b++;
                if (b - a >= 3) {
                        dr_grid g;
                        r = block_table(&f, a, b, &g);
                        if (r < 0)
                                return r;
                        if (r > 0) {
                                r = found(ud, &g);
                                dr_grid_done(&g);
                                if (r < 0)
                                        return r;
                                count++;
                        }
                }
                a = b;
        }
        return count;
}
