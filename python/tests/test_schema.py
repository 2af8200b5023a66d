"""Unit tests: type hints -> JSON schema, the model's arguments -> Python values, results and
errors. No server needed."""
import json
import sys
import unittest
from typing import Any, Dict, List, Literal, Optional, Tuple, Union

import hull
from hull.conversation import _result_text
from hull.errors import turn_error
from hull.schema import bind_arguments, tool_spec, type_schema


def query_sales(region: str, year: int = 2025, growth: float = 0.0, final: bool = False,
                tags: Optional[List[str]] = None, mode: Literal["sum", "avg"] = "sum",
                extra: Optional[Dict[str, int]] = None) -> list:
    """Sales of a region.

    More words here.

    Args:
        region: the region's name
        year (int): the year
    Returns:
        rows
    """
    return []


class SchemaTest(unittest.TestCase):
    def test_full_function(self):
        s = tool_spec(query_sales)
        self.assertEqual(s["type"], "custom")
        self.assertEqual(s["name"], "query_sales")
        self.assertEqual(s["description"], "Sales of a region.\n\nMore words here.")
        p = s["input_schema"]["properties"]
        self.assertEqual(s["input_schema"]["required"], ["region"])
        self.assertEqual(p["region"], {"type": "string", "description": "the region's name"})
        self.assertEqual(p["year"], {"type": "integer", "description": "the year", "default": 2025})
        self.assertEqual(p["growth"], {"type": "number", "default": 0.0})
        self.assertEqual(p["final"], {"type": "boolean", "default": False})
        self.assertEqual(p["tags"], {"type": ["array", "null"], "items": {"type": "string"}, "default": None})
        self.assertEqual(type_schema(Optional[Literal["a"]]), {"anyOf": [{"enum": ["a"], "type": "string"},
                                                                          {"type": "null"}]})
        self.assertEqual(p["mode"], {"enum": ["sum", "avg"], "type": "string", "default": "sum"})
        self.assertEqual(p["extra"], {"type": ["object", "null"], "additionalProperties": {"type": "integer"},
                                      "default": None})

    def test_types(self):
        self.assertEqual(type_schema(Optional[int]), {"type": ["integer", "null"]})
        self.assertEqual(type_schema(list), {"type": "array"})
        self.assertEqual(type_schema(dict), {"type": "object"})
        self.assertEqual(type_schema(Any), {})
        self.assertEqual(type_schema(Union[int, str]), {"anyOf": [{"type": "integer"}, {"type": "string"}]})
        self.assertEqual(type_schema(Literal[1, 2]), {"enum": [1, 2], "type": "integer"})
        self.assertEqual(type_schema(Tuple[int, str])["prefixItems"], [{"type": "integer"}, {"type": "string"}])
        self.assertEqual(type_schema(List[Dict[str, float]]),
                         {"type": "array", "items": {"type": "object", "additionalProperties": {"type": "number"}}})
        if sys.version_info >= (3, 10):
            self.assertEqual(type_schema(eval("int | None")), {"type": ["integer", "null"]})
            self.assertEqual(type_schema(eval("list[int]")), {"type": "array", "items": {"type": "integer"}})

    def test_refusals(self):
        with self.assertRaises(hull.ToolError):
            type_schema(Dict[int, str])
        with self.assertRaises(hull.ToolError):
            type_schema(bytes)

        def pos(a, /):
            pass
        with self.assertRaisesRegex(hull.ToolError, "positional-only"):
            tool_spec(pos)
        with self.assertRaises(hull.ToolError):
            tool_spec(42)
        with self.assertRaisesRegex(hull.ToolError, "tool name"):
            tool_spec(lambda x: x)  # "<lambda>"

    def test_no_hints_no_doc(self):
        def f(a, b=3):
            return a
        s = tool_spec(f)
        self.assertEqual(s["input_schema"], {"type": "object", "properties": {"a": {}, "b": {"default": 3}},
                                             "required": ["a"]})
        self.assertEqual(s["description"], "The function f.")

    def test_schema_is_json(self):
        json.dumps(tool_spec(query_sales))


