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
#include "sbx-oci.h"

/* The sandbox's init (uid 0 inside, CAP_KILL only): one request a message on its stdin (a
 * SOCK_SEQPACKET socket of the shim's), one "ok" a line on its stdout. "K SIG PID..." sends SIG
 * once to every process but itself and the PIDs (the interpreters); "S SIG PID..." SIGKILLs them
 * until none is left (at most ~2 s). "H\0SOCK\0ENV..." with three fds (a START's cell socket,
 * stdout and stderr): the warm start's handover, passed on to the warm python listening on SOCK
 * (runtime/cell.py's warm()); "ok" when it took them, "no" otherwise. It reaps whatever is
 * reparented to it. */
static const char agent_py[] =
        "import os,socket,sys,time\n"
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
        "def hand(m,fds):\n"
        "    r=b'no'\n"
        "    try:\n"
        "        p,_,env=m[2:].partition(b'\\0')\n"
        "        c=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET)\n"
        "        c.settimeout(30)\n"
        "        c.connect(p)\n"
        "        socket.send_fds(c,[env],fds)\n"
        "        if c.recv(8)==b'ok': r=b'ok'\n"
        "        c.close()\n"
        "    except OSError: pass\n"
        "    return r\n"
        "i=socket.socket(fileno=0)\n"
        "while True:\n"
        "    m,fds,_,_=socket.recv_fds(i,1<<20,3)\n"
        "    if m[:2]==b'H\\0' and len(fds)==3:\n"
        "        r=hand(m,fds)\n"
        "        for f in fds: os.close(f)\n"
        "        os.write(1,r+b'\\n')\n"
        "        continue\n"
        "    for f in fds: os.close(f)\n"
        "    l=m.split()\n"
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

int sbx_kernel_available(hull_error *e) {
        sbx_oci_runtime rt;
        int r = sbx_oci_runtime_find(&rt, e);
        if (r < 0)
                return r;
        if (geteuid() != 0)
                return hull_err_hint(e, -EPERM, "run hull as root, or choose the container tier",
                                     "kernel: the kernel tier's sessions run runsc, which needs root here");
        return 0;
}

