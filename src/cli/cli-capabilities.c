/* cli-capabilities.c: `hull capabilities`: the /v1 API's capability table
 * (api-v1-capabilities.h) printed as docs/COMPATIBILITY.md (--markdown), as GET
 * /v1/capabilities answers it (--json), or as one line per capability; --check holds the table
 * against the routes hull serve mounts. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-v1-capabilities.h"
#include "cli.h"
#include "macro.h"

void cli_capabilities_help(void) {
        printf("Usage: hull capabilities [--markdown | --json | --check]\n\n"
               "What hull serve's /v1 API supports (the Claude Managed Agents API), from the one table in\n"
               "src/api/cmav1/api-v1-capabilities.c: each area and capability supported, partial or\n"
               "unsupported, with the reason. A running server answers the same at GET /v1/capabilities.\n\n"
               "Options:\n"
               "  --markdown  print docs/COMPATIBILITY.md (hull capabilities --markdown > docs/COMPATIBILITY.md)\n"
               "  --json      print the table as GET /v1/capabilities answers it\n"
               "  --check     check the table against the routes hull serve mounts (exit 1 naming a mismatch)\n");
}

int cli_capabilities_main(int argc, char **argv) {
        static const struct option options[] = {{"help", no_argument, NULL, 'h'},
                                                {"markdown", no_argument, NULL, 'm'},
                                                {"json", no_argument, NULL, 'j'},
                                                {"check", no_argument, NULL, 'c'},
                                                {}};
        int c, mode = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        cli_capabilities_help();
                        return 0;
                case 'm':
                case 'j':
                case 'c':
                        if (mode && mode != c)
                                return cli_usage_error("capabilities", CLI_EXIT_USAGE,
                                                       "--markdown, --json and --check go alone");
                        mode = c;
                        break;
                default:
                        return cli_usage_error("capabilities", CLI_EXIT_USAGE, "unknown option");
                }
        }
        if (optind < argc)
                return cli_usage_error("capabilities", CLI_EXIT_USAGE, "unexpected argument '%s'", argv[optind]);
        if (mode == 'c') {
                hull_error e = {0};
                if (api_v1_capabilities_check(&e) < 0) {
                        cli_report("capabilities", &e);
                        return 1;
                }
                printf("the capability table matches the mounted /v1 routes\n");
                return 0;
        }
        if (mode == 'm' || mode == 'j') {
                _cleanup_free_ char *s = NULL;
                if (mode == 'm')
                        s = api_v1_capabilities_markdown();
                else {
                        json_t *v = api_v1_capabilities_json();
                        s = v ? json_dumps(v, JSON_INDENT(2)) : NULL;
                        json_decref(v);
                }
                if (!s) {
                        cli_error("capabilities", "out of memory");
                        return 1;
                }
                fputs(s, stdout);
                if (mode == 'j')
                        fputc('\n', stdout);
                return 0;
        }
        size_t n;
        const api_v1_capability *t = api_v1_capabilities(&n);
        for (size_t i = 0; i < n; i++)
                printf("%-14s %-28s %-11s %s\n", t[i].area, t[i].name, api_v1_cap_status_name(t[i].status),
                       t[i].reason ? t[i].reason : t[i].what);
        return 0;
}
