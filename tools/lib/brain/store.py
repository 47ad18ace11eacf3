"""Every SQL statement: schema, migrations, transactions and the writer lock.

One SQLite file in WAL mode. `files` holds one row per indexed file (with its
title and the language its words were stemmed in), `chunks` its pieces with
their vectors and stemmed copies of their keyword fields (the file's title,
frontmatter values and folder names, the chunk's heading path and text),
`chunks_fts` an FTS5 index of those copies kept in sync by triggers, `embedding_cache` vectors by (sha-256 of embedded text, model), and
`meta` the model and chunking the vectors were made with.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import BrainError
from .stemming import AUTO as AUTO_STEMMER
from .stemming import NONE as NO_STEMMER
from .stemming import detect_language
from .stemming import query_languages as query_languages_for
from .stemming import stemmer as stemmer_for

# 2: extracted_text (PDF text by content hash); 3: stemmed copies of chunk text for FTS5;
# 4: keyword fields (title, frontmatter values, folder names) and each file's title and language
SCHEMA_VERSION = 4
APPLICATION_ID = 0x6272616E  # "bran": marks the file as ours
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"  # for an index created without naming one
STEMMER = NO_STEMMER  # for an index created without naming one
# Tokenizers an index may be built with; the query goes through the same one.
FTS_TOKENIZERS = ("unicode61 remove_diacritics 2", "porter unicode61 remove_diacritics 2")

# The keyword fields, in FTS5 column order, with their BM25 weights. A word in a
# note's title says more about the note than the same word in its body, and
# FTS5's bm25() takes one weight per column. The weights were chosen by
# measurement (docs/evaluation.md, decision 9): title and frontmatter values
# ×4 put the note a title or an alias names first without letting one title
# word outrank a body that uses every query word; headings ×2 as before
# (they were a column of weight 1, repeated in every chunk under them); folder
# names ×2: they are topics (`projects/nexum`) but also shared by many notes.
FIELDS = ("title", "meta", "heading", "path", "body")
FIELD_WEIGHTS = {"title": 4.0, "meta": 4.0, "heading": 2.0, "path": 2.0, "body": 1.0}
FTS_COLUMNS = ("fts_title", "fts_meta", "fts_heading", "fts_path", "fts_text")
# Recorded in meta: an index whose keyword fields differ is rebuilt by the next `brain index`.
KEYWORD_FIELDS = ",".join(FIELDS)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    indexed_at TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'ok',
    warning TEXT,
    page_starts TEXT,
    title TEXT NOT NULL DEFAULT '',
    language TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS files_hash ON files(hash);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    text TEXT NOT NULL,
    heading_path TEXT NOT NULL DEFAULT '',
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    pages TEXT,
    embed_hash TEXT,
    vector BLOB,
    fts_heading TEXT NOT NULL DEFAULT '',
    fts_text TEXT NOT NULL DEFAULT '',
    fts_title TEXT NOT NULL DEFAULT '',
    fts_meta TEXT NOT NULL DEFAULT '',
    fts_path TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id);
__FTS__
CREATE TABLE IF NOT EXISTS embedding_cache (
    hash TEXT NOT NULL,
    model TEXT NOT NULL,
    vector BLOB NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (hash, model)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS extracted_text (
    hash TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    page_starts TEXT,
    created_at TEXT NOT NULL
);
"""

# FTS5 reads the stemmed copies of the keyword fields (FTS_COLUMNS), kept in sync by triggers.
_FTS = """
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    __COLUMNS__, content='chunks', content_rowid='id', tokenize='__TOKENIZER__'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, __COLUMNS__) VALUES (new.id, __NEW__);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, __COLUMNS__) VALUES ('delete', old.id, __OLD__);
END;
CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE OF __COLUMNS__ ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, __COLUMNS__) VALUES ('delete', old.id, __OLD__);
    INSERT INTO chunks_fts(rowid, __COLUMNS__) VALUES (new.id, __NEW__);
END;
""".replace("__COLUMNS__", ", ".join(FTS_COLUMNS)).replace(
    "__NEW__", ", ".join(f"new.{c}" for c in FTS_COLUMNS)).replace("__OLD__", ", ".join(f"old.{c}" for c in FTS_COLUMNS))

# Schema 2 → 3: FTS5 read heading_path and text directly. The copies start as the
# text itself (stemmer "none", what that index was built with); the next `brain index`
# rebuilds with the configured stemmer, vectors from the cache.
_MIGRATE_TO_3 = """
DROP TRIGGER IF EXISTS chunks_ai;
DROP TRIGGER IF EXISTS chunks_ad;
DROP TRIGGER IF EXISTS chunks_au;
DROP TABLE IF EXISTS chunks_fts;
ALTER TABLE chunks ADD COLUMN fts_heading TEXT NOT NULL DEFAULT '';
ALTER TABLE chunks ADD COLUMN fts_text TEXT NOT NULL DEFAULT '';
UPDATE chunks SET fts_heading = heading_path, fts_text = text;
"""

