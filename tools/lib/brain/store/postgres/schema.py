"""The tables of one corpus's schema on the server, the statements that migrate them, and the vector index's
constants."""

from __future__ import annotations

from ..base import LINKS_BEFORE, PDF_TEXT_BEFORE_LABELS

# The tables of SQLite schema 7 (numbered apart: 4-6 were SQLite's 4, 7 adds pending_vectors
# as SQLite's 5 does, 8 page labels as its 6, 9 links as its 7); vectors in pgvector, keywords in a
# weighted tsvector.
SCHEMA_VERSION = 9

# Each note's links as written (links.py), resolved when read (neighbours.py); schema 9.
LINKS = """CREATE TABLE IF NOT EXISTS @.links (
    id BIGSERIAL PRIMARY KEY,
    file_id BIGINT NOT NULL REFERENCES @.files(id) ON DELETE CASCADE,
    line INTEGER NOT NULL,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    heading TEXT NOT NULL DEFAULT '',
    alias TEXT NOT NULL DEFAULT '',
    plain BOOLEAN NOT NULL DEFAULT false,
    key TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS links_file ON @.links(file_id);
CREATE INDEX IF NOT EXISTS links_key ON @.links(key)"""

TABLES = """
CREATE TABLE IF NOT EXISTS @.state (
    one BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
    schema_version INTEGER NOT NULL,
    data_version BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS @.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS @.files (
    id BIGSERIAL PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    hash TEXT NOT NULL,
    size BIGINT NOT NULL,
    mtime_ns BIGINT NOT NULL,
    indexed_at TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'ok',
    warning TEXT,
    page_starts TEXT,
    title TEXT NOT NULL DEFAULT '',
    language TEXT NOT NULL DEFAULT '',
    meta_text TEXT NOT NULL DEFAULT '',
    page_labels TEXT
);
CREATE INDEX IF NOT EXISTS files_hash ON @.files(hash);
CREATE TABLE IF NOT EXISTS @.chunks (
    id BIGSERIAL PRIMARY KEY,
    file_id BIGINT NOT NULL REFERENCES @.files(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    text TEXT NOT NULL,
    heading_path TEXT NOT NULL DEFAULT '',
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    pages TEXT,
    embed_hash TEXT,
    vector #VECTOR#,
    fts_heading TEXT NOT NULL DEFAULT '',
    fts_text TEXT NOT NULL DEFAULT '',
    fts_title TEXT NOT NULL DEFAULT '',
    fts_meta TEXT NOT NULL DEFAULT '',
    fts_path TEXT NOT NULL DEFAULT '',
    tsv TSVECTOR NOT NULL,
    length INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS chunks_file ON @.chunks(file_id);
-- bm25()'s totals (chunks, their average length) after each write: read from this, not from the wide rows.
CREATE INDEX IF NOT EXISTS chunks_length ON @.chunks(length);
CREATE INDEX IF NOT EXISTS chunks_tsv ON @.chunks USING gin(tsv);
CREATE TABLE IF NOT EXISTS @.postings (
    lexeme TEXT COLLATE "C" NOT NULL,
    chunk_id BIGINT NOT NULL REFERENCES @.chunks(id) ON DELETE CASCADE,
    file_id BIGINT NOT NULL,
    length INTEGER NOT NULL,
    a INTEGER NOT NULL,
    b INTEGER NOT NULL,
    c INTEGER NOT NULL,
    d INTEGER NOT NULL,
    -- Covering: a word's postings are read from the index alone, not from heap pages all over the table.
    PRIMARY KEY (lexeme, chunk_id) INCLUDE (file_id, length, a, b, c, d)
);
CREATE INDEX IF NOT EXISTS postings_chunk ON @.postings(chunk_id);
CREATE TABLE IF NOT EXISTS @.embedding_cache (
    hash TEXT NOT NULL,
    model TEXT NOT NULL,
    vector BYTEA NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (hash, model)
);
CREATE TABLE IF NOT EXISTS @.extracted_text (
    hash TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    page_starts TEXT,
    created_at TEXT NOT NULL,
    page_labels TEXT
);
CREATE TABLE IF NOT EXISTS @.pending_vectors (
    chunk_id BIGINT PRIMARY KEY REFERENCES @.chunks(id) ON DELETE CASCADE,
    text TEXT NOT NULL
);
""" + LINKS + "\n"

# How many chunks hold each word (as FTS5's vocabulary table counts them), kept by triggers on
# postings: a typo's near words are looked up among the words of one first letter, and counting
# them from postings read millions of rows at 1M chunks (1-10 s, again after every write).
# The function finds its tables through the trigger's schema, so a rebuilt schema renamed into
# place keeps counting. Writers of different files take turns from their first change of postings
# to their commit (a lock per transaction): every file shares common words' rows, and two
# transactions each holding some of them while waiting for the other's would deadlock.
LEXICON = (
    'CREATE TABLE IF NOT EXISTS @.lexicon (lexeme TEXT COLLATE "C" PRIMARY KEY, chunks BIGINT NOT NULL)',
    "CREATE OR REPLACE FUNCTION @.count_lexemes() RETURNS trigger LANGUAGE plpgsql AS $body$ BEGIN"
    " PERFORM pg_advisory_xact_lock(hashtext(TG_TABLE_SCHEMA || ':lexicon'));"
    " EXECUTE format('INSERT INTO %I.lexicon AS l SELECT lexeme, %s count(*) FROM %s GROUP BY lexeme"
    " ON CONFLICT (lexeme) DO UPDATE SET chunks = l.chunks + excluded.chunks', TG_TABLE_SCHEMA,"
    " CASE WHEN TG_OP = 'INSERT' THEN '' ELSE '-' END, CASE WHEN TG_OP = 'INSERT' THEN 'added' ELSE 'removed' END);"
    " RETURN NULL; END $body$",
    # Dropped and made again, not CREATE OR REPLACE TRIGGER: PostgreSQL 13 has no such statement.
    "DROP TRIGGER IF EXISTS postings_added ON @.postings",
    "CREATE TRIGGER postings_added AFTER INSERT ON @.postings REFERENCING NEW TABLE AS added"
    " FOR EACH STATEMENT EXECUTE FUNCTION @.count_lexemes()",
    "DROP TRIGGER IF EXISTS postings_removed ON @.postings",
    "CREATE TRIGGER postings_removed AFTER DELETE ON @.postings REFERENCING OLD TABLE AS removed"
    " FOR EACH STATEMENT EXECUTE FUNCTION @.count_lexemes()",
)

