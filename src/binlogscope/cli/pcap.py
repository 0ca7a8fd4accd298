"""``binlogscope pcap``: MySQL/MariaDB replication traffic from pcap/pcapng captures.

Several captures are read each as if on its own (flows numbered per capture), their outputs in
capture order; with ``--jobs N`` (default: the free cores) one process per capture runs the
same :func:`one_capture` (architecture amendment 10).

Plain text (the annotated packets), ``--json`` (one object per packet: flow, direction, frame,
timestamp, seq, payload_length, semi_sync and the decoded fields) or ``--summary`` (per flow,
:mod:`binlogscope.cli.pcap_summary`: the dump request and how it ended, who closed the
connection, packets, bytes, events by type, semi-sync ACKs and their latency, heartbeats, server
ERRs, decode errors, TCP gaps). On a
terminal without an output option the TUI opens when it has a pcap source; otherwise plain text.
Output: :func:`binlogscope.render.shapes.capture_item_json` through the one serializer, or
:func:`binlogscope.render.text.capture_item_text`. The capture reader is imported when the
command runs (``binlogscope file`` does not pay for it).
"""

from __future__ import annotations

import argparse
import functools
import io
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TextIO, cast

from binlogscope.cli.common import (
    PROG,
    BadPatternError,
    jobs_option,
    run_jobs_in_order,
    spool_output,
    table_pattern,
)
from binlogscope.cli.fault_report import link_reconnects
from binlogscope.cli.pcap_summary import FlowStats, capture_loss_json, capture_loss_lines
from binlogscope.cli.terminal import PCAP_OUTPUTS, wants_tui
from binlogscope.cli.type_names import event_type_names, unknown_types
from binlogscope.drivers.hangup import terminal_hung_up
from binlogscope.drivers.health import reconnects, share_status_head
from binlogscope.pipeline.filter import event_table
from binlogscope.pipeline.gc_tuning import fewer_gc_passes
from binlogscope.render.escape import EscapingText, unescaped
from binlogscope.render.json_out import LineWriter, dumps_line
from binlogscope.render.line_layout import brief_lines, packet_lines, text_plain
from binlogscope.render.shapes import capture_item_json
from binlogscope.render.text import capture_item_text
from binlogscope.session.events import DecodeError, LinesWritten, PacketDecoded, SequenceMismatch
from binlogscope.wire.constants import command_name

if TYPE_CHECKING:
    from binlogscope.drivers.items import Flow, SourceItem



def add_pcap_parser(sub: Any) -> None:
    p = sub.add_parser(
        "pcap", help="decode MySQL/MariaDB replication traffic from pcap/pcapng captures",
        description="Decode every MySQL connection in a capture (both directions: handshake, "
        "queries, results, REGISTER_SLAVE, BINLOG_DUMP, the binlog events, semi-sync ACKs), "
        "with the capture frame each packet starts in.")
    p.add_argument("files", nargs="+", metavar="FILE", help="pcap or pcapng captures (.gz "
                   "too), each read as if on its own, one after the other; - reads standard "
                   "input (tcpdump -w - | binlogscope pcap -)")
    add_port_argument(p)
    add_capture_outputs(p, "per flow statistics instead of the packets")
    add_capture_selection(p)
    add_packet_limit(p)
    p.add_argument("--tls-keylog", metavar="FILE", help="decrypt TLS sessions with this NSS "
                   "key log (SSLKEYLOGFILE format, as live/proxy --tls-keylog, OpenSSL and "
                   "browsers write it), with Wireshark's tshark; records without a key show "
                   "as TCP gaps")
    p.add_argument("-j", "--jobs", type=int, metavar="N",
                   help="several captures: decode N at once, one process each, output in "
                   "capture order (default: one for one capture, else the cores not busy: usable "
                   "cores less the load average, at least 1; 1: one at a time)")


def add_port_argument(p: Any) -> None:
    """``--port``: what ``pcap`` and ``sniff`` take as server ports."""
    p.add_argument("--port", type=int, action="append", default=[], metavar="N",
                   help="a server port carrying MySQL (repeatable; default 3306; ports where "
                   "a server greeting is seen are always added)")


