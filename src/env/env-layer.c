/* env-layer.c: building, checking and collecting layers (see env-layer.h). The steps are small
 * shell scripts run by the sandbox engine: the build in the process tier (apt and npm reach the
 * registries the host is configured for; the container tier has no network until the limited
 * mode of issue 13 lands), the preflight in the container tier with the layer at /env. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynbuf.h"
#include "env-layer.h"
#include "fs-util.h"
#include "home.h"
#include "macro.h"
#include "sbx.h"
#include "sha256.h"

#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#else
#define MULTIARCH "unknown-linux-gnu"
#endif

#define L ENV_LAYER_MOUNT
static char *const sandbox_env[] = {
        (char *) "PATH=" L "/root/usr/local/bin:" L "/root/usr/bin:" L "/root/bin:" L "/root/usr/sbin:" L
                 "/root/sbin:" L "/root/usr/games:" L
                 "/npm/node_modules/.bin:/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin:/usr/games",
        (char *) "LD_LIBRARY_PATH=" L "/root/usr/lib/" MULTIARCH ":" L "/root/lib/" MULTIARCH ":" L "/root/usr/lib",
        (char *) "NODE_PATH=" L "/npm/node_modules",
        (char *) "PYTHONPATH=" L "/pip:" L "/root/usr/lib/python3/dist-packages",
        NULL,
};
#undef L

char *const *env_layer_sandbox_env(void) {
        return sandbox_env;
}

/* The build, run with the layer's build directory as its working directory. HULL_APT, HULL_NPM
 * and HULL_PIP hold the package specs (checked by env-spec: no spaces, no shell characters
 * that matter unquoted, none starting with '-'). Each step says which manager failed. */
static const char build_script[] =
        "set -u\n"
        "mkdir -p root meta\n"
        "fail() { echo \"hull-env-step: $1\" >&2; exit 3; }\n"
        "if [ -n \"$HULL_APT\" ]; then\n"
        "  command -v apt-get >/dev/null || fail 'apt: apt-get is not installed on the host'\n"
        "  mkdir -p .apt/archives/partial\n"
        "  apt-get -q -y --no-install-recommends -o Debug::NoLocking=1 -o APT::Sandbox::User=root \\\n"
        "    -o Dir::Cache=\"$PWD/.apt\" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= \\\n"
        "    install --download-only $HULL_APT >&2 || fail 'apt: apt-get could not resolve or download the packages'\n"
        "  for d in .apt/archives/*.deb; do\n"
        "    [ -e \"$d\" ] || continue\n"
        "    dpkg-deb -x \"$d\" root || fail \"apt: dpkg-deb cannot unpack $d\"\n"
        "    p=$(dpkg-deb -f \"$d\" Package) || fail \"apt: dpkg-deb cannot read $d\"\n"
        "    dpkg-deb -c \"$d\" | awk '{print $6}' | sed 's|^\\.||' > \"meta/apt-$p.list\"\n"
        "  done\n"
        "  rm -rf .apt\n"
        "  for s in $HULL_APT; do\n"
        "    p=${s%%=*}\n"
        "    [ -e \"meta/apt-$p.list\" ] && continue\n"
        "    dpkg-query -L \"$p\" > \"meta/apt-$p.list\" 2>/dev/null || fail \"apt: $p was neither downloaded nor is "
        "it installed on the host\"\n"
        "  done\n"
        "fi\n"
        "if [ -n \"$HULL_NPM\" ]; then\n"
        "  command -v npm >/dev/null || fail 'npm: npm is not installed on the host'\n"
        "  mkdir -p npm\n"
        "  npm_config_cache=\"$PWD/.npm-cache\" npm install --prefix \"$PWD/npm\" --no-audit --no-fund "
        "--no-update-notifier --no-package-lock --omit=dev $HULL_NPM >&2 || fail 'npm: npm install failed'\n"
        "  rm -rf .npm-cache npm/package.json\n"
        "fi\n"
        "if [ -n \"$HULL_PIP\" ]; then\n"
        "  python3 -m pip --version >/dev/null 2>&1 || fail 'pip: python3 -m pip is not installed on the host'\n"
        "  python3 -m pip install --disable-pip-version-check --no-input --timeout 15 --retries 0 "
        "--target \"$PWD/pip\" $HULL_PIP >&2 || fail 'pip: pip install failed (is PyPI reachable from this host?)'\n"
        "fi\n"
        "rm -rf .home\n";

