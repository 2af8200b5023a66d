# hull.py: the module `hull` inside a session's sandbox: handles in and out of Python code.
#
#   load(id)                      a handle from the store: table -> pandas DataFrame (list of dicts
#                                 without pandas), json -> object, text -> str, binary -> its path
#   save(id, obj, source=None)    a new handle, adopted by the host after the call; returns id
#   emit(value)                   the call's result (JSON; the last write wins)
#   publish(path, description)    ask the host to deliver a file under /workspace/outputs/
#
# The store is read-only at $HULL_HANDLES (default /handles); its _manifest.json is
# {id: {"kind": ..., "path": <file name in the store>, ...}}. Everything this module writes goes
# to the call's exchange directory: a cell names it in its frame (the cell driver calls
# _begin_call), a script run gets $HULL_EXCHANGE. The host only names it; this module makes it
# (0700) the first time save, emit or publish needs it. The host reads it back with no-follow,
# regular-file-only, size-capped opens and trusts nothing in it; the checks here are for a
# clear error early, not for safety. Files in the exchange directory:
#   <n>.sqlite|.json|.txt|.bin   payloads (names picked here, never the id)
#   new_handles.jsonl            one line per save: {"id","kind","file","source"}
#   emit.json                    the emitted value
#   publish.jsonl                one line per publish: {"path" (relative to /workspace), "description"}
#
# A table is an SQLite file with one table "data" whose declared column types are INTEGER, REAL,
# TEXT, BOOLEAN (0/1), TIMESTAMP or DATE (ISO text, "YYYY-MM-DD HH:MM:SS[.ffffff]").
#
# Run as a program it runs a script (python3 -c <this source> run SCRIPT [ARGS...]): the four
# functions are predefined there, `import hull` works, and a bare last expression is the result.

import ast
import builtins
import datetime
import gc
import json
import math
import os
import re
import sqlite3
import stat
import sys
import types

ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
KINDS = ("json", "text", "table", "binary")
MAX_NEW_HANDLES = 256          # per call; the host adopts no more
MAX_PUBLISH = 64               # per call
MAX_DESCRIPTION = 1024         # characters of a publish description
MAX_SOURCE = 256               # characters of a save's source
MAX_PAYLOAD = 1 << 30          # bytes of one saved file (the store's default largest handle;
                               # the host refuses what is over its own --handle-max)
EMIT_INLINE_MAX = 1 << 20      # larger emits reach the caller as a json handle
NEW_HANDLES = "new_handles.jsonl"
EMIT = "emit.json"
PUBLISH = "publish.jsonl"
_EXT = {"table": ".sqlite", "json": ".json", "text": ".txt", "binary": ".bin"}


class _State:
    def __init__(self):
        self.mode = "script"       # "cell" once a cell driver installed the module
        self.exchange = None       # a cell's exchange directory, or None
        self.seq = 0
        self.manifest = (None, {})  # (stat key, parsed manifest)


_state = _State()


def _handles_dir():
    return os.environ.get("HULL_HANDLES") or "/handles"


def _workspace():
    return os.path.abspath(os.environ.get("HULL_WORKSPACE") or "/workspace")


def _begin_call(exchange):
    """The cell driver: a new call, with this exchange directory (None: none)."""
    _state.mode = "cell"
    _state.exchange = exchange if isinstance(exchange, str) and exchange else None
    _state.seq = 0


def _end_call():
    _state.exchange = None


def _current():
    return _state.exchange if _state.mode == "cell" else os.environ.get("HULL_EXCHANGE")


def _exchange(what):
    x = _current()
    if not x:
        raise RuntimeError("hull.%s: this call has no exchange directory, so nothing can be saved, emitted or "
                           "published (hull gives one to session cells and run_python scripts)" % what)
    # The host names the directory but does not make it (a call that saves, emits and publishes
    # nothing costs no directory): made here on first use, 0700, with .hull when missing. A link
    # or a file in the way is refused here for a clear error; the host refuses it anyway.
    if not os.path.isdir(x):
        parent = os.path.dirname(x)
        for d, mode in ((parent, 0o755), (x, 0o700)):
            try:
                os.mkdir(d, mode)
            except FileExistsError:
                pass
            except OSError as e:
                raise RuntimeError("hull.%s: cannot make the exchange directory %s: %s" % (what, d, e.strerror))
            st = os.lstat(d)
            if not stat.S_ISDIR(st.st_mode):
                raise RuntimeError("hull.%s: %s is %s, not a directory; remove it (hull keeps per-call files there)"
                                   % (what, d, "a symbolic link" if stat.S_ISLNK(st.st_mode) else "a file"))
    return x


