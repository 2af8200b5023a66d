/* test-parse-util.c: sizes, durations, counts, CPUs and environment assignments. */
#include <errno.h>

#include "parse-util.h"
#include "test.h"

int main(void) {
        uint64_t v = 0;

        CHECK_EQ_INT(parse_uint64("0", 0, 10, &v), 0);
        CHECK_EQ_INT(v, 0);
        CHECK_EQ_INT(parse_uint64("256", 1, 65536, &v), 0);
        CHECK_EQ_INT(v, 256);
        CHECK_EQ_INT(parse_uint64("", 0, 10, &v), -EINVAL);
        CHECK_EQ_INT(parse_uint64("-1", 0, 10, &v), -EINVAL);
        CHECK_EQ_INT(parse_uint64(" 1", 0, 10, &v), -EINVAL);
        CHECK_EQ_INT(parse_uint64("1x", 0, 10, &v), -EINVAL);
        CHECK_EQ_INT(parse_uint64("11", 0, 10, &v), -ERANGE);
        CHECK_EQ_INT(parse_uint64("18446744073709551616", 0, UINT64_MAX, &v), -ERANGE);
        CHECK_EQ_INT(parse_uint64("18446744073709551615", 0, UINT64_MAX, &v), 0);

        CHECK_EQ_INT(parse_size("512M", 0, UINT64_MAX, &v), 0);
        CHECK_EQ_INT(v, 512ULL << 20);
        CHECK_EQ_INT(parse_size("2G", 0, UINT64_MAX, &v), 0);
        CHECK_EQ_INT(v, 2ULL << 30);
        CHECK_EQ_INT(parse_size("64KiB", 0, UINT64_MAX, &v), 0);
        CHECK_EQ_INT(v, 65536);
        CHECK_EQ_INT(parse_size("100", 0, UINT64_MAX, &v), 0);
        CHECK_EQ_INT(v, 100);
        CHECK_EQ_INT(parse_size("1X", 0, UINT64_MAX, &v), -EINVAL);
        CHECK_EQ_INT(parse_size("M", 0, UINT64_MAX, &v), -EINVAL);
        CHECK_EQ_INT(parse_size("1.5G", 0, UINT64_MAX, &v), -EINVAL);
        CHECK_EQ_INT(parse_size("17179869184T", 0, UINT64_MAX, &v), -ERANGE);
        CHECK_EQ_INT(parse_size("1M", 4ULL << 20, UINT64_MAX, &v), -ERANGE);

        CHECK_EQ_INT(parse_duration_ms("30", 1, 86400000, &v), 0);
        CHECK_EQ_INT(v, 30000);
        CHECK_EQ_INT(parse_duration_ms("0.5", 1, 86400000, &v), 0);
        CHECK_EQ_INT(v, 500);
        CHECK_EQ_INT(parse_duration_ms("1.25s", 1, 86400000, &v), 0);
        CHECK_EQ_INT(v, 1250);
        CHECK_EQ_INT(parse_duration_ms("250ms", 1, 86400000, &v), 0);
        CHECK_EQ_INT(v, 250);
        CHECK_EQ_INT(parse_duration_ms("0", 1, 86400000, &v), -ERANGE);
        CHECK_EQ_INT(parse_duration_ms("1e3", 1, 86400000, &v), -EINVAL);
        CHECK_EQ_INT(parse_duration_ms(".5", 1, 86400000, &v), -EINVAL);
        CHECK_EQ_INT(parse_duration_ms("5.", 1, 86400000, &v), -EINVAL);
        CHECK_EQ_INT(parse_duration_ms("99999999999999999999", 1, 86400000, &v), -ERANGE);

        CHECK_EQ_INT(parse_cpus("0.5", 1024, &v), 0);
        CHECK_EQ_INT(v, 500);
        CHECK_EQ_INT(parse_cpus("2", 1024, &v), 0);
        CHECK_EQ_INT(v, 2000);
        CHECK_EQ_INT(parse_cpus("0", 1024, &v), -ERANGE);
        CHECK_EQ_INT(parse_cpus("2000", 1024, &v), -ERANGE);
        CHECK_EQ_INT(parse_cpus("-1", 1024, &v), -EINVAL);

        CHECK_EQ_INT(parse_env_assignment("A=1", 100), 0);
        CHECK_EQ_INT(parse_env_assignment("_x9=", 100), 0);
        CHECK_EQ_INT(parse_env_assignment("A=b=c", 100), 0);
        CHECK_EQ_INT(parse_env_assignment("=1", 100), -EINVAL);
        CHECK_EQ_INT(parse_env_assignment("9A=1", 100), -EINVAL);
        CHECK_EQ_INT(parse_env_assignment("A-B=1", 100), -EINVAL);
        CHECK_EQ_INT(parse_env_assignment("NOEQUALS", 100), -EINVAL);
        CHECK_EQ_INT(parse_env_assignment("A=123456789", 5), -EINVAL);
        return test_done();
}
