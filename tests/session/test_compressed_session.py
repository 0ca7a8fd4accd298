"""The session over the compressed protocol, zstd (MySQL 8.0.18+'s
CLIENT_ZSTD_COMPRESSION_ALGORITHM) and zlib: a REPLICA and a SOURCE session talk through
compressed frames from the login's OK on, an OBSERVER decodes the same packets, every frame is
a CompressedFrame event before the packets it carried, and the packets' sequence ids follow
the frames' as in MySQL's net layer (net_serv.cc: reading a frame sets the packet counter)."""

from __future__ import annotations

import pytest
import zstandard

from binlogscope.session.events import (
    CompressedFrame,
    DecodeError,
    PacketDecoded,
    Peer,
    Phase,
    SequenceMismatch,
)
from binlogscope.wire import commands as cm
from binlogscope.wire import handshake as hs
from binlogscope.wire.compressed import FRAME_HEADER_LEN
from binlogscope.wire.constants import CapabilityFlag as C
from tests.session.test_session import CLIENT_CAPS, SERVER_CAPS, ConnectionPair


@pytest.mark.parametrize("flag", [C.CLIENT_ZSTD_COMPRESSION_ALGORITHM, C.CLIENT_COMPRESS])
def test_a_compressed_conversation(flag: C) -> None:
    algorithm = "zstd" if flag is C.CLIENT_ZSTD_COMPRESSION_ALGORITHM else "zlib"
    pair = ConnectionPair()
    server = int(SERVER_CAPS | C.CLIENT_COMPRESS | C.CLIENT_ZSTD_COMPRESSION_ALGORITHM)
    client = int(CLIENT_CAPS | flag)
    pair.send("source", hs.HandshakeV10("8.0.45", 12, b"abcdefghij0123456789", server,
                                        auth_plugin_name="mysql_native_password"))
    resp = hs.HandshakeResponse41(client, "repl", b"\x01" * 20,
                                  client_plugin_name="mysql_native_password",
                                  zstd_compression_level=7 if algorithm == "zstd" else None)
    (p,) = pair.send("replica", resp)
    assert p.value.zstd_compression_level == (7 if algorithm == "zstd" else None)
    pair.send("source", hs.OkPacket())
    for s in (pair.replica, pair.source, pair.observer):
        assert s.phase == Phase.COMMAND and s.state.compression == algorithm
    pair.replica.compression_level = 7
    query = cm.ComQuery("SELECT '" + "x" * 300 + "'")
    wire = pair.replica.send(query)
    # one frame, compressed id 0 (a command), the query inside
    assert wire[3] == 0 and int.from_bytes(wire[4:7], "little") == 4 + 1 + len(query.query)
    if algorithm == "zstd":
        assert zstandard.ZstdDecompressor().decompress(wire[FRAME_HEADER_LEN:])[5:] == \
            query.query.encode()
    pair.source.receive_data(wire, Peer.CLIENT)
    pair.observer.receive_data(wire, Peer.CLIENT)
    for s in (pair.source, pair.observer):
        evs = list(s.events())
        assert [type(e).__name__ for e in evs] == ["CompressedFrame", "PacketDecoded"]
        f = evs[0]
        assert isinstance(f, CompressedFrame) and f.frame.algorithm == algorithm
        pk = evs[1]
        assert isinstance(pk, PacketDecoded) and pk.value == query and pk.seq == 0
    ok = pair.source.send(hs.OkPacket(affected_rows=3))
    assert ok[3] == 1 and ok[4:7] == b"\0\0\0"  # reply frame id 1, stored (short)
    assert ok[FRAME_HEADER_LEN + 3] == 1  # the packet inside goes on from the frame's id
    pair.replica.receive_data(ok, Peer.SERVER)
    pair.observer.receive_data(ok, Peer.SERVER)
    for s in (pair.replica, pair.observer):
        evs = list(s.events())
        assert not [e for e in evs if isinstance(e, DecodeError | SequenceMismatch)]
        got = [e for e in evs if isinstance(e, PacketDecoded) and e.direction is Peer.SERVER]
        assert [(e.kind, e.value.affected_rows) for e in got] == [("ok", 3)]
    pair.check_clean()
