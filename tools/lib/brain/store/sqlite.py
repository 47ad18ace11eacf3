"""The index in one SQLite file (the default store): every SQL statement of it, its schema and migrations.

One file in WAL mode. `files` holds one row per indexed file (with its title and
the language its words were stemmed in), `chunks` its pieces with their vectors
and stemmed copies of their keyword fields (the file's title, frontmatter values
and folder names, the chunk's heading path and text), `chunks_fts` an FTS5 index
of those copies kept in sync by triggers, `pending_vectors` the text of chunks
written before their vector (keywords first, vectors after), `embedding_cache`
vectors by (sha-256 of embedded text, model), `extracted_text` PDF text by
content hash, and `meta` the model and chunking the vectors were made with.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from ..errors import BrainError, Interrupted
from .base import (
    CHUNK_COLUMNS,
    FIELD_WEIGHTS,
    FIELDS,
    FTS_TOKENIZER,
    FTS_TOKENIZERS,
    LINK_COLUMNS,
    LINKS_BEFORE,
    PDF_TEXT_BEFORE_LABELS,
    UNSTEMMED,
    ChunkRow,
    FileKeywords,
    FileRow,
    KeptText,
    MetaRecords,
    NewChunk,
    PendingVector,
    chunk_row,
    file_columns,
    file_row,
    in_batches,
    json_list,
    kept_text,
    link_row,
    link_values,
    timestamp,
)
from ..links import Link

# 2: extracted_text (PDF text by content hash); 3: stemmed copies of chunk text for FTS5;
# 4: keyword fields (title, frontmatter values, folder names) and each file's title and language;
# 5: pending_vectors (chunks written before their vector); 6: PDFs' page labels; 7: each note's links
SCHEMA_VERSION = 7
APPLICATION_ID = 0x6272616E  # "bran": marks the file as ours
FTS_COLUMNS = ("fts_title", "fts_meta", "fts_heading", "fts_path", "fts_text")

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
    language TEXT NOT NULL DEFAULT '',
    page_labels TEXT
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
    created_at TEXT NOT NULL,
    page_labels TEXT
);
CREATE TABLE IF NOT EXISTS pending_vectors (
    chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS links (
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    line INTEGER NOT NULL,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    heading TEXT NOT NULL DEFAULT '',
    alias TEXT NOT NULL DEFAULT '',
    plain INTEGER NOT NULL DEFAULT 0,
    key TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS links_file ON links(file_id);
CREATE INDEX IF NOT EXISTS links_key ON links(key);
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
    "__NEW__", ", ".join(f"new.{c}" for c in FTS_COLUMNS)).replace(
    "__OLD__", ", ".join(f"old.{c}" for c in FTS_COLUMNS))

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
# 6: each PDF's page labels beside its page starts, in the tables that keep those (an index with
# PDFs records PDF_TEXT_BEFORE_LABELS, so its next `brain index` extracts them again, with labels).
_LABELLED_TABLES = ("files", "extracted_text")
MIGRATED_FIELDS = "heading,body"  # what a migrated index's keyword fields hold until rebuilt


# SQLite result codes (the low byte of sqlite3.Error.sqlite_errorcode) that say the file
# itself is not a usable database. Every other failure (a full disk, no permission, a
# lock held too long) says nothing about the file: it must never be called damaged.
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26
# And those a reader gets when the disk has no room for the -wal and -shm files (_no_room_to_read).
_SQLITE_IOERR = 10
_SQLITE_FULL = 13
_SQLITE_CANTOPEN = 14


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


def _stat(path: Path) -> os.stat_result | None:
    """The file at `path` as a stat sees it, never an open; None when nothing is there."""
    try:
        return os.stat(path)
    except OSError:
        return None


def _file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`, None when nothing is there."""
    info = _stat(path)
    return None if info is None else (info.st_dev, info.st_ino)


