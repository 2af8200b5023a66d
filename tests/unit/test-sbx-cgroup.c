/* test-sbx-cgroup.c: parsing /proc/self/cgroup for v1 controllers and v2. */
#include <errno.h>
#include <string.h>

#include "sbx-cgroup.h"
#include "test.h"

int main(void) {
        const char *hybrid = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/abc\n2:cpu,cpuacct:/x\n0::/\n";
        char out[64];
        CHECK_EQ_INT(sbx_cgroup_parse_self(hybrid, strlen(hybrid), "memory", out, sizeof(out)), 0);
        CHECK_EQ_STR(out, "/process_api/abc");
        CHECK_EQ_INT(sbx_cgroup_parse_self(hybrid, strlen(hybrid), "pids", out, sizeof(out)), 0);
        CHECK_EQ_STR(out, "/");
        CHECK_EQ_INT(sbx_cgroup_parse_self(hybrid, strlen(hybrid), "cpuacct", out, sizeof(out)), 0);
        CHECK_EQ_STR(out, "/x");
        CHECK_EQ_INT(sbx_cgroup_parse_self(hybrid, strlen(hybrid), NULL, out, sizeof(out)), 0);
        CHECK_EQ_STR(out, "/");
        CHECK_EQ_INT(sbx_cgroup_parse_self(hybrid, strlen(hybrid), "cpuset", out, sizeof(out)), -ENOENT);
        CHECK_EQ_INT(sbx_cgroup_parse_self(hybrid, strlen(hybrid), "mem", out, sizeof(out)), -ENOENT);

        const char *v2 = "0::/user.slice/user-1000.slice/session-2.scope\n";
        CHECK_EQ_INT(sbx_cgroup_parse_self(v2, strlen(v2), NULL, out, sizeof(out)), 0);
        CHECK_EQ_STR(out, "/user.slice/user-1000.slice/session-2.scope");
        CHECK_EQ_INT(sbx_cgroup_parse_self(v2, strlen(v2), NULL, out, 8), -ENAMETOOLONG);
        CHECK_EQ_INT(sbx_cgroup_parse_self(v2, strlen(v2), "memory", out, sizeof(out)), -ENOENT);

        const char *bad = "garbage without colons\n";
        CHECK_EQ_INT(sbx_cgroup_parse_self(bad, strlen(bad), NULL, out, sizeof(out)), -EINVAL);
        const char *relative = "0::relative\n";
        CHECK_EQ_INT(sbx_cgroup_parse_self(relative, strlen(relative), NULL, out, sizeof(out)), -EINVAL);
        CHECK_EQ_INT(sbx_cgroup_parse_self("", 0, NULL, out, sizeof(out)), -ENOENT);
        const char *noeol = "0::/a";
        CHECK_EQ_INT(sbx_cgroup_parse_self(noeol, strlen(noeol), NULL, out, sizeof(out)), 0);
        CHECK_EQ_STR(out, "/a");
        return test_done();
}
