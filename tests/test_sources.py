"""Which files belong (hidden, .gitignore, .brainignore, config ignore) and how their text is extracted."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest

from brain.config import load_settings
from brain.errors import BrainError
from brain.sources import ExtractionError, discover, extract_bytes, pages_for_lines
from helpers import init_repo, pdf_of_pages, write


def found(root: Path) -> list[str]:
    return [f.rel for f in discover(load_settings(root)).files]


def test_types_hidden_and_config_ignore(tmp_path: Path) -> None:
    write(tmp_path, {
        "a.md": "a", "b.markdown": "b", "c.txt": "c", "d.PDF": b"%PDF", "e.py": "x", "f.rst": "x",
        ".hidden.md": "x", ".obsidian/x.md": "x", "sub/.secret/y.md": "x", "tmp/z.md": "x",
        "brain.toml": "ignore = ['tmp/']\n",
    })
    assert found(tmp_path) == ["a.md", "b.markdown", "c.txt", "d.PDF"]


def test_gitignore_only_inside_a_git_repo(tmp_path: Path) -> None:
    write(tmp_path, {".gitignore": "build/\n*.log.md\n", "build/x.md": "x", "keep.md": "k", "debug.log.md": "x"})
    assert found(tmp_path) == ["build/x.md", "debug.log.md", "keep.md"]
    init_repo(tmp_path)
    assert found(tmp_path) == ["keep.md"]


def test_brainignore_at_any_level_with_negation(tmp_path: Path) -> None:
    write(tmp_path, {
        ".brainignore": "# drafts stay out\ndrafts/*\n!drafts/keep.md\n",
        "drafts/wip.md": "x", "drafts/keep.md": "k",
        "diary/.brainignore": "*.txt\n!important.txt\n",
        "diary/a.txt": "x", "diary/important.txt": "i", "diary/b.md": "b",
    })
    assert found(tmp_path) == ["diary/b.md", "diary/important.txt", "drafts/keep.md"]


def test_deeper_rules_override_shallower_ones(tmp_path: Path) -> None:
    init_repo(tmp_path)
    write(tmp_path, {".gitignore": "*.txt\n", "notes/.brainignore": "!*.txt\n", "notes/a.txt": "a", "b.txt": "b"})
    assert found(tmp_path) == ["notes/a.txt"]


def test_ignored_folders_are_not_walked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {".brainignore": "node_modules/\n", "node_modules/pkg/readme.md": "x", "a.md": "a"})
    walked: list[str] = []
    real = os.scandir

    def spy(path: str | os.PathLike[str] = ".") -> os.ScandirIterator[str]:
        walked.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(os, "scandir", spy)
    assert found(tmp_path) == ["a.md"]
    assert "node_modules" not in walked and "pkg" not in walked


def test_invalid_ignore_pattern_names_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, {".brainignore": "# fine\nok/\nnotes[z-a].md\n", "a.md": "a"})
    with pytest.raises(BrainError) as err:
        discover(load_settings(tmp_path))
    assert f"{tmp_path / '.brainignore'}:3:" in str(err.value)


def test_symlink_loop_and_dangling_link_do_not_hang(tmp_path: Path) -> None:
    write(tmp_path, {"a/b.md": "b"})
    (tmp_path / "a" / "loop").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "dangling.md").symlink_to(tmp_path / "nowhere.md")
    (tmp_path / "linked.md").symlink_to(tmp_path / "a" / "b.md")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    outside.write_text("private text from elsewhere")
    (tmp_path / "escape.md").symlink_to(outside)
    assert found(tmp_path) == ["a/b.md", "linked.md"]


# ---------------------------------------------------------------- extraction


def test_frontmatter_becomes_metadata_and_keeps_line_numbers() -> None:
    text = "---\ntitle: Gengle\nstatus: active\ntags: [a, b]\ndate: 2024-03-01\n---\n# Body\nline two\n"
    out = extract_bytes("x.md", text.encode())
    assert out.metadata == {"title": "Gengle", "status": "active", "tags": ["a", "b"], "date": "2024-03-01"}
    assert "Gengle" not in out.text and "status" not in out.text
    assert out.text.split("\n")[6] == "# Body"  # line 7 in the file is line 7 in the text


def test_bad_frontmatter_is_a_warning_not_a_crash() -> None:
    out = extract_bytes("x.md", b"---\ntitle: [unclosed\n---\nbody text\n")
    assert out.metadata == {}
    assert out.warnings and "not valid YAML" in out.warnings[0]
    assert "body text" in out.text


@pytest.mark.parametrize(
    "data, expected",
    [
        ("caffè città".encode("utf-8"), "caffè città"),
        ("caffè città".encode("cp1252"), "caffè città"),
        ("caffè".encode("utf-16"), "caffè"),
        (b"\xef\xbb\xbfbom text", "bom text"),
        (b"caf\xe8 \x81\x8d", None),  # not UTF-8 nor fully cp1252: decodes anyway
    ],
)
def test_any_encoding_decodes(data: bytes, expected: str | None) -> None:
    text = extract_bytes("x.txt", data).text
    if expected is not None:
        assert text == expected
    else:
        assert text.startswith("caf")


def test_binary_file_is_refused_with_reason() -> None:
    with pytest.raises(ExtractionError, match="binary"):
        extract_bytes("x.txt", b"abc\x00\x01\x02" * 10)


def _pdf(pages: list[str], password: str | None = None) -> bytes:
    data = pdf_of_pages(pages)
    if password is None:
        return data
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(data)).pages:
        writer.add_page(page)
    writer.encrypt(password)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_pdf_keeps_page_numbers() -> None:
    out = extract_bytes("x.pdf", _pdf(["first page\nmore", "second page", "third page has the answer"]))
    assert out.metadata["pages"] == 3
    assert len(out.page_starts) == 3
    lines = out.text.split("\n")
    answer_line = next(i for i, line in enumerate(lines, 1) if "answer" in line)
    assert pages_for_lines(out.page_starts, answer_line, answer_line) == [3]


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"%PDF-1.4\n garbage that is not a pdf", "broken PDF"),
        (None, "encrypted"),
        ("scanned", "no extractable text"),
    ],
)
def test_bad_pdfs_fail_with_reason(data: bytes | str | None, reason: str) -> None:
    if data is None:
        data = _pdf(["secret"], password="pw")
    elif data == "scanned":
        from reportlab.pdfgen import canvas

        buffer = io.BytesIO()
        pdf = canvas.Canvas(buffer)
        pdf.rect(100, 100, 200, 200, fill=1)
        pdf.showPage()
        pdf.save()
        data = buffer.getvalue()
    with pytest.raises(ExtractionError, match=reason):
        extract_bytes("x.pdf", data)


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_pdf_extraction_is_bounded_by_processor_time_not_by_a_busy_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Books failed on a loaded machine when the bound was wall-clock time; other work must not use it up."""
    import multiprocessing

    from brain import sources

    data = _pdf([f"page {n} " + "parole " * 400 for n in range(60)])
    started = time.thread_time()
    extract_bytes("book.pdf", data)
    alone = time.thread_time() - started
    monkeypatch.setattr(sources, "PDF_MIN_CPU_SECONDS", 2 * alone + 0.1)
    monkeypatch.setattr(sources, "PDF_CPU_SECONDS_PER_PAGE", 0.0)
    # Twice as many busy processes as cores: the extraction gets a third of a core or less, so its
    # wall time is well over the bound, while its own processor time is half of it.
    hogs = [multiprocessing.Process(target=_spin, args=(20,), daemon=True) for _ in range(2 * (os.cpu_count() or 2))]
    for hog in hogs:
        hog.start()
    try:
        extracted = extract_bytes("book.pdf", data)
    finally:
        for hog in hogs:
            hog.terminate()
    assert extracted.metadata["pages"] == 60


