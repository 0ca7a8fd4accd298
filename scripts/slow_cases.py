"""Write ``tests/slow_cases.txt``: the tests a measured run found slow, which the suite then
marks ``slow`` (tests/conftest.py), so ``-m 'not slow'`` is a fast loop.

    bash scripts/test.sh --junitxml=/tmp/suite.xml      # one whole run (CI's command)
    python scripts/slow_cases.py /tmp/suite.xml         # the list from its durations

A test is listed when its recorded time (setup + call + teardown, so a module fixture's
start counts for the test that starts it) is at least ``--seconds`` (default 2.5). The list
is data, not a judgement: refresh it from a new run when tests change. A listed test that no
longer exists is ignored; a new slow test stays in the fast loop until the list is refreshed
(or until it is marked ``slow`` in its file).
"""

from __future__ import annotations

import argparse
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "slow_cases.txt"


def node_id(classname: str, name: str) -> str | None:
    """A pytest node id from a junit testcase's ``classname`` (dotted module, then classes)
    and ``name`` (an xdist ``@group`` suffix dropped); None if no test file matches."""
    parts = classname.split(".")
    for i in range(len(parts), 0, -1):
        path = Path(*parts[:i]).with_suffix(".py")
        if (ROOT / path).is_file():
            return "::".join([path.as_posix(), *parts[i:], re.sub(r"@[^\]]*$", "", name)])
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit", type=Path, help="a junit XML of a whole run (pytest --junitxml)")
    ap.add_argument("--seconds", type=float, default=2.5, help="the least time of a slow test")
    args = ap.parse_args(argv)
    try:
        root = ET.parse(args.junit).getroot()
    except (OSError, ET.ParseError) as exc:
        print(f"slow_cases: {args.junit}: {exc}", file=sys.stderr)
        return 2
    slow: dict[str, float] = {}
    for case in root.iter("testcase"):
        seconds = float(case.get("time") or 0)
        nid = node_id(case.get("classname") or "", case.get("name") or "")
        if nid is not None and seconds >= args.seconds:
            slow[nid] = seconds
    total = sum(float(c.get("time") or 0) for c in root.iter("testcase"))
    lines = [f"# tests at least {args.seconds:g} s in {args.junit.name} ({len(slow)} of "
             f"{sum(1 for _ in root.iter('testcase'))}, {sum(slow.values()):.0f} of "
             f"{total:.0f} s): marked slow by tests/conftest.py; "
             "made by scripts/slow_cases.py", *sorted(slow)]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(slow)} tests, {sum(slow.values()):.0f} s "
          f"of {total:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