int sbx_kernel_dirs_make(sbx_kernel_dirs *d, const sbx_session_spec *spec, hull_error *e) {
        if (mkdir(SBX_KERNEL_DIR, 0700) < 0 && errno != EEXIST)
                return hull_err(e, -errno, "kernel: cannot make %s", SBX_KERNEL_DIR);
        snprintf(d->dir, sizeof(d->dir), "%s/s-XXXXXX", SBX_KERNEL_DIR);
        if (!mkdtemp(d->dir))
                return hull_err(e, -errno, "kernel: cannot make a directory below %s", SBX_KERNEL_DIR);
        d->made = true;
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return hull_err(e, -errno, "kernel: cannot make a mount namespace for the session");
        char opts[SBX_SHORT_STR_MAX];
        uint64_t size = (spec->memory_bytes ? spec->memory_bytes : SBX_DEFAULT_TMP_BYTES) + (16ULL << 20);
        snprintf(opts, sizeof(opts), "size=%llu,mode=0755", (unsigned long long) size);
        if (mount("tmpfs", d->dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return hull_err(e, -errno, "kernel: cannot mount the session's tmpfs");
        d->mounted = true;
        if (path_join(d->ws, sizeof(d->ws), d->dir, "workspace") < 0 ||
            path_join(d->log, sizeof(d->log), d->dir, "runsc.log") < 0)
                return hull_err(e, -ENAMETOOLONG, "kernel: path too long");
        if (mkdir(d->ws, 0755) < 0 || chown(d->ws, SBX_SANDBOX_UID, SBX_SANDBOX_UID) < 0)
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

static json_t *no_caps(const char *keep) {
        json_t *c = json_object();
        static const char *const sets[] = {"bounding", "effective", "permitted", "inheritable", "ambient"};
        for (size_t i = 0; i < ELEMENTSOF(sets); i++)
                json_object_set_new(c, sets[i], keep && i < 3 ? json_pack("[s]", keep) : json_array());
        return c;
}

static int dump(json_t *j, const char *path, hull_error *e) {
        if (!j)
                return hull_err(e, -ENOMEM, "kernel: out of memory");
        int r = json_dump_file(j, path, JSON_COMPACT);
        json_decref(j);
        return r < 0 ? hull_err(e, -EIO, "kernel: cannot write %s", path) : 0;
}

static int write_file(int dir_fd, const char *name, const char *data, size_t len) {
        _cleanup_close_ int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (fd < 0)
                return -errno;
        return loop_write(fd, data, len);
}

int sbx_kernel_bundle_finish(const sbx_oci_bundle *b, hull_error *e) {
        char path[SBX_PATH_MAX];
        if (path_join(path, sizeof(path), b->dir, "rootfs") < 0)
                return hull_err(e, -ENAMETOOLONG, "kernel: path too long");
        _cleanup_close_ int root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        size_t py_len = strlen(hull_runtime_cell_py), hull_len = strlen(hull_runtime_hull_py);
        _cleanup_free_ char *py = malloc(py_len + 1 + hull_len);
        if (!py)
                return hull_err(e, -ENOMEM, "kernel: out of memory");
        memcpy(py, hull_runtime_cell_py, py_len);
        py[py_len] = '\0';
        memcpy(py + py_len + 1, hull_runtime_hull_py, hull_len);
        if (root < 0 || mkdirat(root, ".hull", 0755) < 0)
                return hull_err(e, -errno, "kernel: cannot make the root's /.hull");
        _cleanup_close_ int dir = openat(root, ".hull", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dir < 0 || write_file(dir, "python", py, py_len + 1 + hull_len) < 0 ||
            write_file(dir, "javascript", hull_runtime_cell_js, strlen(hull_runtime_cell_js)) < 0 ||
            write_file(dir, "agent.py", agent_py, sizeof(agent_py) - 1) < 0)
                return hull_err(e, -EIO, "kernel: cannot write the runtime's sources in the root");
        /* The agent is root inside with CAP_KILL alone: the sandbox user can neither signal it
         * nor open its pipes (/proc/1/fd) */
        if (path_join(path, sizeof(path), b->dir, "config.json") < 0)
                return hull_err(e, -ENAMETOOLONG, "kernel: path too long");
        json_t *cfg = json_load_file(path, 0, NULL);
        json_t *proc = json_object_get(cfg, "process");
        if (!json_is_object(proc)) {
                json_decref(cfg);
                return hull_err(e, -EIO, "kernel: cannot read back %s", path);
        }
        json_object_set_new(proc, "user", json_pack("{s:i,s:i}", "uid", 0, "gid", 0));
        json_object_set_new(proc, "capabilities", no_caps("CAP_KILL"));
        json_object_set_new(proc, "cwd", json_string("/"));
        return dump(cfg, path, e);
}

int sbx_kernel_write_process(const char *path, char *const *argv, char *const *envp, bool start, uint64_t nproc,
                             hull_error *e) {
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
                              no_caps(NULL), "noNewPrivileges", 1, "rlimits",
                              json_pack("[{s:s,s:I,s:I},{s:s,s:I,s:I},{s:s,s:I,s:I}]", "type", "RLIMIT_NOFILE", "hard",
                                        (json_int_t) SBX_DEFAULT_NOFILE, "soft", (json_int_t) SBX_DEFAULT_NOFILE,
                                        "type", "RLIMIT_FSIZE", "hard", (json_int_t) SBX_DEFAULT_FSIZE_BYTES, "soft",
                                        (json_int_t) SBX_DEFAULT_FSIZE_BYTES, "type", "RLIMIT_NPROC", "hard",
                                        (json_int_t) nproc, "soft", (json_int_t) nproc));
        return dump(p, path, e);
}

char *const sbx_kernel_agent_argv[] = {(char *) "/usr/bin/python3", (char *) "-I", (char *) "-S",
                                       (char *) "/.hull/agent.py", NULL};
