"""PDFs as books: words pdfium keeps apart, the extractor an index records, page labels, one page read."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

from conftest import write

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


def test_an_index_made_before_the_extractor_was_recorded_is_rebuilt_by_the_next_index(tmp_path: Path) -> None:
    write(tmp_path, {"book.pdf": glued_line_pdf()})
    brain = Brain(tmp_path)
    brain.index()
    db = brain.settings.database_path
    conn = sqlite3.connect(db, isolation_level=None)
    assert conn.execute("SELECT value FROM meta WHERE key = 'pdf_text'").fetchone() == (PDF_TEXT_IDENTITY,)
    conn.execute("DELETE FROM meta WHERE key = 'pdf_text'")  # as an index of pypdf's days
    conn.close()

    report = Brain(tmp_path).index()
    assert report.rebuilt and report.chunks_embedded == 0  # the same text: its vector from the cache
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta WHERE key = 'pdf_text'").fetchone() == (PDF_TEXT_IDENTITY,)
    conn.close()
    assert [hit.path for hit in Brain(tmp_path).search("division", mode="bm25").results] == ["book.pdf"]
