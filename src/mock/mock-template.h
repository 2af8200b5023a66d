/* mock-template.h: placeholders in hull mock-model's scripted answers (docs/MOCK-MODEL.md,
 * "Templates"): a step's text and its tool calls' inputs may quote the tool results of the
 * request's conversation. {{last_tool_result}} and {{tool_result:N}} (the N-th, from 1), each
 * optionally followed by filters: |line:K (the K-th line, from 1) and |trim (blanks off both
 * ends), e.g. {{tool_result:2|line:3|trim}}. A missing result, or line, is "". Anything else in
 * {{...}} is left as written. All pure. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "error.h"
#include "mock-script.h"

/* The tool results of one request's conversation, their text in order, and the last one. */
typedef struct mock_results {
        mock_strs all;
        const char *last; /* in all, or NULL */
} mock_results;

/* The tool results of body (a request of api, as parsed): OpenAI, every message with role "tool"
 * (its content string, or its text parts joined by "\n"), the last one last; Anthropic, every
 * tool_result block of the user messages (its content string, or its text blocks joined by
 * "\n"), the last one the last block of the last user message (none when that has none).
 * Returns 0 with *ret (mock_results_done), or -ENOMEM. */
int mock_results_of(mock_api api, const json_t *body, mock_results *ret);
void mock_results_done(mock_results *r);

/* Check s's placeholders: 1 when it has one, 0 when none, -EINVAL (with *e saying which and
 * what is expected) when one that names a tool result is malformed. */
int mock_template_check(const char *s, hull_error *e);

/* s with its placeholders replaced from res (NULL: none); json: each replacement escaped as the
 * inside of a JSON string. Returns 0 with *ret, -E2BIG past MOCK_TEMPLATE_BYTES_MAX, or -ENOMEM. */
int mock_template_expand(const char *s, const mock_results *res, bool json, char **ret);

/* *ret: st with its text, pieces and tool calls expanded from res (the rest shared with st).
 * Returns 0 (mock_step_expanded_done(ret) when done), -E2BIG when the text, the arguments and the
 * inputs' strings come to more than MOCK_TEMPLATE_BYTES_MAX, or -ENOMEM. */
int mock_step_expand(const mock_step *st, const mock_results *res, mock_step *ret);
void mock_step_expanded_done(mock_step *st);
