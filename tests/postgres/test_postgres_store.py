"""The index on PostgreSQL + pgvector: every command on a real server, started by the session (conftest)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from brain import Brain
from brain.errors import BrainError
from brain.store.postgres import SCHEMA_VERSION, PostgresStore, schema_name, split_location
from brain.store.postgres.bm25 import sum_by_chunk
from brain.store.postgres.schema import DELETE_FILE_POSTINGS
from brain.store.postgres.tokens import index_tokens, tsquery_literal, tsvector_literal
from helpers import PROJECT, committed_notes, git, run_cli, write

NOTES = {
    "projects/nexum.md": "---\ntitle: Nexum clinic\nstatus: active\n---\n# Nexum\n\n"
                         "Il progetto Laravel per la clinica usa code e notifiche via email.\n",
    "ops/nginx.md": "# Nginx\n\nThe nginx SSL certificate renews with certbot every month. Ticket FT-2026-0412.\n",
    "old/archive.md": "---\nstatus: archived\n---\n# Old garden\n\nNotes about gardening and tomatoes.\n",
}


def chunk_rows(url: str) -> list[tuple[str, int, int]]:
    """(path, seq, count) of every chunk seq stored more than once, and the total rows per file, straight from SQL."""
    conninfo, corpus = split_location(url)
    schema = schema_name(corpus or "")
    with psycopg.connect(conninfo) as conn:
        return conn.execute(
            f'SELECT f.path, c.seq, count(*) FROM "{schema}".chunks c JOIN "{schema}".files f ON f.id = c.file_id'
            " GROUP BY f.path, c.seq ORDER BY 1, 2").fetchall()


def lexicon_differences(url: str) -> list[tuple[str, int]]:
    """Words whose count in the lexicon differs from their chunks in postings (both ways), straight from SQL."""
    conninfo, corpus = split_location(url)
    schema = schema_name(corpus or "")
    with psycopg.connect(conninfo) as conn:
        return conn.execute(
            f'(SELECT lexeme, chunks FROM "{schema}".lexicon WHERE chunks <> 0'
            f' EXCEPT SELECT lexeme, count(*) FROM "{schema}".postings GROUP BY lexeme)'
            f' UNION ALL (SELECT lexeme, count(*) FROM "{schema}".postings GROUP BY lexeme'
            f' EXCEPT SELECT lexeme, chunks FROM "{schema}".lexicon)').fetchall()


def schemas(url: str) -> list[str]:
    conninfo, _ = split_location(url)
    with psycopg.connect(conninfo) as conn:
        return [r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'brain_%' ORDER BY 1")]


def test_index_search_every_mode_get_grep_ask_status_stats(tmp_path: Path, store_url: str) -> None:
    root = tmp_path / "notes"
    write(root, NOTES)
    brain = Brain(root)
    report = brain.index()
    assert sorted(report.added) == sorted(NOTES) and not report.failed
    assert not (root / ".brain" / "brain.sqlite").exists()  # nothing went to the SQLite file
    assert report.database.startswith("postgresql://") and "#brain_t" in report.database

    # Keyword half: stems (Italian "progetti" finds "progetto"), identifiers whole, typos corrected.
    assert brain.search("progetti clinica", mode="bm25").results[0].path == "projects/nexum.md"
    assert brain.search("FT-2026-0412", mode="bm25").results[0].path == "ops/nginx.md"
    typo = brain.search("certifcate", mode="bm25")
    assert typo.results[0].path == "ops/nginx.md" and typo.also_searched == ["certificate"]
    # Vector and hybrid halves, across languages.
    assert brain.search("web server TLS renewal", mode="vector").results[0].path == "ops/nginx.md"
    hybrid = brain.search("Laravel clinic project", mode="hybrid")
    assert hybrid.results[0].path == "projects/nexum.md"
    assert all(h.vector_score is not None and h.keyword_score is not None for h in hybrid.results)
    # Filters, path prefix, explain (fields), excerpts.
    assert [h.path for h in brain.search("notes", where=["status!=archived"], mode="bm25").results] != [
        "old/archive.md"
    ]
    assert [h.path for h in brain.search("gardening", path_prefix="ops/", mode="bm25").results] == []
    explained = brain.search("nginx certificate", mode="hybrid").results[0]
    assert explained.explain is not None and explained.explain["keyword"]["fields"]["body"]
    assert "heading" in explained.explain["keyword"]["fields"]  # "Nginx" is its heading
    with_excerpt = brain.search("certbot", mode="bm25", excerpt_chars=200).results[0]
    assert "certbot" in (with_excerpt.excerpt or "") and with_excerpt.content_len
    # Whatever a person types is a parameter, never SQL or tsquery syntax.
    assert brain.search("zzqx qq-ww", mode="bm25").results == []  # a word and a phrase, neither in any note
    for hostile in ["'; DROP TABLE files; --", "a & b | !c <-> d:*", "\"quoted\" OR \"it's <->\"", "C++ #1234",
                    "it\\'s"]:
        brain.search(hostile, mode="bm25")
    brain.search("\"quoted", mode="bm25", literal=True)  # an unclosed quote, as typed
    # A phrase through the server's tsquery: the note holding it ranks first.
    assert brain.search('renews "SSL certificate"', mode="bm25").results[0].path == "ops/nginx.md"
    assert brain.search("tomatoes", mode="bm25").results[0].path == "old/archive.md"

    text = brain.get_file("ops/nginx.md")
    assert "certbot" in text.to_dict()["text"]
    found = brain.grep(r"cert\w+")
    assert [m["path"] for m in found.to_dict()["matches"]] == ["ops/nginx.md"]
    asked = brain.ask("how does the nginx certificate renew?")
    assert asked.answer is None and asked.sources and asked.sources[0].path == "ops/nginx.md"

    status = brain.status()
    assert status.clean and status.files_indexed == 3 and status.schema_version == status.schema_supported
    stats = brain.stats()
    assert stats["files"] == 3 and stats["chunks"] == stats["embedded_chunks"] >= 3 and stats["database_bytes"] > 0
    brain.close()


def test_edit_rename_delete_sync_and_full_rebuild(tmp_path: Path, store_url: str) -> None:
    root = committed_notes(tmp_path / "notes", NOTES)
    brain = Brain(root)
    brain.index()
    assert not lexicon_differences(store_url)
    searcher_version = brain.searcher.store.data_version()  # a warm reader, as `brain serve` keeps one

    (root / "ops" / "nginx.md").write_text("# Nginx\n\nThe nginx certificate now renews with acme.sh.\n")
    git(root, "mv", "projects/nexum.md", "projects/nexum-clinic.md")
    git(root, "rm", "-q", "old/archive.md")
    git(root, "commit", "-qam", "edit, rename, delete")
    sync = brain.sync()
    assert sync.action == "diff" and sync.scan is not None
    assert sync.scan.updated == ["ops/nginx.md"] and sync.scan.removed == ["old/archive.md"]
    assert sync.scan.moved == [{"from": "projects/nexum.md", "to": "projects/nexum-clinic.md"}]
    assert sync.scan.chunks_embedded == 1  # the rename re-embedded nothing
    assert brain.searcher.store.data_version() != searcher_version
    assert brain.search("acme", mode="bm25").results[0].path == "ops/nginx.md"
    assert brain.search("certbot", mode="bm25").results == []
    assert brain.search("tomatoes", mode="bm25").results == []
    # The renamed note is found by its new folder-name field, and only once.
    hits = brain.search("nexum clinic", mode="hybrid").results
    assert [h.path for h in hits].count("projects/nexum-clinic.md") == 1
    assert brain.status().clean and brain.status().indexed_commit == git(root, "rev-parse", "HEAD").strip()
    assert all(n == 1 for _, _, n in chunk_rows(store_url))
    assert not lexicon_differences(store_url)  # edits, renames and deletes keep the words' counts

    before = schemas(store_url)
    rebuilt = brain.index(full=True)
    assert rebuilt.rebuilt and rebuilt.chunks_embedded == 0  # every vector from the old schema's cache
    assert schemas(store_url) == before  # swapped under the same name, no rebuild schema left
    assert brain.search("acme", mode="hybrid").results[0].path == "ops/nginx.md"  # the warm reader sees the new schema
    assert brain.status().last_rebuild["ok"] is True
    assert not lexicon_differences(store_url)  # the rebuilt schema, renamed into place, counts too
    (root / "ops" / "nginx.md").write_text("# Nginx\n\nThe nginx certificate renews with lego now.\n")
    assert brain.index().updated == ["ops/nginx.md"]
    assert not lexicon_differences(store_url)
    brain.close()


_WRITER = r"""
import sys
import numpy as np
from brain.store import FileKeywords, NewChunk
from brain.store.postgres import PostgresStore

