"""A small collation-id table: enough to name the ids seen in QUERY/USER_VAR events.

Ids are MySQL's (``SHOW COLLATION``); MariaDB shares ids below 256. Unknown ids are shown as a
number. ``python_codec`` maps a collation to the Python codec used to decode text in it.
"""

from __future__ import annotations

COLLATIONS: dict[int, str] = {
    1: "big5_chinese_ci", 3: "dec8_swedish_ci", 4: "cp850_general_ci", 5: "latin1_german1_ci",
    6: "hp8_english_ci", 7: "koi8r_general_ci", 8: "latin1_swedish_ci",
    9: "latin2_general_ci", 10: "swe7_swedish_ci", 11: "ascii_general_ci",
    12: "ujis_japanese_ci", 13: "sjis_japanese_ci", 14: "cp1251_bulgarian_ci",
    15: "latin1_danish_ci", 16: "hebrew_general_ci", 18: "tis620_thai_ci",
    19: "euckr_korean_ci", 20: "latin7_estonian_cs", 21: "latin2_hungarian_ci",
    22: "koi8u_general_ci", 23: "cp1251_ukrainian_ci", 24: "gb2312_chinese_ci",
    25: "greek_general_ci", 26: "cp1250_general_ci", 27: "latin2_croatian_ci",
    28: "gbk_chinese_ci", 30: "latin5_turkish_ci", 31: "latin1_german2_ci",
    32: "armscii8_general_ci", 33: "utf8mb3_general_ci", 35: "ucs2_general_ci",
    36: "cp866_general_ci", 37: "keybcs2_general_ci", 38: "macce_general_ci",
    39: "macroman_general_ci", 40: "cp852_general_ci", 41: "latin7_general_ci",
    45: "utf8mb4_general_ci", 46: "utf8mb4_bin", 47: "latin1_bin", 48: "latin1_general_ci",
    49: "latin1_general_cs", 51: "cp1251_general_ci", 54: "utf16_general_ci", 55: "utf16_bin",
    56: "utf16le_general_ci", 57: "cp1256_general_ci", 59: "cp1257_general_ci",
    60: "utf32_general_ci", 61: "utf32_bin", 62: "utf16le_bin", 63: "binary", 65: "ascii_bin",
    83: "utf8mb3_bin", 84: "big5_bin", 87: "gbk_bin", 88: "sjis_bin", 90: "ucs2_bin",
    95: "cp932_japanese_ci", 96: "cp932_bin", 97: "eucjpms_japanese_ci",
    128: "ucs2_unicode_ci", 192: "utf8mb3_unicode_ci", 224: "utf8mb4_unicode_ci",
    246: "utf8mb4_unicode_520_ci", 248: "gb18030_chinese_ci", 255: "utf8mb4_0900_ai_ci",
    278: "utf8mb4_0900_as_cs", 305: "utf8mb4_0900_as_ci", 309: "utf8mb4_0900_bin",
}

_CODECS: dict[str, str] = {
    "big5": "big5", "cp850": "cp850", "latin1": "cp1252", "koi8r": "koi8_r",
    "latin2": "iso8859_2", "ascii": "ascii", "ujis": "euc_jp", "sjis": "shift_jis",
    "cp1251": "cp1251", "hebrew": "iso8859_8", "tis620": "tis_620", "euckr": "euc_kr",
    "latin7": "iso8859_13", "koi8u": "koi8_u", "gb2312": "gb2312", "greek": "iso8859_7",
    "cp1250": "cp1250", "gbk": "gbk", "latin5": "iso8859_9", "utf8mb3": "utf-8",
    "utf8": "utf-8", "ucs2": "utf-16-be", "cp866": "cp866", "cp852": "cp852",
    "utf8mb4": "utf-8", "utf16": "utf-16-be", "utf16le": "utf-16-le", "cp1256": "cp1256",
    "cp1257": "cp1257", "utf32": "utf-32-be", "binary": "utf-8", "cp932": "cp932",
    "eucjpms": "euc_jp", "gb18030": "gb18030", "macroman": "mac_roman",
}


def collation_name(coll_id: int) -> str:
    """``utf8mb4_general_ci`` for 45; ``collation 999`` for an id not in the table."""
    return COLLATIONS.get(coll_id, f"collation {coll_id}")


def python_codec(coll_id: int | None) -> str:
    """The Python codec for text in collation ``coll_id`` (utf-8 when unknown)."""
    if coll_id is None:
        return "utf-8"
    name = COLLATIONS.get(coll_id)
    if name is None:
        return "utf-8"
    charset = name.split("_", 1)[0]
    return _CODECS.get(charset, "utf-8")


def decode_text(data: bytes, coll_id: int | None) -> str:
    """Decode ``data`` in the collation's charset; undecodable bytes become U+FFFD."""
    return data.decode(python_codec(coll_id), "replace")
