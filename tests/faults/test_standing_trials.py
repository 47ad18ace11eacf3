"""Standing trials: what bad luck does to a notes folder, with real processes throughout.

- SIGKILL at random points of `brain index` and of `brain schedule --once` (the
  nightly full rebuild), each kill followed by SQLite's and FTS5's integrity
  checks, a search, and a clean re-run after which `status --verify` is clean.
- A full disk (a small tmpfs under the notes' .brain folder) during `brain index`
  and during the rebuild: one clear line, the old index intact and searched while
  the disk is still full, a re-run converges.
- Every door open on one folder at once: `brain serve`, `brain mcp`, commits
  through the post-commit hook, a nightly rebuild and CLI searches.

Random choices come from one seed, printed in the summary and settable with
BRAIN_FAULT_SEED; BRAIN_FAULT_KILLS sets the number of kills (default 20) and
BRAIN_FAULT_SECONDS how long the doors run together (default 45). No assertion
is about time: timeouts only stop a hung run.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from brain import Brain
from helpers import git, init_repo, run_cli, write
from live_servers import brain_env, http_server, mcp_session

pytestmark = [pytest.mark.faults, pytest.mark.slow]

SEED = int(os.environ.get("BRAIN_FAULT_SEED") or random.SystemRandom().randrange(1 << 32))
KILLS = int(os.environ.get("BRAIN_FAULT_KILLS") or 20)
DOORS_SECONDS = float(os.environ.get("BRAIN_FAULT_SECONDS") or 45)
# Every note holds this word, so a keyword search must always find something.
COMMON = "harbour"
WORDS = (
    "crane ledger invoice glacier pasta ridge lantern backup nginx clinic orchard meeting "
    "railway tomato chapter compiler violin garden mortgage ferry kernel basil tunnel"
).split()
# Generous bounds that only stop a hung process (a loaded 2-core machine is slow).
TIMEOUT = 300.0


# ---------------------------------------------------------------- shared checks


def note_text(rng: random.Random, title: str, mark: str) -> str:
    """A small note (one chunk) with the common word and a unique `mark` word."""
    sentences = [" ".join(rng.choice(WORDS) for _ in range(9)) for _ in range(3)]
    return f"# {title}\n\nThe {COMMON} note {mark}. " + ". ".join(sentences) + ".\n"


# Consonants but y and s: no tokenizer splits such a word and no stemmer changes it (English turned
# "zqy" into "zqi", another note's mark, so two notes held the same keyword: a tie, not a mix).
MARK_LETTERS = "bcdfghjklmnpqrtvwxz"


def mark(n: int) -> str:
    """A word no other note holds, whatever the stemmer."""
    letters = ""
    while True:
        n, digit = divmod(n, len(MARK_LETTERS))
        letters = MARK_LETTERS[digit] + letters
        if n == 0:
            return "zq" + letters


def database(root: Path) -> Path:
    """Where brain keeps the index of `root` by default."""
    return root / ".brain" / "brain.sqlite"


def index_problems(root: Path) -> list[str]:
    """What is wrong with the index on disk: SQLite's and FTS5's integrity checks, files without chunks."""
    problems: list[str] = []
    conn = sqlite3.connect(database(root), timeout=60, isolation_level=None)
    try:
        rows = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        if rows != ["ok"]:
            problems.append(f"integrity_check: {rows[:3]}")
        try:
            # Compares the FTS5 index with the chunks table it is built from.
            conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
        except sqlite3.Error as exc:
            problems.append(f"FTS5 integrity-check: {exc}")
        hollow = conn.execute("SELECT count(*) FROM files WHERE id NOT IN (SELECT file_id FROM chunks)").fetchone()[0]
        if hollow:
            problems.append(f"{hollow} indexed files have no chunks")
    except sqlite3.Error as exc:
        problems.append(f"cannot read the index: {exc}")
    finally:
        conn.close()
    return problems


def search_paths(root: Path, query: str) -> list[str] | str:
    """The paths a keyword `brain search` finds (a real process), or what went wrong."""
    done = run_cli("--root", str(root), "search", "--mode", "bm25", "--json", "-k", "50", query, timeout=TIMEOUT)
    if done.returncode != 0:
        return f"search exited {done.returncode}: {done.stderr.strip()[-300:]}"
    return [hit["path"] for hit in json.loads(done.stdout)["results"]]


def verify_problems(root: Path) -> list[str]:
    """`brain status --verify` must exit 0 and call the index clean."""
    done = run_cli("--root", str(root), "status", "--verify", "--json", timeout=TIMEOUT)
    if done.returncode != 0:
        return [f"status --verify exited {done.returncode}: {done.stdout.strip()[-400:]} {done.stderr.strip()[-200:]}"]
    return [] if json.loads(done.stdout)["clean"] else ["status --verify is not clean"]


def paths_indexed_with(searcher: Any, word: str) -> set[str]:
    """The paths whose indexed text holds `word` itself (stemmed as the index stores it).

    Not a plain search: that also searches a word's nearest index words (typo
    corrections), and the marks of one note's successive texts differ by a letter.
    """
    rows = searcher.store.conn.execute(
        "SELECT DISTINCT files.path FROM chunks_fts JOIN chunks ON chunks.id = chunks_fts.rowid "
        "JOIN files ON files.id = chunks.file_id WHERE chunks_fts MATCH ?", (searcher.keyword_query(word),))
    return {row[0] for row in rows}


def indexed_paths(root: Path) -> set[str]:
    """The paths the index holds, read with SQLite directly."""
    conn = sqlite3.connect(database(root), timeout=60)
    try:
        return {row[0] for row in conn.execute("SELECT path FROM files")}
    finally:
        conn.close()


def notes_on_disk(root: Path) -> set[str]:
    """The notes (*.md) under `root`, hidden folders (.brain, .git) left out."""
    return {
        p.relative_to(root).as_posix() for p in root.rglob("*.md") if not p.relative_to(root).parts[0].startswith(".")
    }


def record(figures: list[str], line: str) -> None:
    """Keep a figure for the session summary, and print it for `-s` runs."""
    figures.append(line)
    print(line)


# ---------------------------------------------------------------- SIGKILL trials


NOTES = 60
CHANGED_PER_TRIAL = 8


def mutate(rng: random.Random, root: Path, serial: int) -> None:
    """Give the next run real work: rewrite some notes, add two, delete one, rename one."""
    names = sorted(p.name for p in root.glob("*.md"))
    for number, name in enumerate(rng.sample(names, CHANGED_PER_TRIAL)):
        write(root, {name: note_text(rng, name, mark(serial * 100 + number))})
    for extra in range(2):
        write(root, {f"t{serial:03}-{extra}.md": note_text(rng, f"new {serial}", mark(serial * 100 + 50 + extra))})
    gone, moved = rng.sample(names, 2)
    (root / gone).unlink()
    if (root / moved).exists():
        (root / moved).rename(root / f"r{serial:03}-{moved}")


def brain_files(root: Path) -> dict[str, tuple[int, int]]:
    """Size and mtime of the database files: a change means the run has started writing."""
    seen: dict[str, tuple[int, int]] = {}
    for path in (root / ".brain").glob("brain.sqlite*"):
        if not path.name.endswith(".lock"):
            with contextlib.suppress(FileNotFoundError):
                st = path.stat()
                seen[path.name] = (st.st_size, st.st_mtime_ns)
    return seen


COMMANDS = {"index": ["index"], "schedule --once": ["schedule", "--once"]}


def run_and_kill(
    root: Path, command: str, delay: float | None, after_first_write: bool
) -> tuple[bool, float, float | None]:
    """Start `brain COMMAND`; SIGKILL it `delay` seconds after its start (or after its first
    write), unless it ends first. Returns (killed, seconds run, seconds to the first write)."""
    before = brain_files(root)
    process = subprocess.Popen([sys.executable, "-m", "brain", "--root", str(root), *COMMANDS[command]],
                               env=brain_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    first_write: float | None = None
    deadline = started + TIMEOUT
    kill_at = None if delay is None or after_first_write else started + delay
    try:
        while process.poll() is None and time.monotonic() < deadline:
            now = time.monotonic()
            if first_write is None and brain_files(root) != before:
                first_write = now - started
                if delay is not None and after_first_write:
                    kill_at = now + delay
            if kill_at is not None and now >= kill_at:
                process.send_signal(signal.SIGKILL)
                process.wait(TIMEOUT)
                return True, now - started, first_write
            time.sleep(0.01)
        if process.poll() is None:
            raise AssertionError(f"`brain {command}` hung for {TIMEOUT:.0f} s")
        return False, time.monotonic() - started, first_write
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(60)


def test_sigkill_at_random_points_of_index_and_nightly_rebuild(tmp_path: Path, fault_figures: list[str]) -> None:
    rng = random.Random(SEED)
    root = tmp_path / "notes"
    write(root, {f"n{i:03}.md": note_text(rng, f"note {i}", mark(i)) for i in range(NOTES)})
    brain = Brain(root)  # the clean re-runs happen here: the model loads once, in this process
    brain.index()
    began = time.monotonic()
    # The first run of each command is left to finish: it measures how long a run takes
    # to start writing and to end, so the kills can land anywhere inside a run.
    timing: dict[str, tuple[float, float]] = {}
    kills = {name: 0 for name in COMMANDS}
    before_first_write = 0
    runs = intact = 0
    problems: list[str] = []
    serial = 1000
    while sum(kills.values()) < KILLS and runs < 3 * KILLS + 2:
        command = min(COMMANDS, key=lambda name: (name in timing, kills[name], rng.random()))
        serial += 1
        mutate(rng, root, serial)
        if command not in timing:
            _, total, first = run_and_kill(root, command, None, False)
            timing[command] = (first if first is not None else total, total)
            killed = False
        else:
            first, total = timing[command]
            # A third of the kills anywhere from the start (model loading, reading), the rest once writing began.
            after_write = rng.random() >= 1 / 3
            delay = rng.uniform(0, max(total - first, 0.05)) if after_write else rng.uniform(0, total)
            killed, _, wrote_at = run_and_kill(root, command, delay, after_write)
            if killed:
                kills[command] += 1
                before_first_write += wrote_at is None
            else:  # runs got quicker than the measured one: aim earlier from now on
                timing[command] = (first * 0.8, total * 0.8)
        runs += 1
        found = index_problems(root)
        reader = Brain(root)  # a fresh one, closed at once: no connection of this process outlives the check
        try:
            if not reader.search(COMMON, mode="bm25").results:
                found.append(f"a search for {COMMON!r} after the run found nothing")
        except Exception as exc:
            found.append(f"a search for {COMMON!r} after the run failed: {type(exc).__name__}: {exc}")
        finally:
            reader.close()
        try:
            brain.index()  # the clean re-run
        except Exception as exc:
            found.append(f"the clean re-run failed: {type(exc).__name__}: {exc}")
        found += index_problems(root) + verify_problems(root)
        if found:
            problems.append(f"run {runs} (`brain {command}`, {'killed' if killed else 'finished'}): {'; '.join(found)}")
        else:
            intact += 1
    # A last nightly rebuild runs to its end on whatever the kills left, and cleans up after them.
    done = run_cli("--root", str(root), "schedule", "--once", timeout=TIMEOUT)
    leftovers = sorted(p.name for p in (root / ".brain").glob("brain.sqlite.rebuild*"))
    seconds = time.monotonic() - began
    record(fault_figures, (
        f"SIGKILL trials, seed {SEED}: {runs} runs, {sum(kills.values())} killed mid-run "
        f"({kills['index']} index, {kills['schedule --once']} schedule --once; "
        f"{before_first_write} before their first write), "
        f"{intact} of {runs} left an intact index that converged; {seconds:.0f} s"
    ))
    assert sum(kills.values()) >= KILLS, (
        f"only {sum(kills.values())} of {runs} runs were still going when killed (seed {SEED})"
    )
    assert not problems, f"seed {SEED}:\n" + "\n".join(problems)
    assert done.returncode == 0, done.stderr
    assert not leftovers, leftovers
    assert not index_problems(root) and not verify_problems(root)
    assert indexed_paths(root) == notes_on_disk(root)


# ---------------------------------------------------------------- full disk


DISK_MB = 16


class KnownFindings:
    """Checks that fail until a known fault is fixed: collected, then one xfail naming each.

    Every other assertion of the test runs first and stays strict; once the fix is
    in, the test passes, and the check can become a plain assert.
    """

    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = {}

    def check(self, ok: bool, finding: str, what: str) -> None:
        """Note `what` against `finding` (e.g. VANISHED) when `ok` is false."""
        if not ok:
            self.seen.setdefault(finding, []).append(what)

    def xfail_if_any(self) -> None:
        """Mark the test xfail naming each finding still seen (strict=False in effect: a fix makes it pass)."""
        if self.seen:
            pytest.xfail("; ".join(
                f"{finding}: {whats[0]} (seen {len(whats)}x)" for finding, whats in sorted(self.seen.items())
            ))


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A notes folder whose .brain folder is a small tmpfs of its own (skipped where mounting is impossible)."""
    folder = tmp_path / "notes" / ".brain"
    folder.mkdir(parents=True)
    if not sys.platform.startswith("linux"):
        pytest.skip("a full disk is a small tmpfs here, and tmpfs is Linux only")
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m,mode=0755", "tmpfs", str(folder)],
                              capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        pytest.skip("a full disk is a small tmpfs here, and there is no `mount` command")
    if done.returncode != 0:
        pytest.skip(
            f"a full disk is a small tmpfs here, and mounting one needs root: {done.stderr.strip() or done.returncode}"
        )
    try:
        yield folder.parent
    finally:
        if subprocess.run(["umount", str(folder)], capture_output=True, timeout=60).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=60)


