/* cli-webhook.c: `hull webhook`: a running hull serve's outbound webhooks (/v1/webhooks,
 * docs/WEBHOOKS.md) from the command line: subscribe (the whsec_ secret printed this once), list,
 * delete, rotate the secret, and a test delivery. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-client.h"
#include "cli.h"
#include "macro.h"

#define CMD "webhook"

enum { OPT_DESCRIPTION = CLI_OPT_OWN };

typedef struct webhook_args {
        cli_client_args c;
        const char *description;
} webhook_args;

typedef struct webhook_sub {
        cli_client_sub s;
        size_t min_pos, max_pos;
        int (*run)(cli_client *c, const webhook_args *a);
} webhook_sub;

/* method path body: the answer printed (indented JSON); an error's message printed. */
static int call(cli_client *c, const char *method, const char *path, json_t *body, bool json) {
        char url[HTTPC_URL_MAX + 256];
        snprintf(url, sizeof(url), "%s%s", c->base, path);
        _cleanup_free_ char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        json_decref(body);
        const char *headers[] = {"anthropic-version: 2023-06-01", "content-type: application/json",
                                 c->auth[0] ? c->auth : NULL, NULL};
        httpc_request req = {.method = method,
                             .url = url,
                             .unix_socket = c->unix_path,
                             .headers = headers,
                             .body = text,
                             .body_len = text ? strlen(text) : 0,
                             .timeout_ms = 60000,
                             .answer_max = 1U << 20};
        httpc_answer ans = {0};
        hull_error e = {0};
        if (httpc_perform(c->http, &req, &ans, &e) < 0) {
                cli_error(CMD, "%s", e.msg);
                return CLI_EXIT_FAILURE;
        }
        json_auto_t *o = json_loadb(ans.body, ans.body_len, 0, NULL);
        long status = ans.status;
        httpc_answer_done(&ans);
        if (status != 200 || !o) {
                const char *m = json_string_value(json_object_get(json_object_get(o, "error"), "message"));
                cli_error(CMD, "hull serve answered %ld: %s", status, m ? m : "(no message)");
                return CLI_EXIT_FAILURE;
        }
        _cleanup_free_ char *out = json_dumps(o, json ? JSON_COMPACT : JSON_INDENT(2));
        if (out)
                printf("%s\n", out);
        return CLI_EXIT_OK;
}

static int run_subscribe(cli_client *c, const webhook_args *a) {
        json_t *types = json_array();
        for (size_t i = 1; i < a->c.n_pos; i++)
                json_array_append_new(types, json_string(a->c.pos[i]));
        json_t *body = json_pack("{s:s, s:o}", "url", a->c.pos[0], "event_types", types);
        if (body && a->description)
                json_object_set_new(body, "description", json_string(a->description));
        int r = call(c, "POST", "/v1/webhooks", body, a->c.json);
        if (r == CLI_EXIT_OK && !a->c.json)
                fprintf(stderr,
                        "hull: webhook: keep the secret above: it is not shown again (rotate makes a new one)\n");
        return r;
}

static int run_list(cli_client *c, const webhook_args *a) {
        return call(c, "GET", "/v1/webhooks?limit=100", NULL, a->c.json);
}

static int with_id(cli_client *c, const webhook_args *a, const char *method, const char *tail, json_t *body) {
        char path[STORE_ID_MAX * 3 + 64];
        _cleanup_free_ char *id = NULL;
        if (cli_escape(c, a->c.pos[0], &id) < 0 || strlen(id) >= STORE_ID_MAX * 3) {
                json_decref(body);
                cli_error(CMD, "%s is not a webhook id", a->c.pos[0]);
                return CLI_EXIT_USAGE;
        }
        snprintf(path, sizeof(path), "/v1/webhooks/%s%s", id, tail);
        return call(c, method, path, body, a->c.json);
}

static int run_get(cli_client *c, const webhook_args *a) {
        return with_id(c, a, "GET", "", NULL);
}

static int run_delete(cli_client *c, const webhook_args *a) {
        return with_id(c, a, "DELETE", "", NULL);
}

