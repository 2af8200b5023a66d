/* cli.h: what the command implementations share: the error line and the usage-error exit. */
#pragma once

#include "error.h"

/* Exit statuses of hull's own commands (hull exec has its own, see sbx.h). */
enum {
        CLI_EXIT_OK = 0,
        CLI_EXIT_FAILURE = 1,
        CLI_EXIT_USAGE = 2,
};

/* Print "hull: CMD: message" as one line on stderr. */
void cli_error(const char *cmd, const char *fmt, ...) _printf_(2, 3);

/* A usage error of command cmd: print "hull: CMD: message (run 'hull CMD --help')" as one line on
 * stderr and return status (the command's exit status for usage errors). */
int cli_usage_error(const char *cmd, int status, const char *fmt, ...) _printf_(3, 4);

/* Print the hull_error of a failed call as one line on stderr. */
void cli_report(const char *cmd, const hull_error *e);

int cli_exec_main(int argc, char **argv);
void cli_exec_help(void);

int cli_verify_main(int argc, char **argv);
void cli_verify_help(void);

int cli_serve_main(int argc, char **argv);
void cli_serve_help(void);

int cli_db_main(int argc, char **argv);
void cli_db_help(void);

int cli_vault_main(int argc, char **argv);
void cli_vault_help(void);
int cli_webhook_main(int argc, char **argv);
void cli_webhook_help(void);

int cli_deploy_main(int argc, char **argv);
void cli_deploy_help(void);

int cli_token_main(int argc, char **argv);
void cli_token_help(void);

int cli_document_main(int argc, char **argv);
void cli_document_help(void);

int cli_mock_model_main(int argc, char **argv);
void cli_mock_model_help(void);

int cli_run_main(int argc, char **argv);
void cli_run_help(void);

int cli_chat_main(int argc, char **argv);
void cli_chat_help(void);

/* hull chat --server (cli-chat-remote.c): argv as hull chat got it. */
int cli_chat_remote_main(int argc, char **argv);
void cli_chat_remote_help(void);

int cli_env_main(int argc, char **argv);
void cli_env_help(void);

int cli_key_main(int argc, char **argv);
void cli_key_help(void);
int cli_skill_main(int argc, char **argv);
void cli_skill_help(void);

int cli_init_main(int argc, char **argv);
void cli_init_help(void);
/* hull init DIR (cli-init-workspace.c): a new workspace; config_text is config.json's. */
int cli_init_workspace(const char *dir, const char *model, const char *config_text, hull_error *e);
int cli_capabilities_main(int argc, char **argv);
void cli_capabilities_help(void);

int cli_mcp_main(int argc, char **argv);
void cli_mcp_help(void);
int cli_worker_main(int argc, char **argv);
void cli_worker_help(void);
