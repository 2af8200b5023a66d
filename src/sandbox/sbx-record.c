/* sbx-record.c: plimsoll run records: the digest encoding over ProtoJSON messages, the session
 * chain, and the audit log hull verify reads. The field orders follow the plimsoll spec
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

/* ---- the encoder ---- */

static void enc_raw(rec_encoder *enc, const void *p, size_t n) {
        if (enc->err == 0) {
                int r = sha256_update(&enc->sha, p, n);
                if (r < 0)
                        enc->err = r;
        }
}

static void enc_length(rec_encoder *enc, uint64_t len) {
        uint8_t b[8];
        for (size_t i = 0; i < 8; i++)
                b[i] = (uint8_t) (len >> (56 - 8 * i));
        enc_raw(enc, b, sizeof(b));
}

static void enc_value(rec_encoder *enc, const void *p, size_t n) {
        enc_length(enc, n);
        enc_raw(enc, p, n);
}

int rec_encoder_init(rec_encoder *enc, const char *domain) {
        *enc = (rec_encoder){};
        int r = sha256_init(&enc->sha);
        if (r < 0) {
                enc->err = r;
                return r;
        }
        enc_value(enc, domain, strlen(domain));
        return enc->err;
}

void rec_encoder_done(rec_encoder *enc) {
        sha256_done(&enc->sha);
}

static void enc_name(rec_encoder *enc, const char *name) {
        if (enc->pending != 0 && enc->err == 0)
                enc->err = -EINVAL; /* the streamed field before this one is short */
        enc_value(enc, name, strlen(name));
}

void rec_field(rec_encoder *enc, const char *name, const void *content, size_t len) {
        enc_name(enc, name);
        enc_value(enc, content, len);
}

void rec_field_str(rec_encoder *enc, const char *name, const char *s) {
        rec_field(enc, name, s, strlen(s));
}

void rec_field_int(rec_encoder *enc, const char *name, int64_t v) {
        char buf[sizeof("-9223372036854775808")];
        int n = snprintf(buf, sizeof(buf), "%" PRId64, v);
        rec_field(enc, name, buf, (size_t) n);
}

void rec_field_uint(rec_encoder *enc, const char *name, uint64_t v) {
        char buf[sizeof("18446744073709551615")];
        int n = snprintf(buf, sizeof(buf), "%" PRIu64, v);
        rec_field(enc, name, buf, (size_t) n);
}

void rec_field_bool(rec_encoder *enc, const char *name, bool v) {
        rec_field_str(enc, name, v ? "true" : "false");
}

void rec_field_begin(rec_encoder *enc, const char *name, uint64_t len) {
        enc_name(enc, name);
        enc_length(enc, len);
        enc->pending = len;
}

void rec_field_write(rec_encoder *enc, const void *p, size_t n) {
        if (n > enc->pending) {
                if (enc->err == 0)
                        enc->err = -EINVAL;
                return;
        }
        enc->pending -= n;
        enc_raw(enc, p, n);
}

void rec_field_write_double(rec_encoder *enc, double v) {
        uint64_t bits;
        uint8_t b[8];
        /* Every NaN is hashed as the canonical quiet NaN: JSON cannot carry a NaN's payload. */
        if (isnan(v))
                bits = UINT64_C(0x7ff8000000000000);
        else
                memcpy(&bits, &v, sizeof(bits));
        for (size_t i = 0; i < 8; i++)
                b[i] = (uint8_t) (bits >> (56 - 8 * i));
        rec_field_write(enc, b, sizeof(b));
}

int rec_encoder_finish(rec_encoder *enc, char ret[REC_DIGEST_HEX_SIZE]) {
        if (enc->pending != 0 && enc->err == 0)
                enc->err = -EINVAL;
        if (enc->err < 0)
                return enc->err;
        return sha256_final_hex(&enc->sha, ret);
}

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

