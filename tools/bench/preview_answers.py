"""Answer in the preview: how often a question's own paragraph, previewed for that question, shows its answer.

Benchmark, not a test. For each SQuAD-it question (BEIR layout with `metadata.answers`, as in the shared data),
the paragraph it was written on is previewed the way a search previews a hit: the question's words are found in
it (`search.matched_words`), the stretch of a preview's width where they sit (`search.best_passage`) chooses the
start, and `search._make_preview` cuts the 240 characters shown. Only paragraphs longer than a preview count (a
shorter one is shown whole). Ranking plays no part, so this measures the preview alone, on thousands of
questions; `tools/bench/bench_books.py` measures it on the books behind real searches.

    PYTHONPATH=tools/lib python tools/bench/preview_answers.py --data ../shared/data/squad-it
    PYTHONPATH=tools/lib python tools/bench/preview_answers.py --data ../shared/data/squad-it \
        --queries tools/bench/judged/squad-it-en.jsonl      # the English questions of the same paragraphs

Compare two versions by running it with each one's `tools/lib` on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from brain import search

LANGUAGES = ("italian", "english")  # the stemmers a query goes through on an index of Italian and English notes


def collapse(text: str) -> str:
    return " ".join(text.split()).lower()


def load(data: Path, queries: Path | None) -> list[tuple[str, str, list[str]]]:
    """(question, its paragraph, its answers) for every question of the collection at `data`; with `queries` (rows
    of `query` and `source`, the SQuAD id) those questions instead, over the same paragraphs and answers."""
    paragraphs = {}
    with (data / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            paragraphs[row["_id"]] = row["text"]
    with (data / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
        paragraph_of = dict(line.rstrip("\n").split("\t")[:2] for line in list(handle)[1:])
    with (data / "queries.jsonl").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    answers = {row["_id"]: row["metadata"]["answers"] for row in rows}
    asked = {row["_id"]: row["text"] for row in rows}
    if queries is not None:
        with queries.open(encoding="utf-8") as handle:
            asked = {row["source"]: row["query"] for row in map(json.loads, handle)}
    return [(text, paragraphs[paragraph_of[qid]], answers[qid]) for qid, text in asked.items()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a SQuAD-it collection in BEIR layout")
    parser.add_argument("--queries", type=Path, help="other questions on the same paragraphs (JSONL: query, source)")
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl").is_file():
        print(f"preview_answers: no corpus.jsonl in {args.data}; pass --data the SQuAD-it folder", file=sys.stderr)
        return 2
    stems = search.query_stemmers(LANGUAGES)
    shown = found = unmatched = 0
    for question, paragraph, answers in load(args.data, args.queries):
        if len(paragraph) <= search.PREVIEW_CHARS:
            continue
        matches = search.matched_words(paragraph, search.searched_forms(question, stems), LANGUAGES)
        passage = search.best_passage(matches)
        unmatched += passage is None
        terms = [search.fold(term) for term in search.query_terms(question)]  # as Searcher gives them
        preview = collapse(search._make_preview(paragraph, terms, passage))
        shown += 1
        found += any(collapse(answer) in preview for answer in answers)
    print(f"questions whose paragraph is longer than a preview: {shown:,} ({unmatched:,} share no word with it)")
    print(f"answer in the preview: {found / max(shown, 1):.4f}")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
