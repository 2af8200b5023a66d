/* tool-document.h: documents read into data handles (issue 25): read_document, the built-in tool
 * (tools-sandbox.h), and what it rests on, also used where a document is added as a handle.
 *
 * A document's bytes are never parsed in this process: hull-docread (src/docread/) parses them in
 * a fresh container sandbox (no network, DOCREAD_TIMEOUT_MS, DOCREAD_MEMORY_BYTES through the
 * memory cgroup when hull runs as root, and its own address-space limit in any case, DOCREAD_PIDS
 * processes), the document on its stdin (a sealed copy), its one JSON answer on stdout (with the
 * text after it, apart: --text-apart, so that jansson need not lex it). That answer is untrusted
 * input: its size is bounded, its shape checked, every string checked, and only then does it
 * become handles: a text handle (the text, page markers "[page N]") and one table handle per
 * table (CSV ingested by the store, column types inferred). */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "dynbuf.h"
#include "error.h"
#include "ss.h"

typedef struct doc_read_opts {
        const char *name;    /* the file's name: its extension hints the format; may be NULL */
        bool ocr;            /* recognize scanned pages and images */
        const char *langs;   /* OCR languages ("eng", "eng+deu"); NULL: eng */
        const char *pages;   /* "1-3,7"; NULL: all */
        int cancel_fd;       /* readable: stop now; -1: none */
        uint64_t timeout_ms; /* 0: DOCREAD_TIMEOUT_MS; never more */
} doc_read_opts;

/* The parser's path: $HULL_DOCREAD, else hull-docread next to this program's binary, else in
 * ../libexec/hull/ from it. Returns 0 and ret, or -ENOENT with *e saying where it looked. */
int doc_parser_path(char *ret, size_t size, hull_error *e);

/* Parse the len bytes at data in the sandbox. Returns 0 and *ret (the checked answer: {"format",
 * "pages", "pages_read", "ocr", "text", "headings", "tables": [{"name", "page", "rows", "cols",
 * "csv"}], "notes"}), or a negative errno with *e: what was wrong with the document (-EBADMSG,
 * -EMEDIUMTYPE, -EFBIG, -E2BIG...) or the parser's end (-ETIMEDOUT, -ENOMEM when it ran out of
 * memory, -EPROTO for an answer that is not what hull-docread writes, -ENOENT no parser). */
int doc_parse(const void *data, size_t len, const doc_read_opts *o, json_t **ret, hull_error *e);

/* Where doc_store puts a handle: len bytes of format f as a new handle, its summary in
 * *ret_summary; a negative errno with *e on failure (ss_handles_spill's or hd_put's). */
typedef int doc_put_fn(void *ud, hd_format f, const char *source, const void *data, size_t len, json_t **ret_summary,
                       hull_error *e);

/* Keep a parsed document (doc_parse's answer) as handles through put: its text as a text handle,
 * each table as a table handle (source "read_document NAME: ..."). Returns 0 with *ret_handles
 * (an array of summaries, text first) and the summary for the model appended to *out, or a
 * negative errno with *e (put's errors; handles made before the failure stay). A table the
 * store refuses (not a quota) is named in *out and skipped. */
int doc_store(doc_put_fn *put, void *ud, const char *name, const json_t *doc, json_t **ret_handles, dynbuf *out,
              hull_error *e);

/* put over a session's store (ss_handles_spill); ud is a tool_ctx. */
doc_put_fn doc_put_session;

/* hs_config.read_document (hull serve's `hull handle add SESSION report.pdf`): the document in
 * fd (an upload, at most DOCREAD_INPUT_MAX bytes), read into handles of session s inside its call.
 * Returns 0 and *ret = {"summary": text, "handles": [summaries]}, or a negative errno with *e
 * (the document's error, the parser's, the store's). */
int doc_read_fd(ss_manager *m, ss_session *s, const char *name, int fd, json_t **ret, hull_error *e);
