#!/usr/bin/env python3
"""Indexing speed and memory: cold index, bare encode of the same chunks, cached rebuild, no-change scan.

The headline is the ratio of the whole pipeline's time to the bare `encode`
time of the same chunk texts in the same process: the model is the limit, and
everything else (walking, extraction, chunking, hashing, SQLite, FTS5) must hide
behind it.

    python tools/bench/bench_index.py                      # SciFact (5,183 abstracts)
    python tools/bench/bench_index.py --notes ../shared/data/corpora/obsidian-help
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_files import DEFAULT_DATA, DEFAULT_WORK, PROJECT, materialise  # noqa: E402


def embed_texts(brain) -> list[str]:  # type: ignore[no-untyped-def]
    """The distinct texts the index embeds, produced by the same discovery, extraction and chunking."""
    from brain import sources
    from brain.indexer import Indexer

    indexer = Indexer(brain.settings, brain.embedder)
    seen: dict[str, None] = {}
    for source in sources.discover(brain.settings).files:
        try:
            extracted = sources.extract_bytes(source.path.name, source.path.read_bytes())
        except sources.ExtractionError:
            continue
        for chunk in indexer.chunks_of(source.path.name, extracted):
            if chunk.embed_text:
                seen.setdefault(chunk.embed_text)
    return list(seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=Path, help="a notes folder to index (default: SciFact materialised)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N SciFact documents")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--out", type=Path, default=PROJECT / "tools" / "bench" / "results" / "index.json")
    args = parser.parse_args()

    from brain import Brain

    notes = args.notes.resolve() if args.notes else materialise(args.data / "scifact", args.work, args.limit)
    db = args.work / f"index-bench-{notes.parent.name if not args.notes else notes.name}" / "brain.sqlite"
    shutil.rmtree(db.parent, ignore_errors=True)
    import os

    os.environ["BRAIN_DATABASE"] = str(db)
    brain = Brain(notes)
    brain.embedder.encode_documents(["warm up the model"])  # load before timing

    t = time.perf_counter()
    cold = brain.index()
    pipeline_s = time.perf_counter() - t
    files = cold.counts()["added"]

    texts = embed_texts(brain)
    t = time.perf_counter()
    for start in range(0, len(texts), 256):
        brain.embedder.encode_documents(texts[start : start + 256])
    encode_s = time.perf_counter() - t

    t = time.perf_counter()
    rebuilt = brain.index(full=True)
    cached_s = time.perf_counter() - t

    nochange = []
    for _ in range(5):
        t = time.perf_counter()
        report = brain.index()
        nochange.append(time.perf_counter() - t)
        assert report.counts()["unchanged"] == files

    result = {
        "corpus": str(notes),
        "files": files,
        "chunks": cold.chunks_written,
        "embedded": cold.chunks_embedded,
        "precision": brain.embedder.precision,
        "cold_index_s": round(pipeline_s, 2),
        "bare_encode_s": round(encode_s, 2),
        "pipeline_over_encode": round(pipeline_s / encode_s, 3),
        "files_per_s": round(files / pipeline_s, 1),
        "chunks_per_s": round(cold.chunks_written / pipeline_s, 1),
        "cached_rebuild_s": round(cached_s, 2),
        "cached_rebuild_embedded": rebuilt.chunks_embedded,
        "no_change_scan_s": round(statistics.median(nochange), 3),
        "no_change_scan_per_1500_files_s": round(statistics.median(nochange) * 1500 / max(files, 1), 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key:<{width}}  {value}")


if __name__ == "__main__":
    main()