url, who = sys.argv[1], sys.argv[2]
store = PostgresStore(url, "ignored", stemmer="auto")
vector = np.ones(4, dtype=np.float32).tobytes()
for round in range(30):
    for n in range(3):
        chunks = [NewChunk(f"{who} round {round} part {k}", "# H", k + 1, k + 1, [], None, vector) for k in range(4)]
        store.replace_file(path=f"shared/{n}.md", hash=f"{who}{round}", size=1, mtime_ns=1, metadata={}, warning=None,
                           page_starts=[], chunks=chunks, title="shared",
                           keywords=FileKeywords(title="shared", path="shared"))
store.close()
"""


def test_concurrent_writers_in_separate_processes_leave_no_duplicate_chunks(store_url: str) -> None:
    # No schema yet: the three also race to create it.
    env = {"PYTHONPATH": str(PROJECT / "tools" / "lib")}
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, store_url, who], env=env, stderr=subprocess.PIPE,
                                text=True)
               for who in ("a", "b", "c")]
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
    rows = chunk_rows(store_url)
    assert [(path, seq) for path, seq, _ in rows] == [(f"shared/{n}.md", k) for n in range(3) for k in range(4)]
    assert all(count == 1 for _, _, count in rows)
    store = PostgresStore(store_url, "ignored")
    try:
        for n in range(3):
            chunks = store.file_chunks(store.get_file(f"shared/{n}.md").id)
            assert len({c.text.split(" round")[0] for c in chunks}) == 1  # one writer's file, never a mix
    finally:
        store.close()


def test_tokens_match_fts5_and_queries_are_literals() -> None:
    # Identifiers stay whole words, accents and case fold, porter on top when the tokenizer has it.
    vector = tsvector_literal([("title", "Perché"), ("body", "FT-2026-0412 running")], porter=True)
    assert vector == "'perch':1A 'ft':3D '2026':4D '0412':5D 'run':6D"  # position 2 parts the fields
    assert tsquery_literal('"ft 2026 0412" OR "perché"', porter=False) == "('ft' <-> '2026' <-> '0412') | ('perche')"
    assert tsquery_literal("\"it's\" OR \"'; drop\"", porter=False) == "('it' <-> 's') | ('drop')"
    assert tsquery_literal('"" OR "--"', porter=False) is None


def test_keyword_scores_equal_sqlite_fts5_bm25(tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same notes on both stores: every keyword hit has the same BM25 (fusion then treats them alike)."""
    notes = dict(NOTES)
    notes["ops/nginx-more.md"] = "# Nginx again\n\nnginx nginx reverse proxy; the certificate chain of nginx.\n"
    # Words whose tokens an imitation of FTS5 got wrong (Snowball's porter, Python's folding).
    notes["lab/cardiology.md"] = (
        "# Cardiology lab\n\nThe cardiology and immunology teams measure H₂O₂ daily; incredibly, the panel acceded.\n"
    )
    on_server, in_file = tmp_path / "a" / "notes", tmp_path / "b" / "notes"
    write(on_server, notes)
    write(in_file, notes)
    server_brain = Brain(on_server)
    server_brain.index()
    monkeypatch.delenv("BRAIN_STORE")
    file_brain = Brain(in_file)
    file_brain.index()
    assert (in_file / ".brain" / "brain.sqlite").exists()
    for query in ["nginx certificate", "progetti clinica", "FT-2026-0412", "notes about gardening", "Nexum clinic",
                  "certifcate", "cardiology immunology", "H₂O₂", "incredibly acceded", "nginx nginx certificate"]:
        scores = []
        for brain in (server_brain, file_brain):
            hits = brain.search(query, mode="bm25", chunks=True, limit=20).results
            scores.append({(h.path, h.start_line): h.explain["keyword"]["bm25"] for h in hits})
        assert scores[0].keys() == scores[1].keys() and scores[0], query
        for key, value in scores[1].items():
            assert scores[0][key] == pytest.approx(value, rel=1e-6), (query, key)
    server_brain.close()
    file_brain.close()


