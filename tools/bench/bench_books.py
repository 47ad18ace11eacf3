"""Page-level retrieval on the two PDF books (issue #27): page@1, page hit@5, MRR@10, answer in excerpt/preview.

Benchmark, not a test. Copies the two books of ../shared/data/pdfs into a folder under the system's
temporary directory (never into the repository), indexes it like `brain eval --notes` does (same cache
layout, `evaluation.load_collection` and `_prepare_index`; the first run embeds about 1,000 chunks and
takes minutes, later runs reuse the index), then runs `Searcher.search` for every question of
tools/bench/judged/books.jsonl, in each mode, over both books ("all") and restricted to the question's
own book ("book": path_prefix = its file name), once as `brain search` lists files and once with
`chunks=True` (one hit per chunk, so a book can fill the top 5). Per kind and overall:

- page@1: the first hit is the right book and its first page (hit.pages[0]) is one of the question's pages;
- any page@1: the first hit is the right book and any of its pages (a chunk can run over two or three) is one;
- page hit@5: one of the top 5 hits is the right book with any of its pages among the question's pages;
- MRR@10: the reciprocal rank of the first hit of the right book (by book, not by page);
- excerpt / preview: the answer (case-insensitive, white space collapsed) is in the first right-book
  hit's excerpt (excerpt_chars=2000) / preview. The excerpt is the file's, around the hit's own passage and
  the query's words (search._add_excerpts), so it differs by mode where the hit does.

    PYTHONPATH=tools/lib python tools/bench/bench_books.py
    PYTHONPATH=tools/lib python tools/bench/bench_books.py --modes bm25 --granularity files

With both bm25 and vector among the modes, a "best half" row takes, per question and measure, the better of
the two (the bound of half_bound.py, for pages).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from brain import evaluation
from brain.embeddings import Embedder
from brain.search import SearchHit, Searcher

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_books import BOOKS, BOOKS_DIR, QUERIES, collapse, read_rows  # noqa: E402

MODES = ("hybrid", "bm25", "vector")
SCOPES = ("all", "book")
GRANULARITIES = ("files", "chunks")
METRICS = ("page@1", "any page@1", "page hit@5", "MRR@10", "excerpt", "preview")
BEST_HALF = "best half"


def _notes_folder(books: Path, workdir: Path) -> Path:
    """A folder holding copies of the two books only (copied again when a size or time differs)."""
    notes = workdir / "books"
    notes.mkdir(parents=True, exist_ok=True)
    for name in BOOKS:
        source, target = books / name, notes / name
        if not target.exists() or target.stat().st_size != source.stat().st_size:
            shutil.copy2(source, target)
    return notes


def score(row: dict[str, Any], hits: list[SearchHit]) -> dict[str, float]:
    """The five measures of one question's ranked hits."""
    book, pages, answer = row["relevant"][0], set(row["pages"]), collapse(row["answer"])
    ranks = [i for i, hit in enumerate(hits[:10], 1) if hit.path == book]
    first = hits[ranks[0] - 1] if ranks else None
    return {
        "page@1": float(bool(hits) and hits[0].path == book and bool(hits[0].pages) and hits[0].pages[0] in pages),
        "any page@1": float(bool(hits) and hits[0].path == book and bool(pages & set(hits[0].pages))),
        "page hit@5": float(any(hit.path == book and pages & set(hit.pages) for hit in hits[:5])),
        "MRR@10": 1.0 / ranks[0] if ranks else 0.0,
        "excerpt": float(first is not None and answer in collapse(first.excerpt or "")),
        "preview": float(first is not None and answer in collapse(first.preview or "")),
    }


def best_half(bm25: dict[str, list[dict[str, float]]], vector: dict[str, list[dict[str, float]]],
              ) -> dict[str, list[dict[str, float]]]:
    """Per question and measure, the better of the two halves: what a fusion that always knew which half to
    believe would score (half_bound.py's "best half", for pages). A target above it needs chunks that neither
    half ranks first."""
    return {kind: [{m: max(b[m], v[m]) for m in METRICS} for b, v in zip(bm25[kind], vector[kind])]
            for kind in bm25}


