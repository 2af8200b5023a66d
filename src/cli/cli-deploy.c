/* cli-deploy.c: `hull deploy`: the scheduled deployments of a running hull serve (or any Claude
 * Managed Agents compatible /v1 API) from the terminal: create one (an agent, an environment, the
 * first message, a cron schedule in a time zone), list them with their next run, run one now,
 * pause, unpause or archive one. Each is one /v1 call; the answer is printed as JSON (a list: one
 * deployment a line). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli-client.h"
#include "cli.h"
#include "http-client.h"
#include "limits.h"
#include "macro.h"

#define CMD "deploy"
#define usage_error(...) cli_usage_error(CMD, CLI_EXIT_USAGE, __VA_ARGS__)

enum {
        OPT_SERVER = 0x100,
        OPT_API_KEY,
        OPT_INSECURE,
        OPT_NAME,
        OPT_AGENT,
        OPT_ENVIRONMENT,
        OPT_MESSAGE,
        OPT_CRON,
        OPT_TIMEZONE,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"server", required_argument, NULL, OPT_SERVER},
        {"api-key", required_argument, NULL, OPT_API_KEY},
        {"insecure", no_argument, NULL, OPT_INSECURE},
        {"name", required_argument, NULL, OPT_NAME},
        {"agent", required_argument, NULL, OPT_AGENT},
        {"environment", required_argument, NULL, OPT_ENVIRONMENT},
        {"message", required_argument, NULL, OPT_MESSAGE},
        {"cron", required_argument, NULL, OPT_CRON},
        {"timezone", required_argument, NULL, OPT_TIMEZONE},
        {},
};

void cli_deploy_help(void) {
        printf("Usage: hull deploy --server URL [--api-key KEY] create --name NAME --agent AGENT_ID\n"
               "                   --environment ENV_ID --message TEXT [--cron EXPR --timezone ZONE]\n"
               "       hull deploy --server URL list\n"
               "       hull deploy --server URL run|pause|unpause|archive DEPLOYMENT_ID\n\n"
               "Scheduled deployments of a running hull serve (/v1/deployments): each run starts a new\n"
               "session of the agent (its version pinned at create) in the environment, with the message\n"
               "as its first event. --cron takes 5 fields (minute hour day-of-month month day-of-week;\n"
               "ranges, steps, lists, names such as mon-fri), --timezone an IANA zone (\"Europe/Paris\").\n"
               "'run' starts one now, also while paused. A failed scheduled run pauses the deployment with\n"
               "the reason; a missing agent archives it. docs/DEPLOYMENTS.md has the details.\n\n"
               "Options:\n"
               "  --server URL      the server (http://127.0.0.1:8080)\n"
               "  --api-key KEY     an API key of its /v1 API (else $HULL_SERVE_KEY, else $HULL_TOKEN)\n"
               "  --insecure        allow cleartext http beyond loopback\n"
               "  -h, --help        this text\n");
}

typedef struct dclient {
        cli_client c;
        char key_header[AUTH_TOKEN_MAX + 16];
        const char *headers[5];
} dclient;

static void dclient_done(dclient *d) {
        explicit_bzero(d->key_header, sizeof(d->key_header));
        cli_client_done(&d->c);
}

/* method path with body (NULL: none): 0 with *ret on a 2xx JSON object, else the failure printed. */
static int call(dclient *d, const char *method, const char *path, const json_t *body, json_t **ret) {
        char url[HTTPC_URL_MAX];
        if ((size_t) snprintf(url, sizeof(url), "%s%s", d->c.base, path) >= sizeof(url)) {
                cli_error(CMD, "the URL is too long");
                return CLI_EXIT_FAILURE;
        }
        _cleanup_free_ char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        httpc_request hr = {.method = method,
                            .url = url,
                            .headers = d->headers,
                            .body = text ? text : (strcmp(method, "POST") == 0 ? "{}" : NULL),
                            .body_len = text ? strlen(text) : (strcmp(method, "POST") == 0 ? 2 : 0),
                            .timeout_ms = CLI_REMOTE_CALL_MS,
                            .answer_max = V1_BODY_MAX};
        httpc_answer a;
        hull_error e = {0};
        int k = httpc_perform(d->c.http, &hr, &a, &e);
        if (k < 0) {
                cli_error(CMD, "%s%s", e.msg,
                          k == -ECONNREFUSED ? " (is 'hull serve' running there? see --server)" : "");
                return CLI_EXIT_FAILURE;
        }
        json_error_t je;
        json_t *o = json_loadb(a.body, a.body_len, 0, &je);
        long status = a.status;
        httpc_answer_done(&a);
        if (status < 200 || status > 299 || !json_is_object(o)) {
                const char *msg = json_string_value(json_object_get(json_object_get(o, "error"), "message"));
                cli_error(CMD, "%s %s: HTTP %ld: %s", method, path, status, msg ? msg : "(not a /v1 answer)");
                json_decref(o);
                return CLI_EXIT_FAILURE;
        }
        *ret = o;
        return 0;
}

static void print_json(const json_t *o) {
        _cleanup_free_ char *s = json_dumps(o, JSON_COMPACT);
        if (s)
                printf("%s\n", s);
}

typedef struct dargs {
        const char *name, *agent, *env, *message, *cron, *tz;
} dargs;

