"""Hybrid search: BM25 (FTS5) and cosine similarity, fused; results per file, checked against disk.

Fusion is complete by construction: every candidate chunk from either half
gets both scores (its exact cosine, and its real BM25 score looked up by
rowid), so a keyword-only hit is never lost, no floor cuts anything, and the
candidate pool does not depend on how many results were asked for.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from .config import FUSION_METHODS, Settings
from .embeddings import Embedder, one_blas_thread
from .errors import BrainError
from . import operators, sources, spelling, understanding
from .excerpt import fold, line_span, line_spans, relevant_excerpt
from .fusion import (
    FIELD_MATCH_FIELDS, MEANING_FIRST_PLACE, OUTLIER_Z, Candidates, Fused, LanguageCentres, effective_weight,
    explained, fuse, is_weak, meaning_first, normaliser,
)
from .operators import Filter, Operators, parse_filter
from .limits import MAX_EXCERPT_CHARS, MAX_QUERY_CHARS, MIN_EXCERPT_CHARS, SEARCH_MODES
from .stemming import FUNCTION_WORDS, stated_language
from .stemming import WORD as _TOKEN
from .stemming import query_languages as query_languages_for
from .stemming import stemmer as stemmer_for
from .store import FIELDS, ChunkRow, FileRow, Index, open_store
from .texts import FileGone, FileText, TextReader, TextUnavailable

PREVIEW_CHARS = 240
# A changed file's best-matching lines are looked for in windows of this size: a few
# previews' worth, so the preview can start at the line that holds a query word.
PREVIEW_WINDOW_CHARS = 4 * PREVIEW_CHARS
EMPTY_PREVIEW = "(no text now)"  # a changed file that is now empty or only frontmatter
# Of a file's two best chunks within this much fused score (hybrid, in deviations), the one whose words sit
# together stands for it (Searcher._words_together_first); candidates looked through for them, best first.
TOGETHER_GAP = 1.0
TOGETHER_WALK = 200
PASSAGE_CANDIDATES = 4  # a hit's next-best chunks kept for its excerpt, which shows those apart from its own
PASSAGE_WALK = 200  # candidates (best first) looked through for them: a store without the vectors in memory reads
# each one's file from its rows


@dataclass
class SearchHit:
    """One result: a file, its best chunk, the score and how it was made."""

    path: str
    score: float
    vector_score: float | None
    keyword_score: float | None
    start_line: int
    end_line: int
    preview: str
    stale: bool
    heading_path: str = ""
    # Physical pages, 1-based (the PDF's own order), the one its best-matching lines are on first.
    pages: list[int] = field(default_factory=list)
    page_labels: list[str] = field(default_factory=list)  # the label printed on each of `pages`, when it has labels
    chunk_id: int = 0
    # Where its best-matching lines begin (the query's words densest; the chunk's first line when none is there):
    # the line, and the UTF-8 byte offset into the file's text as `get --offset` reads it (None: text unreadable).
    line: int = 0
    offset: int | None = None
    explain: dict[str, Any] | None = None
    # Only with `excerpt_chars`: the relevant excerpt of the current file and its full length.
    excerpt: str | None = None
    content_len: int | None = None
    satisfies: int | None = None  # how many of the understood constraints its note satisfies (None: none understood)
    # Line spans of its file's next-best chunks, best first (not in the JSON): the excerpt and `ask` show them too.
    passages: list[tuple[int, int]] = field(default_factory=list, repr=False)
    # The score as a share of the best result's, both measured above the average candidate (0-1): what a person
    # reads, whatever the mode or fusion. 1.0 when nothing can be compared (one candidate, or all alike).
    relevance: float = 1.0

    def to_dict(self, explain: bool = False, excerpts: bool = False) -> dict[str, Any]:
        data = asdict(self)
        data.pop("passages")
        if not explain:
            data.pop("explain")
        if self.satisfies is None:  # only when something was understood: the JSON keeps its shape
            data.pop("satisfies")
        if not excerpts and self.content_len is None:  # without excerpts the JSON keeps its exact shape
            data.pop("excerpt")
            data.pop("content_len")
        return data


@dataclass
class SearchResponse:
    """Results of one query, plus files dropped because they vanished from disk."""

    query: str
    mode: str
    results: list[SearchHit]
    dropped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    excerpt_chars: int | None = None  # set when hits carry excerpts
    # Words searched besides the query's own, for query words the index lacks (typos): as written in the notes.
    also_searched: list[str] = field(default_factory=list)
    corrections: list[dict[str, Any]] = field(default_factory=list)  # per typed word: {"word", "searched": [...]}
    explained: bool = False  # asked with `explain`: the JSON carries how each score was made
    # No word of the query is in any note and no chunk is close in meaning (best cosine
    # under WEAK_COSINE): the results are only the closest there is.
    weak: bool = False
    # Chunks with their vector and chunks still waiting for it (keywords first, vectors after):
    # while any wait, the rest are found by their words alone.
    embedded_chunks: int = 0
    pending_chunks: int = 0
    indexed_files: int = -1  # -1: not counted
    # What the query was understood to name (understanding.py): kinds, values, statuses, times.
    understood: list[dict[str, Any]] = field(default_factory=list)
    understood_line: str = ""
    # The query's own operators (operators.py): phrases, exclusions, OR, path:, tag:, key:value, key>value.
    operators: dict[str, Any] = field(default_factory=dict)
    operators_line: str = ""
    # Results left out by the relevance cut-off (below search.cutoff of the best); no_cutoff keeps them.
    cut_off: int = 0
    cutoff: float = 0.0
    # The --path-prefix / --where filters left no indexed note at all: which part, and what is there instead.
    unmatched_filter: str = ""
    # The query's words as the index stems them (→ the word as typed) and the languages stemmed in: what a
    # terminal highlights (matched_spans). Not in the JSON: a client has the query and its own highlighter.
    searched_forms: dict[str, str] = field(default_factory=dict, repr=False)
    languages: tuple[str, ...] = field(default=(), repr=False)

    @property
    def partial(self) -> bool:
        """True while some chunks wait for their vector: those are found by keywords alone."""
        return self.pending_chunks > 0

    @property
    def empty(self) -> bool:
        """True when the index holds no file at all (nothing indexed yet, or everything failed)."""
        return self.indexed_files == 0

    def to_dict(self, explain: bool | None = None) -> dict[str, Any]:
        explain = self.explained if explain is None else explain
        excerpts = self.excerpt_chars is not None
        data = {
            "query": self.query,
            "mode": self.mode,
            "results": [hit.to_dict(explain, excerpts) for hit in self.results],
            "dropped": self.dropped,
            "seconds": round(self.seconds, 4),
        }
        if excerpts:
            data["excerpt_chars"] = self.excerpt_chars
        if self.also_searched:  # only then: a query without typos keeps the JSON's exact shape
            data["also_searched"] = self.also_searched
            data["corrections"] = self.corrections
        if self.weak:  # only then, like also_searched
            data["weak"] = True
            data["keyword_matched"] = False
        if self.partial:  # only then: a whole index keeps the JSON's exact shape
            data["partial"] = True
            data["vectors"] = {"embedded": self.embedded_chunks, "total": self.embedded_chunks + self.pending_chunks}
        if self.empty:
            data["empty"] = True
        if self.understood:  # only then, like also_searched
            data["understood"] = self.understood
        if self.operators:  # only then, like understood
            data["operators"] = self.operators
        if self.cut_off:  # only then, like understood
            data["cut_off"] = {"results": self.cut_off, "below": self.cutoff}
        if self.unmatched_filter:
            data["unmatched_filter"] = self.unmatched_filter
        return data


# Function words of English and Italian (the languages of the notes this is made for).
STOP_WORDS = FUNCTION_WORDS["english"] | FUNCTION_WORDS["italian"]

# What an apostrophe joins to a word says nothing of what is sought: Italian elided articles
# and prepositions (l'ultimo, dell'app, un'altra) and English clitics and negations (month's,
# you'll, doesn't). FTS5 splits the word there; as a phrase ("l ultimo") it matched only that
# spelling, and "l" or "s" alone is in nearly every chunk. Measured in docs/decisions/18-elisions.md.
_ELIDED = re.compile(
    r"(?<![^\W_])(?:[^\W_]+n['’]t"  # a negation: a function word whole
    r"|(?:l|d|c|m|t|s|v|n|dell|dall|nell|sull|all|coll|un|quest|quell|tutt|nessun)['’])"  # an elision
    r"|['’](?:s|ll|re|ve|d|m)(?![^\W_])",  # a clitic
    re.IGNORECASE,
)


def without_elisions(query: str) -> str:
    """`query` as the keyword half reads it: elided articles, clitics and negations left out (`l'ultimo` → `ultimo`)."""
    return _ELIDED.sub(" ", query)


def query_stemmers(languages: Sequence[str]) -> list[Callable[[str], str]]:
    """The stem functions of these languages (IndexProfile.languages: the ones a query goes through on that index)."""
    return [stemmer_for(language) for language in languages]


# A code the notes are searched for as written: a ticket (#1873) or letters joined to a number
# (ERR-4821, FT-2026-0412, base64). A query naming one asks for the notes that hold it.
_CODE = re.compile(r"#\d+|[^\W\d_]{2,}[-_/.]?\d+(?:[-_/.]\w+)*", re.UNICODE)


def _names_a_code(query: str) -> bool:
    """Whether a word of `query` is a code (_CODE): `#1873`, `ERR-4821`."""
    return any(_CODE.fullmatch(word.strip(".,;:!?()[]\"'")) for word in query.split())


def fts_match(query: str, stem: Callable[[str], str] | Sequence[Callable[[str], str]] | None = None) -> str | None:
    """A safe FTS5 MATCH expression: each word quoted, words OR-joined.

    Any text a person types is safe (`C++`, `#1234`, `"quoted`, `AND`, `*`):
    operators become plain words. A word that FTS5 splits into several tokens
    (`FT-2026-0412`, `l'indice`) becomes a phrase, so identifiers match whole.
    `stem` is the index's stemmer (stemming.stemmer), applied to each token;
    several stemmers (an index of notes in several languages) give each word
    in each one's form, OR-joined like the words.
    """
    chosen = [term for group in word_terms(query, stem) for term in group]
    return " OR ".join(chosen) if chosen else None


def word_terms(
    query: str, stem: Callable[[str], str] | Sequence[Callable[[str], str]] | None = None
) -> list[list[str]]:
    """The quoted FTS5 terms fts_match searches, grouped by query word (one per stemmer, repeats dropped)."""
    stems: list[Callable[[str], str]] = [] if stem is None else [stem] if callable(stem) else list(stem)
    groups: list[list[str]] = []
    content: list[list[str]] = []
    seen: set[str] = set()  # a list lookup here made long queries quadratic
    for word in without_elisions(query).split():
        tokens = _TOKEN.findall(word)
        if not tokens:
            continue
        group: list[str] = []
        for one in stems or [str]:  # no stemmer: each token as it is
            term = '"' + " ".join(one(t) for t in tokens) + '"'
            if term not in seen:
                seen.add(term)
                group.append(term)
        if group:
            groups.append(group)
            if len(tokens) > 1 or tokens[0].lower() not in STOP_WORDS:
                content.append(group)
    # Words like "of" or "il" match nearly every chunk: BM25 gives them almost no
    # weight, but FTS5 must score every row they match. A query of only such words keeps them.
    return content or groups


# A note whose title holds every content word of a query of two or more is what a person
# typing its title wants (Obsidian notes have no H1: the file name is the title), so its
# chunks' BM25 is raised by this share; measured in docs/decisions/09-field-weights.md. Done on
# the candidates in Python: a second FTS5 query over the title column cost as much as the first.
TITLE_MATCH_WEIGHT = 1.0
# A note whose title is the query's content words and nothing more ("ffmpeg", "git rebase") is raised
# again by this share, one word or many: a longer title that merely holds them ("nano-ffmpeg", "git
# rebase patch") is another note. Measured in docs/decisions/59-exact-title-first.md.
EXACT_TITLE_WEIGHT = 1.0


def _index_forms(profile: IndexProfile) -> Callable[[str], list[str]]:
    """A word → the forms this index stores it in (each stemmer, then porter): what an excluded word is matched by."""
    languages, porter = profile.languages, profile.porter
    return lambda word: spelling.index_forms(word, languages, porter)


def phrase_term(phrase: str, stem: Callable[[str], str]) -> str:
    """A quoted phrase as an FTS5 phrase, each word in the index's stemmed form."""
    return '"' + " ".join(stem(t) for t in _TOKEN.findall(phrase)) + '"'


