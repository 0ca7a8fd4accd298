"""The inspector's screens: ``main.py`` (list, tree, hex, help, status, prompt), ``help.py``
(``?``) and ``bookmarks.py`` (``m``)."""
