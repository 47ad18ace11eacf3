"""Re-index notes as they are saved: `brain watch`.

watchdog reports file events; they are gathered and handled together once the
folder has been quiet for the debounce interval (1.5 s), so an editor's burst
of writes (temporary file, rename, touch) is one re-index. Both ends of a move
are re-indexed together, so a renamed note keeps its vectors. Changes that can
affect many files at once (a folder created, moved or deleted; an ignore file
or brain.toml edited) are handled with one scan.

The watcher watches itself: when an observer thread dies, or a watched folder
disappears (its watch dies with it, silently, in watchdog), the problem is
logged, the observer is restarted with back-off, and a scan catches up with
whatever happened while nobody was looking. A failed re-index is logged and
retried; nothing ends the loop but `stop`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import sources
from .config import Settings
from .embeddings import Embedder
from .errors import BrainError, shown
from .indexer import Indexer, ScanReport

log = logging.getLogger("brain.watch")

DEBOUNCE_SECONDS = 1.5
# A file written to without pause (a log) is still re-indexed this often.
MAX_DELAY_SECONDS = 10.0
# A failed re-index is retried after this long.
RETRY_SECONDS = 30.0
# Restarting a broken observer backs off from 1 s up to this.
MAX_BACKOFF_SECONDS = 60.0
_EVENTS = ("created", "modified", "deleted", "moved")


class _Handler:
    """The watchdog event handler: hands every event to the watcher."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def dispatch(self, event: Any) -> None:
        if event.event_type not in _EVENTS:
            return
        paths = [event.src_path]
        if event.event_type == "moved":
            paths.append(event.dest_path)
        for raw in paths:
            self.watcher.note_event(Path(os.fsdecode(raw)), bool(event.is_directory), event.event_type)


