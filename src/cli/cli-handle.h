/* cli-handle.h: `hull handle`, a client of the data handles of hull serve's sessions (cli-handle.c). */
#pragma once

int cli_handle_main(int argc, char **argv);
void cli_handle_help(void);
