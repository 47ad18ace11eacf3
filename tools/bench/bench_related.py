"""`brain related` latency on a collection's index (issue #26: p50 at 10k chunks).

Benchmark, not a test. Indexes the collection as `brain eval` does (the same cache; later runs reuse it),
then asks `neighbours.related_notes` for the 10 nearest notes of `--files` notes picked evenly over the
index, warm (one untimed call first), and prints the median, p95 and the chunk count. The notes' vectors
are read from the index; no model runs.

    PYTHONPATH=tools/lib python tools/bench/bench_related.py ../shared/data/scifact
    PYTHONPATH=tools/lib python tools/bench/bench_related.py --notes examples/agency \
        --queries tools/bench/judged/agency.jsonl
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from brain import evaluation
from brain.embeddings import Embedder
from brain.neighbours import related_notes
from brain.store import open_store
from brain.texts import TextReader


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection", nargs="?", help="a BEIR-layout folder (or give --notes and --queries)")
    parser.add_argument("--notes")
    parser.add_argument("--queries")
    parser.add_argument("--files", type=int, default=50, help="how many notes to ask about")
    parser.add_argument("--limit", type=int, default=10)
    args = parser.parse_args()
    collection = evaluation.load_collection(args.collection, notes=args.notes, queries=args.queries)
    embedder = Embedder(collection.settings)
    report = evaluation._prepare_index(collection, embedder, show_progress=False)
    print(f"index: {report['files']} files, {report['chunks_embedded']} chunks embedded now, reused={report['reused']}")
    store = open_store(collection.settings, create=False)
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