def test_scores_of_several_words_add_up_per_chunk_by_slot_or_by_sort() -> None:
    """Each chunk once, by id, with its file and the sum of its scores; ids close together or far apart alike."""
    import numpy as np

    for ids in ([7, 3, 7, 5, 3], [7 << 40, 3, 7 << 40, 5, 3]):  # the second too spread for a slot per id
        parts = [(np.array(ids[:3]), np.array([70, 30, 70]), np.array([1.0, 2.0, 0.5])),
                 (np.array(ids[3:]), np.array([50, 30]), np.array([4.0, 0.25]))]
        chunks, files, scores = sum_by_chunk(parts)
        assert chunks.tolist() == sorted({3, 5, ids[0]})
        assert files.tolist() == [30, 50, 70] and scores.tolist() == [2.25, 4.0, 1.5]
    assert [len(a) for a in sum_by_chunk([])] == [0, 0, 0]
    nothing = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    assert [len(a) for a in sum_by_chunk([nothing, nothing])] == [0, 0, 0]  # a word and a phrase, neither found


def test_a_renamed_files_postings_are_reached_through_an_index(tmp_path: Path, store_url: str) -> None:
    """The statement a rename runs never scans the whole postings table (8 s a file at 1M chunks)."""
    write(tmp_path / "notes", NOTES)
    brain = Brain(tmp_path / "notes")
    brain.index()
    store = brain.searcher.store
    with store.conn.transaction():
        store.conn.execute("SET LOCAL enable_seqscan = off")  # a scan stays in the plan only if no index can serve
        plan = "\n".join(r[0] for r in store.conn.execute(store._sql("EXPLAIN " + DELETE_FILE_POSTINGS), (1,)))
    assert "postings_chunk" in plan and "Seq Scan on postings" not in plan, plan
    brain.close()


