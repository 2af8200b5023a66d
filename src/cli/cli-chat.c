/* cli-chat.c: `hull chat [ID]`: a conversation with the agent in the terminal. Each line is a
 * turn; the answer streams as it comes, tool calls show as one line each with their progress;
 * Ctrl-C interrupts the turn (not the program); Ctrl-D or /exit ends the chat, which is kept
 * under $HULL_HOME/chats/<id>/ (workspace, handles, records, transcript) and continued with
 * `hull chat ID`. Lines are read by cli-prompt.c: with libedit on a terminal (editing, history in
 * $HULL_HOME/chats/history); otherwise (a pipe) plain lines from stdin. With --server, the chat
 * is with an agent of a /v1 API instead (cli-chat-remote.c). */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli-agent.h"
#include "cli-prompt.h"
#include "cli.h"
#include "fs-util.h"
#include "home.h"
#include "limits.h"
#include "macro.h"
#include "parse-util.h"

enum {
        OPT_LIST = 0x100,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"list", no_argument, NULL, OPT_LIST},
        CLI_AGENT_OPTIONS,
        {},
};

void cli_chat_help(void) {
        printf("Usage: hull chat [OPTIONS] [ID]\n\n"
               "Talk with the agent in the terminal: each line you type is a turn; the agent answers\n"
               "with the tools of `hull run` in a sandbox session of its own. Ctrl-C interrupts a\n"
               "turn; Ctrl-D or /exit ends the chat, which is kept and continued with `hull chat ID`\n"
               "(its workspace, handles and conversation as they were).\n\n"
               "Options:\n"
               "  --list              the kept chats, newest last\n"
               "  --tool NAME         offer only these tools (repeatable)\n"
               "  --mcp 'NAME=CMD ARGS'  start the MCP server CMD (over stdio, outside the sandbox)\n"
               "                      and offer its tools too, as NAME__TOOL (repeatable)\n"
               "  --mcp-sandbox NAME     run the stdio MCP server NAME (of --mcp or config.json) inside\n"
               "                      a sandbox: its directory at /workspace, no network (repeatable)\n"
               "  --env NAME             the session sees environment NAME's packages (hull env)\n"
               "  --model M, --provider P, --base-url URL, --api-key KEY, --header 'N: V', --no-stream,\n"
               "  --instructions TEXT, --yes, --max-turns N, --timeout DUR (per turn), --no-cgroup,\n"
               "  --tier container|kernel (kernel: the session is one gVisor sandbox)\n"
               "                      as for hull run\n"
               "  --verbose           every step on stderr\n\n"
               "In the chat: /exit ends it, /id prints its id, /handles lists its handles.\n\n"
               "hull chat --server URL AGENT_ID talks with an agent of hull serve's /v1 API instead\n"
               "(see 'hull chat --server URL --help').\n");
}

#define usage_error(...) cli_usage_error("chat", CLI_EXIT_USAGE, __VA_ARGS__)

static int list_chats(void) {
        char home[SBX_PATH_MAX], dir[SBX_PATH_MAX];
        hull_error e = {0};
        struct dirent **names = NULL;

        if (home_resolve(home, &e) < 0) {
                cli_report("chat", &e);
                return CLI_EXIT_FAILURE;
        }
        if (path_join(dir, sizeof(dir), home, "chats") < 0) {
                cli_error("chat", "HULL_HOME %s is too long", home);
                return CLI_EXIT_FAILURE;
        }
        int n = scandir(dir, &names, NULL, alphasort);
        if (n < 0) {
                if (errno != ENOENT) {
                        cli_error("chat", "cannot list %s: %s", dir, strerror(errno));
                        return CLI_EXIT_FAILURE;
                }
                return CLI_EXIT_OK;
        }
        for (int i = 0; i < n; i++) {
                char conv[SBX_PATH_MAX + NAME_MAX + 32];
                snprintf(conv, sizeof(conv), "%s/%s/conversation.json", dir, names[i]->d_name);
                if (names[i]->d_name[0] != '.' && access(conv, F_OK) == 0)
                        printf("%s\n", names[i]->d_name);
                free(names[i]);
        }
        free(names);
        return CLI_EXIT_OK;
}

