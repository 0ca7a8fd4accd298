"""``binlogscope live``: the command-line side of the live replica (plain and JSON output).

Kept apart from cli.py so each subcommand's options and printing live in one small module.
The driver is imported when the command runs (``binlogscope file`` does not pay for it).
Output: :func:`binlogscope.render.shapes.live_item_json` through the one serializer, or
:func:`binlogscope.render.text.live_item_text`.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import signal
import sys
from typing import TYPE_CHECKING, Any, TextIO

from binlogscope.cli.signals import flag_on_signals, restore_signals
from binlogscope.cli.terminal import LIVE_OUTPUTS, wants_tui
from binlogscope.drivers.hangup import terminal_hung_up
from binlogscope.render.escape import unescaped

if TYPE_CHECKING:
    from binlogscope.drivers.items import SourceItem
    from binlogscope.drivers.live.replica import LiveSettings

PROG = "binlogscope"
#: ``--count`` of ``live`` and ``export --live`` (drivers.live_items.counted_event)
COUNT_HELP = ("stop after N binlog events are shown (the dump's artificial Rotate and "
              "Format_description count; heartbeats and filtered-out events do not)")


def add_live_connection_options(p: Any, *, port: bool = True) -> None:
    """The connection and replication options of a replica (``live``, ``export --live``)."""
    c = p.add_argument_group("connection")
    c.add_argument("--host", help="server host (default 127.0.0.1, or the option file's)")
    if port:
        c.add_argument("--port", type=int, help="server port (default 3306)")
    c.add_argument("--socket", help="Unix socket path instead of TCP")
    c.add_argument("-u", "--user", help="user (default root); needs REPLICATION SLAVE")
    c.add_argument("--defaults-file", help="MySQL option file to read instead of ~/.my.cnf "
                   "([client] group); the password comes from there, MYSQL_PWD or a prompt")
    c.add_argument("--ssl-mode", choices=["DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA",
                                          "VERIFY_IDENTITY"], type=str.upper,
                   help="TLS, as the mysql client: PREFERRED (default: TLS when the server "
                   "offers it), REQUIRED, VERIFY_CA (the certificate against --ssl-ca), "
                   "VERIFY_IDENTITY (and the host name), DISABLED")
    c.add_argument("--ssl-ca", help="CA file to verify the server with (alone, it means "
                   "--ssl-mode VERIFY_CA, as with the mysql client)")
    c.add_argument("--ssl-cert", metavar="PEM", help="client certificate, for an account "
                   "that requires one (REQUIRE X509)")
    c.add_argument("--ssl-key", metavar="PEM", help="the private key of --ssl-cert")
    c.add_argument("--tls-keylog", metavar="FILE", help="append the TLS session keys to FILE "
                   "(NSS key log, the SSLKEYLOGFILE format) so that a capture of the session "
                   "can be decrypted (pcap --tls-keylog, Wireshark); off by default: whoever "
                   "has the file and a capture reads everything the session carried")
    from binlogscope.drivers.live.options import add_auth_arguments

    add_auth_arguments(c)
    r = p.add_argument_group("replication")
    r.add_argument("--server-id", type=int, help="this replica's server_id (default: random, "
                   "never the server's own)")
    r.add_argument("--start", metavar="FILE:POS", help="dump from here (:4: the server's first "
                   "binlog file; default: the current position, or the --state file's)")
    r.add_argument("--gtid", metavar="SET", help="GTID dump from this executed set "
                   "(MariaDB 'domain-server-seq,...', MySQL 'uuid:1-5,...')")
    r.add_argument("--non-blocking", action="store_true",
                   help="stop at the end of the logs (with --semi-sync from MariaDB: at the "
                   "head SHOW MASTER STATUS reported, by a blocking dump; README, Semi-sync)")
    r.add_argument("--heartbeat", type=float, metavar="SECONDS",
                   help="ask the source for a heartbeat after this much silence (default: "
                   "half of --net-read-timeout, 30 s, as a MySQL/MariaDB replica; 0: none)")
    r.add_argument("--lag-every", type=float, metavar="SECONDS",
                   help="every SECONDS ask the server its binlog head (SHOW MASTER STATUS, on a "
                   "control connection of its own) and show the lag of what was consumed "
                   "behind it: a health item (files and bytes behind); heartbeats count as "
                   "heads too (default: off)")
    r.add_argument("--semi-sync", action="store_true",
                   help="negotiate semi-sync and ACK the events the source asks for")
    r.add_argument("--state", metavar="FILE", help="persist the acked position here and resume "
                   "from it (nothing lost; with --out nothing repeated, on stdout at most the "
                   "transaction in flight at a crash)")
    c.add_argument("--connect-timeout", type=float, metavar="SECONDS",
                   help="limit for the TCP connect and the login handshake (default 10, the "
                   "server's own connect_timeout; 0: no limit, as the mysql client's default)")
    r.add_argument("--net-read-timeout", type=int, default=60, metavar="SECONDS",
                   help="seconds without a byte from the source before the connection counts "
                   "as dead (then reconnected); also the session's net_read/write_timeout "
                   "(default 60, as slave_net_timeout; heartbeats come every half of it)")
    r.add_argument("--no-reconnect", action="store_true",
                   help="end with an error when the connection drops, instead of reconnecting "
                   "(up to 8 times, with backoff) from the last acknowledged position")


def add_live_parser(sub: Any) -> None:
    p = sub.add_parser(
        "live", help="connect to a server as a replica and show every packet",
        description="Connect as a replica (handshake, auth, setup, COM_REGISTER_SLAVE, "
        "COM_BINLOG_DUMP) and show every packet of both directions, decoded byte by byte.")
    add_live_connection_options(p)
    f = p.add_argument_group("output")
    out = f.add_mutually_exclusive_group()
    out.add_argument("--plain", action="store_true", help="the annotated stream as text")
    out.add_argument("--json", action="store_true", help="one JSON object per packet/event")
    f.add_argument("--brief", action="store_true", help="one line per packet, no field dump")
    f.add_argument("--out", metavar="FILE", help="write the output to FILE; with --state it "
                   "advances with the state at transaction boundaries (fsynced), and a restart "
                   "cuts it back to what the state recorded: every event exactly once")
    f.add_argument("--record", metavar="FILE.pcapng", help="record every packet of the session "
                   "(both directions, timestamps) as pcapng; secrets redacted")
    f.add_argument("--record-raw", action="store_true",
                   help="keep auth scrambles in the recording (they never are by default)")
    f.add_argument("--count", type=int, metavar="N", help=COUNT_HELP)
    f.add_argument("--table", action="append", default=[], metavar="REGEX",
                   help=r"only row events of matching 'schema\.table' (repeatable)")
    f.add_argument("--exclude", action="append", default=[], metavar="REGEX",
                   help="drop row events of matching tables (repeatable)")


_MARIADB_GTID = r"\d+-\d+-\d+"
#: uuid, then intervals and tags (each tag followed by its intervals), as MySQL 8.3+ prints
#: @@gtid_executed: ``uuid:1-13:mytag:1-2``
_MYSQL_GTID = (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
               r"(?::[A-Za-z_][A-Za-z0-9_]{0,31}(?=:\d))?(?::\d+(?:-\d+)?)+"
               r"(?::[A-Za-z_][A-Za-z0-9_]{0,31}(?::\d+(?:-\d+)?)+)*")


def gtid_set_syntax_ok(text: str) -> bool:
    """True for an empty set, a MariaDB set (``0-1-100,1-2-7``) or a MySQL set
    (``uuid:1-5:7,uuid2:3``, 8.4 tags ``uuid:tag:1-5``): checked here, not at the server, so a
    typo is one line before anything connects."""
    import re

    items = [t.strip() for t in text.replace("\n", "").split(",")]
    if items == [""]:
        return True
    return all(re.fullmatch(_MARIADB_GTID, t) for t in items) or all(
        re.fullmatch(_MYSQL_GTID, t) for t in items)


def live_settings(args: argparse.Namespace, err: TextIO) -> LiveSettings | None:
    """LiveSettings from the parsed options (None after printing a one-line error)."""
    from binlogscope.drivers.live.options import OptionFileError, auth_cli_values, resolve_options
    from binlogscope.drivers.live.replica import LiveSettings
    from binlogscope.pipeline.filter import TableFilter
    from binlogscope.pipeline.state import ReplicaState, StateFileError

    gtid = getattr(args, "gtid", None)
    if gtid is not None and not gtid_set_syntax_ok(gtid):
        print(f"{PROG}: error: --gtid {gtid!r} is not a GTID set: MariaDB "
              "'domain-server-seq[,...]' (e.g. 0-1-100) or MySQL 'uuid:N[-M][:...][,...]'",
              file=err)
        return None
    port = args.port
    if isinstance(port, list):  # export's --port (also the pcap ports)
        port = port[0] if port else None
    try:
        conn = resolve_options(defaults_file=args.defaults_file, cli={
            "host": args.host, "port": port, "socket": args.socket, "user": args.user,
            "ssl_mode": args.ssl_mode, "ssl_ca": args.ssl_ca, "ssl_cert": args.ssl_cert,
            "ssl_key": args.ssl_key, "tls_keylog": getattr(args, "tls_keylog", None),
            **auth_cli_values(args)})
    except OptionFileError as exc:
        print(f"{PROG}: error: {exc}", file=err)
        return None
    problem = check_live_args(args, conn)
    if problem:
        print(f"{PROG}: error: {problem}", file=err)
        return None
    if conn.tls_keylog:
        print(f"{PROG}: warning: --tls-keylog {conn.tls_keylog}: the TLS session keys are "
              "written there - with that file anyone holding a capture of this session reads "
              "all it carried (rows, queries, auth exchange); keep it private, delete it when "
              "done", file=err, flush=True)
        try:
            with open(conn.tls_keylog, "a", encoding="ascii"):
                pass
        except OSError as exc:
            print(f"{PROG}: error: --tls-keylog {conn.tls_keylog}: {exc.strerror or exc}",
                  file=err)
            return None
    if conn.ssl_mode in ("PREFERRED", "REQUIRED") and conn.ssl_ca:
        # a CA given with a mode that does not verify is not used - a wrong CA would connect
        # without a word: say so, as MySQL's client warns for REQUIRED with a CA
        print(f"{PROG}: warning: --ssl-mode {conn.ssl_mode} does not verify the server's "
              "certificate, so --ssl-ca is not used: use --ssl-mode VERIFY_CA or "
              "VERIFY_IDENTITY to verify it", file=err, flush=True)
    gtid = args.gtid
    if args.state:  # a state file that cannot be used stops the run before it connects
        try:
            st = ReplicaState.load(args.state)
        except StateFileError as exc:
            print(f"{PROG}: error: {exc}", file=err)
            return None
        if st.gtid_set and not st.log_file and not args.start and not gtid:
            # a state holding only a GTID set resumes from it (a GTID dump); it was ignored
            # (the dump began at the server's current position, and events were skipped)
            gtid = st.gtid_set
    # live --out FILE (export's --out is its dataset directory, not a stream's output)
    out_file = getattr(args, "out", None) if getattr(args, "command", "live") == "live" else None
    return LiveSettings(
        conn=conn, server_id=args.server_id, start=args.start, gtid=gtid,
        semi_sync=args.semi_sync, heartbeat=args.heartbeat, non_blocking=args.non_blocking,
        state_path=args.state,
        table_filter=TableFilter(getattr(args, "table", []) or [],
                                 getattr(args, "exclude", []) or []),
        net_read_timeout=args.net_read_timeout, reconnect=not args.no_reconnect,
        connect_timeout=_CONNECT_TIMEOUT if getattr(args, "connect_timeout", None) is None
        else args.connect_timeout,
        record_path=getattr(args, "record", None),
        record_raw=getattr(args, "record_raw", False),
        stream_tree=not (getattr(args, "json", False) or getattr(args, "brief", False)),
        out_path=out_file if args.state else None,
        commit_each_txn=bool(args.state) and not out_file,
        lag_every=getattr(args, "lag_every", None) or 0.0)


#: seconds for the TCP connect and the handshake when --connect-timeout is not given
_CONNECT_TIMEOUT = 10.0


def check_live_args(args: argparse.Namespace, conn: Any) -> str | None:
    """What is wrong with the options of a replica before it connects (one line), or None.

    ``conn``: the resolved :class:`~binlogscope.drivers.live.options.ConnectionOptions` (the
    command line over the option file)."""
    import math
    import os

    from binlogscope.drivers.live.items import LiveError, parse_start

    def number(name: str, value: float | None, low: float, high: float | None = None,
               what: str = "") -> str | None:
        if value is None:
            return None
        if math.isnan(value) or value < low or (high is not None and value > high) \
                or math.isinf(value):
            rng = f">= {_num(low)}" if high is None else f"{_num(low)}..{_num(high)}"
            return f"{name} {_num(value)}: must be {rng}{what}"
        return None

    if not conn.socket:
        bad = number("port", conn.port, 1, 65535)
        if bad:
            return bad
    start = getattr(args, "start", None)
    if start is not None:
        try:
            _, pos = parse_start(start)
        except LiveError as exc:
            return str(exc)
        if not 4 <= pos <= 0xFFFFFFFF:
            return (f"--start {start!r}: position {pos} is out of range (4..4294967295; 4 is "
                    "the first event of a file)")
    for problem in (
            number("--heartbeat", getattr(args, "heartbeat", None), 0, 4294967,
                   " seconds (0: none; the most CHANGE MASTER's MASTER_HEARTBEAT_PERIOD takes)"),
            number("--connect-timeout", getattr(args, "connect_timeout", None), 0),
            number("--lag-every", getattr(args, "lag_every", None), 0.05),
            number("--net-read-timeout", getattr(args, "net_read_timeout", None), 1),
            number("--count", getattr(args, "count", None), 1),
            number("--server-id", getattr(args, "server_id", None), 1, 0xFFFFFFFF)):
        if problem:
            return problem
    if conn.ssl_mode == "DISABLED":  # the TLS files are not used
        return None
    for opt, path in (("--ssl-ca", conn.ssl_ca), ("--ssl-cert", conn.ssl_cert),
                      ("--ssl-key", conn.ssl_key)):
        full = os.path.expanduser(path) if path else ""
        if full and not os.path.isfile(full):
            how = "is not a file" if os.path.exists(full) else "no such file"
            return f"{opt} {path}: {how}"
    return None


def _num(v: float) -> str:
    return str(int(v)) if math.isfinite(v) and v == int(v) else f"{v:g}"


def cmd_live(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from binlogscope.drivers.live.items import DecodeProblems
    from binlogscope.drivers.live.replica import LiveError, run_live
    from binlogscope.render.json_out import LineWriter, dumps_line
    from binlogscope.render.shapes import live_item_json
    from binlogscope.render.text import live_item_text

    settings = live_settings(args, err)
    if settings is None:
        return 2

    if wants_tui(args, out, LIVE_OUTPUTS):
        from binlogscope.inspector.sources.live import LiveSource
        from binlogscope.tui import run_tui

        source = LiveSource(settings, count=args.count)
        try:
            return run_tui(source)
        except LiveError as exc:
            print(f"{PROG}: error: {exc}", file=err)
            return 1
        finally:
            # the fetcher's last work before the process exits: a semi-sync dump's KILL
            source.stop()
            source.replica.join(5)
            for warning in source.replica.warnings:
                print(f"{PROG}: {warning}", file=err)

    from binlogscope.drivers.live.output import CommittedOutput, OutputFileError
    from binlogscope.render.line_layout import brief_lines, packet_lines, text_plain
    from binlogscope.session.events import LinesWritten

    if (args.json or args.brief) and args.count is None and not settings.state_path \
            and not settings.table_filter.active and not settings.lag_every:
        # every item a --json (--brief) line: the stream's event lines by the native kernel
        settings.json_lines = (functools.partial(packet_lines, None) if args.json
                               else brief_lines)

    committed: CommittedOutput | None = None
    stream: TextIO = out
    if args.out:
        try:
            if args.state:
                committed = CommittedOutput(args.out, args.state)
                stream = committed.text
                if committed.cut:
                    print(f"{PROG}: {args.out}: cut {committed.cut} bytes written after the "
                          "last commit; they are delivered again", file=err)
            else:
                stream = open(args.out, "x", encoding="utf-8",  # noqa: SIM115
                              errors="backslashreplace", newline="\n")
        except FileExistsError:
            print(f"{PROG}: error: --out {args.out} exists; name a new file (with --state it "
                  "is continued where the state left it)", file=err)
            return 2
        except (OSError, OutputFileError) as exc:
            print(f"{PROG}: error: {exc}", file=err)
            return 2
    to_file = stream is not out

    # every line written out within 0.1 s (a stream, or a file someone reads as it grows),
    # in chunks while events stream; with --state the commits also make the file durable
    lines = LineWriter(stream, interactive=not to_file and out.isatty(), flush_every=0.1)
    add = lines.add

    # the text on a terminal: a note shown once, on stderr (the same terminal)
    terminal_text = not args.json and not to_file and out.isatty()

    problems = DecodeProblems()
    see = problems.see
    as_json = bool(args.json)
    utf8 = (getattr(stream, "encoding", None) or "utf-8").lower().replace("-", "") == "utf8"
    interactive = lines.interactive

    def consume(item: SourceItem) -> None:  # (once per event: names bound outside)
        see(item)
        if item.kind == "note":  # reconnects, the end of the dump: for people, on stderr
            print(f"{PROG}: {item.text}", file=err, flush=True)
            if terminal_text:
                return
        if as_json:
            if type(item.event) is LinesWritten:  # (the kernel's lines, in their place)
                add(item.event.data)
                if interactive:
                    lines.flush()
                return
            obj = live_item_json(item)
            if obj is not None:
                add(dumps_line(obj))
                if interactive:
                    lines.flush()
        else:
            if type(item.event) is LinesWritten:  # (--brief: the kernel's lines, UTF-8)
                data = item.event.data
                if utf8 and text_plain(data):
                    add(data)
                else:  # (escaped and encoded as every text line)
                    lines.add_text(data.decode("utf-8", "surrogatepass"))
                if interactive:
                    lines.flush()
                return
            text = live_item_text(item, args.brief)
            if text:  # (through the line writer too: one buffer, flushed as the JSON is)
                lines.add_text("\n".join(text) + "\n")
            if lines.interactive:
                lines.flush()

    def commit() -> int | None:
        lines.flush()
        if committed is not None:
            return committed.commit()
        stream.flush()
        return None

    # SIGPIPE stays ignored (Python's default): the replica writes to the server's socket, whose
    # reset must be an error on that socket, not the silent end of the process (nor of a test or
    # program calling main() in-process); a reader of the output that goes away (``| head``) is a
    # BrokenPipeError, below, as in ``file`` and ``pcap``
    fired: list[int] = []
    previous = flag_on_signals(fired)
    try:
        try:
            rep = run_live(settings, consume, count=args.count,
                           commit=commit if settings.state_path else None,
                           should_stop=lambda: bool(fired))
        finally:
            try:
                lines.close()
            except OSError as exc:  # (a hung-up terminal: the error under way says so)
                if not terminal_hung_up(exc):
                    raise
            if to_file:
                stream.close()
    except LiveError as exc:
        print(f"{PROG}: error: {exc}", file=err)
        return 1
    except BrokenPipeError:  # the output's reader went away: done, as `file | head` is
        _quiet_stdout(out)
        return 0
    except OSError as exc:  # the terminal hung up before the hang-up watcher saw it: as SIGHUP
        if not terminal_hung_up(exc):
            raise
        return 128 + signal.SIGHUP
    except KeyboardInterrupt as exc:  # a second signal: the last commit stands
        return 128 + getattr(exc, "signum", signal.SIGINT)
    finally:
        restore_signals(previous)
    for warning in rep.warnings:  # (a semi-sync dump thread not KILLed: exit status unchanged)
        print(f"{PROG}: {warning}", file=err)
    summary = problems.summary()
    if summary:  # decode errors: shown as items, and the run is not clean
        print(f"{PROG}: error: {summary}", file=err)
    if rep.error:
        print(f"{PROG}: error: {rep.error}", file=err)
        return 1
    if fired:  # Ctrl-C, SIGTERM, SIGHUP: ended cleanly, state and recording closed
        return 128 + fired[0]
    return 1 if summary else 0


def live_resume_source(state: dict[str, Any], args: argparse.Namespace, err: TextIO) -> Any:
    """``export --resume --out DIR`` of a live export: the source made again from the
    connection and replication options the export recorded (options given now win; the
    password comes, as always, from the option file, MYSQL_PWD or a prompt). An exit code
    after a one-line error."""
    from binlogscope.export.records import SourceError
    from binlogscope.export.sources import LiveRecordSource
    from binlogscope.pipeline.filter import TableFilter

    o = dict((state.get("options") or {}).get("source") or {})
    if not o:
        print(f"{PROG}: export: {args.out}: this live export did not record its connection "
              "options; resume it with --live and the options it was started with", file=err)
        return 2
    ns = argparse.Namespace(**vars(args))
    for key in ("host", "socket", "user", "ssl_mode", "ssl_ca", "ssl_cert", "ssl_key",
                "server_id", "start", "gtid", "heartbeat", "count", "until_position",
                "connect_timeout"):
        if getattr(ns, key, None) is None:
            setattr(ns, key, o.get(key))
    if not getattr(ns, "port", None):
        ns.port = o.get("port")
    for flag in ("non_blocking", "semi_sync"):
        if not getattr(ns, flag, False):
            setattr(ns, flag, bool(o.get(flag)))
    if o.get("reconnect") is False:
        ns.no_reconnect = True
    settings = live_settings(ns, err)
    if settings is None:
        return 2
    settings.table_filter = TableFilter(o.get("table") or [], o.get("exclude") or [])
    try:
        return LiveRecordSource(settings, count=ns.count, until_position=ns.until_position)
    except SourceError as exc:
        print(f"{PROG}: export: {exc}", file=err)
        return 1


def _quiet_stdout(out: TextIO) -> None:
    """After a BrokenPipeError on standard output, point it at /dev/null so the interpreter's
    final flush does not print "Exception ignored ... BrokenPipeError" at exit."""
    if unescaped(out) is not sys.stdout:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
