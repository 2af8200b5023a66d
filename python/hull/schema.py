"""A plain Python callable as a custom tool: its name, docstring and type hints become the tool's
JSON schema; its arguments are checked and converted before it runs."""
import inspect
import sys
import typing

try:  # Python 3.10+: int | None
    from types import UnionType as _UnionType
except ImportError:  # pragma: no cover - 3.9
    _UnionType = None

from .errors import ToolError

_NAME_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_PRIMS = {int: "integer", float: "number", str: "string", bool: "boolean"}


def _is_union(origin):
    return origin is typing.Union or (_UnionType is not None and origin is _UnionType)


def type_schema(tp, where="a parameter"):
    """The JSON schema of a type hint: int, float, str, bool, list[...], dict[str, ...], tuple,
    Optional[...], Union[...], Literal[...], Any; raises ToolError for what JSON cannot carry."""
    if tp is inspect.Parameter.empty or tp is typing.Any or tp is object:
        return {}
    if tp is type(None) or tp is None:
        return {"type": "null"}
    if tp in _PRIMS:
        return {"type": _PRIMS[tp]}
    if tp is list or tp is tuple or tp is set:
        return {"type": "array"}
    if tp is dict:
        return {"type": "object"}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        vals = list(args)
        s = {"enum": vals}
        kinds = {type(v) for v in vals}
        if len(kinds) == 1 and next(iter(kinds)) in _PRIMS:
            s["type"] = _PRIMS[next(iter(kinds))]
        return s
    if _is_union(origin):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(rest) < len(args):  # Optional[X]
            inner = type_schema(rest[0], where)
            if "type" in inner and isinstance(inner["type"], str) and "enum" not in inner:
                out = dict(inner)
                out["type"] = [inner["type"], "null"]
                return out
            return {"anyOf": [inner, {"type": "null"}]}
        return {"anyOf": [type_schema(a, where) for a in args]}
    if origin in (list, set, frozenset, typing.List, typing.Set) or origin is getattr(typing, "Sequence", None):
        s = {"type": "array"}
        if args:
            s["items"] = type_schema(args[0], where)
        return s
    if origin is tuple:
        s = {"type": "array"}
        if args and not (len(args) == 2 and args[1] is Ellipsis):
            s["prefixItems"] = [type_schema(a, where) for a in args]
            s["minItems"] = s["maxItems"] = len(args)
        elif args:
            s["items"] = type_schema(args[0], where)
        return s
    if origin in (dict, typing.Dict) or origin is getattr(typing, "Mapping", None):
        s = {"type": "object"}
        if len(args) == 2:
            if args[0] is not str:
                raise ToolError("%s: a dict's keys must be str to go through JSON, not %r" % (where, args[0]))
            s["additionalProperties"] = type_schema(args[1], where)
        return s
    raise ToolError("%s: the type %r has no JSON schema (use int, float, str, bool, list[...], dict[str, ...], "
                    "Optional[...], Literal[...])" % (where, tp))


def _doc_parts(fn):
    """The docstring's description and its per-parameter lines ("name: text" under Args:)."""
    doc = inspect.getdoc(fn) or ""
    desc, params, section = [], {}, None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped.lower() in ("args:", "arguments:", "parameters:", "params:"):
            section = "args"
            continue
        if stripped.lower() in ("returns:", "return:", "raises:", "yields:", "examples:", "example:"):
            section = "other"
            continue
        if section == "args" and ":" in stripped:
            name, _, text = stripped.partition(":")
            name = name.split("(")[0].strip()
            if name.isidentifier():
                params[name] = text.strip()
                continue
        if section is None:
            desc.append(line)
    return "\n".join(desc).strip(), params


