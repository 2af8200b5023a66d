/* test-env-layer.c: the layer build's sandbox (env_layer_build_run), the very one a build's
 * downloads, dpkg-deb -x, npm install and its packages' scripts run in: it writes its build
 * directory and nothing else of the host, its network reaches only the package registries
 * through the proxy (which logs each connection), and nothing connects around the proxy. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "env-layer.h"
#include "fs-util.h"
#include "macro.h"
#include "test.h"

static char *read_fd(int fd) {
        static char buf[8192];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        buf[n > 0 ? n : 0] = '\0';
        return buf;
}

static void test_build_sandbox(void) {
        if (geteuid() != 0) {
                printf("skip - the build's sandbox: needs root\n");
                return;
        }
        char dir[] = "/tmp/hull-test-env-layer-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        char build[256], outside[256];
        snprintf(build, sizeof(build), "%s/build", dir);
        snprintf(outside, sizeof(outside), "%s/outside", dir);
        CHECK(mkdir(build, 0755) == 0);
        CHECK(chown(build, SBX_ROOT_HOST_UID, SBX_ROOT_HOST_UID) == 0);
        CHECK(chmod(dir, 0755) == 0);

        /* What a package's install script could try: its own directory, then the host. */
        char script[2048];
        snprintf(script, sizeof(script),
                 "echo inside > /workspace/made && echo wrote-workspace\n"
                 "for p in %s /usr/hull-escape /etc/hull-escape /var/tmp/hull-escape /root/hull-escape "
                 "/env/hull-escape /workspace/../hull-escape; do\n"
                 "  if ( echo x > \"$p\" ) 2>/dev/null; then echo \"WROTE $p\"; fi\n"
                 "done\n"
                 "echo proxy=$https_proxy\n"
                 "curl -sS -o /dev/null -w 'code=%%{http_code}\\n' http://example.com/ 2>&1 | tail -1\n"
                 "curl -sS --noproxy '*' --connect-timeout 3 -o /dev/null http://93.184.215.14/ >/dev/null 2>&1 "
                 "&& echo DIRECT-OK || echo direct-refused\n",
                 outside);
        int log = memfd_create("test-net-log", MFD_CLOEXEC);
        CHECK(log >= 0);
        sbx_result res = {0};
        hull_error e = {0};
        int r = env_layer_build_run(build, script, NULL, log, &res, &e);
        CHECK_EQ_INT(r, 0);
        if (r < 0) {
                printf("# %s\n", e.msg);
                return;
        }
        const char *out = res.out ? res.out : "";
        printf("# %s", out);
        CHECK(strstr(out, "wrote-workspace") != NULL);
        CHECK(strstr(out, "WROTE") == NULL);
        CHECK(strstr(out, "proxy=http://127.0.0.1:3128") != NULL);
        CHECK(strstr(out, "code=403") != NULL);
        CHECK(strstr(out, "direct-refused") != NULL);
        struct stat st;
        char made[300];
        snprintf(made, sizeof(made), "%s/made", build);
        CHECK(stat(made, &st) == 0 && st.st_uid == SBX_ROOT_HOST_UID);
        CHECK(stat(outside, &st) < 0 && errno == ENOENT);
        CHECK(stat("/etc/hull-escape", &st) < 0 && stat("/var/tmp/hull-escape", &st) < 0);
        const char *lines = read_fd(log);
        printf("# %s", lines);
        CHECK(strstr(lines, "net refused HTTP example.com:80") != NULL);
        CHECK(strstr(lines, "reason=not on the allowed hosts") != NULL);
        sbx_result_done(&res);
        close(log);
        _cleanup_close_ int dfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(rm_rf_at(dfd, dir + strlen("/tmp/")) >= 0);
}

int main(void) {
        test_build_sandbox();
        return test_done();
}