def fill(root: Path, leave: int) -> Path:
    """Fill the .brain disk with a filler file until `leave` bytes are free; returns the filler."""
    filler = root / ".brain" / "filler"
    stats = os.statvfs(filler.parent)
    wanted = stats.f_bavail * stats.f_frsize - leave
    block = b"\0" * (1 << 20)
    with open(filler, "ab") as out:
        with contextlib.suppress(OSError):  # ENOSPC: as full as it gets
            while wanted > 0:
                wanted -= out.write(block[: min(len(block), wanted)])
                out.flush()
    return filler


def assert_one_line_error(stderr: str, what: str) -> None:
    """A failed command says why in one line, never a traceback (F18)."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert "Traceback" not in stderr and len(lines) == 1, f"{what} wrote {len(lines)} lines: {stderr.strip()[-300:]!r}"


def copies(root: Path, folder: str, count: int) -> dict[str, str]:
    """New notes with the text of old ones (never n07): the writes of new files, with vectors
    from the cache, so a run needs no model and the trials stay cheap on a busy machine."""
    return {
        f"{folder}/n{i:02}.md": (root / f"old/n{20 + i % 20:02}.md").read_text(encoding="utf-8") for i in range(count)
    }


def assert_not_called_damaged(output: str, what: str) -> None:
    """An intact index is never called damaged: the advice that goes with it is to delete it (F12)."""
    assert "damaged" not in output, f"{what} calls the intact index damaged: {output.strip()[-200:]!r}"


# Two faults the trials found that are not among issue 13's findings (see docs/reliability.md).
VANISHED = "a note deleted during the rebuild"
EMPTY_ANSWER = "a search that found nothing during writes"


def assert_usable_while_full(root: Path, leave: int) -> None:
    """The old index answers while the disk is still full: with no byte free SQLite cannot create the -wal/-shm
    files a reader of a WAL database needs once they are gone, and brain reads the file immutable instead."""
    hits = search_paths(root, mark(7))
    assert hits == ["old/n07.md"], f"with {leave} bytes free the intact index cannot be read: {hits}"


def test_a_full_disk_during_index_keeps_the_old_index(small_disk: Path, fault_figures: list[str]) -> None:
    rng = random.Random(SEED + 1)
    root = small_disk
    write(root, {f"old/n{i:02}.md": note_text(rng, f"old {i}", mark(i)) for i in range(40)})
    Brain(root).index()
    failed = fitted = 0
    # From no byte left to a little room: the run fails at its start, mid-way, or not at all.
    for level, leave in enumerate((0, 128 << 10, 4 << 20)):
        write(root, copies(root, f"batch{level}", 20))
        filler = fill(root, leave)
        done = run_cli("--root", str(root), "index", timeout=TIMEOUT)
        if done.returncode == 0:
            fitted += 1
        else:
            failed += 1
            assert done.returncode == 1, done.stderr
            assert_one_line_error(done.stderr, f"`brain index` on a full disk ({leave} bytes free)")
            assert any(word in done.stderr.lower() for word in ("disk", "space", "full")), done.stderr
            assert_not_called_damaged(done.stderr, f"`brain index` with {leave} bytes free")
        assert_usable_while_full(root, leave)
        filler.unlink()
        # Whatever was committed before the disk filled is whole, and every old note is still found.
        assert index_problems(root) == []
        assert search_paths(root, mark(7)) == ["old/n07.md"]
    done = run_cli("--root", str(root), "index", timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert index_problems(root) == [] and verify_problems(root) == []
    assert indexed_paths(root) == notes_on_disk(root)
    record(fault_figures, f"full disk during `brain index`: {failed} runs failed, {fitted} fitted, "
                          "old index intact and converged after each")


def test_a_full_disk_during_the_nightly_rebuild_keeps_the_old_index(small_disk: Path, fault_figures: list[str]) -> None:
    rng = random.Random(SEED + 2)
    root = small_disk
    write(root, {f"old/n{i:02}.md": note_text(rng, f"old {i}", mark(i)) for i in range(40)})
    Brain(root).index()
    db = database(root)
    inode = db.stat().st_ino
    failed = fitted = 0
    size = db.stat().st_size
    # No room at all, room for part of the new database and its journal, room for the whole rebuild.
    for level, leave in enumerate((0, 3 * size, 6 << 20)):
        before = indexed_paths(root)
        write(root, copies(root, f"batch{level}", 10))
        filler = fill(root, leave)
        done = run_cli("--root", str(root), "schedule", "--once", timeout=TIMEOUT)
        leftovers = sorted(p.name for p in (root / ".brain").glob("brain.sqlite.rebuild*"))
        if done.returncode == 0:
            fitted += 1
            # A rebuild that fell back to renaming leaves a running server on the deleted file.
            assert db.stat().st_ino == inode, f"the rebuild replaced the database file ({leave} bytes free)"
        else:
            failed += 1
            assert done.returncode == 1, done.stderr
            assert "ERROR nightly rebuild failed: " in done.stderr, done.stderr
            assert "Traceback" not in done.stderr and "Logging error" not in done.stderr, done.stderr[-500:]
            assert_not_called_damaged(done.stderr, f"`brain schedule --once` with {leave} bytes free")
            status = run_cli("--root", str(root), "status", timeout=TIMEOUT)
            assert_not_called_damaged(status.stdout + status.stderr,
                                      f"`brain status` after a rebuild with {leave} bytes free")
        assert not leftovers, f"leftover {leftovers} after a rebuild with {leave} bytes free"
        assert_usable_while_full(root, leave)
        filler.unlink()
        # The rebuild is all or nothing: the new index, or all of the old one.
        assert indexed_paths(root) == (notes_on_disk(root) if done.returncode == 0 else before)
        assert index_problems(root) == []
        assert search_paths(root, mark(7)) == ["old/n07.md"]
    # The CLI rebuild on a full disk: one line, and the same old index.
    before = indexed_paths(root)
    write(root, copies(root, "last", 5))
    filler = fill(root, 0)
    done = run_cli("--root", str(root), "index", "--full", timeout=TIMEOUT)
    assert done.returncode == 1, done.stderr
    assert_one_line_error(done.stderr, "`brain index --full` on a full disk")
    assert_not_called_damaged(done.stderr, "`brain index --full` on a full disk")
    filler.unlink()
    assert indexed_paths(root) == before and index_problems(root) == []
    assert not list((root / ".brain").glob("brain.sqlite.rebuild*"))
    done = run_cli("--root", str(root), "schedule", "--once", timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert index_problems(root) == [] and verify_problems(root) == []
    assert indexed_paths(root) == notes_on_disk(root)
    record(fault_figures, f"full disk during the nightly rebuild: {failed + 1} runs failed, {fitted} fitted, "
                          "old index intact and converged")


# ---------------------------------------------------------------- every door at once


# Notes the commits change but never delete: the doors read them whole between searches.
ANCHORS = ("d0/n00.md", "d1/n01.md")


class Tally:
    """Requests and failures of one door, from its own thread."""

    def __init__(self, door: str) -> None:
        self.door = door
        self.requests = 0
        self.errors: list[str] = []
        self.empty = 0
        self.empties: list[str] = []

    def failed(self, what: str) -> None:
        """Count one failed request, keeping the end of its message."""
        self.errors.append(what[-300:])

    def found_nothing(self, what: str) -> None:
        """Count one answer without results (every note holds the words searched), keeping what it said."""
        self.empty += 1
        self.empties.append(what[-400:])

    def line(self) -> str:
        """The door's figures for the summary."""
        return f"{self.door} {self.requests} ({len(self.errors)} errors, {self.empty} empty)"


