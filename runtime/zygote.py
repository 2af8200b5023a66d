# zygote.py: hull serve's Python zygote. Run on the host (not sandboxed) as
#   hull-zygote -c <runtime/boot.py>     (argv[0] hull-zygote, the program /usr/bin/python3)
# with fd 0 a sealed memfd holding this source, cell.py's and hull.py's, NUL-separated (boot.py
# reads them, puts /dev/null on fd 0 and runs this with sys.argv[1:] = [cell.py, hull.py]), with
# OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=MKL_NUM_THREADS=1 and fd 3 a SOCK_SEQPACKET socket. It
# shows as hull-zygote in ps (its command line rewritten in place, as cell.py's retitle does);
# each interpreter it forks shows as hull-python.
#
# It imports numpy and pandas once, says {"ready":{"numpy":V|null,"pandas":V|null,"threads":N}}
# on fd 3, then serves one spawn request per message until EOF (exit 0):
#   {"spawn":{"uid":U,"gid":G,"env":["K=V",...],"cwd":"/workspace","nofile":N,"fsize":N,"cgroups":K}}
#   SCM_RIGHTS: [session init's pidfd, cell control socket, stdout pipe, stderr pipe,
#                seccomp memfd, K cgroup files opened for writing]
# A bad request is dropped: its fds are closed, nothing is written anywhere.
#
# For a good request it forks A, which stays on the host as the waiting parent: A enters the
# session's pid namespace for its children and forks B. B joins the session's cgroups and its
# user, mount, network, IPC, UTS and cgroup namespaces, drops every capability and privilege,
# installs the seccomp programs, and runs cell.py's main() on the cell socket (fd 3), so the
# interpreter starts with numpy and pandas already imported. A failure in A or B before the cell
# driver starts is one frame {"error":{"step":S,"errno":N,"message":M}} on the cell socket
# (cell framing: u32 little-endian length, JSON), then exit 1; B never runs cell code after one.
#
# The zygote itself never runs user code and never changes its own namespaces or credentials.

import ast
import builtins
import ctypes
import fcntl
import gc
import importlib
import json
import os
import resource
import signal
import socket
import stat
import struct
import sys

# ---- constants (x86_64) -------------------------------------------------------------------------
SYS_CAPGET = 125
SYS_CAPSET = 126
SYS_CLOSE_RANGE = 436
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NAME = 15
PR_GET_SECCOMP = 21
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522
CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
SESSION_NS = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP

# ---- bounds -------------------------------------------------------------------------------------
MAX_REQUEST = 256 * 1024        # one request message
MAX_CGROUPS = 4
MAX_ENV = 256
MAX_PATH = 4096
MAX_PROGRAMS = 4
MAX_INSNS = 4096
MAX_SECCOMP_BYTES = MAX_PROGRAMS * (4 + MAX_INSNS * 8)
MAX_FDS = 5 + MAX_CGROUPS
MAX_ID = 0xFFFFFFFE             # (uid_t)-1 means "unchanged" to the kernel
MAX_RLIM = (1 << 63) - 1

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


class StepError(Exception):
    def __init__(self, step, err, message):
        super().__init__(message)
        self.step = step
        self.errno = err
        self.message = message


def _check(step, rc):
    """Raise StepError for a libc call that returned -1."""
    if rc == -1:
        e = ctypes.get_errno()
        raise StepError(step, e, os.strerror(e))
    return rc


def prctl(step, option, a2=0, a3=0, a4=0, a5=0):
    return _check(step, libc.prctl(option, a2, a3, a4, a5))


# ---- requests -----------------------------------------------------------------------------------
def _is_int(v, lo, hi):
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def parse_request(data, fds):
    """The validated spawn request, or None. fds are the received descriptors, in order."""
    try:
        msg = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(msg, dict) or set(msg) != {"spawn"} or not isinstance(msg["spawn"], dict):
        return None
    r = msg["spawn"]
    keys = {"uid", "gid", "env", "cwd", "nofile", "fsize", "cgroups"}
    if set(r) != keys:
        return None
    if not (_is_int(r["uid"], 0, MAX_ID) and _is_int(r["gid"], 0, MAX_ID)
            and _is_int(r["nofile"], 1, 1 << 30) and _is_int(r["fsize"], 0, MAX_RLIM)
            and _is_int(r["cgroups"], 0, MAX_CGROUPS)):
        return None
    env = r["env"]
    if not isinstance(env, list) or len(env) > MAX_ENV:
        return None
    for e in env:
        if not isinstance(e, str) or "\0" in e or e.find("=") < 1:
            return None
        try:
            e.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates
            return None
    cwd = r["cwd"]
    if not isinstance(cwd, str) or not cwd.startswith("/") or "\0" in cwd or len(cwd) > MAX_PATH:
        return None
    if len(fds) != 5 + r["cgroups"]:
        return None
    try:
        kinds = [os.fstat(fd).st_mode for fd in fds]
    except OSError:
        return None
    if not (stat.S_ISSOCK(kinds[1]) and stat.S_ISREG(kinds[4])
            and all(stat.S_ISREG(m) for m in kinds[5:])):
        return None
    programs = read_seccomp(fds[4])
    if programs is None:
        return None
    r["programs"] = programs
    return r


