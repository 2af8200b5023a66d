/* sbx-record-hull.c: the digests of hull's own record kinds: the workspace operations a session
 * runs that plimsoll has no message for (exec, write, edit, hydrate, add_input), and the
 * read-only tool calls hull mcp answers (read, glob, grep, inspect_handle, query_handle). Their
 * records are plimsoll records (version 2, or 3 when unanswered) whose requestSha256 and
 * resultSha256 follow the rules below, written like plimsoll's (docs/API.md "hull's record
 * kinds"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "sbx-record-internal.h"

#define REQUEST_DOMAIN "hull.workspace-request.v1"
#define RESULT_DOMAIN "hull.workspace-result.v1"

static const char *const operations[] = {"exec", "write", "edit", "hydrate",        "add_input",
                                         "read", "glob",  "grep", "inspect_handle", "query_handle"};
enum { OP_EXEC, OP_WRITE, OP_EDIT, OP_HYDRATE, OP_ADD_INPUT, OP_READ, OP_GLOB, OP_GREP, OP_INSPECT, OP_QUERY };

bool rec_hull_operation_is_valid(const char *op) {
        for (size_t i = 0; i < ELEMENTSOF(operations); i++)
                if (strcmp(op, operations[i]) == 0)
                        return true;
        return false;
}

bool rec_hull_operation_is_read_only(const char *op) {
        for (size_t i = OP_READ; i < ELEMENTSOF(operations); i++)
                if (strcmp(op, operations[i]) == 0)
                        return true;
        return false;
}

/* ---- the read-only kinds ----
 * The request is the tool call's arguments as received (the tool's own names; hull mcp has
 * checked them against the tool's schema). Each argument the call gave is hashed, in the order
 * below, as (its name, its content); an argument the call left out (or gave as null) is not
 * hashed at all, so the digest says exactly what was asked, whatever the tool's defaults are
 * now or later. The result is what the call answered: its text, whether it was an error, and
 * the ids of the handles it announced. */

typedef enum arg_type { ARG_STRING, ARG_INT, ARG_BOOL } arg_type;

typedef struct read_arg {
        const char *name;
        arg_type type;
} read_arg;

typedef struct read_kind {
        const read_arg *args;
        size_t n_args;
        const char *what; /* "the read request" */
} read_kind;

static const read_arg read_args[] = {{"file_path", ARG_STRING}, {"offset", ARG_INT}, {"limit", ARG_INT}};
static const read_arg glob_args[] = {{"pattern", ARG_STRING}, {"path", ARG_STRING}};
static const read_arg grep_args[] = {{"pattern", ARG_STRING}, {"path", ARG_STRING},        {"glob", ARG_STRING},
                                     {"-i", ARG_BOOL},        {"output_mode", ARG_STRING}, {"head_limit", ARG_INT}};
static const read_arg inspect_args[] = {{"handle_id", ARG_STRING}, {"rows", ARG_INT}, {"stats", ARG_BOOL}};
static const read_arg query_args[] = {{"sql", ARG_STRING}, {"max_rows", ARG_INT}};

#define READ_ARGS_MAX 6 /* the most arguments of a read-only kind (grep's) */
_Static_assert(ELEMENTSOF(grep_args) <= READ_ARGS_MAX && ELEMENTSOF(read_args) <= READ_ARGS_MAX &&
                       ELEMENTSOF(inspect_args) <= READ_ARGS_MAX,
               "READ_ARGS_MAX");

static const read_kind read_kinds[] = {
        [OP_READ - OP_READ] = {read_args, ELEMENTSOF(read_args), "the read request"},
        [OP_GLOB - OP_READ] = {glob_args, ELEMENTSOF(glob_args), "the glob request"},
        [OP_GREP - OP_READ] = {grep_args, ELEMENTSOF(grep_args), "the grep request"},
        [OP_INSPECT - OP_READ] = {inspect_args, ELEMENTSOF(inspect_args), "the inspect_handle request"},
        [OP_QUERY - OP_READ] = {query_args, ELEMENTSOF(query_args), "the query_handle request"},
};

