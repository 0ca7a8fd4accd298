from __future__ import annotations

from binlogscope.cli.main import main

raise SystemExit(main())