def title_words(query: str, languages: Sequence[str], porter: bool) -> list[set[str]]:
    """Each content word of `query` as the index may store it (a set of forms)."""
    return [{_porter_form(s, porter) for s in spelling.stems(word, languages)}
            for word in dict.fromkeys(query_terms(query)) if word not in STOP_WORDS]


def title_match(title: str, words: list[set[str]], porter: bool) -> tuple[bool, float]:
    """How the stored (stemmed) `title` meets the query's `words`: whether it holds a form of every word, and
    the share of the words it holds when each of its content words is one of them (else 0). A query that holds
    a note's whole title and more ("nginx reload config", the note "nginx") names that note and asks something
    of it (docs/decisions/61-a-title-inside-the-query.md); 1 is a title that is the query's words exactly."""
    stored = {token: _porter_form(token, porter) for token in {fold(t) for t in _TOKEN.findall(title)}}
    present = set(stored.values())
    content = {form for token, form in stored.items() if token not in STOP_WORDS}
    holds = all(forms & present for forms in words)
    if not content or not all(any(form in forms for forms in words) for form in content):
        return holds, 0.0
    return holds, sum(1 for forms in words if forms & content) / len(words)


def check_query_length(query: str, what: str = "query") -> None:
    """Refuse a query longer than MAX_QUERY_CHARS with the one line that says so."""
    if len(query) > MAX_QUERY_CHARS:
        raise BrainError(
            f"{what} is {len(query):,} characters, over the {MAX_QUERY_CHARS:,}-character limit; shorten it", usage=True
        )


def query_words(query: str) -> list[str]:
    """The words of `query` the keyword half reads, as typed: FTS5's tokens, elisions left out."""
    return _TOKEN.findall(without_elisions(query))


def query_terms(query: str) -> list[str]:
    return [t.lower() for t in query_words(query)]


def matched_words(text: str, forms: dict[str, str] | set[str], languages: Sequence[str]) -> list[tuple[int, int, str]]:
    """Where in `text` the searched words are, whole words only: (start, end, form) of each word whose stem in one
    of `languages` is among `forms` (Searcher._searched_forms: the same Snowball stems the keyword fields hold)."""
    forms_of = _forms_of_words(tuple(languages))
    found = []
    for token in _TOKEN.finditer(text):
        for form in forms_of(token.group()):
            if form in forms:
                found.append((token.start(), token.end(), form))
                break
    return found


def searched_forms(query: str, stems: Sequence[Callable[[str], str]]) -> dict[str, str]:
    """Each word of `query` but function words, stemmed by each of `stems` and folded → the word as typed: what
    matched_words looks for (Searcher._searched_forms adds a typo's corrections)."""
    forms: dict[str, str] = {}
    for stem in stems:
        for word in query_words(query):
            if word.lower() not in STOP_WORDS:
                forms.setdefault(fold(stem(word)), word)
    return forms


def same_word_test(forms: dict[str, str] | set[str], languages: Sequence[str]) -> Callable[[str], bool]:
    """Whether a word is one of the searched words (its stem in one of `languages` among `forms`): what an excerpt
    matches words by, so "defaultdict" is not taken for "default"."""
    forms_of = _forms_of_words(tuple(languages))
    return lambda word: any(form in forms for form in forms_of(word))


def _forms_of_words(languages: tuple[str, ...]) -> Callable[[str], tuple[str, ...]]:
    """A word → its folded stem in each of `languages` (the word folded when there are none), kept across queries."""
    stems, known = _word_forms(languages)

    def forms_of(word: str) -> tuple[str, ...]:
        word_forms = known.get(word)
        if word_forms is None:
            if len(known) >= MAX_KNOWN_WORDS:
                known.clear()
            word_forms = known[word] = tuple(fold(stem(word)) for stem in stems) or (fold(word),)
        return word_forms

    return forms_of


MAX_KNOWN_WORDS = 100_000  # words whose stems matched_words keeps between queries (notes repeat their vocabulary)


@functools.lru_cache(maxsize=16)
def _word_forms(languages: tuple[str, ...]) -> tuple[list[Callable[[str], str]], dict[str, tuple[str, ...]]]:
    """The stemmers of `languages` and each word's folded stem in each, kept across queries: every hit's words
    are looked up (matched_words), and stemming one word costs a regex pass."""
    return query_stemmers(languages), {}


def matched_spans(text: str, forms: dict[str, str] | set[str], languages: Sequence[str]) -> list[tuple[int, int]]:
    """The (start, end) of each searched word in `text` (matched_words without the forms)."""
    return [(start, end) for start, end, _ in matched_words(text, forms, languages)]


MAX_PASSAGE_WORDS = 2000  # matched words a passage is looked for among (a chunk holds a few hundred words)


def word_weights(matches: list[tuple[int, int, str]]) -> dict[str, float]:
    """Each matched word's weight in a passage: 1 / how often it is in the text (a word on every line says little)."""
    counts: dict[str, int] = {}
    for *_, form in matches:
        counts[form] = counts.get(form, 0) + 1
    return {form: 1.0 / count for form, count in counts.items()}


def best_stretch(matches: list[tuple[int, int, str]], weight: dict[str, float],
                 width: int = PREVIEW_CHARS) -> tuple[float, int, int] | None:
    """(score, start, end) of the stretch of at most `width` characters whose matched words (matched_words),
    each counted once at its `weight`, weigh the most; of equal ones, the tightest, then the earliest. None when
    no word matched."""
    matches = matches[:MAX_PASSAGE_WORDS]
    if not matches:
        return None
    best, best_key = (0.0, matches[0][0], matches[0][1]), (-1.0, 0)
    for i, (start, _, _) in enumerate(matches):
        seen: set[str] = set()
        score, end = 0.0, start
        for _, word_end, form in matches[i:]:
            if word_end - start > width:
                break
            if form not in seen:
                seen.add(form)
                score += weight.get(form, 0.0)
            end = word_end
        key = (round(score, 9), start - end)
        if key > best_key:
            best, best_key = (score, start, end), key
    return best


def best_passage(matches: list[tuple[int, int, str]], width: int = PREVIEW_CHARS) -> tuple[int, int] | None:
    """The [start, end) of the stretch of at most `width` characters that holds the most of the query's words
    (matched_words), each counted once and weighted by how rare it is in this text: a word on every line of a
    chunk cannot say which line answers, the one word found once can. None when no word matched."""
    found = best_stretch(matches, word_weights(matches[:MAX_PASSAGE_WORDS]), width)
    return None if found is None else (found[1], found[2])


def together(text: str, forms: dict[str, str], languages: Sequence[str], rarity: dict[str, float],
             width: int = PREVIEW_CHARS) -> float:
    """The share of the query's weight (`rarity` of each searched form) that the best stretch of `width` characters
    of `text` holds, each word counted once: how closely the query's words sit together in it."""
    total = sum(rarity.values())
    found = best_stretch(matched_words(text, forms, languages), rarity, width)
    return found[0] / total if total and found is not None else 0.0


