/* plimsoll-internal.h: what plimsoll.c, plimsoll-parse.c and plimsoll-answer.c share beyond
 * plimsoll.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The end of every refusal of a request that provably ran nothing. */
#define NOTHING_RAN "; nothing ran"

/* Copy at most size - 1 bytes of s into dst, NUL-terminated, not cutting a UTF-8 sequence. */
void plim_copy_utf8(char *dst, size_t size, const char *s);

/* A session ID hull could have issued: 1 to PLIM_SESSION_ID_MAX of [0-9a-f]. */
bool plim_session_id_is_valid(const char *s, size_t n);
