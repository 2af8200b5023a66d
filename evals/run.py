#!/usr/bin/python3
"""evals/run.py: sheath's eval tasks, run through `hull run` and graded.

    evals/run.py [--hull PATH] [--mock] [--out DIR] [TASK...]

Each task (evals/tasks/<id>/task.json) is a prompt, input files handed in with --input, checks
on the answer (regular expressions that must all match) and on files the run leaves in its
workspace. The web tasks fetch local fixtures (evals/fixtures/, served on 127.0.0.1 by this
script; the run's web_fetch allowlist names 127.0.0.1 and nothing else), so every task is
hermetic: no task needs the internet.

Without --mock the model is the one hull's settings name (OPENAI_API_KEY or ANTHROPIC_API_KEY,
HULL_MODEL, HULL_BASE_URL, ...; see docs/AGENT.md): a real evaluation of a real model.

With --mock each task runs against `hull mock-model` with the task's mock.json: scripted answers
that take the same tool paths a model takes (web_fetch -> handle -> run_python, query_handle over
input handles, files written in the workspace), whose final text quotes the tools' real results
({{last_tool_result}}), so a check passes only when the sandbox, the tools and the loop did their
part. Each task runs twice, once per wire format (OpenAI streamed and Anthropic whole, or the
other way round). CI runs this (tests/integration/test-evals.sh).

Prints "ok - ID" / "not ok - ID: why" per run, writes evals/results/<id>[-api].json (answer,
stop, usage, tools used, failures), and exits 1 when a run failed.
"""

import argparse
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_TIMEOUT_S = 300


class Fixtures(http.server.BaseHTTPRequestHandler):
    routes = {}

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        route = self.routes.get(path)
        if not route:
            self.send_error(404)
            return
        with open(os.path.join(HERE, "fixtures", route[0]), "rb") as f:
            body = f.read()
        self.send_response(200)
        self.send_header("Content-Type", route[1])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        pass


def start_fixtures():
    with open(os.path.join(HERE, "fixtures", "routes.json")) as f:
        Fixtures.routes = json.load(f)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fixtures)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d" % server.server_address[1]


