"""Word stems for the keyword half: a Snowball stemmer applied before FTS5's own tokenizer (pure).

FTS5 tokenizers cannot be written from Python's sqlite3, so the index keeps a
stemmed copy of each chunk's text for FTS5 to read, and every query is stemmed
the same way. Each word is folded (lower case, no accents) and replaced by its
stem; everything between words stays, so identifiers (`FT-2026-0412`) and
phrases keep their shape. The FTS5 tokenizer (porter by default) still runs on
the result: Italian words lose their Italian endings here, English ones their
English endings there (measured in docs/decisions/08-italian-stemming.md).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

NONE = "none"
AUTO = "auto"
# The Snowball languages people are likely to write notes in; `none` keeps words as they are, `auto` stems
# each file in the language it is detected to be written in (DETECTED), and matches queries both ways.
STEMMERS = (AUTO, NONE, "italian", "english", "french", "german", "spanish", "portuguese", "dutch")
DETECTED = ("italian", "english")  # the languages `auto` tells apart; the first is never a guess

# Function words of each language: the keyword query leaves them out (search.STOP_WORDS) and
# language detection counts them (a note's most frequent words are its function words). The Italian
# list has the interrogatives, possessives and demonstratives the English one has (where/dove,
# why/perché, what/cosa, my/mio, this/questo: docs/decisions/48-italian-question-words.md); both
# hold the quantity question words (many, much, quanto: docs/decisions/62-how-many-and-quanti.md).
FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "english": frozenset("""
a an and are as at be been but by can could did do does for from had has have how i if in into is it its
me my no not of on or our she so than that the their them then there these they this those to was we were
what when where which who why will with would you your
many much
""".split()),
    "italian": frozenset("""
ad agli ai al alla alle allo anche che chi ci come con da dai dal dalla dalle degli dei del della delle
dello di e ed era gli ha hanno ho i il in la le lo ma mi ne negli nei nel nella nelle non o per più quale
quali quando se si sono su sua sue sui sul sulla suo tra un una uno
dove perché perche cosa è mio mia miei mie tuo tua tuoi tue nostro nostra nostri nostre loro
questo questa questi queste quello quella quelli quelle
quanto quanta quanti quante
""".split()),
}
# More words that only one of the languages uses often, read by detect_language only (the query's
# stop words stay FUNCTION_WORDS: they were measured as such, docs/decisions/06-function-words.md).
_DETECTION_EXTRA: dict[str, frozenset[str]] = {
    "english": frozenset("about after all also any because before being both each just more most only other over "
                         "should some such through under until very while".split()),
    "italian": frozenset("a è ancora avere c cosa così dopo dove essere fatto già ogni perché poi quello questa questi "
                         "questo sempre senza solo stata stato tutti tutto".split()),
}
# Words read to guess a file's language: its opening is enough, and bounds the work on huge files.
DETECT_CHARS = 20_000
WORD = re.compile(r"[^\W_]+")  # what FTS5's unicode61 tokenizer keeps as a token
_MEMO_LIMIT = 200_000  # distinct words remembered; notes repeat their vocabulary


def detect_language(text: str) -> str:
    """The language of DETECTED that `text` is most likely written in: the one whose own function words it uses most.

    Words both languages share ("a", "in", "i", "se"…) count for neither. A text
    with none of them (a list of names, code) is read as English, the language
    whose stemmer changes unknown words least.
    """
    italian, english = _function_word_counts(text)
    return "italian" if italian > english else "english"


def stated_language(text: str) -> str | None:
    """The language of DETECTED a short text (a query) says it is in by its function words; None when it does
    not say ("Firebase video esercizi", or as many words of each)."""
    italian, english = _function_word_counts(text)
    return "italian" if italian > english else "english" if english > italian else None


def _function_word_counts(text: str) -> tuple[int, int]:
    """(Italian, English) function words in `text`'s opening, each counted only when the other language lacks it."""
    it_words = FUNCTION_WORDS["italian"] | _DETECTION_EXTRA["italian"]
    en_words = FUNCTION_WORDS["english"] | _DETECTION_EXTRA["english"]
    italian = english = 0
    for word in WORD.findall(text[:DETECT_CHARS].lower()):
        if word in it_words:
            italian += word not in en_words
        elif word in en_words and word not in it_words:
            english += 1
    return italian, english


def query_languages(index_stemmer: str, present: Sequence[str] | None = None) -> tuple[str, ...]:
    """The stemmers a query goes through for an index built with `index_stemmer`.

    Under `auto`, the detected languages its files are in (`present`; all of
    DETECTED when unknown): a query's Italian forms only add noise to an index of
    English notes (SciFact: 0.6835 with English forms alone, 0.6470 with both;
    docs/decisions/10-auto-stemming.md).
    """
    if index_stemmer != AUTO:
        return (index_stemmer,)
    return tuple(language for language in DETECTED if present is None or language in present) or DETECTED


@functools.lru_cache(maxsize=None)
def stemmer(language: str) -> Callable[[str], str]:
    """A function text → the same text with each word stemmed (identity for `none`)."""
    if language == NONE:
        return lambda text: text
    if language not in STEMMERS or language == AUTO:
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

    return lambda text: WORD.sub(word, text)
