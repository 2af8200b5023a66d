/* env-layer.c: building, checking and collecting layers (see env-layer.h). The steps are small
 * shell scripts run by the sandbox engine: the build's resolution on the host in the process
 * tier (apt reads the host's lists; no network), its downloads and installs in the container
 * tier with networking limited to the host's package registries (env_layer_build_run), the
 * preflight in the container tier with the layer at /env. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynbuf.h"
#include "env-layer.h"
#include "fs-util.h"
#include "home.h"
#include "macro.h"
#include "sbx-net.h"
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

/* The build's first half, on the host in the process tier (no network needed): apt resolves the
 * packages against the host's sources and lists and prints the URI, size and SHA-256 of each
 * .deb the host lacks (meta/apt-uris); a package the host has gets dpkg-query's file list.
 * HULL_APT, HULL_NPM and HULL_PIP hold the package specs (checked by env-spec: no spaces, none
 * starting with '-'). A failing step prints "hull-env-step: MANAGER: what". */
static const char resolve_script[] =
        "set -u\n"
        "mkdir -p meta\n"
        "fail() { echo \"hull-env-step: $1\" >&2; exit 3; }\n"
        "if [ -n \"$HULL_APT\" ]; then\n"
        "  command -v apt-get >/dev/null || fail 'apt: apt-get is not installed on the host'\n"
        "  mkdir -p .apt/archives/partial\n"
        "  apt-get -qq -y --no-install-recommends -o Debug::NoLocking=1 -o Acquire::ForceHash=SHA256 \\\n"
        "    -o Dir::Cache=\"$PWD/.apt\" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= \\\n"
        "    --print-uris install $HULL_APT > meta/apt-uris || fail 'apt: apt-get could not resolve the packages'\n"
        "  rm -rf .apt\n"
        "  for s in $HULL_APT; do\n"
        "    p=${s%%=*}\n"
        "    grep -q \"/${p}_[^/]*\\.deb'\" meta/apt-uris && continue\n"
        "    dpkg-query -L \"$p\" > \"meta/apt-$p.list\" 2>/dev/null || fail \"apt: $p is neither to be downloaded nor "
        "installed on the host\"\n"
        "  done\n"
        "fi\n";

/* The second half, in a container sandbox whose network is limited to the host's package
 * registries (sbx-net.h), with the build directory at /workspace: each .deb downloaded through
 * the proxy, checked against the SHA-256 of the signed package lists and unpacked with dpkg-deb
 * -x (no maintainer script runs); npm install --prefix; pip install --target (Debian 12's pip
 * 23.0.1 skips PEP 668's externally-managed check for --target, as for --prefix and --root: it
 * installs into no Python's own site-packages, so no --break-system-packages is needed or given).
 * pip reads the host's index settings from PIP_INDEX_URL, PIP_EXTRA_INDEX_URL and
 * PIP_TRUSTED_HOST (script_env_make). */