# ---- the store ----------------------------------------------------------------------------------
def _manifest():
    path = os.path.join(_handles_dir(), "_manifest.json")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
    if _state.manifest[0] != key:
        with open(path, "rb") as f:
            m = json.loads(f.read().decode("utf-8"))
        _state.manifest = (key, m if isinstance(m, dict) else {})
    return _state.manifest[1]


def _lookup(id):
    """(kind, absolute path) of a handle in the store or saved in this call."""
    if not isinstance(id, str):
        raise TypeError("hull.load: a handle id is a string, not %s" % type(id).__name__)
    rec = _manifest().get(id)
    if isinstance(rec, dict) and rec.get("kind") in KINDS and isinstance(rec.get("path"), str):
        base = _handles_dir()
        p = os.path.normpath(os.path.join(base, rec["path"]))
        if not p.startswith(os.path.abspath(base) + os.sep) or not os.path.exists(p):
            p = os.path.join(base, os.path.basename(rec["path"]))
        return rec["kind"], p
    saved = _saved(_current())
    if id in saved:
        return saved[id]
    known = sorted(k for k in _manifest() if isinstance(k, str))
    shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
    raise KeyError("hull.load: no handle %r (handles: %s)" % (id, shown or "none"))


def load(id):
    """The handle's content: table -> DataFrame (list of dicts without pandas), json -> object,
    text -> str, binary -> the file's path."""
    kind, path = _lookup(id)
    if kind == "binary":
        return path
    if kind == "text":
        with open(path, "rb") as f:
            return f.read().decode("utf-8", errors="replace")
    if kind == "json":
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    return _load_table(path)


def _pandas():
    try:
        import pandas
        return pandas
    except ImportError:
        return None


def _decl_kind(decl):
    d = (decl or "").upper()
    if "BOOL" in d:
        return "bool"
    if "TIMESTAMP" in d or "DATETIME" in d:
        return "timestamp"
    if "DATE" in d:
        return "date"
    if "INT" in d:
        return "int"
    if "REAL" in d or "FLOA" in d or "DOUB" in d:
        return "real"
    return "text"


def _load_table(path):
    uri = "file:%s?mode=ro&immutable=1" % path.replace("?", "%3f").replace("#", "%23")
    con = sqlite3.connect(uri, uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                            "AND name NOT LIKE 'sqlite%' ORDER BY name")]
        if "data" in tables:
            table = "data"
        elif len(tables) == 1:
            table = tables[0]
        else:
            raise ValueError("hull.load: %s holds %d tables, not one" % (path, len(tables)))
        q = '"%s"' % table.replace('"', '""')
        info = con.execute("PRAGMA table_info(%s)" % q).fetchall()
        names = [r[1] for r in info]
        kinds = [_decl_kind(r[2]) for r in info]
        with _no_gc():  # a million rows are a million tuples: the collector would walk them all
            cols = [[] for _ in names]
            cur = con.execute("SELECT * FROM %s" % q)
            while True:
                rows = cur.fetchmany(8192)
                if not rows:
                    break
                for col, values in zip(cols, zip(*rows)):
                    col.extend(values)
    finally:
        con.close()
    n_rows = len(cols[0]) if cols else 0
    pd = _pandas()
    if pd is None:
        conv = [_py_converter(k) for k in kinds]
        cols = [list(map(c, col)) if c else col for c, col in zip(conv, cols)]
        return [dict(zip(names, r)) for r in zip(*cols)] if n_rows else []
    import numpy as np
    data = {}
    for name, kind, col in zip(names, kinds, cols):
        data[name] = _np_column(pd, np, kind, col)
    return pd.DataFrame(data, columns=names)


