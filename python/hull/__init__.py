"""hull for Python programs: ``solve()`` a task with plain callables as tools, or keep a
``Conversation`` (one /v1 session, its sandbox, files and handles) across turns. stdlib only.

    import hull
    def query_sales(region: str, year: int = 2025) -> list[dict]:
        "Sales rows of a region and year."
        ...
    r = hull.solve("Which region grew most?", tools=[query_sales])
    print(r.text)

See docs/PYTHON.md."""
from .client import Client
from .conversation import Conversation, Result, asolve, solve
from .errors import APIError, HullError, ModelError, SandboxError, ToolError
from .handles import Handle, PublishedFile
from .server import EmbeddedServer, stop_default as stop_embedded_server

__all__ = ["solve", "asolve", "Conversation", "Result", "Handle", "PublishedFile", "Client", "EmbeddedServer",
           "HullError", "APIError", "ModelError", "ToolError", "SandboxError", "tool_spec",
           "stop_embedded_server"]
__version__ = "0.1.0"


def __getattr__(name):  # tool_spec on first use: its inspect and typing are slow to import
    if name == "tool_spec":
        from .schema import tool_spec

        return tool_spec
    raise AttributeError("module 'hull' has no attribute %r" % name)
