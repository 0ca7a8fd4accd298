"""Output: one mapping, one serializer, one text renderer, one escape.

``shapes.py`` maps every decoded item to its JSON-ready shape (one function per item kind),
``json_out.py`` writes it (orjson, the one serializer), ``text.py`` renders every
``--plain``/``--brief``/``--summary`` line and the annotated hexdump, ``sql_rows.py`` the
pseudo-SQL of ``file --verbose``, and ``escape.py`` keeps raw control characters off terminals.
"""
