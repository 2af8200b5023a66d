/* test-hullapi.c: hull's Workspace and Sessions API: routing, every parser (and its refusals),
 * and every answer. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hullapi.h"
#include "macro.h"
#include "test.h"

#define SID "00112233445566778899aabbccddeeff"
#define S "{\"sessionId\":\"" SID "\""

static void test_routing(void) {
        CHECK_EQ_INT(hull_api_procedure_from_path("/hull.v1.Workspace/Exec"), HULL_API_EXEC);
        CHECK_EQ_INT(hull_api_procedure_from_path("/api/hull.v1.Workspace/Hydrate"), HULL_API_HYDRATE);
        CHECK_EQ_INT(hull_api_procedure_from_path("/hull.v1.Workspace/Grep"), HULL_API_GREP);
        CHECK_EQ_INT(hull_api_procedure_from_path("/hull.v1.Sessions/List"), HULL_API_SESSIONS_LIST);
        CHECK_EQ_INT(hull_api_procedure_from_path("/hull.v1.Sessions/Exec"), HULL_API_UNKNOWN);
        CHECK_EQ_INT(hull_api_procedure_from_path("/hull.v1.Workspace/List"), HULL_API_UNKNOWN);
        CHECK_EQ_INT(hull_api_procedure_from_path("/hull.v1.Workspace/exec"), HULL_API_UNKNOWN);
        CHECK_EQ_INT(hull_api_procedure_from_path("/hull.v1.Workspace/Exec/"), HULL_API_UNKNOWN);
        CHECK_EQ_INT(hull_api_procedure_from_path("/a/../hull.v1.Workspace/Exec"), HULL_API_NONE);
        CHECK_EQ_INT(hull_api_procedure_from_path("x/hull.v1.Workspace/Exec"), HULL_API_NONE);
        CHECK_EQ_INT(hull_api_procedure_from_path("/plimsoll.v1.SandboxService/Run"), HULL_API_NONE);
        CHECK_EQ_STR(hull_api_procedure_to_string(HULL_API_PERSIST), "Persist");
}

static int code_of(hull_api_procedure p, const char *text, plim_error *f) {
        hull_api_request r;
        if (hull_api_parse(p, text, strlen(text), &r, f) == 0) {
                hull_api_request_done(&r);
                return -1;
        }
        return (int) f->code;
}

#define REFUSED(p, text)                                                                                               \
        do {                                                                                                           \
                plim_error _f;                                                                                         \
                int _c = code_of(p, text, &_f);                                                                        \
                TEST_RESULT(_c == PLIM_CODE_INVALID_ARGUMENT && _f.reason == PLIM_REASON_REQUEST,                      \
                            "%s %s refused (got %d: %s)", hull_api_procedure_to_string(p), text, _c,                   \
                            _c < 0 ? "" : _f.message);                                                                 \
        } while (0)
#define ACCEPTED(p, text)                                                                                              \
        do {                                                                                                           \
                plim_error _f;                                                                                         \
                TEST_RESULT(code_of(p, text, &_f) == -1, "%s %s accepted", hull_api_procedure_to_string(p), text);     \
        } while (0)

static void test_common(void) {
        plim_error f;
        for (int p = HULL_API_EXEC; p <= HULL_API_HYDRATE; p++) {
                hull_api_procedure q = (hull_api_procedure) p;
                REFUSED(q, "");
                REFUSED(q, "[]");
                REFUSED(q, "{\"command\":\"true\"}"); /* no sessionId */
                REFUSED(q, "{\"sessionId\":7}");
                REFUSED(q, S ",\"sessionId\":\"" SID "\"}"); /* duplicate key */
                REFUSED(q, S ",\"unknown\":1}");
                REFUSED(q, S ",\"session_id\":\"" SID "\"}"); /* both spellings */
                CHECK_EQ_INT(code_of(q, "{\"sessionId\":\"ABC\"}", &f), PLIM_CODE_NOT_FOUND);
                CHECK(f.reason == PLIM_REASON_REQUEST && f.session_end == PLIM_SESSION_END_NOT_FOUND);
        }
        CHECK_EQ_INT(code_of(HULL_API_UNKNOWN, "{}", &f), PLIM_CODE_UNIMPLEMENTED);
        ACCEPTED(HULL_API_SESSIONS_LIST, "{}");
        ACCEPTED(HULL_API_SESSIONS_LIST, "");
        REFUSED(HULL_API_SESSIONS_LIST, "{\"sessionId\":\"" SID "\"}");
        REFUSED(HULL_API_SESSIONS_LIST, "{\"x\":1}");
}

