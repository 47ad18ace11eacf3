"""The keyword tokens the server's index holds: made by FTS5's own tokenizer, so both stores hold the same words.

brain stems each file's words in its language (the indexer), then each word goes
through FTS5's tokenizer (SQLite in memory: unicode61, porter when the index has
it) and PostgreSQL gets a ready `tsvector` literal (weights A title/meta, B
heading/path, D body) and the postings bm25() is summed from. PostgreSQL's own
parser and language configurations would split `FT-2026-0412` into signed
numbers and stem the query a second time.
"""

from __future__ import annotations

import functools
import re
import sqlite3
import threading
from collections.abc import Sequence

from ...stemming import WORD as _TOKEN
from ..base import FTS_TOKENIZERS

# PostgreSQL has four weight classes (D, C, B, A); the five fields share them by FIELD_WEIGHTS.
FIELD_CLASSES = {"title": "A", "meta": "A", "heading": "B", "path": "B", "body": "D"}
MAX_POSITION = 16383  # the largest position a tsvector stores; later words share it
MAX_LEXEME_BYTES = 2046  # the longest word a tsvector (or tsquery) holds
_TERM = re.compile(r'"((?:[^"]|"")*)"')  # a quoted FTS5 term (search.fts_match makes only these, OR-joined)

# FTS5's own tokenizers, run in memory: the server's postings must hold exactly the tokens the
# SQLite store's FTS5 index holds, and an imitation did not (Snowball's porter and Python's folding
# differ from FTS5's on about one text in ten: "cardiologi"/"cardiolog", "ca2"/"ca²").
_FTS5: dict[bool, tuple[sqlite3.Connection, threading.Lock]] = {}
_FTS5_LOCK = threading.Lock()


def _fts5(porter: bool) -> tuple[sqlite3.Connection, threading.Lock]:
    with _FTS5_LOCK:
        if porter not in _FTS5:
            db = sqlite3.connect(":memory:", check_same_thread=False)
            tokenizer = FTS_TOKENIZERS[1] if porter else FTS_TOKENIZERS[0]
            db.execute(f"CREATE VIRTUAL TABLE words USING fts5(word, tokenize='{tokenizer}')")  # a constant
            db.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab(words, 'instance')")
            _FTS5[porter] = (db, threading.Lock())
        return _FTS5[porter]


@functools.lru_cache(maxsize=200_000)
def _word_tokens(word: str, porter: bool) -> tuple[str, ...]:
    """The tokens FTS5 stores for one word as the text has it (nearly always one), with or without porter."""
    db, lock = _fts5(porter)
    with lock:
        db.execute("INSERT INTO words(rowid, word) VALUES (1, ?)", (word,))
        try:
            return tuple(row[0] for row in db.execute("SELECT term FROM tokens ORDER BY offset"))
        finally:
            db.execute("DELETE FROM words")


def index_tokens(text: str, porter: bool) -> list[str]:
    """The tokens FTS5 would store for `text` (already stemmed by brain), each word through FTS5's own tokenizer.

    A token past MAX_LEXEME_BYTES is left out: PostgreSQL refuses it in a tsvector
    (one such word stopped the whole run), and nobody searches for it by keyword.
    """
    return [token for word in _TOKEN.findall(text) if len(word) <= MAX_LEXEME_BYTES
            for token in _word_tokens(word, porter) if len(token.encode("utf-8")) <= MAX_LEXEME_BYTES]


def _quote(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


_CLASS_INDEX = {"A": 0, "B": 1, "C": 2, "D": 3}


def keyword_vector(fields: Sequence[tuple[str, str]], porter: bool) -> tuple[str, int, dict[str, list[int]]]:
    """(a tsvector in PostgreSQL's input syntax, the number of tokens, each token's count per weight class A-D).

    A position is left empty between fields, so a phrase never matches across
    two of them, as FTS5's separate columns never do. The token count is
    FTS5's row size, which bm25() compares with the average; the counts are
    the chunk's postings (a tsvector keeps at most 256 positions of a word,
    the postings every occurrence).
    """
    positions: dict[str, list[str]] = {}
    counts: dict[str, list[int]] = {}
    at = count = 0
    for name, text in fields:
        weight = FIELD_CLASSES[name]
        for token in index_tokens(text, porter):
            at = min(at + 1, MAX_POSITION)
            count += 1
            positions.setdefault(token, []).append(f"{at}{weight}")
            counts.setdefault(token, [0, 0, 0, 0])[_CLASS_INDEX[weight]] += 1
        at = min(at + 1, MAX_POSITION)
    return " ".join(f"{_quote(t)}:{','.join(p[:256])}" for t, p in positions.items()), count, counts


def tsvector_literal(fields: Sequence[tuple[str, str]], porter: bool) -> str:
    """The tsvector of keyword_vector, alone."""
    return keyword_vector(fields, porter)[0]


def query_phrases(match: str, porter: bool) -> list[tuple[str, ...]]:
    """The phrases (token tuples) of an FTS5 MATCH expression as search.py builds it: quoted words or phrases,
    OR-joined."""
    phrases: list[tuple[str, ...]] = []
    for raw in _TERM.findall(match):
        tokens = tuple(index_tokens(raw.replace('""', '"'), porter))
        if tokens:  # repeats kept: FTS5's bm25() counts a phrase each time the expression names it
            phrases.append(tokens)
    return phrases


def tsquery_literal(match: str, porter: bool) -> str | None:
    """The FTS5 MATCH expression search.py builds as a tsquery (phrases OR-joined); None: no token."""
    return tsquery_of(query_phrases(match, porter))


def tsquery_of(phrases: Sequence[tuple[str, ...]]) -> str | None:
    return " | ".join(dict.fromkeys("(" + " <-> ".join(_quote(t) for t in p) + ")" for p in phrases)) or None


