"""The one written interface of an index (`Index`), its row types and the constants every store shares.

Two stores implement it: `sqlite.SqliteStore` (one file, the default) and
`postgres.PostgresStore` (a schema on a team's server). Nothing above the store
knows which one it has: the indexer, search, status and the doors call only
what `Index` declares. A store keeps exactly what it is given: the keyword
fields arrive stemmed (the indexer stems them, with `stemming`), vectors as
float32 bytes, and every statement it runs is its own.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..links import Link, name_key

if TYPE_CHECKING:
    import numpy as np

# Tokenizers an index may be built with; the query goes through the same one.
FTS_TOKENIZERS = ("unicode61 remove_diacritics 2", "porter unicode61 remove_diacritics 2")
FTS_TOKENIZER = FTS_TOKENIZERS[1]  # for an index created without naming one
UNSTEMMED = "none"  # the stemmer an index records when its keyword copies are the text itself (stemming.NONE)

# The keyword fields, in FTS5 column order, with their BM25 weights. A word in a
# note's title says more about the note than the same word in its body, and
# FTS5's bm25() takes one weight per column. The weights were chosen by
# measurement (docs/decisions/09-field-weights.md): title and frontmatter values
# ×4 put the note a title or an alias names first without letting one title
# word outrank a body that uses every query word; headings ×2 as before
# (they were a column of weight 1, repeated in every chunk under them); folder
# names ×2: they are topics (`projects/nexum`) but also shared by many notes.
FIELDS = ("title", "meta", "heading", "path", "body")
FIELD_WEIGHTS = {"title": 4.0, "meta": 4.0, "heading": 2.0, "path": 2.0, "body": 1.0}
# What an index older than page labels (SQLite schema 6, PostgreSQL 8) holding PDFs records as
# their extractor (`pdf_text` in its identity): no extractor's, so its next `brain index` rebuilds
# it and every PDF is extracted again, labels included. An index without PDFs has nothing to redo.
PDF_TEXT_BEFORE_LABELS = "pypdf, before page labels"
# Recorded in meta: an index whose keyword fields differ is rebuilt by the next `brain index`.
KEYWORD_FIELDS = ",".join(FIELDS)
# Recorded in meta as `links`: an index made before links were kept (SQLite schema 7, PostgreSQL 9) records
# LINKS_BEFORE, so its next `brain index` rebuilds it (vectors from the cache) and every note's links are read.
LINKS_KEPT = "1"
LINKS_BEFORE = "none"
LINK_COLUMNS = "file_id, line, kind, target, heading, alias, plain"
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S%z"


def timestamp() -> str:
    """Now, as every record of the index (and every log line) writes it: local time with its offset."""
    return time.strftime(TIMESTAMP_FORMAT)


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
    page_labels: list[str] = field(default_factory=list)  # PDFs that declare them: each page's printed label


@dataclass(frozen=True)
class KeptText:
    """A PDF's extracted text as the index keeps it by the hash of its bytes."""

    text: str
    page_starts: list[int]
    page_labels: list[str]


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
    """A chunk ready to be written.

    `keyword_heading` and `keyword_text` are its heading path and text as the
    keyword index reads them (stemmed in the file's language by the indexer);
    None: the heading path and text themselves.
    A chunk with an `embed_hash` but no `vector` waits for it: `pending_text`
    is the text to embed, kept until `set_vectors` writes the vector.
    """

    text: str
    heading_path: str
    start_line: int
    end_line: int
    pages: list[int]
    embed_hash: str | None
    vector: bytes | None
    keyword_heading: str | None = None
    keyword_text: str | None = None
    pending_text: str | None = None

    @property
    def keyword_copies(self) -> tuple[str, str]:
        """(heading path, text) as the keyword index stores them."""
        return (self.heading_path if self.keyword_heading is None else self.keyword_heading,
                self.text if self.keyword_text is None else self.keyword_text)


@dataclass(frozen=True)
class FileKeywords:
    """A file's own keyword fields, stemmed as its chunks' are: its title, frontmatter values and path as words."""

    title: str = ""
    meta: str = ""
    path: str = ""


@dataclass(frozen=True)
class PendingVector:
    """A chunk written without its vector (keywords first): what to embed, and where the vector goes."""

    chunk_id: int
    embed_hash: str
    text: str


