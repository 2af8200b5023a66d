/* cli-table.h: rows of a table printed as aligned text or as CSV (cli-table.c). A table is a
 * JSON array of column names and a JSON array of rows, each an array of values. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

/* One value of a row as text, a new string (free it), NULL out of memory. For people (csv
 * false): NULL for null, control characters as '?'. For CSV: null is empty, quoted when it must
 * be (RFC 4180). */
char *cli_cell_text(const json_t *v, bool csv);

/* Print columns and rows as CSV with a header on stdout. Returns 0, or CLI_EXIT_FAILURE after
 * printing "hull: CMD: ..." (out of memory, a row that is not a list). */
int cli_print_csv(const char *cmd, const json_t *columns, const json_t *rows);

/* Print the header and the rows as aligned text on stdout, each line after indent: numbers
 * right-aligned, cells cut at 40 characters. Returns as cli_print_csv. */
int cli_print_aligned(const char *cmd, const json_t *columns, const json_t *rows, const char *indent);