def http_door(url: str, stop: threading.Event, tally: Tally) -> None:
    """Search over HTTP until stopped, keyword and hybrid in turn; a 5xx or a refused request is an error."""
    import httpx

    with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
        while not stop.is_set():
            mode = "hybrid" if tally.requests % 3 == 0 else "bm25"
            try:
                if tally.requests % 4 == 3:  # a read of a note that is never deleted, as agents do after a search
                    response = client.get("/file", params={"path": ANCHORS[0]})
                else:
                    response = client.post("/search", json={"query": f"{COMMON} crane", "mode": mode, "limit": 5})
            except httpx.HTTPError as exc:
                tally.failed(f"{type(exc).__name__}: {exc}")
            else:
                if response.status_code != 200:
                    tally.failed(f"HTTP {response.status_code}: {response.text}")
                elif "results" in response.json() and not response.json()["results"]:
                    tally.found_nothing(f"{mode} at {time.strftime('%H:%M:%S')}: {response.text}")
            tally.requests += 1
            stop.wait(0.1)


def mcp_door(root: Path, log: Path, stop: threading.Event, tally: Tally) -> None:
    """Search through `brain mcp` with the SDK's client until stopped."""
    import anyio

    async def run() -> None:
        async with mcp_session("--root", str(root), log=log) as session:
            while not stop.is_set():
                if tally.requests % 4 == 3:
                    result = await session.call_tool("memory_get_file", {"path": ANCHORS[1]})
                else:
                    result = await session.call_tool(
                        "memory_search", {"query": f"{COMMON} ledger", "mode": "bm25", "limit": 5}
                    )
                tally.requests += 1
                if result.is_error:
                    tally.failed(f"MCP error: {result.content[0].text if result.content else result}")
                elif (
                    "results" in json.loads(result.content[0].text)
                    and not json.loads(result.content[0].text)["results"]
                ):
                    tally.found_nothing(f"at {time.strftime('%H:%M:%S')}: {result.content[0].text}")
                await anyio.sleep(0.1)

    try:
        anyio.run(run)
    except BaseException as exc:  # the server died or the session broke: report it, do not hang the test
        tally.failed(f"MCP session ended: {type(exc).__name__}: {exc}")


