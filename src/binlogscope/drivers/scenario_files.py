"""Fault scenarios as files and actions, shared by the proxy's faults
(:mod:`binlogscope.drivers.proxy.faults`) and the mock master's scenarios (which build on
binlogscope; binlogscope never imports them).

* :func:`read_scenario_file`: a ``.toml`` or ``.yaml``/``.yml`` file as a mapping (PyYAML only
  when a YAML file is read), every problem one line in the caller's error type;
* :func:`check_action`: an action's kind, arguments and position against a table of actions
  (``kind -> ({argument: default}, help)``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any


def read_scenario_file(path: str | Path, error: type[Exception]) -> dict[str, Any]:
    """The mapping a scenario file holds; raises ``error`` with one clear line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"cannot read scenario {p}: {exc.strerror or exc}") from None
    data: Any
    if p.suffix in (".yaml", ".yml"):
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError:
            raise error("YAML scenarios need PyYAML (pip install pyyaml); or use TOML") from None
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise error(f"{p}: bad YAML: {exc}") from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise error(f"{p}: bad TOML: {exc}") from None
    if not isinstance(data, dict):
        raise error(f"{p}: the scenario must be a table/mapping")
    return data


def check_action(kind: str, args: Mapping[str, Any], at: int | None,
                 after_seconds: float | None,
                 table: Mapping[str, tuple[Mapping[str, Any], str]],
                 no_position: Collection[str], error: type[Exception]) -> None:
    """Raise ``error`` (one line) unless the action is one of ``table`` with known arguments
    and, unless its kind is in ``no_position``, an ``at`` (from 1) or ``after_seconds``."""
    if kind not in table:
        raise error(f"action {kind!r}: expected one of {', '.join(sorted(table))}")
    known = set(table[kind][0])
    extra = set(args) - known
    if extra:
        raise error(f"action {kind}: unknown arguments {', '.join(sorted(extra))} "
                    f"(takes {', '.join(sorted(known)) or 'none'})")
    if at is None and after_seconds is None and kind not in no_position:
        raise error(f"action {kind}: give 'at' (event number) or 'after_seconds'")
    if at is not None and at < 1:
        raise error(f"action {kind}: 'at' counts from 1")
