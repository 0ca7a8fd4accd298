"""The client under test: a command template or a built-in preset, and how its output is read.

A template is a shell-like command line with placeholders, run once per case:
``{host}`` ``{port}`` ``{user}`` ``{password}`` (where and as whom to connect), ``{file}``
``{pos}`` (where to start), ``{gtid}`` (a GTID start: cases that need one are
*unimplemented* for a template without it), ``{flavor}`` (``mariadb`` or ``mysql``),
``{server_id}`` (a replica server id), ``{semi_sync}`` (``1`` when the case wants
semi-sync negotiated), ``{heartbeat}`` (seconds between heartbeats the case wants asked for,
with a read timeout of twice that; ``0``: the client's defaults), ``{tls}`` (``required`` when
the case wants the client to insist on TLS, ``default`` in the other TLS cases, else empty),
``{gtid_strict}`` (``1`` when a GTID case wants MariaDB's GTID strict mode, else ``0``).
The same values are in the environment
(``CONFORMANCE_HOST``, ..., and ``MYSQL_PWD``).

Adapters say how the client's stdout is read: ``schema`` (it prints the JSON lines of
docs/conformance.md itself), ``binlogscope-live`` (``binlogscope live --json`` output,
translated), ``none`` (nothing is read: the client is judged on the wire alone).

Presets: ``binlogscope`` (binlogscope's own replica, ``live --json``), ``python-mysql-replication``
(the in-tree adapter :mod:`mock_master.conformance.adapters.pmr`), ``mariadb-binlog``
(``mariadb-binlog --read-from-remote-server``, judged on the wire), ``mariadb-replica`` (a real
MariaDB replica's IO thread, :mod:`mock_master.conformance.adapters.mariadb_replica`).
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ADAPTERS = ("schema", "binlogscope-live", "none")
PLACEHOLDERS = ("host", "port", "user", "password", "file", "pos", "gtid", "flavor",
                "server_id", "semi_sync", "heartbeat", "tls", "gtid_strict")


class ClientError(Exception):
    """The client specification is not usable (one clear line)."""


@dataclass
class Params:
    host: str
    port: int
    user: str
    password: str
    file: str
    pos: int
    gtid: str | None
    flavor: str
    server_id: int
    #: the case needs semi-sync (a preset negotiates it only then)
    semi_sync: bool = False
    #: the case wants heartbeats every this many seconds and a read timeout of twice that
    heartbeat: float | None = None
    #: a TLS case: "default" (the client's own setting) or "required" (insist on TLS)
    tls: str | None = None
    #: MariaDB GTID strict mode wanted
    gtid_strict: bool = False

    def as_dict(self) -> dict[str, str]:
        return {"host": self.host, "port": str(self.port), "user": self.user,
                "password": self.password, "file": self.file, "pos": str(self.pos),
                "gtid": self.gtid or "", "flavor": self.flavor,
                "server_id": str(self.server_id), "semi_sync": "1" if self.semi_sync else "0",
                "heartbeat": f"{self.heartbeat:g}" if self.heartbeat else "0",
                "tls": self.tls or "", "gtid_strict": "1" if self.gtid_strict else "0"}


@dataclass
class Client:
    """How to run the client for one case and read what it prints."""

    name: str
    argv: Callable[[Params], list[str]]
    adapter: str
    #: what the client can do: "gtid" (a GTID start), "semi_sync"
    offers: frozenset[str]


def _template(cmd: str) -> Callable[[Params], list[str]]:
    try:
        parts = shlex.split(cmd)
    except ValueError as exc:
        raise ClientError(f"--client {cmd!r}: {exc}") from None
    if not parts:
        raise ClientError("--client: empty command")
    for m in re.finditer(r"\{(\w+)\}", cmd):
        if m.group(1) not in PLACEHOLDERS:
            raise ClientError(f"--client: unknown placeholder {{{m.group(1)}}} (known: "
                              + " ".join("{" + p + "}" for p in PLACEHOLDERS) + ")")

    def argv(p: Params) -> list[str]:
        values = p.as_dict()
        return [re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], a) for a in parts]

    return argv


#: the preset turns TLS off (the relay then reads the stream) except in the TLS cases, where
#: it runs with its default (PREFERRED) or insists (REQUIRED)
_LIVE_SSL = {"default": "PREFERRED", "required": "REQUIRED"}


def _binlogscope(p: Params) -> list[str]:
    argv = [sys.executable, "-m", "binlogscope", "live", "--host", p.host, "--port", str(p.port),
            "--user", p.user, "--ssl-mode", _LIVE_SSL.get(p.tls or "", "DISABLED"),
            "--server-id", str(p.server_id),
            "--non-blocking", "--json", "--connect-timeout", "5"]
    if p.heartbeat:  # its defaults: a heartbeat every 30 s, a dead link after 60 s
        argv += ["--heartbeat", f"{p.heartbeat:g}", "--net-read-timeout",
                 str(max(1, round(2 * p.heartbeat)))]
    if p.semi_sync:
        argv.append("--semi-sync")
    if p.flavor == "mysql":  # caching_sha2_password without TLS: the RSA key exchange
        argv.append("--get-server-public-key")
    argv += ["--gtid", p.gtid] if p.gtid else ["--start", f"{p.file}:{p.pos}"]
    return argv


def _pmr(p: Params) -> list[str]:
    return [sys.executable, "-m", "mock_master.conformance.adapters.pmr", p.host, str(p.port),
            p.user, p.password, p.file, str(p.pos), p.flavor, p.gtid or "",
            f"{p.heartbeat:g}" if p.heartbeat else "", p.tls or ""]


def _mariadb_binlog(p: Params) -> list[str]:
    exe = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog") or "mariadb-binlog"
    argv = [exe, "--read-from-remote-server", f"--host={p.host}", f"--port={p.port}",
            f"--user={p.user}", "--to-last-log", "--protocol=TCP"]
    if p.tls == "required":
        # 10.11's one option that insists: --ssl alone falls back to plain TCP when the
        # server offers no TLS (measured against a real MariaDB without TLS as well); its
        # default already switches to TLS when the server offers it
        argv.append("--ssl-verify-server-cert")
    if p.gtid:
        argv.append(f"--start-position={p.gtid}")
    else:
        argv.append(f"--start-position={p.pos}")
    argv.append(p.file)
    return argv


def _mariadb_replica(p: Params) -> list[str]:
    return [sys.executable, "-m", "mock_master.conformance.adapters.mariadb_replica", p.host,
            str(p.port), p.user, p.password, p.file, str(p.pos), p.flavor,
            "1" if p.semi_sync else "0", p.gtid or "", f"{p.heartbeat:g}" if p.heartbeat else "",
            p.tls or ""]


PRESETS: dict[str, Client] = {
    "binlogscope": Client("binlogscope", _binlogscope, "binlogscope-live",
                          frozenset({"gtid", "semi_sync"})),
    "python-mysql-replication": Client("python-mysql-replication", _pmr, "schema",
                                       frozenset({"gtid"})),
    "mariadb-binlog": Client("mariadb-binlog", _mariadb_binlog, "none", frozenset({"gtid"})),
    # a real MariaDB replica's IO thread (CONFORMANCE_REPLICA names the server)
    "mariadb-replica": Client("mariadb-replica", _mariadb_replica, "none",
                              frozenset({"gtid", "semi_sync"})),
}


def make_client(spec: str, adapter: str | None = None, *, semi_sync: bool = False,
                name: str | None = None) -> Client:
    """A preset by name, or a command template (``adapter`` default ``schema``)."""
    if spec in PRESETS:
        c = PRESETS[spec]
        if adapter is not None and adapter != c.adapter:
            c = Client(c.name, c.argv, adapter, c.offers)
        return c
    a = adapter or "schema"
    if a not in ADAPTERS:
        raise ClientError(f"--adapter {a!r}: expected one of {', '.join(ADAPTERS)}")
    offers = {"gtid"} if "{gtid}" in spec else set()
    if semi_sync:
        offers.add("semi_sync")
    return Client(name or shlex.split(spec)[0].rsplit("/", 1)[-1], _template(spec), a,
                  frozenset(offers))


# ------------------------------------------------------------------ binlogscope live --json
_ROWS = (("WRITE_ROWS", "insert"), ("UPDATE_ROWS", "update"), ("DELETE_ROWS", "delete"),
         ("PARTIAL_UPDATE_ROWS", "update"))


def translate_live_all(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """One ``binlogscope live --json`` item as conformance schema lines: a TRANSACTION_PAYLOAD
    is its ``events`` (the compressed transaction's events, decoded), each translated."""
    inner = obj.get("events")
    if obj.get("kind") == "binlog_event" and isinstance(inner, list) and not obj.get("error"):
        out = []
        for e in inner:
            if isinstance(e, dict):
                tr = translate_live({"kind": "binlog_event", **e})
                if tr is not None:
                    out.append(tr)
        return out
    tr = translate_live(obj)
    return [] if tr is None else [tr]


def translate_live(obj: dict[str, Any]) -> dict[str, Any] | None:
    """One ``binlogscope live --json`` item as a conformance schema line (None: not an event)."""
    kind = obj.get("kind")
    if kind in ("error", "decode_error"):
        return {"type": "error", "message": str(obj.get("error") or obj.get("text")
                                                or obj.get("message") or obj)}
    if kind != "binlog_event":
        return None
    if obj.get("error"):
        return {"type": "error", "message": f"{obj.get('event_type')}: {obj['error']}"}
    if obj.get("checksum_ok") is False:
        return {"type": "error", "message": f"{obj.get('event_type')} at "
                f"{obj.get('binlog_file')}:{obj.get('offset')}: CRC32 mismatch"}
    et = str(obj.get("event_type") or "")
    pos = {"log_file": obj.get("binlog_file"), "log_pos": obj.get("log_pos")}
    for prefix, t in _ROWS:
        if et.startswith(prefix):
            rows = []
            for r in obj.get("rows") or []:
                item = {}
                if r.get("before") is not None:
                    item["before"] = r["before"]
                if r.get("after") is not None:
                    item["after"] = r["after"]
                rows.append(item)
            return {"type": t, "schema": obj.get("schema"), "table": obj.get("table"),
                    "rows": rows, **pos}
    if et.startswith("QUERY"):
        return {"type": "query", "schema": obj.get("schema"), "query": obj.get("query"), **pos}
    if et in ("GTID_EVENT", "GTID_LOG_EVENT", "GTID_TAGGED_LOG_EVENT"):
        return {"type": "gtid", "gtid": obj.get("gtid"), **pos}
    if et == "XID_EVENT":
        return {"type": "xid", **pos}
    if et == "ROTATE_EVENT":
        return {"type": "rotate", "next_file": obj.get("next_file"),
                "position": obj.get("next_position"), **pos}
    if et.startswith("HEARTBEAT"):
        return {"type": "heartbeat", **pos}
    return {"type": "other", "event_type": et, **pos}


HELLO_LIVE = {"type": "hello", "client": "binlogscope live --json", "bytes": "hex"}
