"""Check tools/bench/judged/books.jsonl against the two PDF books, extracted as brain extracts them.

Checker, not a benchmark: every line needs a valid id, query, relevant book, kind, pages inside that book
and an answer (2-8 words) that appears, case-insensitively with white space collapsed, in the text
brain's own extractor (sources.extract_bytes, pypdfium2) gives for at least one of the listed pages,
none of which may be a contents, index or references page.
It also checks the per-kind minimums issue #27 sets. Prints each failure; exit status 1 on any.

    PYTHONPATH=tools/lib python tools/bench/check_books.py
    PYTHONPATH=tools/lib python tools/bench/check_books.py --dump OUTDIR   # also write each page as text
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from brain.sources import extract_bytes

PROJECT = Path(__file__).resolve().parents[2]
BOOKS_DIR = PROJECT.parent / "shared" / "data" / "pdfs"
QUERIES = PROJECT / "tools" / "bench" / "judged" / "books.jsonl"

ENGLISH_BOOK = "thinkpython2.pdf"
ITALIAN_BOOK = "da-neofita-di-python-a-campione.pdf"
BOOKS = (ENGLISH_BOOK, ITALIAN_BOOK)
KINDS = {"fact", "concept", "phrase", "deep", "cross-it-en", "cross-en-it"}
DEEP_AFTER = 100  # a "deep" answer lies past this physical page
MINIMUM = {"phrase": 6, "deep": 6, "cross-it-en": 6, "cross-en-it": 6}
MIN_QUERIES = 40
# The cross kinds ask in the other language: only one book can be their target.
CROSS_BOOK = {"cross-it-en": ENGLISH_BOOK, "cross-en-it": ITALIAN_BOOK}
ID_PATTERN = re.compile(r"bk-q\d{3}")
# Physical pages that list the book rather than say anything (contents, index, references): never an answer.
NOT_ANSWERS = {ENGLISH_BOOK: set(range(13, 20)) | set(range(251, 265)),
               ITALIAN_BOOK: set(range(3, 13)) | {337, 338}}


def collapse(text: str) -> str:
    """Lower-cased, every run of white space one space: how answers and page texts are compared."""
    return " ".join(text.split()).casefold()


def page_texts(path: Path) -> list[str]:
    """Each physical page's text (index 0 = page 1), cut from what brain indexes at its page starts."""
    extracted = extract_bytes(path.name, path.read_bytes())
    lines = extracted.text.split("\n")
    starts = [s - 1 for s in extracted.page_starts] + [len(lines)]
    return ["\n".join(lines[a:b]) for a, b in zip(starts, starts[1:])]


def read_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        if not isinstance(row, dict):
            raise SystemExit(f"{path.name} line {number} is not a JSON object")
        rows.append(row)
    return rows


def problems(rows: list[dict[str, Any]], pages: dict[str, list[str]]) -> list[str]:
    """One message per problem with the set (empty when it passes)."""
    found: list[str] = []
    ids = Counter(row.get("id") for row in rows)
    found += [f"duplicate id {qid!r}" for qid, n in ids.items() if n > 1]
    collapsed = {book: [collapse(t) for t in texts] for book, texts in pages.items()}
    for number, row in enumerate(rows, 1):
        where = f"line {number} ({row.get('id')})"
        unknown = set(row) - {"id", "query", "relevant", "kind", "pages", "answer"}
        if unknown:
            found.append(f"{where}: unknown fields {sorted(unknown)}")
        if not isinstance(row.get("id"), str) or not ID_PATTERN.fullmatch(row["id"]):
            found.append(f"{where}: 'id' must look like bk-q001")
        query = row.get("query")
        if not isinstance(query, str) or not query.strip():
            found.append(f"{where}: empty 'query'")
            query = ""
        relevant = row.get("relevant")
        if not isinstance(relevant, list) or len(relevant) != 1 or relevant[0] not in BOOKS:
            found.append(f"{where}: 'relevant' must be one of {[[b] for b in BOOKS]}")
            continue
        book = relevant[0]
        kind = row.get("kind")
        if kind not in KINDS:
            found.append(f"{where}: unknown kind {kind!r}; known: {sorted(KINDS)}")
        elif kind in CROSS_BOOK and CROSS_BOOK[kind] != book:
            found.append(f"{where}: a {kind} question must be about {CROSS_BOOK[kind]}")
        if kind == "phrase":
            quoted = re.findall(r'"([^"]+)"', query)
            if not quoted:
                found.append(f"{where}: a phrase query needs an exact phrase in double quotes")
            for phrase in quoted:
                if not any(collapse(phrase) in text for text in collapsed[book]):
                    found.append(f"{where}: the quoted phrase {phrase!r} is not in {book}")
        numbers = row.get("pages")
        count = len(pages[book])
        if (not isinstance(numbers, list) or not numbers
                or not all(isinstance(p, int) and not isinstance(p, bool) for p in numbers)):
            found.append(f"{where}: 'pages' must be a non-empty list of page numbers")
            continue
        outside = [p for p in numbers if not 1 <= p <= count]
        if outside:
            found.append(f"{where}: pages {outside} are outside {book} (1-{count})")
            continue
        listing = sorted(set(numbers) & NOT_ANSWERS[book])
        if listing:
            found.append(f"{where}: pages {listing} are contents, index or references pages")
        if kind == "deep" and min(numbers) <= DEEP_AFTER:
            found.append(f"{where}: a deep question's pages must all be past page {DEEP_AFTER}")
        answer = row.get("answer")
        if not isinstance(answer, str) or not 2 <= len(answer.split()) <= 8:
            found.append(f"{where}: 'answer' must be a string of 2-8 words")
            continue
        if not any(collapse(answer) in collapsed[book][p - 1] for p in numbers):
            found.append(f"{where}: answer {answer!r} is on none of pages {numbers} of {book}")
    kinds = Counter(row.get("kind") for row in rows)
    found += [f"only {kinds[k]} {k!r} questions, needs {n}" for k, n in MINIMUM.items() if kinds[k] < n]
    if len(rows) < MIN_QUERIES:
        found.append(f"only {len(rows)} questions, needs {MIN_QUERIES}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", default=str(QUERIES))
    parser.add_argument("--books", default=str(BOOKS_DIR), help="the folder holding the two PDFs")
    parser.add_argument("--dump", default=None, metavar="DIR", help="write every page as DIR/<book>/NNN.txt")
    args = parser.parse_args()
    pages = {book: page_texts(Path(args.books) / book) for book in BOOKS}
    if args.dump:
        for book, texts in pages.items():
            out = Path(args.dump) / book
            out.mkdir(parents=True, exist_ok=True)
            for number, text in enumerate(texts, 1):
                (out / f"{number:03d}.txt").write_text(text, encoding="utf-8")
    rows = read_rows(Path(args.queries))
    found = problems(rows, pages)
    kinds = Counter(row.get("kind") for row in rows)
    by_book = Counter((row.get("relevant") or ["?"])[0] for row in rows)
    print(f"{len(rows)} questions; " + ", ".join(f"{b}: {n}" for b, n in sorted(by_book.items())))
    print("kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    for message in found:
        print("FAIL", message)
    print("ok" if not found else f"{len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