# Schema 3 → 4: FTS5 gains the title, frontmatter and folder-name fields. They start
# empty (meta keyword_fields says so); the next `brain index` rebuilds them, vectors from the cache.
_MIGRATE_TO_4 = """
DROP TRIGGER IF EXISTS chunks_ai;
DROP TRIGGER IF EXISTS chunks_ad;
DROP TRIGGER IF EXISTS chunks_au;
DROP TABLE IF EXISTS chunks_fts;
ALTER TABLE chunks ADD COLUMN fts_title TEXT NOT NULL DEFAULT '';
ALTER TABLE chunks ADD COLUMN fts_meta TEXT NOT NULL DEFAULT '';
ALTER TABLE chunks ADD COLUMN fts_path TEXT NOT NULL DEFAULT '';
ALTER TABLE files ADD COLUMN title TEXT NOT NULL DEFAULT '';
ALTER TABLE files ADD COLUMN language TEXT NOT NULL DEFAULT '';
"""
MIGRATED_FIELDS = "heading,body"  # what a migrated index's keyword fields hold until rebuilt


@dataclass(frozen=True)
class FileRow:
    """A file as the index knows it."""

    id: int
    path: str
    hash: str
    size: int
    mtime_ns: int
    indexed_at: str
    metadata: dict[str, Any]
    status: str
    warning: str | None
    page_starts: list[int]
    title: str = ""
    language: str = ""


@dataclass(frozen=True)
class ChunkRow:
    """A stored chunk, without its vector."""

    id: int
    file_id: int
    seq: int
    text: str
    heading_path: str
    start_line: int
    end_line: int
    pages: list[int]


@dataclass(frozen=True)
class NewChunk:
    """A chunk ready to be written."""

    text: str
    heading_path: str
    start_line: int
    end_line: int
    pages: list[int]
    embed_hash: str | None
    vector: bytes | None


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _file_row(row: Sequence[Any]) -> FileRow:
    return FileRow(row[0], row[1], row[2], row[3], row[4], row[5], json.loads(row[6] or "{}"), row[7], row[8],
                   json.loads(row[9]) if row[9] else [], row[10], row[11])


_FILE_COLUMNS = "id, path, hash, size, mtime_ns, indexed_at, metadata, status, warning, page_starts, title, language"


# SQLite result codes (the low byte of sqlite3.Error.sqlite_errorcode) that say the file
# itself is not a usable database. Every other failure (a full disk, no permission, a
# lock held too long) says nothing about the file: it must never be called damaged.
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26


def _is_damage(exc: sqlite3.Error) -> bool:
    """True when SQLite found the file itself broken or not a database, not when it could not use it."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:  # no code: judge by SQLite's own words
        return "malformed" in str(exc) or "not a database" in str(exc)
    return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)


def _open_failure(path: Path, exc: sqlite3.Error) -> BrainError:
    """The one-line error for an index SQLite could not open or read."""
    if getattr(exc, "sqlite_errorcode", None) is not None and exc.sqlite_errorcode & 0xFF == _SQLITE_NOTADB:
        return BrainError(f"{path} is not an SQLite database (or its header is damaged); "
                          "move it away or set `database` in brain.toml to another path")
    if _is_damage(exc):
        return BrainError(f"{path} is damaged or not an index ({exc}); delete it and run `brain index` to rebuild")
    # The file may be perfectly good: say what failed, never "delete it".
    return BrainError(f"cannot use the index at {path} ({exc}); it was left as it is: "
                      "free disk space or fix the folder's permissions, then try again")


def _file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`, None when nothing is there; a stat, never an open."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


class MetaRecords:
    """What every store keeps in its meta table and derives from it, for SQLite and PostgreSQL alike.

    Built only on the store's own get_meta/set_meta, so both stores say the same
    thing about commits, syncs, rebuilds and languages.
    """

    def get_meta(self, key: str) -> str | None:
        raise NotImplementedError

    def set_meta(self, items: dict[str, str]) -> None:
        raise NotImplementedError

    def indexed_commit(self) -> str | None:
        """The git commit up to which every committed change is in the index (None: never recorded)."""
        return self.get_meta("git_commit")

    def record_sync(self, result: dict[str, Any]) -> None:
        """Keep what the last git sync did (shown by `brain status`)."""
        self.set_meta({"last_sync_result": json.dumps(result, ensure_ascii=False)})

    def last_sync(self) -> dict[str, Any] | None:
        raw = self.get_meta("last_sync_result")
        return json.loads(raw) if raw else None

    def record_rebuild(self, result: dict[str, Any]) -> None:
        """Keep when the last full rebuild ran and how it ended (shown by `brain status`)."""
        self.set_meta({"last_rebuild_result": json.dumps(result, ensure_ascii=False)})

    def last_rebuild(self) -> dict[str, Any] | None:
        raw = self.get_meta("last_rebuild_result")
        return json.loads(raw) if raw else None

    def query_languages(self) -> tuple[str, ...]:
        """The stemmers a query goes through on this index: its stemmer, or under `auto` each language its files are in."""
        recorded = self.get_meta("languages")
        return query_languages_for(self.stemmer(), recorded.split(",") if recorded else None)

    def stemmer(self) -> str:
        """The stemmer the index's keyword copies were made with; queries must be stemmed the same way."""
        return self.get_meta("stemmer") or NO_STEMMER

    def _file_language(self, chunks: Sequence[NewChunk]) -> str:
        """The stemmer for a file's keyword fields: the index's, or under `auto` the language its text is written in."""
        index_stemmer = self.stemmer()
        if index_stemmer != AUTO_STEMMER:
            return index_stemmer
        return detect_language("\n".join(c.text for c in chunks[:8]))


