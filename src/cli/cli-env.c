/* cli-env.c: `hull env create|list|show|build|check|rm|gc` (issue 13): named, versioned
 * environments in $HULL_HOME/hull.db (src/store) and their layers in $HULL_HOME/layers/
 * (src/env/env-layer). Also what hull exec and hull run use to find an environment's layer. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli-env.h"
#include "cli-key.h"
#include "cli.h"
#include "env-layer.h"
#include "env-spec.h"
#include "macro.h"
#include "parse-util.h"
#include "svc-env.h"

enum {
        OPT_APT = 0x100,
        OPT_NPM,
        OPT_PIP,
        OPT_NET,
        OPT_ALLOW_HOST,
        OPT_ALLOW_PM,
        OPT_ALLOW_MCP,
        OPT_FILE,
        OPT_HOME,
        OPT_JSON,
        OPT_VERSION,
        OPT_NO_CHECK,
        OPT_SPEC,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"apt", required_argument, NULL, OPT_APT},
        {"npm", required_argument, NULL, OPT_NPM},
        {"pip", required_argument, NULL, OPT_PIP},
        {"net", required_argument, NULL, OPT_NET},
        {"allow-host", required_argument, NULL, OPT_ALLOW_HOST},
        {"allow-package-managers", no_argument, NULL, OPT_ALLOW_PM},
        {"allow-mcp-servers", no_argument, NULL, OPT_ALLOW_MCP},
        {"file", required_argument, NULL, OPT_FILE},
        {"home", required_argument, NULL, OPT_HOME},
        {"json", no_argument, NULL, OPT_JSON},
        {"version", required_argument, NULL, OPT_VERSION},
        {"no-check", no_argument, NULL, OPT_NO_CHECK},
        {"spec", required_argument, NULL, OPT_SPEC},
        {},
};

void cli_env_help(void) {
        printf("Usage: hull env create NAME [--apt PKG]... [--npm PKG]... [--pip PKG]...\n"
               "                            [--net none|limited|unrestricted] [--allow-host HOST]...\n"
               "                            [--allow-package-managers] [--allow-mcp-servers]\n"
               "       hull env create NAME --file SPEC.json\n"
               "       hull env list [--json]\n"
               "       hull env show NAME [--version N]\n"
               "       hull env build NAME [--no-check]\n"
               "       hull env build --file SPEC.json | --spec JSON [--no-check]   (a spec's layer, no name)\n"
               "       hull env check NAME\n"
               "       hull env rm NAME\n"
               "       hull env gc\n\n"
               "Environments: named, versioned specs of packages and networking for sandboxes. The\n"
               "packages are installed once into a layer ($HULL_HOME/layers/DIGEST, DIGEST the SHA-256 of\n"
               "the sorted package list) that every sandbox of the environment sees read-only at /env,\n"
               "with PATH, LD_LIBRARY_PATH, NODE_PATH and PYTHONPATH pointing into it. Use one with\n"
               "'hull exec --env NAME', 'hull run --env NAME', or a session's environment.\n\n"
               "  create  a new environment, or a new version of NAME (the same spec again changes nothing)\n"
               "  list    the environments (newest versions) and whether their layer is built\n"
               "  show    an environment's spec, version and layer\n"
               "  build   install its packages into its layer (apt and dpkg-deb, npm, pip), then check it\n"
               "  check   the preflight: each apt package's programs on PATH, each npm package\n"
               "          require()-able, each pip package importable; says what failed and why\n"
               "  rm      delete every version, and the layers no environment names any more\n"
               "  gc      delete the layers no environment names and what failed builds left\n\n"
               "Packages: apt 'jq' or 'jq=1.6-2.1'; npm 'is-number' or 'is-number@7.0.0'; pip\n"
               "'requests' or 'requests==2.31.0'. A spec file is JSON: {\"packages\": {\"apt\": [...],\n"
               "\"npm\": [...], \"pip\": [...]}, \"networking\": {\"type\": \"limited\", \"allowed_hosts\": [...],\n"
               "\"allow_package_managers\": true}} (the config of a /v1 environment).\n\n"
               "Options:\n"
               "  --home DIR  the state directory (default $HULL_HOME)\n"
               "  --json      list as a JSON array\n");
}

#define usage_error(...) cli_usage_error("env", CLI_EXIT_USAGE, __VA_ARGS__)

/* The error of a failed call, without the "env: " its layer put first (cli_error says it). */
static void env_report(const hull_error *e) {
        cli_error("env", "%s", e->msg + (strncmp(e->msg, "env: ", 5) == 0 ? 5 : 0));
}

