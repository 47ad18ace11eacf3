"""Each language's chunks are moved toward the others' before the vector half ranks them (fusion.LanguageCentres).

The bundled model scores a passage higher when it shares the query's language, whatever it says; a folder of
Italian notes with a few English ones answered English questions with the English notes. Real notes, the real
model, and the pure arithmetic on a matrix of its own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from brain import Brain, fusion
from brain.fusion import LANGUAGE_CENTRE_MIN_CHUNKS, LANGUAGE_CENTRE_SHARE, LanguageCentres
from brain.search import Searcher
from helpers import write


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_each_language_moves_by_a_share_of_its_gap_to_the_mean_of_all() -> None:
    rng = np.random.default_rng(7)
    n = LANGUAGE_CENTRE_MIN_CHUNKS
    matrix = _unit(rng.normal(size=(2 * n + 3, 8)))
    file_ids = np.arange(len(matrix))
    language_of = {i: ("italian" if i < n else "english" if i < 2 * n else "") for i in range(len(matrix))}
    centres = LanguageCentres.of(file_ids, matrix, language_of)
    assert centres is not None
    query = _unit(rng.normal(size=(1, 8)))[0]
    sims = matrix @ query
    italian, english = sims[:n].mean(), sims[n:2 * n].mean()
    overall = sims[: 2 * n].mean()
    shifts = centres.shifts(query)
    assert shifts[:n] == pytest.approx(LANGUAGE_CENTRE_SHARE * (overall - italian), abs=1e-6)
    assert shifts[n:2 * n] == pytest.approx(LANGUAGE_CENTRE_SHARE * (overall - english), abs=1e-6)
    assert (shifts[2 * n:] == 0).all()  # a chunk of no detected language stays where it was
    # Within a language the order is the model's: every chunk of it moves by the same amount.
    moved = sims + shifts
    assert (np.argsort(moved[:n]) == np.argsort(sims[:n])).all()


def test_one_language_or_a_handful_of_the_other_moves_nothing() -> None:
    rng = np.random.default_rng(8)
    n = LANGUAGE_CENTRE_MIN_CHUNKS
    matrix = _unit(rng.normal(size=(2 * n, 8)))
    file_ids = np.arange(2 * n)
    assert LanguageCentres.of(file_ids, matrix, {i: "italian" for i in range(2 * n)}) is None
    few = {i: ("english" if i < n - 1 else "italian") for i in range(2 * n)}  # n - 1 English chunks: noise
    assert LanguageCentres.of(file_ids, matrix, few) is None
    assert LanguageCentres.of(file_ids, matrix, {}) is None  # no language detected (BEIR ids, code)


ITALIAN_PAGES = ["Questa pagina spiega come usare {t}: dove si trova l'impostazione e cosa cambia nella vista.",
                 "Domande frequenti su {t}: i limiti, i formati accettati e cosa fare quando non funziona."]
ITALIAN_TOPICS = ["tema scuro", "cartelle", "etichette", "collegamenti", "grafo", "tabelle", "immagini", "audio",
                  "modelli", "segnalibri", "ricerca", "schede", "finestre", "citazioni", "elenchi", "titoli"]
ENGLISH_PAGES = ["This page explains how to use {t}: where the setting is and what it changes in the view.",
                 "Frequently asked questions about {t}: the limits, the formats it takes and what to do when it fails."]
ENGLISH_TOPICS = ["the dark theme", "folders", "tags", "links", "the graph", "tables", "images", "audio",
                  "templates", "bookmarks", "search", "tabs", "windows", "quotes", "lists", "headings"]


@pytest.fixture(scope="module")
def mixed_notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Italian help pages beside as many English ones on the same features, and an English refund policy."""
    root = tmp_path_factory.mktemp("lingue") / "note"
    files = {"Help/Refunds.md": "# Refund policy\n\nWithin 14 days of your purchase we give you back the money "
                                "you paid for the licence: write to support with your order number.\n"}
    for topics, pages, folder in ((ITALIAN_TOPICS, ITALIAN_PAGES, "Guida"), (ENGLISH_TOPICS, ENGLISH_PAGES, "Help")):
        for topic in topics:
            for m, page in enumerate(pages):
                files[f"{folder}/{topic}/{m}.md"] = f"# {topic.capitalize()} {m}\n\n{page.format(t=topic)}\n"
    write(root, files)
    Brain(root).index()
    return root


QUESTION = "posso riavere i soldi della licenza?"  # Italian, about the English refund policy


@pytest.mark.slow
def test_a_vector_cosine_is_the_models_plus_its_languages_shift(mixed_notes: Path) -> None:
    searcher = Searcher(Brain(mixed_notes).settings)
    try:
        found = searcher.search(QUESTION, mode="vector", limit=40, no_cutoff=True)
        centres = searcher._centres
        assert centres is not None  # both languages have their 20 chunks
        vectors = searcher._vector_data()
        assert vectors is not None
        ids, _, matrix = vectors
        query = searcher.embedder.encode_query(QUESTION)
        row_of = {int(cid): row for row, cid in enumerate(ids)}
        shifts = centres.shifts(query)
        for hit in found.results:
            row = row_of[hit.chunk_id]
            assert hit.explain is not None
            assert hit.explain["vector"]["cosine"] == pytest.approx(float(matrix[row] @ query + shifts[row]), abs=1e-5)
        italian = shifts[next(row_of[h.chunk_id] for h in found.results if h.path.startswith("Guida/"))]
        english = shifts[next(row_of[h.chunk_id] for h in found.results if h.path.startswith("Help/"))]
        assert english > 0 > italian  # the question's own language gave up half its head start
    finally:
        searcher.close()


@pytest.mark.slow
def test_an_italian_question_finds_the_english_note_before_italian_pages_on_other_things(
    mixed_notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ranked() -> list[str]:
        return [hit.path for hit in Brain(mixed_notes).search(QUESTION, mode="vector", limit=40,
                                                               no_cutoff=True).results]

    with monkeypatch.context() as uncentred:
        uncentred.setattr(fusion, "LANGUAGE_CENTRE_SHARE", 0.0)
        before = ranked()
    after = ranked()
    italian_first = [p for p in before[: before.index("Help/Refunds.md")] if p.startswith("Guida/")]
    assert italian_first, before  # what the model's own bias did: Italian pages on other things came first
    assert after.index("Help/Refunds.md") < before.index("Help/Refunds.md"), (before, after)
