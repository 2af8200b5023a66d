#!/usr/bin/env python3
# bench/hyperfine_table.py FILE.json...: hyperfine's --export-json results as a table, each row's
# mean wall time and CPU (user + system) beside its ratio to the file's first command (the
# yardstick). Used by bench/read-document.sh and bench/read-document-ab.sh.
import json
import sys

for f in sys.argv[1:]:
    res = json.load(open(f))["results"]
    width = max(len(r["command"]) for r in res)
    base, cbase = res[0]["mean"], res[0]["user"] + res[0]["system"]
    print("  %-*s %18s %8s   %18s %8s" % (width, "", "wall (mean ± sd)", "ratio", "CPU user+sys", "ratio"))
    for r in res:
        cpu = r["user"] + r["system"]
        print("  %-*s %8.1f ms ± %5.1f %7.2fx   %15.1f ms %7.2fx" % (width, r["command"], r["mean"] * 1000,
                                                                  r["stddev"] * 1000, r["mean"] / base, cpu * 1000,
                                                                  cpu / cbase))
    print()
