"""brain: a local memory for a person's notes (hybrid BM25 + embedding search in one SQLite file).

Importing this package is cheap: torch and the model load only when a path needs them.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Brain", "BrainError", "ScanReport", "SearchResponse", "__version__"]


def __getattr__(name: str) -> Any:
    # Lazy re-exports keep `import brain` and `brain --help` fast.
    if name == "Brain":
        from .api import Brain

        return Brain
    if name == "BrainError":
        from .errors import BrainError

        return BrainError
    if name == "ScanReport":
        from .indexer import ScanReport

        return ScanReport
    if name == "SearchResponse":
        from .search import SearchResponse

        return SearchResponse
    raise AttributeError(name)
