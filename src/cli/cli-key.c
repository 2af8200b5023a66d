/* cli-key.c: `hull key create|list|rm`: the API keys of hull serve's /v1 API. A key is "hull_" and
 * 64 hex digits from getrandom (auth_token_new); $HULL_HOME/hull.db keeps only its SHA-256 (and
 * its first characters, to tell keys apart). Works whether hull serve runs or not: the database
 * is SQLite in WAL mode, shared with the daemon. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "auth.h"
#include "cli-key.h"
#include "cli.h"
#include "dlib.h"
#include "fs-util.h"
#include "home.h"
#include "macro.h"
#include "v1-work.h"

enum {
        OPT_NAME = 0x100,
        OPT_HOME,
        OPT_JSON,
        OPT_DB,
        OPT_ENVIRONMENT,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"name", required_argument, NULL, OPT_NAME},
        {"home", required_argument, NULL, OPT_HOME},
        {"json", no_argument, NULL, OPT_JSON},
        {"db", required_argument, NULL, OPT_DB},
        {"environment", required_argument, NULL, OPT_ENVIRONMENT},
        {},
};

void cli_key_help(void) {
        printf("Usage: hull key create [--name NAME] [--environment ENV_ID] [--home DIR] [--db DB]\n"
               "       hull key list [--json] [--home DIR] [--db DB]\n"
               "       hull key rm ID [--home DIR] [--db DB]\n\n"
               "The API keys of hull serve's /v1 API (the Claude Managed Agents compatible one), kept in\n"
               "$HULL_HOME/hull.db as their SHA-256 only. While no key exists, /v1 is open on loopback;\n"
               "once one does, every /v1 request needs 'x-api-key: KEY' or 'Authorization: Bearer KEY'.\n"
               "These keys are what /v1 checks; hull serve accepts them and the bearer tokens of\n"
               "'hull token new' (its --tokens file) alike. Works with or without a running hull serve.\n\n"
               "  create   make a key: the key is printed once on stdout, its id and name on stderr\n"
               "  list     the keys: id, created, name, the key's first characters\n"
               "  rm ID    delete a key (requests with it are refused from then on)\n\n"
               "Options:\n"
               "  --name NAME  a name to tell the key apart (1 to %u printable characters)\n"
               "  --environment ENV_ID\n"
               "               an environment key instead: for the self-hosted workers of that\n"
               "               self_hosted environment (hull worker, the SDKs' workers); it polls\n"
               "               its work queue and serves its sessions, nothing else. Printed on the\n"
               "               last line of stdout, once; only its SHA-256 is stored\n"
               "  --home DIR   the state directory (default $HULL_HOME, see docs/AGENT.md)\n"
               "  --db DB      the database hull serve uses: a path, sqlite:PATH or postgres://...\n"
               "               (default $HULL_DB, else $HULL_HOME/hull.db)\n"
               "  --json       list as a JSON array\n",
               STORE_NAME_MAX - 1);
}

#define usage_error(...) cli_usage_error("key", CLI_EXIT_USAGE, __VA_ARGS__)

int cli_home(const char *dir, char home[static SBX_PATH_MAX], hull_error *e) {
        if (dir) {
                if (dir[0] != '/')
                        return hull_fail(e, -EINVAL, "--home wants an absolute path, got '%.256s'", dir);
                if (strlen(dir) >= SBX_PATH_MAX)
                        return hull_fail(e, -ENAMETOOLONG, "--home is over %u bytes", SBX_PATH_MAX - 1);
                snprintf(home, SBX_PATH_MAX, "%s", dir);
        } else {
                int r = home_resolve(home, e);
                if (r < 0)
                        return r;
        }
        return home_mkdir(home, 0711, true, e);
}

int cli_db_check(const char *db, hull_error *e) {
        if (store_url_is_pg(db))
                return strlen(db) < SBX_PATH_MAX ? 0 : hull_fail(e, -EINVAL, "the database URL is too long");
        const char *path = strncmp(db, "sqlite:", 7) == 0 ? db + 7 : db;
        if (path[0] != '/')
                return hull_fail(e, -EINVAL,
                                 "the database must be an absolute path, sqlite:PATH or a postgres:// URL, "
                                 "got '%.256s'",
                                 db);
        if (strlen(db) >= SBX_PATH_MAX)
                return hull_fail(e, -ENAMETOOLONG, "the database path is over %u bytes", SBX_PATH_MAX - 1);
        return 0;
}

int cli_store_open_db(const char *db, const char *home, store **ret, bool *ret_given, hull_error *e) {
        if (!db || !db[0])
                db = getenv("HULL_DB");
        bool given = db && db[0];
        if (ret_given)
                *ret_given = given;
        if (given) {
                int r = cli_db_check(db, e);
                return r < 0 ? r : store_open(db, ret, e);
        }
        char path[SBX_PATH_MAX];
        if (path_join(path, sizeof(path), home, "hull.db") < 0)
                return hull_fail(e, -ENAMETOOLONG, "%.256s/hull.db: the path is too long", home);
        return store_open(path, ret, e);
}

int cli_store_open(const char *home, store **ret, hull_error *e) {
        return cli_store_open_db(NULL, home, ret, NULL, e);
}

int cli_random_id(const char *prefix, char ret[static STORE_ID_MAX]) {
        static const char hex[] = "0123456789abcdef";
        uint8_t rnd[12];
        size_t n = strlen(prefix);
        if (n + 2 * sizeof(rnd) >= STORE_ID_MAX)
                return -ENAMETOOLONG;
        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
                return -EIO;
        memcpy(ret, prefix, n);
        for (size_t i = 0; i < sizeof(rnd); i++) {
                ret[n + 2 * i] = hex[rnd[i] >> 4];
                ret[n + 2 * i + 1] = hex[rnd[i] & 15];
        }
        ret[n + 2 * sizeof(rnd)] = '\0';
        return 0;
}

static bool name_is_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n >= STORE_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f)
                        return false;
        return true;
}

static int key_create(store *s, const char *name) {
        char token[AUTH_NEW_TOKEN_SIZE];
        store_key k = {0};
        hull_error e = {0};

        int r = cli_random_id("key_", k.id);
        if (r >= 0)
                r = auth_token_new(token, k.digest_hex);
        if (r < 0) {
                cli_error("key", "cannot make a key: %s", strerror(-r));
                return CLI_EXIT_FAILURE;
        }
        snprintf(k.name, sizeof(k.name), "%s", name ? name : "");
        snprintf(k.hint, sizeof(k.hint), "%.12s", token); /* "hull_" and 7 hex digits */
        store_now_rfc3339(k.created_at);
        r = store_key_add(s, &k, &e);
        if (r < 0) {
                explicit_bzero(token, sizeof(token));
                cli_report("key", &e);
                return CLI_EXIT_FAILURE;
        }
        printf("%s\n", token);
        explicit_bzero(token, sizeof(token));
        if (fflush(stdout) != 0) {
                cli_error("key",
                          "cannot write the key to stdout: %m (key %s was stored; remove it with "
                          "'hull key rm %s')",
                          k.id, k.id);
                return CLI_EXIT_FAILURE;
        }
        fprintf(stderr, "hull: key: %s%s%s made; the key above is shown only once (send it as 'x-api-key')\n", k.id,
                name ? ", name " : "", name ? name : "");
        return CLI_EXIT_OK;
}

