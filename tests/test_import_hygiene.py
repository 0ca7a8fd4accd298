"""The sans-IO core imports no UI, network, capture or data-frame library (checked for real in a
subprocess, as harlequin does)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
import binlogscope.wire.binlog.decode, binlogscope.wire.binlog.stream, binlogscope.render.shapes
bad = [m for m in ("textual", "scapy", "pymysql", "pyarrow", "pyspark", "socket",
                   "binlogscope.drivers", "binlogscope.cli")
       if m in sys.modules]
print(",".join(bad))
"""


def test_core_imports_nothing_heavy() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _layer_packages() -> list[str]:
    """Every package or module named in a ``layers`` contract of pyproject.toml."""
    import tomllib
    from pathlib import Path

    conf = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    names: list[str] = []
    for contract in conf["tool"]["importlinter"]["contracts"]:
        if contract["type"] == "layers":
            for layer in contract["layers"]:
                names += [n.strip() for n in layer.replace("|", ":").split(":")]
    return names


def test_every_module_is_in_a_layer() -> None:
    """lint-imports checks only what its contracts name: a module outside every layer is a module
    whose imports nobody checks. Each module of binlogscope and mock_master is inside a layer."""
    import pkgutil

    import binlogscope
    import mock_master

    layers = _layer_packages()
    outside = []
    for pkg in (binlogscope, mock_master):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if not any(info.name == n or info.name.startswith(n + ".") for n in layers):
                outside.append(info.name)
    assert outside == [], f"modules in no layer of pyproject.toml's import contracts: {outside}"
