"""Word stems for the keyword half: a Snowball stemmer applied before FTS5's own tokenizer (pure).

FTS5 tokenizers cannot be written from Python's sqlite3, so the index keeps a
stemmed copy of each chunk's text for FTS5 to read, and every query is stemmed
the same way. Each word is folded (lower case, no accents) and replaced by its
stem; everything between words stays, so identifiers (`FT-2026-0412`) and
phrases keep their shape. The FTS5 tokenizer (porter by default) still runs on
the result: Italian words lose their Italian endings here, English ones their
English endings there (measured in docs/evaluation.md, decision 8).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

NONE = "none"
# The Snowball languages people are likely to write notes in; `none` keeps words as they are.
STEMMERS = (NONE, "italian", "english", "french", "german", "spanish", "portuguese", "dutch")
_WORD = re.compile(r"[^\W_]+")  # what FTS5's unicode61 tokenizer keeps as a token
_MEMO_LIMIT = 200_000  # distinct words remembered; notes repeat their vocabulary


@functools.lru_cache(maxsize=None)
def stemmer(language: str) -> Callable[[str], str]:
    """A function text → the same text with each word stemmed (identity for `none`)."""
    if language == NONE:
        return lambda text: text
    if language not in STEMMERS:
        raise ValueError(f"unknown stemmer {language!r}; use one of: {', '.join(STEMMERS)}")
    import snowballstemmer  # uses PyStemmer's C code when it is installed

    from .excerpt import fold  # imported here: the settings read STEMMERS without loading numpy

    stem_word = snowballstemmer.stemmer(language).stemWord
    memo: dict[str, str] = {}

    def word(match: re.Match[str]) -> str:
        raw = match.group()
        found = memo.get(raw)
        if found is None:
            if len(memo) >= _MEMO_LIMIT:
                memo.clear()
            found = memo[raw] = stem_word(fold(raw))
        return found

    return lambda text: _WORD.sub(word, text)
