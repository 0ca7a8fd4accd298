"""The sources ``explain`` and ``locate`` read: binlog files (or directories of them), a capture,
or a live server (``mysql://[USER@]HOST[:PORT]``, the password as ``live`` takes it), as one
stream of :class:`Seen`.

Every source goes through the drivers the other commands use (``file``'s reader, ``pcap``'s
capture reader, ``live``'s replica), so an event's coordinates are the ones ``file --json``,
``pcap --json`` and ``live --json`` print for it (docs/coordinates.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from binlogscope.drivers.binlog_file import BinlogFileError, looks_like_binlog, read_binlog_file
from binlogscope.wire.binlog.decode import DecodedEvent

if TYPE_CHECKING:
    from binlogscope.drivers.live.options import ConnectionOptions


class SourceError(Exception):
    """The source cannot be read at all (one line for the user)."""


@dataclass(slots=True)
class Seen:
    """One event of a source, with where it was seen."""

    ev: DecodedEvent
    #: where it came from: the file's path, or "flow N frame M" / "live HOST:PORT"
    origin: str
    #: a new stream begins here (a new file, a new flow, a reconnect): context is reset
    fresh: bool = False


def binlog_paths(sources: list[str]) -> list[Path]:
    """The binlog files of ``sources`` (files, or directories: their binlog files in name
    order; index files and other files are skipped)."""
    out: list[Path] = []
    for s in sources:
        p = Path(s)
        if p.is_dir():
            out.extend(sorted(f for f in p.iterdir() if f.is_file() and looks_like_binlog(f)))
        elif p.exists():
            out.append(p)
        else:
            raise SourceError(f"{s}: no such file or directory")
    return out


def has_capture_magic(path: str | Path) -> bool:
    """The file starts with a pcap (either byte order, micro or nanoseconds) or pcapng magic."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return False
    return head in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1",
                    b"\xa1\xb2\x3c\x4d", b"\x0a\x0d\x0d\x0a")


def is_capture(path: str) -> bool:
    """A pcap/pcapng file (by its magic or its name), not a binlog."""
    return has_capture_magic(path) or path.endswith(
        (".pcap", ".pcapng", ".pcap.gz", ".pcapng.gz"))


def walk_files(paths: list[Path]) -> Iterator[Seen]:
    for p in paths:
        first = True
        try:
            for ev in read_binlog_file(p, record=False):
                yield Seen(ev, str(p), first)
                first = False
        except BinlogFileError as exc:
            raise SourceError(str(exc)) from None


def walk_capture(path: str, ports: list[int] | None = None) -> Iterator[Seen]:
    from binlogscope.drivers.capture.pcap import CaptureError, read_capture
    from binlogscope.session.events import PacketDecoded

    seen_flows: set[int] = set()
    try:
        for item in read_capture(path, ports or None):
            ev = item.event
            if not isinstance(ev, PacketDecoded) or ev.binlog_event is None:
                continue
            fresh = item.flow.id not in seen_flows
            seen_flows.add(item.flow.id)
            yield Seen(ev.binlog_event, f"flow {item.flow.id} frame {item.frame}", fresh)
    except CaptureError as exc:
        raise SourceError(f"{path}: {exc}") from None


@dataclass(slots=True)
class ServerUrl:
    """A server named by ``mysql://[USER@]HOST[:PORT]``; the password is not in the URL (it
    would show in ``ps`` and the shell's history): as ``live`` takes it, from the option file
    (``--defaults-file`` or ``~/.my.cnf``), ``MYSQL_PWD`` or a prompt (:meth:`options`)."""

    host: str
    port: int
    user: str | None  # None: the option file's, else root
    defaults_file: str | None = None
    _conn: ConnectionOptions | None = None

    def options(self) -> ConnectionOptions:
        """The connection options, resolved once as ``live`` resolves them (the password from
        the option file, ``MYSQL_PWD`` or a prompt on a terminal)."""
        if self._conn is None:
            from binlogscope.drivers.live.options import OptionFileError, resolve_options

            try:
                self._conn = resolve_options(defaults_file=self.defaults_file, cli={
                    "host": self.host, "port": self.port, "user": self.user})
            except OptionFileError as exc:
                raise SourceError(str(exc)) from None
        return self._conn

    def describe(self) -> str:
        who = self.user if self._conn is None else self._conn.user
        return f"{who}@{self.host}:{self.port}" if who else f"{self.host}:{self.port}"


