/* test-broker-msg.c: the broker's message codec: round trips, bounds on both sides, every
 * truncation and every flipped byte of a valid message refused or decoded without harm, and the
 * path rule. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker-msg.h"
#include "limits.h"
#include "macro.h"
#include "sbx-net.h"
#include "sbx.h"
#include "test.h"

static void test_paths(void) {
        static const char *const good[] = {"a", "a/b", "a.b/c..d/.e", "é/ü", "x y", "a-b_c"};
        static const char *const bad[] = {"",       "/a",   "a/",   "a//b", ".",    "..",   "a/./b",
                                          "a/../b", "../a", "a/..", "a\\b", "a\nb", "a\tb", "a\x7f"};
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                TEST_RESULT(sbx_plan_path_is_clean(good[i], strlen(good[i])), "'%s' is clean", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                TEST_RESULT(!sbx_plan_path_is_clean(bad[i], strlen(bad[i])), "bad path %zu is not clean", i);
        char long_path[PLIM_PATH_MAX + 2];
        memset(long_path, 'a', sizeof(long_path));
        CHECK(sbx_plan_path_is_clean(long_path, PLIM_PATH_MAX));
        CHECK(!sbx_plan_path_is_clean(long_path, PLIM_PATH_MAX + 1));
        CHECK(!sbx_plan_path_is_clean("a\0b", 3));
}

static void test_request(void) {
        char *argv0[] = {(char *) "/bin/sh", (char *) "-c", (char *) "echo hi", NULL};
        char *argv1[] = {(char *) "true", NULL};
        sbx_plan_file files[] = {{(char *) "a/b.txt", (char *) "x\0y", 3}, {(char *) "empty", (char *) "", 0}};
        sbx_plan_step steps[] = {{argv0, 3}, {argv1, 1}};
        char *arts[] = {(char *) "out.txt"};
        sbx_plan r = {.timeout_ms = 1234,
                      .memory_bytes = 1ULL << 40,
                      .pids = 7,
                      .tmp_bytes = 9,
                      .output_bytes = 11,
                      .artifact_bytes = 13,
                      .flags = SBX_PLAN_STOP_ON_FAILURE,
                      .files = files,
                      .n_files = 2,
                      .steps = steps,
                      .n_steps = 2,
                      .artifacts = arts,
                      .n_artifacts = 1};
        char *buf, *buf2;
        size_t len, len2;
        sbx_plan d;

        CHECK(brk_plan_encode(&r, &buf, &len) == 0);
        CHECK(brk_plan_decode(buf, len, &d) == 0);
        CHECK(d.timeout_ms == 1234 && d.memory_bytes == 1ULL << 40 && d.pids == 7 && d.tmp_bytes == 9 &&
              d.output_bytes == 11 && d.artifact_bytes == 13 && d.flags == SBX_PLAN_STOP_ON_FAILURE);
        CHECK(d.n_files == 2 && d.files[0].len == 3 && memcmp(d.files[0].data, "x\0y", 3) == 0);
        CHECK_EQ_STR(d.files[1].path, "empty");
        CHECK(d.n_steps == 2 && d.steps[0].argc == 3 && d.steps[0].argv[3] == NULL);
        CHECK_EQ_STR(d.steps[0].argv[2], "echo hi");
        CHECK_EQ_STR(d.steps[1].argv[0], "true");
        CHECK(d.n_artifacts == 1);
        CHECK_EQ_STR(d.artifacts[0], "out.txt");
        CHECK(brk_plan_encode(&d, &buf2, &len2) == 0);
        CHECK(len2 == len && memcmp(buf, buf2, len) == 0);
        free(buf2);
        sbx_plan_done(&d);

        /* every prefix is refused; every single flipped byte decodes or is refused, never harms */
        unsigned refused = 0;
        for (size_t n = 0; n < len; n++)
                refused += brk_plan_decode(buf, n, &d) == -EBADMSG;
        TEST_RESULT(refused == len, "all %zu truncations refused (%u)", len, refused);
        for (size_t i = 0; i < len; i++) {
                buf[i] ^= 0x41;
                if (brk_plan_decode(buf, len, &d) == 0)
                        sbx_plan_done(&d);
                buf[i] ^= 0x41;
        }
        CHECK(brk_plan_decode(buf, len, &d) == 0);
        sbx_plan_done(&d);
        char *longer = malloc(len + 1);
        memcpy(longer, buf, len);
        longer[len] = 0;
        CHECK(brk_plan_decode(longer, len + 1, &d) == -EBADMSG); /* trailing bytes */
        free(longer);
        free(buf);

        /* the encoder refuses what the decoder would */
        sbx_plan bad = r;
        bad.n_steps = 0;
        CHECK(brk_plan_encode(&bad, &buf, &len) == -EINVAL);
        bad = r;
        bad.timeout_ms = 0;
        CHECK(brk_plan_encode(&bad, &buf, &len) == -EINVAL);
        sbx_plan_file evil[] = {{(char *) "../etc/passwd", (char *) "", 0}};
        bad = r;
        bad.files = evil;
        bad.n_files = 1;
        CHECK(brk_plan_encode(&bad, &buf, &len) == -EINVAL);
        bad = r;
        bad.n_files = BRK_FILES_MAX + 1;
        CHECK(brk_plan_encode(&bad, &buf, &len) == -EINVAL);
        bad = r;
        bad.net = _SBX_NET_MODE_MAX;
        CHECK(brk_plan_encode(&bad, &buf, &len) == -EINVAL);
        bad = r;
        bad.tier = SBX_TIER_PROCESS; /* a run is a container or under gVisor, never a bare process */
        CHECK(brk_plan_encode(&bad, &buf, &len) == -EINVAL);

        /* a javascript run's flag crosses (the spare's warm node takes it); unknown flags do not */
        bad = r;
        bad.flags = SBX_PLAN_JAVASCRIPT;
        CHECK(brk_plan_encode(&bad, &buf, &len) == 0 && brk_plan_decode(buf, len, &d) == 0 &&
              d.flags == SBX_PLAN_JAVASCRIPT);
        sbx_plan_done(&d);
        free(buf);
        bad.flags = SBX_PLAN_FLAGS_ALL + 1;
        CHECK(brk_plan_encode(&bad, &buf, &len) == -EINVAL);
        bad = r;
        memset(bad.kernel_platform, 'x', sizeof(bad.kernel_platform)); /* no NUL: refused */
        CHECK(brk_plan_encode(&bad, &buf, &len) == -EINVAL);
}

