"""The options of ``spark.readStream.format("binlog")``: the ``live`` command's connection and
replication options, as Spark options (strings), into the live replica's
:class:`~binlogscope.drivers.live.items.LiveSettings`.

The password is never an option (an option is in the query plan, the Spark UI and the event
log): it comes, as for ``live``, from an option file (``defaultsFile``, else ``~/.my.cnf``) or
``MYSQL_PWD``, and it is read where a connection is made (the driver's position queries, each
read task) - :class:`StreamOptions` holds no secret, so neither does anything Spark pickles,
plans or checkpoints.

=========================  ==================================================================
option                     as ``live``'s
=========================  ==================================================================
``url``                    ``mysql://USER@HOST:PORT`` (or ``mariadb://``; no password)
``host`` ``port`` ``user``  ``--host`` ``--port`` ``-u`` (the url wins)
``socket``                 ``--socket``
``defaultsFile``           ``--defaults-file``
``sslMode`` ``sslCa``      ``--ssl-mode`` ``--ssl-ca`` (and ``sslCert``, ``sslKey``)
``getServerPublicKey``     ``--get-server-public-key`` (and ``serverPublicKeyPath``,
                           ``insecureAuth``, ``maxPacketSize``, ``compressionAlgorithms``,
                           ``zstdCompressionLevel``)
``serverId``               ``--server-id`` (task *k* of a micro-batch uses ``serverId + k``)
``heartbeat``              ``--heartbeat``
``semiSync``               ``--semi-sync`` (default false)
``netReadTimeout``         ``--net-read-timeout``
``connectTimeout``         ``--connect-timeout``
``reconnect``              ``--no-reconnect`` when ``false``; ``maxReconnects`` (default 8)
``include`` ``exclude``    ``--table`` ``--exclude``: a regex, or a JSON list of them
``start``                  ``earliest``, ``latest`` (default), ``FILE:POS`` or ``gtid:SET``
``table``                  ``rows`` (default) or ``events``
``maxBytesPerTrigger``     a micro-batch's most binlog bytes (default 64m; 0: no limit)
``maxPartitionBytes``      a micro-batch's binlog range per task (default 0: one task a file)
``noRaw``                  ``export --no-raw``
=========================  ==================================================================
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from binlogscope.drivers.live.items import LiveSettings
from binlogscope.drivers.live.options import (
    COMPRESSION_ALGORITHMS,
    OptionFileError,
    parse_size,
    resolve_options,
)
from binlogscope.pipeline.filter import TableFilter

#: the tables a stream yields (``packets`` are one connection's, not the binlog's: a replayed
#: micro-batch would not give the same ones; ``errors``: a failed read fails the batch)
STREAM_TABLES = ("rows", "events")
SSL_MODES = ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")
_SECRET_OPTIONS = ("password", "pwd", "passwd", "mysql_pwd")
#: see :attr:`StreamOptions.max_bytes_per_trigger` (docs/spark.md, "Throughput and latency")
DEFAULT_MAX_BYTES_PER_TRIGGER = 64 << 20
_START = re.compile(r"^(earliest|latest|gtid:.*|.+:\d+)$", re.IGNORECASE | re.DOTALL)


class StreamOptionError(ValueError):
    """A bad option of the streaming source (one line; never quotes a secret)."""


@dataclass(frozen=True, slots=True)
class StreamOptions:
    """The streaming source's options, checked; no password (see the module doc)."""

    host: str | None = None
    port: int | None = None
    user: str | None = None
    socket: str | None = None
    defaults_file: str | None = None
    ssl_mode: str | None = None
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    get_server_public_key: bool | None = None
    server_public_key_path: str | None = None
    insecure_auth: bool | None = None
    max_packet_size: int | None = None
    compression_algorithms: str | None = None
    zstd_compression_level: int | None = None
    server_id: int | None = None
    heartbeat: float | None = None
    semi_sync: bool = False
    net_read_timeout: int = 60
    connect_timeout: float = 10.0
    reconnect: bool = True
    max_reconnects: int = 8
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    start: str = "latest"
    table: str = "rows"
    no_raw: bool = False
    #: ``maxPartitionBytes``: a micro-batch's binlog file range bigger than this is read by
    #: several tasks, cut at transaction starts (0: one task a file)
    max_partition_bytes: int = 0
    #: ``maxBytesPerTrigger``: a micro-batch holds about this many bytes of binlog at most
    #: (it ends at the first transaction start past them; 0: all there is)
    max_bytes_per_trigger: int = DEFAULT_MAX_BYTES_PER_TRIGGER

    def describe(self) -> str:
        """``user@host:port`` for messages and the ``source`` column (no password)."""
        where = self.socket or f"{self.host or '127.0.0.1'}:{self.port or 3306}"
        return f"{self.user or 'root'}@{where}"

    def live_settings(self, *, server_id: int | None = None, gtid: str | None = None,
                      non_blocking: bool = False) -> LiveSettings:
        """The live replica's settings; the password is read now (option file, MYSQL_PWD),
        never kept here. ``server_id``: this connection's (None: ``serverId``, else random)."""
        try:
            conn = resolve_options(defaults_file=self.defaults_file, prompt=False, cli={
                "host": self.host, "port": self.port, "socket": self.socket, "user": self.user,
                "ssl_mode": self.ssl_mode, "ssl_ca": self.ssl_ca, "ssl_cert": self.ssl_cert,
                "ssl_key": self.ssl_key, "get_server_public_key": self.get_server_public_key,
                "server_public_key_path": self.server_public_key_path,
                "insecure_auth": self.insecure_auth, "max_packet_size": self.max_packet_size,
                "compression_algorithms": self.compression_algorithms,
                "zstd_compression_level": self.zstd_compression_level})
        except OptionFileError as exc:
            raise StreamOptionError(str(exc)) from None
        return LiveSettings(
            conn=conn, server_id=server_id if server_id is not None else self.server_id,
            gtid=gtid, semi_sync=self.semi_sync, heartbeat=self.heartbeat,
            non_blocking=non_blocking,
            table_filter=TableFilter(list(self.include), list(self.exclude)),
            connect_timeout=self.connect_timeout, net_read_timeout=self.net_read_timeout,
            reconnect=self.reconnect, max_reconnects=self.max_reconnects, stream_tree=False)


