/* test-plimsoll.c: the protocol's pure parts: the request-ID rule, Connect errors and their
 * NotDispatched details, routing, the protocol gate, request bounds, admission, the broker plan,
 * and the Run answer with its record against the reference's example exchange. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "broker-msg.h"
#include "macro.h"
#include "plimsoll.h"
#include "test.h"

static const plim_evidence ev = {
        .sandbox = "hull",
        .isolation = "container",
        .javascript = true,
        .python = true,
        .memory_bytes = 512ULL << 20,
        .pids = 256,
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
        static const char *const want[] = {"CAE", "CAI", "CAM", "CAQ", "CAU", "CAY", "CAc"};
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
        plim_error f = {0};
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

#define REFUSED(text, code, reason)                                                                                    \
        do {                                                                                                           \
                plim_reason _r;                                                                                        \
                int _c = parse_code(text, &_r, NULL);                                                                  \
                TEST_RESULT(_c == (int) (code) && _r == (reason), "%s refused as %s/%s (got %d/%d)", text,             \
                            plim_code_to_string(code), plim_reason_to_string(reason), _c, (int) _r);                   \
        } while (0)
#define ACCEPTED(text)                                                                                                 \
        do {                                                                                                           \
                plim_reason _r;                                                                                        \
                TEST_RESULT(parse_code(text, &_r, NULL) == -1, "%s accepted", text);                                   \
        } while (0)

static void test_parse(void) {
        plim_request r;
        plim_error f;

        /* the gate, before the payload */
        REFUSED("{\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_PROTOCOL);
        REFUSED("{\"protocol\":0,\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_PROTOCOL);
        REFUSED("{\"protocol\":2,\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_PROTOCOL);
        REFUSED("{\"protocol\":4,\"javascript\":7}", PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_PROTOCOL);
        REFUSED("{\"protocol\":\"x\",\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT,
                PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":-3}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        CHECK(plim_run_parse("{\"protocol\":7}", 14, &r, &f) < 0);
        CHECK_EQ_STR(f.message, "this daemon serves protocol 3 and the request states 7; nothing ran");
        ACCEPTED("{\"protocol\":\"3\",\"javascript\":{\"code\":\"1\"}}");
        ACCEPTED("{\"protocol\":3,\"timeout_ms\":\"-5\",\"minimum_isolation\":\"process\",\"javascript\":{\"code\":"
                 "\"1\"}}");
        REFUSED("{\"protocol\":3,\"timeoutMs\":1,\"timeout_ms\":1,\"javascript\":{\"code\":\"1\"}}",
                PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);

        /* the body itself */
        REFUSED("", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("[3]", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"protocol\":3}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"x\":[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]}", PLIM_CODE_INVALID_ARGUMENT,
                PLIM_REASON_REQUEST);
        CHECK(plim_run_parse("{", 1, &r, &f) < 0 && f.before_handler);
        CHECK(plim_run_parse("{\"protocol\":2}", 14, &r, &f) < 0 && !f.before_handler);

        /* payloads */
        REFUSED("{\"protocol\":3}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"javascript\":null}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"cell\":{\"language\":\"python\",\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT,
                PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"module\":{}}", PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED);
        REFUSED("{\"protocol\":3,\"javascript\":{\"code\":\"1\"},\"project\":{\"steps\":[\"true\"]}}",
                PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"javascript\":{\"code\":\"\"}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"javascript\":{\"code\":\"a\\u0000b\"}}", PLIM_CODE_INVALID_ARGUMENT,
                PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"javascript\":{\"code\":7}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"minimumIsolation\":\"none\",\"javascript\":{\"code\":\"1\"}}",
                PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"minimumIsolation\":\"gvisor\",\"javascript\":{\"code\":\"1\"}}",
                PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"timeoutMs\":2147483648,\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT,
                PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"project\":{\"steps\":[]}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"project\":{\"steps\":[\"a\\u0000\"]}}", PLIM_CODE_INVALID_ARGUMENT,
                PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"files\":[{\"path\":\"../x\"}]}}",
                PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"files\":[{\"path\":\"a\"},{\"path\":\"a\"}]}}",
                PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"artifacts\":[\"a\",\"a\"]}}",
                PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"artifacts\":[\"/a\"]}}",
                PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"softwareRule\":{\"mode\":\"exact\",\"identities\":[\"a\",\"b\"]},\"javascript\":{"
                "\"code\":\"1\"}}",
                PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"softwareRule\":{\"mode\":\"approved\",\"identities\":[\"a\",\"a\"]},\"javascript\":{"
                "\"code\":\"1\"}}",
                PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        REFUSED("{\"protocol\":3,\"softwareRule\":{\"mode\":\"approved\",\"identities\":[\"a "
                "b\"]},\"javascript\":{\"code\":\"1\"}}",
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
                "{\"protocol\":3,\"softwareRule\":{\"mode\":\"exact\",\"identities\":[\"a\\u0000\"]},\"javascript\":{"
                "\"code\":\"1\"}}",
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++)
                REFUSED(refused[i], PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);

        /* and every accepted request gets an answer with its record */
        static const char *const accepted[] = {
                "{\"protocol\":\"3\",\"timeout_ms\":\"-5\",\"trace_id\":\"t\",\"javascript\":{\"code\":\"1\",\"grant_"
                "profile\":\"\"}}",
                "{\"protocol\":3,\"software_rule\":{\"mode\":\"\",\"identities\":[]},\"javascript\":{\"code\":\"1\"}}",
                "{\"protocol\":3,\"module\":null,\"project\":{\"steps\":[\"true\"],\"files\":[{\"path\":\"a\","
                "\"content\":\"\"}]}}",
        };
        for (size_t i = 0; i < ELEMENTSOF(accepted); i++) {
                plim_request r;
                plim_reason why;
                plim_error f = {0};
                TEST_RESULT(parse_code(accepted[i], &why, &r) == -1, "%s accepted", accepted[i]);
                sbx_step_result step = {.out = (char *) "", .err = (char *) ""};
                sbx_plan_result res = {
                        .outcome = SBX_PLAN_COMPLETED, .detail = (char *) "", .steps = &step, .n_steps = 1};
                char *answer = NULL;
                size_t len;
                TEST_RESULT(plim_run_answer(&r, &res, &ev, 1, 2, &answer, &len, &f) == 0, "%s answered (%s)",
                            accepted[i], f.message);
                free(answer);
                plim_request_done(&r);
        }
}

static int describe(const char *body, plim_error *f) {
        return plim_describe_parse(body, strlen(body), f);
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
        sbx_plan plan;
        CHECK(plim_plan(&r, &ev, &plan) == 0);
        CHECK_EQ_INT(plan.n_steps, 2);
        CHECK_EQ_STR(plan.steps[0].argv[0], "/bin/sh");
        CHECK_EQ_STR(plan.steps[0].argv[2], "cat a/b.txt");
        CHECK(plan.steps[0].argv[3] == NULL);
        CHECK(plan.flags & SBX_PLAN_STOP_ON_FAILURE);
        CHECK_EQ_INT(plan.timeout_ms, PLIM_TIMEOUT_MS_MAX);
        CHECK_EQ_INT(plan.output_bytes, PLIM_STEP_OUTPUT_BYTES);
        char *enc;
        size_t len;
        CHECK(brk_plan_encode(&plan, &enc, &len) == 0); /* the plan is a valid broker message */
        free(enc);
        plim_plan_done(&plan);
        plim_request_done(&r);

        /* a dropped trace ID and the default timeout */
        CHECK(parse_code("{\"protocol\":3,\"traceId\":\"a/b\",\"timeoutMs\":0,\"javascript\":{\"code\":\"1\"}}", &why,
                         &r) == -1);
        CHECK(r.trace_id == NULL && r.trace_id_dropped);
        CHECK_EQ_INT(r.effective_timeout_ms, PLIM_DEFAULT_TIMEOUT_MS);
        CHECK(plim_plan(&r, &ev, &plan) == 0);
        CHECK_EQ_STR(plan.steps[0].argv[0], "/usr/bin/node");
        CHECK_EQ_STR(plan.steps[0].argv[1], "--input-type=module");
        CHECK_EQ_STR(plan.steps[0].argv[3], "1");
        CHECK_EQ_INT(plan.n_files, 0);
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
        /* a DescribeRequest is {}: a protocol it states passes the gate, any other field is unknown */
        CHECK(describe("{\"protocol\":3}", &f) == 0);
        CHECK(describe("{\"protocol\":\"3\"}", &f) == 0);
        CHECK(describe("{\"protocol\":4}", &f) < 0);
        CHECK(f.code == PLIM_CODE_UNIMPLEMENTED && f.reason == PLIM_REASON_PROTOCOL);
        CHECK(describe("{\"protocol\":0}", &f) < 0);
        CHECK(f.code == PLIM_CODE_INVALID_ARGUMENT && f.reason == PLIM_REASON_PROTOCOL);
        CHECK(describe("{\"protocol\":true}", &f) < 0);
        CHECK(f.code == PLIM_CODE_INVALID_ARGUMENT && f.reason == PLIM_REASON_REQUEST);
        CHECK(describe("{\"x\":1}", &f) < 0);
        CHECK(f.code == PLIM_CODE_INVALID_ARGUMENT && f.reason == PLIM_REASON_REQUEST &&
              strstr(f.message, "unknown field \"x\"") != NULL);
        CHECK(describe("{\"protocol\":9,\"x\":1}", &f) < 0); /* the gate comes first */
        CHECK(f.code == PLIM_CODE_UNIMPLEMENTED && f.reason == PLIM_REASON_PROTOCOL);
        CHECK(describe("{\"protocol\":3,\"protocol\":3}", &f) < 0);
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
                {"{\"protocol\":3,\"minimumIsolation\":\"vm\",\"javascript\":{\"code\":\"1\"}}",
                 PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ISOLATION},
                {"{\"protocol\":3,\"minimumIsolation\":\"kernel\",\"javascript\":{\"code\":\"1\"}}",
                 PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ISOLATION},
                {"{\"protocol\":3,\"minimumIsolation\":\"container\",\"javascript\":{\"code\":\"1\"}}", -1,
                 PLIM_REASON_NONE},
                {"{\"protocol\":3,\"minimumIsolation\":\"process\",\"javascript\":{\"code\":\"1\"}}", -1,
                 PLIM_REASON_NONE},
                {"{\"protocol\":3,\"softwareRule\":{\"mode\":\"exact\",\"identities\":[\"x\"]},\"javascript\":{"
                 "\"code\":\"1\"}}",
                 PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ENVIRONMENT},
                {"{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"grantProfile\":\"g\"}}",
                 PLIM_CODE_PERMISSION_DENIED, PLIM_REASON_PERMISSION},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                CHECK(parse_code(cases[i].text, &why, &r) == -1);
                int q = plim_run_admit(&r, &ev, &f);
                TEST_RESULT(cases[i].code < 0 ? q == 0
                                              : q < 0 && (int) f.code == cases[i].code && f.reason == cases[i].reason,
                            "admission of %s", cases[i].text);
                plim_request_done(&r);
        }
        CHECK(parse_code("{\"protocol\":3,\"javascript\":{\"code\":\"1\"}}", &why, &r) == -1);
        CHECK(plim_run_admit(&r, &no_node, &f) < 0 && f.code == PLIM_CODE_UNIMPLEMENTED &&
              f.reason == PLIM_REASON_UNSUPPORTED);
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
        sbx_step_result step = {
                .status = 0, .flags = SBX_STEP_EXITED, .out = (char *) "42\n", .out_len = 3, .err = (char *) ""};
        sbx_plan_result res = {.outcome = SBX_PLAN_COMPLETED,
                               .detail = (char *) "",
                               .started_unix_ms = 1700000000000ULL,
                               .ended_unix_ms = 1700000000005ULL,
                               .steps = &step,
                               .n_steps = 1};
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
        res.outcome = SBX_PLAN_NOT_STARTED;
        CHECK(plim_run_answer(&r, &res, &ev, 0, 0, &s, &n, &f) < 0);
        CHECK(f.code == PLIM_CODE_RESOURCE_EXHAUSTED && f.reason == PLIM_REASON_CAPACITY);
        res.outcome = SBX_PLAN_CANCELLED;
        CHECK(plim_run_answer(&r, &res, &ev, 0, 0, &s, &n, &f) < 0);
        CHECK(f.code == PLIM_CODE_UNAVAILABLE && f.reason == PLIM_REASON_NONE);
        res.outcome = SBX_PLAN_ERROR;
        CHECK(plim_run_answer(&r, &res, &ev, 0, 0, &s, &n, &f) < 0);
        CHECK(f.code == PLIM_CODE_INTERNAL && f.reason == PLIM_REASON_NONE);
        plim_request_done(&r);

        /* a project that failed setup */
        CHECK(parse_code("{\"protocol\":3,\"project\":{\"steps\":[\"true\"]}}", &why, &r) == -1);
        res = (sbx_plan_result){.outcome = SBX_PLAN_SETUP_FAILED,
                                .detail = (char *) "cannot write a/b: Not a directory"};
        CHECK(plim_run_answer(&r, &res, &ev, 1, 2, &s, &n, &f) == 0);
        j = json_loads(s, 0, NULL);
        json_t *p = json_object_get(j, "project");
        CHECK_EQ_STR(json_string_value(json_object_get(p, "outcome")), "PROJECT_OUTCOME_SETUP_FAILED");
        CHECK_EQ_STR(json_string_value(json_object_get(p, "outcomeDetail")), "cannot write a/b: Not a directory");
        CHECK(json_array_size(json_object_get(p, "steps")) == 0);
        CHECK(json_object_get(j, "hullNetworkLog") == NULL); /* no limited network: no field */
        json_decref(j);

        /* a limited run's connection log: hull's extension beside the record, outside its digests,
         * one string per line, any byte that is not printable ASCII shown as '?' */
        static const char netlog[] = "t net allowed CONNECT a.example:443 addr=1.2.3.4 up=1 down=2\n"
                                     "t net refused HTTP b\xff\x01:80 addr=- up=0 down=0\n";
        res.net_log = (char *) netlog;
        res.net_log_len = sizeof(netlog) - 1;
        char *s2 = NULL;
        size_t n2 = 0;
        CHECK(plim_run_answer(&r, &res, &ev, 1, 2, &s2, &n2, &f) == 0);
        j = json_loads(s2 ? s2 : "", 0, NULL);
        json_t *nl = json_object_get(j, "hullNetworkLog");
        CHECK(json_array_size(nl) == 2);
        CHECK_EQ_STR(json_string_value(json_array_get(nl, 0)),
                     "t net allowed CONNECT a.example:443 addr=1.2.3.4 up=1 down=2");
        CHECK_EQ_STR(json_string_value(json_array_get(nl, 1)), "t net refused HTTP b??:80 addr=- up=0 down=0");
        /* the record is the same with or without it */
        json_t *j1 = json_loads(s, 0, NULL);
        CHECK(json_equal(json_object_get(j1, "record"), json_object_get(j, "record")));
        json_decref(j1);
        json_decref(j);
        free(s2);
        res.net_log = NULL;
        res.net_log_len = 0;
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
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "javascriptEnvironment"), "maxTimeoutMs")),
                     300000);
        CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(j, "projectEnvironment"), "languages")), 2);
        json_decref(j);
        free(s);
        CHECK(plim_describe_json(&no_node, &s, &n) == 0);
        j = json_loads(s, 0, NULL);
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "javascriptEnvironment"), "maxTimeoutMs")),
                     0);
        json_decref(j);
        free(s);
}

