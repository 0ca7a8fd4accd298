"""Grading: a client's reported values against the value contract, and the common checks.

Values come from the adapter's JSON lines (docs/conformance.md): null, a bool, a number, a
string, ``{"hex": ...}`` / ``{"base64": ...}`` for bytes (or plain strings, hex or base64, from
a client whose ``hello`` line says ``"bytes": "hex"``), a list (SET members, VECTOR). Each is
compared with what the value contract (docs/value-contract.md) says for the column:

* **pass** - the same value (a number equal to the FLOAT's float32 value; the server's text
  form; DATETIME with a ``T``; JSON equal once parsed);
* **non-strict** - the same information in a form the contract does not use (a DECIMAL as a
  JSON number equal to it, an ENUM's index instead of its name, text as the raw bytes of the
  column's charset, a TIMESTAMP as epoch seconds);
* **fail** - anything else (NULL for a zero date, 1900 for YEAR 0000, BINARY without its
  trailing zero bytes, text decoded with the wrong byte order, ...).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import struct
from decimal import Decimal, InvalidOperation
from typing import Any

from binlogscope.wire.binlog._collations import codec_for
from binlogscope.wire.binlog.context import ColumnInfo
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.values import effective_type
from binlogscope.wire.binlog.values_numeric import double_text, float32_text
from mock_master.conformance.model import Check, Verdict
from mock_master.conformance.observe import Observation
from mock_master.conformance.setup import ABSENT

_INTS = (T.MYSQL_TYPE_TINY, T.MYSQL_TYPE_SHORT, T.MYSQL_TYPE_INT24, T.MYSQL_TYPE_LONG,
         T.MYSQL_TYPE_LONGLONG)
_TEMPORAL = (T.MYSQL_TYPE_DATE, T.MYSQL_TYPE_NEWDATE, T.MYSQL_TYPE_TIME, T.MYSQL_TYPE_TIME2,
             T.MYSQL_TYPE_DATETIME, T.MYSQL_TYPE_DATETIME2, T.MYSQL_TYPE_TIMESTAMP,
             T.MYSQL_TYPE_TIMESTAMP2)
_BINARY = 63


def _bytes_of(v: Any, bytes_mode: str) -> bytes | None:
    """A reported value as bytes when it is bytes in the adapter schema, else None."""
    if isinstance(v, dict):
        try:
            if "hex" in v:
                return bytes.fromhex(str(v["hex"]))
            if "base64" in v:
                return base64.b64decode(str(v["base64"]), validate=True)
        except (ValueError, binascii.Error):
            return None
    if isinstance(v, str) and bytes_mode == "hex":
        try:
            return bytes.fromhex(v)
        except ValueError:
            return None
    if isinstance(v, str) and bytes_mode == "base64":
        try:
            return base64.b64decode(v, validate=True)
        except (ValueError, binascii.Error):
            return None
    return None


def show(v: Any) -> str:
    s = json.dumps(v, ensure_ascii=False, default=repr)
    return s if len(s) <= 80 else s[:77] + "..."


def _is_binary(col: ColumnInfo) -> bool:
    t = effective_type(col)
    if t in (T.MYSQL_TYPE_GEOMETRY, T.MYSQL_TYPE_BIT):
        return True
    return col.charset == _BINARY and t not in (T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET)


def _norm_temporal(s: str) -> tuple[str, int]:
    """(the text before the fraction, the fraction in microseconds): ``T`` or a UTC suffix
    and the number of fraction digits do not change the value."""
    s = s.replace("T", " ")
    for suffix in ("Z", "+00:00"):
        if s.endswith(suffix):
            s = s[: -len(suffix)]
    whole, _, frac = s.partition(".")
    return whole, int(frac.ljust(6, "0")[:6]) if frac.isdigit() else (-1 if frac else 0)


def compare_value(col: ColumnInfo, expected: Any, got: Any, *,
                  bytes_mode: str = "object") -> tuple[Verdict, str]:
    """(verdict, why) of one reported value ``got`` for ``expected`` (value contract form)."""
    name = col.name or f"@{col.index + 1}"
    what = f"{name}: expected {show(expected)}, got {show(got)}"
    if expected is None:
        return (Verdict.PASS, "") if got is None else (Verdict.FAIL, what + " (NULL expected)")
    if got is None:
        return Verdict.FAIL, what + " (NULL instead of a value)"
    t = effective_type(col)
    raw = _bytes_of(got, bytes_mode)
    if t in _INTS or t == T.MYSQL_TYPE_YEAR:
        if isinstance(got, bool):
            return Verdict.FAIL, what
        if isinstance(got, int) and got == expected:
            return Verdict.PASS, ""
        if isinstance(got, str) and got.lstrip("-").isdigit() and int(got) == expected:
            return Verdict.NON_STRICT, what + " (a number given as text)"
        return Verdict.FAIL, what
    if t == T.MYSQL_TYPE_BIT:
        n = (col.meta >> 8) + (1 if col.meta & 0xFF else 0)
        if isinstance(got, int) and not isinstance(got, bool) and got == expected:
            return Verdict.PASS, ""
        if raw is not None and int.from_bytes(raw, "big") == expected and len(raw) == n:
            return Verdict.PASS, ""
        if isinstance(got, str) and set(got) <= {"0", "1"} and got and int(got, 2) == expected:
            return Verdict.NON_STRICT, what + " (a bit string)"
        return Verdict.FAIL, what
    if t == T.MYSQL_TYPE_FLOAT:
        want = struct.pack("<f", float(expected))
        if isinstance(got, int | float) and not isinstance(got, bool):
            if struct.pack("<f", float(got)) == want:
                return Verdict.PASS, ""
            return Verdict.FAIL, what
        if isinstance(got, str):
            if got == float32_text(float(expected)):
                return Verdict.PASS, ""  # the server's own text (6 significant digits)
            try:
                if struct.pack("<f", float(got)) == want:
                    if got == float32_text(float(expected)):
                        return Verdict.PASS, ""
                    return Verdict.NON_STRICT, (what + " (the float32 value with other digits "
                                                f"than the server's {float32_text(expected)})")
            except (ValueError, OverflowError):
                pass
        return Verdict.FAIL, what
    if t == T.MYSQL_TYPE_DOUBLE:
        if isinstance(got, int | float) and not isinstance(got, bool):
            return ((Verdict.PASS, "") if float(got) == float(expected)
                    or (math.isnan(float(got)) and math.isnan(float(expected)))
                    else (Verdict.FAIL, what))
        if isinstance(got, str):
            try:
                if float(got) == float(expected):
                    return ((Verdict.PASS, "") if got == double_text(float(expected))
                            else (Verdict.NON_STRICT, what + " (other digits)"))
            except ValueError:
                pass
        return Verdict.FAIL, what
    if t == T.MYSQL_TYPE_NEWDECIMAL:
        if isinstance(got, str) and got == expected:
            return Verdict.PASS, ""
        try:
            same = Decimal(str(got)) == Decimal(str(expected))
        except InvalidOperation:
            same = False
        if same and not isinstance(got, bool):
            return Verdict.NON_STRICT, what + " (equal number, not the exact text with its scale)"
        if isinstance(got, float):
            return Verdict.FAIL, what + " (a DECIMAL given as a binary float loses digits)"
        return Verdict.FAIL, what
    if t in _TEMPORAL:
        if isinstance(got, str):
            if got == expected:
                return Verdict.PASS, ""
            if _norm_temporal(got) == _norm_temporal(str(expected)):
                return Verdict.PASS, ""  # the same value; fraction digits are presentation
            return Verdict.FAIL, what
        if isinstance(got, int | float) and not isinstance(got, bool) and t in (
                T.MYSQL_TYPE_TIMESTAMP, T.MYSQL_TYPE_TIMESTAMP2):
            import calendar
            import datetime as dt
            whole, _, frac = str(expected).partition(".")
            try:
                secs = calendar.timegm(dt.datetime.strptime(whole, "%Y-%m-%d %H:%M:%S")
                                       .timetuple())
            except ValueError:
                secs = 0
            us = int(frac.ljust(6, "0")) if frac else 0
            if abs(float(got) - (secs + us / 1e6)) < 1e-7:
                return Verdict.NON_STRICT, what + " (epoch seconds)"
        return Verdict.FAIL, what
    if t == T.MYSQL_TYPE_ENUM:
        if got == expected:
            return Verdict.PASS, ""
        members = col.enum_values or []
        if isinstance(got, int) and expected in members and members.index(expected) + 1 == got:
            return Verdict.NON_STRICT, what + " (the member's index, not its name)"
        return Verdict.FAIL, what
    if t == T.MYSQL_TYPE_SET:
        names = set(str(expected).split(",")) - {""}
        if isinstance(got, str) and got == expected:
            return Verdict.PASS, ""
        if isinstance(got, list) and {str(x) for x in got} == names:
            return Verdict.PASS, ""
        if isinstance(got, str) and set(got.split(",")) - {""} == names:
            return Verdict.NON_STRICT, what + " (members in another order)"
        return Verdict.FAIL, what
    if t == T.MYSQL_TYPE_VECTOR:
        want_v = struct.pack(f"<{len(expected)}f", *expected)
        if isinstance(got, list) and all(isinstance(x, int | float) for x in got):
            if len(got) == len(expected) and struct.pack(f"<{len(got)}f", *got) == want_v:
                return Verdict.PASS, ""
            return Verdict.FAIL, what
        if raw is not None and raw == want_v:
            return Verdict.NON_STRICT, what + " (the raw float32 bytes, not the floats)"
        return Verdict.FAIL, what
    if t == T.MYSQL_TYPE_JSON:
        try:
            want_v = json.loads(expected)
            got_v = json.loads(got) if isinstance(got, str) else got
        except (ValueError, TypeError):
            return Verdict.FAIL, what + " (not JSON)"
        return (Verdict.PASS, "") if got_v == want_v else (Verdict.FAIL, what)
    if _is_binary(col):
        want_b = bytes(expected)
        if raw is not None:
            if raw == want_b:
                return Verdict.PASS, ""
            if raw == want_b.rstrip(b"\0"):
                return Verdict.FAIL, what + " (trailing 0x00 bytes stripped)"
            return Verdict.FAIL, what
        if isinstance(got, str) and got.encode("utf-8", "surrogateescape") == want_b:
            return Verdict.NON_STRICT, what + " (binary value given as text)"
        if isinstance(got, str) and got.encode("utf-8", "surrogateescape") == want_b.rstrip(b"\0"):
            return Verdict.FAIL, what + " (trailing 0x00 bytes stripped, given as text)"
        return Verdict.FAIL, what
    # character data
    if isinstance(got, str):
        if got == expected:
            return Verdict.PASS, ""
        return Verdict.FAIL, what
    if raw is not None:
        codec = codec_for(col.charset) or "utf-8"
        if raw == str(expected).encode(codec, "surrogateescape"):
            return Verdict.NON_STRICT, (what + f" (the raw {codec} bytes, not decoded as the "
                                        "column's character set)")
        return Verdict.FAIL, what
    return Verdict.FAIL, what


def _labels(t: Any) -> list[str]:
    return [c.name or f"@{c.index + 1}" for c in t.columns]


def _image(img: Any, cols: list[ColumnInfo]) -> list[Any] | None:
    """A reported row image as a list in column order (by name, ``@N``, or position)."""
    if isinstance(img, list):
        return img
    if not isinstance(img, dict):
        return None
    out: list[Any] = []
    for c in cols:
        for key in (c.name, f"@{c.index + 1}", f"col_{c.index}", str(c.index)):
            if key is not None and key in img:
                out.append(img[key])
                break
        else:
            out.append(_MISSING)
    return out


_MISSING = object()


def _absent_check(where: str, col: ColumnInfo, got: Any) -> Check:
    """A column the image does not hold, reported anyway."""
    name = col.name or col.index + 1
    if got is None:
        return Check(Verdict.NON_STRICT, f"{where}: column {name} is not in the image (MINIMAL "
                     "row image) but reported as NULL - the same as a NULL value")
    return Check(Verdict.FAIL, f"{where}: column {name} is not in the image (MINIMAL row "
                 f"image) but reported as {show(got)}")


def judge_rows(obs: Observation) -> list[Check]:
    """The reported row events against the expected ones, value by value."""
    expected = obs.setup.expected
    if not expected:
        return []
    if not obs.has_adapter:
        # a protocol case judged on the wire (value cases need an adapter: the runner grades
        # them unimplemented before they run)
        return []
    bytes_mode = next((str(h.get("bytes", "object")) for h in obs.of_type("hello")), "object")
    got = obs.rows()
    checks: list[Check] = []
    if len(got) != len(expected):
        checks.append(Check(Verdict.FAIL, f"{len(expected)} row event(s) expected, the client "
                            f"reported {len(got)}"))
    for i, (exp, line) in enumerate(zip(expected, got, strict=False)):
        where = f"row event {i + 1} ({exp.kind} {exp.table.schema}.{exp.table.table})"
        if line.get("type") != exp.kind:
            checks.append(Check(Verdict.FAIL, f"{where}: reported as {line.get('type')!r}"))
            continue
        if (line.get("schema"), line.get("table")) != (exp.table.schema, exp.table.table):
            checks.append(Check(Verdict.FAIL, f"{where}: reported for table "
                                f"{line.get('schema')}.{line.get('table')}"))
        rows = line.get("rows") or []
        if len(rows) != len(exp.rows):
            checks.append(Check(Verdict.FAIL, f"{where}: {len(exp.rows)} row(s) expected, "
                                f"{len(rows)} reported"))
        for j, (want, row) in enumerate(zip(exp.rows, rows, strict=False)):
            pairs = []
            if exp.kind == "update":
                pairs = [("before", want[0]), ("after", want[1])]
            elif exp.kind == "insert":
                pairs = [("after", want)]
            else:
                pairs = [("before", want)]
            for side, values in pairs:
                img = _image(row.get(side) if isinstance(row, dict) else None, exp.table.columns)
                if img is None:
                    checks.append(Check(Verdict.FAIL, f"{where} row {j + 1}: no {side} image"))
                    continue
                for col, w, g in zip(exp.table.columns, values, img, strict=False):
                    if w is ABSENT:
                        if g is not _MISSING:
                            checks.append(_absent_check(f"{where} row {j + 1} {side}", col, g))
                        continue
                    if g is _MISSING:
                        checks.append(Check(Verdict.FAIL, f"{where} row {j + 1} {side}: column "
                                            f"{col.name or col.index + 1} missing"))
                        continue
                    v, why = compare_value(col, w, g, bytes_mode=bytes_mode)
                    if v != Verdict.PASS:
                        checks.append(Check(v, f"{where} row {j + 1} {side}: {why}"))
    if not checks:
        n = sum(len(e.rows) for e in expected)
        checks.append(Check(Verdict.PASS, f"{len(expected)} row event(s), {n} row(s): every "
                            "value as the value contract says"))
    return checks


def judge_clean_end(obs: Observation) -> list[Check]:
    """The client read the stream to its end and exited by itself without an error."""
    if obs.timed_out:
        return [Check(Verdict.FAIL, f"the client was still running after "
                      f"{obs.setup.timeout:g} s (stopped)")]
    if obs.exit_code != 0:
        tail = obs.stderr.strip().splitlines()[-1:] or [""]
        errs = [str(e.get("message", ""))[:200] for e in obs.of_type("error")]
        return [Check(Verdict.FAIL, f"the client exited with status {obs.exit_code}: "
                      f"{(errs or tail)[0]}")]
    return []


def judge_values(obs: Observation) -> list[Check]:
    """A values case: clean end + every row as expected."""
    return judge_clean_end(obs) + judge_rows(obs)
