"""``binlogscope proxy --listen [HOST:]PORT --upstream HOST:PORT``: watch a real client's session
with a real server by putting binlogscope between them.

Point the client (a replica, a CDC connector, mariadb-binlog) at the listen port; every byte is
forwarded unchanged both ways by a relay process (:mod:`binlogscope.drivers.proxy.relay`,
:mod:`binlogscope.drivers.proxy.process`) and both directions are decoded in this one (at the
lowest CPU priority: :func:`lower_decoder_priority`) and shown as ``pcap`` shows a capture: on a
terminal without an output option, the TUI that ``sniff`` opens, in follow mode
(:class:`~binlogscope.inspector.sources.sniff.ProxySource`: a flow per connection, ``flow:N``
filters one; ``q`` or Ctrl-C stops the proxy), else ``--json``,
``--plain``, ``--brief``; ``--summary`` per connection when the proxy stops (Ctrl-C, SIGTERM,
``--count``); ``--record FILE.pcapng`` keeps a capture of every connection, written by the
relay process (lossless: a decoder that falls behind does not cut it; a gap the disk forces is
marked in the file and reported), with the login secrets - the server's nonce, the client's
auth response - overwritten by ``*`` as ``live --record`` does (``--record-raw`` keeps them).
Credentials are forwarded, never shown (the same redaction as everywhere).
``--action 'KIND at=N key=value'`` (repeatable) and ``--scenario FILE`` inject the mock
master's faults into the relayed stream (:mod:`binlogscope.drivers.proxy.faults`).

TLS: a client that asks for TLS (its SSLRequest) has its TLS terminated at the proxy
(:mod:`binlogscope.drivers.proxy.tls`), so the encrypted session is decoded like any other.
The proxy shows clients ``--tls-cert``/``--tls-key``, or else a self-signed certificate it
generates at start (it prints the file and the SHA-256 fingerprint; the files are removed when
it stops), and speaks TLS of its own to the server with ``--ssl-mode``/``--ssl-ca`` (the
meanings of ``live``: PREFERRED/REQUIRED encrypt without verifying, VERIFY_CA checks the
chain, VERIFY_IDENTITY also the host name; ``--ssl-ca`` alone means VERIFY_CA). What this
means for trust: the proxy is a man in the middle by design - it holds the private key the
client's TLS ends at, so the client must trust the proxy's certificate (or not verify the
server at all), the server sees the proxy's TLS connection, not the client's (a client
certificate reaches it only as ``--ssl-cert``), and a ``--record`` capture of such a session
holds the decrypted traffic (its login secrets masked unless ``--record-raw``; the rest, the
statements and rows, in clear: keep it like a secret).
``--tls-passthrough`` relays TLS sessions untouched instead (they stay opaque). When
the server does not offer TLS or fails the verification, the client's connection is closed
and the proxy prints one line.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

from binlogscope.cli.common import PROG
from binlogscope.cli.pcap import (
    add_capture_outputs,
    add_capture_selection,
    add_packet_limit,
    capture_filter,
    emit_capture,
)
from binlogscope.cli.signals import Stopped, flag_on_signals, restore_signals
from binlogscope.cli.terminal import FOLLOW_OUTPUTS, wants_tui

if TYPE_CHECKING:
    from binlogscope.drivers.proxy.relay import ReplicationProxy

#: the decoding process's niceness, added once the relay process runs, where the idle
#: scheduling class (below) is not available
DECODER_NICE = 10


def lower_decoder_priority() -> str:
    """Once the relay process runs, this one (the decoder, and the TUI) takes only the CPU that
    nothing else wants: Linux's SCHED_IDLE class (any ordinary task that wakes up - the relay,
    the client, the server - preempts it at once; on a machine with CPU to spare it decodes at
    full speed), else nice +DECODER_NICE. The relay and the sessions it serves come first; a
    decoder that falls behind stops decoding that connection with a note, never its bytes
    (bench/README.md, issue 18: the semi-sync commit latency). The policy it got."""
    idle = getattr(os, "SCHED_IDLE", None)
    if idle is not None:
        try:
            os.sched_setscheduler(0, idle, os.sched_param(0))
            return "SCHED_IDLE"
        except OSError:
            pass
    try:
        os.nice(DECODER_NICE)
        return f"nice +{DECODER_NICE}"
    except OSError:
        return "unchanged"


def restore_decoder_priority() -> None:
    """At the first Ctrl-C: back to the ordinary scheduling class, so the drain, the summary
    and the relay's shutdown run at normal speed (in SCHED_IDLE a busy machine starved them:
    measured, an idle proxy given SIGINT beside two CPU-bound processes took over 30 s)."""
    other = getattr(os, "SCHED_OTHER", None)
    if other is not None and getattr(os, "SCHED_IDLE", None) is not None:
        try:
            if os.sched_getscheduler(0) == os.SCHED_IDLE:
                os.sched_setscheduler(0, other, os.sched_param(0))
        except OSError:
            pass


def add_proxy_parser(sub: Any) -> None:
    from binlogscope.drivers.proxy.faults import ACTIONS
    from binlogscope.drivers.proxy.relay import DRAIN_SECONDS

    p = sub.add_parser(
        "proxy", help="relay a real client to a real server and decode both directions live",
        description="Listen for clients, relay each connection to the upstream server "
        "unchanged, and decode both directions as `binlogscope pcap` does.")
    p.add_argument("--listen", required=True, metavar="[HOST:]PORT",
                   help="where clients connect (default host 127.0.0.1; port 0 picks one)")
    p.add_argument("--upstream", required=True, metavar="HOST:PORT", help="the real server")
    add_capture_outputs(p, "per connection statistics when the proxy stops")
    p.add_argument("--record", metavar="FILE.pcapng",
                   help="write every relayed connection to this pcapng capture (login "
                   "secrets masked)")
    p.add_argument("--record-raw", action="store_true",
                   help="with --record: keep the login secrets (the server's nonce, the "
                   "client's auth response) in the capture - enough for an offline password "
                   "guess: keep the file like a password")
    p.add_argument("--action", action="append", default=[], metavar="'KIND at=N key=value'",
                   help="a fault on the relayed stream (repeatable): "
                   + ", ".join(sorted(ACTIONS)) + "; 'at' counts the events after the dump "
                   "request (1 = the fake ROTATE; ACKs for drop_ack/delay_ack), also "
                   "after_seconds=S, times=N (0: every connection), client=N")
    p.add_argument("--scenario", metavar="FILE",
                   help="a TOML/YAML file whose [[actions]] apply (a mock master scenario works)")
    p.add_argument("--count", type=int, metavar="N", help="stop after N decoded packets")
    p.add_argument("--drain", type=_drain_seconds, default=DRAIN_SECONDS, metavar="SECONDS",
                   help="after Ctrl-C, keep decoding what was relayed for at most this long "
                   f"(default {DRAIN_SECONDS:g}; 'all': until done; the decoder yields the CPU "
                   "to the relay, so on a busy machine it can lag); what is not decoded by then "
                   "is an error item per connection and the exit status is 1")
    _add_tls_options(p)
    add_capture_selection(p)
    add_packet_limit(p)


def _drain_seconds(text: str) -> float | None:
    """``--drain``: seconds (>= 0) or ``all`` (None: no limit)."""
    if text.strip().lower() == "all":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected seconds or 'all'") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected seconds >= 0 or 'all'")
    return value


def _add_tls_options(p: Any) -> None:
    t = p.add_argument_group(
        "TLS termination", "a client that asks for TLS has it terminated here (the proxy holds "
        "the key; the client must trust its certificate or not verify; the server sees the "
        "proxy's TLS; --record then holds the decrypted traffic) and the proxy speaks TLS to "
        "the server")
    t.add_argument("--tls-cert", metavar="PEM", help="certificate (chain) shown to TLS clients "
                   "(default: a self-signed one generated at start, its file and fingerprint "
                   "printed, removed at exit)")
    t.add_argument("--tls-key", metavar="PEM", help="the private key of --tls-cert")
    t.add_argument("--tls-passthrough", action="store_true",
                   help="do not terminate TLS: relay TLS sessions untouched (not decoded)")
    t.add_argument("--ssl-mode", choices=["PREFERRED", "REQUIRED", "VERIFY_CA",
                                          "VERIFY_IDENTITY"], type=str.upper,
                   help="upstream TLS verification, as for live (default PREFERRED: "
                   "encrypted, not verified; --ssl-ca alone means VERIFY_CA; no DISABLED: the "
                   "SSLRequest goes to the server as sent - see --tls-passthrough)")
    t.add_argument("--ssl-ca", metavar="PEM", help="CA file to verify the server with")
    t.add_argument("--ssl-cert", metavar="PEM", help="client certificate for the server")
    t.add_argument("--ssl-key", metavar="PEM", help="the key of --ssl-cert")
    t.add_argument("--tls-keylog", metavar="FILE", help="append both TLS legs' session keys "
                   "to FILE (NSS key log, SSLKEYLOGFILE format) so that a capture of them can "
                   "be decrypted (pcap --tls-keylog, Wireshark); off by default")


def _tls_settings(args: argparse.Namespace, upstream: tuple[str, int]) -> Any:
    """The proxy's TlsSettings (None: --tls-passthrough), a certificate generated if none was
    given; a str is the one-line problem."""
    import os

    from binlogscope.drivers.proxy.tls import TlsSettings, generate_certificate

    if args.tls_passthrough:
        if getattr(args, "tls_keylog", None):
            return "--tls-keylog needs TLS termination (not --tls-passthrough)"
        return None
    if bool(args.tls_cert) != bool(args.tls_key):
        return "--tls-cert and --tls-key go together"
    for opt in ("tls_cert", "tls_key", "ssl_ca", "ssl_cert", "ssl_key"):
        path = getattr(args, opt)
        if path and not os.path.isfile(os.path.expanduser(path)):
            return f"--{opt.replace('_', '-')} {path}: no such file"
    mode = args.ssl_mode or ("VERIFY_CA" if args.ssl_ca else "PREFERRED")
    cert, key = args.tls_cert, args.tls_key
    if not cert:
        c, k, fingerprint = generate_certificate(names=(args.listen.rpartition(":")[0].strip(
            "[]"),))
        cert, key = str(c), str(k)
        args.generated_tls = c.parent
        args.tls_note = (f"{PROG} proxy: TLS clients get a self-signed certificate generated "
                         f"for this run: {c} (SHA-256 {fingerprint}); clients that verify the "
                         "server must trust it (--tls-cert/--tls-key to use your own)")
    keylog = getattr(args, "tls_keylog", None)
    if keylog:
        keylog = os.path.expanduser(keylog)
        try:
            with open(keylog, "a", encoding="ascii"):
                pass
        except OSError as exc:
            return f"--tls-keylog {keylog}: {exc.strerror or exc}"
        args.tls_keylog_note = (
            f"{PROG} proxy: warning: --tls-keylog {keylog}: the TLS session keys of both legs "
            "are written there - with that file anyone holding a capture of these sessions "
            "reads all they carried; keep it private, delete it when done")
    return TlsSettings(os.path.expanduser(cert), os.path.expanduser(key), mode,
                       args.ssl_ca and os.path.expanduser(args.ssl_ca),
                       args.ssl_cert and os.path.expanduser(args.ssl_cert),
                       args.ssl_key and os.path.expanduser(args.ssl_key), upstream[0],
                       keylog or None)


def _tls_failures(batches: Iterator[list[Any]], err: TextIO) -> Iterator[list[Any]]:
    """The batches, and one line on stderr for each connection whose TLS termination failed
    (also an error item in the output)."""
    from binlogscope.drivers.proxy.relay import TLS_FAILED

    for batch in batches:
        for item in batch:
            if item.kind == "error" and (item.text or "").startswith(TLS_FAILED):
                print(f"{PROG} proxy: connection {item.flow.id} from {item.flow.client}: "
                      f"{item.text}", file=err, flush=True)
        yield batch


def cmd_proxy(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from binlogscope.drivers.proxy.relay import parse_hostport

    try:
        listen = parse_hostport(args.listen)
        upstream = parse_hostport(args.upstream)
    except ValueError as exc:
        print(f"{PROG}: proxy: {exc}", file=err)
        return 2
    if args.count is not None and args.count < 1:
        print(f"{PROG}: proxy: --count must be positive", file=err)
        return 2
    from binlogscope.drivers.proxy.faults import ActionError, load_actions, parse_action

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
    if args.record_raw and not args.record:
        print(f"{PROG}: proxy: --record-raw needs --record", file=err)
        return 2
    record = args.record
    tls = _tls_settings(args, upstream)
    if isinstance(tls, str):
        print(f"{PROG}: proxy: {tls}", file=err)
        return 2
    try:
        return _run(args, out, err, listen, upstream, record, actions, flt, tls)
    finally:
        generated = getattr(args, "generated_tls", None)
        if generated is not None:
            import shutil

            shutil.rmtree(generated, ignore_errors=True)


def _run(args: argparse.Namespace, out: TextIO, err: TextIO, listen: tuple[str, int],
         upstream: tuple[str, int], record: Any, actions: list[Any], flt: Any, tls: Any) -> int:
    from binlogscope.drivers.proxy.relay import ProxyError, ReplicationProxy

    proxy = ReplicationProxy(listen, upstream, record=record, record_raw=args.record_raw,
                             actions=actions, tls=tls, max_packet=args.max_packet_size)
    try:
        port = proxy.start()  # (the relay process keeps the usual priority ...)
    except ProxyError as exc:
        print(f"{PROG}: proxy: {exc}", file=err)
        return 1
    lower_decoder_priority()  # ... this one, the decoder, yields the CPU to it
    # (set before the banner says it listens: a client's run and a Ctrl-C may follow at once,
    # and Python's default handler would end the proxy with 130 and no summary)
    fired: list[int] = []
    # the first signal stops the proxy, with its summary (what was relayed is decoded for up
    # to 3 s); the second ends that at the next whole output line; a third at once
    previous = flag_on_signals(fired, on_first=restore_decoder_priority, raise_at=3)
    print(f"{PROG} proxy: listening on {listen[0]}:{port}, relaying to "
          f"{upstream[0]}:{upstream[1]} (Ctrl-C ends)", file=err, flush=True)
    if getattr(args, "tls_note", None):
        print(args.tls_note, file=err, flush=True)
    if getattr(args, "tls_keylog_note", None):
        print(args.tls_keylog_note, file=err, flush=True)
    for a in actions:
        print(f"{PROG} proxy: fault action {a.describe()}", file=err, flush=True)
    if hasattr(signal, "SIGPIPE") and threading.current_thread() is threading.main_thread():
        # a client gone mid-write must not end the proxy
        previous[signal.SIGPIPE] = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    tree = not (args.json or args.summary or args.brief)
    try:
        if wants_tui(args, out, FOLLOW_OUTPUTS):
            rc = _run_tui(proxy, args)
        else:
            rc = emit_capture(_tls_failures(proxy.batches(record=tree, stop=lambda: bool(fired),
                                                          count=args.count,
                                                          drain=args.drain,
                                                          abort=lambda: len(fired) > 1), err),
                              args, flt, out, err, name=f"proxy {listen[0]}:{port}",
                              fatal=ProxyError, sigpipe_default=False, flush_every=0.1)
            if len(fired) > 1:  # (a second signal cut the drain short)
                rc = 130
    except Stopped:  # a third signal: at once
        rc = 130
    finally:
        restore_signals(previous)
        proxy.stop()
    print(f"{PROG} proxy: {proxy.connections} connection(s) relayed"
          + (f"; recorded to {args.record}" if args.record else ""), file=err)
    if proxy.record_error is not None:
        print(f"{PROG}: proxy: the recording stopped: {proxy.record_error}", file=err)
        return rc or 1
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