/* ---- sessions ---- */

#define SID "00112233445566778899aabbccddeeff"
/* The reference's fingerprint vector of SID. */
#define FP "5947d7c33d783f94b3b4c1a96ebc8991ed28f1b069b71e03376cba8caa98a720"

static const plim_evidence sev = {
        .sandbox = "hull",
        .isolation = "container",
        .javascript = true,
        .python = true,
        .memory_bytes = 512ULL << 20,
        .pids = 256,
        .sessions = true,
        .session_python = true,
        .session_javascript = false,
        .session_lifetime_ms = 1800000,
        .session_idle_timeout_ms = 300000,
        .max_sessions_per_caller = 4,
};

static int srun_code(const char *text, plim_reason *ret_reason, plim_error *ret_f) {
        plim_request r;
        plim_error f = {0};
        if (plim_session_run_parse(text, strlen(text), &r, &f) == 0) {
                plim_request_done(&r);
                *ret_reason = (plim_reason) -1;
                return -1;
        }
        if (ret_f)
                *ret_f = f;
        *ret_reason = f.reason;
        return (int) f.code;
}

#define SREFUSED(text, code, reason)                                                                                   \
        do {                                                                                                           \
                plim_reason _r;                                                                                        \
                int _c = srun_code(text, &_r, NULL);                                                                   \
                TEST_RESULT(_c == (int) (code) && _r == (reason), "SessionRun %s refused as %s/%s (got %d/%d)", text,  \
                            plim_code_to_string(code), plim_reason_to_string(reason), _c, (int) _r);                   \
        } while (0)

