from __future__ import annotations

from binlogscope.cli import main

raise SystemExit(main())
