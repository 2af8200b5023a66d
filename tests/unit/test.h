/* test.h: the unit-test harness. Each CHECK prints "ok N - expr" or "not ok N - file:line: expr
 * (got ..., want ...)"; test_done() prints "N passed, N failed" and returns the exit code. */
#pragma once

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static unsigned test_passed, test_failed;

#define TEST_RESULT(ok, ...)                                                                                           \
        do {                                                                                                           \
                if (ok) {                                                                                              \
                        test_passed++;                                                                                 \
                        printf("ok %u - ", test_passed + test_failed);                                                 \
                } else {                                                                                               \
                        test_failed++;                                                                                 \
                        printf("not ok %u - %s:%d: ", test_passed + test_failed, __FILE__, __LINE__);                  \
                }                                                                                                      \
                printf(__VA_ARGS__);                                                                                   \
                putchar('\n');                                                                                         \
        } while (0)

#define CHECK(expr) TEST_RESULT((expr), "%s", #expr)
#define CHECK_EQ_INT(a, b)                                                                                             \
        do {                                                                                                           \
                long long _a = (long long) (a), _b = (long long) (b);                                                  \
                TEST_RESULT(_a == _b, "%s == %s (got %lld, want %lld)", #a, #b, _a, _b);                               \
        } while (0)
#define CHECK_EQ_STR(a, b)                                                                                             \
        do {                                                                                                           \
                const char *_a = (a), *_b = (b);                                                                       \
                TEST_RESULT(_a &&_b &&strcmp(_a, _b) == 0, "%s == %s (got \"%s\", want \"%s\")", #a, #b,               \
                            _a ? _a : "(null)", _b ? _b : "(null)");                                                   \
        } while (0)

static inline int test_done(void) {
        printf("%u passed, %u failed\n", test_passed, test_failed);
        return test_failed ? 1 : 0;
}
