"""PDFs as books: words pdfium keeps apart, the extractor an index records, page labels, one page read."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers import pdf_of_pages, run_cli, write

from brain import Brain
from brain.sources import PDF_TEXT_IDENTITY, extract_bytes


def glued_line_pdf() -> bytes:
    """One line whose words are placed by offsets, not space characters, as TeX does.

    Courier with 0.2 em between words: pypdf reads "Thefloordivisionoperator", pdfium the four words.
    """
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    pdf = canvas.Canvas(out)
    text = pdf.beginText(72, 700)
    text.setFont("Courier", 12)
    text._code.append("[(The) -200 (floor) -200 (division) -200 (operator)] TJ")
    pdf.drawText(text)
    pdf.showPage()
    pdf.save()
    return out.getvalue()


def test_words_placed_apart_without_spaces_are_extracted_as_separate_words() -> None:
    data = glued_line_pdf()
    from pypdf import PdfReader

    assert "Thefloordivisionoperator" in PdfReader(io.BytesIO(data)).pages[0].extract_text()  # what pypdf did
    assert extract_bytes("book.pdf", data).text.split() == ["The", "floor", "division", "operator"]


def test_the_index_records_which_extractor_made_its_pdf_text(tmp_path: Path) -> None:
    write(tmp_path, {"book.pdf": glued_line_pdf()})
    brain = Brain(tmp_path)
    brain.index()
    conn = sqlite3.connect(brain.settings.database_path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'pdf_text'").fetchone() == (PDF_TEXT_IDENTITY,)
    conn.close()
    assert [hit.path for hit in Brain(tmp_path).search("division", mode="bm25").results] == ["book.pdf"]


# A book's front matter numbered in roman numerals, then its chapters from 1: the words of each page
# are its own, so a search names one page.
_FILLER = "\n" + "\n".join(["lorem ipsum dolor sit amet consectetur adipiscing elit sed do"] * 4)
BOOK_PAGES = [
    "Preface of the handbook\nthanks to every reader" + _FILLER,
    "Contents\nchapters listed here" + _FILLER,
    "Chapter one\nthe walrus guards the harbour" + _FILLER,
    "Chapter two\nthe pelican counts the boats" + _FILLER,
]
BOOK_LABELS = ["i", "ii", "1", "2"]


def labelled_book() -> bytes:
    """BOOK_PAGES as a PDF whose /PageLabels print i, ii, then 1, 2."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.constants import PageLabelStyle

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(pdf_of_pages(BOOK_PAGES))).pages:
        writer.add_page(page)
    writer.set_page_label(0, 1, style=PageLabelStyle.LOWERCASE_ROMAN)
    writer.set_page_label(2, 3, style=PageLabelStyle.DECIMAL)
    labelled = io.BytesIO()
    writer.write(labelled)
    return labelled.getvalue()


def test_a_pdf_keeps_each_pages_printed_label_and_a_pdf_without_labels_none() -> None:
    assert extract_bytes("book.pdf", labelled_book()).page_labels == BOOK_LABELS
    assert extract_bytes("line.pdf", glued_line_pdf()).page_labels == []


