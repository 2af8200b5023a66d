"""solve() and Conversation: one /v1 session per conversation (its sandbox, files and handles
kept across turns), custom tools answered in the caller's process, results as objects."""
import collections.abc
import functools
import json
import os
import threading
import time
import types
import weakref

from . import server as _server
from .client import Client, quote
from .errors import APIError, HullError, ToolError, turn_error

DEFAULT_MODEL = "claude-sonnet-4-6"
RESULT_BYTES_MAX = 7 << 20  # a custom tool's result text that fits a /v1 request (8 MiB)
_BUILTINS = [{"type": "agent_toolset_20260401",
              "default_config": {"enabled": True, "permission_policy": {"type": "always_allow"}}},
             {"type": "hull_toolset_20261201",
              "default_config": {"enabled": True, "permission_policy": {"type": "always_allow"}}}]


async def _await(x):
    return await x



def _awaitable(x):
    """inspect.isawaitable without importing inspect (slow to import; most callers are sync)."""
    return isinstance(x, collections.abc.Awaitable) or (
        isinstance(x, types.GeneratorType) and bool(x.gi_code.co_flags & 0x100))  # CO_ITERABLE_COROUTINE

class Result:
    """What a turn gave: ``text`` (the answer), ``events`` (every event of the turn, as the
    console shows them), ``usage`` (the turn's tokens), ``published`` (PublishedFile list),
    ``handles`` (name -> Handle, readable while the session lives), ``session_id``."""

    def __init__(self, text, events, usage, published, handles, session_id, owner=None):
        self.text, self.events, self.usage = text, events, usage
        self.published, self.handles, self.session_id = published, handles, session_id
        self._owner = owner

    def __str__(self):
        return self.text

    def __repr__(self):
        return "<hull.Result %r, %d events, %d handles, %d published>" % (
            self.text[:60], len(self.events), len(self.handles), len(self.published))

    def close(self):
        """Delete the session solve() kept for the handles (also at exit)."""
        if self._owner is not None:
            self._owner.close()
            self._owner = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _client_for(server, api_key, embedded):
    """(client, the private server this conversation owns or None, the embedded server to wait
    for before the first request or None): an embedded server is started, not waited for."""
    server = server or os.environ.get("HULL_SERVER")
    if server:
        return Client(server, api_key if api_key is not None else os.environ.get("HULL_API_KEY")), None, None
    srv = _server.default_server(wait=False, **embedded) if not embedded.get("private") else None
    if srv is None:
        kw = dict(embedded)
        kw.pop("private")
        srv = _server.EmbeddedServer(wait=False, **kw)
        return Client(srv.server, srv.api_key), srv, srv
    return Client(srv.server, srv.api_key), None, srv


