/* sbx-record.c: plimsoll run records: the digests of requests and results (the encoder is in
 * sbx-record-enc.c; the records, the session chain and the audit log are in
 * sbx-record-chain.c). The field orders follow the plimsoll spec
 * (docs/API.md "Run records and the audit log"); every value read from a message is checked
 * for its ProtoJSON type first, since records are verified from files anyone may have edited. */
#include "sbx-record.h"
#include "sbx-record-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

/* ---- requests ---- */

enum { RQ_PROTOCOL, RQ_FLOOR, RQ_TRACE, RQ_TIMEOUT, RQ_RULE, RQ_SESSION, RQ_JS, RQ_PROJECT, RQ_MODULE, RQ_CELL, RQ__N };
static const rec_pj_field request_fields[RQ__N] = {
        [RQ_PROTOCOL] = {"protocol", NULL},
        [RQ_FLOOR] = {"minimumIsolation", "minimum_isolation"},
        [RQ_TRACE] = {"traceId", "trace_id"},
        [RQ_TIMEOUT] = {"timeoutMs", "timeout_ms"},
        [RQ_RULE] = {"softwareRule", "software_rule"},
        [RQ_SESSION] = {"sessionId", "session_id"},
        [RQ_JS] = {"javascript", NULL},
        [RQ_PROJECT] = {"project", NULL},
        [RQ_MODULE] = {"module", NULL},
        [RQ_CELL] = {"cell", NULL},
};

const rec_pj_field rec_rule_fields[RULE__N] = {
        [RULE_MODE] = {"mode", NULL},
        [RULE_IDENTITIES] = {"identities", NULL},
};

enum { JS_CODE, JS_GRANT, JS__N };
static const rec_pj_field js_fields[JS__N] = {
        [JS_CODE] = {"code", NULL},
        [JS_GRANT] = {"grantProfile", "grant_profile"},
};

enum { PR_FILES, PR_STEPS, PR_ARTIFACTS, PR_GRANT, PR__N };
static const rec_pj_field project_fields[PR__N] = {
        [PR_FILES] = {"files", NULL},
        [PR_STEPS] = {"steps", NULL},
        [PR_ARTIFACTS] = {"artifacts", NULL},
        [PR_GRANT] = {"grantProfile", "grant_profile"},
};

enum { FILE_PATH, FILE_CONTENT, FILE__N };
static const rec_pj_field file_fields[FILE__N] = {
        [FILE_PATH] = {"path", NULL},
        [FILE_CONTENT] = {"content", NULL},
};

enum { MOD_MODEL, MOD_ROWS, MOD_END, MOD_STEP, MOD__N };
static const rec_pj_field module_fields[MOD__N] = {
        [MOD_MODEL] = {"model", NULL},
        [MOD_ROWS] = {"rows", NULL},
        [MOD_END] = {"endTime", "end_time"},
        [MOD_STEP] = {"step", NULL},
};

enum { ROW_VALUES, ROW__N };
static const rec_pj_field row_fields[ROW__N] = {
        [ROW_VALUES] = {"values", NULL},
};

enum { CELL_LANGUAGE, CELL_CODE, CELL_FILES, CELL__N };
static const rec_pj_field cell_fields[CELL__N] = {
        [CELL_LANGUAGE] = {"language", NULL},
        [CELL_CODE] = {"code", NULL},
        [CELL_FILES] = {"files", NULL},
};

const char *const rec_kinds[] = {"javascript", "project", "module", "cell"};

/* Which one of the oneof keys first..first+3 (javascript, project, module, cell) is set: 0 for
 * none, 1..4 for the kind, -EINVAL for more than one. */
static int find_kind(const json_t *msg, const rec_pj_field *fields, size_t first, const char *what, hull_error *e) {
        int kind = 0;
        for (size_t i = 0; i < ELEMENTSOF(rec_kinds); i++)
                if (rec_pj_get(msg, &fields[first + i])) {
                        if (kind)
                                return hull_fail(e, -EINVAL,
                                                 "%s has more than one of javascript, project, module, cell", what);
                        kind = (int) i + 1;
                }
        return kind;
}

