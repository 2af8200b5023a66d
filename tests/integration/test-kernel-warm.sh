#!/bin/bash
# test-kernel-warm.sh: the kernel tier's warm start (sbx-kernel-warm.c): hull serve's first
# kernel-tier session of a shape makes a template (a sandbox whose python imported pandas,
# checkpointed in the serve's work root); the next sessions are restored from it and their first
# python cell finds pandas already imported. Two restored sessions are apart: each sees its own
# /workspace only (a file one writes is not in the other's, nor in the template's), its own
# fresh random state, and neither sees the other's processes. Nothing (runsc, bundle, template)
# outlives hull serve. Skipped without runsc or root.
source "$(dirname "$0")/../lib.sh"
PY=${PY:-/usr/bin/python3}

here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ] || ! command -v runsc >/dev/null; then
        skip "kernel-tier warm start" "needs runsc (Debian's package) and root"
        exit 0
fi
export TMPDIR=$TEST_TMP
export HULL_TEST_KERNEL_TIER=1
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME" "$TEST_TMP/work"
chmod 0711 "$TEST_TMP"
if ! start_server "$TEST_TMP/serve.log" --work-dir "$TEST_TMP/work"; then
        fail "hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi
if ! grep -q 'event=kernel-tier ' "$TEST_TMP/serve.log"; then
        skip "kernel-tier warm start" "runsc failed hull serve's self-check here (its log says why)"
        stop_server TERM 30
        exit 0
fi
HERE=$here timeout 600 "$PY" - "$URL" "$TEST_TMP/work" <<'PYEOF'
import glob, os, sys
sys.path.insert(0, os.environ["HERE"])
import serve_client as sc
from serve_client import check
from sessions_common import Session, Ws, cell, out_of

url, work = sys.argv[1], sys.argv[2]
c = sc.Client(url)
PROBE = """import os, sys, random
warm = 'pandas' in sys.modules
open('mine-%s', 'w').write('x')
print('warm', warm)
print('cwd', os.getcwd())
print('ws', sorted(n for n in os.listdir('/workspace') if not n.startswith('.')))
print('rand', random.getrandbits(64))
procs = []
for p in os.listdir('/proc'):
    try:
        procs.append(open('/proc/%%s/cmdline' %% p, 'rb').read().replace(b'\\0', b' ').decode())
    except OSError:
        pass
print('others', sum('hold-%s' in x for x in procs))
import subprocess
subprocess.Popen(['hold-%s', '30'], executable='/bin/sleep')
"""

def templates():
    return sorted(glob.glob(os.path.join(work, "hull-serve.*", "kernel-warm-*")))

def probe(s, name, me, other):
    _, run = s.run(name, cell("python", PROBE % (me, other, me)))
    out = out_of(run, "cell")[0] if run else b""
    lines = dict(l.split(" ", 1) for l in out.decode(errors="replace").splitlines() if " " in l)
    return lines

a = Session(c, "first")
a.open(floor="kernel")
la = probe(a, "the first kernel session's first cell (it makes the template)", "a", "b")
t = templates()
check("the first session made one template in the serve's work root", len(t) == 1 and
      os.path.isdir(os.path.join(t[0], "image")) and os.path.exists(os.path.join(t[0], "warm.pid")), repr(t))
check("the first session's cell ran in its own workspace", la.get("ws") == "['mine-a']" and
      la.get("cwd") == "/workspace", repr(la))
b, d = Session(c, "restored b"), Session(c, "restored d")
b.open(floor="kernel")
d.open(floor="kernel")
lb = probe(b, "a restored session's first cell", "b", "d")
ld = probe(d, "another restored session's first cell", "d", "b")
check("restored sessions' first python cell finds pandas imported (the template's python)",
      lb.get("warm") == "True" and ld.get("warm") == "True", "%r %r" % (lb, ld))
check("each restored session sees its own /workspace only (not the template's, not the other's)",
      lb.get("ws") == "['mine-b']" and ld.get("ws") == "['mine-d']" and lb.get("cwd") == "/workspace", "%r %r" % (lb, ld))
check("restored sessions get their own random state", lb.get("rand") and lb.get("rand") != ld.get("rand"),
      "%r %r" % (lb.get("rand"), ld.get("rand")))
_, run = b.run("b looks for d's process", cell("python", "import os\nprint(sum(b'hold-d' in open('/proc/%s/cmdline' % p, 'rb').read() for p in os.listdir('/proc') if p.isdigit()))"))
check("a restored session does not see another's processes", run is not None and out_of(run, "cell")[0].strip() == b"0",
      repr(out_of(run, "cell")[0] if run else None))
check("the template is reused, not made again", templates() == t, repr(templates()))
# A command first: the warm python is spared no more (the command could reach it); the first
# python cell then starts a cold interpreter, and works.
e = Session(c, "command first")
e.open(floor="kernel")
ea = Ws(c, e.sid, e).call("Exec", command="true")
check("a command before any cell runs", ea.status == 200, repr(ea.body[:300]))
le = probe(e, "the first cell after a command", "e", "b")
check("after a command, the first python cell is a cold interpreter in its own workspace",
      le.get("warm") == "False" and le.get("ws") == "['mine-e']", repr(le))
for s in (a, b, d, e):
    s.close("close " + s.label)
sys.exit(1 if sc.failures else 0)
PYEOF
check "the warm-start checks passed" test $? -eq 0
stop_server TERM 60
check "hull serve's work root, templates included, is gone after it stops" \
        sh -c "[ -z \"\$(ls -A '$TEST_TMP/work')\" ]"
# runsc's own processes end after hull serve's kill: on a busy machine that can take seconds
for i in $(seq 1 40); do
        left=$(pgrep -f -- "--root=$TEST_TMP/hull-oci" | wc -l)
        [ "$left" = 0 ] && break
        sleep 0.25
done
check "no runsc process of this test is left" test "$left" = 0
