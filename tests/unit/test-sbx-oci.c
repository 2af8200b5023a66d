/* test-sbx-oci.c: the kernel tier's config.json (sbx_oci_config, pure) and the runtime lookup:
 * no capability in any set, no_new_privs, the limits as rlimits (RLIMIT_NPROC = --pids), the
 * sandbox user, the root read-only with every bind read-only and /workspace the only writable
 * host directory, hull's seccomp list, the namespaces; and sbx_oci_runtime_find's answers for
 * HULL_RUNSC and HULL_RUNSC_PLATFORM. Runs no runsc. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "limits.h"
#include "macro.h"
#include "sbx-oci.h"
#include "test.h"

static json_t *mount_at(json_t *cfg, const char *dst) {
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(cfg, "mounts"), i, m) {
                if (strcmp(json_string_value(json_object_get(m, "destination")), dst) == 0)
                        return m;
        }
        return NULL;
}

static bool has_option(json_t *m, const char *opt) {
        size_t i;
        json_t *o;
        json_array_foreach(json_object_get(m, "options"), i, o) {
                if (strcmp(json_string_value(o), opt) == 0)
                        return true;
        }
        return false;
}

static void test_config(void) {
        char *argv[] = {(char *) "/bin/echo", (char *) "hi", NULL};
        char *env[] = {(char *) "PATH=/usr/bin:/bin", (char *) "A=b", NULL};
        const char *binds[] = {"/usr", "/usr", "/etc/ld.so.cache", "/etc/ld.so.cache", NULL};
        sbx_spec spec = {
                .tier = SBX_TIER_KERNEL,
                .argv = argv,
                .pids = 77,
                .memory_bytes = 64ULL << 20,
                .tmp_bytes = 1 << 20,
                .output_bytes = SBX_DEFAULT_OUTPUT_BYTES,
                .handles_dir = "/var/lib/hull/handles",
                .cancel_fd = -1,
        };
        json_t *cfg = NULL;
        hull_error e = {0};
        TEST_RESULT(sbx_oci_config(&spec, NULL, "/tmp/b/rootfs", binds, env, &cfg, &e) == 0, "config: %s", e.msg);
        if (!cfg)
                return;
        json_t *proc = json_object_get(cfg, "process");
        CHECK_EQ_STR(json_string_value(json_array_get(json_object_get(proc, "args"), 1)), "hi");
        CHECK_EQ_STR(json_string_value(json_array_get(json_object_get(proc, "env"), 1)), "A=b");
        CHECK_EQ_STR(json_string_value(json_object_get(proc, "cwd")), "/workspace");
        CHECK(json_is_true(json_object_get(proc, "noNewPrivileges")));
        CHECK(!json_is_true(json_object_get(proc, "terminal")));
        const char *sets[] = {"bounding", "effective", "inheritable", "permitted", "ambient"};
        json_t *caps = json_object_get(proc, "capabilities");
        for (size_t i = 0; i < ELEMENTSOF(sets); i++)
                TEST_RESULT(json_is_array(json_object_get(caps, sets[i])) &&
                                    json_array_size(json_object_get(caps, sets[i])) == 0,
                            "capability set %s is empty", sets[i]);
        /* root runs the test: the sandbox user is 65534 (no work directory), never 0 */
        json_int_t uid = json_integer_value(json_object_get(json_object_get(proc, "user"), "uid"));
        CHECK(uid != 0 && (geteuid() != 0 || uid == SBX_ROOT_HOST_UID));
        bool nproc = false;
        size_t i;
        json_t *rl;
        json_array_foreach(json_object_get(proc, "rlimits"), i, rl) {
                if (strcmp(json_string_value(json_object_get(rl, "type")), "RLIMIT_NPROC") == 0)
                        nproc = json_integer_value(json_object_get(rl, "hard")) == 77;
        }
        CHECK(nproc);

        json_t *root = json_object_get(cfg, "root");
        CHECK_EQ_STR(json_string_value(json_object_get(root, "path")), "/tmp/b/rootfs");
        CHECK(json_is_true(json_object_get(root, "readonly")));
        json_t *m = mount_at(cfg, "/usr");
        CHECK(m && has_option(m, "ro") && !has_option(m, "rw"));
        m = mount_at(cfg, "/etc/ld.so.cache");
        CHECK(m && has_option(m, "ro"));
        m = mount_at(cfg, "/handles");
        CHECK(m && has_option(m, "ro"));
        CHECK(mount_at(cfg, "/env") == NULL);
        m = mount_at(cfg, "/workspace"); /* no work directory: a tmpfs, bounded by the memory limit */
        CHECK(m && strcmp(json_string_value(json_object_get(m, "type")), "tmpfs") == 0 &&
              has_option(m, "size=67108864"));
        m = mount_at(cfg, "/tmp");
        CHECK(m && has_option(m, "size=1048576"));

        json_t *lin = json_object_get(cfg, "linux");
        CHECK_EQ_INT((int) json_array_size(json_object_get(lin, "namespaces")), 5);
        json_t *sc = json_object_get(lin, "seccomp");
        CHECK_EQ_STR(json_string_value(json_object_get(sc, "defaultAction")), "SCMP_ACT_ALLOW");
        json_t *first = json_array_get(json_object_get(sc, "syscalls"), 0);
        bool mount_denied = false, ptrace_denied = false;
        json_t *n;
        json_array_foreach(json_object_get(first, "names"), i, n) {
                mount_denied = mount_denied || strcmp(json_string_value(n), "mount") == 0;
                ptrace_denied = ptrace_denied || strcmp(json_string_value(n), "ptrace") == 0;
        }
        CHECK(mount_denied && ptrace_denied);
        CHECK_EQ_INT((int) json_integer_value(json_object_get(first, "errnoRet")), EPERM);
        json_decref(cfg);

        /* A work directory is bound read-write; one that does not exist is an error. */
        char dir[] = "/tmp/test-sbx-oci.XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        spec.pids = 0;
        TEST_RESULT(sbx_oci_config(&spec, dir, "/r", NULL, env, &cfg, &e) == 0, "config: %s", e.msg);
        m = cfg ? mount_at(cfg, "/workspace") : NULL;
        CHECK(m && strcmp(json_string_value(json_object_get(m, "type")), "bind") == 0 && has_option(m, "rw"));
        nproc = false;
        json_array_foreach(json_object_get(json_object_get(cfg, "process"), "rlimits"), i, rl) {
                nproc = nproc || strcmp(json_string_value(json_object_get(rl, "type")), "RLIMIT_NPROC") == 0;
        }
        CHECK(!nproc); /* no --pids: no RLIMIT_NPROC */
        json_decref(cfg);
        cfg = NULL;
        rmdir(dir);
        CHECK(sbx_oci_config(&spec, dir, "/r", NULL, env, &cfg, &e) < 0 && cfg == NULL);
        CHECK(strstr(e.msg, "work directory") != NULL);
}

