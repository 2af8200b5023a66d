/* cli-prompt.h: the prompt of `hull chat`, local (cli-chat.c) and with --server
 * (cli-chat-remote.c): the lines typed, read with libedit on a terminal (editing, history in
 * $HULL_HOME/chats/history) or as plain lines from stdin otherwise; /exit and /quit; the signals
 * of a chat (Ctrl-C interrupts a turn, SIGTERM and SIGHUP end the chat). */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>

/* What a line's callback answers. */
enum {
        CLI_PROMPT_GO_ON = 0, /* read the next line */
        CLI_PROMPT_END = 1,   /* end the chat */
};

/* Called with each line entered: leading blanks skipped, never empty, never /exit or /quit (the
 * loop ends the chat on those). Returns CLI_PROMPT_GO_ON or CLI_PROMPT_END. */
typedef int (*cli_prompt_line_fn)(void *userdata, const char *line);

/* Install the chat's handlers of SIGINT (sets the interrupt flag), SIGTERM and SIGHUP (set it and
 * ask the chat to end after the turn in flight), without SA_RESTART so that a read in progress
 * returns. */
void cli_prompt_signals(void);

/* The flag SIGINT sets: a turn in flight watches it (and may clear it once it has acted). The
 * loop clears it before each line. */
atomic_bool *cli_prompt_interrupt(void);

/* True once SIGTERM or SIGHUP asked the chat to end. */
bool cli_prompt_quitting(void);

/* Read lines and hand each to on_line until the input ends, /exit or /quit, a quit signal or
 * on_line's CLI_PROMPT_END. A line over CLI_CHAT_LINE_MAX bytes is dropped with a note on stderr
 * ("hull: CMD: ..."); Ctrl-C at the prompt starts a fresh line. Returns 0, or -ENOMEM (nothing
 * could be read). */
int cli_prompt_loop(const char *cmd, cli_prompt_line_fn on_line, void *userdata);
