# cell.py: hull's Python cell driver. The host runs it inside a session's sandbox as
# `/usr/bin/python3 -c <runtime/boot.py>` with fd 0 a sealed memfd holding this source and
# hull.py's, NUL-separated (boot.py reads them, puts /dev/null on fd 0 and runs this as __main__
# with hull.py's source in sys.argv[1]), or the zygote exec()s it into a fresh namespace and calls
# main(3, <hull.py compiled>). The module `hull` (runtime/hull.py), when given, is installed in
# sys.modules and its load, save, emit and publish are predefined in the namespace. Either way
# the process shows as hull-python in ps (its name and its command line, rewritten in place).
#
#   fd 0 /dev/null; fd 1, fd 2 the session's output pipes; fd 3 the control socket.
#   Frames on fd 3, both ways: u32 little-endian length N (1..64 MiB), then N bytes of UTF-8 JSON.
#   driver -> host  {"hello":{"pid":P,"language":"python","version":"3.11.2"}}
#   host -> driver  {"cell":{"code":"...","exchange":"/workspace/.hull/x-..."}}  (exchange optional:
#                   the directory where hull.save/emit/publish write during this cell)
#   driver -> host  {"done":{"status":0|1}}   after everything the cell wrote is in the pipes
#   EOF on fd 3: exit 0. A frame length out of bounds: exit 2.
#
# One persistent namespace (__name__ == "__main__"). If a cell's last statement is an expression,
# its value is printed with repr() unless it is None, as the REPL does. Errors print a traceback
# that shows the cell's frames only (files "<cell-N>", registered in linecache), status 1.
# SystemExit and KeyboardInterrupt raised by a cell end the cell, not the interpreter.

import sys

# `python3 -c` puts the working directory (/workspace, the sandboxed code's) first on sys.path: a
# planted json.py or ast.py would replace the driver's own imports. Out while the driver imports,
# back (at its place) for the cells.
_cwd_entry = sys.path.pop(0) if sys.path and sys.path[0] in ("", "/workspace") else None

import ast
import builtins
import json
import linecache
import os
import signal
import struct
import sys
import traceback
import types

MAX_FRAME = 64 << 20


def _read_exact(fd, n):
    """n bytes from fd; None on EOF before the first byte; exit(2) on EOF inside a frame."""
    chunks = []
    got = 0
    while got < n:
        try:
            b = os.read(fd, n - got)
        except KeyboardInterrupt:
            continue
        except BlockingIOError:
            import select
            select.select([fd], [], [])
            continue
        if not b:
            if got == 0:
                return None
            os._exit(2)
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except KeyboardInterrupt:
            continue
        except BlockingIOError:
            import select
            select.select([], [fd], [])
            continue
        view = view[n:]


def send_frame(fd, obj):
    body = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    _write_all(fd, struct.pack("<I", len(body)) + body)


def recv_frame(fd):
    """The next frame's bytes, or None on EOF."""
    head = _read_exact(fd, 4)
    if head is None:
        return None
    (n,) = struct.unpack("<I", head)
    if n < 1 or n > MAX_FRAME:
        os._exit(2)
    body = _read_exact(fd, n)
    if body is None:
        os._exit(2)
    return body


def _flush_all():
    for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if f is not None:
                f.flush()
        except Exception:
            pass


def _cell_traceback(exc):
    """Print exc with the driver's own frames left out: only frames of cells remain."""
    tb = exc.__traceback__
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell"):
        tb = tb.tb_next
    try:
        traceback.print_exception(type(exc), exc, tb, file=sys.stderr)
    except Exception:
        sys.stderr.write("%s: (traceback could not be printed)\n" % type(exc).__name__)


def compile_hull(source):
    """runtime/hull.py's source text compiled (its lines kept for tracebacks); a code object or
    None as it is."""
    if isinstance(source, str):
        lines = source.splitlines(True)
        linecache.cache["<hull>"] = (len(source), None, lines, "<hull>")
        source = compile(source, "<hull>", "exec")
    return source


def install_hull(source):
    """The module `hull` from its source text or code object, in sys.modules; None without one."""
    if source is None:
        return None
    try:
        source = compile_hull(source)
        mod = types.ModuleType("hull")
        mod.__dict__["__builtins__"] = builtins
        exec(source, mod.__dict__)
        mod._begin_call(None)
    except Exception as e:
        sys.stderr.write("hull: cell driver: the hull module did not load: %s: %s\n" % (type(e).__name__, e))
        return None
    sys.modules["hull"] = mod
    return mod


