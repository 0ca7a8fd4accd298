"""Cross-links between rows, as Wireshark's "[Response in frame N]": an event that asks for a
semi-sync ACK -> the replica's ACK (and the latency), an ACK -> the event it acknowledges, a rows
event -> the TABLE_MAP that describes its table, a TABLE_MAP -> the first rows event using it.

Rows are matched within the same flow (connection; files have one): an ACK names the binlog
position the event ends at (its log_pos), a rows event's TABLE_MAP is the nearest one before it
for the same table. The search looks :data:`SCAN` rows either way (a link further away is
reported as not found nearby, never guessed).
"""

from __future__ import annotations

from dataclasses import dataclass

from binlogscope.inspector.source import Row, RowSource

#: rows looked at before or after the selected one
SCAN = 20_000
_ROWS_KINDS = ("write", "update", "delete")


@dataclass(frozen=True, slots=True)
class Link:
    text: str  # what the link is, for the user: "ACK in row 57 after 0.412 ms"
    row: int | None  # the row it leads to (None: nothing found nearby)
    latency: float | None = None  # seconds between the two rows (ACK links)


def _ack_pos(row: Row) -> int | None:
    semi = row.semi_sync or ""
    if not semi.startswith("ACK"):
        return None
    _, _, pos = semi.partition(" ")
    return int(pos) if pos.isdigit() else None


def _ms(a: Row, b: Row) -> tuple[str, float | None]:
    if a.time is None or b.time is None:
        return "", None
    lat = b.time - a.time
    return f" after {lat * 1000:.3f} ms", lat


def links(source: RowSource, index: int) -> list[Link]:
    """The links of row ``index`` (empty: it has none)."""
    row = source.row(index)
    n = len(source)
    out: list[Link] = []
    semi = row.semi_sync or ""
    if semi == "ef ACK?" and row.log_pos:
        for j in range(index + 1, min(n, index + 1 + SCAN)):
            r = source.row(j)
            if r.flow == row.flow and _ack_pos(r) == row.log_pos:
                text, lat = _ms(row, r)
                out.append(Link(f"acknowledged by the ACK in row {r.number}{text}", j, lat))
                break
        else:
            out.append(Link(f"asks for an ACK: none for position {row.log_pos} in the next "
                            f"{min(SCAN, n - index - 1):,} rows (yet)", None))
    pos = _ack_pos(row)
    if pos is not None:
        for j in range(index - 1, max(-1, index - 1 - SCAN), -1):
            r = source.row(j)
            if r.flow == row.flow and r.log_pos == pos and r.direction != row.direction:
                text, lat = _ms(r, row)
                out.append(Link(f"acknowledges row {r.number} ({r.event_type}, log_pos {pos})"
                                f"{text}", j, lat))
                break
        else:
            out.append(Link(f"acknowledges position {pos}: its event is not in the "
                            f"{min(SCAN, index):,} rows before", None))
    if row.kind in _ROWS_KINDS and row.table:
        for j in range(index - 1, max(-1, index - 1 - SCAN), -1):
            r = source.row(j)
            if r.flow == row.flow and r.event_type == "TABLE_MAP_EVENT" and r.table == row.table:
                out.append(Link(f"its TABLE_MAP ({row.table}) is row {r.number}", j))
                break
        else:
            out.append(Link(f"no TABLE_MAP for {row.table} in the rows before (the table map "
                            "came before this file or capture started?)", None))
    if row.event_type == "TABLE_MAP_EVENT" and row.table:
        for j in range(index + 1, min(n, index + 1 + SCAN)):
            r = source.row(j)
            if r.flow != row.flow:
                continue
            if r.kind in _ROWS_KINDS and r.table == row.table:
                out.append(Link(f"first used by row {r.number} ({r.event_type})", j))
                break
            if r.kind == "commit":
                break
    return out


__all__ = ["SCAN", "Link", "links"]
