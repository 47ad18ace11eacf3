"""The index: every SQL statement of brain behind one written interface, `Index` (base.py).

`open_store(settings)` gives the index the settings name: the SQLite file at
`database` (sqlite.py, the default), or a schema on the PostgreSQL server that
`store` names (postgres/, for a team). Every other room opens its index through
this package, so nothing above the store knows which one it has. A full rebuild
is `with rebuilding(settings, …) as fresh:`: fill `fresh`, and it replaces the
live index atomically when the block ends (or is dropped, if it fails).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from .base import (
    FIELD_WEIGHTS,
    FIELDS,
    FTS_TOKENIZER,
    FTS_TOKENIZERS,
    KEYWORD_FIELDS,
    LINKS_KEPT,
    UNSTEMMED,
    ChunkRow,
    FileKeywords,
    FileRow,
    Index,
    KeptText,
    NewChunk,
    PendingVector,
    TIMESTAMP_FORMAT,
    timestamp,
)
from .locks import server_writer_lock, writer_lock
from .sqlite import SCHEMA_VERSION, SqliteStore

__all__ = [
    "FIELDS", "FIELD_WEIGHTS", "FTS_TOKENIZER", "FTS_TOKENIZERS", "KEYWORD_FIELDS", "LINKS_KEPT", "SCHEMA_VERSION",
    "TIMESTAMP_FORMAT", "UNSTEMMED",
    "ChunkRow", "FileKeywords", "FileRow", "Index", "KeptText", "NewChunk", "PendingVector", "SqliteStore",
    "hide_password", "index_exists", "index_name", "open_store", "rebuilding", "server_writer_lock", "store_location",
    "timestamp", "writer_lock",
]

# `store` (brain.toml or BRAIN_STORE) empty: the SQLite file at `database`; a
# postgresql:// URL: that server, one schema per notes folder.


def store_location(settings: Any) -> str:
    """The `store` setting: '' for the SQLite file, else a PostgreSQL URL."""
    return str(settings.values.get("store") or "")


def open_store(
    settings: Any, *, create: bool = True, readonly: bool = False, tokenizer: str | None = None,
    stemmer: str | None = None
) -> Index:
    """The index of these settings: a SqliteStore on the SQLite file, or a PostgresStore on the server `store` names."""
    location = store_location(settings)
    if location:
        from .postgres import PostgresStore

        store = PostgresStore(
            location, settings.root.name, create=create, readonly=readonly, tokenizer=tokenizer, stemmer=stemmer
        )
        if store.created and settings.database_path.exists():
            # A folder moving to the server: the vectors its SQLite index holds are not computed again.
            store.import_embedding_cache(settings.database_path)
        return store
    return SqliteStore(settings.database_path, create=create, readonly=readonly, tokenizer=tokenizer, stemmer=stemmer)


def hide_password(location: str) -> str:
    """A store URL as it may be shown (`config show`): a password in it (from BRAIN_STORE) replaced by ***."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(location)
    netloc = parts.netloc
    if parts.password:
        userinfo, _, host = netloc.rpartition("@")
        netloc = f"{userinfo.split(':', 1)[0]}:***@{host}"
    query = urlencode(
        [(k, "***" if k == "password" else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)],
        safe="*/:",
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def index_exists(settings: Any) -> bool:
    """True when the index of these settings has been made (the file exists, or the server holds the corpus)."""
    location = store_location(settings)
    if location:
        from .postgres import index_exists as on_server

        return on_server(location, settings.root.name)
    return settings.database_path.exists()


def index_name(settings: Any) -> str:
    """How reports name the index: the SQLite file's path, or the server and schema (never a password)."""
    location = store_location(settings)
    if location:
        from .postgres import schema_name, shown_location, split_location

        return f"{shown_location(location)}#{schema_name(split_location(location)[1] or settings.root.name)}"
    return str(settings.database_path)


@contextlib.contextmanager
def rebuilding(settings: Any, *, tokenizer: str, stemmer: str) -> Iterator[Index]:
    """A new, empty index for these settings; when the block ends without error it replaces the live one atomically.

    Readers see the old index until then and the new one after, never a mix;
    on any failure the new one is removed and the old one stays as it was. Call
    it under the writer lock.
    """
    location = store_location(settings)
    if location:
        from .postgres import rebuilding as on_server

        with on_server(location, settings.root.name, tokenizer=tokenizer, stemmer=stemmer) as fresh:
            yield fresh
        return
    from .sqlite import rebuilding as in_file

    with in_file(settings.database_path, tokenizer=tokenizer, stemmer=stemmer) as fresh_file:
        yield fresh_file