static const char build_script[] =
        "set -u\n"
        "cd /workspace\n"
        "mkdir -p root meta\n"
        "fail() { echo \"hull-env-step: $1\" >&2; exit 3; }\n"
        "if [ -s meta/apt-uris ]; then\n"
        "  mkdir -p .debs\n"
        "  while read -r uri file size hash; do\n"
        "    uri=${uri#\\'}; uri=${uri%\\'}\n"
        "    case $file in */*|.*|'') fail \"apt: a strange file name from apt: $file\";; esac\n"
        "    if command -v curl >/dev/null; then\n"
        "      curl -fsS --retry 2 -o \".debs/$file\" \"$uri\" >&2 || fail \"apt: cannot download $uri\"\n"
        "    else\n"
        "      python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' "
        "\"$uri\" \".debs/$file\" >&2 || fail \"apt: cannot download $uri\"\n"
        "    fi\n"
        "    case $hash in\n"
        "      SHA256:*) echo \"${hash#SHA256:}  .debs/$file\" | sha256sum -c --quiet - >&2 || fail \"apt: $file does "
        "not match the SHA-256 of the package lists\";;\n"
        "      *) fail \"apt: no SHA-256 for $file\";;\n"
        "    esac\n"
        "    dpkg-deb -x \".debs/$file\" root || fail \"apt: dpkg-deb cannot unpack $file\"\n"
        "    p=$(dpkg-deb -f \".debs/$file\" Package) || fail \"apt: dpkg-deb cannot read $file\"\n"
        "    dpkg-deb -c \".debs/$file\" | awk '{print $6}' | sed 's|^\\.||' > \"meta/apt-$p.list\"\n"
        "    rm -f \".debs/$file\"\n"
        "  done < meta/apt-uris\n"
        "  rm -rf .debs\n"
        "fi\n"
        "for s in $HULL_APT; do\n"
        "  p=${s%%=*}\n"
        "  [ -e \"meta/apt-$p.list\" ] || fail \"apt: $p was not among the downloaded packages\"\n"
        "done\n"
        "if [ -n \"$HULL_NPM\" ]; then\n"
        "  command -v npm >/dev/null || fail 'npm: npm is not installed on the host'\n"
        "  mkdir -p npm\n"
        "  npm_config_cache=/workspace/.npm-cache npm install --prefix /workspace/npm --no-audit --no-fund "
        "--no-update-notifier --no-package-lock --omit=dev $HULL_NPM >&2 || fail 'npm: npm install failed'\n"
        "  rm -rf .npm-cache npm/package.json\n"
        "fi\n"
        "if [ -n \"$HULL_PIP\" ]; then\n"
        "  python3 -m pip --version >/dev/null 2>&1 || fail 'pip: python3 -m pip is not installed on the host "
        "(apt-get install python3-pip)'\n"
        "  python3 -m pip install --disable-pip-version-check --no-input --no-cache-dir --timeout 15 --retries 0 "
        "--target /workspace/pip $HULL_PIP >&2 || fail 'pip: pip install failed (is the package on "
        "the index, PyPI or the index-url of pip.conf, and the index reachable from this host?)'\n"
        "fi\n";

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

/* The package variables, and for a build the settings apt, npm and pip need that the sandbox's
 * own proxy variables do not give: the CA bundle of a TLS-inspecting network, a registry. pip's
 * index settings are the host's own (its environment, else its HOME's or /etc's pip.conf, as
 * sbx_net_pip_setting reads them, the registries the build's proxy allows): the sandbox sees
 * neither the host's environment nor its HOME. */
static int script_env_make(const env_spec *s, bool build, script_env *se) {
        static const char *const pass[] = {"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "npm_config_registry"};
        static const char *const pip[][2] = {{"index-url", "PIP_INDEX_URL="},
                                             {"extra-index-url", "PIP_EXTRA_INDEX_URL="},
                                             {"trusted-host", "PIP_TRUSTED_HOST="}};
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
        for (size_t i = 0; build && s->n_pkgs[ENV_PM_PIP] > 0 && i < ELEMENTSOF(pip); i++) {
                char kv[SBX_ENV_ENTRY_MAX];
                size_t l = strlen(pip[i][1]);
                memcpy(kv, pip[i][1], l);
                if ((r = sbx_net_pip_setting(pip[i][0], kv + l, sizeof(kv) - l)) < 0)
                        return r;
                if (r > 0 && (r = script_env_add(se, kv)) < 0)
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

/* The resolution, on the host in the process tier with the build directory as its working
 * directory: it only reads the host's apt configuration and lists (no network). */
static int run_resolve(const char *dir, char *const *env, sbx_result *ret, hull_error *e) {
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) resolve_script, NULL};
        sbx_spec spec = {
                .tier = SBX_TIER_PROCESS,
                .argv = argv,
                .env = env,
                .workdir = dir,
                .timeout_ms = ENV_BUILD_TIMEOUT_MS,
                .output_bytes = ENV_BUILD_OUTPUT_BYTES,
                .cancel_fd = -1,
        };
        return sbx_run(&spec, ret, e);
}

int env_layer_build_run(const char *dir, const char *script, char *const *env, int log_fd, sbx_result *ret,
                        hull_error *e) {
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) script, NULL};
        sbx_net_policy policy = {.allow_package_managers = true, .pin_package_hosts = true, .log_fd = log_fd};
        sbx_spec spec = {
                .tier = SBX_TIER_CONTAINER,
                .argv = argv,
                .env = env,
                .workdir = dir,
                .timeout_ms = ENV_BUILD_TIMEOUT_MS,
                .output_bytes = ENV_BUILD_OUTPUT_BYTES,
                .tmp_bytes = ENV_BUILD_TMP_BYTES,
                .cancel_fd = -1,
                .net = SBX_NET_LIMITED,
                .net_policy = &policy,
        };
        hull_error why = {0};
        int r = sbx_run(&spec, ret, &why);
        if (r < 0)
                /* Never the process tier instead: a build runs the packages' own scripts. */
                return hull_fail(e, r,
                                 "env: a layer is built only in a container sandbox with networking limited to the "
                                 "package registries, and that sandbox cannot start here: %s",
                                 why.msg);
        return 0;
}

