/* cli-init.c: `hull init`: a starter configuration ($HULL_HOME/config.json, the file hull run,
 * hull chat and hull serve read, with commented examples) and a starter agent "starter" in
 * $HULL_HOME/hull.db, in the /v1 API's shape (v1_agent_create), with the agent toolset and
 * hull's toolset; then what to do next. What exists is kept: config.json unless --force (the old
 * one saved as config.json.bak), an agent named starter always. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli-key.h"
#include "cli-client.h"
#include "cli.h"
#include "fs-util.h"
#include "macro.h"
#include "store.h"
#include "v1-shape.h"

#define STARTER_NAME "starter"
#define STARTER_MODEL "claude-sonnet-4-6"

enum {
        OPT_HOME = 0x100,
        OPT_FORCE,
        OPT_MODEL,
        OPT_DB,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},        {"home", required_argument, NULL, OPT_HOME},
        {"force", no_argument, NULL, OPT_FORCE}, {"model", required_argument, NULL, OPT_MODEL},
        {"db", required_argument, NULL, OPT_DB}, {},
};

void cli_init_help(void) {
        printf("Usage: hull init [--model M] DIR\n"
               "       hull init [--home DIR] [--force] [--model M] [--db DB]\n\n"
               "With DIR: make an agent workspace there (DIR is made when missing):\n"
               "  agent.json   the agent, as the body of POST /v1/agents (name from DIR, the model, a\n"
               "               system prompt, the agent toolset)\n"
               "  skills/      skills, one directory with a SKILL.md each (skills/example/ to start from)\n"
               "  config.json  hull's settings with commented examples (read from $HULL_HOME)\n"
               "  README.md    how to run it\n"
               "Nothing is overwritten: when one of these files exists, hull init writes none and says which.\n\n"
               "Without DIR: set up $HULL_HOME for hull serve's /v1 API and hull run:\n"
               "  config.json  the model's settings, with commented examples (kept when it exists;\n"
               "               --force replaces it and saves the old one as config.json.bak)\n"
               "  hull.db      an agent named \"%s\" with the agent toolset (bash, read, write, edit,\n"
               "               glob, grep allowed; web_fetch asks first) and hull's toolset (run_python,\n"
               "               the handle tools); kept when an agent of that name exists\n"
               "Then it prints the next steps.\n\n"
               "Options:\n"
               "  --home DIR   the state directory (default $HULL_HOME, see docs/AGENT.md)\n"
               "  --force      replace an existing config.json\n"
               "  --db DB      the starter agent's database: a path, sqlite:PATH or postgres://...\n"
               "               (default $HULL_DB, else $HULL_HOME/hull.db)\n"
               "  --model M    the agent's model (default $HULL_MODEL, config.json's model (not with DIR),\n"
               "               else %s)\n",
               STARTER_NAME, STARTER_MODEL);
}

#define usage_error(...) cli_usage_error("init", CLI_EXIT_USAGE, __VA_ARGS__)

/* JSON has no comments: keys that start with "//" are skipped by settings.c. */
static const char config_text[] =
        "{\n"
        "  \"//\": \"hull's settings for hull run, hull chat and hull serve: flags first, then the environment (and "
        "./.env), then this file. Every key is optional; a key starting with // is a comment. See docs/AGENT.md.\",\n"
        "  \"// provider\": \"\\\"provider\\\": \\\"anthropic\\\", or \\\"openai\\\" for OpenAI and every compatible "
        "server; by default the one whose API key is set\",\n"
        "  \"// model\": \"\\\"model\\\": \\\"claude-sonnet-4-6\\\", \\\"gpt-5-mini\\\", or a local server's model "
        "name (required for any endpoint but the providers' own)\",\n"
        "  \"// base_url\": \"\\\"base_url\\\": \\\"http://127.0.0.1:8000/v1\\\" for a local OpenAI-compatible "
        "server; https://api.anthropic.com or https://api.openai.com/v1 by default\",\n"
        "  \"// api_key\": \"keep keys out of this file: set ANTHROPIC_API_KEY or OPENAI_API_KEY in the environment "
        "or in ./.env (\\\"api_key\\\": \\\"...\\\" works too)\",\n"
        "  \"// tools\": \"\\\"tools\\\": {\\\"bash\\\": \\\"always_ask\\\", \\\"web_fetch\\\": \\\"deny\\\"} sets "
        "hull run's and hull chat's tool policies (a /v1 agent has its own)\",\n"
        "  \"// mcp\": \"\\\"mcp\\\": {\\\"fs\\\": {\\\"command\\\": \\\"npx\\\", \\\"args\\\": [\\\"-y\\\", "
        "\\\"@modelcontextprotocol/server-filesystem\\\", \\\".\\\"], \\\"cwd\\\": \\\"/home/me/notes\\\"}, "
        "\\\"remote\\\": {\\\"url\\\": \\\"https://mcp.example.com/mcp\\\", \\\"headers\\\": "
        "{\\\"Authorization\\\": \\\"Bearer ...\\\"}}} gives hull run and hull chat MCP servers (env too; "
        "a --mcp flag of the same name wins)\"\n"
        "}\n";