/* An environment key (v1-work.h): the self-hosted workers' credential for one environment. */
static int key_create_env(store *s, const char *env_id) {
        char key[V1_WORK_KEY_SIZE];
        v1_err err = {0};
        if (v1_work_key_new(s, env_id, key, &err) < 0) {
                cli_error("key", "%s", err.msg);
                return err.status == 400 || err.status == 404 ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
        }
        printf("%s\n", key);
        explicit_bzero(key, sizeof(key));
        if (fflush(stdout) != 0) {
                cli_error("key", "cannot write the key to stdout: %m");
                return CLI_EXIT_FAILURE;
        }
        fprintf(stderr,
                "hull: key: an environment key for %s made; it is shown only once (hull worker --key-file, or the "
                "SDKs' environmentKey)\n",
                env_id);
        return CLI_EXIT_OK;
}

static int key_list(store *s, bool json) {
        _cleanup_free_ store_key *v = NULL;
        size_t n = 0;
        hull_error e = {0};
        if (store_key_list(s, &v, &n, &e) < 0) {
                cli_report("key", &e);
                return CLI_EXIT_FAILURE;
        }
        if (json) {
                _cleanup_(json_decrefp) json_t *a = json_array();
                for (size_t i = 0; a && i < n; i++)
                        if (json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:s,s:s}", "id", v[i].id, "type",
                                                               "api_key", "name", v[i].name, "created_at",
                                                               v[i].created_at, "hint", v[i].hint)) < 0) {
                                cli_error("key", "out of memory");
                                return CLI_EXIT_FAILURE;
                        }
                if (!a || json_dumpf(a, stdout, JSON_INDENT(2)) < 0) {
                        cli_error("key", "out of memory");
                        return CLI_EXIT_FAILURE;
                }
                putchar('\n');
        } else
                for (size_t i = 0; i < n; i++)
                        printf("%s  %s  %s...  %s\n", v[i].id, v[i].created_at, v[i].hint,
                               v[i].name[0] ? v[i].name : "-");
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