class Index(Protocol):
    """An open index: everything above the store reads and writes it through these methods only."""

    @property
    def path(self) -> str | Path: ...  # the SQLite file, or server#schema as reports name it (never a password)

    supported_schema: int

    # ---- life
    def close(self) -> None: ...
    def replaced(self) -> bool: ...
    def reading(self) -> contextlib.AbstractContextManager[None]: ...
    def remove_rebuild_leftovers(self) -> list[str]: ...
    def maintain_indexes(self) -> bool: ...
    def checkpoint(self) -> None: ...

    # ---- meta and records
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, items: dict[str, str]) -> None: ...
    def schema_version(self) -> int: ...
    def data_version(self) -> int: ...
    def fts_tokenizer(self) -> str: ...
    def stemmer(self) -> str: ...
    def languages(self) -> list[str] | None: ...
    def record_languages(self) -> None: ...
    def indexed_commit(self) -> str | None: ...
    def record_indexed_commit(self, commit: str | None) -> None: ...
    def record_sync(self, result: dict[str, Any]) -> None: ...
    def last_sync(self) -> dict[str, Any] | None: ...
    def record_rebuild(self, result: dict[str, Any]) -> None: ...
    def last_rebuild(self) -> dict[str, Any] | None: ...

    # ---- files
    def all_files(self) -> dict[str, FileRow]: ...
    def get_file(self, path: str) -> FileRow | None: ...
    def files_by_id(self, ids: Iterable[int]) -> dict[int, FileRow]: ...
    def replace_file(
        self, *, path: str, hash: str, size: int, mtime_ns: int, metadata: dict[str, Any], warning: str | None,
        page_starts: list[int], chunks: Sequence[NewChunk], title: str = "", meta_text: str = "", language: str = "",
        keywords: FileKeywords = ..., page_labels: Sequence[str] = (), links: Sequence[Link] = (),
    ) -> None: ...
    def touch_file(self, path: str, size: int, mtime_ns: int) -> None: ...
    def move_file(
        self, old: str, new: str, size: int, mtime_ns: int, *, title: str, keywords: FileKeywords
    ) -> None: ...
    def remove_files(self, paths: Iterable[str]) -> None: ...

    # ---- vectors: the cache, and the chunks waiting for theirs
    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]: ...
    def cache_vectors(self, model: str, items: Sequence[tuple[str, bytes]]) -> None: ...
    def import_embedding_cache(self, other: Any) -> int: ...
    def pending_vectors(self, limit: int) -> list[PendingVector]: ...
    def set_vectors(self, items: Sequence[tuple[int, str, bytes]]) -> int: ...
    def pending_count(self) -> int: ...
    def pending_among(self, ids: Sequence[int]) -> set[int]: ...

    # ---- extracted text (PDFs)
    def extracted_text(self, hash: str) -> KeptText | None: ...
    def save_extracted_text(
        self, hash: str, text: str, page_starts: Sequence[int], page_labels: Sequence[str] = ()
    ) -> None: ...
    def prune_extracted_text(self) -> int: ...

    # ---- reading for search
    def score_matches(self, match: str, also: Sequence[tuple[str, float]] = ()) -> None: ...
    def pick_matches(
        self, limit: int, *, also: Iterable[int] = (), file_ids: Iterable[int] | None = None
    ) -> tuple[list[tuple[int, float]], dict[int, float]]: ...
    def terms_found(self, terms: list[str]) -> int: ...
    def count_matches(self, match: str, cap: int) -> int: ...
    def vocabulary(self, first: str, min_length: int) -> list[tuple[str, int]]: ...
    def texts_matching(self, match: str, limit: int) -> list[str]: ...
    def searches_vectors(self) -> bool: ...
    def vector_matrix(self, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def nearest_vectors(
        self, query: np.ndarray, limit: int, *, file_ids: Iterable[int] | None = None, exact: bool = False
    ) -> list[tuple[int, float]]: ...
    def cosines(self, query: np.ndarray, ids: Sequence[int]) -> dict[int, float]: ...
    def chunk_vectors(self, ids: Sequence[int]) -> dict[int, bytes]: ...
    def keyword_fields(self, ids: Iterable[int]) -> dict[int, dict[str, str]]: ...
    def chunk_titles(self, ids: Sequence[int]) -> dict[int, str]: ...
    def chunks_by_id(self, ids: Iterable[int]) -> dict[int, ChunkRow]: ...
    def file_chunks(self, file_id: int) -> list[ChunkRow]: ...

    # ---- links (links.py): stored as written, resolved by the reader against the paths indexed now
    def file_links(self, file_id: int) -> list[Link]: ...
    def links_named(self, keys: Sequence[str]) -> list[tuple[int, Link]]: ...  # (file id, link) by links.name_key
    def all_links(self) -> list[tuple[int, Link]]: ...

    # ---- stats
    def counts(self) -> dict[str, int]: ...
    def largest_files(self, limit: int = 5) -> list[tuple[str, int]]: ...
    def disk_bytes(self) -> int: ...


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
        """What the last git sync did, as record_sync kept it (None: none yet)."""
        raw = self.get_meta("last_sync_result")
        return json.loads(raw) if raw else None

    def record_rebuild(self, result: dict[str, Any]) -> None:
        """Keep when the last full rebuild ran and how it ended (shown by `brain status`)."""
        self.set_meta({"last_rebuild_result": json.dumps(result, ensure_ascii=False)})

    def last_rebuild(self) -> dict[str, Any] | None:
        """When the last full rebuild ran and how it ended (None: never)."""
        raw = self.get_meta("last_rebuild_result")
        return json.loads(raw) if raw else None

    def stemmer(self) -> str:
        """The stemmer the index's keyword copies were made with; queries must be stemmed the same way."""
        return self.get_meta("stemmer") or UNSTEMMED

    def languages(self) -> list[str] | None:
        """The languages the files' keyword fields were stemmed in (record_languages), None when never recorded."""
        recorded = self.get_meta("languages")
        return recorded.split(",") if recorded else None


def file_row(row: Sequence[Any]) -> FileRow:
    """A FileRow from the columns FILE_COLUMNS names, in that order (both stores select them alike)."""
    return FileRow(row[0], row[1], row[2], row[3], row[4], row[5], json.loads(row[6] or "{}"), row[7], row[8],
                   json.loads(row[9]) if row[9] else [], row[10], row[11], json.loads(row[12]) if row[12] else [])


def chunk_row(r: Sequence[Any]) -> ChunkRow:
    """A ChunkRow from the columns CHUNK_COLUMNS names, in that order."""
    return ChunkRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7]) if r[7] else [])


