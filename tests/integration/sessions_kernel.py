"""sessions_kernel.py: sessions_client.py's `kernel` command: a plimsoll session at minimumIsolation
"kernel" (one gVisor sandbox per session), cells in both languages, payloads, workspace operations, a
proof that the code runs under gVisor's kernel, limits (a deadline that leaves nothing behind, a fork
bomb, output bounds), and the refusal of "vm". Standard library only."""
import base64
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_client as sc  # noqa: E402
from serve_client import check  # noqa: E402
from sessions_common import Session, Ws, cell, out_of, refusal, tar_of  # noqa: E402


def kernel(url):
    c = sc.Client(url)
    refusal("OpenSession at minimumIsolation vm is refused before anything starts",
            c.call("OpenSession", {"protocol": 3, "minimumIsolation": "vm"}), 400, "failed_precondition", "isolation")
    s = Session(c, "kernel")
    s.open(floor="kernel")
    if not s.sid:
        return
    check("kernel: OpenSession states isolation kernel", s.open_answer.get("isolation") == "kernel",
          repr(s.open_answer)[:300])
    _, run = s.run("kernel 1: python cell proves gVisor (uname 4.4.0, dmesg)",
                   cell("python", "import os, platform\nprint(platform.release())\n"
                        "print(open('/proc/version').read().split()[2])\nv = 21\nos.getuid()"),
                   minimumIsolation="kernel")
    check("kernel: the cell sees gVisor's kernel, as the sandbox user",
          out_of(run, "cell")[0] == b"4.4.0\n4.4.0\n1000\n", repr(out_of(run, "cell")[:2]))
    _, run = s.run("kernel 2: the interpreter's state persists", cell("python", "v * 2"), minimumIsolation="kernel")
    check("kernel: state persists across cells", out_of(run, "cell")[0] == b"42\n", repr(out_of(run, "cell")[:2]))
    _, run = s.run("kernel 3: javascript cell", cell("javascript", "console.log(require('os').release()); 6 * 7"),
                   minimumIsolation="kernel")
    check("kernel: the javascript cell runs under gVisor", out_of(run, "cell")[0].startswith(b"4.4.0\n"),
          repr(out_of(run, "cell")[:2]))
    s.run("kernel 4: project payload", {"project": {"files": [{"path": "m.py", "content": "print(7)\n"}],
                                                    "steps": ["python3 m.py > o.txt", "cat o.txt"],
                                                    "artifacts": ["o.txt"]}}, minimumIsolation="kernel")
    _, run = s.run("kernel 5: a cell past its deadline", cell("python", "import subprocess\n"
                                                           "subprocess.Popen(['sleep', '300'])\nwhile 1: pass"),
                   timeoutMs=2000)
    w = Ws(c, s.sid, s)
    a = w.call("Exec", command="dmesg | head -1; ps -e -o comm= | sort | tr '\\n' ' '")
    j = w.j(a) or {}
    text = base64.b64decode(j.get("stdout", "") or "").decode(errors="replace") if j else ""
    check("kernel: Exec sees gVisor's dmesg and no sleep left by the timed-out cell",
          "gVisor" in text and "sleep" not in text, repr(j)[:400])
    w.call("Write", path="w/b.txt", content=base64.b64encode(b"one\x00two\n").decode())
    w.call("Edit", path="w/b.txt", oldText="two", newText="2")
    w.call("Hydrate", archive=base64.b64encode(tar_of([(dict(name="h/x.txt"), b"hydrated")])).decode())
    a = w.call("Exec", command="cat h/x.txt; echo; tr '\\0' '|' < w/b.txt; python3 -c \"import os; print(os.stat('w/b.txt').st_uid)\"")
    j = w.j(a) or {}
    text = base64.b64decode(j.get("stdout", "") or "").decode(errors="replace") if j else ""
    check("kernel: files the host wrote are the sandbox user's and visible inside",
          text == "hydrated\none|2\n1000\n", repr(text))
    forks = ("import resource, subprocess\nresource.setrlimit(resource.RLIMIT_NPROC, (40, 40))\nn = 0\n"
             "try:\n    for i in range(60):\n        subprocess.Popen(['sleep', '30']); n += 1\n"
             "except OSError:\n    pass\nprint('alive' if n < 40 else 'unbounded')")
    a = w.call("Exec", command="head -c 30000000 /dev/zero | tr '\\0' x; python3 -c \"$F\"", env={"F": forks},
               timeout=120)
    j = w.j(a) or {}
    check("kernel: a flood is cut and flagged, a fork past RLIMIT_NPROC fails inside gVisor, the session answers",
          base64.b64decode(j.get("stdout", "") or "").endswith(b"alive\n") and j.get("stdoutTruncated") is True,
          repr(a.body[:300]))
    _, run = s.run("kernel 6: a cell after them", cell("python", "import os\n"
                                                     "print(sum(1 for p in os.listdir('/proc') if p.isdigit()))\n6 * 7"))
    check("kernel: cells go on and no sleep is left (the agent, python, javascript)",
          out_of(run, "cell")[0] == b"3\n42\n", repr(out_of(run, "cell")[:2]))
    check("kernel: Exec, Write, Edit and Hydrate answered verified records in the chain",
          w.recorded >= 6 and not w.record_problems, "%d; %s" % (w.recorded, w.record_problems))
    s.close("kernel session closes")
    print("# kernel %s %d %s %s" % (s.fp, s.calls, s.last, s.sid))
