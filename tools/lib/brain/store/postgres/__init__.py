"""The index on a PostgreSQL server with pgvector (a team's): one schema per corpus, the interface of store/base.py.

`corpus` holds the store, `connection` the server, its URL, corpus names and
locks, `tokens` the keyword tokens (FTS5's own), `bm25` the ranking summed from
postings, `schema` the tables and their migrations.
"""

from __future__ import annotations

from .connection import (
    INSTALL_HINT,
    REBUILD_SUFFIX,
    SCHEMA_PREFIX,
    corpus_writer_lock,
    is_postgres_location,
    schema_name,
    shown_location,
    split_location,
)
from .corpus import PostgresStore, index_exists, rebuilding
from .schema import HNSW_INDEX, HNSW_THRESHOLD, SCHEMA_VERSION

__all__ = [
    "HNSW_INDEX", "HNSW_THRESHOLD", "INSTALL_HINT", "REBUILD_SUFFIX", "SCHEMA_PREFIX", "SCHEMA_VERSION",
    "PostgresStore",
    "corpus_writer_lock", "index_exists", "is_postgres_location", "rebuilding", "schema_name", "shown_location",
    "split_location",
]