static int run_rotate(cli_client *c, const webhook_args *a) {
        return with_id(c, a, "POST", "/rotate_secret", json_object());
}

static int run_test(cli_client *c, const webhook_args *a) {
        json_t *body = a->c.n_pos > 1 ? json_pack("{s:s}", "event_type", a->c.pos[1]) : json_object();
        return with_id(c, a, "POST", "/test", body);
}

#define JSON_BIT CLI_OPT_BIT(CLI_OPT_JSON)
static const webhook_sub subs[] = {
        {{"subscribe", JSON_BIT | CLI_OPT_BIT(OPT_DESCRIPTION), NULL,
          "subscribe URL EVENT_TYPE... [--description TEXT] [--json]",
          "Deliver these events (session.created, agent.created, vault.created, ...; docs/WEBHOOKS.md\n"
          "lists them) to URL, signed with a new whsec_ secret that is printed this once.\n"},
         2,
         1 + WEBHOOK_TYPES_MAX,
         run_subscribe},
        {{"list", JSON_BIT, NULL, "list [--json]", "List the subscriptions (never a secret).\n"}, 0, 0, run_list},
        {{"get", JSON_BIT, NULL, "get ID [--json]", "Show one subscription: its status, failures, why disabled.\n"},
         1,
         1,
         run_get},
        {{"delete", JSON_BIT, NULL, "delete ID [--json]", "Delete a subscription and its pending deliveries.\n"},
         1,
         1,
         run_delete},
        {{"rotate", JSON_BIT, NULL, "rotate ID [--json]",
          "A new secret (printed this once); the previous one still signs for 24 hours.\n"},
         1,
         1,
         run_rotate},
        {{"test", JSON_BIT, NULL, "test ID [EVENT_TYPE] [--json]",
          "Queue one delivery to this subscription now (EVENT_TYPE: its first when omitted).\n"},
         1,
         2,
         run_test},
};

static const struct option options[] = {
        CLI_CLIENT_OPTIONS,
        {"description", required_argument, NULL, OPT_DESCRIPTION},
        {},
};

void cli_webhook_help(void) {
        printf("Usage: hull webhook SUBCOMMAND [OPTIONS] ...\n\n"
               "A running hull serve's outbound webhooks (/v1/webhooks): each event (a session, agent,\n"
               "environment, vault, credential or memory store created, updated, archived, deleted, a\n"
               "session's status) POSTed to the subscribed URLs, signed as Standard Webhooks says.\n\n");
        for (size_t i = 0; i < ELEMENTSOF(subs); i++)
                printf("  hull webhook %s\n", subs[i].s.synopsis);
        printf("\n" CLI_CONNECTION_HELP "\n"
               "Exit status: 0 on success, 1 when hull serve refused or failed (its message is printed), 2 on\n"
               "a usage error.\n");
}

static int webhook_option(void *args, const cli_client_sub *sub, int c, const char *arg) {
        webhook_args *a = args;
        if (c == OPT_DESCRIPTION)
                a->description = arg;
        return 0;
}

static const cli_client_cmd webhook_cmd = {
        .name = CMD,
        .subcommands = "subscribe, list, get, delete, rotate, test",
        .options = options,
        .subs = subs,
        .n_subs = ELEMENTSOF(subs),
        .sub_size = sizeof(subs[0]),
        .help = cli_webhook_help,
        .own = webhook_option,
};

int cli_webhook_main(int argc, char **argv) {
        webhook_args a = {0};
        const cli_client_sub *found;
        int r = cli_client_parse(&webhook_cmd, argc, argv, &a.c, &a, &found);
        if (r || !found)
                return r;
        const webhook_sub *sub = (const webhook_sub *) found;
        if (a.c.n_pos < sub->min_pos || a.c.n_pos > sub->max_pos)
                return cli_usage_error(CMD, CLI_EXIT_USAGE, "usage: hull webhook %s", sub->s.synopsis);
        _cleanup_(cli_client_done) cli_client c = {0};
        r = cli_client_setup(&c, CMD, a.c.url, a.c.unix_path, a.c.token_file, a.c.insecure);
        if (r)
                return r;
        return sub->run(&c, &a);
}