# Statements that take a schema from version N-1 to N (`@.` names the schema); 4 is the first.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    # 5: tokens from FTS5's own tokenizer. Schema 4's imitation made other tokens of some words
    # ("cardiologi"), so its recorded tokenizer stops matching the settings' and the next
    # `brain index` (a hook's, the nightly rebuild) rebuilds the corpus from its cached vectors.
    5: ("UPDATE @.meta SET value = value || ' (tokens made before schema 5)' WHERE key = 'fts_tokenizer'",),
    # 6: the words' chunk counts, counted once from the postings (a few minutes at 1M chunks).
    6: (*LEXICON, "DELETE FROM @.lexicon",
        "INSERT INTO @.lexicon SELECT lexeme, count(*) FROM @.postings GROUP BY lexeme"),
    # 7: chunks written before their vector (keywords first, vectors after) wait here.
    7: ("CREATE TABLE IF NOT EXISTS @.pending_vectors (chunk_id BIGINT PRIMARY KEY REFERENCES @.chunks(id)"
        " ON DELETE CASCADE, text TEXT NOT NULL)",),
    # 8: each PDF's page labels beside its page starts; a corpus with PDFs records PDF_TEXT_BEFORE_LABELS,
    # so its next `brain index` extracts them again, with labels.
    8: ("ALTER TABLE @.files ADD COLUMN IF NOT EXISTS page_labels TEXT",
        "ALTER TABLE @.extracted_text ADD COLUMN IF NOT EXISTS page_labels TEXT",
        "INSERT INTO @.meta(key, value) SELECT 'pdf_text', '" + PDF_TEXT_BEFORE_LABELS + "' WHERE EXISTS"
        " (SELECT 1 FROM @.files WHERE lower(path) LIKE '%.pdf')"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value"),
    # 9: each note's links; a corpus with files records LINKS_BEFORE, so its next `brain index` reads them.
    9: (*LINKS.split(";\n"),
        "INSERT INTO @.meta(key, value) SELECT 'links', '" + LINKS_BEFORE + "' WHERE EXISTS (SELECT 1 FROM @.files)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value"),
}


# Vector search. Under HNSW_THRESHOLD embedded chunks a reader keeps every vector in memory and
# scans them exactly (as on SQLite): about 12 ms at 100k chunks on a quiet machine, every answer
# exact. From it on, the server's HNSW index answers instead: the exact scan grows with the corpus
# (~135 ms at 1M), each reader holds the whole matrix (154 MB at 100k) and fetches it again after
# every write; the index answered in 17.5 ms at load 6 with recall@10 0.998 at 100k.
# Measured with tools/bench/bench_postgres.py; docs/performance.md, "The PostgreSQL store".
HNSW_THRESHOLD = 100_000
# The index holds the vectors as halfvec (16-bit floats): half the index size of `vector`, the
# same recall@10 (0.998 at 100k) and build time in the bench; candidates are then scored from the
# float32 column, so a cosine means the same number on both paths. At 1M chunks pgvector's
# defaults (m 16, ef_construction 64) recalled 0.92-0.97 of the exact top 10; this graph, twice
# the links and twice the search while building, recalled 0.994 (and twice the build time).
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 128
# Candidates looked at per query (fusion asks for 200): one per thousand chunks, between these.
# At 100k, 400 recalled 0.998-1.0 (1,000 cost twice the time for nothing); at 1M, 400 recalled
# 0.970 (one query 0.1) and 1,000 (pgvector's ceiling) 0.994 in 23 ms.
HNSW_EF_SEARCH_MIN = 400
HNSW_EF_SEARCH_MAX = 1000
# Memory a build may use: the 1M graph (1.3 GB) fits, and a graph that fits is built several
# times faster; a session setting of the build only, taken as needed.
HNSW_BUILD_MEMORY = "2GB"
HNSW_INDEX = "chunks_hnsw"
SPARE_CONNECTION_WAIT = 0.01  # seconds a store waits for a second pooled connection before opening its own

# A file's postings, found through its chunks: postings has no index on file_id (a key
# that only renames read), and the table scan cost 8 s a renamed file at 1M chunks.
DELETE_FILE_POSTINGS = "DELETE FROM @.postings WHERE chunk_id IN (SELECT id FROM @.chunks WHERE file_id = %s)"



def hnsw_ef_search(chunks: int) -> int:
    """How many candidates an HNSW search of a corpus this size looks at."""
    return max(HNSW_EF_SEARCH_MIN, min(HNSW_EF_SEARCH_MAX, chunks // 1000))