_SENTENCE_END = re.compile(r"[.!?]\s|\n\s*\n")
_SPACE = re.compile(r"\s")
# Of a sentence before the best-matching words, what the preview still starts with; past it, the preview starts
# at a word half the room the words leave before them. The answer to a question often sits just before the
# question's own words ("the ** operator performs exponentiation; it raises a number to a power"): answer in the
# preview of the question's own paragraph, SQuAD-it's 7,515 questions whose paragraph is longer than a preview,
# 0.753 -> 0.792; books 0.41 -> 0.42 (decision 63).
PREVIEW_LEAD_CHARS = 90


def _make_preview(text: str, terms: list[str], passage: tuple[int, int] | None = None) -> str:
    """The chunk from the sentence holding `passage` (its best-matching words; when that sentence starts far
    before them, after "…" from a word half the room they leave before them), or else from its first line that
    mentions a query term, whitespace collapsed."""
    if passage is not None:
        lead = max(0, passage[0] - PREVIEW_LEAD_CHARS)
        ends = [m.end() for m in _SENTENCE_END.finditer(text, lead, passage[0])]
        line_start = text.rfind("\n", 0, passage[0]) + 1
        cut = not (line_start >= lead or ends)
        if cut:
            spare = max(0, PREVIEW_CHARS - (passage[1] - passage[0]))
            space = _SPACE.search(text, max(0, passage[0] - spare // 2), passage[0])
            start = space.end() if space else passage[0]
        else:
            start = max([line_start, *ends])
        if start > 0 and len(" ".join(text[start:].split())) < PREVIEW_CHARS:
            fuller = _fuller_start(text, start)
            start, cut = fuller, cut and fuller == start
        return _clipped(("…" if cut else "") + " ".join(text[start:].split()))  # cut: far past the chunk's start
    lines = [ln for ln in text.split("\n") if ln.strip()]
    start = 0
    for index, line in enumerate(lines):
        folded = fold(line)
        if any(term in folded for term in terms):
            start = index
            break
    return _clipped(" ".join(" ".join(lines[start:]).split()))


def _fuller_start(text: str, start: int) -> int:
    """An earlier start for a preview whose words sit near the end of its chunk: the earliest line or sentence
    start from which the rest of the chunk, those words included, still fits PREVIEW_CHARS; so the preview
    shows what leads to them instead of a few words."""
    candidates = [0] + [m.end() for m in _SENTENCE_END.finditer(text, 0, start)] + [
        m.end() for m in re.finditer("\n", text[:start])]
    fits = [c for c in candidates if len(" ".join(text[c:].split())) <= PREVIEW_CHARS]
    return min(fits, default=start)


def _clipped(flat: str) -> str:
    """A preview's text cut to PREVIEW_CHARS, with "…" where it was cut."""
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1].rstrip() + "…"


def heaviest_page_line(text: str, matches: list[tuple[int, int, str]], passage: tuple[int, int], first_line: int,
                       page_starts: list[int]) -> int:
    """The line of `passage` (best_passage of `matches` in `text`, whose first line is `first_line`) where its words
    on the page holding most of them begin: a passage that runs over a page break names the page its words are on,
    not the one its first word is on. Words weigh as in best_passage (once each, word_weights); ties go to the
    earlier page."""
    matches = matches[:MAX_PASSAGE_WORDS]
    word_weight = word_weights(matches)
    weight: dict[int, float] = {}
    first_on: dict[int, int] = {}
    seen: set[tuple[int, str]] = set()
    for start, _, form in matches:
        if not passage[0] <= start < passage[1]:
            continue
        line = first_line + text.count("\n", 0, start)
        on = sources.pages_for_lines(page_starts, line, line)
        page = on[0] if on else 0
        first_on.setdefault(page, line)
        if (page, form) not in seen:
            seen.add((page, form))
            weight[page] = weight.get(page, 0.0) + word_weight[form]
    # Never empty: a passage starts at one of the matched words.
    page = min(weight, key=lambda p: (-round(weight[p], 9), p))
    return first_on[page]


def pages_best_first(pages: list[int], page_starts: list[int], line: int) -> list[int]:
    """A hit's pages with the one `line` (its best-matching words) is on first, the others in order."""
    on = sources.pages_for_lines(page_starts, line, line)
    if not on or on[0] not in pages or pages[0] == on[0]:
        return pages
    return [on[0]] + [page for page in pages if page != on[0]]


def current_lines(text: str, start_line: int, end_line: int, query: str) -> tuple[str, int, int]:
    """Lines start_line..end_line of a changed file's text now, and their numbers.

    When the file got shorter (or those lines are blank now) the indexed range
    shows nothing: the lines of the current text that best match the query are
    given instead, with their own numbers.
    """
    lines = text.split("\n")
    part = "\n".join(lines[start_line - 1 : end_line])
    if part.strip() or not text.strip():
        return part, start_line, end_line
    cut = relevant_excerpt(text, query, budget=PREVIEW_WINDOW_CHARS, head_chars=0)
    begin, end = cut.spans[-1]
    first = text.count("\n", 0, begin) + 1
    last = first + text.count("\n", begin, max(begin, end - 1))
    while first < last and not lines[first - 1].strip():
        first += 1
    while last > first and not lines[last - 1].strip():
        last -= 1
    return "\n".join(lines[first - 1 : last]), first, last


# The words of a query that asks for a book's navigation pages themselves.
NAVIGATION_WORDS = frozenset({"indice", "sommario", "contents", "index", "glossario", "glossary", "toc"})
NAVIGATION_SHARE = 0.8  # of a chunk's lines ending in a page number: a contents or index page
NAVIGATION_LINES = 6  # fewer lines ending in a number can be code or a table; fewer with dot leaders cannot
_ENDS_IN_PAGE = re.compile(r"(?:\d{1,4}|[ivxlc]{1,7})\s*$")
_LEADER_TO_PAGE = re.compile(r"(?:\.\s?){3,}\s*(?:\d{1,4}|[ivxlc]{1,7})\s*$")  # "Sets . . . . . 203"


def _without_kind_words(query: str, understood: understanding.Understood) -> str | None:
    """`query` without the words that named a kind of note, or None when that changes nothing or leaves no
    word to search (a query of only a kind word keeps it)."""
    taken = {word for c in understood.constraints if c.kind == "kind" for word in c.words}
    if not taken:
        return None
    rest = " ".join(word for word in query_words(query) if fold(word) not in taken)
    return rest if query_terms(rest) else None


def is_navigation(text: str) -> bool:
    """True for a table of contents or a back index: nearly all of its lines end in a page number, and it has at
    least NAVIGATION_LINES of them or, as a contents page's long lines make a chunk of four or five, those lines
    reach their number through dot leaders.

    On the two books of the judged set such pages (0.82-1.0 of their lines) held 20 of 295 top-5 slots, and chunks
    of four or five contents lines 22 more; pages of code or figures, the nearest others, end 0.50-0.66 of their
    lines in a number, and have no dot leaders.
    """
    lines = [line for line in text.split("\n") if line.strip()]
    ending = _ENDS_IN_PAGE if len(lines) >= NAVIGATION_LINES else _LEADER_TO_PAGE
    return len(lines) >= 2 and sum(bool(ending.search(line)) for line in lines) >= NAVIGATION_SHARE * len(lines)


def is_navigation_chunk(row: ChunkRow) -> bool:
    """A chunk of a PDF's contents or index pages (is_navigation): notes have no pages, and never are."""
    return bool(row.pages) and is_navigation(row.text)


def asks_for_navigation(query: str) -> bool:
    """Whether `query` asks for a book's navigation pages themselves (NAVIGATION_WORDS)."""
    return not NAVIGATION_WORDS.isdisjoint(fold(term) for term in query_terms(query))


def _porter_form(word: str, porter: bool) -> str:
    """`word` as a porter tokenizer stores it (itself without porter)."""
    return spelling.index_forms(word, ("none",), porter)[0] if porter else word


@dataclass(frozen=True)
class IndexProfile:
    """What a query needs to know of the index it searches, read once per query: how its words were stemmed
    and tokenized."""

    # the stemmers a query goes through: the index's, or under `auto` each language its files are in
    languages: tuple[str, ...]
    porter: bool  # the keyword tokenizer stems English with porter

    @classmethod
    def of(cls, store: Index) -> IndexProfile:
        """The profile of this index as it is now."""
        return cls(query_languages_for(store.stemmer(), store.languages()), store.fts_tokenizer().startswith("porter"))

    @property
    def stems(self) -> list[Callable[[str], str]]:
        return query_stemmers(self.languages)


def rate_relevance(hits: list[SearchHit], fused: dict[int, Fused], cutoff: float,
                   held: dict[int, bool]) -> list[SearchHit]:
    """Set each hit's relevance and return those the cut-off keeps, in their order.

    Relevance is (score − mean) / (best − mean), clipped to 0..1, with the mean
    over every candidate the fusion scored: a fused score has no scale of its
    own (z-scores, BM25 over the best, a cosine), but how far a result stands
    above the crowd, next to how far the best one does, reads the same in every
    mode. A hit under `cutoff` goes, unless its note holds the quoted phrases or
    satisfies something the query was understood to name: those were ranked
    first on purpose.
    """
    if not hits:
        return hits
    mean = sum(part.score for part in fused.values()) / len(fused)
    best = max(fused[h.chunk_id].score for h in hits)
    kept: list[SearchHit] = []
    above = best - mean
    for hit in hits:
        share = (fused[hit.chunk_id].score - mean) / above if above > 1e-9 else 1.0
        hit.relevance = round(min(1.0, max(0.0, share)), 3)
        chosen = held.get(hit.chunk_id, False) or bool(hit.satisfies)
        if hit.relevance >= cutoff or chosen or not kept:
            kept.append(hit)
    return kept


@dataclass
class _Asked:
    """A search's arguments, checked, with the settings' defaults in the place of what was not given."""

    mode: str
    limit: int
    weight: float  # the vector half's share asked for (the spreads may change it: effective_weight)
    method: str
    path_prefix: str | None
    filters: list[Filter]


@dataclass
class _Ranked:
    """One query's candidates fused, and each one's place: (constraints its note satisfies, score)."""

    candidates: Candidates
    fused: dict[int, Fused]
    weight: float  # the vector share fusion used
    corrections: list[spelling.Expansion]
    allowed: set[int] | None  # the files the filters let through (None: no filter)
    understood: understanding.Understood
    place: dict[int, tuple[int, float]]
    hidden: set[int]  # files shown by their thing's main note instead
    kept: int | None = None  # the vector half's first chunk, moved up to fusion.MEANING_FIRST_PLACE
    # chunk → its file's best chunk, whose place and score it took (Searcher._words_together_first)
    together: dict[int, int] = field(default_factory=dict)


class _Picking:
    """The hits of one query, offered best place first: one per file (unless `chunks`), each checked
    against the file on disk, a book's navigation pages after its other pages, and with quoted phrases
    the notes that lack them after those that hold them."""

    def __init__(self, searcher: Searcher, reader: TextReader, ranked: _Ranked, ops: Operators, asked: _Asked,
                 query: str, chunks: bool, forms: Callable[[str], list[str]], searched: dict[str, str],
                 languages: Sequence[str]) -> None:
        self.searcher, self.reader, self.ranked, self.ops, self.asked = searcher, reader, ranked, ops, asked
        self.query, self.chunks, self.forms = query, chunks, forms
        self.searched, self.languages = searched, languages  # the query's words as stems: where a hit matched
        self.terms = [fold(t) for t in query_terms(query)]
        # A book's contents and index pages (lines of titles and page numbers) rank below its other
        # pages, unless the query asks for them: a file's next chunk stands for it if one comes.
        self.navigation_asked = asks_for_navigation(query)
        self.hits: list[SearchHit] = []
        self.dropped: list[str] = []
        self.seen_files: set[int] = set()
        self.checked: dict[int, tuple[bool, str | None] | None] = {}
        self.raw: dict[int, tuple[int, float]] = {}  # hit chunk id → unrounded place, for breaking ties by path
        self.admitted: dict[int, tuple[bool, bool]] = {}  # file id → (holds none excluded, holds the phrases)
        self.held: dict[int, bool] = {}  # hit chunk id → its note holds the phrases: those rank first
        self.later = 0  # hits whose note lacks a phrase or that are navigation: at most `limit`, below the others
        self.demoted: set[int] = set()
        self.deferred: dict[int, tuple[int, ChunkRow, FileRow]] = {}  # file id → its best navigation chunk
        self.texts: dict[int, tuple[str, list[int], FileRow]] = {}  # hit chunk id → its text now, pages, file

    def offer(self, cid: int, row: ChunkRow, file_row: FileRow) -> bool:
        """Take the next candidate if it makes a hit; False once no later candidate can."""
        place, limit = self.ranked.place, self.asked.limit
        if not self.chunks and (row.file_id in self.seen_files or row.file_id in self.ranked.hidden):
            return True
        if len(self.hits) - self.later >= limit and place[cid] < self.raw[self.hits[-1].chunk_id]:
            return False
        if row.file_id not in self.checked:
            self.checked[row.file_id] = self.searcher._freshness(self.reader, file_row)
        fresh = self.checked[row.file_id]
        if fresh is None:
            if file_row.path not in self.dropped:
                self.dropped.append(file_row.path)
            return True
        if not self.navigation_asked and is_navigation_chunk(row):
            if not self.chunks:
                self.deferred.setdefault(row.file_id, (cid, row, file_row))
                return True
            if self.later >= limit:
                return True
            self.demoted.add(cid)
            self.later += 1
        if self.ops.reads_text:
            allowed_here, holds_phrases = self._judged(row.file_id, file_row, fresh)
            if not allowed_here or (not holds_phrases and self.later >= limit):
                return True
            self.held[cid] = holds_phrases
            self.later += not holds_phrases
        self.seen_files.add(row.file_id)
        self._add(cid, row, file_row, *fresh)
        return True

    def hits_in_order(self) -> list[SearchHit]:
        """The hits, after the files that only a navigation page stood for; at most `limit`."""
        for file_id, (cid, row, file_row) in self.deferred.items():  # no other chunk stood for the file
            fresh = self.checked[file_id]
            if file_id in self.seen_files or fresh is None or self.later >= self.asked.limit:
                continue
            if self.ops.reads_text:
                allowed_here, holds_phrases = self._judged(file_id, file_row, fresh)
                if not allowed_here:
                    continue
                self.held[cid] = holds_phrases
            self.demoted.add(cid)
            self.later += 1
            self.seen_files.add(file_id)
            self._add(cid, row, file_row, *fresh)
        # Equal scores (duplicate texts in different files) are ordered by path, so the
        # order is the same in every index of the same notes, whatever the insertion order.
        raw, held, demoted = self.raw, self.held, self.demoted
        shown = sorted(self.hits, key=lambda h: (not held.get(h.chunk_id, True), h.chunk_id in demoted,
                                                 -raw[h.chunk_id][0], -raw[h.chunk_id][1], h.path))[:self.asked.limit]
        for hit in shown:
            self._place_words(hit)
        return shown

    def _place_words(self, hit: SearchHit) -> None:
        """Where a shown hit's words are densest: its preview starts there, and a book names that page first.
        Only for the hits shown: picking may take many more (equal scores are ordered by path)."""
        text, pages, file_row = self.texts.pop(hit.chunk_id)
        matches = matched_words(text, self.searched, self.languages) if self.searched else []
        passage = best_passage(matches)
        if passage is None:
            hit.line = hit.start_line
        elif len(pages) > 1:
            hit.line = heaviest_page_line(text, matches, passage, hit.start_line, file_row.page_starts)
        else:
            hit.line = hit.start_line + text.count("\n", 0, passage[0])
        hit.preview = _make_preview(text, self.terms, passage) or EMPTY_PREVIEW
        hit.pages = pages_best_first(pages, file_row.page_starts, hit.line) if pages else pages
        hit.page_labels = sources.page_labels_of(file_row.page_labels, hit.pages)

    def _judged(self, file_id: int, file_row: FileRow, fresh: tuple[bool, str | None]) -> tuple[bool, bool]:
        if file_id not in self.admitted:
            text = self.searcher._note_text(self.reader, file_row, fresh)
            self.admitted[file_id] = self.ops.judge(text, self.forms)
        return self.admitted[file_id]

    def _add(self, cid: int, row: ChunkRow, file_row: FileRow, stale: bool, current_text: str | None) -> None:
        text, start_line, end_line = row.text, row.start_line, row.end_line
        if stale and current_text is not None:
            text, start_line, end_line = current_lines(current_text, start_line, end_line, self.query)
        ranked, asked = self.ranked, self.asked
        part = ranked.fused[cid]
        self.texts[cid] = (text, row.pages, file_row)  # its preview, line and pages once it is shown
        hit = SearchHit(
            path=file_row.path,
            score=round(part.score, 4),
            vector_score=None if part.vector is None else round(part.vector, 4),
            keyword_score=None if part.keyword is None else round(part.keyword, 4),
            start_line=start_line,
            end_line=end_line,
            preview="",
            stale=stale,
            heading_path=row.heading_path,
            chunk_id=cid,
            explain=explained(part, ranked.candidates, cid, row, asked.mode, asked.method, ranked.weight,
                             asked.weight, scored_by=ranked.together.get(cid, cid)),
        )
        if ranked.understood:
            hit.satisfies = ranked.place[cid][0]
        if cid in ranked.together and hit.explain is not None:  # the score is the file's best chunk's
            hit.explain["words_together"] = {"best_chunk": ranked.together[cid]}
        if cid == ranked.kept and hit.explain is not None:
            hit.explain["kept"] = MEANING_FIRST_PLACE  # the vector half's first, which holds no query word
        self.hits.append(hit)
        self.raw[cid] = ranked.place[cid]


class Searcher:
    """Searches one index; keeps its vectors warm across queries and reloads them when the index changes."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.embedder = embedder or Embedder(settings)
        self._store: Index | None = None
        self._vectors: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._version: int | None = None
        self._executor: ThreadPoolExecutor | None = None
        # (data version, by first letter) for typos
        self._vocabulary: tuple[int, dict[str, spelling.Vocabulary]] = (-1, {})
        # (data version, store.counts()) for the partial flag
        self._counts: tuple[int | None, dict[str, int]] = (None, {})
        # (data version, what understanding reads of every file)
        self._facts: tuple[int | None, understanding.IndexFacts | None] = (None, None)
        self._fields: tuple[int | None, set[str]] = (None, set())
        # The last vector half made from the held matrix: a query that names a kind gathers its candidates twice
        # (the keyword half without the kind's words, decision 46), and the vector half reads the same query.
        self._last_vector_half: tuple[Any, ...] | None = None
        self._centres: LanguageCentres | None = None  # of the held matrix's languages (fusion.LanguageCentres)

    @property
    def store(self) -> Index:
        if self._store is None:
            self._store = open_store(self.settings, create=False)
            self._check_identity(self._store)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
            self._vectors = self._last_vector_half = self._centres = None
            self._version = None
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None

    def follow_replaced(self) -> None:
        """Drop the open index when its file was deleted or replaced, so the next read opens the one there now.

        A rebuild copies into the live file and is seen at once; but an index
        deleted and made again, or renamed into place, is another file, and the
        connection would go on reading the old one (or a deleted one) for good.
        """
        if self._store is not None and self._store.replaced():
            self._store.close()
            self._store = None
            self._vectors = self._last_vector_half = self._centres = None
            self._version = None

    def _check_identity(self, store: Index) -> None:
        built = store.get_meta("model")
        if built is None:
            return
        if built != self.embedder.identity:
            raise BrainError(
                f"the index was built with model {built!r} but the settings ask for {self.embedder.identity!r}; "
                "run `brain index` to re-embed"
            )

    def _index_counts(self, whole: bool = False) -> dict[str, int]:
        """How many chunks wait for their vector, with every count (files, embedded chunks) while any do or
        when `whole`.

        Read again only after a write. Counting every chunk costs a scan of a big
        server table after each write, so a whole index counts only its pending ones.
        """
        version = self.store.data_version()
        if self._counts[0] != version:
            pending = self.store.pending_count()
            self._counts = (version, self.store.counts() if pending else {"pending_vectors": 0})
        if whole and "files" not in self._counts[1]:
            self._counts = (version, self.store.counts())
        return self._counts[1]

    def _vector_data(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Every vector as one matrix, kept until the index changes; None when the store searches its vectors itself."""
        version = self.store.data_version()
        if version != self._version:
            # A store past its HNSW threshold (PostgreSQL) answers nearest-vector queries: no matrix is held.
            self._vectors = self._last_vector_half = self._centres = None  # the old matrix goes before the new one
            self._vectors = None if self.store.searches_vectors() else self.store.vector_matrix(self.embedder.dimension)
            if self._vectors is not None and len(self.store.languages() or []) > 1:  # one language: nothing moves
                language_of = {row.id: row.language for row in self.store.all_files().values()}
                self._centres = LanguageCentres.of(self._vectors[1], self._vectors[2], language_of)
            self._version = version
        return self._vectors

    def search(
        self,
        query: str,
        *,
        mode: str | None = None,
        limit: int | None = None,
        vector_weight: float | None = None,
        path_prefix: str | None = None,
        where: list[str] | None = None,
        chunks: bool = False,
        fusion: str | None = None,
        excerpt_chars: int | None = None,
        literal: bool = False,
        no_cutoff: bool = False,
        passages: bool = False,
    ) -> SearchResponse:
        """Rank files (or chunks) for `query`; every hit is checked against the file on disk.

        Unless `literal`, the query's operators (operators.py: "phrases", -words,
        OR, path:, tag:, key:value, key>value) are read first: filters join
        `path_prefix` and `where`, a note must hold none of the excluded words,
        and the notes holding the phrases rank first; then the kinds, frontmatter values, statuses and
        times the rest names (understanding.py) rank the notes that satisfy more
        of them first; the rest of the query orders the notes within.

        `fusion` (hybrid mode) is one of FUSION_METHODS; `vector_weight` is the
        share of the semantic half in it. Both default to the settings.
        `excerpt_chars`: each hit also carries the relevant excerpt (about that
        many characters) of its file as it is now, and `content_len`.
        Results whose relevance is under the search.cutoff setting are left out
        (a note that holds the quoted phrases or satisfies what was understood
        stays), unless `no_cutoff`. `passages` (implied by `excerpt_chars`): each
        hit also carries its file's next-best chunks (SearchHit.passages), as `ask`
        cuts its excerpts by them.
        """
        started = time.monotonic()
        asked = self._checked(query, mode, limit, vector_weight, fusion, path_prefix, where, excerpt_chars)
        self.follow_replaced()  # once per query, before any read: the keyword thread never sees a swap
        store = self.store
        # One snapshot for every read of this query: a rebuild swapped in meanwhile is seen by the next one.
        with store.reading():
            profile = IndexProfile.of(store)
            # --literal searches every character as typed: `-foo` and `key:value` are words.
            ops = Operators(text=query) if literal else operators.parse(query, self.index_fields())
            paths = [(asked.path_prefix, False)] if asked.path_prefix else []
            for typed, out in ops.paths:
                checked_path = sources.path_filter(typed, "query", self.settings.root)
                if checked_path:
                    paths.append((checked_path, out))
            filters = asked.filters + ops.filters
            text = ops.text  # what both halves search: the operators out, a phrase's words in
            reader = TextReader(self.settings, store)
            if not query_terms(text):
                if not ops:
                    raise BrainError(f"query {query!r} has no words or numbers to search for; add some", usage=True)
                # Only filters and exclusions: the notes that pass them.
                response = self._passing_notes(query, asked.mode, ops, paths, filters, asked.limit, profile)
            else:
                ranked = self._ranked(text, ops, asked, paths, filters, literal, chunks, profile)
                response = self._respond(query, text, ranked, ops, asked, paths, filters, chunks, no_cutoff,
                                         reader, profile)
                if (passages or excerpt_chars is not None) and not chunks:
                    self._add_passages(response.results, ranked.place, text)
            documents = _documents(reader, response.results)
            _add_offsets(documents, response.results)
            if excerpt_chars is not None:
                _add_excerpts(documents, response, excerpt_chars, text,
                              same_word_test(response.searched_forms, profile.languages))
            response.seconds = time.monotonic() - started
            return response

    def _checked(
        self, query: str, mode: str | None, limit: int | None, vector_weight: float | None, fusion: str | None,
        path_prefix: str | None, where: list[str] | None, excerpt_chars: int | None,
    ) -> _Asked:
        """A search's arguments checked, the settings' defaults in their place (the settings were checked
        when loaded; only what the caller passes is checked here)."""
        if mode and mode not in SEARCH_MODES:
            raise BrainError(f"unknown mode {mode!r}; use one of hybrid, bm25, vector", usage=True)
        if limit is not None and limit < 1:
            raise BrainError(f"limit must be at least 1, got {limit}", usage=True)
        if vector_weight is not None and not 0.0 <= vector_weight <= 1.0:
            raise BrainError(f"vector weight must be between 0 and 1, got {vector_weight}", usage=True)
        if fusion is not None and fusion not in FUSION_METHODS:
            raise BrainError(f"unknown fusion {fusion!r}; use one of {', '.join(FUSION_METHODS)}", usage=True)
        if not query or not query.strip():
            raise BrainError("empty query; type some words to search for", usage=True)
        check_query_length(query)
        if not query_terms(query):  # exactly when fts_match finds nothing to match (nor could an operator)
            raise BrainError(f"query {query!r} has no words or numbers to search for; add some", usage=True)
        checked_prefix = sources.path_filter(path_prefix, "path_prefix", self.settings.root)
        filters = [parse_filter(w) for w in (where or [])]
        if excerpt_chars is not None and not MIN_EXCERPT_CHARS <= excerpt_chars <= MAX_EXCERPT_CHARS:
            raise BrainError(f"excerpt size must be between {MIN_EXCERPT_CHARS} and {MAX_EXCERPT_CHARS:,} characters, "
                             f"got {excerpt_chars}", usage=True, field="excerpt_chars")
        return _Asked(
            mode=mode or self.settings["search.mode"],
            limit=self.settings["search.limit"] if limit is None else limit,
            weight=self.embedder.hybrid_weight if vector_weight is None else vector_weight,
            method=self.settings["search.fusion"] if fusion is None else fusion,
            path_prefix=checked_prefix, filters=filters,
        )

    def _ranked(
        self, query: str, ops: Operators, asked: _Asked, paths: list[tuple[str, bool]], filters: list[Filter],
        literal: bool, chunks: bool, profile: IndexProfile,
    ) -> _Ranked:
        """Both halves' candidates for `query`, fused, and each one's place after what the query names."""
        allowed = self._allowed_files(paths, filters)
        candidates, corrections, weight, fused = self._gathered(query, query, ops, asked, allowed, profile)
        # A query that is a note's title names that note: it asks for no kind of thing.
        literal = literal or candidates.titled or self.settings["search.understanding"] == "off"
        understood = understanding.Understood() if literal else self.understand(query, profile)
        rest = _without_kind_words(query, understood) if asked.mode == "hybrid" else None
        if rest is not None:
            # Every note of a kind the query names satisfies that constraint already; the kind's word in
            # the keyword half only finds the notes that happen to say "project", noise among the things
            # of that kind. The rest of the query ranks within them; the vector half still reads the whole
            # query. (Keywords alone keep the word: without the vector half it is the best signal left.)
            # docs/decisions/46-rest-of-the-query.md
            candidates, corrections, weight, fused = self._gathered(query, rest, ops, asked, allowed, profile)
        # Each chunk's place: (constraints its note satisfies, score); a note that satisfies
        # nothing keeps its place below those that do.
        place, hidden = self._places(fused, understood, chunks)
        kept = None
        if asked.mode == "hybrid" and not chunks and not understood and not _names_a_code(query):
            # (A query that names things ranks those first; the rest of it often shares no word with them.
            # One that names a code asks for the notes holding it, which the vector half cannot read.)
            moved = meaning_first(candidates, place, self._files_of, hidden)
            if moved is not None:
                kept, place[moved[0]] = moved
                fused[kept] = fused[kept]._replace(score=moved[1][1])
        return _Ranked(candidates=candidates, fused=fused, weight=weight, corrections=corrections, allowed=allowed,
                       understood=understood, place=place, hidden=hidden, kept=kept)

    def _gathered(
        self, query: str, keywords: str, ops: Operators, asked: _Asked, allowed: set[int] | None,
        profile: IndexProfile,
    ) -> tuple[Candidates, list[spelling.Expansion], float, dict[int, Fused]]:
        """The candidates of `query` with the keyword half searching the words of `keywords`, their typo
        corrections, the vector weight and the fused scores."""
        match = self.keyword_query(keywords, profile)
        if ops.phrases:
            # A phrase's chunks match it besides its words, so they lead the keyword half's pool.
            match += " OR " + " OR ".join(dict.fromkeys(phrase_term(t.text, stem) for t in ops.phrases
                                                        for stem in profile.stems))
        corrections = self.corrections(keywords, profile) if asked.mode != "vector" else []
        also = [(" OR ".join(f'"{t}"' for t in c.terms), spelling.EXPANSION_WEIGHT) for c in corrections]
        # The pool depends on the settings only (for any limit up to it), so asking
        # for fewer results never changes which file comes first.
        pool = max(self.settings["search.candidates"], asked.limit)
        meaning = spelling.corrected(query, corrections, profile.languages)
        candidates = self._candidates(query, match, asked.mode, pool, allowed, profile, also, corrections, meaning)
        weight = (
            effective_weight(candidates, asked.weight, self.settings["search.spread_ratio"])
            if asked.mode == "hybrid" else asked.weight
        )
        return candidates, corrections, weight, fuse(candidates, mode=asked.mode, method=asked.method,
                                                     vector_weight=weight)

    def _respond(
        self, asked_query: str, query: str, ranked: _Ranked, ops: Operators, asked: _Asked,
        paths: list[tuple[str, bool]], filters: list[Filter], chunks: bool, no_cutoff: bool,
        reader: TextReader, profile: IndexProfile,
    ) -> SearchResponse:
        """The ranked candidates as hits checked against the disk, above the cutoff, with what the index holds."""
        # Chunk id orders ties only provisionally: hits of equal place end up ordered by path.
        scored = sorted(ranked.place, key=lambda cid: (-ranked.place[cid][0], -ranked.place[cid][1], cid))
        searched_forms = self._searched_forms(query, ranked.corrections, profile)
        if asked.mode == "hybrid" and not chunks:
            self._words_together_first(scored, ranked, searched_forms, profile)
        picking = _Picking(self, reader, ranked, ops, asked, query, chunks, _index_forms(profile), searched_forms,
                           profile.languages)
        for cid, row, file_row in self._rows_in_order(scored, asked.limit):
            if not picking.offer(cid, row, file_row):
                break
        hits = picking.hits_in_order()
        # Not in bm25 mode: every result there holds a query word, and a note that says it once in a long
        # text scores far below one that repeats it (17 relevant results of agency's top 10 fell under 0.1).
        cutoff = 0.0 if no_cutoff or asked.mode == "bm25" else self.settings["search.cutoff"]
        shown = rate_relevance(hits, ranked.fused, cutoff, picking.held if ops.phrases else {})
        candidates, corrections, understood = ranked.candidates, ranked.corrections, ranked.understood
        if candidates.use_keyword and shown:
            self._explain_fields(shown, searched_forms)
        counts = self._index_counts(whole=not shown)  # no hit: is anything indexed at all?
        return SearchResponse(query=asked_query, mode=asked.mode, results=shown, dropped=picking.dropped,
                              also_searched=[w for c in corrections for w in c.shown],
                              corrections=[{"word": c.word, "searched": list(c.shown)} for c in corrections],
                              weak=bool(shown) and is_weak(candidates),
                              embedded_chunks=counts.get("embedded_chunks", 0),
                              pending_chunks=counts.get("pending_vectors", 0),
                              indexed_files=counts.get("files", -1),
                              understood=understood.to_list(), understood_line=understood.line,
                              operators=ops.to_dict(), operators_line=ops.line,
                              unmatched_filter="" if ranked.allowed is None or ranked.allowed else
                              self._unmatched_filter(paths, filters),
                              searched_forms=searched_forms, languages=profile.languages,
                              cut_off=len(hits) - len(shown), cutoff=cutoff)

    def _add_passages(self, hits: list[SearchHit], place: dict[int, tuple[int, float]], query: str) -> None:
        """Give each hit the line spans of its file's next-best candidate chunks (PASSAGE_CANDIDATES: a few more
        than an excerpt shows, since those that overlap its own are left out there), best first, from the first
        PASSAGE_WALK candidates. Not for a changed file: its lines moved. A book's contents and index pages are
        left out unless the query asks for them: their titles hold the query's words, their text no answer."""
        own = {hit.chunk_id: hit for hit in hits if not hit.stale}
        if not own:
            return
        order = sorted(place, key=lambda c: (-place[c][0], -place[c][1], c))[:PASSAGE_WALK]
        file_of = self._files_of(list(own) + order)
        by_file = {file_of[cid]: hit for cid, hit in own.items() if cid in file_of}
        others: dict[int, list[int]] = {}
        looked = 2 * PASSAGE_CANDIDATES  # twice as many as kept, for those that are navigation pages
        for cid in order:
            fid = file_of.get(cid, -1)
            if fid in by_file and cid != by_file[fid].chunk_id and len(others.setdefault(fid, [])) < looked:
                others[fid].append(cid)
        rows = self.store.chunks_by_id([cid for ids in others.values() for cid in ids])
        navigation_asked = asks_for_navigation(query)
        for fid, ids in others.items():
            kept = [rows[cid] for cid in ids
                    if cid in rows and (navigation_asked or not is_navigation_chunk(rows[cid]))]
            by_file[fid].passages = [(row.start_line, row.end_line) for row in kept[:PASSAGE_CANDIDATES]]

    def index_facts(self) -> understanding.IndexFacts:
        """The folders, frontmatter values and dates of every indexed file, read again only after a write."""
        version = self.store.data_version()
        known, facts = self._facts
        if known != version or facts is None:
            facts = understanding.IndexFacts.gather((row.id, row.path, row.metadata)
                                                    for row in self.store.all_files().values())
            self._facts = (version, facts)
        return facts

    def understand(self, query: str, profile: IndexProfile | None = None) -> understanding.Understood:
        """The kinds, values, statuses and times `query` names, among those this index holds."""
        if not understanding.may_name_something(query):
            return understanding.Understood()
        profile = profile or IndexProfile.of(self.store)
        return understanding.understand(query, self.index_facts(), profile.stems, STOP_WORDS)

    def _places(
        self, fused: dict[int, Fused], understood: understanding.Understood, chunks: bool
    ) -> tuple[dict[int, tuple[int, float]], set[int]]:
        """Each candidate's place (constraints its note satisfies, score), and the files not to show.

        When the query names a kind whose notes live in folders of their own
        (projects/<name>/…), it asks for things, not pages: each thing is shown
        once, by its main note (index.md, README.md or <name>.md), which takes
        the best score of its pages; the other pages are not shown.
        """
        if not understood:
            return {cid: (0, part.score) for cid, part in fused.items()}, set()
        facts = self.index_facts()
        file_of = self._files_of(list(fused))
        satisfied: dict[int, int] = {}
        place: dict[int, tuple[int, float]] = {}
        for cid, part in fused.items():
            fid = file_of.get(cid, -1)
            if fid not in satisfied:
                satisfied[fid] = understood.satisfied(facts.notes.get(fid))
            place[cid] = (satisfied[fid], part.score)
        hidden: set[int] = set()
        if understood.kind_folders and not chunks:
            best: dict[int, int] = {}  # file → its best candidate chunk
            for cid, fid in file_of.items():
                if fid not in best or place[cid] > place[best[fid]]:
                    best[fid] = cid
            for fid, cid in best.items():
                main = facts.main_note(fid, understood.kind_folders)
                if main is None or main == fid or main not in best:
                    continue
                hidden.add(fid)
                top = best[main]
                place[top] = (place[top][0], max(place[top][1], place[cid][1]))
        return place, hidden

    def _files_of(self, chunk_ids: list[int]) -> dict[int, int]:
        """Chunk id → file id, from the vectors held in memory where they are (no text read), else the store."""
        out: dict[int, int] = {}
        vectors = self._vectors if self._version == self.store.data_version() else None
        if vectors is not None and len(vectors[0]):
            import numpy as np  # held vectors: numpy is loaded already (keyword search never loads it)

            ids, file_ids = vectors[0], vectors[1]
            wanted = np.array(chunk_ids, dtype=np.int64)
            rows = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)  # ids are sorted (vector_matrix)
            for cid, row, hit in zip(chunk_ids, rows.tolist(), (ids[rows] == wanted).tolist()):
                if hit:
                    out[cid] = int(file_ids[row])
        rest = [cid for cid in chunk_ids if cid not in out]  # chunks without a vector, or vectors on a server
        if rest:
            out.update({cid: row.file_id for cid, row in self.store.chunks_by_id(rest).items()})
        return out

    def keyword_query(self, query: str, profile: IndexProfile | None = None) -> str:
        """The FTS5 MATCH expression for `query`, its words stemmed the way this index stores them."""
        match = fts_match(query, (profile or IndexProfile.of(self.store)).stems)
        if match is None:
            raise BrainError(f"query {query!r} has no words or numbers to search for; add some", usage=True)
        return match

    def corrections(self, query: str, profile: IndexProfile | None = None) -> list[spelling.Expansion]:
        """Index words to search besides the query's own, for query words the index lacks or nearly lacks (typos)."""
        store = self.store
        profile = profile or IndexProfile.of(store)
        languages, porter = profile.languages, profile.porter
        words = [w for w in dict.fromkeys(query_words(query)) if w.lower() not in STOP_WORDS]

        def vocabulary(letter: str) -> spelling.Vocabulary:
            version = store.data_version()
            if self._vocabulary[0] != version:
                self._vocabulary = (version, {})
            known = self._vocabulary[1]
            if letter not in known:
                known[letter] = spelling.Vocabulary(
                    store.vocabulary(letter, spelling.MIN_FORM_CHARS - spelling.MAX_DISTANCE)
                )
            return known[letter]

        def surface(term: str) -> str:
            return spelling.surface_word(term, store.texts_matching(f'"{term}"', 3), languages, porter)

        return spelling.expansions(words, languages, porter, store.count_matches, vocabulary, surface)

    def _words_together_first(
        self, scored: list[int], ranked: _Ranked, searched: dict[str, str], profile: IndexProfile
    ) -> None:
        """Let a file's second-best chunk stand for it, in `scored`, when it scores within TOGETHER_GAP of the best
        and its stretch of a preview's width holds more of the query's words (each weighed by how rare it is among
        the index's chunks): of two near-equal chunks of a book, the page where the words sit together is the one
        that answers. The file keeps its best chunk's place and score; only the chunk shown (its lines, pages,
        preview) changes."""
        if not searched:
            return
        first: dict[int, int] = {}
        second: dict[int, int] = {}
        head = scored[:TOGETHER_WALK]
        file_of = self._files_of(head)
        for cid in head:
            file_id = file_of.get(cid)
            if file_id is None:
                continue
            if file_id not in first:
                first[file_id] = cid
            elif file_id not in second:
                second[file_id] = cid
        place = ranked.place
        pairs = [(first[f], c) for f, c in second.items()
                 if place[first[f]][0] == place[c][0] and place[first[f]][1] - place[c][1] <= TOGETHER_GAP]
        if not pairs:
            return
        rows = self.store.chunks_by_id([cid for pair in pairs for cid in pair])
        rarity = self._rarity(searched, profile)
        languages = profile.languages
        at = {cid: i for i, cid in enumerate(scored)}
        for best, other in pairs:
            if best not in rows or other not in rows:
                continue
            if together(rows[other].text, searched, languages, rarity) > together(
                    rows[best].text, searched, languages, rarity):
                i, j = at[best], at[other]
                scored[i], scored[j] = other, best
                place[other] = place[best]
                ranked.together[other] = best
                ranked.fused[other] = ranked.fused[best]

    def _rarity(self, searched: dict[str, str], profile: IndexProfile) -> dict[str, float]:
        """Each searched form's inverse document frequency among the index's chunks: log(1 + N / (1 + df))."""
        import math

        # The held matrix has a row per chunk: counting the table would cost more than the search.
        held = self._vectors
        total = len(held[0]) if held is not None else self._index_counts(whole=True).get("chunks", 0)
        weights: dict[str, float] = {}
        df_of: dict[str, int] = {}  # several forms can search the same word
        for form, word in searched.items():
            match = fts_match(word, profile.stems) or ""
            if match not in df_of:
                df_of[match] = self.store.count_matches(match, max(total, 1)) if match else 0
            weights[form] = math.log(1 + total / (1 + df_of[match]))
        return weights

    def _searched_forms(
        self, query: str, corrections: list[spelling.Expansion], profile: IndexProfile
    ) -> dict[str, str]:
        """Each word searched, as the index's stored fields hold it (Snowball-stemmed) → the word as typed or shown.

        Compared before the tokenizer's porter: both sides went through the same
        Snowball stemmer, and running porter over every hit's text cost more than the search.
        """
        forms = searched_forms(query, profile.stems)
        stems = profile.stems
        for correction in corrections:
            for shown in correction.shown:
                for stem in stems:
                    forms.setdefault(fold(stem(shown)), shown)
        return forms

    def _explain_fields(self, hits: list[SearchHit], searched: dict[str, str]) -> None:
        """Say in each hit's explain which keyword fields of its chunk hold which query words."""
        stored = self.store.keyword_fields(hit.chunk_id for hit in hits)
        for hit in hits:
            if hit.explain is None:
                continue
            fields: dict[str, list[str]] = {}
            for name, text in stored.get(hit.chunk_id, {}).items():
                present = set(_TOKEN.findall(text.lower()))
                words = [word for form, word in searched.items() if form in present]
                if words:
                    fields[name] = list(dict.fromkeys(words))
            hit.explain["keyword"]["fields"] = {name: fields[name] for name in FIELDS if name in fields}

    def _rows_in_order(self, ids: list[int], wanted: int) -> Iterator[tuple[int, ChunkRow, FileRow]]:
        """(chunk id, chunk, its file) in the order of `ids`, read a batch at a time.

        Most queries need only the first few candidates: reading all of them
        (texts, pages, metadata) cost more than ranking them.
        """
        files: dict[int, FileRow] = {}
        start, size = 0, max(2 * wanted, 20)
        while start < len(ids):
            part = ids[start : start + size]
            start, size = start + size, size * 2
            rows = self.store.chunks_by_id(part)
            files.update(self.store.files_by_id({row.file_id for row in rows.values()} - files.keys()))
            for cid in part:
                row = rows.get(cid)
                if row is not None:
                    yield cid, row, files[row.file_id]

    def _candidates(
        self, query: str, match: str, mode: str, pool: int, allowed: set[int] | None, profile: IndexProfile,
        also: Sequence[tuple[str, float]] = (), corrections: Sequence[spelling.Expansion] = (),
        meaning: str | None = None,
    ) -> Candidates:
        """The top `pool` chunks of each half, every one with both of its raw scores (`also`: typo corrections, scaled;
        `corrections`: the same, as words, for the field share; `meaning`: what the vector half encodes, the query
        with its typos corrected, spelling.corrected)."""
        meaning = meaning or query
        store = self.store
        use_vector = mode in ("hybrid", "vector")
        use_keyword = mode in ("hybrid", "bm25")
        found = Candidates(use_keyword=use_keyword, use_vector=use_vector)
        vectors = self._vector_data() if use_vector else None  # reads the index: before the thread starts
        # The store searches its own vectors (a server): the keyword half is the server's work, and on a
        # machine that runs the server too the encoder's threads beside it took 42 ms instead of 13
        # (measured at 100k chunks): encode first. None: the vectors are in `vectors`, or not wanted.
        query_vector = self.embedder.encode_query(meaning) if use_vector and vectors is None else None
        scoring: Future[None] | None = None
        if use_keyword and use_vector:
            # FTS5 scores the matches on another thread while this one does the
            # vector half: both release the GIL, so the two halves overlap. The
            # connection belongs to that thread until it is done.
            scoring = self._keyword_thread().submit(store.score_matches, match, also)
        elif use_keyword:
            store.score_matches(match, also)
        ids: np.ndarray | None = None  # with `sims`: the vector half's scores, when this process holds the matrix
        sims: np.ndarray | None = None
        try:
            if vectors is not None:
                ids, sims = self._vector_half(meaning, vectors, found, allowed, pool)
            elif query_vector is not None:
                self._vector_half_on_store(query_vector, found, allowed, pool)
        finally:
            if scoring is not None:
                scoring.result()  # the connection is this thread's again (and errors surface)
        if use_vector:
            # Per query word: a word is found when any of its forms (one per stemmer) is.
            # (Vector mode too: it decides whether the results are weak.)
            words = [" OR ".join(group) for group in word_terms(query, profile.stems)]
            found.coverage = store.terms_found(words) / len(words) if words else 0.0
        if use_keyword:
            # Vector candidates get their real BM25 score too (0 when no query word is in them).
            matches, of_vector = store.pick_matches(
                pool, also=found.cosine, file_ids=None if allowed is None else sorted(allowed)
            )
            for cid in found.cosine:
                found.keyword[cid] = of_vector.get(cid, 0.0)
            keyword_only = []
            for cid, score in matches:
                if cid not in found.keyword:
                    keyword_only.append(cid)
                    found.ids.append(cid)
                found.keyword[cid] = score
            if use_vector and keyword_only:
                # Keyword-only candidates get their exact cosine too.
                if query_vector is not None:
                    found.cosine.update(self.store.cosines(query_vector, keyword_only))
                elif ids is not None and sims is not None:
                    found.cosine.update(self._cosines_of(keyword_only, ids, sims))
            if use_vector and self._index_counts().get("pending_vectors"):
                found.pending = store.pending_among([cid for cid in found.ids if cid not in found.cosine])
            self._raise_whole_titles(query, found, profile)
            if use_vector:
                found.field_share = self._field_share(query, found, corrections, profile)
                found.foreign = self._foreign_outliers(query, found)
        return found

    def _field_share(
        self, query: str, found: Candidates, corrections: Sequence[spelling.Expansion], profile: IndexProfile
    ) -> float:
        """The share of the query's content words that the best BM25 candidate holds in its FIELD_MATCH_FIELDS.

        A word counts in any of its stemmed forms (one per language of the index), or
        through the words its typo corrections searched. Compared with the stored fields
        as _explain_fields does (Snowball forms, before the tokenizer's porter).
        """
        matched = [(score, cid) for cid, score in found.keyword.items() if score > 0]
        if not matched:
            return 0.0
        best = min(matched, key=lambda item: (-item[0], item[1]))[1]
        stems = profile.stems
        words = [w for w in dict.fromkeys(query_terms(query)) if w not in STOP_WORDS]
        if not words:
            return 0.0
        forms = {w: {fold(stem(w)) for stem in stems} for w in words}
        for correction in corrections:
            typed = correction.word.lower()
            if typed in forms:
                forms[typed] |= {fold(stem(shown)) for shown in correction.shown for stem in stems}
        stored = self.store.keyword_fields([best]).get(best, {})
        present = {t for name in FIELD_MATCH_FIELDS for t in _TOKEN.findall((stored.get(name) or "").lower())}
        return sum(1 for w in words if forms[w] & present) / len(words)

    def _foreign_outliers(self, query: str, found: Candidates) -> set[int]:
        """The candidates whose BM25 stands above OUTLIER_Z deviations of the pool and whose note is in another
        language than the one the query states (none when it states none)."""
        language = stated_language(query)
        if language is None or not found.ids:
            return set()
        values = [found.keyword.get(cid, 0.0) for cid in found.ids]
        z, _ = normaliser("zscore", values, floor_zero=True)  # as fuse() will normalise the keyword half
        outliers = [cid for cid, v in zip(found.ids, values) if z(v) > OUTLIER_Z]
        if not outliers:
            return set()
        file_of = self._files_of(outliers)
        files = self.store.files_by_id(set(file_of.values()))
        return {cid for cid, fid in file_of.items() if files[fid].language and files[fid].language != language}

    def _raise_whole_titles(self, query: str, found: Candidates, profile: IndexProfile) -> None:
        """Raise the BM25 of candidates whose note title holds every content word of a query of two or more
        (TITLE_MATCH_WEIGHT), or is held whole by such a query (by that weight times the share of the query it
        is), and again of those whose title is the query's words and no other (EXACT_TITLE_WEIGHT)."""
        porter = profile.porter
        words = title_words(query, profile.languages, porter)
        if not words:
            return
        matched = [cid for cid, score in found.keyword.items() if score > 0]
        for cid, title in self.store.chunk_titles(matched).items():
            if not title:
                continue
            holds, within = title_match(title, words, porter)
            if len(words) >= 2 and holds:
                found.keyword[cid] *= 1 + TITLE_MATCH_WEIGHT
                found.titled = True
            elif len(words) >= 2 and within:
                found.keyword[cid] *= 1 + TITLE_MATCH_WEIGHT * within
            if within == 1.0:
                found.keyword[cid] *= 1 + EXACT_TITLE_WEIGHT

    def _keyword_thread(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="brain-fts")
        return self._executor

    def _vector_half(
        self, query: str, vectors: tuple[np.ndarray, np.ndarray, np.ndarray], found: Candidates,
        allowed: set[int] | None, pool: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The `pool` chunks nearest the query, with their cosines, into `found`; returns (chunk ids, every cosine).

        Touches no database: it runs while another thread uses the connection.
        """
        import numpy as np

        ids, file_ids, matrix = vectors
        if not len(ids):
            return ids, np.zeros(0, dtype=np.float32)
        key = (query, None if allowed is None else frozenset(allowed), pool)
        last = self._last_vector_half
        if last is not None and last[0] is vectors and last[1] == key:  # the same matrix, query, filter and pool
            sims, chunk_ids, cosines = last[2:]
        else:
            qvec = self.embedder.encode_query(query)
            with one_blas_thread():
                sims = matrix @ qvec
            if self._centres is not None:  # each language's chunks moved toward the others' (LANGUAGE_CENTRE_SHARE)
                sims = sims + self._centres.shifts(qvec)
            if allowed is not None:
                sims = np.where(np.isin(file_ids, np.fromiter(allowed, dtype=np.int64)), sims, -np.inf)
            top = min(pool, len(ids))
            best = np.argpartition(-sims, top - 1)[:top]
            best = best[np.argsort(-sims[best], kind="stable")]
            best = best[np.isfinite(sims[best])]  # files outside --path/--where scored -inf
            chunk_ids, cosines = ids[best].tolist(), sims[best].tolist()
            self._last_vector_half = (vectors, key, sims, chunk_ids, cosines)
        found.cosine.update(zip(chunk_ids, cosines))
        found.ids.extend(chunk_ids)
        return ids, sims

    def _vector_half_on_store(self, qvec: np.ndarray, found: Candidates, allowed: set[int] | None, pool: int) -> None:
        """The vector half from the store's own index (PostgreSQL's HNSW) into `found`.

        The store answers on a connection of its own, so this too runs beside the keyword half.
        """
        nearest = self.store.nearest_vectors(qvec, pool, file_ids=None if allowed is None else sorted(allowed))
        found.cosine.update(nearest)
        found.ids.extend(cid for cid, _ in nearest)

    @staticmethod
    def _cosines_of(chunk_ids: list[int], ids: np.ndarray, sims: np.ndarray) -> dict[int, float]:
        """The cosines of these chunks (a chunk without a vector has none)."""
        import numpy as np

        # ids are sorted (vector_matrix orders by id): look rows up by bisection.
        rows = np.searchsorted(ids, np.array(chunk_ids, dtype=np.int64))
        out: dict[int, float] = {}
        for cid, row in zip(chunk_ids, rows.tolist()):
            if row < len(ids) and ids[row] == cid:
                value = sims[row]
                out[cid] = float(value) if np.isfinite(value) else 0.0
        return out

    def _unmatched_filter(self, paths: list[tuple[str, bool]], filters: list[Filter]) -> str:
        """Which filter left no indexed note, said with what the index holds instead."""
        rows = list(self.store.all_files().values())
        for prefix, out in paths:
            if out or any(sources.under_filter(row.path, prefix) for row in rows):
                continue
            folders = sorted({row.path.split("/")[0] + "/" for row in rows if "/" in row.path})
            near = [f for f in folders if f.lower().startswith(prefix.lower())]
            hint = f"; did you mean {', '.join(near[:3])}?" if near else (
                f"; its folders: {', '.join(folders[:8])}" if folders else "")
            return f"no indexed note is under {prefix!r} (a folder or a note, not the start of a name){hint}"
        for one in filters:
            if not any(one.matches(row.metadata) for row in rows):
                seen = sorted({str(v) for row in rows for v in one.values_of(row.metadata)})
                hint = f"; its values: {', '.join(seen[:8])}" if seen else f"; no note has the field {one.key!r}"
                return f"no indexed note has {one.shown}{hint}"
        return "no indexed note matches the path and every filter together"

    def _allowed_files(self, paths: list[tuple[str, bool]], filters: list[Filter]) -> set[int] | None:
        """The files every path (checked by sources.path_filter) and filter lets through; None: no filter."""
        if not paths and not filters:
            return None
        return {row.id for row in self.store.all_files().values()
                if all(sources.under_filter(row.path, prefix) != out for prefix, out in paths)
                and all(f.matches(row.metadata) for f in filters)}

    def index_fields(self) -> set[str]:
        """The frontmatter fields some indexed note has: `key:value` in a query is a filter only for these."""
        version = self.store.data_version()
        if self._fields[0] != version:
            self._fields = (version, {key for row in self.store.all_files().values() for key in row.metadata})
        return self._fields[1]

    def _note_text(self, reader: TextReader, row: FileRow, fresh: tuple[bool, str | None]) -> str:
        """The note's text as it is now (its indexed chunks when it cannot be read now)."""
        if fresh[1] is not None:
            return fresh[1]
        try:
            return reader.read(row).text
        except TextUnavailable:
            return "\n".join(chunk.text for chunk in self.store.file_chunks(row.id))

    def _passing_notes(
        self, asked: str, mode: str, ops: Operators, paths: list[tuple[str, bool]], filters: list[Filter],
        limit: int, profile: IndexProfile,
    ) -> SearchResponse:
        """A query of only operators: the notes that pass them, the most recently changed first (no words to
        rank by; the newest is what a person listing `tag:meeting` or `status:active` looks at first)."""
        allowed = self._allowed_files(paths, filters)
        rows = sorted((row for row in self.store.all_files().values() if allowed is None or row.id in allowed),
                      key=lambda row: (-row.mtime_ns, row.path))
        reader = TextReader(self.settings, self.store)
        forms = _index_forms(profile)
        hits: list[SearchHit] = []
        dropped: list[str] = []
        for row in rows:
            if len(hits) >= limit:
                break
            fresh = self._freshness(reader, row)
            if fresh is None:
                dropped.append(row.path)
                continue
            if ops.reads_text and not ops.judge(self._note_text(reader, row, fresh), forms)[0]:
                continue
            chunks = self.store.file_chunks(row.id)
            first = chunks[0] if chunks else None
            text = first.text if first is not None else ""
            if fresh[0] and fresh[1] is not None:
                text = fresh[1][:PREVIEW_WINDOW_CHARS]
            hits.append(SearchHit(
                path=row.path, score=0.0, vector_score=None, keyword_score=None,
                start_line=first.start_line if first is not None else 1,
                end_line=first.end_line if first is not None else 1,
                preview=_make_preview(text, []) or EMPTY_PREVIEW, stale=fresh[0],
                heading_path=first.heading_path if first is not None else "",
                pages=first.pages if first is not None else [], chunk_id=first.id if first is not None else 0,
                line=first.start_line if first is not None else 1,
            ))
        counts = self._index_counts(whole=not hits)
        return SearchResponse(query=asked, mode=mode, results=hits, dropped=dropped,
                              indexed_files=counts.get("files", -1),
                              operators={**ops.to_dict(), "order": "newest first"},
                              operators_line=f"{ops.line} (no words: newest first)",
                              unmatched_filter="" if allowed is None or allowed else
                              self._unmatched_filter(paths, filters))

    @staticmethod
    def _freshness(reader: TextReader, row: FileRow) -> tuple[bool, str | None] | None:
        """None if the file is gone; else (stale?, current text when stale).

        A file that is there but cannot be read or extracted now keeps its
        indexed text, marked stale: the index holds its last good copy.
        """
        try:
            current = reader.changed(row)
        except FileGone:
            return None
        except TextUnavailable:
            return True, None
        return (False, None) if current is None else (True, current.text)


