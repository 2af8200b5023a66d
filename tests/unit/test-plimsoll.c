/* test-plimsoll.c: the protocol's pure parts: the request-ID rule, Connect errors and their
 * NotDispatched details, routing, the protocol gate, request bounds, admission, the broker plan,
 * and the Run answer with its record against the reference's example exchange. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker-msg.h"
#include "macro.h"
#include "plimsoll.h"
#include "test.h"

static const plim_evidence ev = {
        .sandbox = "hull", .isolation = "container", .javascript = true, .python = true,
        .memory_bytes = 512ULL << 20, .pids = 256,
};

static void test_request_id(void) {
        CHECK(plim_request_id_is_valid("0123456789abcdef0123456789abcdef"));
        CHECK(!plim_request_id_is_valid("0123456789ABCDEF0123456789abcdef"));
        CHECK(!plim_request_id_is_valid("0123456789abcdef0123456789abcde"));
        CHECK(!plim_request_id_is_valid("0123456789abcdef0123456789abcdef0"));
        CHECK(!plim_request_id_is_valid("0123456789abcdef0123456789abcdeg"));
        CHECK(!plim_request_id_is_valid(""));
        CHECK(!plim_request_id_is_valid("0123456789abcdef 123456789abcdef"));
}

static void test_errors(void) {
        plim_error f;
        char *s;
        size_t n;
        CHECK_EQ_INT(plim_code_http_status(PLIM_CODE_INVALID_ARGUMENT), 400);
        CHECK_EQ_INT(plim_code_http_status(PLIM_CODE_FAILED_PRECONDITION), 400);
        CHECK_EQ_INT(plim_code_http_status(PLIM_CODE_UNAUTHENTICATED), 401);
        CHECK_EQ_INT(plim_code_http_status(PLIM_CODE_PERMISSION_DENIED), 403);
        CHECK_EQ_INT(plim_code_http_status(PLIM_CODE_RESOURCE_EXHAUSTED), 429);
        CHECK_EQ_INT(plim_code_http_status(PLIM_CODE_CANCELED), 499);
        CHECK_EQ_INT(plim_code_http_status(PLIM_CODE_UNIMPLEMENTED), 501);
        CHECK_EQ_INT(plim_code_http_status(PLIM_CODE_UNAVAILABLE), 503);
        CHECK_EQ_INT(plim_code_http_status(PLIM_CODE_DEADLINE_EXCEEDED), 504);
        CHECK_EQ_STR(plim_code_to_string(PLIM_CODE_FAILED_PRECONDITION), "failed_precondition");
        CHECK_EQ_STR(plim_reason_to_string(PLIM_REASON_ENVIRONMENT), "environment");

        /* Each reason's detail is base64 (unpadded) of the protobuf 08 nn. */
        static const char *const want[] = { "CAE", "CAI", "CAM", "CAQ", "CAU", "CAY", "CAc" };
        for (int r = PLIM_REASON_REQUEST; r <= PLIM_REASON_ENVIRONMENT; r++) {
                plim_fail(&f, PLIM_CODE_INVALID_ARGUMENT, (plim_reason) r, "m %d", r);
                CHECK(plim_error_json(&f, &s, &n) == 0);
                json_t *j = json_loads(s, 0, NULL);
                json_t *d = json_array_get(json_object_get(j, "details"), 0);
                CHECK_EQ_STR(json_string_value(json_object_get(d, "type")), "plimsoll.v1.NotDispatched");
                CHECK_EQ_STR(json_string_value(json_object_get(d, "value")), want[r - 1]);
                CHECK(json_array_size(json_object_get(j, "details")) == 1);
                json_decref(j);
                free(s);
        }
        plim_fail(&f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "internal error %s", "x\"y");
        CHECK(plim_error_json(&f, &s, &n) == 0);
        CHECK_EQ_STR(s, "{\"code\":\"internal\",\"message\":\"internal error x\\\"y\"}");
        CHECK(n == strlen(s));
        free(s);
}