static void test_find(void) {
        sbx_oci_runtime rt;
        hull_error e = {0};
        setenv("HULL_RUNSC", "relative/runsc", 1);
        CHECK(sbx_oci_runtime_find(&rt, &e) == -ENOENT && strstr(e.msg, "HULL_RUNSC") != NULL);
        setenv("HULL_RUNSC", "/bin/true", 1); /* any executable: find does not run it */
        setenv("HULL_RUNSC_PLATFORM", "systrap", 1);
        TEST_RESULT(sbx_oci_runtime_find(&rt, &e) == 0, "find: %s", e.msg);
        CHECK_EQ_STR(rt.path, "/bin/true");
        CHECK_EQ_STR(rt.platform, "systrap");
        setenv("HULL_RUNSC_PLATFORM", "sys trap;rm", 1);
        CHECK(sbx_oci_runtime_find(&rt, &e) == -EINVAL && strstr(e.msg, "HULL_RUNSC_PLATFORM") != NULL);
        unsetenv("HULL_RUNSC_PLATFORM");
        setenv("HULL_RUNSC", "/nonexistent/runsc", 1);
        CHECK(sbx_oci_runtime_find(&rt, &e) == -ENOENT);
        unsetenv("HULL_RUNSC");
        char ev[HULL_ERROR_MSG_MAX];
        rt = (sbx_oci_runtime){.version = "0.0~20221219.0", .platform_seen = "ptrace"};
        sbx_oci_runtime_evidence(&rt, ev, sizeof(ev));
        CHECK_EQ_STR(ev, "gVisor runsc 0.0~20221219.0, platform ptrace");
}

int main(void) {
        test_config();
        test_find();
        return test_done();
}
