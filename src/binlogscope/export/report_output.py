"""The reports of ``binlogscope analyze`` as output: :class:`Report` (a small collected
aggregate), printed as a text table (:func:`format_report`), written as Parquet and CSV
(:func:`write_report`) and drawn as PNG charts with matplotlib (:func:`write_plots`).

Spark-free: :mod:`binlogscope.export.spark.analyze` computes the reports, this module shows them.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

#: a stretch without events longer than this (seconds) is a silence: the events-per-second chart
#: breaks its line there and shades it (the ``silences`` report lists them)
SILENCE_SECONDS = 10


@dataclass(slots=True)
class Report:
    name: str
    title: str
    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    note: str | None = None

    def as_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r, strict=True)) for r in self.rows]


# ----------------------------------------------------------------------------- output

def _cell(v: Any, width: int) -> str:
    if v is None:
        s = "NULL"
    elif isinstance(v, float):
        s = f"{v:.6g}"
    elif isinstance(v, _dt.datetime):
        s = v.isoformat(sep=" ")
    elif isinstance(v, bytes | bytearray):
        s = "0x" + bytes(v).hex()
    elif isinstance(v, dict | list):
        s = json.dumps(_plain(v), ensure_ascii=False)
    else:
        s = str(v)
    s = " ".join(s.split())
    return s if len(s) <= width else s[: width - 3] + "..."


def format_report(rep: Report, limit: int = 20, width: int = 60) -> list[str]:
    lines = [f"== {rep.title}"]
    if rep.note and not rep.rows:
        return [*lines, f"   {rep.note}", ""]
    if not rep.rows:
        return [*lines, "   (no rows)", ""]
    shown = [[_cell(v, width) for v in r] for r in rep.rows[:limit]]
    widths = [max([len(c)] + [len(r[i]) for r in shown]) for i, c in enumerate(rep.columns)]
    lines.append("  ".join(c.ljust(w) for c, w in zip(rep.columns, widths, strict=True)))
    lines.append("  ".join("-" * w for w in widths))
    for r in shown:
        lines.append("  ".join(c.rjust(w) if _numeric(c) else c.ljust(w)
                               for c, w in zip(r, widths, strict=True)))
    if len(rep.rows) > limit:
        lines.append(f"   ... {len(rep.rows) - limit} more rows (see the written report)")
    if rep.note:
        lines.append(f"   {rep.note}")
    lines.append("")
    return lines


def _numeric(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    if isinstance(v, bytes | bytearray):
        return "0x" + bytes(v).hex()
    if isinstance(v, _dt.datetime | _dt.date):
        return v.isoformat()
    if hasattr(v, "asDict"):
        return _plain(v.asDict())
    return v


def report_table(rep: Report) -> pa.Table:
    """The report as an Arrow table (nested values as JSON text so CSV can hold them)."""
    arrays: dict[str, pa.Array] = {}
    for i, col in enumerate(rep.columns):
        values = [r[i] for r in rep.rows]
        if any(isinstance(v, dict | list | tuple) or hasattr(v, "asDict") for v in values):
            values = [None if v is None else json.dumps(_plain(v), ensure_ascii=False)
                      for v in values]
        try:
            arrays[col] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays[col] = pa.array([None if v is None else str(v) for v in values])
    if not rep.columns:
        return pa.table({})
    return pa.table(arrays)


def write_report(rep: Report, out_dir: str | Path) -> list[Path]:
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = report_table(rep)
    pq_path = out / f"{rep.name}.parquet"
    csv_path = out / f"{rep.name}.csv"
    pq.write_table(table, pq_path)
    csv_table = table
    for i, fld in enumerate(table.schema):
        if pa.types.is_binary(fld.type):
            hexed = [None if v is None else "0x" + v.hex() for v in table.column(i).to_pylist()]
            csv_table = csv_table.set_column(i, fld.name, pa.array(hexed, pa.string()))
    pcsv.write_csv(csv_table, csv_path)
    written = [pq_path, csv_path]
    if rep.note and not rep.rows:
        note = out / f"{rep.name}.note.txt"
        note.write_text(rep.note + "\n", encoding="utf-8")
        written.append(note)
    return written


# ----------------------------------------------------------------------------- plots

#: a spread of counts wider than this (largest / smallest non-zero) is drawn on a log scale: on
#: a linear one a table with 400,000 changes leaves 18 tables of a few hundred as empty rows
LOG_SPREAD = 20


def scale_for(values: list[float]) -> str:
    """``"symlog"`` (linear up to 1, logarithmic above: zero stays drawable) when the non-zero
    values spread over more than :data:`LOG_SPREAD`, else ``"linear"``."""
    pos = [v for v in values if v > 0]
    return "symlog" if pos and max(pos) / min(pos) > LOG_SPREAD else "linear"


def rate_series(rows: list[tuple[Any, ...]], long_gap: float
                ) -> tuple[list[Any], list[float], list[tuple[Any, Any]]]:
    """The points of a per-second series (``rows``: second, count, ... in time order) as they
    should be drawn: a second without events is 0 (the line drops to zero next to a gap
    instead of joining the points across it), and a gap longer than ``long_gap`` seconds
    breaks the line (a NaN point) and is returned as a silence (from, until) to shade."""
    xs: list[Any] = []
    ys: list[float] = []
    silences: list[tuple[Any, Any]] = []
    one = _dt.timedelta(seconds=1)
    prev: Any = None
    for r in rows:
        t, n = r[0], float(r[1])
        if prev is not None:
            gap = (t - prev).total_seconds()
            if gap > 1:
                xs.append(prev + one)
                ys.append(0.0)
                if gap > long_gap:
                    silences.append((prev, t))
                    xs.append(prev + (t - prev) / 2)
                    ys.append(float("nan"))
                if gap > 2:
                    xs.append(t - one)
                    ys.append(0.0)
        xs.append(t)
        ys.append(n)
        prev = t
    return xs, ys, silences


#: the events-per-second chart draws this many sessions as lines of their own (the busiest);
#: the others are summed into one line
MAX_SERIES = 8


def session_series(rows: list[tuple[Any, ...]]
                   ) -> list[tuple[str, list[tuple[Any, float]]]]:
    """``events_per_second`` rows (second, source, session_id, events, ...) as one series of
    (second, events) per session - labelled by the session id, else the source's file name -
    the busiest :data:`MAX_SERIES` first, the rest summed as "other sessions"."""
    per: dict[str, dict[Any, float]] = {}
    for r in rows:
        label = str(r[2]) if r[2] is not None else str(r[1]).rsplit("/", 1)[-1]
        bucket = per.setdefault(label, {})
        bucket[r[0]] = bucket.get(r[0], 0.0) + float(r[3])
    ranked = sorted(per, key=lambda k: (-sum(per[k].values()), k))
    keep, rest = ranked[:MAX_SERIES], ranked[MAX_SERIES:]
    out = [(k, sorted(per[k].items())) for k in keep]
    if rest:
        other: dict[Any, float] = {}
        for k in rest:
            for t, n in per[k].items():
                other[t] = other.get(t, 0.0) + n
        out.append((f"{len(rest)} other sessions", sorted(other.items())))
    return out


def write_plots(reports: list[Report], out_dir: str | Path) -> list[Path]:
    """PNG charts for the reports that have data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by = {r.name: r for r in reports}
    written: list[Path] = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        p = out / f"{name}.png"
        fig.savefig(p, dpi=100)
        plt.close(fig)
        written.append(p)

    rep = by.get("changes_per_table")
    if rep and rep.rows:
        totals: dict[str, dict[str, int]] = {}
        for schema, table, op, n in rep.rows:
            totals.setdefault(f"{schema}.{table}", {})[op] = int(n)
        names = sorted(totals, key=lambda k: -sum(totals[k].values()))[:25][::-1]
        fig, ax = plt.subplots(figsize=(9, max(2.5, 0.35 * len(names) + 1)))
        left = [0] * len(names)
        for op in ("INSERT", "UPDATE", "DELETE"):
            vals = [totals[n].get(op, 0) for n in names]
            ax.barh(names, vals, left=left, label=op)
            left = [a + b for a, b in zip(left, vals, strict=True)]
        scale = scale_for([float(sum(totals[n].values())) for n in names])
        if scale != "linear":
            ax.set_xscale(scale, linthresh=1)
        ax.set_xlabel("row changes" + (" (log scale)" if scale != "linear" else ""))
        ax.set_title("Changes per schema.table and operation")
        ax.legend()
        save(fig, "changes_per_table")

    rep = by.get("transaction_sizes")
    if rep and rep.rows:
        fig, ax = plt.subplots(figsize=(8, 4))
        counts = [int(r[1]) for r in rep.rows]
        ax.bar([str(r[0]) for r in rep.rows], counts)
        scale = scale_for([float(c) for c in counts])
        if scale != "linear":
            ax.set_yscale(scale, linthresh=1)
        ax.set_xlabel("rows per transaction")
        ax.set_ylabel("transactions" + (" (log scale)" if scale != "linear" else ""))
        ax.set_title("Transaction sizes")
        save(fig, "transaction_sizes")

    rep = by.get("events_per_second")
    if rep and rep.rows:
        fig, ax = plt.subplots(figsize=(10, 4))
        series = session_series(rep.rows)
        shaded = 0
        for label, rows in series:
            xs, ys, silences = rate_series(rows, SILENCE_SECONDS)
            ax.plot(xs, ys, marker=".", label=label)
            for start, end in silences:  # no line across a silence: a shaded gap
                ax.axvspan(start, end, color="0.9", zorder=0)
            shaded += len(silences)
        if len(series) > 1:
            ax.legend(fontsize="small")
        ax.set_ylabel("events/s")
        ax.set_title("Events per second" + (f" ({shaded} silence(s) over "
                                            f"{SILENCE_SECONDS} s shaded)" if shaded else ""))
        fig.autofmt_xdate()
        save(fig, "events_per_second")

    for name, what in (("largest_transactions", "rows"),
                       ("largest_transactions_by_bytes", "bytes")):
        rep = by.get(name)
        if rep and rep.rows:
            fig, ax = plt.subplots(figsize=(9, 4))
            labels = [f"{r[2]}:{r[3]}" for r in rep.rows][::-1]
            values = [int(r[4]) for r in rep.rows][::-1]
            ax.barh(labels, values)
            scale = scale_for([float(v) for v in values])
            if scale != "linear":
                ax.set_xscale(scale, linthresh=1)
            ax.set_xlabel(what + (" (log scale)" if scale != "linear" else ""))
            ax.set_title(f"Largest transactions by {what}")
            save(fig, name)

    rep = by.get("ddl_timeline")
    if rep and rep.rows:
        fig, ax = plt.subplots(figsize=(10, 4))
        kinds = sorted({str(r[5]) for r in rep.rows})
        ax.scatter([r[0] for r in rep.rows], [kinds.index(str(r[5])) for r in rep.rows])
        ax.set_yticks(range(len(kinds)), kinds)
        ax.set_title("DDL timeline")
        fig.autofmt_xdate()
        save(fig, "ddl_timeline")

    for name, title, label in (
            ("ack_latency_over_time", "Semi-sync ACK latency over time", "ms"),
            ("lag_over_time", "Position lag over time (behind the server's head)",
             "bytes behind"),
            ("replication_delay_over_time", "Replication delay over time", "s")):
        rep = by.get(name)
        if rep and rep.rows:  # (second, source, session, n, mean, max): a line per session
            fig, ax = plt.subplots(figsize=(9, 4))
            sessions: dict[tuple[Any, Any], list[tuple[Any, float, float]]] = {}
            for r in rep.rows:
                sessions.setdefault((r[1], r[2]), []).append((r[0], float(r[4]), float(r[5])))
            for (src, sid), pts in list(sessions.items())[:8]:
                tag = f"{Path(str(src)).name}#{sid}" if sid else Path(str(src)).name
                ax.plot([p[0] for p in pts], [p[2] for p in pts], marker=".",
                        label=f"{tag} max")
                ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle="--",
                        label=f"{tag} mean")
            ax.set_ylabel(label)
            ax.set_title(title)
            ax.legend(fontsize="small")
            fig.autofmt_xdate()
            save(fig, name)

    for name, label in (("heartbeat_gaps", "gap (s)"),):
        rep = by.get(name)
        if rep and rep.rows:
            fig, ax = plt.subplots(figsize=(8, 4))
            ax.hist([float(r[3]) for r in rep.rows], bins=30)
            ax.set_xlabel(label)
            ax.set_title("Heartbeat gaps")
            save(fig, name)
    return written