/* Write config_text to path: a new file, or (force) in place of the one there, whose bytes are
 * first linked to path.bak. *ret_wrote: whether it was written. */
static int write_config(const char *path, bool force, bool *ret_wrote, hull_error *e) {
        char tmp[SBX_PATH_MAX], bak[SBX_PATH_MAX];
        bool exists = access(path, F_OK) == 0;

        *ret_wrote = false;
        if (exists && !force)
                return 0;
        if ((size_t) snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp) ||
            (size_t) snprintf(bak, sizeof(bak), "%s.bak", path) >= sizeof(bak))
                return hull_fail(e, -ENAMETOOLONG, "%.256s: the path is too long", path);
        (void) unlink(tmp);
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return hull_err(e, -errno, "init: cannot create %s", tmp);
        int r = loop_write(fd, config_text, sizeof(config_text) - 1);
        if (r >= 0 && fsync(fd) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlink(tmp);
                return hull_err(e, r, "init: cannot write %s", tmp);
        }
        if (exists) {
                (void) unlink(bak);
                if (link(path, bak) < 0) {
                        r = -errno;
                        (void) unlink(tmp);
                        return hull_err(e, r, "init: cannot save the old %s as %s", path, bak);
                }
        } else if (link(tmp, path) < 0) { /* never over a file made meanwhile */
                r = -errno;
                (void) unlink(tmp);
                if (r == -EEXIST)
                        return 0;
                return hull_err(e, r, "init: cannot create %s", path);
        }
        if (exists && rename(tmp, path) < 0) {
                r = -errno;
                (void) unlink(tmp);
                return hull_err(e, r, "init: cannot replace %s", path);
        }
        (void) unlink(tmp);
        *ret_wrote = true;
        return 0;
}

/* The model for the starter: --model, $HULL_MODEL, config.json's "model", the default. */
static char *starter_model(const char *flag, const char *config_path) {
        const char *env = getenv("HULL_MODEL");
        if (flag)
                return strdup(flag);
        if (env && env[0])
                return strdup(env);
        _cleanup_(json_decrefp) json_t *c = json_load_file(config_path, JSON_REJECT_DUPLICATES, NULL);
        const char *m = json_string_value(json_object_get(c, "model"));
        return strdup(m && m[0] ? m : STARTER_MODEL);
}

/* The id of a live (not archived) agent named name into ret_id, 1; 0 when none. */
static int find_agent(store *s, const char *name, char ret_id[static STORE_ID_MAX], hull_error *e) {
        char page[STORE_CURSOR_MAX] = "";
        for (;;) {
                store_list_q q = {.limit = STORE_PAGE_MAX, .page = page[0] ? page : NULL};
                store_page p = {0};
                int r = store_list(s, STORE_AGENT, &q, &p, e);
                if (r < 0)
                        return r;
                size_t i;
                json_t *a;
                json_array_foreach(p.data, i, a) {
                        const char *n = json_string_value(json_object_get(a, "name"));
                        const char *id = json_string_value(json_object_get(a, "id"));
                        if (n && id && strcmp(n, name) == 0 && json_is_null(json_object_get(a, "archived_at"))) {
                                snprintf(ret_id, STORE_ID_MAX, "%s", id);
                                store_page_done(&p);
                                return 1;
                        }
                }
                snprintf(page, sizeof(page), "%s", p.next_page);
                store_page_done(&p);
                if (!page[0])
                        return 0;
        }
}

