#!/usr/bin/python3
"""bench/cell-cpu.py: the CPU `hull serve` spends per session cell (issue 26), run by hand.

  cell-cpu.py HULL [N] [lean|http]

Starts HULL serve as bench/sessions.py does, opens a session, runs 100 warm-up cells `1+1`,
then N (default 3000) more over one keep-alive connection (bench/sessions.py's LeanClient, or
its http.client Client with "http"), and prints per cell: the wall time, hull serve's CPU
(utime + stime of every thread, from /proc/PID/stat), its context switches (every thread's
voluntary + involuntary, from /proc/PID/task/*/status) and the client's own CPU. The sandbox's
processes (init, interpreter) are not hull serve's and are not counted. With HOLD=FILE it
writes hull serve's pid to FILE after the warm-up and waits until FILE is removed (to attach
strace or perf first)."""
import importlib.util
import os
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("sessions", os.path.join(here, "sessions.py"))
sb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sb)


def cpu_s(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def switches(pid):
    n = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            for line in open("/proc/%d/task/%s/status" % (pid, t)):
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    n += int(line.split()[1])
        except OSError:
            pass  # a thread that ended
    return n


def main():
    hull = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    mode = sys.argv[3] if len(sys.argv) > 3 else "lean"
    tmp = tempfile.mkdtemp(prefix="hull-cellcpu.")
    os.chmod(tmp, 0o711)
    daemon, port = sb.start_daemon(hull, tmp, [])
    try:
        c = sb.Client(port)
        sid = c.open()
        cl = sb.LeanClient(port) if mode == "lean" else c
        for _ in range(100):
            if not cl.cell(sid, "1+1", b"2\n"):
                sys.exit("cell-cpu.py: the warm-up cell failed")
        hold = os.environ.get("HOLD")
        if hold:
            open(hold, "w").write(str(daemon.pid))
            while os.path.exists(hold):
                time.sleep(0.1)
        c0, s0, t0, p0 = cpu_s(daemon.pid), switches(daemon.pid), time.perf_counter(), time.process_time()
        ok = sum(1 for _ in range(n) if cl.cell(sid, "1+1", b"2\n"))
        c1, s1, t1, p1 = cpu_s(daemon.pid), switches(daemon.pid), time.perf_counter(), time.process_time()
        print("%s %s: %d/%d cells, wall %.3f ms, hull serve CPU %.3f ms, context switches %.2f, client CPU %.3f ms"
              " per cell" % (hull, mode, ok, n, (t1 - t0) / n * 1e3, (c1 - c0) / n * 1e3, (s1 - s0) / n,
                            (p1 - p0) / n * 1e3))
    finally:
        daemon.terminate()
        daemon.wait(40)
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
