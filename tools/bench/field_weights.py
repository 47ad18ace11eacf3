"""Grid over the keyword fields' BM25 weights (store.FIELD_WEIGHTS) and the whole-title bonus, bm25 mode, at query time.

Benchmark, not a test: it builds or reuses the index `brain eval` would (same
cache folder and settings), then runs every judged query through the real
Searcher in bm25 mode once per setting and scores the per-file rankings with
ranx like `brain eval`. The weights are read per query, so the index is built once.

    PYTHONPATH=tools/lib python tools/bench/field_weights.py --notes examples/brain --queries tests/data/example_queries.jsonl
    PYTHONPATH=tools/lib python tools/bench/field_weights.py ../shared/data/scifact --split train --grid "1,1,1,1,1;4,4,2,2,1"
"""

from __future__ import annotations

import argparse
import sys

from brain import evaluation, search, store
from brain.embeddings import Embedder
from brain.errors import BrainError
from brain.search import Searcher

DEFAULT_GRID = "1,1,1,1,1;2,2,1,1,1;4,4,2,2,1;4,2,2,1,1;8,4,2,2,1;8,8,2,2,1;4,4,1,1,1"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection", nargs="?")
    parser.add_argument("--split", default="test")
    parser.add_argument("--notes")
    parser.add_argument("--queries")
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--grid", default=DEFAULT_GRID,
                        help=f"weights of {','.join(store.FIELDS)}, settings split by ';'")
    parser.add_argument("--title-bonus", default=str(search.TITLE_MATCH_WEIGHT), help="whole-title weights to try, e.g. 0,1")
    args = parser.parse_args()

    collection = evaluation.load_collection(args.collection, split=args.split, notes=args.notes, queries=args.queries,
                                            workdir=args.workdir, overrides=args.set, limit_queries=args.limit_queries)
    embedder = Embedder(collection.settings)
    evaluation._prepare_index(collection, embedder, show_progress=False)  # builds or reuses, like brain eval
    searcher = Searcher(collection.settings, embedder)
    print(f"{collection.name}: {len(collection.queries)} queries; fields {', '.join(store.FIELDS)}")
    print("| weights | title bonus | nDCG@10 | MRR@10 | R@5 |")
    print("|---|---:|---:|---:|---:|")
    for cell in args.grid.split(";"):
        values = [float(v) for v in cell.split(",")]
        store.FIELD_WEIGHTS.update(zip(store.FIELDS, values))
        for bonus in (float(b) for b in args.title_bonus.split(",")):
            search.TITLE_MATCH_WEIGHT = bonus
            run: dict[str, dict[str, float]] = {}
            for qid, text in collection.queries.items():
                try:
                    hits = searcher.search(text, mode="bm25", limit=evaluation.RESULTS_PER_QUERY).results
                except BrainError:
                    hits = []
                run[qid] = {collection.doc_id(h.path): float(len(hits) - i) for i, h in enumerate(hits)}
            scores, _ = evaluation.score_run(collection.qrels, run)
            print(f"| {cell} | {bonus:g} | {scores['ndcg@10']:.4f} | {scores['mrr@10']:.4f} | {scores['recall@5']:.4f} |")
            sys.stdout.flush()
    searcher.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
