"""TCP reassembly of one direction: order, retransmissions, overlaps, holes, wrap-around."""

from __future__ import annotations

from binlogscope.drivers.capture.tcp_reassembly import Chunk, Gap, StreamReassembler, seq_diff


def data(out: list[Chunk | Gap]) -> bytes:
    return b"".join(c.data for c in out if isinstance(c, Chunk))


def test_in_order_after_syn() -> None:
    r = StreamReassembler()
    r.syn(1000)
    a = r.segment(1001, b"hello", 1, 0.5)
    b = r.segment(1006, b" world", 2, 0.6)
    assert [(c.offset, c.data, c.frame) for c in a + b if isinstance(c, Chunk)] == [
        (0, b"hello", 1), (5, b" world", 2)]
    assert not r.mid_stream and r.offset == 11


def test_out_of_order_is_held_then_delivered_in_order() -> None:
    r = StreamReassembler()
    r.syn(0)
    assert r.segment(6, b"world", 2, 0.0) == []
    assert r.holding == 5
    out = r.segment(1, b"hello", 3, 0.0)
    assert data(out) == b"helloworld"
    assert [c.frame for c in out if isinstance(c, Chunk)] == [3, 2]
    assert r.stats.out_of_order_segments == 1 and r.holding == 0


def test_retransmission_and_overlap_first_copy_wins() -> None:
    r = StreamReassembler()
    r.syn(0)
    r.segment(1, b"abcdef", 1, 0.0)
    assert r.segment(1, b"abcdef", 2, 0.0) == []  # full retransmission
    out = r.segment(4, b"DEFghi", 3, 0.0)  # overlaps 3 delivered bytes
    assert data(out) == b"ghi" and out[0].offset == 6
    assert r.stats.retransmitted_segments == 1 and r.stats.overlap_bytes == 9


def test_held_segments_that_overlap_each_other() -> None:
    r = StreamReassembler()
    r.syn(0)
    r.segment(5, b"efgh", 1, 0.0)
    r.segment(3, b"cdefg", 2, 0.0)
    out = r.segment(1, b"ab", 3, 0.0)
    assert data(out) == b"abcdefgh"


def test_hole_declared_lost_when_too_much_waits() -> None:
    r = StreamReassembler(max_pending=10)
    r.syn(0)
    r.segment(1, b"abc", 1, 0.0)
    assert r.segment(14, b"xxxxxx", 2, 0.0) == []  # 10 bytes missing before it
    out = r.segment(20, b"yyyyyy", 3, 0.0)
    gap = out[0]
    assert isinstance(gap, Gap) and (gap.offset, gap.length, gap.frame) == (3, 10, 3)
    assert data(out) == b"xxxxxxyyyyyy" and out[1].offset == 13
    assert r.stats.gaps == 1 and r.stats.lost_bytes == 10


def test_hole_declared_lost_when_the_peer_acks_past_it() -> None:
    r = StreamReassembler()
    r.syn(99)
    r.segment(100, b"ab", 1, 0.0)
    r.segment(110, b"zz", 2, 0.0)
    assert r.acked(105, 3, 0.0)[0] == Gap(2, 8, 3, 0.0, "the peer acknowledged data the "
                                          "capture does not have")
    assert r.acked(200, 4, 0.0) == []  # nothing held any more


def test_finish_flushes_holes() -> None:
    r = StreamReassembler()
    r.segment(50, b"a", 1, 0.0)
    r.segment(60, b"b", 2, 0.0)
    out = r.finish(9, 1.0)
    assert isinstance(out[0], Gap) and out[0].length == 9 and data(out) == b"b"
    assert r.mid_stream


def test_sequence_numbers_wrap() -> None:
    r = StreamReassembler()
    r.syn(0xFFFFFFFD)
    out = r.segment(0xFFFFFFFE, b"ab", 1, 0.0) + r.segment(0, b"cd", 2, 0.0)
    assert data(out) == b"abcd"
    assert seq_diff(1, 0xFFFFFFFF) == 2 and seq_diff(0xFFFFFFFF, 1) == -2