def start_mock(hull, script_path, record_path):
    p = subprocess.Popen([hull, "mock-model", "--script", script_path, "--listen", "127.0.0.1:0",
                          "--record", record_path, "--log-level", "error"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    m = re.match(r"listening on (http://\S+)", line)
    if not m:
        p.kill()
        err = p.stderr.read()
        raise RuntimeError("hull mock-model did not start: %s %s" % (line, err.strip()))
    return p, m.group(1)


def grade(task, answer, run_dir):
    failures = []
    for pattern in task.get("checks", []):
        if not re.search(pattern, answer or ""):
            failures.append("the answer does not match /%s/" % pattern)
    for want in task.get("files", []):
        path = os.path.join(run_dir or "", "workspace", want["path"])
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as e:
            failures.append("%s: %s" % (want["path"], e.strerror))
            continue
        if "lines" in want and len(lines) != want["lines"]:
            failures.append("%s has %d lines, not %d" % (want["path"], len(lines), want["lines"]))
        if "first_line" in want and (not lines or lines[0].strip() != want["first_line"]):
            failures.append("%s does not start with %s" % (want["path"], want["first_line"]))
        if "contains" in want and want["contains"] not in lines:
            failures.append("%s has no line %s" % (want["path"], want["contains"]))
    return failures


def tools_used(run_dir):
    used = []
    try:
        with open(os.path.join(run_dir, "transcript.jsonl")) as f:
            for line in f:
                ev = json.loads(line)
                if ev.get("type") == "agent.tool_use":
                    used.append(ev.get("name"))
    except (OSError, ValueError, TypeError):
        pass
    return used


def run_one(args, task, tdir, fixtures_url, api, stream, home):
    env = dict(os.environ)
    env["HULL_HOME"] = home
    prompt = task["prompt"].replace("@FIXTURES@", fixtures_url)
    mock = None
    label = task["id"]
    if args.mock:
        label = "%s [%s, %s]" % (task["id"], api, "streamed" if stream else "whole")
        with open(os.path.join(tdir, "mock.json")) as f:
            script = f.read().replace("@FIXTURES@", fixtures_url)
        script_path = os.path.join(home, "mock-%s.json" % api)
        with open(script_path, "w") as f:
            f.write(script)
        mock, url = start_mock(args.hull, script_path, os.path.join(home, "requests-%s.jsonl" % api))
        for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HULL_API_KEY", "HULL_MODEL", "HULL_BASE_URL",
                  "HULL_PROVIDER", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
            env.pop(k, None)
        env["HULL_PROVIDER"] = api
        env["HULL_BASE_URL"] = url + "/v1" if api == "openai" else url
        env["HULL_API_KEY"] = "mock-key"
        env["HULL_MODEL"] = "mock-model"
    cmd = [args.hull, "run", prompt, "--keep", "--json", "--yes"]
    if args.mock and not stream:
        cmd.append("--no-stream")
    for name in task.get("inputs", []):
        cmd += ["--input", os.path.join(tdir, name)]
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired:
        out, err, rc = "", "timed out after %d s" % RUN_TIMEOUT_S, -1
    finally:
        if mock:
            mock.terminate()
            mock.wait(timeout=10)
    try:
        result = json.loads(out)
    except ValueError:
        result = {}
    answer = result.get("answer") or ""
    run_dir = result.get("dir")
    failures = []
    if rc != 0:
        failures.append("hull run exited %d: %s" % (rc, (result.get("error") or err.strip())[-400:]))
    failures += grade(task, answer, run_dir)
    record = {"id": task["id"], "api": api if args.mock else None, "prompt": prompt, "answer": answer,
              "stop": result.get("stop"), "usage": result.get("usage"),
              "model_requests": result.get("model_requests"), "tool_calls": result.get("tool_calls"),
              "tools_used": tools_used(run_dir) if run_dir else [], "handles": result.get("handles"),
              "failures": failures, "passed": not failures}
    os.makedirs(args.out, exist_ok=True)
    name = task["id"] + ("-" + api if args.mock else "") + ".json"
    with open(os.path.join(args.out, name), "w") as f:
        json.dump(record, f, indent=2, ensure_ascii=False)
    if failures:
        print("not ok - %s: %s" % (label, "; ".join(failures)), flush=True)
    else:
        print("ok - %s (%d tool calls: %s)" % (label, len(record["tools_used"]), ", ".join(record["tools_used"])),
              flush=True)
    if run_dir and not failures and args.mock:
        shutil.rmtree(run_dir, ignore_errors=True)
    return not failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hull", default=os.path.join(HERE, "..", "build", "hull"))
    ap.add_argument("--mock", action="store_true", help="scripted answers from hull mock-model (offline)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--tasks-dir", default=os.path.join(HERE, "tasks"), help="where the tasks are (default: evals/tasks)")
    ap.add_argument("tasks", nargs="*")
    args = ap.parse_args()
    if not os.access(args.hull, os.X_OK):
        sys.exit("evals: no hull at %s (build it: ./build.sh build, or pass --hull)" % args.hull)
    ids = sorted(d for d in os.listdir(args.tasks_dir) if not d.startswith("."))
    unknown = [t for t in args.tasks if t not in ids]
    if unknown:
        sys.exit("evals: no task %s (tasks: %s)" % (", ".join(unknown), ", ".join(ids)))
    server, fixtures_url = start_fixtures()
    home = tempfile.mkdtemp(prefix="hull-evals-")
    os.chmod(home, 0o711)
    config = {}
    user_home = os.environ.get("HULL_HOME")
    if not args.mock and user_home and os.path.exists(os.path.join(user_home, "config.json")):
        with open(os.path.join(user_home, "config.json")) as f:
            config = json.load(f)
    config.setdefault("web", {})["allow_cidrs"] = ["127.0.0.1/32"]
    with open(os.path.join(home, "config.json"), "w") as f:
        json.dump(config, f)
    passed = failed = 0
    try:
        for i, tid in enumerate(t for t in ids if not args.tasks or t in args.tasks):
            tdir = os.path.join(args.tasks_dir, tid)
            with open(os.path.join(tdir, "task.json")) as f:
                task = json.load(f)
            runs = [(None, True)]
            if args.mock:
                runs = [("openai", i % 2 == 0), ("anthropic", i % 2 == 1)]
            for api, stream in runs:
                if run_one(args, task, tdir, fixtures_url, api, stream, home):
                    passed += 1
                else:
                    failed += 1
    finally:
        server.shutdown()
        if failed == 0:
            shutil.rmtree(home, ignore_errors=True)
        else:
            print("evals: the failed runs are kept under %s/runs" % home, flush=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
