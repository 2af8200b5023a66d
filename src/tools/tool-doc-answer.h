/* tool-doc-answer.h: hull-docread's answer, read and judged (pure, fuzzed: fuzz/fuzz-doc-answer.c).
 * The parser runs in a sandbox over a document that may be hostile, so its answer is untrusted
 * input: tool-document.c takes it only through these. */
#pragma once

#include <jansson.h>
#include <stddef.h>

/* The parser's answer in out[0..len): a JSON object with "text_bytes": N in place of "text", a
 * newline, then the text's N bytes as they are (--text-apart), or one JSON object with its "text".
 * Returns the object with "text" among its members in the parser's order, or NULL: not JSON,
 * bytes after it that are not the text, a text that is not UTF-8 or holds a NUL. The shape is
 * doc_answer_check's to judge. */
json_t *doc_answer_load(const char *out, size_t len);

/* NULL when a (doc_answer_load's) has exactly the parser's shape within hull's bounds
 * (DOCREAD_* in limits.h); else what is wrong, for an error message. */
const char *doc_answer_check(const json_t *a);

/* s (the parser's message, a file's name: data, not trusted) into buf as text fit to show: control
 * characters and bytes that are not UTF-8 dropped, at most 400 bytes, cut between characters. */
void doc_clean_message(const char *s, char *buf, size_t size);
