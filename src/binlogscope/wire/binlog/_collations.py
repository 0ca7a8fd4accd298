"""The one collation/charset table: collation id -> name -> charset -> Python codec.

Used by the row-value readers (``codec_for``: how a column's bytes become text, None for the
binary charset, whose values stay bytes) and by the QUERY/USER_VAR decoders (``collation_name``,
``decode_text``). Ids and names are MariaDB 10.11's ``SHOW COLLATION`` (every id it has), plus
the ids only MySQL 8 has (its utf8mb4_0900 family, gb18030, utf8mb3_tolower_ci); the two servers
agree on the ids they share. A collation's charset is the first part of its name. Unknown ids
are shown as a number and read as utf-8 (tests/wire/test_collations.py checks this table
against a real server).
"""

from __future__ import annotations

#: collation id -> name (MariaDB 10.11 SHOW COLLATION)
COLLATIONS: dict[int, str] = {
    1: "big5_chinese_ci", 2: "latin2_czech_cs", 3: "dec8_swedish_ci", 4: "cp850_general_ci",
    5: "latin1_german1_ci", 6: "hp8_english_ci", 7: "koi8r_general_ci", 8: "latin1_swedish_ci",
    9: "latin2_general_ci", 10: "swe7_swedish_ci", 11: "ascii_general_ci", 12: "ujis_japanese_ci",
    13: "sjis_japanese_ci", 14: "cp1251_bulgarian_ci", 15: "latin1_danish_ci",
    16: "hebrew_general_ci", 18: "tis620_thai_ci", 19: "euckr_korean_ci",
    20: "latin7_estonian_cs", 21: "latin2_hungarian_ci", 22: "koi8u_general_ci",
    23: "cp1251_ukrainian_ci", 24: "gb2312_chinese_ci", 25: "greek_general_ci",
    26: "cp1250_general_ci", 27: "latin2_croatian_ci", 28: "gbk_chinese_ci",
    29: "cp1257_lithuanian_ci", 30: "latin5_turkish_ci", 31: "latin1_german2_ci",
    32: "armscii8_general_ci", 33: "utf8mb3_general_ci", 34: "cp1250_czech_cs",
    35: "ucs2_general_ci", 36: "cp866_general_ci", 37: "keybcs2_general_ci",
    38: "macce_general_ci", 39: "macroman_general_ci", 40: "cp852_general_ci",
    41: "latin7_general_ci", 42: "latin7_general_cs", 43: "macce_bin", 44: "cp1250_croatian_ci",
    45: "utf8mb4_general_ci", 46: "utf8mb4_bin", 47: "latin1_bin", 48: "latin1_general_ci",
    49: "latin1_general_cs", 50: "cp1251_bin", 51: "cp1251_general_ci", 52: "cp1251_general_cs",
    53: "macroman_bin", 54: "utf16_general_ci", 55: "utf16_bin", 56: "utf16le_general_ci",
    57: "cp1256_general_ci", 58: "cp1257_bin", 59: "cp1257_general_ci", 60: "utf32_general_ci",
    61: "utf32_bin", 62: "utf16le_bin", 63: "binary", 64: "armscii8_bin", 65: "ascii_bin",
    66: "cp1250_bin", 67: "cp1256_bin", 68: "cp866_bin", 69: "dec8_bin", 70: "greek_bin",
    71: "hebrew_bin", 72: "hp8_bin", 73: "keybcs2_bin", 74: "koi8r_bin", 75: "koi8u_bin",
    77: "latin2_bin", 78: "latin5_bin", 79: "latin7_bin", 80: "cp850_bin", 81: "cp852_bin",
    82: "swe7_bin", 83: "utf8mb3_bin", 84: "big5_bin", 85: "euckr_bin", 86: "gb2312_bin",
    87: "gbk_bin", 88: "sjis_bin", 89: "tis620_bin", 90: "ucs2_bin", 91: "ujis_bin",
    92: "geostd8_general_ci", 93: "geostd8_bin", 94: "latin1_spanish_ci", 95: "cp932_japanese_ci",
    96: "cp932_bin", 97: "eucjpms_japanese_ci", 98: "eucjpms_bin", 99: "cp1250_polish_ci",
    101: "utf16_unicode_ci", 102: "utf16_icelandic_ci", 103: "utf16_latvian_ci",
    104: "utf16_romanian_ci", 105: "utf16_slovenian_ci", 106: "utf16_polish_ci",
    107: "utf16_estonian_ci", 108: "utf16_spanish_ci", 109: "utf16_swedish_ci",
    110: "utf16_turkish_ci", 111: "utf16_czech_ci", 112: "utf16_danish_ci",
    113: "utf16_lithuanian_ci", 114: "utf16_slovak_ci", 115: "utf16_spanish2_ci",
    116: "utf16_roman_ci", 117: "utf16_persian_ci", 118: "utf16_esperanto_ci",
    119: "utf16_hungarian_ci", 120: "utf16_sinhala_ci", 121: "utf16_german2_ci",
    122: "utf16_croatian_mysql561_ci", 123: "utf16_unicode_520_ci", 124: "utf16_vietnamese_ci",
    128: "ucs2_unicode_ci", 129: "ucs2_icelandic_ci", 130: "ucs2_latvian_ci",
    131: "ucs2_romanian_ci", 132: "ucs2_slovenian_ci", 133: "ucs2_polish_ci",
    134: "ucs2_estonian_ci", 135: "ucs2_spanish_ci", 136: "ucs2_swedish_ci",
    137: "ucs2_turkish_ci", 138: "ucs2_czech_ci", 139: "ucs2_danish_ci",
    140: "ucs2_lithuanian_ci", 141: "ucs2_slovak_ci", 142: "ucs2_spanish2_ci",
    143: "ucs2_roman_ci", 144: "ucs2_persian_ci", 145: "ucs2_esperanto_ci",
    146: "ucs2_hungarian_ci", 147: "ucs2_sinhala_ci", 148: "ucs2_german2_ci",
    149: "ucs2_croatian_mysql561_ci", 150: "ucs2_unicode_520_ci", 151: "ucs2_vietnamese_ci",
    159: "ucs2_general_mysql500_ci", 160: "utf32_unicode_ci", 161: "utf32_icelandic_ci",
    162: "utf32_latvian_ci", 163: "utf32_romanian_ci", 164: "utf32_slovenian_ci",
    165: "utf32_polish_ci", 166: "utf32_estonian_ci", 167: "utf32_spanish_ci",
    168: "utf32_swedish_ci", 169: "utf32_turkish_ci", 170: "utf32_czech_ci",
    171: "utf32_danish_ci", 172: "utf32_lithuanian_ci", 173: "utf32_slovak_ci",
    174: "utf32_spanish2_ci", 175: "utf32_roman_ci", 176: "utf32_persian_ci",
    177: "utf32_esperanto_ci", 178: "utf32_hungarian_ci", 179: "utf32_sinhala_ci",
    180: "utf32_german2_ci", 181: "utf32_croatian_mysql561_ci", 182: "utf32_unicode_520_ci",
    183: "utf32_vietnamese_ci", 192: "utf8mb3_unicode_ci", 193: "utf8mb3_icelandic_ci",
    194: "utf8mb3_latvian_ci", 195: "utf8mb3_romanian_ci", 196: "utf8mb3_slovenian_ci",
    197: "utf8mb3_polish_ci", 198: "utf8mb3_estonian_ci", 199: "utf8mb3_spanish_ci",
    200: "utf8mb3_swedish_ci", 201: "utf8mb3_turkish_ci", 202: "utf8mb3_czech_ci",
    203: "utf8mb3_danish_ci", 204: "utf8mb3_lithuanian_ci", 205: "utf8mb3_slovak_ci",
    206: "utf8mb3_spanish2_ci", 207: "utf8mb3_roman_ci", 208: "utf8mb3_persian_ci",
    209: "utf8mb3_esperanto_ci", 210: "utf8mb3_hungarian_ci", 211: "utf8mb3_sinhala_ci",
    212: "utf8mb3_german2_ci", 213: "utf8mb3_croatian_mysql561_ci", 214: "utf8mb3_unicode_520_ci",
    215: "utf8mb3_vietnamese_ci", 223: "utf8mb3_general_mysql500_ci", 224: "utf8mb4_unicode_ci",
    225: "utf8mb4_icelandic_ci", 226: "utf8mb4_latvian_ci", 227: "utf8mb4_romanian_ci",
    228: "utf8mb4_slovenian_ci", 229: "utf8mb4_polish_ci", 230: "utf8mb4_estonian_ci",
    231: "utf8mb4_spanish_ci", 232: "utf8mb4_swedish_ci", 233: "utf8mb4_turkish_ci",
    234: "utf8mb4_czech_ci", 235: "utf8mb4_danish_ci", 236: "utf8mb4_lithuanian_ci",
    237: "utf8mb4_slovak_ci", 238: "utf8mb4_spanish2_ci", 239: "utf8mb4_roman_ci",
    240: "utf8mb4_persian_ci", 241: "utf8mb4_esperanto_ci", 242: "utf8mb4_hungarian_ci",
    243: "utf8mb4_sinhala_ci", 244: "utf8mb4_german2_ci", 245: "utf8mb4_croatian_mysql561_ci",
    246: "utf8mb4_unicode_520_ci", 247: "utf8mb4_vietnamese_ci", 576: "utf8mb3_croatian_ci",
    577: "utf8mb3_myanmar_ci", 578: "utf8mb3_thai_520_w2", 608: "utf8mb4_croatian_ci",
    609: "utf8mb4_myanmar_ci", 610: "utf8mb4_thai_520_w2", 640: "ucs2_croatian_ci",
    641: "ucs2_myanmar_ci", 642: "ucs2_thai_520_w2", 672: "utf16_croatian_ci",
    673: "utf16_myanmar_ci", 674: "utf16_thai_520_w2", 736: "utf32_croatian_ci",
    737: "utf32_myanmar_ci", 738: "utf32_thai_520_w2", 1025: "big5_chinese_nopad_ci",
    1027: "dec8_swedish_nopad_ci", 1028: "cp850_general_nopad_ci", 1030: "hp8_english_nopad_ci",
    1031: "koi8r_general_nopad_ci", 1032: "latin1_swedish_nopad_ci",
    1033: "latin2_general_nopad_ci", 1034: "swe7_swedish_nopad_ci",
    1035: "ascii_general_nopad_ci", 1036: "ujis_japanese_nopad_ci",
    1037: "sjis_japanese_nopad_ci", 1040: "hebrew_general_nopad_ci", 1042: "tis620_thai_nopad_ci",
    1043: "euckr_korean_nopad_ci", 1046: "koi8u_general_nopad_ci",
    1048: "gb2312_chinese_nopad_ci", 1049: "greek_general_nopad_ci",
    1050: "cp1250_general_nopad_ci", 1052: "gbk_chinese_nopad_ci",
    1054: "latin5_turkish_nopad_ci", 1056: "armscii8_general_nopad_ci",
    1057: "utf8mb3_general_nopad_ci", 1059: "ucs2_general_nopad_ci",
    1060: "cp866_general_nopad_ci", 1061: "keybcs2_general_nopad_ci",
    1062: "macce_general_nopad_ci", 1063: "macroman_general_nopad_ci",
    1064: "cp852_general_nopad_ci", 1065: "latin7_general_nopad_ci", 1067: "macce_nopad_bin",
    1069: "utf8mb4_general_nopad_ci", 1070: "utf8mb4_nopad_bin", 1071: "latin1_nopad_bin",
    1074: "cp1251_nopad_bin", 1075: "cp1251_general_nopad_ci", 1077: "macroman_nopad_bin",
    1078: "utf16_general_nopad_ci", 1079: "utf16_nopad_bin", 1080: "utf16le_general_nopad_ci",
    1081: "cp1256_general_nopad_ci", 1082: "cp1257_nopad_bin", 1083: "cp1257_general_nopad_ci",
    1084: "utf32_general_nopad_ci", 1085: "utf32_nopad_bin", 1086: "utf16le_nopad_bin",
    1088: "armscii8_nopad_bin", 1089: "ascii_nopad_bin", 1090: "cp1250_nopad_bin",
    1091: "cp1256_nopad_bin", 1092: "cp866_nopad_bin", 1093: "dec8_nopad_bin",
    1094: "greek_nopad_bin", 1095: "hebrew_nopad_bin", 1096: "hp8_nopad_bin",
    1097: "keybcs2_nopad_bin", 1098: "koi8r_nopad_bin", 1099: "koi8u_nopad_bin",
    1101: "latin2_nopad_bin", 1102: "latin5_nopad_bin", 1103: "latin7_nopad_bin",
    1104: "cp850_nopad_bin", 1105: "cp852_nopad_bin", 1106: "swe7_nopad_bin",
    1107: "utf8mb3_nopad_bin", 1108: "big5_nopad_bin", 1109: "euckr_nopad_bin",
    1110: "gb2312_nopad_bin", 1111: "gbk_nopad_bin", 1112: "sjis_nopad_bin",
    1113: "tis620_nopad_bin", 1114: "ucs2_nopad_bin", 1115: "ujis_nopad_bin",
    1116: "geostd8_general_nopad_ci", 1117: "geostd8_nopad_bin", 1119: "cp932_japanese_nopad_ci",
    1120: "cp932_nopad_bin", 1121: "eucjpms_japanese_nopad_ci", 1122: "eucjpms_nopad_bin",
    1125: "utf16_unicode_nopad_ci", 1147: "utf16_unicode_520_nopad_ci",
    1152: "ucs2_unicode_nopad_ci", 1174: "ucs2_unicode_520_nopad_ci",
    1184: "utf32_unicode_nopad_ci", 1206: "utf32_unicode_520_nopad_ci",
    1216: "utf8mb3_unicode_nopad_ci", 1238: "utf8mb3_unicode_520_nopad_ci",
    1248: "utf8mb4_unicode_nopad_ci", 1270: "utf8mb4_unicode_520_nopad_ci",
    # MySQL 8 only
    76: "utf8mb3_tolower_ci", 248: "gb18030_chinese_ci", 249: "gb18030_bin",
    250: "gb18030_unicode_520_ci", 255: "utf8mb4_0900_ai_ci", 278: "utf8mb4_0900_as_cs",
    305: "utf8mb4_0900_as_ci", 309: "utf8mb4_0900_bin",
}

