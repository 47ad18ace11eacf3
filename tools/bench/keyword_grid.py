"""Grid over the keyword half's note-aware constants, bm25 mode, at query time.

The fields' BM25 weights (store.FIELD_WEIGHTS), the whole-title raise
(search.TITLE_MATCH_WEIGHT) and the weight of typo corrections
(spelling.EXPANSION_WEIGHT; 0 scores as if there were none).

Benchmark, not a test: it builds or reuses the index `brain eval` would (same
cache folder and settings), then runs every judged query through the real
Searcher in bm25 mode once per setting and scores the per-file rankings with
ranx like `brain eval`. The weights are read per query, so the index is built once.

    PYTHONPATH=tools/lib python tools/bench/keyword_grid.py --notes examples/brain \
        --queries tests/data/example_queries.jsonl
    PYTHONPATH=tools/lib python tools/bench/keyword_grid.py ../shared/data/scifact --split train \
        --grid "1,1,1,1,1;4,4,2,2,1" \
        --typo-weights 0,0.5 --set search.stemmer=none
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys

from brain import evaluation, search, spelling, store
from brain.embeddings import Embedder
from brain.errors import BrainError
from brain.search import Searcher
from collection_args import add_collection_arguments, load_collection

DEFAULT_GRID = "1,1,1,1,1;2,2,1,1,1;4,4,2,2,1;4,2,2,1,1;8,4,2,2,1;8,8,2,2,1;4,4,1,1,1"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_collection_arguments(parser)
    parser.add_argument("--grid", default=DEFAULT_GRID,
                        help=f"weights of {','.join(store.FIELDS)}, settings split by ';'")
    parser.add_argument("--title-bonus", default=str(search.TITLE_MATCH_WEIGHT),
                        help="whole-title raises to try, e.g. 0,1")
    parser.add_argument("--kinds", action="store_true",
                        help="also MRR@10 per query kind (the \"kind\" of each line of --queries)")
    parser.add_argument("--typo-weights", default=str(spelling.EXPANSION_WEIGHT),
                        help="typo correction weights to try, e.g. 0,0.5")
    args = parser.parse_args()

    collection = load_collection(args)
    kinds: dict[str, str] = {}
    if args.queries:
        rows = [json.loads(line) for line in open(args.queries, encoding="utf-8") if line.strip()]
        kinds = {str(row.get("id") or f"q{n}"): str(row.get("kind", "")) for n, row in enumerate(rows, 1)}
    embedder = Embedder(collection.settings)
    evaluation._prepare_index(collection, embedder, show_progress=False)  # builds or reuses, like brain eval
    searcher = Searcher(collection.settings, embedder)
    print(f"{collection.name}: {len(collection.queries)} queries; stemmer {collection.settings['search.stemmer']}; "
          f"fields {', '.join(store.FIELDS)}")
    print("| weights | title raise | typo weight | nDCG@10 | MRR@10 | R@5 | median ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for cell in args.grid.split(";"):
        values = [float(v) for v in cell.split(",")]
        store.FIELD_WEIGHTS.update(zip(store.FIELDS, values))
        for bonus, typo in itertools.product((float(b) for b in args.title_bonus.split(",")),
                                             [float(t) for t in args.typo_weights.split(",")]):
            search.TITLE_MATCH_WEIGHT, spelling.EXPANSION_WEIGHT = bonus, typo
            run: dict[str, dict[str, float]] = {}
            times: list[float] = []
            for qid, text in collection.queries.items():
                try:
                    response = searcher.search(text, mode="bm25", limit=evaluation.RESULTS_PER_QUERY)
                except BrainError:
                    run[qid] = {}
                    continue
                times.append(response.seconds)
                hits = response.results
                run[qid] = {collection.doc_id(h.path): float(len(hits) - i) for i, h in enumerate(hits)}
            scores, each = evaluation.score_run(collection.qrels, run)
            median = statistics.median(times) * 1000 if times else 0.0
            by_kind = ""
            if args.kinds and kinds:
                groups: dict[str, list[float]] = {}
                for qid, kind in kinds.items():
                    if qid in each:
                        groups.setdefault(kind, []).append(each[qid]["mrr@10"])
                by_kind = " " + ", ".join(f"{k} {sum(v) / len(v):.2f}" for k, v in sorted(groups.items())) + " |"
            print(f"| {cell} | {bonus:g} | {typo:g} | {scores['ndcg@10']:.4f} | {scores['mrr@10']:.4f} | "
                  f"{scores['recall@5']:.4f} | {median:.1f} |{by_kind}")
            sys.stdout.flush()
    searcher.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
