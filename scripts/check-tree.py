#!/usr/bin/env python3
"""check-tree.py: the shape of src/ that the build and the style guide promise.

  layers  each directory of src/ includes headers only from the directories below it (the table
          LAYERS), and an API face (src/api/<face>) never includes another face;
  sizes   no file of src/, tests/, fuzz/ or bench/ over 1,200 lines, no C function over 150.

Prints one line per violation (FILE:LINE: what) and exits 1 when there is any; 0 and a summary
line otherwise. Generated tables may be listed in SIZE_EXEMPT with the reason."""
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILE_MAX, FUNCTION_MAX = 1200, 150

# What each directory of src/ may include besides itself. Order of the layers, lowest first:
# basic, shared, the components (sandbox, handles, env, store), the session core, the agent, the
# tools and MCP, http, the service, the faces, the mock model, the CLI.
COMPONENTS = ["basic", "shared"]
LAYERS = {
    "basic": [],
    "shared": ["basic"],
    "sandbox": ["basic", "shared"],
    "store": ["basic", "shared"],
    "handles": ["basic", "shared", "sandbox"],
    "docread": ["basic"],  # hull-docread, a program of its own (the document parser)
    "env": ["basic", "shared", "sandbox"],
    "session": ["basic", "shared", "sandbox", "handles", "env"],
    "agent": ["basic", "shared", "sandbox", "handles", "env", "session"],
    "tools": ["basic", "shared", "sandbox", "handles", "env", "session", "agent"],
    "mcp": ["basic", "shared", "sandbox", "handles", "env", "session", "agent", "tools"],
    "http": ["basic", "shared"],
    "mock": ["basic", "shared", "http"],
    "service": ["basic", "shared", "sandbox", "handles", "env", "store", "session", "agent", "tools", "mcp",
                "http:metrics.h"],
}
BELOW_FACES = ["basic", "shared", "sandbox", "handles", "env", "store", "session", "agent", "tools", "mcp", "http",
               "service"]
# src/api/connect is not a face: the Connect wording two faces share.
LAYERS["api/connect"] = BELOW_FACES
FACES = ["plimsoll", "hull", "cmav1", "agui", "mcp", "console", "ops"]
for face in FACES:
    LAYERS["api/" + face] = BELOW_FACES + (["api/connect"] if face in ("plimsoll", "hull") else [])
LAYERS["cli"] = None  # main() wires everything together: it may include any layer

SIZE_EXEMPT = {}


def src_headers():
    where = {}
    for root, _, files in os.walk(os.path.join(TOP, "src")):
        for f in files:
            if f.endswith(".h"):
                where[f] = os.path.relpath(root, os.path.join(TOP, "src"))
    return where


def check_layers(out):
    where = src_headers()
    n = 0
    for root, _, files in os.walk(os.path.join(TOP, "src")):
        d = os.path.relpath(root, os.path.join(TOP, "src"))
        if not any(f.endswith((".c", ".h")) for f in files):
            continue
        if d not in LAYERS:
            out.append(f"src/{d}: a directory the layer table of scripts/check-tree.py does not know")
            continue
        allowed = LAYERS[d]
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            n += 1
            path = os.path.join(root, f)
            with open(path, encoding="utf-8") as fh:
                for i, line in enumerate(fh, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m or m.group(1) not in where:
                        continue
                    h, hd = m.group(1), where[m.group(1)]
                    if allowed is None or hd == d or hd in allowed or f"{hd}:{h}" in allowed:
                        continue
                    rel = os.path.relpath(path, TOP)
                    out.append(f"{rel}:{i}: includes {h} of src/{hd}, which src/{d} may not use "
                               f"(it may use: {', '.join(allowed) or 'nothing'})")
    return n


STRIP = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|//.*$')


def functions(lines):
    """(first line, last line, name) of each function body at file scope: a "{" that opens at
    depth 0 after a parameter list, to the "}" that closes it (strings, characters and comments
    passed over)."""
    depth, start, name, comment, head = 0, None, None, False, ""
    for i, line in enumerate(lines, 1):
        code = line
        if comment:
            if "*/" not in code:
                continue
            code, comment = code.split("*/", 1)[1], False
        code = re.sub(r"/\*.*?\*/", "", STRIP.sub('""', code))
        if "/*" in code:
            code, comment = code.split("/*", 1)[0], True
        if depth == 0 and not code.startswith((" ", "\t", "#")) and code.strip():
            head = code if "(" in code else (head + code if head else "")
        elif depth == 0 and head and code.strip():
            head += code
        for ch in code:
            if ch == "{":
                if depth == 0 and ")" in head and "=" not in head.split("(")[0]:
                    m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", head)
                    start, name = i, m.group(1) if m else "a function"
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    if start is not None:
                        yield start, i, name
                    start, head = None, ""
                if depth < 0:
                    depth = 0
        if depth == 0 and code.rstrip().endswith(";"):
            head = ""


def check_sizes(out):
    n = 0
    for top in ("src", "tests", "fuzz", "bench"):
        for root, _, files in os.walk(os.path.join(TOP, top)):
            if "node_modules" in root:
                continue
            for f in sorted(files):
                if not f.endswith((".c", ".h", ".py", ".js", ".sh")):
                    continue
                path = os.path.join(root, f)
                rel = os.path.relpath(path, TOP)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    lines = fh.read().split("\n")
                n += 1
                if len(lines) - 1 > FILE_MAX and rel not in SIZE_EXEMPT:
                    out.append(f"{rel}: {len(lines) - 1} lines (at most {FILE_MAX}: split it along its seams)")
                if not f.endswith(".c"):
                    continue
                for start, end, name in functions(lines):
                    if end - start > FUNCTION_MAX and rel not in SIZE_EXEMPT:
                        out.append(f"{rel}:{start}: {name} is {end - start} lines (at most {FUNCTION_MAX})")
    return n


def main():
    what = sys.argv[1:] or ["layers", "sizes"]
    out = []
    counts = []
    if "layers" in what:
        counts.append(f"{check_layers(out)} files' includes")
    if "sizes" in what:
        counts.append(f"{check_sizes(out)} files' sizes")
    for line in out:
        print(line)
    if out:
        print(f"check-tree: {len(out)} violations", file=sys.stderr)
        return 1
    print(f"check-tree: {' and '.join(counts)} as they should be")
    return 0


if __name__ == "__main__":
    sys.exit(main())
