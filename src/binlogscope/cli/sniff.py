"""``binlogscope sniff -i IFACE``: other programs' replication sessions, live, from an interface.

What ``pcap`` shows of a capture file, as the packets pass: the TUI in follow mode on a terminal,
else ``--json``, ``--plain``/``--brief`` or ``--summary`` (printed when the capture ends:
Ctrl-C, SIGTERM, ``--count`` packets, ``--duration`` seconds). ``--write FILE.pcapng`` keeps
every captured frame. What was lost before decoding is reported at the end (stderr, and in
``--summary``), beside the TCP gaps it causes: frames the kernel dropped (the capture ring was
full) and frames dropped because the queue to the decoder (``--buffer`` MiB) was full; on a stop
everything captured before it is still decoded (a second Ctrl-C ends at once). Without the
privilege to capture: one line saying what is needed.
The capture layer is :mod:`binlogscope.drivers.capture.sniff`; the output is ``pcap``'s
(:func:`binlogscope.cli.pcap.emit_capture`).
"""

from __future__ import annotations

import argparse
import os
from typing import Any, TextIO

from binlogscope.cli.common import PROG
from binlogscope.cli.pcap import (
    add_capture_outputs,
    add_capture_selection,
    add_packet_limit,
    add_port_argument,
    capture_filter,
    emit_capture,
)
from binlogscope.cli.pcap_summary import capture_loss_text
from binlogscope.cli.signals import Stopped, flag_on_signals, restore_signals
from binlogscope.cli.terminal import FOLLOW_OUTPUTS, wants_tui
from binlogscope.drivers.capture.sniff_ring import BUFFER_BYTES

MIB = 1 << 20


def add_sniff_parser(sub: Any) -> None:
    p = sub.add_parser(
        "sniff", help="decode MySQL/MariaDB replication traffic live from a network interface",
        description="Capture on an interface (needs root or CAP_NET_RAW) and decode every MySQL "
        "connection as `binlogscope pcap` does, live: other programs' sessions (a replica, a "
        "CDC connector, a binlog server) while they run.")
    p.add_argument("-i", "--interface", required=True, metavar="IFACE",
                   help="the interface to capture on, e.g. lo or eth0")
    add_port_argument(p)
    p.add_argument("--bpf", metavar="FILTER",
                   help="a capture filter ANDed with 'tcp' (tcpdump syntax), e.g. 'host 10.0.0.5'")
    add_capture_outputs(p, "per flow statistics when the capture ends")
    p.add_argument("--write", metavar="FILE.pcapng",
                   help="also write every captured frame to this pcapng file")
    p.add_argument("--count", type=int, metavar="N", help="stop after N decoded packets")
    p.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this long")
    p.add_argument("--buffer", type=float, default=BUFFER_BYTES / MIB, metavar="MIB",
                   help="the most captured data waiting for the decoder (default "
                   f"{BUFFER_BYTES // MIB:.0f}); beyond it frames are dropped and counted")
    p.add_argument("--tls-keylog", metavar="FILE", help="decrypt TLS sessions with this NSS "
                   "key log (SSLKEYLOGFILE format, as live/proxy --tls-keylog and OpenSSL "
                   "clients write it; by tshark, as pcap --tls-keylog); keys appended while "
                   "the capture runs are read when a session needs them")
    add_capture_selection(p)
    add_packet_limit(p)


