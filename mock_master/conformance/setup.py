"""What a case serves and what a correct client does with it (:class:`Setup`), and the row
events a correct client reports (:class:`ExpectedRows`). Its own module: the observation of a
run (``observe.py``) and the case model (``model.py``, whose judges read observations) both
use it, and neither imports the other's dependants.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from binlogscope.wire.binlog.context import TableMap
from mock_master.scenario.scenarios import Scenario


class _Absent:
    """A column a row image does not hold (binlog_row_image=MINIMAL or NOBLOB)."""

    def __repr__(self) -> str:
        return "ABSENT"


#: in an expected row: the column is not in the image (a correct client reports it missing,
#: not as NULL: NULL is a value the image holds)
ABSENT: Any = _Absent()


@dataclass
class ExpectedRows:
    """One row event a correct client reports: ``kind`` insert/update/delete, the table
    (its columns give each value's type), and the rows as the value contract
    (docs/value-contract.md) has them: per row a tuple (insert/delete) or a (before, after) pair
    (update); :data:`ABSENT` for a column the image leaves out."""

    kind: str
    table: TableMap
    rows: list[Any]


@dataclass
class Setup:
    """What a case serves and what a correct client does with it."""

    scenario: Scenario
    #: where the client starts: the file and position ({file} {pos}); None: the first file at 4
    start: tuple[str, int] | None = None
    #: a GTID start ({gtid}); the case then needs NEEDS_GTID
    gtid: str | None = None
    #: the row events a correct client reports, in order (empty: the case has no value check)
    expected: list[ExpectedRows] = field(default_factory=list)
    #: seconds the client may take (it is stopped after that; a hang is judged by the case)
    timeout: float = 20.0
    #: the case wants the client configured to notice a dead link: a heartbeat every this
    #: many seconds and a read timeout of twice that ({heartbeat}; each preset's own flags)
    heartbeat: float | None = None
    #: a TLS case: "default" - the client keeps its own TLS setting (a preset that turns TLS
    #: off so the relay can read the stream does not); "required" - the client is told to
    #: insist on TLS; None - the preset's usual flags
    tls: str | None = None
    #: a GTID case for a client in MariaDB's GTID strict mode ({gtid_strict} ``1``; the
    #: replica preset sets gtid_strict_mode=ON, which announces @slave_gtid_strict_mode=1)
    gtid_strict: bool = False
    #: anything the judge needs that the build computed (GTIDs, positions, ...)
    facts: dict[str, Any] = field(default_factory=dict)
