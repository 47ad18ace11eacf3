#!/usr/bin/env python3
"""`python3 tools/vector/ask.py ARGS` does exactly what `brain ask ARGS` does."""

from __future__ import annotations

import sys
from pathlib import Path

# Run from a checkout without installing: the library lives in tools/lib.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from brain.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(["ask", *sys.argv[1:]]))
