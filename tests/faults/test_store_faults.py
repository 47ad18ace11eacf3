"""Faults of the index file itself, the nightly rebuild and the long-running servers, with real processes.

Each test reproduces one finding of the reliability review (F1, F12, F13, F14,
F15; see docs/reliability.md) against the real `brain` command, the real HTTP
and MCP servers on loopback, real git hooks and real file systems: a small
tmpfs for a full disk, an unprivileged user for an unreadable folder.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from helpers import git, init_repo, run_cli, write
from live_servers import brain_env, http_server, mcp_session
from tmpfs import small_disk

OLD_WORD = "zanzibarquokka"
NEW_WORD = "xylofonmarmot"


def make_notes(root: Path, extra: dict[str, str] | None = None) -> Path:
    """A small notes folder in a git repo with one commit, and its index built by `brain index`."""
    init_repo(root)
    write(root, {
        "travel/alps.md": f"# Alps\n\nThe {OLD_WORD} was seen on the ridge above the hut, day three.\n",
        "work/nginx.md": "# Nginx\n\nThe SSL certificate of the clinic server renews on the first of the month.\n",
        "work/laravel.md": "# Laravel\n\nQueues and jobs for the clinic booking project.\n",
        **(extra or {}),
    })
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "notes")
    done = run_cli("--root", str(root), "index")
    assert done.returncode == 0, done.stderr
    return root


def integrity(db: Path) -> str:
    """PRAGMA integrity_check of the index, read by a connection of this process's own (opened and closed here)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return ";".join(r[0] for r in conn.execute("PRAGMA integrity_check"))
    finally:
        conn.close()


def paths_of(answer: dict[str, Any]) -> list[str]:
    return [hit["path"] for hit in answer["results"]]


def one_line_error(done: subprocess.CompletedProcess[str], fragment: str) -> str:
    """The command failed with one `brain:` line naming the problem, and no traceback."""
    assert done.returncode != 0, done.stdout
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    assert "Traceback" not in done.stderr, done.stderr
    assert lines and lines[-1].startswith("brain:") and fragment in lines[-1], done.stderr
    return lines[-1]


# ---------------------------------------------------------------- F1: a server's SQLite locks


@pytest.mark.slow
def test_f1_http_server_keeps_its_locks_when_another_process_indexes(tmp_path: Path) -> None:
    """/search, /file, then a CLI `brain index` and a `/index`: the index stays intact and the server answers."""
    notes = make_notes(tmp_path / "notes")
    db = notes / ".brain" / "brain.sqlite"
    with http_server("--root", str(notes)) as server, httpx.Client(base_url=server.url, timeout=120) as client:
        assert paths_of(client.post("/search", json={"query": OLD_WORD, "mode": "bm25"}).json()) == ["travel/alps.md"]
        # /file opens the index for one request, beside the search's long-lived connection.
        assert client.get("/file", params={"path": "work/nginx.md"}).status_code == 200
        write(notes, {"travel/alps.md": f"# Alps\n\nA {NEW_WORD} crossed the pass in the fog.\n"})
        done = run_cli("--root", str(notes), "index")
        assert done.returncode == 0, done.stderr
        answer = client.post("/search", json={"query": NEW_WORD, "mode": "bm25"})
        assert answer.status_code == 200, answer.text
        assert paths_of(answer.json()) == ["travel/alps.md"]
        write(notes, {"work/new.md": f"# New\n\nAnother {NEW_WORD} note.\n"})
        scanned = client.post("/index", json={})
        assert scanned.status_code == 200, scanned.text
        assert scanned.json()["added"] == ["work/new.md"]
        assert client.post("/search", json={"query": "certificate", "mode": "bm25"}).status_code == 200
    assert integrity(db) == "ok"
    verified = run_cli("--root", str(notes), "status", "--verify", "--json")
    assert verified.returncode == 0, verified.stderr
    assert '"clean": true' in verified.stdout


