/* tool-bash.c: the tools that run code in the session's sandbox: bash (ss_exec: /bin/sh -c, the
 * directory and exported variables carried from call to call), run_python (ss_cell: the
 * session's persistent interpreter, with the hull module's load, save, emit and publish
 * predefined) and run_javascript (ss_cell: the session's persistent Node.js context). Both answer with the head and
 * tail of stdout and stderr, how the code ended, and the handles it made. */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool-util.h"
#include "tools-sandbox.h"

static bool was_interrupted(const tool_ctx *c) {
        return c->cancel && atomic_load(c->cancel);
}

static int bash_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        const char *command = json_string_value(json_object_get(input, "command"));
        int64_t asked = tool_int(input, "timeout", (int64_t) TOOL_BASH_TIMEOUT_MS_DEFAULT);
        if (!command || !command[0])
                return tool_error(ret, "bash: command is empty");
        if (strlen(command) > SBX_SESSION_CMD_MAX)
                return tool_error(ret,
                                  "bash: the command is longer than %u bytes; write a script with write and run "
                                  "that",
                                  SBX_SESSION_CMD_MAX);
        if (asked < 1 || (uint64_t) asked > TOOL_BASH_TIMEOUT_MS_MAX)
                asked = (int64_t) TOOL_BASH_TIMEOUT_MS_DEFAULT;
        uint64_t timeout = tool_time_left(c, (uint64_t) asked);
        ss_exec_args a = {.command = command,
                          .timeout_ms = timeout,
                          .output_bytes = TOOL_OUTPUT_BYTES,
                          .cancel_fd = c->cancel_fd};
        ss_output out = {0};
        int r = ss_exec(c->ss, c->session, &a, &out, e);
        if (r < 0)
                return r;
        _cleanup_dynbuf_ dynbuf b;
        tool_buf_init(&b);
        tool_add_stream(&b, NULL, out.out, out.out_len, out.out_truncated, TOOL_OUTPUT_BYTES / 2);
        tool_add_stream(&b, "[stderr]", out.err, out.err_len, out.err_truncated, TOOL_OUTPUT_BYTES / 2);
        if (out.timed_out)
                (void) dynbuf_addf(
                        &b, "[timed out after %" PRIu64 " ms and stopped (exit code %d)%s]", timeout, out.exit_code,
                        (uint64_t) asked > timeout ? ": the turn's time ran short" : ": give a longer timeout");
        else if (was_interrupted(c))
                (void) dynbuf_addf(&b, "[interrupted by the user (exit code %d)]", out.exit_code);
        else
                (void) dynbuf_addf(&b, "[exit code %d]", out.exit_code);
        tool_add_handles(&b, out.handles);
        ret->handles = TAKE_PTR(out.handles);
        bool failed = out.timed_out;
        ss_output_done(&out);
        return tool_text(ret, &b, failed);
}

const tool_def tool_bash = {
        .name = "bash",
        .description = "Run a shell command (/bin/sh) in the session's sandbox, starting in /workspace. The current "
                       "directory and exported variables carry over to the next call; processes do not outlive the "
                       "call. Answers with stdout, stderr (the middle of long output is cut) and the exit code.",
        .input_schema =
                "{\"type\": \"object\", \"properties\": {"
                "\"command\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"The command to run\"}, "
                "\"timeout\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 600000, \"description\": "
                "\"Optional timeout in milliseconds (default 120000, at most 600000)\"}, "
                "\"description\": {\"type\": \"string\", \"description\": \"What the command does, in a few "
                "words\"}}, "
                "\"required\": [\"command\"], \"additionalProperties\": false}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .timeout_ms = TOOL_BASH_TIMEOUT_MS_MAX + 10000,
        .needs_session = true,
        .run = bash_run,
};

/* What differs between the languages of the session's persistent interpreters. */
typedef struct cell_lang {
        sbx_lang lang;
        const char *tool;      /* the tool's name */
        const char *from_file; /* how to run code kept in a file */
} cell_lang;

