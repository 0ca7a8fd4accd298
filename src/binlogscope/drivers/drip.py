"""``slow_drip``'s pacing, one clock for the proxy's fault relay and the mock master.

Bytes leave in pieces of a tenth of a second's worth at most, and a piece leaves only once the
bytes before it have had their time at the rate: so the stream is never faster than the rate,
and a small write (one event) is not held a whole tenth of a second as it would be by sleeping
a fixed step after each piece. Idle time earns no credit (the clock restarts from now).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class Drip:
    """The pacing clock of one connection's slow drip."""

    def __init__(self) -> None:
        self._next = 0.0  # (monotonic) when the next piece may leave

    async def send(self, data: bytes, rate: float, write: Callable[[bytes], object],
                   drain: Callable[[], Awaitable[None]]) -> None:
        """Write ``data`` through ``write``/``drain`` at no more than ``rate`` bytes a second."""
        step = max(1, int(rate / 10))
        for i in range(0, len(data), step):
            piece = data[i:i + step]
            wait = self._next - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            write(piece)
            await drain()
            self._next = max(self._next, time.monotonic()) + len(piece) / rate


__all__ = ["Drip"]