static void test_routing(void) {
        CHECK_EQ_INT(plim_procedure_from_path("/plimsoll.v1.SandboxService/Run"), PLIM_PROC_RUN);
        CHECK_EQ_INT(plim_procedure_from_path("/api/v2/plimsoll.v1.SandboxService/Describe"), PLIM_PROC_DESCRIBE);
        CHECK_EQ_INT(plim_procedure_from_path("/plimsoll.v1.SandboxService/CloseSession"), PLIM_PROC_CLOSE_SESSION);
        CHECK_EQ_INT(plim_procedure_from_path("/plimsoll.v1.SandboxService/Run/x"), PLIM_PROC_UNKNOWN);
        CHECK_EQ_INT(plim_procedure_from_path("/plimsoll.v1.SandboxService/"), PLIM_PROC_UNKNOWN);
        CHECK_EQ_INT(plim_procedure_from_path("/plimsoll.v1.SandboxService/run"), PLIM_PROC_UNKNOWN);
        CHECK_EQ_INT(plim_procedure_from_path("/metrics"), PLIM_PROC_NONE);
        /* exactly {prefix}/plimsoll.v1.SandboxService/{Method} (review: strstr routed these to Run) */
        CHECK_EQ_INT(plim_procedure_from_path("/metrics/../plimsoll.v1.SandboxService/Run"), PLIM_PROC_NONE);
        CHECK_EQ_INT(plim_procedure_from_path("/a/./plimsoll.v1.SandboxService/Run"), PLIM_PROC_NONE);
        CHECK_EQ_INT(plim_procedure_from_path("//plimsoll.v1.SandboxService/Run"), PLIM_PROC_NONE);
        CHECK_EQ_INT(plim_procedure_from_path("x/plimsoll.v1.SandboxService/Run"), PLIM_PROC_NONE);
        CHECK_EQ_INT(plim_procedure_from_path("/healthzplimsoll.v1.SandboxService/Run"), PLIM_PROC_NONE);
        CHECK_EQ_INT(plim_procedure_from_path("/a/b/plimsoll.v1.SandboxService/Run"), PLIM_PROC_RUN);
        CHECK(plim_content_type_is_json("application/json"));
        CHECK(plim_content_type_is_json("Application/JSON; charset=utf-8"));
        CHECK(plim_content_type_is_json("application/json;charset=utf-8"));
        CHECK(!plim_content_type_is_json("application/jsonx"));
        CHECK(!plim_content_type_is_json("application/proto"));
        CHECK(!plim_content_type_is_json(NULL));
}

/* Parse text; return the error (code, reason) or -1/-1 when it parsed. */
static int parse_code(const char *text, plim_reason *ret_reason, plim_request *keep) {
        plim_request r;
        plim_error f = { 0 };
        int q = plim_run_parse(text, strlen(text), &r, &f);
        if (q == 0) {
                if (keep)
                        *keep = r;
                else
                        plim_request_done(&r);
                *ret_reason = (plim_reason) -1;
                return -1;
        }
        *ret_reason = f.reason;
        return (int) f.code;
}

#define REFUSED(text, code, reason)                                                                \
        do {                                                                                       \
                plim_reason _r;                                                                    \
                int _c = parse_code(text, &_r, NULL);                                              \
                TEST_RESULT(_c == (int) (code) && _r == (reason), "%s refused as %s/%s (got %d/%d)", text, \
                            plim_code_to_string(code), plim_reason_to_string(reason), _c, (int) _r); \
        } while (0)
#define ACCEPTED(text)                                                                             \
        do {                                                                                       \
                plim_reason _r;                                                                    \
                TEST_RESULT(parse_code(text, &_r, NULL) == -1, "%s accepted", text);               \
        } while (0)

