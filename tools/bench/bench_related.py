"""`brain related`: its latency on a collection's index and, with `--judged`, its quality (issue #26).

Benchmark, not a test. Indexes the collection as `brain eval` does (the same cache; later runs reuse it),
then asks `neighbours.related_notes` for the 10 nearest notes of `--files` notes picked evenly over the
index, warm (one untimed call first), and prints the median, p95 and the chunk count. The notes' vectors
are read from the index; no model runs. `--judged FILE` (JSONL: {"id", "note", "related": [paths]}, the
notes a person calls related to `note`) also prints nDCG@5, MRR@10 and R@5 over its rows, with and
without the linked notes left out.

    PYTHONPATH=tools/lib python tools/bench/bench_related.py ../shared/data/scifact
    PYTHONPATH=tools/lib python tools/bench/bench_related.py ../shared/data/scifact --chunks 10000
    PYTHONPATH=tools/lib python tools/bench/bench_related.py --notes examples/agency \
        --queries tools/bench/judged/agency.jsonl --judged tools/bench/judged/agency-related.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sqlite3
import tempfile
import statistics
import sys
import time
from pathlib import Path

from brain import evaluation
from brain.embeddings import Embedder
from brain.neighbours import related_notes
from brain.store import Index, SqliteStore, open_store
from brain.texts import TextReader


def scores(found: list[str], related: set[str]) -> dict[str, float]:
    """nDCG@5 (binary gains), MRR@10 and R@5 of one note's related notes."""
    dcg = sum(1 / math.log2(rank + 1) for rank, path in enumerate(found[:5], 1) if path in related)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(5, len(related)) + 1))
    first = next((rank for rank, path in enumerate(found[:10], 1) if path in related), None)
    return {"nDCG@5": dcg / ideal, "MRR@10": 1 / first if first else 0.0,
            "R@5": len(set(found[:5]) & related) / len(related)}


def judged(store: Index, reader: TextReader, path: str) -> None:
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    for exclude in (False, True):
        per_row = []
        for row in rows:
            found = related_notes(store, reader, row["note"], limit=10, exclude_linked=exclude).results
            per_row.append(scores([hit.path for hit in found], set(row["related"])))
        means = {m: sum(s[m] for s in per_row) / len(per_row) for m in ("nDCG@5", "MRR@10", "R@5")}
        print(f"{len(rows)} judged notes, exclude_linked={exclude}: "
              + ", ".join(f"{m} {v:.3f}" for m, v in means.items()))


def grown_copy(database: Path, chunks: int) -> Path:
    """A copy of the SQLite index at `database` whose files (with their chunks and vectors) repeat under copy-N/
    until it holds at least `chunks` embedded chunks."""
    copy = Path(tempfile.mkdtemp(prefix="brain-related-")) / database.name
    shutil.copy2(database, copy)
    conn = sqlite3.connect(copy)
    have = conn.execute("SELECT count(*) FROM chunks WHERE vector IS NOT NULL").fetchone()[0]
    originals = conn.execute("SELECT id FROM files ORDER BY id").fetchall()
    round_ = 0
    while have < chunks:
        round_ += 1
        for (file_id,) in originals:
            if have >= chunks:
                break
            new_id = conn.execute(
                "INSERT INTO files(path, hash, size, mtime_ns, indexed_at, metadata, status, warning, page_starts,"
                " title, language, page_labels) SELECT ? || path, hash, size, mtime_ns, indexed_at, metadata, status,"
                " warning, page_starts, title, language, page_labels FROM files WHERE id = ?",
                (f"copy-{round_}/", file_id)).lastrowid
            have += conn.execute(
                "INSERT INTO chunks(file_id, seq, text, heading_path, start_line, end_line, pages, embed_hash, vector)"
                " SELECT ?, seq, text, heading_path, start_line, end_line, pages, embed_hash, vector FROM chunks"
                " WHERE file_id = ? AND vector IS NOT NULL", (new_id, file_id)).rowcount
    conn.commit()
    conn.close()
    return copy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection", nargs="?", help="a BEIR-layout folder (or give --notes and --queries)")
    parser.add_argument("--notes")
    parser.add_argument("--queries")
    parser.add_argument("--files", type=int, default=50, help="how many notes to ask about")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--judged", help="JSONL of notes and the notes a person calls related to each")
    parser.add_argument("--chunks", type=int, default=0,
                        help="time on a copy of the (SQLite) index whose notes repeat, under copy-N/ folders, until it "
                             "holds this many embedded chunks (their vectors are real; only latency is measured)")
    args = parser.parse_args()
    collection = evaluation.load_collection(args.collection, notes=args.notes, queries=args.queries)
    embedder = Embedder(collection.settings)
    report = evaluation._prepare_index(collection, embedder, show_progress=False)
    print(f"index: {report['files']} files, {report['chunks_embedded']} chunks embedded now, reused={report['reused']}")
    store = open_store(collection.settings, create=False)
    if args.chunks:
        store.close()
        store = SqliteStore(grown_copy(collection.settings.database_path, args.chunks), create=False)
    try:
        reader = TextReader(collection.settings, store)
        paths = sorted(store.all_files())
        step = max(1, len(paths) // args.files)
        asked = paths[::step][: args.files]
        related_notes(store, reader, asked[0], limit=args.limit)  # warm: the vector matrix is read once
        times = []
        for path in asked:
            started = time.perf_counter()
            related_notes(store, reader, path, limit=args.limit)
            times.append(time.perf_counter() - started)
        chunks = store.counts()["embedded_chunks"]
        if args.judged:
            judged(store, reader, args.judged)
    finally:
        store.close()
    times.sort()
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{len(asked)} notes, {chunks:,} embedded chunks: related p50 {statistics.median(times) * 1000:.1f} ms, "
          f"p95 {p95 * 1000:.1f} ms; load average {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
