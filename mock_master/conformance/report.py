"""Reports of a conformance run: JSON (one object per case), JUnit XML, the HTML report card,
and the comparison of two JSON reports.

The HTML card is one self-contained page: a matrix of sections x clients (several JSON reports
can be merged into one card), each case opening its evidence (the checks, the annotated packets
the mock master sent and the client sent back with their times, the client's output). Jinja2
(already installed with binlogscope's dependencies, and autoescaping) writes it, so no string in
the evidence can inject markup.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from binlogscope.render.json_out import dumps_pretty
from mock_master.conformance.model import SECTIONS, Result

VERDICTS = ("pass", "non-strict", "fail", "informational", "unimplemented")


def to_json(results: list[Result], client: str) -> list[dict[str, Any]]:
    out = []
    for r in results:
        d = r.to_dict()
        d["client"] = client
        out.append(d)
    return out


def write_json(path: str | Path, results: list[Result], client: str) -> None:
    Path(path).write_bytes(dumps_pretty(to_json(results, client)))


def load_json(path: str | Path) -> list[dict[str, Any]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: not a conformance report (a JSON list)")
    return data


def key(d: dict[str, Any]) -> str:
    return f"{d['case']} [{d.get('flavor', '')}]"


def summary(items: list[dict[str, Any]]) -> str:
    c = Counter(str(d["verdict"]) for d in items)
    return ", ".join(f"{c.get(v, 0)} {v}" for v in VERDICTS)


def cell(items: list[dict[str, Any]]) -> str:
    """A matrix cell: the verdicts that occur (``not run`` when none)."""
    c = Counter(str(d["verdict"]) for d in items)
    return ", ".join(f"{c[v]} {v}" for v in VERDICTS if c.get(v)) or "not run"


def write_junit(path: str | Path, results: list[Result], client: str) -> None:
    """One testsuite per section; fail is a <failure>, non-strict a <failure type=non-strict>,
    unimplemented a <skipped>; informational passes with its text in system-out."""
    def failed(rs: list[Result]) -> int:
        return sum(r.verdict.value in ("fail", "non-strict") for r in rs)

    def skipped(rs: list[Result]) -> int:
        return sum(r.verdict.value == "unimplemented" for r in rs)

    # the attributes Jenkins' and GitLab's readers (the Ant JUnit schema) expect: counts on
    # every suite and on the root, errors (0: a client's failure is a failure, not an error)
    root = ET.Element("testsuites", name=f"binlogscope conformance: {client}",
                      tests=str(len(results)), failures=str(failed(results)), errors="0",
                      skipped=str(skipped(results)),
                      time=f"{sum(r.seconds for r in results):.3f}")
    by: dict[str, list[Result]] = {}
    for r in results:
        by.setdefault(r.section, []).append(r)
    for section, rs in by.items():
        suite = ET.SubElement(root, "testsuite", name=section, tests=str(len(rs)),
                              failures=str(failed(rs)), errors="0", skipped=str(skipped(rs)),
                              time=f"{sum(r.seconds for r in rs):.3f}")
        for r in rs:
            tc = ET.SubElement(suite, "testcase", classname=f"conformance.{section}",
                               name=f"{r.case} [{r.flavor}]", time=f"{r.seconds:.3f}")
            text = "\n".join(f"{c.verdict.value}: {c.text}" for c in r.checks)
            if r.verdict.value in ("fail", "non-strict"):
                f = ET.SubElement(tc, "failure", type=r.verdict.value,
                                  message=(r.checks[0].text if r.checks else r.verdict.value)[:500])
                f.text = text
            elif r.verdict.value == "unimplemented":
                ET.SubElement(tc, "skipped", message=text[:500])
            else:
                ET.SubElement(tc, "system-out").text = text
    ET.ElementTree(root).write(str(path), encoding="utf-8", xml_declaration=True)


def compare(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[list[str], int]:
    """Lines saying what changed from report ``a`` to ``b``, and how many cases got worse."""
    rank = {"pass": 0, "informational": 0, "unimplemented": 1, "non-strict": 2, "fail": 3}
    ma = {key(d): d for d in a}
    mb = {key(d): d for d in b}
    lines: list[str] = []
    worse = 0
    for k in sorted(set(ma) | set(mb)):
        va = ma[k]["verdict"] if k in ma else None
        vb = mb[k]["verdict"] if k in mb else None
        if va == vb:
            continue
        if va is None:
            lines.append(f"new       {k}: {vb}")
        elif vb is None:
            lines.append(f"gone      {k}: was {va}")
        elif rank.get(str(vb), 0) > rank.get(str(va), 0):
            worse += 1
            why = next((c["text"] for c in mb[k].get("checks", [])
                        if c.get("verdict") == vb), "")
            lines.append(f"WORSE     {k}: {va} -> {vb}  {why[:200]}")
        else:
            lines.append(f"better    {k}: {va} -> {vb}")
    return lines, worse


_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>binlogscope conformance report card</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}
.pass{background:#c8f7c5}.non-strict{background:#fff0a8}.fail{background:#f7b9b9}
.informational{background:#cfe3ff}.unimplemented{background:#e4e4e4}
pre{font:12px ui-monospace,monospace;white-space:pre;overflow-x:auto;margin:2px 0}
details{margin:2px 0}summary{cursor:pointer}
</style></head><body>
<h1>Replication client conformance</h1>
<p>Generated by <code>binlogscope conformance</code>. Verdicts: pass, non-strict (works, not as
the protocol or the value contract says), fail, informational (no right answer: recorded),
unimplemented (the client does not offer what the case needs). What the catalogue covers, and
what not yet: docs/conformance.md.</p>
<h2>Summary</h2>
<table><tr><th>section</th>{% for c in clients %}<th>{{ c }}</th>{% endfor %}</tr>
{% for s in sections %}<tr><td><a href="#{{ s }}">{{ s }}</a></td>
{% for c in clients %}<td class="{{ worst[s][c] }}">{{ matrix[s][c] }}</td>{% endfor %}</tr>
{% endfor %}
<tr><th>all</th>{% for c in clients %}<th>{{ totals[c] }}</th>{% endfor %}</tr></table>
{% for s in sections %}<h2 id="{{ s }}">{{ s }}</h2>
<table><tr><th>case</th>{% for c in clients %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in rows[s] %}<tr><td><b>{{ row.case }}</b> [{{ row.flavor }}]<br>{{ row.title }}
{% for l in row.links %}<br><a href="{{ l }}">{{ l }}</a>{% endfor %}</td>
{% for c in clients %}{% set d = row.by.get(c) %}
{% if d %}<td class="{{ d.verdict }}"><details><summary>{{ d.verdict }}</summary>
<p><i>{{ d.evidence.get('expect', '') }}</i></p>
<ul>{% for ch in d.checks %}<li>{{ ch.verdict }}: {{ ch.text }}</li>{% endfor %}</ul>
{% if d.evidence.get('packets') %}<details><summary>wire: {{ d.evidence.packets|length }}
packets</summary>{% for p in d.evidence.packets %}<details><summary><code>{{ p.label }}</code>
</summary><pre>{{ (p.tree or [])|join('\n') }}</pre></details>{% endfor %}</details>{% endif %}
{% if d.evidence.get('client_output') %}<details><summary>client output</summary>
<pre>{% for ln in d.evidence.client_output %}{{ ln|tojson }}
{% endfor %}</pre></details>{% endif %}
{% if d.evidence.get('client_stderr') %}<details><summary>client stderr</summary>
<pre>{{ d.evidence.client_stderr }}</pre></details>{% endif %}
</details></td>{% else %}<td></td>{% endif %}{% endfor %}</tr>{% endfor %}</table>
{% endfor %}</body></html>
"""