static int cell_run(const cell_lang *l, const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        const json_t *code = json_object_get(input, "code");
        if (!json_is_string(code) || json_string_length(code) == 0)
                return tool_error(ret, "%s: code is empty", l->tool);
        if (json_string_length(code) > SBX_CELL_CODE_MAX)
                return tool_error(ret, "%s: the code is longer than %u bytes; write it to a file and run it with %s",
                                  l->tool, SBX_CELL_CODE_MAX, l->from_file);
        uint64_t timeout = tool_time_left(c, TOOL_PYTHON_TIMEOUT_MS);
        ss_cell_args a = {.lang = l->lang,
                          .code = json_string_value(code),
                          .code_len = json_string_length(code),
                          .timeout_ms = timeout,
                          .output_bytes = TOOL_OUTPUT_BYTES,
                          .cancel_fd = c->cancel_fd};
        ss_cell_output out = {0};
        int r = ss_cell(c->ss, c->session, &a, &out, e);
        if (r < 0)
                return r;
        _cleanup_dynbuf_ dynbuf b;
        tool_buf_init(&b);
        /* stdout, then the emitted value the cell appended to it: shown inline when small, else
         * kept as a handle by the spill middleware (the model then sees this text and the
         * handle's summary) */
        size_t out_len = out.emit_len ? out.emit_at : out.o.out_len;
        const char *emitted = out.emit_len ? out.o.out + out.emit_at : NULL;
        size_t emitted_len = out.emit_len ? out.emit_len - 1 : 0; /* without its newline */
        tool_add_stream(&b, NULL, out.o.out, out_len, out.o.out_truncated, TOOL_OUTPUT_BYTES / 2);
        tool_add_stream(&b, "[stderr]", out.o.err, out.o.err_len, out.o.err_truncated, TOOL_OUTPUT_BYTES / 2);
        bool spill_value = emitted && emitted_len > AGENT_SPILL_BYTES_DEFAULT;
        if (emitted && !spill_value)
                tool_add_stream(&b, "[emitted value]", emitted, emitted_len, false, 0);
        if (was_interrupted(c))
                (void) dynbuf_add_str(&b, "[interrupted by the user: the interpreter was stopped, its variables are "
                                          "gone]");
        else if (out.o.timed_out)
                (void) dynbuf_addf(&b,
                                   "[timed out after %" PRIu64 " ms: the interpreter was stopped and its variables "
                                   "are gone; do less per call]",
                                   timeout);
        else if (out.interpreter_ended)
                (void) dynbuf_add_str(&b, "[the interpreter ended: the next call starts a fresh one, without the "
                                          "variables of this one]");
        else if (out.o.exit_code != 0)
                (void) dynbuf_add_str(&b, "[the code raised an exception]");
        else if (b.len == 0 && !spill_value)
                (void) dynbuf_add_str(&b, "[done; no output: end with an expression or print() to see a value]");
        tool_add_handles(&b, out.o.handles);
        ret->handles = TAKE_PTR(out.o.handles);
        bool failed = out.o.exit_code != 0 || out.o.timed_out;
        if (spill_value) {
                ret->spill_data = malloc(emitted_len + 1);
                if (ret->spill_data) {
                        memcpy(ret->spill_data, emitted, emitted_len);
                        ret->spill_data[emitted_len] = '\0';
                }
                ret->spill_source = strdup("run_python: the emitted value");
                if (!ret->spill_data || !ret->spill_source) {
                        ss_output_done(&out.o);
                        return hull_err(e, -ENOMEM, "%s: out of memory", l->tool);
                }
                ret->spill_len = emitted_len;
                ret->spill_format = "json";
                _cleanup_free_ char *text = dynbuf_take(&b, NULL);
                ret->value = json_pack("{s:s}", "output", text ? text : "");
                ret->is_error = failed;
                ss_output_done(&out.o);
                return ret->value ? 0 : hull_err(e, -ENOMEM, "%s: out of memory", l->tool);
        }
        ss_output_done(&out.o);
        return tool_text(ret, &b, failed);
}

static int python_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        static const cell_lang python = {SBX_LANG_PYTHON, "run_python", "exec(open(path).read())"};
        return cell_run(&python, c, input, ret, e);
}

static int javascript_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        static const cell_lang javascript = {SBX_LANG_JAVASCRIPT, "run_javascript", "require(path)"};
        return cell_run(&javascript, c, input, ret, e);
}

const tool_def tool_run_python = {
        .name = "run_python",
        .description = "Run Python code in the session's persistent interpreter (variables and imports stay between "
                       "calls; working directory /workspace). The value of a final expression is shown. load(id) "
                       "gives a handle's data, save(id, obj) keeps a value as a new handle, emit(obj) returns a value, "
                       "publish(path) delivers a file under outputs/. Answers with stdout, stderr and the new handles.",
        .input_schema = "{\"type\": \"object\", \"properties\": {"
                        "\"code\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"The Python code to "
                        "run\"}}, \"required\": [\"code\"], \"additionalProperties\": false}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .timeout_ms = TOOL_PYTHON_TIMEOUT_MS + 10000,
        .needs_session = true,
        .run = python_run,
};

const tool_def tool_run_javascript = {
        .name = "run_javascript",
        .description = "Run JavaScript code in the session's persistent Node.js context (variables stay between calls; "
                       "working directory /workspace; require() works, top-level await too). The value of a final "
                       "expression is shown. Answers with stdout, stderr and how the code ended.",
        .input_schema = "{\"type\": \"object\", \"properties\": {"
                        "\"code\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"The JavaScript code "
                        "to run\"}}, \"required\": [\"code\"], \"additionalProperties\": false}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .timeout_ms = TOOL_PYTHON_TIMEOUT_MS + 10000,
        .needs_session = true,
        .run = javascript_run,
};