static int read_request(rec_encoder *enc, int op, const json_t *q, hull_error *e) {
        const read_kind *k = &read_kinds[op - OP_READ];
        rec_pj_field fields[READ_ARGS_MAX];
        char what[64];
        int r;
        for (size_t i = 0; i < k->n_args; i++)
                fields[i] = (rec_pj_field){k->args[i].name, NULL};
        r = rec_pj_check_message(q, k->what, fields, k->n_args, e);
        for (size_t i = 0; r >= 0 && i < k->n_args; i++) {
                const json_t *v = rec_pj_get(q, &fields[i]);
                if (!v) /* not given: not hashed */
                        continue;
                snprintf(what, sizeof(what), "request.%s", k->args[i].name);
                switch (k->args[i].type) {
                case ARG_STRING:
                        r = json_is_string(v) ? rec_pj_string_field(enc, k->args[i].name, v, what, e)
                                              : hull_fail(e, -EINVAL, "%s is not a string", what);
                        break;
                case ARG_INT:
                        r = rec_pj_int_field(enc, k->args[i].name, v, what, INT64_MIN, INT64_MAX, e);
                        break;
                case ARG_BOOL:
                        r = rec_pj_bool_field(enc, k->args[i].name, v, what, e);
                        break;
                }
        }
        return r;
}

static const rec_pj_field answer_fields[] = {{"text", NULL}, {"isError", "is_error"}, {"handles", NULL}};

static int read_result(rec_encoder *enc, int op, const json_t *o, hull_error *e) {
        char what[64];
        snprintf(what, sizeof(what), "the %s result", operations[op]);
        int r = rec_pj_check_message(o, what, answer_fields, ELEMENTSOF(answer_fields), e);
        if (r >= 0)
                r = rec_pj_string_field(enc, "text", rec_pj_get(o, &answer_fields[0]), "result.text", e);
        if (r >= 0)
                r = rec_pj_bool_field(enc, "is_error", rec_pj_get(o, &answer_fields[1]), "result.isError", e);
        if (r >= 0)
                r = rec_pj_strings_group(enc, "handles", "handle", rec_pj_get(o, &answer_fields[2]), "result.handles",
                                         e);
        return r;
}

static int operation_index(const char *op, hull_error *e) {
        char pb[PRINTABLE_SIZE];
        for (size_t i = 0; i < ELEMENTSOF(operations); i++)
                if (strcmp(op, operations[i]) == 0)
                        return (int) i;
        return hull_fail(e, -EINVAL, "'%s' is not one of hull's record kinds", printable(op, strlen(op), pb));
}

/* A uint64 field (a JSON integer or a decimal string). */
static int uint64_field(rec_encoder *enc, const char *name, const json_t *v, const char *what, hull_error *e) {
        uint64_t x = 0;
        int r = rec_pj_uint64(v, what, &x, e);
        if (r < 0)
                return r;
        rec_field_uint(enc, name, x);
        return 0;
}

static int digest_finish(rec_encoder *enc, char ret[REC_DIGEST_HEX_SIZE], hull_error *e) {
        int r = rec_encoder_finish(enc, ret);
        return r < 0 ? hull_fail(e, r, "run records: the digest failed") : 0;
}

static const rec_pj_field exec_fields[] = {{"command", NULL}, {"env", NULL}, {"timeoutMs", "timeout_ms"}};
static const rec_pj_field env_fields[] = {{"name", NULL}, {"value", NULL}};
static const rec_pj_field write_fields[] = {{"path", NULL}, {"content", NULL}, {"append", NULL}};
static const rec_pj_field edit_fields[] = {{"path", NULL}, {"oldText", "old_text"}, {"newText", "new_text"}};
static const rec_pj_field hydrate_fields[] = {{"archive", NULL}};
static const rec_pj_field input_fields[] = {{"inputId", "input_id"}, {"name", NULL}, {"bytes", NULL}, {"sha256", NULL}};

static int exec_request(rec_encoder *enc, const json_t *q, hull_error *e) {
        int r = rec_pj_check_message(q, "the exec request", exec_fields, ELEMENTSOF(exec_fields), e);
        if (r >= 0)
                r = rec_pj_string_field(enc, "command", rec_pj_get(q, &exec_fields[0]), "request.command", e);
        if (r >= 0)
                r = rec_pj_int_field(enc, "timeout_ms", rec_pj_get(q, &exec_fields[2]), "request.timeoutMs", INT64_MIN,
                                     INT64_MAX, e);
        const json_t *env = rec_pj_get(q, &exec_fields[1]);
        if (r >= 0)
                r = rec_pj_array(env, "request.env", e);
        if (r < 0)
                return r;
        rec_field_uint(enc, "env", json_array_size(env));
        for (size_t i = 0; r >= 0 && i < json_array_size(env); i++) {
                const json_t *kv = json_array_get(env, i);
                r = rec_pj_check_message(kv, "an env entry", env_fields, ELEMENTSOF(env_fields), e);
                if (r >= 0)
                        r = rec_pj_string_field(enc, "env_name", rec_pj_get(kv, &env_fields[0]), "env.name", e);
                if (r >= 0)
                        r = rec_pj_string_field(enc, "env_value", rec_pj_get(kv, &env_fields[1]), "env.value", e);
        }
        return r;
}

