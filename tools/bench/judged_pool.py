"""The pages a judged set has never judged, among the first 10 of each search mode: the pool to judge next.

Benchmark tool, not a test. A hand-judged set lists the pages its author thought of; a mode that finds a right
page the author missed is scored as wrong, and a comparison of modes leans toward the one whose results the
author had in mind. Pooling (judging every page any mode ranks in its first 10) removes that lean. This prints,
per query, the unjudged pages of the union of the bm25, vector and hybrid top 10 (each query's `path` applied, as
`brain eval` does), sorted by path so that a judge cannot tell which mode found which.

    PYTHONPATH=tools/lib python tools/bench/judged_pool.py --notes ../shared/data/corpora/tldr-en \
        --queries tools/bench/judged/tldr-en.jsonl > pool.json

After judging, add the relevant pages to each query's `relevant` and say so in judged/README.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from collection_args import add_collection_arguments, load_collection  # noqa: E402

from brain.embeddings import Embedder  # noqa: E402
from brain.search import Searcher  # noqa: E402

MODES = ("bm25", "vector", "hybrid")
DEPTH = 10  # the depth MRR@10 and nDCG@10 read


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_collection_arguments(parser)
    parser.add_argument("--depth", type=int, default=DEPTH)
    args = parser.parse_args()
    if not args.notes or not args.queries:
        parser.error("give --notes and --queries (a judged notes set)")
    collection = load_collection(args)  # the judged file read and checked as brain eval reads it
    searcher = Searcher(collection.settings, Embedder(collection.settings))
    pools = []
    try:
        for qid, text in collection.queries.items():
            found: set[str] = set()
            for mode in MODES:
                response = searcher.search(text, mode=mode, limit=args.depth, path_prefix=collection.paths.get(qid),
                                           no_cutoff=True)
                found.update(hit.path for hit in response.results)
            judged = list(collection.qrels[qid])
            pools.append({"id": qid, "query": text, "kind": collection.kinds.get(qid), "judged": judged,
                          "pool": sorted(found - set(judged))})
    finally:
        searcher.close()
    json.dump(pools, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    sys.stderr.write(f"{sum(len(p['pool']) for p in pools)} unjudged pages in the pools of {len(pools)} queries\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
