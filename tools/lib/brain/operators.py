"""Search operators inside a query: "exact phrases", -excluded words, OR, path:, tag:, key:value and key>value.

Pure: the query text and the frontmatter fields the index holds in, the
operators and the text both halves search out. Filters (`Filter`) are also
what `--where` parses to, so the two spellings cannot disagree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import BrainError
from .excerpt import fold
from .stemming import WORD

COMPARISONS = (">=", "<=", ">", "<")
# Longest first: `>=` must not be read as `>` with a value starting "=".
_OPERATORS = ("!=", ">=", "<=", "=", ">", "<")
# A year, a month or a day, optionally followed by a time (YAML dates and datetimes as text).
_DATE = re.compile(r"(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?(?:[T ].*)?")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
# key, operator, value: a key starts with a letter, so "10:30" and "-5" are never filters.
_FIELD = re.compile(r"([^\W\d_][\w.-]*)(:|!=|>=|<=|=|>|<)(.*)", re.DOTALL)
_OPENING = {'"': '"', "“": "”", "”": "”"}  # a straight quote, or the typographic pair phones and Macs type
TAG_FIELDS = ("tags", "tag")


def _listed(value: Any) -> list[Any]:
    """A frontmatter value as a list of values: a list as it is, a scalar alone, nothing for None."""
    return value if isinstance(value, list) else [] if value is None else [value]


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    return float(text) if _NUMBER.fullmatch(text) else None


def _day_bounds(value: Any) -> tuple[str, str] | None:
    """The first and last day a date, month or year names, as ISO text (which sorts as dates do)."""
    found = _DATE.fullmatch(str(value).strip())
    if found is None:
        return None
    year, month, day = found.groups()
    # "-31" ends every month as far as string order is concerned; no calendar needed.
    return f"{year}-{month or '01'}-{day or '01'}", f"{year}-{month or '12'}-{day or '31'}"


def _compares(note_value: Any, op: str, wanted: str) -> bool:
    """`note_value op wanted`: as numbers when both are numbers, else as dates when both are dates."""
    number, wanted_number = _number(note_value), _number(wanted)
    if number is not None and wanted_number is not None:  # a bare year reads the same either way
        return {">": number > wanted_number, ">=": number >= wanted_number,
                "<": number < wanted_number, "<=": number <= wanted_number}[op]
    note, bounds = _day_bounds(note_value), _day_bounds(wanted)
    if note is None or bounds is None:
        return False
    # A note dated 2024-05-03 is after 2023, not after 2024, and on or before 2024.
    first, last = bounds
    return {">": note[0] > last, ">=": note[0] >= first, "<": note[0] < first, "<=": note[0] <= last}[op]


@dataclass(frozen=True)
class Filter:
    """A frontmatter condition: key=value, key!=value (lists match if they hold the value), or a comparison
    (`compare` one of COMPARISONS: numbers as numbers, dates and years as dates); `negate` inverts it."""

    key: str
    value: str
    negate: bool = False
    compare: str = ""
    tag: bool = False  # tag:x — the note's tags (tags or tag, a list or "a, b") hold x or x/…

    def matches(self, metadata: dict[str, Any]) -> bool:
        values = self.values_of(metadata)
        if self.compare:
            hit = any(_compares(v, self.compare, self.value) for v in values)
        elif self.tag:
            wanted = fold(self.value.lstrip("#"))
            hit = any(v == wanted or v.startswith(wanted + "/") for v in (fold(str(t).lstrip("#")) for t in values))
        else:
            hit = any(str(v).strip().lower() == self.value.lower() for v in values)
        return not hit if self.negate else hit

    def values_of(self, metadata: dict[str, Any]) -> list[Any]:
        """The note's values this filter reads."""
        if not self.tag:
            return _listed(metadata.get(self.key))
        # Obsidian writes tags as a list or as one "a, b" or "a b" string.
        return [t for key in TAG_FIELDS for v in _listed(metadata.get(key)) for t in re.split(r"[,\s]+", str(v)) if t]

    @property
    def shown(self) -> str:
        """As a person would type it in --where."""
        if self.tag:
            return f"{'-' if self.negate else ''}tag:{self.value}"
        if self.compare:
            return f"{'-' if self.negate else ''}{self.key}{self.compare}{self.value}"
        return f"{self.key}{'!=' if self.negate else '='}{self.value}"


def _filter(key: str, op: str, value: str, said: str, where: str) -> Filter:
    """The Filter `key op value`, or the one line that says why it is not one (`said`: as typed)."""
    value = value.strip()
    if not value:
        raise BrainError(f"{where} {said!r} has no value after {op!r}; write {key}{op}VALUE"
                         + (" (or search it as words with --literal)" if where == "query" else ""),
                         usage=True, field="where" if where == "--where" else "query")
    compare = op if op in COMPARISONS else ""
    if compare and _number(value) is None and _day_bounds(value) is None:
        raise BrainError(f"{where} {said!r}: {op} compares numbers or dates (2026, 2026-03, 2026-03-01), "
                         f"and {value!r} is neither; use = or != for other values",
                         usage=True, field="where" if where == "--where" else "query")
    return Filter(key, value, negate=op == "!=", compare=compare)


