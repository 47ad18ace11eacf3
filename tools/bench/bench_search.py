#!/usr/bin/env python3
"""Query latency and memory of `brain search` at 10k, 100k and 1M chunks.

Real text and real vectors come from SciFact indexed with the bundled model;
larger sizes are synthesised from them (texts reused with a distinguishing
word, vectors perturbed and re-normalised) and written as real files plus a
real index, built once and reused. Measures, per size and mode: warm
in-process p50/p95 (the MCP/HTTP server case), whole-process CLI p50 (the
shell and /memory-search case, at the smallest size), and peak RSS.

    python tools/bench/bench_search.py                  # 10k and 100k
    python tools/bench/bench_search.py --sizes 10000 100000 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_files import DEFAULT_DATA, DEFAULT_WORK, PROJECT, materialise, read_beir_queries, write_synthetic_file  # noqa: E402

CHUNKS_PER_FILE = 10


def base_index(data: Path, work: Path) -> Path:
    """SciFact indexed for real (the source of real chunk texts and vectors)."""
    from brain import Brain

    notes = materialise(data / "scifact", work)
    brain = Brain(notes)
    report = brain.index()
    print(f"base index: {report.counts()} in {report.seconds:.1f}s", file=sys.stderr)
    return notes


def synthesise(base_db: Path, size: int, work: Path) -> Path:
    """A notes folder of `size` chunks (files of CHUNKS_PER_FILE lines) with its index, built once."""
    from brain.store import SqliteStore

    root = work / f"synthetic-{size}"
    db = root / ".brain" / "brain.sqlite"
    done = root / ".complete"
    if done.exists():
        return root
    # Work on a copy: opening an index may migrate it, and the base may belong to another run.
    import sqlite3

    copy = work / "base-copy.sqlite"
    copy.unlink(missing_ok=True)
    with sqlite3.connect(f"file:{base_db}?mode=ro", uri=True) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    base = SqliteStore(copy, create=False)
    meta = {key: base.get_meta(key) or "" for key in ("model", "dimension", "chunking")}
    ids, _, matrix = base.vector_matrix(int(meta["dimension"]))
    rows = base.chunks_by_id(ids.tolist())
    texts = [" ".join(rows[int(i)].text.split())[:600] for i in ids]
    base.close()
    rng = np.random.default_rng(42)
    root.mkdir(parents=True, exist_ok=True)
    if db.exists():
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
    store = SqliteStore(db)
    store.set_meta(meta)
    n_files = size // CHUNKS_PER_FILE
    started = time.monotonic()
    for f in range(n_files):
        write_synthetic_file(store, root, f, texts, matrix, rng, CHUNKS_PER_FILE)
        if f and f % 10000 == 0:
            print(f"  synthesising {size}: {f * CHUNKS_PER_FILE} chunks, {time.monotonic() - started:.0f}s",
                  file=sys.stderr)
    store.checkpoint()
    store.close()
    done.write_text("ok")
    return root


def warm_latency(root: Path, queries: list[str], mode: str) -> dict:
    """In-process: one Brain, warmed, then every query timed."""
    from brain import Brain

    brain = Brain(root)
    brain.search(queries[0], mode=mode)  # load vectors and encoder once
    times = []
    for q in queries:
        t = time.perf_counter()
        brain.search(q, mode=mode, limit=10)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {"p50_ms": statistics.median(times), "p95_ms": times[int(len(times) * 0.95) - 1]}


def cli_latency(root: Path, queries: list[str], mode: str, runs: int) -> float:
    """Whole process, as a shell user pays it: `brain search QUERY --mode MODE`."""
    env = dict(os.environ, PYTHONPATH=str(PROJECT / "tools" / "lib"))
    times = []
    for q in queries[:runs]:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "brain", "--root", str(root), "search", q, "--mode", mode],
                       check=True, capture_output=True, env=env)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def measure_size(root: Path, queries: list[str]) -> dict:
    """Runs in a child process so peak RSS belongs to this size alone."""
    out = {mode: warm_latency(root, queries, mode) for mode in ("bm25", "vector", "hybrid")}
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--cli-runs", type=int, default=15)
    parser.add_argument("--base-db", type=Path,
                        help="an existing index to take real texts and vectors from (default: index SciFact)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--out", type=Path, default=PROJECT / "tools" / "bench" / "results" / "search.json")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    queries = read_beir_queries(args.data / "scifact")[: args.queries]
    if args.child:
        print(json.dumps(measure_size(args.child, queries)))
        return
    base = args.base_db or base_index(args.data, args.work) / ".brain" / "brain.sqlite"
    results: dict = {"machine": {"cores": os.cpu_count()}, "sizes": {}}
    for size in args.sizes:
        root = synthesise(base, size, args.work)
        child = subprocess.run([sys.executable, __file__, "--child", str(root), "--queries", str(args.queries),
                                "--data", str(args.data), "--work", str(args.work)],
                               check=True, capture_output=True, text=True)
        entry = json.loads(child.stdout.strip().splitlines()[-1])
        if size == min(args.sizes):
            entry["cli_p50_ms"] = {mode: cli_latency(root, queries, mode, args.cli_runs) for mode in ("bm25", "hybrid")}
        results["sizes"][str(size)] = entry
        print(f"{size:>9} chunks  " + "  ".join(f"{m} p50 {entry[m]['p50_ms']:.1f} ms p95 {entry[m]['p95_ms']:.1f} ms"
              for m in ("bm25", "vector", "hybrid")) + f"  peak RSS {entry['peak_rss_mb']:.0f} MB"
              + (f"  CLI p50 {entry['cli_p50_ms']}" if "cli_p50_ms" in entry else ""))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