def _np_column(pd, np, kind, col):
    try:
        if kind == "int":
            if None in col:
                return np.array(col, dtype=np.float64)
            return np.array(col, dtype=np.int64)
        if kind == "real":
            return np.array(col, dtype=np.float64)
        if kind == "bool":
            if None in col:
                return np.array([None if v is None else bool(v) for v in col], dtype=object)
            return np.array(col, dtype=bool)
        if kind == "timestamp":
            return pd.to_datetime(np.array(col, dtype=object)).values if len(col) else \
                np.array([], dtype="datetime64[ns]")
        if kind == "date":  # as pandas holds dates: datetime.date objects (so a saved frame comes back equal)
            return np.array([v if v is None or not isinstance(v, str) else datetime.date.fromisoformat(v) for v in col],
                            dtype=object)
    except (TypeError, ValueError, OverflowError):
        pass  # a value of another type (SQLite is dynamically typed): keep the values as they are
    return np.array(col, dtype=object)


def _py_converter(kind):
    def boolean(v):
        return v if v is None or isinstance(v, str) else bool(v)

    def parse(fn):
        def conv(v):
            if isinstance(v, str):
                try:
                    return fn(v)
                except ValueError:
                    return v
            return v
        return conv
    if kind == "bool":
        return boolean
    if kind == "timestamp":
        return parse(datetime.datetime.fromisoformat)
    if kind == "date":
        return parse(lambda v: datetime.date.fromisoformat(v[:10]) if len(v) > 10 and v[10] in " T"
                     and v[11:].strip("0:. ") == "" else datetime.date.fromisoformat(v))
    return None


# ---- saving -------------------------------------------------------------------------------------
def _saved(x):
    """{id: (kind, path)} of the handles saved in this call (by any process), from new_handles.jsonl."""
    saved = {}
    if not x:
        return saved
    try:
        with open(os.path.join(x, NEW_HANDLES), "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return saved
    for line in lines:
        try:
            r = json.loads(line)
            saved.setdefault(r["id"], (r["kind"], os.path.join(x, os.path.basename(r["file"]))))
        except (ValueError, KeyError, TypeError):
            pass
    return saved


def _check_new_id(x, id):
    if not isinstance(id, str) or not ID_RE.match(id):
        raise ValueError("hull.save: bad handle id %r: use 1 to 64 characters from [A-Za-z0-9_.-], starting "
                         "with a letter or digit" % (id,))
    saved = _saved(x)
    if id in saved:
        raise ValueError("hull.save: handle %r was already saved in this call; handles are immutable, choose "
                         "another id" % id)
    if id in _manifest():
        raise ValueError("hull.save: handle %r already exists; handles are immutable, choose another id" % id)
    if len(saved) >= MAX_NEW_HANDLES:
        raise RuntimeError("hull.save: too many new handles in one call (at most %d)" % MAX_NEW_HANDLES)


def _new_file(x, kind):
    """A fresh payload file in the exchange directory: (name, path, fd)."""
    while True:
        _state.seq += 1
        name = "%d%s" % (_state.seq, _EXT[kind])
        path = os.path.join(x, name)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            continue
        return name, path, fd


def _write_fd(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _append_line(path, obj):
    line = (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        _write_fd(fd, line)
    finally:
        os.close(fd)


def _is_frame(obj):
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, (pd.DataFrame, pd.Series))


def save(id, obj, source=None):
    """Save obj as a new handle id, adopted by the host when the call ends; returns id.
    DataFrame or a list of dicts -> table; dict, list, tuple or a number -> json; str -> text; bytes ->
    binary; a pathlib.Path (or other os.PathLike) -> a copy of that regular file as binary."""
    x = _exchange("save")
    _check_new_id(x, id)
    if source is None:
        source = "cell" if _state.mode == "cell" else "script"
    if not isinstance(source, str) or not source or len(source.encode("utf-8", "replace")) > MAX_SOURCE \
            or any(ord(c) < 32 or ord(c) == 127 for c in source):
        raise ValueError("hull.save: source is a non-empty string of at most %d bytes without control characters"
                         % MAX_SOURCE)
    if _is_frame(obj):
        kind = "table"
    elif isinstance(obj, list) and obj and all(isinstance(r, dict) for r in obj):
        kind = "table"
    elif isinstance(obj, (dict, list, tuple, int, float, type(None))):  # bool is an int
        kind = "json"
    elif isinstance(obj, str):
        kind = "text"
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        kind = "binary"
    elif isinstance(obj, os.PathLike):
        kind = "binary"
    else:
        raise TypeError("hull.save: cannot save a %s; save a DataFrame, a list of dicts, a dict or list, a str, "
                        "bytes or a pathlib.Path (or convert it first)" % type(obj).__name__)
    name, path, fd = _new_file(x, kind)
    try:
        try:
            if kind == "table":
                os.close(fd)
                fd = -1
                if _is_frame(obj):
                    _write_frame(path, obj)
                else:
                    _write_records(path, obj)
            elif kind == "json":
                _write_fd(fd, _json_bytes(obj, "save"))
            elif kind == "text":
                _write_fd(fd, obj.encode("utf-8"))
            elif isinstance(obj, os.PathLike):
                _copy_file(obj, fd)
            else:
                _write_fd(fd, bytes(obj))
        finally:
            if fd >= 0:
                os.close(fd)
        size = os.stat(path).st_size
        if size > MAX_PAYLOAD:
            raise ValueError("hull.save: %r is too large (%d bytes, at most %d)" % (id, size, MAX_PAYLOAD))
    except BaseException:
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    _append_line(os.path.join(x, NEW_HANDLES), {"id": id, "kind": kind, "file": name, "source": source})
    return id


def _copy_file(src, out_fd):
    fd = os.open(os.fspath(src), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("hull.save: %s is not a regular file" % os.fspath(src))
        if st.st_size > MAX_PAYLOAD:
            raise ValueError("hull.save: %s is too large (%d bytes, at most %d)" % (os.fspath(src), st.st_size,
                                                                                   MAX_PAYLOAD))
        os.set_blocking(fd, True)
        total = 0
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            total += len(b)
            if total > MAX_PAYLOAD:
                raise ValueError("hull.save: %s grew past %d bytes while copied" % (os.fspath(src), MAX_PAYLOAD))
            _write_fd(out_fd, b)
    finally:
        os.close(fd)


def _jsonable(o):
    """Values JSON has no type for: numpy scalars and arrays, sets, dates, frames; else str()."""
    if hasattr(o, "tolist") and type(o).__module__ == "numpy":
        return o.tolist()
    if isinstance(o, (set, frozenset)):
        try:
            return sorted(o)
        except TypeError:
            return list(o)
    if isinstance(o, (datetime.date, datetime.time)):
        return o.isoformat()
    if _is_frame(o):
        return json.loads(o.to_json(orient="records" if hasattr(o, "columns") else "values", date_format="iso"))
    if isinstance(o, (bytes, bytearray)):
        return bytes(o).decode("utf-8", errors="replace")
    return str(o)


def _finite(o, depth=0):
    """o with NaN and infinities as None (strict JSON has no such numbers)."""
    if depth > 10000:
        raise ValueError("too deeply nested")
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _finite(v, depth + 1) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v, depth + 1) for v in o]
    return o


def _json_bytes(obj, what):
    try:
        s = json.dumps(obj, default=_jsonable, allow_nan=False, ensure_ascii=False)
    except ValueError:
        s = json.dumps(_finite(json.loads(json.dumps(obj, default=_jsonable))), allow_nan=False,
                       ensure_ascii=False)
    except RecursionError:
        raise ValueError("hull.%s: the value is nested too deeply for JSON" % what) from None
    return s.encode("utf-8", errors="backslashreplace")


def _quote(name):
    return '"%s"' % name.replace('"', '""')


class _no_gc:
    def __enter__(self):
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *a):
        if self.was:
            gc.enable()


