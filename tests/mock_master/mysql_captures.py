"""Real MySQL servers' answers, from the fixture captures (/work/shared/fixtures, MANIFEST.md):
each COM_QUERY with the result-set packets the server sent, decoded by ``binlogscope pcap``.
Used by test_mm_mysql_captures.py to compare the mock master's MySQL flavour with them."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
ZEEK = FIXTURES / "zeek__zeek" / "testing" / "btest" / "Traces" / "mysql"
DEEPFLOW = FIXTURES / "deepflowio__deepflow" / "agent" / "resources" / "test" / \
    "flow_generator" / "mysql"

#: the column definition fields compared
COLUMN_FIELDS = ("name", "type", "schema", "table", "org_table", "org_name", "catalog",
                 "character_set", "column_length", "flags", "decimals")


@dataclass
class Answered:
    """One query and the server's answer: column definitions, rows (bytes or None), the
    final status flags, or an ERR."""

    query: str
    columns: list[dict[str, Any]] = field(default_factory=list)
    rows: list[list[bytes | None]] = field(default_factory=list)
    status: int | None = None
    error: tuple[int, str] | None = None
    payload_lengths: list[int] = field(default_factory=list)


@dataclass
class Capture:
    server_version: str
    client_charset: int
    answers: list[Answered]

    def answer(self, query: str) -> Answered:
        return next(a for a in self.answers if a.query == query)


def load(path: Path) -> Capture:
    """The first connection of a capture that logged in, with its queries' answers."""
    if not path.exists():
        raise FileNotFoundError(f"capture missing: {path}")
    out = subprocess.run([sys.executable, "-m", "binlogscope", "pcap", "--json", str(path)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    version, charset = "", 0
    answers: list[Answered] = []
    cur: Answered | None = None
    for line in out.splitlines():
        o = json.loads(line)
        kind, f = o.get("kind"), o.get("fields") or {}
        if kind == "handshake_v10" and not version:
            version = f["server_version"]
        elif kind == "handshake_response41" and not charset:
            charset = f["character_set"]
        elif kind == "com_query":
            cur = Answered(f["query"])
            answers.append(cur)
        elif kind == "command" and f.get("command") == "COM_FIELD_LIST":
            table = bytes.fromhex(f["arguments"]).split(b"\0")[0].decode()
            cur = Answered(f"FIELD_LIST {table}")
            answers.append(cur)
        elif o.get("direction") == "client":
            cur = None  # another command (COM_FIELD_LIST, COM_INIT_DB...): not a query's
        elif cur is None or o.get("direction") != "server":
            continue
        elif kind == "column_definition41":
            cur.columns.append({k: f[k] for k in COLUMN_FIELDS})
            # COM_FIELD_LIST: the default value follows the definition; its length shows here
            cur.payload_lengths.append(o["payload_length"])
        elif kind == "text_row":
            cur.rows.append([None if v is None else bytes.fromhex(v) for v in f["values"]])
        elif kind in ("ok", "eof"):
            cur.status = f["status_flags"]  # the last one ends the answer
        elif kind == "err":
            cur.error = (f["error_code"], f["error_message"])
    return Capture(version, charset, answers)



def greeting_of(path: Path) -> dict[str, Any]:
    """The first server greeting's fields (and payload_length) of a capture."""
    out = subprocess.run([sys.executable, "-m", "binlogscope", "pcap", "--json", str(path)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    for line in out.splitlines():
        o = json.loads(line)
        if o.get("kind") == "handshake_v10":
            return {**o["fields"], "payload_length": o["payload_length"]}
    raise ValueError(f"no greeting in {path}")