def _mean(scores: list[dict[str, float]], metric: str) -> str:
    return f"{sum(s[metric] for s in scores) / len(scores):.2f}" if scores else "-"


def summary(results: dict[tuple[str, str, str], dict[str, list[dict[str, float]]]]) -> str:
    """Every question: a row per granularity × mode × scope, a column per measure."""
    lines = ["| granularity | mode | scope | n | " + " | ".join(METRICS) + " |",
             "|---|---|---|---|" + "---|" * len(METRICS)]
    for (granularity, mode, scope), per_kind in results.items():
        scores = [s for group in per_kind.values() for s in group]
        lines.append(f"| {granularity} | {mode} | {scope} | {len(scores)} | "
                     + " | ".join(_mean(scores, m) for m in METRICS) + " |")
    return "\n".join(lines)


def by_kind(results: dict[tuple[str, str, str], dict[str, list[dict[str, float]]]], granularity: str, mode: str,
            kinds: list[str]) -> str:
    """One granularity and mode: a row per kind, the measures over both books then within the question's book."""
    header = " | ".join(f"{m} ({scope})" for scope in SCOPES for m in METRICS)
    lines = [f"#### {granularity}, {mode}", "", f"| kind | n | {header} |", "|---|---|" + "---|" * 2 * len(METRICS)]
    for kind in kinds + ["all"]:
        cells, n = [], 0
        for scope in SCOPES:
            per_kind = results[(granularity, mode, scope)]
            scores = [s for k, group in per_kind.items() if kind in (k, "all") for s in group]
            n = len(scores)
            cells += [_mean(scores, m) for m in METRICS]
        lines.append(f"| {kind} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", default=str(QUERIES))
    parser.add_argument("--books", default=str(BOOKS_DIR), help="the folder holding the two PDFs")
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "brain-books-bench"),
                        help="where the copies of the books and the index live (outside the repository)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--granularity", default=",".join(GRANULARITIES))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()

    workdir = Path(args.workdir).resolve()
    notes = _notes_folder(Path(args.books), workdir)
    rows = read_rows(Path(args.queries))
    collection = evaluation.load_collection(None, notes=str(notes), queries=args.queries,
                                            workdir=str(workdir / "eval"), overrides=args.set)
    embedder = Embedder(collection.settings)
    started = time.monotonic()
    report = evaluation._prepare_index(collection, embedder, show_progress=False)
    print(f"index: {report['files']} files, {report['chunks_embedded']} chunks embedded, "
          f"reused={report['reused']}, {time.monotonic() - started:.0f} s; failed: {report['failed'] or 'none'}")
    searcher = Searcher(collection.settings, embedder)
    vectors: dict[str, Any] = {}
    encode = embedder.encode_query
    embedder.encode_query = lambda text: vectors.setdefault(text, encode(text))  # type: ignore[method-assign]

    kinds = sorted({row["kind"] for row in rows})
    modes = args.modes.split(",")
    granularities = args.granularity.split(",")
    results: dict[tuple[str, str, str], dict[str, list[dict[str, float]]]] = {}
    started = time.monotonic()
    for granularity in granularities:
        for mode in modes:
            for scope in SCOPES:
                per_kind: dict[str, list[dict[str, float]]] = defaultdict(list)
                for row in rows:
                    response = searcher.search(
                        row["query"], mode=mode, limit=10, excerpt_chars=2000, no_cutoff=True,
                        path_prefix=row["relevant"][0] if scope == "book" else None,
                        chunks=granularity == "chunks",
                    )
                    per_kind[row["kind"]].append(score(row, response.results))
                results[(granularity, mode, scope)] = per_kind
        if {"bm25", "vector"} <= set(modes):
            for scope in SCOPES:
                results[(granularity, BEST_HALF, scope)] = best_half(
                    results[(granularity, "bm25", scope)], results[(granularity, "vector", scope)])
    if {"bm25", "vector"} <= set(modes):
        modes.append(BEST_HALF)
    print(f"\n### All {len(rows)} questions\n")
    print(summary(results))
    print("\n### Per kind")
    for granularity in granularities:
        for mode in modes:
            print()
            print(by_kind(results, granularity, mode, kinds))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nsearch time {time.monotonic() - started:.0f} s; load average {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