static void test_exec(void) {
        hull_api_request r;
        plim_error f;
        const char *t = S ",\"command\":\"echo $A\",\"timeoutMs\":\"999999\",\"env\":{\"A\":\"1\",\"_b9\":\"\"}}";
        CHECK(hull_api_exec_parse(t, strlen(t), &r, &f) == 0);
        CHECK_EQ_STR(r.session_id, SID);
        CHECK_EQ_STR(r.exec.command, "echo $A");
        CHECK_EQ_INT(r.exec.timeout_ms, PLIM_TIMEOUT_MS_MAX);
        CHECK_EQ_INT(r.exec.n_env, 2);
        CHECK_EQ_STR(r.exec.env[0].name, "A");
        CHECK_EQ_STR(r.exec.env[0].value, "1");
        hull_api_request_done(&r);
        t = S ",\"command\":\"true\"}";
        CHECK(hull_api_exec_parse(t, strlen(t), &r, &f) == 0);
        CHECK_EQ_INT(r.exec.timeout_ms, PLIM_DEFAULT_TIMEOUT_MS);
        CHECK_EQ_INT(r.exec.n_env, 0);
        hull_api_request_done(&r);

        REFUSED(HULL_API_EXEC, S "}");
        REFUSED(HULL_API_EXEC, S ",\"command\":\"\"}");
        REFUSED(HULL_API_EXEC, S ",\"command\":7}");
        REFUSED(HULL_API_EXEC, S ",\"command\":\"a\\u0000b\"}");
        REFUSED(HULL_API_EXEC, S ",\"command\":\"true\",\"timeoutMs\":-1}");
        REFUSED(HULL_API_EXEC, S ",\"command\":\"true\",\"timeoutMs\":\"x\"}");
        REFUSED(HULL_API_EXEC, S ",\"command\":\"true\",\"env\":[]}");
        REFUSED(HULL_API_EXEC, S ",\"command\":\"true\",\"env\":{\"1A\":\"x\"}}");
        REFUSED(HULL_API_EXEC, S ",\"command\":\"true\",\"env\":{\"A-B\":\"x\"}}");
        REFUSED(HULL_API_EXEC, S ",\"command\":\"true\",\"env\":{\"\":\"x\"}}");
        REFUSED(HULL_API_EXEC, S ",\"command\":\"true\",\"env\":{\"A\":1}}");
        REFUSED(HULL_API_EXEC, S ",\"command\":\"true\",\"env\":{\"A\":\"a\\u0000\"}}");
        REFUSED(HULL_API_EXEC, S ",\"command\":\"true\",\"env\":{\"A\\u0000B\":\"x\"}}");

        /* bounds: command length, env entries, name and value length */
        size_t size = HULL_API_COMMAND_MAX + 256;
        char *b = malloc(size);
        CHECK(b != NULL);
        if (!b)
                return;
        int n = snprintf(b, size, S ",\"command\":\"");
        memset(b + n, 'x', HULL_API_COMMAND_MAX + 1);
        snprintf(b + n + HULL_API_COMMAND_MAX + 1, size - (size_t) n - HULL_API_COMMAND_MAX - 1, "\"}");
        REFUSED(HULL_API_EXEC, b);
        snprintf(b + n + HULL_API_COMMAND_MAX, size - (size_t) n - HULL_API_COMMAND_MAX, "\"}");
        ACCEPTED(HULL_API_EXEC, b);
        size_t len = (size_t) snprintf(b, size, S ",\"command\":\"true\",\"env\":{");
        for (unsigned i = 0; i <= HULL_API_ENV_MAX; i++)
                len += (size_t) snprintf(b + len, size - len, "%s\"V%u\":\"\"", i ? "," : "", i);
        snprintf(b + len, size - len, "}}");
        REFUSED(HULL_API_EXEC, b);
        len = (size_t) snprintf(b, size, S ",\"command\":\"true\",\"env\":{\"");
        memset(b + len, 'N', HULL_API_ENV_NAME_MAX + 1);
        snprintf(b + len + HULL_API_ENV_NAME_MAX + 1, size - len - HULL_API_ENV_NAME_MAX - 1, "\":\"\"}}");
        REFUSED(HULL_API_EXEC, b);
        snprintf(b + len + HULL_API_ENV_NAME_MAX, size - len - HULL_API_ENV_NAME_MAX, "\":\"\"}}");
        ACCEPTED(HULL_API_EXEC, b);
        len = (size_t) snprintf(b, size, S ",\"command\":\"true\",\"env\":{\"A\":\"");
        memset(b + len, 'v', HULL_API_ENV_VALUE_MAX + 1);
        snprintf(b + len + HULL_API_ENV_VALUE_MAX + 1, size - len - HULL_API_ENV_VALUE_MAX - 1, "\"}}");
        REFUSED(HULL_API_EXEC, b);
        free(b);
}

