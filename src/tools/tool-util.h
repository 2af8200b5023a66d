/* tool-util.h: what the built-in tools share (src/tools/tool-*.c). Not a public interface. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dynbuf.h"
#include "error.h"
#include "limits.h"
#include "ss.h"
#include "tool.h"

/* Fill *o with an error result for the model (a formatted line) and return 0: a failure the
 * model should see and adapt to. */
int tool_error(tool_output *o, const char *fmt, ...) _printf_(2, 3);

/* Hand the text in b to *o (its bytes, or a note when it could not be allocated). Returns 0. */
int tool_text(tool_output *o, dynbuf *b, bool is_error);

/* Resolve the path in input[key] through the workspace jail (ws_path_resolve) into ret. A
 * missing optional key gives "."; a refusal fills *o with it and returns 1 (the caller returns
 * 0); 0 on success. */
int tool_path(const json_t *input, const char *key, bool optional, char ret[WS_PATH_MAX + 1], tool_output *o);

/* The path as the model sees it: /workspace/REL ("/workspace" for the root), into ret. */
const char *tool_shown_path(const char *rel, char ret[WS_PATH_MAX + 16]);

/* Append len bytes of untrusted output as text: invalid UTF-8 and NUL bytes become U+FFFD. */
void tool_add_bytes(dynbuf *b, const char *data, size_t len);

/* A captured stream (head and tail, cut in the middle when truncated: half is the head's size)
 * appended under a header when not empty. */
void tool_add_stream(dynbuf *b, const char *header, const char *data, size_t len, bool truncated, size_t half);

/* Milliseconds left until the call's deadline (at least 1), capped at want (0: no cap). */
uint64_t tool_time_left(const tool_ctx *c, uint64_t want);

/* An integer argument (5 and 5.0 both), or def when absent. */
int64_t tool_int(const json_t *input, const char *key, int64_t def);

/* A boolean argument, or def when absent. */
bool tool_bool(const json_t *input, const char *key, bool def);

/* The summaries of handles (an array), as short lines for the model: "h3: table, 1000 rows, ...".
 * Appended to b under a header when there are any. */
void tool_add_handles(dynbuf *b, const json_t *summaries);

/* A dynbuf for a tool's text: bounded by AGENT_TOOL_TEXT_MAX. */
void tool_buf_init(dynbuf *b);
