"""The README's Layout section matches the tree (``git ls-files``): every path it names exists,
and every package of binlogscope and mock_master is named there, so a newcomer finds in one
place where a byte is decoded, shown, served and exported."""

from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _layout_section() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Layout")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _tracked() -> set[str]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout.split()
    paths = set(out)
    for p in out:  # and every folder on the way
        parts = p.split("/")
        paths.update("/".join(parts[:i]) + "/" for i in range(1, len(parts)))
    return paths


def test_every_path_named_in_layout_exists() -> None:
    tracked = _tracked()
    named = re.findall(r"`((?:src|mock_master|tests|bench|captures|docs|scripts)/[^`\s]*)`",
                       _layout_section())
    assert named, "the Layout section names no paths"
    missing = [p for p in named if p not in tracked and p.rstrip("/") + "/" not in tracked
               and not fnmatch.filter(tracked, p)]
    assert missing == [], f"README Layout names paths that are not in git ls-files: {missing}"


def test_every_package_is_in_layout() -> None:
    section = _layout_section()
    packages = sorted({str(Path(p).parent) + "/" for p in _tracked()
                       if p.endswith("/__init__.py")
                       and (p.startswith("src/binlogscope/") or p.startswith("mock_master/"))})
    absent = []
    for pkg in packages:
        short = pkg.removeprefix("src/binlogscope/").removeprefix("src/")
        if pkg == "src/binlogscope/":
            continue
        if f"`{pkg}`" not in section and f"`{short}`" not in section:
            absent.append(pkg)
    assert absent == [], f"packages the README's Layout section does not describe: {absent}"
