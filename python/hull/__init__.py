"""hull for Python programs: ``solve()`` a task with plain callables as tools, or keep a
``Conversation`` (one /v1 session, its sandbox, files and handles) across turns. stdlib only.

    import hull
    def query_sales(region: str, year: int = 2025) -> list[dict]:
        "Sales rows of a region and year."
        ...
    r = hull.solve("Which region grew most?", tools=[query_sales])
    print(r.text)

See docs/PYTHON.md.

``import hull`` imports only this and the errors: the rest comes with its first use, and solve()
starts the embedded server before it imports the rest, so that import (and http.client's) is
made while the server starts instead of before."""
from .errors import APIError, HullError, ModelError, SandboxError, ToolError

__all__ = ["solve", "asolve", "Conversation", "Result", "Handle", "PublishedFile", "Client", "EmbeddedServer",
           "HullError", "APIError", "ModelError", "ToolError", "SandboxError", "tool_spec",
           "stop_embedded_server"]
__version__ = "0.1.0"

# name -> (module, its name there): imported on first use (PEP 562)
_LAZY = {"Conversation": ("conversation", "Conversation"), "Result": ("conversation", "Result"),
         "asolve": ("conversation", "asolve"), "Client": ("client", "Client"), "Handle": ("handles", "Handle"),
         "PublishedFile": ("handles", "PublishedFile"), "EmbeddedServer": ("server", "EmbeddedServer"),
         "stop_embedded_server": ("server", "stop_default"),
         "tool_spec": ("schema", "tool_spec")}  # inspect and typing: slow to import


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError("module 'hull' has no attribute %r" % name)
    import importlib

    module, attr = _LAZY[name]
    value = getattr(importlib.import_module("." + module, __name__), attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


def solve(prompt, tools=(), inputs=(), agent_instructions=None, **kw):
    """One task, start to end: a fresh session, the prompt, the callables as tools, the inputs;
    returns a Result. The session is deleted when the Result is closed (``with``), collected or
    at exit; its handles are readable until then. Takes Conversation's keyword arguments."""
    from . import server

    server.prestart(kw)  # spawned first: the rest of the library is imported while it starts
    from .conversation import solve as _solve

    return _solve(prompt, tools, inputs, agent_instructions, **kw)
