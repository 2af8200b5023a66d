/* cli-options.h: a command's options as one table (name, argument, what it sets, help), parsed
 * with getopt_long and printed as the help's option list. For commands with no subcommand (hull
 * exec, hull serve). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct cli_option {
        const char *name; /* the long option without "--"; NULL: a row of help text only */
        const char *arg;  /* its argument as the help names it ("SECONDS"); NULL: a flag */
        /* Store arg (NULL for a flag) in ctx, the command's own state. Returns 0, or the exit
         * status of a usage error after printing it. */
        int (*set)(void *ctx, const char *arg);
        /* What it does; lines after the first start at the description's column. NULL: not in
         * the help (an alias). For a row of text: printed as it is. Each "%u" is replaced by the
         * next of values. */
        const char *help;
        unsigned values[2];
} cli_option;

/* How a command lays out and reports its options. */
typedef struct cli_options {
        const char *cmd;         /* in messages: "hull: CMD: ..." */
        int usage_status;        /* the exit status of a usage error */
        void (*help)(void);      /* the command's --help */
        const cli_option *table; /* in the help's order */
        size_t n;                /* rows of table */
        unsigned width;          /* of the help's option column ("--name ARG"), after 2 spaces */
} cli_options;

/* Parse argv's options (-h and --help print the help) until the first operand (getopt's '+'), each
 * through its row's set with ctx. Returns 0 with optind at the first operand (*ret_done false),
 * 0 after the help (*ret_done true), the status of a usage error (printed: an unknown option, a
 * missing value, or what set refused), or CLI_EXIT_FAILURE out of memory. */
int cli_options_parse(const cli_options *o, int argc, char **argv, void *ctx, bool *ret_done);

/* Print the table as a help's option list: "  --name ARG" padded to the column, then the help. */
void cli_options_help(const cli_options *o);
