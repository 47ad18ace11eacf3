#!/usr/bin/env python3
"""pypdf against pypdfium2 on real books: glued words, processor time per page, pages and labels.

For each PDF in `<data>/pdfs` both libraries extract every page's text. Then:

- glued words: a token of 10+ letters that the other library's text never has
  but that splits into two or more of its words (2+ letters each, or "a")
  which its text holds in that order with only whitespace between them:
  "floordivisionoperator" where the other has "floor division operator". A
  word the keyword half can never match, as no query word equals it. (A word
  the other split at a line-end hyphen, "razional-" + "mente", or spelled with
  a ligature, "eﬃcienti", is not glued: a hyphen or a letter lies between);
- processor time of this thread per page (the books are read once before, so
  the file is in the page cache; `time.thread_time`, not the clock, which
  other work on a shared machine moves);
- pages: both count the same pages, and each page holds the same letters
  (whitespace left out, so glued words do not count against it) within 2%;
- brain's own extraction (`sources.extract_bytes`: pypdf's bounds check, then
  the text with pdfium), processor seconds for the whole book;
- labels: the printed page numbers each library reads from /PageLabels, and
  whether they agree.

    python tools/bench/bench_pdf_extraction.py --data ../shared/data
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_files import DEFAULT_DATA  # noqa: E402

from brain.sources import extract_bytes  # noqa: E402

GLUED_MIN_LETTERS = 10
PART_MIN_LETTERS = 1
SHORT_PARTS = {"a"}  # the one-letter words a glued English line holds; other single letters split anything
SAME_PAGE_SHARE = 0.98
WORD = re.compile(r"[^\W\d_]+")


def pypdf_pages(path: Path) -> tuple[list[str], list[str], float]:
    """Each page's text with pypdf, its labels, and the processor seconds taken."""
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    start = time.thread_time()
    reader = PdfReader(path)
    pages = [page.extract_text() or "" for page in reader.pages]
    spent = time.thread_time() - start
    return pages, list(reader.page_labels), spent


def pdfium_pages(path: Path) -> tuple[list[str], list[str], float]:
    """Each page's text with pypdfium2, its labels, and the processor seconds taken."""
    import pypdfium2

    start = time.thread_time()
    document = pypdfium2.PdfDocument(path)
    pages = []
    for index in range(len(document)):
        page = document[index]
        textpage = page.get_textpage()
        pages.append(textpage.get_text_bounded().replace("\x02", ""))  # as brain does: line-end hyphens joined
        textpage.close()
        page.close()
    spent = time.thread_time() - start
    labels = [document.get_page_label(i) for i in range(len(document))]
    document.close()
    return pages, labels, spent


def words(pages: list[str]) -> Counter[str]:
    return Counter(w.lower() for text in pages for w in WORD.findall(text))


def splits(word: str, vocabulary: Counter[str]) -> list[str] | None:
    """`word` as two or more words of `vocabulary` (the fewest parts), or None."""
    best: list[list[str] | None] = [None] * (len(word) + 1)
    best[0] = []
    for end in range(PART_MIN_LETTERS, len(word) + 1):
        for start in range(0, end - PART_MIN_LETTERS + 1):
            head = best[start]
            part = word[start:end]
            if head is None or part not in vocabulary or (len(part) == 1 and part not in SHORT_PARTS):
                continue
            if best[end] is None or len(head) + 1 < len(best[end] or []):
                best[end] = head + [word[start:end]]
    found = best[len(word)]
    return found if found is not None and len(found) >= 2 else None


def glued(mine: Counter[str], other: Counter[str], other_text: str) -> tuple[int, int, list[str]]:
    """Distinct glued words of `mine` against the other library's words and text, their occurrences, examples."""
    found = {}
    for word, times in mine.items():
        if len(word) < GLUED_MIN_LETTERS or word in other:
            continue
        parts = splits(word, other)
        if parts and re.search(r"(?<!\w)" + r"\s+".join(map(re.escape, parts)) + r"(?!\w)", other_text):
            found[word] = times
    examples = sorted(found, key=lambda w: -found[w])[:4]
    return len(found), sum(found.values()), examples


def same_letters(a: str, b: str) -> bool:
    """Whether two texts of one page hold the same letters and digits (whitespace aside) within 2%."""
    ca, cb = Counter(ch for ch in a if not ch.isspace()), Counter(ch for ch in b if not ch.isspace())
    total = max(sum(ca.values()), sum(cb.values()))
    if total == 0:
        return True
    differ = sum(((ca - cb) + (cb - ca)).values())
    return differ / total <= 1 - SAME_PAGE_SHARE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder (holds pdfs/)")
    args = parser.parse_args()
    books = sorted((args.data / "pdfs").glob("*.pdf"))
    if not books:
        print(f"no PDFs in {args.data / 'pdfs'}; pass --data", file=sys.stderr)
        return 2
    print("| book | library | pages | glued words (distinct / times) | examples | CPU ms/page | labels |")
    print("|---|---|---|---|---|---|---|")
    for book in books:
        book.read_bytes()  # into the page cache, so neither library pays the disk
        a_pages, a_labels, a_time = pypdf_pages(book)
        b_pages, b_labels, b_time = pdfium_pages(book)
        a_words, b_words = words(a_pages), words(b_pages)
        a_text, b_text = "\n".join(a_pages).lower(), "\n".join(b_pages).lower()
        for name, pages, mine, other, other_text, spent, labels in (
            ("pypdf", a_pages, a_words, b_words, b_text, a_time, a_labels),
            ("pypdfium2", b_pages, b_words, a_words, a_text, b_time, b_labels),
        ):
            distinct, times, examples = glued(mine, other, other_text)
            shown = ", ".join(examples)
            span = f"{labels[0]}…{labels[-1]}" if labels else "none"
            print(f"| {book.name} | {name} | {len(pages)} | {distinct} / {times} | {shown} | "
                  f"{1000 * spent / max(1, len(pages)):.1f} | {span} |")
        start = time.thread_time()
        extract_bytes(book.name, book.read_bytes())
        whole = time.thread_time() - start
        agree = sum(same_letters(a, b) for a, b in zip(a_pages, b_pages))
        labels_agree = sum(x == y for x, y in zip(a_labels, b_labels))
        print(f"| {book.name} | both | {'same count' if len(a_pages) == len(b_pages) else 'COUNTS DIFFER'} | "
              f"pages with the same letters: {agree}/{min(len(a_pages), len(b_pages))} | | | "
              f"labels agree on {labels_agree}/{min(len(a_labels), len(b_labels))}; "
              f"brain's extract_bytes {whole:.2f} s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