def _insert(path, names, decls, rows):
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode = OFF")
        con.execute("PRAGMA synchronous = OFF")
        con.execute("PRAGMA page_size = 16384")
        con.execute("BEGIN")
        con.execute("CREATE TABLE data (%s)" % ", ".join("%s %s" % (_quote(n), d) for n, d in zip(names, decls)))
        if names:
            con.executemany("INSERT INTO data VALUES (%s)" % ", ".join("?" * len(names)), rows)
        con.execute("COMMIT")
    finally:
        con.close()


def _col_names(raw):
    names = [n if isinstance(n, str) else str(n) for n in raw]
    if len(set(names)) != len(names):
        raise ValueError("hull.save: column names are not unique: %s" % names)
    return names


def _write_frame(path, obj):
    import numpy as np
    pd = sys.modules["pandas"]
    df = obj.to_frame() if isinstance(obj, pd.Series) else obj
    if not (isinstance(df.index, pd.RangeIndex) and df.index.start == 0 and df.index.step == 1) \
            or df.index.name is not None:
        df = df.reset_index()  # a meaningful index is kept as columns
    names = _col_names(df.columns)
    decls, cols = [], []
    with _no_gc():
        for i in range(len(names)):
            d, c = _frame_column(pd, np, df.iloc[:, i])
            decls.append(d)
            cols.append(c)
        _insert(path, names, decls, zip(*cols))


