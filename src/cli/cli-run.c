/* cli-run.c: `hull run "task"`: a one-shot agent. The answer is streamed on stdout; with --json,
 * one object (answer, stop, usage, handles, the run's directory) instead. The run's directory
 * under $HULL_HOME/runs/ is kept with --keep or when the run fails, and removed otherwise. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli-agent.h"
#include "cli.h"
#include "limits.h"
#include "macro.h"
#include "parse-util.h"

enum {
        OPT_INPUT = 0x100,
        OPT_KEEP,
        OPT_JSON,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"input", required_argument, NULL, OPT_INPUT},
        {"keep", no_argument, NULL, OPT_KEEP},
        {"json", no_argument, NULL, OPT_JSON},
        CLI_AGENT_OPTIONS,
        {},
};

void cli_run_help(void) {
        printf("Usage: hull run [OPTIONS] \"TASK\"\n\n"
               "Give a model TASK and the tools to do it in a sandbox session of its own (no daemon\n"
               "needed): it reads the inputs, writes and runs code, keeps big results as handles, and\n"
               "prints its answer as it comes.\n\n"
               "Options:\n"
               "  --input FILE        hand FILE in as an input handle (repeatable); a .csv, .tsv, .json\n"
               "                      (an array of objects) or .jsonl file becomes a table\n"
               "  --tool NAME         offer only these tools (repeatable; default: all built-ins)\n"
               "  --mcp 'NAME=CMD ARGS'  start the MCP server CMD (over stdio, outside the sandbox)\n"
               "                      and offer its tools too, as NAME__TOOL (repeatable)\n"
               "  --mcp-sandbox NAME     run the stdio MCP server NAME (of --mcp or config.json) inside\n"
               "                      a sandbox: its directory at /workspace, no network (repeatable)\n"
               "  --env NAME             the session sees environment NAME's packages (hull env)\n"
               "  --model M           the model (env HULL_MODEL)\n"
               "  --provider P        openai or anthropic (env HULL_PROVIDER; default: the one whose key\n"
               "                      is set)\n"
               "  --base-url URL      the API's base URL (env HULL_BASE_URL), e.g. a local server's\n"
               "                      http://127.0.0.1:11434/v1\n"
               "  --api-key KEY       (env OPENAI_API_KEY or ANTHROPIC_API_KEY)\n"
               "  --header 'N: V'     an extra request header (repeatable)\n"
               "  --no-stream         ask for whole answers instead of streamed ones\n"
               "  --instructions TEXT  your instructions, after hull's operating manual\n"
               "  --max-turns N       model requests at most (default %u)\n"
               "  --timeout DUR       the whole run's wall clock (default 30m), e.g. 90s, 10m\n"
               "  --yes               approve tools whose policy is always_ask without asking\n"
               "  --keep              keep the run's directory (it is kept anyway when the run fails)\n"
               "  --verbose           every step on stderr: model requests, tool calls, handles\n"
               "  --json              print one JSON object: answer, stop, usage, handles, dir\n"
               "  --no-cgroup         no memory and process limits for the session\n"
               "  --tier T            container (default) or kernel: the session is one gVisor sandbox\n"
               "                      (runsc; needs root; network none)\n\n"
               "Configuration: flags, then the environment, then ./.env, then $HULL_HOME/config.json\n"
               "(HULL_HOME: /var/lib/hull as root, else ~/.local/state/hull). See docs/AGENT.md.\n"
               "Exit status: 0 answered, 1 failed (the run's directory is printed), 2 usage error,\n"
               "130 interrupted.\n",
               AGENT_MAX_TURNS_DEFAULT);
}

#define usage_error(...) cli_usage_error("run", CLI_EXIT_USAGE, __VA_ARGS__)

static atomic_bool interrupted;

static void on_sigint(int sig) {
        (void) sig;
        atomic_store(&interrupted, true);
}

static json_t *usage_json(const model_usage *u) {
        return json_pack("{s:I,s:I,s:I,s:I}", "input_tokens", (json_int_t) u->input_tokens, "output_tokens",
                         (json_int_t) u->output_tokens, "cache_read_input_tokens",
                         (json_int_t) u->cache_read_input_tokens, "cache_creation_input_tokens",
                         (json_int_t) u->cache_creation_input_tokens);
}

int cli_run_main(int argc, char **argv) {
        const char *inputs[CLI_RUN_INPUTS_MAX];
        size_t n_inputs = 0;
        cli_agent_args args = {0};
        cli_agent_opts o = {.kind = CLI_AGENT_RUN, .flags = {.stream = -1}, .print_answer = true};
        bool keep = false, json = false;
        int c, idx;

        while ((c = getopt_long(argc, argv, "h", options, &idx)) != -1) {
                int k = cli_agent_option("run", c, optarg, &args, &o);
                if (k < 0)
                        return CLI_EXIT_USAGE;
                if (k > 0)
                        continue;
                switch (c) {
                case 'h':
                        cli_run_help();
                        return CLI_EXIT_OK;
                case OPT_INPUT:
                        if (n_inputs >= CLI_RUN_INPUTS_MAX)
                                return usage_error("at most %u --input options", CLI_RUN_INPUTS_MAX);
                        if (!optarg[0])
                                return usage_error("%s", "--input wants a file");
                        inputs[n_inputs++] = optarg;
                        break;
                case OPT_KEEP:
                        keep = true;
                        break;
                case OPT_JSON:
                        json = true;
                        break;
                default:
                        return usage_error("unknown option '%s'", argv[optind - 1]);
                }
        }
        if (optind >= argc)
                return usage_error("%s", "no task given: hull run \"what to do\"");
        if (optind + 1 < argc)
                return usage_error("one task (quote it), not also '%s'", argv[optind + 1]);
        const char *task = argv[optind];
        if (!task[0] || strspn(task, " \t\n") == strlen(task))
                return usage_error("%s", "the task is empty");
        cli_agent_args_done(&args, &o);
        o.print_answer = !json;
        o.interrupt = &interrupted;

        /* the first one ends the turn in flight; a second (while hull saves or cleans up) ends hull */
        struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESETHAND};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);

        hull_error e = {0};
        cli_agent *a = NULL;
        int r = cli_agent_open(&o, &a, &e);
        if (r < 0) {
                cli_report("run", &e);
                /* Ctrl-C while an MCP server was starting: interrupted, like a turn */
                return r == -ECANCELED && atomic_load(&interrupted) ? 130
                       : r == -EINVAL                               ? CLI_EXIT_USAGE
                                                                    : CLI_EXIT_FAILURE;
        }

        /* the inputs, described to the model after the task */
        _cleanup_(json_decrefp) json_t *summaries = json_array();
        for (size_t i = 0; i < n_inputs; i++) {
                json_t *sum = NULL;
                r = cli_agent_add_input(a, inputs[i], &sum, &e);
                if (r < 0) {
                        cli_report("run", &e);
                        cli_agent_close(a, false, NULL);
                        return r == -EINVAL || r == -ENOENT ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
                }
                json_array_append_new(summaries, sum);
        }
        _cleanup_free_ char *message = NULL;
        if (n_inputs) {
                _cleanup_free_ char *s = json_dumps(summaries, JSON_COMPACT);
                if (asprintf(&message, "%s\n\nInput files (handles; their files are under /workspace/inputs/):\n%s",
                             task, s ? s : "[]") < 0)
                        message = NULL;
        } else
                message = strdup(task);
        if (!message) {
                cli_agent_close(a, false, NULL);
                return CLI_EXIT_FAILURE;
        }

        agent_turn_result res = {0};
        r = cli_agent_turn(a, message, &res, &e);
        bool ok = r >= 0 && res.stop == AGENT_STOP_END_TURN;
        int status = ok ? CLI_EXIT_OK : res.stop == AGENT_STOP_INTERRUPTED ? 130 : CLI_EXIT_FAILURE;
        keep = keep || !ok;
        if (r < 0)
                cli_report("run", &e);
        else if (!ok) {
                if (res.stop == AGENT_STOP_ERROR || res.stop == AGENT_STOP_CONTEXT)
                        cli_report("run", &e);
                else
                        cli_error("run", "the run ended without an answer: %s", agent_stop_to_string(res.stop));
        }
        if (json) {
                _cleanup_(json_decrefp) json_t *out =
                        json_pack("{s:s,s:s,s:o,s:i,s:i,s:o,s:s?,s:s}", "answer", res.text ? res.text : "", "stop",
                                  agent_stop_to_string(res.stop), "usage", usage_json(&res.usage), "model_requests",
                                  (int) res.model_requests, "tool_calls", (int) res.tool_calls, "handles",
                                  cli_agent_handles(a), "error", ok ? NULL : e.msg, "id", cli_agent_id(a));
                if (out) {
                        json_object_set_new(out, "dir", keep ? json_string(cli_agent_dir(a)) : json_null());
                        json_dumpf(out, stdout, JSON_COMPACT);
                        fputc('\n', stdout);
                }
        }
        char dir[SBX_PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", cli_agent_dir(a));
        agent_turn_result_done(&res);
        r = cli_agent_close(a, keep, &e);
        if (r < 0) {
                cli_report("run", &e);
                status = CLI_EXIT_FAILURE;
        }
        if (keep && !json)
                fprintf(stderr, "hull: run kept in %s (hull verify %s checks its records)\n", dir, dir);
        fflush(stdout);
        return status;
}