/* An environment's run: the layer and the network travel to the worker; none stays none. */
static void test_request_environment(void) {
        char *argv0[] = {(char *) "jq", (char *) "--version", NULL};
        sbx_plan_step steps[] = {{argv0, 2}};
        char *hosts[] = {(char *) "example.org", (char *) "*.example.net", NULL};
        sbx_plan r = {.timeout_ms = 1,
                      .steps = steps,
                      .n_steps = 1,
                      .layer_dir = (char *) "/var/lib/hull/layers/abc",
                      .net = SBX_NET_LIMITED,
                      .net_allow_package_managers = true,
                      .tier = SBX_TIER_KERNEL,
                      .kernel_platform = "systrap", /* hull serve's runsc check chose it */
                      .net_hosts = hosts,
                      .n_net_hosts = 2};
        char *buf;
        size_t len;
        sbx_plan d;
        CHECK(brk_plan_encode(&r, &buf, &len) == 0);
        CHECK(brk_plan_decode(buf, len, &d) == 0);
        CHECK_EQ_STR(d.layer_dir, "/var/lib/hull/layers/abc");
        CHECK(d.net == SBX_NET_LIMITED && d.net_allow_package_managers && d.n_net_hosts == 2 && d.net_hosts[2] == NULL);
        CHECK(d.tier == SBX_TIER_KERNEL);
        CHECK_EQ_STR(d.kernel_platform, "systrap");
        CHECK_EQ_STR(d.net_hosts[1], "*.example.net");
        sbx_plan_done(&d);
        unsigned refused = 0;
        for (size_t n = 0; n < len; n++)
                refused += brk_plan_decode(buf, n, &d) == -EBADMSG;
        TEST_RESULT(refused == len, "all %zu truncations refused (%u)", len, refused);
        free(buf);
        sbx_plan none = {.timeout_ms = 1, .steps = steps, .n_steps = 1};
        CHECK(brk_plan_encode(&none, &buf, &len) == 0);
        CHECK(brk_plan_decode(buf, len, &d) == 0);
        CHECK(d.layer_dir == NULL && d.net == SBX_NET_NONE && d.n_net_hosts == 0 && !d.net_allow_package_managers);
        CHECK(d.tier == SBX_TIER_CONTAINER && d.kernel_platform[0] == '\0');
        sbx_plan_done(&d);
        free(buf);
}