def _flag(name: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes", "on"):
        return True
    if v in ("false", "0", "no", "off"):
        return False
    raise StreamOptionError(f"option {name}: {value!r} is not true or false")


def _number(name: str, value: str, kind: type = int) -> Any:
    try:
        n = kind(value)
    except ValueError:
        raise StreamOptionError(f"option {name}: {value!r} is not a number") from None
    if n < 0:
        raise StreamOptionError(f"option {name}: {value!r} is negative")
    return n


def _patterns(name: str, value: str) -> tuple[str, ...]:
    text = value.strip()
    items: list[str] = [text]
    if text.startswith("["):
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError:
            raise StreamOptionError(f"option {name}: not a JSON list of regexes") from None
        items = [str(x) for x in loaded]
    for p in items:
        try:
            re.compile(p)
        except re.error as exc:
            raise StreamOptionError(f"option {name}: {p!r} is not a regex ({exc})") from None
    return tuple(items)


def _url(value: str) -> dict[str, Any]:
    try:
        u = urlsplit(value)
        port = u.port
    except ValueError:
        raise StreamOptionError("option url: expected mysql://USER@HOST:PORT") from None
    if u.scheme.lower() not in ("mysql", "mariadb"):
        raise StreamOptionError("option url: expected mysql://USER@HOST:PORT (or mariadb://)")
    if u.password is not None:  # (never repeated in the message)
        raise StreamOptionError(
            "option url: a password in the url is refused - it would show in the query plan, "
            "the Spark UI and the event log; put it in an option file (option defaultsFile) or "
            "MYSQL_PWD")
    out: dict[str, Any] = {}
    if u.username:
        out["user"] = unquote(u.username)
    if u.hostname:
        out["host"] = u.hostname
    if port is not None:
        out["port"] = port
    return out


def _byte_count(name: str, text: str) -> int:
    """A byte count: digits with an optional k, m or g (binary multiples), 0 or more."""
    t = text.strip().lower().removesuffix("b")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(t[-1:], 1)
    digits = t[:-1] if scale > 1 else t
    if not digits.isdigit():
        raise StreamOptionError(f"option {name}: {text!r}: expected a byte count (8m, 65536)")
    return int(digits) * scale


def parse_stream_options(options: Any) -> StreamOptions:
    """The checked :class:`StreamOptions` of a reader's options (case-insensitive keys)."""
    opts = {str(k).lower(): str(v) for k, v in dict(options).items() if v is not None}
    for key in opts:
        if key in _SECRET_OPTIONS or "password" in key:
            raise StreamOptionError(
                f"option {key}: the password is not an option (it would show in the query "
                "plan, the Spark UI and the event log): put it in an option file (option "
                "defaultsFile) or MYSQL_PWD")
    v: dict[str, Any] = {}
    for name, field in (("host", "host"), ("user", "user"), ("socket", "socket"),
                        ("defaultsfile", "defaults_file"), ("sslca", "ssl_ca"),
                        ("sslcert", "ssl_cert"), ("sslkey", "ssl_key"),
                        ("serverpublickeypath", "server_public_key_path")):
        if opts.get(name):
            v[field] = opts[name]
    if "port" in opts:
        v["port"] = _number("port", opts["port"])
    if "url" in opts:
        v.update(_url(opts["url"]))
    if "sslmode" in opts:
        mode = opts["sslmode"].upper()
        if mode not in SSL_MODES:
            raise StreamOptionError(f"option sslMode: {opts['sslmode']!r}: expected one of "
                                    f"{', '.join(SSL_MODES)}")
        v["ssl_mode"] = mode
    for name, field in (("getserverpublickey", "get_server_public_key"),
                        ("insecureauth", "insecure_auth"), ("semisync", "semi_sync"),
                        ("reconnect", "reconnect"), ("noraw", "no_raw")):
        if name in opts:
            v[field] = _flag(name, opts[name])
    if "maxpacketsize" in opts:
        try:
            v["max_packet_size"] = parse_size(opts["maxpacketsize"])
        except ValueError as exc:
            raise StreamOptionError(f"option maxPacketSize: {exc}") from None
    if "maxpartitionbytes" in opts:
        v["max_partition_bytes"] = _byte_count("maxPartitionBytes", opts["maxpartitionbytes"])
    if "maxbytespertrigger" in opts:
        v["max_bytes_per_trigger"] = _byte_count("maxBytesPerTrigger", opts["maxbytespertrigger"])
    if "compressionalgorithms" in opts:
        names = [n.strip().lower() for n in opts["compressionalgorithms"].split(",")]
        if not names or any(n not in COMPRESSION_ALGORITHMS for n in names):
            raise StreamOptionError("option compressionAlgorithms: a comma-separated list of "
                                    f"{', '.join(COMPRESSION_ALGORITHMS)}")
        v["compression_algorithms"] = ",".join(names)
    for name, field, kind in (("zstdcompressionlevel", "zstd_compression_level", int),
                              ("serverid", "server_id", int), ("heartbeat", "heartbeat", float),
                              ("netreadtimeout", "net_read_timeout", int),
                              ("connecttimeout", "connect_timeout", float),
                              ("maxreconnects", "max_reconnects", int)):
        if name in opts:
            v[field] = _number(name, opts[name], kind)
    for name in ("include", "exclude"):
        if opts.get(name):
            v[name] = _patterns(name, opts[name])
    if "start" in opts:
        start = opts["start"].strip()
        if not _START.match(start):
            raise StreamOptionError(f"option start: {start!r}: expected earliest, latest, "
                                    "FILE:POS or gtid:SET")
        v["start"] = start
    table = opts.get("table", "rows").lower()
    if table not in STREAM_TABLES:
        raise StreamOptionError(f"option table: {table!r}: a stream reads "
                                f"{' or '.join(STREAM_TABLES)}")
    v["table"] = table
    return StreamOptions(**v)


__all__ = ["STREAM_TABLES", "StreamOptionError", "StreamOptions", "parse_stream_options"]
