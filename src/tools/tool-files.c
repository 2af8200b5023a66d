/* tool-files.c: the file tools of the Claude Managed Agents toolset, with Claude Code's input
 * schemas, over the session core's workspace operations (the jail, as the sandbox user): read
 * (numbered lines, paginated by line), write, edit (a unique match, or every one), glob and grep. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool-util.h"
#include "tools-sandbox.h"

/* A failed workspace operation, worded for the model. */
static int file_error(tool_output *ret, int r, const char *tool, const char *shown, const hull_error *e) {
        switch (-r) {
        case ENOENT:
                return tool_error(ret, "%s: %s does not exist (glob finds files by name)", tool, shown);
        case EISDIR:
                return tool_error(ret, "%s: %s is a directory (glob lists what is in it)", tool, shown);
        default:
                return tool_error(ret, "%s: %s", tool, e->msg);
        }
}

/* ---- read ---- */

typedef struct reader {
        dynbuf *out;
        dynbuf line; /* the current line's first bytes */
        size_t line_bytes;
        uint64_t lineno; /* of the current line */
        uint64_t first, last_shown;
        uint64_t limit, shown;
        bool cut; /* the character cap was reached */
} reader;

static void line_emit(reader *r) {
        (void) dynbuf_addf(r->out, "%6" PRIu64 "\t", r->lineno);
        size_t keep = r->line.len, chars = 0, i;
        for (i = 0; i < keep && chars < TOOL_READ_LINE_CHARS; i++)
                chars += ((unsigned char) r->line.buf[i] & 0xc0) != 0x80;
        while (i < keep && ((unsigned char) r->line.buf[i] & 0xc0) == 0x80)
                i++;
        tool_add_bytes(r->out, r->line.buf ? r->line.buf : "", i);
        if (i < r->line_bytes)
                (void) dynbuf_addf(r->out, " [... %zu more bytes of this line]", r->line_bytes - i);
        (void) dynbuf_add_str(r->out, "\n");
        r->shown++;
        r->last_shown = r->lineno;
        dynbuf_reset(&r->line);
        r->line_bytes = 0;
        if (r->out->len >= TOOL_READ_CHARS_MAX)
                r->cut = true;
}

/* Feed bytes; returns true when enough was shown, with *used the bytes taken. */
static bool reader_feed(reader *r, const char *p, size_t n, size_t *used) {
        *used = n;
        for (size_t i = 0; i < n; i++) {
                if (r->lineno < r->first) {
                        if (p[i] == '\n')
                                r->lineno++;
                        continue;
                }
                if (p[i] == '\n') {
                        line_emit(r);
                        r->lineno++;
                        if (r->shown >= r->limit || r->cut) {
                                *used = i + 1;
                                return true;
                        }
                        continue;
                }
                if (r->line.len < TOOL_READ_LINE_CHARS * 4)
                        (void) dynbuf_add(&r->line, p + i, 1);
                r->line_bytes++;
        }
        return false;
}

