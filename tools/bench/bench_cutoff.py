"""What the relevance cut-off (search.cutoff) costs and saves on a judged collection, per mode and threshold.

Benchmark, not a test: it reuses the index `brain eval` built (same cache
folder and settings) and runs the real `Searcher.search` with `-k 10` once per
threshold, against the same search with the cut-off off. Per threshold it counts
the relevant results the cut removed from the top 10 (the cost: it should be 0),
MRR@10 and R@10 with and without the cut, how many results a query shows, and how
many of the non-relevant ones the cut removed (the saving).

    PYTHONPATH=tools/lib python tools/bench/bench_cutoff.py --notes examples/agency \
        --queries tools/bench/judged/agency.jsonl
    PYTHONPATH=tools/lib python tools/bench/bench_cutoff.py ../shared/data/squad-it \
        --queries tools/bench/judged/squad-it-en.jsonl --thresholds 0.1,0.2,0.3
"""

from __future__ import annotations

import argparse
import os
import statistics

from brain import evaluation
from brain.embeddings import Embedder
from brain.errors import BrainError
from brain.search import SearchResponse, Searcher
from collection_args import add_collection_arguments, load_collection

K = 10


def _ranked(searcher: Searcher, collection: evaluation.Collection, qid: str, text: str, mode: str,
            no_cutoff: bool) -> list[str]:
    def searched(literal: bool) -> SearchResponse:
        return searcher.search(text, mode=mode, limit=K, path_prefix=collection.paths.get(qid), literal=literal,
                               no_cutoff=no_cutoff)

    try:
        try:
            response = searched(False)
        except BrainError as exc:
            if not (exc.usage and exc.field == "query"):
                raise
            response = searched(True)  # as brain eval: a stray quote in a collection's text is a character
    except BrainError as exc:
        if exc.usage:
            return []
        raise
    return [collection.doc_id(h.path) for h in response.results]


def _scores(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> tuple[float, float, int, int, float]:
    """(MRR@10, R@10, relevant found, non-relevant shown, median results shown) of one run."""
    mrr, recall, found, other, shown = [], [], 0, 0, []
    for qid, docs in runs.items():
        relevant = {d for d, grade in qrels[qid].items() if grade > 0}
        hits = [d in relevant for d in docs]
        mrr.append(next((1.0 / (i + 1) for i, h in enumerate(hits) if h), 0.0))
        recall.append(sum(hits) / len(relevant) if relevant else 0.0)
        found += sum(hits)
        other += len(hits) - sum(hits)
        shown.append(len(docs))
    return statistics.fmean(mrr), statistics.fmean(recall), found, other, statistics.median(shown)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_collection_arguments(parser)
    parser.add_argument("--modes", default="hybrid,bm25,vector")
    parser.add_argument("--thresholds", default="0.05,0.1,0.2,0.3")
    args = parser.parse_args()

    collection = load_collection(args)
    settings = collection.settings
    embedder = Embedder(settings)
    evaluation._prepare_index(collection, embedder, show_progress=False)  # builds or reuses, like brain eval
    searcher = Searcher(settings, embedder)
    thresholds = [float(t) for t in args.thresholds.split(",")]
    print(f"{collection.name}: {len(collection.queries)} queries, top {K}; load average "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| mode | cut-off | relevant cut | MRR@10 | R@10 | results shown (median) | non-relevant cut |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    try:
        for mode in args.modes.split(","):
            runs = {qid: _ranked(searcher, collection, qid, text, mode, True)
                    for qid, text in collection.queries.items()}
            mrr, recall, found, other, shown = _scores(runs, collection.qrels)
            print(f"| {mode} | off | — | {mrr:.4f} | {recall:.4f} | {shown:g} | — |")
            for threshold in thresholds:
                settings.values["search.cutoff"] = threshold
                cut_runs = {qid: _ranked(searcher, collection, qid, text, mode, False)
                            for qid, text in collection.queries.items()}
                c_mrr, c_recall, c_found, c_other, c_shown = _scores(cut_runs, collection.qrels)
                share = (other - c_other) / other if other else 0.0
                print(f"| {mode} | {threshold:g} | {found - c_found} | {c_mrr:.4f} | {c_recall:.4f} | {c_shown:g} | "
                      f"{other - c_other} ({share:.0%}) |")
            settings.values["search.cutoff"] = 0.0
    finally:
        searcher.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