/* The preflight, in the container tier with the layer at /env. HULL_APT, HULL_NPM and HULL_PIP
 * hold the package names. One line per package. */
static const char check_script[] =
        "fail=0\n"
        "for p in $HULL_APT; do\n"
        "  lst=/env/meta/apt-$p.list\n"
        "  if [ ! -r \"$lst\" ]; then echo \"FAILED apt $p: the layer has no list of its files (build it "
        "again)\"; fail=1; continue; fi\n"
        "  progs=$(grep -E '^/(usr/)?(s?bin|games)/[^/]+$' \"$lst\" | sed 's|.*/||')\n"
        "  bad=''\n"
        "  for b in $progs; do\n"
        "    w=$(command -v \"$b\") || { bad=\"$bad $b: not on PATH;\"; continue; }\n"
        "    if ldd \"$w\" 2>/dev/null | grep -q 'not found'; then bad=\"$bad $b: $(ldd \"$w\" | grep 'not found' "
        "| head -1 | sed 's/^[[:space:]]*//');\"; fi\n"
        "  done\n"
        "  if [ -z \"$progs\" ]; then\n"
        "    m=$(grep -E '^/usr/lib/python3/dist-packages/[A-Za-z0-9_]+/__init__\\.py$' \"$lst\" | head -1 | sed "
        "'s|/usr/lib/python3/dist-packages/||; s|/__init__.py||')\n"
        "    if [ -n \"$m\" ]; then python3 -c \"import $m\" 2>/dev/null || bad=\"python module $m does not "
        "import\"; fi\n"
        "  fi\n"
        "  if [ -n \"$bad\" ]; then echo \"FAILED apt $p:$bad\"; fail=1; else echo \"ok apt $p${progs:+ (}$(echo "
        "$progs | tr '\\n' ' ' | sed 's/ $//')${progs:+)}\"; fi\n"
        "done\n"
        "for p in $HULL_NPM; do\n"
        "  if out=$(node -e 'const n=process.argv[1];try{require(n)}catch(e){if(e.code===\"ERR_REQUIRE_ESM\")"
        "process.exit(0);console.log(String(e.message).split(\"\\n\")[0]);process.exit(1)}' \"$p\" 2>&1); then echo "
        "\"ok npm $p\"; else echo \"FAILED npm $p: require('$p') fails: $out\"; fail=1; fi\n"
        "done\n"
        "for p in $HULL_PIP; do\n"
        "  m=$(echo \"$p\" | tr 'A-Z-' 'a-z_')\n"
        "  for t in /env/pip/*.dist-info; do n=$(sed -n 's/^Name: //p' \"$t/METADATA\" 2>/dev/null | tr 'A-Z-' "
        "'a-z_'); [ \"$n\" = \"$m\" ] && [ -r \"$t/top_level.txt\" ] && m=$(head -1 \"$t/top_level.txt\"); done\n"
        "  if out=$(python3 -c \"import $m\" 2>&1); then echo \"ok pip $p\"; else echo \"FAILED pip $p: import $m "
        "fails: $(echo \"$out\" | tail -1)\"; fail=1; fi\n"
        "done\n"
        "exit $fail\n";

int env_layer_digest(const env_spec *s, char ret[ENV_DIGEST_HEX], hull_error *e) {
        _cleanup_free_ char *canon = NULL;
        if (env_spec_packages_canonical(s, &canon) < 0)
                return hull_err(e, -ENOMEM, "env: out of memory");
        int r = sha256_hex(canon, strlen(canon), ret);
        if (r < 0)
                return hull_err(e, r, "env: cannot compute the layer's digest (libcrypto)");
        return 0;
}

int env_layer_path(const char *home, const char *digest, char ret[SBX_PATH_MAX], hull_error *e) {
        if ((size_t) snprintf(ret, SBX_PATH_MAX, "%s/layers/%s", home, digest) >= SBX_PATH_MAX)
                return hull_fail(e, -ENAMETOOLONG, "env: %.200s/layers: the path is too long", home);
        return 0;
}

