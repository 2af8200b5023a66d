"""Handles as objects: a session's kept results (tables, json, text, files), read through hull's
/v1 handle routes while the session lives."""
import json
import os

from .client import quote
from .errors import HullError

CHUNK = 16 << 20  # what one GET .../content answers at most (HULL_API_BINARY_READ_MAX)
PREVIEW_ROWS_MAX = 100  # what GET .../handles/{name}?rows= takes at most


class Handle:
    """A handle of a session. ``name``, ``kind`` ("table", "json", "text", "binary"), ``summary``
    (the line the model sees), ``bytes``, ``n_rows``/``n_columns`` (tables), ``source``."""

    def __init__(self, client, session_id, info):
        self._client, self._session = client, session_id
        self.name = info.get("name")
        self.kind = info.get("type")
        self.summary = info.get("summary") or info.get("error") or ""
        self.bytes = info.get("bytes")
        self.n_rows = info.get("rows")
        self.n_columns = info.get("columns")
        self.source = info.get("source") or ""

    def __repr__(self):
        return "<hull.Handle %s: %s>" % (self.name, self.summary)

    def _path(self, tail=""):
        return "/v1/sessions/%s/handles/%s%s" % (quote(self._session),
                                                quote(self.name), tail)

    def read(self):
        """The handle's bytes as stored (a table: its SQLite database)."""
        out, offset = bytearray(), 0
        while True:
            _, h, data = self._client.raw("GET", self._path("/content"), query={"offset": offset, "limit": CHUNK})
            out += data
            offset += len(data)
            if not data or offset >= int(h.get("x-hull-total-bytes", offset)):
                return bytes(out)

    def text(self):
        """A json or text handle's text."""
        return self.read().decode("utf-8")

    def value(self):
        """A json handle's value."""
        return json.loads(self.read())

    def download(self, path):
        """Write the handle's bytes to path (a table: an SQLite file with one table ``data``).
        Returns path."""
        data = self.read()
        tmp = path + ".part"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return path

    def rows(self, n=20):
        """The first n rows of a table handle, as dicts."""
        if self.kind != "table":
            raise HullError("handle %s is a %s handle, not a table: use .text(), .value() or .read()" %
                            (self.name, self.kind), "not_a_table")
        if n <= PREVIEW_ROWS_MAX:
            p = self._client.call("GET", self._path(), query={"rows": max(1, int(n))})["preview"]
            cols = [c["name"] for c in p["columns"]]
            return [dict(zip(cols, r)) for r in p["rows"][:n]]
        with self._local() as db:
            cur = db.execute("SELECT * FROM data LIMIT ?", (int(n),))
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, r)) for r in cur.fetchall()]

    def sql(self, query, *others):
        """One read-only SQL statement over this table (as ``data``, or ``NAME.data``) and the other
        handles given (as ``NAME.data``), run by hull. The rows as dicts, or a Handle when the
        result is large (hull keeps it as a new table handle)."""
        names = [self.name] + [h.name if isinstance(h, Handle) else str(h) for h in others]
        b = self._client.call("POST", "/v1/sessions/%s/query" % quote(self._session),
                              {"sql": query, "handles": names})
        if "handle" in b:
            return Handle(self._client, self._session, b["handle"])
        return [dict(zip(b["columns"], r)) for r in b["rows"]]

    def to_pandas(self):
        """A table handle as a pandas DataFrame (pandas must be installed)."""
        try:
            import pandas
        except ImportError:
            raise HullError("to_pandas() needs pandas (pip install pandas); rows() and sql() do without",
                            "pandas_missing")
        if self.kind != "table":
            raise HullError("handle %s is a %s handle, not a table" % (self.name, self.kind), "not_a_table")
        with self._local() as db:
            return pandas.read_sql_query("SELECT * FROM data", db)

    def _local(self):
        return _LocalTable(self.read())


class _LocalTable:
    """A table handle's SQLite database in a temporary file, open read-only, removed after."""

    def __init__(self, data):
        import tempfile  # here, as sqlite3 below: only a table's rows or SQL need them

        fd, self.path = tempfile.mkstemp(prefix="hull-table-", suffix=".sqlite")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        self.db = None

    def __enter__(self):
        import sqlite3

        self.db = sqlite3.connect("file:%s?mode=ro" % self.path, uri=True)
        return self.db

    def __exit__(self, *exc):
        self.db.close()
        os.unlink(self.path)


class PublishedFile:
    """A file the agent published (publish_file, or hull.publish() in a cell): ``name``,
    ``path`` (under /workspace/outputs), ``description``, ``data`` (its bytes), ``handle``."""

    def __init__(self, handle, data):
        self.handle = handle
        self.data = data
        src = handle.source[len("published "):] if handle.source.startswith("published ") else handle.source
        head, _, desc = src.partition(": ")  # "PATH[ as NAME]: DESCRIPTION"
        path, _, name = head.partition(" as ")
        self.path = path
        self.name = os.path.basename(name or path) or handle.name
        self.description = desc

    def __repr__(self):
        return "<hull.PublishedFile %s (%d bytes)>" % (self.name, len(self.data))

    def save(self, directory):
        """Write the file into directory under its name (made safe); returns the path."""
        os.makedirs(directory, exist_ok=True)
        name = self.name.replace("/", "_").replace("\\", "_")
        if name in ("", ".", ".."):
            name = self.handle.name
        path = os.path.join(directory, name)
        with open(path, "wb") as f:
            f.write(self.data)
        return path
