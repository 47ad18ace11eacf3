"""`brain watch`: real file-system events from watchdog, the real indexer, in a thread of the test process."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import live_servers
from brain import Brain, ScanReport
from brain.watcher import Watcher
from helpers import PROJECT, run_cli, write


def wait_until(condition: Callable[[], bool]) -> None:
    """The shared poll, at this file's pace: a watcher's debounce is short."""
    live_servers.wait_until(condition, timeout=90.0, every=0.05)


class Running:
    """A watcher running in a thread, with every report it produced."""

    def __init__(self, root: Path) -> None:
        self.watcher: Watcher = Brain(root).watcher()
        self.reports: list[ScanReport] = []
        self.watcher.on_report = self.reports.append
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.watcher.run, args=(self.stop,), daemon=True)

    def settled(self, runs: int, *, quiet_check: bool = False) -> ScanReport:
        """The report of run number `runs`; with `quiet_check`, after two more debounce intervals show no extra run."""
        wait_until(lambda: len(self.reports) >= runs)
        if quiet_check:
            time.sleep(self.watcher.debounce * 2)
        assert len(self.reports) == runs, [r.to_dict() for r in self.reports[runs - 1 :]]
        return self.reports[runs - 1]


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[Path, Running]]:
    root = tmp_path / "notes"
    write(root, {"a.md": "# Alpha\n\nThe nginx reverse proxy.\n", "b.txt": "Restic backups at night.\n"})
    Brain(root).index()
    run = Running(root)
    run.thread.start()
    run.settled(1)  # the catch-up scan at start
    yield root, run
    run.stop.set()
    run.thread.join(timeout=30)


@pytest.mark.slow
def test_a_burst_of_writes_is_one_reindex(running: tuple[Path, Running]) -> None:
    root, run = running
    for n in range(10):
        write(root, {"draft.md": f"# Draft\n\nVersion {n} of the draft about glaciers.\n"})
        # Editors save through a hidden temporary file renamed into place.
        write(root, {".b.txt.swp": f"swap {n}"})
    report = run.settled(2, quiet_check=True)
    assert report.added == ["draft.md"]
    assert Brain(root).status(verify=True).clean


@pytest.mark.slow
def test_create_modify_move_delete(running: tuple[Path, Running]) -> None:
    root, run = running
    write(root, {"c.md": "# Gamma\n\nAppointment reminders by SMS.\n"})
    assert run.settled(2).added == ["c.md"]
    write(root, {"c.md": "# Gamma\n\nAppointment reminders by SMS and e-mail.\n"})
    assert run.settled(3).updated == ["c.md"]
    os.rename(root / "c.md", root / "c renamed è.md")
    moved = run.settled(4)
    assert moved.moved == [{"from": "c.md", "to": "c renamed è.md"}] and moved.chunks_embedded == 0
    (root / "b.txt").unlink()
    assert run.settled(5).removed == ["b.txt"]
    (root / "sub").mkdir()
    write(root, {"sub/d.md": "# Delta\n"})
    run.settled(6)
    shutil.move(str(root / "sub"), str(root / "moved sub"))
    run.settled(7)
    assert Brain(root).status(verify=True).clean


@pytest.mark.slow
def test_the_watcher_recovers_when_its_folder_disappears(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "repo"
    write(root, {"brain.toml": 'roots = ["notes"]\n', "notes/a.md": "# Alpha\n\nThe nginx reverse proxy.\n"})
    Brain(root).index()
    caplog.set_level(logging.INFO, logger="brain.watch")
    run = Running(root)
    run.thread.start()
    try:
        run.settled(1)
        # A sync tool or a branch switch replaces the folder: watchdog's watch on it dies silently.
        shutil.rmtree(root / "notes")
        wait_until(lambda: "restarting the watcher" in caplog.text or "no such folder" in caplog.text)
        write(root, {"notes/z.md": "# Zeta\n\nWritten after the folder came back.\n"})
        wait_until(lambda: any("notes/z.md" in r.added for r in run.reports))
        write(root, {"notes/later.md": "# Later\n\nSaved once the watcher was back.\n"})
        wait_until(lambda: any("notes/later.md" in r.added for r in run.reports))
    finally:
        run.stop.set()
        run.thread.join(timeout=30)
    assert run.watcher.restarts >= 1
    assert "watching again" in caplog.text
    assert Brain(root).status(verify=True).clean


def test_watch_rejects_a_negative_debounce(tmp_path: Path) -> None:
    write(tmp_path / "n", {"a.md": "# A\n"})
    done = run_cli("--root", str(tmp_path / "n"), "watch", "--debounce", "-1")
    assert done.returncode == 2 and "--debounce" in done.stderr


@pytest.mark.slow
def test_the_model_loads_when_the_watcher_starts_not_at_the_first_save(tmp_path: Path) -> None:
    """Newcomer round two, item 12: the first change waited ~8 s for the model; it now loads at start."""
    root = tmp_path / "notes"
    write(root, {"a.md": "# Alpha\n\nThe nginx reverse proxy.\n"})
    assert run_cli("--root", str(root), "index").returncode == 0
    code = (
        "import threading, time\n"
        "from brain import Brain\n"
        f"watcher = Brain({str(root)!r}).watcher()\n"
        "before = watcher.embedder.loaded\n"
        "reports = []\n"
        "watcher.on_report = reports.append\n"
        "stop = threading.Event()\n"
        "thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)\n"
        "thread.start()\n"
        "deadline = time.monotonic() + 120\n"
        "while not reports and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "print(before, watcher.embedder.loaded, reports[0].chunks_embedded)\n"
        "stop.set(); thread.join(30)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(PROJECT / "tools" / "lib")))
    assert out.returncode == 0, out.stderr
    # Not loaded before the watcher ran; loaded after its catch-up scan, which had nothing to embed.
    assert out.stdout.split() == ["False", "True", "0"], out.stdout