class Store(MetaRecords):
    """One open index database."""

    supported_schema = SCHEMA_VERSION  # the schema this brain reads and writes

    def __init__(
        self,
        path: Path,
        *,
        create: bool = True,
        readonly: bool = False,
        tokenizer: str | None = None,
        stemmer: str | None = None,
        page_size: int | None = None,
    ) -> None:
        """Open (or create) the index at `path`; `tokenizer`, `stemmer` and `page_size` are used only when it is created."""
        self.path = path
        self._new_page_size = page_size
        self.tokenizer = tokenizer or FTS_TOKENIZER
        self._new_stemmer = stemmer or STEMMER
        if self.tokenizer not in FTS_TOKENIZERS:
            raise BrainError(f"unknown FTS tokenizer {self.tokenizer!r}; use one of: {'; '.join(FTS_TOKENIZERS)}")
        # The file is never opened here outside SQLite: closing any other descriptor of it
        # would drop the POSIX locks SQLite holds on it for this process's other
        # connections (a server's warm one), and the next process would then believe
        # itself alone and delete the -wal and -shm under them. SQLite reads the header.
        try:
            if not path.exists():
                if not create:
                    raise BrainError(f"no index at {path}; run `brain index` first")
                path.parent.mkdir(parents=True, exist_ok=True)
                self._ignore_in_git(path.parent)
        except OSError as exc:
            raise BrainError(f"cannot open the index at {path} ({exc.strerror}); check the folder's permissions or set `database`") from None
        for attempt in range(3):
            before = _file_identity(path)
            try:
                self.conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None, check_same_thread=False)
                self.conn.execute("PRAGMA busy_timeout = 30000")
                self._prepare(readonly)
            except sqlite3.Error as exc:
                with contextlib.suppress(Exception):
                    self.conn.close()
                raise _open_failure(path, exc) from None
            # The file this connection reads, by device and inode: `replaced` compares the path with it.
            self.identity = _file_identity(path)
            if before is None or before == self.identity or attempt == 2:
                break
            self.conn.close()  # replaced while opening: open the file that is there now

    def replaced(self) -> bool:
        """True when the path no longer names the file this connection reads (deleted, or another file put there).

        A long-lived reader (a server) checks this before each request and reopens:
        SQLite itself keeps reading the old file, from its own descriptors, for good.
        """
        return _file_identity(self.path) != self.identity

    @staticmethod
    def _ignore_in_git(folder: Path) -> None:
        # `.brain/` ignores itself, so the index never lands in the notes repo.
        if folder.name == ".brain":
            ignore = folder / ".gitignore"
            if not ignore.exists():
                ignore.write_text("*\n", encoding="utf-8")

    def _prepare(self, readonly: bool) -> None:
        conn = self.conn
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables):
            raise BrainError(f"{self.path} is an SQLite database of another program; set `database` in brain.toml to another path")
        if version > SCHEMA_VERSION:
            raise BrainError(
                f"{self.path} was written by a newer brain (schema {version}, this one reads {SCHEMA_VERSION}); upgrade brain-search"
            )
        conn.execute("PRAGMA foreign_keys = ON")
        if readonly:
            return
        if self._new_page_size and version == 0 and not tables:
            # Only a new, empty file takes a page size (before WAL fixes it for good).
            conn.execute(f"PRAGMA page_size = {int(self._new_page_size)}")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        if version < SCHEMA_VERSION:
            with self.transaction():
                upgrading = "chunks" in tables
                # An older index keeps its tokenizer until rebuilt, and its copies start unstemmed.
                tokenizer = self.fts_tokenizer() if upgrading else self.tokenizer
                stemmer = NO_STEMMER if upgrading and version < 3 else self._new_stemmer
                if upgrading and version < 3:
                    for statement in _split_sql(_MIGRATE_TO_3):
                        conn.execute(statement)
                if upgrading:
                    for statement in _split_sql(_MIGRATE_TO_4):
                        conn.execute(statement)
                for statement in _split_sql(_SCHEMA.replace("__FTS__", _FTS).replace("__TOKENIZER__", tokenizer)):
                    conn.execute(statement)
                if upgrading:
                    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
                    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('keyword_fields', ?)", (MIGRATED_FIELDS,))
                conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('stemmer', ?)", (stemmer,))
                # What the FTS table really uses: an older index keeps its own tokenizer until rebuilt.
                conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('fts_tokenizer', ?)", (self.fts_tokenizer(),))
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT, rolled back on any exception (Ctrl-C included)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Every read inside sees one snapshot of the index: a rebuild swapped in meanwhile is seen after, never halfway.

        A search reads the vectors, the keyword matches and then the chunk rows
        in separate statements; a rebuild's copy committed between them made
        chunk ids read before it resolve to other chunks after it (another
        file's). One read transaction (WAL: writers go on, never waited for)
        spans them all, on both threads of a search, since it is the
        connection's. Re-entrant: an enclosing one already holds the snapshot.
        """
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN")
        try:
            self.conn.execute("SELECT 1 FROM meta LIMIT 1").fetchall()  # the snapshot starts at the first read
            yield
        finally:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("COMMIT")

    # ------------------------------------------------------------ meta

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, items: dict[str, str]) -> None:
        with self.transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list(items.items()))

    def schema_version(self) -> int:
        """The schema version this file was written with (PRAGMA user_version)."""
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    # ------------------------------------------------------------ freshness records

    def record_indexed_commit(self, commit: str | None) -> None:
        """Remember that the index holds every change up to `commit` (None forgets it)."""
        with self.transaction() as conn:
            if commit is None:
                conn.execute("DELETE FROM meta WHERE key = 'git_commit'")
            else:
                conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('git_commit', ?)", (commit,))
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('git_synced_at', ?)", (_now(),))

    def record_languages(self) -> None:
        """Remember which languages the files' keyword fields were stemmed in (queries are stemmed in those)."""
        found = [r[0] for r in self.conn.execute("SELECT DISTINCT language FROM files WHERE language != '' ORDER BY 1")]
        self.set_meta({"languages": ",".join(found)})

    def fts_tokenizer(self) -> str:
        """The tokenizer the FTS table was really created with (read from its definition, not from meta)."""
        row = self.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()
        found = re.search(r"tokenize\s*=\s*'([^']*)'", row[0] if row else "")
        return found.group(1) if found else FTS_TOKENIZER

    def import_embedding_cache(self, other: Path) -> int:
        """Copy the cached vectors of another index into this one; returns how many this one gained."""
        before = self.conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
        try:
            self.conn.execute("ATTACH DATABASE ? AS other", (str(other),))
            with self.transaction() as conn:
                conn.execute("INSERT OR IGNORE INTO main.embedding_cache SELECT * FROM other.embedding_cache")
        except sqlite3.Error:
            return 0  # an unreadable other index only costs re-embedding
        finally:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("DETACH DATABASE other")
        return self.conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0] - before

    # ------------------------------------------------------------ files

    def all_files(self) -> dict[str, FileRow]:
        return {r[1]: _file_row(r) for r in self.conn.execute(f"SELECT {_FILE_COLUMNS} FROM files")}

    def get_file(self, path: str) -> FileRow | None:
        row = self.conn.execute(f"SELECT {_FILE_COLUMNS} FROM files WHERE path = ?", (path,)).fetchone()
        return _file_row(row) if row else None

    def files_by_id(self, ids: Iterable[int]) -> dict[int, FileRow]:
        ids = list(set(ids))
        out: dict[int, FileRow] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            for r in self.conn.execute(f"SELECT {_FILE_COLUMNS} FROM files WHERE id IN ({marks})", part):
                out[r[0]] = _file_row(r)
        return out

    def replace_file(
        self,
        *,
        path: str,
        hash: str,
        size: int,
        mtime_ns: int,
        metadata: dict[str, Any],
        warning: str | None,
        page_starts: list[int],
        chunks: Sequence[NewChunk],
        title: str = "",
        meta_text: str = "",
        path_text: str = "",
    ) -> None:
        """Swap in a file's new chunks in one transaction: never a mix of old and new.

        `title`, `meta_text` (frontmatter values as words) and `path_text` (folder
        and file names as words) are keyword fields of every chunk of the file,
        stemmed like its text: in the index's language, or the file's own under `auto`.
        """
        language = self._file_language(chunks)
        stem = stemmer_for(language)
        with self.transaction() as conn:
            row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
            values = (hash, size, mtime_ns, _now(), json.dumps(metadata, ensure_ascii=False), "ok", warning,
                      json.dumps(page_starts) if page_starts else None, title, language)
            if row:
                file_id = row[0]
                conn.execute("DELETE FROM chunks WHERE file_id = ?", (file_id,))
                conn.execute(
                    "UPDATE files SET hash=?, size=?, mtime_ns=?, indexed_at=?, metadata=?, status=?, warning=?, page_starts=?,"
                    " title=?, language=? WHERE id=?",
                    (*values, file_id),
                )
            else:
                file_id = conn.execute(
                    "INSERT INTO files(path, hash, size, mtime_ns, indexed_at, metadata, status, warning, page_starts, title, language)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (path, *values),
                ).lastrowid
            fields = (stem(title), stem(meta_text), stem(path_text))
            conn.executemany(
                "INSERT INTO chunks(file_id, seq, text, heading_path, start_line, end_line, pages, embed_hash, vector,"
                " fts_heading, fts_text, fts_title, fts_meta, fts_path) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (file_id, seq, c.text, c.heading_path, c.start_line, c.end_line,
                     json.dumps(c.pages) if c.pages else None, c.embed_hash, c.vector, stem(c.heading_path), stem(c.text), *fields)
                    for seq, c in enumerate(chunks)
                ],
            )

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        """Record a new size/mtime for a file whose content did not change."""
        with self.transaction() as conn:
            conn.execute("UPDATE files SET size=?, mtime_ns=? WHERE path=?", (size, mtime_ns, path))

    def move_file(self, old: str, new: str, size: int, mtime_ns: int, *, title: str | None = None, path_text: str = "") -> None:
        """Rename a file in place: its chunks and vectors are kept; its title and folder-name fields follow the new name."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM files WHERE path = ?", (new,))
            conn.execute("UPDATE files SET path=?, size=?, mtime_ns=?, indexed_at=? WHERE path=?", (new, size, mtime_ns, _now(), old))
            row = conn.execute("SELECT id, title, language FROM files WHERE path = ?", (new,)).fetchone()
            if row is None:
                return
            title = row[1] if title is None else title
            language = row[2] or self.stemmer()  # a file indexed before schema 4 has none recorded
            stem = stemmer_for(NO_STEMMER if language == AUTO_STEMMER else language)
            conn.execute("UPDATE files SET title = ? WHERE id = ?", (title, row[0]))
            conn.execute("UPDATE chunks SET fts_title = ?, fts_path = ? WHERE file_id = ?", (stem(title), stem(path_text), row[0]))

    def remove_files(self, paths: Iterable[str]) -> None:
        for path in paths:
            with self.transaction() as conn:
                conn.execute("DELETE FROM files WHERE path = ?", (path,))

    # ------------------------------------------------------------ embedding cache

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for start in range(0, len(hashes), 500):
            part = list(hashes[start : start + 500])
            marks = ",".join("?" * len(part))
            for h, vector in self.conn.execute(
                f"SELECT hash, vector FROM embedding_cache WHERE model = ? AND hash IN ({marks})", (model, *part)
            ):
                found[h] = vector
        return found

    def cache_vectors(self, model: str, items: Sequence[tuple[str, bytes]]) -> None:
        with self.transaction() as conn:
            now = _now()
            conn.executemany(
                "INSERT OR IGNORE INTO embedding_cache(hash, model, vector, created_at) VALUES (?,?,?,?)",
                [(h, model, v, now) for h, v in items],
            )

    # ------------------------------------------------------------ extracted text (PDFs)
    # Extracting a PDF costs tens of milliseconds per page, so grep, get and ask
    # read the text of an unchanged PDF from here, keyed by the sha-256 of its bytes.

    def extracted_text(self, hash: str) -> tuple[str, list[int]] | None:
        """(text, page_starts) stored for a file content hash, or None."""
        row = self.conn.execute("SELECT text, page_starts FROM extracted_text WHERE hash = ?", (hash,)).fetchone()
        return (row[0], json.loads(row[1]) if row[1] else []) if row else None

    def save_extracted_text(self, hash: str, text: str, page_starts: Sequence[int]) -> None:
        """Remember the text extracted from the file content with this hash."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO extracted_text(hash, text, page_starts, created_at) VALUES (?,?,?,?)",
                (hash, text, json.dumps(list(page_starts)) if page_starts else None, _now()),
            )

    def prune_extracted_text(self) -> int:
        """Forget texts no indexed file has any more; returns how many went."""
        with self.transaction() as conn:
            return conn.execute("DELETE FROM extracted_text WHERE hash NOT IN (SELECT hash FROM files)").rowcount

    # ------------------------------------------------------------ reading for search

    def bm25(
        self,
        match: str,
        limit: int,
        *,
        also: Iterable[int] = (),
        file_ids: Iterable[int] | None = None,
    ) -> tuple[list[tuple[int, float]], dict[int, float]]:
        """The best `limit` chunks as (chunk id, BM25), best first, and the BM25 of those in `also` that match.

        Bigger is better. `file_ids` keeps only chunks of those files. The two
        steps (`score_matches`, `pick_matches`) can also be run apart, so that
        search does the vector half while FTS5 works.
        """
        self.score_matches(match)
        return self.pick_matches(limit, also=also, file_ids=file_ids)

    def score_matches(self, match: str, also: Sequence[tuple[str, float]] = ()) -> None:
        """Score every chunk that matches with BM25, into this connection's temporary table `matches`.

        FTS5 scores every match anyway (to sort them), so they are scored once and
        both answers are picked from the table, in SQLite: handing every match to
        Python cost more than the search (2 ms at 10k chunks, 18 ms at 100k). FTS5's
        bm25() is negative (smaller is better), so it is negated here, once. A
        `rowid IN (...)` filter would make FTS5 run the whole query once per rowid.
        `also`: further (MATCH expression, factor) pairs whose scores are added, scaled.
        """
        try:
            self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS matches (id INTEGER PRIMARY KEY, score REAL NOT NULL)")
            self.conn.execute("DELETE FROM temp.matches")
            self.conn.execute(
                f"INSERT INTO temp.matches SELECT rowid, -bm25(chunks_fts, {_bm25_weights()}) FROM chunks_fts WHERE chunks_fts MATCH ?",
                (match,),
            )
            for extra, factor in also:
                # Another expression (typo guesses) adds its BM25 at `factor` of its weight.
                self.conn.execute(
                    "INSERT INTO temp.matches SELECT rowid, ? * -bm25(chunks_fts, "
                    f"{_bm25_weights()}) FROM chunks_fts WHERE chunks_fts MATCH ? AND true"
                    " ON CONFLICT(id) DO UPDATE SET score = score + excluded.score",
                    (factor, extra),
                )
        except sqlite3.OperationalError as exc:
            raise BrainError(f"keyword search failed ({exc}); report this query as a bug") from None

    def terms_found(self, terms: list[str]) -> int:
        """How many of these FTS5 expressions (a quoted word or phrase, or its forms OR-joined) match at least one chunk."""
        found = 0
        try:
            for term in terms:
                found += self.conn.execute("SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT 1", (term,)).fetchone() is not None
        except sqlite3.OperationalError as exc:
            raise BrainError(f"keyword search failed ({exc}); report this query as a bug") from None
        return found

    def pick_matches(
        self, limit: int, *, also: Iterable[int] = (), file_ids: Iterable[int] | None = None
    ) -> tuple[list[tuple[int, float]], dict[int, float]]:
        """From the last `score_matches`: the best `limit` as (chunk id, BM25), and the BM25 of each of `also` that matched."""
        params = [limit, json.dumps([int(c) for c in also])]
        kept = ""
        if file_ids is not None:
            kept = ("WITH k AS MATERIALIZED (SELECT m.id, m.score FROM temp.matches AS m JOIN chunks ON chunks.id = m.id"
                    " WHERE chunks.file_id IN (SELECT value FROM json_each(?3))) ")
            params.append(json.dumps([int(f) for f in file_ids]))
        table = "k" if kept else "temp.matches"
        sql = (f"{kept}SELECT * FROM (SELECT id, score, 1 FROM {table} ORDER BY score DESC, id LIMIT ?1) "
               f"UNION ALL SELECT id, score, 0 FROM {table} WHERE id IN (SELECT value FROM json_each(?2))")
        rows = self.conn.execute(sql, params).fetchall()
        best = [(r[0], float(r[1])) for r in rows if r[2]]
        return best, {r[0]: float(r[1]) for r in rows if not r[2]}

    def searches_vectors(self) -> bool:
        """False: search scans this index's vectors in memory (PostgreSQL past its HNSW threshold answers itself)."""
        return False

    def maintain_indexes(self) -> bool:
        """Nothing to build: SQLite's indexes are made with its tables, its vectors scanned exactly (the store interface); False."""
        return False

    def vector_matrix(self, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(chunk ids, file ids, vectors) of every embedded chunk, by id; vectors as one float32 matrix.

        Read a few thousand rows at a time into the final arrays: holding every
        row's bytes at once, then joining them, took three times the matrix's size.
        """
        count = self.conn.execute("SELECT count(*) FROM chunks WHERE vector IS NOT NULL").fetchone()[0]
        ids = np.zeros(count, dtype=np.int64)
        file_ids = np.zeros(count, dtype=np.int64)
        matrix = np.zeros((count, dim), dtype=np.float32)
        cursor = self.conn.execute("SELECT id, file_id, vector FROM chunks WHERE vector IS NOT NULL ORDER BY id")
        done = 0
        while done < count:
            rows = cursor.fetchmany(4096)[: count - done]  # a writer between the two reads cannot overflow
            if not rows:
                break
            end = done + len(rows)
            ids[done:end] = [r[0] for r in rows]
            file_ids[done:end] = [r[1] for r in rows]
            matrix[done:end] = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), dim)
            done = end
        return ids[:done], file_ids[:done], matrix[:done]

    def keyword_fields(self, ids: Iterable[int]) -> dict[int, dict[str, str]]:
        """The stemmed keyword fields of these chunks (FIELDS → text), as FTS5 reads them."""
        ids = list(set(int(i) for i in ids))
        out: dict[int, dict[str, str]] = {}
        marks = ",".join("?" * len(ids))
        if ids:
            for r in self.conn.execute(f"SELECT id, {', '.join(FTS_COLUMNS)} FROM chunks WHERE id IN ({marks})", ids):
                out[r[0]] = dict(zip(FIELDS, r[1:]))
        return out

    def chunk_titles(self, ids: Sequence[int]) -> dict[int, str]:
        """The stemmed title field of these chunks (their file's title, as FTS5 reads it)."""
        out: dict[int, str] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            out.update(self.conn.execute(f"SELECT id, fts_title FROM chunks WHERE id IN ({marks})", part).fetchall())
        return out

    def count_matches(self, match: str, cap: int) -> int:
        """How many chunks match an FTS5 expression, counting no further than `cap` (a common word costs no more than a rare one)."""
        return int(self.conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)", (match, cap)).fetchone()[0])

    def vocabulary(self, first: str, min_length: int) -> list[tuple[str, int]]:
        """The index terms that begin with the character `first`, of at least `min_length` characters, with how many chunks hold each.

        fts5vocab seeks to a range of terms, so only that part of the index is read.
        """
        self._vocabulary_table()
        return [(r[0], int(r[1])) for r in self.conn.execute(
            "SELECT term, doc FROM temp.chunks_vocab WHERE term >= ? AND term < ? AND length(term) >= ?",
            (first, first + "\U0010ffff", min_length))]

    def _vocabulary_table(self) -> None:
        # A temporary fts5vocab table: nothing in the file changes, and a read-only index works too.
        self.conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunks_vocab USING fts5vocab(main, chunks_fts, row)")

    def texts_matching(self, match: str, limit: int) -> list[str]:
        """The raw text of up to `limit` chunks that match an FTS5 expression (to show a word as people write it)."""
        return [r[0] for r in self.conn.execute(
            "SELECT c.text FROM chunks_fts JOIN chunks AS c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ? LIMIT ?",
            (match, limit))]

    def copy_from(self, other: Path) -> None:
        """Make this database a copy of the one at `other`, in one write transaction (SQLite's backup API).

        Readers see all of the old contents or all of the new, and a connection
        kept open elsewhere (a server's) sees the new ones at its next read. On
        failure (a full disk) the transaction rolls back: nothing changed.
        Raises sqlite3.Error.
        """
        source = sqlite3.connect(str(other), isolation_level=None)
        try:
            source.backup(self.conn)
        finally:
            source.close()
        self.checkpoint()

    def page_size(self) -> int:
        """The page size of this database file, in bytes."""
        return int(self.conn.execute("PRAGMA page_size").fetchone()[0])

    def data_version(self) -> int:
        """Changes whenever another connection commits: tells a warm process to reload."""
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    def chunk_vectors(self, ids: Sequence[int]) -> dict[int, bytes]:
        out: dict[int, bytes] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            for cid, vector in self.conn.execute(f"SELECT id, vector FROM chunks WHERE id IN ({marks}) AND vector IS NOT NULL", part):
                out[cid] = vector
        return out

    def chunks_by_id(self, ids: Iterable[int]) -> dict[int, ChunkRow]:
        ids = list(set(int(i) for i in ids))
        out: dict[int, ChunkRow] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            for r in self.conn.execute(
                f"SELECT id, file_id, seq, text, heading_path, start_line, end_line, pages FROM chunks WHERE id IN ({marks})", part
            ):
                out[r[0]] = ChunkRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7]) if r[7] else [])
        return out

    def file_chunks(self, file_id: int) -> list[ChunkRow]:
        rows = self.conn.execute(
            "SELECT id, file_id, seq, text, heading_path, start_line, end_line, pages FROM chunks WHERE file_id=? ORDER BY seq",
            (file_id,),
        )
        return [ChunkRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7]) if r[7] else []) for r in rows]

    # ------------------------------------------------------------ stats

    def counts(self) -> dict[str, int]:
        one = lambda sql: self.conn.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "files": one("SELECT count(*) FROM files"),
            "chunks": one("SELECT count(*) FROM chunks"),
            "embedded_chunks": one("SELECT count(*) FROM chunks WHERE vector IS NOT NULL"),
            "cache_entries": one("SELECT count(*) FROM embedding_cache"),
        }

    def largest_files(self, limit: int = 5) -> list[tuple[str, int]]:
        return list(self.conn.execute(
            "SELECT f.path, count(c.id) AS n FROM files f JOIN chunks c ON c.file_id = f.id"
            " GROUP BY f.id ORDER BY n DESC, f.path LIMIT ?", (limit,)))

    def disk_bytes(self) -> int:
        """Bytes the index takes on disk: the file with its -wal and -shm (not the lock file)."""
        return sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*")
                   if p.is_file() and not p.name.endswith(".lock"))

    def checkpoint(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _bm25_weights() -> str:
    """FIELD_WEIGHTS as bm25()'s arguments, in column order (read per query, so tools/bench/field_weights.py can vary them)."""
    return ", ".join(repr(float(FIELD_WEIGHTS[f])) for f in FIELDS)


def _split_sql(script: str) -> list[str]:
    """Statements of a schema script; trigger bodies keep their inner semicolons."""
    statements: list[str] = []
    current: list[str] = []
    for line in script.strip().splitlines():
        current.append(line)
        text = "\n".join(current).strip()
        if sqlite3.complete_statement(text):
            statements.append(text)
            current = []
    return statements


# Locks this thread already holds, by lock file: a holder may re-enter (the git
# sync holds the lock while it reads HEAD and while the indexer writes).
_HELD = threading.local()


@contextlib.contextmanager
def writer_lock(
    db_path: Path, wait_seconds: float = 600.0, *, also: Callable[[float], contextlib.AbstractContextManager[Any]] | None = None
) -> Iterator[None]:
    """One writer at a time per database (hook, watcher, scheduler, CLI); readers never wait.

    Re-entrant within one thread; other threads and processes wait for it.
    `also(seconds left)`: a second lock the outermost holder takes inside this
    one (the server's, which writers on other machines share).
    """
    import fcntl

    lock_path = db_path.with_name(db_path.name + ".lock")
    held: dict[str, int] = _HELD.__dict__.setdefault("counts", {})
    key = os.path.abspath(lock_path)
    if held.get(key):
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    try:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        # The lock file may be all that `.brain/` holds (the index on a PostgreSQL server): it too stays out of git.
        Store._ignore_in_git(db_path.parent)
        handle = open(lock_path, "a+")
    except OSError as exc:
        raise BrainError(f"cannot write beside the index at {db_path} ({exc.strerror}); check the folder's permissions or set `database`") from None
    deadline = time.monotonic() + wait_seconds
    try:
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise BrainError(f"another brain process is writing {db_path} for over {wait_seconds:.0f}s; try again later") from None
                time.sleep(0.1)
        held[key] = 1
        try:
            with also(max(0.0, deadline - time.monotonic())) if also else contextlib.nullcontext():
                yield
        finally:
            held.pop(key, None)
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()


# ------------------------------------------------------------ choosing the store
# `store` (brain.toml or BRAIN_STORE) empty: the SQLite file at `database`; a
# postgresql:// URL: that server, one schema per notes folder. Every other room
# opens its index through these, so nothing above the store knows which one it has.


def store_location(settings: Any) -> str:
    """The `store` setting: '' for the SQLite file, else a PostgreSQL URL."""
    return str(settings.values.get("store") or "")


@contextlib.contextmanager
def server_writer_lock(settings: Any, wait_seconds: float) -> Iterator[None]:
    """The writer lock a PostgreSQL corpus keeps on its server, shared by every machine that writes it; nothing for SQLite.

    The lock file beside `database` guards one machine; clones on several
    machines write one corpus, and a hook's write landing in the live schema
    while another machine's full rebuild fills the new one would be lost at the
    swap. So every writer of a corpus also holds this one.
    """
    location = store_location(settings)
    if not location:
        yield
        return
    from .store_postgres import corpus_writer_lock

    with corpus_writer_lock(location, settings.root.name, wait_seconds):
        yield


def open_store(
    settings: Any, *, create: bool = True, readonly: bool = False, tokenizer: str | None = None, stemmer: str | None = None
) -> Any:
    """The index of these settings: a Store on the SQLite file, or a PostgresStore on the server `store` names."""
    location = store_location(settings)
    if location:
        from .store_postgres import PostgresStore

        store = PostgresStore(location, settings.root.name, create=create, readonly=readonly, tokenizer=tokenizer, stemmer=stemmer)
        if store.created and settings.database_path.exists():
            # A folder moving to the server: the vectors its SQLite index holds are not computed again.
            store.import_embedding_cache(settings.database_path)
        return store
    return Store(settings.database_path, create=create, readonly=readonly, tokenizer=tokenizer, stemmer=stemmer)


def hide_password(location: str) -> str:
    """A store URL as it may be shown (`config show`): a password in it (from BRAIN_STORE) replaced by ***."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(location)
    netloc = parts.netloc
    if parts.password:
        userinfo, _, host = netloc.rpartition("@")
        netloc = f"{userinfo.split(':', 1)[0]}:***@{host}"
    query = urlencode([(k, "***" if k == "password" else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)], safe="*/:")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def index_exists(settings: Any) -> bool:
    """True when the index of these settings has been made (the file exists, or the server holds the corpus)."""
    location = store_location(settings)
    if location:
        from .store_postgres import index_exists as on_server

        return on_server(location, settings.root.name)
    return settings.database_path.exists()


def index_name(settings: Any) -> str:
    """How reports name the index: the SQLite file's path, or the server and schema (never a password)."""
    location = store_location(settings)
    if location:
        from .store_postgres import schema_name, shown_location, split_location

        return f"{shown_location(location)}#{schema_name(split_location(location)[1] or settings.root.name)}"
    return str(settings.database_path)