def cmd_sniff(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from binlogscope.drivers.capture.sniff import (
        PcapNgFile,
        SniffError,
        open_capture,
        sniff_batches,
    )

    if (args.count is not None and args.count < 1) or (args.duration is not None and \
            args.duration <= 0) or args.buffer <= 0:
        print(f"{PROG}: sniff: --count, --duration and --buffer must be positive", file=err)
        return 2
    flt = capture_filter(args, err, "sniff")
    if isinstance(flt, int):
        return flt
    try:
        capture = open_capture(args.interface, args.bpf,
                               buffer_bytes=max(1, int(args.buffer * MIB)))
    except SniffError as exc:
        print(f"{PROG}: sniff: {exc}", file=err)
        return 1
    try:
        write = PcapNgFile(args.write, capture.linktype) if args.write else None
    except SniffError as exc:
        capture.close()
        print(f"{PROG}: sniff: {exc}", file=err)
        return 1
    keylog = getattr(args, "tls_keylog", None)
    decryption = None
    fatal: tuple[type[Exception], ...] = (SniffError,)
    later = ""
    if keylog is not None:
        from binlogscope.drivers.capture.tls_keylog import LiveDecryption, TlsKeylogError

        if not os.path.exists(keylog):
            later = (f"{PROG} sniff: --tls-keylog {keylog} does not exist yet: it is read when "
                     "a TLS session needs its keys")
        try:
            decryption = LiveDecryption(keylog, capture.linktype)
        except TlsKeylogError as exc:
            capture.close()
            if write is not None:
                write.close()
            print(f"{PROG}: sniff: {exc}", file=err)
            return 1
        fatal = (SniffError, TlsKeylogError)
    ports = set(args.port) if args.port else None
    if wants_tui(args, out, FOLLOW_OUTPUTS):
        from binlogscope.inspector.sources.sniff import SniffSource
        from binlogscope.tui import run_tui

        return run_tui(SniffSource(capture, ports=ports, write=write, count=args.count,
                                   duration=args.duration, max_packet=args.max_packet_size,
                                   decryption=decryption),
                       table_regex=args.table)
    fired: list[int] = []
    # the first signal ends the capture (what was caught is decoded for up to 3 s), with its
    # summary; the second ends that at the next whole line; a third at once
    previous = flag_on_signals(fired, raise_at=3)
    record = not (args.json or args.summary or args.brief)
    # (also when stderr is not a terminal: the capture is open now, what a script waits for)
    print(f"{PROG} sniff: capturing on {args.interface} (Ctrl-C ends)", file=err, flush=True)
    if later:
        print(later, file=err, flush=True)
    try:
        rc = emit_capture(
            sniff_batches(capture, ports, record=record, stop=lambda: bool(fired),
                          count=args.count, duration=args.duration, write=write,
                          max_packet=args.max_packet_size, abort=lambda: len(fired) > 1,
                          decryption=decryption),
            args, flt, out, err, name=f"sniff -i {args.interface}", fatal=fatal,
            capture_loss=lambda: _loss(capture.stats(), args.interface), flush_every=0.1)
        if len(fired) > 1:  # (the second signal cut the drain short)
            rc = 130
    except Stopped:  # a third signal: at once
        rc = 130
    finally:
        restore_signals(previous)
        st = capture.stats()
        capture.close()
        if write is not None:
            write.close()
        if decryption is not None:
            decryption.close()
    print(f"{PROG} sniff: " + capture_loss_text(_loss(st, args.interface))
          + (f"; written to {args.write}" if args.write else ""), file=err)
    if decryption is not None and decryption.undecrypted:
        print(f"{PROG}: sniff: {decryption.undecrypted} frame(s) of TLS application data could "
              f"not be decrypted (first: frame {decryption.first_undecrypted}): {keylog} had "
              "no secrets for those sessions when they passed (or the capture joined them "
              "after their TLS handshake); they are left out of the decoding", file=err)
        rc = max(rc, 1)
    return 1 if rc == 0 and st.lost else rc


def _loss(st: Any, iface: str) -> dict[str, Any]:
    """The capture's counters for :func:`capture_loss_text` / ``--summary``."""
    return {"interface": iface, "frames_decoded": st.frames, "kernel_frames": st.received,
            "kernel_dropped": st.dropped, "buffer_dropped": st.buffer_dropped,
            "buffer_peak_bytes": st.buffer_peak, "buffer_bytes": st.buffer_limit,
            "frames_not_decoded": st.undecoded}


__all__ = ["add_sniff_parser", "cmd_sniff"]
