/* cli-vault.c: `hull vault`: the key that seals the /v1 vaults' secrets rotated without downtime.
 * `hull vault rotate-key` puts a new random key first in $HULL_HOME/vault.key (the old ones kept
 * after it, so every envelope still opens; a running hull serve reads the file at its next seal);
 * `hull vault rekey` seals every credential sealed with an older key again with the current one,
 * after which the old lines may be removed. No key and no secret is ever printed. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli-key.h"
#include "cli.h"
#include "fs-util.h"
#include "macro.h"
#include "store.h"
#include "v1-vault.h"
#include "vault-seal.h"

enum {
        OPT_DB = 0x100,
        OPT_HOME,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"db", required_argument, NULL, OPT_DB},
        {"home", required_argument, NULL, OPT_HOME},
        {},
};

void cli_vault_help(void) {
        printf("Usage: hull vault rotate-key [--home DIR]\n"
               "       hull vault rekey [--db DB] [--home DIR]\n\n"
               "The key that seals the secrets of hull serve's /v1 vaults (AES-256-GCM) lives outside the\n"
               "database: HULL_VAULT_KEY (base64 keys, comma-separated, the current one first) or else\n"
               "$HULL_HOME/vault.key (one a line, mode 0600, made on first use).\n\n"
               "  rotate-key  put a new random key first in $HULL_HOME/vault.key, the old ones after it:\n"
               "              new secrets are sealed with it at once (hull serve reads the file at each\n"
               "              use: no restart), old ones still open and are sealed anew when next used\n"
               "  rekey       seal every credential still sealed with an older key with the current one;\n"
               "              prints how many. Then the old keys' lines may be removed from the file\n\n"
               "Options:\n"
               "  --db DB      the database (default $HULL_DB, else $HULL_HOME/hull.db)\n"
               "  --home DIR   the state directory (default $HULL_HOME)\n"
               "Exit status: 0 done, 1 a failure, 2 a usage error.\n");
}

#define usage_error(...) cli_usage_error("vault", CLI_EXIT_USAGE, __VA_ARGS__)

static int rotate(const char *home) {
        hull_error e = {0};
        if (getenv("HULL_VAULT_KEY") && getenv("HULL_VAULT_KEY")[0]) {
                cli_error("vault",
                          "HULL_VAULT_KEY holds the keys: put a new key first in it (the old ones after it, "
                          "comma-separated; `openssl rand -base64 32` makes one), restart, then hull vault rekey");
                return CLI_EXIT_FAILURE;
        }
        _cleanup_(vault_keyring_wipep) vault_keyring k = {0};
        if (vault_keyring_load(home, &k, &e) < 0) { /* makes the file when missing */
                cli_report("vault", &e);
                return CLI_EXIT_FAILURE;
        }
        char path[SBX_PATH_MAX], tmp[SBX_PATH_MAX + 16], old[VAULT_KEY_FILE_MAX + 2], id[VAULT_KEY_ID_MAX];
        if (path_join(path, sizeof(path), home, "vault.key") < 0 ||
            (size_t) snprintf(tmp, sizeof(tmp), "%s.rotate", path) >= sizeof(tmp))
                return usage_error("--home is too long%s", "");
        _cleanup_close_ int in = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        ssize_t n = in < 0 ? -errno : loop_read(in, old, sizeof(old) - 1);
        if (n < 0 || (size_t) n >= sizeof(old) - 1) {
                cli_error("vault", "cannot read %s%s", path, n < 0 ? "" : ": over 4 KiB");
                return CLI_EXIT_FAILURE;
        }
        old[n] = '\0';
        if (k.n >= VAULT_KEYS_MAX) {
                cli_error("vault", "%s holds %u keys already: run hull vault rekey and remove the oldest lines first",
                          path, VAULT_KEYS_MAX);
                return CLI_EXIT_FAILURE;
        }
        _cleanup_secret_ char *b64 = NULL;
        if (vault_key_generate(&b64, id, &e) < 0) {
                cli_report("vault", &e);
                return CLI_EXIT_FAILURE;
        }
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        int r = fd < 0 ? -errno : loop_write(fd, b64, strlen(b64));
        r = r < 0 ? r : loop_write(fd, "\n", 1);
        r = r < 0 ? r : loop_write(fd, old, (size_t) n);
        r = r < 0 ? r : (fsync(fd) < 0 ? -errno : 0);
        r = r < 0 ? r : (rename(tmp, path) < 0 ? -errno : 0);
        explicit_bzero(old, sizeof(old));
        if (r < 0) {
                (void) unlink(tmp);
                cli_error("vault", "cannot write %s: %s", path, strerror(-r));
                return CLI_EXIT_FAILURE;
        }
        printf("new key %s first in %s (the older %zu kept after it); run hull vault rekey, then the old "
               "lines may go\n",
               id, path, k.n);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

static int rekey(const char *db, const char *home) {
        hull_error e = {0};
        _cleanup_store_ store *s = NULL;
        bool given = false;
        if (cli_store_open_db(db, home, &s, &given, &e) < 0) {
                cli_report("vault", &e);
                return CLI_EXIT_USAGE;
        }
        size_t n = 0;
        if (v1_vault_rekey(s, &n, &e) < 0) {
                cli_report("vault", &e);
                return CLI_EXIT_FAILURE;
        }
        printf("%zu credential%s sealed again with the current key\n", n, n == 1 ? "" : "s");
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

int cli_vault_main(int argc, char **argv) {
        if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                if (argc < 2)
                        return usage_error("which one: rotate-key or rekey%s", "");
                cli_vault_help();
                return CLI_EXIT_OK;
        }
        const char *sub = argv[1], *db = NULL, *home_dir = NULL;
        bool rot = strcmp(sub, "rotate-key") == 0;
        if (!rot && strcmp(sub, "rekey") != 0)
                return usage_error("unknown subcommand '%s' (rotate-key or rekey)", sub);
        argc--;
        argv++;
        optind = 1;
        opterr = 0;
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        cli_vault_help();
                        return CLI_EXIT_OK;
                case OPT_DB:
                        if (rot)
                                return usage_error("--db goes with 'rekey'%s", "");
                        db = optarg;
                        break;
                case OPT_HOME:
                        home_dir = optarg;
                        break;
                case '?':
                default:
                        return usage_error("option '%s' is unknown or lacks its value", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return usage_error("unexpected argument '%s'", argv[optind]);
        char home[SBX_PATH_MAX];
        hull_error e = {0};
        if (cli_home(home_dir, home, &e) < 0) {
                cli_report("vault", &e);
                return CLI_EXIT_USAGE;
        }
        if (home_dir && setenv("HULL_HOME", home, 1) < 0) /* the engine reads the key ring from there */
                return CLI_EXIT_FAILURE;
        return rot ? rotate(home) : rekey(db, home);
}