bool env_layer_exists(const char *home, const char *digest) {
        char p[SBX_PATH_MAX];
        struct stat st;
        return env_layer_path(home, digest, p, NULL) >= 0 && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* "HULL_APT=a b c" (names only, or the whole specs) for a script's environment. */
static int pm_var(const env_spec *s, env_pm pm, bool names, char **ret) {
        static const char *const vars[_ENV_PM_MAX] = {"HULL_APT=", "HULL_NPM=", "HULL_PIP="};
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, SIZE_MAX / 2);
        if (dynbuf_add(&b, vars[pm], strlen(vars[pm])) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_pkgs[pm]; i++) {
                const char *v = names ? s->pkgs[pm][i].name : s->pkgs[pm][i].spec;
                if ((i > 0 && dynbuf_add(&b, " ", 1) < 0) || dynbuf_add(&b, v, strlen(v)) < 0)
                        return -ENOMEM;
        }
        if (dynbuf_add(&b, "", 1) < 0)
                return -ENOMEM;
        *ret = dynbuf_take(&b, NULL);
        return *ret ? 0 : -ENOMEM;
}

typedef struct script_env {
        char *v[_ENV_PM_MAX + 16];
        size_t n;
} script_env;

static void script_env_done(script_env *se) {
        for (size_t i = 0; i < se->n; i++)
                free(se->v[i]);
        se->n = 0;
}

static int script_env_add(script_env *se, const char *kv) {
        if (se->n + 1 >= ELEMENTSOF(se->v))
                return -E2BIG;
        char *c = strdup(kv);
        if (!c)
                return -ENOMEM;
        se->v[se->n++] = c;
        se->v[se->n] = NULL;
        return 0;
}

/* The package variables, and for a build the host's proxy and CA settings, which apt and npm
 * need to reach the registries the host is configured for. */
static int script_env_make(const env_spec *s, bool build, script_env *se) {
        static const char *const pass[] = {
                "http_proxy", "https_proxy",         "no_proxy",      "HTTP_PROXY",    "HTTPS_PROXY",
                "NO_PROXY",   "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "PIP_INDEX_URL", "npm_config_registry"};
        int r;
        for (int pm = 0; pm < _ENV_PM_MAX; pm++) {
                char *v;
                if ((r = pm_var(s, (env_pm) pm, !build, &v)) < 0)
                        return r;
                if (se->n + 1 >= ELEMENTSOF(se->v)) {
                        free(v);
                        return -E2BIG;
                }
                se->v[se->n++] = v;
                se->v[se->n] = NULL;
        }
        for (size_t i = 0; build && i < ELEMENTSOF(pass); i++) {
                const char *v = getenv(pass[i]);
                char kv[SBX_ENV_ENTRY_MAX];
                if (!v || (size_t) snprintf(kv, sizeof(kv), "%s=%s", pass[i], v) >= sizeof(kv))
                        continue;
                if ((r = script_env_add(se, kv)) < 0)
                        return r;
        }
        if (build) {
                /* npm and pip read their configuration (registry, CA) from the host user's files. */
                const char *home = getenv("HOME");
                char kv[SBX_ENV_ENTRY_MAX];
                if (home && (size_t) snprintf(kv, sizeof(kv), "npm_config_userconfig=%s/.npmrc", home) < sizeof(kv) &&
                    (r = script_env_add(se, kv)) < 0)
                        return r;
        }
        return 0;
}

/* The last lines of a step's stderr (at most size - 1 bytes) and the step it names. */
static void tail_of(const char *s, size_t len, char *ret, size_t size) {
        size_t from = len > size - 1 ? len - (size - 1) : 0;
        snprintf(ret, size, "%.*s", (int) (len - from), s + from);
}

static const char *failed_step(const char *err) {
        const char *m = err ? strstr(err, "hull-env-step: ") : NULL;
        return m ? m + strlen("hull-env-step: ") : NULL;
}

static int write_new(const char *path, const char *data, size_t len) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return negative_errno();
        return loop_write(fd, data, len);
}

static int layers_dir(const char *home, char ret[SBX_PATH_MAX], hull_error *e) {
        return home_dir(home, "layers", 0711, true, ret, e);
}

