"""Every writer at once — hook sync, nightly rebuild, watcher, CLI index and re-index — while readers search.

WAL lets readers through at any moment and the writer lock queues the writers;
afterwards the index must equal the files exactly, and no process may have failed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from brain import Brain
from helpers import PROJECT, git, run_cli, write

pytestmark = pytest.mark.slow


def test_concurrent_writers_leave_an_exact_index(example_notes: Path) -> None:
    root = example_notes
    Brain(root).index()
    write(root, {
        "new/one.md": "# One\n\nThe snow report for the Brenta group, written at the hut.\n",
        "new/two.md": "# Two\n\nNotes on the clinic's new appointment system rollout.\n",
        "notes/shell-snippets.md": (
            (root / "notes/shell-snippets.md").read_text(encoding="utf-8") + "\n`du -sh *` finds the big folders.\n"
        ),
    })
    (root / "diary/2024-03-14.md").unlink()
    git(root, "mv", "log/decisions.md", "log/decisions 2024.md")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "changes for everyone")

    env = {**os.environ, "PYTHONPATH": str(PROJECT / "tools" / "lib")}
    brain = [sys.executable, "-m", "brain", "--root", str(root)]
    watch = subprocess.Popen([*brain, "watch"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writers = [
        subprocess.Popen([*brain, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for args in (["index"], ["index", "--full"], ["sync"],
                     ["reindex", str(root / "new/one.md"), str(root / "notes/shell-snippets.md")],
                     ["schedule", "--once"], ["index"])
    ]

    failures: list[str] = []
    searches = 0
    done = threading.Event()

    def read() -> None:
        nonlocal searches
        reader = Brain(root)
        while not done.is_set():
            try:
                if not reader.search("nginx SSL certificate", mode="hybrid").results:
                    failures.append("a search found nothing")
            except Exception as exc:
                failures.append(f"{type(exc).__name__}: {exc}")
            searches += 1

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        cli_reads = [run_cli("--root", str(root), "search", "restic backup", "--json") for _ in range(2)]
        results = [(process.args, *process.communicate(timeout=600), process.returncode) for process in writers]
    finally:
        done.set()
        reader.join(timeout=60)
        time.sleep(2)  # the watcher's debounced run for events the writers caused, if any
        watch.send_signal(signal.SIGTERM)
        _, watch_err = watch.communicate(timeout=120)
    for args, _, err, code in results:
        assert code == 0, f"{args}: {err}"
    assert watch.returncode == 0, watch_err
    assert "Traceback" not in watch_err

    assert not failures, failures[:5]
    assert searches > 0
    assert all(r.returncode == 0 for r in cli_reads), [r.stderr for r in cli_reads]
    status = Brain(root).status(verify=True)
    assert status.clean, status.to_dict()
    assert status.history == "current"
    indexed = _indexed(root)
    assert {"new/one.md", "new/two.md", "log/decisions 2024.md"} <= indexed
    assert "diary/2024-03-14.md" not in indexed and "log/decisions.md" not in indexed


def _indexed(root: Path) -> set[str]:
    from brain.store import SqliteStore

    store = SqliteStore(root / ".brain" / "brain.sqlite", create=False)
    try:
        return set(store.all_files())
    finally:
        store.close()