def add_capture_outputs(p: Any, summary: str) -> None:
    """The outputs of :func:`emit_capture` (``pcap``, ``sniff``, ``proxy``): ``--plain``,
    ``--json``, ``--summary`` (``summary``: when it is printed), ``--brief``."""
    out = p.add_mutually_exclusive_group()
    out.add_argument("--plain", action="store_true", help="the annotated packets as text")
    out.add_argument("--json", action="store_true", help="one JSON object per packet")
    p.add_argument("--summary", action="store_true",
                   help=f"{summary} (with --json: one object per flow)")
    p.add_argument("--brief", action="store_true", help="one line per packet, no field dump")


def add_packet_limit(p: Any) -> None:
    """``--max-packet-size`` of ``pcap``, ``sniff`` and ``proxy`` (``live``'s meaning)."""
    from binlogscope.drivers.live.options import parse_size
    from binlogscope.session.oversize import DEFAULT_MAX_PACKET

    def size(text: str) -> int:
        try:
            return parse_size(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    p.add_argument("--max-packet-size", type=size, default=DEFAULT_MAX_PACKET, metavar="BYTES",
                   help="largest packet decoded (default 1G, the servers' max_allowed_packet "
                   "ceiling; K/M/G suffixes): a longer one is skipped, not buffered, and an "
                   "error gives its size")


def add_capture_selection(p: Any) -> None:
    """The selection of :func:`capture_filter`: ``--flow``, ``--table``, ``--type``."""
    p.add_argument("--flow", action="append", default=[], metavar="FLOW",
                   help="only this flow: its number (as in --summary) or text in "
                   "'client ip:port -> server ip:port' (repeatable)")
    p.add_argument("--table", metavar="REGEX",
                   help=r"only binlog events on tables whose 'schema.table' matches")
    p.add_argument("--type", action="append", default=[], metavar="EVENT_TYPE",
                   help="only these binlog event types or packet kinds, e.g. WRITE_ROWS_EVENT, "
                   "write_rows, com_query, semi_sync_ack (repeatable)")


# ---------------------------------------------------------------------------- filters
@dataclass
class _Filter:
    flows: list[str]
    table: re.Pattern[str] | None
    types: set[str]

    #: the --flow selectors that matched a flow of the capture
    matched: set[str] = field(default_factory=set)

    def flow_ok(self, flow: Flow) -> bool:
        if not self.flows:
            return True
        hit = [f for f in self.flows if f == str(flow.id) or (not f.isdigit() and f in flow.name)]
        self.matched.update(hit)
        return bool(hit)

    def item_ok(self, item: SourceItem) -> bool:
        if not self.flow_ok(item.flow):
            return False
        if self.table is None and not self.types:
            return True
        ev = item.event
        if not isinstance(ev, PacketDecoded):
            return False
        bev = ev.binlog_event
        if self.table is not None:
            if bev is None:
                return False
            schema, table = event_table(bev)
            if table is None or not self.table.fullmatch(f"{schema}.{table}"):
                return False
        if self.types:
            kind = ev.kind.lower()
            if kind in self.types:
                return True
            if bev is not None:
                return not event_type_names(bev.type_name).isdisjoint(self.types)
            if kind == "command" and ev.payload:
                return command_name(ev.payload[0]).lower() in self.types
            return False
        return True


def _norm_type(t: str) -> str:
    return t.strip().lower()


# ---------------------------------------------------------------------------- command
def _run_tui(args: argparse.Namespace, err: TextIO) -> int | None:
    """Open the TUI when a pcap source exists for it (None: not available, print instead)."""
    try:
        from binlogscope.inspector.sources.pcap import PcapSource
    except ImportError:
        return None
    from binlogscope.tui import run_tui

    # the index of a big capture is a long stream of short-lived objects (gc_tuning): on the
    # full bench capture the default thresholds made 89 full passes over every live object
    # (the TUI's too) - 2.2-2.5 s of its ~22 s of indexing
    with fewer_gc_passes():
        return run_tui(PcapSource(args.file, ports=args.port or None,
                                  max_packet=args.max_packet_size), table_regex=args.table)


def capture_filter(args: argparse.Namespace, err: TextIO, command: str = "pcap"
                   ) -> _Filter | int:
    """The --flow/--table/--type selection of ``pcap`` and ``sniff`` (or an exit code after a
    one-line error)."""
    try:
        table = table_pattern(args.table, err)
    except BadPatternError:
        return 2
    flt = _Filter(args.flow, table, {_norm_type(t) for t in args.type})
    bad = unknown_types(flt.types)
    if bad:
        print(f"{PROG}: {command}: unknown --type {', '.join(bad)}: use a binlog event type "
              "(WRITE_ROWS_EVENT, write_rows, gtid, ...) or a packet kind (com_query, err, "
              "semi_sync_ack, ...)", file=err)
        return 2
    return flt


def cmd_pcap(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    files = list(getattr(args, "files", None) or [args.file])
    if files.count("-") > 1:
        print(f"{PROG}: pcap: standard input (-) can be read only once", file=err)
        return 2
    args.file = files[0]
    flt = capture_filter(args, err)
    if isinstance(flt, int):
        return flt
    keylog = getattr(args, "tls_keylog", None)
    if keylog is not None and "-" in files:
        print(f"{PROG}: pcap: --tls-keylog needs capture files (tshark reads them): save "
              "standard input to a file first", file=err)
        return 2
    if keylog is None and len(files) == 1 and wants_tui(args, out, PCAP_OUTPUTS,
                                                        reads_stdin=args.file == "-"):
        rc = _run_tui(args, err)
        if rc is not None:
            return rc
    jobs = jobs_option(args, "pcap", len(files), err)
    if jobs is None:
        return 2
    raw = spool_output(jobs, files, out)
    if raw is not None:
        return run_jobs_in_order("pcap", files, functools.partial(_capture_job, args, flt),
                                 jobs, out, raw, err)
    status = 0
    for path in files:
        rc = one_capture(path, args, replace(flt, matched=set()), out, err, signals=True)
        if rc == 130:
            return rc
        status = max(status, rc)
    return status


def one_capture(path: str, args: argparse.Namespace, flt: _Filter, out: TextIO, err: TextIO,
                *, signals: bool) -> int:
    """One capture, written to ``out`` (its messages to ``err``): the exit status. The same
    function runs in the command and in each ``--jobs`` worker (``signals``: the first Ctrl-C
    ends the reading with what was read so far; a worker leaves signals to its parent)."""
    from binlogscope.cli.signals import Stopped, flag_on_signals, restore_signals
    from binlogscope.drivers.capture.pcap import CaptureError, read_capture_batches

    ports = set(args.port) if args.port else None
    record = not (args.json or args.summary or args.brief)
    fired: list[int] = []
    previous = flag_on_signals(fired) if signals else {}

    keylog = getattr(args, "tls_keylog", None)
    decryption = None
    if keylog is not None:
        from binlogscope.drivers.capture.tls_keylog import TlsKeylogError, decrypt

        try:
            decryption = decrypt(path, keylog)
        except TlsKeylogError as exc:
            if signals:
                restore_signals(previous)
            print(f"{PROG}: pcap: {exc}", file=err)
            return 1

    # every item as a --json (--brief) line: the server event packets' lines by the native
    # kernel (render/line_layout.py packet_lines, brief_lines), the rest as always
    every = not args.summary and not (flt.flows or flt.table is not None or flt.types)
    lines = (packet_lines if args.json and every
             else brief_lines if args.brief and every else None)

    def until_stopped() -> Iterator[list[SourceItem]]:
        for batch in read_capture_batches(path, ports, record=record,
                                          max_packet=args.max_packet_size,
                                          stop=lambda: bool(fired), tls_keylog=keylog,
                                          decryption=decryption, lines=lines):
            if fired:
                return
            yield batch

    fatal: type[Exception] | tuple[type[Exception], ...] = CaptureError

    try:
        rc = emit_capture(until_stopped(), args, flt, out, err, name=path, fatal=fatal)
    except Stopped:  # a second one: at once
        return 130
    finally:
        if signals:
            restore_signals(previous)
    if fired:
        print(f"{PROG}: pcap: interrupted: {path} was read only up to that point",
              file=err)
        return 130
    if decryption is not None and decryption.undecrypted:
        n = len(decryption.undecrypted)
        print(f"{PROG}: pcap: {path}: {n} frame(s) of TLS application data could not be "
              f"decrypted (first: frame {min(decryption.undecrypted)}): {keylog} has no "
              "secrets for those sessions; they are left out of the decoding", file=err)
        return max(rc, 1)
    return rc


def _capture_job(args: argparse.Namespace, flt: _Filter, encoding: str, text_errors: str,
                 escape: bool, path: str, spool: str) -> tuple[int, str]:
    """A ``--jobs`` worker's capture: :func:`one_capture` into the spool file (encoded and, when
    the command's output is an :class:`EscapingText`, escaped as it is); its status and
    messages."""
    err = io.StringIO()
    with open(spool, "w", encoding=encoding, errors=text_errors) as spooled:
        out = cast("TextIO", EscapingText(spooled)) if escape else spooled
        status = one_capture(path, args, replace(flt, matched=set()), out, err, signals=False)
        out.flush()
    return status, err.getvalue()


def emit_capture(batches: Iterable[list[SourceItem]], args: argparse.Namespace, flt: _Filter,
                 out: TextIO, err: TextIO, *, name: str,
                 fatal: type[Exception] | tuple[type[Exception], ...],
                 sigpipe_default: bool = True,
                 capture_loss: Callable[[], dict[str, Any]] | None = None,
                 flush_every: float | None = None) -> int:
    """:func:`_emit_capture` with SIGPIPE at its default while it writes to the process's
    standard output (``| head``: the process ends, as a C tool's does) and as it was after
    (``main()`` called in-process - a test, an embedding program - must not leave a process
    that dies on the next write to a socket whose peer is gone: a pytest worker did).
    ``sigpipe_default=False``: keep SIGPIPE ignored (the proxy writes to sockets whose peer may
    be gone: that must be an error on that socket, not the end of the process)."""
    previous: Any = None
    if hasattr(signal, "SIGPIPE") and unescaped(out) is sys.stdout and sigpipe_default \
            and threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        return _emit_capture(batches, args, flt, out, err, name=name, fatal=fatal,
                             capture_loss=capture_loss, flush_every=flush_every)
    finally:
        if previous is not None:
            signal.signal(signal.SIGPIPE, previous)


def _emit_capture(batches: Iterable[list[SourceItem]], args: argparse.Namespace, flt: _Filter,
                  out: TextIO, err: TextIO, *, name: str,
                  fatal: type[Exception] | tuple[type[Exception], ...],
                  capture_loss: Callable[[], dict[str, Any]] | None = None,
                  flush_every: float | None = None) -> int:
    """Write what ``batches`` (capture items a frame at a time) hold as ``--json``, ``--plain``,
    ``--brief`` or ``--summary``; the exit status (``fatal``: the source's one-line errors).
    ``capture_loss``: a live capture's counters (``sniff``), shown after the flows in
    ``--summary`` with the TCP gaps of every flow, so what was lost is in one place.
    ``flush_every``: a live source (``sniff``, ``proxy``) - what was decoded is written out
    that often, to a pipe or a file someone reads as it grows, not only when a buffer fills."""
    ports = set(args.port) if args.port else None
    stats: dict[int, FlowStats] = {}
    errors = 0
    filtering = bool(flt.flows or flt.table is not None or flt.types)
    summary, as_json, brief = args.summary, args.json, args.brief
    interactive = out.isatty()
    lines = LineWriter(out, interactive=interactive, flush_every=flush_every)
    add = lines.add
    text: list[str] = []  # --plain/--brief lines not written yet (then: bytes, as the JSON)
    utf8 = (getattr(out, "encoding", None) or "utf-8").lower().replace("-", "") == "utf8"
    try:
        try:
            with fewer_gc_passes():  # (gc_tuning: ~25 % less CPU on big captures)
                for items in batches:
                    for item in items:
                        ev = item.event
                        if type(ev) is LinesWritten:  # (the kernel's lines, in their place)
                            data = ev.data
                            if as_json or (utf8 and not text and text_plain(data)):
                                add(data)
                            else:  # (--brief: after the text before them; escaped and
                                # encoded as every text line when it must be)
                                text.append(data.decode("utf-8", "surrogatepass")[:-1])
                            continue
                        # (a sequence id out of order: what a client library stops at)
                        if (item.kind == "error" or type(ev) is DecodeError
                                or type(ev) is SequenceMismatch) \
                                and not item.injected:  # (the proxy's own fault: not damage)
                            errors += 1
                        if summary:
                            if flt.flow_ok(item.flow):
                                st = stats.get(item.flow.id)
                                if st is None:
                                    st = stats[item.flow.id] = FlowStats(item.flow)
                                st.add(item)
                                if st.health.status_head is not None:  # (another flow's lag)
                                    share_status_head(st.health, st.flow.server,
                                                      ((o.health, o.flow.server)
                                                       for o in stats.values()))
                            continue
                        if filtering and not flt.item_ok(item):
                            continue
                        if as_json:
                            obj = capture_item_json(item)
                            if obj is not None:
                                add(dumps_line(obj))
                        else:
                            text.extend(capture_item_text(item, brief))
                            if not brief and type(ev) is PacketDecoded:
                                text.append("")
                    if text:
                        lines.add_text("\n".join(text) + "\n")
                        text.clear()
                    if interactive:
                        lines.flush()
        finally:
            if text:
                lines.add_text("\n".join(text) + "\n")
            try:
                lines.close()
            except OSError as exc:  # (a hung-up terminal: the error already under way says so)
                if not terminal_hung_up(exc):
                    raise
    except fatal as exc:
        _print_summary(args, stats, out, capture_loss, flush_every is not None)
        print(f"{PROG}: error: {exc}", file=err)
        return 1
    except BrokenPipeError:
        return 0
    except OSError as exc:  # the terminal hung up before the hang-up watcher saw it
        if not terminal_hung_up(exc):
            raise
        return 128 + signal.SIGHUP
    _print_summary(args, stats, out, capture_loss, flush_every is not None)
    if not stats and args.summary:
        print(f"{PROG}: {name}: no MySQL connection found (server ports: "
              f"{', '.join(map(str, sorted(ports or {3306})))} and any port with a server "
              "greeting; try --port)", file=err)
    missing = [f for f in flt.flows if f not in flt.matched]
    if missing:
        print(f"{PROG}: {name}: no flow matches --flow {', '.join(missing)} (--summary "
              "lists the flows)", file=err)
        return 2
    if errors:
        print(f"{PROG}: {name}: {errors} error(s) (shown in the output)", file=err)
        return 1
    return 0


def _print_summary(args: argparse.Namespace, stats: dict[int, FlowStats], out: TextIO,
                   capture_loss: Callable[[], dict[str, Any]] | None = None,
                   live: bool = False) -> None:
    if not args.summary:
        return
    lines = LineWriter(out)
    link_reconnects([(st.flow, st.fault_log, st.dump_words()) for st in stats.values()])
    # the state at the end is judged at the capture's last time, or now for a live source
    end = max((st.health.last_seen for st in stats.values()), default=0.0)
    if live:
        end = max(end, time.time())
    again = reconnects([(st.flow.id, st.flow.client, st.flow.first_timestamp,
                         st.dump is not None) for st in stats.values()])
    for st in stats.values():
        st.end_time = end
        st.reconnect_of = again.get(st.flow.id)
    for st in stats.values():
        if args.json:
            lines.write(st.to_json())
        else:
            out.write("\n".join(st.text()) + "\n\n")
    if capture_loss is not None:
        loss = capture_loss_json(capture_loss(), list(stats.values()))
        if args.json:
            lines.write({"capture": loss})
        else:
            out.write("\n".join(capture_loss_lines(loss)) + "\n")
    lines.flush()


__all__ = ["add_capture_outputs", "add_capture_selection", "add_pcap_parser",
           "add_port_argument", "capture_filter", "cmd_pcap", "emit_capture", "one_capture"]
