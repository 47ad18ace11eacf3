#!/usr/bin/env python3
"""Benchmark the git hook: what it adds to `git commit`, and how long until a commit is searchable.

    python tools/bench/bench_hook.py [--runs 11] [--json]

It copies the example notes into a temporary git repository, indexes them,
installs the hooks (background mode) and then measures, whole process each
time (`git commit` as a subprocess, wall clock):

  * commit time with the hooks against the same commit with hooks switched off
    (`-c core.hooksPath=<empty folder>`), alternating, median of --runs each; every
    background run is waited for before the next commit so runs do not overlap;
  * commit → searchable: append a new word to a note, commit, and poll the index
    (BM25) until the word is found; for an edit (a fresh process loads the model
    to embed) and for a pure rename (nothing to embed);
  * a commit touching no note: time until the hook's background run has logged;
  * the same one-file edit re-indexed in a process that already has the model.

Numbers go to stdout (and JSON with --json); docs/performance.md keeps a copy.

    python tools/bench/bench_hook.py --against OLD_CHECKOUT [--rounds 3] [--runs 7]

runs OLD_CHECKOUT's own tools/bench/bench_hook.py and this one by turns, each a
whole run in its own process, and prints each measure's median over the rounds
for both versions and their ratio: the hook before and after a change, under the
same load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT / "tools" / "lib"))

from brain import Brain  # noqa: E402
from brain.search import IndexProfile, fts_match  # noqa: E402
from brain.store import SqliteStore  # noqa: E402
from compiled_bytecode import compiled  # noqa: E402


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def timed_commit(root: Path, message: str, hooks_off: Path | None = None) -> float:
    git(root, "add", "-A")
    config = ["-c", f"core.hooksPath={hooks_off}"] if hooks_off is not None else []
    started = time.perf_counter()
    subprocess.run(["git", *config, "commit", "-q", "-m", message], cwd=root, check=True, capture_output=True)
    return time.perf_counter() - started


def wait_for_log(root: Path, text: str, timeout: float = 300.0) -> float:
    """Seconds until the hook log contains `text`."""
    log = root / ".brain" / "hook.log"
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if log.exists() and text in log.read_text(encoding="utf-8"):
            return time.perf_counter() - started
        time.sleep(0.005)
    raise SystemExit(f"the hook never logged {text!r}; see {log}")


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def until_searchable(root: Path, word: str, started: float, timeout: float = 300.0) -> float:
    store = SqliteStore(root / ".brain" / "brain.sqlite", create=False)
    match = fts_match(word, IndexProfile.of(store).stems)
    assert match is not None
    try:
        while time.perf_counter() - started < timeout:
            if store.bm25(match, 1)[0]:
                return time.perf_counter() - started
            time.sleep(0.005)
    finally:
        store.close()
    raise SystemExit(f"{word!r} never became searchable")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="commits per measurement (median reported)")
    parser.add_argument("--searchable-runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--against", type=Path, metavar="OLD_CHECKOUT",
                        help="alternate whole runs with that checkout's own copy of this benchmark")
    parser.add_argument("--rounds", type=int, default=3, help="turns each version takes (with --against)")
    args = parser.parse_args()
    if args.against:
        return against(args.against.resolve(), args.rounds, args.runs, args.searchable_runs)

    work = Path(tempfile.mkdtemp(prefix="brain-bench-hook-"))
    compiled(os.environ, work / "pycache")  # the hook's processes inherit it
    try:
        root = work / "notes"
        shutil.copytree(PROJECT / "examples" / "brain", root, ignore=shutil.ignore_patterns(".brain"))
        git(root, "init", "-q", "-b", "main")
        git(root, "config", "user.email", "bench@example.com")
        git(root, "config", "user.name", "Bench")
        git(root, "config", "commit.gpgsign", "false")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "notes")
        brain = Brain(root)
        brain.index()
        brain.install_hooks()
        empty_hooks = work / "no-hooks"
        empty_hooks.mkdir()
        counter = 0

        def edit_non_note() -> None:
            nonlocal counter
            counter += 1
            (root / "bench.log").write_text(f"commit {counter}\n", encoding="utf-8")

        # 1. Time added to `git commit`: the same kind of commit with and without the hooks, alternating.
        with_hook, without_hook = [], []
        for _ in range(args.runs):
            edit_non_note()
            without_hook.append(timed_commit(root, "no hook", empty_hooks))
            edit_non_note()
            with_hook.append(timed_commit(root, "hook"))
            wait_for_log(root, f"..{head(root)[:12]}:")  # let the background run finish before the next commit

        # 2. A commit touching no note: time until the background run has logged (process start to finish).
        nothing = []
        for _ in range(max(3, args.runs // 2)):
            edit_non_note()
            started = time.perf_counter()
            timed_commit(root, "not a note")
            nothing.append(time.perf_counter() - started + wait_for_log(root, f"..{head(root)[:12]}: none"))

        # 3. Commit → searchable, for a one-file edit (the background run loads the model) and a pure rename.
        edit_times, rename_times = [], []
        note = root / "notes" / "shell-snippets.md"
        for n in range(args.searchable_runs):
            word = f"benchword{n}x{os.getpid()}"
            note.write_text(note.read_text(encoding="utf-8") + f"\nA line with {word}.\n", encoding="utf-8")
            git(root, "add", "-A")
            started = time.perf_counter()
            subprocess.run(["git", "commit", "-q", "-m", f"edit {n}"], cwd=root, check=True, capture_output=True)
            edit_times.append(until_searchable(root, word, started))
            wait_for_log(root, f"..{head(root)[:12]}:")
        for n in range(args.searchable_runs):
            name = f"renamed-{n}-{os.getpid()}"
            old = note
            note = root / "notes" / f"{name}.md"
            git(root, "mv", str(old), str(note))
            started = time.perf_counter()
            subprocess.run(["git", "commit", "-q", "-m", f"rename {n}"], cwd=root, check=True, capture_output=True)
            rename_times.append(_until_path(root, f"notes/{name}.md", started))
            wait_for_log(root, f"..{head(root)[:12]}:")
        # 4. The same one-file edit re-indexed by a process that already has the model (what `brain watch` does
        #    after its 1.5 s debounce): the part of the hook's time that is not starting Python and torch.
        warm_times = []
        for n in range(args.searchable_runs):
            note.write_text(note.read_text(encoding="utf-8") + f"\nA warm line {n}.\n", encoding="utf-8")
            started = time.perf_counter()
            brain.reindex([note])
            warm_times.append(time.perf_counter() - started)
        git(root, "add", "-A")
        git(root, "-c", f"core.hooksPath={empty_hooks}", "commit", "-q", "-m", "warm edits")
        brain.sync()
        status = Brain(root).status(verify=True)
        assert status.clean, status.to_dict()

        ms = lambda values: round(statistics.median(values) * 1000, 1)  # noqa: E731
        result = {
            "machine": (
                f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
                f"Python {platform.python_version()}, git {git(root, '--version').split()[-1]}"
            ),
            "runs": args.runs,
            "commit_ms_without_hook": ms(without_hook),
            "commit_ms_with_hook": ms(with_hook),
            "hook_adds_ms": round(ms(with_hook) - ms(without_hook), 1),
            "commit_ms_with_hook_max": round(max(with_hook) * 1000, 1),
            "no_note_commit_to_logged_ms": ms(nothing),
            "edit_commit_to_searchable_ms": ms(edit_times),
            "rename_commit_to_searchable_ms": ms(rename_times),
            "warm_reindex_one_edit_ms": ms(warm_times),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:<34} {value}")
    return 0


def against(old: Path, rounds: int, runs: int, searchable_runs: int) -> int:
    """Whole runs of the old checkout's benchmark and this one, by turns; medians per measure and their ratio."""
    scripts = {"before": old / "tools" / "bench" / "bench_hook.py", "after": Path(__file__).resolve()}
    results: dict[str, list[dict[str, object]]] = {name: [] for name in scripts}
    load = [os.getloadavg()[0]]
    pycache = Path(tempfile.mkdtemp(prefix="brain-bench-pycache-"))
    env = compiled(dict(os.environ), pycache)
    for _ in range(rounds):
        for name, script in scripts.items():
            out = subprocess.run([sys.executable, str(script), "--json", "--runs", str(runs),
                                  "--searchable-runs", str(searchable_runs)], capture_output=True, text=True, env=env)
            if out.returncode != 0:
                raise SystemExit(f"{script}: {out.stderr.strip()[-2000:]}")
            results[name].append(json.loads(out.stdout))
    load.append(os.getloadavg()[0])
    shutil.rmtree(pycache, ignore_errors=True)
    print(f"{rounds} rounds of {runs} commits per version, alternating; load average {load[0]:.1f} → {load[1]:.1f}\n")
    print("| measure (ms, median of the rounds' medians) | before | after | after / before |\n|---|---:|---:|---:|")
    for key, value in results["after"][0].items():
        if not isinstance(value, (int, float)) or key == "runs":
            continue
        before = statistics.median(float(r[key]) for r in results["before"])  # type: ignore[arg-type]
        after = statistics.median(float(r[key]) for r in results["after"])  # type: ignore[arg-type]
        ratio = f"{after / before:.2f}" if before > 0 else "–"
        print(f"| {key} | {before:.1f} | {after:.1f} | {ratio} |")
    return 0


def _until_path(root: Path, rel: str, started: float, timeout: float = 300.0) -> float:
    """Seconds from `started` until the index holds a file at `rel` (a rename has no new word to search for)."""
    store = SqliteStore(root / ".brain" / "brain.sqlite", create=False)
    try:
        while time.perf_counter() - started < timeout:
            if store.get_file(rel) is not None:
                return time.perf_counter() - started
            time.sleep(0.005)
    finally:
        store.close()
    raise SystemExit(f"{rel} never reached the index")


if __name__ == "__main__":
    raise SystemExit(main())