enum { RULE_MODE, RULE_IDENTITIES, RULE__N };
static const rec_pj_field rule_fields[RULE__N] = {
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

static const char *const kinds[] = {"javascript", "project", "module", "cell"};

/* Which one of the oneof keys first..first+3 (javascript, project, module, cell) is set: 0 for
 * none, 1..4 for the kind, -EINVAL for more than one. */
static int find_kind(const json_t *msg, const rec_pj_field *fields, size_t first, const char *what, hull_error *e) {
        int kind = 0;
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
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

typedef struct request_info {
        uint32_t protocol;
        int kind;           /* 0 none, 1..4 */
        const json_t *rule; /* NULL when absent */
        const char *floor;  /* minimumIsolation */
        size_t floor_len;
} request_info;

static int request_digest(const json_t *req, char ret[REC_DIGEST_HEX_SIZE], request_info *info, hull_error *e) {
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
                r = rec_pj_check_message(rule, "request.softwareRule", rule_fields, RULE__N, e);
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
                r = rec_pj_string_field(&enc, "software_mode", rule ? rec_pj_get(rule, &rule_fields[RULE_MODE]) : NULL,
                                        "softwareRule.mode", e);
                if (r >= 0)
                        r = rec_pj_strings_group(&enc, "software_identities", "software_identity",
                                                 rule ? rec_pj_get(rule, &rule_fields[RULE_IDENTITIES]) : NULL,
                                                 "softwareRule.identities", e);
                if (r < 0)
                        return r;
        }
        rec_field_str(&enc, "kind", kind ? kinds[kind - 1] : "");
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
        request_info info;
        return request_digest(request, ret, &info, e);
}

/* ---- results ---- */

enum {
        RS_SANDBOX,
        RS_ISOLATION,
        RS_DURATION,
        RS_RECORD,
        RS_SOFTWARE,
        RS_ENVIRONMENT,
        RS_JS,
        RS_PROJECT,
        RS_MODULE,
        RS_CELL,
        RS__N
};
static const rec_pj_field response_fields[RS__N] = {
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

static int result_digest(const json_t *res, char ret[REC_DIGEST_HEX_SIZE], int *ret_kind, hull_error *e) {
        _cleanup_(rec_encoder_done) rec_encoder enc = {};
        const char *s;
        size_t len;
        int64_t duration;
        int r;

        r = rec_pj_check_message(res, "the result", response_fields, RS__N, e);
        if (r < 0)
                return r;
        r = rec_pj_string(rec_pj_get(res, &response_fields[RS_SANDBOX]), "result.sandbox", &s, &len, e);
        if (r >= 0)
                r = rec_pj_string(rec_pj_get(res, &response_fields[RS_ISOLATION]), "result.isolation", &s, &len, e);
        if (r >= 0)
                r = rec_pj_string(rec_pj_get(res, &response_fields[RS_SOFTWARE]), "result.softwareIdentity", &s, &len,
                                  e);
        if (r >= 0)
                r = rec_pj_string(rec_pj_get(res, &response_fields[RS_ENVIRONMENT]), "result.environment", &s, &len, e);
        if (r >= 0)
                r = rec_pj_int(rec_pj_get(res, &response_fields[RS_DURATION]), "result.durationMs", INT64_MIN,
                               INT64_MAX, &duration, e);
        if (r < 0)
                return r;
        const json_t *record = rec_pj_get(res, &response_fields[RS_RECORD]);
        if (record && !json_is_object(record))
                return hull_fail(e, -EINVAL, "result.record is not a JSON object");
        int kind = find_kind(res, response_fields, RS_JS, "the result", e);
        if (kind < 0)
                return kind;
        if (kind == 0)
                return hull_fail(e, -EINVAL, "the result has none of javascript, project, module, cell");
        const json_t *m = rec_pj_get(res, &response_fields[RS_JS + (size_t) kind - 1]);

        r = rec_encoder_init(&enc, "plimsoll.run-result.v1");
        if (r < 0)
                return hull_fail(e, r, "run records: cannot start a SHA-256 digest");
        rec_field_str(&enc, "kind", kinds[kind - 1]);
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
        return result_digest(result, ret, &kind, e);
}

/* ---- records ---- */

enum {
        RC_VERSION,
        RC_REQUEST,
        RC_RESULT,
        RC_PROVIDER,
        RC_ISOLATION,
        RC_ENVIRONMENT,
        RC_POLICY,
        RC_STARTED,
        RC_ENDED,
        RC_SESSION,
        RC_SEQUENCE,
        RC_PREVIOUS,
        RC_RECORD,
        RC_SOFTWARE,
        RC_RULE,
        RC_UNANSWERED,
        RC__N
};
static const rec_pj_field record_fields[RC__N] = {
        [RC_VERSION] = {"version", NULL},
        [RC_REQUEST] = {"requestSha256", "request_sha256"},
        [RC_RESULT] = {"resultSha256", "result_sha256"},
        [RC_PROVIDER] = {"provider", NULL},
        [RC_ISOLATION] = {"isolation", NULL},
        [RC_ENVIRONMENT] = {"environment", NULL},
        [RC_POLICY] = {"policy", NULL},
        [RC_STARTED] = {"startedUnixMs", "started_unix_ms"},
        [RC_ENDED] = {"endedUnixMs", "ended_unix_ms"},
        [RC_SESSION] = {"session", NULL},
        [RC_SEQUENCE] = {"sequence", NULL},
        [RC_PREVIOUS] = {"previousSha256", "previous_sha256"},
        [RC_RECORD] = {"recordSha256", "record_sha256"},
        [RC_SOFTWARE] = {"softwareIdentity", "software_identity"},
        [RC_RULE] = {"softwareRuleId", "software_rule_id"},
        [RC_UNANSWERED] = {"unanswered", NULL},
};

typedef struct str_view {
        const char *p;
        size_t n;
} str_view;

typedef struct record_view {
        int64_t version;
        str_view s[RC__N]; /* the string fields, by their RC_ index */
        int64_t started, ended;
        uint64_t sequence;
} record_view;

static bool view_eq(str_view v, const char *s) {
        return v.n == strlen(s) && memcmp(v.p, s, v.n) == 0;
}

static int record_parse(const json_t *rec, record_view *v, hull_error *e) {
        static const int strings[] = {RC_REQUEST,     RC_RESULT,   RC_PROVIDER, RC_ISOLATION,
                                      RC_ENVIRONMENT, RC_POLICY,   RC_SESSION,  RC_PREVIOUS,
                                      RC_RECORD,      RC_SOFTWARE, RC_RULE,     RC_UNANSWERED};
        char what[REC_FIELD_NAME_MAX];
        int r = rec_pj_check_message(rec, "the record", record_fields, RC__N, e);
        if (r < 0)
                return r;
        *v = (record_view){};
        r = rec_pj_int(rec_pj_get(rec, &record_fields[RC_VERSION]), "record.version", 0, UINT32_MAX, &v->version, e);
        if (r >= 0)
                r = rec_pj_int(rec_pj_get(rec, &record_fields[RC_STARTED]), "record.startedUnixMs", INT64_MIN,
                               INT64_MAX, &v->started, e);
        if (r >= 0)
                r = rec_pj_int(rec_pj_get(rec, &record_fields[RC_ENDED]), "record.endedUnixMs", INT64_MIN, INT64_MAX,
                               &v->ended, e);
        if (r >= 0)
                r = rec_pj_uint64(rec_pj_get(rec, &record_fields[RC_SEQUENCE]), "record.sequence", &v->sequence, e);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(strings); i++) {
                snprintf(what, sizeof(what), "record.%s", record_fields[strings[i]].camel);
                r = rec_pj_string(rec_pj_get(rec, &record_fields[strings[i]]), what, &v->s[strings[i]].p,
                                  &v->s[strings[i]].n, e);
        }
        if (r < 0)
                return r;
        if (v->version < 1 || v->version > 3)
                return hull_fail(e, -EINVAL, "record version %" PRId64 " is not 1, 2 or 3", v->version);
        return 0;
}

static int record_view_digest(const record_view *v, char ret[REC_DIGEST_HEX_SIZE], hull_error *e) {
        _cleanup_(rec_encoder_done) rec_encoder enc = {};
        char domain[REC_FIELD_NAME_MAX];
        snprintf(domain, sizeof(domain), "plimsoll.run-record.v%" PRId64, v->version);
        int r = rec_encoder_init(&enc, domain);
        if (r < 0)
                return hull_fail(e, r, "run records: cannot start a SHA-256 digest");
#define S(name, i) rec_field(&enc, name, v->s[i].p, v->s[i].n)
        S("request_sha256", RC_REQUEST);
        S("result_sha256", RC_RESULT);
        if (v->version == 3)
                S("unanswered", RC_UNANSWERED);
        S("provider", RC_PROVIDER);
        S("isolation", RC_ISOLATION);
        S("environment", RC_ENVIRONMENT);
        S("policy", RC_POLICY);
        if (v->version >= 2) {
                S("software_identity", RC_SOFTWARE);
                S("software_rule_id", RC_RULE);
        }
        rec_field_int(&enc, "started_unix_ms", v->started);
        rec_field_int(&enc, "ended_unix_ms", v->ended);
        S("session", RC_SESSION);
        rec_field_uint(&enc, "sequence", v->sequence);
        S("previous_sha256", RC_PREVIOUS);
#undef S
        r = rec_encoder_finish(&enc, ret);
        if (r < 0)
                return hull_fail(e, r, "run records: the record digest failed");
        return 0;
}

static json_t *int64_string(int64_t v) {
        return json_sprintf("%" PRId64, v);
}

int rec_record_new(const rec_record *v, json_t **ret, char ret_sha256[REC_DIGEST_HEX_SIZE], hull_error *e) {
        char sha[REC_DIGEST_HEX_SIZE];
        json_auto_t *o = json_pack("{s:i, s:s}", "version", (int) v->version, "requestSha256", v->request_sha256);
        if (!o ||
            (v->version == 3 ? json_object_set_new(o, "unanswered", json_string(v->unanswered))
                             : json_object_set_new(o, "resultSha256", json_string(v->result_sha256))) < 0 ||
            json_object_set_new(o, "provider", json_string(v->provider)) < 0 ||
            json_object_set_new(o, "isolation", json_string(v->isolation)) < 0 ||
            json_object_set_new(o, "environment", json_string(v->environment)) < 0 ||
            json_object_set_new(o, "policy", json_string(v->policy)) < 0 ||
            json_object_set_new(o, "startedUnixMs", int64_string((int64_t) v->started_unix_ms)) < 0 ||
            json_object_set_new(o, "endedUnixMs", int64_string((int64_t) v->ended_unix_ms)) < 0 ||
            json_object_set_new(o, "session", json_string(v->session)) < 0 ||
            json_object_set_new(o, "sequence", json_sprintf("%" PRIu64, v->sequence)) < 0 ||
            json_object_set_new(o, "previousSha256", json_string(v->previous_sha256)) < 0 ||
            json_object_set_new(o, "softwareIdentity", json_string(v->software_identity)) < 0 ||
            json_object_set_new(o, "softwareRuleId", json_string(v->software_rule_id)) < 0)
                return hull_fail(e, -ENOMEM, "run records: out of memory");
        int r = rec_record_digest(o, sha, e);
        if (r < 0)
                return r;
        if (json_object_set_new(o, "recordSha256", json_string(sha)) < 0)
                return hull_fail(e, -ENOMEM, "run records: out of memory");
        memcpy(ret_sha256, sha, sizeof(sha));
        *ret = TAKE_PTR(o);
        return 0;
}

int rec_record_digest(const json_t *record, char ret[REC_DIGEST_HEX_SIZE], hull_error *e) {
        record_view v;
        int r = record_parse(record, &v, e);
        if (r < 0)
                return r;
        return record_view_digest(&v, ret, e);
}

int rec_fingerprint(const char *session_id, size_t len, char ret[REC_DIGEST_HEX_SIZE]) {
        return sha256_hex(session_id, len, ret);
}

static int cmp_strp(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

int rec_software_rule_id(const json_t *rule, char ret[REC_RULE_ID_SIZE], hull_error *e) {
        if (json_is_null(rule))
                rule = NULL;
        if (rule) {
                int r = rec_pj_check_message(rule, "the software rule", rule_fields, RULE__N, e);
                if (r < 0)
                        return r;
                const char *mode;
                size_t mode_len;
                r = rec_pj_string(rec_pj_get(rule, &rule_fields[RULE_MODE]), "softwareRule.mode", &mode, &mode_len, e);
                if (r < 0)
                        return r;
        }
        const json_t *ids = rule ? rec_pj_get(rule, &rule_fields[RULE_IDENTITIES]) : NULL;
        int r = rec_pj_array(ids, "softwareRule.identities", e);
        if (r < 0)
                return r;
        size_t n = json_array_size(ids);
        if (n > REC_SOFTWARE_IDENTITIES_MAX)
                return hull_fail(e, -EINVAL, "the software rule has %zu identities, more than %u", n,
                                 REC_SOFTWARE_IDENTITIES_MAX);
        const char *sorted[REC_SOFTWARE_IDENTITIES_MAX];
        for (size_t i = 0; i < n; i++) {
                const json_t *id = json_array_get(ids, i);
                if (!json_is_string(id))
                        return hull_fail(e, -EINVAL, "softwareRule.identities has an element that is not a string");
                size_t len = json_string_length(id);
                if (len == 0 || len > REC_SOFTWARE_IDENTITY_MAX || strlen(json_string_value(id)) != len)
                        return hull_fail(e, -EINVAL, "a software identity must be 1 to %u bytes without NUL",
                                         REC_SOFTWARE_IDENTITY_MAX);
                sorted[i] = json_string_value(id);
        }
        qsort(sorted, n, sizeof(sorted[0]), cmp_strp);
        size_t unique = 0;
        for (size_t i = 0; i < n; i++)
                if (unique == 0 || strcmp(sorted[unique - 1], sorted[i]) != 0)
                        sorted[unique++] = sorted[i];
        if (unique == 0) {
                ret[0] = '\0';
                return 0;
        }
        if (unique == 1) {
                snprintf(ret, REC_RULE_ID_SIZE, "exact:%s", sorted[0]);
                return 0;
        }
        _cleanup_sha256_ sha256_ctx sha = {};
        char hex[SHA256_HEX_SIZE];
        r = sha256_init(&sha);
        for (size_t i = 0; r >= 0 && i < unique; i++) {
                if (i > 0)
                        r = sha256_update(&sha, "", 1); /* the zero byte between identities */
                if (r >= 0)
                        r = sha256_update(&sha, sorted[i], strlen(sorted[i]));
        }
        if (r >= 0)
                r = sha256_final_hex(&sha, hex);
        if (r < 0)
                return hull_fail(e, r, "run records: the software rule digest failed");
        snprintf(ret, REC_RULE_ID_SIZE, "approved:sha256:%s", hex);
        return 0;
}

/* ---- the chain ---- */

void rec_chain_init(rec_chain *c) {
        *c = (rec_chain){.found_index = SIZE_MAX};
}

static void chain_break(rec_chain *c, size_t index, rec_break b) {
        if (c->brk != REC_BREAK_NONE)
                return;
        c->brk = b;
        c->brk_index = index;
}

void rec_chain_push_unreadable(rec_chain *c) {
        chain_break(c, c->n++, REC_BREAK_MALFORMED);
}

static bool digest_or_empty(str_view v) {
        return v.n == 0 || sha256_hex_is_valid(v.p, v.n);
}

/* Place one well-formed record in the chain (the chain is not broken yet). */
static void chain_step(rec_chain *c, size_t index, const record_view *v) {
        const str_view session = v->s[RC_SESSION], previous = v->s[RC_PREVIOUS], stated = v->s[RC_RECORD];
        int family = v->version == 1 ? 1 : 2;

        if (index == 0) { /* the first record says what the log is: single runs or one session */
                c->single = session.n == 0;
                memcpy(c->session, session.p, session.n);
                c->session[session.n] = '\0';
                c->family = family;
        }
        if (family != c->family) {
                chain_break(c, index, REC_BREAK_VERSION);
                c->brk_got = (uint64_t) v->version;
                return;
        }
        if (c->single ? session.n != 0 : !view_eq(session, c->session)) {
                chain_break(c, index, REC_BREAK_SESSION);
                memcpy(c->brk_value, session.p, session.n);
                c->brk_value[session.n] = '\0';
                return;
        }
        if (!c->single) {
                uint64_t expected = c->calls + 1;
                if (v->sequence != expected) {
                        chain_break(c, index, v->sequence > expected ? REC_BREAK_GAP : REC_BREAK_REPEAT);
                        c->brk_expected = expected;
                        c->brk_got = v->sequence;
                        return;
                }
                if (!view_eq(previous, c->calls == 0 ? "" : c->last)) {
                        chain_break(c, index, REC_BREAK_PREVIOUS);
                        memcpy(c->brk_value, previous.p, previous.n);
                        c->brk_value[previous.n] = '\0';
                        return;
                }
        }
        c->calls++;
        size_t n = MIN(stated.n, (size_t) REC_DIGEST_HEX_SIZE - 1);
        memcpy(c->last, stated.p, n);
        c->last[n] = '\0';
}

int rec_chain_push(rec_chain *c, const json_t *record, hull_error *e) {
        size_t index = c->n++;
        record_view v;
        char digest[REC_DIGEST_HEX_SIZE];
        int r = record_parse(record, &v, e);
        if (r >= 0) {
                const str_view session = v.s[RC_SESSION], previous = v.s[RC_PREVIOUS];
                if (!digest_or_empty(session))
                        r = hull_fail(e, -EINVAL, "record.session is not a SHA-256 fingerprint");
                else if (!digest_or_empty(previous))
                        r = hull_fail(e, -EINVAL, "record.previousSha256 is not a SHA-256 digest");
                else if (session.n == 0 && (v.sequence != 0 || previous.n != 0))
                        r = hull_fail(e, -EINVAL,
                                      "a record without a session has sequence %" PRIu64 " or a previousSha256",
                                      v.sequence);
                else if (session.n != 0 && v.sequence == 0)
                        r = hull_fail(e, -EINVAL, "a record of a session has sequence 0");
        }
        if (r < 0) {
                chain_break(c, index, REC_BREAK_MALFORMED);
                return r;
        }
        r = record_view_digest(&v, digest, e);
        if (r < 0)
                return r;

        if (c->brk == REC_BREAK_NONE)
                chain_step(c, index, &v);
        else if (c->brk == REC_BREAK_GAP && !c->finished && c->found_index == SIZE_MAX &&
                 view_eq(v.s[RC_SESSION], c->session) && v.sequence == c->brk_expected)
                c->found_index = index;

        if (!view_eq(v.s[RC_RECORD], digest)) {
                char pb[PRINTABLE_SIZE];
                hull_fail(e, -EBADMSG,
                          "record digest mismatch (tampered?): recordSha256 is %s, its fields give %.16s...",
                          short_digest(v.s[RC_RECORD].p, v.s[RC_RECORD].n, pb), digest);
                return 1;
        }
        return 0;
}

rec_break rec_chain_finish(rec_chain *c) {
        if (!c->finished && c->brk == REC_BREAK_GAP && c->found_index != SIZE_MAX)
                c->brk = REC_BREAK_ORDER;
        c->finished = true;
        return c->brk;
}

const char *rec_break_to_string(rec_break b) {
        switch (b) {
        case REC_BREAK_NONE:
                return "none";
        case REC_BREAK_MALFORMED:
                return "unreadable record";
        case REC_BREAK_SESSION:
                return "wrong session";
        case REC_BREAK_GAP:
                return "gap in the sequence";
        case REC_BREAK_ORDER:
                return "records out of order";
        case REC_BREAK_REPEAT:
                return "repeated call";
        case REC_BREAK_PREVIOUS:
                return "wrong previous record";
        case REC_BREAK_VERSION:
                return "mixed record versions";
        }
        return "unknown";
}

void rec_chain_describe(const rec_chain *c, char *buf, size_t size) {
        switch (c->brk) {
        case REC_BREAK_NONE:
                snprintf(buf, size, "the chain holds");
                break;
        case REC_BREAK_MALFORMED:
                snprintf(buf, size, "the chain breaks here: no readable record");
                break;
        case REC_BREAK_SESSION:
                if (c->single)
                        snprintf(buf, size, "wrong session: a call of session %.16s... in a log of single runs",
                                 c->brk_value);
                else if (c->brk_value[0] == '\0')
                        snprintf(buf, size, "wrong session: a single run in the log of session %.16s...", c->session);
                else
                        snprintf(buf, size,
                                 "wrong session: names session %.16s..., not %.16s... of the records before it",
                                 c->brk_value, c->session);
                break;
        case REC_BREAK_GAP:
                snprintf(buf, size,
                         "gap in the sequence: sequence %" PRIu64 " where %" PRIu64 " was expected; call %" PRIu64
                         " is missing",
                         c->brk_got, c->brk_expected, c->brk_expected);
                break;
        case REC_BREAK_ORDER:
                snprintf(buf, size,
                         "records out of order: sequence %" PRIu64 " where %" PRIu64 " was expected; call %" PRIu64
                         " comes later, at line %zu",
                         c->brk_got, c->brk_expected, c->brk_expected, c->found_index + 1);
                break;
        case REC_BREAK_REPEAT:
                snprintf(buf, size, "repeated call: sequence %" PRIu64 " again where %" PRIu64 " was expected",
                         c->brk_got, c->brk_expected);
                break;
        case REC_BREAK_PREVIOUS:
                if (c->calls == 0)
                        snprintf(buf, size, "wrong previous record: call 1 names previousSha256 %.16s...",
                                 c->brk_value);
                else
                        snprintf(buf, size,
                                 "wrong previous record: previousSha256 is %.16s..., the record before it is %.16s...",
                                 c->brk_value[0] ? c->brk_value : "(empty)", c->last);
                break;
        case REC_BREAK_VERSION:
                snprintf(buf, size, "mixed record versions: a version %" PRIu64 " record among version %s records",
                         c->brk_got, c->family == 1 ? "1" : "2 and 3");
                break;
        }
}

int rec_chain_verify(const json_t *const *records, size_t n, rec_chain *ret, size_t *ret_index, hull_error *e) {
        size_t first = SIZE_MAX;
        hull_error err = {};
        rec_chain_init(ret);
        for (size_t i = 0; i < n; i++) {
                int r = rec_chain_push(ret, records[i], &err);
                if (r < 0 && r != -EINVAL)
                        return hull_fail(e, r, "%s", err.msg);
                if (r != 0 && first == SIZE_MAX) {
                        first = i;
                        if (e)
                                *e = err;
                }
        }
        rec_chain_finish(ret);
        if (ret->brk != REC_BREAK_NONE && ret->brk_index < first) {
                first = ret->brk_index;
                if (e) {
                        rec_chain_describe(ret, e->msg, sizeof(e->msg));
                        e->err = -EBADMSG;
                }
        }
        if (first == SIZE_MAX)
                return 0;
        *ret_index = first;
        return 1;
}

/* ---- the audit log ---- */

static int entry_shape(const json_t *entry, const json_t **ret_record, const json_t **ret_request,
                       const json_t **ret_result, const char **ret_operation, hull_error *e) {
        static const rec_pj_field entry_fields[] = {
                {"record", NULL}, {"request", NULL}, {"result", NULL}, {"operation", NULL}};
        char pb[PRINTABLE_SIZE];
        int r = rec_pj_check_message(entry, "the log entry", entry_fields, ELEMENTSOF(entry_fields), e);
        if (r < 0)
                return r;
        *ret_record = rec_pj_get(entry, &entry_fields[0]);
        *ret_request = rec_pj_get(entry, &entry_fields[1]);
        *ret_result = rec_pj_get(entry, &entry_fields[2]);
        const json_t *op = rec_pj_get(entry, &entry_fields[3]);
        *ret_operation = NULL;
        if (op && (!json_is_string(op) || !rec_hull_operation_is_valid(json_string_value(op))))
                return hull_fail(e, -EINVAL, "the log entry's operation %s is not one of hull's record kinds",
                                 json_is_string(op) ? printable(json_string_value(op), json_string_length(op), pb)
                                                    : "(not a string)");
        if (op)
                *ret_operation = json_string_value(op);
        if (!json_is_object(*ret_record))
                return hull_fail(e, -EINVAL, "the log entry has no record object");
        if (!json_is_object(*ret_request))
                return hull_fail(e, -EINVAL, "the log entry has no request object");
        if (*ret_result && !json_is_object(*ret_result))
                return hull_fail(e, -EINVAL, "the log entry's result is not an object");
        return 0;
}

int rec_log_entry_new(const char *operation, const json_t *record, const json_t *request, const json_t *result,
                      json_t **ret, hull_error *e) {
        if (!json_is_object(record) || !json_is_object(request) || (result && !json_is_object(result)))
                return hull_fail(e, -EINVAL, "run records: a log entry needs a record and a request object");
        if (operation && !rec_hull_operation_is_valid(operation))
                return hull_fail(e, -EINVAL, "run records: '%s' is not one of hull's record kinds", operation);
        json_auto_t *req = json_deep_copy(request);
        json_auto_t *o = json_object();
        if (!req || !o)
                return hull_fail(e, -ENOMEM, "run records: out of memory");
        (void) json_object_del(req, "sessionId");
        (void) json_object_del(req, "session_id");
        if (json_object_set_new(o, "record", json_deep_copy(record)) < 0 || json_object_set(o, "request", req) < 0 ||
            (result && json_object_set_new(o, "result", json_deep_copy(result)) < 0) ||
            (operation && json_object_set_new(o, "operation", json_string(operation)) < 0))
                return hull_fail(e, -ENOMEM, "run records: out of memory");
        *ret = TAKE_PTR(o);
        return 0;
}

bool rec_json_depth_ok(const char *buf, size_t len, unsigned max) {
        return rec_json_prescan(buf, len, max, SIZE_MAX) == 0;
}

int rec_json_prescan(const char *buf, size_t len, unsigned depth_max, size_t values_max) {
        unsigned depth = 0;
        size_t values = 1; /* each further value opens a container or follows a comma */
        bool in_string = false, escaped = false;
        for (size_t i = 0; i < len; i++) {
                char c = buf[i];
                if (in_string) {
                        if (escaped)
                                escaped = false;
                        else if (c == '\\')
                                escaped = true;
                        else if (c == '"')
                                in_string = false;
                } else if (c == '"')
                        in_string = true;
                else if (c == '[' || c == '{') {
                        if (++depth > depth_max)
                                return -ELOOP;
                        if (++values > values_max)
                                return -E2BIG;
                } else if (c == ',') {
                        if (++values > values_max)
                                return -E2BIG;
                } else if ((c == ']' || c == '}') && depth > 0)
                        depth--;
        }
        return 0;
}

int rec_log_append(int dirfd, const char *path, const json_t *entry, unsigned flags, hull_error *e) {
        const json_t *record, *request, *result;
        const char *operation;
        int r = entry_shape(entry, &record, &request, &result, &operation, e);
        if (r < 0)
                return r;
        if (json_object_get(request, "sessionId") || json_object_get(request, "session_id"))
                return hull_fail(e, -EINVAL, "run records: a log entry must not hold the session ID (a capability)");
        _cleanup_free_ char *line = json_dumps(entry, JSON_COMPACT | JSON_ENSURE_ASCII);
        if (!line)
                return hull_fail(e, -ENOMEM, "run records: cannot serialise the log entry");
        size_t len = strlen(line);
        if (len > REC_LOG_LINE_MAX)
                return hull_fail(e, -E2BIG, "run records: the log entry is %zu bytes, more than %llu", len,
                                 (unsigned long long) REC_LOG_LINE_MAX);
        int q = rec_json_prescan(line, len, REC_JSON_DEPTH_MAX, REC_LOG_LINE_VALUES_MAX);
        if (q == -ELOOP)
                return hull_fail(e, -EINVAL, "run records: the log entry nests deeper than %u", REC_JSON_DEPTH_MAX);
        if (q < 0)
                return hull_fail(e, -E2BIG, "run records: the log entry holds more than %u JSON values",
                                 REC_LOG_LINE_VALUES_MAX);
        line[len++] = '\n'; /* replaces the NUL; the length is what is written */

        _cleanup_close_ int fd =
                openat(dirfd, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd < 0)
                return hull_err(e, negative_errno(), "run records: cannot open the audit log '%s'", path);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return hull_err(e, negative_errno(), "run records: cannot stat the audit log '%s'", path);
        if (!S_ISREG(st.st_mode))
                return hull_fail(e, -EINVAL, "run records: the audit log '%s' is not a regular file", path);
        for (size_t done = 0; done < len;) {
                ssize_t n = write(fd, line + done, len - done);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return hull_err(e, negative_errno(), "run records: cannot append to the audit log '%s'", path);
                }
                done += (size_t) n;
        }
        if ((flags & REC_LOG_SYNC) && fdatasync(fd) < 0)
                return hull_err(e, negative_errno(), "run records: cannot sync the audit log '%s'", path);
        return 0;
}

int rec_log_parse_line(const char *line, size_t len, json_t **ret, hull_error *e) {
        char pb[PRINTABLE_SIZE];
        const json_t *record, *request, *result;
        const char *operation;
        json_error_t jerr;
        if (len > REC_LOG_LINE_MAX)
                return hull_fail(e, -E2BIG, "the line is longer than %llu bytes",
                                 (unsigned long long) REC_LOG_LINE_MAX);
        /* Counted before parsing: each value costs the parser far more than its bytes (review
         * 2.3: one 60 MiB line of {} took 4.8 GB). */
        int q = rec_json_prescan(line, len, REC_JSON_DEPTH_MAX, REC_LOG_LINE_VALUES_MAX);
        if (q == -ELOOP)
                return hull_fail(e, -EINVAL, "the line nests deeper than %u", REC_JSON_DEPTH_MAX);
        if (q < 0)
                return hull_fail(e, -E2BIG, "the line holds more than %u JSON values", REC_LOG_LINE_VALUES_MAX);
        json_auto_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (!j)
                return hull_fail(e, -EINVAL, "not valid JSON (truncated or garbage?): %s at column %d",
                                 printable(jerr.text, strlen(jerr.text), pb), jerr.column);
        int r = entry_shape(j, &record, &request, &result, &operation, e);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(j);
        return 0;
}

/* Isolation tiers in order of strength; an unknown or empty tier meets no floor. */
static int tier_rank(const char *s, size_t len) {
        static const char *const tiers[] = {"none", "process", "container", "kernel", "vm"};
        for (size_t i = 0; i < ELEMENTSOF(tiers); i++)
                if (len == strlen(tiers[i]) && memcmp(s, tiers[i], len) == 0)
                        return (int) i;
        return -1;
}

static bool is_connect_code(str_view v) {
        static const char *const codes[] = {
                "canceled",        "unknown",           "invalid_argument",   "deadline_exceeded",   "not_found",
                "already_exists",  "permission_denied", "resource_exhausted", "failed_precondition", "aborted",
                "out_of_range",    "unimplemented",     "internal",           "unavailable",         "data_loss",
                "unauthenticated",
        };
        for (size_t i = 0; i < ELEMENTSOF(codes); i++)
                if (view_eq(v, codes[i]))
                        return true;
        return false;
}

/* Compare a string field of a RunResponse envelope with the record's. */
static int envelope_matches(const json_t *res, int rs, const record_view *v, int rc, hull_error *e) {
        const json_t *f = rec_pj_get(res, &response_fields[rs]);
        if (!f)
                return 0;
        if (json_string_length(f) != v->s[rc].n || memcmp(json_string_value(f), v->s[rc].p, v->s[rc].n) != 0)
                return hull_fail(e, -EBADMSG, "the response's %s differs from the record's %s",
                                 response_fields[rs].camel, record_fields[rc].camel);
        return 0;
}

/* An entry of one of hull's record kinds: its digests by hull's rules; version 2 with a result,
 * or 3 (unanswered) without one; in a session. The software rule is the session's, which the
 * request does not carry: not checked here. */
static int hull_entry_check(const char *operation, const record_view *v, const json_t *request, const json_t *result,
                            hull_error *e) {
        char digest[REC_DIGEST_HEX_SIZE], pb[PRINTABLE_SIZE];
        int r = rec_hull_request_digest(operation, request, digest, e);
        if (r < 0)
                return r;
        if (!view_eq(v->s[RC_REQUEST], digest))
                return hull_fail(e, -EBADMSG,
                                 "request digest mismatch (tampered?): the record states %s, the %s request gives "
                                 "%.16s...",
                                 short_digest(v->s[RC_REQUEST].p, v->s[RC_REQUEST].n, pb), operation, digest);
        if (v->version == 1)
                return hull_fail(e, -EBADMSG, "a version 1 record for hull's %s (hull's kinds have 2 or 3)", operation);
        if (v->s[RC_SESSION].n == 0)
                return hull_fail(e, -EBADMSG, "a %s record outside a session", operation);
        if (v->version == 3) {
                if (result || v->s[RC_RESULT].n != 0)
                        return hull_fail(e, -EBADMSG, "a version 3 record (an unanswered call) with a result");
                if (!is_connect_code(v->s[RC_UNANSWERED]))
                        return hull_fail(e, -EBADMSG,
                                         "a version 3 record whose unanswered '%s' is not a Connect error code",
                                         printable(v->s[RC_UNANSWERED].p, v->s[RC_UNANSWERED].n, pb));
                return 0;
        }
        if (v->s[RC_UNANSWERED].n != 0)
                return hull_fail(e, -EBADMSG, "a version 2 record names unanswered, which its digest does not cover");
        if (!result)
                return hull_fail(e, -EBADMSG, "a version 2 %s record without a result", operation);
        r = rec_hull_result_digest(operation, result, digest, e);
        if (r < 0)
                return r;
        if (!view_eq(v->s[RC_RESULT], digest))
                return hull_fail(e, -EBADMSG,
                                 "result digest mismatch (tampered?): the record states %s, the %s result gives "
                                 "%.16s...",
                                 short_digest(v->s[RC_RESULT].p, v->s[RC_RESULT].n, pb), operation, digest);
        return 0;
}

int rec_entry_check(const json_t *entry, hull_error *e) {
        const json_t *record, *request, *result;
        const char *operation;
        record_view v;
        request_info info;
        char digest[REC_DIGEST_HEX_SIZE], rule_id[REC_RULE_ID_SIZE], pb[PRINTABLE_SIZE], pb2[PRINTABLE_SIZE];
        int kind = 0, r;

        r = entry_shape(entry, &record, &request, &result, &operation, e);
        if (r < 0)
                return r;
        r = record_parse(record, &v, e);
        if (r < 0)
                return r;
        if (operation)
                return hull_entry_check(operation, &v, request, result, e);
        r = request_digest(request, digest, &info, e);
        if (r < 0)
                return r;
        if (!view_eq(v.s[RC_REQUEST], digest))
                return hull_fail(
                        e, -EBADMSG,
                        "request digest mismatch (tampered?): the record states %s, the request gives %.16s...",
                        short_digest(v.s[RC_REQUEST].p, v.s[RC_REQUEST].n, pb), digest);
        if (info.protocol >= 2 && v.version == 1)
                return hull_fail(e, -EBADMSG,
                                 "a version 1 record for a protocol %" PRIu32
                                 " request (version 1 is for protocol 1 only)",
                                 info.protocol);
        if (info.protocol < 2 && v.version != 1)
                return hull_fail(e, -EBADMSG, "a version %" PRId64 " record for a protocol %" PRIu32 " request",
                                 v.version, info.protocol);

        if (v.version == 3) {
                if (result)
                        return hull_fail(e, -EBADMSG, "a version 3 record (an unanswered call) with a result");
                if (v.s[RC_RESULT].n != 0)
                        return hull_fail(e, -EBADMSG, "a version 3 record (an unanswered call) with a resultSha256");
                if (!is_connect_code(v.s[RC_UNANSWERED]))
                        return hull_fail(e, -EBADMSG,
                                         "a version 3 record whose unanswered '%s' is not a Connect error code",
                                         printable(v.s[RC_UNANSWERED].p, v.s[RC_UNANSWERED].n, pb));
                if (v.s[RC_SESSION].n == 0)
                        return hull_fail(e, -EBADMSG, "a version 3 record (an unanswered call) outside a session");
        } else {
                if (v.s[RC_UNANSWERED].n != 0)
                        return hull_fail(e, -EBADMSG,
                                         "a version %" PRId64
                                         " record names unanswered '%s', which its digest does not cover",
                                         v.version, printable(v.s[RC_UNANSWERED].p, v.s[RC_UNANSWERED].n, pb));
                if (!result)
                        return hull_fail(e, -EBADMSG, "a version %" PRId64 " record without a result", v.version);
                r = result_digest(result, digest, &kind, e);
                if (r < 0)
                        return r;
                if (!view_eq(v.s[RC_RESULT], digest))
                        return hull_fail(
                                e, -EBADMSG,
                                "result digest mismatch (tampered?): the record states %s, the result gives %.16s...",
                                short_digest(v.s[RC_RESULT].p, v.s[RC_RESULT].n, pb), digest);
                if (kind != info.kind)
                        return hull_fail(e, -EBADMSG, "a %s result for a %s request", kinds[kind - 1],
                                         info.kind ? kinds[info.kind - 1] : "payload-less");
        }

        if (v.version == 1) {
                if (v.s[RC_SOFTWARE].n != 0 || v.s[RC_RULE].n != 0)
                        return hull_fail(e, -EBADMSG,
                                         "a version 1 record carries software fields, which its digest does not cover");
        } else {
                r = rec_software_rule_id(info.rule, rule_id, e);
                if (r < 0)
                        return r;
                if (!view_eq(v.s[RC_RULE], rule_id))
                        return hull_fail(e, -EBADMSG, "softwareRuleId '%s' is not the request's rule ('%s')",
                                         printable(v.s[RC_RULE].p, v.s[RC_RULE].n, pb),
                                         printable(rule_id, strlen(rule_id), pb2));
                const json_t *ids = info.rule ? rec_pj_get(info.rule, &rule_fields[RULE_IDENTITIES]) : NULL;
                bool in_rule = json_array_size(ids) == 0;
                for (size_t i = 0; !in_rule && i < json_array_size(ids); i++) {
                        const json_t *id = json_array_get(ids, i);
                        in_rule = json_string_length(id) == v.s[RC_SOFTWARE].n &&
                                  memcmp(json_string_value(id), v.s[RC_SOFTWARE].p, v.s[RC_SOFTWARE].n) == 0;
                }
                if (!in_rule)
                        return hull_fail(e, -EBADMSG, "softwareIdentity '%s' is not in the request's software rule",
                                         printable(v.s[RC_SOFTWARE].p, v.s[RC_SOFTWARE].n, pb));
        }

        if (info.floor_len != 0) {
                int floor = tier_rank(info.floor, info.floor_len),
                    tier = tier_rank(v.s[RC_ISOLATION].p, v.s[RC_ISOLATION].n);
                if (floor <= 0)
                        return hull_fail(e, -EBADMSG,
                                         "the request's minimumIsolation '%s' is not a floor a daemon accepts",
                                         printable(info.floor, info.floor_len, pb));
                if (tier < floor)
                        return hull_fail(e, -EBADMSG, "the record's isolation '%s' is below the request's floor '%s'",
                                         printable(v.s[RC_ISOLATION].p, v.s[RC_ISOLATION].n, pb),
                                         printable(info.floor, info.floor_len, pb2));
        }

        if (result) {
                r = envelope_matches(result, RS_SANDBOX, &v, RC_PROVIDER, e);
                if (r >= 0)
                        r = envelope_matches(result, RS_ISOLATION, &v, RC_ISOLATION, e);
                if (r >= 0)
                        r = envelope_matches(result, RS_ENVIRONMENT, &v, RC_ENVIRONMENT, e);
                if (r >= 0)
                        r = envelope_matches(result, RS_SOFTWARE, &v, RC_SOFTWARE, e);
                if (r < 0)
                        return r;
                const json_t *inner = rec_pj_get(result, &response_fields[RS_RECORD]);
                if (inner && !json_equal((json_t *) inner, (json_t *) record))
                        return hull_fail(e, -EBADMSG, "the response's record differs from the logged record");
        }
        return 0;
}
