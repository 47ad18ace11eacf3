"""8 searchers, each on a connection of its own, while a writer process rewrites files: no errors, never a
half-written file."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from brain.store import FileKeywords, NewChunk
from brain.store.postgres import PostgresStore
from helpers import PROJECT

FILES = 12
CHUNKS = 8
DIM = 16

_WRITER = r"""
import sys
import numpy as np
from brain.store import FileKeywords, NewChunk
from brain.store.postgres import PostgresStore

url, generations, files, chunks, dim = (
    sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
)
store = PostgresStore(url, "ignored")
rng = np.random.default_rng(1)
for gen in range(1, generations + 1):
    for f in range(files):
        rows = []
        for k in range(chunks):
            v = rng.normal(size=dim).astype(np.float32)
            rows.append(NewChunk(f"shared note {f} part {k} gen{gen}", "", k + 1, k + 1, [], None,
                                 (v / np.linalg.norm(v)).tobytes()))
        store.replace_file(path=f"w/{f}.md", hash=f"{f}-{gen}", size=1, mtime_ns=gen, metadata={}, warning=None,
                           page_starts=[], chunks=rows, title="shared", keywords=FileKeywords(title="shared", path="w"))
store.close()
"""


def generations_of(texts: list[str]) -> set[str]:
    return {t.rsplit(" gen", 1)[1] for t in texts}


def write_generation_zero(url: str) -> None:
    store = PostgresStore(url, "ignored")
    vector = (np.ones(DIM) / np.sqrt(DIM)).astype(np.float32).tobytes()
    store.set_meta({"dimension": str(DIM)})
    for f in range(FILES):
        rows = [NewChunk(f"shared note {f} part {k} gen0", "", k + 1, k + 1, [], None, vector) for k in range(CHUNKS)]
        store.replace_file(path=f"w/{f}.md", hash=f"{f}-0", size=1, mtime_ns=0, metadata={}, warning=None,
                           page_starts=[], chunks=rows, title="shared", keywords=FileKeywords(title="shared", path="w"))
    store.close()


def test_eight_searchers_beside_a_writer_see_whole_files_and_no_errors(store_url: str) -> None:
    write_generation_zero(store_url)
    env = {"PYTHONPATH": str(PROJECT / "tools" / "lib")}
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, store_url, "12", str(FILES), str(CHUNKS), str(DIM)],
                              env=env, stderr=subprocess.PIPE, text=True)
    errors: list[str] = []
    seen_generations: set[str] = set()
    searches = [0]
    lock = threading.Lock()

    def search_until_the_writer_is_done(n: int) -> None:
        store = PostgresStore(store_url, "ignored", readonly=True)  # a connection of its own from the pool
        rng = np.random.default_rng(n)
        try:
            while writer.poll() is None:
                # Keyword half: the best matches, each file's chunks read whole in one statement.
                store.score_matches('"shared" OR "note"')
                best, _ = store.pick_matches(20)
                hit_files = {row.file_id for row in store.chunks_by_id([c for c, _ in best]).values()}
                # Vector half on the server (the exact scan here; the HNSW path shares its statement shape).
                q = rng.normal(size=DIM).astype(np.float32)
                nearest = store.nearest_vectors(q / np.linalg.norm(q), 10, exact=True)
                hit_files |= {row.file_id for row in store.chunks_by_id([c for c, _ in nearest]).values()}
                for file_id in hit_files:
                    texts = [c.text for c in store.file_chunks(file_id)]
                    gens = generations_of(texts)
                    with lock:
                        if len(texts) != CHUNKS or len(gens) != 1:
                            errors.append(f"file {file_id}: {len(texts)} chunks of generations {sorted(gens)}")
                        seen_generations.update(gens)
                with lock:
                    searches[0] += 1
        except Exception as exc:  # counted, not raised: the test reports every failure at once
            with lock:
                errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            store.close()

    started = time.monotonic()
    threads = [threading.Thread(target=search_until_the_writer_is_done, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    _, err = writer.communicate(timeout=600)
    for thread in threads:
        thread.join(timeout=120)
    assert writer.returncode == 0, err
    assert errors == []
    assert searches[0] >= 8 and len(seen_generations) > 2, (searches, seen_generations)  # they overlapped the writes
    assert time.monotonic() - started < 300


def test_a_searcher_beside_a_writer_through_hnsw(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The vectors answered by the HNSW index while the writes keep it up to date: always the k asked for,
    then exact's."""
    from brain.store.postgres import corpus

    monkeypatch.setattr(corpus, "HNSW_THRESHOLD", 1)
    write_generation_zero(store_url)
    store = PostgresStore(store_url, "ignored")
    assert store.maintain_indexes() is True
    env = {"PYTHONPATH": str(PROJECT / "tools" / "lib")}
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, store_url, "6", str(FILES), str(CHUNKS), str(DIM)],
                              env=env, stderr=subprocess.PIPE, text=True)
    errors: list[str] = []
    rng = np.random.default_rng(5)
    try:
        while writer.poll() is None:
            q = rng.normal(size=DIM).astype(np.float32)
            nearest = store.nearest_vectors(q / np.linalg.norm(q), 10)
            if len(nearest) != 10:
                errors.append(f"{len(nearest)} neighbours")
    finally:
        _, err = writer.communicate(timeout=600)
    assert writer.returncode == 0, err
    assert errors == []
    exact = store.nearest_vectors(q / np.linalg.norm(q), 10, exact=True)
    assert [c for c, _ in store.nearest_vectors(q / np.linalg.norm(q), 10)] == [c for c, _ in exact]
    store.close()


def test_writers_on_two_machines_take_turns_through_the_server(store_url: str, tmp_path: Path) -> None:
    """Two clones of one folder (two machines: two lock files, one corpus) write in turn; one that cannot wait says why.

    Without the server's lock, a hook on one machine could write the live schema
    while the other machine's full rebuild fills the new one, and the swap would lose it.
    """
    from functools import partial

    from brain.config import load_settings
    from brain.errors import BrainError
    from brain.indexer import Indexer
    from brain.store import server_writer_lock, writer_lock

    roots = []
    for machine in ("machine-a", "machine-b"):
        root = tmp_path / machine / "notes"
        root.mkdir(parents=True)
        (root / "decisions.md").write_text("# Decisioni\n\nUsiamo PostgreSQL per il team.\n", encoding="utf-8")
        roots.append(root)
    first, second = (load_settings(root) for root in roots)
    assert first.database_path != second.database_path  # nothing on disk is shared
    held, released = threading.Event(), []

    def write_on_machine_a() -> None:
        with Indexer(first).writing():
            held.set()
            time.sleep(1.5)
            released.append(time.monotonic())

    holder = threading.Thread(target=write_on_machine_a)
    holder.start()
    assert held.wait(30)
    report = Indexer(second).scan()
    done = time.monotonic()
    holder.join()
    assert report.added == ["decisions.md"] and done >= released[0]

    with Indexer(first).writing():
        with pytest.raises(
            BrainError, match=r"another brain process, on this machine or another, has been writing corpus"
        ):
            with writer_lock(second.database_path, 0.3, also=partial(server_writer_lock, second)):
                pass