static void test_session_run_parse(void) {
        plim_request r;
        plim_error f;
        plim_reason why;

        /* digests recomputed by tests/integration/plimsoll_record.py (an independent
         * implementation); the first and last are also the reference's own vectors: sessionId and
         * traceId are never hashed, so a cell is the reference's cell and javascript its Run */
        static const struct {
                const char *text, *digest, *rule;
        } vectors[] = {
                {"{\"protocol\":3,\"sessionId\":\"" SID "\",\"cell\":{\"language\":\"python\",\"code\":\"x = 1\"}}",
                 "616ff7401f3c4d1933fe717c7f4dbcd46e4138c8428b56a91509264111f1678a", ""},
                {"{\"protocol\":3,\"sessionId\":\"" SID "\",\"traceId\":\"t-1\",\"minimumIsolation\":\"container\","
                 "\"timeoutMs\":5000,\"softwareRule\":{\"mode\":\"approved\",\"identities\":[\"b@1\",\"a@2\"]},"
                 "\"cell\":{\"language\":\"javascript\",\"code\":\"fs.readFileSync('in.txt')\",\"files\":[{\"path\":"
                 "\"in.txt\",\"content\":\"a\\u0000b\\n\"},{\"path\":\"d/e.py\",\"content\":\"\"}]}}",
                 "b7ecdf24cb788631d07b04f7e766b99c061263b4c3ae37d8a8f369304414d6e5",
                 "approved:sha256:12656320cd883f4d5be5d17df39613d23da03b39e68908ba486a8d7d7e8b4f6b"},
                {"{\"protocol\":3,\"sessionId\":\"" SID "\",\"javascript\":{\"code\":\"console.log(6*7)\"}}",
                 "17d474652a5625b252078626a20a8d2d60e0507e98ea44a69c08febde9d7473f", ""},
                {"{\"protocol\":3,\"session_id\":\"ffffffffffffffffffffffffffffffff\",\"trace_id\":\"other\","
                 "\"javascript\":{\"code\":\"console.log(6*7)\"}}",
                 "17d474652a5625b252078626a20a8d2d60e0507e98ea44a69c08febde9d7473f", ""},
        };
        for (size_t i = 0; i < ELEMENTSOF(vectors); i++) {
                TEST_RESULT(plim_session_run_parse(vectors[i].text, strlen(vectors[i].text), &r, &f) == 0,
                            "%s parsed (%s)", vectors[i].text, f.message);
                CHECK_EQ_STR(r.request_sha256, vectors[i].digest);
                CHECK_EQ_STR(r.software_rule_id, vectors[i].rule);
                CHECK(r.session_id != NULL);
                plim_request_done(&r);
        }
        const char *t = vectors[1].text;
        CHECK(plim_session_run_parse(t, strlen(t), &r, &f) == 0);
        CHECK_EQ_INT(r.kind, PLIM_KIND_CELL);
        CHECK_EQ_STR(r.cell_language, "javascript");
        CHECK_EQ_STR(r.session_id, SID);
        CHECK_EQ_STR(r.trace_id, "t-1");
        CHECK_EQ_INT(r.n_files, 2);
        CHECK_EQ_INT(r.files[0].content_len, 4);
        CHECK_EQ_INT(r.effective_timeout_ms, 5000);
        CHECK(r.has_software_rule);
        /* a javascript cell on a daemon whose sessions run only python cells */
        CHECK(plim_run_admit(&r, &sev, &f) < 0 && f.reason == PLIM_REASON_ENVIRONMENT); /* the rule first */
        plim_request_done(&r);
        t = "{\"protocol\":3,\"sessionId\":\"" SID "\",\"cell\":{\"language\":\"javascript\",\"code\":\"1\"}}";
        CHECK(plim_session_run_parse(t, strlen(t), &r, &f) == 0);
        CHECK(plim_run_admit(&r, &sev, &f) < 0 && f.code == PLIM_CODE_UNIMPLEMENTED &&
              f.reason == PLIM_REASON_UNSUPPORTED);
        plim_request_done(&r);
        t = "{\"protocol\":3,\"sessionId\":\"" SID "\",\"cell\":{\"language\":\"python\",\"code\":\"1\"}}";
        CHECK(plim_session_run_parse(t, strlen(t), &r, &f) == 0);
        CHECK(plim_run_admit(&r, &sev, &f) == 0);
        plim_request_done(&r);

        /* the gate first, before the session or the payload */
        SREFUSED("{\"sessionId\":\"zz\",\"cell\":7}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_PROTOCOL);
        SREFUSED("{\"protocol\":2,\"sessionId\":\"zz\"}", PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_PROTOCOL);
        /* the session ID */
        SREFUSED("{\"protocol\":3,\"cell\":{\"language\":\"python\",\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT,
                 PLIM_REASON_REQUEST);
        SREFUSED("{\"protocol\":3,\"sessionId\":\"\",\"cell\":{\"language\":\"python\",\"code\":\"1\"}}",
                 PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        SREFUSED("{\"protocol\":3,\"sessionId\":7,\"cell\":{\"language\":\"python\",\"code\":\"1\"}}",
                 PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        SREFUSED("{\"protocol\":3,\"sessionId\":\"" SID "\",\"session_id\":\"" SID
                 "\",\"cell\":{\"language\":\"python\",\"code\":\"1\"}}",
                 PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        static const char *const bad_ids[] = {
                "0011223344556677889AABBCCDDEEFF0",
                "g0",
                "00112233-4455",
                "a\\u0000b",
                "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_ids); i++) {
                char text[512];
                snprintf(text, sizeof(text),
                         "{\"protocol\":3,\"sessionId\":\"%s\",\"cell\":{\"language\":\"python\",\"code\":\"1\"}}",
                         bad_ids[i]);
                CHECK_EQ_INT(srun_code(text, &why, &f), PLIM_CODE_NOT_FOUND);
                CHECK(why == PLIM_REASON_REQUEST && f.session_end == PLIM_SESSION_END_NOT_FOUND);
                CHECK(strstr(f.message, bad_ids[i]) == NULL); /* the ID is never repeated */
        }
        /* one 64 digits long is fine */
        t = "{\"protocol\":3,\"sessionId\":\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\","
            "\"javascript\":{\"code\":\"1\"}}";
        CHECK(srun_code(t, &why, NULL) == -1);
        /* payloads */
        SREFUSED("{\"protocol\":3,\"sessionId\":\"" SID "\"}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        SREFUSED("{\"protocol\":3,\"sessionId\":\"" SID "\",\"module\":{}}", PLIM_CODE_UNIMPLEMENTED,
                 PLIM_REASON_UNSUPPORTED);
        SREFUSED("{\"protocol\":3,\"sessionId\":\"" SID "\",\"cell\":{\"language\":\"ruby\",\"code\":\"1\"}}",
                 PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        SREFUSED("{\"protocol\":3,\"sessionId\":\"" SID "\",\"cell\":{\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT,
                 PLIM_REASON_REQUEST);
        SREFUSED("{\"protocol\":3,\"sessionId\":\"" SID "\",\"cell\":{\"language\":\"python\",\"code\":\"\"}}",
                 PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        SREFUSED("{\"protocol\":3,\"sessionId\":\"" SID "\",\"cell\":{\"language\":\"python\",\"code\":\"a\\u0000\"}}",
                 PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        SREFUSED("{\"protocol\":3,\"sessionId\":\"" SID "\",\"cell\":{\"language\":\"python\",\"code\":\"1\",\"x\":1}}",
                 PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        SREFUSED("{\"protocol\":3,\"sessionId\":\"" SID "\",\"cell\":{\"language\":\"python\",\"code\":\"1\","
                 "\"files\":[{\"path\":\"../a\"}]}}",
                 PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        SREFUSED("{\"protocol\":3,\"sessionId\":\"" SID "\",\"cell\":{\"language\":\"python\",\"code\":\"1\","
                 "\"files\":[{\"path\":\"a\"},{\"path\":\"a\"}]}}",
                 PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        SREFUSED("{\"protocol\":3,\"sessionId\":\"" SID "\",\"cell\":{\"language\":\"python\",\"code\":\"1\"},"
                 "\"javascript\":{\"code\":\"1\"}}",
                 PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        SREFUSED("{\"protocol\":3,\"sessionId\":\"" SID "\",\"javascript\":{\"code\":\"1\"},\"extra\":1}",
                 PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);
        SREFUSED("{\"protocol\":3,\"sessionId\":\"" SID
                 "\",\"minimumIsolation\":\"none\",\"javascript\":{\"code\":\"1\"}}",
                 PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST);

        /* Run still refuses a sessionId and a cell */
        CHECK(plim_run_parse(vectors[2].text, strlen(vectors[2].text), &r, &f) < 0 &&
              f.code == PLIM_CODE_INVALID_ARGUMENT);
        CHECK(plim_run_parse(vectors[0].text, strlen(vectors[0].text), &r, &f) < 0 &&
              f.code == PLIM_CODE_INVALID_ARGUMENT);
}

static int open_code(const char *text, plim_reason *ret_reason, plim_open_request *keep) {
        plim_open_request o;
        plim_error f = {0};
        if (plim_open_parse(text, strlen(text), &o, &f) == 0) {
                if (keep)
                        *keep = o;
                else
                        plim_open_request_done(&o);
                *ret_reason = (plim_reason) -1;
                return -1;
        }
        *ret_reason = f.reason;
        return (int) f.code;
}

static void test_open_close_parse(void) {
        plim_open_request o;
        plim_reason why;
        plim_error f;
        char id[PLIM_SESSION_ID_MAX + 1];

        const char *t =
                "{\"protocol\":3,\"minimumIsolation\":\"process\",\"traceId\":\"x/y\",\"lifetimeMs\":60000,"
                "\"idle_timeout_ms\":\"1000\",\"languages\":[\"python\",\"javascript\"],\"owner\":\"a.b:c-d_0\","
                "\"softwareRule\":{\"mode\":\"exact\",\"identities\":[\"id@1\"]}}";
        CHECK(open_code(t, &why, &o) == -1);
        CHECK_EQ_STR(o.minimum_isolation, "process");
        CHECK(o.trace_id == NULL && o.trace_id_dropped);
        CHECK_EQ_INT(o.lifetime_ms, 60000);
        CHECK_EQ_INT(o.idle_timeout_ms, 1000);
        CHECK(o.python && o.javascript);
        CHECK_EQ_STR(o.owner, "a.b:c-d_0");
        CHECK_EQ_STR(o.software_rule_id, "exact:id@1");
        CHECK(plim_open_admit(&o, &sev, &f) < 0 && f.reason == PLIM_REASON_ENVIRONMENT);
        plim_open_request_done(&o);
        CHECK(open_code("{\"protocol\":3}", &why, &o) == -1);
        CHECK_EQ_STR(o.owner, "");
        CHECK(!o.python && !o.javascript && o.lifetime_ms == 0);
        CHECK(plim_open_admit(&o, &sev, &f) == 0);
        CHECK(plim_open_admit(&o, &ev, &f) < 0 && f.code == PLIM_CODE_UNIMPLEMENTED &&
              f.reason == PLIM_REASON_UNSUPPORTED);
        plim_open_request_done(&o);
        /* hull's extension: an environment's name */
        CHECK(open_code("{\"protocol\":3,\"hullEnvironment\":\"data-1.x_y\"}", &why, &o) == -1);
        CHECK_EQ_STR(o.environment, "data-1.x_y");
        plim_open_request_done(&o);
        CHECK(open_code("{\"protocol\":3,\"hull_environment\":\"d\"}", &why, &o) == -1);
        CHECK_EQ_STR(o.environment, "d");
        plim_open_request_done(&o);
        CHECK(open_code("{\"protocol\":3}", &why, &o) == -1);
        CHECK_EQ_STR(o.environment, "");
        plim_open_request_done(&o);
        CHECK(open_code("{\"protocol\":3,\"minimumIsolation\":\"vm\"}", &why, &o) == -1);
        CHECK(plim_open_admit(&o, &sev, &f) < 0 && f.reason == PLIM_REASON_ISOLATION);
        plim_open_request_done(&o);

        static const struct {
                const char *text;
                int code;
                plim_reason reason;
        } refused[] = {
                {"{}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_PROTOCOL},
                {"{\"protocol\":4,\"owner\":7}", PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_PROTOCOL},
                {"{\"protocol\":3,\"languages\":[\"ruby\"]}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"languages\":[\"python\",\"python\"]}", PLIM_CODE_INVALID_ARGUMENT,
                 PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"languages\":[\"python\",\"javascript\",\"python\"]}", PLIM_CODE_INVALID_ARGUMENT,
                 PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"languages\":\"python\"}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"languages\":[7]}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"owner\":\"\"}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"owner\":\"a b\"}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"owner\":\"a\\u0000\"}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"owner\":\"0123456789012345678901234567890123456789012345678901234567890123x\"}",
                 PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"owner\":1}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"hullEnvironment\":\"Data\"}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"hullEnvironment\":\"-x\"}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"hullEnvironment\":\"a/b\"}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"hullEnvironment\":\"a\\u0000\"}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"hullEnvironment\":7}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"hullEnvironment\":"
                 "\"0123456789012345678901234567890123456789012345678901234567890123\"}",
                 PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"lifetimeMs\":-1}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"idleTimeoutMs\":4294967296}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"idleTimeoutMs\":true}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"minimumIsolation\":\"none\"}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"softwareRule\":{\"mode\":\"exact\"}}", PLIM_CODE_INVALID_ARGUMENT,
                 PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"sessionId\":\"" SID "\"}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"javascript\":{\"code\":\"1\"}}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
                {"{\"protocol\":3,\"owner\":\"a\",\"owner\":\"b\"}", PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST},
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                int c = open_code(refused[i].text, &why, NULL);
                TEST_RESULT(c == refused[i].code && why == refused[i].reason, "OpenSession %s refused (got %d/%d)",
                            refused[i].text, c, (int) why);
        }
        CHECK(open_code(
                      "{\"protocol\":3,\"owner\":\"0123456789012345678901234567890123456789012345678901234567890123\"}",
                      &why, NULL) == -1);

        /* CloseSession */
        t = "{\"protocol\":3,\"sessionId\":\"" SID "\"}";
        CHECK(plim_close_parse(t, strlen(t), id, &f) == 0);
        CHECK_EQ_STR(id, SID);
        t = "{\"protocol\":3,\"session_id\":\"" SID "\"}";
        CHECK(plim_close_parse(t, strlen(t), id, &f) == 0);
        t = "{\"sessionId\":\"" SID "\"}";
        CHECK(plim_close_parse(t, strlen(t), id, &f) < 0 && f.reason == PLIM_REASON_PROTOCOL);
        t = "{\"protocol\":3}";
        CHECK(plim_close_parse(t, strlen(t), id, &f) < 0 && f.code == PLIM_CODE_INVALID_ARGUMENT &&
              f.reason == PLIM_REASON_REQUEST);
        t = "{\"protocol\":3,\"sessionId\":\"XYZ\"}";
        CHECK(plim_close_parse(t, strlen(t), id, &f) < 0 && f.code == PLIM_CODE_NOT_FOUND &&
              f.session_end == PLIM_SESSION_END_NOT_FOUND);
        t = "{\"protocol\":3,\"sessionId\":\"" SID "\",\"x\":1}";
        CHECK(plim_close_parse(t, strlen(t), id, &f) < 0 && f.code == PLIM_CODE_INVALID_ARGUMENT);
        CHECK(plim_close_parse("{", 1, id, &f) < 0 && f.before_handler);
}

/* Minimal protobuf reader for the checks: the value of field `want` (varint or bytes). */
static bool pb_find(const uint8_t *p, size_t n, uint32_t want, uint64_t *ret_v, const uint8_t **ret_p, size_t *ret_n) {
        size_t i = 0;
        while (i < n) {
                uint64_t key = 0, v = 0;
                for (unsigned s = 0; i < n; s += 7) {
                        key |= (uint64_t) (p[i] & 0x7F) << s;
                        if (!(p[i++] & 0x80))
                                break;
                }
                for (unsigned s = 0; i < n; s += 7) {
                        v |= (uint64_t) (p[i] & 0x7F) << s;
                        if (!(p[i++] & 0x80))
                                break;
                }
                if ((key & 7) == 2) {
                        if (v > n - i)
                                return false;
                        if (key >> 3 == want) {
                                *ret_p = p + i;
                                *ret_n = (size_t) v;
                                return true;
                        }
                        i += (size_t) v;
                } else if (key >> 3 == want) {
                        *ret_v = v;
                        return true;
                }
        }
        return false;
}

static bool pb_string_is(const uint8_t *p, size_t n, uint32_t field, const char *want) {
        const uint8_t *s;
        size_t len;
        uint64_t v;
        return pb_find(p, n, field, &v, &s, &len) && len == strlen(want) && memcmp(s, want, len) == 0;
}

static void test_protobuf(void) {
        uint8_t buf[64];
        plim_pb b;
        plim_pb_init(&b, buf, sizeof(buf));
        plim_pb_varint(&b, 1, 3);
        plim_pb_varint(&b, 2, 0); /* proto3: not written */
        plim_pb_varint(&b, 11, 300);
        plim_pb_string(&b, 16, "ab");
        plim_pb_string(&b, 3, "");
        static const uint8_t want[] = {0x08, 0x03, 0x58, 0xAC, 0x02, 0x82, 0x01, 0x02, 'a', 'b'};
        CHECK(b.err == 0 && b.len == sizeof(want) && memcmp(buf, want, sizeof(want)) == 0);
        plim_pb_init(&b, buf, sizeof(buf));
        plim_pb_varint(&b, 1, UINT64_MAX);
        static const uint8_t want_max[] = {0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01};
        CHECK(b.err == 0 && b.len == sizeof(want_max) && memcmp(buf, want_max, sizeof(want_max)) == 0);
        plim_pb_init(&b, buf, 4);
        plim_pb_string(&b, 2, "abc");
        CHECK(b.err == -ENOBUFS);
        plim_pb_varint(&b, 1, 1); /* sticky */
        CHECK(b.err == -ENOBUFS);

        plim_record r = {.version = 3,
                         .request_sha256 = "r",
                         .result_sha256 = "",
                         .provider = "p",
                         .isolation = "",
                         .environment = "",
                         .policy = "",
                         .started_unix_ms = 1,
                         .session = "",
                         .sequence = 2,
                         .previous_sha256 = "",
                         .record_sha256 = "",
                         .software_identity = "",
                         .software_rule_id = "",
                         .unanswered = "u"};
        plim_pb_init(&b, buf, sizeof(buf));
        plim_pb_run_record(&b, &r);
        static const uint8_t want_rec[] = {0x08, 0x03, 0x12, 0x01, 'r',  0x22, 0x01, 'p',
                                           0x40, 0x01, 0x58, 0x02, 0x82, 0x01, 0x01, 'u'};
        CHECK(b.err == 0 && b.len == sizeof(want_rec) && memcmp(buf, want_rec, sizeof(want_rec)) == 0);
}

static void test_session_errors(void) {
        plim_error f;
        char *s;
        size_t n;
        CHECK_EQ_STR(plim_session_end_to_string(PLIM_SESSION_END_CLOSED), "SESSION_END_CLOSED");
        CHECK_EQ_STR(plim_session_end_to_string(PLIM_SESSION_END_UNCLAIMED), "SESSION_END_UNCLAIMED");
        CHECK_EQ_STR(plim_session_end_to_string(PLIM_SESSION_END_NOT_FOUND), "SESSION_END_NOT_FOUND");
        CHECK_EQ_STR(plim_session_end_to_string((plim_session_end) 99), "SESSION_END_UNSPECIFIED");

        /* SessionEnded {reason 9, detail "x"}: 08 09 12 01 78 */
        plim_fail(&f, PLIM_CODE_NOT_FOUND, PLIM_REASON_REQUEST, "m");
        plim_error_session_ended(&f, PLIM_SESSION_END_NOT_FOUND, "x");
        CHECK(plim_error_json(&f, &s, &n) == 0);
        CHECK_EQ_STR(s,
                     "{\"code\":\"not_found\",\"message\":\"m\",\"details\":[{\"type\":\"plimsoll.v1.NotDispatched\","
                     "\"value\":\"CAE\"},{\"type\":\"plimsoll.v1.SessionEnded\",\"value\":\"CAkSAXg\"}]}");
        free(s);
        /* plim_fail clears the details of an earlier error */
        plim_fail(&f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "m");
        CHECK(plim_error_json(&f, &s, &n) == 0);
        CHECK_EQ_STR(s, "{\"code\":\"internal\",\"message\":\"m\"}");
        free(s);

        CHECK(plim_fail_session_not_found(&f) == -1);
        CHECK(f.code == PLIM_CODE_NOT_FOUND && f.reason == PLIM_REASON_REQUEST &&
              f.session_end == PLIM_SESSION_END_NOT_FOUND);
        CHECK(plim_fail_session_ended(&f, PLIM_SESSION_END_EXPIRED, "lifetime over") == -1);
        CHECK(f.code == PLIM_CODE_FAILED_PRECONDITION && f.reason == PLIM_REASON_REQUEST);
        CHECK(plim_error_json(&f, &s, &n) == 0);
        json_t *j = json_loads(s, 0, NULL);
        json_t *d = json_object_get(j, "details");
        CHECK(json_array_size(d) == 2);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(d, 1), "type")), "plimsoll.v1.SessionEnded");
        /* 08 02 12 0d "lifetime over" */
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(d, 1), "value")), "CAISDWxpZmV0aW1lIG92ZXI");
        json_decref(j);
        free(s);

        /* a long detail is cut on a character boundary */
        char longd[PLIM_END_DETAIL_MAX + 8];
        memset(longd, 'a', sizeof(longd));
        memcpy(longd + PLIM_END_DETAIL_MAX - 2, "\xc3\xa9", 2);
        longd[sizeof(longd) - 1] = '\0';
        plim_error_session_ended(&f, PLIM_SESSION_END_SHUTDOWN, longd);
        CHECK_EQ_INT(strlen(f.session_end_detail), PLIM_END_DETAIL_MAX - 2);
}

static json_t *load(const char *s) {
        return json_loads(s, JSON_REJECT_DUPLICATES, NULL);
}

/* Three calls of session SID: a cell, a javascript run, then one that may have run and got no
 * answer; every digest recomputed by tests/integration/plimsoll_record.py. */
/* Call 1 of a session: a cell, its answer, record and log entry. */
static void session_call1(plim_chain *chain, plim_request *r1) {
        plim_error f;
        plim_call_record c;
        char *s;
        size_t n;
        const char *t1 =
                "{\"protocol\":3,\"sessionId\":\"" SID "\",\"cell\":{\"language\":\"python\",\"code\":\"x = 1\"}}";
        /* call 1: a cell */
        CHECK(plim_session_run_parse(t1, strlen(t1), r1, &f) == 0);
        plim_cell_result cell = {
                .exit_code = 0, .out = "2\n", .out_len = 2, .err = "", .interpreter_started = true, .wall_us = 9000};
        CHECK(plim_session_run_answer(r1, NULL, &cell, &sev, chain, 1700000000000ULL, 1700000000010ULL,
                                      PLIM_SESSION_END_UNSPECIFIED, NULL, &s, &n, &c, &f) == 0);
        json_t *j = load(s);
        json_t *run = json_object_get(j, "run"), *rec = json_object_get(run, "record");
        CHECK(json_object_size(j) == 1);
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(run, "cell"), "stdout")), "Mgo=");
        CHECK(json_is_true(json_object_get(json_object_get(run, "cell"), "interpreterStarted")));
        CHECK(json_is_false(json_object_get(json_object_get(run, "cell"), "interpreterEnded")));
        CHECK_EQ_STR(json_string_value(json_object_get(run, "durationMs")), "9");
        CHECK_EQ_INT(json_integer_value(json_object_get(rec, "version")), 2);
        CHECK_EQ_STR(json_string_value(json_object_get(rec, "requestSha256")),
                     "616ff7401f3c4d1933fe717c7f4dbcd46e4138c8428b56a91509264111f1678a");
        CHECK_EQ_STR(json_string_value(json_object_get(rec, "resultSha256")),
                     "e4938ba0e9462afc00c596747756b116542297e84edd03507f2b249d55902a45");
        CHECK_EQ_STR(json_string_value(json_object_get(rec, "session")), FP);
        CHECK_EQ_STR(json_string_value(json_object_get(rec, "sequence")), "1");
        CHECK_EQ_STR(json_string_value(json_object_get(rec, "previousSha256")), "");
        CHECK_EQ_STR(json_string_value(json_object_get(rec, "recordSha256")),
                     "d54992b22df1233f25ace48c557a13a62edd9234e7b118a297526ec1d3eeef8a");
        CHECK_EQ_STR(c.record_sha256, "d54992b22df1233f25ace48c557a13a62edd9234e7b118a297526ec1d3eeef8a");
        CHECK_EQ_INT(c.sequence, 1);
        /* the audit-log entry checks out, and carries no sessionId */
        json_t *entry = NULL;
        hull_error e = {0};
        CHECK(rec_log_entry_new(NULL, c.record, c.request, c.result, &entry, &e) == 0);
        TEST_RESULT(rec_entry_check(entry, &e) == 0, "call 1's log entry checks (%s)", e.msg);
        CHECK(json_object_get(json_object_get(entry, "request"), "sessionId") == NULL);
        json_decref(entry);
        plim_chain_advance(chain, &c);
        CHECK_EQ_INT(chain->calls, 1);
        plim_call_record_done(&c);
        json_decref(j);
        free(s);
}

/* Call 2: javascript, the session ended after it; then plans that are not answers. */
static void session_call2(plim_chain *chain, plim_request *r2) {
        plim_error f;
        plim_call_record c;
        char *s;
        size_t n;
        json_t *j, *run, *rec;
        const char *t2 = "{\"protocol\":3,\"sessionId\":\"" SID "\",\"javascript\":{\"code\":\"console.log(6*7)\"}}";
        /* call 2: javascript, the session ended after it */
        CHECK(plim_session_run_parse(t2, strlen(t2), r2, &f) == 0);
        sbx_step_result step = {
                .status = 0, .flags = SBX_STEP_EXITED, .out = (char *) "42\n", .out_len = 3, .err = (char *) ""};
        sbx_plan_result res = {.outcome = SBX_PLAN_COMPLETED,
                               .detail = (char *) "",
                               .started_unix_ms = 1700000000020ULL,
                               .ended_unix_ms = 1700000000025ULL,
                               .steps = &step,
                               .n_steps = 1};
        CHECK(plim_session_run_answer(r2, &res, NULL, &sev, chain, 1700000000020ULL, 1700000000025ULL,
                                      PLIM_SESSION_END_DISK_EXCEEDED, "1024 MiB used", &s, &n, &c, &f) == 0);
        j = load(s);
        run = json_object_get(j, "run");
        rec = json_object_get(run, "record");
        CHECK_EQ_STR(json_string_value(json_object_get(j, "ended")), "SESSION_END_DISK_EXCEEDED");
        CHECK_EQ_STR(json_string_value(json_object_get(j, "endDetail")), "1024 MiB used");
        CHECK_EQ_STR(json_string_value(json_object_get(rec, "resultSha256")),
                     "9a471e25396d4e0a2ef3124f138007aadce1a73d746dd4b99c38c50c0df2a7a5");
        CHECK_EQ_STR(json_string_value(json_object_get(rec, "previousSha256")),
                     "d54992b22df1233f25ace48c557a13a62edd9234e7b118a297526ec1d3eeef8a");
        CHECK_EQ_STR(json_string_value(json_object_get(rec, "sequence")), "2");
        CHECK_EQ_STR(c.record_sha256, "1f5d916b563b16c894437580135a0b39cf75fa532d58f9c72bf9f5f5b5365fb2");
        plim_chain_advance(chain, &c);
        plim_call_record_done(&c);
        json_decref(j);
        free(s);

        /* not answers */
        res.outcome = SBX_PLAN_NOT_STARTED;
        CHECK(plim_session_run_answer(r2, &res, NULL, &sev, chain, 0, 0, PLIM_SESSION_END_UNSPECIFIED, NULL, &s, &n, &c,
                                      &f) == -1);
        CHECK(f.reason == PLIM_REASON_CAPACITY);
        CHECK(plim_unanswered_error(r2, &sev, chain, 0, 0, &f, &c) == -EINVAL); /* nothing ran: not counted */
        res.outcome = SBX_PLAN_ERROR;
        CHECK(plim_session_run_answer(r2, &res, NULL, &sev, chain, 0, 0, PLIM_SESSION_END_UNSPECIFIED, NULL, &s, &n, &c,
                                      &f) == -1);
        CHECK(f.code == PLIM_CODE_INTERNAL && f.reason == PLIM_REASON_NONE);
}

/* Call 3: unanswered (a deadline), a counted version 3 record, its error detail decoded. */
static void session_call3(plim_chain *chain, plim_request *r1) {
        plim_error f;
        plim_call_record c;
        char *s;
        size_t n;
        json_t *j;
        json_t *entry = NULL;
        hull_error e = {0};
        /* call 3: cell again, may have run, deadline: a counted version 3 record */
        plim_fail(&f, PLIM_CODE_DEADLINE_EXCEEDED, PLIM_REASON_NONE, "the call did not finish in time");
        CHECK(plim_unanswered_error(r1, &sev, chain, 1700000000030ULL, 1700000000040ULL, &f, &c) == 0);
        CHECK_EQ_STR(c.record_sha256, "022f01277c2df69e255aab26871b60d94cb5628ce7e1ca0aa1ca5573a01003b7");
        CHECK_EQ_INT(c.sequence, 3);
        CHECK(c.result == NULL);
        CHECK_EQ_INT(json_integer_value(json_object_get(c.record, "version")), 3);
        CHECK_EQ_STR(json_string_value(json_object_get(c.record, "unanswered")), "deadline_exceeded");
        CHECK(json_object_get(c.record, "resultSha256") == NULL);
        CHECK(rec_log_entry_new(NULL, c.record, c.request, NULL, &entry, &e) == 0);
        TEST_RESULT(rec_entry_check(entry, &e) == 0, "call 3's log entry checks (%s)", e.msg);
        json_decref(entry);
        CHECK(plim_error_json(&f, &s, &n) == 0);
        j = load(s);
        json_t *d = json_object_get(j, "details");
        CHECK_EQ_STR(json_string_value(json_object_get(j, "code")), "deadline_exceeded");
        CHECK(json_array_size(d) == 1);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(d, 0), "type")), "plimsoll.v1.UnansweredCall");
        /* decode the detail: UnansweredCall{record=1} holding the record's fields */
        const char *b64 = json_string_value(json_object_get(json_array_get(d, 0), "value"));
        void *pb = NULL;
        size_t pblen = 0;
        CHECK(b64 && base64_decode(b64, strlen(b64), &pb, &pblen) == 0);
        const uint8_t *inner = NULL;
        size_t inner_n = 0;
        uint64_t v = 0;
        CHECK(pb && pb_find(pb, pblen, 1, &v, &inner, &inner_n));
        if (inner) {
                CHECK(pb_find(inner, inner_n, 1, &v, &inner, &(size_t){0}) && v == 3);
        }
        CHECK(pb_find(pb, pblen, 1, &v, &inner, &inner_n));
        CHECK(pb_string_is(inner, inner_n, 2, "616ff7401f3c4d1933fe717c7f4dbcd46e4138c8428b56a91509264111f1678a"));
        CHECK(!pb_string_is(inner, inner_n, 3, ""));
        CHECK(pb_string_is(inner, inner_n, 4, "hull"));
        CHECK(pb_string_is(inner, inner_n, 5, "container"));
        CHECK(pb_find(inner, inner_n, 8, &v, &(const uint8_t *){NULL}, &(size_t){0}) && v == 1700000000030ULL);
        CHECK(pb_string_is(inner, inner_n, 10, FP));
        CHECK(pb_find(inner, inner_n, 11, &v, &(const uint8_t *){NULL}, &(size_t){0}) && v == 3);
        CHECK(pb_string_is(inner, inner_n, 12, "1f5d916b563b16c894437580135a0b39cf75fa532d58f9c72bf9f5f5b5365fb2"));
        CHECK(pb_string_is(inner, inner_n, 13, "022f01277c2df69e255aab26871b60d94cb5628ce7e1ca0aa1ca5573a01003b7"));
        CHECK(pb_string_is(inner, inner_n, 16, "deadline_exceeded"));
        free(pb);
        json_decref(j);
        free(s);
        plim_chain_advance(chain, &c);
        plim_call_record_done(&c);
        CHECK_EQ_INT(chain->calls, 3);
}

static void test_session_answers(void) {
        plim_chain chain;
        plim_request r1, r2;
        char *s;
        size_t n;

        CHECK(plim_chain_init(&chain, "XYZ") == -EINVAL);
        CHECK(plim_chain_init(&chain, SID) == 0);
        CHECK_EQ_STR(chain.session, FP);
        CHECK(chain.calls == 0 && chain.last_sha256[0] == '\0');

        /* OpenSession's answer */
        CHECK(plim_open_answer(SID, &sev, 1700001800000ULL, 300000, &s, &n) == 0);
        CHECK_EQ_STR(s, "{\"sessionId\":\"" SID "\",\"session\":\"" FP
                        "\",\"sandbox\":\"hull\",\"isolation\":\"container\","
                        "\"expiresUnixMs\":\"1700001800000\",\"idleTimeoutMs\":300000,\"softwareIdentity\":\"\"}");
        free(s);
        CHECK(plim_open_answer("nope", &sev, 1, 1, &s, &n) == -EINVAL);

        session_call1(&chain, &r1);
        session_call2(&chain, &r2);
        session_call3(&chain, &r1);

        /* CloseSession's answer */
        CHECK(plim_close_answer(chain.session, chain.calls, chain.last_sha256, PLIM_SESSION_END_CLOSED, &s, &n) == 0);
        CHECK_EQ_STR(s, "{\"session\":\"" FP "\",\"calls\":\"3\",\"lastRecordSha256\":"
                        "\"022f01277c2df69e255aab26871b60d94cb5628ce7e1ca0aa1ca5573a01003b7\",\"ended\":\"SESSION_END_"
                        "CLOSED\"}");
        free(s);
        plim_request_done(&r1);
        plim_request_done(&r2);
}

static void test_describe_sessions(void) {
        char *s;
        size_t n;
        CHECK(plim_describe_json(&sev, &s, &n) == 0);
        json_t *j = load(s);
        CHECK(json_is_true(json_object_get(j, "supportsSessions")));
        CHECK_EQ_INT(json_integer_value(json_object_get(j, "sessionLifetimeMs")), 1800000);
        CHECK_EQ_INT(json_integer_value(json_object_get(j, "sessionIdleTimeoutMs")), 300000);
        CHECK_EQ_INT(json_integer_value(json_object_get(j, "maxSessionsPerCaller")), 4);
        CHECK(json_object_get(j, "maxSessionsPerOwner") == NULL);
        json_t *langs = json_object_get(json_object_get(j, "sessionEnvironment"), "languages");
        CHECK(json_array_size(langs) == 1);
        CHECK_EQ_STR(json_string_value(json_array_get(langs, 0)), "python");
        json_decref(j);
        free(s);
}

/* hull's extension on Run: hullEnvironment names the environment whose layer and network the
 * run gets, with OpenSession's rules; SessionRun refuses it (the session has its environment). */
static void test_run_environment(void) {
        plim_request r;
        plim_reason why;
        plim_error f;
        CHECK(parse_code("{\"protocol\":3,\"hullEnvironment\":\"data-1.x_y\",\"javascript\":{\"code\":\"1\"}}", &why,
                         &r) == -1);
        CHECK_EQ_STR(r.environment, "data-1.x_y");
        plim_request_done(&r);
        CHECK(parse_code("{\"protocol\":3,\"hull_environment\":\"d\",\"javascript\":{\"code\":\"1\"}}", &why, &r) ==
              -1);
        CHECK_EQ_STR(r.environment, "d");
        plim_request_done(&r);
        CHECK(parse_code("{\"protocol\":3,\"hullEnvironment\":\"\",\"javascript\":{\"code\":\"1\"}}", &why, &r) == -1);
        CHECK_EQ_STR(r.environment, "");
        plim_request_done(&r);
        CHECK(parse_code("{\"protocol\":3,\"javascript\":{\"code\":\"1\"}}", &why, &r) == -1);
        CHECK_EQ_STR(r.environment, "");
        plim_request_done(&r);
        static const char *const bad[] = {"\"Data\"",
                                          "\"-x\"",
                                          "\"a/b\"",
                                          "\"a\\u0000\"",
                                          "7",
                                          "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaa\""};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char text[512];
                snprintf(text, sizeof(text), "{\"protocol\":3,\"hullEnvironment\":%s,\"javascript\":{\"code\":\"1\"}}",
                         bad[i]);
                int q = plim_run_parse(text, strlen(text), &r, &f);
                TEST_RESULT(q < 0 && f.code == PLIM_CODE_INVALID_ARGUMENT && f.reason == PLIM_REASON_REQUEST &&
                                    strstr(f.message, "hullEnvironment"),
                            "Run with hullEnvironment %s refused naming the field (%s)", bad[i],
                            q < 0 ? f.message : "parsed");
        }
        const char *sr = "{\"protocol\":3,\"sessionId\":\"" SID "\",\"hullEnvironment\":\"d\","
                         "\"cell\":{\"language\":\"python\",\"code\":\"1\"}}";
        CHECK(plim_session_run_parse(sr, strlen(sr), &r, &f) < 0 && f.code == PLIM_CODE_INVALID_ARGUMENT &&
              strstr(f.message, "hullEnvironment"));
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
        test_session_run_parse();
        test_run_environment();
        test_open_close_parse();
        test_protobuf();
        test_session_errors();
        test_session_answers();
        test_describe_sessions();
        return test_done();
}
