"""How far fusion could go with the two halves it has: per kind, MRR@10 of each mode and of the better half per query.

Benchmark, not a test. Runs `brain eval`'s own evaluation (same index cache, settings and scoring) in bm25,
vector and hybrid mode, then, for each query, takes the better of the two halves' reciprocal ranks: a fusion
that always knew which half to believe would score that ("best half"). "either first" is the share of queries
one half or the other ranks a relevant note first. A target above the best half can only be reached by putting
first notes that neither half puts first, which takes a better model, not a better fusion.

    PYTHONPATH=tools/lib python tools/bench/half_bound.py --notes ../shared/data/corpora/obsidian-help \
        --queries tools/bench/judged/obsidian-help.jsonl
    PYTHONPATH=tools/lib python tools/bench/half_bound.py --notes examples/agency \
        --queries tools/bench/judged/agency.jsonl
"""

from __future__ import annotations

import argparse
import sys

from brain import evaluation
from collection_args import add_collection_arguments, load_collection

COLUMNS = ("bm25", "vector", "hybrid", "best half", "either first")


def bound(kinds: dict[str, str], per_mode: dict[str, dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per kind, then "all": mean MRR@10 of each mode, of the better half per query, and the either-first share
    (with "queries", as evaluation._by_kind gives it)."""
    rows: dict[str, dict[str, float]] = {}
    for qid, hybrid in per_mode["hybrid"].items():
        halves = (per_mode["bm25"][qid]["mrr@10"], per_mode["vector"][qid]["mrr@10"])
        rows[qid] = {"bm25": halves[0], "vector": halves[1], "hybrid": hybrid["mrr@10"],
                     "best half": max(halves), "either first": float(max(halves) == 1.0)}
    return evaluation._by_kind(kinds, rows) | evaluation._by_kind(dict.fromkeys(rows, "all"), rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_collection_arguments(parser)
    args = parser.parse_args()
    collection = load_collection(args)
    report = evaluation.evaluate(collection, modes="bm25,vector,hybrid", per_query=True)
    per_mode = {result.mode: result.per_query for result in report.results}
    print(f"{collection.name}: MRR@10 per kind\n")
    print("| kind | queries | " + " | ".join(COLUMNS) + " |")
    print("|---|---:|" + "---:|" * len(COLUMNS))
    for kind, row in bound(collection.kinds, per_mode).items():
        print(f"| {kind} | {row['queries']:.0f} | " + " | ".join(f"{row[c]:.3f}" for c in COLUMNS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