static int read_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        char rel[WS_PATH_MAX + 1], shown[WS_PATH_MAX + 16];
        if (tool_path(input, "file_path", false, rel, ret))
                return 0;
        tool_shown_path(rel, shown);
        int64_t offset = tool_int(input, "offset", 1), limit = tool_int(input, "limit", TOOL_READ_LINES_DEFAULT);
        _cleanup_dynbuf_ dynbuf out;
        tool_buf_init(&out);
        reader rd = {.out = &out,
                     .lineno = 1,
                     .first = offset < 1 ? 1 : (uint64_t) offset,
                     .limit = limit < 1 ? 1 : MIN((uint64_t) limit, (uint64_t) TOOL_READ_LINES_MAX)};
        dynbuf_init(&rd.line, TOOL_READ_LINE_CHARS * 4);
        uint64_t pos = 0, size = 0;
        bool eof = false, done = false;
        int r = 0;
        hull_error re = {0};
        while (!done && !eof) {
                ws_read_result rr = {0};
                r = ss_read(c->ss, c->session, rel, pos, TOOL_READ_CHUNK, &rr, &re);
                if (r < 0)
                        break;
                if (pos == 0) {
                        size = rr.size;
                        if (memchr(rr.data, '\0', MIN(rr.len, (size_t) TOOL_BINARY_PROBE))) {
                                ws_read_result_done(&rr);
                                dynbuf_free(&rd.line);
                                return tool_error(ret,
                                                  "read: %s is a binary file of %" PRIu64
                                                  " bytes; look at it with code (run_python, or bash: file, xxd, "
                                                  "head -c)",
                                                  shown, size);
                        }
                }
                size_t used = 0;
                done = reader_feed(&rd, rr.data, rr.len, &used);
                pos += used;
                eof = rr.eof || rr.len == 0;
                ws_read_result_done(&rr);
                if (!done && rd.shown == 0 && pos > TOOL_READ_SCAN_MAX) {
                        dynbuf_free(&rd.line);
                        return tool_error(ret,
                                          "read: line %" PRIu64 " is more than %llu bytes into %s; use bash (sed -n, "
                                          "tail) or grep to get there",
                                          rd.first, (unsigned long long) TOOL_READ_SCAN_MAX, shown);
                }
        }
        if (r < 0) {
                dynbuf_free(&rd.line);
                if (pos == 0)
                        return file_error(ret, r, "read", shown, &re);
                *e = re; /* it changed under us, or memory ran out: the loop reports it */
                return r;
        }
        if (eof && !done && rd.lineno >= rd.first && rd.line_bytes > 0)
                line_emit(&rd); /* the last line, without a newline */
        dynbuf_free(&rd.line);
        uint64_t lines_total = rd.lineno - (rd.line_bytes == 0 && eof ? 1 : 0);
        if (size == 0 && eof)
                (void) dynbuf_addf(&out, "[%s is empty]", shown);
        else if (rd.shown == 0)
                (void) dynbuf_addf(&out, "[%s has %" PRIu64 " lines: offset %" PRIu64 " is past its end]", shown,
                                   eof ? lines_total : rd.lineno, rd.first);
        else if (rd.cut && (!eof || pos < size))
                (void) dynbuf_addf(&out,
                                   "[output cut at about %u characters after line %" PRIu64
                                   ": continue with offset=%" PRIu64 " and a smaller limit, or grep for what you need]",
                                   TOOL_READ_CHARS_MAX, rd.last_shown, rd.last_shown + 1);
        else if (done && pos < size)
                (void) dynbuf_addf(&out,
                                   "[lines %" PRIu64 "-%" PRIu64
                                   " shown; the file goes on: continue with offset=%" PRIu64 "]",
                                   rd.first, rd.last_shown, rd.last_shown + 1);
        return tool_text(ret, &out, false);
}

const tool_def tool_read = {
        .name = "read",
        .description = "Read a file of the workspace, with line numbers (like cat -n). By default up to 2000 lines "
                       "from the start; give offset (the first line, from 1) and limit (lines) to read a part of a "
                       "long file. Long lines and very long answers are cut, with a note saying how to go on.",
        .input_schema = "{\"type\": \"object\", \"properties\": {"
                        "\"file_path\": {\"type\": \"string\", \"description\": \"The file to read: a path under "
                        "/workspace (absolute, or relative to it)\"}, "
                        "\"offset\": {\"type\": \"integer\", \"minimum\": 0, \"description\": \"The line number to "
                        "start from (1 is the first line)\"}, "
                        "\"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 100000, \"description\": "
                        "\"The number of lines to read\"}}, "
                        "\"required\": [\"file_path\"], \"additionalProperties\": false}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .timeout_ms = TOOL_FILES_TIMEOUT_MS,
        .needs_session = true,
        .record_kind = "read",
        .run = read_run,
};

/* ---- write ---- */

static int write_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        char rel[WS_PATH_MAX + 1], shown[WS_PATH_MAX + 16];
        const json_t *content = json_object_get(input, "content");
        if (tool_path(input, "file_path", false, rel, ret))
                return 0;
        tool_shown_path(rel, shown);
        if (strcmp(rel, ".") == 0)
                return tool_error(ret, "write: /workspace is a directory: name a file under it");
        hull_error we = {0};
        json_t *rec = NULL;
        int r = ss_write(c->ss, c->session, rel, json_string_value(content), json_string_length(content), false, &rec,
                         &we);
        json_decref(rec);
        if (r < 0)
                return file_error(ret, r, "write", shown, &we);
        if (asprintf(&ret->text, "wrote %zu bytes to %s", json_string_length(content), shown) < 0)
                return hull_err(e, -ENOMEM, "write: out of memory");
        return 0;
}

const tool_def tool_write = {
        .name = "write",
        .description = "Write a file of the workspace: create it (and its directories) or replace it whole with "
                       "content. To change part of a file, use edit.",
        .input_schema = "{\"type\": \"object\", \"properties\": {"
                        "\"file_path\": {\"type\": \"string\", \"description\": \"The file to write: a path under "
                        "/workspace (absolute, or relative to it)\"}, "
                        "\"content\": {\"type\": \"string\", \"description\": \"The content to write\"}}, "
                        "\"required\": [\"file_path\", \"content\"], \"additionalProperties\": false}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .timeout_ms = TOOL_FILES_TIMEOUT_MS,
        .needs_session = true,
        .run = write_run,
};

