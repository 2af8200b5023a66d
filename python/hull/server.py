"""The embedded server: a private ``hull serve`` for this process, on a unix socket (and a
loopback port the library does not use), under a temporary HULL_HOME, with a random API key so
no other local user can drive it; stopped, and its directory removed, at exit.

This module is what solve() imports before it spawns the server, so it imports only what the
interpreter has loaded anyway (os, select, time, atexit, _thread): subprocess (with signal, enum,
threading, selectors), tempfile (with random and shutil) and shutil (with fnmatch and re) took
~20 ms before the spawn, all of it on the cold solve's path. The spawn is os.posix_spawn (a
vfork-style start), the directory a mkdir of a random name, the process watched by its pidfd."""
import _thread
import atexit
import os
import select
import time

from .errors import SandboxError

_lock = _thread.allocate_lock()
_servers = {}  # config -> EmbeddedServer: one per distinct binary and model settings
SIGTERM, SIGKILL = 15, 9  # Linux's numbers (hull is Linux-only): the signal module imports enum


def _which(name):
    """shutil.which(name) for a plain name, without shutil's imports."""
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        p = os.path.join(d or os.curdir, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def _make_root(prefix="hull-py-"):
    """tempfile.mkdtemp(prefix=prefix) without tempfile's imports: a new directory (0700, made by
    mkdir: never one that existed) in the first usable of $TMPDIR, $TEMP, $TMP, /tmp, /var/tmp,
    /usr/tmp (tempfile's order)."""
    dirs = [os.environ.get(v) for v in ("TMPDIR", "TEMP", "TMP")] + ["/tmp", "/var/tmp", "/usr/tmp"]
    err = None
    for d in dirs:
        if not d:
            continue
        for _ in range(100):
            path = os.path.join(os.path.abspath(d), prefix + os.urandom(6).hex())
            try:
                os.mkdir(path, 0o700)
                return path
            except FileExistsError:
                continue
            except OSError as e:
                err = e
                break
    raise SandboxError("no temporary directory for the embedded server: %s" % err, "server_start_failed")


def _inherited_fds(keep):
    """This process's inheritable fds from 3 on, but keep: what subprocess's close_fds would
    close in the child (Python makes its own fds non-inheritable, PEP 446; a program may not)."""
    out = []
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return out
    for name in names:
        fd = int(name)
        if fd < 3 or fd in keep:
            continue
        try:
            if os.get_inheritable(fd):
                out.append(fd)
        except OSError:  # the listing's own fd, closed by now
            pass
    return out


class _Process:
    """The spawned hull serve: what the library used of subprocess.Popen (pid, returncode, poll,
    wait, send_signal), on os.waitpid and a pidfd."""

    class Timeout(Exception):
        pass

    def __init__(self, pid):
        self.pid, self.returncode = pid, None
        self._reap_lock = _thread.allocate_lock()  # one reaper: a second waitpid would see ECHILD
        try:
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):  # before Linux 5.3: wait() polls
            self._pidfd = None

    def poll(self):
        with self._reap_lock:
            return self._poll()

    def _poll(self):
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else (SIGCHLD ignored): as subprocess does
                pid, status = self.pid, 0
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise _Process.Timeout()
            if self._pidfd is not None:  # readable once it ended (and still after it was reaped)
                select.select([self._pidfd], [], [], left)
            else:
                time.sleep(0.005 if left is None else min(0.005, left))
        return self.returncode

    def __del__(self):  # the pidfd stays open until then: a waiter in another thread may be selecting on it
        fd, self._pidfd = getattr(self, "_pidfd", None), None
        if fd is not None:
            os.close(fd)

    def send_signal(self, sig):
        if self.poll() is None:  # never a pid that was reaped (and may be reused)
            os.kill(self.pid, sig)


def _spawn(cmd, env, log_fd, ready_w):
    """Start cmd in a session of its own, stdin /dev/null, stdout and stderr to log_fd, ready_w
    (3 or more) kept open in it and no other fd of this process: a _Process."""
    low = None
    if log_fd < 3:  # fds 0-2 are the child's own: the source of its dup2s must sit above them
        import fcntl  # a built-in extension: no imports of its own

        log_fd = low = fcntl.fcntl(log_fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0), (os.POSIX_SPAWN_DUP2, log_fd, 1),
                   (os.POSIX_SPAWN_DUP2, log_fd, 2),
                   (os.POSIX_SPAWN_DUP2, ready_w, ready_w)]  # onto itself: kept open across the exec
        actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited_fds({log_fd, ready_w})]
        return _Process(os.posix_spawn(cmd[0], cmd, env, file_actions=actions, setsid=True))
    finally:
        if low is not None:
            os.close(low)


