/* sbx-kernel-bundle.c: what the kernel tier's shim writes (see sbx-kernel.h): the session's
 * directory on a private tmpfs, the OCI bundle (root, config.json with the mounts, limits and the
 * agent as init) and one process.json per `runsc exec`; and its end (the children it leaves, the
 * directory). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "parse-util.h"
#include "runtime-embed.h"
#include "sbx-internal.h"
#include "sbx-kernel.h"

/* The sandbox's init (uid 0 inside, CAP_KILL only): one request a line on its stdin, one "ok" a
 * line on its stdout. "K SIG PID..." sends SIG once to every process but itself and the PIDs (the
 * interpreters); "S SIG PID..." SIGKILLs them until none is left (at most ~2 s). It reaps
 * whatever is reparented to it. */
static const char agent_py[] =
        "import os,sys,time\n"
        "def live(keep):\n"
        "    r=[]\n"
        "    for n in os.listdir('/proc'):\n"
        "        if not n.isdigit() or int(n)==1 or int(n) in keep: continue\n"
        "        try:\n"
        "            with open('/proc/%s/stat'%n) as f: st=f.read().rsplit(')',1)[1].split()[0]\n"
        "        except (OSError,IndexError): continue\n"
        "        if st not in ('Z','X'): r.append(int(n))\n"
        "    return r\n"
        "def reap():\n"
        "    try:\n"
        "        while os.waitpid(-1,os.WNOHANG)[0]>0: pass\n"
        "    except ChildProcessError: pass\n"
        "def kill(p,s):\n"
        "    try: os.kill(p,s)\n"
        "    except OSError: pass\n"
        "i=sys.stdin.buffer\n"
        "while True:\n"
        "    l=i.readline().split()\n"
        "    if len(l)<2: break\n"
        "    keep={int(x) for x in l[2:]}\n"
        "    if l[0]==b'K':\n"
        "        for p in live(keep): kill(p,int(l[1]))\n"
        "    else:\n"
        "        end=time.monotonic()+2\n"
        "        while time.monotonic()<end:\n"
        "            ps=live(keep)\n"
        "            if not ps: break\n"
        "            for p in ps: kill(p,9)\n"
        "            reap(); time.sleep(0.002)\n"
        "    reap()\n"
        "    os.write(1,b'ok\\n')\n";

void sbx_kernel_runsc(char *path, size_t path_size, char *platform, size_t platform_size) {
        const char *p = getenv("HULL_RUNSC"), *pl = getenv("HULL_RUNSC_PLATFORM");
        snprintf(path, path_size, "%s", p && p[0] == '/' ? p : "/usr/bin/runsc");
        snprintf(platform, platform_size, "%s", pl && pl[0] && !strchr(pl, ' ') ? pl : "ptrace");
}

int sbx_kernel_available(hull_error *e) {
        char path[SBX_PATH_MAX], platform[SBX_KERNEL_FLAG_MAX];
        sbx_kernel_runsc(path, sizeof(path), platform, sizeof(platform));
        if (access(path, X_OK) < 0)
                return hull_err_hint(e, -ENOENT, "install Debian's runsc (scripts/install-deps.sh), or set HULL_RUNSC",
                                     "kernel: %s is not there: the kernel tier needs gVisor's runsc", path);
        if (geteuid() != 0)
                return hull_err_hint(e, -EPERM, "run hull as root, or choose the container tier",
                                     "kernel: the kernel tier runs runsc, which needs root here");
        return 0;
}

size_t sbx_kernel_runsc_argv(const sbx_kernel_dirs *d, char **argv, size_t max) {
        static char network[] = "--network=none";
        static char ignore[] = "--ignore-cgroups";
        static char root_flag[] = "--root";
        size_t n = 0;
        if (max < 7)
                return 0;
        argv[n++] = (char *) d->runsc;
        argv[n++] = root_flag;
        argv[n++] = (char *) d->state;
        argv[n++] = network;
        argv[n++] = (char *) d->platform; /* "--platform=..." */
        if (!d->cgroups)
                argv[n++] = ignore;
        return n;
}