/* ---- edit ---- */

/* Every non-overlapping occurrence of old replaced by new, into *ret. Returns the count. */
static size_t replace_all(const char *s, size_t len, const char *old, size_t old_len, const char *new, size_t new_len,
                          dynbuf *ret) {
        size_t count = 0, at = 0;
        while (at <= len) {
                const char *hit = old_len <= len - at ? memmem(s + at, len - at, old, old_len) : NULL;
                if (!hit)
                        break;
                (void) dynbuf_add(ret, s + at, (size_t) (hit - (s + at)));
                (void) dynbuf_add(ret, new, new_len);
                at = (size_t) (hit - s) + old_len;
                count++;
        }
        (void) dynbuf_add(ret, s + at, len - at);
        return count;
}

static int edit_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        char rel[WS_PATH_MAX + 1], shown[WS_PATH_MAX + 16];
        const json_t *old = json_object_get(input, "old_string"), *new = json_object_get(input, "new_string");
        bool all = tool_bool(input, "replace_all", false);
        if (tool_path(input, "file_path", false, rel, ret))
                return 0;
        tool_shown_path(rel, shown);
        size_t ol = json_string_length(old), nl = json_string_length(new);
        if (ol == 0)
                return tool_error(ret, "edit: old_string is empty; to create a file, use write");
        if (ol == nl && memcmp(json_string_value(old), json_string_value(new), ol) == 0)
                return tool_error(ret, "edit: old_string and new_string are the same: nothing to change");
        hull_error we = {0};
        json_t *rec = NULL;
        if (!all) {
                int r = ss_edit(c->ss, c->session, rel, json_string_value(old), ol, json_string_value(new), nl, &rec,
                                &we);
                json_decref(rec);
                if (r == -ENODATA)
                        return tool_error(ret,
                                          "edit: old_string was not found in %s: it must match exactly, spaces and "
                                          "line breaks included (read the file to see them)",
                                          shown);
                if (r == -ENOTUNIQ)
                        return tool_error(ret,
                                          "edit: %s (in %s): give more of the surrounding text so that it "
                                          "matches once, or set replace_all to change every one",
                                          we.msg, shown);
                if (r < 0)
                        return file_error(ret, r, "edit", shown, &we);
                if (asprintf(&ret->text, "replaced 1 occurrence in %s", shown) < 0)
                        return hull_err(e, -ENOMEM, "edit: out of memory");
                return 0;
        }
        ws_read_result rr = {0};
        int r = ss_read(c->ss, c->session, rel, 0, WS_EDIT_MAX_BYTES, &rr, &we);
        if (r < 0)
                return file_error(ret, r, "edit", shown, &we);
        if (!rr.eof) {
                ws_read_result_done(&rr);
                return tool_error(ret, "edit: %s is larger than %llu bytes; change it with code (run_python, sed)",
                                  shown, (unsigned long long) WS_EDIT_MAX_BYTES);
        }
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, WS_WRITE_MAX_BYTES);
        size_t n = replace_all(rr.data, rr.len, json_string_value(old), ol, json_string_value(new), nl, &b);
        ws_read_result_done(&rr);
        if (n == 0)
                return tool_error(ret,
                                  "edit: old_string was not found in %s: it must match exactly, spaces and line "
                                  "breaks included (read the file to see them)",
                                  shown);
        r = ss_write(c->ss, c->session, rel, b.buf ? b.buf : "", b.len, false, &rec, &we);
        json_decref(rec);
        if (r < 0)
                return file_error(ret, r, "edit", shown, &we);
        if (asprintf(&ret->text, "replaced %zu occurrence%s in %s", n, n == 1 ? "" : "s", shown) < 0)
                return hull_err(e, -ENOMEM, "edit: out of memory");
        return 0;
}

const tool_def tool_edit = {
        .name = "edit",
        .description = "Replace an exact piece of text in a file of the workspace. old_string must occur exactly "
                       "once (give enough surrounding text), unless replace_all is true, which replaces every "
                       "occurrence.",
        .input_schema = "{\"type\": \"object\", \"properties\": {"
                        "\"file_path\": {\"type\": \"string\", \"description\": \"The file to change: a path under "
                        "/workspace (absolute, or relative to it)\"}, "
                        "\"old_string\": {\"type\": \"string\", \"description\": \"The text to replace\"}, "
                        "\"new_string\": {\"type\": \"string\", \"description\": \"The text to put in its place\"}, "
                        "\"replace_all\": {\"type\": \"boolean\", \"description\": \"Replace every occurrence "
                        "(default false)\"}}, "
                        "\"required\": [\"file_path\", \"old_string\", \"new_string\"], "
                        "\"additionalProperties\": false}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .timeout_ms = TOOL_FILES_TIMEOUT_MS,
        .needs_session = true,
        .run = edit_run,
};