static int do_create(dclient *d, const dargs *a) {
        if (!a->name || !a->agent || !a->env || !a->message)
                return usage_error("create wants --name, --agent, --environment and --message%s", "");
        if (!a->cron != !a->tz)
                return usage_error("--cron and --timezone go together%s", "");
        json_auto_t *body = json_pack("{s:s, s:s, s:s, s:[{s:s, s:[{s:s, s:s}]}]}", "name", a->name, "agent", a->agent,
                                      "environment_id", a->env, "initial_events", "type", "user.message", "content",
                                      "type", "text", "text", a->message);
        if (body && a->cron)
                json_object_set_new(
                        body, "schedule",
                        json_pack("{s:s, s:s, s:s}", "type", "cron", "expression", a->cron, "timezone", a->tz));
        json_auto_t *o = NULL;
        if (!body) {
                cli_error(CMD, "--name, --message and the schedule must be UTF-8 text");
                return CLI_EXIT_USAGE;
        }
        int k = call(d, "POST", "/v1/deployments", body, &o);
        if (k == 0)
                print_json(o);
        return k;
}

static int do_list(dclient *d) {
        char path[CLI_REMOTE_ID_MAX * 2 + 64] = "/v1/deployments?limit=100";
        for (;;) {
                json_auto_t *o = NULL;
                int k = call(d, "GET", path, NULL, &o);
                if (k)
                        return k;
                size_t i;
                json_t *dep;
                json_array_foreach(json_object_get(o, "data"), i, dep) print_json(dep);
                const char *next = json_string_value(json_object_get(o, "next_page"));
                if (!next || !next[0] || strlen(next) > CLI_REMOTE_ID_MAX)
                        return 0;
                snprintf(path, sizeof(path), "/v1/deployments?limit=100&page=%s", next);
        }
}

static bool id_ok(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > CLI_REMOTE_ID_MAX)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
                      *p == '-'))
                        return false;
        return true;
}

static int parse_args(int argc, char **argv, dargs *a, const char **server, const char **key, bool *insecure) {
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
                const char **slot = c == OPT_SERVER        ? server
                                    : c == OPT_API_KEY     ? key
                                    : c == OPT_NAME        ? &a->name
                                    : c == OPT_AGENT       ? &a->agent
                                    : c == OPT_ENVIRONMENT ? &a->env
                                    : c == OPT_MESSAGE     ? &a->message
                                    : c == OPT_CRON        ? &a->cron
                                    : c == OPT_TIMEZONE    ? &a->tz
                                                           : NULL;
                if (slot)
                        *slot = optarg;
                else if (c == OPT_INSECURE)
                        *insecure = true;
                else if (c == 'h') {
                        cli_deploy_help();
                        return -1;
                } else
                        return usage_error("option '%s' is unknown or lacks its value (run 'hull deploy --help')",
                                           argv[optind - 1]);
        }
        return 0;
}

int cli_deploy_main(int argc, char **argv) {
        dargs a = {0};
        const char *server = NULL, *key = NULL;
        bool insecure = false;
        int k = parse_args(argc, argv, &a, &server, &key, &insecure);
        if (k)
                return k < 0 ? CLI_EXIT_OK : k;
        /* the subcommand, then the options that follow it */
        const char *verb = optind < argc ? argv[optind] : NULL;
        if (!verb)
                return usage_error("which: create, list, run, pause, unpause or archive?%s", "");
        const char *id = NULL;
        int rest = argc - optind;
        char **rv = argv + optind;
        if ((k = parse_args(rest, rv, &a, &server, &key, &insecure)))
                return k < 0 ? CLI_EXIT_OK : k;
        if (optind < rest)
                id = rv[optind++];
        if (optind < rest)
                return usage_error("unexpected '%.80s'", rv[optind]);
        if (!server || !server[0])
                return usage_error("--server wants the server's URL%s", "");
        if (!key || !key[0])
                key = getenv("HULL_SERVE_KEY");
        _cleanup_(dclient_done) dclient d = {0};
        if ((k = cli_client_setup(&d.c, CMD, server, NULL, NULL, insecure)))
                return k;
        if (key && key[0]) {
                if (strlen(key) > AUTH_TOKEN_MAX || strpbrk(key, " \t\r\n"))
                        return usage_error("the API key must be 1 to %u visible ASCII characters", AUTH_TOKEN_MAX);
                snprintf(d.key_header, sizeof(d.key_header), "x-api-key: %s", key);
        }
        d.headers[0] = "anthropic-version: 2023-06-01";
        d.headers[1] = "anthropic-beta: managed-agents-2026-04-01";
        d.headers[2] = "content-type: application/json";
        d.headers[3] = d.key_header[0] ? d.key_header : d.c.auth[0] ? d.c.auth : NULL;
        if (strcmp(verb, "create") == 0)
                return id ? usage_error("create takes no id, got '%.80s'", id) : do_create(&d, &a);
        if (strcmp(verb, "list") == 0)
                return id ? usage_error("list takes no id, got '%.80s'", id) : do_list(&d);
        if (strcmp(verb, "run") != 0 && strcmp(verb, "pause") != 0 && strcmp(verb, "unpause") != 0 &&
            strcmp(verb, "archive") != 0)
                return usage_error("'%.40s' is not one of create, list, run, pause, unpause, archive", verb);
        if (!id || !id_ok(id))
                return usage_error("%s wants a deployment id (depl_...)%s", verb, "");
        char path[CLI_REMOTE_ID_MAX + 64];
        snprintf(path, sizeof(path), "/v1/deployments/%s/%s", id, verb);
        json_auto_t *o = NULL;
        if ((k = call(&d, "POST", path, NULL, &o)) == 0)
                print_json(o);
        return k;
}