def write_html(directory: str | Path, reports: dict[str, list[dict[str, Any]]]) -> Path:
    """The report card of one or more clients' JSON reports into ``directory``/index.html."""
    import jinja2

    clients = list(reports)
    sections = [s for s in SECTIONS if any(d["section"] == s for r in reports.values()
                                           for d in r)]
    rows: dict[str, list[dict[str, Any]]] = {s: [] for s in sections}
    index: dict[str, dict[str, Any]] = {}
    for client, items in reports.items():
        for d in items:
            k = key(d)
            if k not in index:
                index[k] = {"case": d["case"], "flavor": d.get("flavor", ""),
                            "title": d.get("title", ""),
                            "links": d.get("evidence", {}).get("links", []), "by": {}}
                rows.setdefault(d["section"], []).append(index[k])
            index[k]["by"][client] = d
    matrix = {s: {c: cell([d for d in reports[c] if d["section"] == s]) for c in clients}
              for s in sections}
    rank = {"pass": 0, "informational": 1, "unimplemented": 2, "non-strict": 3, "fail": 4}
    worst = {s: {c: max((str(d["verdict"]) for d in reports[c] if d["section"] == s),
                        key=lambda v: rank.get(v, 0), default="")
                 for c in clients} for s in sections}
    totals = {c: summary(reports[c]) for c in clients}
    env = jinja2.Environment(autoescape=True)
    html = env.from_string(_HTML).render(clients=clients, sections=sections, rows=rows,
                                         matrix=matrix, worst=worst, totals=totals)
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "index.html"
    out.write_text(html, encoding="utf-8")
    return out
