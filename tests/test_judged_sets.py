"""The judged query sets in tools/bench/judged/: shape of every line, and (when the corpus is here) every path.

The public corpora live outside the repository, in ../shared/data/corpora relative to the project root
(they may not be redistributed), so the path checks skip, saying why, on a machine without them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from helpers import PROJECT

JUDGED = PROJECT / "tools" / "bench" / "judged"
CORPORA = PROJECT.parent / "shared" / "data" / "corpora"
PDFS = PROJECT.parent / "shared" / "data" / "pdfs"  # the two PDF books of books.jsonl

# Query file stem -> the notes folder it is evaluated against (what `brain eval --notes` gets).
NOTES_FOLDERS: dict[str, Path] = {
    "obsidian-help": CORPORA / "obsidian-help",
    "tldr-it": CORPORA / "tldr-it",
    "tldr-en": CORPORA / "tldr-en",
    "agency": PROJECT / "examples" / "agency",
    "agency-things": PROJECT / "examples" / "agency",
    "studio-things": PROJECT / "examples" / "studio",
    "books": PDFS,
}

OBSIDIAN_KINDS = {"question", "keyword", "title", "alias", "typo", "italian", "cross-en-it", "cross-it-en"}
TLDR_KINDS = {"task", "keyword", "command", "typo"}

# The agency set's kinds, as examples/agency/README.md lists them.
AGENCY_KINDS = {"title", "cross", "metadata", "semantic", "identifier", "sector", "deep", "typo"}

# The "which things" sets (docs/decisions/40-query-understanding.md), computed by things_queries.py.
THINGS_KINDS = {"value", "status", "time", "meaning", "combined", "client"}

# The books set's kinds (tools/bench/check_books.py checks their pages and answers against the PDFs' text).
BOOK_KINDS = {"fact", "concept", "phrase", "deep", "cross-it-en", "cross-en-it"}

# Query file stem -> the kinds its lines may carry (None: any non-empty string, for a set without a list).
KINDS: dict[str, set[str] | None] = {
    "obsidian-help": OBSIDIAN_KINDS,
    "tldr-it": TLDR_KINDS,
    "tldr-en": TLDR_KINDS,
    "agency": AGENCY_KINDS,
    "agency-things": THINGS_KINDS,
    "studio-things": THINGS_KINDS,
    "books": BOOK_KINDS,
}

QUERY_FILES = sorted(p for p in JUDGED.glob("*.jsonl") if p.stem in NOTES_FOLDERS)


def _rows(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file as a dict; a blank line or a non-object fails with its line number."""
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        assert line.strip(), f"{path.name} line {number} is blank"
        row = json.loads(line)
        assert isinstance(row, dict), f"{path.name} line {number} is not a JSON object"
        rows.append(row)
    return rows


def _is_relative(path: str) -> bool:
    """A forward-slash relative path with no '..', no leading '/', no drive, no backslash."""
    if not path or path.startswith("/") or "\\" in path or re.match(r"[A-Za-z]:", path):
        return False
    return ".." not in PurePosixPath(path).parts


def test_public_sets_are_present() -> None:
    """The three public sets the docs promise are in the folder (other *.jsonl files without a folder are skipped)."""
    stems = {p.stem for p in JUDGED.glob("*.jsonl")}
    for stem in ("obsidian-help", "tldr-it", "tldr-en"):
        assert stem in stems, f"tools/bench/judged/{stem}.jsonl is missing"


def shape_problems(rows: list[dict[str, Any]], known_kinds: set[str] | None) -> list[str]:
    """What is wrong with a set's lines, one message per problem (empty when the set is well formed)."""
    problems: list[str] = []
    if not rows:
        return ["the file holds no queries"]
    ids = [row.get("id") for row in rows]
    problems += [f"duplicate id {i!r}" for i in sorted({i for i in ids if ids.count(i) > 1 and isinstance(i, str)})]
    for number, row in enumerate(rows, 1):
        qid = row.get("id")
        where = f"line {number} ({qid})"
        if not isinstance(qid, str) or not qid.strip():
            problems.append(f"line {number}: needs a string 'id'")
        if not isinstance(row.get("query"), str) or not row["query"].strip():
            problems.append(f"{where}: empty 'query'")
        relevant = row.get("relevant")
        if not isinstance(relevant, list) or not relevant or not all(isinstance(p, str) for p in relevant):
            problems.append(f"{where}: 'relevant' must be a non-empty list of paths")
            relevant = []
        if len(set(relevant)) != len(relevant):
            problems.append(f"{where}: a relevant path is listed twice")
        problems += [
            f"{where}: {rel!r} is not a relative path inside the notes folder"
            for rel in relevant
            if not _is_relative(rel)
        ]
        kind = row.get("kind")
        if kind is None and known_kinds is not None:
            problems.append(f"{where}: needs a 'kind', one of {sorted(known_kinds)}")
        elif kind is not None and (not isinstance(kind, str) or not kind.strip()):
            problems.append(f"{where}: 'kind' must be a non-empty string")
        elif kind is not None and known_kinds is not None and kind not in known_kinds:
            problems.append(f"{where}: unknown kind {kind!r}; known: {sorted(known_kinds)}")
        prefix = row.get("path")
        if prefix is not None:
            if not isinstance(prefix, str) or not _is_relative(prefix.rstrip("/")):
                problems.append(f"{where}: 'path' {prefix!r} must be a relative folder prefix")
            else:
                problems += [
                    f"{where}: {rel!r} is outside its own path filter {prefix!r}"
                    for rel in relevant
                    if not rel.startswith(prefix)
                ]
    return problems


