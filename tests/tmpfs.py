"""A small real file system for full-disk tests: a tmpfs mounted for the test, unmounted after."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(where: Path, size: int | str) -> Iterator[Path]:
    """A tmpfs of `size` (bytes, or a mount size like "4m") at `where`; skipped with the reason where
    mounting is not allowed."""
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(
            f"cannot mount a small tmpfs here ({mounted.stderr.strip() or 'mount failed'}); full-disk tests need root"
        )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