static void test_files(void) {
        hull_api_request r;
        plim_error f;
        const char *t = S ",\"path\":\"a/b\",\"offset\":\"18446744073709551615\",\"limit\":4294967295}";
        CHECK(hull_api_read_parse(t, strlen(t), &r, &f) == 0);
        CHECK_EQ_STR(r.read.path, "a/b");
        CHECK(r.read.offset == UINT64_MAX);
        CHECK(r.read.limit == WS_READ_MAX_BYTES);
        hull_api_request_done(&r);
        t = S ",\"path\":\"a\"}";
        CHECK(hull_api_read_parse(t, strlen(t), &r, &f) == 0);
        CHECK(r.read.offset == 0 && r.read.limit == WS_READ_DEFAULT_BYTES);
        hull_api_request_done(&r);
        REFUSED(HULL_API_READ, S "}");
        REFUSED(HULL_API_READ, S ",\"path\":\"\"}");
        REFUSED(HULL_API_READ, S ",\"path\":\"a\\u0000\"}");
        REFUSED(HULL_API_READ, S ",\"path\":\"a\",\"offset\":-1}");
        REFUSED(HULL_API_READ, S ",\"path\":\"a\",\"offset\":\"18446744073709551616\"}");
        REFUSED(HULL_API_READ, S ",\"path\":\"a\",\"limit\":4294967296}");
        REFUSED(HULL_API_READ, S ",\"path\":\"a\",\"limit\":1.5}");

        t = S ",\"path\":\"x\",\"content\":\"aGk-_w\",\"append\":true}";
        CHECK(hull_api_write_parse(t, strlen(t), &r, &f) == 0);
        CHECK(r.write.content_len == 4 && memcmp(r.write.content, "hi>\xff", 4) == 0);
        CHECK(r.write.append);
        hull_api_request_done(&r);
        t = S ",\"path\":\"x\"}";
        CHECK(hull_api_write_parse(t, strlen(t), &r, &f) == 0); /* empty content: an empty file */
        CHECK(r.write.content_len == 0 && !r.write.append);
        hull_api_request_done(&r);
        REFUSED(HULL_API_WRITE, S ",\"path\":\"x\",\"content\":\"a\"}");
        REFUSED(HULL_API_WRITE, S ",\"path\":\"x\",\"content\":\"aGk=aGk=\"}");
        REFUSED(HULL_API_WRITE, S ",\"path\":\"x\",\"content\":\"a b=\"}");
        REFUSED(HULL_API_WRITE, S ",\"path\":\"x\",\"content\":7}");
        REFUSED(HULL_API_WRITE, S ",\"path\":\"x\",\"append\":\"yes\"}");
        REFUSED(HULL_API_WRITE, S ",\"content\":\"\"}");

        t = S ",\"path\":\"x\",\"oldText\":\"a\\u0000\",\"new_text\":\"\"}";
        CHECK(hull_api_edit_parse(t, strlen(t), &r, &f) == 0);
        CHECK(r.edit.old_len == 2 && r.edit.new_len == 0);
        hull_api_request_done(&r);
        REFUSED(HULL_API_EDIT, S ",\"path\":\"x\",\"oldText\":\"\",\"newText\":\"b\"}");
        REFUSED(HULL_API_EDIT, S ",\"path\":\"x\",\"newText\":\"b\"}");
        REFUSED(HULL_API_EDIT, S ",\"path\":\"x\",\"oldText\":1}");
        REFUSED(HULL_API_EDIT, S ",\"oldText\":\"a\"}");

        t = S ",\"pattern\":\"**/*.c\",\"hidden\":true}";
        CHECK(hull_api_glob_parse(t, strlen(t), &r, &f) == 0);
        CHECK_EQ_STR(r.glob.pattern, "**/*.c");
        CHECK(r.glob.hidden);
        hull_api_request_done(&r);
        REFUSED(HULL_API_GLOB, S "}");
        REFUSED(HULL_API_GLOB, S ",\"pattern\":\"*\",\"hidden\":1}");

        t = S ",\"pattern\":\"fo+\",\"path\":\"src\",\"glob\":\"*.c\",\"ignoreCase\":true,\"maxMatches\":10}";
        CHECK(hull_api_grep_parse(t, strlen(t), &r, &f) == 0);
        ws_grep_opts o;
        hull_api_grep_opts(&r, &o);
        CHECK_EQ_STR(o.path, "src");
        CHECK_EQ_STR(o.glob, "*.c");
        CHECK(o.ignore_case && o.matches_max == 10);
        hull_api_request_done(&r);
        t = S ",\"pattern\":\"x\"}";
        CHECK(hull_api_grep_parse(t, strlen(t), &r, &f) == 0);
        CHECK(r.grep.path == NULL && r.grep.glob == NULL && r.grep.max_matches == 0);
        hull_api_request_done(&r);
        REFUSED(HULL_API_GREP, S ",\"pattern\":\"\"}");
        REFUSED(HULL_API_GREP, S ",\"pattern\":\"x\",\"maxMatches\":10001}");
        REFUSED(HULL_API_GREP, S ",\"pattern\":\"x\",\"path\":\"\"}");
        REFUSED(HULL_API_GREP, S ",\"pattern\":\"x\",\"ignoreCase\":null,\"ignore_case\":true,\"glob\":3}");

        ACCEPTED(HULL_API_PERSIST, S "}");
        REFUSED(HULL_API_PERSIST, S ",\"archive\":\"\"}");
        t = S ",\"archive\":\"AAAA\"}";
        CHECK(hull_api_hydrate_parse(t, strlen(t), &r, &f) == 0);
        CHECK(r.hydrate.archive_len == 3);
        hull_api_request_done(&r);
        REFUSED(HULL_API_HYDRATE, S "}");
        REFUSED(HULL_API_HYDRATE, S ",\"archive\":\"!!!!\"}");
}

