#!/usr/bin/env python3
"""The PostgreSQL store next to SQLite: write throughput and warm search latency on the same chunks.

Real chunk texts and vectors are taken from an existing index (`--base-db`,
e.g. SciFact indexed by `brain eval`); larger sizes reuse them with a
distinguishing word and perturbed vectors, as bench_search.py does. The same
files go into an SQLite index and into a PostgreSQL corpus through the store
interface (no embedding: this measures the stores), then one warm Brain per
store times every query in each mode, with the base index's model encoding
the queries.

    python tools/bench/bench_postgres.py --base-db PATH --store postgresql://user@host/db --sizes 10000 50000
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_files import DEFAULT_DATA, DEFAULT_WORK, PROJECT, read_beir_queries  # noqa: E402

CHUNKS_PER_FILE = 10


def base_rows(base_db: Path) -> tuple[dict[str, str], list[str], np.ndarray]:
    """(meta the index was built with, chunk texts, their vectors) of the base index, read without changing it."""
    from brain.store import Store

    copy = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-postgres-base-{os.getpid()}.sqlite"
    with sqlite3.connect(f"file:{base_db}?mode=ro", uri=True) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    base = Store(copy, create=False)
    try:
        meta = {k: base.get_meta(k) or "" for k in ("model", "dimension", "chunking", "fts_tokenizer", "stemmer", "keyword_fields")}
        ids, _, matrix = base.vector_matrix(int(meta["dimension"]))
        rows = base.chunks_by_id(ids.tolist())
        texts = [" ".join(rows[int(i)].text.split())[:600] for i in ids]
    finally:
        base.close()
        copy.unlink(missing_ok=True)
    return meta, texts, matrix


def build(root: Path, store_url: str, meta: dict[str, str], texts: list[str], matrix: np.ndarray, size: int, model: str) -> float:
    """Write `size` chunks as files and into the index of `root` (SQLite, or the server when `store_url`); returns chunks/s."""
    from brain.config import load_settings
    from brain.sources import content_hash
    from brain.store import NewChunk, open_store

    root.mkdir(parents=True, exist_ok=True)
    config = f'[embedding]\nmodel = "{model}"\n'
    (root / "brain.toml").write_text(config, encoding="utf-8")
    if store_url:
        os.environ["BRAIN_STORE"] = store_url
    else:
        os.environ.pop("BRAIN_STORE", None)
    settings = load_settings(root)
    store = open_store(settings, tokenizer=meta["fts_tokenizer"], stemmer=meta["stemmer"])
    store.set_meta(meta)
    rng = np.random.default_rng(42)
    started = time.monotonic()
    for f in range(size // CHUNKS_PER_FILE):
        lines, chunks = [], []
        for line_no in range(1, CHUNKS_PER_FILE + 1):
            k = f * CHUNKS_PER_FILE + line_no - 1
            src, variant = k % len(texts), k // len(texts)
            text = texts[src] if variant == 0 else f"{texts[src]} variant{variant}"
            vector = matrix[src] if variant == 0 else matrix[src] + rng.normal(0, 0.02, matrix.shape[1]).astype(np.float32)
            vector = (vector / np.linalg.norm(vector)).astype(np.float32)
            lines.append(text)
            chunks.append(NewChunk(text, "", line_no, line_no, [], None, vector.tobytes()))
        rel = f"d{f // 1000:04d}/f{f:07d}.txt"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = ("\n".join(lines) + "\n").encode()
        path.write_bytes(data)
        info = path.stat()
        store.replace_file(path=rel, hash=content_hash(data), size=info.st_size, mtime_ns=info.st_mtime_ns,
                           metadata={}, warning=None, page_starts=[], chunks=chunks, path_text=rel)
    seconds = time.monotonic() - started
    store.record_languages()
    store.close()
    return size / seconds


def warm_latency(root: Path, store_url: str, queries: list[str], mode: str) -> dict[str, float]:
    """One warm Brain (as a server keeps), then every query timed."""
    from brain import Brain

    if store_url:
        os.environ["BRAIN_STORE"] = store_url
    else:
        os.environ.pop("BRAIN_STORE", None)
    brain = Brain(root)
    brain.search(queries[0], mode=mode)
    times = []
    for q in queries:
        t = time.perf_counter()
        brain.search(q, mode=mode, limit=10)
        times.append((time.perf_counter() - t) * 1000)
    brain.close()
    times.sort()
    return {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(times[max(0, int(len(times) * 0.95) - 1)], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-db", type=Path, required=True, help="an index to take real texts and vectors from")
    parser.add_argument("--store", required=True, help="postgresql://… of the server to measure")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--out", type=Path, default=PROJECT / "tools" / "bench" / "results" / "postgres.json")
    args = parser.parse_args()
    queries = read_beir_queries(args.data / "scifact")[: args.queries]
    meta, texts, matrix = base_rows(args.base_db)
    model = meta["model"].split(" (")[0]
    results: dict = {"machine": {"cores": os.cpu_count()}, "base_model": meta["model"], "sizes": {}}
    for size in args.sizes:
        entry: dict = {}
        for name, url in (("sqlite", ""), ("postgres", args.store)):
            root = args.work / f"pg-bench-{name}-{size}" / f"bench{size}"
            separator = "&" if "?" in url else "?"
            store_url = f"{url}{separator}corpus=bench_{size}" if url else ""
            entry[name] = {"write_chunks_per_s": round(build(root, store_url, meta, texts, matrix, size, model), 1)}
            for mode in ("bm25", "vector", "hybrid"):
                entry[name][mode] = warm_latency(root, store_url, queries, mode)
            print(f"{size:>8} {name:<8} write {entry[name]['write_chunks_per_s']:.0f} chunks/s  "
                  + "  ".join(f"{m} p50 {entry[name][m]['p50_ms']} p95 {entry[name][m]['p95_ms']} ms" for m in ("bm25", "vector", "hybrid")),
                  file=sys.stderr)
        results["sizes"][str(size)] = entry
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
