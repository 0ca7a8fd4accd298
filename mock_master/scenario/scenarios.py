"""Scenarios: who may log in, what the server looks like, what it serves, and which faults fire.

The same model is loaded from a TOML or YAML file or built in Python::

    # scenario.toml
    flavor = "mariadb"                  # or "mysql"
    server_version = "10.11.19-MariaDB-log"
    server_id = 1
    log = "run-log.json"                # what each client did (written when the server stops)

    [[users]]                           # who may log in (default: repl / replpass only)
    name = "repl"
    password_file = "secrets/repl.pw"   # or password_env = "REPL_PW", or password = "..."
    plugin = "mysql_native_password"    # or "caching_sha2_password"

    [variables]                         # limits, as the server's variables (these defaults)
    max_allowed_packet = 16777216       # bigger client packets: ERR 1153, connection closed
    connect_timeout = 10                # seconds to log in
    wait_timeout = 28800                # seconds a logged-in client may idle (0: no limit)

    [[sources]]
    binlog = ["captures/mariadb-workload/mysql-bin.000001"]   # or pcap = ..., recording = ...

    [[actions]]
    action = "disconnect_after_event"
    at = 10                             # the 10th event sent on a connection (1 = fake ROTATE)
    times = 1                           # fire on this many connections (0: every one)

    [[answers]]
    query = "SELECT @@foo"              # a regular expression matched on the whole query
    columns = ["@@foo"]
    rows = [["bar"]]

Python::

    Scenario(users=[User("repl", "replpass")], sources=[BinlogSource(paths)],
             actions=[Action("delay", at=5, seconds=0.5)])
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binlogscope.drivers.scenario_files import read_scenario_file
from mock_master.history.loaders import load_binlog_files, load_pcap, load_recording
from mock_master.history.sources import EventStream, SourceError
from mock_master.scenario.errors import ScenarioError as ScenarioError
from mock_master.scenario.faults import Action, action_from_mapping, validate_action

PLUGINS = ("mysql_native_password", "caching_sha2_password")


@dataclass
class User:
    name: str
    password: str = ""
    plugin: str = "mysql_native_password"

    def __post_init__(self) -> None:
        if self.plugin not in PLUGINS:
            raise ScenarioError(f"user {self.name!r}: plugin {self.plugin!r} is not one of "
                                f"{', '.join(PLUGINS)}")


@dataclass
class BinlogSource:
    paths: list[str | Path]

    def load(self) -> EventStream:
        return load_binlog_files(self.paths)


@dataclass
class PcapSource:
    path: str | Path

    def load(self) -> EventStream:
        return load_pcap(self.path)


@dataclass
class RecordingSource:
    path: str | Path

    def load(self) -> EventStream:
        return load_recording(self.path)


@dataclass
class StreamSource:
    """An already built stream (e.g. ``EventBuilder(...).build()``)."""

    stream: EventStream

    def load(self) -> EventStream:
        return self.stream


Source = BinlogSource | PcapSource | RecordingSource | StreamSource

DEFAULT_UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


@dataclass
class Scenario:
    flavor: str = "mariadb"
    server_version: str | None = None  # default: the stream's FDE version, else a flavour default
    server_id: int | None = None  # default: the stream's server_id
    #: @@server_uuid (default: MySQL flavour the UUID of the files' newest GTID, else
    #: DEFAULT_UUID)
    server_uuid: str | None = None
    #: who may log in; no root, no empty password unless the scenario gives one
    users: list[User] = field(default_factory=lambda: [User("repl", "replpass")])
    sources: list[Source] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    #: (regex over the whole query, answer spec) - see answers.custom_answer
    answers: list[tuple[str, Any]] = field(default_factory=list)
    #: extra/overridden server variables (SELECT @@x, SHOW VARIABLES)
    variables: dict[str, Any] = field(default_factory=dict)
    #: information_schema.COLUMNS rows per "schema.table" (default: learnt from TABLE_MAPs)
    schema: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: a DDL script (path, or the SQL itself) describing the tables: first in precedence
    schema_ddl: str | None = None
    #: a live server whose tables to describe: mysql://user@host:port[/db,...] (password in
    #: $MOCK_MASTER_SCHEMA_PASSWORD); see mock_master.schema.sources
    schema_from: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    #: require_secure_transport=ON: a login without TLS is refused (needs tls_cert)
    tls_required: bool = False
    semi_sync: bool = True  # rpl_semi_sync_master_enabled
    #: semi-sync: ask for an ACK at every transaction end served, replayed history included
    #: (for ACK tests); default: as the server, only for transactions appended after the client
    #: connected
    ack_every_transaction: bool = False
    #: MariaDB flavour: a served binlog ending with a ROTATE is followed by the file it names,
    #: as the server's current file (dump/next_file.py); off by default for now (tests of the
    #: served stream's shape still count on its absence)
    current_file: bool = False
    require_register: bool = False  # report a dump without COM_REGISTER_SLAVE
    ack_timeout: float = 10.0  # seconds before a requested ACK counts as missing
    log: str | None = None  # path of the per-run client log (JSON)
    #: MariaDB: clear LOG_EVENT_BINLOG_IN_USE_F in the FDE sent (as the server does)
    clear_in_use_flag: bool = True
    #: strip the CRC32 of every event for a client that set @master_binlog_checksum='NONE'.
    #: Neither server does this (MySQL's Binlog_sender sends events as read; the client's
    #: setting only decides the first fake ROTATE's checksum, and MariaDB's sender likewise):
    #: a test switch for a client that cannot read a checksummed stream, off by default
    strip_checksums: bool | None = None
    #: closed clients the run log keeps (the oldest go first; default runlog.MAX_CLOSED)
    max_closed_clients: int | None = None

    def schema_ddl_text(self) -> str | None:
        """The scenario's DDL: ``schema_ddl`` read from its file, or as given when it is SQL."""
        if self.schema_ddl is None:
            return None
        p = Path(self.schema_ddl)
        if "\n" not in self.schema_ddl and ";" not in self.schema_ddl and p.is_file():
            return p.read_text(encoding="utf-8")
        if "\n" not in self.schema_ddl and not self.schema_ddl.lstrip().upper().startswith(
                ("CREATE", "USE", "ALTER")):
            raise ScenarioError(f"schema_ddl {self.schema_ddl!r}: no such file")
        return self.schema_ddl

    def __post_init__(self) -> None:
        if self.flavor not in ("mariadb", "mysql"):
            raise ScenarioError(f"flavor {self.flavor!r}: expected 'mariadb' or 'mysql'")
        if self.tls_required and not self.tls_cert:
            raise ScenarioError("tls_required needs tls_cert (and tls_key): the clients must "
                                "be able to switch to TLS")
        for a in self.actions:
            validate_action(a)
        for pat, _ in self.answers:
            try:
                re.compile(pat)
            except re.error as exc:
                raise ScenarioError(f"answer pattern {pat!r}: {exc}") from None

    @property
    def strip_for_none(self) -> bool:
        return bool(self.strip_checksums)

    def load_stream(self) -> EventStream:
        """Concatenate the sources' files into one stream (a later file may not reuse a name)."""
        if not self.sources:
            raise ScenarioError("the scenario has no [[sources]]: nothing to serve")
        files = []
        seen: set[str] = set()
        for src in self.sources:
            try:
                st = src.load()
            except SourceError as exc:
                raise ScenarioError(str(exc)) from None
            for f in st.files:
                if f.name in seen:
                    raise ScenarioError(f"binlog file name {f.name!r} appears twice in the "
                                        "sources")
                seen.add(f.name)
                files.append(f)
        return EventStream(files)


