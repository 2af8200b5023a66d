/* cli-token.c: `hull token new`: a fresh bearer token for hull serve, printed once, and the
 * tokens-file line that stands for it (its SHA-256, never the token), or that line appended to
 * the tokens file. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "dlib.h"
#include "cli.h"
#include "macro.h"

enum {
        OPT_SCOPE = 0x100,
        OPT_NAME,
        OPT_TOKENS,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"scope", required_argument, NULL, OPT_SCOPE},
        {"name", required_argument, NULL, OPT_NAME},
        {"tokens", required_argument, NULL, OPT_TOKENS},
        {},
};

void cli_token_help(void) {
        printf("Usage: hull token new [--scope SCOPES] [--name NAME] [--tokens FILE]\n\n"
               "Make a bearer token for 'hull serve --tokens FILE'. The token is printed once; the file\n"
               "keeps only its SHA-256.\n\n"
               "Options:\n"
               "  --scope SCOPES  comma-separated scopes (default %s, which the plimsoll procedures need;\n"
               "                  '*' grants every scope)\n"
               "  --name NAME     a name for the logs, [A-Za-z0-9._:-]{1,64}\n"
               "  --tokens FILE   append the line to FILE (created 0600) and print only the token\n\n"
               "Without --tokens, the token is printed, then the line to add to the tokens file.\n\n"
               "The /v1 API (Claude Managed Agents compatible) checks the keys of 'hull key create', kept\n"
               "in $HULL_HOME/hull.db; hull serve accepts those keys and these tokens alike.\n",
               AUTH_SCOPE_CODE_RUN);
}

#define usage_error(...) cli_usage_error("token", CLI_EXIT_USAGE, __VA_ARGS__)

/* Append line to path, on a line of its own. */
static int append_line(const char *path, const char *line) {
        _cleanup_close_ int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        struct stat st;
        char last = '\n';
        if (fd < 0 || fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        if (st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) != 1)
                return negative_errno();
        size_t len = strlen(line);
        if ((last != '\n' && write(fd, "\n", 1) != 1) || write(fd, line, len) != (ssize_t) len)
                return negative_errno();
        return fsync(fd) < 0 ? negative_errno() : 0;
}

int cli_token_main(int argc, char **argv) {
        const char *scope = AUTH_SCOPE_CODE_RUN, *name = NULL, *path = NULL;
        int c;

        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
                cli_token_help();
                return CLI_EXIT_OK;
        }
        if (argc < 2 || strcmp(argv[1], "new") != 0)
                return usage_error("the only subcommand is 'new'%s", "");
        argc--;
        argv++;
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        cli_token_help();
                        return CLI_EXIT_OK;
                case OPT_SCOPE:
                        if (!auth_scopes_are_valid(optarg))
                                return usage_error("--scope wants a comma-separated list such as code:run, got '%s'",
                                                   optarg);
                        scope = optarg;
                        break;
                case OPT_NAME:
                        if (!auth_name_is_valid(optarg))
                                return usage_error("--name wants 1 to 64 characters of [A-Za-z0-9._:-], got '%s'",
                                                   optarg);
                        name = optarg;
                        break;
                case OPT_TOKENS:
                        path = optarg;
                        break;
                case '?':
                default:
                        return usage_error("option '%s' is unknown or lacks its value", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return usage_error("unexpected argument '%s'", argv[optind]);

        char token[AUTH_NEW_TOKEN_SIZE], digest[65], line[65 + AUTH_SCOPES_MAX + AUTH_NAME_MAX + 4];
        hull_error e = {0};
        if (dlib_load(DLIB_CRYPTO, &e) < 0) { /* for the digest */
                cli_report("token", &e);
                return CLI_EXIT_FAILURE;
        }
        int r = auth_token_new(token, digest);
        if (r < 0) {
                cli_error("token", "cannot make a token: %s", strerror(-r));
                return CLI_EXIT_FAILURE;
        }
        snprintf(line, sizeof(line), "%s %s%s%s\n", digest, scope, name ? " " : "", name ? name : "");
        if (path) {
                r = append_line(path, line);
                if (r < 0) {
                        explicit_bzero(token, sizeof(token));
                        cli_error("token", "cannot append to %s: %s", path,
                                  r == -EINVAL ? "not a regular file" : strerror(-r));
                        return CLI_EXIT_FAILURE;
                }
                printf("%s\n", token);
                fprintf(stderr, "hull: token: added to %s (scope %s%s%s); the token above is shown only once\n", path,
                        scope, name ? ", name " : "", name ? name : "");
        } else
                printf("%s\n# the line for the tokens file (hull serve --tokens FILE):\n%s", token, line);
        explicit_bzero(token, sizeof(token));
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}
