"""The session's packet size limit (session/oversize.py): a fragment chain over ``max_packet`` is
skipped as it comes - one DecodeError with its size, the next packet decoded - and a long chain
under the limit is joined once, whatever the read size (it was split again at every fragment:
10 s for a 100 MiB chain read 64 KiB at a time)."""

from __future__ import annotations

import time

import pytest

from binlogscope.session import Role, Session
from binlogscope.session.events import DecodeError, PacketDecoded, Peer, Phase
from binlogscope.wire.framing import MAX_PAYLOAD, encode_packet


def chain(total: int, first: bytes = b"\x03") -> list[bytes]:
    """The wire fragments of one packet of ``total`` payload bytes (a COM_QUERY)."""
    out, left, seq, head = [], total, 0, first
    while True:
        m = min(left, MAX_PAYLOAD)
        body = head + b"q" * (m - len(head))
        head = b""
        out.append(m.to_bytes(3, "little") + bytes([seq & 0xFF]) + body)
        seq += 1
        left -= m
        if m < MAX_PAYLOAD:
            return out


def run(frags: list[bytes], read: int, limit: int | None) -> list[object]:
    s = Session(Role.OBSERVER, start_phase=Phase.COMMAND, record=False)
    if limit is not None:
        s.max_packet = limit
    evs: list[object] = []
    wire = b"".join(frags) + encode_packet(b"\x0e", 0)  # then a COM_PING
    view = memoryview(wire)
    for i in range(0, len(wire), read):
        s.receive_data(view[i:i + read], Peer.CLIENT)
        evs.extend(s.events())
    return evs


@pytest.mark.parametrize("read", [1 << 16, 5_000_003, 1 << 26])
def test_a_chain_over_the_limit_is_skipped_with_its_size(read: int) -> None:
    total = 3 * MAX_PAYLOAD + 1000
    evs = run(chain(total), read, 20 << 20)
    errors = [e for e in evs if isinstance(e, DecodeError)]
    assert len(errors) == 1
    assert f"a packet of {total} bytes in 4 fragments" in errors[0].message
    assert "--max-packet-size" in errors[0].message
    assert errors[0].offset == 0
    packets = [e for e in evs if isinstance(e, PacketDecoded)]
    assert [p.payload_length for p in packets] == [1]  # the COM_PING after it
    assert packets[0].offset == total + 4 * 4


def test_a_single_fragment_over_a_small_limit() -> None:
    evs = run([encode_packet(b"\x03" + b"x" * 100_000, 0)], 4096, 64 << 10)
    errors = [e for e in evs if isinstance(e, DecodeError)]
    assert len(errors) == 1 and "a packet of 100001 bytes in 1 fragments" in errors[0].message
    assert [e.payload_length for e in evs if isinstance(e, PacketDecoded)] == [1]


def test_an_exact_multiple_ends_with_an_empty_fragment() -> None:
    total = 2 * MAX_PAYLOAD
    frags = chain(total)
    assert len(frags) == 3 and frags[-1][:3] == b"\0\0\0"
    evs = run(frags, 1 << 20, None)
    assert [e.payload_length for e in evs if isinstance(e, PacketDecoded)] == [total, 1]
    evs = run(frags, 1 << 20, MAX_PAYLOAD)
    errors = [e for e in evs if isinstance(e, DecodeError)]
    assert len(errors) == 1 and f"a packet of {total} bytes in 3 fragments" in errors[0].message
    assert [e.payload_length for e in evs if isinstance(e, PacketDecoded)] == [1]


def test_a_long_chain_under_the_limit_is_joined_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """~100 MiB read 64 KiB at a time: the buffered chain is taken out of the buffer (a copy
    of all of it) once, when whole - not at every fragment (6 times here: 10 s on main)."""
    from binlogscope.wire.framing import PacketBuffer

    taken: list[int] = []
    original = PacketBuffer.take_pending

    def counting(self: PacketBuffer) -> tuple[int, bytes]:
        off, data = original(self)
        taken.append(len(data))
        return off, data

    monkeypatch.setattr(PacketBuffer, "take_pending", counting)
    total = 6 * MAX_PAYLOAD + 7
    t0 = time.perf_counter()
    evs = run(chain(total), 1 << 16, None)
    took = time.perf_counter() - t0
    assert [e.payload_length for e in evs if isinstance(e, PacketDecoded)] == [total, 1]
    assert len([n for n in taken if n > MAX_PAYLOAD]) == 1, taken
    assert took < 60, took  # (1.5 s on an idle machine)


def test_closed_inside_a_skipped_packet() -> None:
    s = Session(Role.OBSERVER, start_phase=Phase.COMMAND, record=False)
    s.max_packet = 1 << 20
    s.receive_data(chain(2 * MAX_PAYLOAD)[0][:3 << 20], Peer.CLIENT)
    s.receive_data(b"", Peer.CLIENT)
    errors = [e for e in s.events() if isinstance(e, DecodeError)]
    assert len(errors) == 1 and "at least" in errors[0].message


@pytest.mark.parametrize("whole", [True, False], ids=["one-read", "cut"])
def test_a_packet_ending_at_the_end_of_a_read_ends_there(whole: bool) -> None:
    """A packet over the limit whose last byte is the last byte read: its error comes at
    once, not when that direction next sends something - before, the server's answer to it
    came first and got a false sequence mismatch (the client's sequence ids not reset yet),
    and a connection that closed then was said to have ended inside it."""
    from binlogscope.session.events import SequenceMismatch

    s = Session(Role.OBSERVER, start_phase=Phase.COMMAND, record=False)
    s.max_packet = 4096
    query = encode_packet(b"\x03" + b"x" * 20_000, 0)
    evs: list[object] = []
    for part in ([query] if whole else [query[:5000], query[5000:]]):
        s.receive_data(part, Peer.CLIENT)
        evs.extend(s.events())
    errors = [e for e in evs if isinstance(e, DecodeError)]
    assert len(errors) == 1 and "a packet of 20001 bytes in 1 fragments" in errors[0].message
    s.receive_data(encode_packet(b"\x00\x00\x00\x02\x00\x00\x00", 1), Peer.SERVER)  # its OK
    s.receive_data(b"", Peer.CLIENT)
    rest = list(s.events())
    assert not [e for e in rest if isinstance(e, (SequenceMismatch, DecodeError))], rest
    assert [e.kind for e in rest if isinstance(e, PacketDecoded)] == ["ok"]
