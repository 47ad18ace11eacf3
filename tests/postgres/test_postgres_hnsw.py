"""Vector search on the server: past HNSW_THRESHOLD the HNSW index answers, with the same top results as the exact scan.

The threshold is lowered so a small corpus crosses it; what is checked is that
the index is built (after a scan, a sync and a full rebuild), that queries go
through it (the plan names it), and that it finds what the exact scan finds.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from brain import Brain
from brain.store.postgres import corpus
from brain.store import NewChunk
from brain.store.postgres import HNSW_INDEX, PostgresStore
from helpers import committed_notes, git

DIM = 384


def clustered_vectors(count: int, seed: int) -> np.ndarray:
    """Normalised vectors around 40 centres, as real embeddings bunch by topic (uniform noise would make
    every query easy)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, DIM))
    vectors = centres[rng.integers(0, 40, count)] + rng.normal(scale=0.6, size=(count, DIM))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def fill(store: PostgresStore, vectors: np.ndarray, per_file: int = 20) -> None:
    store.set_meta({"dimension": str(DIM)})
    for f in range(len(vectors) // per_file):
        chunks = [NewChunk(f"chunk {f}-{k}", "", k + 1, k + 1, [], None, vectors[f * per_file + k].tobytes())
                  for k in range(per_file)]
        store.replace_file(path=f"d/{f}.md", hash=str(f), size=1, mtime_ns=1, metadata={}, warning=None,
                           page_starts=[], chunks=chunks)


def hnsw_scans(store: PostgresStore) -> int:
    """How many times the corpus's HNSW index was scanned (the vector connection's counts flushed first)."""
    conn = store._vector_connection()
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT 1")  # the flush happens as the backend goes idle after a statement
    time.sleep(0.2)
    row = store.conn.execute("SELECT idx_scan FROM pg_stat_user_indexes WHERE schemaname = %s AND indexrelname = %s",
                             (store.schema, HNSW_INDEX)).fetchone()
    return int(row[0]) if row else 0


def test_hnsw_finds_what_the_exact_scan_finds(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus, "HNSW_THRESHOLD", 1000)
    store = PostgresStore(store_url, "ignored")
    try:
        fill(store, clustered_vectors(800, seed=1))
        assert store.maintain_indexes() is False and store.hnsw_state() is None  # under the threshold
        assert store.searches_vectors() is False
        fill(store, clustered_vectors(2000, seed=2))  # the same files rewritten, now past it
        assert store.maintain_indexes() is True and store.hnsw_state() is True
        assert store.searches_vectors() is True and store.maintain_indexes() is False  # built once

        queries = clustered_vectors(30, seed=3)
        # The query goes through the index (the server counts its scans).
        before = hnsw_scans(store)
        store.nearest_vectors(queries[0], 200)
        assert hnsw_scans(store) > before
        overlap = []
        for q in queries:
            approximate = store.nearest_vectors(q, 200)
            exact = store.nearest_vectors(q, 200, exact=True)
            assert len(approximate) == 200 and [c for c, _ in approximate[:3]] == [c for c, _ in exact[:3]]
            overlap.append(len({c for c, _ in approximate[:10]} & {c for c, _ in exact[:10]}) / 10)
            # The cosines are the float32 column's: equal on both paths for the same chunk.
            by_id = dict(exact)
            assert all(s == pytest.approx(by_id[c], abs=1e-6) for c, s in approximate if c in by_id)
        assert np.mean(overlap) >= 0.98
        # A filter: under the threshold the allowed chunks are scanned exactly; above it walked iteratively.
        files = [r[0] for r in store.conn.execute(store._sql("SELECT id FROM @.files ORDER BY id LIMIT 3"))]
        allowed = {c.id for f in files for c in store.file_chunks(f)}
        filtered = store.nearest_vectors(queries[0], 10, file_ids=files)
        assert {c for c, _ in filtered} <= allowed and len(filtered) == 10
        monkeypatch.setattr(corpus, "HNSW_THRESHOLD", 10)
        assert [c for c, _ in store.nearest_vectors(queries[0], 10, file_ids=files)] == [c for c, _ in filtered]
    finally:
        store.close()


NOTES = {f"topic{n}/note{n}.md": f"# Note {n}\n\n{text}\n" for n, text in enumerate([
    "The nginx SSL certificate renews with certbot every month.",
    "Il progetto Laravel per la clinica usa code e notifiche via email.",
    "Notes about gardening: tomatoes need sun and water every day.",
    "Backups of the PostgreSQL database run nightly with pg_dump.",
    "La ricetta della pasta al pomodoro con basilico fresco.",
    "Kubernetes deployments roll out one pod at a time.",
    "Il treno per Milano parte alle otto dal binario tre.",
    "Quarterly budget review: travel costs went up ten percent.",
])}


def test_search_through_hnsw_equals_the_exact_scan(
    tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same notes searched in every mode with the index and without it: the same results, the same scores."""
    root = committed_notes(tmp_path / "notes", NOTES)
    brain = Brain(root)
    brain.index()
    queries = ["web server TLS renewal", "clinic project", "vegetable garden", "database backup", "train to Milan"]
    asked = [(q, mode, prefix) for q in queries for mode in ("vector", "hybrid") for prefix in (None, "topic3/")]

    def results() -> list[list[tuple[str, float | None, float | None]]]:
        return [[(h.path, h.vector_score, h.score) for h in brain.search(q, mode=mode, path_prefix=prefix).results]
                for q, mode, prefix in asked]

    exact = results()
    assert brain.searcher.store.searches_vectors() is False
    monkeypatch.setattr(corpus, "HNSW_THRESHOLD", 4)
    # Crossing the threshold: the next write (a sync of a commit) builds the index, and warm readers follow.
    (root / "topic0" / "note0.md").write_text(NOTES["topic0/note0.md"] + "\nThe renewal runs at night.\n")
    git(root, "commit", "-qam", "edit")
    brain.sync()
    assert brain.searcher.store.hnsw_state() is True and brain.searcher.store.searches_vectors() is True
    brain.searcher._vectors = None  # (the matrix is gone: the answers below are the server's)
    (root / "topic0" / "note0.md").write_text(NOTES["topic0/note0.md"])
    git(root, "commit", "-qam", "back")
    brain.sync()
    through_index = results()
    assert brain.searcher._vectors is None  # no matrix was loaded: the server answered
    for got, want in zip(through_index, exact):
        assert [p for p, _, _ in got] == [p for p, _, _ in want]
        assert [v for _, v, _ in got] == pytest.approx([v for _, v, _ in want], abs=2e-4)  # shown rounded to 4 places
        assert [s for _, _, s in got] == pytest.approx([s for _, _, s in want], abs=2e-4)
    # A full rebuild builds the index in the new schema before swapping it in.
    assert brain.index(full=True).rebuilt and brain.searcher.store.hnsw_state() is True
    assert [[p for p, _, _ in r] for r in results()] == [[p for p, _, _ in r] for r in through_index]
    brain.close()
