/* cli-session.h: `hull session`, a client of hull serve's sessions (cli-session.c). What it
 * shares with the other clients of hull serve is in cli-client.h. */
#pragma once

int cli_session_main(int argc, char **argv);
void cli_session_help(void);