@pytest.fixture(scope="module")
def book_notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The labelled book, a page to a chunk (small chunks), and a note, indexed once for the module."""
    root = tmp_path_factory.mktemp("book") / "notes"
    write(root, {
        "book.pdf": labelled_book(),
        "note.md": "# Harbour\n\nA walrus was seen near the boats.\n",
        "brain.toml": "[chunking]\nchunk_chars = 200\noverlap_chars = 0\n",
    })
    report = Brain(root).index()
    assert not report.failed, report.failed
    return root


def test_search_json_gives_the_physical_page_and_its_printed_label(book_notes: Path) -> None:
    result = run_cli("--root", str(book_notes), "search", "pelican", "--mode", "bm25", "--json")
    assert result.returncode == 0, result.stderr
    hit = json.loads(result.stdout)["results"][0]
    assert (hit["path"], hit["pages"], hit["page_labels"]) == ("book.pdf", [4], ["2"])
    note = json.loads(run_cli("--root", str(book_notes), "search", "walrus boats", "--mode", "bm25",
                              "--json").stdout)["results"]
    assert {h["path"]: h["page_labels"] for h in note}["note.md"] == []  # no pages, no labels


def test_search_text_shows_the_label_beside_the_page(book_notes: Path) -> None:
    result = run_cli("--root", str(book_notes), "search", "preface handbook", "--mode", "bm25")
    assert result.returncode == 0, result.stderr
    assert "Page: 1 (printed i)" in result.stdout
    result = run_cli("--root", str(book_notes), "search", "pelican", "--mode", "bm25")
    assert "Page: 4 (printed 2)" in result.stdout


def test_a_hit_names_the_page_its_words_are_on_first_and_reads_from_there(tmp_path: Path) -> None:
    """Books issue: a chunk runs over two or three pages, and its first page was right 45% of the time."""
    write(tmp_path, {"book.pdf": labelled_book()})  # the four pages fit one chunk
    brain = Brain(tmp_path)
    assert not brain.index().failed
    hit = brain.search("the pelican counts the boats", mode="bm25").results[0]
    assert hit.pages == [4, 1, 2, 3] and hit.page_labels == ["2", "i", "ii", "1"]
    assert hit.preview.startswith("the pelican counts the boats")
    assert (hit.start_line, hit.line) == (1, 20)  # six lines a page: page 4 opens at 19 with its heading
    read = json.loads(run_cli("--root", str(tmp_path), "get", "book.pdf", "--offset", str(hit.offset),
                              "--length", "28", "--json").stdout)
    assert read["text"] == "the pelican counts the boats"
    text = run_cli("--root", str(tmp_path), "search", "pelican counts boats", "--mode", "bm25").stdout
    assert "Page: 4 (printed 2), also 1-3 (printed i-1)" in text
    # No query word in the chunk's text (a match by meaning): its pages in order, from its first line.
    hit = brain.search("Preface", mode="bm25").results[0]
    assert hit.pages == [1, 2, 3, 4] and hit.line == hit.start_line


def test_words_that_run_over_a_page_break_name_the_page_most_of_them_are_on(tmp_path: Path) -> None:
    """Books issue: "…improving it. 7.5. Square roots 69 For example, one way of computing square roots" starts on
    the last line of one page and answers on the next; the page holding most of the passage's words comes first."""
    first = "\n".join(["Chapter seven covers loops in some detail, with examples."] * 4
                       + ["A loop can refine a value iteratively."])
    second = "\n".join(["Square roots", "Newton's method computes square roots from an estimate."]
                        + ["Some filler about other matters entirely, with nothing else to say."] * 4)
    write(tmp_path, {"loops.pdf": pdf_of_pages([first, second])})  # both pages fit one chunk
    brain = Brain(tmp_path)
    assert not brain.index().failed
    hit = brain.search("iteratively computes square roots from an estimate", mode="bm25").results[0]
    assert hit.preview.startswith("A loop can refine a value iteratively.")  # the passage starts on page 1
    assert hit.pages == [2, 1]  # but most of its words are on page 2
    assert hit.line == 6  # where they begin: page 2's heading


def test_grep_names_the_printed_label_of_a_match_s_page(book_notes: Path) -> None:
    found = json.loads(run_cli("--root", str(book_notes), "grep", "walrus|pelican", "--json").stdout)["matches"]
    assert {(m["path"], m["page"], m["page_label"]) for m in found} == {
        ("book.pdf", 3, "1"), ("book.pdf", 4, "2"), ("note.md", None, None)}
    text = run_cli("--root", str(book_notes), "grep", "pelican").stdout
    assert "[p. 4 (printed 2)] the pelican counts the boats" in text


def test_ask_marks_each_page_with_its_printed_label(book_notes: Path) -> None:
    result = Brain(book_notes).ask("what does the pelican count?", limit=1)
    source = result.sources[0]
    assert source.path == "book.pdf" and source.page_labels == [str(BOOK_LABELS[p - 1]) for p in source.pages]
    assert "[page 1, printed i]" in source.excerpt and "[page 4, printed 2]" in source.excerpt
    assert "[page 3, printed 1]" in source.excerpt


def test_contents_and_index_pages_rank_below_the_pages_they_point_to(tmp_path: Path) -> None:
    """Books issue: contents and back-index pages held 20 of 295 top-5 slots of the books' judged set."""
    from brain.search import is_navigation

    topics = ["boats", "harbour", "nets", "tides", "gulls", "ropes", "sails", "oars", "docks", "waves"] * 2
    contents = "Contents\n" + "\n".join(f"{n}. The walrus and the {topic} . . . {n * 7}"
                                         for n, topic in enumerate(topics, 1))
    chapter = "Chapter three\nThe walrus sleeps on the harbour stones and watches the boats come in." + _FILLER
    write(tmp_path, {"book.pdf": pdf_of_pages([contents, _FILLER, chapter]),
                     "brain.toml": "[chunking]\nchunk_chars = 1000\noverlap_chars = 0\n"})
    Brain(tmp_path).index()
    assert is_navigation(contents) and not is_navigation(chapter)
    found = Brain(tmp_path).search("walrus harbour boats", mode="bm25", chunks=True, no_cutoff=True).results
    assert 3 in found[0].pages and found[-1].pages[0] == 1, [(h.pages, h.score) for h in found]
    assert 3 in Brain(tmp_path).search("walrus harbour boats", mode="bm25").results[0].pages  # one per file
    asked = Brain(tmp_path).search("indice walrus harbour boats", mode="bm25", chunks=True, no_cutoff=True)
    assert asked.results[0].pages[0] == 1  # asked for by name: the contents page stands where its words put it


