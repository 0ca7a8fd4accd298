"""Fault scenarios as files, and the one fault :class:`Action` type, shared by the proxy's faults
(:mod:`binlogscope.drivers.proxy.faults`) and the mock master's (``mock_master.scenario``,
which builds on binlogscope; binlogscope never imports it).

* :class:`Action`: what fires (``kind``), where (``at``: the N-th event, or ``after_seconds``),
  on which connections (``times``, ``client``) and its arguments; each side has its own table
  of kinds (``kind -> ({argument: default}, help)``), which :func:`check_action` binds;
* :func:`parse_action`: the ``'KIND at=N key=value ...'`` syntax of both ``--action`` options;
  :func:`action_from_mapping`: one ``[[actions]]`` table of a scenario file;
* :func:`read_scenario_file`: a ``.toml`` or ``.yaml``/``.yml`` file as a mapping (PyYAML only
  when a YAML file is read), every problem one line in the caller's error type;
* :class:`ActionPlan`: hands each connection its share of the actions (``times``, ``client``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: kind -> ({argument: default}, what it does)
ActionTable = Mapping[str, tuple[Mapping[str, Any], str]]
#: the keys every action takes besides its own arguments
COMMON_KEYS = ("at", "after_seconds", "times", "client")


@dataclass(init=False)
class Action:
    """One fault action (the proxy's and the mock master's).

    ``at`` counts the events sent on a connection (1 = the fake ROTATE); ``after_seconds``
    fires on the first event that long after the dump started; ``times``: on this many
    connections (0: every one); ``client``: only on connection number N. ``args`` holds the
    kind's own arguments; :meth:`arg` reads one, falling back to the default of the table the
    action was checked against (:func:`check_action`).
    """

    kind: str
    at: int | None
    after_seconds: float | None
    times: int
    client: int | None
    args: dict[str, Any]
    #: the table of kinds this action was checked against (None: not checked yet)
    table: ActionTable | None = field(default=None, repr=False, compare=False)

    def __init__(self, kind: str, at: int | None = None, after_seconds: float | None = None,
                 times: int = 1, client: int | None = None, args: dict[str, Any] | None = None,
                 **kw: Any) -> None:
        self.kind = kind
        self.at = at
        self.after_seconds = after_seconds
        self.times = times
        self.client = client
        self.args = dict(args or {})
        self.args.update(kw)
        self.table = None

    def arg(self, name: str) -> Any:
        """The argument ``name``: as given, else the kind's default."""
        if name in self.args:
            return self.args[name]
        if self.table is None:
            raise LookupError(f"action {self.kind}: read before it was checked against a "
                              "table of actions")
        return self.table[self.kind][0].get(name)

    def describe(self, counts: str = "event") -> str:
        """``'delay at event 3 (seconds=0.5)'``; ``counts`` names what ``at`` counts."""
        where = (f" at {counts} {self.at}" if self.at is not None else
                 f" after {self.after_seconds:g}s" if self.after_seconds is not None else "")
        extra = " ".join(f"{k}={v}" for k, v in self.args.items())
        return f"{self.kind}{where}" + (f" ({extra})" if extra else "")


def check_action(a: Action, table: ActionTable, no_position: Collection[str],
                 error: type[Exception]) -> Action:
    """Raise ``error`` (one line) unless the action is one of ``table`` with known arguments,
    ``times`` >= 0 and, unless its kind is in ``no_position``, an ``at`` (from 1) or
    ``after_seconds``; binds ``table`` (the defaults :meth:`Action.arg` falls back to)."""
    kind = a.kind
    if kind not in table:
        raise error(f"action {kind!r}: expected one of {', '.join(sorted(table))}")
    known = set(table[kind][0])
    extra = set(a.args) - known
    if extra:
        raise error(f"action {kind}: unknown arguments {', '.join(sorted(extra))} "
                    f"(takes {', '.join(sorted(known)) or 'none'})")
    if a.at is None and a.after_seconds is None and kind not in no_position:
        raise error(f"action {kind}: give 'at' (event number) or 'after_seconds'")
    if a.at is not None and a.at < 1:
        raise error(f"action {kind}: 'at' counts from 1")
    if a.times < 0:
        raise error(f"action {kind}: 'times' must be >= 0")
    a.table = table
    return a


def _value(v: str) -> Any:
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            continue
    return v


def parse_action(text: str, error: type[Exception]) -> Action:
    """``'KIND at=N key=value ...'`` (numbers read as numbers), not yet checked."""
    parts = text.split()
    if not parts:
        raise error("empty --action")
    kw: dict[str, Any] = {}
    for item in parts[1:]:
        k, sep, v = item.partition("=")
        if not sep:
            raise error(f"--action {text!r}: expected key=value, got {item!r}")
        kw[k] = _value(v)
    return _action(parts[0], kw, error)


def action_from_mapping(entry: Any, error: type[Exception]) -> Action:
    """One ``[[actions]]`` table (``action`` or ``kind`` names it), not yet checked."""
    if not isinstance(entry, Mapping):
        raise error("each action is a table")
    kw = dict(entry)
    kind = kw.pop("action", None) or kw.pop("kind", None)
    return _action(str(kind), kw, error)


def _action(kind: str, kw: dict[str, Any], error: type[Exception]) -> Action:
    common = {k: kw.pop(k) for k in COMMON_KEYS if k in kw}
    try:
        return Action(kind, at=None if common.get("at") is None else int(common["at"]),
                      after_seconds=None if common.get("after_seconds") is None
                      else float(common["after_seconds"]),
                      times=int(common.get("times", 1)),
                      client=None if common.get("client") is None else int(common["client"]),
                      args=kw)
    except (TypeError, ValueError):
        raise error(f"action {kind}: at/times/client are integers, after_seconds a "
                    "number") from None


class ActionPlan:
    """The actions of a run; hands each dump its share: an action with ``client`` goes to
    that connection's dumps only, any other to the first ``times`` dumps that ask (0: every
    one)."""

    def __init__(self, actions: Iterable[Action]) -> None:
        self.actions = list(actions)
        self._left = {id(a): a.times for a in self.actions}

    def for_connection(self, cid: int) -> list[Action]:
        mine = []
        for a in self.actions:
            if a.client is not None:
                if a.client == cid:
                    mine.append(a)
                continue
            if a.times:
                if self._left[id(a)] <= 0:
                    continue
                self._left[id(a)] -= 1
            mine.append(a)
        return mine


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