def tool_spec(fn):
    """The custom tool of a callable: {"type": "custom", "name", "description", "input_schema"}."""
    if not callable(fn):
        raise ToolError("a tool must be a callable, not %r" % (fn,))
    name = getattr(fn, "__name__", None) or type(fn).__name__
    if not name or len(name) > 64 or any(c not in _NAME_OK for c in name):
        raise ToolError("tool name %r: 1 to 64 letters, digits, '_' or '-' (rename the function)" % (name,))
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as e:
        raise ToolError("tool %s: its signature cannot be read: %s" % (name, e))
    try:
        hints = typing.get_type_hints(fn, include_extras=False)
    except Exception:  # unresolvable forward references: the raw annotations
        hints = {k: p.annotation for k, p in sig.parameters.items()}
    desc, pdocs = _doc_parts(fn)
    props, required = {}, []
    for pname, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.kind is p.POSITIONAL_ONLY:
            raise ToolError("tool %s: parameter %s is positional-only; the model passes arguments by name" %
                            (name, pname))
        s = dict(type_schema(hints.get(pname, p.annotation), "tool %s, parameter %s" % (name, pname)))
        if pname in pdocs:
            s["description"] = pdocs[pname]
        if p.default is p.empty:
            required.append(pname)
        else:
            try:
                import json
                json.dumps(p.default)
                s["default"] = p.default
            except (TypeError, ValueError):
                pass
        props[pname] = s
    schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return {"type": "custom", "name": name, "description": desc or ("The function %s." % name),
            "input_schema": schema}


def _convert(value, tp, where):
    """The model's JSON value as the hinted type (ints for floats, tuples, Optional); raises
    TypeError saying what was wrong."""
    if tp is inspect.Parameter.empty or tp is typing.Any or tp is object:
        return value
    if tp is type(None):
        if value is not None:
            raise TypeError("%s: expected null, got %r" % (where, value))
        return None
    if tp is bool:
        if not isinstance(value, bool):
            raise TypeError("%s: expected a boolean, got %r" % (where, value))
        return value
    if tp is int:
        if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, float) and value.is_integer())):
            raise TypeError("%s: expected an integer, got %r" % (where, value))
        return int(value)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError("%s: expected a number, got %r" % (where, value))
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise TypeError("%s: expected a string, got %r" % (where, value))
        return value
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp in (list, tuple, set) or origin in (list, tuple, set, frozenset):
        if not isinstance(value, list):
            raise TypeError("%s: expected an array, got %r" % (where, value))
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(value) != len(args):
                raise TypeError("%s: expected %d items, got %d" % (where, len(args), len(value)))
            return tuple(_convert(v, a, where) for v, a in zip(value, args))
        items = [_convert(v, args[0], where) for v in value] if args else list(value)
        return (tuple(items) if (tp is tuple or origin is tuple) else
                set(items) if (tp is set or origin in (set, frozenset)) else items)
    if tp is dict or origin is dict:
        if not isinstance(value, dict):
            raise TypeError("%s: expected an object, got %r" % (where, value))
        if len(args) == 2:
            return {k: _convert(v, args[1], where) for k, v in value.items()}
        return value
    if origin is typing.Literal:
        if value not in args:
            raise TypeError("%s: expected one of %r, got %r" % (where, list(args), value))
        return value
    if _is_union(origin):
        errs = []
        for a in args:
            try:
                return _convert(value, a, where)
            except TypeError as e:
                errs.append(str(e))
        raise TypeError("; ".join(errs))
    return value


def bind_arguments(fn, arguments):
    """The keyword arguments to call fn with, from the model's input object (checked against the
    hints; unknown or missing names refused with TypeError saying what to send)."""
    if not isinstance(arguments, dict):
        raise TypeError("the input must be an object of named arguments, got %r" % (arguments,))
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = {}
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    out = {}
    for k, v in arguments.items():
        p = sig.parameters.get(k)
        if p is None or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            if takes_kwargs:
                out[k] = v
                continue
            raise TypeError("unknown argument %r (the tool takes: %s)" %
                            (k, ", ".join(n for n, q in sig.parameters.items()
                                          if q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD)) or "nothing"))
        out[k] = _convert(v, hints.get(k, p.annotation), "argument %s" % k)
    missing = [n for n, p in sig.parameters.items()
               if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and n not in out]
    if missing:
        raise TypeError("missing argument%s: %s" % ("s" if len(missing) > 1 else "", ", ".join(missing)))
    return out