int rec_hull_request_digest(const char *operation, const json_t *request, char ret[REC_DIGEST_HEX_SIZE],
                            hull_error *e) {
        int op = operation_index(operation, e);
        if (op < 0)
                return op;
        _cleanup_(rec_encoder_done) rec_encoder enc = {};
        int r = rec_encoder_init(&enc, REQUEST_DOMAIN);
        if (r < 0)
                return hull_fail(e, r, "run records: cannot start a SHA-256 digest");
        rec_field_str(&enc, "operation", operation);
        switch (op) {
        case OP_EXEC:
                r = exec_request(&enc, request, e);
                break;
        case OP_WRITE:
                r = rec_pj_check_message(request, "the write request", write_fields, ELEMENTSOF(write_fields), e);
                if (r >= 0)
                        r = rec_pj_string_field(&enc, "path", rec_pj_get(request, &write_fields[0]), "request.path", e);
                if (r >= 0)
                        r = rec_pj_bytes_field(&enc, "content", rec_pj_get(request, &write_fields[1]),
                                               "request.content", e);
                if (r >= 0)
                        r = rec_pj_bool_field(&enc, "append", rec_pj_get(request, &write_fields[2]), "request.append",
                                              e);
                break;
        case OP_EDIT:
                r = rec_pj_check_message(request, "the edit request", edit_fields, ELEMENTSOF(edit_fields), e);
                if (r >= 0)
                        r = rec_pj_string_field(&enc, "path", rec_pj_get(request, &edit_fields[0]), "request.path", e);
                if (r >= 0)
                        r = rec_pj_string_field(&enc, "old_text", rec_pj_get(request, &edit_fields[1]),
                                                "request.oldText", e);
                if (r >= 0)
                        r = rec_pj_string_field(&enc, "new_text", rec_pj_get(request, &edit_fields[2]),
                                                "request.newText", e);
                break;
        case OP_HYDRATE:
                r = rec_pj_check_message(request, "the hydrate request", hydrate_fields, ELEMENTSOF(hydrate_fields), e);
                if (r >= 0)
                        r = rec_pj_bytes_field(&enc, "archive", rec_pj_get(request, &hydrate_fields[0]),
                                               "request.archive", e);
                break;
        case OP_READ:
        case OP_GLOB:
        case OP_GREP:
        case OP_INSPECT:
        case OP_QUERY:
                r = read_request(&enc, op, request, e);
                break;
        case OP_ADD_INPUT:
                r = rec_pj_check_message(request, "the add_input request", input_fields, ELEMENTSOF(input_fields), e);
                if (r >= 0)
                        r = rec_pj_string_field(&enc, "input_id", rec_pj_get(request, &input_fields[0]),
                                                "request.inputId", e);
                if (r >= 0)
                        r = rec_pj_string_field(&enc, "name", rec_pj_get(request, &input_fields[1]), "request.name", e);
                if (r >= 0)
                        r = uint64_field(&enc, "bytes", rec_pj_get(request, &input_fields[2]), "request.bytes", e);
                if (r >= 0)
                        r = rec_pj_string_field(&enc, "sha256", rec_pj_get(request, &input_fields[3]), "request.sha256",
                                                e);
                break;
        default:
                r = hull_fail(e, -EINVAL, "unknown operation");
        }
        return r < 0 ? r : digest_finish(&enc, ret, e);
}

static const rec_pj_field output_fields[] = {
        {"exitCode", "exit_code"},
        {"timedOut", "timed_out"},
        {"stdout", NULL},
        {"stderr", NULL},
        {"stdoutTruncated", "stdout_truncated"},
        {"stderrTruncated", "stderr_truncated"},
        {"durationMs", "duration_ms"}, /* type-checked, not hashed */
};
static const rec_pj_field bytes_fields[] = {{"bytes", NULL}};
static const rec_pj_field edited_fields[] = {{"replaced", NULL}};
static const rec_pj_field hydrated_fields[] = {{"files", NULL}, {"bytes", NULL}};
static const rec_pj_field added_fields[] = {{"handle", NULL}, {"bytes", NULL}, {"sha256", NULL}};

