"""The nightly full rebuild: `brain schedule` runs in the foreground and rebuilds every day at 03:00 local time.

Timing comes from the `schedule` package. Each run is logged with its scan
report; a run that fails is logged with its reason and the loop goes on to
the next day (a machine asleep at 03:00 runs the missed rebuild when it wakes).
The rebuild itself builds a new database and swaps it in atomically, so
searches during it always see a complete index (see Indexer.rebuild).
"""

from __future__ import annotations

import logging
import re
import threading
import traceback
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .errors import BrainError
from .indexer import ScanReport

log = logging.getLogger("brain.schedule")

DEFAULT_AT = "03:00"
# Longest sleep between checks: a changed wall clock (sleep, DST) is noticed within this.
MAX_SLEEP_SECONDS = 60.0


def check_time(at: str) -> str:
    """HH:MM on a 24-hour clock, or a usage error naming the value."""
    match = re.fullmatch(r"([01]?\d|2[0-3]):([0-5]\d)", at.strip())
    if not match:
        raise BrainError(f"--at {at!r} is not a time of day as HH:MM (e.g. 03:00)", usage=True)
    return f"{int(match.group(1)):02d}:{match.group(2)}"


def report_line(report: ScanReport) -> str:
    """One line for the log: counts, embedding work, time."""
    counts = ", ".join(f"{n} {name}" for name, n in report.counts().items())
    line = (
        f"rebuilt: {counts}; {report.chunks_embedded} chunks embedded, "
        f"{report.cache_hits} from cache, in {report.seconds:.1f}s"
    )
    for item in report.failed:
        line += f"\n    failed {item['path']}: {item['reason']}"
    return line


class NightlyRebuild:
    """Runs `rebuild` every day at `at` (local time); a failed run is logged and the next one still comes."""

    def __init__(self, rebuild: Callable[[], ScanReport], at: str = DEFAULT_AT) -> None:
        import schedule

        self.rebuild = rebuild
        self.at = check_time(at)
        self.scheduler = schedule.Scheduler()
        self.job = self.scheduler.every().day.at(self.at).do(self.run_once)
        self.runs = 0
        self.failures = 0

    @property
    def next_run(self) -> datetime | None:
        """When the next rebuild is due (local time)."""
        return self.job.next_run

    def run_once(self) -> bool:
        """One rebuild now, logged; True if it was rebuilt (files that failed are in the report). Never raises."""
        self.runs += 1
        log.info("nightly rebuild starting")
        try:
            report = self.rebuild()
        except BrainError as exc:
            self.failures += 1
            log.error("nightly rebuild failed: %s", exc)
            return False
        except Exception as exc:  # anything at all: log it whole, keep the schedule alive
            self.failures += 1
            log.error("nightly rebuild failed: %s: %s\n%s", type(exc).__name__, exc, traceback.format_exc().rstrip())
            return False
        log.info("%s", report_line(report))
        # Files that failed are reported, as `brain index` reports them; the rebuild itself worked
        # (a binary file in the folder had marked every night's cron job failed).
        return True

    def run(self, stop: threading.Event | None = None) -> None:
        """Sleep until each rebuild is due and run it, until `stop` is set (or Ctrl-C)."""
        stop = stop or threading.Event()
        log.info("nightly rebuild scheduled every day at %s local time; next at %s", self.at, _when(self.next_run))
        while not stop.is_set():
            runs = self.runs
            self.scheduler.run_pending()
            if self.runs != runs:
                log.info("next rebuild at %s", _when(self.next_run))
            idle = self.scheduler.idle_seconds
            stop.wait(min(max(idle if idle is not None else MAX_SLEEP_SECONDS, 0.5), MAX_SLEEP_SECONDS))


def _when(moment: Any) -> str:
    return moment.strftime("%Y-%m-%d %H:%M") if moment is not None else "never"
