/* docread.h: what hull-docread's parsers share (src/docread/). A parser fills a dr_doc: the
 * document's text (page markers "[page N]" between pages), its headings and its tables (each a
 * grid turned into CSV), and notes for the reader (a page without a text layer, a table cut).
 * Every function returns 0 or a negative errno and writes one line saying what was wrong into
 * the dr_doc's error (dr_fail). Not a public interface: the host sees only the JSON answer. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dynbuf.h"
#include "limits.h"
#include "macro.h"

typedef struct dr_opts {
        bool ocr;                         /* run OCR on images and on PDF pages without text */
        char langs[DOCREAD_LANGS_MAX];    /* tesseract languages, "eng" or "eng+deu" */
        uint8_t pages[DOCREAD_PAGES_MAX]; /* pages[i]: page i+1 is wanted (all when !have_pages) */
        bool have_pages;
        unsigned threads; /* a PDF's pages read on this many threads (tests); 0: as many as pay off */
        const char *name; /* the file's name (its extension hints the format); may be "" */
} dr_opts;

typedef struct dr_doc {
        const char
                *format; /* "pdf", "docx", "xlsx", "pptx", "odt", "ods", "odp", "html", "markdown", "text", "image" */
        dynbuf text;
        json_t *headings; /* [{"level", "text", "page"}] */
        json_t *tables;   /* [{"name", "page", "rows", "cols", "csv"}] */
        json_t *notes;    /* [string] */
        unsigned pages;   /* pages, slides or sheets in the document */
        unsigned pages_read;
        bool ocr_used;
        unsigned threads; /* the threads that read the pages of the answer (--stats) */
        char error[HULL_ERROR_MSG_MAX];
} dr_doc;

/* A table being built: rows of cells (NUL-terminated strings the grid owns). */
typedef struct dr_grid {
        char **cells; /* rows * cols, row-major; NULL: empty cell */
        size_t rows, cols, cap_rows;
        size_t max_cols;
        bool cut; /* rows or columns past the bounds were dropped */
} dr_grid;

/* ---- dr-table.c (pure) ---- */

int dr_fail(dr_doc *d, int r, const char *fmt, ...) _printf_(3, 4);
void dr_note(dr_doc *d, const char *fmt, ...) _printf_(2, 3);
bool dr_page_wanted(const dr_opts *o, unsigned page); /* 1-based */

/* Parse a page list "1-3,7,10-" (1-based, at most DOCREAD_PAGES_MAX) into o->pages. Returns 0
 * or -EINVAL. */
int dr_pages_parse(const char *s, dr_opts *o);

void dr_grid_init(dr_grid *g, size_t max_cols);
void dr_grid_done(dr_grid *g);
/* Put a copy of text[0..len) (whitespace runs collapsed, trimmed, cut at DOCREAD_CELL_MAX) at
 * (row, col), growing the grid. Past DOCREAD_TABLE_ROWS_MAX rows or max_cols columns: dropped,
 * g->cut set. Returns 0 or -ENOMEM. */
int dr_grid_set(dr_grid *g, size_t row, size_t col, const char *text, size_t len);
/* The grid as CSV (RFC 4180; a row of only empty cells dropped; the first row the header, an
 * empty header cell named col_N, duplicate names given a suffix). Returns 0 and *ret (malloc'd),
 * -ENODATA (no cell), -ENOMEM, -E2BIG. */
int dr_grid_csv(const dr_grid *g, char **ret, size_t *ret_len);
/* Hand grid g to d as table name (found on page, 0: none), as CSV.
 * Returns 0 (an empty grid is skipped) or a negative errno. */
int dr_doc_add_table(dr_doc *d, const char *name, unsigned page, const dr_grid *g);
int dr_doc_add_heading(dr_doc *d, int level, const char *text, size_t len, unsigned page);

/* A word with its box on a page (points, y down). */
typedef struct dr_word {
        double x0, y0, x1, y1;
        const char *text; /* not NUL-terminated */
        size_t len;
} dr_word;

/* Find tables in one page's words (any order): lines of words, cut into cells at wide gaps; runs
 * of at least three lines with two or more cells whose cells line up in columns become grids.
 * Prose in two columns is not a table (its cells are long). Calls found(ud, grid) for each, in
 * reading order (top to bottom). Returns how many, or a negative errno (-ENOMEM). Pure. */
int dr_find_tables(const dr_word *words, size_t n, int (*found)(void *ud, const dr_grid *g), void *ud);

/* ---- dr-markdown.c (pure) ---- */
int dr_markdown(const char *buf, size_t len, dr_doc *d);
int dr_plain_text(const char *buf, size_t len, dr_doc *d);

/* ---- the parsers of formats ---- */
int dr_pdf(const char *buf, size_t len, const dr_opts *o, dr_doc *d);
int dr_image(const char *buf, size_t len, const dr_opts *o, dr_doc *d);
int dr_office(const char *buf, size_t len, const dr_opts *o, dr_doc *d); /* docx, xlsx, pptx, odt, ods, odp */
int dr_html(const char *buf, size_t len, const dr_opts *o, dr_doc *d);

/* ---- dr-lib.c: the libraries hull-docread opens (dlopen) only when a document needs them ---- */
/* The function name in the library h (NULL: not opened) into *ret (a function pointer's
 * address), or NULL there; true when found. */
bool dr_dlsym(void *h, const char *name, void *ret);

/* ---- dr-ocr.c ---- */
/* Recognize an 8-bit grayscale image (w x h, stride bytes a row) into text (appended to out).
 * Returns 0 or a negative errno with d->error. */
int dr_ocr_gray(const unsigned char *px, int w, int h, int stride, int dpi, const dr_opts *o, dynbuf *out, dr_doc *d);
/* Recognize an encoded image (PNG, JPEG, TIFF, ...) */
int dr_ocr_image(const char *buf, size_t len, const dr_opts *o, dynbuf *out, dr_doc *d);
