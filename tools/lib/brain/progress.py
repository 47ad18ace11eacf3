"""The bar `brain index` shows on a terminal (stderr): reading the notes, then making their vectors.

Two stages, each with a total known when it starts, so it never jumps: first
the files to read (the one being read is named: a long PDF takes a while), each
searchable by its words once read; then the chunks waiting for a vector, with
chunks per second and the time left. It is redrawn twice a second, so the clock
moves while one batch is being embedded. Nothing is drawn unless asked for
(a terminal) and tqdm is installed; every method is then a no-op.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

REDRAW_SECONDS = 0.5  # the bar moves at least this often, even while one long batch runs
NAME_CHARS = 40  # of the file being read, shown beside the bar (the end of its path)


def _short(rel: str) -> str:
    return rel if len(rel) <= NAME_CHARS else "…" + rel[-(NAME_CHARS - 1):]


class IndexProgress:
    """The two-stage bar; see the module docstring."""

    def __init__(self, *, enabled: bool) -> None:
        self.bar: Any = None
        self._tqdm: Any = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self._tqdm = tqdm

    @property
    def shown(self) -> bool:
        """True when a bar is drawn."""
        return self._tqdm is not None

    def say(self, line: str) -> None:
        """One line above the bar (what the stage means for searching)."""
        if self._tqdm is not None:
            self._tqdm.write(f"brain: {line}", file=sys.stderr)

    def start_reading(self, files: int) -> None:
        """Stage 1: `files` notes to read, extract, chunk and write with their keywords."""
        self._start("reading", files, "file")

    def reading(self, rel: str) -> None:
        """The file being read now, drawn at once (one long PDF can take a minute: its name must show)."""
        if self.bar is not None:
            self.bar.set_postfix_str(_short(rel))

    def read(self, count: int = 1) -> None:
        """`count` more files are read (or needed no reading)."""
        if self.bar is not None and count:
            self.bar.update(count)

    def loading(self, what: str) -> None:
        """A model is loading (seconds; torch's tens): said in the bar until the next stage or update."""
        if self.bar is not None:
            self.bar.set_postfix_str(f"loading {what}…")

    def start_embedding(self, chunks: int) -> None:
        """Stage 2: `chunks` waiting for their vector; the rate and time left count from here."""
        self._start("embedding", chunks, "chunk")

    def embedded(self, count: int) -> None:
        """`count` more chunks have their vector."""
        if self.bar is not None and count:
            self.bar.update(count)

    def close(self, finished: bool) -> None:
        """Leave the last stage's bar on screen, labelled done or stopped."""
        self._stop.set()
        if self.bar is not None:
            self.bar.set_description("indexed" if finished else "stopped", refresh=False)
            self.bar.close()
            self.bar = None

    def _start(self, stage: str, total: int, unit: str) -> None:
        if self._tqdm is None:
            return
        if self.bar is not None:
            self.bar.close()
        # Left on screen when done, above the scan report.
        self.bar = self._tqdm(total=total, desc=stage, unit=unit, file=sys.stderr, leave=True, dynamic_ncols=True,
                              mininterval=REDRAW_SECONDS)
        if self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, name="brain-progress", daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(REDRAW_SECONDS):
            bar = self.bar
            if bar is not None:
                try:
                    bar.refresh()
                except Exception:  # closed meanwhile: the next stage or the end
                    pass