static int key_rm(store *s, const char *id) {
        hull_error e = {0};
        int r = store_key_delete(s, id, &e);
        if (r == -ENOENT) {
                cli_error("key", "no key %s ('hull key list' shows them)", id);
                return CLI_EXIT_FAILURE;
        }
        if (r < 0) {
                cli_report("key", &e);
                return CLI_EXIT_FAILURE;
        }
        fprintf(stderr, "hull: key: %s deleted\n", id);
        return CLI_EXIT_OK;
}

int cli_key_main(int argc, char **argv) {
        const char *name = NULL, *home_dir = NULL, *db = NULL, *env = NULL;
        bool json = false, given = false;
        int c;

        if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                if (argc < 2)
                        return usage_error("which one: create, list or rm%s", "");
                cli_key_help();
                return CLI_EXIT_OK;
        }
        const char *sub = argv[1];
        if (strcmp(sub, "create") != 0 && strcmp(sub, "list") != 0 && strcmp(sub, "rm") != 0)
                return usage_error("unknown subcommand '%s' (create, list or rm)", sub);
        argc--;
        argv++;
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        cli_key_help();
                        return CLI_EXIT_OK;
                case OPT_NAME:
                        if (strcmp(sub, "create") != 0)
                                return usage_error("--name goes with 'create'%s", "");
                        if (!name_is_valid(optarg))
                                return usage_error("--name wants 1 to %u printable characters", STORE_NAME_MAX - 1);
                        name = optarg;
                        break;
                case OPT_ENVIRONMENT:
                        if (strcmp(sub, "create") != 0)
                                return usage_error("--environment goes with 'create'%s", "");
                        env = optarg;
                        break;
                case OPT_HOME:
                        home_dir = optarg;
                        break;
                case OPT_DB:
                        db = optarg;
                        break;
                case OPT_JSON:
                        if (strcmp(sub, "list") != 0)
                                return usage_error("--json goes with 'list'%s", "");
                        json = true;
                        break;
                case '?':
                default:
                        return usage_error("option '%s' is unknown or lacks its value", argv[optind - 1]);
                }
        }
        bool rm = strcmp(sub, "rm") == 0;
        if (env && name)
                return usage_error("--name goes with an API key, not --environment%s", "");
        if (rm && optind >= argc)
                return usage_error("'rm' wants the key's id (from 'hull key list')%s", "");
        if (argc - optind > (rm ? 1 : 0))
                return usage_error("unexpected argument '%s'", argv[optind + (rm ? 1 : 0)]);
        if (rm && (strlen(argv[optind]) >= STORE_ID_MAX || strncmp(argv[optind], "key_", 4) != 0))
                return usage_error("'%.80s' is not a key id (key_...; 'hull key list' shows them)", argv[optind]);

        char home[SBX_PATH_MAX];
        _cleanup_store_ store *s = NULL;
        hull_error e = {0};
        int r = cli_home(home_dir, home, &e);
        if (r < 0) {
                cli_report("key", &e);
                return r == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
        }
        if (strcmp(sub, "create") == 0)
                r = dlib_load(DLIB_CRYPTO, &e); /* for the digest */
        if (r >= 0)
                r = cli_store_open_db(db, home, &s, &given, &e);
        if (r < 0) {
                cli_report("key", &e);
                return given ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
        }
        if (rm)
                return key_rm(s, argv[optind]);
        if (strcmp(sub, "list") == 0)
                return key_list(s, json);
        return env ? key_create_env(s, env) : key_create(s, name);
}
