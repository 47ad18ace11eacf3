#!/usr/bin/env python3
"""`python3 tools/vector/index_brain.py ARGS` does exactly what `brain index ARGS` does."""

from __future__ import annotations

import sys
from pathlib import Path

# Run from a checkout without installing: the library lives in tools/lib.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from brain.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(["index", *sys.argv[1:]]))