class Watcher:
    """Keeps the index following the files while it runs; see the module docstring."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        *,
        debounce: float = DEBOUNCE_SECONDS,
        on_report: Callable[[ScanReport], None] | None = None,
    ) -> None:
        self.settings = settings
        self.embedder = embedder or Embedder(settings)
        self.debounce = debounce
        self.on_report = on_report
        self.runs = 0  # re-index runs done (scans included)
        self.restarts = 0  # observers restarted after a failure
        self._lock = threading.Lock()
        self._pending: set[Path] = set()
        self._needs_scan = False
        self._first_event = 0.0
        self._last_event = 0.0
        self._not_before = 0.0
        self._db_dir = settings.database_path.parent.resolve()
        self._problem: str | None = None

    # ------------------------------------------------------------ events

    def note_event(self, path: Path, is_directory: bool, kind: str) -> None:
        """Record one file-system event (called from watchdog's thread)."""
        relevance = self._relevance(path, is_directory, kind)
        if relevance is None:
            return
        now = time.monotonic()
        with self._lock:
            if not self._pending and not self._needs_scan:
                self._first_event = now
            self._last_event = now
            if relevance == "scan":
                self._needs_scan = True
            else:
                self._pending.add(path)

    def _relevance(self, path: Path, is_directory: bool, kind: str) -> str | None:
        """"path" to re-index it, "scan" for a change that may touch many files, None to ignore."""
        settings = self.settings
        if path == self._db_dir or self._db_dir in path.parents:
            return None
        if path.name in sources.IGNORE_FILES or (settings.config_path is not None and path == settings.config_path):
            return "scan"
        try:
            parts = path.relative_to(settings.root).parts
        except ValueError:
            return None
        if any(part.startswith(".") for part in parts):
            return None
        if is_directory:
            # A folder's own "modified" only echoes changes to its files, which arrive themselves.
            return None if kind == "modified" else "scan"
        return "path" if path.name.lower().endswith(settings.extensions) else None

    # ------------------------------------------------------------ loop

    def run(self, stop: threading.Event | None = None) -> None:
        """Watch and re-index until `stop` is set (or Ctrl-C); never ends on an error."""
        stop = stop or threading.Event()
        backoff = 1.0
        try:
            # Now, not at the first save: loading took ~8 s, which the first change then waited for.
            self.embedder.load(expected_texts=1)
        except BrainError as exc:
            self._report_problem(
                f"the embedding model cannot be loaded ({exc}); saved notes are searchable by their words, "
                "their vectors wait until it loads"
            )
        with self._lock:
            self._needs_scan = True  # catch up with what changed while nobody watched
            self._first_event = self._last_event = 0.0
        while not stop.is_set():
            observer = self._start_observer()
            if observer is None:
                stop.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
                continue
            if self._problem is not None:
                log.info("watching again: %s", ", ".join(str(r) for r in self.settings.root_dirs))
                self._problem = None
            started = time.monotonic()
            try:
                problem = self._serve(observer, stop)
            finally:
                observer.stop()
                observer.join(timeout=5)
            if problem is None:
                break
            self.restarts += 1
            self._report_problem(f"{problem}; restarting the watcher")
            if time.monotonic() - started > MAX_BACKOFF_SECONDS:
                backoff = 1.0
            with self._lock:
                self._needs_scan = True  # events may have been lost while it was down
            stop.wait(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
        if self._pending or self._needs_scan:
            self._flush()  # nothing saved just before the stop is left behind

    def _report_problem(self, problem: str) -> None:
        # Logged once per outage, not once per retry.
        if problem != self._problem:
            log.error("%s", problem)
            self._problem = problem

    def _start_observer(self) -> Any:
        from watchdog.observers import Observer

        missing = [str(r) for r in self.settings.root_dirs if not r.is_dir()]
        if missing:
            self._report_problem(f"cannot watch {', '.join(missing)}: no such folder; waiting for it")
            return None
        observer = Observer()
        handler = _Handler(self)
        try:
            for root in self.settings.root_dirs:
                observer.schedule(handler, str(root), recursive=True)  # type: ignore[arg-type]
            observer.start()
        except Exception as exc:  # inotify limits, permissions: anything the OS says
            self._report_problem(f"cannot start watching ({type(exc).__name__}: {exc}); retrying")
            try:
                observer.stop()
            except Exception:
                pass
            return None
        return observer

    def _health(self, observer: Any) -> str | None:
        if not observer.is_alive():
            return "the file observer stopped"
        for emitter in observer.emitters:
            if not emitter.is_alive():
                return f"watching {emitter.watch.path} stopped (folder deleted or replaced?)"
        for root in self.settings.root_dirs:
            if not root.is_dir():
                return f"{root} is gone"
        return None

    def _serve(self, observer: Any, stop: threading.Event) -> str | None:
        """Flush events as they fall due; return the problem that needs a restart, or None on stop."""
        while not stop.is_set():
            problem = self._health(observer)
            if problem is not None:
                return problem
            now = time.monotonic()
            with self._lock:
                waiting = bool(self._pending or self._needs_scan)
                quiet = now - self._last_event >= self.debounce
                overdue = now - self._first_event >= MAX_DELAY_SECONDS
                due = waiting and now >= self._not_before and (quiet or overdue)
            if due:
                self._flush()
            stop.wait(0.1)
        return None

    def _flush(self) -> None:
        with self._lock:
            paths = sorted(self._pending)
            scan = self._needs_scan
            self._pending.clear()
            self._needs_scan = False
        try:
            indexer = Indexer(self.settings, self.embedder)
            if scan:
                report = indexer.scan()
            else:
                # Refused paths (a link out, a FIFO) go along so the report says why, and an indexed copy leaves.
                named = [p for p in paths if _to_reindex(sources.source_for(self.settings, p))]
                if not named:
                    return
                report = indexer.reindex_paths(named)
        except Exception as exc:
            if isinstance(exc, BrainError):
                log.error("re-index failed: %s; retrying in %.0f s", exc, RETRY_SECONDS)
            else:
                log.exception("re-index failed; retrying in %.0f s", RETRY_SECONDS)
            with self._lock:
                self._needs_scan = True
                self._not_before = time.monotonic() + RETRY_SECONDS
            return
        self.runs += 1
        log.info("%s", _report_line(report, scan, len(paths)))
        if self.on_report is not None:
            self.on_report(report)


def _to_reindex(found: sources.SourceFile | str) -> bool:
    return not isinstance(found, str) or isinstance(found, sources.Refused)


def _report_line(report: ScanReport, scan: bool, events: int) -> str:
    counts = ", ".join(
        f"{n} {name}" for name, n in report.counts().items() if n and name != "unchanged"
    ) or "nothing changed"
    what = "scan" if scan else f"{events} changed paths"
    line = f"{what}: {counts}; {report.chunks_embedded} chunks embedded in {report.seconds:.2f}s"
    for item in report.failed:
        # Escaped: a file name with a newline must not forge lines in the log.
        line += f"\n    failed {shown(item['path'])}: {shown(item['reason'])}"
    return line
