"""One corpus's index in a schema of a PostgreSQL server with pgvector: the `Index` of store/base.py, for a team.

One schema per corpus (connection.schema_name) holds the same tables as the
SQLite file: `files`, `chunks` (with a pgvector `vector` column and a weighted
`tsvector` of the keyword fields), `embedding_cache`, `extracted_text`,
`pending_vectors`, `meta`; `postings` (each word of each chunk with its count
per field class: what bm25() is summed from), `lexicon` (how many chunks hold
each word, kept by triggers on postings: where a typo's near words are found)
and `state` (schema version, and a counter every write bumps so warm readers
know to reload). Keyword tokens are FTS5's own (tokens.py), and the ranking is
FTS5's bm25() with the field weights, summed from the postings the server reads
(bm25.py): a keyword score means the same number on both stores. PostgreSQL's
ts_rank has no inverse document frequency.

Every value goes to the server as a parameter; the only text spliced into SQL
is the schema name, made of [a-z0-9_] and quoted as an identifier.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import BrainError, Interrupted, Unavailable
from ..base import (
    CHUNK_COLUMNS,
    FIELDS,
    KeptText,
    LINK_COLUMNS,
    FTS_TOKENIZER,
    FTS_TOKENIZERS,
    UNSTEMMED,
    ChunkRow,
    FileKeywords,
    FileRow,
    MetaRecords,
    NewChunk,
    PendingVector,
    chunk_row,
    file_columns,
    file_row,
    json_list,
    kept_text,
    link_row,
    link_values,
    timestamp,
)
from ...links import Link
from .bm25 import BM25_B, BM25_K1, bm25_scores, class_weights, sum_by_chunk
from .connection import (
    REBUILD_SUFFIX,
    legacy_schema_name,
    pool_for,
    psycopg_module,
    release_advisory,
    schema_name,
    shown_location,
    split_location,
    take_connection,
)
from .schema import (
    DELETE_FILE_POSTINGS,
    HNSW_BUILD_MEMORY,
    HNSW_EF_CONSTRUCTION,
    HNSW_INDEX,
    HNSW_M,
    HNSW_THRESHOLD,
    LEXICON,
    MIGRATIONS,
    SCHEMA_VERSION,
    SPARE_CONNECTION_WAIT,
    TABLES,
    hnsw_ef_search,
)
from .tokens import keyword_vector, query_phrases, tsquery_literal, tsquery_of

# Meta keys each query reads several times (how to stem it, which languages): kept this long
# per store. They change only when an index is built or rebuilt, which a query a second
# later sees; this process's own writes clear them at once.
_QUERY_META = frozenset({"stemmer", "fts_tokenizer", "languages", "model"})
META_SECONDS = 1.0


def _vector_text(vector: bytes | None) -> str | None:
    """float32 bytes as pgvector's text input; exact (repr of a float32 widened to float64 reads back the same
    float32)."""
    if vector is None:
        return None
    return "[" + ",".join(map(repr, np.frombuffer(vector, dtype=np.float32).tolist())) + "]"


def _vector_bytes(binary: bytes) -> bytes:
    """pgvector's binary form (int16 dim, int16 unused, big-endian float32s) as float32 bytes in this machine's
    order."""
    return np.frombuffer(binary, dtype=">f4", offset=4).astype(np.float32).tobytes()


class PostgresStore(MetaRecords):
    """One corpus's index in a PostgreSQL database (a schema of its own); the interface of store.Store."""

    supported_schema = SCHEMA_VERSION  # the schema this brain reads and writes (numbered apart from SQLite's)

    def __init__(
        self,
        location: str,
        corpus: str,
        *,
        create: bool = True,
        readonly: bool = False,
        tokenizer: str | None = None,
        stemmer: str | None = None,
        schema: str | None = None,
    ) -> None:
        """Connect to the server named by `location` and open (or create) the schema of `corpus`.

        `tokenizer` and `stemmer` are used only when the schema is created;
        `schema` names another schema than the corpus's own (a rebuild's).
        """
        conninfo, named = split_location(location)
        self.location = location
        self.shown = shown_location(location)
        self.corpus = named or corpus
        self.schema = schema or schema_name(self.corpus)
        self.path = f"{self.shown}#{self.schema}"  # what reports name as the database
        self.tokenizer = tokenizer or FTS_TOKENIZER
        self._new_stemmer = stemmer or UNSTEMMED
        if self.tokenizer not in FTS_TOKENIZERS:
            raise BrainError(f"unknown FTS tokenizer {self.tokenizer!r}; use one of: {'; '.join(FTS_TOKENIZERS)}")
        self._psycopg = psycopg_module()
        self._pool = pool_for(conninfo, self.shown)
        self.conn, self._pooled = take_connection(self._pool, conninfo, self.shown)
        self._q = '"' + self.schema + '"'
        self._matches: tuple[np.ndarray, np.ndarray, np.ndarray] = (np.zeros(0, np.int64),) * 2 + (np.zeros(0),)
        self._totals_at: tuple[int, int, float] | None = None
        # (data version, whether the server searches the vectors, chunks)
        self._hnsw_at: tuple[int, bool, int] | None = None
        self._ops: tuple[str, int] | None = None
        self._vector_conn: Any = None  # the vector half's connection (nearest_vectors), taken at its first use
        self._vector_pooled = False
        self._meta_cache: dict[str, tuple[float, str | None]] = {}
        self._snapshot: str | None = None  # the snapshot `reading` holds, for the vector half's connection
        self._pending_table = True
        self.created = False  # True when this open made the corpus's schema
        try:
            self._prepare(create, readonly)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ plumbing

    def _sql(self, text: str) -> str:
        """A statement with `@.` naming this corpus's schema (a quoted identifier of [a-z0-9_], never user text)."""
        return text.replace("@.", self._q + ".")

    def _execute(self, text: str, params: Sequence[Any] | None = None) -> Any:
        try:
            return self.conn.execute(self._sql(text), params)
        except self._psycopg.OperationalError as exc:
            raise self._server_failed(exc) from None

    def _server_failed(self, exc: Exception) -> Unavailable:
        """The one line for a server that failed mid-statement (a restart, a stop): HTTP answers it 503."""
        return Unavailable(f"PostgreSQL at {self.shown} is not answering ({' '.join(str(exc).split())[:200]}); "
                           "start it or wait for it, then try again")

    def _exists(self) -> bool:
        return self.conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)).fetchone() is not None

    def _prepare(self, create: bool, readonly: bool) -> None:
        if not self._exists() or self._version() is None:
            if not create or readonly:
                raise BrainError(f"no index for corpus {self.corpus!r} at {self.shown} (schema {self.schema}); "
                                 "run `brain index` first")
            self._create()
            self.created = True
            self._import_legacy_cache()
        self._check_owner(readonly)
        version = self._version() or 0
        if version > SCHEMA_VERSION:
            raise BrainError(f"{self.path} was written by a newer brain (schema {version}, this one reads "
                             f"{SCHEMA_VERSION}); upgrade brain-search")
        if version < SCHEMA_VERSION and not readonly:
            self._migrate()
            version = SCHEMA_VERSION
        self._pending_table = version >= 7  # a schema-6 corpus opened read-only has none (its next writer adds it)
        self._labelled = version >= 8  # nor page labels before 8: read as empty
        self._file_columns = file_columns(self._labelled)

    def _check_owner(self, readonly: bool) -> None:
        """Refuse a schema that records another corpus's name; claim one made before names were recorded."""
        row = self._execute("SELECT value FROM @.meta WHERE key = 'corpus'").fetchone()
        if row is None:
            if not readonly:  # made by an older brain for this name's schema: this corpus's from now on
                self._execute("INSERT INTO @.meta(key, value) VALUES ('corpus', %s) ON CONFLICT (key) DO NOTHING",
                              (self.corpus,))
            return
        if row[0] != self.corpus:
            raise BrainError(f"schema {self.schema} at {self.shown} holds corpus {row[0]!r}, not {self.corpus!r}; "
                             "nothing was written: give this folder another name with ?corpus=NAME at the end of "
                             "`store`")

    def _import_legacy_cache(self) -> None:
        """A corpus whose name the older mapping folded (`My-Notes` → brain_my_notes) reuses that schema's vectors.

        Only the cache: vectors are keyed by the text they embed, so they are right
        whoever made them, while the old schema's rows may be another folder's.
        """
        legacy = legacy_schema_name(self.corpus)
        if legacy == self.schema or self.schema.endswith(REBUILD_SUFFIX):
            return
        if self.conn.execute("SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'embedding_cache'",
                             (legacy,)).fetchone() is not None:
            self.import_embedding_cache(legacy)

    def _migrate(self) -> None:
        """Bring an older schema up to SCHEMA_VERSION, one step at a time, in one transaction (one process does it)."""
        with self.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.schema,))
            version = int(conn.execute(self._sql("SELECT schema_version FROM @.state")).fetchone()[0])
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS.get(step, ()):
                    conn.execute(self._sql(statement))
            conn.execute(self._sql("UPDATE @.state SET schema_version = %s"), (SCHEMA_VERSION,))

    def _version(self) -> int | None:
        row = self.conn.execute(
            "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'state'", (self.schema,)).fetchone()
        if row is None:
            return None
        got = self._execute("SELECT schema_version FROM @.state").fetchone()
        return int(got[0]) if got else None

    def _vector_type(self) -> str:
        """pgvector's type, qualified by the schema its extension lives in; created when allowed."""
        psycopg = self._psycopg
        row = self.conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"  # noqa: E501
        ).fetchone()
        if row is None:
            try:
                self.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise BrainError(f"pgvector is not enabled in {self.shown} ({' '.join(str(exc).split())[:160]}); "
                                 "ask its administrator to run `CREATE EXTENSION vector` in that database") from None
            return self._vector_type()
        return '"' + row[0].replace('"', '""') + '".vector'

    def _create(self) -> None:
        with self.transaction() as conn:
            # Two processes creating a corpus (or the extension) at once: the second waits, then finds it made.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('brain: create a corpus'))")
            vector_type = self._vector_type()
            conn.execute(self._sql("CREATE SCHEMA IF NOT EXISTS @.").rstrip("."))
            for statement in (*TABLES.replace("#VECTOR#", vector_type).split(";\n"), *LEXICON):
                conn.execute(self._sql(statement))
            conn.execute(self._sql("INSERT INTO @.state(schema_version) VALUES (%s) ON CONFLICT (one) DO NOTHING"),
                         (SCHEMA_VERSION,))
            conn.execute(self._sql("INSERT INTO @.meta(key, value) VALUES ('stemmer', %s), ('fts_tokenizer', %s),"
                                   " ('corpus', %s) ON CONFLICT (key) DO NOTHING"),
                         (self._new_stemmer, self.tokenizer, self.corpus))

    def close(self) -> None:
        """Give the connection back to the pool (a rollback first, should a transaction be open)."""
        conn = getattr(self, "conn", None)
        if conn is not None:
            self.conn = None
            with contextlib.suppress(Exception):
                self._pool.putconn(conn) if self._pooled else conn.close()
        second = getattr(self, "_vector_conn", None)
        if second is not None:
            self._vector_conn = None
            with contextlib.suppress(Exception):
                self._pool.putconn(second) if self._vector_pooled else second.close()

    def replaced(self) -> bool:
        """True when the connection was lost (a server restart): a long-lived reader then opens the store again.

        A rebuild needs no reopening: it swaps the schema under its name, and every statement names it.
        """
        return self.conn is None or bool(self.conn.closed) or bool(self.conn.broken)

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Every read inside sees one snapshot of the corpus, and a rebuild's swap waits for it to end.

        A search reads in several statements on two connections. A full rebuild
        swaps a new schema in under the same name, whose chunk ids start again
        from 1: ids read before the swap resolved to other files' chunks after it.
        One REPEATABLE READ, READ ONLY transaction holds the snapshot; the swap
        takes this corpus's advisory lock exclusively and readers take it shared,
        so a swap waits for the searches in flight (milliseconds) and searches
        begun meanwhile see the new index whole. The vector half's connection
        imports the same snapshot (nearest_vectors). Re-entrant.
        """
        if self._snapshot is not None:
            yield
            return
        key = (self.schema,)
        # Taken before the transaction begins, so its snapshot is taken after any swap it waited for.
        self._execute("SELECT pg_advisory_lock_shared(hashtext(%s))", key)
        try:
            with self.conn.transaction():
                self.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                self._snapshot = str(self.conn.execute("SELECT pg_export_snapshot()").fetchone()[0])
                try:
                    yield
                finally:
                    self._snapshot = None
        finally:
            release_advisory(self.conn, self.schema, shared=True)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """One transaction; it bumps the data version as it ends, so warm readers reload (rolled back on any
        exception)."""
        with self.conn.transaction():
            yield self.conn
            # Last, so the row lock that orders concurrent writers is held only until the commit.
            self.conn.execute(self._sql("UPDATE @.state SET data_version = data_version + 1"))

    # ------------------------------------------------------------ meta

    def get_meta(self, key: str) -> str | None:
        """A meta value; the ones every query reads are kept for META_SECONDS (a round trip each cost more than the
        search)."""
        if key in _QUERY_META:
            kept = self._meta_cache.get(key)
            if kept is not None and time.monotonic() - kept[0] < META_SECONDS:
                return kept[1]
        row = self._execute("SELECT value FROM @.meta WHERE key = %s", (key,)).fetchone()
        value = row[0] if row else None
        if key in _QUERY_META:
            self._meta_cache[key] = (time.monotonic(), value)
        return value

    def set_meta(self, items: dict[str, str]) -> None:
        self._meta_cache.clear()
        with self.transaction() as conn:
            for key, value in items.items():
                conn.execute(self._sql("INSERT INTO @.meta(key, value) VALUES (%s, %s)"
                                       " ON CONFLICT (key) DO UPDATE SET value = excluded.value"), (key, value))

    def schema_version(self) -> int:
        """The schema version this corpus was written with."""
        return int(self._version() or 0)

    # ------------------------------------------------------------ freshness records

    def record_indexed_commit(self, commit: str | None) -> None:
        """Remember that the index holds every change up to `commit` (None forgets it)."""
        with self.transaction() as conn:
            if commit is None:
                conn.execute(self._sql("DELETE FROM @.meta WHERE key = 'git_commit'"))
            else:
                conn.execute(self._sql("INSERT INTO @.meta(key, value) VALUES ('git_commit', %s)"
                                       " ON CONFLICT (key) DO UPDATE SET value = excluded.value"), (commit,))
            conn.execute(self._sql("INSERT INTO @.meta(key, value) VALUES ('git_synced_at', %s)"
                                   " ON CONFLICT (key) DO UPDATE SET value = excluded.value"), (timestamp(),))

    def record_languages(self) -> None:
        """Remember which languages the files' keyword fields were stemmed in (queries are stemmed in those)."""
        found = [r[0] for r in self._execute("SELECT DISTINCT language FROM @.files WHERE language != '' ORDER BY 1")]
        self.set_meta({"languages": ",".join(found)})

    def fts_tokenizer(self) -> str:
        """The FTS5 tokenizer whose tokens this index stores (recorded when the schema was made)."""
        return self.get_meta("fts_tokenizer") or FTS_TOKENIZER

    def _porter(self) -> bool:
        return self.fts_tokenizer().startswith("porter")  # not kept: a rebuild may swap in another tokenizer

    def import_embedding_cache(self, other: Any) -> int:
        """Copy cached vectors into this corpus; returns how many it gained.

        `other` is another schema of this database (a rebuild's live one), or
        the path of an SQLite index: a laptop's index moves to the team server
        without re-embedding anything.
        """
        if isinstance(other, Path):
            return self._import_sqlite_cache(other)
        if not isinstance(other, str) or not re.fullmatch(r"[a-z0-9_]+", other):
            return 0  # only schemas of this database can be read from here
        with self.transaction() as conn:
            return conn.execute(self._sql(
                f'INSERT INTO @.embedding_cache SELECT * FROM "{other}".embedding_cache ON CONFLICT DO NOTHING'
            )).rowcount

    def _import_sqlite_cache(self, path: Path) -> int:
        try:
            source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        except sqlite3.Error:
            return 0  # an unreadable other index only costs re-embedding
        gained = 0
        try:
            cursor = source.execute("SELECT hash, model, vector, created_at FROM embedding_cache")
            while rows := cursor.fetchmany(5000):
                with self.transaction() as conn, conn.cursor() as cur:
                    before = conn.execute(self._sql("SELECT count(*) FROM @.embedding_cache")).fetchone()[0]
                    cur.executemany(self._sql("INSERT INTO @.embedding_cache(hash, model, vector, created_at)"
                                              " VALUES (%s,%s,%s,%s) ON CONFLICT DO NOTHING"), rows)
                    gained += conn.execute(self._sql("SELECT count(*) FROM @.embedding_cache")).fetchone()[0] - before
        except sqlite3.Error:
            return gained
        finally:
            source.close()
        return gained

    # ------------------------------------------------------------ files

    def all_files(self) -> dict[str, FileRow]:
        return {r[1]: file_row(r) for r in self._execute(f"SELECT {self._file_columns} FROM @.files")}

    def get_file(self, path: str) -> FileRow | None:
        row = self._execute(f"SELECT {self._file_columns} FROM @.files WHERE path = %s", (path,)).fetchone()
        return file_row(row) if row else None

    def files_by_id(self, ids: Iterable[int]) -> dict[int, FileRow]:
        wanted = [int(i) for i in set(ids)]
        if not wanted:
            return {}
        return {r[0]: file_row(r)
                for r in self._execute(f"SELECT {self._file_columns} FROM @.files WHERE id = ANY(%s)", (wanted,))}

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
        """Swap in a file's new chunks (and links) in one transaction: never a mix of old and new, never two copies.

        `keywords` and the chunks' keyword copies arrive stemmed in `language`
        (the indexer's work); `meta_text` is the frontmatter as words, unstemmed.
        Two processes writing the same file at once: the upsert of its row makes
        the second wait for the first's commit, then replace its chunks. A chunk
        with `pending_text` waits in pending_vectors for its vector.
        """
        porter = self._porter()
        title_s, meta_s, path_s = keywords.title, keywords.meta, keywords.path
        values = (hash, size, mtime_ns, timestamp(), json.dumps(metadata, ensure_ascii=False), "ok", warning,
                  json_list(page_starts), title, language, meta_text, json_list(page_labels))
        rows = []
        postings: list[tuple[int, dict[str, list[int]]]] = []  # (length, counts) by seq
        for seq, c in enumerate(chunks):
            heading_s, text_s = c.keyword_copies
            tsv, length, counts = keyword_vector((("title", title_s), ("meta", meta_s), ("heading", heading_s),
                                                  ("path", path_s), ("body", text_s)), porter)
            postings.append((length, counts))
            rows.append((seq, c.text, c.heading_path, c.start_line, c.end_line,
                         json.dumps(c.pages) if c.pages else None,
                         c.embed_hash, _vector_text(c.vector), heading_s, text_s, title_s, meta_s, path_s, tsv, length))
        with self.transaction() as conn:
            file_id = conn.execute(self._sql(
                "INSERT INTO @.files(path, hash, size, mtime_ns, indexed_at, metadata, status, warning, page_starts, title,"  # noqa: E501
                " language, meta_text, page_labels) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)"
                " ON CONFLICT (path) DO UPDATE SET hash=excluded.hash, size=excluded.size, mtime_ns=excluded.mtime_ns,"
                " indexed_at=excluded.indexed_at, metadata=excluded.metadata, status=excluded.status,"
                " warning=excluded.warning, page_starts=excluded.page_starts, title=excluded.title,"
                " language=excluded.language, meta_text=excluded.meta_text, page_labels=excluded.page_labels"
                " RETURNING id"),
                (path, *values)).fetchone()[0]
            conn.execute(self._sql("DELETE FROM @.chunks WHERE file_id = %s"), (file_id,))
            conn.execute(self._sql("DELETE FROM @.links WHERE file_id = %s"), (file_id,))
            if links:
                with conn.cursor() as cur:
                    cur.executemany(self._sql(f"INSERT INTO @.links({LINK_COLUMNS}, key)"
                                              " VALUES (%s,%s,%s,%s,%s,%s,%s,%s)"), link_values(file_id, links))
            if rows:
                with conn.cursor() as cur:
                    cur.executemany(self._sql(
                        "INSERT INTO @.chunks(file_id, seq, text, heading_path, start_line, end_line, pages, embed_hash,"  # noqa: E501
                        " vector, fts_heading, fts_text, fts_title, fts_meta, fts_path, tsv, length)"
                        " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s::tsvector,%s)"),
                        [(file_id, *row) for row in rows])
                ids = dict(conn.execute(self._sql("SELECT seq, id FROM @.chunks WHERE file_id = %s"),
                                        (file_id,)).fetchall())
                self._write_postings(conn, file_id,
                                     [(ids[seq], length, counts) for seq, (length, counts) in enumerate(postings)])
                pending = [(ids[seq], c.pending_text) for seq, c in enumerate(chunks)
                           if c.vector is None and c.pending_text is not None]
                if pending:
                    with conn.cursor() as cur:
                        cur.executemany(self._sql("INSERT INTO @.pending_vectors(chunk_id, text) VALUES (%s, %s)"),
                                        pending)

    def _write_postings(self, conn: Any, file_id: int, chunks: Sequence[tuple[int, int, dict[str, list[int]]]]) -> None:
        """Each chunk's words with their counts per weight class: what bm25() reads, by word (COPY: thousands of rows
        per file)."""
        with conn.cursor() as cur, cur.copy(self._sql(
                "COPY @.postings (lexeme, chunk_id, file_id, length, a, b, c, d) FROM STDIN")) as copy:
            for chunk_id, length, counts in chunks:
                for lexeme, (a, b, c, d) in counts.items():
                    copy.write_row((lexeme, chunk_id, file_id, length, a, b, c, d))

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        """Record a new size/mtime for a file whose content did not change."""
        with self.transaction() as conn:
            conn.execute(self._sql("UPDATE @.files SET size=%s, mtime_ns=%s WHERE path=%s"), (size, mtime_ns, path))

    def move_file(self, old: str, new: str, size: int, mtime_ns: int, *, title: str, keywords: FileKeywords) -> None:
        """Rename a file in place: its chunks and vectors are kept; its title and path fields become `keywords`'."""
        porter = self._porter()
        with self.transaction() as conn:
            conn.execute(self._sql("DELETE FROM @.files WHERE path = %s"), (new,))
            row = conn.execute(self._sql("UPDATE @.files SET path=%s, size=%s, mtime_ns=%s, indexed_at=%s, title=%s"
                                         " WHERE path=%s RETURNING id"),
                               (new, size, mtime_ns, timestamp(), title, old)).fetchone()
            if row is None:
                return
            updates = []
            postings = []
            for cid, meta_s, heading_s, text_s in conn.execute(self._sql(
                    "SELECT id, fts_meta, fts_heading, fts_text FROM @.chunks WHERE file_id = %s"),
                    (row[0],)).fetchall():
                tsv, length, counts = keyword_vector((("title", keywords.title), ("meta", meta_s),
                                                      ("heading", heading_s),
                                                      ("path", keywords.path), ("body", text_s)), porter)
                updates.append((keywords.title, keywords.path, tsv, length, cid))
                postings.append((cid, length, counts))
            if updates:
                with conn.cursor() as cur:
                    cur.executemany(self._sql("UPDATE @.chunks SET fts_title = %s, fts_path = %s, tsv = %s::tsvector,"
                                              " length = %s WHERE id = %s"), updates)
                conn.execute(self._sql(DELETE_FILE_POSTINGS), (row[0],))
                self._write_postings(conn, row[0], postings)

    def remove_files(self, paths: Iterable[str]) -> None:
        for path in paths:
            with self.transaction() as conn:
                conn.execute(self._sql("DELETE FROM @.files WHERE path = %s"), (path,))

    # ------------------------------------------------------------ embedding cache

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        if not hashes:
            return {}
        return {h: bytes(v) for h, v in self._execute(
            "SELECT hash, vector FROM @.embedding_cache WHERE model = %s AND hash = ANY(%s)", (model, list(hashes)))}

    def cache_vectors(self, model: str, items: Sequence[tuple[str, bytes]]) -> None:
        if not items:
            return
        now = timestamp()
        with self.transaction() as conn, conn.cursor() as cur:
            cur.executemany(self._sql("INSERT INTO @.embedding_cache(hash, model, vector, created_at) VALUES (%s,%s,%s,%s)"  # noqa: E501
                                      " ON CONFLICT DO NOTHING"), [(h, model, v, now) for h, v in items])

    # ------------------------------------------------------------ chunks waiting for their vector

    def pending_vectors(self, limit: int) -> list[PendingVector]:
        """Up to `limit` chunks written without their vector, in the order they were written."""
        if not self._pending_table:
            return []
        return [PendingVector(int(r[0]), r[1], r[2]) for r in self._execute(
            "SELECT p.chunk_id, c.embed_hash, p.text FROM @.pending_vectors AS p JOIN @.chunks AS c ON c.id = p.chunk_id"  # noqa: E501
            " ORDER BY p.chunk_id LIMIT %s", (limit,))]

    def set_vectors(self, items: Sequence[tuple[int, str, bytes]]) -> int:
        """Give chunks their vectors, (chunk id, embed hash, float32 bytes) each, in one transaction; returns how many
        took one.

        A chunk rewritten meanwhile (another embed hash, or gone) is left alone.
        """
        if not items:
            return 0
        with self.transaction() as conn, conn.cursor() as cur:
            done = 0
            for chunk_id, embed_hash, vector in items:
                cur.execute(self._sql("UPDATE @.chunks SET vector = %s WHERE id = %s AND embed_hash = %s"),
                            (_vector_text(vector), chunk_id, embed_hash))
                done += cur.rowcount
            cur.execute(self._sql("DELETE FROM @.pending_vectors WHERE chunk_id = ANY(%s)"),
                        ([int(i) for i, _, _ in items],))
        return done

    def pending_count(self) -> int:
        """How many chunks wait for their vector."""
        if not self._pending_table:
            return 0
        return int(self._execute("SELECT count(*) FROM @.pending_vectors").fetchone()[0])

    def pending_among(self, ids: Sequence[int]) -> set[int]:
        """Which of these chunks wait for their vector."""
        if not self._pending_table or not ids:
            return set()
        return {int(r[0]) for r in self._execute("SELECT chunk_id FROM @.pending_vectors WHERE chunk_id = ANY(%s)",
                                                 ([int(i) for i in ids],))}

    # ------------------------------------------------------------ extracted text (PDFs)

    def extracted_text(self, hash: str) -> KeptText | None:
        """The text, page starts and page labels stored for a file content hash, or None."""
        return kept_text(self._execute(
            f"SELECT text, page_starts, {'page_labels' if self._labelled else 'NULL'} FROM @.extracted_text"
            " WHERE hash = %s", (hash,)).fetchone())

    def save_extracted_text(
        self, hash: str, text: str, page_starts: Sequence[int], page_labels: Sequence[str] = ()
    ) -> None:
        """Remember the text extracted from the file content with this hash."""
        with self.transaction() as conn:
            conn.execute(self._sql(
                "INSERT INTO @.extracted_text(hash, text, page_starts, created_at, page_labels) VALUES (%s,%s,%s,%s,%s)"
                " ON CONFLICT (hash) DO UPDATE SET text = excluded.text, page_starts = excluded.page_starts,"
                " created_at = excluded.created_at, page_labels = excluded.page_labels"),
                (hash, text, json_list(page_starts), timestamp(), json_list(page_labels)))

    def prune_extracted_text(self) -> int:
        """Forget texts no indexed file has any more; returns how many went."""
        with self.transaction() as conn:
            return conn.execute(self._sql(
                "DELETE FROM @.extracted_text WHERE hash NOT IN (SELECT hash FROM @.files)")).rowcount

    # ------------------------------------------------------------ reading for search

    def _tsquery(self, match: str) -> str | None:
        return tsquery_literal(match, self._porter())

    def bm25(
        self, match: str, limit: int, *, also: Iterable[int] = (), file_ids: Iterable[int] | None = None
    ) -> tuple[list[tuple[int, float]], dict[int, float]]:
        """The best `limit` chunks as (chunk id, keyword score), best first, and the score of those in `also` that
        match."""
        self.score_matches(match)
        return self.pick_matches(limit, also=also, file_ids=file_ids)

    def score_matches(self, match: str, also: Sequence[tuple[str, float]] = ()) -> None:
        """Score every chunk that matches with FTS5's bm25() and the field weights, kept for `pick_matches`.

        PostgreSQL finds the matches (the GIN index) and hands back only the
        query's lexemes of each, with their positions and weight classes; the
        scores are computed here as FTS5 computes them. `also`: further
        (MATCH expression, factor) pairs whose scores are added, scaled.
        """
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (chunk ids, file ids, scores) to add up
        totals: tuple[int, float] | None = None
        porter = self._porter()
        for expression, factor in [(match, 1.0), *also]:
            phrases = query_phrases(expression, porter)
            if not phrases:
                continue
            if totals is None:
                totals = self._totals()
            words = [p[0] for p in phrases if len(p) == 1]
            if words:
                ids, files, scores = self._bm25_of_words(words, *totals)
                parts.append((ids, files, factor * scores))
            longer = [p for p in phrases if len(p) > 1]
            if longer:
                # A phrase (an identifier such as FT-2026-0412) needs positions: read from the matches' tsvectors.
                hits: dict[int, dict[str, list[tuple[int, str]]]] = {}
                lengths: dict[int, int] = {}
                file_of: dict[int, int] = {}
                lexemes = sorted({t for p in longer for t in p})
                for cid, fid, length, lexeme, positions, weights in self._execute(
                        "SELECT c.id, c.file_id, c.length, u.lexeme, u.positions, u.weights"
                        " FROM @.chunks AS c CROSS JOIN LATERAL unnest(c.tsv) AS u(lexeme, positions, weights)"
                        " WHERE c.tsv @@ %s::tsquery AND u.lexeme = ANY(%s)", (tsquery_of(longer), lexemes)):
                    hits.setdefault(cid, {})[lexeme] = list(zip(positions, weights))
                    lengths[cid] = length
                    file_of[cid] = fid
                found = bm25_scores(longer, hits, lengths, *totals)
                parts.append((np.fromiter(found.keys(), dtype=np.int64, count=len(found)),
                              np.fromiter((file_of[c] for c in found), dtype=np.int64, count=len(found)),
                              factor * np.fromiter(found.values(), dtype=np.float64, count=len(found))))
        # Each part holds a chunk once (the words' are summed already): only several parts need adding up.
        self._matches = parts[0] if len(parts) == 1 else sum_by_chunk(parts)

    def _bm25_of_words(
        self, words: Sequence[str], rows: int, average: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(chunk ids, file ids, bm25) of every chunk holding one of these words, from the postings.

        The formula of bm25_scores, each word counted as often as the expression
        names it, its frequency the weighted sum of its counts per class. The
        server only reads each word's postings and packs them as bytes; the
        sums are numpy's: at a million chunks a query reads up to a million
        postings, and the server's own join and sum cost 4-5 times as much.
        """
        weights = class_weights()
        times: dict[str, int] = {}
        for word in words:
            times[word] = times.get(word, 0) + 1
        words = list(times)
        # The four counts in one int8, 16 bits each (a chunk's field holds a word at most a few hundred times).
        query = self._sql(
            "SELECT lexeme, string_agg(int8send(chunk_id), ''), string_agg(int8send(file_id), ''),"
            " string_agg(int4send(length), ''), string_agg(int8send((least(a, 65535)::int8 << 48)"
            " | (least(b, 65535)::int8 << 32) | (least(c, 65535)::int8 << 16) | least(d, 65535)), '')"
            " FROM @.postings WHERE lexeme = ANY(%s) GROUP BY lexeme")
        try:
            with self.conn.cursor(binary=True) as cur:
                found = cur.execute(query, (words,)).fetchall()
        except self._psycopg.OperationalError as exc:
            raise self._server_failed(exc) from None
        average = average if average > 0 else 1.0
        parts = []
        # Added up word by word in the query's order, as FTS5 adds its phrases: copies of a text tie exactly.
        for lexeme, ids, files, lengths, packed in sorted(found, key=lambda row: words.index(row[0])):
            ids = np.frombuffer(ids, dtype=">i8").astype(np.int64)
            counts = np.frombuffer(packed, dtype=">i8").astype(np.int64)
            freq = sum(((counts >> shift) & 0xFFFF) * weights[c] for c, shift in zip("ABCD", (48, 32, 16, 0)))
            length = np.frombuffer(lengths, dtype=">i4").astype(np.float64)
            n = len(ids)
            idf = max(float(np.log((rows - n + 0.5) / (n + 0.5))), 1e-6)
            score = idf * (freq * (BM25_K1 + 1)) / (freq + BM25_K1 * (1 - BM25_B + BM25_B * length / average))
            parts.extend([(ids, np.frombuffer(files, dtype=">i8").astype(np.int64), score)] * times[lexeme])
        return sum_by_chunk(parts)

    def _totals(self) -> tuple[int, float]:
        """(chunks, average tokens per chunk), as bm25() needs them; recounted only after a write (a scan of the
        table)."""
        version = self.data_version()
        if self._totals_at is None or self._totals_at[0] != version:
            # From chunks_length alone (an index-only scan): the table's rows are wide (text, tsvector, vector),
            # and every warm reader recounts after every write.
            row = self._execute("SELECT count(*), coalesce(avg(length), 0) FROM @.chunks").fetchone()
            self._totals_at = (version, int(row[0]), float(row[1]))
        return self._totals_at[1], self._totals_at[2]

    def terms_found(self, terms: list[str]) -> int:
        """How many of these FTS5 expressions (a quoted word or phrase, or its forms OR-joined) match at least one
        chunk."""
        found = 0
        porter = self._porter()
        for term in terms:
            phrases = query_phrases(term, porter)
            if phrases and all(len(p) == 1 for p in phrases):
                # Words alone: one look at the postings' key (a GIN search cost 5 ms a word at 1M chunks).
                found += self._execute("SELECT 1 FROM @.postings WHERE lexeme = ANY(%s) LIMIT 1",
                                       ([p[0] for p in phrases],)).fetchone() is not None
                continue
            query = self._tsquery(term)
            if query is not None:
                found += bool(self._matching_rows("SELECT 1 FROM @.chunks WHERE tsv @@ %s::tsquery LIMIT 1", (query,)))
        return found

    def _matching_rows(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """The rows of a LIMITed query on the chunks a tsquery matches, read through the GIN index.

        With a LIMIT the planner scans the table hoping for early matches, and a
        word no chunk holds (a typo) then reads all of it: 2 s at 1M chunks.
        """
        with self.conn.transaction():
            # Inside a search's snapshot this is a savepoint, whose settings outlive it: put it back after.
            was = self.conn.execute("SELECT current_setting('enable_seqscan'), set_config('enable_seqscan', 'off', true)"  # noqa: E501
                                    ).fetchone()[0]
            rows = self._execute(sql, params).fetchall()
            self.conn.execute("SELECT set_config('enable_seqscan', %s, true)", (was,))
            return rows

    def pick_matches(
        self, limit: int, *, also: Iterable[int] = (), file_ids: Iterable[int] | None = None
    ) -> tuple[list[tuple[int, float]], dict[int, float]]:
        """From the last `score_matches`: the best `limit` as (chunk id, BM25), and the BM25 of each of `also` that
        matched."""
        ids, files, scores = self._matches
        # In numpy: a query matches up to a fifth of a 1M-chunk corpus, and Python loops over
        # its matches cost 20-50 ms a query.
        wanted = np.isin(ids, np.fromiter((int(c) for c in also), dtype=np.int64))
        of_also = dict(zip(ids[wanted].tolist(), scores[wanted].tolist()))
        keep = np.ones(len(ids), dtype=bool)
        if file_ids is not None:
            keep = np.isin(files, np.fromiter((int(f) for f in file_ids), dtype=np.int64))
        kept_ids, kept_scores = ids[keep], scores[keep]
        if len(kept_scores) > limit > 0:  # only what can make the first `limit` (ties at the edge included) is sorted
            edge = np.partition(kept_scores, len(kept_scores) - limit)[len(kept_scores) - limit]
            near = kept_scores >= edge
            kept_ids, kept_scores = kept_ids[near], kept_scores[near]
        order = np.lexsort((kept_ids, -kept_scores))[:limit]  # best first, ties by id as SQLite orders them
        return [(int(kept_ids[i]), float(kept_scores[i])) for i in order], of_also

    def vector_matrix(self, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(chunk ids, file ids, vectors) of every embedded chunk, by id; vectors as one float32 matrix.

        Read in pgvector's binary form, a few thousand rows at a time, into the final arrays.
        """
        count = int(self._execute("SELECT count(*) FROM @.chunks WHERE vector IS NOT NULL").fetchone()[0])
        ids = np.zeros(count, dtype=np.int64)
        file_ids = np.zeros(count, dtype=np.int64)
        matrix = np.zeros((count, dim), dtype=np.float32)
        done = 0
        with self.conn.cursor(binary=True) as cur:
            cur.execute(self._sql("SELECT id, file_id, vector FROM @.chunks WHERE vector IS NOT NULL ORDER BY id"))
            while done < count:
                rows = cur.fetchmany(4096)[: count - done]
                if not rows:
                    break
                end = done + len(rows)
                ids[done:end] = [r[0] for r in rows]
                file_ids[done:end] = [r[1] for r in rows]
                raw = np.frombuffer(b"".join(bytes(r[2])[4:] for r in rows), dtype=">f4")
                matrix[done:end] = raw.reshape(len(rows), dim)
                done = end
        return ids[:done], file_ids[:done], matrix[:done]

    # ------------------------------------------------------------ vector search on the server (HNSW)

    def _vector_ops(self) -> tuple[str, int]:
        """(pgvector's schema as a quoted identifier, the dimension of this index's vectors): what the HNSW statements
        name."""
        if self._ops is None:
            row = self.conn.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
                                    " WHERE e.extname = 'vector'").fetchone()
            recorded = self.get_meta("dimension")
            if recorded:
                dimension = int(recorded)
            else:
                found = self._execute(
                    "SELECT vector_dims(vector) FROM @.chunks WHERE vector IS NOT NULL LIMIT 1").fetchone()
                dimension = int(found[0]) if found else 0
            self._ops = ('"' + row[0].replace('"', '""') + '"', dimension)
        return self._ops

    def hnsw_state(self) -> bool | None:
        """True: this corpus has a usable HNSW index; False: one whose build was interrupted (unusable); None: none."""
        row = self.conn.execute(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s",
            (self.schema, HNSW_INDEX)).fetchone()
        return None if row is None else bool(row[0])

    def embedded_count(self) -> int:
        """How many chunks have a vector."""
        return int(self._execute("SELECT count(*) FROM @.chunks WHERE vector IS NOT NULL").fetchone()[0])

    def searches_vectors(self) -> bool:
        """True when the server answers nearest-vector queries (HNSW, at HNSW_THRESHOLD chunks and more): readers keep
        no matrix.

        Decided again after every write (the data version), so a corpus that
        crosses the threshold, or a rebuild that swaps in an index, is followed.
        """
        version = self.data_version()
        if self._hnsw_at is None or self._hnsw_at[0] != version:
            self._ops = None  # a rebuild may have swapped in another model's vectors (another dimension)
            rows, _ = self._totals()
            self._hnsw_at = (version, rows >= HNSW_THRESHOLD and self.hnsw_state() is True, rows)
        return self._hnsw_at[1]

    def maintain_indexes(self) -> bool:
        """Build the indexes a corpus lacks: the HNSW index once it has HNSW_THRESHOLD embedded chunks; True when that
        was built.

        Called at the end of every batch of writes (a scan, a reindex, a sync,
        a full rebuild before its swap). Once built, PostgreSQL keeps it up to
        date on every insert. On the live schema it is built CONCURRENTLY, so
        other writers go on meanwhile; one process builds it (a lock tried, not
        waited for), and a build that was interrupted is dropped and made again.
        """
        self._add_length_index()
        if self.embedded_count() < HNSW_THRESHOLD or self.hnsw_state() is True:
            return False
        key = self.schema + ":hnsw"
        if not self.conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()[0]:
            return False  # another process is building it
        try:
            state = self.hnsw_state()
            if state is True:
                return False
            live = not self.schema.endswith(REBUILD_SUFFIX)
            concurrently = "CONCURRENTLY " if live else ""  # a rebuild's schema has no readers or other writers
            if state is False:
                self._execute(f"DROP INDEX {concurrently}IF EXISTS @.{HNSW_INDEX}")
            ext, dimension = self._vector_ops()
            self.conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (HNSW_BUILD_MEMORY,))
            try:
                # Only constants and the schema are spliced in (DDL takes no parameters).
                self._execute(
                    f"CREATE INDEX {concurrently}IF NOT EXISTS {HNSW_INDEX} ON @.chunks USING hnsw"
                    f" ((vector::{ext}.halfvec({dimension})) {ext}.halfvec_ip_ops)"
                    f" WITH (m = {int(HNSW_M)}, ef_construction = {int(HNSW_EF_CONSTRUCTION)})")
            finally:
                with contextlib.suppress(Exception):
                    self.conn.execute("RESET maintenance_work_mem")
            with self.transaction():
                pass  # a new data version: warm readers drop their matrix and ask the index
        finally:
            release_advisory(self.conn, key)
        return True

    def _add_length_index(self) -> None:
        """chunks_length, on a corpus made before it was in the schema (built CONCURRENTLY, by one process)."""
        exists = self.conn.execute("SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                                   " WHERE n.nspname = %s AND c.relname = 'chunks_length'", (self.schema,)).fetchone()
        if exists is not None:
            return
        key = self.schema + ":length"
        if not self.conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()[0]:
            return
        try:
            self._execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS chunks_length ON @.chunks(length)")
        finally:
            release_advisory(self.conn, key)

    def nearest_vectors(
        self, query: np.ndarray, limit: int, *, file_ids: Iterable[int] | None = None, exact: bool = False
    ) -> list[tuple[int, float]]:
        """The `limit` chunks nearest `query` (a normalised float32 vector) as (chunk id, cosine), best first.

        Through the HNSW index (ef_search: hnsw_ef_search; the iterative scan goes past it when needed),
        unless `exact`, or a filter leaves fewer than HNSW_THRESHOLD chunks (their
        exact scan is then cheap and complete; a larger filtered set is walked
        with pgvector's iterative scan). Cosines come from the float32 column
        either way. Runs on the store's second connection: search.py calls it
        while the keyword half uses the first.
        """
        ext, dimension = self._vector_ops()
        wanted = None if file_ids is None else [int(f) for f in file_ids]
        params: dict[str, Any] = {"q": _vector_text(np.asarray(query, dtype=np.float32).tobytes()), "limit": int(limit),
                                  "files": wanted}
        where = "vector IS NOT NULL" + ("" if wanted is None else " AND file_id = ANY(%(files)s)")
        try:
            conn = self._vector_connection()
            with conn.transaction():
                if self._snapshot is not None:  # the search's own snapshot (reading), not a newer one
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    conn.execute(self._psycopg.sql.SQL("SET TRANSACTION SNAPSHOT {}").format(
                        self._psycopg.sql.Literal(self._snapshot)))
                if wanted is not None and not exact:
                    exact = int(conn.execute(self._sql("SELECT count(*) FROM @.chunks WHERE file_id = ANY(%s)"),
                                             (wanted,)).fetchone()[0]) < HNSW_THRESHOLD
                if exact:
                    order = f"vector OPERATOR({ext}.<#>) %(q)s::{ext}.vector"  # the float32 column: no index matches it
                else:
                    # The index, even where the planner would sort a small table instead: the store
                    # decided by the corpus's size, and a test on a few rows must take the same path.
                    # The chunk count searches_vectors saw (this connection's neighbour is busy with keywords).
                    ef = hnsw_ef_search(self._hnsw_at[2] if self._hnsw_at else HNSW_THRESHOLD)
                    # The iterative scan goes on past ef_search when rows drop out after the index: a filter's,
                    # and the old versions of rewritten files until VACUUM clears them from the graph.
                    conn.execute("SELECT set_config('hnsw.ef_search', %s, true),"
                                 " set_config('hnsw.iterative_scan', 'relaxed_order', true),"
                                 " set_config('enable_seqscan', 'off', true)", (str(ef),))
                    order = f"vector::{ext}.halfvec({dimension}) OPERATOR({ext}.<#>) %(q)s::{ext}.halfvec({dimension})"
                rows = conn.execute(self._sql(
                    f"SELECT id, -(vector OPERATOR({ext}.<#>) %(q)s::{ext}.vector) FROM @.chunks WHERE {where}"
                    f" ORDER BY {order} LIMIT %(limit)s"), params).fetchall()
        except self._psycopg.OperationalError as exc:
            raise self._server_failed(exc) from None
        # An iterative scan returns rows nearly in order; halfvec distances round: order by the exact cosine.
        return sorted(((int(c), float(s)) for c, s in rows), key=lambda r: (-r[1], r[0]))

    def _vector_connection(self) -> Any:
        """This store's second connection, for the vector half while the keyword half holds the first; kept until close.

        From the pool when one is free at once, else a direct one: a server with
        as many open stores as the pool has connections must not wait on itself.
        """
        conn = self._vector_conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        if conn is not None:  # lost with a server restart: handed back, so the pool replaces it
            with contextlib.suppress(Exception):
                self._pool.putconn(conn) if self._vector_pooled else conn.close()
            self._vector_conn = None
        try:
            conn, self._vector_pooled = self._pool.getconn(timeout=SPARE_CONNECTION_WAIT), True
        except Exception:  # PoolTimeout: every pooled connection is some store's
            conn, self._vector_pooled = self._psycopg.connect(split_location(self.location)[0], autocommit=True), False
        self._vector_conn = conn
        return conn

    def cosines(self, query: np.ndarray, ids: Sequence[int]) -> dict[int, float]:
        """The exact cosine of each of these chunks with `query` (a chunk without a vector has none)."""
        if not ids:
            return {}
        ext, _ = self._vector_ops()
        return {int(c): float(s) for c, s in self._execute(
            f"SELECT id, -(vector OPERATOR({ext}.<#>) %s::{ext}.vector) FROM @.chunks WHERE id = ANY(%s) AND vector IS NOT NULL",  # noqa: E501
            (_vector_text(np.asarray(query, dtype=np.float32).tobytes()), [int(i) for i in ids]))}

    def keyword_fields(self, ids: Iterable[int]) -> dict[int, dict[str, str]]:
        """The stemmed keyword fields of these chunks (FIELDS → text), as the keyword index reads them."""
        wanted = [int(i) for i in set(ids)]
        if not wanted:
            return {}
        return {r[0]: dict(zip(FIELDS, r[1:])) for r in self._execute(
            "SELECT id, fts_title, fts_meta, fts_heading, fts_path, fts_text FROM @.chunks WHERE id = ANY(%s)",
            (wanted,))}

    def chunk_titles(self, ids: Sequence[int]) -> dict[int, str]:
        """The stemmed title field of these chunks (their file's title, as the keyword index reads it)."""
        if not ids:
            return {}
        return dict(self._execute("SELECT id, fts_title FROM @.chunks WHERE id = ANY(%s)",
                                  ([int(i) for i in ids],)).fetchall())

    def count_matches(self, match: str, cap: int) -> int:
        """How many chunks match an FTS5 expression, counting no further than `cap`."""
        query = self._tsquery(match)
        if query is None:
            return 0
        return int(self._matching_rows("SELECT count(*) FROM (SELECT 1 FROM @.chunks WHERE tsv @@ %s::tsquery LIMIT %s) AS m",  # noqa: E501
                                       (query, cap))[0][0])

    def vocabulary(self, first: str, min_length: int) -> list[tuple[str, int]]:
        """The index terms that begin with the character `first`, of at least `min_length` characters, with how many
        chunks hold each.

        A range of the lexicon's key, as FTS5's vocabulary table reads a range of its terms.
        """
        if (self._version() or 0) >= 6:
            return [(r[0], int(r[1])) for r in self._execute(
                "SELECT lexeme, chunks FROM @.lexicon WHERE lexeme >= %s AND lexeme < %s AND length(lexeme) >= %s"
                " AND chunks > 0", (first, first + "\U0010ffff", min_length))]
        # A schema-5 corpus opened read-only (the next writer adds the lexicon): counted from the postings.
        return [(r[0], int(r[1])) for r in self._execute(
            "SELECT lexeme, count(*) FROM @.postings WHERE lexeme >= %s AND lexeme < %s AND length(lexeme) >= %s"
            " GROUP BY lexeme", (first, first + "\U0010ffff", min_length))]

    def texts_matching(self, match: str, limit: int) -> list[str]:
        """The raw text of up to `limit` chunks that match an FTS5 expression (to show a word as people write it)."""
        query = self._tsquery(match)
        if query is None:
            return []
        return [r[0] for r in self._matching_rows("SELECT text FROM @.chunks WHERE tsv @@ %s::tsquery LIMIT %s",
                                                  (query, limit))]

    def data_version(self) -> int:
        """Changes whenever a write commits, or a rebuild swaps in a new schema: tells a warm process to reload.

        The state table's own oid tells the schemas apart (a rebuilt one counts its
        writes from 0 again): read from the row itself, it always belongs to the
        table that was read, where pg_namespace read in an older snapshot could name
        the schema the swap had dropped.
        """
        row = self._execute("SELECT data_version, tableoid::bigint FROM @.state").fetchone()
        return int(row[1]) * 1_000_000_000_000 + int(row[0])

    def chunk_vectors(self, ids: Sequence[int]) -> dict[int, bytes]:
        if not ids:
            return {}
        with self.conn.cursor(binary=True) as cur:
            cur.execute(self._sql("SELECT id, vector FROM @.chunks WHERE id = ANY(%s) AND vector IS NOT NULL"),
                        ([int(i) for i in ids],))
            return {int(cid): _vector_bytes(bytes(v)) for cid, v in cur.fetchall()}

    def chunks_by_id(self, ids: Iterable[int]) -> dict[int, ChunkRow]:
        wanted = [int(i) for i in set(ids)]
        if not wanted:
            return {}
        return {r[0]: chunk_row(r)
                for r in self._execute(f"SELECT {CHUNK_COLUMNS} FROM @.chunks WHERE id = ANY(%s)", (wanted,))}

    def file_chunks(self, file_id: int) -> list[ChunkRow]:
        return [chunk_row(r) for r in self._execute(
            f"SELECT {CHUNK_COLUMNS} FROM @.chunks WHERE file_id = %s ORDER BY seq", (file_id,))]

    # ------------------------------------------------------------ links

    def file_links(self, file_id: int) -> list[Link]:
        """A file's outgoing links as written, in the order they appear."""
        return [link_row(r)[1] for r in self._execute(
            f"SELECT {LINK_COLUMNS} FROM @.links WHERE file_id = %s ORDER BY id", (file_id,))]

    def links_named(self, keys: Sequence[str]) -> list[tuple[int, Link]]:
        """(file id, link) of every link whose target ends with one of these names (links.name_key)."""
        return [link_row(r) for r in self._execute(
            f"SELECT {LINK_COLUMNS} FROM @.links WHERE key = ANY(%s) ORDER BY file_id, id",
            (list(dict.fromkeys(keys)),))]

    def all_links(self) -> list[tuple[int, Link]]:
        return [link_row(r) for r in self._execute(f"SELECT {LINK_COLUMNS} FROM @.links ORDER BY file_id, id")]

    # ------------------------------------------------------------ stats

    def counts(self) -> dict[str, int]:
        row = self._execute("SELECT (SELECT count(*) FROM @.files), (SELECT count(*) FROM @.chunks),"
                            " (SELECT count(*) FROM @.chunks WHERE vector IS NOT NULL),"
                            " (SELECT count(*) FROM @.embedding_cache)").fetchone()
        return {"files": row[0], "chunks": row[1], "embedded_chunks": row[2], "cache_entries": row[3],
                "pending_vectors": self.pending_count()}

    def largest_files(self, limit: int = 5) -> list[tuple[str, int]]:
        return [(r[0], int(r[1])) for r in self._execute(
            "SELECT f.path, count(c.id) AS n FROM @.files f JOIN @.chunks c ON c.file_id = f.id"
            " GROUP BY f.id ORDER BY n DESC, f.path LIMIT %s", (limit,))]

    def disk_bytes(self) -> int:
        """Bytes this corpus's tables and their indexes take on the server."""
        row = self.conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"  # noqa: E501
            " WHERE n.nspname = %s AND c.relkind IN ('r', 'm')", (self.schema,)).fetchone()
        return int(row[0])

    def checkpoint(self) -> None:
        """Nothing to do: PostgreSQL checkpoints by itself (here for the Store interface)."""

    # ------------------------------------------------------------ full rebuild

    @contextlib.contextmanager
    def rebuild_lock(self) -> Iterator[None]:
        """Held for a whole rebuild: the nightly rebuilds of several clones, on several machines, run one after the
        other.

        The file lock beside the SQLite path guards one machine only; this one is
        the server's (a session advisory lock), so no rebuild drops the schema
        another is still building.
        """
        self.conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (self.schema + ":rebuild",))
        try:
            yield
        finally:
            release_advisory(self.conn, self.schema + ":rebuild")

    def rebuild_schema(self) -> str:
        """The schema a full rebuild of this corpus writes into, beside the live one."""
        return self.schema + REBUILD_SUFFIX

    def drop_schema(self, schema: str) -> None:
        """Drop a schema of this corpus (a rebuild's leftovers), if it is there."""
        if not schema.startswith(self.schema):
            raise ValueError(f"{schema!r} is not a schema of {self.schema!r}")
        self.conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    def remove_rebuild_leftovers(self) -> list[str]:
        """Drop the schema a killed or failed rebuild left, unless a rebuild is running now; returns what went.

        Called under the writer lock by every index and sync: a killed `index --full`
        left its schema (the whole corpus's size again) until the next full rebuild.
        """
        key = self.schema + ":rebuild"
        if not self.conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()[0]:
            return []  # a rebuild (here or on another machine) is filling it
        try:
            fresh = self.rebuild_schema()
            if self.conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (fresh,)).fetchone() is None:
                return []
            self.drop_schema(fresh)
            return [fresh]
        finally:
            release_advisory(self.conn, key)

    def swap_in(self, fresh_schema: str) -> None:
        """Make `fresh_schema` this corpus's schema in one transaction: readers see the old index or the new one, never
        a mix.

        The old schema is dropped in the same transaction; the new one's data
        version is moved past the old one's, so a warm reader reloads.
        """
        if fresh_schema != self.rebuild_schema():
            raise ValueError(f"{fresh_schema!r} is not the rebuild schema of {self.schema!r}")
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.schema,))
            self.conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
            self.conn.execute(f'ALTER SCHEMA "{fresh_schema}" RENAME TO "{self.schema}"')


