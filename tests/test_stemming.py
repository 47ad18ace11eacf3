"""Stemmed keyword search: Italian word forms meet, identifiers stay whole, old indexes migrate and rebuild."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from brain import Brain
from brain.stemming import stemmer
from brain.store import SCHEMA_VERSION, SqliteStore

from helpers import write

ITALIAN = {"brain.toml": '[search]\nstemmer = "italian"\n'}
NOTES = {
    "progetti.md": "# Progetti\n\nGli indici dei progetti sono aggiornati ogni lunedì.\n",
    "ticket.md": "# Ticket\n\nFT-2026-0412 chiuso; the runner crashed twice.\n",
    "tea.md": "# Tea\n\nA note about green tea.\n",
}


def _paths(response) -> list[str]:
    return [hit.path for hit in response.results]


def test_stemmer_keeps_everything_but_word_endings() -> None:
    stem = stemmer("italian")
    assert stem("Gli indici: FT-2026-0412, l'indice") == "gli indic: ft-2026-0412, l'indic"
    assert stemmer("none")("Gli Indici") == "Gli Indici"


def test_italian_word_forms_find_each_other(tmp_path: Path) -> None:
    write(tmp_path, {**NOTES, **ITALIAN})
    brain = Brain(tmp_path)
    brain.index()
    assert _paths(brain.search("indice progetto", mode="bm25"))[0] == "progetti.md"  # singular finds plural
    assert _paths(brain.search("aggiornato", mode="bm25"))[0] == "progetti.md"
    assert _paths(brain.search("FT-2026-0412", mode="bm25"))[0] == "ticket.md"  # identifiers still whole
    assert _paths(brain.search("runs crash", mode="bm25"))[0] == "ticket.md"  # English still through porter


def test_without_stemming_word_forms_stay_apart_and_a_change_rebuilds_from_the_cache(tmp_path: Path) -> None:
    write(tmp_path, {**NOTES, "brain.toml": '[search]\nstemmer = "none"\n'})
    brain = Brain(tmp_path)
    brain.index()
    # Forms stay apart: "indice" reaches "indici" only as a guess at a typo, and says so.
    assert brain.search("indice", mode="bm25").also_searched == ["indici"]
    write(tmp_path, ITALIAN)
    brain = Brain(tmp_path)
    report = brain.index()
    assert report.rebuilt and report.chunks_embedded == 0
    assert _paths(brain.search("indice", mode="bm25"))[0] == "progetti.md"
    assert brain.index().rebuilt is False


def _downgrade_to_schema_2(db: Path) -> None:
    """Make an index look as schema 2 wrote it: FTS5 over heading_path and text, no stemmed copies."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript("""
        DROP TRIGGER chunks_ai; DROP TRIGGER chunks_ad; DROP TRIGGER chunks_au; DROP TABLE chunks_fts;
        ALTER TABLE chunks DROP COLUMN fts_heading; ALTER TABLE chunks DROP COLUMN fts_text;
        ALTER TABLE chunks DROP COLUMN fts_title; ALTER TABLE chunks DROP COLUMN fts_meta;
        ALTER TABLE chunks DROP COLUMN fts_path;
        ALTER TABLE files DROP COLUMN title; ALTER TABLE files DROP COLUMN language;
        CREATE VIRTUAL TABLE chunks_fts USING fts5(heading_path, text, content='chunks', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2');
        CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
            INSERT INTO chunks_fts(rowid, heading_path, text) VALUES (new.id, new.heading_path, new.text); END;
        CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, heading_path, text)
                VALUES ('delete', old.id, old.heading_path, old.text); END;
        INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild');
        DELETE FROM meta WHERE key IN ('stemmer', 'keyword_fields');
        PRAGMA user_version = 2;
    """)
    conn.close()


def test_a_schema_2_index_migrates_searches_at_once_and_rebuilds_stemmed(tmp_path: Path) -> None:
    write(tmp_path, NOTES)
    brain = Brain(tmp_path)
    brain.index()
    db = brain.settings.database_path
    _downgrade_to_schema_2(db)

    brain = Brain(tmp_path)  # searching migrates; the keyword copies are the plain text (stemmer none)
    assert _paths(brain.search("indici", mode="bm25"))[0] == "progetti.md"
    store = SqliteStore(db)
    try:
        assert store.schema_version() == SCHEMA_VERSION and store.stemmer() == "none"
        assert store.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')") is not None
    finally:
        store.close()
    write(tmp_path, {"brain.toml": '[search]\nstemmer = "none"\n'})
    report = Brain(tmp_path).index()  # the same stemmer, but the new keyword fields are filled: rebuilt from the cache
    assert report.rebuilt and report.chunks_embedded == 0
    assert Brain(tmp_path).index().rebuilt is False
    write(tmp_path, ITALIAN)
    brain = Brain(tmp_path)
    report = brain.index()  # the settings now ask for italian: rebuilt, nothing re-embedded
    assert report.rebuilt and report.chunks_embedded == 0
    assert _paths(brain.search("indice", mode="bm25"))[0] == "progetti.md"
    store = SqliteStore(db)
    try:
        assert store.stemmer() == "italian"
        store.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
    finally:
        store.close()


def test_unknown_stemmer_is_a_one_line_settings_error(tmp_path: Path) -> None:
    from helpers import run_cli

    write(tmp_path, {**NOTES, "brain.toml": '[search]\nstemmer = "klingon"\n'})
    done = run_cli("--root", str(tmp_path), "index")
    assert done.returncode != 0
    assert "search.stemmer" in done.stderr and "italian" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def _downgrade_to_schema_3(db: Path) -> None:
    """Make an index look as schema 3 wrote it: FTS5 over the stemmed heading and text only, no titles."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript("""
        DROP TRIGGER chunks_ai; DROP TRIGGER chunks_ad; DROP TRIGGER chunks_au; DROP TABLE chunks_fts;
        ALTER TABLE chunks DROP COLUMN fts_title; ALTER TABLE chunks DROP COLUMN fts_meta;
        ALTER TABLE chunks DROP COLUMN fts_path;
        ALTER TABLE files DROP COLUMN title; ALTER TABLE files DROP COLUMN language;
        CREATE VIRTUAL TABLE chunks_fts USING fts5(fts_heading, fts_text, content='chunks', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2');
        CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
            INSERT INTO chunks_fts(rowid, fts_heading, fts_text) VALUES (new.id, new.fts_heading, new.fts_text); END;
        CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, fts_heading, fts_text)
                VALUES ('delete', old.id, old.fts_heading, old.fts_text); END;
        INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild');
        DELETE FROM meta WHERE key = 'keyword_fields';
        PRAGMA user_version = 3;
    """)
    conn.close()


def test_a_schema_3_index_migrates_in_place_and_the_next_index_fills_the_new_fields(tmp_path: Path) -> None:
    from helpers import run_cli

    write(tmp_path, {**NOTES, "Green tea brewing.md": "Water at 80 degrees, two minutes.\n"})
    brain = Brain(tmp_path)
    brain.index()
    db = brain.settings.database_path
    _downgrade_to_schema_3(db)

    brain = Brain(tmp_path)  # searching migrates: the old fields still answer, the new ones start empty
    assert _paths(brain.search("indici", mode="bm25"))[0] == "progetti.md"
    assert "Green tea brewing.md" not in _paths(brain.search("brewing", mode="bm25"))
    store = SqliteStore(db)
    try:
        assert store.schema_version() == SCHEMA_VERSION
        store.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
    finally:
        store.close()
    status = run_cli("--root", str(tmp_path), "status")
    assert "keyword index settings changed" in status.stdout and "model changed" not in status.stdout
    report = brain.index()
    assert report.rebuilt and report.chunks_embedded == 0
    assert _paths(brain.search("brewing", mode="bm25"))[0] == "Green tea brewing.md"  # the title field, filled