def test_a_pdf_out_of_processor_time_fails_this_run_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from brain import Brain, sources

    monkeypatch.setattr(sources, "PDF_MIN_CPU_SECONDS", 0.0)
    monkeypatch.setattr(sources, "PDF_CPU_SECONDS_PER_PAGE", 0.0)
    with pytest.raises(ExtractionError, match="processor time") as caught:
        extract_bytes("book.pdf", _pdf(["one page of text"]))
    assert caught.value.lasting is False
    root = tmp_path / "notes"
    write(root, {"book.pdf": _pdf(["the hydra chapter"] * 3), "note.md": "# Note\nplain text\n"})
    report = Brain(root).index()
    assert [f["path"] for f in report.failed] == ["book.pdf"]
    status = Brain(root).status()
    assert not status.clean and [f["path"] for f in status.failed] == ["book.pdf"] and not status.unreadable
    monkeypatch.undo()
    assert not Brain(root).index().failed  # the next index tries again, and the book goes in
    assert Brain(root).status().clean


def test_status_says_why_a_pdf_failed_without_reading_it_again(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    """Status re-extracted every failed PDF on every run (58 s for two books): it reads the last scan's reasons."""
    from brain import Brain, sources

    root = tmp_path / "notes"
    write(root, {"broken.pdf": b"%PDF-1.4 not really a pdf", "note.md": "# Note\nplain text\n"})
    report = Brain(root).index()
    assert [f["path"] for f in report.failed] == ["broken.pdf"]
    write(root, {"later.pdf": _pdf(["a book added after the index"])})

    def no_pdf_reading(name: str, data: bytes) -> sources.ExtractedText:
        assert not name.lower().endswith(".pdf"), f"status extracted {name}"
        return real(name, data)

    real = sources.extract_bytes
    monkeypatch.setattr(sources, "extract_bytes", no_pdf_reading)
    status = Brain(root).status()
    assert [u["path"] for u in status.unreadable] == ["broken.pdf"]
    assert status.unreadable[0]["reason"] == report.failed[0]["reason"]
    assert status.missing == ["later.pdf"] and not status.clean  # not indexed yet: `brain index` settles it
