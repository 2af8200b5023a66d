/* test-env-layer.c: the layer build's sandbox (env_layer_build_run), the very one a build's
 * downloads, dpkg-deb -x, npm install and its packages' scripts run in: it writes its build
 * directory and nothing else of the host, its network reaches only the package registries
 * through the proxy (which logs each connection), and nothing connects around the proxy. A pip
 * build's pip uses the index, extra index and trusted host of hull's HOME pip.conf (which the
 * sandbox does not see), reaching the index (an address of this host's own) through the proxy. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "env-layer.h"
#include "env-spec.h"
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

/* An IPv4 address of this host that is not loopback or link-local (what a registry may be), with
 * a port nothing listens on; false when there is none. */
static bool closed_host_port(char addr[INET_ADDRSTRLEN], unsigned *port) {
        struct ifaddrs *ifa = NULL;
        bool found = false;
        if (getifaddrs(&ifa) < 0)
                return false;
        for (struct ifaddrs *i = ifa; i && !found; i = i->ifa_next) {
                if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK) ||
                    !(i->ifa_flags & IFF_UP))
                        continue;
                struct sockaddr_in sa = *(struct sockaddr_in *) i->ifa_addr;
                const uint8_t *b = (const uint8_t *) &sa.sin_addr;
                if (b[0] == 127 || (b[0] == 169 && b[1] == 254))
                        continue;
                sa.sin_port = 0;
                socklen_t sl = sizeof(sa);
                int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd >= 0 && bind(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0 &&
                    getsockname(fd, (struct sockaddr *) &sa, &sl) == 0) {
                        *port = ntohs(sa.sin_port);
                        found = inet_ntop(AF_INET, &sa.sin_addr, addr, INET_ADDRSTRLEN) != NULL;
                }
                if (fd >= 0)
                        close(fd); /* never listened: connections to the port are refused */
        }
        freeifaddrs(ifa);
        return found;
}

static void test_pip_settings(void) {
        char addr[INET_ADDRSTRLEN];
        unsigned port = 0;
        if (geteuid() != 0 || !closed_host_port(addr, &port)) {
                printf("skip - a pip build's index settings: needs root and a non-loopback IPv4 address\n");
                return;
        }
        char dir[] = "/tmp/hull-test-env-pip-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        CHECK(chmod(dir, 0711) == 0);
        char p[256], conf[512];
        snprintf(p, sizeof(p), "%s/.config", dir);
        CHECK(mkdir(p, 0700) == 0);
        snprintf(p, sizeof(p), "%s/.config/pip", dir);
        CHECK(mkdir(p, 0700) == 0);
        snprintf(p, sizeof(p), "%s/.config/pip/pip.conf", dir);
        snprintf(conf, sizeof(conf),
                 "[global]\nindex-url = http://%s:%u/simple\nextra-index-url =\n  http://%s:%u/extra\n"
                 "trusted-host = %s\n",
                 addr, port, addr, port, addr);
        FILE *f = fopen(p, "w");
        CHECK(f != NULL);
        if (f) {
                fputs(conf, f);
                fclose(f);
        }
        const char *old_home = getenv("HOME");
        _cleanup_free_ char *saved_home = old_home ? strdup(old_home) : NULL;
        setenv("HOME", dir, 1);
        unsetenv("PIP_INDEX_URL");
        unsetenv("PIP_EXTRA_INDEX_URL");
        unsetenv("PIP_TRUSTED_HOST");

        env_spec s = {0};
        hull_error e = {0};
        const char *spec = "{\"packages\": {\"pip\": [\"hull-no-such-package==1.0\"]}}";
        CHECK_EQ_INT(env_spec_parse(spec, strlen(spec), &s, &e), 0);
        env_build_info info = {0};
        int r = env_layer_build(dir, &s, &info, &e);
        printf("# %s\n# %s\n", e.msg, info.log);
        CHECK(r < 0);
        TEST_RESULT(strstr(e.msg, "pip install failed") != NULL, "the build fails at pip install");
        char want[256];
        snprintf(want, sizeof(want), "Looking in indexes: http://%s:%u/simple, http://%s:%u/extra", addr, port, addr,
                 port);
        TEST_RESULT(strstr(info.log, want) != NULL, "the sandbox's pip uses HOME's index-url and extra-index-url");
        TEST_RESULT(strstr(info.log, "not a trusted or secure host") == NULL,
                    "... and its trusted-host (no warning about plain http)");
        char digest[ENV_DIGEST_HEX];
        CHECK_EQ_INT(env_layer_digest(&s, digest, &e), 0);
        TEST_RESULT(!env_layer_exists(dir, digest), "a failed build leaves no layer");
        env_spec_done(&s);

        if (saved_home)
                setenv("HOME", saved_home, 1);
        else
                unsetenv("HOME");
        _cleanup_close_ int dfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(rm_rf_at(dfd, dir + strlen("/tmp/")) >= 0);
}

int main(void) {
        test_build_sandbox();
        test_pip_settings();
        return test_done();
}