def test_an_excerpt_shows_no_contents_page_unless_asked(tmp_path: Path) -> None:
    """Books issue: "what is type inference" showed, beside the right page, a window on the contents lines that
    name its section: their words are the question's, their text no answer."""
    # 24 entries: a chunk of about 1,000 characters, with a line or two of the next page.
    topics = (["boats", "harbour", "nets", "tides", "gulls", "ropes", "sails", "oars", "docks", "waves"] * 3)[:24]
    contents = "Contents\n" + "\n".join(f"{n}. The walrus and the {topic} . . . {n * 7}"
                                         for n, topic in enumerate(topics, 1))
    chapter = "Chapter three\nThe walrus sleeps on the harbour stones and watches the boats come in." + _FILLER
    write(tmp_path, {"book.pdf": pdf_of_pages([contents, _FILLER * 5, _FILLER * 5, chapter]),
                     "brain.toml": "[chunking]\nchunk_chars = 1000\noverlap_chars = 0\n"})
    brain = Brain(tmp_path)
    brain.index()
    last_contents_line = 1 + len(topics)
    hit = brain.search("walrus harbour boats", mode="bm25", excerpt_chars=2000).results[0]
    assert 4 in hit.pages and hit.excerpt is not None and "watches the boats" in hit.excerpt
    assert all(start > last_contents_line for start, _ in hit.passages), hit.passages
    asked = brain.search("indice walrus harbour boats", mode="bm25", excerpt_chars=2000).results[0]
    assert asked.pages[0] == 1 and "The walrus and the" in (asked.excerpt or "")  # asked for by name


def test_a_chunk_of_a_few_long_contents_lines_is_a_navigation_page_too(tmp_path: Path) -> None:
    """Books issue: a contents page's long entries make chunks of four or five lines, 22 more top-5 slots."""
    from brain.search import is_navigation

    topics = ["boats", "harbour", "nets", "tides", "gulls", "ropes", "sails", "oars"] * 2
    contents = "\n".join(f"{n}.{n}. The walrus and the {topic} " + ". " * 30 + str(n * 7)
                         for n, topic in enumerate(topics, 1))
    chapter = "Chapter three\nThe walrus sleeps on the harbour stones and watches the boats come in." + _FILLER
    write(tmp_path, {"book.pdf": pdf_of_pages([contents, _FILLER, chapter]),
                     "brain.toml": "[chunking]\nchunk_chars = 400\noverlap_chars = 0\n"})
    Brain(tmp_path).index()
    found = Brain(tmp_path).search("walrus harbour boats", mode="bm25", chunks=True, no_cutoff=True).results
    contents_hits = [hit for hit in found if hit.pages == [1]]
    assert len(contents_hits) >= 3 and all(hit.end_line - hit.start_line < 5 for hit in contents_hits)
    assert 3 in found[0].pages and found[-len(contents_hits):] == contents_hits, [(h.pages, h.score) for h in found]
    assert 3 in Brain(tmp_path).search("walrus harbour boats", mode="bm25").results[0].pages  # one per file
    # Code whose lines end in numbers is not one, however short: no dot leaders lead to them.
    assert not is_navigation("x = 5 * 2\nprint(x)  # 10\ny = x + 1\nz = y ** 2\nw = 121")
    assert is_navigation("2.4. Script mode . . . . . . . . 11\n2.5. Order of operations . . . . . . . . . 12")


def test_pages_in_text_are_runs_with_their_printed_labels() -> None:
    from brain.texts import labelled_pages

    assert labelled_pages([11, 12, 40], ["ix", "x", "28"]) == "11-12 (printed ix-x), 40 (printed 28)"
    assert labelled_pages([3, 4], ["3", "4"]) == "3-4"
    assert labelled_pages([3, 4], []) == "3-4"


def schema_5_index(root: Path) -> Path:
    """The labelled book indexed in `root`, its index turned back into schema 5 (no page labels); its path."""
    write(root, {"book.pdf": labelled_book()})
    Brain(root).index()
    db = Brain(root).settings.database_path
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript("""
        ALTER TABLE files DROP COLUMN page_labels; ALTER TABLE extracted_text DROP COLUMN page_labels;
        PRAGMA user_version = 5;
    """)
    conn.close()
    return db