def read_seccomp(fd):
    """The programs in the memfd as ctypes sock_filter arrays, or None when malformed."""
    try:
        size = os.fstat(fd).st_size
        if size < 12 or size > MAX_SECCOMP_BYTES:
            return None
        data = b""
        while len(data) < size:
            b = os.pread(fd, size - len(data), len(data))
            if not b:
                return None
            data += b
    except OSError:
        return None
    programs = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < 4 or len(programs) == MAX_PROGRAMS:
            return None
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if n < 1 or n > MAX_INSNS or len(data) - pos < 8 * n:
            return None
        insns = (SockFilter * n)()
        for i in range(n):
            insns[i].code, insns[i].jt, insns[i].jf, insns[i].k = struct.unpack_from("<HBBI", data, pos)
            pos += 8
        programs.append(insns)
    return programs if programs else None


# ---- the children -------------------------------------------------------------------------------
def send_error(fd, step, err, message):
    """One error frame on the cell socket (cell framing); failures here are ignored."""
    body = json.dumps({"error": {"step": step, "errno": err, "message": message}}).encode()
    data = struct.pack("<I", len(body)) + body
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass


def fail(fd, e):
    if isinstance(e, StepError):
        send_error(fd, e.step, e.errno, e.message)
    elif isinstance(e, OSError):
        send_error(fd, getattr(e, "hull_step", "os"), e.errno or 0, e.strerror or str(e))
    else:
        send_error(fd, getattr(e, "hull_step", "internal"), 0, "%s: %s" % (type(e).__name__, e))
    os._exit(1)


def step(name, fn, *args):
    """fn(*args), with OSError tagged by the step name."""
    try:
        return fn(*args)
    except OSError as e:
        raise StepError(name, e.errno or 0, e.strerror or str(e))


REAPER_FD = -1  # hull's binary, run as `hull __reap-children` by A (see zygote())


def run_a(req, fds, cell_code, hull_code):
    """Child A: on the host, enters the session's pid namespace for its child B and waits for it."""
    cell = fds[1]
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.close(3)  # the zygote's request socket
        # No parent-death signal: A outlives the zygote until B ends (B dies with the session's
        # pid namespace), so B's zombie is reaped at once and never holds the session's cgroups
        # busy while an unrelated reaper gets to it.
        if os.geteuid() == 0:
            step("setgroups", os.setgroups, [])
        # B appears in the session's /proc as soon as it exists, still with the host's view and
        # (when hull serve is not root) the sandbox user's own host uid: not dumpable, so the
        # sandbox can neither ptrace it nor open /proc/B/root or /proc/B/mem until B has entered
        # the sandbox and dropped everything (it makes itself dumpable again at the very end).
        prctl("dumpable", PR_SET_DUMPABLE, 0)
        _check("setns-pid", libc.setns(fds[0], CLONE_NEWPID))
        pid = step("fork", os.fork)
    except BaseException as e:
        fail(cell, e)
    if pid == 0:
        run_b(req, fds, cell_code, hull_code)
        os._exit(1)
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    # hull's own binary waits in A's place (hull serve gave it as fd 4): A's copy of the zygote's
    # interpreter pages is dropped (1.2 MiB per session, bench/sessions-density.sh).
    if REAPER_FD >= 0:
        try:
            os.execve(REAPER_FD, ["hull-reaper", "__reap-children"], {})
        except OSError:
            pass  # waits in Python, as below
    while True:
        try:
            os.waitpid(pid, 0)
            break
        except ChildProcessError:
            break
        except InterruptedError:
            continue
    os._exit(0)


