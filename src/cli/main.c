/* main.c: hull's entry point: global options and the command table. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli-handle.h"
#include "cli-session.h"
#include "cli.h"

#ifndef HULL_VERSION
#define HULL_VERSION "0.0.0"
#endif

typedef struct cli_command {
        const char *name;
        const char *summary;
        int (*run)(int argc, char **argv);
        void (*help)(void);
} cli_command;

static const cli_command commands[] = {
        {"run", "give a model a task and a sandbox session to do it in (one shot)", cli_run_main, cli_run_help},
        {"chat", "a conversation with a model that works in a sandbox session, resumable", cli_chat_main,
         cli_chat_help},
        {"exec", "run one command in a fresh sandbox", cli_exec_main, cli_exec_help},
        {"verify", "check an audit log of run records and its chain", cli_verify_main, cli_verify_help},
        {"serve", "the daemon: /v1 agents, the console, AG-UI, /mcp and plimsoll over HTTP", cli_serve_main,
         cli_serve_help},
        {"init", "a starter config.json and agent in $HULL_HOME; with DIR, a new agent workspace", cli_init_main,
         cli_init_help},
        {"capabilities", "what hull serve's /v1 API supports (docs/COMPATIBILITY.md), checked against its routes",
         cli_capabilities_main, cli_capabilities_help},
        {"token", "make a bearer token for hull serve's --tokens file", cli_token_main, cli_token_help},
        {"env", "environments: packages installed once into layers, and networking", cli_env_main, cli_env_help},
        {"key", "create, list and delete the API keys of hull serve's /v1 API", cli_key_main, cli_key_help},
        {"skill", "add skills (a directory with a SKILL.md, or a zip) to a running hull serve, list them",
         cli_skill_main, cli_skill_help},
        {"db", "copy hull's state into another database (PostgreSQL), check one", cli_db_main, cli_db_help},
        {"vault", "rotate the key that seals the /v1 vaults' secrets, and seal them anew", cli_vault_main,
         cli_vault_help},
        {"deploy", "scheduled deployments of a running hull serve: create, list, run, pause", cli_deploy_main,
         cli_deploy_help},
        {"webhook", "subscribe URLs to hull serve's events (signed deliveries), list, delete, test them",
         cli_webhook_main, cli_webhook_help},
        {"session", "open, use and close sessions of a running hull serve", cli_session_main, cli_session_help},
        {"handle", "list, inspect, query and read a session's data handles", cli_handle_main, cli_handle_help},
        {"read-document", "read a PDF, Office, OpenDocument, HTML or Markdown file (parsed in a sandbox)",
         cli_document_main, cli_document_help},
        {"mcp", "serve hull's sandbox tools to an MCP client (Claude Desktop, Claude Code) over stdio", cli_mcp_main,
         cli_mcp_help},
        {"worker", "a self-hosted worker: runs a self_hosted environment's sessions' tools in local sandboxes",
         cli_worker_main, cli_worker_help},
        {"mock-model", "a scripted model server (OpenAI and Anthropic formats) for offline tests", cli_mock_model_main,
         cli_mock_model_help},
};

void cli_error(const char *cmd, const char *fmt, ...) {
        va_list ap;
        fprintf(stderr, "hull: %s%s", cmd ? cmd : "", cmd ? ": " : "");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

int cli_usage_error(const char *cmd, int status, const char *fmt, ...) {
        va_list ap;
        fprintf(stderr, "hull: %s: ", cmd);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, " (run 'hull %s --help')\n", cmd);
        return status;
}

void cli_report(const char *cmd, const hull_error *e) {
        const char *msg = e->msg[0] ? e->msg : "unknown error";
        size_t n = strlen(cmd);
        if (strncmp(msg, cmd, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ') /* "serve: serve: ..." */
                msg += n + 2;
        cli_error(cmd, "%s", msg);
}

static void main_help(void) {
        printf("hull %s: a self-hosted runtime for AI agents.\n\n"
               "Usage: hull COMMAND [OPTIONS] [ARGS]\n"
               "       hull --help | --version\n"
               "       hull help COMMAND\n\n"
               "Commands:\n",
               HULL_VERSION);
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                printf("  %-10s %s\n", commands[i].name, commands[i].summary);
        printf("\nRun 'hull COMMAND --help' for a command's options.\n"
               "Exit status: 0 on success, 1 on failure, 2 on a usage error; 'hull exec' passes on\n"
               "the command's status and uses 124 (timeout), 125 (hull or the sandbox failed) and\n"
               "128+N (killed by signal N); 'hull session exec' and 'cell' pass on the status of what\n"
               "ran (124: timeout).\n");
}

static const cli_command *find_command(const char *name) {
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(commands[i].name, name) == 0)
                        return &commands[i];
        return NULL;
}

/* Make sure fds 0-2 exist, so no file hull opens lands on them. */
static void ensure_std_fds(void) {
        for (int fd = 0; fd < 3; fd++)
                if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
                        int n = open("/dev/null", O_RDWR);
                        if (n >= 0 && n != fd)
                                close(n);
                }
}

/* `hull __reap-children`: what the zygote's waiting parent of a session's interpreter execs
 * (runtime/zygote.py, run_a): waits for its children, then exits. Not a user's command. */
static _noreturn_ void reap_children(void) {
        (void) prctl(PR_SET_NAME, "hull-reaper");
        for (;;)
                if (wait(NULL) < 0 && errno != EINTR) /* _exit: nothing to flush, no exit handlers (a
                                                       * sanitizer's leak check stops the process's
                                                       * threads with ptrace, which a reaper's wait
                                                       * can take from it) */
                        _exit(errno == ECHILD ? CLI_EXIT_OK : CLI_EXIT_FAILURE);
}

int main(int argc, char **argv) {
        if (argc == 2 && strcmp(argv[1], "__reap-children") == 0)
                reap_children();
        ensure_std_fds();
        if (argc < 2) {
                main_help();
                return CLI_EXIT_USAGE;
        }
        const char *arg = argv[1];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
                main_help();
                return CLI_EXIT_OK;
        }
        if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0) {
                printf("hull %s\n", HULL_VERSION);
                return CLI_EXIT_OK;
        }
        if (strcmp(arg, "help") == 0) {
                if (argc < 3) {
                        main_help();
                        return CLI_EXIT_OK;
                }
                const cli_command *c = find_command(argv[2]);
                if (!c) {
                        cli_error(NULL, "unknown command '%s' (run 'hull --help' for the list)", argv[2]);
                        return CLI_EXIT_USAGE;
                }
                c->help();
                return CLI_EXIT_OK;
        }
        const cli_command *c = find_command(arg);
        if (!c) {
                cli_error(NULL, "unknown command '%s' (run 'hull --help' for the list)", arg);
                return CLI_EXIT_USAGE;
        }
        return c->run(argc - 1, argv + 1);
}