static int read_file(const char *path, char **ret, size_t *ret_len, hull_error *e) {
        FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
        if (!f)
                return hull_err(e, negative_errno(), "env: cannot open %s", path);
        char *buf = malloc(ENV_SPEC_TEXT_MAX + 1);
        size_t n = buf ? fread(buf, 1, ENV_SPEC_TEXT_MAX + 1, f) : 0;
        bool bad = ferror(f);
        if (f != stdin)
                fclose(f);
        if (!buf)
                return hull_err(e, -ENOMEM, "env: out of memory");
        if (bad || n > ENV_SPEC_TEXT_MAX) {
                free(buf);
                return hull_fail(e, -EINVAL, "env: %s: %s", path,
                                 bad ? "cannot read it" : "over 1 MiB: a spec is smaller than that");
        }
        *ret = buf;
        *ret_len = n;
        return 0;
}

/* The spec stored in an environment's object. */
static int spec_of(const json_t *obj, env_spec *ret, hull_error *e) {
        return env_spec_from_json(json_object_get(obj, "spec"), ret, e);
}

static void note_build(void *ud, const char *name, const char *digest) {
        (void) ud;
        fprintf(stderr, "hull: env: building the layer of %s (%.12s)...\n", name, digest);
}

int cli_env_resolve(const char *home, const char *name, bool build, svc_env *ret, env_spec *ret_spec, hull_error *e) {
        _cleanup_(env_spec_done) env_spec spec = {0};
        int64_t version;
        char v[24];
        env_build_info info = {0};
        int r;
        if ((r = svc_env_named(home, name, &spec, &version, e)) < 0)
                return r;
        snprintf(v, sizeof(v), "%" PRId64, version);
        svc_env_opts o = {.home = home,
                          .name = name,
                          .version = v,
                          .describe = true,
                          .build = build,
                          .rules = {.unrestricted = SVC_ENV_UNRESTRICTED_ALLOW},
                          .on_build = note_build,
                          .build_info = &info};
        if ((r = svc_env_resolve(&spec, &o, ret, e)) < 0) {
                if (info.log[0]) /* what the failed step said */
                        fprintf(stderr, "%s\n", info.log);
                return r;
        }
        if (ret_spec) {
                *ret_spec = spec;
                spec = (env_spec){0};
        }
        return 0;
}

int cli_env_layer(const char *home, const char *name, bool build, char ret_layer[SBX_PATH_MAX], env_spec *ret_spec,
                  bool *ret_built, char *ret_desc, hull_error *e) {
        _cleanup_(svc_env_done) svc_env env = {.policy.log_fd = -1};
        int r = cli_env_resolve(home, name, build, &env, ret_spec, e);
        if (r < 0)
                return r;
        memcpy(ret_layer, env.layer, SBX_PATH_MAX);
        if (ret_built)
                *ret_built = env.built;
        if (ret_desc)
                memcpy(ret_desc, env.desc, ENV_DESC_MAX);
        return 0;
}