class BindTest(unittest.TestCase):
    def test_convert(self):
        kw = bind_arguments(query_sales, {"region": "north", "year": 2024.0, "growth": 2, "tags": ["a"]})
        self.assertEqual(kw, {"region": "north", "year": 2024, "growth": 2.0, "tags": ["a"]})
        self.assertIsInstance(kw["year"], int)
        self.assertIsInstance(kw["growth"], float)
        self.assertEqual(bind_arguments(query_sales, {"region": "x", "tags": None})["tags"], None)

    def test_refuse(self):
        for bad, why in (({"year": 1}, "missing argument: region"),
                         ({"region": 5}, "expected a string"),
                         ({"region": "x", "year": 1.5}, "expected an integer"),
                         ({"region": "x", "year": True}, "expected an integer"),
                         ({"region": "x", "mode": "max"}, "one of"),
                         ({"region": "x", "colour": 1}, "unknown argument 'colour'"),
                         ({"region": "x", "extra": {"a": "b"}}, "expected an integer")):
            with self.assertRaisesRegex(TypeError, why):
                bind_arguments(query_sales, bad)
        with self.assertRaises(TypeError):
            bind_arguments(query_sales, ["north"])

    def test_kwargs_taken(self):
        def f(a: int, **rest):
            pass
        self.assertEqual(bind_arguments(f, {"a": 1, "z": 2}), {"a": 1, "z": 2})


class ResultTextTest(unittest.TestCase):
    def test_values(self):
        self.assertEqual(_result_text("x"), "x")
        self.assertEqual(_result_text(None), "null")
        self.assertEqual(json.loads(_result_text({"a": [1, 2.5]})), {"a": [1, 2.5]})
        self.assertEqual(_result_text(b"hi"), "hi")
        import datetime
        self.assertIn("2026-01-02", _result_text({"d": datetime.date(2026, 1, 2)}))


class ErrorsTest(unittest.TestCase):
    def test_turn_errors(self):
        self.assertIsInstance(turn_error({"type": "model_request_failed_error", "message": "m"}), hull.ModelError)
        self.assertIsInstance(turn_error({"type": "mcp_connection_failed_error", "message": "m"}), hull.ToolError)
        self.assertIsInstance(turn_error({"type": "unknown_error", "message": "the sandbox could not open"}),
                              hull.SandboxError)
        e = turn_error({"type": "unknown_error", "message": "x"})
        self.assertIsInstance(e, hull.HullError)
        self.assertEqual(e.type, "unknown_error")

    def test_api_error(self):
        from hull.client import _api_error
        e = _api_error(404, b'{"type":"error","error":{"type":"not_found_error","message":"no session",'
                            b'"details":{"error_code":"session_not_found"}},"request_id":"req_1"}')
        self.assertIsInstance(e, hull.APIError)
        self.assertEqual((e.status, e.type, e.code, e.request_id), (404, "not_found_error", "session_not_found",
                                                                    "req_1"))
        e = _api_error(502, b"<html>bad gateway</html>")
        self.assertEqual(e.status, 502)
        self.assertIn("bad gateway", str(e))

    def test_published_names(self):
        from hull.handles import Handle, PublishedFile
        h = Handle(None, "s", {"name": "h3", "type": "binary", "source": "published outputs/r.csv as report.csv: "
                                                                            "the report"})
        p = PublishedFile(h, b"x")
        self.assertEqual((p.path, p.name, p.description), ("outputs/r.csv", "report.csv", "the report"))
        h = Handle(None, "s", {"name": "h4", "type": "binary", "source": "published outputs/a/b.txt: cell"})
        p = PublishedFile(h, b"x")
        self.assertEqual((p.path, p.name, p.description), ("outputs/a/b.txt", "b.txt", "cell"))


class ServerFindTest(unittest.TestCase):
    def test_no_binary(self):
        import os
        from unittest import mock
        from hull import server
        with mock.patch.dict(os.environ, {"HULL_BIN": "/nonexistent/hull", "PATH": "/nonexistent"}), \
                mock.patch.object(server.os.path, "isfile", lambda p: False):
            with self.assertRaisesRegex(hull.SandboxError, "HULL_BIN"):
                server.find_binary()