URL_PASSWORD_REFUSED = (
    "a password in the URL is refused - it would show in ps and the shell's history; give it "
    "as live takes it: an option file ([client] password=, ~/.my.cnf or --defaults-file), "
    "MYSQL_PWD, or the prompt")


def parse_url(url: str, defaults_file: str | None = None) -> ServerUrl:
    """``mysql://[USER@]HOST[:PORT]`` (also ``mariadb://``); a password in it is refused (the
    message never repeats it)."""
    u = urlsplit(url)
    if u.scheme not in ("mysql", "mariadb") or not u.hostname:
        raise SourceError(f"expected mysql://[USER@]HOST[:PORT], got {u.scheme}://...")
    if u.password is not None:
        raise SourceError(URL_PASSWORD_REFUSED)
    try:
        port = u.port or 3306
    except ValueError:
        raise SourceError("the URL's port is not a number") from None
    return ServerUrl(u.hostname, port, unquote(u.username) if u.username else None,
                     defaults_file)


def walk_live(url: ServerUrl, start: str, *, stop_after: int | None = None) -> Iterator[Seen]:
    """The server's binlog from ``start`` (FILE:POS) to its current end, read as a replica
    (``live --non-blocking``): the same bytes a replica is sent."""
    from binlogscope.drivers.items import SourceItem
    from binlogscope.drivers.live.items import LiveSettings
    from binlogscope.drivers.live.replica import run_live
    from binlogscope.session.events import PacketDecoded

    items: list[SourceItem] = []
    conn = url.options()
    settings = LiveSettings(conn=conn, start=start, non_blocking=True, reconnect=False,
                            stream_tree=False)
    errors: list[str] = []

    def consume(item: SourceItem) -> None:
        if item.kind == "error":
            errors.append(item.text)
        elif item.kind == "packet":
            items.append(item)

    run_live(settings, consume, count=stop_after)
    first = True
    for item in items:
        ev = item.event
        if isinstance(ev, PacketDecoded) and ev.binlog_event is not None:
            yield Seen(ev.binlog_event, f"live {url.host}:{url.port}", first)
            first = False
    if errors and first:
        raise SourceError(f"{url.describe()}: {errors[0]}")


def shown(sources: list[str]) -> str:
    """The sources as messages show them: a server URL without its password."""
    out = []
    for s in sources:
        if s.startswith(("mysql://", "mariadb://")):
            try:
                u = parse_url(s)
                s = f"{s.split('://', 1)[0]}://{u.describe()}"
            except SourceError:  # (a URL with a password is refused: never shown)
                s = s.split("://", 1)[0] + "://..."
        out.append(s)
    return " ".join(out)


def walk(sources: list[str], *, live_start: str | None = None,
         defaults_file: str | None = None) -> Iterator[Seen]:
    """Any source list: a mysql:// URL (its password from ``defaults_file``, ``~/.my.cnf``,
    ``MYSQL_PWD`` or a prompt), one capture, or binlog files/directories."""
    if len(sources) == 1 and sources[0].startswith(("mysql://", "mariadb://")):
        if live_start is None:
            raise SourceError("a live server needs a binlog file to start from")
        yield from walk_live(parse_url(sources[0], defaults_file), live_start)
        return
    if len(sources) == 1 and Path(sources[0]).is_file() and is_capture(sources[0]):
        yield from walk_capture(sources[0])
        return
    yield from walk_files(binlog_paths(sources))


def event_of(seen: Seen) -> DecodedEvent:
    return seen.ev


__all__ = ["Seen", "ServerUrl", "SourceError", "binlog_paths", "is_capture", "parse_url",
           "shown", "walk", "walk_capture", "walk_files", "walk_live"]