@contextlib.contextmanager
def rebuilding(location: str, corpus: str, *, tokenizer: str, stemmer: str) -> Iterator[PostgresStore]:
    """A new, empty schema beside the corpus's live one; when the block ends without error it is swapped in.

    Another machine's rebuild of this corpus finishes first (the rebuild lock).
    The new schema takes the live one's cached vectors; readers see the old
    index until the swap, one transaction. On any failure the new schema is
    dropped and the live one stays exactly as it was.
    """
    live = PostgresStore(location, corpus, tokenizer=tokenizer, stemmer=stemmer)
    try:
        with live.rebuild_lock():
            fresh_schema = live.rebuild_schema()
            live.drop_schema(fresh_schema)  # a killed rebuild's leftovers: the rebuild lock is ours
            try:
                fresh = PostgresStore(location, corpus, tokenizer=tokenizer, stemmer=stemmer, schema=fresh_schema)
                try:
                    fresh.import_embedding_cache(live.schema)  # a rebuild re-embeds nothing it knows
                    yield fresh
                    fresh.set_meta({"last_rebuild": timestamp()})
                finally:
                    fresh.close()
                live.swap_in(fresh_schema)
            except KeyboardInterrupt:
                with contextlib.suppress(Exception):
                    live.drop_schema(fresh_schema)
                raise Interrupted(f"interrupted; the rebuild stopped and its new schema was dropped; the old index at "
                                  f"{live.path} is kept as it was and is still served; "
                                  "run `brain index --full` again") from None
            except BaseException:
                with contextlib.suppress(Exception):
                    live.drop_schema(fresh_schema)  # the old index stays as it was
                raise
    finally:
        live.close()


def index_exists(location: str, corpus: str) -> bool:
    """True when the server holds an index of this corpus (a BrainError when the server cannot be reached)."""
    try:
        store = PostgresStore(location, corpus, create=False, readonly=True)
    except BrainError as exc:
        if "no index for corpus" in str(exc):
            return False
        raise
    store.close()
    return True