static void test_answers(void) {
        char *s;
        size_t n;
        ss_output step = {.exit_code = 124,
                          .timed_out = true,
                          .err_truncated = true,
                          .wall_us = 1500000,
                          .out = (char *) "hi",
                          .out_len = 2,
                          .err = (char *) "\0",
                          .err_len = 1};
        CHECK(hull_api_exec_answer(&step, &s, &n) == 0);
        CHECK_EQ_STR(
                s,
                "{\"exitCode\":124,\"timedOut\":true,\"stdout\":\"aGk=\",\"stderr\":\"AA==\",\"stdoutTruncated\":false,"
                "\"stderrTruncated\":true,\"durationMs\":\"1500\"}");
        free(s);
        ws_read_result rr = {.data = (char *) "abc", .len = 3, .size = 10, .eof = false};
        CHECK(hull_api_read_answer(&rr, &s, &n) == 0);
        CHECK_EQ_STR(s, "{\"content\":\"YWJj\",\"size\":\"10\",\"eof\":false}");
        free(s);
        CHECK(hull_api_write_answer(5, NULL, &s, &n) == 0);
        CHECK_EQ_STR(s, "{\"bytes\":\"5\"}");
        free(s);
        json_t *rec = json_pack("{s:i}", "version", 2);
        CHECK(hull_api_write_answer(5, rec, &s, &n) == 0);
        CHECK_EQ_STR(s, "{\"bytes\":\"5\",\"record\":{\"version\":2}}");
        free(s);
        CHECK(hull_api_edit_answer(NULL, &s, &n) == 0);
        CHECK_EQ_STR(s, "{\"replaced\":1}");
        free(s);
        step.record = rec;
        CHECK(hull_api_exec_answer(&step, &s, &n) == 0);
        CHECK(strstr(s, ",\"record\":{\"version\":2}}") != NULL);
        json_decref(rec);
        free(s);
        char *paths[] = {(char *) "a/", (char *) "b\xff"};
        ws_glob_result g = {.paths = paths, .count = 2, .stopped = WS_STOP_TIME};
        CHECK(hull_api_glob_answer(&g, &s, &n) == 0);
        CHECK_EQ_STR(s, "{\"paths\":[\"a/\",\"b\xef\xbf\xbd\"],\"truncated\":true}");
        free(s);
        ws_grep_match m = {.path = (char *) "x.c", .line = 7, .text = (char *) "int x;", .text_len = 6};
        ws_grep_result gr = {.matches = &m, .count = 1, .stopped = WS_STOP_RESULTS};
        CHECK(hull_api_grep_answer(&gr, &s, &n) == 0);
        CHECK_EQ_STR(s, "{\"matches\":[{\"path\":\"x.c\",\"line\":7,\"text\":\"int "
                        "x;\"}],\"truncated\":true,\"budgetExceeded\":false}");
        free(s);
        gr.stopped = WS_STOP_BYTES;
        CHECK(hull_api_grep_answer(&gr, &s, &n) == 0);
        CHECK(strstr(s, "\"truncated\":false,\"budgetExceeded\":true") != NULL);
        free(s);
        CHECK(hull_api_persist_answer("abc", 3, &s, &n) == 0);
        CHECK_EQ_STR(s, "{\"archive\":\"YWJj\",\"bytes\":\"3\",\"sha256\":"
                        "\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"}");
        free(s);
        CHECK(hull_api_persist_answer("abc", HULL_API_PERSIST_BYTES_MAX + 1, &s, &n) == -E2BIG);
        ws_tar_stats st = {.files = 2, .bytes = 4096};
        CHECK(hull_api_hydrate_answer(&st, NULL, &s, &n) == 0);
        CHECK_EQ_STR(s, "{\"files\":\"2\",\"bytes\":\"4096\"}");
        free(s);
        hull_api_session_info info[] = {{.session_id = SID,
                                         .fingerprint = "fp",
                                         .owner = NULL,
                                         .opened_unix_ms = 1,
                                         .expires_unix_ms = 2,
                                         .idle_timeout_ms = 3,
                                         .calls = 4}};
        CHECK(hull_api_list_answer(info, 1, &s, &n) == 0);
        CHECK_EQ_STR(s, "{\"sessions\":[{\"sessionId\":\"" SID "\",\"session\":\"fp\",\"openedUnixMs\":\"1\","
                        "\"expiresUnixMs\":\"2\",\"idleTimeoutMs\":3,\"calls\":\"4\",\"owner\":\"\"}]}");
        free(s);
        CHECK(hull_api_list_answer(NULL, 0, &s, &n) == 0);
        CHECK_EQ_STR(s, "{\"sessions\":[]}");
        free(s);
}