def test_tokens_are_fts5s_own() -> None:
    """Every token the server stores is the one SQLite's FTS5 stores for the same text, porter or not."""
    import sqlite3

    text = (
        "Perché l'ultimo FT-2026-0412? Cardiology, immunology; H₂O₂ ca² incredibly acceded "
        "naïve ÆON straße 東京 über_cool"
    )
    for porter, tokenizer in ((False, "unicode61 remove_diacritics 2"), (True, "porter unicode61 remove_diacritics 2")):
        db = sqlite3.connect(":memory:")
        db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{tokenizer}')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        db.execute("INSERT INTO t(x) VALUES (?)", (text,))
        assert index_tokens(text, porter) == [row[0] for row in db.execute("SELECT term FROM v ORDER BY offset")]


def test_a_schema_4_corpus_is_rebuilt_by_the_next_index(tmp_path: Path, store_url: str) -> None:
    """Schema 4 made some tokens its own way: the migration marks its tokenizer, and the next index rebuilds it."""
    root = tmp_path / "notes"
    write(root, NOTES)
    brain = Brain(root)
    brain.index()
    store = PostgresStore(store_url, "ignored")
    store.conn.execute(f'UPDATE "{store.schema}".state SET schema_version = 4')
    store.close()
    brain.close()
    brain = Brain(root)
    assert brain.index().rebuilt
    store = PostgresStore(store_url, "ignored")
    assert store.fts_tokenizer() == "porter unicode61 remove_diacritics 2" and store.schema_version() == SCHEMA_VERSION
    store.close()
    assert brain.search("clinica", mode="bm25").results
    brain.close()


def test_a_schema_5_corpus_gets_its_words_counted_by_the_next_writer(tmp_path: Path, store_url: str) -> None:
    """Schema 6 adds the lexicon (a typo's near words): read-only searches of a schema-5 corpus count from
    the postings."""
    root = tmp_path / "notes"
    write(root, NOTES)
    brain = Brain(root)
    brain.index()
    brain.close()
    store = PostgresStore(store_url, "ignored")
    q = f'"{store.schema}"'
    for statement in (f"DROP TABLE {q}.lexicon", f"DROP FUNCTION {q}.count_lexemes() CASCADE",
                      f"UPDATE {q}.state SET schema_version = 5"):
        store.conn.execute(statement)
    store.close()
    reader = PostgresStore(store_url, "ignored", readonly=True)
    assert reader.schema_version() == 5 and ("certif", 1) in reader.vocabulary("c", 3)
    reader.close()
    brain = Brain(root)
    assert brain.search("certifcate", mode="bm25").results[0].path == "ops/nginx.md"
    brain.close()
    writer = PostgresStore(store_url, "ignored")
    assert writer.schema_version() == SCHEMA_VERSION and ("certif", 1) in writer.vocabulary("c", 3)
    writer.close()
    assert not lexicon_differences(store_url)


def test_a_newer_schema_is_refused_and_nothing_is_written(store_url: str) -> None:
    store = PostgresStore(store_url, "ignored")
    store.conn.execute(f'UPDATE "{store.schema}".state SET schema_version = 99')
    store.close()
    with pytest.raises(BrainError, match="written by a newer brain \\(schema 99"):
        PostgresStore(store_url, "ignored")