def _frame_column(pd, np, s):
    """(declared type, list of Python values) of one column."""
    dt = s.dtype
    kind = getattr(dt, "kind", "O")
    if isinstance(dt, pd.CategoricalDtype):
        s = s.astype(object)
        dt, kind = s.dtype, "O"
    if kind == "b":
        return "BOOLEAN", s.to_numpy().tolist()
    if kind in "iu" and not isinstance(dt, pd.api.extensions.ExtensionDtype):
        return "INTEGER", s.to_numpy().tolist()
    if kind == "f" and not isinstance(dt, pd.api.extensions.ExtensionDtype):
        return "REAL", s.to_numpy().tolist()  # NaN is stored as NULL
    if kind == "M":
        return "TIMESTAMP", _iso_times(pd, np, s)
    if isinstance(dt, pd.api.extensions.ExtensionDtype) and kind in "iufb":  # Int64, Float64, boolean
        values = s.to_numpy(dtype=object, na_value=None).tolist()
        return {"i": "INTEGER", "u": "INTEGER", "f": "REAL", "b": "BOOLEAN"}[kind], values
    values = s.to_numpy(dtype=object)
    if pd.api.types.infer_dtype(values, skipna=True) in ("string", "empty"):  # the common case, fast
        if s.hasnans:
            values = np.where(pd.isna(values), None, values)
        return "TEXT", values.tolist()
    return _object_column(values.tolist())


def _iso_times(pd, np, s):
    if getattr(s.dt, "tz", None) is not None:
        s = s.dt.tz_convert("UTC").dt.tz_localize(None)
    v = s.to_numpy(dtype="datetime64[ns]")
    i8 = v.view(np.int64)
    nat = np.isnat(v)
    ok = i8[~nat]
    unit = "s" if not (ok % 1000000000).any() else "us" if not (ok % 1000).any() else "ns"
    a = np.datetime_as_string(v, unit=unit)
    if len(a):
        chars = a.view(np.uint32).reshape(len(a), -1)
        if chars.shape[1] > 10:
            t = chars[:, 10]
            t[t == ord("T")] = ord(" ")
    out = a.tolist()
    for j in np.flatnonzero(nat).tolist():
        out[j] = None
    return out


def _object_column(values):
    """Declared type and values of a column of Python objects (a list of dicts' column too)."""
    types_seen = set()
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        if isinstance(v, bool):
            types_seen.add("bool")
        elif isinstance(v, int):
            types_seen.add("int")
        elif isinstance(v, float):
            types_seen.add("real")
        elif isinstance(v, datetime.datetime):
            types_seen.add("timestamp")
        elif isinstance(v, datetime.date):
            types_seen.add("date")
        elif isinstance(v, str):
            types_seen.add("text")
        elif type(v).__module__ == "numpy" and hasattr(v, "item"):
            types_seen.add({"b": "bool", "i": "int", "u": "int", "f": "real"}.get(v.dtype.kind, "other"))
        else:
            types_seen.add("other")
        if len(types_seen) > 2:
            break
    if types_seen == {"int", "real"}:
        types_seen = {"real"}
    t = types_seen.pop() if len(types_seen) == 1 else ("text" if types_seen else "empty")

    def nullish(v):
        return v is None or (isinstance(v, float) and math.isnan(v))
    if t in ("bool", "int", "real"):
        decl = {"bool": "BOOLEAN", "int": "INTEGER", "real": "REAL"}[t]
        return decl, [None if nullish(v) else (v.item() if hasattr(v, "item") else v) for v in values]
    if t == "timestamp":
        return "TIMESTAMP", [None if nullish(v) else
                             (v.astimezone(datetime.timezone.utc).replace(tzinfo=None) if v.tzinfo else v)
                             .isoformat(sep=" ") for v in values]
    if t == "date":
        return "DATE", [None if nullish(v) else v.isoformat() for v in values]
    if t == "empty":
        return "TEXT", [None] * len(values)
    return "TEXT", [None if nullish(v) else v if isinstance(v, str) else
                    (json.dumps(v, default=_jsonable) if isinstance(v, (dict, list)) else str(v)) for v in values]


