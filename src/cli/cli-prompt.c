/* cli-prompt.c: the prompt loop of `hull chat` and `hull chat --server` (cli-prompt.h). On a
 * terminal, lines are read with libedit (loaded only then, src/shared/dlib-edit.h) with history
 * in $HULL_HOME/chats/history; otherwise (a pipe, or libedit missing) plain lines from stdin. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli-prompt.h"
#include "dlib-edit.h"
#include "fs-util.h"
#include "home.h"
#include "limits.h"
#include "macro.h"

/* Set by the signal handlers: the only state a handler can reach. */
static atomic_bool interrupted, quit;

/* SIGINT ends the turn in flight; SIGTERM and SIGHUP (the terminal closed) end the turn and then
 * the chat. */
static void on_signal(int sig) {
        if (sig != SIGINT)
                atomic_store(&quit, true);
        atomic_store(&interrupted, true);
}

void cli_prompt_signals(void) {
        struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: a read in progress returns */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
}

atomic_bool *cli_prompt_interrupt(void) {
        return &interrupted;
}

bool cli_prompt_quitting(void) {
        return atomic_load(&quit);
}

/* A line of input: libedit on a terminal, else stdin. */
typedef struct reader {
        const char *cmd;
        bool edit;
        char history[SBX_PATH_MAX];
        char *line; /* libedit's */
        char *buf;  /* a pipe's: CLI_CHAT_LINE_MAX bytes, a newline, a NUL */
} reader;

static void reader_init(reader *r, const char *cmd) {
        hull_error e = {0};
        char home[SBX_PATH_MAX];
        r->cmd = cmd;
        r->edit = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) && dlib_edit_load(&e);
        if (r->edit && home_resolve(home, &e) == 0) {
                if (path_join(r->history, sizeof(r->history), home, "chats/history") < 0)
                        r->history[0] = '\0';
                using_history();
                stifle_history((int) CLI_CHAT_HISTORY_MAX);
                (void) read_history(r->history);
        }
}

static void reader_done(reader *r) {
        free(r->line);
        free(r->buf);
}

static char *reader_edit(reader *r) {
        free(r->line);
        r->line = readline("> ");
        if (r->line && strlen(r->line) > CLI_CHAT_LINE_MAX) {
                fprintf(stderr, "hull: %s: a message over %u bytes was not sent\n", r->cmd, CLI_CHAT_LINE_MAX);
                r->line[0] = '\0';
        }
        if (r->line && r->line[0]) {
                add_history(r->line);
                if (r->history[0])
                        (void) write_history(r->history);
        }
        return r->line;
}

/* The next line, without its newline; NULL at the end, on a signal, or out of memory (*ret_oom). */
static char *reader_next(reader *r, bool *ret_oom) {
        if (r->edit)
                return reader_edit(r);
        if (!r->buf && !(r->buf = malloc(CLI_CHAT_LINE_MAX + 2))) {
                *ret_oom = true;
                return NULL;
        }
        for (;;) {
                if (!fgets(r->buf, CLI_CHAT_LINE_MAX + 2, stdin))
                        return NULL;
                size_t n = strlen(r->buf);
                if (n > 0 && r->buf[n - 1] == '\n') {
                        r->buf[n - 1] = '\0';
                        return r->buf;
                }
                if (n <= CLI_CHAT_LINE_MAX)
                        return r->buf; /* the last line, without its newline */
                int ch;                /* too long: the rest of the line is read and dropped, never held */
                while ((ch = getchar()) != EOF && ch != '\n')
                        ;
                fprintf(stderr, "hull: %s: a message over %u bytes was not sent\n", r->cmd, CLI_CHAT_LINE_MAX);
                if (ch == EOF)
                        return NULL;
        }
}

int cli_prompt_loop(const char *cmd, cli_prompt_line_fn on_line, void *userdata) {
        _cleanup_(reader_done) reader rd = {0};
        bool oom = false;
        reader_init(&rd, cmd);
        for (;;) {
                atomic_store(&interrupted, false);
                if (!rd.edit && isatty(STDERR_FILENO) && isatty(STDIN_FILENO)) {
                        fputs("> ", stderr);
                        fflush(stderr);
                }
                char *line = atomic_load(&quit) ? NULL : reader_next(&rd, &oom);
                if (atomic_load(&quit))
                        break;
                if (oom)
                        return -ENOMEM;
                if (!line) {
                        if (atomic_load(&interrupted)) { /* Ctrl-C at the prompt: a fresh line */
                                clearerr(stdin);
                                fputc('\n', stderr);
                                continue;
                        }
                        break;
                }
                line += strspn(line, " \t");
                if (!line[0])
                        continue;
                if (strcmp(line, "/exit") == 0 || strcmp(line, "/quit") == 0)
                        break;
                if (on_line(userdata, line) == CLI_PROMPT_END || atomic_load(&quit))
                        break;
        }
        return 0;
}