@pytest.mark.slow
def test_f1_mcp_server_keeps_its_locks_when_another_process_indexes(tmp_path: Path) -> None:
    """memory_search, memory_get_file, a CLI `brain index`, memory_index: integrity_check stays ok on disk."""
    notes = make_notes(tmp_path / "notes")
    db = notes / ".brain" / "brain.sqlite"

    async def scenario() -> None:
        async with mcp_session("--root", str(notes), log=tmp_path / "mcp.log") as session:
            found = await session.call_tool("memory_search", {"query": OLD_WORD, "mode": "bm25"})
            assert not found.is_error, found.content
            assert paths_of(json.loads(found.content[0].text)) == ["travel/alps.md"]
            read = await session.call_tool("memory_get_file", {"path": "work/nginx.md"})
            assert not read.is_error, read.content
            write(notes, {"travel/alps.md": f"# Alps\n\nA {NEW_WORD} crossed the pass in the fog.\n"})
            done = await anyio.to_thread.run_sync(lambda: run_cli("--root", str(notes), "index"))
            assert done.returncode == 0, done.stderr
            write(notes, {"work/new.md": f"# New\n\nAnother {NEW_WORD} note.\n"})
            scanned = await session.call_tool("memory_index", {})
            assert not scanned.is_error, scanned.content
            found = await session.call_tool("memory_search", {"query": NEW_WORD, "mode": "bm25"})
            assert not found.is_error, found.content
            assert sorted(paths_of(json.loads(found.content[0].text))) == ["travel/alps.md", "work/new.md"]
            assert integrity(db) == "ok"

    anyio.run(scenario)
    assert integrity(db) == "ok"


# ---------------------------------------------------------------- F13: an index replaced under a server


def delete_index(notes: Path) -> None:
    """What a person does to start over: remove the index files by hand."""
    for path in (notes / ".brain").glob("brain.sqlite*"):
        if not path.name.endswith(".lock"):
            path.unlink()


@pytest.mark.slow
def test_f13_http_server_follows_an_index_deleted_and_rebuilt(tmp_path: Path) -> None:
    notes = make_notes(tmp_path / "notes")
    with http_server("--root", str(notes)) as server, httpx.Client(base_url=server.url, timeout=120) as client:
        assert paths_of(client.post("/search", json={"query": OLD_WORD, "mode": "bm25"}).json()) == ["travel/alps.md"]
        delete_index(notes)
        gone = client.post("/search", json={"query": OLD_WORD, "mode": "bm25"})
        assert gone.status_code != 200 and "brain index" in gone.json()["error"], gone.text
        write(notes, {"travel/alps.md": f"# Alps\n\nA {NEW_WORD} crossed the pass in the fog.\n"})
        done = run_cli("--root", str(notes), "index")
        assert done.returncode == 0, done.stderr
        for mode in ("bm25", "hybrid"):
            answer = client.post("/search", json={"query": NEW_WORD, "mode": mode})
            assert answer.status_code == 200, answer.text
            assert paths_of(answer.json())[0] == "travel/alps.md"
        assert client.post("/search", json={"query": OLD_WORD, "mode": "bm25"}).json()["results"] == []
        # A full rebuild while the server runs reaches it too.
        write(notes, {"work/new.md": f"# New\n\nA second {NEW_WORD} note.\n"})
        full = run_cli("--root", str(notes), "index", "--full")
        assert full.returncode == 0, full.stderr
        assert sorted(paths_of(client.post("/search", json={"query": NEW_WORD, "mode": "bm25"}).json())) == [
            "travel/alps.md", "work/new.md"]
    assert integrity(notes / ".brain" / "brain.sqlite") == "ok"


