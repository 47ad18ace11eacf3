"""What a query names besides its topic: a kind of note, a frontmatter value, a status or a time (pure).

"progetti Laravel del 2024 ancora attivi" names the notes it wants: those in a
folder of projects (or of `type: project`), with Laravel among their
frontmatter values, a date in 2024 and an active status. Each is recognised
only against what the index holds (its folders, its frontmatter fields and
values, its dates), so nothing here is written for one folder; the only lists
are the small vocabularies of a language (kind nouns, status and time words).
Search ranks the notes that satisfy more of what was understood first, and the
rest of the query orders them (search.Searcher); nothing is filtered out.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .excerpt import fold
from .stemming import WORD as _WORD

# The frontmatter fields that hold a note's own words, not a value it shares with others.
TEXT_FIELDS = frozenset({"title", "description", "summary", "aliases", "alias", "abstract", "excerpt"})
MAX_VALUE_WORDS = 3  # longer values are sentences, not values a query names
# A field whose values repeat (distinct values at most this share of its uses) holds categories
# (stack, sector, status, tags); one whose every value is new (a client's name, a permalink) does not.
CATEGORY_SHARE = 0.75
MIN_FIELD_FILES = 3  # a field fewer files carry is nobody's category
MIN_KIND_FILES = 3  # a folder of fewer files is not a kind of note
_ORDER = ("kind", "time", "value", "status")
MAIN_NOTES = ("index.md", "readme.md", "_index.md")  # the note that stands for a folder of a thing's notes
MIN_PREFIX = 5  # two stems match when one begins the other and the shorter has this many letters

# Nouns for kinds of notes, one group per concept, in both languages: a group matches a folder (or
# `type` value) named by any of its words, and the query then names it by any other. Plurals only
# for things counted ("il progetto per la clinica" asks for one note, "progetti" for a kind); "note"
# is not here: in a notes folder every note is one.
# A note that has a client is work done for that client, so where no folder is named by these nouns
# the notes carrying a field they name (`client:`, `committente:`) are what "clients" asks for. No other
# kind works so: a diary note with `project:` belongs to a project and is not one.
CLIENT_WORDS = frozenset("clients customers clienti committenti".split())
KIND_GROUPS: tuple[frozenset[str], ...] = (CLIENT_WORDS,) + tuple(frozenset(g.split()) for g in (
    "projects progetti lavori commesse jobs",
    "decisions decisioni adr adrs",
    "diary diaries journal journals diario diari giornale",
    "handbook handbooks manual manuals manuale manuali guides guide",
    "meetings riunioni verbali minutes",
    "recipes ricette",
    "books libri",
    "people persone contacts contatti",
    "ideas idee",
    "tasks todo compiti",
))

# Status words, folded, one group per state (a phrase is its words joined by a space). A group matches
# the index's status values that belong to it, so "dismessi" finds `status: archived`. Words a sentence
# uses for other things ("open", "done", "running", "live") are left out.
STATUS_GROUPS: tuple[frozenset[str], ...] = tuple(frozenset(g.split(",")) for g in (
    "active,attivo,attivi,attiva,attive,in corso,ongoing,still running,in produzione,aperto,aperti,aperta,aperte",
    "archived,archive,archiviato,archiviati,archiviata,archiviate,dismesso,dismessi,dismessa,dismesse,chiuso,"
    "chiusi,chiusa,chiuse,closed,concluso,conclusi,conclusa,concluse,finished,ended,completed,terminato,terminati,"
    "retired,decommissioned,shut down,delivered,consegnato,consegnata,consegnati,consegnate",
    "cancelled,canceled,annullato,annullata,annullati,annullate,cancellato,cancellata,cancellati,cancellate",
    "maintenance,maintained,manutenzione",
    "development,in development,under development,sviluppo,in sviluppo,in fase di sviluppo,being built,wip",
    "paused,on hold,sospeso,sospesi,sospesa,sospese,in pausa",
    "accepted,approved,accettato,accettata,accettate,accettati,approvato,approvata,approvati,approvate",
    "superseded,replaced,sostituito,sostituita,sostituiti,sostituite,superato,superata,superati,superate,deprecated,"
    "obsoleto,obsoleta,obsoleti,obsolete",
    "draft,drafts,bozza,bozze",
    "proposed,proposal,proposto,proposta,proposte",
))

MONTHS = {name: n for n, names in enumerate((
    "january gennaio jan gen", "february febbraio feb", "march marzo mar", "april aprile apr",
    "may maggio mag", "june giugno jun giu", "july luglio jul lug", "august agosto aug ago",
    "september settembre sep sept set", "october ottobre oct ott", "november novembre nov",
    "december dicembre dec dic"), 1) for name in names.split() if len(name) > 3}
_SINCE = frozenset("dal dall dallo dalla since from dopo after".split())
# A year is a time only after one of these (or a month): "FT-2025-0093" and "PHP 8 2024" name no time.
_AT = frozenset("nel del in of durante during anno year entro by".split()) | _SINCE
_BEFORE = frozenset("before prima until fino".split())
_YEAR = re.compile(r"^(19[5-9]\d|20\d\d)$")
# A time right after a verb of starting or ending ("avviati nel 2024", "ended in 2025", "consegnate nel
# 2023") asks for the date a note gives that moment: the date fields whose name says so (`started`,
# `data_inizio`, `ended`, `consegna`), when the index has them; otherwise any date, as without the verb.
START_WORDS = frozenset(
    "started start starting begun began begin launched kicked opened avviato avviata avviati avviate avviare iniziato "
    "iniziata iniziati iniziate iniziare partito partita partiti partite cominciato cominciata cominciati "
    "cominciate aperto aperta".split())
END_WORDS = frozenset(
    "ended ending finished completed concluded closed delivered shipped terminated wrapped finito finita finiti "
    "finite concluso conclusa conclusi concluse chiuso chiusa chiusi chiuse terminato terminata terminati "
    "terminate consegnato consegnata consegnati consegnate completato completata completati completate".split())
# Folded beginnings of a field name's parts that name a start or an end ("started_at", "data_fine").
START_FIELDS = ("start", "begin", "inizi", "avvi", "opened", "apertur", "kickoff", "launch")
END_FIELDS = ("end", "finish", "fine", "conclu", "chius", "close", "termin", "consegn", "deliver", "complet",
              "shipped")
_FIELD_PART = re.compile(r"[a-z]+")
_DATE = re.compile(r"(?<!\d)((?:19|20)\d\d)-(\d\d)(?:-(\d\d))?(?!\d)")
# Relative times, folded words → (unit, offset from now): "last year" is ("year", -1).
RELATIVE: dict[tuple[str, ...], tuple[str, int]] = {
    ("last", "year"): ("year", -1), ("anno", "scorso"): ("year", -1), ("scorso", "anno"): ("year", -1),
    ("this", "year"): ("year", 0), ("quest", "anno"): ("year", 0), ("questo", "anno"): ("year", 0),
    ("last", "month"): ("month", -1), ("mese", "scorso"): ("month", -1), ("scorso", "mese"): ("month", -1),
    ("this", "month"): ("month", 0), ("questo", "mese"): ("month", 0),
    ("last", "week"): ("week", -1), ("settimana", "scorsa"): ("week", -1), ("scorsa", "settimana"): ("week", -1),
    ("this", "week"): ("week", 0), ("questa", "settimana"): ("week", 0),
}


@dataclass(frozen=True)
class NoteFacts:
    """What understanding reads of one indexed file: its folders, frontmatter values and dates."""

    path: str
    folders: tuple[str, ...]  # folded folder names on its path
    values: dict[str, frozenset[str]]  # field → folded values (lists exploded)
    dates: tuple[dt.date, ...]  # frontmatter dates and years, a date in the file name
    fields: frozenset[str] = frozenset()  # folded frontmatter keys with a value, however long
    field_dates: dict[str, tuple[dt.date, ...]] = field(default_factory=dict)  # field → the dates it gives


@dataclass
class IndexFacts:
    """The kinds, categories and statuses an index holds, gathered once per version of the index."""

    notes: dict[int, NoteFacts]
    kinds: dict[str, str]  # folded kind name (a folder with MIN_KIND_FILES files, a `type` value) → as written
    categories: dict[str, dict[str, str]]  # field → folded value → as written (CATEGORY_SHARE fields only)
    types: frozenset[str] = frozenset()  # the folded `type` values among the kinds
    by_path: dict[str, int] = field(default_factory=dict)  # folded path → file id
    dated: bool = False  # some note has a date: a time can be understood
    shown: dict[str, dict[str, str]] = field(default_factory=dict)  # every field's short values: folded → as written
    keyed: dict[str, int] = field(default_factory=dict)  # field → how many notes give it a value, however long
    date_fields: dict[str, int] = field(default_factory=dict)  # field → how many notes give a date in it
    forms_memo: dict[str, set[str]] = field(default_factory=dict)  # a word → its stemmed forms (this index's stems)
    value_index: tuple[list[tuple[str, str, str, list[set[str]]]], dict[str, list[int]]] | None = None

    def main_note(self, fid: int, kind_folders: frozenset[str]) -> int | None:
        """The main note of the thing file `fid` belongs to, when it lies in a folder of its own under a kind
        folder (projects/<name>/…): <name>/index.md, README.md or <name>.md; else None."""
        facts = self.notes.get(fid)
        if facts is None:
            return None
        parts = fold(facts.path).split("/")
        for i, folder in enumerate(parts[:-2]):
            if folder in kind_folders:
                base = "/".join(parts[: i + 2])
                for name in MAIN_NOTES + (parts[i + 1] + ".md",):
                    main = self.by_path.get(f"{base}/{name}")
                    if main is not None:
                        return main
                return None
        return None

    @classmethod
    def gather(cls, files: Iterable[tuple[int, str, dict[str, Any]]]) -> IndexFacts:
        """From (file id, path, frontmatter) of every indexed file."""
        notes: dict[int, NoteFacts] = {}
        folder_count: Counter[str] = Counter()
        written: dict[str, str] = {}
        uses: dict[str, list[str]] = {}
        carriers: Counter[str] = Counter()  # field → how many notes carry a short value of it
        keyed: Counter[str] = Counter()  # field → how many notes give it any value
        date_fields: Counter[str] = Counter()  # field → how many notes give a date in it
        shown: dict[str, dict[str, str]] = {}
        for fid, path, metadata in files:
            parts = path.split("/")[:-1]
            folders = tuple(fold(p) for p in parts)
            for part, folded in zip(parts, folders):
                folder_count[folded] += 1
                written.setdefault(folded, part)
            values: dict[str, frozenset[str]] = {}
            dates: list[dt.date] = list(_dates_in(path.rsplit("/", 1)[-1]))
            keys = set()
            field_dates: dict[str, tuple[dt.date, ...]] = {}
            for key, raw in (metadata or {}).items():
                name = fold(str(key))
                if raw not in (None, "", [], {}):
                    keys.add(name)
                    keyed[name] += 1
                items = raw if isinstance(raw, list) else [raw]
                found = set()
                before = len(dates)
                for item in items:
                    if isinstance(item, (dt.date, dt.datetime)):
                        dates.append(item.date() if isinstance(item, dt.datetime) else item)
                        continue
                    if isinstance(item, bool) or item is None or isinstance(item, (dict, list)):
                        continue
                    text = str(item).strip()
                    if isinstance(item, int) and _YEAR.match(text):
                        dates.append(dt.date(item, 1, 1))
                        continue
                    parsed = list(_dates_in(text)) if _DATE.fullmatch(text) else []
                    if parsed:
                        dates.extend(parsed)
                        continue
                    if name in TEXT_FIELDS or not text or len(_WORD.findall(text)) > MAX_VALUE_WORDS:
                        continue
                    value = " ".join(_WORD.findall(fold(text)))
                    if value:
                        found.add(value)
                        shown.setdefault(name, {}).setdefault(value, text)
                if len(dates) > before:
                    field_dates[name] = tuple(dates[before:])
                    date_fields[name] += 1
                if found:
                    values[name] = frozenset(found)
                    uses.setdefault(name, []).extend(found)
                    carriers[name] += 1
            notes[fid] = NoteFacts(path, folders, values, tuple(dates), frozenset(keys), field_dates)
        kinds = {f: written[f] for f, n in folder_count.items() if n >= MIN_KIND_FILES}
        types = {value for facts in notes.values() for value in facts.values.get("type", ())}
        for value in types:
            kinds.setdefault(value, shown["type"][value])
        categories = {}
        for name, used in uses.items():
            if name == "type":
                continue
            if carriers[name] >= MIN_FIELD_FILES and len(set(used)) <= CATEGORY_SHARE * len(used):
                categories[name] = shown[name]
        by_path = {fold(facts.path): fid for fid, facts in notes.items()}
        return cls(notes, kinds, categories, frozenset(types), by_path, any(f.dates for f in notes.values()), shown,
                   dict(keyed), dict(date_fields))


@dataclass(frozen=True)
class Constraint:
    """One thing the query was understood to ask of a note."""

    kind: str  # "kind", "value", "status", "time"
    label: str  # as the "understood:" line shows it: "kind projects", "stack Laravel", "year 2024"
    words: tuple[str, ...]  # the query words it was read from, folded
    test: Callable[[NoteFacts], bool] = field(compare=False, repr=False)
    pairs: frozenset[tuple[str, str]] = frozenset()  # a value's (field, value) pairs

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "label": self.label, "words": list(self.words)}


@dataclass
class Understood:
    """What a query was understood to name; empty when nothing was."""

    constraints: list[Constraint] = field(default_factory=list)
    kind_folders: frozenset[str] = frozenset()  # folded folder names of the understood kinds

    def __bool__(self) -> bool:
        return bool(self.constraints)

    @property
    def line(self) -> str:
        return " · ".join(c.label for c in self.ordered())

    def ordered(self) -> list[Constraint]:
        """Kinds, then times, values and statuses, as a sentence names them."""
        return sorted(self.constraints, key=lambda c: _ORDER.index(c.kind))

    def satisfied(self, facts: NoteFacts | None) -> int:
        """How many of the constraints this note satisfies."""
        if facts is None:
            return 0
        return sum(1 for c in self.constraints if c.test(facts))

    def to_list(self) -> list[dict[str, Any]]:
        return [c.to_dict() for c in self.ordered()]


def _dates_in(text: str) -> Iterable[dt.date]:
    for match in _DATE.finditer(text):
        year, month, day = int(match[1]), int(match[2]), int(match[3] or 1)
        try:
            yield dt.date(year, month, day)
        except ValueError:
            continue


def _forms(word: str, stems: Sequence[Callable[[str], str]]) -> set[str]:
    return {word} | {stem(word) for stem in stems}


def _same_word(a: set[str], b: set[str]) -> bool:
    """Two words' forms match: a common stem, or one stem beginning the other ("sanitar"/"sanit")."""
    if a & b:
        return True
    return any(min(len(x), len(y)) >= MIN_PREFIX and (x.startswith(y) or y.startswith(x)) for x in a for y in b)


