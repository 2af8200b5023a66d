#!/usr/bin/env python3
# pg_commits.py LOG OFFSET [SESSION]: the write transactions PostgreSQL logged since byte OFFSET
# of its server log (log_statement = 'all', log_line_prefix = '%p '), each one commit: one WAL
# flush (fsync) for a transaction that wrote. A statement outside BEGIN..COMMIT is a transaction
# of its own; it writes when it holds an INSERT, UPDATE or DELETE. With SESSION, only the
# transactions whose parameters name that session (a turn's, not the nodes' heartbeats). An
# INSERT INTO webhook_deliveries writes nothing while no webhook is registered: counted apart.
# Prints {"writes": N, "webhook_inserts": N, "reads": N, "by_kind": {...}, "statements": N,
# "sent": {...}, "unprepared": N}: statements, each a round trip, those whose parameters name
# SESSION (a psql statement has none), by their first words, and how many of them were not run
# prepared (pg_exec_hot's "execute hull_..."); not the other nodes' fallback poll of last_seq.
# Used by tests/integration/test-nodes.sh (issue 21: the commits a turn costs, counted, not timed).
import json
import re
import sys

# INSERT INTO, DELETE FROM, UPDATE t (not FOR UPDATE, DO UPDATE SET: no word before it)
TARGET = r"\b(?:INSERT INTO|DELETE FROM|(?<![A-Za-z] )UPDATE)\s+(\w+)"
WRITE = re.compile(TARGET, re.I)
LINE = re.compile(r"^(\d+) (?:[^:]*?)(LOG|DETAIL):  (.*)$")


def statements(path, offset):
    """[pid, sql, params, how] for each statement logged, in order (how: "statement", "execute
    <unnamed>" or "execute NAME" for a prepared one)."""
    with open(path, "rb") as f:
        f.seek(offset)
        text = f.read().decode("utf-8", "replace")
    cur = None
    for line in text.splitlines():
        m = LINE.match(line)
        if m and m.group(2) == "LOG":
            s = re.match(r"(statement|execute [^:]*): (.*)$", m.group(3))
            if cur:
                yield cur
            cur = [m.group(1), s.group(2), "", s.group(1)] if s else None
        elif m and m.group(2) == "DETAIL" and cur and m.group(1) == cur[0]:
            cur[2] += m.group(3)
        elif cur and not m and line[:1] in ("\t", " "):
            cur[1] += " " + line.strip()
    if cur:
        yield cur


def kind(sql):
    """The tables a statement writes, joined by '+'."""
    return "+".join(sorted(set(WRITE.findall(sql)))) or "other"


def main():
    session = sys.argv[3] if len(sys.argv) > 3 else None
    tx = {}  # pid -> [(sql, params)] of its open transaction
    out = {"writes": 0, "webhook_inserts": 0, "reads": 0, "by_kind": {}, "statements": 0, "sent": {}, "unprepared": 0}

    def count(body):
        w = [sql for sql, p in body if WRITE.search(sql)]
        if session and not any(session in p for _, p in body):
            return
        if not w:
            out["reads"] += 1
            return
        k = "+".join(sorted({t for x in w for t in kind(x).split("+")}))
        if k == "webhook_deliveries":
            out["webhook_inserts"] += 1
            return
        out["writes"] += 1
        out["by_kind"][k] = out["by_kind"].get(k, 0) + 1

    for pid, sql, params, how in statements(sys.argv[1], int(sys.argv[2])):
        s = sql.strip().rstrip(";")
        if session and session in params and not s.startswith("SELECT last_seq FROM sessions"):
            out["statements"] += 1
            out["unprepared"] += not how.startswith("execute hull_")
            words = " ".join(s.split()[:4])
            out["sent"][words] = out["sent"].get(words, 0) + 1
        up = s.upper()
        if up in ("BEGIN", "START TRANSACTION"):
            tx[pid] = []
        elif up in ("COMMIT", "END", "ROLLBACK"):
            body = tx.pop(pid, [])
            if up != "ROLLBACK":
                count(body)
        elif pid in tx:
            tx[pid].append((s, params))
        else:
            count([(s, params)])
    print(json.dumps(out))


main()
