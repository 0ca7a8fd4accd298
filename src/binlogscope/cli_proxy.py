"""``binlogscope proxy --listen [HOST:]PORT --upstream HOST:PORT``: watch a real client's session
with a real server by putting binlogscope between them.

Point the client (a replica, a CDC connector, mariadb-binlog) at the listen port; every byte is
forwarded unchanged both ways (:mod:`binlogscope.drivers.proxy`) and both directions are decoded
and shown as ``pcap`` shows a capture: on a terminal without an output option, the TUI that
``sniff`` opens, in follow mode (:class:`~binlogscope.inspector.sources.sniff.ProxySource`: a
flow per connection, ``flow:N`` filters one; ``q`` or Ctrl-C stops the proxy), else ``--json``,
``--plain``, ``--brief``; ``--summary`` per connection when the proxy stops (Ctrl-C, SIGTERM,
``--count``); ``--record FILE.pcapng`` keeps a capture of every connection. Credentials are
forwarded, never shown (the same redaction as everywhere). ``--action 'KIND at=N key=value'``
(repeatable) and ``--scenario FILE`` inject the mock master's faults into the relayed stream
(:mod:`binlogscope.drivers.proxy_faults`). TLS sessions are forwarded but stay opaque (the
decoder says so); TLS termination is not built yet.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any, TextIO

from binlogscope.cli_common import PROG
from binlogscope.cli_live import Stopped, flag_on_signals, restore_signals
from binlogscope.cli_pcap import (
    add_capture_outputs,
    add_capture_selection,
    capture_filter,
    emit_capture,
    live_tui_wanted,
)

if TYPE_CHECKING:
    from binlogscope.drivers.proxy import ReplicationProxy

#: seconds (sys.setswitchinterval) while the proxy runs
SWITCH_INTERVAL = 0.0005


def add_proxy_parser(sub: Any) -> None:
    from binlogscope.drivers.proxy_faults import ACTIONS

    p = sub.add_parser(
        "proxy", help="relay a real client to a real server and decode both directions live",
        description="Listen for clients, relay each connection to the upstream server "
        "unchanged, and decode both directions as `binlogscope pcap` does.")
    p.add_argument("--listen", required=True, metavar="[HOST:]PORT",
                   help="where clients connect (default host 127.0.0.1; port 0 picks one)")
    p.add_argument("--upstream", required=True, metavar="HOST:PORT", help="the real server")
    add_capture_outputs(p, "per connection statistics when the proxy stops")
    p.add_argument("--record", metavar="FILE.pcapng",
                   help="write every relayed connection to this pcapng capture")
    p.add_argument("--action", action="append", default=[], metavar="'KIND at=N key=value'",
                   help="a fault on the relayed stream (repeatable): "
                   + ", ".join(sorted(ACTIONS)) + "; 'at' counts the events after the dump "
                   "request (1 = the fake ROTATE; ACKs for drop_ack/delay_ack), also "
                   "after_seconds=S, times=N (0: every connection), client=N")
    p.add_argument("--scenario", metavar="FILE",
                   help="a TOML/YAML file whose [[actions]] apply (a mock master scenario works)")
    p.add_argument("--count", type=int, metavar="N", help="stop after N decoded packets")
    add_capture_selection(p)


def cmd_proxy(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from binlogscope.drivers.pcap_layers import LINKTYPE_ETHERNET
    from binlogscope.drivers.proxy import ProxyError, ReplicationProxy, parse_hostport
    from binlogscope.drivers.sniff import PcapNgFile, SniffError

    try:
        listen = parse_hostport(args.listen)
        upstream = parse_hostport(args.upstream)
    except ValueError as exc:
        print(f"{PROG}: proxy: {exc}", file=err)
        return 2
    if args.count is not None and args.count < 1:
        print(f"{PROG}: proxy: --count must be positive", file=err)
        return 2
    from binlogscope.drivers.proxy_faults import ActionError, load_actions, parse_action

    try:
        actions = load_actions(args.scenario) if args.scenario else []
        actions += [parse_action(a) for a in args.action]
    except ActionError as exc:
        print(f"{PROG}: proxy: {exc}", file=err)
        return 2
    flt = capture_filter(args, err, "proxy")
    if isinstance(flt, int):
        return flt
    args.port = [upstream[1]]  # (what the summary names as the server port)
    try:
        record = PcapNgFile(args.record, LINKTYPE_ETHERNET) if args.record else None
    except SniffError as exc:
        print(f"{PROG}: proxy: {exc}", file=err)
        return 1
    # the relay thread waits for the GIL while the decoder holds it: switch more often than
    # the default 5 ms so forwarding is not held up by decoding
    sys.setswitchinterval(SWITCH_INTERVAL)
    proxy = ReplicationProxy(listen, upstream, record=record, actions=actions)
    try:
        port = proxy.start()
    except ProxyError as exc:
        print(f"{PROG}: proxy: {exc}", file=err)
        return 1
    print(f"{PROG} proxy: listening on {listen[0]}:{port}, relaying to "
          f"{upstream[0]}:{upstream[1]} (Ctrl-C ends)", file=err, flush=True)
    for a in actions:
        print(f"{PROG} proxy: fault action {a.describe()}", file=err, flush=True)
    fired: list[int] = []
    previous = flag_on_signals(fired)  # the first signal stops the proxy, with its summary
    if hasattr(signal, "SIGPIPE") and threading.current_thread() is threading.main_thread():
        # a client gone mid-write must not end the proxy
        previous[signal.SIGPIPE] = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    tree = not (args.json or args.summary or args.brief)
    try:
        if live_tui_wanted(args, out):
            rc = _run_tui(proxy, args)
        else:
            rc = emit_capture(proxy.batches(record=tree, stop=lambda: bool(fired),
                                            count=args.count),
                              args, flt, out, err, name=f"proxy {args.listen}",
                              fatal=ProxyError, sigpipe_default=False)
    except Stopped:  # a second signal: at once
        rc = 130
    finally:
        restore_signals(previous)
        proxy.stop()
        if record is not None:
            record.close()
    print(f"{PROG} proxy: {proxy.connections} connection(s) relayed"
          + (f"; recorded to {args.record}" if args.record else ""), file=err)
    return rc


def _run_tui(proxy: ReplicationProxy, args: argparse.Namespace) -> int:
    """The TUI over the relay until ``q``/Ctrl-C; what was relayed is decoded (and recorded)
    before it returns."""
    from binlogscope.inspector.sources.sniff import ProxySource
    from binlogscope.tui import run_tui

    source = ProxySource(proxy, count=args.count)
    rc = run_tui(source, table_regex=args.table)
    source.ended.wait(30)
    return rc


__all__ = ["add_proxy_parser", "cmd_proxy"]