_KIND_WORDS = frozenset().union(*KIND_GROUPS)
_STATUS_WORDS = frozenset(w for g in STATUS_GROUPS for phrase in g for w in phrase.split())


def may_name_something(query: str) -> bool:
    """Whether `query` has a kind noun, a status word or a time at all: nothing else starts understanding,
    so a query without one costs no read of the index's facts (7,000 files take about 0.3 s)."""
    words = [fold(w) for w in _WORD.findall(query)]
    return any(w in _KIND_WORDS or w in _STATUS_WORDS or _YEAR.match(w) for w in words) or any(
        pair in RELATIVE for pair in zip(words, words[1:]))


@dataclass
class _Words:
    """A query's folded words, each one's forms (its stems), and which are read already."""

    words: list[str]
    forms: list[set[str]]
    used: list[bool]
    forms_of: Callable[[str], set[str]]

    def taken(self, span: range) -> list[str]:
        for j in span:
            self.used[j] = True
        return self.words[span.start:span.stop]


def understand(
    query: str, facts: IndexFacts, stems: Sequence[Callable[[str], str]], stop_words: frozenset[str],
    today: dt.date | None = None,
) -> Understood:
    """The kinds, values, statuses and times `query` names, as this index holds them."""
    if not may_name_something(query):
        return Understood()
    memo = facts.forms_memo  # the index's values are stemmed once per index version, not per query

    def forms_of(word: str) -> set[str]:
        found = memo.get(word)
        if found is None:
            found = memo[word] = _forms(word, stems)
        return found

    words = [fold(w) for w in _WORD.findall(query)]
    query_words = _Words(words, [forms_of(w) for w in words], [False] * len(words), forms_of)
    out = Understood()
    # Times first (a year is never a value), then statuses, kinds and values.
    out.constraints += _times(query_words, facts, today or dt.date.today())
    status_values = {(name, value) for name, values in facts.shown.items() for value in values
                     if any(value in g for g in STATUS_GROUPS)}
    out.constraints += _statuses(query_words, facts, status_values)
    _kinds(query_words, facts, stop_words, out)
    _values(query_words, facts, stop_words, status_values, out)
    # A value alone is a topic ("backup", "Miramare"), which the keyword half already finds; the query
    # asks for things only when it also names a kind, a status or a time.
    if not any(c.kind != "value" for c in out.constraints):
        return Understood()
    return out


