"""The one serializer: what it writes for every kind of value, and how it writes lines."""

from __future__ import annotations

import datetime
import enum
import io
import json
from typing import Any

import pytest

from binlogscope.render.json_out import LineWriter, dumps, dumps_line, dumps_pretty


class Color(enum.Enum):
    RED = 1


class Thing:
    def __str__(self) -> str:
        return "a thing"


@pytest.mark.parametrize(("value", "want"), [
    (b"\x00\xff", "00ff"),
    (bytearray(b"\x01"), "01"),
    (memoryview(b"\xab"), "ab"),
    (Color.RED, 1),  # (orjson writes an enum by value: the shapes write the names they mean)
    (Thing(), "a thing"),
    (datetime.datetime(2024, 2, 29, 12, 34, 56), "2024-02-29 12:34:56"),
    (datetime.date(2024, 2, 29), "2024-02-29"),
    (float("nan"), None),
    (float("-inf"), None),
    (2 ** 70, 2 ** 70),
    (-(2 ** 64), -(2 ** 64)),
    ({1: "int key"}, {"1": "int key"}),
    ((1, b"x"), [1, "78"]),
    ("é\"\\\n\u2028", "é\"\\\n\u2028"),
    (1.5, 1.5),
    (None, None),
    (True, True),
])
def test_values(value: Any, want: Any) -> None:
    assert json.loads(dumps(value)) == want
    assert json.loads(dumps([value, {"k": value}])) == [want, {"k": want}]


def test_invalid_unicode_becomes_replacement_characters() -> None:
    # a VARCHAR value whose bytes did not decode keeps them as surrogateescape surrogates
    text = b"ok \xff\xfe end".decode("utf-8", "surrogateescape")
    obj = {"rows": [{"before": None, "after": {"vc": text, "b": b"\x01"}}], "n": 2 ** 70,
           "lone": "\ud800", text: 1}
    out = dumps_line(obj)
    out.decode("utf-8")  # valid UTF-8
    assert out.endswith(b"\n")
    got = json.loads(out)
    assert got["rows"][0]["after"] == {"vc": "ok \ufffd\ufffd end", "b": "01"}
    assert got["lone"] == "\ufffd\ufffd\ufffd"  # (its three bytes, each replaced)
    assert got["n"] == 2 ** 70
    assert got["ok \ufffd\ufffd end"] == 1
    assert json.loads(dumps_pretty(obj)) == got


def test_pretty() -> None:
    assert dumps_pretty({"a": [1, b"\x02"]}) == b'{\n  "a": [\n    1,\n    "02"\n  ]\n}\n'


def test_compact() -> None:
    assert dumps({"a": 1, "b": "x"}) == b'{"a":1,"b":"x"}'
    assert dumps_line([1]) == b"[1]\n"


def test_line_writer_to_a_text_stream_without_buffer() -> None:
    out = io.StringIO()
    w = LineWriter(out)
    w.write({"a": "é"})
    w.add(dumps_line([1]))
    assert out.getvalue() == ""  # waits for flush
    w.flush()
    assert out.getvalue() == '{"a":"é"}\n[1]\n'


def test_line_writer_keeps_the_order_of_text_written_around_it() -> None:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=False)
    out.write("# text first\n")
    w = LineWriter(out)
    w.write({"k": 1})
    w.add(dumps_line({"k": 2}))
    out.write("# text after\n")
    out.flush()
    assert raw.getvalue() == b'# text first\n{"k":1}\n{"k":2}\n# text after\n'


def test_interactive_line_writer_flushes_every_line() -> None:
    class Out(io.StringIO):
        flushes = 0

        def flush(self) -> None:
            self.flushes += 1

    out = Out()
    w = LineWriter(out, interactive=True)
    w.write({"a": 1})
    assert out.getvalue() == '{"a":1}\n' and out.flushes >= 1


def test_flush_every_writes_lines_from_a_background_thread() -> None:
    import time

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    w = LineWriter(out, flush_every=0.01)
    w.add(dumps_line({"a": 1}))
    deadline = time.monotonic() + 5
    while not raw.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert raw.getvalue() == b'{"a":1}\n'  # without a flush from this thread
    w.add(dumps_line({"a": 2}))
    w.close()
    assert raw.getvalue() == b'{"a":1}\n{"a":2}\n'
    assert LineWriter(io.StringIO(), flush_every=0.01).interactive  # no buffer: every line
