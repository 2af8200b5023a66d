/* cli-table.c: rows of a table (JSON arrays of values under a list of column names) printed
 * for people, as aligned text, or as CSV (RFC 4180): what hull handle shows of table handles
 * (cli-table.h). */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-table.h"
#include "cli.h"
#include "dynbuf.h"
#include "macro.h"

#define CLI_TABLE_CELL_WIDTH 40U /* characters of one cell in aligned text */

static int out_of_memory(const char *cmd) {
        cli_error(cmd, "out of memory");
        return CLI_EXIT_FAILURE;
}

static int not_a_list(const char *cmd) {
        cli_error(cmd, "the daemon's answer is malformed: a row is not a list");
        return CLI_EXIT_FAILURE;
}

/* Characters (code points) of UTF-8 text. */
static size_t utf8_width(const char *s, size_t n) {
        size_t w = 0;
        for (size_t i = 0; i < n; i++)
                w += ((unsigned char) s[i] & 0xc0) != 0x80;
        return w;
}

/* Bytes of the first max characters of s. */
static size_t utf8_prefix_bytes(const char *s, size_t n, size_t max) {
        size_t w = 0, i = 0;
        for (; i < n; i++)
                if (((unsigned char) s[i] & 0xc0) != 0x80 && w++ == max)
                        break;
        return i;
}

/* A real as the shortest text that reads back the same, with ".0" when it looks integral. */
static void format_real(double d, char *buf, size_t size) {
        snprintf(buf, size, "%.15g", d);
        if (strtod(buf, NULL) != d)
                snprintf(buf, size, "%.17g", d);
        size_t n = strlen(buf);
        if (strspn(buf, "-0123456789") == n && n + 2 < size)
                memcpy(buf + n, ".0", 3);
}

/* One value of a row as text: a new string. For people (csv false): NULL for null, control
 * characters as '?'. For CSV: null is empty, quoted when it must be (RFC 4180). */
char *cli_cell_text(const json_t *v, bool csv) {
        char num[64];
        const char *s;
        size_t n;
        _cleanup_free_ char *dumped = NULL;
        if (!v || json_is_null(v)) {
                s = csv ? "" : "NULL";
                n = strlen(s);
        } else if (json_is_true(v) || json_is_false(v)) {
                s = json_is_true(v) ? "true" : "false";
                n = strlen(s);
        } else if (json_is_integer(v)) {
                snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                s = num;
                n = strlen(s);
        } else if (json_is_real(v)) {
                format_real(json_real_value(v), num, sizeof(num));
                s = num;
                n = strlen(s);
        } else if (json_is_string(v)) {
                s = json_string_value(v);
                n = json_string_length(v);
        } else {
                dumped = json_dumps(v, JSON_COMPACT);
                if (!dumped)
                        return NULL;
                s = dumped;
                n = strlen(s);
        }
        if (!csv) {
                char *t = strndup(s, n);
                for (size_t i = 0; t && i < n; i++)
                        if ((unsigned char) t[i] < 0x20 || t[i] == 0x7f)
                                t[i] = '?';
                return t;
        }
        bool quote = n > 0 && (strpbrk(s, ",\"\r\n") || memchr(s, 0, n) || s[0] == ' ' || s[n - 1] == ' ');
        if (!quote)
                return strndup(s, n);
        char *t = malloc(2 * n + 3);
        if (!t)
                return NULL;
        size_t o = 0;
        t[o++] = '"';
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '"')
                        t[o++] = '"';
                t[o++] = s[i];
        }
        t[o++] = '"';
        t[o] = 0;
        return t;
}

/* Print columns (names) and rows (arrays of values) as CSV with a header. */
int cli_print_csv(const char *cmd, const json_t *columns, const json_t *rows) {
        size_t ncol = json_array_size(columns);
        for (size_t j = 0; j < ncol; j++) {
                _cleanup_free_ char *t = cli_cell_text(json_array_get(columns, j), true);
                if (!t)
                        return out_of_memory(cmd);
                printf("%s%s", j ? "," : "", t);
        }
        putchar('\n');
        for (size_t i = 0; i < json_array_size(rows); i++) {
                const json_t *row = json_array_get(rows, i);
                if (!json_is_array(row))
                        return not_a_list(cmd);
                for (size_t j = 0; j < MAX(ncol, json_array_size(row)); j++) {
                        _cleanup_free_ char *t = cli_cell_text(json_array_get(row, j), true);
                        if (!t)
                                return out_of_memory(cmd);
                        printf("%s%s", j ? "," : "", t);
                }
                putchar('\n');
        }
        return 0;
}

/* Print a grid of cells (row-major, the first row the header) as aligned text, each line
 * indented; numbers right-aligned, cells cut at CLI_TABLE_CELL_WIDTH characters. */
int cli_print_aligned(const char *cmd, const json_t *columns, const json_t *rows, const char *indent) {
        size_t ncol = json_array_size(columns), nrow = json_array_size(rows) + 1;
        if (ncol == 0)
                return 0;
        _cleanup_free_ size_t *width = calloc(ncol, sizeof(size_t));
        _cleanup_free_ char **cells = calloc(nrow * ncol, sizeof(char *));
        _cleanup_free_ bool *right = calloc(nrow * ncol, sizeof(bool));
        int r = 0;
        if (!width || !cells || !right)
                return out_of_memory(cmd);
        for (size_t i = 0; i < nrow && r == 0; i++) {
                const json_t *row = i == 0 ? columns : json_array_get(rows, i - 1);
                if (!json_is_array(row)) {
                        r = not_a_list(cmd);
                        break;
                }
                for (size_t j = 0; j < ncol; j++) {
                        const json_t *v = json_array_get(row, j);
                        char *t = cli_cell_text(v, false);
                        if (!t) {
                                r = out_of_memory(cmd);
                                break;
                        }
                        size_t n = strlen(t);
                        if (utf8_width(t, n) > CLI_TABLE_CELL_WIDTH) {
                                /* Its first characters and "…". */
                                _cleanup_dynbuf_ dynbuf cut;
                                dynbuf_init(&cut, n + 3);
                                if (dynbuf_add(&cut, t, utf8_prefix_bytes(t, n, CLI_TABLE_CELL_WIDTH - 1)) < 0 ||
                                    dynbuf_add(&cut, "\xe2\x80\xa6", 3) < 0) {
                                        free(t);
                                        r = out_of_memory(cmd);
                                        break;
                                }
                                free(t);
                                t = dynbuf_take(&cut, NULL);
                                if (!t) {
                                        r = out_of_memory(cmd);
                                        break;
                                }
                        }
                        cells[i * ncol + j] = t;
                        right[i * ncol + j] = i > 0 && json_is_number(v);
                        right[j] = right[j] || right[i * ncol + j]; /* the header of a column with numbers */
                        width[j] = MAX(width[j], utf8_width(t, strlen(t)));
                }
        }
        for (size_t i = 0; i < nrow && r == 0; i++) {
                fputs(indent, stdout);
                for (size_t j = 0; j < ncol; j++) {
                        const char *t = cells[i * ncol + j];
                        size_t pad = width[j] - utf8_width(t, strlen(t));
                        bool last = j + 1 == ncol;
                        if (right[i * ncol + j])
                                printf("%*s%s%s", (int) pad, "", t, last ? "" : "  ");
                        else
                                printf("%s%*s", t, last ? 0 : (int) pad + 2, "");
                }
                putchar('\n');
        }
        for (size_t i = 0; i < nrow * ncol; i++)
                free(cells[i]);
        return r;
}