def _write_records(path, records):
    names, seen = [], set()
    for r in records:
        for k in r:
            if k not in seen:
                seen.add(k)
                names.append(k)
    cols = []
    decls = []
    for k in names:
        d, c = _object_column([r.get(k) for r in records])
        decls.append(d)
        cols.append(c)
    _insert(path, _col_names(names), decls, zip(*cols))


# ---- emit and publish ---------------------------------------------------------------------------
def emit(value):
    """The call's result, as JSON (values JSON has no type for are converted or str()'d). The last
    emit wins. Over 1 MiB the caller receives it as a json handle instead."""
    x = _exchange("emit")
    data = _json_bytes(value, "emit")
    if len(data) > MAX_PAYLOAD:
        raise ValueError("hull.emit: the value is too large (%d bytes of JSON, at most %d); save it as a handle"
                         % (len(data), MAX_PAYLOAD))
    tmp = os.path.join(x, ".emit.%d.tmp" % os.getpid())
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        _write_fd(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, os.path.join(x, EMIT))


def publish(path, description=""):
    """Ask the host to deliver the file at path (under /workspace/outputs/) when the call ends."""
    x = _exchange("publish")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError("hull.publish: path is a str or a pathlib.Path, not %s" % type(path).__name__)
    if description is None:
        description = ""
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION or "\0" in description:
        raise ValueError("hull.publish: description is a str of at most %d characters" % MAX_DESCRIPTION)
    p = os.fspath(path)
    if not isinstance(p, str) or "\0" in p or not p.strip():
        raise ValueError("hull.publish: bad path %r" % (p,))
    ws = _workspace()
    full = os.path.abspath(p)
    outputs = os.path.join(ws, "outputs") + os.sep
    if not full.startswith(outputs) or full == outputs:
        raise ValueError("hull.publish: %s is not under %s; write the file there first" % (p, outputs))
    if os.path.realpath(full) != os.path.join(os.path.realpath(ws), full[len(ws) + 1:]):
        raise ValueError("hull.publish: %s goes through a symbolic link; publish the file itself" % p)
    if not os.path.isfile(full):
        raise ValueError("hull.publish: %s is not a regular file" % p)
    try:
        with open(os.path.join(x, PUBLISH), "rb") as f:
            count = len(f.read().splitlines())
    except OSError:
        count = 0
    if count >= MAX_PUBLISH:
        raise RuntimeError("hull.publish: too many publish requests in one call (at most %d)" % MAX_PUBLISH)
    rel = full[len(ws) + 1:]
    _append_line(os.path.join(x, PUBLISH), {"path": rel, "description": description})
    return rel


# ---- scripts ------------------------------------------------------------------------------------
def _predefine(ns):
    for f in (load, save, emit, publish):
        ns.setdefault(f.__name__, f)


def run_script(path, args=()):
    """Run the Python script at path as __main__ with the four functions predefined. If its last
    statement is a bare expression whose value is not None, that value is emitted unless the script
    emitted something already (printed with repr() when there is no exchange directory)."""
    with open(path, "rb") as f:
        src = f.read()
    tree = ast.parse(src, path, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    main = types.ModuleType("__main__")
    ns = main.__dict__
    ns.update({"__file__": path, "__builtins__": builtins})
    _predefine(ns)
    sys.modules["__main__"] = main
    sys.argv = [path] + list(args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    exec(compile(tree, path, "exec"), ns)
    if last is not None:
        value = eval(compile(last, path, "eval"), ns)
        if value is not None:
            x = _current()
            if not x:
                print(repr(value))
            elif not os.path.exists(os.path.join(x, EMIT)):
                emit(value)
    return 0


def _install(mod_globals):
    """Make these globals importable as `hull` (the runner runs this source as __main__)."""
    mod = types.ModuleType("hull", __doc__)
    mod.__dict__.update({k: v for k, v in mod_globals.items() if not k.startswith("__")})
    sys.modules["hull"] = mod
    return mod


def _runner(argv):
    if len(argv) < 2 or argv[0] != "run":
        sys.stderr.write("usage: python3 -c <hull.py> run SCRIPT [ARGS...]\n")
        return 2
    _install(globals())
    try:
        return run_script(argv[1], argv[2:])
    except SystemExit:
        raise
    except BaseException as e:
        import traceback
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != argv[1]:
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb or e.__traceback__)
        return 1


if __name__ == "__main__":
    sys.exit(_runner(sys.argv[1:]))