/* ---- glob ---- */

/* A pattern as the model writes it: relative, or absolute under /workspace. Returns 0 or 1 (a
 * refusal in *ret). */
static int pattern_rel(const char *pattern, const char *base, char *out, size_t size, tool_output *ret) {
        const char *p = pattern;
        if (strcmp(p, "/workspace") == 0)
                p = ".";
        else if (strncmp(p, "/workspace/", 11) == 0)
                p += 11;
        else if (p[0] == '/') {
                tool_error(ret,
                           "glob: the pattern '%.200s' is outside /workspace: give one relative to it, e.g. "
                           "**/*.csv",
                           pattern);
                return 1;
        }
        int k = strcmp(base, ".") == 0 ? snprintf(out, size, "%s", p) : snprintf(out, size, "%s/%s", base, p);
        if (k < 0 || (size_t) k >= size) {
                tool_error(ret, "glob: the pattern is too long");
                return 1;
        }
        return 0;
}

static int glob_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        char base[WS_PATH_MAX + 1], full[WS_PATH_MAX + 1], shown[WS_PATH_MAX + 16];
        const char *pattern = json_string_value(json_object_get(input, "pattern"));
        if (tool_path(input, "path", true, base, ret))
                return 0;
        if (pattern_rel(pattern, base, full, sizeof(full), ret))
                return 0;
        ws_glob_opts o = {.results_max = TOOL_GLOB_SHOWN_MAX, .time_ms = tool_time_left(c, WS_GLOB_TIME_MS_DEFAULT)};
        ws_glob_result g = {0};
        hull_error ge = {0};
        int r = ss_glob(c->ss, c->session, full, &o, &g, &ge);
        if (r < 0)
                return tool_error(ret, "glob: %s", ge.msg);
        _cleanup_dynbuf_ dynbuf b;
        tool_buf_init(&b);
        for (size_t i = 0; i < g.count; i++) {
                (void) dynbuf_addf(&b, "%s\n", tool_shown_path(g.paths[i], shown));
        }
        if (g.count == 0)
                (void) dynbuf_addf(&b, "no files match %s", full);
        if (g.stopped & WS_STOP_RESULTS)
                (void) dynbuf_addf(&b, "[only the first %u matches: narrow the pattern]", TOOL_GLOB_SHOWN_MAX);
        else if (g.stopped)
                (void) dynbuf_addf(&b, "[the search stopped early (%s): the list may be incomplete]",
                                   ws_stop_reason(g.stopped));
        ws_glob_result_done(&g);
        (void) e;
        return tool_text(ret, &b, false);
}

const tool_def tool_glob = {
        .name = "glob",
        .description = "Find files of the workspace by name pattern: * and ? within a name, [...] classes, ** for "
                       "any number of directories (\"**/*.csv\", \"src/**/*.py\"). Answers with the matching paths, "
                       "sorted; directories end in /.",
        .input_schema = "{\"type\": \"object\", \"properties\": {"
                        "\"pattern\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"The glob pattern "
                        "to match\"}, "
                        "\"path\": {\"type\": \"string\", \"description\": \"The directory to search in (default: "
                        "/workspace)\"}}, "
                        "\"required\": [\"pattern\"], \"additionalProperties\": false}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .timeout_ms = TOOL_FILES_TIMEOUT_MS,
        .needs_session = true,
        .record_kind = "glob",
        .run = glob_run,
};

/* ---- grep ---- */