@pytest.mark.parametrize("query_file", QUERY_FILES, ids=lambda p: p.stem)
def test_shape(query_file: Path) -> None:
    """Unique ids, a query, a non-empty list of relative paths, a known kind, an optional relative path prefix."""
    problems = shape_problems(_rows(query_file), KINDS[query_file.stem])
    assert not problems, f"{query_file.name}: {len(problems)} problems: {problems[:10]}"


def test_checker_catches_each_problem() -> None:
    """The shape check itself: each kind of bad line is reported, a good line is not."""
    good = {"id": "q1", "query": "sync", "relevant": ["en/a.md"], "kind": "keyword", "path": "en/"}
    assert shape_problems([good], OBSIDIAN_KINDS) == []
    bad_lines = {
        "duplicate id": [good, dict(good)],
        "empty 'query'": [dict(good, query="  ")],
        "non-empty list": [dict(good, relevant=[])],
        "not a relative path": [dict(good, relevant=["../outside.md"], path=None)],
        "listed twice": [dict(good, relevant=["en/a.md", "en/a.md"])],
        "unknown kind": [dict(good, kind="vibes")],
        "needs a 'kind'": [{k: v for k, v in good.items() if k != "kind"}],
        "outside its own path filter": [dict(good, path="it/")],
        "relative folder prefix": [dict(good, path="/en/")],
        "needs a string 'id'": [dict(good, id=7)],
    }
    for expected, rows in bad_lines.items():
        rows = [{k: v for k, v in row.items() if v is not None} for row in rows]
        problems = shape_problems(rows, OBSIDIAN_KINDS)
        assert any(expected in p for p in problems), f"{expected!r} not reported for {rows}: {problems}"
    assert shape_problems([dict(good, kind="metadata")], None) == []  # a set with its own kinds


@pytest.mark.parametrize("query_file", QUERY_FILES, ids=lambda p: p.stem)
def test_relevant_paths_exist(query_file: Path) -> None:
    """Every relevant path is a file in the notes folder the set is evaluated against."""
    folder = NOTES_FOLDERS[query_file.stem]
    if not folder.is_dir():
        shown = (
            folder.relative_to(PROJECT)
            if folder.is_relative_to(PROJECT)
            else Path("..") / folder.relative_to(PROJECT.parent)
        )
        pytest.skip(f"notes folder {shown} is not on this machine (the public corpora are not in the repository)")
    missing = [
        f"{row['id']}: {rel}"
        for row in _rows(query_file)
        for rel in row["relevant"]
        if not (folder / rel).is_file()
    ]
    assert not missing, f"{len(missing)} relevant paths not found under {folder.name}/: {missing[:10]}"


@pytest.mark.parametrize("stem", ["agency-things", "studio-things"])
def test_things_sets_are_what_their_specs_compute(stem: str) -> None:
    """Their relevant notes come from the notes' frontmatter (things_queries.py), never edited by hand."""
    import subprocess
    import sys

    spec = JUDGED / f"{stem}.spec.jsonl"
    done = subprocess.run([sys.executable, str(JUDGED / "things_queries.py"), str(spec), str(NOTES_FOLDERS[stem]),
                           "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_books_answers_are_on_their_pages() -> None:
    """books.jsonl: each answer is on one of its pages as brain extracts the PDFs, and the kinds meet the minimums."""
    if not PDFS.is_dir():
        pytest.skip("folder ../shared/data/pdfs is not on this machine (the books are not in the repository)")
    import sys

    sys.path.insert(0, str(PROJECT / "tools" / "bench"))
    try:
        import check_books
    finally:
        sys.path.remove(str(PROJECT / "tools" / "bench"))
    pages = {book: check_books.page_texts(PDFS / book) for book in check_books.BOOKS}
    problems = check_books.problems(check_books.read_rows(JUDGED / "books.jsonl"), pages)
    assert not problems, f"{len(problems)} problems: {problems[:10]}"