/* chown every file below dir (and dir), never following a link. */
static int lchown_tree_at(int dfd, const char *name, uid_t uid, gid_t gid, unsigned depth) {
        struct stat st;
        if (depth > FS_RM_DEPTH_MAX)
                return -ELOOP;
        if (fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        if (!S_ISDIR(st.st_mode))
                return 0;
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        DIR *d = fdopendir(fd);
        if (!d) {
                int r = negative_errno();
                close(fd);
                return r;
        }
        int r = 0;
        for (struct dirent *de; r >= 0 && (de = readdir(d));)
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        r = lchown_tree_at(dirfd(d), de->d_name, uid, gid, depth + 1);
        closedir(d);
        return r;
}

static int lchown_tree(const char *dir, uid_t uid, gid_t gid) {
        int r = lchown_tree_at(AT_FDCWD, dir, uid, gid, 0);
        if (r < 0)
                errno = -r;
        return r;
}

/* Open and flock(LOCK_EX) the lock file at path, again if gc removed it meanwhile (the file we
 * hold must still be the one at the path, or two builds could hold two files). */
static int lock_digest(const char *path, int *ret, hull_error *e) {
        for (unsigned tries = 0; tries < 64; tries++) {
                _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
                struct stat a, b;
                if (fd < 0)
                        return hull_err(e, negative_errno(), "env: cannot open the lock %s", path);
                if (flock(fd, LOCK_EX) < 0)
                        return hull_err(e, negative_errno(), "env: cannot lock %s", path);
                if (fstat(fd, &a) < 0)
                        return hull_err(e, negative_errno(), "env: cannot stat the lock %s", path);
                if (stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
                        *ret = TAKE_FD(fd);
                        return 0;
                }
        }
        return hull_fail(e, -EBUSY, "env: the lock %s keeps being removed", path);
}

/* The memfd log (from its start) into a new file path. */
static int copy_log(int fd, const char *path) {
        char buf[16384];
        _cleanup_close_ int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (out < 0)
                return negative_errno();
        for (off_t off = 0;;) {
                ssize_t n = pread(fd, buf, sizeof(buf), off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        return 0;
                int r = loop_write(out, buf, (size_t) n);
                if (r < 0)
                        return r;
                off += n;
        }
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
        _cleanup_close_ int lfd = -1;
        if ((r = lock_digest(lock, &lfd, e)) < 0)
                return r;
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
                if (r == -E2BIG)
                        return hull_err_hint(e, r, "shorten it in pip.conf or the PIP_ variable",
                                             "env: pip's index-url, extra-index-url or trusted-host is longer than %u "
                                             "bytes",
                                             SBX_ENV_ENTRY_MAX - 32);
                return hull_err(e, r, "env: cannot build the build's environment");
        }
        /* Resolve on the host, fetch and unpack in a sandbox limited to the registries, then give
         * the files back to root (as root the sandbox user is SBX_ROOT_HOST_UID on the host). */
        bool root = geteuid() == 0;
        sbx_result res = {0};
        /* The proxy's log of the build's connections: kept outside the build directory (the
         * sandbox writes there) and copied into meta/net.log afterwards. */
        _cleanup_close_ int net_log = memfd_create("hull-env-net-log", MFD_CLOEXEC);
        if (net_log < 0) {
                r = hull_err(e, negative_errno(), "env: cannot make the build's network log");
                (void) rm_rf_at(dfd, tmp_name);
                return r;
        }
        r = run_resolve(tmp, se.v, &res, e);
        if (r >= 0 && res.exited && res.exit_code == 0) {
                sbx_result_done(&res);
                res = (sbx_result){0};
                if (root && lchown_tree(tmp, SBX_ROOT_HOST_UID, SBX_ROOT_HOST_UID) < 0)
                        r = hull_err(e, negative_errno(), "env: cannot hand %s to the sandbox user", tmp);
                else
                        r = env_layer_build_run(tmp, build_script, se.v, net_log, &res, e);
        }
        if (r >= 0 && root && lchown_tree(tmp, 0, 0) < 0)
                r = hull_err(e, negative_errno(), "env: cannot give %s back to root", tmp);
        if (r < 0) {
                sbx_result_done(&res);
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
        if (r >= 0 && (size_t) snprintf(p, sizeof(p), "%s/meta/net.log", tmp) < sizeof(p))
                r = copy_log(net_log, p);
        if (r < 0) {
                (void) rm_rf_at(dfd, tmp_name);
                return hull_err(e, r, "env: cannot write the layer's meta/spec.json, build.log and net.log");
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
                bool build = strncmp(digest, ".build-", 7) == 0, lock_only = strncmp(digest, ".lock-", 6) == 0;
                if (build)
                        digest += 7;
                else if (lock_only)
                        digest += 6;
                char name[SBX_NAME_MAX];
                snprintf(name, sizeof(name), "%.64s", digest);
                if (!is_digest(name) || (!build && strlen(digest) != 64))
                        continue;
                bool kept = false;
                for (size_t i = 0; i < n_keep && !kept; i++)
                        kept = strcmp(keep[i], name) == 0;
                if (kept && !build && !lock_only)
                        continue;
                if (lock_only && env_layer_exists(home, name))
                        continue; /* goes with its layer (below), or stays with it */
                /* Under the digest's lock: never under a build that is running. A lock file is
                 * opened, never made, here: a build re-checks that its locked file is still the
                 * one at the path (lock_digest). */
                char lock[SBX_PATH_MAX];
                if ((size_t) snprintf(lock, sizeof(lock), "%s/.lock-%s", dir, name) >= sizeof(lock))
                        continue;
                _cleanup_close_ int lfd = open(lock, O_RDWR | (lock_only ? 0 : O_CREAT) | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (lfd < 0 || flock(lfd, LOCK_EX | LOCK_NB) < 0)
                        continue;
                if (lock_only) {
                        /* A build that failed or was killed left it; no layer, no build now. */
                        (void) unlinkat(dfd, de->d_name, 0);
                        continue;
                }
                if ((r = rm_rf_at(dfd, de->d_name)) < 0) {
                        r = hull_err(e, r, "env: cannot remove %s/%s", dir, de->d_name);
                        break;
                }
                if (!build) {
                        removed++;
                        (void) unlinkat(dfd, lock + strlen(dir) + 1, 0);
                } else if (!env_layer_exists(home, name))
                        (void) unlinkat(dfd, lock + strlen(dir) + 1, 0);
        }
        closedir(d);
        if (r < 0)
                return r;
        if (ret_removed)
                *ret_removed = removed;
        return 0;
}