#: MySQL 8's other utf8mb4 ids (language-specific 0900 collations, 256-323): charset only
_MYSQL_UTF8MB4_IDS = range(256, 324)

#: charset -> Python codec; None: the binary charset (values stay bytes). Charsets Python has
#: no codec for (dec8, hp8, swe7, keybcs2, armscii8, geostd8) read byte for byte as latin1 or
#: ascii; MySQL's latin1 is Windows cp1252.
CHARSET_CODECS_BY_NAME: dict[str, str | None] = {
    "big5": "big5", "dec8": "latin1", "cp850": "cp850", "hp8": "latin1", "koi8r": "koi8_r",
    "latin1": "cp1252", "latin2": "iso8859_2", "swe7": "ascii", "ascii": "ascii",
    "ujis": "euc_jp", "sjis": "shift_jis", "hebrew": "iso8859_8", "tis620": "tis_620",
    "euckr": "euc_kr", "koi8u": "koi8_u", "gb2312": "gb2312", "greek": "iso8859_7",
    "cp1250": "cp1250", "gbk": "gbk", "latin5": "iso8859_9", "armscii8": "latin1",
    "utf8mb3": "utf-8", "utf8": "utf-8", "ucs2": "utf-16-be", "cp866": "cp866",
    "keybcs2": "latin1", "macce": "mac_latin2", "macroman": "mac_roman", "cp852": "cp852",
    "latin7": "iso8859_13", "utf8mb4": "utf-8", "cp1251": "cp1251", "utf16": "utf-16-be",
    "utf16le": "utf-16-le", "cp1256": "cp1256", "cp1257": "cp1257", "utf32": "utf-32-be",
    "binary": None, "geostd8": "latin1", "cp932": "cp932", "eucjpms": "euc_jp",
    "gb18030": "gb18030",
}

