"""The case catalogue, by section (docs/conformance.md lists what each covers and what not yet).

:func:`catalogue` is every case; :func:`select` filters by ``SECTION/PATTERN`` (shell-style
patterns over the case ids, comma-separated).
"""

from __future__ import annotations

import fnmatch

from mock_master.conformance.model import Case


def catalogue() -> list[Case]:
    from mock_master.conformance.catalogue import (
        events,
        events_context,
        framing,
        gtid,
        incidents,
        semisync,
        setup,
        stream,
        values,
    )

    out: list[Case] = []
    for mod in (setup, events, events_context, values, framing, stream, semisync, gtid, incidents):
        out.extend(mod.CASES)
    ids = [c.id for c in out]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise RuntimeError(f"duplicate case ids: {sorted(dup)}")
    return out


def select(cases: list[Case], patterns: str | None) -> list[Case]:
    """Cases whose id matches one of the comma-separated ``patterns`` (``values/*``,
    ``setup``, ``*zero*``); a bare section name selects the section."""
    if not patterns:
        return cases
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    out = []
    for c in cases:
        for p in pats:
            if "/" not in p and not any(ch in p for ch in "*?[") and c.section == p:
                out.append(c)
                break
            if fnmatch.fnmatchcase(c.id, p) or fnmatch.fnmatchcase(c.id, p + "*"):
                out.append(c)
                break
    return out
