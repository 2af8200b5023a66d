/* dotenv.h: a `.env` file's assignments, read for configuration lookups only. hull never puts
 * them in its own environment (setenv) nor in a sandbox's: a key in .env configures hull, it is
 * not handed to code the model writes.
 *
 * The format, as the common tools read it: one KEY=VALUE per line; blank lines and lines starting
 * with '#' skipped; an optional leading "export "; KEY is [A-Za-z_][A-Za-z0-9_]*; spaces around
 * KEY and '=' ignored; VALUE either unquoted (trimmed; a " #" starts a comment), 'single-quoted'
 * (literal) or "double-quoted" (\n \r \t \" \\ escapes; may span lines). A later assignment of a
 * key replaces an earlier one. Pure; fuzzed (fuzz/fuzz-dotenv.c). */
#pragma once

#include <stddef.h>

#include "error.h"
#include "limits.h"

typedef struct dotenv dotenv;

/* Parse len bytes (a file's contents; NUL bytes refused). Returns 0 with *ret (dotenv_free), or
 * -EINVAL with *e naming the line and what is wrong, -E2BIG (over DOTENV_BYTES_MAX or
 * DOTENV_ENTRIES_MAX), -ENOMEM. */
int dotenv_parse(const char *buf, size_t len, dotenv **ret, hull_error *e);

/* Read and parse path. A missing file is an empty set (0). Returns 0 with *ret or a negative
 * errno with *e naming the file. */
int dotenv_load(const char *path, dotenv **ret, hull_error *e);

void dotenv_free(dotenv *d);
static inline void dotenv_freep(dotenv **d) {
        if (*d)
                dotenv_free(*d);
}
#define _cleanup_dotenv_ _cleanup_(dotenv_freep)

/* The value of key, or NULL (d may be NULL). Borrowed from d. */
const char *dotenv_get(const dotenv *d, const char *key);
size_t dotenv_count(const dotenv *d);