def close_from(low):
    """Close every fd >= low."""
    if libc.syscall(SYS_CLOSE_RANGE, low, 0xFFFFFFFF, 0) == 0:
        return
    os.closerange(low, max(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 65536))


def run_b(req, fds, cell_code, hull_code):
    """Child B: in the session's pid namespace; becomes the sandboxed interpreter."""
    cell = fds[1]
    try:
        # A session of its own: no controlling terminal (hull serve's may be an operator's), so
        # /dev/tty inside the sandbox opens nothing.
        step("setsid", os.setsid)
        for fd in fds[5:]:
            try:
                os.write(fd, b"0")
            except OSError as e:
                raise StepError("cgroup", e.errno or 0, e.strerror or str(e))
            os.close(fd)
        _check("setns", libc.setns(fds[0], SESSION_NS))
        # The cell socket, the pipes and the session's /dev/null on 3, 1, 2, 0; nothing else.
        null = step("open-dev-null", os.open, "/dev/null", os.O_RDONLY | os.O_CLOEXEC)
        high = [step("dup", fcntl.fcntl, fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (null, fds[2], fds[3], cell)]
        cell = high[3]
        for target, fd in enumerate(high):
            step("dup2", os.dup2, fd, target, target != 3)
        cell = 3
        close_from(4)
        # No capability, no way back to one.
        # Every possible capability (0..63): those past the kernel's cap_last_cap fail with EINVAL.
        for cap in range(0, 64):
            if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1 and ctypes.get_errno() != 22:
                _check("capbset-drop", -1)
        prctl("cap-ambient-clear", PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
        step("setresgid", os.setresgid, req["gid"], req["gid"], req["gid"])
        step("setresuid", os.setresuid, req["uid"], req["uid"], req["uid"])
        hdr = CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
        data = (CapData * 2)()
        _check("capset", libc.syscall(SYS_CAPSET, ctypes.byref(hdr), ctypes.byref(data)))
        prctl("no-new-privs", PR_SET_NO_NEW_PRIVS, 1)
        # Cleared by the uid change; set again so B dies if A is killed.
        prctl("prctl-pdeathsig", PR_SET_PDEATHSIG, signal.SIGKILL)
        for insns in req["programs"]:
            prog = SockFprog(len(insns), ctypes.cast(insns, ctypes.POINTER(SockFilter)))
            prctl("seccomp", PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog))
        prctl("dumpable", PR_SET_DUMPABLE, 1)
        step("rlimit-nofile", resource.setrlimit, resource.RLIMIT_NOFILE, (req["nofile"], req["nofile"]))
        step("rlimit-fsize", resource.setrlimit, resource.RLIMIT_FSIZE, (req["fsize"], req["fsize"]))
        step("rlimit-core", resource.setrlimit, resource.RLIMIT_CORE, (0, 0))
        step("chdir", os.chdir, req["cwd"])
        os.environ.clear()
        for e in req["env"]:
            k, v = e.split("=", 1)
            os.environ[k] = v
        # sys.path was set when the zygote started: an environment's layer adds its own now.
        for p in reversed(os.environ.get("PYTHONPATH", "").split(":")):
            if p and p not in sys.path:
                sys.path.insert(0, p)
        for sig in signal.valid_signals():
            if sig in (signal.SIGKILL, signal.SIGSTOP):
                continue
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        # Every check the interpreter's start depends on, read back from the kernel.
        if os.getresuid() != (req["uid"],) * 3 or os.getresgid() != (req["gid"],) * 3 or os.getgroups():
            raise StepError("verify-ids", 0, "uids, gids or groups are not as requested")
        if libc.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1:
            raise StepError("verify-nnp", 0, "no_new_privs is not set")
        if libc.prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != SECCOMP_MODE_FILTER:
            raise StepError("verify-seccomp", 0, "no seccomp filter is installed")
        got = (CapData * 2)()
        _check("capget", libc.syscall(SYS_CAPGET, ctypes.byref(CapHeader(LINUX_CAPABILITY_VERSION_3, 0)), ctypes.byref(got)))
        if any(d.effective or d.permitted or d.inheritable for d in got):
            raise StepError("verify-caps", 0, "capabilities remain")
        ns = {"__name__": "hull_cell", "__builtins__": builtins}
        exec(cell_code, ns)
        main = ns["main"]
        sys.argv = ["-c"]
    except BaseException as e:
        fail(cell, e)
    try:
        main(3, hull_code)
    finally:
        os._exit(1)


# ---- the zygote ---------------------------------------------------------------------------------
def retitle(name):
    """Show as name in ps, as cell.py's retitle does: the process's name and its command line,
    rewritten in place (the name, NULs, a last byte that is not NUL). Best effort."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48 and 49)
        title = name.encode()
        if start and end - start > len(title) + 1:
            ctypes.memmove(start, title + b"\0" * (end - start - len(title) - 1) + b" ", end - start)
        comm = ctypes.create_string_buffer(title[:15])
        libc.prctl(PR_SET_NAME, ctypes.addressof(comm), 0, 0, 0)
    except (OSError, ValueError, IndexError):
        pass


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def preimport(tree):
    """Import what cell.py imports now: B cannot find the host's modules in the session's root."""
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for n in names:
            try:
                importlib.import_module(n)
            except ImportError:
                pass


def zygote():
    global REAPER_FD
    prctl("prctl-pdeathsig", PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.environ.pop("HULL_REAPER_FD", None) == "4":
        try:
            os.set_inheritable(4, False)
            REAPER_FD = 4
        except OSError:
            pass
    retitle("hull-zygote")
    sock = socket.socket(fileno=3)
    if os.uname().machine != "x86_64":
        msg = "hull zygote: unsupported architecture %s (x86_64 only)" % os.uname().machine
        sys.stderr.write(msg + "\n")
        sock.send(json.dumps({"error": {"step": "arch", "errno": 0, "message": msg}}).encode())
        return 1
    if len(sys.argv) < 2:
        sys.stderr.write("hull zygote: usage: python3 -c BOOT with ZYGOTE\\0CELL[\\0HULL] on fd 0\n")
        return 1
    cell_src = sys.argv[1]
    cell_tree = ast.parse(cell_src, "<hull-cell>")
    cell_code = compile(cell_tree, "<hull-cell>", "exec")
    preimport(cell_tree)
    # The module `hull` (runtime/hull.py): compiled once here, its imports done, its source in
    # linecache for tracebacks; each interpreter runs the code object into a fresh module.
    hull_code = None
    if len(sys.argv) > 2:
        hull_tree = ast.parse(sys.argv[2], "<hull>")
        hull_code = compile(hull_tree, "<hull>", "exec")
        preimport(hull_tree)
        import linecache
        linecache.cache["<hull>"] = (len(sys.argv[2]), None, sys.argv[2].splitlines(True), "<hull>")
    versions = {}
    for name in ("numpy", "pandas"):
        try:
            versions[name] = importlib.import_module(name).__version__
        except Exception as e:  # noqa: BLE001 -- any failure to import is only recorded
            versions[name] = None
            sys.stderr.write("hull zygote: cannot import %s: %s\n" % (name, e))
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        sys.stderr.write("hull zygote: %d threads after the imports; setns needs one\n" % threads)
    sys.stdout.flush()
    sys.stderr.flush()
    # hull serve starts this at the lowest priority of its session's scheduling group, so the
    # imports above do not compete with its first requests: back to the default for the forks
    # (before the ready message: who reads that sees the default).
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("0")
    except OSError:
        pass
    try:
        sock.send(json.dumps({"ready": {"numpy": versions["numpy"], "pandas": versions["pandas"],
                                        "threads": threads}}).encode())
    except OSError:
        return 0  # hull serve is gone already

    signal.signal(signal.SIGCHLD, lambda s, f: reap())
    # Every object made so far (numpy, pandas, the compiled cell and hull code) goes to the
    # collector's permanent generation: a collection in A or B never walks them, so it never
    # writes their headers and their pages stay shared with this process (copy-on-write) instead
    # of being copied into every session (bench/sessions-density.sh: the cost per idle session).
    gc.collect()
    gc.freeze()
    while True:
        reap()
        try:
            data, fds, flags, _ = socket.recv_fds(sock, MAX_REQUEST, MAX_FDS, socket.MSG_CMSG_CLOEXEC)
        except InterruptedError:
            continue
        except OSError:
            return 0  # hull serve is gone: nothing more to serve
        if not data and not fds:
            return 0
        req = None
        if not flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            req = parse_request(data, fds)
        if req is not None:
            sys.stdout.flush()
            sys.stderr.flush()
            try:
                pid = os.fork()
            except OSError as e:
                send_error(fds[1], "fork", e.errno or 0, e.strerror or str(e))
                pid = -1
            if pid == 0:
                try:
                    run_a(req, fds, cell_code, hull_code)
                finally:
                    os._exit(1)
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(zygote())