static json_t *starter_body(const char *model) {
        static const char *const allowed[] = {"bash", "read", "write", "edit", "glob", "grep"};
        json_t *configs = json_array();
        for (size_t i = 0; configs && i < ELEMENTSOF(allowed); i++)
                if (json_array_append_new(configs, json_pack("{s:s,s:b,s:{s:s}}", "name", allowed[i], "enabled", 1,
                                                             "permission_policy", "type", "always_allow")) < 0)
                        goto fail;
        if (!configs || json_array_append_new(configs, json_pack("{s:s,s:b,s:{s:s}}", "name", "web_fetch", "enabled", 1,
                                                                 "permission_policy", "type", "always_ask")) < 0)
                goto fail;
        return json_pack("{s:s,s:s,s:s,s:[{s:s,s:{s:b},s:o},{s:s}],s:{s:s}}", "name", STARTER_NAME, "model", model,
                         "system",
                         "You are a capable assistant working in a sandbox. Your workspace is /workspace: read, "
                         "write and run code there. Say briefly what you did and what you found.",
                         "tools", "type", "agent_toolset_20260401", "default_config", "enabled", 0, "configs", configs,
                         "type", "hull_toolset_20261201", "metadata", "made_by", "hull init");
fail:
        json_decref(configs);
        return NULL;
}

/* Make the starter agent unless one exists. *ret_made: whether it was made. */
static int starter_agent(store *s, const char *model, char ret_id[static STORE_ID_MAX], bool *ret_made, hull_error *e) {
        *ret_made = false;
        int r = find_agent(s, STARTER_NAME, ret_id, e);
        if (r != 0)
                return r < 0 ? r : 0;
        char id[STORE_ID_MAX], now[STORE_TIME_MAX];
        r = cli_random_id("agent_", id);
        if (r < 0)
                return hull_err(e, r, "init: cannot make an agent id");
        store_now_rfc3339(now);
        _cleanup_(json_decrefp) json_t *body = starter_body(model), *agent = NULL;
        if (!body)
                return hull_fail(e, -ENOMEM, "init: out of memory");
        v1_err ve = {0};
        r = v1_agent_create(body, id, now, &agent, &ve);
        if (r < 0)
                return hull_fail(e, r, "init: the starter agent was refused: %s", ve.msg);
        r = store_insert(s, STORE_AGENT, agent, e);
        if (r < 0)
                return r;
        snprintf(ret_id, STORE_ID_MAX, "%s", id);
        *ret_made = true;
        return 0;
}

static void next_steps(const char *home, const char *agent_id) {
        const char *url = CLI_SERVE_DEFAULT_URL;
        printf("\nNext:\n"
               "  1. the model: export ANTHROPIC_API_KEY=... (or OPENAI_API_KEY, or edit %s/config.json)\n"
               "  2. hull serve                  # the /v1 API on %s (HULL_HOME=%s)\n"
               "  3. hull chat --server %s %s\n\n"
               "  With curl (add -H 'x-api-key: KEY' once a key exists: hull key create):\n"
               "    H='-H anthropic-version:2023-06-01 -H anthropic-beta:managed-agents-2026-04-01 "
               "-H content-type:application/json'\n"
               "    curl -s $H %s/v1/environments -d '{\"name\":\"dev\",\"config\":{\"type\":\"cloud\","
               "\"networking\":{\"type\":\"unrestricted\"}}}'\n"
               "    curl -s $H %s/v1/sessions -d '{\"agent\":\"%s\",\"environment_id\":\"ENV_ID\"}'\n"
               "    curl -sN $H %s/v1/sessions/SESSION_ID/events/stream &\n"
               "    curl -s $H %s/v1/sessions/SESSION_ID/events -d '{\"events\":[{\"type\":\"user.message\","
               "\"content\":[{\"type\":\"text\",\"text\":\"Hello\"}]}]}'\n\n"
               "  With the official SDK (npm install @anthropic-ai/sdk):\n"
               "    const client = new Anthropic({ baseURL: '%s', apiKey: process.env.HULL_API_KEY ?? 'none' });\n"
               "    const env = await client.beta.environments.create({ name: 'dev', config: { type: 'cloud', "
               "networking: { type: 'unrestricted' } } });\n"
               "    const session = await client.beta.sessions.create({ agent: '%s', environment_id: env.id });\n"
               "    const stream = await client.beta.sessions.events.stream(session.id);\n"
               "    await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', "
               "content: [{ type: 'text', text: 'Hello' }] }] });\n"
               "    for await (const ev of stream) { console.log(ev.type); if (ev.type === 'session.status_idle') "
               "break; }\n",
               home, url, home, url, agent_id, url, url, agent_id, url, url, url, agent_id);
}

