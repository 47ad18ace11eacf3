"""The collection a benchmark runs on, named as `brain eval` names it: a BEIR folder, or --notes with --queries.

Shared by the benchmarks that reuse `brain eval`'s index (same cache folder and settings).
"""

from __future__ import annotations

import argparse

from brain import evaluation


def add_collection_arguments(parser: argparse.ArgumentParser) -> None:
    """A BEIR folder (positional) or --notes/--queries, with --split, --limit-queries, --workdir and --set."""
    parser.add_argument("collection", nargs="?")
    parser.add_argument("--notes", default=None, help="a notes folder, with --queries (a judged JSONL file)")
    parser.add_argument("--queries", default=None)
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")


def load_collection(args: argparse.Namespace) -> evaluation.Collection:
    """The collection those arguments name (evaluation.load_collection)."""
    return evaluation.load_collection(
        args.collection, split=args.split, notes=args.notes, queries=args.queries,
        workdir=args.workdir, overrides=args.set, limit_queries=args.limit_queries,
    )
