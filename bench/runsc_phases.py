#!/usr/bin/env python3
# bench/runsc_phases.py DIR...: where runsc's start goes, from its own --debug logs. Each DIR holds
# the logs of many `runsc --debug --debug-log=DIR/ run` (one run.txt, gofer.txt and boot.txt per
# run); for each milestone of a run (the gofer and sandbox started and re-exec'd, the sentry's
# platform, the container started, the first process exec'd and ended, runsc's exit), its median
# time in ms from runsc's own start, per DIR side by side, and the median of each phase (from one
# milestone to the next). Used by bench/kernel-tier-phases.sh; see docs/BENCHMARKS.md.
import glob
import os
import re
import statistics
import sys

# (file, text on the line, which occurrence, name)
MILESTONES = [
    ("run", "Starting gofer", 0, "gofer forked"),
    ("run", "Sandbox started", 0, "sandbox forked"),
    ("gofer", "Execve", 0, "gofer re-exec"),
    ("gofer", "Serving \"/\"", 0, "gofer serving"),
    ("boot", "Execve", 0, "sandbox re-exec"),
    ("boot", "main.go:255]", 1, "sentry main"),
    ("boot", "loader.go:539] Platform", 0, "platform"),
    ("boot", "Watchdog waiting", 0, "kernel ready"),
    ("run", "Start container", 0, "start RPC"),
    ("boot", "EXEC:", 0, "EXEC"),
    ("boot", "Installing OCI seccomp", 0, "loaded, OCI seccomp"),
    ("boot", "Process should have started", 0, "started"),
    ("boot", "Transitioning from exit state TaskExitNone", 0, "process exits"),
    ("boot", "Wait returned", 0, "wait returned"),
    ("run", "Destroy container", 0, "destroy"),
    ("run", "Exiting with status", 0, "runsc exit"),
]
STAMP = re.compile(r"[IDWE]\d{4} (\d\d):(\d\d):(\d\d\.\d+)")


def stamp(line):
    m = STAMP.match(line)
    return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3)) if m else None


def runs(d):
    """The runs of a log directory: {kind: path} for run, gofer and boot, in start order."""
    out = []
    for f in sorted(glob.glob(os.path.join(d, "runsc.log.*"))):
        kind = f.rsplit(".", 2)[-2]
        if kind == "run":
            out.append({"run": f})
        elif out:
            out[-1][kind] = f
    return out


def milestones(r):
    lines = {}
    for kind, path in r.items():
        with open(path, errors="replace") as f:
            lines[kind] = [l for l in f if stamp(l) is not None]
    if not lines.get("run"):
        return {}
    t0 = stamp(lines["run"][0])
    res = {}
    for kind, text, occ, name in MILESTONES:
        hits = [l for l in lines.get(kind, []) if text in l]
        if len(hits) > occ:
            res[name] = (stamp(hits[occ]) - t0) * 1000
    return res


def main():
    dirs = sys.argv[1:]
    data = {d: [milestones(r) for r in runs(d)] for d in dirs}
    names = [os.path.basename(d.rstrip("/")) for d in dirs]
    print("%-22s" % "milestone (median ms)" + "".join("%14s" % n for n in names) + "   phase medians (ms)")
    prev = None
    for _, _, _, name in MILESTONES:
        row = "%-22s" % name
        for d in dirs:
            v = [m[name] for m in data[d] if name in m]
            row += "%14.1f" % statistics.median(v) if v else "%14s" % "-"
        if prev:
            row += "  "
            for d in dirs:
                v = [m[name] - m[prev] for m in data[d] if name in m and prev in m]
                row += "%8.1f" % statistics.median(v) if v else "%8s" % "-"
        print(row)
        prev = name
    print("# runs: " + ", ".join("%s %d" % (n, len(data[d])) for n, d in zip(names, dirs)))


main()
