"""The command line imports only the module of the command that runs (cli/main.py ``_BUILTIN``):
start-up is a share of every short run, and `file`, `live` and `pcap` do not pay for importing
the exporter, Spark's glue or the plugins' entry points. The whole parser (--help, a mistyped
command) still lists every command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import io, json, sys
from binlogscope.cli.main import main
rc = main(sys.argv[1:], io.StringIO(), io.StringIO())
print(json.dumps([rc, sorted(m for m in sys.modules if m.startswith("binlogscope.cli."))]))
"""


def _run(*argv: str) -> tuple[int, list[str]]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, check=True)
    rc, mods = json.loads(out.stdout.splitlines()[-1])
    return int(rc), list(mods)


def test_a_command_imports_its_own_module_only() -> None:
    binlog = next(p for p in sorted((ROOT / "captures").iterdir())
                  if p.name.startswith("mariadb-") and p.suffix not in (".md", ".pcap", ".pcapng"))
    rc, mods = _run("file", "--json", str(binlog))
    assert rc == 0
    for other in ("export", "analyze", "pcap", "sniff", "proxy", "live", "plugins"):
        assert f"binlogscope.cli.{other}" not in mods, mods
    rc, mods = _run("live", "--json", "--host", "127.0.0.1", "--port", "1", "--user", "u",
                    "--non-blocking")
    assert rc != 0  # (nothing listens on port 1: one line, non-zero)
    assert "binlogscope.cli.live" in mods
    for other in ("export", "analyze", "pcap", "file", "plugins"):
        assert f"binlogscope.cli.{other}" not in mods, mods


def test_the_whole_parser_still_lists_every_command() -> None:
    out = subprocess.run([sys.executable, "-m", "binlogscope", "--help"], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0
    for name in ("file", "demo", "export", "analyze", "live", "mock-master", "pcap", "sniff",
                 "proxy", "explain", "locate", "redact"):
        assert f"\n    {name} " in out.stdout or f"\n    {name}\n" in out.stdout, name
    bad = subprocess.run([sys.executable, "-m", "binlogscope", "nosuch"], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert bad.returncode == 2 and "invalid choice: 'nosuch'" in bad.stderr
    assert "Traceback" not in bad.stderr