def cli_door(root: Path, stop: threading.Event, tally: Tally) -> None:
    """`brain search` as a fresh process, again and again, until stopped."""
    while not stop.is_set():
        found = search_paths(root, f"{COMMON} garden")
        tally.requests += 1
        if isinstance(found, str):
            tally.failed(found)
        elif not found:
            tally.found_nothing(f"at {time.strftime('%H:%M:%S')}")
        stop.wait(0.3)


def wait_for_hooks(root: Path) -> dict[str, Any]:
    """Until the background hook runs have caught the index up with HEAD (bounded)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        done = run_cli("--root", str(root), "status", "--json", timeout=TIMEOUT)
        status = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
        if status.get("head_commit") and status.get("indexed_commit") == status.get("head_commit"):
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"the hooks never caught up with HEAD: {done.stdout[-500:]} {done.stderr[-300:]}")
        time.sleep(1)


def test_every_door_at_once_on_one_folder(tmp_path: Path, fault_figures: list[str]) -> None:
    rng = random.Random(SEED + 3)
    root = init_repo(tmp_path / "notes")
    latest: dict[str, str] = {}  # note -> the mark of its latest committed text
    retired: list[tuple[str, str]] = []  # (note, mark) of texts since replaced or deleted
    serial = 0

    def put(path: str) -> None:
        nonlocal serial
        serial += 1
        if path in latest:
            retired.append((path, latest[path]))
        latest[path] = mark(5000 + serial)
        write(root, {path: note_text(rng, path, latest[path])})

    for i in range(30):
        put(f"d{i % 3}/n{i:02}.md")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "notes")
    assert run_cli("--root", str(root), "index", timeout=TIMEOUT).returncode == 0
    installed = run_cli("--root", str(root), "hooks", "install", timeout=TIMEOUT)
    assert installed.returncode == 0, installed.stderr

    stop = threading.Event()
    tallies = {door: Tally(door) for door in ("HTTP", "MCP", "CLI")}
    commits = 0
    rebuild: subprocess.Popen[str] | None = None
    rebuild_err = ""
    began = time.monotonic()
    with http_server("--root", str(root), timeout=TIMEOUT) as server:
        doors = [
            threading.Thread(target=http_door, args=(server.url, stop, tallies["HTTP"]), daemon=True),
            threading.Thread(target=mcp_door, args=(root, tmp_path / "mcp.log", stop, tallies["MCP"]), daemon=True),
            threading.Thread(target=cli_door, args=(root, stop, tallies["CLI"]), daemon=True),
        ]
        for door in doors:
            door.start()
        try:
            deadline = time.monotonic() + DOORS_SECONDS
            # Commits through the post-commit hook: change, add and delete notes; the nightly rebuild half-way.
            while time.monotonic() < deadline and commits < 400:
                if rebuild is None and time.monotonic() > deadline - DOORS_SECONDS / 2:
                    rebuild = subprocess.Popen(
                        [sys.executable, "-m", "brain", "--root", str(root), "schedule", "--once"],
                        env=brain_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    )
                roll = rng.random()
                if roll < 0.1 and len(latest) > 20:
                    gone = rng.choice(sorted(set(latest) - set(ANCHORS)))
                    retired.append((gone, latest.pop(gone)))
                    (root / gone).unlink()
                elif roll < 0.3:
                    put(f"d{serial % 3}/new{serial:03}.md")
                else:
                    for path in rng.sample(sorted(latest), rng.randint(1, 3)):
                        put(path)
                git(root, "add", "-A")
                git(root, "commit", "-q", "-m", f"change {commits}")
                commits += 1
                time.sleep(rng.uniform(0.2, 1.0))
            if rebuild is not None:
                rebuild_err = rebuild.communicate(timeout=TIMEOUT)[1]
            status = wait_for_hooks(root)
        finally:
            stop.set()
            for door in doors:
                door.join(TIMEOUT)
    seconds = time.monotonic() - began
    assert all(not door.is_alive() for door in doors)
    # Every note's latest committed text is found, and no replaced or deleted text is.
    lost: list[str] = []
    stale: list[str] = []
    searcher = Brain(root)
    try:
        for path, word in sorted(latest.items()):
            if path not in [hit.path for hit in searcher.search(word, mode="bm25", limit=10).results]:
                lost.append(f"{path} ({word})")
        for path, word in retired:
            if path in paths_indexed_with(searcher.searcher, word):
                stale.append(f"{path} ({word})")
    except Exception as exc:  # a damaged index: reported with the other checks below
        lost.append(f"searching failed: {type(exc).__name__}: {exc}")
    finally:
        searcher.close()
    hook_log = (
        (root / ".brain" / "hook.log").read_text(encoding="utf-8") if (root / ".brain" / "hook.log").exists() else ""
    )
    hook_failures = [line for line in hook_log.splitlines() if ": failed:" in line]
    errors = sum(len(t.errors) for t in tallies.values())
    record(fault_figures, (
        f"every door at once, seed {SEED}: {seconds:.0f} s, {commits} commits through the hook, "
        f"searches: {', '.join(t.line() for t in tallies.values())}; "
        f"rebuild exit {rebuild.returncode if rebuild else 'not run'}; "
        f"{len(hook_failures)} hook failures, {len(lost)} lost writes, {len(stale)} stale texts, "
        f"{errors} error responses"
    ))
    served = {door: tallies[door].errors[:2] for door in ("HTTP", "MCP") if tallies[door].errors}
    # The /file and memory_get_file reads between searches once made each server drop its own
    # SQLite locks, and the next writer corrupted the index under it (F1).
    assert not served, served
    assert not tallies["CLI"].errors, tallies["CLI"].errors[:3]
    assert not hook_failures, hook_failures[:3]
    assert status["indexed_commit"] == git(root, "rev-parse", "HEAD").strip()
    assert index_problems(root) == [] and verify_problems(root) == []
    assert not lost, lost[:5]
    assert not stale, stale[:5]
    assert indexed_paths(root) == notes_on_disk(root) == set(latest)
    assert rebuild is not None, "the rebuild never started"
    known = KnownFindings()
    if rebuild.returncode != 0:
        # A note deleted by a commit while the rebuild read the folder was reported failed, and the
        # nightly run exited 1, though the note was simply gone; fixed (it counts as removed), and
        # named here should it come back.
        vanished = [line for line in rebuild_err.splitlines() if line.strip().startswith("failed ")]
        gone = ("No such file or directory", "deleted while being indexed")
        assert vanished and all(any(why in line for why in gone) for line in vanished), rebuild_err[-500:]
        known.check(False, VANISHED, vanished[0].strip())
    # Every note holds the words searched, so an answer without results is wrong. Seen once
    # (1 of 384 HTTP searches, in 1 of 8 runs), not yet explained: kept, with what it said.
    for tally in tallies.values():
        for what in tally.empties:
            known.check(False, EMPTY_ANSWER, f"{tally.door} {what}")
    known.xfail_if_any()


# ---------------------------------------------------------------- searches during full rebuilds

REBUILDS = int(os.environ.get("BRAIN_FAULT_REBUILDS") or 6)
REBUILD_NOTES = 30


def rebuild_searcher(url: str, stop: threading.Event, marks: dict[str, str], tally: Tally, wrong: list[str]) -> None:
    """Hybrid searches for one note's unique word at a time, until stopped: that note must be among the hits,
    and the one the keyword half scored highest, since no other note holds the word.

    Every note is asked for, so where the word's note ranks (a nonsense word's vector is noise, and notes
    close to it in meaning may outrank it, as they do without a rebuild) never decides; a mix of two
    indexes shows as the keyword score landing on another file's chunk.
    """
    import httpx

    words = sorted(marks)
    with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
        while not stop.is_set():
            word = words[tally.requests % len(words)]
            tally.requests += 1
            try:
                response = client.post(
                    "/search", json={"query": word, "mode": "hybrid", "limit": len(marks) + REBUILDS}
                )
            except httpx.HTTPError as exc:
                tally.failed(f"{type(exc).__name__}: {exc}")
                continue
            if response.status_code != 200:
                tally.failed(f"HTTP {response.status_code}: {response.text}")
                continue
            results = response.json()["results"]
            if not results:
                tally.found_nothing(f"{word}: no results")
            elif max(results, key=lambda hit: hit["keyword_score"])["path"] != marks[word]:
                top = sorted(results, key=lambda hit: -hit["keyword_score"])[:3]
                wrong.append(f"{word}: keyword half's best {[(hit['path'], hit['keyword_score']) for hit in top]}, "
                             f"wanted {marks[word]}")


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_searches_during_full_rebuilds_answer_from_one_index(
    tmp_path: Path, store: str, request: pytest.FixtureRequest, fault_figures: list[str]
) -> None:
    """Two clients search a warm server while `brain index --full` rebuilds under it, each time after a new
    first file shifted every chunk id: every answer comes from the old index or the new one, never a mix."""
    rng = random.Random(SEED)
    env = {"BRAIN_STORE": request.getfixturevalue("store_url") if store == "postgres" else ""}
    root = tmp_path / "notes"
    marks = {mark(n): f"n{n:02d}.md" for n in range(REBUILD_NOTES)}
    write(root, {path: note_text(rng, path, word) for word, path in marks.items()})
    assert run_cli("--root", str(root), "index", env=env).returncode == 0
    wrong: list[str] = []
    tallies = [Tally(f"client {n}") for n in (1, 2)]
    stop = threading.Event()
    with http_server("--root", str(root), env=env) as server:
        clients = [threading.Thread(target=rebuild_searcher, args=(server.url, stop, marks, t, wrong)) for t in tallies]
        for client in clients:
            client.start()
        try:
            for number in range(REBUILDS):
                # Sorted first, so the rebuild writes it first and every other chunk's id moves.
                write(root, {f"a{number:02d}.md": note_text(rng, "first", "plain words only")})
                done = run_cli("--root", str(root), "index", "--full", env=env, timeout=TIMEOUT)
                assert done.returncode == 0, done.stderr
        finally:
            stop.set()
            for client in clients:
                client.join(TIMEOUT)
    record(fault_figures, f"rebuilds under search ({store}): {REBUILDS} rebuilds, "
           + ", ".join(t.line() for t in tallies) + f", {len(wrong)} answered with another file")
    assert not wrong, wrong[:5]
    assert not [e for t in tallies for e in t.errors], [e for t in tallies for e in t.errors][:3]
    assert not [e for t in tallies for e in t.empties], [e for t in tallies for e in t.empties][:3]
