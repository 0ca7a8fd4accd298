"""No import circle in binlogscope or mock_master but the one recursion the format has.

Every direct import counts - module level, inside functions and under ``TYPE_CHECKING`` (grimp
sees them all) - so a circle cannot hide behind a late import. The one allowed: a
TRANSACTION_PAYLOAD event holds whole events, so ``wire.binlog.decode`` and
``wire.binlog.payload_events`` call each other.
"""

from __future__ import annotations

import grimp

ALLOWED = {frozenset({"binlogscope.wire.binlog.decode", "binlogscope.wire.binlog.payload_events"})}


def _cycles(graph: grimp.ImportGraph, root: tuple[str, ...]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    mods = sorted(m for m in graph.modules if m.startswith(root))
    edges = {m: sorted(i for i in graph.find_modules_directly_imported_by(m)
                       if i.startswith(root) and i != m) for m in mods}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[set[str]] = []
    counter = 0
    for start in mods:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on.add(v)
            recurse = False
            for j in range(i, len(edges[v])):
                w = edges[v][j]
                if w not in index:
                    work.append((v, j + 1))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def test_no_import_circle() -> None:
    graph = grimp.build_graph("binlogscope", "mock_master")
    cycles = [c for c in _cycles(graph, ("binlogscope", "mock_master"))
              if frozenset(c) not in ALLOWED]
    assert cycles == [], f"import circles: {[sorted(c) for c in cycles]}"