@pytest.mark.slow
def test_f13_mcp_server_follows_an_index_deleted_and_rebuilt(tmp_path: Path) -> None:
    notes = make_notes(tmp_path / "notes")

    async def scenario() -> None:
        async with mcp_session("--root", str(notes), log=tmp_path / "mcp.log") as session:
            found = await session.call_tool("memory_search", {"query": OLD_WORD, "mode": "bm25"})
            assert paths_of(json.loads(found.content[0].text)) == ["travel/alps.md"]
            delete_index(notes)
            write(notes, {"travel/alps.md": f"# Alps\n\nA {NEW_WORD} crossed the pass in the fog.\n"})
            done = await anyio.to_thread.run_sync(lambda: run_cli("--root", str(notes), "index", "--full"))
            assert done.returncode == 0, done.stderr
            found = await session.call_tool("memory_search", {"query": NEW_WORD, "mode": "bm25"})
            assert not found.is_error, found.content
            assert paths_of(json.loads(found.content[0].text)) == ["travel/alps.md"]
            stale = await session.call_tool("memory_search", {"query": OLD_WORD, "mode": "bm25"})
            assert json.loads(stale.content[0].text)["results"] == []

    anyio.run(scenario)


# ---------------------------------------------------------------- F15: a note replaced by a folder of its name