class Driver:
    def __init__(self, fd, hull=None):
        self.fd = fd
        self.count = 0
        mod = types.ModuleType("__main__")
        mod.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = mod
        self.ns = mod.__dict__
        self.hull = hull
        if hull is not None:
            for name in ("load", "save", "emit", "publish"):
                self.ns[name] = getattr(hull, name)

    def run(self, code):
        """Run one cell: 0 when it ran, 1 when it raised (the traceback is on stderr)."""
        self.count += 1
        name = "<cell-%d>" % self.count
        lines = code.splitlines(True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        linecache.cache[name] = (len(code), None, lines, name)
        try:
            tree = ast.parse(code, name, "exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            exec(compile(tree, name, "exec"), self.ns)
            if last is not None:
                value = eval(compile(last, name, "eval"), self.ns)
                if value is not None:
                    print(repr(value))
            return 0
        except BaseException as e:  # SystemExit and KeyboardInterrupt too: the cell ends, we do not
            _cell_traceback(e)
            return 1

    def serve(self):
        send_frame(self.fd, {"hello": {"pid": os.getpid(), "language": "python",
                                       "version": "%d.%d.%d" % sys.version_info[:3]}})
        while True:
            body = recv_frame(self.fd)
            if body is None:
                _flush_all()
                os._exit(0)
            code = exchange = None
            try:
                msg = json.loads(body.decode("utf-8"))
                cell = msg.get("cell") if isinstance(msg, dict) else None
                if isinstance(cell, dict) and isinstance(cell.get("code"), str):
                    code = cell["code"]
                    if isinstance(cell.get("exchange"), str):
                        exchange = cell["exchange"]
            except (ValueError, UnicodeDecodeError):
                pass
            if code is None:
                try:
                    sys.stderr.write("hull: cell driver: not a cell frame\n")
                except Exception:
                    pass
                status = 1
            else:
                try:
                    if self.hull is not None:
                        self.hull._begin_call(exchange)
                    status = self.run(code)
                except BaseException:  # e.g. KeyboardInterrupt while printing a traceback
                    status = 1
                finally:
                    if self.hull is not None:
                        try:
                            self.hull._end_call()
                        except BaseException:
                            pass
            _flush_all()
            send_frame(self.fd, {"done": {"status": status}})


def retitle(name):
    """Show as name in ps: the process's name (comm) and its command line, rewritten in place as
    setproctitle(3) does (the name, NULs, and a last byte that is not NUL, so the kernel shows
    the area up to its first NUL). Best effort: nothing depends on it."""
    try:
        import ctypes
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48 and 49)
        title = name.encode()
        if start and end - start > len(title) + 1:
            ctypes.memmove(start, title + b"\0" * (end - start - len(title) - 1) + b" ", end - start)
        ctypes.CDLL(None).prctl(15, ctypes.c_char_p(title[:15]), 0, 0, 0)  # PR_SET_NAME
    except (ImportError, OSError, ValueError, IndexError, AttributeError):
        pass


def main(fd=3, hull=None):
    """Serve cells on fd; hull is runtime/hull.py's source or code object (None: no module)."""
    os.set_inheritable(fd, False)
    retitle("hull-python")
    # What an interactive interpreter has: ^C is KeyboardInterrupt, a closed pipe is an error.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    for f in (sys.stdout, sys.stderr):
        try:
            f.reconfigure(encoding="utf-8", errors="backslashreplace", line_buffering=True)
        except Exception:
            pass
    d = Driver(fd, install_hull(hull))
    # Everything of the driver and the hull module is imported: the cells get the working
    # directory back on sys.path (their own modules in /workspace import as usual).
    if _cwd_entry is not None:
        sys.path.insert(0, _cwd_entry)
    d.serve()


def warm(path):
    """The kernel tier's warm start (sbx-kernel-warm.c): imported numpy and pandas, wait in a
    checkpointed template sandbox for one handover (from the sandbox's agent, pid 1, which got it
    from the shim on its stdin: sbx-kernel-bundle.c) on the SOCK_SEQPACKET socket at path: a
    message (the START's environment, NUL-separated K=V) with three fds (the cell socket, stdout,
    stderr); answer "ok", then be the session's interpreter. Until then fds 0-3 are /dev/null of
    the sandbox (no host fd may be in the checkpoint) after one line "ready" on the host's stdout."""
    import importlib
    import socket
    # pandas, and what runtime/hull.py imports (the first cell's exec of it then costs little)
    for name in ("numpy", "pandas", "sqlite3", "ast", "datetime", "json"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    lst = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    lst.bind(path)
    # the handover comes from the sandbox's agent (root inside without CAP_DAC_OVERRIDE)
    os.chmod(path, 0o666)
    lst.listen(1)
    os.write(1, b"ready\n")
    null = os.open("/dev/null", os.O_RDWR)
    for f in (0, 1, 2, 3):
        os.dup2(null, f)
    os.close(null)
    while True:
        c, _ = lst.accept()
        try:
            msg, fds, _, _ = socket.recv_fds(c, 1 << 20, 3)
        except OSError:
            c.close()
            continue
        if len(fds) == 3:
            break
        for f in fds:
            os.close(f)
        c.close()
    lst.close()
    os.unlink(path)
    for f, to in zip(fds, (3, 1, 2)):
        os.dup2(f, to)
        os.close(f)
    os.environ.clear()
    for kv in msg.decode("utf-8", "surrogateescape").split("\0"):
        k, eq, v = kv.partition("=")
        if eq and k:
            os.environ[k] = v
    # Every session restored from the template starts from its memory: new seeds for each.
    import random
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    c.send(b"ok")
    c.close()


if __name__ == "__main__":
    _hull_source = sys.argv[1] if len(sys.argv) > 1 else None
    del sys.argv[1:]
    _warm = os.environ.pop("HULL_WARM_SOCK", None)
    if _warm:
        try:  # compiled before the checkpoint: not on the first cell's way
            _hull_source = compile_hull(_hull_source)
        except Exception:
            pass
        warm(_warm)
    main(3, _hull_source)