def parse_filter(text: str) -> Filter:
    """`status=active`, `status!=archived`, `year>=2024`, `due<2026-03-01` → Filter; anything else is a usage error.

    Other operators (`==`, `<>`, `=>`) are refused rather than read as a key or
    value with a stray character in it, which would silently match nothing.
    """
    # Split by hand, not with a regex: `(.*?)\s*` backtracks quadratically over a run of spaces.
    at = next((i for i, ch in enumerate(text) if ch in "=!<>"), -1)
    key = text[:at].strip() if at >= 0 else ""
    op = next((o for o in _OPERATORS if text.startswith(o, at)), "") if at >= 0 else ""
    value = text[at + len(op):].strip() if op else ""
    if not op or not key or not value or value[0] in "=!<>" or any(ch.isspace() for ch in key):
        raise BrainError(
            f"--where {text!r} is not a filter; use key=value, key!=value or key>value, key>=value, key<value, "
            "key<=value with a number or date (e.g. status!=archived, year>=2024)",
            usage=True,
            field="where",
        )
    return _filter(key, op, value, text, "--where")


@dataclass(frozen=True)
class Term:
    """A word or a quoted phrase of the query."""

    text: str
    phrase: bool

    @property
    def shown(self) -> str:
        return f'"{self.text}"' if self.phrase else self.text

    def found_in(self, tokens: Sequence[str], present: set[str], forms: Callable[[str], Iterable[str]]) -> bool:
        """In a note of these folded `tokens` (`present`: the same, as a set)? A phrase: its exact words in a
        row (case and accents aside); a word: a token with one of its `forms`, as the keyword index matches it."""
        words = [fold(t) for t in WORD.findall(self.text)]
        if not words:
            return False
        if not self.phrase and len(words) == 1:
            word = words[0]
            if word in present:
                return True
            wanted = set(forms(word))
            # A stem keeps the word's first letters: only tokens that share them are stemmed (a long note
            # has tens of thousands of distinct words).
            return any(t[:2] == word[:2] and wanted & set(forms(t)) for t in present)
        size = len(words)
        first = words[0]
        return any(tokens[i : i + size] == words for i, t in enumerate(tokens) if t == first)


@dataclass
class Operators:
    """What a query's operators ask for, and `text`: the query both halves search (quotes, exclusions,
    OR and filters taken out; a phrase's words stay)."""

    text: str
    required: list[tuple[Term, ...]] = field(default_factory=list)  # each: a note holding one of these ranks first
    phrases: list[Term] = field(default_factory=list)  # every quoted phrase searched (the keyword half's phrases)
    excluded: list[Term] = field(default_factory=list)
    paths: list[tuple[str, bool]] = field(default_factory=list)  # (folder or note, excluded?)
    filters: list[Filter] = field(default_factory=list)
    any_of: list[tuple[Term, ...]] = field(default_factory=list)  # every OR group, as typed

    def __bool__(self) -> bool:
        return bool(self.required or self.phrases or self.excluded or self.paths or self.filters or self.any_of)

    @property
    def reads_text(self) -> bool:
        """True when a note's text decides whether or where it is shown."""
        return bool(self.required or self.excluded)

    def judge(self, text: str, forms: Callable[[str], Iterable[str]]) -> tuple[bool, bool]:
        """(admitted, holds) for a note of this text, its words read once.

        admitted: it holds none of the excluded words or phrases (a hard rule). `forms`: a word → the forms
        the keyword index stores it in (its stemmers, then the tokenizer's porter), so `-draft` leaves out a
        note that says "drafts" exactly when the keyword half would find it.
        holds: one term of each required group (the phrases); such notes rank first, the others after them.
        Not a filter: a question that quotes words its note words otherwise (SQuAD-it's 89 quoted questions)
        kept 0.96 of its answers in the top 100 ranked, 0.70 filtered.
        """
        tokens = WORD.findall(fold(text))  # folding keeps each character one character: the same words, folded
        present = set(tokens)

        def found(terms: Iterable[Term]) -> bool:
            return any(term.found_in(tokens, present, forms) for term in terms)

        return not found(self.excluded), all(found(group) for group in self.required)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.phrases:
            data["phrases"] = [t.text for t in self.phrases]
        if self.any_of:
            data["any_of"] = [[t.shown for t in group] for group in self.any_of]
        if self.excluded:
            data["excluded"] = [t.shown for t in self.excluded]
        if self.paths:
            data["paths"] = [("-" if out else "") + path for path, out in self.paths]
        if self.filters:
            data["filters"] = [f.shown for f in self.filters]
        return data

    @property
    def line(self) -> str:
        """One line for the text view: what each operator was read as."""
        parts = [f"first the notes holding {' or '.join(t.shown for t in group)}" for group in self.required]
        parts += [" OR ".join(t.shown for t in group) for group in self.any_of
                  if not any(t.phrase for t in group)]
        parts += [f"without {t.shown}" for t in self.excluded]
        parts += [f"{'not ' if out else ''}under {path}" for path, out in self.paths]
        parts += [f.shown for f in self.filters]
        return "; ".join(parts)