static int grep_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        char base[WS_PATH_MAX + 1], shown[WS_PATH_MAX + 16];
        const char *pattern = json_string_value(json_object_get(input, "pattern"));
        const char *glob = json_string_value(json_object_get(input, "glob"));
        const char *mode = json_string_value(json_object_get(input, "output_mode"));
        if (!mode)
                mode = "files_with_matches";
        int64_t head = tool_int(input, "head_limit", TOOL_GREP_SHOWN_DEFAULT);
        size_t shown_max = head < 1 ? 1 : (size_t) MIN(head, (int64_t) TOOL_GREP_SHOWN_MAX);
        if (tool_path(input, "path", true, base, ret))
                return 0;
        /* The glob filters file names: a "**" prefix (as Claude Code takes it) adds nothing. */
        while (glob && strncmp(glob, "**/", 3) == 0)
                glob += 3;
        if (glob && strchr(glob, '/'))
                return tool_error(ret, "grep: glob filters file names and cannot hold a /: use path for the directory "
                                       "and e.g. *.py for the names");
        bool content = strcmp(mode, "content") == 0;
        ws_grep_opts o = {.path = strcmp(base, ".") == 0 ? NULL : base,
                          .glob = glob && glob[0] ? glob : NULL,
                          .ignore_case = tool_bool(input, "-i", false),
                          .matches_max = content ? shown_max + 1 : WS_GREP_MATCHES_MAX,
                          .time_ms = tool_time_left(c, WS_GREP_TIME_MS_DEFAULT)};
        ws_grep_result g = {0};
        hull_error ge = {0};
        int r = ss_grep(c->ss, c->session, pattern, &o, &g, &ge);
        if (r < 0)
                return tool_error(ret, "grep: %s", ge.msg);
        _cleanup_dynbuf_ dynbuf b;
        tool_buf_init(&b);
        size_t listed = 0, entries = 0;
        for (size_t i = 0; i < g.count; i++) {
                const ws_grep_match *m = &g.matches[i];
                bool new_file = i == 0 || strcmp(g.matches[i - 1].path, m->path) != 0;
                if (content) {
                        entries++;
                        if (listed >= shown_max)
                                continue;
                        (void) dynbuf_addf(&b, "%s:%" PRIu64 ":", tool_shown_path(m->path, shown), m->line);
                        tool_add_bytes(&b, m->text, m->text_len);
                        (void) dynbuf_add_str(&b, m->text_cut ? " [...]\n" : "\n");
                        listed++;
                } else if (new_file) {
                        entries++;
                        if (listed >= shown_max)
                                continue;
                        listed++;
                        if (strcmp(mode, "count") == 0) {
                                size_t n = 0;
                                for (size_t j = i; j < g.count && strcmp(g.matches[j].path, m->path) == 0; j++)
                                        n++;
                                (void) dynbuf_addf(&b, "%s:%zu\n", tool_shown_path(m->path, shown), n);
                        } else
                                (void) dynbuf_addf(&b, "%s\n", tool_shown_path(m->path, shown));
                }
        }
        if (g.count == 0)
                (void) dynbuf_addf(&b, "no matches for %s (%" PRIu64 " files searched)", pattern, g.files_searched);
        if (entries > listed)
                (void) dynbuf_addf(
                        &b, "[only the first %zu shown: narrow the pattern or the path, or raise head_limit]", listed);
        else if (g.stopped & ~(unsigned) WS_STOP_RESULTS)
                (void) dynbuf_addf(&b, "[the search stopped early (%s): results may be incomplete]",
                                   ws_stop_reason(g.stopped & ~(unsigned) WS_STOP_RESULTS));
        else if ((g.stopped & WS_STOP_RESULTS) && !content)
                (void) dynbuf_addf(&b, "[more than %u matching lines: the list of files may be incomplete]",
                                   WS_GREP_MATCHES_MAX);
        ws_grep_result_done(&g);
        (void) e;
        return tool_text(ret, &b, false);
}

const tool_def tool_grep = {
        .name = "grep",
        .description = "Search the contents of the workspace's files with a regular expression (PCRE). By default "
                       "lists the files that match; output_mode \"content\" shows the matching lines "
                       "(path:line:text), \"count\" the number of matching lines per file. Binary files and names "
                       "beginning with . are skipped.",
        .input_schema = "{\"type\": \"object\", \"properties\": {"
                        "\"pattern\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"The regular "
                        "expression to search for\"}, "
                        "\"path\": {\"type\": \"string\", \"description\": \"The file or directory to search "
                        "(default: /workspace)\"}, "
                        "\"glob\": {\"type\": \"string\", \"description\": \"Only files whose name matches this "
                        "glob, e.g. *.py\"}, "
                        "\"-i\": {\"type\": \"boolean\", \"description\": \"Ignore case\"}, "
                        "\"output_mode\": {\"type\": \"string\", \"enum\": [\"content\", \"files_with_matches\", "
                        "\"count\"], \"description\": \"What to show (default files_with_matches)\"}, "
                        "\"head_limit\": {\"type\": \"integer\", \"minimum\": 1, \"description\": \"Show at most "
                        "this many lines or files (default 100)\"}}, "
                        "\"required\": [\"pattern\"], \"additionalProperties\": false}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .timeout_ms = TOOL_FILES_TIMEOUT_MS,
        .needs_session = true,
        .record_kind = "grep",
        .run = grep_run,
};
