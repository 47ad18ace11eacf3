"""The part of a long text worth sending: its head plus the window that best answers a query (pure).

A 60-page PDF does not fit a model's context, and its first pages are
usually the cover and the table of contents. So a text longer than its
budget becomes two pieces joined by `[...]`:

1. the head (about 1,200 characters, never more than a quarter of the
   budget): title, abstract, introduction — what the file is about;
2. the window that best matches the query, taken from anywhere in the text.

Windows are scored by the query's terms, with three rules:

- rare terms weigh more: inverse document frequency computed inside this one
  text, over blocks of `IDF_BLOCK_CHARS` characters (a word on every page
  cannot decide; a word in three places does);
- crude stemming: terms and words are cut to 6 letters, so "ricetta" finds
  "ricette" and "configurazione" finds "configurare" (shorter terms match
  whole words only); case and accents are ignored;
- each term counts at most 3 times per window, so a window naming every term
  once beats one repeating a single term.

With no query term anywhere outside the head, the text's beginning fills the
budget (what a plain cut would have sent). Short texts come back whole.

Speed matters (this runs for every long file of every `ask` and
`search --excerpt-chars`): the text becomes one array of folded code points,
terms are compared at word starts only with vectorised comparisons, and every
candidate window is scored at once by binary search over each term's sorted
positions (prefix counts), never by rescanning a window. About 3 ms for 300 KB
on an idle core (see docs/performance.md).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import unicodedata
from dataclasses import dataclass, field
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

HEAD_CHARS = 1200
STEM_CHARS = 6
MAX_COUNT_PER_WINDOW = 3
IDF_BLOCK_CHARS = 1000
SEPARATOR = "\n\n[...]\n\n"
TRUNCATED = "\n[...truncated]"
# Code points below this are lower-cased and accent-folded by a lookup table;
# Latin-1 and Latin Extended-A/B cover the accented letters of European languages.
_LUT_SIZE = 0x250
# stemming.WORD's pattern (FTS5 unicode61's tokens): excerpt sits below stemming, which loads it lazily.
_TERM = re.compile(r"[^\W_]+")


@functools.lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    lowered = ch.lower()
    if len(lowered) != 1:
        return ch
    base = "".join(c for c in unicodedata.normalize("NFKD", lowered) if not unicodedata.combining(c))
    return base if len(base) == 1 else lowered


_FOLDED = [ord(_fold_char(chr(cp))) for cp in range(_LUT_SIZE)]
_FOLD_TABLE = {cp: chr(code) for cp, code in enumerate(_FOLDED) if code != cp}  # for str.translate


@functools.cache
def _tables() -> tuple[np.ndarray, np.ndarray]:
    """The lookup tables as arrays. numpy loads only when a long text needs a window: a search that
    prints previews starts faster without it."""
    import numpy as np

    fold = np.array(_FOLDED, dtype=np.uint32)
    word = np.array([chr(cp).isalnum() for cp in range(_LUT_SIZE)], dtype=bool)
    return fold, word


_PAST_TABLE = re.compile(f"[^\\x00-\\u{_LUT_SIZE - 1:04x}]")


def fold(text: str) -> str:
    """Lower case without accents ("Perché" → "perche"), as terms are compared."""
    if text.isascii():
        return text.lower()
    folded = text.translate(_FOLD_TABLE)
    if _PAST_TABLE.search(folded) is None:
        return folded
    return _PAST_TABLE.sub(lambda m: _fold_char(m.group()), folded)


def stem(term: str) -> str:
    """A term as windows compare it: folded and cut to 6 letters."""
    return fold(term)[:STEM_CHARS]


def query_stems(query: str) -> list[str]:
    """The distinct stems of a query's words (single letters dropped: they match everywhere)."""
    stems: list[str] = []
    for word in _TERM.findall(query):
        if len(word) < 2:
            continue
        s = stem(word)
        if s not in stems:
            stems.append(s)
    return stems


@dataclass(frozen=True)
class Excerpt:
    """What was kept of a text: the excerpt, which character ranges of the source it holds, and why."""

    text: str
    spans: tuple[tuple[int, int], ...]  # [start, end) character ranges of the source, in order
    total_chars: int
    truncated: bool  # True when part of the source was left out
    terms: tuple[str, ...] = field(default=())  # query stems found outside the head

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "spans": [list(s) for s in self.spans],
            "total_chars": self.total_chars,
            "truncated": self.truncated,
            "terms": list(self.terms),
        }


