/* sbx-kernel-warm.c: the kernel tier's warm start (see sbx-kernel.h). A template per session
 * shape: a gVisor sandbox whose python imported numpy and pandas and waits for a handover
 * (runtime/cell.py's warm()), checkpointed once (`runsc checkpoint`) below the box owner's
 * template directory (hull serve's work root), then restored per session (`runsc restore` with
 * the session's own bundle: its own container id, state, cgroup, workspace and mounts). This
 * file owns the template's key and paths, the process file of the warm python and the handover's
 * message (the agent passes it on inside); the shim (sbx-kernel-session.c) drives runsc. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "parse-util.h"
#include "runtime-embed.h"
#include "sbx-internal.h"
#include "sbx-kernel.h"
#include "sha256.h"

#define WARM_SOCK "/tmp/.hull-warm"
#define WARM_PYTHON "/usr/bin/python3"

static int hash_str(sha256_ctx *c, const char *s) {
        return sha256_update(c, s ? s : "", s ? strlen(s) + 1 : 1);
}

static int hash_u64(sha256_ctx *c, uint64_t v) {
        return sha256_update(c, &v, sizeof(v));
}

int sbx_kernel_warm_locate(const sbx_session_spec *spec, const sbx_oci_runtime *rt, sbx_kernel_warm *ret) {
        const char *off = getenv("HULL_KERNEL_WARM");
        if (!spec->template_dir || spec->net != SBX_NET_NONE || (off && strcmp(off, "0") == 0))
                return -ENOENT;
        /* What the checkpoint holds or a restore must match: runsc, the limits inside, the list of
         * mounts, the layer (its identity: a changed layer is a new template), the environment
         * and the interpreter's sources. */
        _cleanup_sha256_ sha256_ctx c = {0};
        char hex[SHA256_HEX_SIZE];
        int r = sha256_init(&c);
        struct stat st = {0};
        if (spec->layer_dir && stat(spec->layer_dir, &st) < 0)
                return -errno;
        r = r < 0 ? r : hash_str(&c, "hull-kernel-warm 1");
        r = r < 0 ? r : hash_str(&c, rt->path);
        r = r < 0 ? r : hash_str(&c, rt->platform);
        r = r < 0 ? r : hash_u64(&c, spec->pids ? spec->pids : SERVE_SESSION_PIDS);
        r = r < 0 ? r : hash_u64(&c, spec->tmp_bytes ? spec->tmp_bytes : SBX_DEFAULT_TMP_BYTES);
        r = r < 0 ? r
                  : hash_u64(&c, (spec->handles_dir ? 1U : 0U) | (spec->layer_dir ? 2U : 0U) |
                                         (spec->skills_dir ? 4U : 0U) | (spec->mnt_dir ? 8U : 0U));
        r = r < 0 ? r : hash_str(&c, spec->layer_dir);
        r = r < 0 ? r : hash_u64(&c, (uint64_t) st.st_dev);
        r = r < 0 ? r : hash_u64(&c, (uint64_t) st.st_ino);
        r = r < 0 ? r : hash_u64(&c, (uint64_t) st.st_mtim.tv_sec * 1000000000ULL + (uint64_t) st.st_mtim.tv_nsec);
        r = r < 0 ? r : hash_u64(&c, (uint64_t) st.st_ctim.tv_sec * 1000000000ULL + (uint64_t) st.st_ctim.tv_nsec);
        for (char *const *s = spec->env; r >= 0 && s && *s; s++)
                r = hash_str(&c, *s);
        r = r < 0 ? r : hash_str(&c, hull_runtime_cell_py);
        r = r < 0 ? r : hash_str(&c, hull_runtime_hull_py);
        r = r < 0 ? r : hash_str(&c, hull_runtime_boot_py);
        r = r < 0 ? r : sha256_final_hex(&c, hex);
        if (r < 0)
                return r;
        sbx_kernel_warm w = {0};
        if ((size_t) snprintf(w.dir, sizeof(w.dir), "%s/kernel-warm-%.32s", spec->template_dir, hex) >= sizeof(w.dir) ||
            path_join(w.image, sizeof(w.image), w.dir, "image") < 0 ||
            path_join(w.pidfile, sizeof(w.pidfile), w.dir, "warm.pid") < 0)
                return -ENAMETOOLONG;
        *ret = w;
        return 0;
}

pid_t sbx_kernel_read_pid(const char *path) {
        char buf[32] = {0};
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        uint64_t pid = 0;
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = '\0';
        return n > 0 && parse_uint64(buf, 2, INT32_MAX, &pid) == 0 ? (pid_t) pid : 0;
}

bool sbx_kernel_warm_ready(sbx_kernel_warm *w) {
        struct stat st;
        w->pid = sbx_kernel_read_pid(w->pidfile);
        return w->pid > 0 && stat(w->image, &st) == 0 && S_ISDIR(st.st_mode);
}

int sbx_kernel_warm_stage(sbx_kernel_warm *w, char *tmp, size_t size) {
        if ((size_t) snprintf(tmp, size, "%s.tmp-%d", w->dir, (int) getpid()) >= size)
                return -ENAMETOOLONG;
        (void) rm_rf_at(AT_FDCWD, tmp);
        if (mkdir(tmp, 0700) < 0)
                return -errno;
        return 0;
}

int sbx_kernel_warm_publish(sbx_kernel_warm *w, const char *tmp, pid_t pid) {
        char path[SBX_PATH_MAX], text[32];
        int r = path_join(path, sizeof(path), tmp, "warm.pid");
        int len = snprintf(text, sizeof(text), "%d\n", (int) pid);
        _cleanup_close_ int fd = r < 0 ? -1 : open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 || loop_write(fd, text, (size_t) len) < 0 || rename(tmp, w->dir) < 0) {
                r = fd < 0 && r < 0 ? r : -errno;
                (void) rm_rf_at(AT_FDCWD, tmp); /* another session published first: keep its template */
                return r < 0 ? r : -EIO;
        }
        w->pid = pid;
        return 0;
}

int sbx_kernel_warm_write_python(const char *path, const sbx_session_spec *spec, uint64_t nproc, hull_error *e) {
        char **env = NULL;
        int r = sbx_env_build(spec->env, "/workspace", false, &env);
        if (r < 0)
                return hull_err(e, r, "kernel: cannot build the warm interpreter's environment");
        size_t n = 0;
        while (env[n])
                n++;
        char **all = calloc(n + 2, sizeof(*all));
        if (!all) {
                sbx_env_free(env);
                return hull_err(e, -ENOMEM, "kernel: out of memory");
        }
        memcpy(all, env, n * sizeof(*all));
        all[n] = (char *) "HULL_WARM_SOCK=" WARM_SOCK;
        char *argv[] = {(char *) WARM_PYTHON, (char *) "-c", (char *) hull_runtime_boot_py, NULL};
        r = sbx_kernel_write_process(path, argv, all, true, nproc, e);
        free(all);
        sbx_env_free(env);
        return r;
}

bool sbx_kernel_warm_fits(char *const *argv) {
        return argv && argv[0] && strcmp(argv[0], WARM_PYTHON) == 0;
}

ssize_t sbx_kernel_warm_handover_msg(char *const *envp, char *buf, size_t size) {
        static const char head[] = "H\0" WARM_SOCK;
        size_t len = sizeof(head);
        if (size < len)
                return -E2BIG;
        memcpy(buf, head, len);
        for (char *const *s = envp; s && *s; s++) {
                size_t n = strlen(*s) + 1;
                if (n > size - len)
                        return -E2BIG;
                memcpy(buf + len, *s, n);
                len += n;
        }
        return (ssize_t) len;
}