int env_layer_build(const char *home, const env_spec *s, env_build_info *ret, hull_error *e) {
        char digest[ENV_DIGEST_HEX], dir[SBX_PATH_MAX], final[SBX_PATH_MAX], tmp[SBX_PATH_MAX], lock[SBX_PATH_MAX];
        _cleanup_(script_env_done) script_env se = {0};
        env_build_info info = {0};
        int r;

        if ((r = env_layer_digest(s, digest, e)) < 0 || (r = layers_dir(home, dir, e)) < 0 ||
            (r = env_layer_path(home, digest, final, e)) < 0)
                return r;
        if ((size_t) snprintf(lock, sizeof(lock), "%s/.lock-%s", dir, digest) >= sizeof(lock) ||
            (size_t) snprintf(tmp, sizeof(tmp), "%s/.build-%s-%d", dir, digest, (int) getpid()) >= sizeof(tmp))
                return hull_fail(e, -ENAMETOOLONG, "env: %.200s: the path is too long", dir);
        _cleanup_close_ int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lfd < 0)
                return hull_err(e, negative_errno(), "env: cannot open the lock %s", lock);
        if (flock(lfd, LOCK_EX) < 0)
                return hull_err(e, negative_errno(), "env: cannot lock %s", lock);
        if (env_layer_exists(home, digest)) {
                *ret = info;
                return 0; /* made before, or by the build we waited for */
        }
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return hull_err(e, negative_errno(), "env: cannot open %s", dir);
        const char *tmp_name = strrchr(tmp, '/') + 1;
        (void) rm_rf_at(dfd, tmp_name); /* a build of a dead process with our pid */
        if (mkdir(tmp, 0755) < 0)
                return hull_err(e, negative_errno(), "env: cannot make %s", tmp);

        if ((r = script_env_make(s, true, &se)) < 0) {
                (void) rm_rf_at(dfd, tmp_name);
                return hull_err(e, r, "env: cannot build the build's environment");
        }
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) build_script, NULL};
        sbx_spec spec = {
                .tier = SBX_TIER_PROCESS,
                .argv = argv,
                .env = se.v,
                .workdir = tmp,
                .timeout_ms = ENV_BUILD_TIMEOUT_MS,
                .output_bytes = ENV_BUILD_OUTPUT_BYTES,
                .cancel_fd = -1,
        };
        sbx_result res = {0};
        r = sbx_run(&spec, &res, e);
        if (r < 0) {
                (void) rm_rf_at(dfd, tmp_name);
                return r;
        }
        if (!res.exited || res.exit_code != 0) {
                const char *step = failed_step(res.err);
                tail_of(res.err ? res.err : "", res.err_len, info.log, sizeof(info.log));
                if (res.timed_out)
                        r = hull_fail(e, -ETIMEDOUT, "env: the build of layer %.12s took over %" PRIu64 " s", digest,
                                      (uint64_t) ENV_BUILD_TIMEOUT_MS / 1000);
                else if (step)
                        r = hull_fail(e, -EIO, "env: %.*s", (int) strcspn(step, "\n"), step);
                else
                        r = hull_fail(e, -EIO, "env: the build of layer %.12s failed (status %d)", digest,
                                      sbx_result_exit_status(&res));
                sbx_result_done(&res);
                (void) rm_rf_at(dfd, tmp_name);
                *ret = info;
                return r;
        }
        /* What was built, for the preflight and for people. */
        _cleanup_free_ char *canon = NULL;
        char p[SBX_PATH_MAX];
        r = env_spec_packages_canonical(s, &canon);
        if (r >= 0 && (size_t) snprintf(p, sizeof(p), "%s/meta/spec.json", tmp) < sizeof(p))
                r = write_new(p, canon, strlen(canon));
        if (r >= 0 && (size_t) snprintf(p, sizeof(p), "%s/meta/build.log", tmp) < sizeof(p))
                r = write_new(p, res.err ? res.err : "", res.err_len);
        sbx_result_done(&res);
        if (r < 0) {
                (void) rm_rf_at(dfd, tmp_name);
                return hull_err(e, r, "env: cannot write the layer's meta/spec.json");
        }
        if (chmod(tmp, 0755) < 0 || rename(tmp, final) < 0) {
                r = hull_err(e, negative_errno(), "env: cannot move the layer into place at %s", final);
                (void) rm_rf_at(dfd, tmp_name);
                return r;
        }
        info.built = true;
        *ret = info;
        return 0;
}

