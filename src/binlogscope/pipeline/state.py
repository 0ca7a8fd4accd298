"""The replica's restart point, persisted atomically (``--state FILE``).

Holds the position of the last event a consumer acked (binlog file, position, GTID set) and the
replica's stable ``slave_uuid``. Written to a temporary file in the same directory, fsynced, then
renamed over the old one, so a crash leaves either the old or the new state, never half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass(slots=True)
class ReplicaState:
    log_file: str | None = None
    log_pos: int | None = None
    #: events after log_pos (inside the transaction that starts there) already delivered
    skip: int = 0
    gtid_set: str | None = None
    slave_uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    server_id: int | None = None

    @classmethod
    def load(cls, path: str | Path) -> ReplicaState:
        p = Path(path)
        if not p.exists():
            return cls()
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"state file {p} is unreadable: {exc}") from None
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)

    def save(self, path: str | Path) -> None:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=str(p.parent))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(asdict(self), f, indent=2, sort_keys=True)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, p)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