def _documents(reader: TextReader, hits: list[SearchHit]) -> dict[str, FileText | None]:
    """Each hit's file as it is now, read once (None: gone or unreadable since the search checked it)."""
    documents: dict[str, FileText | None] = {}
    for hit in hits:
        if hit.path not in documents:
            row = reader.store.get_file(hit.path)
            try:
                documents[hit.path] = reader.read(row) if row is not None else None
            except TextUnavailable:
                documents[hit.path] = None
    return documents


def _add_offsets(documents: dict[str, FileText | None], hits: list[SearchHit]) -> None:
    """Give every hit the byte offset of its best line, so `get --offset` reads from where it matched."""
    for hit in hits:
        document = documents.get(hit.path)
        if document is not None and hit.line:
            start, _ = line_span(document.text, hit.line, hit.line)
            hit.offset = len(document.text[:start].encode("utf-8", "surrogatepass"))


def _add_excerpts(documents: dict[str, FileText | None], response: SearchResponse, chars: int, query: str,
                  same_word: Callable[[str], bool]) -> None:
    """Give every hit the relevant excerpt (about `chars` characters, checked by `search`) of its file as it
    is now, and its length."""
    response.excerpt_chars = chars
    for hit in response.results:
        document = documents.get(hit.path)
        if document is not None:
            hit.excerpt = relevant_excerpt(document.text, query, chars, **excerpt_passages(document.text, hit),
                                           same_word=same_word).text
            hit.content_len = len(document.text)


def excerpt_passages(text: str, hit: SearchHit) -> dict[str, Any]:
    """The passages of `text` that made `hit` rank, as relevant_excerpt takes them: its best chunk (`around`), and its
    file's next-best chunks (`also`)."""
    around, *also = line_spans(text, [(hit.start_line, hit.end_line), *hit.passages])
    return {"around": around, "also": also}
