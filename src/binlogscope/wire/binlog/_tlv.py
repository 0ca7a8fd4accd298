"""The type-length-value header MySQL 8 uses in TRANSACTION_PAYLOAD and HEARTBEAT_V2 events.

Each field is ``type<packed>`` ``length<packed>`` ``value<length>``; type 0 is the end mark and
has no length or value. Integer values are themselves packed integers inside their ``length``
bytes. A type the reader does not know is skipped by its length, as the server does.
"""

from __future__ import annotations

from binlogscope.wire.reader import ByteReader, DecodeError

#: field kinds: "int" (packed integer value) or "str" (bytes shown as text)
TlvSpec = dict[int, tuple[str, str, str]]  # type -> (name, kind, doc)


def read_tlv(r: ByteReader, spec: TlvSpec, *, end_mark_doc: str) -> tuple[dict[str, object], bool]:
    """Read TLV fields until the end mark or the end of the reader.

    Returns the decoded values by field name and whether an end mark was seen. Each field is a
    group named after it with ``type``/``length``/``value`` children.
    """
    out: dict[str, object] = {}
    while r.remaining > 0:
        code = r.buf[r.pos]
        if code == 0:
            r.packed_int("end_mark", doc=end_mark_doc, display="0: END_MARK")
            return out, True
        name, kind, doc = spec.get(code, (f"unknown_field_{code}", "raw",
                                          "a field type binlogscope does not know (skipped)"))
        r.begin(name, doc=doc)
        r.packed_int("type", doc="field type code", display=f"{code}: {name}")
        length = r.packed_int("length", doc="size of the value in bytes")
        value: object
        with r.bounded(length, name):
            if kind == "int":
                value = r.packed_int("value", doc=doc)
                if r.remaining:
                    raise DecodeError(r.offset, f"{name}: {r.remaining} bytes after the value")
            elif kind == "str":
                value = r.rest_str("value", doc=doc)
            else:
                value = r.rest("value", doc=doc)
        r.end_group(value=value)
        out[name] = value
    return out, False