class SqliteStore(MetaRecords):
    """One open index file (the `Index` of store/base.py)."""

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
        """Open (or create) the index at `path`; `tokenizer`, `stemmer` and `page_size` are used only when it
        is created."""
        self.path = path
        self._new_page_size = page_size
        self.tokenizer = tokenizer or FTS_TOKENIZER
        self._new_stemmer = stemmer or UNSTEMMED
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
                path.parent.mkdir(parents=True, exist_ok=True)  # the indexer made `.brain/` ignore itself first
        except OSError as exc:
            raise BrainError(
                f"cannot open the index at {path} ({exc.strerror}); "
                "check the folder's permissions or set `database`"
            ) from None
        # An index this process may read but not write (a read-only `.brain/`, someone else's copy) is
        # opened read-only, so searches go on: SQLite would otherwise fail at the first read, unable to
        # make the -shm file a WAL reader needs. Without one to read, nobody can be writing: immutable.
        if not create and not readonly and not _writable(path):
            readonly = True
        target, uri = (_readonly_uri(path), True) if readonly and not _writable(path) else (str(path), False)
        self.without_room = False  # opened immutable because the disk had no room for the -wal and -shm files
        self._opened_state: tuple[int, int] | None = None
        for attempt in range(3):
            before = _file_identity(path)
            try:
                try:
                    self._connect(target, uri, readonly)
                except sqlite3.Error as exc:
                    if create or uri or not _no_room_to_read(path, exc):
                        raise
                    with contextlib.suppress(Exception):
                        self.conn.close()
                    # A full disk: SQLite cannot make the -wal and -shm files a WAL reader needs. With no -wal
                    # left, every commit is in the database file itself and nobody can be writing (there is no
                    # room to), so reading it immutable answers from the whole old index.
                    readonly, target, uri, self.without_room = True, _immutable_uri(path), True, True
                    self._opened_state = _file_state(path)
                    self._connect(target, uri, readonly)
            except sqlite3.Error as exc:
                with contextlib.suppress(Exception):
                    self.conn.close()
                raise _open_failure(path, exc) from None
            # The file this connection reads, by device and inode: `replaced` compares the path with it.
            self.identity = _file_identity(path)
            if before is None or before == self.identity or attempt == 2:
                break
            self.conn.close()  # replaced while opening: open the file that is there now

    def _connect(self, target: str, uri: bool, readonly: bool) -> None:
        self.conn = sqlite3.connect(target, timeout=30.0, isolation_level=None, check_same_thread=False, uri=uri)
        self.conn.execute("PRAGMA busy_timeout = 30000")
        self._prepare(readonly)

    def replaced(self) -> bool:
        """True when the path no longer names the file this connection reads (deleted, or another file put there).

        A long-lived reader (a server) checks this before each request and reopens:
        SQLite itself keeps reading the old file, from its own descriptors, for good.
        A connection opened immutable on a full disk counts as replaced as soon as the disk has room again, a
        -wal file is back or the file changed: it takes no lock and would not see a writer's commits.
        """
        if self.without_room and (_has_room(self.path) or _companion(self.path, "-wal").exists()
                                  or _file_state(self.path) != self._opened_state):
            return True
        return _file_identity(self.path) != self.identity

    def _prepare(self, readonly: bool) -> None:
        conn = self.conn
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables):
            raise BrainError(
                f"{self.path} is an SQLite database of another program; "
                "set `database` in brain.toml to another path"
            )
        if version > SCHEMA_VERSION:
            raise BrainError(
                f"{self.path} was written by a newer brain (schema {version}, this one reads {SCHEMA_VERSION}); "
                "upgrade brain-search"
            )
        conn.execute("PRAGMA foreign_keys = ON")
        # An older file opened read-only keeps its schema: what it lacks is read as empty.
        self._labelled = version >= 6 or not tables
        self._linked = version >= 7 or not tables
        self._file_columns = file_columns(self._labelled)
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
                stemmer = UNSTEMMED if upgrading and version < 3 else self._new_stemmer
                if upgrading and version < 3:
                    for statement in _split_sql(_MIGRATE_TO_3):
                        conn.execute(statement)
                if upgrading and version < 4:
                    for statement in _split_sql(_MIGRATE_TO_4):
                        conn.execute(statement)
                for table in _LABELLED_TABLES if upgrading and version < 6 else ():
                    columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
                    if columns and "page_labels" not in columns:  # no columns: a table made below, whole
                        conn.execute(f"ALTER TABLE {table} ADD COLUMN page_labels TEXT")
                if upgrading and version < 6:
                    conn.execute("INSERT OR REPLACE INTO meta(key, value) SELECT 'pdf_text', ? WHERE EXISTS"
                                 " (SELECT 1 FROM files WHERE lower(path) LIKE '%.pdf')", (PDF_TEXT_BEFORE_LABELS,))
                if upgrading and version < 7:  # its notes' links were never read: the next index reads them
                    conn.execute("INSERT OR REPLACE INTO meta(key, value) SELECT 'links', ? WHERE EXISTS"
                                 " (SELECT 1 FROM files)", (LINKS_BEFORE,))
                # Then every table the schema has and this file lacks (5: pending_vectors).
                for statement in _split_sql(_SCHEMA.replace("__FTS__", _FTS).replace("__TOKENIZER__", tokenizer)):
                    conn.execute(statement)
                if upgrading and version < 4:
                    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
                    conn.execute(
                        "INSERT OR REPLACE INTO meta(key, value) VALUES ('keyword_fields', ?)", (MIGRATED_FIELDS,)
                    )
                conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('stemmer', ?)", (stemmer,))
                # What the FTS table really uses: an older index keeps its own tokenizer until rebuilt.
                conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('fts_tokenizer', ?)", (self.fts_tokenizer(),)
                )
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._labelled, self._linked, self._file_columns = True, True, file_columns(True)

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
        """Every read inside sees one snapshot of the index: a rebuild swapped in meanwhile is seen after,
        never halfway.

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
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('git_synced_at', ?)", (timestamp(),))

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
        return {r[1]: file_row(r) for r in self.conn.execute(f"SELECT {self._file_columns} FROM files")}

    def get_file(self, path: str) -> FileRow | None:
        row = self.conn.execute(f"SELECT {self._file_columns} FROM files WHERE path = ?", (path,)).fetchone()
        return file_row(row) if row else None

    def _rows_of(self, sql: str, keys: Iterable[Any], *before: Any) -> Iterator[Any]:
        """The rows of `sql` for these keys, 500 at a time: its `IN (?)` takes a batch, `before` fills the
        marks ahead of it."""
        for part in in_batches(keys):
            yield from self.conn.execute(sql.replace("IN (?)", f"IN ({','.join('?' * len(part))})"), (*before, *part))

    def files_by_id(self, ids: Iterable[int]) -> dict[int, FileRow]:
        return {
            r[0]: file_row(r)
            for r in self._rows_of(f"SELECT {self._file_columns} FROM files WHERE id IN (?)", map(int, ids))
        }

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
        language: str = "",
        keywords: FileKeywords = FileKeywords(),
        page_labels: Sequence[str] = (),
        links: Sequence[Link] = (),
    ) -> None:
        """Swap in a file's new chunks (and links) in one transaction: never a mix of old and new.

        `keywords` (its title, frontmatter values and path as words, stemmed) are
        keyword fields of every chunk of the file; `language` is what they and the
        chunks' keyword copies were stemmed in. `meta_text` is kept by PostgreSQL only.
        A chunk with `pending_text` is written without its vector, which waits in
        pending_vectors (keywords first: the file is searchable by its words now).
        """
        del meta_text  # SQLite keeps the stemmed copy in every chunk (keywords.meta)
        with self.transaction() as conn:
            row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
            values = (hash, size, mtime_ns, timestamp(), json.dumps(metadata, ensure_ascii=False), "ok", warning,
                      json_list(page_starts), title, language, json_list(page_labels))
            if row:
                file_id = row[0]
                conn.execute("DELETE FROM chunks WHERE file_id = ?", (file_id,))
                conn.execute("DELETE FROM links WHERE file_id = ?", (file_id,))
                conn.execute(
                    "UPDATE files SET hash=?, size=?, mtime_ns=?, indexed_at=?, metadata=?, status=?, warning=?, page_starts=?,"  # noqa: E501
                    " title=?, language=?, page_labels=? WHERE id=?",
                    (*values, file_id),
                )
            else:
                file_id = conn.execute(
                    "INSERT INTO files(path, hash, size, mtime_ns, indexed_at, metadata, status, warning, page_starts, title, language,"  # noqa: E501
                    " page_labels) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (path, *values),
                ).lastrowid
            fields = (keywords.title, keywords.meta, keywords.path)
            for seq, c in enumerate(chunks):
                chunk_id = conn.execute(
                    "INSERT INTO chunks(file_id, seq, text, heading_path, start_line, end_line, pages, embed_hash, vector,"  # noqa: E501
                    " fts_heading, fts_text, fts_title, fts_meta, fts_path) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (file_id, seq, c.text, c.heading_path, c.start_line, c.end_line,
                     json.dumps(c.pages) if c.pages else None, c.embed_hash, c.vector, *c.keyword_copies, *fields),
                ).lastrowid
                if c.vector is None and c.pending_text is not None:
                    conn.execute(
                        "INSERT INTO pending_vectors(chunk_id, text) VALUES (?, ?)", (chunk_id, c.pending_text)
                    )
            conn.executemany(f"INSERT INTO links({LINK_COLUMNS}, key) VALUES (?,?,?,?,?,?,?,?)",
                             link_values(file_id, links))

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        """Record a new size/mtime for a file whose content did not change."""
        with self.transaction() as conn:
            conn.execute("UPDATE files SET size=?, mtime_ns=? WHERE path=?", (size, mtime_ns, path))

    def move_file(self, old: str, new: str, size: int, mtime_ns: int, *, title: str, keywords: FileKeywords) -> None:
        """Rename a file in place: its chunks and vectors are kept; its title and path fields become `keywords`'."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM files WHERE path = ?", (new,))
            conn.execute("UPDATE files SET path=?, size=?, mtime_ns=?, indexed_at=?, title=? WHERE path=?",
                         (new, size, mtime_ns, timestamp(), title, old))
            conn.execute(
                "UPDATE chunks SET fts_title = ?, fts_path = ? WHERE file_id = (SELECT id FROM files WHERE path = ?)",
                (keywords.title, keywords.path, new),
            )

    def remove_files(self, paths: Iterable[str]) -> None:
        for path in paths:
            with self.transaction() as conn:
                conn.execute("DELETE FROM files WHERE path = ?", (path,))

    # ------------------------------------------------------------ embedding cache

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        """The cached vectors of these embedded-text hashes for `model` (a hash not cached is left out)."""
        return dict(self._rows_of(
            "SELECT hash, vector FROM embedding_cache WHERE model = ? AND hash IN (?)", hashes, model
        ))

    def cache_vectors(self, model: str, items: Sequence[tuple[str, bytes]]) -> None:
        with self.transaction() as conn:
            now = timestamp()
            conn.executemany(
                "INSERT OR IGNORE INTO embedding_cache(hash, model, vector, created_at) VALUES (?,?,?,?)",
                [(h, model, v, now) for h, v in items],
            )

    # ------------------------------------------------------------ chunks waiting for their vector

    def pending_vectors(self, limit: int) -> list[PendingVector]:
        """Up to `limit` chunks written without their vector, in the order they were written."""
        return [PendingVector(r[0], r[1], r[2]) for r in self.conn.execute(
            "SELECT p.chunk_id, c.embed_hash, p.text FROM pending_vectors AS p JOIN chunks AS c ON c.id = p.chunk_id"
            " ORDER BY p.chunk_id LIMIT ?", (limit,))]

    def set_vectors(self, items: Sequence[tuple[int, str, bytes]]) -> int:
        """Give chunks their vectors, (chunk id, embed hash, float32 bytes) each, in one transaction; returns
        how many took one.

        A chunk rewritten meanwhile (another embed hash, or gone) is left alone:
        its new row has a pending vector of its own.
        """
        done = 0
        with self.transaction() as conn:
            for chunk_id, embed_hash, vector in items:
                done += conn.execute("UPDATE chunks SET vector = ? WHERE id = ? AND embed_hash = ?",
                                     (vector, chunk_id, embed_hash)).rowcount
                conn.execute("DELETE FROM pending_vectors WHERE chunk_id = ?", (chunk_id,))
        return done

    def pending_count(self) -> int:
        """How many chunks wait for their vector."""
        return int(self.conn.execute("SELECT count(*) FROM pending_vectors").fetchone()[0])

    def pending_among(self, ids: Sequence[int]) -> set[int]:
        """Which of these chunks wait for their vector."""
        return {
            r[0] for r in self._rows_of("SELECT chunk_id FROM pending_vectors WHERE chunk_id IN (?)", map(int, ids))
        }

    # ------------------------------------------------------------ extracted text (PDFs)
    # Extracting a PDF costs tens of milliseconds per page, so grep, get and ask
    # read the text of an unchanged PDF from here, keyed by the sha-256 of its bytes.

    def extracted_text(self, hash: str) -> KeptText | None:
        """The text, page starts and page labels stored for a file content hash, or None."""
        return kept_text(self.conn.execute(
            f"SELECT text, page_starts, {'page_labels' if self._labelled else 'NULL'} FROM extracted_text"
            " WHERE hash = ?", (hash,)).fetchone())

    def save_extracted_text(
        self, hash: str, text: str, page_starts: Sequence[int], page_labels: Sequence[str] = ()
    ) -> None:
        """Remember the text extracted from the file content with this hash."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO extracted_text(hash, text, page_starts, created_at, page_labels)"
                " VALUES (?,?,?,?,?)",
                (hash, text, json_list(page_starts), timestamp(), json_list(page_labels)),
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
                f"INSERT INTO temp.matches SELECT rowid, -bm25(chunks_fts, {_bm25_weights()}) FROM chunks_fts WHERE chunks_fts MATCH ?",  # noqa: E501
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
        """How many of these FTS5 expressions (a quoted word or phrase, or its forms OR-joined) match at least
        one chunk."""
        found = 0
        try:
            for term in terms:
                found += self.conn.execute(
                    "SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT 1", (term,)
                ).fetchone() is not None
        except sqlite3.OperationalError as exc:
            raise BrainError(f"keyword search failed ({exc}); report this query as a bug") from None
        return found

    def pick_matches(
        self, limit: int, *, also: Iterable[int] = (), file_ids: Iterable[int] | None = None
    ) -> tuple[list[tuple[int, float]], dict[int, float]]:
        """From the last `score_matches`: the best `limit` as (chunk id, BM25), and the BM25 of each of `also`
        that matched."""
        params = [limit, json.dumps([int(c) for c in also])]
        kept = ""
        if file_ids is not None:
            kept = ("WITH k AS MATERIALIZED (SELECT m.id, m.score FROM temp.matches AS m JOIN chunks ON chunks.id = m.id"  # noqa: E501
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
        """Nothing to build: SQLite's indexes are made with its tables, its vectors scanned exactly (the store
        interface); False."""
        return False

    def nearest_vectors(
        self, query: np.ndarray, limit: int, *, file_ids: Iterable[int] | None = None, exact: bool = False
    ) -> list[tuple[int, float]]:
        """The `limit` chunks nearest `query` as (chunk id, cosine), best first: an exact scan of every vector.

        Search holds the matrix itself on SQLite (searches_vectors is False); this is the interface's
        one-off form, for callers that keep no matrix.
        """
        import numpy as np

        ids, files, matrix = self.vector_matrix(len(query))
        sims = matrix @ np.asarray(query, dtype=np.float32)
        if file_ids is not None:
            sims = np.where(np.isin(files, np.fromiter((int(f) for f in file_ids), dtype=np.int64)), sims, -np.inf)
        order = [int(i) for i in np.lexsort((ids, -sims))[:limit] if np.isfinite(sims[i])]
        return [(int(ids[i]), float(sims[i])) for i in order]

    def cosines(self, query: np.ndarray, ids: Sequence[int]) -> dict[int, float]:
        """The exact cosine of each of these chunks with `query` (a chunk without a vector has none)."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32)
        return {
            cid: float(np.frombuffer(vector, dtype=np.float32) @ q) for cid, vector in self.chunk_vectors(ids).items()
        }

    def vector_matrix(self, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(chunk ids, file ids, vectors) of every embedded chunk, by id; vectors as one float32 matrix.

        Read a few thousand rows at a time into the final arrays: holding every
        row's bytes at once, then joining them, took three times the matrix's size.
        """
        import numpy as np

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
        sql = f"SELECT id, {', '.join(FTS_COLUMNS)} FROM chunks WHERE id IN (?)"
        return {r[0]: dict(zip(FIELDS, r[1:])) for r in self._rows_of(sql, map(int, ids))}

    def chunk_titles(self, ids: Sequence[int]) -> dict[int, str]:
        """The stemmed title field of these chunks (their file's title, as FTS5 reads it)."""
        return dict(self._rows_of("SELECT id, fts_title FROM chunks WHERE id IN (?)", map(int, ids)))

    def count_matches(self, match: str, cap: int) -> int:
        """How many chunks match an FTS5 expression, counting no further than `cap` (a common word costs no
        more than a rare one)."""
        return int(self.conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)", (match, cap)
        ).fetchone()[0])

    def vocabulary(self, first: str, min_length: int) -> list[tuple[str, int]]:
        """The index terms that begin with the character `first`, of at least `min_length` characters, with
        how many chunks hold each.

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
            "SELECT c.text FROM chunks_fts JOIN chunks AS c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ? LIMIT ?",  # noqa: E501
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
        """The vectors of these chunks, as float32 bytes (a chunk without one is left out)."""
        return dict(self._rows_of(
            "SELECT id, vector FROM chunks WHERE id IN (?) AND vector IS NOT NULL", map(int, ids)
        ))

    def chunks_by_id(self, ids: Iterable[int]) -> dict[int, ChunkRow]:
        """These chunks' rows, without their vectors (an id no chunk has is left out)."""
        return {
            r[0]: chunk_row(r)
            for r in self._rows_of(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE id IN (?)", map(int, ids))
        }

    def file_chunks(self, file_id: int) -> list[ChunkRow]:
        """A file's chunks in order."""
        return [
            chunk_row(r)
            for r in self.conn.execute(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE file_id=? ORDER BY seq", (file_id,))
        ]

    # ------------------------------------------------------------ links

    def file_links(self, file_id: int) -> list[Link]:
        """A file's outgoing links as written, in the order they appear."""
        return [link for _, link in self._links("WHERE file_id = ? ORDER BY rowid", (file_id,))]

    def links_named(self, keys: Sequence[str]) -> list[tuple[int, Link]]:
        """(file id, link) of every link whose target ends with one of these names (links.name_key)."""
        found: list[tuple[int, Link]] = []
        for batch in in_batches(dict.fromkeys(keys)):
            found += self._links(f"WHERE key IN ({','.join('?' * len(batch))}) ORDER BY file_id, rowid", batch)
        return found

    def all_links(self) -> list[tuple[int, Link]]:
        return self._links("ORDER BY file_id, rowid", ())

    def _links(self, where: str, args: Sequence[Any]) -> list[tuple[int, Link]]:
        if not self._linked:  # an older index opened read-only: no links kept yet
            return []
        return [link_row(r) for r in self.conn.execute(f"SELECT {LINK_COLUMNS} FROM links {where}", tuple(args))]

    # ------------------------------------------------------------ stats

    def counts(self) -> dict[str, int]:
        one = lambda sql: self.conn.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "files": one("SELECT count(*) FROM files"),
            "chunks": one("SELECT count(*) FROM chunks"),
            "embedded_chunks": one("SELECT count(*) FROM chunks WHERE vector IS NOT NULL"),
            "cache_entries": one("SELECT count(*) FROM embedding_cache"),
            "pending_vectors": one("SELECT count(*) FROM pending_vectors"),
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
        """Fold the write-ahead log into the file (a rebuild's new index is copied whole afterwards)."""
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def remove_rebuild_leftovers(self) -> list[str]:
        """Delete what a killed or failed rebuild left beside this index; call it under the writer lock.
        Returns what went."""
        return remove_rebuild_files(self.path)


def _bm25_weights() -> str:
    """FIELD_WEIGHTS as bm25()'s arguments, in column order (read per query, so tools/bench/field_weights.py
    can vary them)."""
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




# ------------------------------------------------------------ full rebuild: a new file, copied in whole


def rebuild_path(db_path: Path) -> Path:
    """Where a full rebuild writes its new database, beside the live one."""
    return db_path.with_name(db_path.name + ".rebuild")


def _writable(path: Path) -> bool:
    """True when this process may write the index and make its -wal and -shm files beside it."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _companion(path: Path, suffix: str) -> Path:
    """The file SQLite keeps beside the index: its "-wal" or "-shm"."""
    return path.with_name(path.name + suffix)


def _no_room_to_read(path: Path, exc: sqlite3.Error) -> bool:
    """Whether opening `path` to read failed for want of disk space while no -wal file holds commits of its own:
    a full disk (SQLITE_FULL, or SQLITE_IOERR / SQLITE_CANTOPEN making the -wal or -shm file) and no free block."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None or code & 0xFF not in (_SQLITE_IOERR, _SQLITE_FULL, _SQLITE_CANTOPEN):
        return False
    try:
        wal_size = os.stat(_companion(path, "-wal")).st_size
    except (FileNotFoundError, NotADirectoryError):
        wal_size = 0
    except OSError:
        return False  # cannot tell whether a -wal holds commits: never read the file without it
    return wal_size == 0 and not _has_room(path)


def _has_room(path: Path) -> bool:
    """Whether the disk holding `path` has _ROOM_TO_READ free (True when that cannot be told)."""
    try:
        stats = os.statvfs(path.parent)
    except OSError:
        return True
    return stats.f_bavail * stats.f_frsize >= _ROOM_TO_READ


def _file_state(path: Path) -> tuple[int, int] | None:
    """(size, modification time) of the file at `path`: what a write to it changes."""
    info = _stat(path)
    return None if info is None else (info.st_size, info.st_mtime_ns)


_ROOM_TO_READ = 1 << 20  # free bytes under which a failed open is the disk's lack of room (a -shm takes 32 KiB)


def _immutable_uri(path: Path) -> str:
    """An SQLite URI that reads `path` as it is on disk, making no -wal or -shm file and taking no lock."""
    from urllib.parse import quote

    return f"file:{quote(str(path.resolve()))}?mode=ro&immutable=1"


def _readonly_uri(path: Path) -> str:
    """An SQLite URI that reads `path` without writing anything: immutable when there is no -shm to share."""
    from urllib.parse import quote

    if not _companion(path, "-shm").exists():
        return _immutable_uri(path)
    return f"file:{quote(str(path.resolve()))}?mode=ro"


def remove_rebuild_files(db_path: Path) -> list[str]:
    """Delete what a rebuild left beside the index (its database, -wal, -shm); call it under the writer lock.

    Nothing but a rebuild holding the writer lock ever opens these files, so
    under the lock they are leftovers (of a failed or killed rebuild) that
    would otherwise keep a full disk full. Returns the names removed.
    """
    fresh = rebuild_path(db_path)
    removed = []
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(str(fresh) + suffix)
            removed.append(fresh.name + suffix)
    return removed


def _reason(exc: BaseException) -> str:
    """A failure of SQLite or the OS in plain words ("the disk is full" first: it is the usual one)."""
    text = str(getattr(exc, "strerror", None) or exc)
    if "full" in text.lower() or getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return "the disk is full"
    return text


def _retry(exc: BaseException) -> str:
    """What to do after a failed rebuild: free space first when the disk was full."""
    if _reason(exc) == "the disk is full":
        return "free disk space (a rebuild needs about twice the index's size) and run `brain index --full` again"
    return "run `brain index --full` again"


def _interrupted_rebuild(db_path: Path, had_index: bool, stamp: str) -> str:
    """What is true after Ctrl-C stopped a rebuild: whether the new index made it in, else that the old one stands."""
    swapped = False
    if db_path.exists():
        with contextlib.suppress(Exception):  # unreadable now: it was not swapped in by this rebuild
            live = SqliteStore(db_path, create=False, readonly=True)
            try:
                swapped = live.get_meta("last_rebuild") == stamp
            finally:
                live.close()
    if swapped:
        return f"interrupted after the rebuilt index was swapped in; the index at {db_path} is the new, complete one"
    if not had_index:
        return (
            "interrupted; the rebuild stopped before it wrote an index and its partial file was removed; "
            "run `brain index`"
        )
    return (f"interrupted; the rebuild stopped and its partial file was removed; the old index at {db_path} is kept "
            "as it was and is still served; run `brain index --full` again to rebuild")


def _live_page_size(db_path: Path) -> int | None:
    if not db_path.exists():
        return None
    live = SqliteStore(db_path, create=False, readonly=True)  # a foreign or damaged file stops the rebuild here
    try:
        return live.page_size()
    finally:
        live.close()


@contextlib.contextmanager
def rebuilding(db_path: Path, *, tokenizer: str, stemmer: str) -> Iterator[SqliteStore]:
    """A new, empty index beside the one at `db_path`; when the block ends without error it replaces the live one.

    The new file takes the live one's page size (the final copy needs equal
    sizes) and its cached vectors (a rebuild re-embeds nothing it knows). On any
    failure, Ctrl-C included, the partial file is removed at once and the old
    index stays exactly as it was; the error says so in one line.
    """
    fresh_path = rebuild_path(db_path)
    remove_rebuild_files(db_path)
    had_index = db_path.exists()
    stamp = timestamp()
    try:
        fresh = SqliteStore(fresh_path, tokenizer=tokenizer, stemmer=stemmer, page_size=_live_page_size(db_path))
        try:
            if had_index:
                fresh.import_embedding_cache(db_path)
            yield fresh
            fresh.set_meta({"last_rebuild": stamp})
            fresh.checkpoint()
        finally:
            fresh.close()
        _swap_in(fresh_path, db_path)
    except (sqlite3.Error, OSError) as exc:
        remove_rebuild_files(db_path)
        raise BrainError(
            f"the rebuild could not finish ({_reason(exc)}); the old index at {db_path} is kept as it was and the "
            f"partial new one removed; {_retry(exc)}"
        ) from None
    except KeyboardInterrupt:
        remove_rebuild_files(db_path)  # at once: a partial rebuild is of no use to anyone
        raise Interrupted(_interrupted_rebuild(db_path, had_index, stamp)) from None
    except BaseException:
        # Left behind, a partial rebuild would keep a full disk full until the next one.
        remove_rebuild_files(db_path)
        raise


def _swap_in(fresh_path: Path, db_path: Path) -> None:
    """Make the fresh database the live one, atomically for every reader.

    The pages are copied into the live file in one write transaction (SQLite's
    backup API): a reader sees the old index or the new one, never a mix, and a
    process that keeps the file open (a server) sees the new index on its next
    query. When the copy fails (a full disk) the old index stays as it was and
    the rebuild fails saying so: renaming the new file over the old one instead
    would leave a server reading the deleted old file, and pair the new file
    with the old one's -wal/-shm. Only a missing index is made by renaming.
    """
    if db_path.exists():
        live = SqliteStore(db_path)  # a foreign or damaged file stops the rebuild here, untouched
        try:
            live.copy_from(fresh_path)
        except sqlite3.Error as exc:
            raise BrainError(
                f"the rebuilt index could not be copied into {db_path} ({_reason(exc)}); the old index is kept "
                f"as it was and the new one removed; {_retry(exc)}"
            ) from None
        finally:
            live.close()
        remove_rebuild_files(db_path)
        return
    # No live index: a -wal or -shm left beside its path (the index deleted by hand) would be
    # read as part of the new file. Only the rebuild, under the writer lock, creates it now.
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(str(db_path) + suffix)
    os.replace(fresh_path, db_path)
    remove_rebuild_files(db_path)
