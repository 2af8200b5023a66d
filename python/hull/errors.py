"""Typed errors of the hull library: every failure a caller sees is one of these."""


class HullError(Exception):
    """Base of every error the library raises. ``type`` is the server's error type when known."""

    def __init__(self, message, type=None):
        super().__init__(message)
        self.message = message
        self.type = type


class APIError(HullError):
    """The server refused a request: ``status`` (HTTP), ``type`` (the envelope's error.type),
    ``code`` (error.details.error_code, or None) and ``request_id``."""

    def __init__(self, message, status=0, type=None, code=None, request_id=None):
        super().__init__(message, type)
        self.status = status
        self.code = code
        self.request_id = request_id

    def __str__(self):
        return "%s (HTTP %s, %s%s)" % (self.message, self.status, self.type, ", " + self.code if self.code else "")


class ModelError(HullError):
    """The model provider failed the turn (a session.error of a model_* type)."""


class ToolError(HullError):
    """A tool could not be offered or run (an MCP server down, a custom tool the library cannot
    describe or call)."""


class SandboxError(HullError):
    """The session's sandbox could not be opened or used, or the embedded server could not start."""


def turn_error(err):
    """The exception for a session.error event's ``error`` object."""
    t = (err or {}).get("type") or "unknown_error"
    msg = (err or {}).get("message") or t
    if t.startswith("model_") or t in ("overloaded_error", "rate_limit_error", "billing_error"):
        return ModelError(msg, t)
    if t.startswith("mcp_") or "tool" in t:
        return ToolError(msg, t)
    if "sandbox" in t or "sandbox" in msg.lower() or "environment" in msg.lower():
        return SandboxError(msg, t)
    return HullError(msg, t)
