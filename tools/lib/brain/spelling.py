"""Typos in the keyword half: a query word the index (almost) never saw is also searched as its nearest index words.

The index's vocabulary is FTS5's own (an fts5vocab table over the keyword
fields): the words as stored, already stemmed. A query word is brought to the
same form (Snowball stem in each query language, then porter when the
tokenizer has it); when that form is in no chunk, or in very few while a word
one or two edits away is in many, the nearest words (edit distance ≤ 2, a swap
of two neighbouring letters counting as one edit; found through shared
trigrams, then checked exactly) are searched too, at a lower weight. Only index
words that begin with the typed word's first or
second letter are read, so a large index is never read whole: a wrong or
missing first letter is not corrected (a swap of the first two letters, or an
extra letter in front, is). Short words are never corrected and middling ones by one edit
only (max_edits): at that length two edits turn any word into many others.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .excerpt import fold
from .stemming import DETECTED
from .stemming import WORD as _TOKEN
from .stemming import stemmer as stemmer_for

MIN_WORD_CHARS = 4  # shorter typed words are not corrected (`tea` is two edits from hundreds of words)
MIN_FORM_CHARS = 5  # nor are words whose stem is shorter (`scaduto` → `scad` is one edit from `scan`)
TWO_EDITS_FROM = 8  # stems this long may be two edits off; shorter ones one (as search engines' "auto" fuzziness)
MAX_DISTANCE = 2  # edits (insert, delete, replace, swap of neighbours) between a typed word and a correction
MAX_EXPANSIONS = 2  # corrections searched per word: the nearest, then the most frequent
# A word in at most RARE_CHUNKS chunks is corrected only towards words RARE_RATIO
# times more frequent: a rare real word (a name, a term of art) keeps its own matches.
RARE_CHUNKS = 2
RARE_RATIO = 20
# The BM25 of a correction counts at this share of a typed word's: a note that
# matches what was typed stays above one that matches only a guess.
EXPANSION_WEIGHT = 0.5
# A word of the language's dictionary is no typo, even where no note holds it ("caret" in a book that never
# says it is not "careful"): the word lists of the languages the index is stemmed in (pyspellchecker's).
DICTIONARIES = {"english": "en", "italian": "it", "french": "fr", "german": "de", "spanish": "es",
                "portuguese": "pt", "dutch": "nl"}
FAMILY_CHARS = 6  # a dictionary word's correction must begin as it does for this many letters: its own family
ANSWERS_KEPT = 10_000  # nearest() answers a vocabulary remembers
CANDIDATES_CHECKED = 300  # vocabulary words per query word whose edit distance is computed (most trigrams shared first)



@dataclass(frozen=True)
class Expansion:
    """One query word the index lacks (or nearly), and the index words searched for it."""

    word: str  # as typed
    terms: tuple[str, ...]  # index forms searched (stemmed, as FTS5 stores them)
    shown: tuple[str, ...]  # the same as people write them, for "also searched: …"


@functools.lru_cache(maxsize=None)
def _porter() -> Callable[[str], str]:
    import snowballstemmer

    return snowballstemmer.stemmer("porter").stemWord


SCANS_BEFORE_SET = 20  # lookups a dictionary answers from its text before the process (a server) builds a set


class _WordList:
    """One language's list in pyspellchecker: a JSON object whose keys are its lower-case words. A whole `brain
    search` looks up a few words, each found in the text in 1-2 ms, where parsing the JSON took 0.15-0.2 s per
    language on every such search; a process that has looked up SCANS_BEFORE_SET words (a server) parses it once
    and then looks words up in a set."""

    def __init__(self, text: bytes) -> None:
        self.text = text
        self.words: frozenset[str] | None = None
        self.scans = 0

    def __contains__(self, word: str) -> bool:
        if self.words is None and self.scans >= SCANS_BEFORE_SET:
            self.words = frozenset(json.loads(self.text))
        if self.words is not None:
            return word in self.words
        self.scans += 1
        return '"' not in word and b'"' + word.encode() + b'":' in self.text  # the key exactly, as JSON writes it


@functools.lru_cache(maxsize=None)
def _dictionary(code: str) -> _WordList | None:
    """One language's word list, read once, or None without pyspellchecker."""
    import gzip
    from importlib.resources import files

    try:
        return _WordList(gzip.decompress((files("spellchecker") / "resources" / f"{code}.json.gz").read_bytes()))
    except (ModuleNotFoundError, OSError):
        return None


def in_dictionary(word: str, languages: Sequence[str]) -> bool:
    """True when `word` is a word of one of `languages` (Snowball stemmer names), or of English or Italian, as
    its dictionary spells it."""
    folded = word.lower()
    for language in _with_query_languages(languages):
        code = DICTIONARIES.get(language)
        words = _dictionary(code) if code else None
        if words is not None and folded in words:
            return True
    return False


def _with_query_languages(languages: Sequence[str]) -> tuple[str, ...]:
    """`languages` and the ones queries are written in (stemming.DETECTED), whatever the notes are stemmed in."""
    return tuple(dict.fromkeys((*languages, *DETECTED)))


def _same_family(term: str, forms: Sequence[str], word_stems: set[str], languages: Sequence[str]) -> bool:
    """True when index word `term` is another form of the typed word: one of its Snowball stems `word_stems`
    in `languages` ("indici" and "indice" are "indic"), or the same first FAMILY_CHARS letters as one of its
    index `forms` ("appartiene" and "appartenga"). "parts" is no form of "party" (stems "part" and "parti")."""
    if any(len(os.path.commonprefix((term, form))) >= FAMILY_CHARS for form in forms):
        return True
    return not word_stems.isdisjoint(stems(term, languages))


def index_forms(word: str, languages: Sequence[str], porter: bool) -> list[str]:
    """The forms `word` takes in the index (one per query language), as FTS5's tokenizer stores them."""
    return list(dict.fromkeys(_porter()(s) if porter else s for s in stems(word, languages)))


def stems(word: str, languages: Sequence[str]) -> list[str]:
    """`word` stemmed in each query language: what a query hands FTS5 (its tokenizer does the rest)."""
    return list(dict.fromkeys(fold(stemmer_for(language)(word)) for language in languages))


def edit_distance(a: str, b: str, limit: int) -> int:
    """Edits between a and b (insert, delete, replace, or swap two adjacent letters), or limit + 1 once it
    must exceed `limit`.

    The optimal string alignment distance: Levenshtein's, plus a swap of two
    neighbouring letters counted as one edit ("grpah" → "graph", "vidoe" →
    "video"), the commonest slip of a typing hand, which Levenshtein counts as two
    and so never corrected in a word of five to seven letters.
    """
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    # Only cells within `limit` of the diagonal can stay under it: the rest hold `over`
    # (half the work of the full table, on every query word the index lacks).
    over = limit + 1
    before: list[int] = []  # the row two letters back, for swaps
    previous = [j if j <= limit else over for j in range(len(b) + 1)]
    for i in range(1, len(a) + 1):
        ca = a[i - 1]
        current = [over] * (len(b) + 1)
        current[0] = min(i, over)
        for j in range(max(1, i - limit), min(len(b), i + limit) + 1):
            cb = b[j - 1]
            cost = previous[j - 1] + (ca != cb)  # comparisons, not min(): this loop is the hot one
            if previous[j] + 1 < cost:
                cost = previous[j] + 1
            if current[j - 1] + 1 < cost:
                cost = current[j - 1] + 1
            if before and j > 1 and ca == b[j - 2] and a[i - 2] == cb and before[j - 2] + 1 < cost:
                cost = before[j - 2] + 1
            current[j] = cost if cost < over else over
        # A swap reaches back two rows: only when both are past the limit can nothing come back under it.
        if min(current) > limit and min(previous) > limit:
            return over
        before, previous = previous, current
    return previous[-1]


def max_edits(form: str) -> int:
    """How many edits a stem of this length may be from its correction (0: not corrected)."""
    if len(form) < MIN_FORM_CHARS:
        return 0
    return MAX_DISTANCE if len(form) >= TWO_EDITS_FROM else 1


def _trigrams(term: str) -> set[str]:
    padded = f"^{term}$"
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


class Vocabulary:
    """The index's words with their chunk counts, and a trigram index to find near words fast."""

    def __init__(self, terms: Sequence[tuple[str, int]]) -> None:
        """`terms`: (index word, chunks holding it)."""
        self.terms = [t for t, _ in terms]
        self.docs = [d for _, d in terms]
        self.by_trigram: dict[str, list[int]] = {}
        for index, term in enumerate(self.terms):
            for gram in _trigrams(term):
                self.by_trigram.setdefault(gram, []).append(index)
        # Answers already given: queries repeat words (4 in 10 lookups of 100 SciFact claims),
        # and a vocabulary lives only as long as the index is unchanged.
        self._answers: dict[tuple[str, int], list[tuple[int, int, str]]] = {}

    def nearest(self, form: str, fewer_than: int) -> list[tuple[int, int, str]]:
        """Index words within max_edits(form) of `form` held by more than `fewer_than` chunks:
        (distance, -chunks, word), best first."""
        key = (form, fewer_than)
        if key not in self._answers:
            if len(self._answers) >= ANSWERS_KEPT:
                self._answers.clear()
            self._answers[key] = self._nearest(form, fewer_than)
        return list(self._answers[key])

    def _nearest(self, form: str, fewer_than: int) -> list[tuple[int, int, str]]:
        limit = max_edits(form)
        if not limit:
            return []
        grams = _trigrams(form)
        # An edit changes at most three trigrams, a swap four: a word within reach shares at least this many.
        needed = max(1, len(grams) - 4 * limit)
        shared: Counter[int] = Counter()
        for gram in grams:
            shared.update(self.by_trigram.get(gram, ()))
        picked = [i for i, n in shared.most_common() if n >= needed][:CANDIDATES_CHECKED]
        found = []
        for index in picked:
            term, docs = self.terms[index], self.docs[index]
            if term == form or docs <= fewer_than:
                continue
            distance = edit_distance(form, term, limit)
            if distance <= limit:
                found.append((distance, -docs, term))
        return sorted(found)


def expansions(
    words: Sequence[str],
    languages: Sequence[str],
    porter: bool,
    chunks_holding: Callable[[str, int], int],
    vocabulary: Callable[[str], Vocabulary],
    surface: Callable[[str], str],
) -> list[Expansion]:
    """The corrections to search for the query's `words` (content words only; the caller drops function words).

    `chunks_holding(match, cap)` counts the chunks an FTS5 expression matches,
    up to `cap`; `vocabulary(letter)` builds (or returns the warm) Vocabulary of
    the index words beginning with `letter`, only when some word needs it; `surface`
    turns an index word back into a word as written.
    """
    out: list[Expansion] = []
    every = _with_query_languages(languages)  # a dictionary word's family, by stem
    for word in words:
        if len(word) < MIN_WORD_CHARS or not word.isalpha():
            continue  # identifiers and numbers are never typos of something else
        held = chunks_holding(" OR ".join(f'"{s}"' for s in stems(word, languages)), RARE_CHUNKS + 1)
        if held > RARE_CHUNKS:
            continue
        # A real word is no typo: only another form of it (a long shared beginning: "appartenga" and
        # "appartiene", "gallery" and "galleria") is searched besides it, never a neighbour ("party", "parts").
        family = in_dictionary(word, languages)
        word_stems = set(stems(word.lower(), every)) if family else set()
        forms = index_forms(word, languages, porter)
        floor = 0 if held == 0 else held * RARE_RATIO - 1
        near: list[tuple[int, int, str]] = []
        for form in forms:
            for letter in dict.fromkeys(form[:2]):
                near.extend(vocabulary(letter).nearest(form, floor))
        terms: list[str] = []
        for _, _, term in sorted(near):
            # A word FTS5's porter would change again could not be searched as it is stored.
            if porter and _porter()(term) != term:
                continue
            if family and not _same_family(term, forms, word_stems, every):
                continue
            if term not in terms and term not in forms:
                terms.append(term)
        if terms:
            chosen = tuple(terms[:MAX_EXPANSIONS])
            out.append(Expansion(word, chosen, tuple(surface(t) for t in chosen)))
    return out


def corrected(text: str, expansions: Sequence[Expansion], languages: Sequence[str]) -> str:
    """`text` with each typo replaced by its correction written nearest to it: what the vector half reads, since
    the model reads "jounralctl" as noise, not as journalctl. Only a slip of the hand is replaced: a word of no
    dictionary of `languages`, not written with capitals inside it (a name or code: "aPKCz"), whose correction
    is within MAX_DISTANCE edits as written (the keyword half may also search a word near only by its stem:
    "matasteses", "metastable"). A real word the index lacks ("healthcare", searched as "health") is kept: the
    model knows it. Measured in docs/decisions/60-the-meaning-of-a-typo.md."""
    for expansion in expansions:
        word = expansion.word
        if not expansion.shown or word[1:] != word[1:].lower() or in_dictionary(word, languages):
            continue
        typed = word.lower()
        distance, _, nearest = min((edit_distance(typed, shown.lower(), MAX_DISTANCE), i, shown)
                                   for i, shown in enumerate(expansion.shown))
        if distance <= MAX_DISTANCE:
            text = re.sub(rf"(?<!\w){re.escape(word)}(?!\w)", nearest, text)
    return text


def surface_word(term: str, texts: Sequence[str], languages: Sequence[str], porter: bool) -> str:
    """The word of `texts` written most often whose index form is `term` (the term itself if none is)."""
    seen: Counter[str] = Counter()
    start = term[:2]
    for text in texts:
        for word in _TOKEN.findall(text):
            # The stemmers only cut or change endings: a word starting otherwise is not a form
            # of `term` (and stemming every word of the texts was half of a typo search's time).
            if fold(word.lower()).startswith(start) and term in index_forms(word, languages, porter):
                seen[word.lower()] += 1
    return seen.most_common(1)[0][0] if seen else term
