"""The environment for benchmarked processes that run from compiled bytecode, as an installed copy does.

A machine may forbid writing bytecode (PYTHONDONTWRITEBYTECODE): every process
then compiles each module it imports, which makes larger modules look slower
than they are for a user. The bytecode is kept in a folder of the benchmark's
own, never beside the checkouts' sources.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path


def compiled(env: MutableMapping[str, str], pycache: Path) -> MutableMapping[str, str]:
    """`env`, changed in place, for processes that run from compiled bytecode kept in `pycache` (unless a
    folder is named already)."""
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("PYTHONPYCACHEPREFIX", str(pycache))
    return env