/* Every field takes its lowerCamelCase or snake_case name, the Handles ones too (the hostile
 * client found maxRows and inputId taking only one), never both. */
static void test_handles(void) {
        hull_api_request r;
        plim_error f;
        CHECK(hull_api_parse(HULL_API_HANDLES_QUERY, S ",\"sql\":\"SELECT 1\",\"maxRows\":5}",
                             strlen(S ",\"sql\":\"SELECT 1\",\"maxRows\":5}"), &r, &f) == 0);
        CHECK_EQ_INT(r.handles.max_rows, 5);
        hull_api_request_done(&r);
        CHECK(hull_api_parse(HULL_API_HANDLES_QUERY, S ",\"sql\":\"SELECT 1\",\"max_rows\":\"7\"}",
                             strlen(S ",\"sql\":\"SELECT 1\",\"max_rows\":\"7\"}"), &r, &f) == 0);
        CHECK_EQ_INT(r.handles.max_rows, 7);
        hull_api_request_done(&r);
        REFUSED(HULL_API_HANDLES_QUERY, S ",\"sql\":\"SELECT 1\",\"maxRows\":5,\"max_rows\":5}");
        CHECK(hull_api_parse(
                      HULL_API_HANDLES_ADD_INPUT, S ",\"input_id\":\"notes\",\"name\":\"n.txt\",\"content\":\"aGk=\"}",
                      strlen(S ",\"input_id\":\"notes\",\"name\":\"n.txt\",\"content\":\"aGk=\"}"), &r, &f) == 0);
        CHECK_EQ_STR(r.handles.input_id, "notes");
        CHECK_EQ_INT(r.handles.content_len, 2);
        hull_api_request_done(&r);
        ACCEPTED(HULL_API_HANDLES_ADD_INPUT, S ",\"inputId\":\"notes\",\"name\":\"n.txt\",\"content\":\"aGk=\"}");
        REFUSED(HULL_API_HANDLES_ADD_INPUT,
                S ",\"inputId\":\"a\",\"input_id\":\"a\",\"name\":\"n\",\"content\":\"aGk=\"}");
        REFUSED(HULL_API_HANDLES_ADD_INPUT, S ",\"input_id\":\"../x\",\"name\":\"n\",\"content\":\"aGk=\"}");
        REFUSED(HULL_API_HANDLES_ADD_INPUT, S ",\"name\":\"n\",\"content\":\"aGk=\"}");
}

int main(void) {
        test_routing();
        test_common();
        test_exec();
        test_files();
        test_answers();
        test_handles();
        return test_done();
}
