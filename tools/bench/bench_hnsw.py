#!/usr/bin/env python3
"""The vector half alone at a size too large to write through the indexer here: HNSW on PostgreSQL
against the exact scan.

Takes the vectors of a corpus bench_postgres.py wrote (`--from-corpus`), makes
`--copies` copies of each on the server, each perturbed by uniform noise of
the same spread as bench_search's N(0, 0.02) and renormalised, into a corpus
of its own (chunks with vectors only: no text, no postings), then builds the
HNSW index as brain does (maintain_indexes, timed) and compares the index's
answers (PostgresStore.nearest_vectors, the code search uses) with the exact
answers computed in numpy from every vector, for SciFact queries encoded by
the model.

With `--mix B` each copy is instead a mixture of two of the corpus's real
vectors, normalise(x + β·y) with y another chunk and β drawn from [0, B): a
chunk about one subject touching on another. The copies then spread towards
other documents, as a large corpus's chunks do, instead of scattering in every
direction at once as noise does (noise in 384 dimensions makes nearest
neighbours a lottery among near-equal vectors, which no graph index finds).

With `--copies 0` it measures the corpus itself (a whole corpus bench_postgres.py
wrote, texts and postings included): its index is built again with the graph
asked for. `--m` and `--ef-construction` change the graph, `--ef-search` lists
the search widths to measure on it (each as brain's own search sets it).

    python tools/bench/bench_hnsw.py --store postgresql://… --from-corpus bench_100000 --copies 10
    python tools/bench/bench_hnsw.py --store postgresql://… --from-corpus bench_1000000 --copies 0 \
        --m 24 --ef-search 400 1000
    python tools/bench/bench_hnsw.py --store postgresql://… --from-corpus eval_scifact_… --copies 138 --mix 0.5
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
    parser.add_argument("--from-corpus", required=True,
                        help="a corpus bench_postgres.py wrote (its vectors are copied)")
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--mix", type=float, default=None,
                        help="copies mix two real vectors (x + β·y, β < MIX) instead of adding noise")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--build-memory", default=None, help="maintenance_work_mem for the build (default: brain's)")
    parser.add_argument("--m", type=int, default=None, help="the graph's links per node (default: brain's)")
    parser.add_argument("--ef-construction", type=int, default=None, help="the build's search width (default: brain's)")
    parser.add_argument("--keep-index", action="store_true", help="measure the index the corpus has (no rebuild)")
    parser.add_argument("--ef-search", type=int, nargs="+", default=None,
                        help="search widths to measure (default: what brain's search uses for 200 candidates)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "hnsw.json")
    args = parser.parse_args()

    from brain.store.postgres import corpus, schema
    from brain.config import load_settings
    from brain.embeddings import Embedder
    from brain.store.postgres import PostgresStore, schema_name

    if args.build_memory:
        corpus.HNSW_BUILD_MEMORY = args.build_memory
    if args.m:
        corpus.HNSW_M = args.m
    if args.ef_construction:
        corpus.HNSW_EF_CONSTRUCTION = args.ef_construction
    separator = "&" if "?" in args.store else "?"
    source = schema_name(args.from_corpus)
    corpus = (
        (f"hnsw_{args.from_corpus}_x{args.copies}" + ("_mix" if args.mix else "")) if args.copies else args.from_corpus
    )
    store = PostgresStore(f"{args.store}{separator}corpus={corpus}", corpus)
    out: dict = {"copies": args.copies, "mix": args.mix, "load_start": os.getloadavg()[0]}
    dimension = int(
        store.conn.execute(f'SELECT value FROM "{source}".meta WHERE key = %s', ("dimension",)).fetchone()[0]
    )
    if args.copies and store.embedded_count() == 0:
        store.set_meta({"dimension": str(dimension)})
        store.replace_file(path="vectors", hash="-", size=0, mtime_ns=0, metadata={}, warning=None, page_starts=[],
                           chunks=[])
        file_id = store.get_file("vectors").id
        ext, _ = store._vector_ops()
        started = time.monotonic()
        for copy in range(args.copies):
            if args.mix and copy:
                # Row a is mixed with row b = (7919·a + k) mod n: another chunk, a different one per copy.
                store._execute(
                    f'WITH src AS (SELECT row_number() OVER (ORDER BY id) - 1 AS rn, vector FROM "{source}".chunks'
                    "   WHERE vector IS NOT NULL),"
                    " n AS (SELECT count(*) AS n FROM src)"
                    " INSERT INTO @.chunks(file_id, seq, text, start_line, end_line, tsv, vector)"
                    f" SELECT %s, a.rn + %s, '', 1, 1, ''::tsvector, {ext}.l2_normalize(a.vector OPERATOR({ext}.+)"
                    f"   (b.vector OPERATOR({ext}.*) "
                    f"array_fill((random() * %s)::real, ARRAY[{dimension}])::{ext}.vector))"
                    " FROM src AS a JOIN src AS b ON b.rn = mod(a.rn * 7919 + %s, (SELECT n FROM n))",
                    (file_id, copy * 10_000_000, args.mix, copy * 104_729 + 1))
                continue
            # Only constants, the schema names and the copy number are spliced in.
            store._execute(
                "INSERT INTO @.chunks(file_id, seq, text, start_line, end_line, tsv, vector)"
                f" SELECT %s, row_number() OVER () + %s, '', 1, 1, ''::tsvector,"
                f" {ext}.l2_normalize(c.vector OPERATOR({ext}.+) (SELECT array_agg((random() - 0.5) * %s)"
                f"   FROM generate_series(1, {dimension}) WHERE c.id IS NOT NULL)::{ext}.vector)"
                f' FROM "{source}".chunks AS c WHERE c.vector IS NOT NULL',
                (file_id, copy * 10_000_000, 2 * NOISE if copy else 0.0))
            print(f"copy {copy + 1}/{args.copies}: {store.embedded_count()} vectors, "
                  f"{time.monotonic() - started:.0f} s",
                  file=sys.stderr)
        with store.transaction():
            pass
        out["fill_s"] = round(time.monotonic() - started, 1)
    out["vectors"] = store.embedded_count()
    if not (args.keep_index and store.hnsw_state() is True):
        store._execute(f"DROP INDEX IF EXISTS @.{corpus.HNSW_INDEX}")
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
    truths, tenth, spread, exact_times = [], [], [], []
    for q in queries:
        t = time.perf_counter()
        sims = matrix @ q
        best = np.argsort(-sims)[:200]
        truths.append(ids[best].tolist())
        exact_times.append((time.perf_counter() - t) * 1000)
        tenth.append(float(sims[best[9]]))
        spread.append(float(sims[best[0]] - sims[best[199]]))  # how far apart the candidates are at all
    out["exact_top200_cosine_spread"] = round(statistics.median(spread), 4)
    out["numpy_exact_p50_ms"] = round(statistics.median(exact_times), 1)
    out["index_mb"] = round(int(store.conn.execute("SELECT pg_relation_size(%s::regclass)",
                                                   (f'"{store.schema}".{corpus.HNSW_INDEX}',)).fetchone()[0]) / 2**20)
    options = store.conn.execute("SELECT reloptions FROM pg_class WHERE oid = %s::regclass",
                                 (f'"{store.schema}".{corpus.HNSW_INDEX}',)).fetchone()[0]
    out["hnsw"] = {"index": options, "build_memory": corpus.HNSW_BUILD_MEMORY}  # the index as built
    out["by_ef_search"] = {}
    for ef in args.ef_search or [None]:
        if ef is not None:
            schema.HNSW_EF_SEARCH_MIN = schema.HNSW_EF_SEARCH_MAX = ef
        at10, at200, times, lost = [], [], [], []
        for q, truth, exact_tenth in zip(queries, truths, tenth):
            t = time.perf_counter()
            answer = store.nearest_vectors(q, 200)
            times.append((time.perf_counter() - t) * 1000)
            found = [c for c, _ in answer]
            lost.append(exact_tenth - answer[9][1])  # cosine the index's 10th gives up against the exact 10th
            at10.append(len(set(found[:10]) & set(truth[:10])) / 10)
            at200.append(len(set(found) & set(truth)) / 200)
        times.sort()
        row = {"recall@10": round(float(np.mean(at10)), 4), "recall@200": round(float(np.mean(at200)), 4),
               "min_recall@10": float(np.min(at10)), "cosine_lost_at_10": round(float(np.median(lost)), 5),
               "hnsw_p50_ms": round(statistics.median(times), 1),
               "hnsw_p95_ms": round(times[int(len(times) * 0.95) - 1], 1),
               "load": os.getloadavg()[0]}
        out["by_ef_search"][str(ef or "brain's")] = row
        print(f"ef_search {ef or 'brain default'}: {json.dumps(row)}", file=sys.stderr)
    store.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