def test_a_schema_5_index_opens_upgraded_and_the_next_index_fills_the_labels(tmp_path: Path) -> None:
    from brain.store import SCHEMA_VERSION

    db = schema_5_index(tmp_path)

    hits = Brain(tmp_path).search("pelican", mode="bm25").results  # opening migrates; no labels yet
    assert [(h.path, h.page_labels) for h in hits] == [("book.pdf", [])]
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()
    status = run_cli("--root", str(tmp_path), "status")
    # Why the next index rebuilds, in words: the extractor changed, not the model.
    assert "PDF text extractor changed" in status.stdout and "model changed" not in status.stdout
    assert "the index's PDF text came from 'pypdf, before page labels'" in status.stdout
    assert "`brain index` reads the PDFs again" in status.stdout
    report = json.loads(run_cli("--root", str(tmp_path), "status", "--json").stdout)
    assert report["model_mismatch"] is None and "pypdfium2" in report["extractor_mismatch"]
    report = Brain(tmp_path).index()
    assert report.rebuilt and report.chunks_embedded == 0  # the same text: its vector from the cache
    hits = Brain(tmp_path).search("pelican", mode="bm25").results
    assert sorted(hits[0].page_labels) == sorted(BOOK_LABELS)  # one chunk: the whole short book


def test_a_schema_5_index_opened_read_only_answers_without_labels(tmp_path: Path) -> None:
    from brain.store import SqliteStore

    db = schema_5_index(tmp_path)
    store = SqliteStore(db, readonly=True)
    try:
        row = store.get_file("book.pdf")
        assert row is not None and row.page_labels == [] and store.schema_version() == 5
        kept = store.extracted_text(row.hash)
        assert kept is not None and kept.page_labels == [] and kept.page_starts
    finally:
        store.close()


# ---------------------------------------------------------------- brain get --page


def test_get_page_reads_one_physical_page_through_the_cli(book_notes: Path) -> None:
    result = run_cli("--root", str(book_notes), "get", "book.pdf", "--page", "4")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Chapter two\nthe pelican counts the boats")
    assert "walrus" not in result.stdout and "Preface" not in result.stdout
    assert "page 4 (printed 2) of 4" in result.stderr


def test_get_page_takes_a_printed_label_and_json_says_both(book_notes: Path) -> None:
    result = run_cli("--root", str(book_notes), "get", "book.pdf", "--page", "ii", "--json")
    assert result.returncode == 0, result.stderr
    part = json.loads(result.stdout)
    assert (part["pages"], part["page_labels"], part["page_count"]) == ([2], ["ii"], 4)
    assert part["text"].startswith("Contents\nchapters listed here")
    whole = json.loads(run_cli("--root", str(book_notes), "get", "book.pdf", "--json").stdout)["text"]
    assert whole.encode()[part["offset"]:part["end"]].decode() == part["text"]  # the same bytes as --offset reads
    numeric = json.loads(run_cli("--root", str(book_notes), "get", "book.pdf", "--page", "2", "--json").stdout)
    assert numeric["pages"] == [2]  # a number is the physical page, never the page labelled "2"


@pytest.mark.parametrize("args, expected", [
    (["book.pdf", "--page", "9"], "book.pdf: page 9 is out of range; it has pages 1-4"),
    (["book.pdf", "--page", "xlv"], "book.pdf: no page labelled 'xlv' (its labels run from i to 2)"),
    (["note.md", "--page", "1"], "note.md: not a PDF, it has no pages; read it without --page"),
    (["missing.pdf", "--page", "1"], "missing.pdf: not in the index"),
    (["book.pdf", "--page", "1", "--offset", "5"], "give --page or --offset/--length, not both"),
])
def test_get_page_errors_are_one_line_with_the_fix(book_notes: Path, args: list[str], expected: str) -> None:
    result = run_cli("--root", str(book_notes), "get", *args)
    assert result.returncode != 0 and not result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.stderr


@pytest.mark.slow
def test_get_page_through_mcp_and_http_is_the_cli_s_page(book_notes: Path) -> None:
    import anyio
    import httpx
    from live_servers import http_server, mcp_session

    cli_page = json.loads(run_cli("--root", str(book_notes), "get", "book.pdf", "--page", "i",
                                  "--json").stdout)

    async def through_mcp() -> tuple[Any, str]:
        async with mcp_session("--root", str(book_notes)) as session:
            page = await session.call_tool("memory_get_file", {"path": "book.pdf", "page": "i"})
            assert not page.is_error, page.content
            bad = await session.call_tool("memory_get_file", {"path": "book.pdf", "page": "9"})
            assert bad.is_error
            return page.structured_content, bad.content[0].text

    mcp_page, mcp_error = anyio.run(through_mcp)
    with http_server("--root", str(book_notes)) as server, httpx.Client(base_url=server.url, timeout=120) as http:
        http_page = http.get("/file", params={"path": "book.pdf", "page": "i"}).json()
        bad = http.get("/file", params={"path": "book.pdf", "page": "9"})
    assert cli_page == mcp_page == http_page and cli_page["page_labels"] == ["i"]
    assert "page 9 is out of range" in mcp_error
    assert bad.status_code == 400 and "page 9 is out of range" in bad.json()["error"]
