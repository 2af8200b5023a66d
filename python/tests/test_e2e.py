"""End-to-end tests against a real hull serve (embedded, or HULL_SERVER) whose model is
`hull mock-model` with a script per test. Needs HULL_BIN (the built hull); skipped without it."""
import asyncio
import json
import os
import sqlite3
import subprocess
import tempfile
import time
import unittest
from typing import List, Literal, Optional

import hull

HULL_BIN = os.environ.get("HULL_BIN")


class Mock:
    """hull mock-model on a free loopback port with a script (a dict); .url, .requests()."""

    def __init__(self, script):
        self.dir = tempfile.mkdtemp(prefix="hull-py-mock-")
        path = os.path.join(self.dir, "script.json")
        with open(path, "w") as f:
            json.dump(script, f)
        self.record = os.path.join(self.dir, "requests.jsonl")
        self.proc = subprocess.Popen([HULL_BIN, "mock-model", "--script", path, "--listen", "127.0.0.1:0",
                                      "--record", self.record, "--log-level", "error"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.proc.stdout.readline().decode().strip()
        assert line.startswith("listening on "), line
        self.url = line[len("listening on "):]

    def requests(self):
        with open(self.record) as f:
            return [json.loads(l) for l in f if l.strip()]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.proc.stdout.close()
        subprocess.run(["rm", "-rf", self.dir])


def tool_results(req):
    """The tool_result blocks of a recorded Anthropic request, in order: (text, is_error)."""
    out = []
    for m in req["body"]["messages"]:
        if m["role"] == "user" and isinstance(m["content"], list):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    c = b.get("content")
                    text = c if isinstance(c, str) else "\n".join(x.get("text", "") for x in c or [])
                    out.append((text, bool(b.get("is_error"))))
    return out


@unittest.skipUnless(HULL_BIN and os.access(HULL_BIN, os.X_OK), "HULL_BIN (the built hull) is not set")
class E2E(unittest.TestCase):
    def opts(self, mock, **kw):
        o = dict(provider="anthropic", base_url=mock.url, model_api_key="sk-mock")
        o.update(kw)
        return o

    def test_solve_two_callables_error_big_status(self):
        calls = []

        def lookup(region: str, year: int = 2025, tags: Optional[List[str]] = None,
                   unit: Literal["eur", "usd"] = "eur") -> dict:
            """Sales of a region in a year."""
            calls.append((region, year, tags, unit))
            return {"region": region, "year": year, "total": 1234.5}

        def explode(reason: str) -> str:
            """Always fails."""
            raise RuntimeError("cannot: " + reason)

        def big(n: int) -> list:
            """n rows."""
            return [{"i": i, "name": "row %d" % i, "v": i * 0.5} for i in range(n)]

        mock = Mock({"then": "error", "steps": [
            {"tool_calls": [{"name": "lookup", "input": {"region": "north", "year": 2024.0, "tags": ["a", "b"]}},
                            {"name": "explode", "input": {"reason": "because"}}]},
            {"tool_calls": [{"name": "big", "input": {"n": 3000}}]},
            {"text": "done"}]})
        seen = []
        try:
            r = hull.solve("How are sales?", tools=[lookup, explode, big], on_status=seen.append, **self.opts(mock))
            with r:
                self.assertEqual(r.text, "done")
                self.assertEqual(calls, [("north", 2024, ["a", "b"], "eur")])
                self.assertIsInstance(calls[0][1], int)
                types = [e["type"] for e in seen]
                self.assertEqual(types, [e["type"] for e in r.events])
                self.assertEqual(types.count("agent.custom_tool_use"), 3)
                self.assertEqual(types[-1], "session.status_idle")
                reqs = mock.requests()
                self.assertEqual(len(reqs), 3)
                res = tool_results(reqs[1])
                self.assertEqual(json.loads(res[0][0]), {"region": "north", "year": 2024, "total": 1234.5})
                self.assertFalse(res[0][1])
                self.assertIn("explode raised RuntimeError: cannot: because", res[1][0])
                self.assertTrue(res[1][1])
                # the big return: a handle, its summary for the model, its content for the program
                big_text = tool_results(reqs[2])[-1][0]
                self.assertLess(len(big_text), 4000, big_text[:200])
                jh = [h for h in r.handles.values() if h.kind == "json"]
                self.assertEqual(len(jh), 1, r.handles)
                self.assertIn(jh[0].name, big_text)
                self.assertEqual(len(jh[0].value()), 3000)
                self.assertEqual(jh[0].value()[2999], {"i": 2999, "name": "row 2999", "v": 1499.5})
                self.assertGreater(r.usage["input_tokens"], 0)
                self.assertGreater(r.usage["output_tokens"], 0)
                sid = r.session_id
                client = r._owner._client
            with self.assertRaises(hull.APIError) as cm:  # closed: the session is gone
                client.call("GET", "/v1/sessions/%s" % sid)
            self.assertEqual(cm.exception.status, 404)
            self.assertEqual(cm.exception.type, "not_found_error")
        finally:
            mock.stop()

    def test_conversation_three_turns_handle_input_publish(self):
        code = ("import hull, csv\n"
                "rows = list(csv.DictReader(open('/workspace/inputs/sales/sales.csv')))\n"
                "hull.save('sales_t', [{'region': r['region'], 'units': int(r['units'])} for r in rows])\n"
                "print('saved', len(rows))")
        code3 = ("import hull, os\n"
                 "t = hull.load('sales_t')\n"
                 "n = sum(r['units'] for r in (t.to_dict('records') if hasattr(t, 'to_dict') else t))\n"
                 "os.makedirs('/workspace/outputs', exist_ok=True)\n"
                 "open('/workspace/outputs/total.txt', 'w').write('total=%d\\n' % n)\n"
                 "print('wrote', n)")
        mock = Mock({"then": "error", "steps": [
            {"tool_calls": [{"name": "run_python", "input": {"code": code}}]},
            {"text": "turn1: {{last_tool_result|line:1|trim}}"},
            {"tool_calls": [{"name": "query_handle", "input": {"sql": "SELECT sum(units) AS n FROM sales_t"}}]},
            {"text": "turn2: {{last_tool_result|trim}}"},
            {"tool_calls": [{"name": "run_python", "input": {"code": code3}}]},
            {"tool_calls": [{"name": "publish_file", "input": {"path": "/workspace/outputs/total.txt",
                                                                "description": "the total"}}]},
            {"text": "turn3: {{tool_result:3|line:1|trim}}"}]})
        d = tempfile.mkdtemp(prefix="hull-py-t-")
        csvp = os.path.join(d, "sales.csv")
        with open(csvp, "w") as f:
            f.write("region,units\nnorth,3\nsouth,5\neast,7\n")
        got, outdir = [], os.path.join(d, "out")
        try:
            with hull.Conversation(on_publish=got.append, publish_dir=outdir, **self.opts(mock)) as conv:
                self.assertEqual(conv.add_input(csvp), "sales")
                r1 = conv.ask("Load the sales")
                self.assertEqual(r1.text, "turn1: saved 3")
                msg = [e for e in r1.events if e["type"] == "user.message"][0]["content"][0]["text"]
                self.assertIn("/workspace/inputs/sales/sales.csv", msg)
                self.assertEqual(r1.handles["sales"].kind, "binary")  # the input as it came
                self.assertEqual(r1.handles["sales_t"].kind, "table")
                r2 = conv.ask("Total units?")
                self.assertIn("15", r2.text)
                r3 = conv.ask("Write the total and publish it")
                self.assertEqual(r3.text, "turn3: wrote 15")
                self.assertEqual(len(got), 1)
                self.assertEqual(got[0].data, b"total=15\n")
                self.assertEqual(got[0].name, "total.txt")
                self.assertEqual(got[0].description, "the total")
                self.assertEqual([p.name for p in r3.published], ["total.txt"])
                with open(os.path.join(outdir, "total.txt"), "rb") as f:
                    self.assertEqual(f.read(), b"total=15\n")
                self.assertEqual(r1.published + r2.published, [])
                # the table handle the three turns shared, as objects
                hs = conv.handles()
                tab = [h for h in hs.values() if h.kind == "table"]
                self.assertEqual([h.n_rows for h in tab], [3])
                sales = tab[0]
                self.assertEqual(sales.rows(2), [{"region": "north", "units": 3}, {"region": "south", "units": 5}])
                self.assertEqual(sales.rows(500)[2], {"region": "east", "units": 7})
                self.assertEqual(sales.sql("SELECT region FROM data WHERE units > 4 ORDER BY units"),
                                 [{"region": "south"}, {"region": "east"}])
                dl = sales.download(os.path.join(d, "t.sqlite"))
                db = sqlite3.connect(dl)
                self.assertEqual(db.execute("SELECT sum(units) FROM data").fetchone(), (15,))
                db.close()
                try:
                    import pandas  # noqa: F401
                    self.assertEqual(int(sales.to_pandas()["units"].sum()), 15)
                except ImportError:
                    with self.assertRaisesRegex(hull.HullError, "pandas"):
                        sales.to_pandas()
                with self.assertRaises(hull.APIError) as cm:
                    sales.sql("DELETE FROM data")
                self.assertEqual(cm.exception.status, 400)
                self.assertEqual(cm.exception.code, "query_refused")
            self.assertTrue(conv.closed)
            with self.assertRaisesRegex(hull.HullError, "closed"):
                conv.ask("more")
        finally:
            mock.stop()
            subprocess.run(["rm", "-rf", d])

    def test_async_twins_and_async_tool(self):
        async def shout(word: str) -> str:
            """Loud."""
            await asyncio.sleep(0.01)
            return word.upper()

        mock = Mock({"then": "error", "steps": [
            {"tool_calls": [{"name": "shout", "input": {"word": "hey"}}]},
            {"text": "got {{last_tool_result}}"},
            {"tool_calls": [{"name": "shout", "input": {"word": "hey"}}]},
            {"text": "got {{last_tool_result}}"}]})
        try:
            async def main():
                r = await hull.asolve("shout", tools=[shout], **self.opts(mock))
                r.close()
                async with hull.Conversation(tools=[shout], **self.opts(mock)) as c:
                    r2 = await c.aask("again")
                return r.text, r2.text
            a, b = asyncio.run(main())
            self.assertEqual(a, "got HEY")
            self.assertEqual(b, "got HEY")
        finally:
            mock.stop()

    def test_model_error_is_typed(self):
        mock = Mock({"then": "repeat", "steps": [{"error": {"kind": "auth", "message": "bad key"}}]})
        try:
            with self.assertRaises(hull.ModelError) as cm:
                hull.solve("hi", **self.opts(mock))
            self.assertTrue(cm.exception.type.startswith("model_"), cm.exception.type)
            self.assertTrue(cm.exception.result.events)
        finally:
            mock.stop()

    def test_callback_raising_interrupts_the_turn(self):
        def wait_for_me(x: int) -> int:
            """Never reached."""
            return x

        class Stop(Exception):
            pass

        def status(ev):
            if ev["type"] == "agent.custom_tool_use":
                raise Stop()

        mock = Mock({"then": "repeat", "steps": [{"tool_calls": [{"name": "wait_for_me", "input": {"x": 1}}]},
                                                 {"text": "after"}]})
        try:
            with hull.Conversation(tools=[wait_for_me], on_status=status, **self.opts(mock)) as c:
                with self.assertRaises(Stop):
                    c.ask("go")
                deadline = time.monotonic() + 60  # the turn ends (interrupted, or answered first, by the race)
                while time.monotonic() < deadline:
                    evs = c._client.call("GET", "/v1/sessions/%s/events" % c.session_id,
                                         query={"limit": 100})["data"]
                    idles = [e for e in evs if e["type"] == "session.status_idle"]
                    if idles and idles[-1]["stop_reason"]["type"] != "requires_action":
                        break
                    time.sleep(0.05)
                self.assertIn("user.interrupt", [e["type"] for e in evs])
                self.assertNotEqual(idles[-1]["stop_reason"]["type"], "requires_action")
                c.on_status = None
                self.assertEqual(c.ask("again").text, "after")
        finally:
            mock.stop()

    def test_hull_api_key_never_reaches_the_model(self):
        from unittest import mock as um
        mock = Mock({"then": "repeat", "steps": [{"text": "fine"}]})
        try:
            with um.patch.dict(os.environ, {"HULL_API_KEY": "hullkey-secret-123"}):
                try:  # no model key given: hull serve would take HULL_API_KEY for it
                    r = hull.solve("x", private_server=True, provider="anthropic", base_url=mock.url)
                    r.close()
                except hull.ModelError:
                    pass  # refused for want of a key: fine, as long as the hull key was not sent
            self.assertNotIn("hullkey-secret-123", json.dumps(mock.requests()))
        finally:
            mock.stop()

    def test_idle_ttl_closes(self):
        mock = Mock({"steps": [{"text": "hi"}]})
        try:
            c = hull.Conversation(idle_ttl=0.3, **self.opts(mock))
            self.assertEqual(c.ask("x").text, "hi")
            # the timer's thread closes it 0.3 s after the turn: waited for (30 s at most), as a
            # loaded machine may run that thread late
            deadline = time.monotonic() + 30
            while not c.closed and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertTrue(c.closed)
        finally:
            mock.stop()

    def test_embedded_server_leaves_nothing(self):
        mock = Mock({"then": "repeat", "steps": [{"text": "private"}]})
        try:
            srv = hull.EmbeddedServer(provider="anthropic", base_url=mock.url, model_api_key="sk-mock")
            root, pid = srv.root, srv.proc.pid
            self.assertTrue(os.path.exists(srv.socket))
            r = hull.solve("x", server=srv.server, api_key=srv.api_key)
            self.assertEqual(r.text, "private")
            r.close()
            with self.assertRaises(hull.APIError) as cm:  # the key is needed
                hull.Client(srv.server, None).call("GET", "/v1/sessions")
            self.assertEqual(cm.exception.status, 401)
            srv.stop()
            self.assertFalse(os.path.exists(root))
            self.assertIsNotNone(srv.proc.returncode)
            self.assertFalse(os.path.exists("/proc/%d" % pid))
            left = subprocess.run(["pgrep", "-f", root], capture_output=True, text=True).stdout.split()
            self.assertEqual(left, [])
            # and private_server=True: one per conversation, gone with it
            c = hull.Conversation(private_server=True, **self.opts(mock))
            own = c._own_server
            self.assertEqual(c.ask("y").text, "private")
            c.close()
            self.assertFalse(os.path.exists(own.root))
            self.assertIsNotNone(own.proc.returncode)
            # a hull serve that ends before its ready notice (a usage error): a typed error with its
            # log, nothing left behind (the library waits on a pipe, not on a socket poll)
            before = set(d for d in os.listdir(tempfile.gettempdir()) if d.startswith("hull-py-"))
            with self.assertRaises(hull.SandboxError) as cm:
                hull.EmbeddedServer(args=["--max-runs", "0"])
            self.assertEqual(cm.exception.type, "server_start_failed")
            self.assertIn("--max-runs", str(cm.exception))
            after = set(d for d in os.listdir(tempfile.gettempdir()) if d.startswith("hull-py-"))
            self.assertEqual(after - before, set())
        finally:
            mock.stop()

    def test_embedded_start_costs(self):
        """Counts, not times, of what issue 25's benchmark found costly: the embedded server loads
        libcurl (the model client's ~25 libraries) once listening, before any request (the first
        turn used to pay for it); one solve makes 6 requests and its close 3."""
        mock = Mock({"then": "repeat", "steps": [{"text": "counted"}]})
        calls = []
        raw, stream = hull.Client.raw, hull.Client.stream

        def counting_raw(c, method, path, *a, **k):
            calls.append((method, path))
            return raw(c, method, path, *a, **k)

        def counting_stream(c, sid, *a, **k):
            calls.append(("GET", "stream"))
            return stream(c, sid, *a, **k)

        try:
            srv = hull.EmbeddedServer(**self.opts(mock))
            maps, deadline = "", time.monotonic() + 30
            while "libcurl" not in maps and time.monotonic() < deadline and srv.running:
                with open("/proc/%d/maps" % srv.proc.pid) as f:
                    maps = f.read()
                time.sleep(0.05)
            self.assertTrue("libcurl" in maps, "hull serve did not load libcurl before its first model call")
            hull.Client.raw, hull.Client.stream = counting_raw, counting_stream
            r = hull.solve("x", server=srv.server, api_key=srv.api_key)
            self.assertEqual(r.text, "counted")
            solve_calls = list(calls)
            r.close()
            hull.Client.raw, hull.Client.stream = raw, stream
            self.assertEqual([m for m, _ in solve_calls], ["POST", "POST", "POST", "GET", "POST", "GET"], solve_calls)
            self.assertEqual(len(calls) - len(solve_calls), 3, calls[len(solve_calls):])
            srv.stop()
        finally:
            hull.Client.raw, hull.Client.stream = raw, stream
            mock.stop()

    def test_embedded_start_overlaps_the_import(self):
        """Counts and order, not time: a one-off solve in a fresh interpreter spawns its embedded
        hull serve (one posix_spawn) before it imports the rest of the library, and the whole
        solve imports none of the modules issue 25's cold solve found slow: subprocess,
        tempfile, shutil (~20 ms before the spawn), http.client with email and ssl, urllib.parse
        (25-40 ms before the first request), nor hull.handles for a turn that kept no handle."""
        mock = Mock({"then": "repeat", "steps": [{"text": "overlapped"}]})
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        code = """
import os, sys
sys.path.insert(0, sys.argv[1])
SLOW = ("subprocess", "tempfile", "shutil", "http.client", "email.parser", "ssl", "urllib.parse", "hull.handles")
seen = []
spawn = os.posix_spawn
def counting_spawn(*a, **k):
    seen.append(("hull.conversation" in sys.modules, [m for m in SLOW if m in sys.modules]))
    return spawn(*a, **k)
os.posix_spawn = counting_spawn
import hull
from hull import server
r = hull.solve("x", provider="anthropic", base_url=sys.argv[2], model_api_key="sk-mock")
(srv,) = server._servers.values()
print(len(seen), seen[0][0], seen[0][1], [m for m in SLOW if m in sys.modules], r.text, srv.ready_at >= srv.started_at)
r.close()
"""
        try:
            out = subprocess.run(["/usr/bin/python3", "-S", "-c", code, here, mock.url], capture_output=True,
                                 text=True, timeout=120)
            self.assertEqual(out.stdout.split(), ["1", "False", "[]", "[]", "overlapped", "True"], out.stderr[-2000:])
        finally:
            mock.stop()

    def test_embedded_server_inherits_no_stray_fd(self):
        """What subprocess's close_fds did, kept with posix_spawn: an inheritable fd of the
        program (PEP 446 makes Python's own non-inheritable; a program may set one) does not
        reach the embedded hull serve."""
        r, w = os.pipe()
        os.set_inheritable(w, True)
        srv = None
        try:
            ino = os.fstat(w).st_ino
            srv = hull.EmbeddedServer(args=["--no-zygote"])
            # hull serve's threads open and close fds of their own while this lists them:
            # an fd gone between the listing and its readlink is not the inherited pipe.
            links = []
            for fd in os.listdir("/proc/%d/fd" % srv.proc.pid):
                try:
                    links.append(os.readlink("/proc/%d/fd/%s" % (srv.proc.pid, fd)))
                except FileNotFoundError:
                    pass
            self.assertNotIn("pipe:[%d]" % ino, links)
            self.assertEqual(os.readlink("/proc/%d/fd/0" % srv.proc.pid), "/dev/null")
            self.assertEqual(os.readlink("/proc/%d/fd/2" % srv.proc.pid), os.path.join(srv.root, "serve.log"))
        finally:
            if srv is not None:
                srv.stop()
            os.close(r)
            os.close(w)

    def test_bad_input_and_server_errors(self):
        mock = Mock({"steps": [{"text": "hi"}]})
        try:
            with hull.Conversation(**self.opts(mock)) as c:
                with self.assertRaisesRegex(hull.HullError, "no such file"):
                    c.add_input("/nonexistent/file.csv")
                with self.assertRaises(hull.APIError) as cm:
                    c._client.call("GET", "/v1/sessions/sesn_nope")
                self.assertEqual((cm.exception.status, cm.exception.type), (404, "not_found_error"))
            with self.assertRaises(hull.APIError) as cm:
                hull.solve("x", server="unix:/nonexistent.sock")
            self.assertEqual(cm.exception.type, "connection_error")
        finally:
            mock.stop()




if __name__ == "__main__":
    unittest.main()