def test_user_errors_are_one_line(tmp_path: Path, pg_server: str) -> None:
    root = tmp_path / "notes"
    write(root, {"a.md": "alpha\n"})
    unreachable = "postgresql://brain@127.0.0.1:1/notes"
    done = run_cli("--root", str(root), "search", "alpha", env={"BRAIN_STORE": unreachable}, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "cannot reach PostgreSQL at postgresql://brain@127.0.0.1:1/notes" in done.stderr
    (root / "brain.toml").write_text('store = "postgresql://brain:secret@db.example/notes"\n')
    done = run_cli("--root", str(root), "status", timeout=120)
    assert done.returncode != 0 and "must not hold a password" in done.stderr and "secret" not in done.stderr
    (root / "brain.toml").write_text("")
    done = run_cli("--root", str(root), "config", "set", "store", "postgresql://brain:secret@db.example/notes",
                   timeout=120)
    assert done.returncode != 0 and "secret" not in (root / "brain.toml").read_text()
    shown = run_cli("--root", str(root), "config", "show", env={"BRAIN_STORE": "postgresql://brain:secret@db.example/notes"})
    assert (
        shown.returncode == 0 and "postgresql://brain:***@db.example/notes" in shown.stdout
        and "secret" not in shown.stdout
    )
    with pytest.raises(BrainError, match="no index for corpus"):
        PostgresStore(pg_server + "&corpus=never_made", "x", create=False)


def test_two_machines_rebuilding_one_corpus_take_turns(tmp_path: Path, store_url: str) -> None:
    """Two clones (their file locks are on different disks) rebuild the same corpus at once: both finish, one index."""
    clones = []
    for name in ("laptop", "server"):
        root = tmp_path / name / "notes"
        write(root, NOTES)
        # As a team sets a clone up: `config set` writes brain.toml and approves the server on this machine.
        assert run_cli("--root", str(root), "config", "set", "store", store_url).returncode == 0
        clones.append(root)
    assert run_cli("--root", str(clones[0]), "index", env={"BRAIN_STORE": ""}).returncode == 0
    env = dict(os.environ, PYTHONPATH=str(PROJECT / "tools" / "lib"))
    env.pop("BRAIN_STORE", None)
    rebuilds = [subprocess.Popen([sys.executable, "-m", "brain", "--root", str(root), "index", "--full", "--json"],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for root in clones]
    for rebuild in rebuilds:
        out, err = rebuild.communicate(timeout=600)
        assert rebuild.returncode == 0, err
        assert json.loads(out)["rebuilt"] is True
    corpus = split_location(store_url)[1]
    assert schemas(store_url).count(schema_name(corpus or "")) == 1
    assert not [s for s in schemas(store_url) if s.endswith("__rebuild")]
    assert all(n == 1 for _, _, n in chunk_rows(store_url)) and len({p for p, _, _ in chunk_rows(store_url)}) == 3


def test_a_schema_7_corpus_reads_without_labels_and_its_next_index_fills_them(tmp_path: Path, store_url: str) -> None:
    """Schema 8 keeps PDFs' page labels: a schema-7 corpus opened read-only reads none; a writer adds the
    columns, and its next index re-extracts the PDFs with their labels."""
    from test_pdf_pages import BOOK_LABELS, labelled_book

    root = tmp_path / "notes"
    write(root, {"book.pdf": labelled_book()})
    brain = Brain(root)
    brain.index()
    brain.close()
    store = PostgresStore(store_url, "ignored")
    q = f'"{store.schema}"'
    for statement in (f"ALTER TABLE {q}.files DROP COLUMN page_labels",
                      f"ALTER TABLE {q}.extracted_text DROP COLUMN page_labels",
                      f"UPDATE {q}.state SET schema_version = 7"):
        store.conn.execute(statement)
    store.close()
    reader = PostgresStore(store_url, "ignored", readonly=True)
    row = reader.get_file("book.pdf")
    assert reader.schema_version() == 7 and row is not None and row.page_labels == []
    kept = reader.extracted_text(row.hash)
    assert kept is not None and kept.page_labels == []
    reader.close()
    brain = Brain(root)
    assert brain.index().rebuilt
    assert sorted(brain.search("pelican", mode="bm25").results[0].page_labels) == sorted(BOOK_LABELS)  # one chunk
    brain.close()