def _quoted(query: str, start: int) -> tuple[str, int]:
    """The text of the quote opening at `start`, and the index after its closing quote."""
    close = _OPENING[query[start]]
    end = query.find(close, start + 1)
    if end < 0 and close != '"':
        end = query.find('"', start + 1)
    if end < 0:
        raise BrainError(f"query has a quote with no closing quote (at {query[start:start + 30]!r}); close it, "
                         "or search it as words with --literal", usage=True, field="query")
    return query[start + 1 : end], end + 1


def parse(query: str, fields: Collection[str]) -> Operators:
    """The operators of `query`; `fields`: the frontmatter fields the index holds (`key:value` is a filter only
    for those, path and tag, so "nota: bene", "http://x" and "10:30" stay words)."""
    known = {name.lower(): name for name in fields}
    items: list[Term | None] = []  # the query's words and phrases in order; None: an OR between two
    out = Operators(text="")
    i, size = 0, len(query)
    while i < size:
        if query[i].isspace():
            i += 1
            continue
        start = i
        # A minus opens an exclusion only before a letter or a quote: "-5", "--x" and a lone "-" are words.
        negated = query[i] == "-" and i + 1 < size and (query[i + 1] in _OPENING or query[i + 1].isalpha())
        if negated:
            i += 1
        if query[i] in _OPENING:
            phrase, i = _quoted(query, i)
            term = Term(" ".join(phrase.split()), phrase=True)
            if not WORD.search(phrase):
                continue  # "" or "!!": nothing to hold
            if negated:
                out.excluded.append(term)
            else:
                out.phrases.append(term)
                items.append(term)
            continue
        while i < size and not query[i].isspace():
            i += 1
        word = query[start + negated : i]
        found = _FIELD.fullmatch(word)
        key = found.group(1).lower() if found else ""
        # "Note: bene" is prose: a colon with nothing after it is never a filter, whatever the key.
        if found and (key in ("path", "tag") or key in known) and (found.group(3) or found.group(2) != ":"):
            op, value = found.group(2), found.group(3)
            if value[:1] in _OPENING:  # key:"a value with spaces"
                quote_at = start + negated + len(found.group(1)) + len(op)
                value, i = _quoted(query, quote_at)
            said = query[start:i]
            if key == "path":
                if op not in (":", "=", "!="):
                    raise BrainError(f"query {said!r}: path takes a folder or note (path:projects/), not {op}",
                                     usage=True, field="query")
                if not value.strip():
                    raise BrainError(f"query {said!r} has no folder; write path:FOLDER/", usage=True, field="query")
                out.paths.append((value.strip(), negated != (op == "!=")))
                continue
            if key == "tag":
                if op not in (":", "=", "!="):
                    raise BrainError(f"query {said!r}: tag takes a tag (tag:meeting), not {op}",
                                     usage=True, field="query")
                if not value.strip().lstrip("#"):
                    raise BrainError(f"query {said!r} has no tag; write tag:NAME", usage=True, field="query")
                out.filters.append(Filter("tags", value.strip().lstrip("#"), negate=negated != (op == "!="),
                                          tag=True))
                continue
            one = _filter(known[key], "=" if op == ":" else op, value, said, "query")
            out.filters.append(Filter(one.key, one.value, negate=one.negate != negated, compare=one.compare))
            continue
        if negated and WORD.search(word):
            out.excluded.append(Term(word, phrase=False))
            continue
        if word == "OR" and not negated:
            items.append(None)
            continue
        items.append(Term(query[start:i], phrase=False))
    # OR joins the terms either side of it; one that joins nothing (first, last, doubled) is a word.
    items = [Term("OR", phrase=False) if item is None and not (0 < n < len(items) - 1 and items[n - 1] is not None
                                                                and items[n + 1] is not None) else item
             for n, item in enumerate(items)]
    _group(items, out)
    out.text = " ".join(t.text for t in items if t is not None)
    return out


def _group(items: list[Term | None], out: Operators) -> None:
    """Terms joined by OR into groups: a group holding a phrase is required (one of it), every group is shown."""
    groups: list[list[Term]] = []
    joined = False
    for item in items:
        if item is None:
            joined = bool(groups)
            continue
        if joined:
            groups[-1].append(item)
        else:
            groups.append([item])
        joined = False
    for group in groups:
        if len(group) > 1:
            out.any_of.append(tuple(group))
        if any(t.phrase for t in group):
            out.required.append(tuple(group))