def _times(query: _Words, facts: IndexFacts, today: dt.date) -> list[Constraint]:
    """A year after a word that places it ("del 2024", "since 2023", "marzo 2025"), or a relative time."""
    words, used = query.words, query.used
    found = []
    for i, word in enumerate(words):
        rng = None
        if _YEAR.match(word):
            year = int(word)
            prev = words[i - 1] if i > 0 else ""
            prev2 = words[i - 2] if i > 1 else ""
            month = MONTHS.get(prev)
            since_the = prev2 in _SINCE and prev in ("il", "l", "the")  # "dal il"/"since the 2023"
            first = i - 2 if since_the else i - 1  # where the time's words begin: a month or a placing word
            if month:
                start = dt.date(year, month, 1)
                end = dt.date(year + month // 12, month % 12 + 1, 1) - dt.timedelta(days=1)
                rng, label = (start, end), f"month {start:%Y-%m}"
                used[i - 1] = True
            elif prev in _SINCE or since_the:
                rng, label = (dt.date(year, 1, 1), dt.date.max), f"since {year}"
            elif prev in _BEFORE or prev2 in _BEFORE:
                rng, label = (dt.date.min, dt.date(year - 1, 12, 31)), f"before {year}"
            elif prev in _AT:
                rng, label = (dt.date(year, 1, 1), dt.date(year, 12, 31)), f"year {year}"
            else:
                continue
            used[i] = True
        elif i + 1 < len(words) and (word, words[i + 1]) in RELATIVE:
            unit, offset = RELATIVE[(word, words[i + 1])]
            rng, label = _relative(unit, offset, today)
            used[i] = used[i + 1] = True
            first = i
        if rng is not None and facts.dated:
            lo, hi = rng
            test = _dated_within(lo, hi)
            bound = _time_fields(words[max(0, first - 2):first], facts)
            if bound is not None:
                moment, fields = bound
                label += f" ({moment})"
                test = _field_dated_within(fields, lo, hi)
            found.append(Constraint("time", label, tuple(w for w, u in zip(words, used) if u), test))
    return found


def _time_fields(before: list[str], facts: IndexFacts) -> tuple[str, frozenset[str]] | None:
    """The start (or end) date fields a verb just before a time asks for ("avviati nel 2024"), when the index
    has such fields in MIN_FIELD_FILES notes: ("started", fields), or None."""
    for moment, verbs, prefixes in (("started", START_WORDS, START_FIELDS), ("ended", END_WORDS, END_FIELDS)):
        if not any(w in verbs for w in before):
            continue
        fields = frozenset(name for name, count in facts.date_fields.items() if count >= MIN_FIELD_FILES
                           and any(part.startswith(prefixes) for part in _FIELD_PART.findall(name)))
        if fields:
            return moment, fields
    return None


def _statuses(query: _Words, facts: IndexFacts, status_values: set[tuple[str, str]]) -> list[Constraint]:
    """Status phrases of up to four words, longest first, among the values the index holds. Any field's
    value counts here, category or not: a status word is a word of the language, not a guess."""
    words, used = query.words, query.used
    found = []
    for size in (4, 3, 2, 1):
        for i in range(len(words) - size + 1):
            if any(used[i:i + size]):
                continue
            phrase = " ".join(words[i:i + size])
            group = next((g for g in STATUS_GROUPS if phrase in g), None)
            if group is None:
                continue
            held = sorted((name, value) for name, value in status_values if value in group)
            if not held:
                continue
            names = {name for name, _ in held}
            label = f"{'/'.join(sorted(names))} {facts.shown[held[0][0]][held[0][1]]}"
            found.append(Constraint("status", label, tuple(query.taken(range(i, i + size))),
                                    _holds_any(frozenset(held))))
    return found


def _kinds(query: _Words, facts: IndexFacts, stop_words: frozenset[str], out: Understood) -> None:
    """A folder (or `type`) the query names, in its own words or in the other language's."""
    kind_names = facts.kinds
    for i, word in enumerate(query.words):
        if query.used[i] or word in stop_words:
            continue
        # A folder is a kind only through these nouns: "plugin" naming a folder Plugin would lift
        # every note there above the one the query is about. A `type` value matches as a word.
        group = next((g for g in KIND_GROUPS if word in g), None)
        named = sorted(k for k in kind_names if (group is not None and k in group)
                       or (k in facts.types and _same_word(query.forms_of(k), query.forms[i])))
        if not named:
            if group is CLIENT_WORDS:
                _field_kind(query, i, group, facts, out)
            continue
        query.used[i] = True
        folders = frozenset(named)
        out.kind_folders |= folders
        out.constraints.append(Constraint("kind", f"kind {'/'.join(kind_names[k] for k in named)}", (word,),
                                          _of_kind(folders)))


def _field_kind(query: _Words, i: int, group: frozenset[str], facts: IndexFacts, out: Understood) -> None:
    """A client noun that names no folder but names a field ("clients" and `client:`): the notes that carry
    the field (CLIENT_WORDS)."""
    group_forms = set().union(*(query.forms_of(g) for g in group))
    named = sorted(name for name, count in facts.keyed.items()
                   if count >= MIN_KIND_FILES and _same_word(query.forms_of(name), group_forms))
    if not named:
        return
    query.used[i] = True
    out.constraints.append(Constraint("kind", f"kind notes with {'/'.join(named)}", (query.words[i],),
                                      _carries(frozenset(named))))


def _carries(fields: frozenset[str]) -> Callable[[NoteFacts], bool]:
    """A note carries one of these fields."""
    return lambda facts: bool(fields & facts.fields)


def _values(query: _Words, facts: IndexFacts, stop_words: frozenset[str], status_values: set[tuple[str, str]],
            out: Understood) -> None:
    """A category value the query names (one to three words), as words or stems. Only the values whose
    first word shares a query word's first MIN_PREFIX letters can match it: looked up, not scanned."""
    words, used, forms = query.words, query.used, query.forms
    items, by_key = _value_index(facts, query.forms_of, status_values)
    for i in range(len(words)):
        if used[i] or words[i] in stop_words:
            continue
        near = {n for f in forms[i] for n in by_key.get(f[:MIN_PREFIX], ())}
        spans = []
        for n in sorted(near):
            name, value, written, part_forms = items[n]
            span = range(i, i + len(part_forms))
            if span.stop > len(words) or any(used[j] or words[j] in stop_words for j in span):
                continue
            if all(_same_word(part_forms[k], forms[j]) for k, j in enumerate(span)):
                _add_value(out, name, value, written, tuple(words[j] for j in span))
                spans.append(span)
        for span in spans:
            query.taken(span)


def _value_index(
    facts: IndexFacts, forms_of: Callable[[str], set[str]], status_values: set[tuple[str, str]]
) -> tuple[list[tuple[str, str, str, list[set[str]]]], dict[str, list[int]]]:
    """Every category value with its words' forms, and where to look each up by a form's first letters
    (built once per index version)."""
    if facts.value_index is None:
        items: list[tuple[str, str, str, list[set[str]]]] = []
        by_key: dict[str, list[int]] = {}
        for name, values in sorted(facts.categories.items()):
            for value, written in sorted(values.items()):
                parts = value.split()
                if (name, value) in status_values or (len(parts) == 1 and len(parts[0]) < 2):
                    continue  # a status word is read as a status, above
                part_forms = [forms_of(p) for p in parts]
                for form in part_forms[0]:
                    by_key.setdefault(form[:MIN_PREFIX], []).append(len(items))
                items.append((name, value, written, part_forms))
        facts.value_index = (items, by_key)
    return facts.value_index


def _add_value(out: Understood, name: str, value: str, written: str, words: tuple[str, ...]) -> None:
    """One constraint per query span: a value held in several fields (stack and tags) is satisfied by any."""
    for n, existing in enumerate(out.constraints):
        if existing.kind == "value" and existing.words == words:
            fields, shown = existing.label.split(" ", 1)
            label = f"{'/'.join(sorted(set(fields.split('/')) | {name}))} {shown}"
            out.constraints[n] = Constraint("value", label, words, _holds_any(existing.pairs | {(name, value)}),
                                            existing.pairs | {(name, value)})
            return
    pairs = frozenset({(name, value)})
    out.constraints.append(Constraint("value", f"{name} {written}", words, _holds_any(pairs), pairs))


def _holds_any(pairs: frozenset[tuple[str, str]]) -> Callable[[NoteFacts], bool]:
    """A note holds one of these (field, value) pairs."""
    return lambda facts: any(value in facts.values.get(name, ()) for name, value in pairs)


def _dated_within(lo: dt.date, hi: dt.date) -> Callable[[NoteFacts], bool]:
    return lambda facts: any(lo <= d <= hi for d in facts.dates)


def _field_dated_within(fields: frozenset[str], lo: dt.date, hi: dt.date) -> Callable[[NoteFacts], bool]:
    """A note gives a date within [lo, hi] in one of these fields."""
    return lambda facts: any(lo <= d <= hi for name in fields for d in facts.field_dates.get(name, ()))


def _of_kind(kinds: frozenset[str]) -> Callable[[NoteFacts], bool]:
    """A note lies in a folder of one of these names, or has one of them as its `type`."""
    return lambda facts: bool(kinds & set(facts.folders)) or bool(kinds & facts.values.get("type", frozenset()))


def _relative(unit: str, offset: int, today: dt.date) -> tuple[tuple[dt.date, dt.date], str]:
    if unit == "year":
        year = today.year + offset
        return (dt.date(year, 1, 1), dt.date(year, 12, 31)), f"year {year}"
    if unit == "month":
        month_index = today.year * 12 + today.month - 1 + offset
        year, month = divmod(month_index, 12)
        start = dt.date(year, month + 1, 1)
        end = dt.date(year + (month + 1) // 12, (month + 1) % 12 + 1, 1) - dt.timedelta(days=1)
        return (start, end), f"month {start:%Y-%m}"
    monday = today - dt.timedelta(days=today.weekday()) + dt.timedelta(weeks=offset)
    return (monday, monday + dt.timedelta(days=6)), f"week of {monday.isoformat()}"