static int env_create(store *db, const char *home, const char *name, env_spec *spec) {
        hull_error e = {0};
        char digest[ENV_DIGEST_HEX] = "";
        (void) home;
        if (env_spec_has_packages(spec) && env_layer_digest(spec, digest, &e) < 0) {
                env_report(&e);
                return CLI_EXIT_FAILURE;
        }
        _cleanup_(json_decrefp) json_t *js = env_spec_to_json(spec);
        _cleanup_(json_decrefp) json_t *obj = NULL;
        if (!js) {
                cli_error("env", "out of memory");
                return CLI_EXIT_FAILURE;
        }
        if (store_env_put(db, name, js, digest, &obj, &e) < 0) {
                env_report(&e);
                return CLI_EXIT_FAILURE;
        }
        printf("%s version %" JSON_INTEGER_FORMAT "%s%.12s\n", name,
               json_integer_value(json_object_get(obj, "version")), digest[0] ? " layer " : " (no packages)", digest);
        return CLI_EXIT_OK;
}

static const char *layer_state(const char *home, const char *digest) {
        if (!digest || !digest[0])
                return "-";
        return env_layer_exists(home, digest) ? "built" : "not built";
}

static int env_list(store *db, const char *home, bool json) {
        hull_error e = {0};
        _cleanup_(json_decrefp) json_t *a = NULL;
        if (store_env_list(db, false, &a, &e) < 0) {
                env_report(&e);
                return CLI_EXIT_FAILURE;
        }
        size_t i;
        json_t *o;
        if (json) {
                json_array_foreach(a, i, o) {
                        const char *d = json_string_value(json_object_get(o, "digest"));
                        json_object_set_new(o, "layer", json_string(layer_state(home, d)));
                }
                if (json_dumpf(a, stdout, JSON_INDENT(2)) < 0)
                        return CLI_EXIT_FAILURE;
                putchar('\n');
                return CLI_EXIT_OK;
        }
        json_array_foreach(a, i, o) {
                _cleanup_(env_spec_done) env_spec s = {0};
                if (spec_of(o, &s, &e) < 0) {
                        env_report(&e);
                        continue;
                }
                const char *d = json_string_value(json_object_get(o, "digest"));
                printf("%-20s v%-3" JSON_INTEGER_FORMAT " apt %zu, npm %zu, pip %zu  net %-12s layer %.12s %s\n",
                       json_string_value(json_object_get(o, "name")), json_integer_value(json_object_get(o, "version")),
                       s.n_pkgs[ENV_PM_APT], s.n_pkgs[ENV_PM_NPM], s.n_pkgs[ENV_PM_PIP], env_net_to_string(s.net),
                       d && d[0] ? d : "-", layer_state(home, d));
        }
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

static int env_show(store *db, const char *home, const char *name, int64_t version) {
        hull_error e = {0};
        _cleanup_(json_decrefp) json_t *o = NULL;
        int r = store_env_get(db, name, version, &o, &e);
        if (r == -ENOENT) {
                cli_error("env", "no environment %s%s ('hull env list' shows them)", name,
                          version ? " of that version" : "");
                return CLI_EXIT_FAILURE;
        }
        if (r < 0) {
                env_report(&e);
                return CLI_EXIT_FAILURE;
        }
        const char *d = json_string_value(json_object_get(o, "digest"));
        char path[SBX_PATH_MAX] = "";
        if (d && d[0])
                (void) env_layer_path(home, d, path, NULL);
        json_object_set_new(o, "layer",
                            json_pack("{s:s,s:s?}", "state", layer_state(home, d), "path", path[0] ? path : NULL));
        if (json_dumpf(o, stdout, JSON_INDENT(2)) < 0)
                return CLI_EXIT_FAILURE;
        putchar('\n');
        return CLI_EXIT_OK;
}

static int env_check_run(const char *home, const char *name, const env_spec *s) {
        hull_error e = {0};
        _cleanup_free_ char *report = NULL;
        bool ok = false;
        if (!env_spec_has_packages(s)) {
                printf("%s: no packages, nothing to check\n", name);
                return CLI_EXIT_OK;
        }
        if (env_layer_check(home, s, &report, &ok, &e) < 0) {
                env_report(&e);
                return CLI_EXIT_FAILURE;
        }
        fputs(report, stdout);
        if (!ok) {
                cli_error("env", "the preflight of %s failed: see the FAILED lines above", name);
                return CLI_EXIT_FAILURE;
        }
        printf("%s: every package is there\n", name);
        return CLI_EXIT_OK;
}

static int env_build(const char *home, const char *name, bool check) {
        hull_error e = {0};
        _cleanup_(env_spec_done) env_spec s = {0};
        char layer[SBX_PATH_MAX];
        bool built = false;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (cli_env_layer(home, name, true, layer, &s, &built, NULL, &e) < 0) {
                env_report(&e);
                return CLI_EXIT_FAILURE;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (built)
                printf("%s: layer built in %.1f s: %s\n", name,
                       (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9, layer);
        else if (layer[0])
                printf("%s: layer already built: %s\n", name, layer);
        else
                printf("%s: no packages, no layer\n", name);
        fflush(stdout);
        return check ? env_check_run(home, name, &s) : CLI_EXIT_OK;
}

/* Every digest an environment names: hull's (newest versions) and /v1's with packages. */
static int named_digests(store *db, json_t **ret, hull_error *e) {
        _cleanup_(json_decrefp) json_t *a = NULL, *keep = json_array();
        int r = store_env_list(db, false, &a, e);
        if (r < 0)
                return r;
        size_t i;
        json_t *o;
        json_array_foreach(a, i, o) {
                const char *d = json_string_value(json_object_get(o, "digest"));
                if (d && d[0])
                        json_array_append_new(keep, json_string(d));
        }
        char page[STORE_CURSOR_MAX] = "";
        do {
                store_list_q q = {.limit = STORE_PAGE_MAX, .page = page[0] ? page : NULL, .include_archived = true};
                store_page pg = {0};
                if ((r = store_list(db, STORE_ENVIRONMENT, &q, &pg, e)) < 0)
                        return r;
                json_array_foreach(pg.data, i, o) {
                        _cleanup_(env_spec_done) env_spec s = {0};
                        char d[ENV_DIGEST_HEX];
                        hull_error ignore;
                        if (env_spec_from_json(json_object_get(o, "config"), &s, &ignore) >= 0 &&
                            env_spec_has_packages(&s) && env_layer_digest(&s, d, &ignore) >= 0)
                                json_array_append_new(keep, json_string(d));
                }
                snprintf(page, sizeof(page), "%s", pg.next_page);
                store_page_done(&pg);
        } while (page[0]);
        *ret = TAKE_PTR(keep);
        return 0;
}

static int env_gc(store *db, const char *home) {
        hull_error e = {0};
        _cleanup_(json_decrefp) json_t *keep = NULL;
        if (named_digests(db, &keep, &e) < 0) {
                env_report(&e);
                return CLI_EXIT_FAILURE;
        }
        size_t n = json_array_size(keep), removed = 0;
        _cleanup_free_ const char **v = calloc(n + 1, sizeof(*v));
        if (!v) {
                cli_error("env", "out of memory");
                return CLI_EXIT_FAILURE;
        }
        for (size_t i = 0; i < n; i++)
                v[i] = json_string_value(json_array_get(keep, i));
        if (env_layer_gc(home, v, n, &removed, &e) < 0) {
                env_report(&e);
                return CLI_EXIT_FAILURE;
        }
        printf("%zu layer%s removed\n", removed, removed == 1 ? "" : "s");
        return CLI_EXIT_OK;
}

/* build without a NAME: the layer of the spec in file (or spec_text), what hull serve runs for a
 * /v1 environment. Returns an exit status. */
static int env_build_spec(const char *home, const char *file, const char *spec_text, bool check) {
        _cleanup_(env_spec_done) env_spec spec = {0};
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        env_build_info info = {0};
        hull_error e = {0};
        if (file ? read_file(file, &text, &len, &e) < 0 : (len = strlen(spec_text), false)) {
                env_report(&e);
                return CLI_EXIT_FAILURE;
        }
        if (env_spec_parse(file ? text : spec_text, len, &spec, &e) < 0 ||
            env_layer_build(home, &spec, &info, &e) < 0) {
                env_report(&e);
                if (e.err != -EINVAL && info.log[0])
                        fprintf(stderr, "%s\n", info.log);
                return CLI_EXIT_FAILURE;
        }
        printf("layer %s\n", info.built ? "built" : "already built");
        fflush(stdout);
        return check && env_spec_has_packages(&spec) ? env_check_run(home, "the spec", &spec) : CLI_EXIT_OK;
}

static int env_check(const char *home, const char *name) {
        _cleanup_(env_spec_done) env_spec s = {0};
        char layer[SBX_PATH_MAX];
        hull_error e = {0};
        if (cli_env_layer(home, name, false, layer, &s, NULL, NULL, &e) < 0) {
                env_report(&e);
                return CLI_EXIT_FAILURE;
        }
        return env_check_run(home, name, &s);
}

static int env_rm(store *db, const char *home, const char *name) {
        hull_error e = {0};
        int r = store_env_delete(db, name, &e);
        if (r == -ENOENT) {
                cli_error("env", "no environment %s ('hull env list' shows them)", name);
                return CLI_EXIT_FAILURE;
        }
        if (r < 0) {
                env_report(&e);
                return CLI_EXIT_FAILURE;
        }
        fprintf(stderr, "hull: env: %s deleted\n", name);
        return env_gc(db, home);
}

/* What hull env's command line says. */
typedef struct env_args {
        const char *home_dir, *file, *spec_text;
        env_spec spec; /* create's packages and networking */
        bool json, check, have_net, flags;
        int64_t version;
} env_args;

static void env_args_done(env_args *a) {
        env_spec_done(&a->spec);
}

/* Parse the options after the subcommand. Returns 0 (with *ret_done after --help) or a usage
 * error's status. */
static int parse_env_options(int argc, char **argv, env_args *a, bool *ret_done) {
        hull_error e = {0};
        int c, r;

        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                r = 0;
                switch (c) {
                case 'h':
                        cli_env_help();
                        *ret_done = true;
                        return CLI_EXIT_OK;
                case OPT_APT:
                case OPT_NPM:
                case OPT_PIP:
                        r = env_spec_add_pkg(&a->spec,
                                             c == OPT_APT   ? ENV_PM_APT
                                             : c == OPT_NPM ? ENV_PM_NPM
                                                            : ENV_PM_PIP,
                                             optarg, &e);
                        a->flags = true;
                        break;
                case OPT_NET:
                        if (env_net_from_string(optarg, &a->spec.net) < 0)
                                return usage_error("--net wants none, limited or unrestricted, got '%s'", optarg);
                        a->have_net = a->flags = true;
                        break;
                case OPT_ALLOW_HOST:
                        r = env_spec_add_host(&a->spec, optarg, &e);
                        a->flags = true;
                        break;
                case OPT_ALLOW_PM:
                        a->spec.allow_package_managers = a->flags = true;
                        break;
                case OPT_ALLOW_MCP:
                        a->spec.allow_mcp_servers = a->flags = true;
                        break;
                case OPT_FILE:
                        a->file = optarg;
                        break;
                case OPT_SPEC:
                        a->spec_text = optarg;
                        break;
                case OPT_HOME:
                        a->home_dir = optarg;
                        break;
                case OPT_JSON:
                        a->json = true;
                        break;
                case OPT_VERSION: {
                        uint64_t v;
                        if (parse_uint64(optarg, 1, INT64_MAX, &v) < 0)
                                return usage_error("--version wants a number from 1, got '%s'", optarg);
                        a->version = (int64_t) v;
                        break;
                }
                case OPT_NO_CHECK:
                        a->check = false;
                        break;
                case '?':
                default:
                        return usage_error("option '%s' is unknown or lacks its value", argv[optind - 1]);
                }
                if (r < 0)
                        return usage_error("%s", e.msg + (strncmp(e.msg, "env: ", 5) == 0 ? 5 : 0));
        }
        return 0;
}

int cli_env_main(int argc, char **argv) {
        static const char *const subs[] = {"create", "list", "show", "build", "check", "rm", "gc"};
        _cleanup_(env_args_done) env_args a = {.check = true};
        hull_error e = {0};
        bool done = false;
        int r;

        if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                if (argc < 2)
                        return usage_error("which one: create, list, show, build, check, rm or gc%s", "");
                cli_env_help();
                return CLI_EXIT_OK;
        }
        const char *sub = argv[1];
        bool known = false;
        for (size_t i = 0; i < ELEMENTSOF(subs); i++)
                known = known || strcmp(sub, subs[i]) == 0;
        if (!known)
                return usage_error("unknown subcommand '%s' (create, list, show, build, check, rm or gc)", sub);
        argc--;
        argv++;
        r = parse_env_options(argc, argv, &a, &done);
        if (r || done)
                return r;
        bool wants_name = strcmp(sub, "list") != 0 && strcmp(sub, "gc") != 0 &&
                          !(strcmp(sub, "build") == 0 && (a.file || a.spec_text));
        if (a.spec_text && (strcmp(sub, "build") != 0 || a.file))
                return usage_error("--spec goes with build, without --file%s", "");
        if (wants_name && optind + 1 != argc)
                return usage_error("%s wants one environment NAME", sub);
        if (!wants_name && optind != argc)
                return usage_error("%s takes no NAME", sub);
        const char *name = wants_name ? argv[optind] : NULL;
        if (name && !env_name_is_valid(name))
                return usage_error(
                        "'%s' is not an environment name (1 to %u of a-z, 0-9, '.', '_', '-', starting with a "
                        "letter or digit)",
                        name, ENV_NAME_MAX - 1);
        if (strcmp(sub, "create") != 0 && (a.flags || (a.file && strcmp(sub, "build") != 0)))
                return usage_error("package and networking options go with create%s", "");
        if (a.file && a.flags)
                return usage_error("--file holds the whole spec: give it without --apt, --npm, --pip or --net%s", "");
        if (strcmp(sub, "create") == 0 && !a.file && !a.have_net && a.spec.net == ENV_NET_NONE &&
            (a.spec.n_allowed_hosts || a.spec.allow_package_managers || a.spec.allow_mcp_servers))
                a.spec.net = ENV_NET_LIMITED; /* --allow-host alone means limited */
        if (strcmp(sub, "create") == 0 && !a.file && env_spec_check(&a.spec, &e) < 0)
                return usage_error("%s", e.msg + (strncmp(e.msg, "env: ", 5) == 0 ? 5 : 0));

        char home[SBX_PATH_MAX];
        _cleanup_store_ store *db = NULL;
        if (cli_home(a.home_dir, home, &e) < 0 || cli_store_open(home, &db, &e) < 0) {
                env_report(&e);
                return CLI_EXIT_FAILURE;
        }
        if (strcmp(sub, "create") == 0) {
                if (a.file) {
                        _cleanup_free_ char *text = NULL;
                        size_t len = 0;
                        env_spec_done(&a.spec);
                        if (read_file(a.file, &text, &len, &e) < 0 || env_spec_parse(text, len, &a.spec, &e) < 0) {
                                env_report(&e);
                                return CLI_EXIT_FAILURE;
                        }
                }
                return env_create(db, home, name, &a.spec);
        }
        if (strcmp(sub, "list") == 0)
                return env_list(db, home, a.json);
        if (strcmp(sub, "show") == 0)
                return env_show(db, home, name, a.version);
        if (strcmp(sub, "build") == 0 && !name) {
                store_close(TAKE_PTR(db));
                return env_build_spec(home, a.file, a.spec_text, a.check);
        }
        if (strcmp(sub, "build") == 0) {
                store_close(TAKE_PTR(db));
                return env_build(home, name, a.check);
        }
        if (strcmp(sub, "check") == 0) {
                store_close(TAKE_PTR(db));
                return env_check(home, name);
        }
        if (strcmp(sub, "rm") == 0)
                return env_rm(db, home, name);
        return env_gc(db, home);
}
