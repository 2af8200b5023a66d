/* cli-db.c: `hull db`: hull's state database moved and checked. `hull db copy --from A --to B`
 * copies every row of one store into another, empty, one (a single-node hull.db into PostgreSQL,
 * say; src/store's store_copy); `hull db check [--db DB]` prints one line per problem of a store
 * (its schema version, each session's sequence) and exits 1 when there is one. A database is
 * named as hull serve --db names it; a URL is never printed whole (it may hold a password). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli-key.h"
#include "cli.h"
#include "macro.h"
#include "store.h"

enum {
        OPT_FROM = 0x100,
        OPT_TO,
        OPT_DB,
        OPT_HOME,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"from", required_argument, NULL, OPT_FROM},
        {"to", required_argument, NULL, OPT_TO},
        {"db", required_argument, NULL, OPT_DB},
        {"home", required_argument, NULL, OPT_HOME},
        {},
};

void cli_db_help(void) {
        printf("Usage: hull db copy --from DB --to DB\n"
               "       hull db check [--db DB] [--home DIR]\n\n"
               "hull's state database (agents, environments, sessions and their events, keys, ...).\n"
               "A DB is what hull serve --db takes: an absolute path or sqlite:PATH (SQLite), or\n"
               "postgres://USER[:PASSWORD]@HOST[:PORT]/NAME or postgresql://... (PostgreSQL, its\n"
               "database made first, e.g. with createdb; hull makes the tables).\n\n"
               "  copy    every row of --from into --to, which must be empty (a new database):\n"
               "          agents with every version, environments, sessions, events with their\n"
               "          sequence numbers, conversations, keys, sandboxes, threads, named\n"
               "          environments, memory stores with their memories and versions. Stop\n"
               "          hull serve first. Exit 0, or 1 (nothing to trust in --to)\n"
               "  check   the schema version, and each session's events numbered 1..N without a gap\n"
               "          (PostgreSQL: and its counter at N); one line per problem, exit 1 if any\n\n"
               "Options:\n"
               "  --db DB      the database to check (default $HULL_DB, else $HULL_HOME/hull.db)\n"
               "  --home DIR   the state directory (default $HULL_HOME)\n"
               "Exit status: 0 done (no problem), 1 a problem or a failure, 2 a usage error or a\n"
               "database that cannot be opened.\n");
}

#define usage_error(...) cli_usage_error("db", CLI_EXIT_USAGE, __VA_ARGS__)

/* db opened; a failure reported, its exit status returned (2: named, so the caller's mistake). */
static int open_named(const char *what, const char *db, store **ret) {
        hull_error e = {0};
        char where[SBX_PATH_MAX];
        store_url_describe(db, where, sizeof(where));
        if (cli_db_check(db, &e) < 0)
                return usage_error("%s: %s", what, e.msg);
        if (store_open(db, ret, &e) < 0) {
                cli_error("db", "%s %s: %s", what, where, e.msg);
                return CLI_EXIT_USAGE;
        }
        return 0;
}

static void copied(void *ud, const char *table, size_t rows) {
        (void) ud;
        printf("%-18s %zu rows\n", table, rows);
}

static int db_copy(const char *from, const char *to) {
        if (!from || !to)
                return usage_error("copy wants --from DB and --to DB%s", "");
        if (strcmp(from, to) == 0)
                return usage_error("--from and --to are the same database%s", "");
        _cleanup_store_ store *src = NULL;
        _cleanup_store_ store *dst = NULL;
        int r = open_named("--from", from, &src);
        if (r != 0 || (r = open_named("--to", to, &dst)) != 0)
                return r;
        hull_error e = {0};
        if (store_copy(src, dst, copied, NULL, &e) < 0) {
                cli_report("db", &e);
                return CLI_EXIT_FAILURE;
        }
        char where[SBX_PATH_MAX];
        store_url_describe(to, where, sizeof(where));
        printf("copied into %s (%s)\n", where, store_backend_name(dst));
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

static int db_check(const char *db, const char *home_dir) {
        hull_error e = {0};
        char home[SBX_PATH_MAX];
        _cleanup_store_ store *s = NULL;
        bool given = false;
        if (!db && !getenv("HULL_DB") && cli_home(home_dir, home, &e) < 0) {
                cli_report("db", &e);
                return CLI_EXIT_USAGE;
        }
        if (cli_store_open_db(db, home, &s, &given, &e) < 0) {
                cli_report("db", &e);
                return CLI_EXIT_USAGE;
        }
        _cleanup_(json_decrefp) json_t *problems = NULL;
        if (store_check(s, &problems, &e) < 0) {
                cli_report("db", &e);
                return CLI_EXIT_FAILURE;
        }
        size_t i;
        json_t *p;
        json_array_foreach(problems, i, p) printf("%s\n", json_string_value(p));
        if (json_array_size(problems) == 0)
                printf("ok: %s schema version %d, every session's events numbered without a gap\n",
                       store_backend_name(s), store_user_version(s));
        if (fflush(stdout) != 0)
                return CLI_EXIT_FAILURE;
        return json_array_size(problems) ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

int cli_db_main(int argc, char **argv) {
        if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                if (argc < 2)
                        return usage_error("which one: copy or check%s", "");
                cli_db_help();
                return CLI_EXIT_OK;
        }
        const char *sub = argv[1], *from = NULL, *to = NULL, *db = NULL, *home_dir = NULL;
        bool copy = strcmp(sub, "copy") == 0;
        if (!copy && strcmp(sub, "check") != 0)
                return usage_error("unknown subcommand '%s' (copy or check)", sub);
        argc--;
        argv++;
        optind = 1;
        opterr = 0;
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        cli_db_help();
                        return CLI_EXIT_OK;
                case OPT_FROM:
                case OPT_TO:
                        if (!copy)
                                return usage_error("--from and --to go with 'copy'%s", "");
                        *(c == OPT_FROM ? &from : &to) = optarg;
                        break;
                case OPT_DB:
                case OPT_HOME:
                        if (copy)
                                return usage_error("--db and --home go with 'check' (copy takes --from and --to)%s",
                                                   "");
                        *(c == OPT_DB ? &db : &home_dir) = optarg;
                        break;
                case '?':
                default:
                        return usage_error("option '%s' is unknown or lacks its value", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return usage_error("unexpected argument '%s'", argv[optind]);
        return copy ? db_copy(from, to) : db_check(db, home_dir);
}
