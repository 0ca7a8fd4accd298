"""A bounded event store with put/get/ack cursors (Canal's ring buffer).

Invariant: ``ack <= get <= put``. ``put`` blocks while the ring is full (``put - ack == size``):
a slow consumer holds the reader back instead of growing memory. ``get`` hands out items in order;
``ack(n)`` releases everything up to cursor ``n``, which is when the position of the acked item may
be persisted (the restart point). Thread-safe; items are opaque to the store.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


class StoreClosed(Exception):  # noqa: N818  (a state, not an error)
    """The store was closed while a caller waited."""


@dataclass(frozen=True, slots=True)
class Cursors:
    put: int
    get: int
    ack: int
    size: int

    @property
    def fill(self) -> int:
        """Items held: put but not yet acked."""
        return self.put - self.ack


class EventStore(Generic[T]):
    def __init__(self, size: int = 4096) -> None:
        if size < 1:
            raise ValueError("store size must be at least 1")
        self._size = size
        self._ring: list[T | None] = [None] * size
        self._put = 0
        self._get = 0
        self._ack = 0
        self._closed = False
        self._cond = threading.Condition()

    @property
    def cursors(self) -> Cursors:
        with self._cond:
            return Cursors(self._put, self._get, self._ack, self._size)

    def put(self, item: T, timeout: float | None = None) -> bool:
        """Add an item; waits while full. Returns False on timeout; raises if closed."""
        with self._cond:
            ok = self._cond.wait_for(
                lambda: self._closed or self._put - self._ack < self._size, timeout)
            if self._closed:
                raise StoreClosed("store closed")
            if not ok:
                return False
            self._ring[self._put % self._size] = item
            self._put += 1
            self._cond.notify_all()
            return True

    def put_many(self, items: list[T], timeout: float | None = None, *,
                 wake: bool = True) -> int:
        """Add items in order, as many as fit (waits while full); returns how many were added
        (0 on timeout). One lock round-trip for a whole batch: the fetcher's fast path.

        ``wake=False`` stores the items (a ``get`` sees them at once) without waking a waiting
        consumer yet: the caller has something urgent to do first (a semi-sync ACK) and calls
        :meth:`wake` right after. A consumer left asleep meanwhile still wakes at its own
        ``get`` timeout, so forgetting :meth:`wake` delays, never deadlocks."""
        with self._cond:
            if self._closed:
                raise StoreClosed("store closed")
            if self._put - self._ack >= self._size:
                ok = self._cond.wait_for(
                    lambda: self._closed or self._put - self._ack < self._size, timeout)
                if self._closed:
                    raise StoreClosed("store closed")
                if not ok:
                    return 0
            n = min(len(items), self._size - (self._put - self._ack))
            size, ring, put = self._size, self._ring, self._put
            for i in range(n):
                ring[(put + i) % size] = items[i]
            self._put = put + n
            if wake:
                self._cond.notify_all()
            return n

    def wake(self) -> None:
        """Wake the waiting consumers (after ``put_many(..., wake=False)``)."""
        with self._cond:
            self._cond.notify_all()

    def get_many(self, limit: int, timeout: float | None = None) -> list[tuple[int, T]]:
        """Up to ``limit`` unread items with their cursors ([] on timeout or closed+drained)."""
        with self._cond:
            ok = self._cond.wait_for(lambda: self._closed or self._get < self._put, timeout)
            if not ok or self._get >= self._put:
                return []
            start = self._get
            n = min(limit, self._put - start)
            size, ring = self._size, self._ring
            out = [(c, ring[c % size]) for c in range(start, start + n)]
            self._get = start + n
            self._cond.notify_all()
            return out  # type: ignore[return-value]

    def get(self, timeout: float | None = None) -> tuple[int, T] | None:
        """The next unread item and its cursor (``ack(cursor)`` releases it); None on timeout or
        when closed and drained."""
        with self._cond:
            ok = self._cond.wait_for(lambda: self._closed or self._get < self._put, timeout)
            if not ok or self._get >= self._put:
                return None
            cursor = self._get
            item = self._ring[cursor % self._size]
            self._get += 1
            self._cond.notify_all()
            assert item is not None
            return cursor, item

    def ack(self, cursor: int) -> None:
        """Release every item up to and including ``cursor``."""
        with self._cond:
            if cursor >= self._get:
                raise ValueError(f"ack {cursor} beyond get cursor {self._get}")
            new = cursor + 1
            if new <= self._ack:
                return
            for i in range(self._ack, new):
                self._ring[i % self._size] = None
            self._ack = new
            self._cond.notify_all()

    def rollback(self) -> None:
        """Hand the got-but-unacked items out again (a consumer failed mid-batch)."""
        with self._cond:
            self._get = self._ack
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