def find_binary(explicit=None):
    """The hull binary: explicit, $HULL_BIN, hull on PATH, or the repo's build/hull."""
    cands = []
    if explicit:
        cands.append(explicit)
    if os.environ.get("HULL_BIN"):
        cands.append(os.environ["HULL_BIN"])
    w = _which("hull")
    if w:
        cands.append(w)
    here = os.path.dirname(os.path.abspath(__file__))
    cands.append(os.path.join(here, "..", "..", "build", "hull"))
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    raise SandboxError("no hull binary: set HULL_BIN to it, put hull on PATH, or name a running server with "
                       "HULL_SERVER (tried: %s)" % ", ".join(cands), "server_not_found")


class EmbeddedServer:
    """A private ``hull serve``. ``model``, ``provider``, ``base_url``, ``model_api_key``: its model
    flags (else hull serve's environment: HULL_MODEL, HULL_PROVIDER, ANTHROPIC_API_KEY...);
    ``args``: more flags. ``wait``: False returns once the process is started; wait_ready()
    (which the first request's caller does) then waits for its ready notice, so the caller's own
    set-up overlaps the server's start."""

    def __init__(self, binary=None, model=None, provider=None, base_url=None, model_api_key=None, args=(),
                 start_timeout=30.0, stop_at_exit=True, wait=True):
        self.binary = find_binary(binary)
        self.root = _make_root()
        os.chmod(self.root, 0o711)
        self.home = os.path.join(self.root, "home")
        os.mkdir(self.home, 0o711)
        self.socket = os.path.join(self.root, "hull.sock")
        self.api_key = "hullpy_" + os.urandom(24).hex()  # what secrets.token_hex does, without its imports
        self.server = "unix:" + self.socket
        cmd = [self.binary, "serve", "--listen", "127.0.0.1:0", "--socket", self.socket,
               "--work-dir", self.root, "--log-level", "warn"]
        for flag, v in (("--model", model), ("--provider", provider), ("--base-url", base_url)):
            if v:
                cmd += [flag, v]
        env = dict(os.environ)
        env["HULL_HOME"] = self.home
        env["HULL_SERVE_KEY"] = self.api_key
        env.pop("HULL_DB", None)
        # For this library HULL_API_KEY is a hull server's key (with HULL_SERVER); hull serve would
        # take it for the model's key and send it to the provider: it stays out.
        env.pop("HULL_API_KEY", None)
        if model_api_key:  # by the environment, never on the command line (ps shows that)
            env["ANTHROPIC_API_KEY" if (provider or "").lower() == "anthropic" else "OPENAI_API_KEY"] = model_api_key
        cmd += list(args)
        self._log = open(os.path.join(self.root, "serve.log"), "w+b")
        # readiness is a notice, not a poll: hull serve writes "ready ADDR" to this pipe once it
        # listens (--ready-fd); EOF without it means it ended first
        ready_r, ready_w = os.pipe()
        self.started_at = time.monotonic()
        self.ready_at = None  # time.monotonic() when its ready notice came (the start's length: ready_at - started_at)
        try:
            if ready_w < 3:  # it is named on the command line: the number must be the child's too
                import fcntl

                low, ready_w = ready_w, fcntl.fcntl(ready_w, fcntl.F_DUPFD_CLOEXEC, 3)
                os.close(low)
            self.proc = _spawn(cmd + ["--ready-fd", str(ready_w)], env, self._log.fileno(), ready_w)
        except OSError as e:
            os.close(ready_r)
            self._log.close()
            self._log = None
            self._cleanup_dir()
            raise SandboxError("cannot start %s: %s" % (self.binary, e), "server_start_failed")
        finally:
            os.close(ready_w)
        self._ready_r, self._ready_lock, self._start_error = ready_r, _thread.allocate_lock(), None
        self._start_deadline = time.monotonic() + start_timeout
        if stop_at_exit:
            atexit.register(self.stop)
        if wait:
            from . import client  # noqa: F401 (the first request's module, imported while it starts)

            self.wait_ready()

    def wait_ready(self):
        """Return once hull serve has said it listens (at once after the first time); raise
        SandboxError, with its log, when it ended or timed out first (it is stopped then)."""
        with self._ready_lock:
            if self._ready_r is None:
                if self._start_error is not None:
                    raise self._start_error
                return
            try:
                ready = self._wait_ready(self._ready_r, self._start_deadline - time.monotonic())
                if ready:
                    self.ready_at = time.monotonic()
            finally:
                os.close(self._ready_r)
                self._ready_r = None
            if not ready:
                log = self.log_tail()
                self.stop()
                self._start_error = SandboxError("the embedded hull serve did not start: %s" % (log or "no output"),
                                                 "server_start_failed")
                raise self._start_error

    def _wait_ready(self, fd, timeout):
        """True once hull serve wrote its ready line on fd; False when it ended or timed out first."""
        deadline = time.monotonic() + timeout
        got = b""
        while b"\n" not in got:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return False
            chunk = os.read(fd, 256)
            if not chunk:
                return False
            got += chunk
        return got.startswith(b"ready ")

    def log_tail(self, n=2000):
        try:
            with open(os.path.join(self.root, "serve.log"), "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def _cleanup_dir(self):
        import shutil  # here: it imports fnmatch and re, and the removal is the last step

        shutil.rmtree(self.root, ignore_errors=True)

    def _terminate(self):
        p = getattr(self, "proc", None)
        if p is not None and p.poll() is None:
            p.send_signal(SIGTERM)

    def stop(self, timeout=10.0):
        """SIGTERM, wait (then SIGKILL the group), remove the directory. Idempotent."""
        p = getattr(self, "proc", None)
        lock = getattr(self, "_ready_lock", None)
        if lock is not None and lock.acquire(blocking=False):  # else a waiter has the pipe: it sees the end
            try:
                if self._ready_r is not None:  # stopped before anyone waited for it
                    os.close(self._ready_r)
                    self._ready_r = None
                    self._start_error = SandboxError("the embedded hull serve was stopped", "server_stopped")
            finally:
                lock.release()
        if p is not None and p.poll() is None:
            try:
                self._terminate()
                p.wait(timeout)
            except _Process.Timeout:
                try:
                    os.killpg(p.pid, SIGKILL)
                except OSError:
                    pass
                p.wait()
        if getattr(self, "_log", None):
            self._log.close()
            self._log = None
        self._cleanup_dir()
        try:
            atexit.unregister(self.stop)
        except Exception:
            pass

    @property
    def running(self):
        return self.proc.poll() is None


def default_server(wait=True, **kw):
    """The process's shared embedded server for these settings, started on first use. ``wait``:
    False returns it maybe still starting (call its wait_ready() before the first request)."""
    key = tuple(sorted((k, v if not isinstance(v, list) else tuple(v)) for k, v in kw.items()))
    with _lock:
        srv = _servers.get(key)
        if srv is None or not srv.running:
            srv = _servers[key] = EmbeddedServer(stop_at_exit=False, wait=False, **kw)
    if wait:
        srv.wait_ready()
    return srv


def embedded_settings(hull_bin=None, model=None, provider=None, base_url=None, model_api_key=None, serve_args=(),
                      private_server=False, **_):
    """The embedded server's settings from Conversation's (and solve's) keyword arguments: the
    key default_server() finds a server by."""
    embedded = {"binary": hull_bin, "model": model if provider or base_url else None, "provider": provider,
                "base_url": base_url, "model_api_key": model_api_key, "args": tuple(serve_args)}
    if private_server:
        embedded["private"] = True
    return embedded


def prestart(kw):
    """solve()'s first step: spawn the shared embedded server these arguments will use (none when
    they name a server or ask for a private one), not waited for, so the library's own imports
    are made while it starts. The Conversation then finds it by the same settings."""
    embedded = embedded_settings(**kw)
    if kw.get("server") or os.environ.get("HULL_SERVER") or embedded.get("private"):
        return None
    return default_server(wait=False, **embedded)


def stop_default():
    """Stop the shared embedded servers now (they also stop at exit)."""
    with _lock:
        servers = list(_servers.values())
        _servers.clear()
    for srv in servers:  # all at once: each takes a moment to stop
        srv._terminate()
    for srv in servers:
        srv.stop()


atexit.register(stop_default)
