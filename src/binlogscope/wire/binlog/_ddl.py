"""Column decimals declared in CREATE TABLE statements seen in the binlog (QUERY events).

MariaDB tables created with ``mysql56_temporal_format=OFF`` store TIME(n)/DATETIME(n)/
TIMESTAMP(n) (n > 0) in MariaDB's own hi-res formats under the *old* type codes, and the
TABLE_MAP carries no metadata for them: the number of fraction digits is nowhere in the row
event. When the binlog holds the CREATE TABLE, its text says it. This module extracts, per
table, the declared temporal columns ``(name, type, decimals)`` in column order; ``rows.py``
uses them (and falls back to inferring the decimals from the row bytes when there is no DDL).

Only what is needed for that is parsed: column definitions of CREATE TABLE; ALTER and DROP
TABLE forget a table. Anything unusual (CREATE ... SELECT / LIKE, ALTER) is ignored, and the row
decoder checks the result against the row bytes before trusting it.
"""

from __future__ import annotations

import re

#: (column name lower-cased, "TIME" | "DATETIME" | "TIMESTAMP", decimals); ``None`` name for
#: non-temporal columns (kept so the positions line up with the TABLE_MAP's columns)
Declared = list[tuple[str, str | None, int]]

_CREATE = re.compile(
    r"\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"
    r"((?:`[^`]+`|[\w$]+)(?:\s*\.\s*(?:`[^`]+`|[\w$]+))?)\s*\(",
    re.IGNORECASE,
)
_DROP = re.compile(r"\s*DROP\s+(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+EXISTS\s+)?(.*)",
                   re.IGNORECASE | re.DOTALL)
_ALTER = re.compile(r"\s*ALTER\s+(?:ONLINE\s+)?(?:IGNORE\s+)?TABLE\s+(?:IF\s+EXISTS\s+)?"
                    r"((?:`[^`]+`|[\w$]+)(?:\s*\.\s*(?:`[^`]+`|[\w$]+))?)", re.IGNORECASE)
_TEMPORAL = re.compile(r"(TIME|DATETIME|TIMESTAMP)\b\s*(?:\(\s*(\d)\s*\))?", re.IGNORECASE)
_NOT_A_COLUMN = {"PRIMARY", "KEY", "INDEX", "UNIQUE", "CONSTRAINT", "FOREIGN", "CHECK",
                 "FULLTEXT", "SPATIAL", "PERIOD", "SYSTEM"}


def _unquote(name: str) -> str:
    name = name.strip()
    if name.startswith("`") and name.endswith("`"):
        name = name[1:-1].replace("``", "`")
    return name.lower()


def _split_name(qualified: str, schema: str) -> tuple[str, str]:
    parts = re.findall(r"`(?:[^`]|``)+`|[\w$]+", qualified)
    if len(parts) == 2:
        return _unquote(parts[0]), _unquote(parts[1])
    return schema.lower(), _unquote(parts[0]) if parts else ""


def _top_level_items(text: str, start: int) -> list[str] | None:
    """The comma-separated items of the parenthesised list opening before ``start``."""
    items: list[str] = []
    depth = 1
    quote = ""
    item_start = start
    i = start
    n = len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\" and quote != "`":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                items.append(text[item_start:i])
                return items
        elif ch == "," and depth == 1:
            items.append(text[item_start:i])
            item_start = i + 1
        i += 1
    return None


def watch_ddl(query: str, schema: str, declared: dict[tuple[str, str], Declared]) -> None:
    """Update ``declared`` from one statement (cheap for anything but CREATE/DROP TABLE)."""
    head = query[:40].lstrip()[:6].upper()
    if head == "CREATE":
        m = _CREATE.match(query)
        if m is None:
            return
        key = _split_name(m.group(1), schema)
        items = _top_level_items(query, m.end())
        if items is None:
            return
        cols: Declared = []
        for item in items:
            item = item.strip()
            if not item:
                continue
            if item[0] == "`":
                end = item.find("`", 1)
                name, rest = item[1:end], item[end + 1 :]
            else:
                word = item.split(None, 1)
                if word[0].upper() in _NOT_A_COLUMN:
                    continue
                name, rest = word[0], (word[1] if len(word) > 1 else "")
            t = _TEMPORAL.match(rest.lstrip())
            if t is None:
                cols.append((name.lower(), None, 0))
            else:
                cols.append((name.lower(), t.group(1).upper(), int(t.group(2) or 0)))
        declared[key] = cols
    elif head[:5] == "ALTER":
        m = _ALTER.match(query)
        if m is not None:  # the layout may have changed: infer from the rows from now on
            declared.pop(_split_name(m.group(1), schema), None)
    elif head[:4] == "DROP":
        m = _DROP.match(query)
        if m is None:
            return
        for part in re.split(r",", m.group(1)):
            part = part.strip().split()[0] if part.strip() else ""
            if part:
                declared.pop(_split_name(part, schema), None)
