"""Indexing: adds, skips unchanged, updates, moves without re-embedding, removes, survives crashes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from brain import Brain
from brain.chunking import CHUNKING_VERSION
from brain.errors import BrainError
from brain.store import SqliteStore
from helpers import PROJECT, run_cli, write


def chunk_count(root: Path, rel: str) -> int:
    store = SqliteStore(root / ".brain" / "brain.sqlite")
    try:
        row = store.get_file(rel)
        return len(store.file_chunks(row.id)) if row else 0
    finally:
        store.close()


def test_index_example_then_nothing_to_do(example_notes: Path) -> None:
    brain = Brain(example_notes)
    first = brain.index()
    assert first.counts()["added"] == 17
    assert "drafts/wip.md" not in first.added and "drafts/keep-me.md" in first.added
    assert not first.failed
    again = brain.index()
    assert again.counts() == {"added": 0, "updated": 0, "unchanged": 17, "moved": 0, "removed": 0, "failed": 0}
    assert again.chunks_embedded == 0
    assert (example_notes / ".brain" / ".gitignore").read_text() == "*\n"


def test_update_move_remove_and_ignore(tmp_path: Path) -> None:
    write(tmp_path, {
        "a.md": "# A\nalpha project notes about Laravel\n",
        "b.md": "# B\nbeta notes about gardening\n",
        "c.txt": "gamma plain text about cooking pasta\n",
        "d.md": "delta notes about nginx\n",
    })
    brain = Brain(tmp_path)
    assert brain.index().counts()["added"] == 4
    (tmp_path / "a.md").write_text("# A\nalpha project now uses Symfony\n")
    os.rename(tmp_path / "b.md", tmp_path / "renamed-b.md")
    (tmp_path / "c.txt").unlink()
    (tmp_path / ".brainignore").write_text("d.md\n")
    report = brain.index()
    assert report.updated == ["a.md"]
    assert report.moved == [{"from": "b.md", "to": "renamed-b.md"}]
    assert sorted(report.removed) == ["c.txt", "d.md"]
    assert report.chunks_embedded == 1  # only a.md's new text; the move re-embedded nothing
    hits = brain.search("Symfony", mode="bm25").results
    assert [h.path for h in hits] == ["a.md"]
    assert not brain.search("Laravel", mode="bm25").results  # no stale chunk survives an update


def test_identical_text_is_embedded_once(tmp_path: Path) -> None:
    footer = "Questa nota è riservata. Non condividere senza permesso."
    write(tmp_path, {f"n{i}.md": f"note {i} about topic {i}\n\n{footer}\n" for i in range(3)})
    # Same text and same title (the file name leads a note's embedded text): embedded once.
    write(tmp_path, {"x/footer.md": footer, "y/footer.md": footer})
    report = Brain(tmp_path).index()
    assert report.chunks_embedded == 4  # three distinct notes + the footer once
    assert report.cache_hits == 1


def test_stats_count_cache_use_across_scans_reindexes_and_rebuilds(tmp_path: Path) -> None:
    write(tmp_path, {"a/pie.md": "apple pie", "b/pie.md": "apple pie"})  # same title, same text
    brain = Brain(tmp_path)
    brain.index()  # 1 embedded, 1 from the cache
    assert brain.stats()["cache_hit_rate"] == 0.5
    write(tmp_path, {"c.md": "cherry tart"})
    brain.reindex([tmp_path / "c.md"])  # 1 more embedded
    assert brain.stats()["cache_hit_rate"] == round(1 / 3, 4)
    brain.index(full=True)  # a rebuild starts the totals again: 3 hits
    assert brain.stats()["cache_hit_rate"] == 1.0


def test_reindex_paths(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "apple", "b.md": "banana", ".brainignore": "secret.md\n", "secret.md": "s"})
    brain = Brain(tmp_path)
    brain.index()
    (tmp_path / "a.md").write_text("apricot")
    (tmp_path / "b.md").unlink()
    report = brain.reindex([str(tmp_path / "a.md"), str(tmp_path / "b.md"), str(tmp_path / "secret.md"), "/etc/hosts"])
    assert report.updated == ["a.md"]
    assert report.removed == ["b.md"]
    reasons = {f["path"]: f["reason"] for f in report.failed}
    assert "ignored" in reasons[str(tmp_path / "secret.md")]
    assert "outside" in reasons["/etc/hosts"]


def test_reindex_of_a_path_never_indexed_and_not_on_disk_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "apple", "b.md": "banana"})
    typo = run_cli("--root", str(tmp_path), "reindex", "nope.md", cwd=tmp_path)  # before any index: none is made
    assert typo.returncode == 2 and typo.stdout == ""
    assert typo.stderr == (
        "brain: nope.md: no such file, and it was never indexed; "
        "check the path (relative paths start at the current folder)\n"
    )
    assert not (tmp_path / ".brain").exists()
    brain = Brain(tmp_path)
    brain.index()
    (tmp_path / "b.md").unlink()
    (tmp_path / "a.md").write_text("apricot")
    with pytest.raises(BrainError, match="nope.md: no such file, and it was never indexed"):
        brain.reindex([str(tmp_path / "a.md"), str(tmp_path / "nope.md")])
    assert chunk_count(tmp_path, "a.md") == 1 and chunk_count(tmp_path, "b.md") == 1  # nothing written
    gone = run_cli("--root", str(tmp_path), "reindex", "b.md", cwd=tmp_path)  # indexed, now gone: leaves the index
    assert gone.returncode == 0, gone.stderr
    assert chunk_count(tmp_path, "b.md") == 0


def test_failed_file_keeps_its_old_good_copy(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "the original text about lighthouses"})
    brain = Brain(tmp_path)
    brain.index()
    (tmp_path / "a.txt").write_bytes(b"\x00\x01binary now")
    report = brain.index()
    assert report.failed == [{"path": "a.txt", "reason": report.failed[0]["reason"]}]
    assert "binary" in report.failed[0]["reason"]
    assert chunk_count(tmp_path, "a.txt") == 1  # still searchable from the last good copy


def test_big_file_is_refused_with_reason(tmp_path: Path) -> None:
    write(tmp_path, {"small.md": "small note"})
    with open(tmp_path / "huge.txt", "wb") as handle:
        handle.write(b"lorem ipsum dolor sit amet\n" * (50 * 1024 * 1024 // 27))
    report = Brain(tmp_path).index()
    assert report.added == ["small.md"]
    assert report.failed[0]["path"] == "huge.txt"
    assert "MB limit" in report.failed[0]["reason"] and "max_file_mb" in report.failed[0]["reason"]


def test_empty_folder_indexes_nothing(tmp_path: Path) -> None:
    brain = Brain(tmp_path)
    assert brain.index().counts()["added"] == 0
    assert brain.search("anything").results == []


def test_changed_chunking_rebuilds_and_reuses_cache(tmp_path: Path) -> None:
    write(tmp_path, {f"n{i}.md": "\n".join(f"line {j} of note {i} about things" for j in range(40)) for i in range(3)})
    Brain(tmp_path).index()
    (tmp_path / "brain.toml").write_text("[chunking]\nchunk_chars = 400\noverlap_chars = 0\n")
    report = Brain(tmp_path).index()
    assert report.rebuilt
    assert report.counts()["added"] == 3
    stats = Brain(tmp_path).stats()
    assert stats["chunking"].startswith(f"v{CHUNKING_VERSION}:chars=400")


def test_search_refuses_an_index_of_another_model(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "apple"})
    Brain(tmp_path).index()
    store = SqliteStore(tmp_path / ".brain" / "brain.sqlite")
    store.set_meta({"model": "someone/else"})
    store.close()
    with pytest.raises(BrainError, match="run `brain index`"):
        Brain(tmp_path).search("apple")


@pytest.mark.slow
def test_a_killed_scan_leaves_a_usable_index(tmp_path: Path) -> None:
    # Many files so the scan is surely mid-way when killed: files are written a group
    # of 256 chunks at a time, and 144 more chunks of about 200 word pieces keep the
    # last group embedding for seconds, far longer than the poll below.
    total = 400
    write(tmp_path, {
        f"notes/n{i:03}.md": f"# Note {i}\n" + f"sentence {i} about subject {i % 7}. " * 20 for i in range(total)
    })
    env = dict(os.environ, PYTHONPATH=str(PROJECT / "tools" / "lib"))
    proc = subprocess.Popen([sys.executable, "-m", "brain", "--root", str(tmp_path), "index"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = tmp_path / ".brain" / "brain.sqlite"
    deadline = time.monotonic() + 240
    indexed = 0
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        if db.exists():
            try:
                with sqlite3.connect(db) as conn:
                    indexed = conn.execute("SELECT count(*) FROM files").fetchone()[0]
            except sqlite3.Error:
                continue
            if indexed >= 20:
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 0 < indexed < total, "the scan should have been killed mid-way"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # Every indexed file is complete: it has chunks, and FTS agrees with the chunks.
        assert conn.execute(
            "SELECT count(*) FROM files WHERE id NOT IN (SELECT file_id FROM chunks)"
        ).fetchone()[0] == 0
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
    brain = Brain(tmp_path)
    assert brain.search("subject", mode="bm25").results
    report = brain.index()
    assert report.counts()["added"] + report.counts()["unchanged"] == total
    assert brain.stats()["files"] == total


@pytest.mark.slow
def test_a_one_file_reindex_does_not_load_torch(tmp_path: Path) -> None:
    # The hook's path: a few chunks are embedded with numpy, so no 10 s torch start-up.
    write(tmp_path, {"a.md": "# Note\nthe first version"})
    code = (
        "import sys; from brain import Brain; b = Brain(sys.argv[1]); b.index();"
        "open(sys.argv[1] + '/a.md', 'w').write('# Note\\nthe second version about lighthouses');"
        "r = b.reindex([sys.argv[1] + '/a.md']); assert r.updated == ['a.md'], r;"
        "assert b.search('lighthouses', mode='hybrid').results[0].path == 'a.md';"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(PROJECT / "tools" / "lib")))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("full", [False, True])
def test_a_note_deleted_between_the_walk_and_the_read_is_removed_not_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, full: bool
) -> None:
    """A commit deleting a note while a scan or the nightly rebuild reads the folder: the note is gone,
    nothing failed."""
    from brain import sources
    from brain.config import load_settings
    from brain.indexer import Indexer

    root = tmp_path / "notes"
    write(root, {"a.md": "# A\n\nalpha notes\n", "b.md": "# B\n\nbeta notes\n"})
    Brain(root).index()
    (root / "b.md").write_text("# B\n\nbeta notes, changed\n", encoding="utf-8")  # so the scan reads it again
    walk = sources.discover

    def walk_then_delete(settings):  # type: ignore[no-untyped-def]
        found = walk(settings)
        (root / "b.md").unlink()
        return found

    monkeypatch.setattr(sources, "discover", walk_then_delete)
    indexer = Indexer(load_settings(root))
    report = indexer.rebuild() if full else indexer.scan()
    assert report.failed == []
    assert report.removed == ([] if full else ["b.md"])  # a rebuild's new index never had it
    store = SqliteStore(load_settings(root).database_path, create=False, readonly=True)
    try:
        assert sorted(store.all_files()) == ["a.md"]
    finally:
        store.close()