FILE_COLUMNS = (
    "id, path, hash, size, mtime_ns, indexed_at, metadata, status, warning, page_starts, title, language, page_labels"
)


def file_columns(labelled: bool) -> str:
    """FILE_COLUMNS as a store selects them: an older schema opened read-only has no page_labels (NULL)."""
    return FILE_COLUMNS if labelled else FILE_COLUMNS.replace("page_labels", "NULL")


def link_row(row: Sequence[Any]) -> tuple[int, Link]:
    """(file id, Link) from LINK_COLUMNS as both stores select them."""
    return int(row[0]), Link(target=row[3], kind=row[2], line=int(row[1]), heading=row[4], alias=row[5],
                             plain=bool(row[6]))


def link_values(file_id: int, links: Sequence[Link]) -> list[tuple[Any, ...]]:
    """Each link's columns (LINK_COLUMNS, then its name_key) for an insert."""
    return [(file_id, link.line, link.kind, link.target, link.heading, link.alias, link.plain, name_key(link.target))
            for link in links]


def kept_text(row: Sequence[Any] | None) -> KeptText | None:
    """A KeptText from (text, page_starts, page_labels) as both stores select them."""
    if row is None:
        return None
    return KeptText(row[0], json.loads(row[1]) if row[1] else [], json.loads(row[2]) if row[2] else [])


def json_list(values: Sequence[Any]) -> str | None:
    """A list as the stores keep it in a TEXT column: JSON, or NULL when empty."""
    return json.dumps(list(values), ensure_ascii=False) if values else None
CHUNK_COLUMNS = "id, file_id, seq, text, heading_path, start_line, end_line, pages"


def in_batches(keys: Iterable[Any], size: int = 500) -> Iterator[list[Any]]:
    """Keys a batch at a time, each once (a statement takes only so many parameters)."""
    wanted = list(dict.fromkeys(keys))
    for start in range(0, len(wanted), size):
        yield wanted[start : start + size]