int cli_init_main(int argc, char **argv) {
        const char *home_dir = NULL, *model_flag = NULL, *db = NULL;
        bool force = false, given = false;
        int c;

        opterr = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        cli_init_help();
                        return CLI_EXIT_OK;
                case OPT_HOME:
                        home_dir = optarg;
                        break;
                case OPT_FORCE:
                        force = true;
                        break;
                case OPT_DB:
                        db = optarg;
                        break;
                case OPT_MODEL:
                        if (!optarg[0] || strlen(optarg) > V1_NAME_MAX)
                                return usage_error("--model wants a model id of 1 to %u bytes", V1_NAME_MAX);
                        model_flag = optarg;
                        break;
                case '?':
                default:
                        return usage_error("option '%s' is unknown or lacks its value", argv[optind - 1]);
                }
        }
        if (optind + 1 < argc)
                return usage_error("unexpected argument '%s' (one DIR at most)", argv[optind + 1]);
        hull_error e = {0};
        if (optind < argc) { /* a workspace (cli-init-workspace.c) */
                if (force || home_dir || db)
                        return usage_error("with DIR, --force, --home and --db do not apply (a workspace's files are "
                                           "never overwritten)");
                if (!argv[optind][0])
                        return usage_error("DIR is empty");
                const char *env = getenv("HULL_MODEL");
                const char *model = model_flag ? model_flag : env && env[0] ? env : STARTER_MODEL;
                if (cli_init_workspace(argv[optind], model, config_text, &e) < 0) {
                        cli_report("init", &e);
                        return CLI_EXIT_FAILURE;
                }
                return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
        }

        char home[SBX_PATH_MAX], config[SBX_PATH_MAX], agent_id[STORE_ID_MAX];
        int r = cli_home(home_dir, home, &e);
        if (r < 0) {
                cli_report("init", &e);
                return r == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
        }
        if (path_join(config, sizeof(config), home, "config.json") < 0) {
                cli_error("init", "%s/config.json: the path is too long", home);
                return CLI_EXIT_FAILURE;
        }
        bool wrote;
        r = write_config(config, force, &wrote, &e);
        if (r < 0) {
                cli_report("init", &e);
                return CLI_EXIT_FAILURE;
        }
        if (wrote)
                printf("wrote %s%s (the model's settings, commented examples)\n", config,
                       force ? " (the old one is config.json.bak)" : "");
        else
                printf("kept %s (it exists; --force replaces it)\n", config);

        _cleanup_store_ store *s = NULL;
        _cleanup_free_ char *model = starter_model(model_flag, config);
        bool made = false;
        if (!model) {
                cli_error("init", "out of memory");
                return CLI_EXIT_FAILURE;
        }
        r = cli_store_open_db(db, home, &s, &given, &e);
        if (r < 0) {
                cli_report("init", &e);
                return given ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
        }
        r = starter_agent(s, model, agent_id, &made, &e);
        if (r < 0) {
                cli_report("init", &e);
                return CLI_EXIT_FAILURE;
        }
        /* where: a path, or a PostgreSQL URL without its password */
        char where[SBX_PATH_MAX + 16];
        if (given)
                store_url_describe(db && db[0] ? db : getenv("HULL_DB"), where, sizeof(where));
        else
                snprintf(where, sizeof(where), "%s/hull.db", home);
        if (made)
                printf("made agent %s \"%s\" (model %s) in %s\n", agent_id, STARTER_NAME, model, where);
        else
                printf("kept agent %s \"%s\" in %s (an agent of that name exists)\n", agent_id, STARTER_NAME, where);
        next_steps(home, agent_id);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}
