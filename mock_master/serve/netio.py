"""The IO of one mock-master client connection, below the protocol: the socket and TLS, the
compressed protocol after a CLIENT_COMPRESS login, writes and their back-pressure, and whole
client packets read with the server's max_allowed_packet limit (:class:`ClientIO`, the base of
:class:`mock_master.serve.connection.Connection`)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import NoReturn

from binlogscope.session import Session
from binlogscope.wire.framing import MAX_PAYLOAD, encode_packet
from binlogscope.wire.handshake import ErrPacket
from binlogscope.wire.responses import encode_err
from mock_master.runlog import ClientLog, Closed
from mock_master.serve.compression import BadFrameError, Compression, FrameTooLargeError
from mock_master.serve.host import ConnectionServer

ER_NET_PACKET_TOO_LARGE = 1153
_TOO_LARGE = "Got a packet bigger than 'max_allowed_packet' bytes"


class ClientIO:
    """The bytes of one client connection (the attributes are set by the connection)."""

    m: ConnectionServer
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    log: ClientLog
    session: Session
    buf: bytearray
    tls: ssl.SSLObject | None
    _tls_in: ssl.MemoryBIO | None
    _tls_out: ssl.MemoryBIO | None
    #: the compressed protocol, after a login with CLIENT_COMPRESS
    zip: Compression | None
    closed: bool
    #: a dump is running (an ERR must not land inside its event stream)
    streaming: bool
    _draining: bool
    _reader_task: asyncio.Task[None] | None

    async def _recv(self) -> bytes:
        """The client's next plain bytes (decrypted, and inflated after a CLIENT_COMPRESS
        login)."""
        z = self.zip
        if z is None:
            return await self._recv_wire()
        while True:
            try:
                got = z.take()
            except FrameTooLargeError as exc:
                self._too_large(exc.seq, exc.size, z.limit)
            except BadFrameError as exc:
                self.log.violations.append(str(exc))
                raise Closed(str(exc)) from None
            if got:
                return got
            if got is None:
                data = await self._recv_wire()
                if not data:
                    return b""
                z.feed(data)

    async def _recv_wire(self) -> bytes:
        if self.tls is None:
            return await self.reader.read(65536)
        assert self._tls_in is not None
        while True:
            try:
                return self.tls.read(65536)
            except ssl.SSLWantReadError:
                self._tls_flush()
                data = await self.reader.read(65536)
                if not data:
                    return b""
                self._tls_in.write(data)
            except ssl.SSLZeroReturnError:
                return b""

    def _tls_flush(self) -> None:
        assert self._tls_out is not None
        out = self._tls_out.read()
        if out:
            self.writer.write(out)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self.closed:
            raise Closed("closed")
        if self.zip is not None:
            data = self.zip.wrap(data)
        if self.tls is not None:
            self.tls.write(data)
            self._tls_flush()
        else:
            self.writer.write(data)
        self.log.bytes_sent += len(data)

    async def drain(self) -> None:
        self._draining = True
        try:
            await self.writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            if self.log.closed_by is None:
                self.log.closed_by = f"client ({exc})" if str(exc) else "client"
            raise Closed(str(exc)) from None
        finally:
            self._draining = False

    def close(self, why: str) -> None:
        if self.log.closed_by is None:
            self.log.closed_by = why
        self.closed = True
        with contextlib.suppress(Exception):
            self.writer.close()
        if self._reader_task is not None:
            self._reader_task.cancel()

    async def _read_frames(self) -> bytes:
        """The bytes of the next whole logical packet (all its 16 MiB fragments).

        As the server's net layer: a packet whose payload (with the fragments before it)
        reaches ``max_allowed_packet`` is refused when its header arrives, before its body is
        read: ERR 1153 (SQLSTATE 08S01, the sequence id after the header's) and the connection
        closes, before and after login alike; so no client makes the server buffer more."""
        pos = 0
        limit = int(self.m.limit("max_allowed_packet"))
        while True:
            while len(self.buf) < pos + 4:
                data = await self._recv()
                if not data:
                    raise Closed("the client closed the connection")
                self.buf += data
            n = int.from_bytes(self.buf[pos:pos + 3], "little")
            before = pos - 4 * (pos // (MAX_PAYLOAD + 4))  # payload of the fragments before
            if limit > 0 and before + n >= limit:
                self._too_large(self.buf[pos + 3], before + n, limit)
            while len(self.buf) < pos + 4 + n:
                data = await self._recv()
                if not data:
                    raise Closed("the client closed the connection mid-packet")
                self.buf += data
            pos += 4 + n
            if n < MAX_PAYLOAD:
                out = bytes(self.buf[:pos])
                del self.buf[:pos]
                return out

    def _too_large(self, seq: int, size: int, limit: int) -> NoReturn:
        self.log.errors.append(f"ERR {ER_NET_PACKET_TOO_LARGE}: {_TOO_LARGE} (a packet of "
                               f"{size} bytes or more, max_allowed_packet {limit})")
        if not self.streaming:  # in a dump an ERR would land inside the event stream
            with contextlib.suppress(Exception):
                self.write(encode_packet(encode_err(ErrPacket(
                    ER_NET_PACKET_TOO_LARGE, _TOO_LARGE, "08S01")), seq + 1))
        self.buf.clear()
        self.close(f"server (ERR {ER_NET_PACKET_TOO_LARGE}: a packet of {size} bytes or more, "
                   f"max_allowed_packet {limit})")
        raise Closed("packet bigger than max_allowed_packet")

    async def _start_tls(self) -> None:
        assert self.m.ssl_context is not None
        self._tls_in, self._tls_out = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = self.m.ssl_context.wrap_bio(self._tls_in, self._tls_out, server_side=True)
        if self.buf:  # TLS bytes that arrived with the SSLRequest
            self._tls_in.write(bytes(self.buf))
            self.buf.clear()
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                out = self._tls_out.read()
                if out:
                    self.writer.write(out)
                    await self.drain()
                data = await self.reader.read(65536)
                if not data:
                    raise Closed("the client closed the connection during TLS") from None
                self._tls_in.write(data)
        out = self._tls_out.read()
        if out:
            self.writer.write(out)
        self.tls = tls
        self.log.tls = True
        self.session.tls_established()

