"""A :class:`Finding` as text lines and as its ``--json`` shape (the event inside it has the
shape every command gives a binlog event: :func:`binlogscope.render.shapes.binlog_event_json`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from binlogscope.diagnose.explain import Finding, Step, checksum_text
from binlogscope.diagnose.patterns import Clue
from binlogscope.render.shapes import binlog_event_json
from binlogscope.render.text import event_line, render_node
from binlogscope.wire.binlog.control_events import FormatDescriptionEvent, StartEventV3
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.table_map import TableMapEvent


def clue_json(c: Clue) -> dict[str, Any]:
    return {"pattern": c.pattern, "client": c.client, "meaning": c.meaning,
            "binlog_file": c.binlog_file, "position": c.position,
            "position_kind": c.position_kind, "gtid": c.gtid, "error_code": c.error_code,
            "event_type": c.event_type, "table": c.table, "server_id": c.server_id,
            "event_size": c.event_size, "timestamp": c.timestamp, "extra": c.extra or None,
            "text": c.text}


def _step_json(s: Step) -> dict[str, Any]:
    return {"offset": s.offset, "end": s.end, "event_type": s.type_name, "gtid": s.gtid,
            "line": s.line}


def _fde_json(f: Finding) -> dict[str, Any] | None:
    ev = f.fde
    if ev is None:
        return None
    body = ev.body
    fde = body if isinstance(body, FormatDescriptionEvent | StartEventV3) else None
    return {"offset": ev.file_pos, "origin": f.fde_origin,
            "server_version": fde.server_version if fde is not None else None,
            "binlog_version": fde.binlog_version if fde is not None else None,
            "checksum": checksum_text(ev)}


def finding_json(f: Finding) -> dict[str, Any]:
    ev = f.found
    tm = f.table_map
    return {
        "clue": clue_json(f.clue),
        "source": f.source,
        "looked_for": f.looked_for,
        "found": binlog_event_json(ev, f.origin) if ev is not None else None,
        "agrees": f.agrees,
        "transaction": [_step_json(s) for s in f.transaction],
        "table_map": binlog_event_json(tm, None) | {"columns": _columns(tm)}
        if tm is not None else None,
        "format_description": _fde_json(f),
        "unusual": f.unusual,
        "answer": f.answer,
        "near": [_step_json(s) for s in f.near],
    }


def _columns(tm: DecodedEvent) -> list[dict[str, Any]]:
    from binlogscope.wire.binlog.types import column_type_name

    body = tm.body
    out = []
    for c in body.columns if isinstance(body, TableMapEvent) else []:
        out.append({"index": c.index, "name": c.name, "type": column_type_name(c.type),
                    "meta": c.meta, "nullable": c.nullable, "unsigned": c.unsigned})
    return out


def _at(s: Step) -> str:
    return f"{s.offset if s.offset is not None else '?':>10}..{s.end if s.end else '?':<10}"


def clue_lines(c: Clue) -> Iterator[str]:
    yield f"recognised: {c.pattern} - {c.client}"
    yield f"  means: {c.meaning}"
    if c.error_code is not None:
        yield f"  error code: {c.error_code}"
    if c.position is not None:
        kind = ("END position (the event's log_pos: it ends here; it starts earlier)"
                if c.position_kind == "end" else "START position (an event boundary)")
        yield f"  position: {c.binlog_file or '(no file named)'}:{c.position} - {kind}"
    if c.gtid:
        yield f"  GTID: {c.gtid}"
    for k, v in (c.extra or {}).items():
        yield f"  {k.replace('_', ' ')}: {v}"


def finding_lines(f: Finding, *, tree: bool = True) -> Iterator[str]:
    yield from clue_lines(f.clue)
    yield f"looked for: {f.looked_for} in {f.source}"
    ev = f.found
    if ev is None:
        yield "not found."
        for a in f.answer:
            yield f"  {a}"
        for s in f.near:
            yield f"  near: {_at(s)} {s.line}"
        for u in f.unusual:
            yield f"  unusual: {u}"
        return
    h = ev.header
    start = ev.file_pos
    end = start + h.event_size if start is not None and h is not None else None
    yield (f"found: {ev.binlog_file or '?'} {start}..{end} {event_line(ev)}  "
           f"[{f.origin}]")
    for a in f.answer:
        yield f"  {a}"
    if f.agrees:
        yield f"  {f.agrees}"
    if f.transaction:
        gtid = next((s.gtid for s in f.transaction if s.gtid), None)
        yield f"its transaction ({gtid or 'no GTID'}; {len(f.transaction)} events):"
        for s in f.transaction:
            mark = ">" if s.offset == start and s.type_name == ev.type_name else " "
            yield f"  {mark} {_at(s)} {s.line}"
    tm = f.table_map
    if tm is not None:
        body = tm.body
        cols = ", ".join(_col_text(c) for c in _columns(tm))
        names = (f"{body.table_id} = {body.schema}.{body.table}"
                 if isinstance(body, TableMapEvent) else "? = ?.?")
        yield (f"its TABLE_MAP: {tm.binlog_file or '?'}:{tm.file_pos} table_id {names} "
               f"({cols})")
    fde = _fde_json(f)
    if fde is not None:
        yield (f"in force: FORMAT_DESCRIPTION at {fde['offset']} ({fde['origin']}): "
               f"{fde['server_version']}, binlog v{fde['binlog_version']}, checksum "
               f"{fde['checksum']}")
    else:
        yield "in force: no FORMAT_DESCRIPTION seen before it"
    if f.unusual:
        yield "unusual:"
        for u in f.unusual:
            yield f"  - {u}"
    else:
        yield "unusual: nothing (type, flags, checksum, size and metadata are ordinary)"
    if tree and f.tree is not None:
        yield "the event, byte by byte:"
        raw = ev.raw
        base = f.tree.offset
        for line in render_node(f.tree, raw, base=base, explain=True):
            yield "  " + line


def _col_text(c: dict[str, Any]) -> str:
    name = c["name"] or f"@{c['index'] + 1}"
    t = str(c["type"]).removeprefix("MYSQL_TYPE_")
    return f"{name} {t}{' UNSIGNED' if c['unsigned'] else ''}{'' if c['nullable'] else ' NOT NULL'}"


__all__ = ["clue_json", "clue_lines", "finding_json", "finding_lines"]
