#!/usr/bin/env python3
"""The vector half alone at a size too large to write through the indexer here: HNSW on PostgreSQL against the exact scan.

Takes the vectors of a corpus bench_postgres.py wrote (`--from-corpus`), makes
`--copies` copies of each on the server, each perturbed by uniform noise of
the same spread as bench_search's N(0, 0.02) and renormalised, into a corpus
of its own (chunks with vectors only: no text, no postings), then builds the
HNSW index as brain does (maintain_indexes, timed) and compares the index's
answers (PostgresStore.nearest_vectors, the code search uses) with the exact
answers computed in numpy from every vector, for SciFact queries encoded by
the model.

    python tools/bench/bench_hnsw.py --store postgresql://… --from-corpus bench_100000 --copies 10
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_files import DEFAULT_DATA, read_beir_queries  # noqa: E402

NOISE = 0.02 * 3 ** 0.5  # uniform(-a, a) has the spread of N(0, 0.02) when a = 0.02·√3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True, help="postgresql://… of the server")
    parser.add_argument("--from-corpus", required=True, help="a corpus bench_postgres.py wrote (its vectors are copied)")
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--build-memory", default=None, help="maintenance_work_mem for the build (default: brain's)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "hnsw.json")
    args = parser.parse_args()

    from brain import store_postgres
    from brain.config import load_settings
    from brain.embeddings import Embedder
    from brain.store_postgres import PostgresStore, schema_name

    if args.build_memory:
        store_postgres.HNSW_BUILD_MEMORY = args.build_memory
    separator = "&" if "?" in args.store else "?"
    source = schema_name(args.from_corpus)
    corpus = f"hnsw_{args.from_corpus}_x{args.copies}"
    store = PostgresStore(f"{args.store}{separator}corpus={corpus}", corpus)
    out: dict = {"copies": args.copies, "load_start": os.getloadavg()[0]}
    dimension = int(store.conn.execute(f'SELECT value FROM "{source}".meta WHERE key = %s', ("dimension",)).fetchone()[0])
    if store.embedded_count() == 0:
        store.set_meta({"dimension": str(dimension)})
        store.replace_file(path="vectors", hash="-", size=0, mtime_ns=0, metadata={}, warning=None, page_starts=[], chunks=[])
        file_id = store.get_file("vectors").id
        ext, _ = store._vector_ops()
        started = time.monotonic()
        for copy in range(args.copies):
            # Only constants, the schema names and the copy number are spliced in.
            store._execute(
                "INSERT INTO @.chunks(file_id, seq, text, start_line, end_line, tsv, vector)"
                f" SELECT %s, row_number() OVER () + %s, '', 1, 1, ''::tsvector,"
                f" {ext}.l2_normalize(c.vector OPERATOR({ext}.+) (SELECT array_agg((random() - 0.5) * %s)"
                f"   FROM generate_series(1, {dimension}) WHERE c.id IS NOT NULL)::{ext}.vector)"
                f' FROM "{source}".chunks AS c WHERE c.vector IS NOT NULL',
                (file_id, copy * 10_000_000, 2 * NOISE if copy else 0.0))
            print(f"copy {copy + 1}/{args.copies}: {store.embedded_count()} vectors, {time.monotonic() - started:.0f} s",
                  file=sys.stderr)
        with store.transaction():
            pass
        out["fill_s"] = round(time.monotonic() - started, 1)
    out["vectors"] = store.embedded_count()
    store._execute(f"DROP INDEX IF EXISTS @.{store_postgres.HNSW_INDEX}")
    store.conn.execute(store._sql("VACUUM ANALYZE @.chunks"))
    started = time.monotonic()
    store.maintain_indexes()
    out["build_s"] = round(time.monotonic() - started, 1)
    out["load_after_build"] = os.getloadavg()[0]
    print(f"built in {out['build_s']} s", file=sys.stderr)

    ids, _, matrix = store.vector_matrix(dimension)
    os.environ.pop("BRAIN_STORE", None)
    embedder = Embedder(load_settings(Path.cwd()))
    queries = [embedder.encode_query(q) for q in read_beir_queries(args.data / "scifact")[: args.queries]]
    at10, at200, times, exact_times = [], [], [], []
    for q in queries:
        t = time.perf_counter()
        sims = matrix @ q
        truth = ids[np.argsort(-sims)[:200]].tolist()
        exact_times.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        found = [c for c, _ in store.nearest_vectors(q, 200)]
        times.append((time.perf_counter() - t) * 1000)
        at10.append(len(set(found[:10]) & set(truth[:10])) / 10)
        at200.append(len(set(found) & set(truth)) / 200)
    times.sort()
    exact_times.sort()
    out.update({
        "recall@10": round(float(np.mean(at10)), 4), "recall@200": round(float(np.mean(at200)), 4),
        "min_recall@10": float(np.min(at10)),
        "hnsw_p50_ms": round(statistics.median(times), 1), "hnsw_p95_ms": round(times[int(len(times) * 0.95) - 1], 1),
        "numpy_exact_p50_ms": round(statistics.median(exact_times), 1),
        "index_mb": round(int(store.conn.execute("SELECT pg_relation_size(%s::regclass)", (f'"{store.schema}".{store_postgres.HNSW_INDEX}',)).fetchone()[0]) / 2**20),
        "load_end": os.getloadavg()[0],
        "hnsw": {"m": store_postgres.HNSW_M, "ef_construction": store_postgres.HNSW_EF_CONSTRUCTION,
                 "build_memory": store_postgres.HNSW_BUILD_MEMORY},
    })
    store.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
