"""The replica's restart point, persisted atomically (``--state FILE``).

Holds the position of the last event a consumer acked (binlog file, position, GTID set), the
replica's stable ``slave_uuid`` and, for ``live --out FILE``, the length of the output that goes
with that position (``out_length``: a restart cuts the output back to it). Written to a
temporary file in the same directory, fsynced, renamed over the old one and the directory
fsynced, so a crash (even of the machine) leaves either the old or the new state, never half of
one.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from binlogscope.wire.gtid_sets import parse_gtid_set

_U32 = 2**32 - 1


class StateFileError(ValueError):
    """A ``--state`` file that exists but cannot be used (the message names file and problem)."""


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return "number"


#: a MariaDB GTID list: domain-server-sequence, comma-separated
_MARIADB_GTIDS = re.compile(r"\s*\d+-\d+-\d+(\s*,\s*\d+-\d+-\d+)*\s*")


def _gtid_set_problem(value: str) -> str | None:
    """Why ``value`` is neither a MariaDB GTID list nor a MySQL GTID set (None: it is one)."""
    if _MARIADB_GTIDS.fullmatch(value):
        return None
    try:
        parse_gtid_set(value)
    except ValueError as exc:
        return (f"'gtid_set' is neither a MariaDB GTID list (0-1-100,...) nor a MySQL GTID "
                f"set (uuid:1-5,...): {exc}")
    return None


def _field_problem(name: str, value: object) -> str | None:
    """Why ``value`` cannot be the state field ``name`` (None when it can)."""
    if name in ("log_file", "gtid_set"):
        if value is None:
            return None
        if not (isinstance(value, str) and value):
            return f"'{name}' must be a non-empty string, not {json.dumps(value)[:60]}"
        if name == "gtid_set":
            return _gtid_set_problem(value)
        return None
    if name == "slave_uuid":
        if isinstance(value, str) and value:
            return None
        return f"'slave_uuid' must be a non-empty string, not {json.dumps(value)[:60]}"
    # the integer fields: log_pos and server_id are 4-byte fields on the wire
    if value is None and name != "skip":
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        return f"'{name}' must be an integer, not {json.dumps(value)[:60]}"
    if value < 0:
        return f"'{name}' must not be negative ({value})"
    if name in ("log_pos", "server_id") and value > _U32:
        return f"'{name}' {value} is over {_U32} (the largest 4-byte value)"
    return None


@dataclass(slots=True)
class ReplicaState:
    log_file: str | None = None
    log_pos: int | None = None
    #: events after log_pos (inside the transaction that starts there) already delivered
    skip: int = 0
    gtid_set: str | None = None
    slave_uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    server_id: int | None = None
    #: bytes of the ``--out`` file that hold exactly the events up to this position
    out_length: int | None = None

    @classmethod
    def load(cls, path: str | Path) -> ReplicaState:
        """The state kept in ``path`` (a fresh one when the file does not exist yet).

        Anything else that is not a state this module wrote raises :class:`StateFileError`
        naming the file and the problem, so a replica never starts from a wrong position."""
        p = Path(path)
        if p.is_dir():
            raise StateFileError(f"state file {p} is a directory")
        if not p.exists():
            return cls()
        try:
            data = json.loads(p.read_bytes().decode("utf-8"))
        except (OSError, ValueError) as exc:
            raise StateFileError(f"state file {p} is unreadable: {exc}") from None
        except RecursionError:  # (json nests without bound: a state is one flat object)
            raise StateFileError(f"state file {p} is not a state: its JSON is nested too "
                                 "deeply") from None
        if not isinstance(data, dict):
            raise StateFileError(f"state file {p} must hold a JSON object, "
                                 f"not a JSON {_json_kind(data)}")
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        for name, value in known.items():
            problem = _field_problem(name, value)
            if problem:
                raise StateFileError(f"state file {p}: {problem}")
        if known.get("log_file") is not None and known.get("log_pos") is None:
            raise StateFileError(f"state file {p}: 'log_file' without 'log_pos'")
        if known.get("log_pos") is not None and known.get("log_file") is None:
            raise StateFileError(f"state file {p}: 'log_pos' without 'log_file'")
        if known.get("log_file") is None and known.get("gtid_set") is None \
                and known.get("out_length") is None:
            raise StateFileError(f"state file {p} holds no position "
                                 "(neither 'log_file'/'log_pos' nor 'gtid_set')")
        return cls(**known)

    def save(self, path: str | Path, *, durable: bool = True) -> None:
        """Replace ``path`` atomically (temporary file + rename). ``durable``: fsync the file
        before the rename and the directory after it, so the new state survives a crash of the
        machine too (without: only a crash of the process; the ``live`` stdout mode, which
        saves after every transaction)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=str(p.parent))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(asdict(self), f, indent=2, sort_keys=True)
                f.write("\n")
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
            os.replace(tmp, p)
            if durable:
                fsync_dir(p.parent)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


def fsync_dir(directory: str | Path) -> None:
    """fsync a directory (a rename in it is durable afterwards); a no-op where directories
    cannot be opened (Windows)."""
    try:
        fd = os.open(str(directory), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