int sbx_kernel_dirs_make(sbx_kernel_dirs *d, const sbx_session_spec *spec, hull_error *e) {
        char platform[SBX_KERNEL_FLAG_MAX];
        sbx_kernel_runsc(d->runsc, sizeof(d->runsc), platform, sizeof(platform));
        if ((size_t) snprintf(d->platform, sizeof(d->platform), "--platform=%s", platform) >= sizeof(d->platform))
                return hull_err(e, -ENAMETOOLONG, "kernel: HULL_RUNSC_PLATFORM is too long");
        d->cgroups = spec->use_cgroups;
        if (mkdir(SBX_KERNEL_DIR, 0700) < 0 && errno != EEXIST)
                return hull_err(e, -errno, "kernel: cannot make %s", SBX_KERNEL_DIR);
        snprintf(d->dir, sizeof(d->dir), "%s/s-XXXXXX", SBX_KERNEL_DIR);
        if (!mkdtemp(d->dir))
                return hull_err(e, -errno, "kernel: cannot make a directory below %s", SBX_KERNEL_DIR);
        d->made = true;
        snprintf(d->id, sizeof(d->id), "hull-%s", strrchr(d->dir, '/') + 1);
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return hull_err(e, -errno, "kernel: cannot make a mount namespace for the session");
        char opts[SBX_SHORT_STR_MAX];
        uint64_t size = (spec->memory_bytes ? spec->memory_bytes : SBX_DEFAULT_TMP_BYTES) + (16ULL << 20);
        snprintf(opts, sizeof(opts), "size=%llu,mode=0755", (unsigned long long) size);
        if (mount("tmpfs", d->dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return hull_err(e, -errno, "kernel: cannot mount the session's tmpfs");
        d->mounted = true;
        if (path_join(d->bundle, sizeof(d->bundle), d->dir, "bundle") < 0 ||
            path_join(d->rootfs, sizeof(d->rootfs), d->bundle, "rootfs") < 0 ||
            path_join(d->state, sizeof(d->state), d->dir, "state") < 0 ||
            path_join(d->ws, sizeof(d->ws), d->dir, "workspace") < 0 ||
            path_join(d->log, sizeof(d->log), d->dir, "runsc.log") < 0)
                return hull_err(e, -ENAMETOOLONG, "kernel: path too long");
        if (mkdir(d->bundle, 0755) < 0 || mkdir(d->rootfs, 0755) < 0 || mkdir(d->state, 0700) < 0 ||
            mkdir(d->ws, 0755) < 0 || chown(d->ws, SBX_SANDBOX_UID, SBX_SANDBOX_UID) < 0)
                return hull_err(e, -errno, "kernel: cannot lay out the session's directory");
        return 0;
}

void sbx_kernel_dirs_remove(sbx_kernel_dirs *d) {
        if (d->mounted)
                (void) umount2(d->dir, MNT_DETACH);
        d->mounted = false;
        if (d->made)
                (void) rmdir(d->dir);
        d->made = false;
}

void sbx_kernel_kill_children(pid_t ppid, unsigned timeout_ms) {
        uint64_t end = sbx_now_us() + timeout_ms * 1000ULL;
        char want[32];
        snprintf(want, sizeof(want), " %d ", (int) ppid);
        while (sbx_now_us() < end) {
                DIR *dir = opendir("/proc");
                if (!dir)
                        return;
                for (struct dirent *de; (de = readdir(dir));) {
                        char path[SBX_NAME_MAX + 16], buf[512];
                        if (de->d_name[0] < '1' || de->d_name[0] > '9')
                                continue;
                        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
                        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
                        if (n <= 0)
                                continue;
                        buf[n] = '\0';
                        char *rp = strrchr(buf, ')'); /* ") S PPID ..." */
                        uint64_t pid;
                        if (rp && rp[1] && rp[2] && strncmp(rp + 3, want + 1, strlen(want) - 1) == 0 &&
                            parse_uint64(de->d_name, 2, INT32_MAX, &pid) == 0)
                                (void) kill((pid_t) pid, SIGKILL);
                }
                closedir(dir);
                int st;
                pid_t p;
                while ((p = waitpid(-1, &st, WNOHANG)) > 0)
                        ;
                if (p < 0 && errno == ECHILD)
                        return;
                usleep(5000);
        }
}

static int write_file(const char *dir, const char *name, const char *data, size_t len, mode_t mode) {
        char path[SBX_PATH_MAX];
        if (path_join(path, sizeof(path), dir, name) < 0)
                return -ENAMETOOLONG;
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd < 0)
                return -errno;
        return loop_write(fd, data, len);
}

/* The root: hull's /etc files, the runtime's sources at /.hull, mount points, the host's merged-/usr
 * links. */
static int write_root(sbx_kernel_dirs *d, hull_error *e) {
        static const char *const dirs[] = {"etc",  "etc/ssl", "etc/ssl/certs", "etc/alternatives", ".hull",   "usr",
                                           "proc", "dev",     "tmp",           "workspace",        "handles", "env"};
        static const char *const files[] = {"etc/ld.so.cache", "etc/localtime", "etc/ssl/openssl.cnf"};
        char path[SBX_PATH_MAX], passwd[SBX_ETC_FILE_MAX];
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                if (path_join(path, sizeof(path), d->rootfs, dirs[i]) < 0 || mkdir(path, 0755) < 0)
                        return hull_err(e, -errno, "kernel: cannot make the root's /%s", dirs[i]);
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                if (write_file(d->rootfs, files[i], "", 0, 0644) < 0)
                        return hull_err(e, -EIO, "kernel: cannot make the root's /%s", files[i]);
        snprintf(passwd, sizeof(passwd),
                 "root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:%u:%u:hull sandbox:/workspace:/bin/sh\n"
                 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                 SBX_SANDBOX_UID, SBX_SANDBOX_UID);
        char group[SBX_ETC_FILE_MAX];
        snprintf(group, sizeof(group), "root:x:0:\nsandbox:x:%u:\nnogroup:x:65534:\n", SBX_SANDBOX_UID);
        static const char hosts[] = "127.0.0.1\tlocalhost hull\n::1\tlocalhost ip6-localhost ip6-loopback\n";
        static const char nss[] = "passwd: files\ngroup: files\nshadow: files\nhosts: files\n";
        size_t py_len = strlen(hull_runtime_cell_py), hull_len = strlen(hull_runtime_hull_py);
        _cleanup_free_ char *py = malloc(py_len + 1 + hull_len);
        if (!py)
                return hull_err(e, -ENOMEM, "kernel: out of memory");
        memcpy(py, hull_runtime_cell_py, py_len);
        py[py_len] = '\0';
        memcpy(py + py_len + 1, hull_runtime_hull_py, hull_len);
        if (write_file(d->rootfs, "etc/passwd", passwd, strlen(passwd), 0644) < 0 ||
            write_file(d->rootfs, "etc/group", group, strlen(group), 0644) < 0 ||
            write_file(d->rootfs, "etc/hosts", hosts, sizeof(hosts) - 1, 0644) < 0 ||
            write_file(d->rootfs, "etc/nsswitch.conf", nss, sizeof(nss) - 1, 0644) < 0 ||
            write_file(d->rootfs, ".hull/python", py, py_len + 1 + hull_len, 0444) < 0 ||
            write_file(d->rootfs, ".hull/javascript", hull_runtime_cell_js, strlen(hull_runtime_cell_js), 0444) < 0 ||
            write_file(d->rootfs, ".hull/agent.py", agent_py, sizeof(agent_py) - 1, 0444) < 0)
                return hull_err(e, -EIO, "kernel: cannot write the root's files");
        return 0;
}

static int add_bind(json_t *mounts, const char *dest, const char *src, bool rw) {
        struct stat st;
        if (stat(src, &st) < 0)
                return 0; /* what the host lacks, the sandbox lacks */
        return json_array_append_new(mounts, json_pack("{s:s,s:s,s:s,s:[s,s]}", "destination", dest, "type", "bind",
                                                       "source", src, "options", "rbind", rw ? "rw" : "ro"));
}

/* The host's top-level library and binary directories: bound read-only, or the same link when the
 * host has a merged /usr. */
static int add_host_dirs(sbx_kernel_dirs *d, json_t *mounts, hull_error *e) {
        static const char *const top[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};
        char host[SBX_PATH_MAX], link[SBX_PATH_MAX], dest[SBX_PATH_MAX];
        if (add_bind(mounts, "/usr", "/usr", false) < 0)
                return hull_err(e, -ENOMEM, "kernel: out of memory");
        for (size_t i = 0; i < ELEMENTSOF(top); i++) {
                struct stat st;
                snprintf(host, sizeof(host), "/%s", top[i]);
                if (lstat(host, &st) < 0)
                        continue;
                if (S_ISLNK(st.st_mode)) {
                        ssize_t n = readlink(host, link, sizeof(link) - 1);
                        if (n <= 0)
                                continue;
                        link[n] = '\0';
                        if (path_join(dest, sizeof(dest), d->rootfs, top[i]) < 0 || symlink(link, dest) < 0)
                                return hull_err(e, -errno, "kernel: cannot link the root's /%s", top[i]);
                        continue;
                }
                if (path_join(dest, sizeof(dest), d->rootfs, top[i]) < 0 || mkdir(dest, 0755) < 0 ||
                    add_bind(mounts, host, host, false) < 0)
                        return hull_err(e, -errno, "kernel: cannot make the root's /%s", top[i]);
        }
        static const char *const etc[] = {"/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime", "/etc/ssl/certs",
                                          "/etc/ssl/openssl.cnf"};
        for (size_t i = 0; i < ELEMENTSOF(etc); i++)
                if (add_bind(mounts, etc[i], etc[i], false) < 0)
                        return hull_err(e, -ENOMEM, "kernel: out of memory");
        return 0;
}

static json_t *no_caps(const char *keep) {
        json_t *c = json_object();
        static const char *const sets[] = {"bounding", "effective", "permitted", "inheritable", "ambient"};
        for (size_t i = 0; i < ELEMENTSOF(sets); i++)
                json_object_set_new(c, sets[i], keep && i < 3 ? json_pack("[s]", keep) : json_array());
        return c;
}

static json_t *rlimits(void) {
        return json_pack("[{s:s,s:I,s:I},{s:s,s:I,s:I}]", "type", "RLIMIT_NOFILE", "hard",
                         (json_int_t) SBX_DEFAULT_NOFILE, "soft", (json_int_t) SBX_DEFAULT_NOFILE, "type",
                         "RLIMIT_FSIZE", "hard", (json_int_t) SBX_DEFAULT_FSIZE_BYTES, "soft",
                         (json_int_t) SBX_DEFAULT_FSIZE_BYTES);
}

static int dump(json_t *j, const char *path, hull_error *e) {
        if (!j)
                return hull_err(e, -ENOMEM, "kernel: out of memory");
        int r = json_dump_file(j, path, JSON_COMPACT);
        json_decref(j);
        return r < 0 ? hull_err(e, -EIO, "kernel: cannot write %s", path) : 0;
}

int sbx_kernel_write_bundle(sbx_kernel_dirs *d, const sbx_session_spec *spec, hull_error *e) {
        int r = write_root(d, e);
        if (r < 0)
                return r;
        json_t *mounts = json_array();
        char tmp_opts[SBX_SHORT_STR_MAX], path[SBX_PATH_MAX];
        snprintf(tmp_opts, sizeof(tmp_opts), "size=%llu",
                 (unsigned long long) (spec->tmp_bytes ? spec->tmp_bytes : SBX_DEFAULT_TMP_BYTES));
        json_array_append_new(mounts,
                              json_pack("{s:s,s:s,s:s}", "destination", "/proc", "type", "proc", "source", "proc"));
        json_array_append_new(mounts,
                              json_pack("{s:s,s:s,s:s}", "destination", "/dev", "type", "tmpfs", "source", "tmpfs"));
        json_array_append_new(mounts, json_pack("{s:s,s:s,s:s,s:[s,s,s]}", "destination", "/tmp", "type", "tmpfs",
                                                "source", "tmpfs", "options", "nosuid", "nodev", tmp_opts));
        r = add_host_dirs(d, mounts, e);
        if (r < 0 || add_bind(mounts, "/workspace", d->ws, true) < 0 ||
            (spec->handles_dir && add_bind(mounts, "/handles", spec->handles_dir, false) < 0) ||
            (spec->layer_dir && add_bind(mounts, "/env", spec->layer_dir, false) < 0)) {
                json_decref(mounts);
                return r < 0 ? r : hull_err(e, -ENOMEM, "kernel: out of memory");
        }
        json_t *linux_ = json_pack("{s:[{s:s},{s:s},{s:s},{s:s},{s:s}]}", "namespaces", "type", "pid", "type",
                                   "network", "type", "ipc", "type", "uts", "type", "mount");
        if (linux_ && d->cgroups) {
                /* runsc's cgroups hold the sentry and the gofer: the sandbox's memory with the
                 * workspace, and host tasks (each process inside has its ptrace stubs) */
                uint64_t mem = (spec->memory_bytes ? spec->memory_bytes : SERVE_SESSION_MEMORY_BYTES) +
                               SBX_KERNEL_SENTRY_BYTES;
                uint64_t tasks = SBX_KERNEL_TASKS_BASE +
                                 (spec->pids ? spec->pids : SERVE_SESSION_PIDS) * SBX_KERNEL_TASKS_PER_PID;
                snprintf(path, sizeof(path), "/%s", d->id);
                json_object_set_new(linux_, "cgroupsPath", json_string(path));
                json_object_set_new(linux_, "resources",
                                    json_pack("{s:{s:I},s:{s:I}}", "memory", "limit", (json_int_t) mem, "pids", "limit",
                                              (json_int_t) tasks));
        }
        json_t *cfg =
                json_pack("{s:s,s:{s:{s:i,s:i},s:[s,s,s,s],s:[s],s:s,s:o,s:b,s:o},s:{s:s,s:b},s:s,s:o,s:o}",
                          "ociVersion", "1.0.0", "process", "user", "uid", 0, "gid", 0, "args", "/usr/bin/python3",
                          "-I", "-S", "/.hull/agent.py", "env", "PATH=/usr/bin:/bin", "cwd", "/", "capabilities",
                          no_caps("CAP_KILL"), "noNewPrivileges", 1, "rlimits", rlimits(), "root", "path", "rootfs",
                          "readonly", 1, "hostname", "hull", "mounts", mounts, "linux", linux_);
        if (path_join(path, sizeof(path), d->bundle, "config.json") < 0)
                return hull_err(e, -ENAMETOOLONG, "kernel: path too long");
        return dump(cfg, path, e);
}

int sbx_kernel_write_process(const char *path, char *const *argv, char *const *envp, bool start, hull_error *e) {
        json_t *args = json_array(), *env = json_array();
        if (start) {
                /* The cell socket arrives as stdin: to fd 3; the sources (in the root) on fd 0. */
                const char *base = strrchr(argv[0], '/');
                bool js = strstr(base ? base : argv[0], "node") != NULL;
                json_array_append_new(args, json_string("/bin/sh"));
                json_array_append_new(args, json_string("-c"));
                json_array_append_new(args, json_string(js ? "exec 3<&0 </.hull/javascript; exec \"$@\""
                                                           : "exec 3<&0 </.hull/python; exec \"$@\""));
                json_array_append_new(args, json_string("hull-boot"));
        }
        for (char *const *a = argv; *a; a++)
                json_array_append_new(args, json_string(*a));
        for (char *const *a = envp; a && *a; a++)
                json_array_append_new(env, json_string(*a));
        json_t *p = json_pack("{s:{s:i,s:i},s:o,s:o,s:s,s:o,s:b,s:o}", "user", "uid", (int) SBX_SANDBOX_UID, "gid",
                              (int) SBX_SANDBOX_UID, "args", args, "env", env, "cwd", "/workspace", "capabilities",
                              no_caps(NULL), "noNewPrivileges", 1, "rlimits", rlimits());
        return dump(p, path, e);
}