/* One line typed: a command of the chat, or a turn. */
static int on_line(void *userdata, const char *line) {
        cli_agent *a = userdata;
        hull_error e = {0};
        if (strcmp(line, "/id") == 0) {
                printf("%s\n", cli_agent_id(a));
                return CLI_PROMPT_GO_ON;
        }
        if (strcmp(line, "/handles") == 0) {
                _cleanup_(json_decrefp) json_t *h = cli_agent_handles(a);
                size_t i;
                json_t *x;
                json_array_foreach(h, i, x) printf("%s  %s  %s\n", json_string_value(json_object_get(x, "id")) ?: "",
                                                   json_string_value(json_object_get(x, "kind")) ?: "",
                                                   json_string_value(json_object_get(x, "source")) ?: "");
                return CLI_PROMPT_GO_ON;
        }
        agent_turn_result res = {0};
        int r = cli_agent_turn(a, line, &res, &e);
        if (r < 0)
                cli_report("chat", &e);
        else if (res.stop == AGENT_STOP_INTERRUPTED)
                fprintf(stderr, "hull: interrupted\n");
        else if (res.stop == AGENT_STOP_ERROR || res.stop == AGENT_STOP_CONTEXT)
                cli_report("chat", &e);
        else if (res.stop != AGENT_STOP_END_TURN)
                cli_error("chat", "the turn ended without an answer: %s", agent_stop_to_string(res.stop));
        agent_turn_result_done(&res);
        if (cli_agent_checkpoint(a, &e) < 0) /* the conversation so far, whatever comes next */
                cli_report("chat", &e);
        return CLI_PROMPT_GO_ON;
}

int cli_chat_main(int argc, char **argv) {
        cli_agent_args args = {0};
        cli_agent_opts o = {.kind = CLI_AGENT_CHAT, .flags = {.stream = -1}, .print_answer = true, .compact = true};
        int c, idx;

        for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
                if (strcmp(argv[i], "--server") == 0 || strncmp(argv[i], "--server=", 9) == 0)
                        return cli_chat_remote_main(argc, argv); /* a client of the /v1 API */
        while ((c = getopt_long(argc, argv, "h", options, &idx)) != -1) {
                int k = cli_agent_option("chat", c, optarg, &args, &o);
                if (k < 0)
                        return CLI_EXIT_USAGE;
                if (k > 0)
                        continue;
                switch (c) {
                case 'h':
                        cli_chat_help();
                        return CLI_EXIT_OK;
                case OPT_LIST:
                        return list_chats();
                default:
                        return usage_error("unknown option '%s'", argv[optind - 1]);
                }
        }
        if (optind + 1 < argc)
                return usage_error("one conversation id at most, not also '%s'", argv[optind + 1]);
        o.resume_id = optind < argc ? argv[optind] : NULL;
        cli_agent_args_done(&args, &o);
        o.interrupt = cli_prompt_interrupt();
        cli_prompt_signals();

        hull_error e = {0};
        cli_agent *a = NULL;
        int r = cli_agent_open(&o, &a, &e);
        if (r < 0) {
                cli_report("chat", &e);
                return r == -EINVAL || r == -ENOENT ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
        }
        fprintf(stderr, "hull: chat %s%s (Ctrl-D or /exit ends it)\n", cli_agent_id(a),
                o.resume_id ? " continued" : "");

        int status = CLI_EXIT_OK;
        (void) cli_prompt_loop("chat", on_line, a); /* out of memory ends the chat as the input's end does */
        fprintf(stderr, "hull: chat %s kept: continue it with `hull chat %s`\n", cli_agent_id(a), cli_agent_id(a));
        r = cli_agent_close(a, true, &e);
        if (r < 0) {
                cli_report("chat", &e);
                status = CLI_EXIT_FAILURE;
        }
        return status;
}
