/* cli-options.c: a command's options parsed from, and its help printed from, one table
 * (cli-options.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-options.h"
#include "cli.h"
#include "macro.h"

#define OPTION_VAL_BASE 0x100 /* getopt's val of row i: OPTION_VAL_BASE + i */

int cli_options_parse(const cli_options *o, int argc, char **argv, void *ctx, bool *ret_done) {
        _cleanup_free_ struct option *longopts = calloc(o->n + 2, sizeof(struct option));
        size_t k = 0;
        int c;
        if (!longopts) {
                cli_error(o->cmd, "out of memory");
                return CLI_EXIT_FAILURE;
        }
        longopts[k++] = (struct option){"help", no_argument, NULL, 'h'};
        for (size_t i = 0; i < o->n; i++)
                if (o->table[i].name)
                        longopts[k++] =
                                (struct option){o->table[i].name, o->table[i].arg ? required_argument : no_argument,
                                                NULL, OPTION_VAL_BASE + (int) i};
        *ret_done = false;
        optind = 0; /* GNU getopt: start afresh */
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
                if (c == 'h') {
                        o->help();
                        *ret_done = true;
                        return CLI_EXIT_OK;
                }
                if (c < OPTION_VAL_BASE || (size_t) (c - OPTION_VAL_BASE) >= o->n)
                        /* getopt has moved past the offending argument. */
                        return cli_usage_error(o->cmd, o->usage_status, "option '%s' is unknown or lacks its value",
                                               argv[optind - 1]);
                const cli_option *row = &o->table[c - OPTION_VAL_BASE];
                int r = row->set(ctx, row->arg ? optarg : NULL);
                if (r)
                        return r;
        }
        return 0;
}

/* text with each "%u" replaced by the next of values, and each line after the first indented by
 * indent spaces. */
static void print_help_text(const char *text, const unsigned values[2], unsigned indent) {
        size_t next = 0;
        for (const char *p = text; *p; p++) {
                if (p[0] == '%' && p[1] == 'u' && next < 2) {
                        printf("%u", values[next++]);
                        p++;
                } else if (*p == '\n' && p[1] && indent) {
                        printf("\n%*s", (int) indent, "");
                } else
                        putchar(*p);
        }
}

void cli_options_help(const cli_options *o) {
        for (size_t i = 0; i < o->n; i++) {
                const cli_option *row = &o->table[i];
                if (!row->help)
                        continue;
                if (!row->name) {
                        print_help_text(row->help, row->values, 0);
                        continue;
                }
                size_t len = 2 + strlen(row->name) + (row->arg ? 1 + strlen(row->arg) : 0);
                printf("  --%s%s%s", row->name, row->arg ? " " : "", row->arg ? row->arg : "");
                /* padded to the column and a space, or two spaces after a longer one */
                printf("%*s", len <= o->width ? (int) (o->width - len + 1) : 2, "");
                print_help_text(row->help, row->values, o->width + 3);
                putchar('\n');
        }
}