static int encode_files(rec_encoder *enc, const json_t *files, const char *what, hull_error *e) {
        int r = rec_pj_array(files, what, e);
        if (r < 0)
                return r;
        rec_field_uint(enc, "files", json_array_size(files));
        for (size_t i = 0; i < json_array_size(files); i++) {
                const json_t *f = json_array_get(files, i);
                r = rec_pj_check_message(f, "a file of the request", file_fields, FILE__N, e);
                if (r < 0)
                        return r;
                r = rec_pj_string_field(enc, "file_path", rec_pj_get(f, &file_fields[FILE_PATH]), "file path", e);
                if (r < 0)
                        return r;
                r = rec_pj_string_field(enc, "file_content", rec_pj_get(f, &file_fields[FILE_CONTENT]), "file content",
                                        e);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int encode_request_payload(rec_encoder *enc, int kind, const json_t *p, hull_error *e) {
        int r;
        switch (kind) {
        case 1:
                r = rec_pj_check_message(p, "request.javascript", js_fields, JS__N, e);
                if (r >= 0)
                        r = rec_pj_string_field(enc, "code", rec_pj_get(p, &js_fields[JS_CODE]), "javascript.code", e);
                if (r >= 0)
                        r = rec_pj_string_field(enc, "grant_profile", rec_pj_get(p, &js_fields[JS_GRANT]),
                                                "javascript.grantProfile", e);
                return r;
        case 2:
                r = rec_pj_check_message(p, "request.project", project_fields, PR__N, e);
                if (r >= 0)
                        r = rec_pj_string_field(enc, "grant_profile", rec_pj_get(p, &project_fields[PR_GRANT]),
                                                "project.grantProfile", e);
                if (r >= 0)
                        r = encode_files(enc, rec_pj_get(p, &project_fields[PR_FILES]), "project.files", e);
                if (r >= 0)
                        r = rec_pj_strings_group(enc, "steps", "step_command", rec_pj_get(p, &project_fields[PR_STEPS]),
                                                 "project.steps", e);
                if (r >= 0)
                        r = rec_pj_strings_group(enc, "artifacts", "artifact_path",
                                                 rec_pj_get(p, &project_fields[PR_ARTIFACTS]), "project.artifacts", e);
                return r;
        case 3: {
                double end_time, step;
                r = rec_pj_check_message(p, "request.module", module_fields, MOD__N, e);
                if (r >= 0)
                        r = rec_pj_string_field(enc, "model", rec_pj_get(p, &module_fields[MOD_MODEL]), "module.model",
                                                e);
                if (r >= 0)
                        r = rec_pj_double(rec_pj_get(p, &module_fields[MOD_END]), "module.endTime", &end_time, e);
                if (r >= 0)
                        r = rec_pj_double(rec_pj_get(p, &module_fields[MOD_STEP]), "module.step", &step, e);
                if (r < 0)
                        return r;
                rec_field_begin(enc, "end_time", 8);
                rec_field_write_double(enc, end_time);
                rec_field_begin(enc, "step", 8);
                rec_field_write_double(enc, step);
                const json_t *rows = rec_pj_get(p, &module_fields[MOD_ROWS]);
                r = rec_pj_array(rows, "module.rows", e);
                if (r < 0)
                        return r;
                rec_field_uint(enc, "rows", json_array_size(rows));
                for (size_t i = 0; i < json_array_size(rows); i++) {
                        const json_t *row = json_array_get(rows, i);
                        r = rec_pj_check_message(row, "a row of module.rows", row_fields, ROW__N, e);
                        if (r < 0)
                                return r;
                        r = rec_pj_doubles_field(enc, "row_values", rec_pj_get(row, &row_fields[ROW_VALUES]),
                                                 "module.rows[].values", e);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        case 4:
                r = rec_pj_check_message(p, "request.cell", cell_fields, CELL__N, e);
                if (r >= 0)
                        r = rec_pj_string_field(enc, "language", rec_pj_get(p, &cell_fields[CELL_LANGUAGE]),
                                                "cell.language", e);
                if (r >= 0)
                        r = rec_pj_string_field(enc, "code", rec_pj_get(p, &cell_fields[CELL_CODE]), "cell.code", e);
                if (r >= 0)
                        r = encode_files(enc, rec_pj_get(p, &cell_fields[CELL_FILES]), "cell.files", e);
                return r;
        default:
                return 0;
        }
}

int rec_request_digest_info(const json_t *req, char ret[REC_DIGEST_HEX_SIZE], rec_request_info *info, hull_error *e) {
        _cleanup_(rec_encoder_done) rec_encoder enc = {};
        const char *s;
        size_t len;
        int64_t protocol = 0, timeout = 0;
        int r;

        r = rec_pj_check_message(req, "the request", request_fields, RQ__N, e);
        if (r < 0)
                return r;
        r = rec_pj_int(rec_pj_get(req, &request_fields[RQ_PROTOCOL]), "request.protocol", 0, UINT32_MAX, &protocol, e);
        if (r < 0)
                return r;
        r = rec_pj_int(rec_pj_get(req, &request_fields[RQ_TIMEOUT]), "request.timeoutMs", INT32_MIN, INT32_MAX,
                       &timeout, e);
        if (r < 0)
                return r;
        r = rec_pj_string(rec_pj_get(req, &request_fields[RQ_TRACE]), "request.traceId", &s, &len, e);
        if (r >= 0)
                r = rec_pj_string(rec_pj_get(req, &request_fields[RQ_SESSION]), "request.sessionId", &s, &len, e);
        if (r >= 0)
                r = rec_pj_string(rec_pj_get(req, &request_fields[RQ_FLOOR]), "request.minimumIsolation", &info->floor,
                                  &info->floor_len, e);
        if (r < 0)
                return r;
        const json_t *rule = rec_pj_get(req, &request_fields[RQ_RULE]);
        if (rule) {
                r = rec_pj_check_message(rule, "request.softwareRule", rec_rule_fields, RULE__N, e);
                if (r < 0)
                        return r;
        }
        int kind = find_kind(req, request_fields, RQ_JS, "the request", e);
        if (kind < 0)
                return kind;

        r = rec_encoder_init(&enc, protocol >= 2 ? "plimsoll.run-request.v2" : "plimsoll.run-request.v1");
        if (r < 0)
                return hull_fail(e, r, "run records: cannot start a SHA-256 digest");
        rec_field_uint(&enc, "protocol", (uint64_t) protocol);
        rec_field(&enc, "minimum_isolation", info->floor, info->floor_len);
        rec_field_int(&enc, "timeout_ms", timeout);
        if (protocol >= 2) {
                r = rec_pj_string_field(&enc, "software_mode",
                                        rule ? rec_pj_get(rule, &rec_rule_fields[RULE_MODE]) : NULL,
                                        "softwareRule.mode", e);
                if (r >= 0)
                        r = rec_pj_strings_group(&enc, "software_identities", "software_identity",
                                                 rule ? rec_pj_get(rule, &rec_rule_fields[RULE_IDENTITIES]) : NULL,
                                                 "softwareRule.identities", e);
                if (r < 0)
                        return r;
        }
        rec_field_str(&enc, "kind", kind ? rec_kinds[kind - 1] : "");
        if (kind) {
                r = encode_request_payload(&enc, kind, rec_pj_get(req, &request_fields[RQ_JS + (size_t) kind - 1]), e);
                if (r < 0)
                        return r;
        }
        r = rec_encoder_finish(&enc, ret);
        if (r < 0)
                return hull_fail(e, r, "run records: the request digest failed");
        info->protocol = (uint32_t) protocol;
        info->kind = kind;
        info->rule = rule;
        return 0;
}

int rec_request_digest(const json_t *request, char ret[REC_DIGEST_HEX_SIZE], hull_error *e) {
        rec_request_info info;
        return rec_request_digest_info(request, ret, &info, e);
}

/* ---- results ---- */

const rec_pj_field rec_response_fields[RS__N] = {
        [RS_SANDBOX] = {"sandbox", NULL},
        [RS_ISOLATION] = {"isolation", NULL},
        [RS_DURATION] = {"durationMs", "duration_ms"},
        [RS_RECORD] = {"record", NULL},
        [RS_SOFTWARE] = {"softwareIdentity", "software_identity"},
        [RS_ENVIRONMENT] = {"environment", NULL},
        [RS_JS] = {"javascript", NULL},
        [RS_PROJECT] = {"project", NULL},
        [RS_MODULE] = {"module", NULL},
        [RS_CELL] = {"cell", NULL},
};

/* JavaScriptResult and CellResult share their first fields; StepResult has them too, with a
 * command and a duration. */
enum {
        OUT_STDOUT,
        OUT_STDERR,
        OUT_EXIT,
        OUT_TIMED_OUT,
        OUT_STDOUT_TRUNC,
        OUT_STDERR_TRUNC,
        OUT_ADVICE,
        OUT_STARTED,
        OUT_ENDED,
        OUT_COMMAND,
        OUT_DURATION,
        OUT__N
};
/* clang-format off */
#define F_STDOUT { "stdout", NULL }
#define F_STDERR { "stderr", NULL }
#define F_EXIT { "exitCode", "exit_code" }
#define F_TIMED_OUT { "timedOut", "timed_out" }
#define F_STDOUT_TRUNC { "stdoutTruncated", "stdout_truncated" }
#define F_STDERR_TRUNC { "stderrTruncated", "stderr_truncated" }
/* clang-format on */
static const rec_pj_field js_result_fields[] = {
        F_STDOUT, F_STDERR, F_EXIT, F_TIMED_OUT, F_STDOUT_TRUNC, F_STDERR_TRUNC, {"advice", NULL},
};
static const rec_pj_field cell_result_fields[] = {
        F_STDOUT,
        F_STDERR,
        F_EXIT,
        F_TIMED_OUT,
        F_STDOUT_TRUNC,
        F_STDERR_TRUNC,
        {"interpreterStarted", "interpreter_started"},
        {"interpreterEnded", "interpreter_ended"},
};
static const rec_pj_field step_result_fields[] = {
        {"command", NULL}, F_STDOUT,       F_STDERR, F_EXIT, F_TIMED_OUT, {"durationMs", "duration_ms"},
        F_STDOUT_TRUNC,    F_STDERR_TRUNC,
};
static const rec_pj_field output_fields[OUT__N] = {
        [OUT_STDOUT] = F_STDOUT,
        [OUT_STDERR] = F_STDERR,
        [OUT_EXIT] = F_EXIT,
        [OUT_TIMED_OUT] = F_TIMED_OUT,
        [OUT_STDOUT_TRUNC] = F_STDOUT_TRUNC,
        [OUT_STDERR_TRUNC] = F_STDERR_TRUNC,
        [OUT_ADVICE] = {"advice", NULL},
        [OUT_STARTED] = {"interpreterStarted", "interpreter_started"},
        [OUT_ENDED] = {"interpreterEnded", "interpreter_ended"},
        [OUT_COMMAND] = {"command", NULL},
        [OUT_DURATION] = {"durationMs", "duration_ms"},
};

enum { PRR_STEPS, PRR_OUTCOME, PRR_ARTIFACTS, PRR_DETAIL, PRR_TRUNC, PRR_ADVICE, PRR__N };
static const rec_pj_field project_result_fields[PRR__N] = {
        [PRR_STEPS] = {"steps", NULL},
        [PRR_OUTCOME] = {"outcome", NULL},
        [PRR_ARTIFACTS] = {"artifacts", NULL},
        [PRR_DETAIL] = {"outcomeDetail", "outcome_detail"},
        [PRR_TRUNC] = {"artifactsTruncated", "artifacts_truncated"},
        [PRR_ADVICE] = {"advice", NULL},
};

enum { MR_RUNS, MR_WIDTH, MR_OUTCOME, MR_DETAIL, MR_STDOUT, MR_STDERR, MR__N };
static const rec_pj_field module_result_fields[MR__N] = {
        [MR_RUNS] = {"runs", NULL},       [MR_WIDTH] = {"width", NULL},
        [MR_OUTCOME] = {"outcome", NULL}, [MR_DETAIL] = {"outcomeDetail", "outcome_detail"},
        [MR_STDOUT] = {"stdout", NULL},   [MR_STDERR] = {"stderr", NULL},
};

enum { RUN_STATUS, RUN_OUTPUTS, RUN__N };
static const rec_pj_field run_fields[RUN__N] = {
        [RUN_STATUS] = {"status", NULL},
        [RUN_OUTPUTS] = {"outputs", NULL},
};

/* exit_code, timed_out, stdout, stderr, stdout_truncated, stderr_truncated (prefix "step_" in a
 * project's steps). */
static int encode_outputs(rec_encoder *enc, const json_t *m, bool step, hull_error *e) {
        const char *p = step ? "step_" : "";
        char name[REC_FIELD_NAME_MAX];
        int r;
#define NAME(s) (snprintf(name, sizeof(name), "%s%s", p, s), name)
        r = rec_pj_int_field(enc, NAME("exit_code"), rec_pj_get(m, &output_fields[OUT_EXIT]), "result exitCode",
                             INT32_MIN, INT32_MAX, e);
        if (r >= 0)
                r = rec_pj_bool_field(enc, NAME("timed_out"), rec_pj_get(m, &output_fields[OUT_TIMED_OUT]),
                                      "result timedOut", e);
        if (r >= 0)
                r = rec_pj_bytes_field(enc, NAME("stdout"), rec_pj_get(m, &output_fields[OUT_STDOUT]), "result stdout",
                                       e);
        if (r >= 0)
                r = rec_pj_bytes_field(enc, NAME("stderr"), rec_pj_get(m, &output_fields[OUT_STDERR]), "result stderr",
                                       e);
        if (r >= 0)
                r = rec_pj_bool_field(enc, NAME("stdout_truncated"), rec_pj_get(m, &output_fields[OUT_STDOUT_TRUNC]),
                                      "result stdoutTruncated", e);
        if (r >= 0)
                r = rec_pj_bool_field(enc, NAME("stderr_truncated"), rec_pj_get(m, &output_fields[OUT_STDERR_TRUNC]),
                                      "result stderrTruncated", e);
#undef NAME
        return r;
}

static int encode_project_result(rec_encoder *enc, const json_t *m, hull_error *e) {
        int64_t outcome = 0;
        int r = rec_pj_check_message(m, "result.project", project_result_fields, PRR__N, e);
        if (r >= 0)
                r = rec_pj_outcome(rec_pj_get(m, &project_result_fields[PRR_OUTCOME]), "project.outcome", &outcome, e);
        if (r >= 0)
                r = rec_pj_advice(rec_pj_get(m, &project_result_fields[PRR_ADVICE]), "project.advice", e);
        if (r < 0)
                return r;
        rec_field_int(enc, "outcome", outcome);
        r = rec_pj_string_field(enc, "outcome_detail", rec_pj_get(m, &project_result_fields[PRR_DETAIL]),
                                "project.outcomeDetail", e);
        if (r >= 0)
                r = rec_pj_bool_field(enc, "artifacts_truncated", rec_pj_get(m, &project_result_fields[PRR_TRUNC]),
                                      "project.artifactsTruncated", e);
        const json_t *steps = rec_pj_get(m, &project_result_fields[PRR_STEPS]);
        if (r >= 0)
                r = rec_pj_array(steps, "project.steps", e);
        if (r < 0)
                return r;
        rec_field_uint(enc, "steps", json_array_size(steps));
        for (size_t i = 0; i < json_array_size(steps); i++) {
                const json_t *s = json_array_get(steps, i);
                int64_t duration;
                r = rec_pj_check_message(s, "a step of result.project", step_result_fields,
                                         ELEMENTSOF(step_result_fields), e);
                if (r >= 0)
                        r = rec_pj_int(rec_pj_get(s, &output_fields[OUT_DURATION]), "step durationMs", INT64_MIN,
                                       INT64_MAX, &duration, e);
                if (r >= 0)
                        r = rec_pj_string_field(enc, "step_command", rec_pj_get(s, &output_fields[OUT_COMMAND]),
                                                "step command", e);
                if (r >= 0)
                        r = encode_outputs(enc, s, true, e);
                if (r < 0)
                        return r;
        }
        const json_t *arts = rec_pj_get(m, &project_result_fields[PRR_ARTIFACTS]);
        r = rec_pj_array(arts, "project.artifacts", e);
        if (r < 0)
                return r;
        rec_field_uint(enc, "artifacts", json_array_size(arts));
        for (size_t i = 0; i < json_array_size(arts); i++) {
                const json_t *a = json_array_get(arts, i);
                r = rec_pj_check_message(a, "an artifact of result.project", file_fields, FILE__N, e);
                if (r >= 0)
                        r = rec_pj_string_field(enc, "artifact_path", rec_pj_get(a, &file_fields[FILE_PATH]),
                                                "artifact path", e);
                if (r >= 0)
                        r = rec_pj_bytes_field(enc, "artifact_content", rec_pj_get(a, &file_fields[FILE_CONTENT]),
                                               "artifact content", e);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int encode_module_result(rec_encoder *enc, const json_t *m, hull_error *e) {
        int64_t outcome = 0;
        int r = rec_pj_check_message(m, "result.module", module_result_fields, MR__N, e);
        if (r >= 0)
                r = rec_pj_outcome(rec_pj_get(m, &module_result_fields[MR_OUTCOME]), "module.outcome", &outcome, e);
        if (r < 0)
                return r;
        rec_field_int(enc, "outcome", outcome);
        r = rec_pj_string_field(enc, "outcome_detail", rec_pj_get(m, &module_result_fields[MR_DETAIL]),
                                "module.outcomeDetail", e);
        if (r >= 0)
                r = rec_pj_int_field(enc, "width", rec_pj_get(m, &module_result_fields[MR_WIDTH]), "module.width",
                                     INT32_MIN, INT32_MAX, e);
        if (r >= 0)
                r = rec_pj_bytes_field(enc, "stdout", rec_pj_get(m, &module_result_fields[MR_STDOUT]), "module.stdout",
                                       e);
        if (r >= 0)
                r = rec_pj_bytes_field(enc, "stderr", rec_pj_get(m, &module_result_fields[MR_STDERR]), "module.stderr",
                                       e);
        const json_t *runs = rec_pj_get(m, &module_result_fields[MR_RUNS]);
        if (r >= 0)
                r = rec_pj_array(runs, "module.runs", e);
        if (r < 0)
                return r;
        rec_field_uint(enc, "runs", json_array_size(runs));
        for (size_t i = 0; i < json_array_size(runs); i++) {
                const json_t *run = json_array_get(runs, i);
                r = rec_pj_check_message(run, "a run of result.module", run_fields, RUN__N, e);
                if (r >= 0)
                        r = rec_pj_int_field(enc, "run_status", rec_pj_get(run, &run_fields[RUN_STATUS]), "run status",
                                             INT32_MIN, INT32_MAX, e);
                if (r >= 0)
                        r = rec_pj_doubles_field(enc, "run_outputs", rec_pj_get(run, &run_fields[RUN_OUTPUTS]),
                                                 "run outputs", e);
                if (r < 0)
                        return r;
        }
        return 0;
}

int rec_result_digest_kind(const json_t *res, char ret[REC_DIGEST_HEX_SIZE], int *ret_kind, hull_error *e) {
        _cleanup_(rec_encoder_done) rec_encoder enc = {};
        const char *s;
        size_t len;
        int64_t duration;
        int r;

        r = rec_pj_check_message(res, "the result", rec_response_fields, RS__N, e);
        if (r < 0)
                return r;
        r = rec_pj_string(rec_pj_get(res, &rec_response_fields[RS_SANDBOX]), "result.sandbox", &s, &len, e);
        if (r >= 0)
                r = rec_pj_string(rec_pj_get(res, &rec_response_fields[RS_ISOLATION]), "result.isolation", &s, &len, e);
        if (r >= 0)
                r = rec_pj_string(rec_pj_get(res, &rec_response_fields[RS_SOFTWARE]), "result.softwareIdentity", &s,
                                  &len, e);
        if (r >= 0)
                r = rec_pj_string(rec_pj_get(res, &rec_response_fields[RS_ENVIRONMENT]), "result.environment", &s, &len,
                                  e);
        if (r >= 0)
                r = rec_pj_int(rec_pj_get(res, &rec_response_fields[RS_DURATION]), "result.durationMs", INT64_MIN,
                               INT64_MAX, &duration, e);
        if (r < 0)
                return r;
        const json_t *record = rec_pj_get(res, &rec_response_fields[RS_RECORD]);
        if (record && !json_is_object(record))
                return hull_fail(e, -EINVAL, "result.record is not a JSON object");
        int kind = find_kind(res, rec_response_fields, RS_JS, "the result", e);
        if (kind < 0)
                return kind;
        if (kind == 0)
                return hull_fail(e, -EINVAL, "the result has none of javascript, project, module, cell");
        const json_t *m = rec_pj_get(res, &rec_response_fields[RS_JS + (size_t) kind - 1]);

        r = rec_encoder_init(&enc, "plimsoll.run-result.v1");
        if (r < 0)
                return hull_fail(e, r, "run records: cannot start a SHA-256 digest");
        rec_field_str(&enc, "kind", rec_kinds[kind - 1]);
        switch (kind) {
        case 1:
                r = rec_pj_check_message(m, "result.javascript", js_result_fields, ELEMENTSOF(js_result_fields), e);
                if (r >= 0)
                        r = rec_pj_advice(rec_pj_get(m, &output_fields[OUT_ADVICE]), "javascript.advice", e);
                if (r >= 0)
                        r = encode_outputs(&enc, m, false, e);
                break;
        case 2:
                r = encode_project_result(&enc, m, e);
                break;
        case 3:
                r = encode_module_result(&enc, m, e);
                break;
        default:
                r = rec_pj_check_message(m, "result.cell", cell_result_fields, ELEMENTSOF(cell_result_fields), e);
                if (r >= 0)
                        r = encode_outputs(&enc, m, false, e);
                if (r >= 0)
                        r = rec_pj_bool_field(&enc, "interpreter_started", rec_pj_get(m, &output_fields[OUT_STARTED]),
                                              "cell.interpreterStarted", e);
                if (r >= 0)
                        r = rec_pj_bool_field(&enc, "interpreter_ended", rec_pj_get(m, &output_fields[OUT_ENDED]),
                                              "cell.interpreterEnded", e);
                break;
        }
        if (r < 0)
                return r;
        r = rec_encoder_finish(&enc, ret);
        if (r < 0)
                return hull_fail(e, r, "run records: the result digest failed");
        *ret_kind = kind;
        return 0;
}

int rec_result_digest(const json_t *result, char ret[REC_DIGEST_HEX_SIZE], hull_error *e) {
        int kind;
        return rec_result_digest_kind(result, ret, &kind, e);
}
