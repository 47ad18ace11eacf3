#!/usr/bin/env python3
"""`python3 tools/vector/reindex_file.py ARGS` does exactly what `brain reindex ARGS` does."""

from __future__ import annotations

import sys
from pathlib import Path

# Run from a checkout without installing: the library lives in tools/lib.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from brain.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(["reindex", *sys.argv[1:]]))