# ------------------------------------------------------------------------------- loading
def load_scenario(path: str | Path) -> Scenario:
    """A scenario from a .toml or .yaml/.yml file; relative paths are relative to the file."""
    p = Path(path)
    data = read_scenario_file(p, ScenarioError)
    return scenario_from_dict(data, base=p.parent)


def _path(base: Path | None, v: Any) -> str:
    q = Path(str(v))
    return str(q if q.is_absolute() or base is None else base / q)


_TOP = {"flavor", "server_version", "server_id", "server_uuid", "users", "sources", "actions",
        "answers", "variables", "schema", "schema_ddl", "schema_from", "tls_cert", "tls_key",
        "tls_required", "semi_sync", "ack_every_transaction", "require_register", "ack_timeout",
        "current_file", "log", "clear_in_use_flag", "strip_checksums", "max_closed_clients"}


def scenario_from_dict(data: dict[str, Any], base: Path | None = None) -> Scenario:
    unknown = set(data) - _TOP
    if unknown:
        raise ScenarioError(f"unknown scenario keys: {', '.join(sorted(unknown))} (known: "
                            f"{', '.join(sorted(_TOP))})")
    users = [User(str(u["name"]), user_password(u, base),
                  str(u.get("plugin", "mysql_native_password")))
             for u in data.get("users", [])] or None
    sources: list[Source] = []
    for s in data.get("sources", []):
        if "binlog" in s:
            paths = s["binlog"] if isinstance(s["binlog"], list) else [s["binlog"]]
            sources.append(BinlogSource([_path(base, x) for x in paths]))
        elif "pcap" in s:
            sources.append(PcapSource(_path(base, s["pcap"])))
        elif "recording" in s:
            sources.append(RecordingSource(_path(base, s["recording"])))
        else:
            raise ScenarioError(f"source {s!r}: expected one of binlog, pcap, recording")
    actions = [action_from_mapping(a) for a in data.get("actions", [])]
    answers = []
    for ans in data.get("answers", []):
        ans = dict(ans)
        q = ans.pop("query", None)
        if not q:
            raise ScenarioError(f"answer {ans!r}: needs a 'query' pattern")
        answers.append((str(q), ans))
    kw: dict[str, Any] = {k: data[k] for k in ("flavor", "server_version", "server_id",
                                               "server_uuid", "variables", "schema",
                                               "schema_from", "tls_required",
                                               "semi_sync", "ack_every_transaction",
                                               "require_register", "ack_timeout",
                                               "current_file", "clear_in_use_flag",
                                               "strip_checksums",
                                               "max_closed_clients")
                          if k in data}
    if "schema_ddl" in data:
        ddl = str(data["schema_ddl"])
        kw["schema_ddl"] = ddl if "\n" in ddl or ";" in ddl else _path(base, ddl)
    for k in ("tls_cert", "tls_key", "log"):
        if k in data:
            kw[k] = _path(base, data[k])
    try:
        sc = Scenario(sources=sources, actions=actions, answers=answers, **kw)
    except TypeError as exc:
        raise ScenarioError(str(exc)) from None
    if users is not None:
        sc.users = users
    return sc


def user_password(u: dict[str, Any], base: Path | None = None) -> str:
    """A scenario user's password: ``password``, or read from ``password_file`` (its first
    line) or the environment variable ``password_env``."""
    given = [k for k in ("password", "password_file", "password_env") if k in u]
    if len(given) > 1:
        raise ScenarioError(f"user {u.get('name')!r}: give one of password, password_file, "
                            "password_env")
    if "password_file" in u:
        return read_password_file(_path(base, u["password_file"]))
    if "password_env" in u:
        return password_from_env(str(u["password_env"]))
    return str(u.get("password", ""))


def read_password_file(path: str | Path) -> str:
    """The first line of ``path`` without its line end (the password; may be empty)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"cannot read password file {path}: {exc.strerror or exc}") from None
    return text.splitlines()[0] if text else ""


def password_from_env(var: str) -> str:
    if var not in os.environ:
        raise ScenarioError(f"environment variable {var} (the password) is not set")
    return os.environ[var]


def binlog_scenario(paths: Sequence[str | Path], **kw: Any) -> Scenario:
    """Shorthand: serve these binlog files."""
    return Scenario(sources=[BinlogSource(list(paths))], **kw)