def search_json(notes: Path, query: str, mode: str = "bm25") -> dict[str, Any]:
    done = run_cli("--root", str(notes), "search", query, "--mode", mode, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_f15_note_replaced_by_a_folder_of_its_name_leaves_the_index_through_the_hook(tmp_path: Path) -> None:
    notes = make_notes(tmp_path / "notes")
    installed = run_cli("--root", str(notes), "hooks", "install", "--sync")
    assert installed.returncode == 0, installed.stderr
    with http_server("--root", str(notes)) as server, httpx.Client(base_url=server.url, timeout=120) as client:
        assert paths_of(client.post("/search", json={"query": OLD_WORD, "mode": "bm25"}).json()) == ["travel/alps.md"]
        git(notes, "rm", "-q", "travel/alps.md")
        write(notes, {"travel/alps.md/day-one.md": f"# Day one\n\nA {NEW_WORD} crossed the pass in the fog.\n"})
        git(notes, "add", "-A")
        committed = subprocess.run(["git", "commit", "-q", "-m", "a folder instead"], cwd=notes,
                                   capture_output=True, text=True)
        assert committed.returncode == 0, committed.stderr
        log = (notes / ".brain" / "hook.log").read_text(encoding="utf-8")
        assert "post-commit" in log, log
        # The text of the old note exists nowhere any more: no door may answer with it.
        for mode in ("bm25", "hybrid"):
            answer = client.post("/search", json={"query": OLD_WORD, "mode": mode})
            assert answer.status_code == 200, answer.text
            assert all(OLD_WORD not in hit["preview"] for hit in answer.json()["results"]), answer.text
            assert "travel/alps.md" not in paths_of(answer.json())
        assert paths_of(client.post("/search", json={"query": NEW_WORD, "mode": "bm25"}).json()) == [
            "travel/alps.md/day-one.md"
        ]
    assert search_json(notes, OLD_WORD)["results"] == []
    verified = run_cli("--root", str(notes), "status", "--verify", "--json")
    assert verified.returncode == 0 and '"clean": true' in verified.stdout, verified.stdout
    assert integrity(notes / ".brain" / "brain.sqlite") == "ok"


@pytest.mark.slow
def test_f15_search_never_shows_the_indexed_text_of_a_note_now_a_folder(tmp_path: Path) -> None:
    """Before any sync has run: the index still has the note, the disk has a folder; search drops it."""
    notes = make_notes(tmp_path / "notes")
    (notes / "travel" / "alps.md").unlink()
    write(notes, {"travel/alps.md/day-one.md": "# Day one\n\nFog on the pass.\n"})
    answer = search_json(notes, OLD_WORD)
    assert answer["results"] == [] and answer["dropped"] == ["travel/alps.md"], answer
    # Named by hand, the old path leaves the index too.
    done = run_cli("--root", str(notes), "reindex", "travel/alps.md", "--json", cwd=notes)
    assert done.returncode == 0, done.stderr + done.stdout
    assert json.loads(done.stdout)["removed"] == ["travel/alps.md"], done.stdout
    assert search_json(notes, OLD_WORD)["dropped"] == []
    assert integrity(notes / ".brain" / "brain.sqlite") == "ok"


# ---------------------------------------------------------------- F14: a folder that cannot be listed

# Tests run as root, who reads any folder: the child drops the two capabilities that let it.
WITHOUT_DAC = ["--bounding-set", "-dac_override,-dac_read_search", "--inh-caps", "-dac_override,-dac_read_search"]


def run_without_dac(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`brain ARGS` as a real process that file permissions apply to (root without CAP_DAC_*), or a skip."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed: cannot run a child that permissions apply to")
    command = [setpriv, *WITHOUT_DAC, sys.executable, "-m", "brain", *args]
    return subprocess.run(command, cwd=cwd, env=brain_env(), capture_output=True, text=True, timeout=300)


@pytest.fixture
def locked_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder with mode 000 that a process without CAP_DAC_* really cannot list (skips where that cannot be made)."""
    folder = tmp_path / "probe"
    folder.mkdir()
    folder.chmod(0)
    try:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv (util-linux) is not installed: cannot run a child that permissions apply to")
        probe = subprocess.run([setpriv, *WITHOUT_DAC, sys.executable, "-c", f"import os; os.listdir({str(folder)!r})"],
                               capture_output=True, text=True, timeout=60)
        if "PermissionError" not in probe.stderr:
            pytest.skip(
                f"a folder with mode 000 stays readable here (setpriv: {probe.stderr.strip()[-200:] or 'listed it'})"
            )
    finally:
        folder.chmod(0o755)
    yield tmp_path


@pytest.mark.slow
def test_f14_notes_in_an_unreadable_folder_are_failed_and_kept_not_removed(locked_folder: Path) -> None:
    notes = make_notes(locked_folder / "notes")
    work = notes / "work"
    work.chmod(0)
    try:
        scan = run_without_dac("--root", str(notes), "index", "--json")
        assert scan.returncode == 0, scan.stderr
        report = json.loads(scan.stdout)
        assert report["removed"] == [], report
        assert sorted(f["path"] for f in report["failed"]) == ["work/laravel.md", "work/nginx.md"], report
        assert all("permission denied" in f["reason"].lower() for f in report["failed"]), report
        status = run_without_dac("--root", str(notes), "status", "--json")
        assert status.returncode != 0, status.stdout
        facts = json.loads(status.stdout)
        assert facts["clean"] is False and facts["unlisted"], facts
        assert facts["orphaned"] == [], facts
        text = run_without_dac("--root", str(notes), "status")
        assert text.stdout.startswith("NOT CLEAN") and "work" in text.stdout, text.stdout
        # Named one by one (as the hooks do), they fail with the reason and stay too.
        named = run_without_dac("--root", str(notes), "reindex", str(work / "nginx.md"), "--json")
        assert "Traceback" not in named.stderr, named.stderr
        assert named.returncode == 1 and json.loads(named.stdout)["removed"] == [], named.stdout
        # Search still finds them, from the index, marked stale: they were not removed.
        found = run_without_dac("--root", str(notes), "search", "certificate", "--mode", "bm25", "--json")
        assert found.returncode == 0, found.stderr
        assert paths_of(json.loads(found.stdout)) == ["work/nginx.md"], found.stdout
    finally:
        work.chmod(0o755)
    again = run_cli("--root", str(notes), "index", "--json")
    assert json.loads(again.stdout)["counts"] == {
        "added": 0, "updated": 0, "unchanged": 3, "moved": 0, "removed": 0, "failed": 0
    }
    assert '"clean": true' in run_cli("--root", str(notes), "status", "--verify", "--json").stdout
    assert integrity(notes / ".brain" / "brain.sqlite") == "ok"


# ---------------------------------------------------------------- F12: a full disk during the nightly rebuild


def bulky_notes(root: Path, count: int = 300) -> Path:
    """Notes that make an index of about 10 MB while embedding only eight texts (every note repeats them)."""
    rng = random.Random(12)
    words = (
        "alpine ridge hut fog pass certificate server clinic booking queue jobs nginx backup restic sourdough"
    ).split()
    sections = [f"## Section {i}\n\n{' '.join(rng.choice(words) for _ in range(120))}\n" for i in range(8)]
    text = f"# Note\n\nThe {OLD_WORD} log.\n\n" + "\n".join(sections)
    write(root, {f"d{n % 10}/note{n:03d}.md": text for n in range(count)})
    done = run_cli("--root", str(root), "index")
    assert done.returncode == 0, done.stderr
    return root


def disk_usage(folder: Path) -> int:
    """Bytes the notes under `folder` take on a tmpfs (whole pages), the index left out."""
    return sum(-(-p.stat().st_size // 4096) * 4096 + 4096 for p in folder.rglob("*") if ".brain" not in p.parts)


def rebuild_leftovers(notes: Path) -> list[str]:
    return sorted(p.name for p in (notes / ".brain").iterdir() if ".rebuild" in p.name)


@pytest.mark.slow
def test_f12_disk_full_while_building_keeps_the_old_index_and_cleans_up(tmp_path: Path) -> None:
    source = bulky_notes(tmp_path / "source")
    live = (source / ".brain" / "brain.sqlite").stat().st_size
    # Room for the notes and the index, and a third of another index: the new one cannot be built.
    with small_disk(tmp_path / "disk", disk_usage(source) + live + live // 3) as disk:
        notes = Path(shutil.copytree(source, disk / "notes"))
        for command in (["schedule", "--once"], ["index", "--full"]):
            done = run_cli("--root", str(notes), *command)
            assert done.returncode != 0, done.stdout + done.stderr
            assert "Traceback" not in done.stderr, done.stderr
            assert rebuild_leftovers(notes) == [], command
            if command[0] == "index":
                line = one_line_error(done, "the old index")
                assert "disk is full" in line, line
            else:
                log = (notes / ".brain" / "schedule.log").read_text(encoding="utf-8")
                assert "nightly rebuild failed" in log and "the old index" in log, log
        assert integrity(notes / ".brain" / "brain.sqlite") == "ok"
        found = run_cli("--root", str(notes), "search", OLD_WORD, "--mode", "bm25", "--json", "--limit", "3")
        assert found.returncode == 0, found.stderr  # never "damaged … delete it"
        assert len(json.loads(found.stdout)["results"]) == 3
        status = run_cli("--root", str(notes), "status", "--json")
        assert status.returncode == 0, status.stdout + status.stderr
        facts = json.loads(status.stdout)
        assert facts["clean"] and facts["last_rebuild"]["ok"] is False, facts


@pytest.mark.slow
def test_f12_disk_full_in_the_final_copy_keeps_the_old_index_under_a_running_server(tmp_path: Path) -> None:
    source = bulky_notes(tmp_path / "source")
    live = (source / ".brain" / "brain.sqlite").stat().st_size
    # Building the new index needs its own size plus up to ~4.2 MB of write-ahead log (SQLite checkpoints
    # at 1,000 pages); copying it into the live file needs its size again, in the live file's log. Free
    # space halfway between the two leaves the same margin on both sides.
    wal_peak = 4_400_000
    assert live > 2 * wal_peak, f"the bulky notes made only a {live} byte index: the build and the copy need apart"
    free = live + (live + wal_peak) // 2
    with small_disk(tmp_path / "disk", disk_usage(source) + live + free) as disk:
        notes = Path(shutil.copytree(source, disk / "notes"))
        db = notes / ".brain" / "brain.sqlite"
        inode = db.stat().st_ino
        with http_server("--root", str(notes)) as server, httpx.Client(base_url=server.url, timeout=120) as client:
            assert client.post("/search", json={"query": OLD_WORD, "mode": "bm25", "limit": 3}).status_code == 200
            write(notes, {"extra.md": f"# Extra\n\nA {NEW_WORD} note.\n"})
            done = run_cli("--root", str(notes), "index", "--full")
            line = one_line_error(done, "the old index")
            assert "copied" in line and "disk is full" in line, line
            assert db.stat().st_ino == inode  # never renamed over the file the server reads
            assert rebuild_leftovers(notes) == []
            answer = client.post("/search", json={"query": OLD_WORD, "mode": "bm25", "limit": 3})
            assert answer.status_code == 200 and len(answer.json()["results"]) == 3, answer.text
            assert integrity(db) == "ok"
        assert integrity(db) == "ok"


@pytest.mark.slow
def test_a_full_disk_still_answers_searches_and_a_server_follows_once_room_is_freed(tmp_path: Path) -> None:
    """With no byte free and no -wal left, SQLite cannot make the files a WAL reader needs: brain reads the index
    immutable, as it was last written. A server opened that way takes the index again, normally, once the disk has
    room, and then answers with what was indexed since."""
    with small_disk(tmp_path / "disk", "8m") as disk:
        notes = make_notes(disk / "notes")
        db = notes / ".brain" / "brain.sqlite"
        assert not db.with_name("brain.sqlite-wal").exists()  # the last connection removed it
        write(notes, {"extra.md": f"# Extra\n\nA {NEW_WORD} note.\n"})  # waiting to be indexed
        filler = disk / "filler"
        with filler.open("wb") as out:
            with contextlib.suppress(OSError):  # ENOSPC: as full as it gets
                while True:
                    out.write(b"\0" * 65536)
                    out.flush()
        found = run_cli("--root", str(notes), "search", OLD_WORD, "--mode", "bm25", "--json")
        assert found.returncode == 0, found.stderr
        assert paths_of(json.loads(found.stdout)) == ["travel/alps.md"]
        status = run_cli("--root", str(notes), "status", "--json")  # truthful: one note is not indexed yet
        assert status.returncode == 1 and not json.loads(status.stdout)["clean"], status.stdout + status.stderr
        with http_server("--root", str(notes)) as server, httpx.Client(base_url=server.url, timeout=120) as client:
            answer = client.post("/search", json={"query": OLD_WORD, "mode": "bm25"})
            assert answer.status_code == 200 and paths_of(answer.json()) == ["travel/alps.md"], answer.text
            full = run_cli("--root", str(notes), "index")
            one_line_error(full, "disk")
            filler.unlink()
            done = run_cli("--root", str(notes), "index")
            assert done.returncode == 0, done.stderr
            answer = client.post("/search", json={"query": NEW_WORD, "mode": "bm25"})
            assert answer.status_code == 200 and paths_of(answer.json()) == ["extra.md"], answer.text
        assert integrity(db) == "ok"


@pytest.mark.slow
def test_f12_rebuild_into_an_index_of_another_page_size_is_copied_in_place(tmp_path: Path) -> None:
    """The final copy never falls back to renaming over the live file, which a server would keep reading."""
    notes = make_notes(tmp_path / "notes")
    db = notes / ".brain" / "brain.sqlite"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA page_size = 8192")
    conn.execute("VACUUM")
    conn.execute("PRAGMA journal_mode = WAL")
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 8192
    conn.close()
    inode = db.stat().st_ino
    with http_server("--root", str(notes)) as server, httpx.Client(base_url=server.url, timeout=120) as client:
        assert paths_of(client.post("/search", json={"query": OLD_WORD, "mode": "bm25"}).json()) == ["travel/alps.md"]
        write(notes, {"work/new.md": f"# New\n\nA {NEW_WORD} note.\n"})
        done = run_cli("--root", str(notes), "index", "--full")
        assert done.returncode == 0, done.stderr
        assert db.stat().st_ino == inode
        assert paths_of(client.post("/search", json={"query": NEW_WORD, "mode": "bm25"}).json()) == ["work/new.md"]
    assert integrity(db) == "ok"


@pytest.mark.parametrize("command", [["index"], ["index", "--full"]])
@pytest.mark.slow
def test_f13_only_the_main_file_deleted_under_a_server(tmp_path: Path, command: list[str]) -> None:
    """`rm brain.sqlite` leaves the server's -wal and -shm: the new index must not be read through them."""
    notes = make_notes(tmp_path / "notes")
    db = notes / ".brain" / "brain.sqlite"
    with http_server("--root", str(notes)) as server, httpx.Client(base_url=server.url, timeout=120) as client:
        assert paths_of(client.post("/search", json={"query": OLD_WORD, "mode": "bm25"}).json()) == ["travel/alps.md"]
        assert Path(f"{db}-shm").exists()
        db.unlink()
        write(notes, {"travel/alps.md": f"# Alps\n\nA {NEW_WORD} crossed the pass in the fog.\n"})
        done = run_cli("--root", str(notes), *command)
        assert done.returncode == 0, done.stderr
        assert integrity(db) == "ok"
        for query, wanted in ((NEW_WORD, ["travel/alps.md"]), (OLD_WORD, []), ("certificate", ["work/nginx.md"])):
            answer = client.post("/search", json={"query": query, "mode": "bm25"})
            assert answer.status_code == 200, answer.text
            assert paths_of(answer.json()) == wanted
        write(notes, {"work/new.md": f"# New\n\nA second {NEW_WORD} note.\n"})
        assert client.post("/index", json={}).json()["added"] == ["work/new.md"]
    assert integrity(db) == "ok"
    verified = run_cli("--root", str(notes), "status", "--verify", "--json")
    assert '"clean": true' in verified.stdout, verified.stdout


def test_f1_an_index_named_like_a_note_is_refused(tmp_path: Path) -> None:
    """A database path the walk would read as a note would be opened outside SQLite: refused in the settings."""
    write(tmp_path, {"a.md": "# A\n\napple\n", "brain.toml": 'database = "index.md"\n'})
    one_line_error(run_cli("--root", str(tmp_path), "index"), "database")
    assert not (tmp_path / "index.md").exists()


@pytest.mark.parametrize("with_shm", [False, True], ids=["closed", "shm-left-by-a-reader"])
@pytest.mark.slow
def test_a_read_only_index_folder_still_answers_searches(locked_folder: Path, with_shm: bool) -> None:
    """Reliability round two, item 16: an index this user cannot write is opened read-only, not refused."""
    import sqlite3

    notes = make_notes(locked_folder / "notes")
    folder = notes / ".brain"
    database = folder / "brain.sqlite"
    keeper = None
    if with_shm:  # a reader elsewhere keeps the -wal and -shm files in being
        keeper = sqlite3.connect(database)
        keeper.execute("SELECT count(*) FROM files").fetchone()
        assert database.with_name("brain.sqlite-shm").exists()
    for path in folder.iterdir():
        path.chmod(0o444)
    folder.chmod(0o555)
    try:
        found = run_without_dac("--root", str(notes), "search", "certificate", "--json")
        assert found.returncode == 0, found.stderr  # before: "attempt to write a readonly database"
        assert [r["path"] for r in json.loads(found.stdout)["results"]][0] == "work/nginx.md"
        status = run_without_dac("--root", str(notes), "status")
        assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
        write(notes, {"work/new.md": "# New\n\na note the index cannot take\n"})
        refused = run_without_dac("--root", str(notes), "index")
        assert refused.returncode != 0 and "Traceback" not in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1 and "permission" in refused.stderr.lower()
    finally:
        folder.chmod(0o755)
        for path in folder.iterdir():
            path.chmod(0o644)
        if keeper is not None:
            keeper.close()