@dataclass(frozen=True)
class _Letters:
    """A text as arrays: folded code points, letter-or-digit flags, and where words start."""

    codes: np.ndarray  # padded with STEM_CHARS zeros, so a stem compared at any word start stays inside
    word: np.ndarray
    starts: np.ndarray


@functools.lru_cache(maxsize=65536)
def _beyond_table(cp: int) -> tuple[int, bool]:
    """(folded code point, is a letter or digit) of a character past the lookup table."""
    ch = chr(cp)
    return ord(_fold_char(ch)), ch.isalnum()


def _letters(text: str) -> _Letters:
    import numpy as np

    fold_lut, word_lut = _tables()
    n = len(text)
    # NUL padding (folds to 0, matches no term) lets a stem be compared at any word start.
    raw = np.frombuffer((text + "\0" * STEM_CHARS).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    codes = np.take(fold_lut, raw, mode="clip")
    word = np.take(word_lut, raw[:n], mode="clip")
    big = np.flatnonzero(raw >= _LUT_SIZE)
    if len(big):
        # Characters beyond the table (Greek, Cyrillic, CJK, ’ or —): look each distinct one up once.
        uniques, inverse = np.unique(raw[big], return_inverse=True)
        looked = [_beyond_table(int(c)) for c in uniques]
        codes[big] = np.fromiter((f for f, _ in looked), dtype=np.uint32, count=len(looked))[inverse]
        word[big] = np.fromiter((w for _, w in looked), dtype=bool, count=len(looked))[inverse]
    opens = np.empty(len(word), dtype=bool)
    if len(word):
        opens[0] = word[0]
        np.greater(word[1:], word[:-1], out=opens[1:])  # a letter after a non-letter
    return _Letters(codes, word, np.flatnonzero(opens))


def _term_positions(letters: _Letters, term: str) -> np.ndarray:
    """Start positions of words whose first 6 letters are `term` (or that equal it, when shorter)."""
    import numpy as np

    codes, n, k = letters.codes, len(letters.word), len(term)
    if k == 0 or k > n:
        return np.zeros(0, dtype=np.int64)
    # Only word starts can match: checking them, not every character, is what keeps this fast.
    hits = letters.starts
    for offset, cp in enumerate(ord(c) for c in term):
        if not len(hits):
            break
        hits = hits[codes[hits + offset] == cp]
    if len(hits) and k < STEM_CHARS:
        # Shorter than a stem: the whole word must be the term.
        after = hits + k
        hits = hits[(after >= n) | ~letters.word[np.minimum(after, n - 1)]]
    return hits.astype(np.int64)


def _snap_end(text: str, start: int, end: int, keep: int, reach: int) -> int:
    """Move `end` back to a line end (or a space) within `reach`, never before `keep`."""
    if end >= len(text) or text[end - 1] == "\n" or text[end] == "\n":
        return end
    newline = text.rfind("\n", max(start, keep, end - reach), end)
    if newline > start:
        return newline
    space = text.rfind(" ", max(start, keep, end - 40), end)
    return space if space > start else end


def _snap_start(text: str, start: int, keep: int, reach: int) -> int:
    """Move `start` forward to a line start (or after a space) within `reach`, never past `keep`."""
    if start <= 0 or text[start - 1] == "\n":
        return start
    newline = text.find("\n", start, min(keep, start + reach))
    if newline != -1:
        return newline + 1
    space = text.find(" ", start, min(keep, start + 40))
    return space + 1 if space != -1 else start


def _prefix(text: str, limit: int) -> tuple[str, int]:
    """The first `limit` characters, cut at a line end (or a space) when one is in the last half."""
    if len(text) <= limit:
        return text, len(text)
    end = _snap_end(text, 0, limit, limit // 2, limit // 2)
    return text[:end], end


_NOT_BLANK = re.compile(r"\S")
_NOT_BLANK_BYTES = re.compile(rb"\S")


def blank_lead(text: str | bytes, start: int = 0) -> int:
    """Where the first line at or after `start` with more than white space begins (`start` itself when it has some).

    Markdown frontmatter is blanked to empty lines (line numbers hold), so a
    note's text can open with a screen of them: readers skip to here.
    len(text) when only blank lines follow.
    """
    found = _NOT_BLANK_BYTES.search(text, start) if isinstance(text, bytes) else _NOT_BLANK.search(text, start)
    if found is None:
        return len(text)
    newline = b"\n" if isinstance(text, bytes) else "\n"
    return max(start, text.rfind(newline, start, found.start()) + 1)  # type: ignore[arg-type]


def line_spans(text: str, lines: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """line_span of each (first, last) pair, the text's line ends found once (a book's thousands of lines)."""
    if len(lines) < 2:
        return [line_span(text, first, last) for first, last in lines]
    starts = [0, *itertools.accumulate(len(line) + 1 for line in text.split("\n"))][:-1]
    total = len(text)

    def start_of(line: int) -> int:
        return starts[line - 1] if 0 < line <= len(starts) else total

    return [(start_of(first), min(total, start_of(last + 1))) if first <= len(starts) else (total, total)
            for first, last in lines]


def line_span(text: str, first: int, last: int) -> tuple[int, int]:
    """The [start, end) characters of lines `first`..`last` (1-based) of `text`."""
    start = 0
    for _ in range(first - 1):
        found = text.find("\n", start)
        if found == -1:
            return len(text), len(text)
        start = found + 1
    end = start
    for _ in range(last - first + 1):
        found = text.find("\n", end)
        if found == -1:
            return start, len(text)
        end = found + 1
    return start, end


def relevant_excerpt(
    text: str,
    query: str,
    budget: int = 8000,
    head_chars: int = HEAD_CHARS,
    around: tuple[int, int] | None = None,
    also: Sequence[tuple[int, int]] = (),
    same_word: Callable[[str], bool] | None = None,
) -> Excerpt:
    """At most `budget` characters of `text` that best serve `query`: whole if it fits, else head + best window.

    `around`: the [start, end) characters of the passage that made a search rank
    this text (its best chunk): the window is then the best one near it, or the
    passage itself, never a better-sounding page elsewhere in a long book.
    `also`: the text's other passages that ranked (its next-best chunks), best
    first. When one of them lies apart from `around`, the excerpt has a window on
    each (EXCERPT_PASSAGES at most, the budget shared evenly, but `around` whole when
    no query word is near it), after the head only
    when each window still gets PASSAGE_WITH_HEAD_CHARS: in a short budget the
    file's two best matches say more than its opening does.
    `same_word`: whether a word of the text that starts like a query term is that
    term (a caller's stemmer): "defaultdict" is not "default". Without it, a
    word matches a term by its first STEM_CHARS letters.
    The result's `text` joins the pieces with `[...]` and ends with
    `[...truncated]` when the end of the source was left out. Blank lines at
    the start (a note's blanked frontmatter) are left out; the spans say so.
    """
    lead = blank_lead(text)
    if lead and lead < len(text):
        def shifted(span: tuple[int, int]) -> tuple[int, int]:
            return max(0, span[0] - lead), max(0, span[1] - lead)

        inner = relevant_excerpt(text[lead:], query, budget, head_chars, None if around is None else shifted(around),
                                 [shifted(span) for span in also], same_word)
        spans = tuple((a + lead, b + lead) for a, b in inner.spans)
        return Excerpt(inner.text, spans, len(text), inner.truncated, inner.terms)
    total = len(text)
    if budget < 1:
        raise ValueError(f"budget must be at least 1 character, got {budget}")
    if total <= budget:
        return Excerpt(text, ((0, total),) if total else (), total, False)
    passages = _apart(around, also) if around is not None else []
    if len(passages) > 1:
        return _passages(text, query, budget, head_chars, passages, same_word)

    head_limit = max(0, min(head_chars, budget // 4))
    head_text, head_end = _prefix(text, head_limit)
    window_chars = budget - len(head_text) - len(SEPARATOR) - len(TRUNCATED)
    terms = _Terms.of(text, query, same_word) if window_chars >= 40 else _Terms({}, {})
    cluster = terms.best_window(window_chars, head_end, around)
    if cluster is None:
        if around is not None and around[1] > head_end:
            # No query word near it (a match by meaning): the passage itself.
            first = max(head_end, around[0])
            return _window(text, head_text, head_end, budget, window_chars, first,
                           min(total, max(around[1], first + 1)), ())
        return _beginning(text, budget, tuple(terms.positions))
    return _window(text, head_text, head_end, budget, window_chars, *cluster)


EXCERPT_PASSAGES = 2  # windows of an excerpt built on a file's best passages (measured: 2 beat 1 and 3)
PASSAGES_APART_CHARS = 200  # passages nearer than this are one (a chunk overlaps the next by 320 characters)
# A window of a passage is about a chunk's length; the head comes too only when each window can still be one
# (books set, 2,000 characters: two windows without the head held the answer for 0.78, with it 0.75, one 0.63).
PASSAGE_WITH_HEAD_CHARS = 1500
# What each other passage keeps when the one that ranked, matched by meaning alone, is shown whole (books set,
# 2,000 characters: answer in the excerpt 0.76 -> 0.80 hybrid; decision 58).
OTHER_PASSAGE_CHARS = 400


def _apart(around: tuple[int, int], also: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """`around`, then each of `also` that overlaps none of those before it (nor comes within
    PASSAGES_APART_CHARS), at most EXCERPT_PASSAGES."""
    kept = [around]
    for start, end in also:
        if len(kept) >= EXCERPT_PASSAGES:
            break
        if all(end + PASSAGES_APART_CHARS <= a or start >= b + PASSAGES_APART_CHARS for a, b in kept):
            kept.append((start, end))
    return kept


def _passages(text: str, query: str, budget: int, head_chars: int, passages: list[tuple[int, int]],
              same_word: Callable[[str], bool] | None) -> Excerpt:
    """A window on each passage, the budget shared evenly (the first whole when it holds no query word), in the order
    of the text, joined by `[...]`; the head first when each window keeps PASSAGE_WITH_HEAD_CHARS."""
    total = len(text)
    count = len(passages)
    head_text, head_end = _prefix(text, max(0, min(head_chars, budget // 4)))
    window_chars = (budget - len(head_text) - count * len(SEPARATOR) - len(TRUNCATED)) // count
    if window_chars < PASSAGE_WITH_HEAD_CHARS:
        head_text, head_end = "", 0
        window_chars = (budget - (count - 1) * len(SEPARATOR) - len(TRUNCATED)) // count
    terms = _Terms.of(text, query, same_word)
    spans: list[tuple[int, int]] = []
    found: list[str] = []
    room = window_chars * count
    shown_whole = False
    for n, around in enumerate(passages):
        if n == 1 and shown_whole:  # the others share what the first left (never past the budget)
            window_chars = (room - (spans[0][1] - spans[0][0])) // (count - 1)
        cluster = terms.best_window(window_chars, head_end, around)
        if cluster is None:
            first = max(head_end, around[0])
            last_end = min(total, max(around[1], first + 1))
            if n == 0:
                # No query word in the passage that ranked (a match by meaning): nothing says which part of it
                # answers, so it is shown whole, as far as the others keep OTHER_PASSAGE_CHARS each.
                whole = min(room - OTHER_PASSAGE_CHARS * (count - 1), last_end - first)
                spans.append(_placed(text, head_end, max(window_chars, whole), first, last_end))
                shown_whole = True
                continue
        else:
            first, last_end, words = cluster
            found.extend(word for word in words if word not in found)
        spans.append(_placed(text, head_end, window_chars, first, last_end))
    merged: list[tuple[int, int]] = [(0, head_end)] if head_end else []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1] + len(SEPARATOR):
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    pieces = SEPARATOR.join(text[start:end] for start, end in merged)
    truncated_tail = merged[-1][1] < total
    return Excerpt(pieces + (TRUNCATED if truncated_tail else ""), tuple(merged), total, True, tuple(found))


@dataclass(frozen=True)
class _Terms:
    """Where each query stem is in a text (word starts, character offsets) and how much it weighs there."""

    positions: dict[str, np.ndarray]
    weights: dict[str, float]

    @classmethod
    def of(cls, text: str, query: str, same_word: Callable[[str], bool] | None) -> _Terms:
        import numpy as np

        positions: dict[str, np.ndarray] = {}
        stems = query_stems(query)
        if same_word is not None:
            # A term none of whose query words is a searched word (a function word) can match no word of the text.
            searched = {stem(word) for word in _TERM.findall(query) if len(word) >= 2 and same_word(word)}
            stems = [s for s in stems if s in searched]
        if stems:
            letters = _letters(text)
            breaks = np.append(np.flatnonzero(~letters.word), len(letters.word))  # where each word has ended
            verdicts: dict[str, bool] = {}
            for s in stems:
                found = _term_positions(letters, s)
                if len(found) and same_word is not None:
                    ends = breaks[np.searchsorted(breaks, found)]
                    words = [text[a:b] for a, b in zip(found.tolist(), ends.tolist())]
                    for word in set(words) - verdicts.keys():
                        verdicts[word] = same_word(word)
                    found = found[np.fromiter((verdicts[w] for w in words), dtype=bool, count=len(words))]
                if len(found):
                    positions[s] = found
        # Inverse document frequency inside this text, with blocks as documents.
        blocks = max(1, math.ceil(len(text) / IDF_BLOCK_CHARS))
        weights = {}
        for s, p in positions.items():
            df = len(np.unique(p // IDF_BLOCK_CHARS))
            weights[s] = math.log(1.0 + (blocks - df + 0.5) / (df + 0.5))
        return cls(positions, weights)

    def best_window(self, window_chars: int, head_end: int, around: tuple[int, int] | None
                    ) -> tuple[int, int, tuple[str, ...]] | None:
        """The [first, last_end) of the query words in the best window of `window_chars` past `head_end` (near
        `around`, half a window either side of it, when given), and the stems it holds; None when none is there."""
        import numpy as np

        outside = {s: p[p >= head_end] for s, p in self.positions.items()}
        if around is not None:
            low, high = around[0] - window_chars // 2, around[1] + window_chars // 2
            outside = {s: p[(p >= low) & (p < high)] for s, p in outside.items()}
        outside = {s: p for s, p in outside.items() if len(p)}
        if not outside or window_chars < 40:
            return None
        # Every window worth trying starts at a term: any window can slide right
        # to its first term without losing one.
        starts = np.unique(np.concatenate(list(outside.values())))
        scores = np.zeros(len(starts), dtype=np.float64)
        for s, p in outside.items():
            counts = np.searchsorted(p, starts + window_chars - len(s), "right") - np.searchsorted(p, starts, "left")
            scores += self.weights[s] * np.minimum(counts, MAX_COUNT_PER_WINDOW)
        best = int(np.argmax(scores))  # ties: the earliest window
        first = int(starts[best])
        last_end = first
        for s, p in outside.items():
            inside = p[(p >= first) & (p <= first + window_chars - len(s))]
            if len(inside):
                last_end = max(last_end, int(inside[-1]) + len(s))
        found_terms = tuple(s for s, p in outside.items() if np.any((p >= first) & (p < last_end)))
        return first, last_end, found_terms


def _placed(text: str, head_end: int, window_chars: int, first: int, last_end: int) -> tuple[int, int]:
    """The [start, end) of a window of `window_chars` around [first, last_end) (what matched), cut at line ends."""
    total = len(text)
    # Centre the matched cluster: a third of the spare room before it (headings, the question), the rest after.
    spare = max(0, window_chars - (last_end - first))
    start = max(head_end, min(first - spare // 3, total - window_chars))
    reach = max(80, window_chars // 8)
    start = _snap_start(text, start, first, reach)
    end = min(total, start + window_chars)
    return start, _snap_end(text, start, end, last_end, reach)


def _window(text: str, head_text: str, head_end: int, budget: int, window_chars: int, first: int, last_end: int,
            found_terms: tuple[str, ...]) -> Excerpt:
    """The head, then a window of `window_chars` around [first, last_end) (what matched), cut at line ends."""
    total = len(text)
    spare = max(0, window_chars - (last_end - first))
    if max(head_end, min(first - spare // 3, total - window_chars)) <= head_end + len(SEPARATOR):
        # The window touches the head: one continuous beginning instead of two pieces.
        return _beginning(text, budget, found_terms)
    start, end = _placed(text, head_end, window_chars, first, last_end)
    pieces = [head_text, SEPARATOR, text[start:end]]
    truncated_tail = end < total
    if truncated_tail:
        pieces.append(TRUNCATED)
    return Excerpt("".join(pieces), ((0, head_end), (start, end)), total, True, found_terms)


def _beginning(text: str, budget: int, terms: tuple[str, ...]) -> Excerpt:
    """The first `budget` characters (room kept for the truncation mark), cut at a line end."""
    body, end = _prefix(text, max(1, budget - len(TRUNCATED)))
    return Excerpt(body + TRUNCATED, ((0, end),), len(text), True, terms)
