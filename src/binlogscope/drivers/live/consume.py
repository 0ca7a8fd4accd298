"""The consumer side of :func:`~binlogscope.drivers.live.replica.run_live`: the store's
batches handed to the consumer and acked (:func:`run_plain`), or acked with the consumer's
output committed at transaction boundaries (:func:`run_committed`, ``--state``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.items import LiveSettings, counted_event
from binlogscope.drivers.live.states import StateWatch

#: the replica (drivers/live/replica.py LiveReplica: not imported, it imports this module)
LiveReplica = Any

Commit = Callable[[], "int | None"]


def run_plain(rep: LiveReplica, settings: LiveSettings, consume: Callable[[SourceItem], None],
         count: int | None, should_stop: Callable[[], bool] | None = None,
         quiet: Callable[[], None] | None = None,
         states: StateWatch | None = None) -> LiveReplica:
    """``states``: the state changes each consumed item brings, consumed after it."""
    rep.start()
    after = states.after if states is not None else None
    delivered = 0
    # acked a batch at a time (one ack per store batch instead of one per item), unless the
    # state file is to be written after every item (--state-interval 0)
    per_item = bool(settings.state_path) and settings.state_interval <= 0
    try:
        for batch in rep.batches(idle=quiet):
            last: int | None = None
            placed: SourceItem | None = None  # the last consumed item with a position
            done = False
            try:
                for cursor, item in batch:
                    if should_stop is not None and should_stop():
                        done = True
                        break
                    if item.deliver:
                        consume(item)
                        if after is not None:
                            for h in after(item):
                                consume(h)
                    if per_item:
                        rep.ack(cursor, item)
                    else:
                        last = cursor
                        if item.at is not None:
                            placed = item
                    if count is not None and item.deliver and counted_event(item):
                        delivered += 1
                        if delivered >= count:
                            done = True
                            break
            finally:  # what was consumed is acked, also when consume() raised
                if last is not None:
                    if placed is None:
                        rep.ack_upto(last, None)
                    else:
                        rep.ack_upto(last, placed.at, placed.skip)
            if done:
                break
            if should_stop is not None and should_stop():
                break
    finally:
        rep.stop()
        rep.join(5)
        rep.save_state()
        if rep.recorder is not None:
            rep.recorder.close()
    return rep


def run_committed(rep: LiveReplica, settings: LiveSettings,
                   consume: Callable[[SourceItem], None], count: int | None, commit: Commit,
                   should_stop: Callable[[], bool] | None,
                   quiet: Callable[[], None] | None = None,
                   states: StateWatch | None = None) -> LiveReplica:
    """:func:`~.replica.run_live` with ``commit``: see there (``states``: as
    :func:`run_plain`'s)."""
    after = states.after if states is not None else None
    rep.auto_save = False
    each_txn = settings.commit_each_txn
    durable = not each_txn
    interval = settings.state_interval
    last_commit = time.monotonic()
    delivered = 0
    clean = False

    committed: tuple[str | None, int | None] = (None, None)
    dirty = False  # consumed since the last checkpoint

    def checkpoint() -> None:
        nonlocal committed, dirty
        length = commit()
        rep.save_state(length, durable=durable)
        dirty = False
        ap = rep.acked_pos
        if ap is not None:
            committed = (ap.log_file, ap.log_pos)

    def idle() -> None:  # the stream paused: commit what came before (exactly, as at the end)
        nonlocal last_commit
        if quiet is not None:
            quiet()
        if dirty:
            checkpoint()
            last_commit = time.monotonic()

    rep.start()
    try:
        for batch in rep.batches(idle=idle):
            done = False
            for cursor, item in batch:
                if should_stop is not None and should_stop():
                    done = True
                    break
                dirty = True
                if item.deliver:
                    consume(item)
                    if after is not None:
                        for h in after(item):
                            consume(h)
                r = item.at
                if r is None:
                    rep.ack_upto(cursor, None)
                else:
                    rep.ack_upto(cursor, r, item.skip)
                    if item.skip == 0 and (r.log_file, r.log_pos) != committed:  # a boundary
                        now = time.monotonic() if not each_txn else 0.0
                        if each_txn or now - last_commit >= interval:
                            checkpoint()
                            last_commit = now
                if count is not None and item.deliver and counted_event(item):
                    delivered += 1
                    if delivered >= count:
                        done = True
                        break
            if done or (should_stop is not None and should_stop()):
                break
        clean = True
    finally:
        rep.stop()
        rep.join(5)
        try:
            if clean:  # the exact position of the last consumed item (skip inside a txn)
                checkpoint()
        finally:
            if rep.recorder is not None:
                rep.recorder.close()
    return rep


__all__ = ["Commit", "run_committed", "run_plain"]