DEFAULT_CODEC = "utf-8"


def charset_of(coll_id: int) -> str | None:
    """The charset name of a collation id (``utf8mb4`` for 45), None when unknown."""
    name = COLLATIONS.get(coll_id)
    if name is not None:
        return name.split("_", 1)[0]
    return "utf8mb4" if coll_id in _MYSQL_UTF8MB4_IDS else None


#: collation id -> Python codec (None: binary), for every id of the table
CHARSET_CODECS: dict[int, str | None] = {
    i: CHARSET_CODECS_BY_NAME.get(charset_of(i) or "", DEFAULT_CODEC)
    for i in [*COLLATIONS, *_MYSQL_UTF8MB4_IDS]
}


def codec_for(collation: int | None) -> str | None:
    """Python codec for a collation id; None for the binary charset (63); utf-8 when unknown."""
    if collation is None:
        return DEFAULT_CODEC
    return CHARSET_CODECS.get(collation, DEFAULT_CODEC)


def collation_name(coll_id: int) -> str:
    """``utf8mb4_general_ci`` for 45; ``collation 999`` for an id not in the table."""
    return COLLATIONS.get(coll_id, f"collation {coll_id}")


def python_codec(coll_id: int | None) -> str:
    """The Python codec for text that must be text (statements, variable values): the
    collation's codec, utf-8 for the binary charset and for unknown ids."""
    return codec_for(coll_id) or DEFAULT_CODEC


def decode_text(data: bytes, coll_id: int | None) -> str:
    """Decode ``data`` in the collation's charset; undecodable bytes become U+FFFD."""
    return data.decode(python_codec(coll_id), "replace")