class WireTest(unittest.TestCase):
    """hull.client's HTTP/1.1 answers (it speaks plain HTTP itself: http.client's import was most
    of a cold solve's Python side)."""

    def answer(self, raw, method="GET"):
        import io
        from hull import client
        return client.Response(io.BytesIO(raw), method)

    def test_framings(self):
        r = self.answer(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhelloEXTRA")
        self.assertEqual((r.status, r.getheaders(), r.read()), (200, [("Content-Length", "5"), ("X-A", "b")], b"hello"))
        chunks = [b"data: 1\n\nda", b"ta", b": 2\n", b"\n"]  # lines across chunks, chunks across lines
        body = b"".join(b"%x;x=y\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\nT: v\r\n\r\n"
        r = self.answer(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
        self.assertEqual([r.readline() for _ in range(5)], [b"data: 1\n", b"\n", b"data: 2\n", b"\n", b""])
        r = self.answer(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
        self.assertEqual(r.read(), b"abcde")
        r = self.answer(b"HTTP/1.0 404 Not Found\r\n\r\n{\"a\": 1}\nrest")
        self.assertEqual((r.status, r.readline(), r.read()), (404, b'{"a": 1}\n', b"rest"))
        r = self.answer(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n")
        self.assertEqual((r.status, r.read()), (204, b""))
        r = self.answer(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", "HEAD")
        self.assertEqual(r.read(), b"")

    def test_refusals(self):
        from hull import client
        for raw in (b"", b"SSH-2.0-x\r\n\r\n", b"HTTP/1.1 2000 OK\r\n\r\n", b"HTTP/1.1 200 OK\r\nbad\r\n\r\n",
                    b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", b"HTTP/1.1 200 OK\r\n" + b"A: b\r\n" * 101,
                    b"HTTP/1.1 200 OK\r\nX: " + b"a" * (client.MAX_LINE + 1) + b"\r\n\r\n"):
            with self.assertRaises(client.WireError, msg=raw[:40]):
                self.answer(raw)
        for raw in (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXX0\r\n\r\n"):
            with self.assertRaises(client.WireError, msg=raw[:60]):
                self.answer(raw).read()
        c = client.Connection(unix="/nonexistent")
        for method, url, headers in (("GET", "/a b", {}), ("GET", "/a\r\nX: y", {}), ("GET", "/", {"a": "b\r\nc: d"})):
            with self.assertRaises(ValueError):
                c.request(method, url, headers=headers)

    def test_quote(self):
        import urllib.parse
        from hull import client
        for s in ("sesn_abc123", "a b/c?d#e%f", "é€", "~._-", ""):
            self.assertEqual(client.quote(s), urllib.parse.quote(s, safe=""))


class ImportTest(unittest.TestCase):
    def test_import_leaves_the_wire_for_later(self):
        """`import hull` imports neither http.client nor ssl nor the email package (about 30 ms,
        most of the import), nor inspect, typing, asyncio. Counted in a fresh interpreter without
        site's imports. http.client comes only for an https:// server (hull.client.wire)."""
        import os
        import subprocess
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import hull; "
                "print(sorted(m for m in ('http.client', 'ssl', 'email.parser', 'inspect', 'typing', 'asyncio') "
                "if m in sys.modules))")
        out = subprocess.run([sys.executable, "-S", "-c", code, here], capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout.strip(), "[]", out.stderr)
        from hull import client
        self.assertTrue(hasattr(client.wire(), "HTTPSConnection"))

    def test_solve_spawns_before_the_rest_is_imported(self):
        """Order, not time: `import hull` loads only the package and its errors, and solve()
        spawns the embedded server before it imports the rest of the library (conversation,
        client, handles), so their import (and compile) overlaps the server's start; what comes
        before the spawn imports none of subprocess, tempfile, shutil (~20 ms with signal, enum,
        random, fnmatch, re before the spawn, issue 25's cold solve).
        The spawn is stopped at once here (a fake default_server): no server is needed."""
        import os
        import subprocess
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import hull; "
                "mods = lambda: sorted(m for m in ('hull.conversation', 'hull.client', 'hull.handles', "
                "'hull.server', 'subprocess', 'tempfile', 'shutil') if m in sys.modules); print(mods()); "
                "from hull import server\n"
                "def spawned(**kw):\n print(mods(), sorted(kw)); raise SystemExit(0)\n"
                "server.default_server = spawned; hull.solve('hi')")
        env = dict(os.environ, HULL_BIN=sys.executable)
        env.pop("HULL_SERVER", None)
        out = subprocess.run([sys.executable, "-S", "-c", code, here], capture_output=True, text=True, env=env)
        self.assertEqual(out.stdout.splitlines(), [
            "[]", "['hull.server'] ['args', 'base_url', 'binary', 'model', 'model_api_key', "
                  "'provider', 'wait']"], out.stderr)


if __name__ == "__main__":
    unittest.main()