static void test_result(void) {
        sbx_step_result steps[] = {
                {.status = 0,
                 .flags = SBX_STEP_EXITED,
                 .wall_us = 5,
                 .out = (char *) "42\n",
                 .out_len = 3,
                 .err = (char *) "",
                 .err_len = 0},
                {.status = 124,
                 .term_signal = 15,
                 .flags = SBX_STEP_TIMED_OUT | SBX_STEP_OUT_TRUNCATED,
                 .out = (char *) "\xff\0",
                 .out_len = 2,
                 .err = (char *) "e",
                 .err_len = 1},
        };
        sbx_plan_file arts[] = {{(char *) "o/x", (char *) "\0\1", 2}};
        sbx_plan_result r = {.outcome = SBX_PLAN_TIMED_OUT,
                             .detail = (char *) "step 2 used up the run's 100 ms",
                             .started_unix_ms = 1,
                             .ended_unix_ms = 2,
                             .artifacts_truncated = true,
                             .steps = steps,
                             .n_steps = 2,
                             .artifacts = arts,
                             .n_artifacts = 1};
        char *buf, *buf2;
        size_t len, len2;
        sbx_plan_result d;
        CHECK(brk_plan_result_encode(&r, &buf, &len) == 0);
        CHECK(brk_plan_result_decode(buf, len, &d) == 0);
        CHECK(d.outcome == SBX_PLAN_TIMED_OUT && d.started_unix_ms == 1 && d.ended_unix_ms == 2 &&
              d.artifacts_truncated);
        CHECK_EQ_STR(d.detail, "step 2 used up the run's 100 ms");
        CHECK(d.n_steps == 2 && d.steps[1].status == 124 && d.steps[1].term_signal == 15 && d.steps[1].out_len == 2 &&
              memcmp(d.steps[1].out, "\xff\0", 2) == 0 && (d.steps[1].flags & SBX_STEP_TIMED_OUT));
        CHECK(d.n_artifacts == 1 && d.artifacts[0].len == 2 && memcmp(d.artifacts[0].data, "\0\1", 2) == 0);
        CHECK(brk_plan_result_encode(&d, &buf2, &len2) == 0);
        CHECK(len2 == len && memcmp(buf, buf2, len) == 0);
        free(buf2);
        sbx_plan_result_done(&d);
        unsigned refused = 0;
        for (size_t n = 0; n < len; n++)
                refused += brk_plan_result_decode(buf, n, &d) == -EBADMSG;
        TEST_RESULT(refused == len, "all %zu truncations refused (%u)", len, refused);
        free(buf);

        /* an empty "not started" answer, as the broker sends when it refuses a run */
        sbx_plan_result ns = {.outcome = SBX_PLAN_NOT_STARTED, .detail = (char *) "refused"};
        CHECK(brk_plan_result_encode(&ns, &buf, &len) == 0);
        CHECK(brk_plan_result_decode(buf, len, &d) == 0 && d.outcome == SBX_PLAN_NOT_STARTED && d.n_steps == 0);
        sbx_plan_result_done(&d);
        buf[8] = 9; /* an unknown outcome */
        CHECK(brk_plan_result_decode(buf, len, &d) == -EBADMSG);
        free(buf);
        CHECK(brk_plan_result_decode("HBRS", 4, &d) == -EBADMSG);
}

/* A limited run's connection log rides in the result; none stays none; bounded and NUL-free. */
static void test_result_net_log(void) {
        static const char log[] = "2026-12-02T07:00:00Z net refused CONNECT blocked.invalid:443 addr=- up=0 down=0\n";
        sbx_plan_result r = {.outcome = SBX_PLAN_COMPLETED,
                             .detail = (char *) "",
                             .net_log = (char *) log,
                             .net_log_len = sizeof(log) - 1};
        char *buf;
        size_t len;
        sbx_plan_result d;
        CHECK(brk_plan_result_encode(&r, &buf, &len) == 0);
        CHECK(brk_plan_result_decode(buf, len, &d) == 0);
        CHECK(d.net_log && d.net_log_len == sizeof(log) - 1 && strcmp(d.net_log, log) == 0);
        sbx_plan_result_done(&d);
        unsigned refused = 0;
        for (size_t n = 0; n < len; n++)
                refused += brk_plan_result_decode(buf, n, &d) == -EBADMSG;
        TEST_RESULT(refused == len, "all %zu truncations refused (%u)", len, refused);
        buf[len - (sizeof(log) - 1) - 8] = 2; /* the "has a log" word: 0 or 1 only */
        CHECK(brk_plan_result_decode(buf, len, &d) == -EBADMSG);
        free(buf);
        r.net_log = NULL;
        r.net_log_len = 0;
        CHECK(brk_plan_result_encode(&r, &buf, &len) == 0);
        CHECK(brk_plan_result_decode(buf, len, &d) == 0 && d.net_log == NULL);
        sbx_plan_result_done(&d);
        free(buf);
        char nul[] = "a\0b\n";
        r.net_log = nul;
        r.net_log_len = 4;
        CHECK(brk_plan_result_encode(&r, &buf, &len) == -EINVAL);
        r.net_log_len = SERVE_NET_LOG_ANSWER_MAX + 1;
        CHECK(brk_plan_result_encode(&r, &buf, &len) == -EINVAL);
}

int main(void) {
        test_paths();
        test_request();
        test_request_environment();
        test_result();
        test_result_net_log();
        return test_done();
}