static int exec_result(rec_encoder *enc, const json_t *o, hull_error *e) {
        uint64_t ms;
        int r = rec_pj_check_message(o, "the exec result", output_fields, ELEMENTSOF(output_fields), e);
        if (r >= 0)
                r = rec_pj_int_field(enc, "exit_code", rec_pj_get(o, &output_fields[0]), "result.exitCode", INT32_MIN,
                                     INT32_MAX, e);
        if (r >= 0)
                r = rec_pj_bool_field(enc, "timed_out", rec_pj_get(o, &output_fields[1]), "result.timedOut", e);
        if (r >= 0)
                r = rec_pj_bytes_field(enc, "stdout", rec_pj_get(o, &output_fields[2]), "result.stdout", e);
        if (r >= 0)
                r = rec_pj_bytes_field(enc, "stderr", rec_pj_get(o, &output_fields[3]), "result.stderr", e);
        if (r >= 0)
                r = rec_pj_bool_field(enc, "stdout_truncated", rec_pj_get(o, &output_fields[4]),
                                      "result.stdoutTruncated", e);
        if (r >= 0)
                r = rec_pj_bool_field(enc, "stderr_truncated", rec_pj_get(o, &output_fields[5]),
                                      "result.stderrTruncated", e);
        if (r >= 0)
                r = rec_pj_uint64(rec_pj_get(o, &output_fields[6]), "result.durationMs", &ms, e);
        return r;
}

int rec_hull_result_digest(const char *operation, const json_t *result, char ret[REC_DIGEST_HEX_SIZE], hull_error *e) {
        int op = operation_index(operation, e);
        if (op < 0)
                return op;
        _cleanup_(rec_encoder_done) rec_encoder enc = {};
        int r = rec_encoder_init(&enc, RESULT_DOMAIN);
        if (r < 0)
                return hull_fail(e, r, "run records: cannot start a SHA-256 digest");
        rec_field_str(&enc, "operation", operation);
        switch (op) {
        case OP_EXEC:
                r = exec_result(&enc, result, e);
                break;
        case OP_WRITE:
                r = rec_pj_check_message(result, "the write result", bytes_fields, ELEMENTSOF(bytes_fields), e);
                if (r >= 0)
                        r = uint64_field(&enc, "bytes", rec_pj_get(result, &bytes_fields[0]), "result.bytes", e);
                break;
        case OP_EDIT:
                r = rec_pj_check_message(result, "the edit result", edited_fields, ELEMENTSOF(edited_fields), e);
                if (r >= 0)
                        r = rec_pj_int_field(&enc, "replaced", rec_pj_get(result, &edited_fields[0]), "result.replaced",
                                             0, INT64_MAX, e);
                break;
        case OP_HYDRATE:
                r = rec_pj_check_message(result, "the hydrate result", hydrated_fields, ELEMENTSOF(hydrated_fields), e);
                if (r >= 0)
                        r = uint64_field(&enc, "files", rec_pj_get(result, &hydrated_fields[0]), "result.files", e);
                if (r >= 0)
                        r = uint64_field(&enc, "bytes", rec_pj_get(result, &hydrated_fields[1]), "result.bytes", e);
                break;
        case OP_READ:
        case OP_GLOB:
        case OP_GREP:
        case OP_INSPECT:
        case OP_QUERY:
                r = read_result(&enc, op, result, e);
                break;
        case OP_ADD_INPUT:
                r = rec_pj_check_message(result, "the add_input result", added_fields, ELEMENTSOF(added_fields), e);
                if (r >= 0)
                        r = rec_pj_string_field(&enc, "handle", rec_pj_get(result, &added_fields[0]), "result.handle",
                                                e);
                if (r >= 0)
                        r = uint64_field(&enc, "bytes", rec_pj_get(result, &added_fields[1]), "result.bytes", e);
                if (r >= 0)
                        r = rec_pj_string_field(&enc, "sha256", rec_pj_get(result, &added_fields[2]), "result.sha256",
                                                e);
                break;
        default:
                r = hull_fail(e, -EINVAL, "unknown operation");
        }
        return r < 0 ? r : digest_finish(&enc, ret, e);
}