def _result_text(value):
    """A tool's return value as the text the model gets."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if hasattr(value, "to_dict") and hasattr(value, "columns"):  # a pandas DataFrame
        value = value.to_dict(orient="records")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return json.dumps(value, default=str, ensure_ascii=False)


class Conversation:
    """A conversation with hull's agent: one /v1 session (sandbox, files, handles) across turns.

    ``tools``: plain callables (sync or async) offered as custom tools; ``agent_instructions``:
    the system prompt; ``server``/``api_key`` (else $HULL_SERVER, $HULL_API_KEY; neither: an
    embedded private hull serve); ``model``; ``on_status(event)``: every event as it comes;
    ``on_publish(PublishedFile)`` or ``publish_dir``: where published files go; ``idle_ttl``:
    seconds without a turn after which the conversation closes itself (None: never);
    ``hull_bin``, ``provider``, ``base_url``, ``model_api_key``, ``serve_args``: the embedded
    server's binary and model; ``builtin_tools``: False offers only the callables."""

    def __init__(self, tools=(), agent_instructions=None, *, server=None, api_key=None, model=None,
                 on_status=None, on_publish=None, publish_dir=None, idle_ttl=600.0, hull_bin=None, provider=None,
                 base_url=None, model_api_key=None, serve_args=(), builtin_tools=True, private_server=False,
                 turn_timeout=None):
        self._tools = {}
        self.on_status, self.on_publish, self.publish_dir = on_status, on_publish, publish_dir
        self.idle_ttl, self.turn_timeout = idle_ttl, turn_timeout
        embedded = _server.embedded_settings(hull_bin, model, provider, base_url, model_api_key, serve_args,
                                             private_server)
        # the embedded server starts first: the tools' schemas are made while it comes up
        self._client, self._own_server, starting = _client_for(server, api_key, embedded)
        specs = []
        try:
            for fn in tools:
                from .schema import tool_spec  # here: inspect and typing are slow to import, and only tools need them

                spec = tool_spec(fn)
                if spec["name"] in self._tools:
                    raise ToolError("two tools are named %s" % spec["name"])
                self._tools[spec["name"]] = fn
                specs.append(spec)
            if starting is not None:
                starting.wait_ready()
        except BaseException:
            if self._own_server is not None:
                self._own_server.stop()
            raise
        self._lock = threading.RLock()
        self._closed = False
        self._timer = None
        self._pending = []  # (path, name, format) for the next turn
        self._input_handles = set()
        self._published_seen = set()
        self.session_id = self.agent_id = self.environment_id = None
        c = self._client
        try:
            agent = {"name": "hull-python", "model": model or os.environ.get("HULL_MODEL") or DEFAULT_MODEL,
                     "tools": (list(_BUILTINS) if builtin_tools else []) + specs,
                     "metadata": {"made_by": "hull python"}}
            if agent_instructions:
                agent["system"] = agent_instructions
            self.agent_id = c.call("POST", "/v1/agents", agent)["id"]
            self.environment_id = c.call("POST", "/v1/environments",
                                         {"name": "hull-python", "metadata": {"made_by": "hull python"}})["id"]
            self.session_id = c.call("POST", "/v1/sessions", {"agent": self.agent_id,
                                                              "environment_id": self.environment_id,
                                                              "title": "hull python"})["id"]
        except BaseException:
            self._cleanup()
            raise
        self._finalizer = weakref.finalize(self, Conversation._finalize, c, self.session_id, self.agent_id,
                                           self.environment_id, self._own_server)
        self._arm()

    # ---- lifetime ----

    @staticmethod
    def _finalize(c, sid, aid, eid, own):
        for m, p in (("DELETE", "/v1/sessions/%s" % sid if sid else None),
                     ("DELETE", "/v1/environments/%s" % eid if eid else None),
                     ("POST", "/v1/agents/%s/archive" % aid if aid else None)):
            if p:
                try:
                    c.call(m, p)
                except Exception:
                    pass
        if own is not None:
            own.stop()

    def _cleanup(self):
        Conversation._finalize(self._client, self.session_id, self.agent_id, self.environment_id, self._own_server)

    def close(self):
        """Delete the session (its sandbox, files and handles) and what was made for it."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._timer:
                self._timer.cancel()
            if getattr(self, "_finalizer", None):
                self._finalizer()
            else:
                self._cleanup()

    @property
    def closed(self):
        return self._closed

    def _arm(self):
        if self._timer:
            self._timer.cancel()
            self._timer = None
        if self.idle_ttl:
            self._timer = threading.Timer(self.idle_ttl, self.close)
            self._timer.daemon = True
            self._timer.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        import asyncio  # here: it is slow to import and most callers are sync
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    # ---- inputs ----

    def add_input(self, path, name=None, format=None):
        """A local file for the next turn: it appears in the sandbox at /workspace/inputs/H/NAME
        and as handle H. ``format``: None (the file as it is) or "csv", "tsv", "json", "jsonl" (a
        table handle). Returns the handle's name."""
        if not os.path.isfile(path):
            raise HullError("input %s: no such file" % path, "input_not_found")
        name = name or os.path.basename(path)
        stem = "".join(ch if ch.isalnum() and ch.isascii() else "_" for ch in name.split(".")[0])[:32]
        if not stem or not stem[0].isalpha():
            stem = "input"
        handle, n = stem, 1
        while handle in self._input_handles:
            n += 1
            handle = "%s_%d" % (stem, n)
        self._input_handles.add(handle)
        self._pending.append((path, name, format, handle))
        return handle

    def _send_inputs(self):
        lines = []
        while self._pending:
            path, name, fmt, handle = self._pending.pop(0)
            with open(path, "rb") as f:
                data = f.read()
            b = json.loads(self._client.raw("POST", self._spath("/inputs"), data, "application/octet-stream",
                                            {"name": name, "handle": handle, "format": fmt})[2])
            lines.append("- %s (handle %s%s)" % (b["path"], handle, ", a table" if fmt else ""))
        return lines

    # ---- turns ----

    def _spath(self, tail=""):
        return "/v1/sessions/%s%s" % (quote(self.session_id), tail)

    def ask(self, prompt, inputs=()):
        """One turn: the prompt (and input files) in, a Result out. Raises ModelError, ToolError,
        SandboxError, APIError (or HullError) when the turn fails."""
        return self._ask(prompt, inputs, None)

    async def aask(self, prompt, inputs=()):
        """ask() for asyncio: the turn runs on a thread of the default executor; async tools run
        in this event loop."""
        import asyncio  # here: it is slow to import and most callers are sync
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(self._ask, prompt, inputs, loop))

    def _ask(self, prompt, inputs, loop):
        with self._lock:
            if self._closed:
                raise HullError("the conversation is closed (close(), or idle longer than its idle_ttl of %ss)" %
                                self.idle_ttl, "conversation_closed")
            if self._timer:
                self._timer.cancel()
            try:
                return self._turn(prompt, inputs, loop)
            finally:
                if not self._closed:
                    self._arm()

    def _turn(self, prompt, inputs, loop):
        c = self._client
        for p in inputs:
            self.add_input(p) if isinstance(p, (str, os.PathLike)) else self.add_input(*p)
        lines = self._send_inputs()
        text = prompt if not lines else prompt + "\n\nInput files:\n" + "\n".join(lines)
        events, errors, answers = [], [], []
        stream = c.stream(self.session_id, timeout=self.turn_timeout)
        try:
            c.call("POST", self._spath("/events"),
                   {"events": [{"type": "user.message", "content": [{"type": "text", "text": text}]}]})
            for ev in stream:
                events.append(ev)
                self._status(ev, loop)
                t = ev.get("type")
                if t == "agent.custom_tool_use":
                    self._answer_tool(ev, loop)
                elif t == "agent.message":
                    answers.append("".join(b.get("text", "") for b in ev.get("content") or []
                                           if b.get("type") == "text"))
                elif t == "session.error":
                    errors.append(ev.get("error") or {})
                elif t == "session.status_idle":
                    if ((ev.get("stop_reason") or {}).get("type")) != "requires_action":
                        break
                elif t in ("session.status_terminated", "session.deleted"):
                    # a terminal session.error just before it is the cause (a refused model key)
                    if t == "session.deleted" or not errors:
                        errors.append({"type": "session_terminated", "message": "the session ended: %s" % t})
                    break
            else:
                errors.append({"type": "connection_error", "message": "the event stream ended before the turn did"})
        except BaseException as stop:  # Ctrl-C, a callback that raised: the turn stops, the session goes on
            answered = {e.get("custom_tool_use_id") for e in events if e.get("type") == "user.custom_tool_result"}
            waiting = [e["id"] for e in events if e.get("type") == "agent.custom_tool_use" and e["id"] not in answered]
            stop_events = [{"type": "user.custom_tool_result", "custom_tool_use_id": i, "is_error": True,
                            "content": [{"type": "text", "text": "the program stopped this turn (%s)" %
                                         type(stop).__name__}]} for i in waiting]
            for ev in stop_events + [{"type": "user.interrupt"}]:  # one by one: one refused loses no other
                try:
                    c.call("POST", self._spath("/events"), {"events": [ev]})
                except Exception:
                    pass
            raise
        finally:
            stream.close()
        usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0}
        for ev in events:  # each session.usage is one model call's
            if ev.get("type") == "session.usage":
                for k, v in (ev.get("usage") or {}).items():
                    if isinstance(v, int) and not isinstance(v, bool):
                        usage[k] = usage.get(k, 0) + v
        handles, published = self._collect()
        result = Result(answers[-1] if answers else "", events, usage, published, handles, self.session_id)
        if errors:
            err = turn_error(errors[-1])
            err.result = result
            raise err
        return result

    def _status(self, ev, loop):
        if not self.on_status:
            return
        self._call_user(self.on_status, (ev,), loop)

    def _call_user(self, fn, args, loop):
        out = fn(*args)
        if not _awaitable(out):
            return out
        if loop is not None:  # aask/asolve: on the caller's event loop
            import asyncio  # here: it is slow to import and most callers are sync

            return asyncio.run_coroutine_threadsafe(out, loop).result()
        import asyncio
        import inspect

        return asyncio.run(out) if inspect.iscoroutine(out) else asyncio.run(_await(out))

    def _answer_tool(self, ev, loop):
        name = ev.get("name")
        fn = self._tools.get(name)
        is_error = False
        if fn is None:
            text, is_error = "no tool %s in this program (it has: %s)" % (name, ", ".join(self._tools) or "none"), True
        else:
            try:
                from .schema import bind_arguments

                kwargs = bind_arguments(fn, ev.get("input") or {})
            except TypeError as e:
                text, is_error = "%s: bad arguments: %s" % (name, e), True
            else:
                try:
                    text = _result_text(self._call_user(fn, (), loop) if not kwargs else
                                        self._call_user(functools.partial(fn, **kwargs), (), loop))
                except Exception as e:  # the model sees it and may try otherwise
                    text, is_error = "%s raised %s: %s" % (name, type(e).__name__, e), True
        if len(text.encode("utf-8")) > RESULT_BYTES_MAX:
            text, is_error = ("%s returned %d bytes, more than one result may carry (%d MiB); return less or write "
                              "it to a file" % (name, len(text.encode("utf-8")), RESULT_BYTES_MAX >> 20)), True
        self._client.call("POST", self._spath("/events"), {"events": [{
            "type": "user.custom_tool_result", "custom_tool_use_id": ev["id"],
            "content": [{"type": "text", "text": text}], "is_error": is_error}]})

    def handles(self):
        """The session's handles now, name -> Handle (empty when its sandbox is not open)."""
        return self._collect(deliver=False)[0]

    def _collect(self, deliver=True):
        data = self._client.call("GET", self._spath("/handles")).get("data") or []
        if data:  # here: a turn that kept nothing does not compile hull.handles (a cold solve's path)
            from .handles import Handle, PublishedFile
        handles = {h["name"]: Handle(self._client, self.session_id, h) for h in data}
        published = []
        if deliver:
            for h in handles.values():
                if h.kind == "binary" and h.source.startswith("published ") and h.name not in self._published_seen:
                    self._published_seen.add(h.name)
                    pf = PublishedFile(h, h.read())
                    published.append(pf)
                    if self.publish_dir:
                        pf.save(self.publish_dir)
                    if self.on_publish:
                        self._call_user(self.on_publish, (pf,), None)
        return handles, published


def solve(prompt, tools=(), inputs=(), agent_instructions=None, **kw):
    """One task, start to end: a fresh session, the prompt, the callables as tools, the inputs;
    returns a Result. The session is deleted when the Result is closed (``with``), collected or
    at exit; its handles are readable until then. Takes Conversation's keyword arguments."""
    kw.setdefault("idle_ttl", None)
    conv = Conversation(tools, agent_instructions, **kw)
    try:
        r = conv.ask(prompt, inputs)
    except BaseException:
        conv.close()
        raise
    r._owner = conv
    return r


async def asolve(prompt, tools=(), inputs=(), agent_instructions=None, **kw):
    """solve() for asyncio (async tools run in this event loop)."""
    import asyncio  # here: it is slow to import and most callers are sync
    loop = asyncio.get_running_loop()
    kw.setdefault("idle_ttl", None)
    conv = await loop.run_in_executor(None, functools.partial(Conversation, tools, agent_instructions, **kw))
    try:
        r = await conv.aask(prompt, inputs)
    except BaseException:
        await loop.run_in_executor(None, conv.close)
        raise
    r._owner = conv
    return r
