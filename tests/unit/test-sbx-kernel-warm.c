/* test-sbx-kernel-warm.c: the kernel tier's warm-start templates (sbx-kernel-warm.c): the key
 * changes with what a restore must match (the environment, the layer and its identity, the
 * mounts, the limits inside, runsc) and only with that; warm starts are off without a template
 * directory, with a network, and with HULL_KERNEL_WARM=0; a template is ready only once
 * published whole, and a second publication keeps the first. Runs no runsc. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "limits.h"
#include "macro.h"
#include "sbx-kernel.h"
#include "test.h"

static char tmpl[SBX_PATH_MAX];

static void key_of(const sbx_session_spec *spec, const sbx_oci_runtime *rt, char *dir, size_t size) {
        sbx_kernel_warm w;
        int r = sbx_kernel_warm_locate(spec, rt, &w);
        TEST_RESULT(r == 0, "locate: %d", r);
        snprintf(dir, size, "%s", r == 0 ? w.dir : "");
}

static void test_key(void) {
        sbx_oci_runtime rt = {.path = "/usr/bin/runsc", .platform = "ptrace"};
        char layer[SBX_PATH_MAX], a[SBX_PATH_MAX], b[SBX_PATH_MAX];
        char *env1[] = {(char *) "A=1", NULL}, *env2[] = {(char *) "A=2", NULL};
        CHECK(path_join(layer, sizeof(layer), tmpl, "layer") == 0);
        CHECK(mkdir(layer, 0755) == 0);
        sbx_session_spec s = {.template_dir = tmpl, .pids = 64, .tmp_bytes = 1 << 20};
        key_of(&s, &rt, a, sizeof(a));
        CHECK(strncmp(a, tmpl, strlen(tmpl)) == 0 && strstr(a, "/kernel-warm-") != NULL);
        key_of(&s, &rt, b, sizeof(b));
        CHECK_EQ_STR(a, b); /* the same shape: the same template */
        s.handles_dir = "/elsewhere/one";
        key_of(&s, &rt, a, sizeof(a));
        s.handles_dir = "/elsewhere/two"; /* each session's own store: restored, not keyed */
        key_of(&s, &rt, b, sizeof(b));
        CHECK_EQ_STR(a, b);
        s.env = env1;
        key_of(&s, &rt, b, sizeof(b));
        CHECK(strcmp(a, b) != 0); /* an environment */
        s.env = env2;
        key_of(&s, &rt, a, sizeof(a));
        CHECK(strcmp(a, b) != 0); /* another environment */
        s.layer_dir = layer;
        key_of(&s, &rt, b, sizeof(b));
        CHECK(strcmp(a, b) != 0); /* a layer */
        usleep(20000);
        char f[SBX_PATH_MAX];
        CHECK(path_join(f, sizeof(f), layer, "new") == 0);
        int fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        CHECK(fd >= 0);
        safe_close(fd);
        key_of(&s, &rt, a, sizeof(a));
        CHECK(strcmp(a, b) != 0); /* the layer changed */
        s.pids = 65;
        key_of(&s, &rt, b, sizeof(b));
        CHECK(strcmp(a, b) != 0); /* RLIMIT_NPROC inside */
        snprintf(rt.platform, sizeof(rt.platform), "kvm");
        key_of(&s, &rt, a, sizeof(a));
        CHECK(strcmp(a, b) != 0); /* runsc's platform */

        sbx_kernel_warm w;
        s.net = SBX_NET_LIMITED;
        CHECK(sbx_kernel_warm_locate(&s, &rt, &w) == -ENOENT);
        s.net = SBX_NET_NONE;
        setenv("HULL_KERNEL_WARM", "0", 1);
        CHECK(sbx_kernel_warm_locate(&s, &rt, &w) == -ENOENT);
        unsetenv("HULL_KERNEL_WARM");
        s.template_dir = NULL;
        CHECK(sbx_kernel_warm_locate(&s, &rt, &w) == -ENOENT);
        s.layer_dir = "/nonexistent/layer";
        s.template_dir = tmpl;
        CHECK(sbx_kernel_warm_locate(&s, &rt, &w) == -ENOENT);
}

static void test_publish(void) {
        sbx_oci_runtime rt = {.path = "/usr/bin/runsc", .platform = "ptrace"};
        sbx_session_spec s = {.template_dir = tmpl};
        sbx_kernel_warm w, w2;
        char stage[SBX_PATH_MAX], img[SBX_PATH_MAX];
        CHECK(sbx_kernel_warm_locate(&s, &rt, &w) == 0);
        CHECK(!sbx_kernel_warm_ready(&w));
        CHECK(sbx_kernel_warm_stage(&w, stage, sizeof(stage)) == 0);
        CHECK(path_join(img, sizeof(img), stage, "image") == 0);
        CHECK(mkdir(img, 0700) == 0);
        CHECK(!sbx_kernel_warm_ready(&w)); /* staged is not published */
        CHECK(sbx_kernel_warm_publish(&w, stage, 42) == 0);
        CHECK(sbx_kernel_warm_locate(&s, &rt, &w2) == 0);
        CHECK(sbx_kernel_warm_ready(&w2) && w2.pid == 42);
        /* a second shim that built the same template: the first one stays, its stage goes */
        CHECK(sbx_kernel_warm_stage(&w, stage, sizeof(stage)) == 0);
        CHECK(path_join(img, sizeof(img), stage, "image") == 0);
        CHECK(mkdir(img, 0700) == 0);
        CHECK(sbx_kernel_warm_publish(&w, stage, 43) < 0);
        CHECK(access(stage, F_OK) < 0);
        CHECK(sbx_kernel_warm_ready(&w2) && w2.pid == 42);
}

int main(void) {
        snprintf(tmpl, sizeof(tmpl), "%s/test-kernel-warm.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(tmpl))
                return 1;
        test_key();
        test_publish();
        (void) rm_rf_at(AT_FDCWD, tmpl);
        return test_done();
}