int env_layer_check(const char *home, const env_spec *s, char **ret_report, bool *ret_ok, hull_error *e) {
        char digest[ENV_DIGEST_HEX], layer[SBX_PATH_MAX];
        _cleanup_(script_env_done) script_env se = {0};
        int r;
        if ((r = env_layer_digest(s, digest, e)) < 0 || (r = env_layer_path(home, digest, layer, e)) < 0)
                return r;
        if (!env_layer_exists(home, digest))
                return hull_fail(e, -ENOENT, "env: the layer %.12s is not built (run 'hull env build')", digest);
        if ((r = script_env_make(s, false, &se)) < 0)
                return hull_err(e, r, "env: cannot build the check's environment");
        for (char *const *v = env_layer_sandbox_env(); *v; v++)
                if ((r = script_env_add(&se, *v)) < 0)
                        return hull_err(e, r, "env: cannot build the check's environment");
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) check_script, NULL};
        sbx_spec spec = {
                .tier = SBX_TIER_CONTAINER,
                .argv = argv,
                .env = se.v,
                .layer_dir = layer,
                .timeout_ms = ENV_CHECK_TIMEOUT_MS,
                .output_bytes = ENV_BUILD_OUTPUT_BYTES,
                .tmp_bytes = 64ULL << 20,
                .cancel_fd = -1,
        };
        sbx_result res = {0};
        if ((r = sbx_run(&spec, &res, e)) < 0)
                return r;
        char *report = strndup(res.out ? res.out : "", res.out_len);
        bool ok = res.exited && res.exit_code == 0;
        if (!ok && res.exited && res.exit_code != 1) {
                char tail[1024];
                tail_of(res.err ? res.err : "", res.err_len, tail, sizeof(tail));
                r = hull_fail(e, -EIO, "env: the preflight did not run (status %d): %s", sbx_result_exit_status(&res),
                              tail);
                free(report);
                sbx_result_done(&res);
                return r;
        }
        sbx_result_done(&res);
        if (!report)
                return hull_err(e, -ENOMEM, "env: out of memory");
        *ret_report = report;
        *ret_ok = ok;
        return 0;
}

static bool is_digest(const char *s) {
        if (strlen(s) != 64)
                return false;
        for (size_t i = 0; i < 64; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

int env_layer_gc(const char *home, const char *const *keep, size_t n_keep, size_t *ret_removed, hull_error *e) {
        char dir[SBX_PATH_MAX];
        size_t removed = 0;
        int r = layers_dir(home, dir, e);
        if (r < 0)
                return r;
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return hull_err(e, negative_errno(), "env: cannot open %s", dir);
        DIR *d = opendir(dir);
        if (!d)
                return hull_err(e, negative_errno(), "env: cannot list %s", dir);
        for (struct dirent *de; (de = readdir(d));) {
                const char *digest = de->d_name;
                bool build = strncmp(digest, ".build-", 7) == 0;
                if (build)
                        digest += 7;
                char name[SBX_NAME_MAX];
                snprintf(name, sizeof(name), "%.64s", digest);
                if (!is_digest(name) || (!build && strlen(digest) != 64))
                        continue;
                bool kept = false;
                for (size_t i = 0; i < n_keep && !kept; i++)
                        kept = strcmp(keep[i], name) == 0;
                if (kept && !build)
                        continue;
                /* Under the digest's lock: never under a build that is running. */
                char lock[SBX_PATH_MAX];
                if ((size_t) snprintf(lock, sizeof(lock), "%s/.lock-%s", dir, name) >= sizeof(lock))
                        continue;
                _cleanup_close_ int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (lfd < 0 || flock(lfd, LOCK_EX | LOCK_NB) < 0)
                        continue;
                if ((r = rm_rf_at(dfd, de->d_name)) < 0) {
                        r = hull_err(e, r, "env: cannot remove %s/%s", dir, de->d_name);
                        break;
                }
                if (!build) {
                        removed++;
                        (void) unlinkat(dfd, lock + strlen(dir) + 1, 0);
                }
        }
        closedir(d);
        if (r < 0)
                return r;
        if (ret_removed)
                *ret_removed = removed;
        return 0;
}