static void test_parse(void) {
        plim_request r;
        plim_error f;

        /* the gate, before the payload */
        REFUSED("{\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_PROTOCOL);
        REFUSED("{\"protocol\":0,\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_PROTOCOL);
        REFUSED("{\"protocol\":2,\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_PROTOCOL);
        REFUSED("{\"protocol\":4,\"javascript\":7}", PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_PROTOCOL);
        REFUSED("{\"protocol\":\"x\",\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":-3}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        CHECK(plim_run_parse("{\"protocol\":7}", 14, &r, &f) < 0);
        CHECK_EQ_STR(f.message, "this daemon serves protocol 3 and the request states 7; nothing ran");
        ACCEPTED("{\"protocol\":\"3\",\"javascript\":{\"code\":\"1\"}}");
        ACCEPTED("{\"protocol\":3,\"timeout_ms\":\"-5\",\"minimum_isolation\":\"process\",\"javascript\":{\"code\":\"1\"}}");
        REFUSED("{\"protocol\":3,\"timeoutMs\":1,\"timeout_ms\":1,\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT,
                PLIM_REASON_REQUEST);

        /* the body itself */
        REFUSED("", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("[3]", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"protocol\":3}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"x\":[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        CHECK(plim_run_parse("{", 1, &r, &f) < 0 && f.before_handler);
        CHECK(plim_run_parse("{\"protocol\":2}", 14, &r, &f) < 0 && !f.before_handler);

        /* payloads */
        REFUSED("{\"protocol\":3}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"javascript\":null}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"cell\":{\"language\":\"python\",\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"module\":{}}", PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED);
        REFUSED("{\"protocol\":3,\"javascript\":{\"code\":\"1\"},\"project\":{\"steps\":[\"true\"]}}", PLIM_CODE_INVALID_ARGUMENT,
                PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"javascript\":{\"code\":\"\"}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"javascript\":{\"code\":\"a\\u0000b\"}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"javascript\":{\"code\":7}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"minimumIsolation\":\"none\",\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT,
                PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"minimumIsolation\":\"gvisor\",\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT,
                PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"timeoutMs\":2147483648,\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT,
                PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"project\":{\"steps\":[]}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"project\":{\"steps\":[\"a\\u0000\"]}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"files\":[{\"path\":\"../x\"}]}}", PLIM_CODE_INVALID_ARGUMENT,
                PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"files\":[{\"path\":\"a\"},{\"path\":\"a\"}]}}",
                PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"artifacts\":[\"a\",\"a\"]}}", PLIM_CODE_INVALID_ARGUMENT,
                PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"artifacts\":[\"/a\"]}}", PLIM_CODE_INVALID_ARGUMENT,
                PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"softwareRule\":{\"mode\":\"exact\",\"identities\":[\"a\",\"b\"]},\"javascript\":{\"code\":\"1\"}}",
                PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"softwareRule\":{\"mode\":\"approved\",\"identities\":[\"a\",\"a\"]},\"javascript\":{\"code\":\"1\"}}",
                PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"softwareRule\":{\"mode\":\"approved\",\"identities\":[\"a b\"]},\"javascript\":{\"code\":\"1\"}}",
                PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        ACCEPTED("{\"protocol\":3,\"softwareRule\":{},\"javascript\":{\"code\":\"1\"}}");
}

/* What the parser accepts, the record can digest: anything else is refused before a run
 * (review 1.1: these ran, then got a 500 without a record). */
static void test_parse_matches_record(void) {
        static const char *const refused[] = {
                "{\"protocol\":3,\"javascript\":{\"code\":\"1\"},\"extra\":1}",
                "{\"protocol\":3,\"softwareRule\":{},\"javascript\":{\"code\":\"1\"},\"unknownField\":{\"x\":1}}",
                "{\"protocol\":3,\"javascript\":{\"code\":\"1\",\"extra\":1}}",
                "{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"extra\":1}}",
                "{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"files\":[{\"path\":\"a\",\"mode\":1}]}}",
                "{\"protocol\":3,\"softwareRule\":{\"extra\":1},\"javascript\":{\"code\":\"1\"}}",
                "{\"protocol\":3,\"sessionId\":7,\"javascript\":{\"code\":\"1\"}}",
                "{\"protocol\":3,\"sessionId\":\"s\",\"javascript\":{\"code\":\"1\"}}",
                "{\"protocol\":3,\"session_id\":\"s\",\"javascript\":{\"code\":\"1\"}}",
                "{\"protocol\":\"3\\u0000x\",\"javascript\":{\"code\":\"1\"}}",
                "{\"protocol\":3,\"timeoutMs\":\"5\\u0000\",\"javascript\":{\"code\":\"1\"}}",
                "{\"protocol\":3,\"javascript\":{\"code\":\"1\"},\"traceId\\u0000\":\"x\"}",
                "{\"protocol\":3,\"softwareRule\":{\"mode\":\"exact\",\"identities\":[\"a\\u0000\"]},\"javascript\":{\"code\":\"1\"}}",
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++)
                REFUSED(refused[i], PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);

        /* and every accepted request gets an answer with its record */
        static const char *const accepted[] = {
                "{\"protocol\":\"3\",\"timeout_ms\":\"-5\",\"trace_id\":\"t\",\"javascript\":{\"code\":\"1\",\"grant_profile\":\"\"}}",
                "{\"protocol\":3,\"software_rule\":{\"mode\":\"\",\"identities\":[]},\"javascript\":{\"code\":\"1\"}}",
                "{\"protocol\":3,\"module\":null,\"project\":{\"steps\":[\"true\"],\"files\":[{\"path\":\"a\",\"content\":\"\"}]}}",
        };
        for (size_t i = 0; i < ELEMENTSOF(accepted); i++) {
                plim_request r;
                plim_reason why;
                plim_error f = { 0 };
                TEST_RESULT(parse_code(accepted[i], &why, &r) == -1, "%s accepted", accepted[i]);
                brk_step_result step = { .out = (char *) "", .err = (char *) "" };
                brk_result res = { .outcome = BRK_OUTCOME_COMPLETED, .detail = (char *) "", .steps = &step, .n_steps = 1 };
                char *answer = NULL;
                size_t len;
                TEST_RESULT(plim_run_answer(&r, &res, &ev, 1, 2, &answer, &len, &f) == 0, "%s answered (%s)", accepted[i],
                            f.message);
                free(answer);
                plim_request_done(&r);
        }
}

static void test_parse_rest(void) {
        plim_request r;
        plim_reason why;
        plim_error f;

        /* a project with everything, and its plan */
        const char *p = "{\"protocol\":3,\"traceId\":\"t:1\",\"timeoutMs\":999999,\"project\":{"
                        "\"files\":[{\"path\":\"a/b.txt\",\"content\":\"x\\u0000y\"},{\"path\":\"c\"}],"
                        "\"steps\":[\"cat a/b.txt\",\"true\"],\"artifacts\":[\"a/b.txt\"]}}";
        CHECK(parse_code(p, &why, &r) == -1);
        CHECK_EQ_INT(r.kind, PLIM_KIND_PROJECT);
        CHECK_EQ_STR(r.trace_id, "t:1");
        CHECK_EQ_INT(r.timeout_ms, 999999);
        CHECK_EQ_INT(r.effective_timeout_ms, PLIM_TIMEOUT_MS_MAX);
        CHECK_EQ_INT(r.n_files, 2);
        CHECK_EQ_INT(r.files[0].content_len, 3);
        CHECK_EQ_INT(r.files[1].content_len, 0);
        brk_request plan;
        CHECK(plim_plan(&r, &ev, &plan) == 0);
        CHECK_EQ_INT(plan.n_steps, 2);
        CHECK_EQ_STR(plan.steps[0].argv[0], "/bin/sh");
        CHECK_EQ_STR(plan.steps[0].argv[2], "cat a/b.txt");
        CHECK(plan.steps[0].argv[3] == NULL);
        CHECK(plan.flags & BRK_STOP_ON_FAILURE);
        CHECK_EQ_INT(plan.timeout_ms, PLIM_TIMEOUT_MS_MAX);
        CHECK_EQ_INT(plan.output_bytes, PLIM_STEP_OUTPUT_BYTES);
        char *enc;
        size_t len;
        CHECK(brk_request_encode(&plan, &enc, &len) == 0); /* the plan is a valid broker message */
        free(enc);
        plim_plan_done(&plan);
        plim_request_done(&r);

        /* a dropped trace ID and the default timeout */
        CHECK(parse_code("{\"protocol\":3,\"traceId\":\"a/b\",\"timeoutMs\":0,\"javascript\":{\"code\":\"1\"}}", &why, &r) == -1);
        CHECK(r.trace_id == NULL && r.trace_id_dropped);
        CHECK_EQ_INT(r.effective_timeout_ms, PLIM_DEFAULT_TIMEOUT_MS);
        CHECK(plim_plan(&r, &ev, &plan) == 0);
        CHECK_EQ_STR(plan.steps[0].argv[0], "/usr/bin/node");
        CHECK_EQ_STR(plan.files[0].path, "main.mjs");
        plim_plan_done(&plan);
        plim_request_done(&r);

        /* the session procedures: the gate, then unsupported */
        CHECK(plim_session_refuse("{\"protocol\":3}", 14, PLIM_PROC_OPEN_SESSION, &f) < 0);
        CHECK(f.code == PLIM_CODE_UNIMPLEMENTED && f.reason == PLIM_REASON_UNSUPPORTED);
        CHECK(plim_session_refuse("{}", 2, PLIM_PROC_CLOSE_SESSION, &f) < 0);
        CHECK(f.code == PLIM_CODE_INVALID_ARGUMENT && f.reason == PLIM_REASON_PROTOCOL);
        CHECK(plim_describe_parse("", 0, &f) == 0);
        CHECK(plim_describe_parse("{}", 2, &f) == 0);
        CHECK(plim_describe_parse("[]", 2, &f) < 0);
}

/* A body of many small values is refused before it is parsed (review 1.3: 8 MiB of {},{},...
 * cost 320 MB and 2 s in the parser); a Describe body over a tiny size is not read at all. */
static void test_body_bounds(void) {
        plim_request r;
        plim_error f;
        size_t n = 1 << 20, len = 0;
        char *b = malloc(n);
        CHECK(b != NULL);
        if (!b)
                return;
        len += (size_t) snprintf(b, n, "{\"protocol\":3,\"x\":[");
        while (len + 8 < n)
                len += (size_t) snprintf(b + len, n - len, "{},");
        len += (size_t) snprintf(b + len, n - len, "{}]}");
        CHECK(plim_run_parse(b, len, &r, &f) < 0);
        CHECK(f.code == PLIM_CODE_INVALID_ARGUMENT && f.reason == PLIM_REASON_REQUEST && f.before_handler);
        CHECK(strstr(f.message, "JSON values") != NULL);
        CHECK(plim_describe_parse(b, len, &f) < 0 && f.before_handler && strstr(f.message, "over 1024 bytes") != NULL);
        memset(b, ' ', PLIM_DESCRIBE_BODY_MAX + 1);
        memcpy(b, "{}", 2);
        CHECK(plim_describe_parse(b, PLIM_DESCRIBE_BODY_MAX, &f) == 0);
        CHECK(plim_describe_parse(b, PLIM_DESCRIBE_BODY_MAX + 1, &f) < 0);
        free(b);
}

static void test_admit(void) {
        plim_request r;
        plim_reason why;
        plim_error f;
        plim_evidence no_node = ev;
        no_node.javascript = false;
        static const struct {
                const char *text;
                int code;
                plim_reason reason;
        } cases[] = {
                { "{\"protocol\":3,\"minimumIsolation\":\"vm\",\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ISOLATION },
                { "{\"protocol\":3,\"minimumIsolation\":\"kernel\",\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ISOLATION },
                { "{\"protocol\":3,\"minimumIsolation\":\"container\",\"javascript\":{\"code\":\"1\"}}", -1, PLIM_REASON_NONE },
                { "{\"protocol\":3,\"minimumIsolation\":\"process\",\"javascript\":{\"code\":\"1\"}}", -1, PLIM_REASON_NONE },
                { "{\"protocol\":3,\"softwareRule\":{\"mode\":\"exact\",\"identities\":[\"x\"]},\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ENVIRONMENT },
                { "{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"grantProfile\":\"g\"}}", PLIM_CODE_PERMISSION_DENIED, PLIM_REASON_PERMISSION },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                CHECK(parse_code(cases[i].text, &why, &r) == -1);
                int q = plim_run_admit(&r, &ev, &f);
                TEST_RESULT(cases[i].code < 0 ? q == 0 : q < 0 && (int) f.code == cases[i].code && f.reason == cases[i].reason,
                            "admission of %s", cases[i].text);
                plim_request_done(&r);
        }
        CHECK(parse_code("{\"protocol\":3,\"javascript\":{\"code\":\"1\"}}", &why, &r) == -1);
        CHECK(plim_run_admit(&r, &no_node, &f) < 0 && f.code == PLIM_CODE_UNIMPLEMENTED && f.reason == PLIM_REASON_UNSUPPORTED);
        plim_request_done(&r);
}

/* The reference's example exchange: {"protocol":3,"javascript":{"code":"console.log(6*7)"}}
 * answered by provider csandbox at tier process, started 1700000000000, ended ...005. */
static void test_answer(void) {
        const char *text = "{\"protocol\":3,\"javascript\":{\"code\":\"console.log(6*7)\"}}";
        plim_evidence csandbox = ev;
        csandbox.sandbox = "csandbox";
        csandbox.isolation = "process";
        plim_request r;
        plim_reason why;
        plim_error f;
        char *s;
        size_t n;
        CHECK(parse_code(text, &why, &r) == -1);
        brk_step_result step = { .status = 0, .flags = BRK_STEP_EXITED, .out = (char *) "42\n", .out_len = 3, .err = (char *) "" };
        brk_result res = { .outcome = BRK_OUTCOME_COMPLETED, .detail = (char *) "", .started_unix_ms = 1700000000000ULL,
                           .ended_unix_ms = 1700000000005ULL, .steps = &step, .n_steps = 1 };
        CHECK(plim_run_answer(&r, &res, &csandbox, 1700000000000ULL, 1700000000005ULL, &s, &n, &f) == 0);
        json_t *j = json_loads(s, 0, NULL);
        json_t *rec = json_object_get(j, "record");
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(j, "javascript"), "stdout")), "NDIK");
        CHECK_EQ_STR(json_string_value(json_object_get(j, "durationMs")), "5");
        CHECK_EQ_INT(json_integer_value(json_object_get(rec, "version")), 2);
        CHECK_EQ_STR(json_string_value(json_object_get(rec, "requestSha256")),
                     "17d474652a5625b252078626a20a8d2d60e0507e98ea44a69c08febde9d7473f");
        CHECK_EQ_STR(json_string_value(json_object_get(rec, "resultSha256")),
                     "9a471e25396d4e0a2ef3124f138007aadce1a73d746dd4b99c38c50c0df2a7a5");
        CHECK_EQ_STR(json_string_value(json_object_get(rec, "recordSha256")),
                     "4c5c42dc09a31872e17e0b3f418f72d08b2d53a576ada8a7b1c6548ab977801f");
        CHECK_EQ_STR(json_string_value(json_object_get(rec, "startedUnixMs")), "1700000000000");
        json_decref(j);
        free(s);

        /* not answers: each an error, marked only when nothing ran */
        res.outcome = BRK_OUTCOME_NOT_STARTED;
        CHECK(plim_run_answer(&r, &res, &ev, 0, 0, &s, &n, &f) < 0);
        CHECK(f.code == PLIM_CODE_RESOURCE_EXHAUSTED && f.reason == PLIM_REASON_CAPACITY);
        res.outcome = BRK_OUTCOME_CANCELLED;
        CHECK(plim_run_answer(&r, &res, &ev, 0, 0, &s, &n, &f) < 0);
        CHECK(f.code == PLIM_CODE_UNAVAILABLE && f.reason == PLIM_REASON_NONE);
        res.outcome = BRK_OUTCOME_ERROR;
        CHECK(plim_run_answer(&r, &res, &ev, 0, 0, &s, &n, &f) < 0);
        CHECK(f.code == PLIM_CODE_INTERNAL && f.reason == PLIM_REASON_NONE);
        plim_request_done(&r);

        /* a project that failed setup */
        CHECK(parse_code("{\"protocol\":3,\"project\":{\"steps\":[\"true\"]}}", &why, &r) == -1);
        res = (brk_result){ .outcome = BRK_OUTCOME_SETUP_FAILED, .detail = (char *) "cannot write a/b: Not a directory" };
        CHECK(plim_run_answer(&r, &res, &ev, 1, 2, &s, &n, &f) == 0);
        j = json_loads(s, 0, NULL);
        json_t *p = json_object_get(j, "project");
        CHECK_EQ_STR(json_string_value(json_object_get(p, "outcome")), "PROJECT_OUTCOME_SETUP_FAILED");
        CHECK_EQ_STR(json_string_value(json_object_get(p, "outcomeDetail")), "cannot write a/b: Not a directory");
        CHECK(json_array_size(json_object_get(p, "steps")) == 0);
        json_decref(j);
        free(s);
        plim_request_done(&r);
}

static void test_describe(void) {
        char *s;
        size_t n;
        plim_evidence no_node = ev;
        no_node.javascript = false;
        CHECK(plim_describe_json(&ev, &s, &n) == 0);
        json_t *j = json_loads(s, 0, NULL);
        CHECK_EQ_INT(json_integer_value(json_object_get(j, "protocol")), 3);
        CHECK(json_is_false(json_object_get(j, "supportsSessions")));
        CHECK(json_is_true(json_object_get(j, "supportsProject")));
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "javascriptEnvironment"), "maxTimeoutMs")), 300000);
        CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(j, "projectEnvironment"), "languages")), 2);
        json_decref(j);
        free(s);
        CHECK(plim_describe_json(&no_node, &s, &n) == 0);
        j = json_loads(s, 0, NULL);
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "javascriptEnvironment"), "maxTimeoutMs")), 0);
        json_decref(j);
        free(s);
}

int main(void) {
        test_request_id();
        test_errors();
        test_routing();
        test_parse();
        test_parse_matches_record();
        test_parse_rest();
        test_admit();
        test_answer();
        test_describe();
        test_body_bounds();
        return test_done();
}
