"""A note's outgoing links, and the indexed file each one names, the way Obsidian resolves them.

Pure: text and path lists in, links out (no I/O, standard library only).

Extraction (`extract_links`): `[[x]]`/`![[x]]` with `#heading`, `#^block` and `|alias` (also `\\|` in tables),
`[text](x.md)`/`![alt](x.png)` with `<angle targets>`, titles and percent-decoding (relative targets only:
schemes, `//` and bare `#fragment`s are dropped), and frontmatter values: wiki links in any value, and plain
string values as candidates (except under tags/aliases/cssclasses, which never name notes). Fenced code, inline
code, `<!-- -->` and `%% %%` hide links. At most MAX_LINKS links per note; targets over MAX_TARGET are ignored.

Resolution (`Resolver.resolve`), case-insensitive, `.md` optional for notes:
- `[[#Heading]]` (target "") and any target naming the source resolve to the source (reason "self").
- `.`/`..` segments are normalised; a target climbing above the root is "outside", never resolved.
- Wiki, embed and frontmatter targets: `./x`, `../x` (any `..` segment) are relative to the source's folder, nothing
  else. Otherwise an exact vault path wins; then every file whose path ends with the target ("Folder/Note" matches
  "A/Folder/Note.md"; a bare name matches by basename).
- Markdown targets: relative to the source's folder first, then a vault path (`/x` is only that), then the
  suffix/basename match; a target with `./` or `..` segments is only tried relative to the source.
- Several suffix/basename matches: one in the source's own folder, then one whose case matches exactly, then the
  shortest path string, then alphabetical. That is Obsidian's observed order (getFirstLinkpathDest on 1.13.7:
  exact path, then the source's folder, then the shortest path *string* — `a/b/Note.md` beats `zzzz/Note.md`).
- Anything else, including files absent from the path list, is "unresolved".
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

MAX_LINKS = 10_000
MAX_TARGET = 1_000
NOT_NOTE_KEYS = frozenset({"tags", "tag", "aliases", "alias", "cssclasses", "cssclass"})

_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})(.*)$")
_TICKS = re.compile(r"`+")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)|%%.*?(?:%%|\Z)", re.S)
_WIKI = re.compile(r"(!?)\[\[((?:(?!\[\[)[^\n])*?)\]\]")
_MD = re.compile(
    r"(!?)\[([^\[\]\n]*)\]\(\s*(<[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_KEY = re.compile(r"^([^\s:#\-\[{\"'][^:]*?):(?:\s+(.*))?$")


@dataclass(frozen=True)
class Link:
    """One outgoing link as written; `plain` marks a frontmatter value that is only a candidate note name."""

    target: str
    kind: str  # "wiki", "embed", "markdown", "frontmatter"
    line: int
    heading: str = ""
    alias: str = ""
    plain: bool = False


@dataclass(frozen=True)
class Resolved:
    """A link and the indexed path it names; `reason` says why not ("unresolved", "outside") or "self"."""

    link: Link
    path: str | None
    reason: str = ""


def _blank(chars: list[str], start: int, end: int) -> None:
    """Spaces over chars[start:end], newlines kept, so offsets and line numbers survive the masking."""
    for i in range(start, end):
        if chars[i] != "\n":
            chars[i] = " "


def _frontmatter_end(lines: list[str]) -> int:
    """The number of lines the opening YAML block takes (0: none, or never closed)."""
    if not lines or lines[0].rstrip() not in ("---", "\ufeff---"):
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return i + 1
    return 0


def _mask(text: str, lines: list[str], skip: int) -> str:
    """The text with frontmatter, fenced and inline code and comments blanked: what is left may hold links."""
    chars = list(text)
    pos, fence, fence_start = 0, "", 0
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if i < skip:
            _blank(chars, pos, pos + len(line))
        elif fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip():
                _blank(chars, fence_start, pos + len(line))
                fence = ""
        elif m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence, fence_start = m.group(1), pos
        pos += len(line)
    if fence:
        _blank(chars, fence_start, len(chars))
    masked = "".join(chars)
    i, breaks = 0, [b.start() for b in _BLANK_LINE.finditer(masked)] + [len(masked)]
    while m := _TICKS.search(masked, i):  # a code span ends at a run as long as its opener, within its paragraph
        runs = _TICKS.finditer(masked, m.end(), breaks[bisect.bisect_left(breaks, m.end())])
        closer = next((r for r in runs if len(r.group()) == len(m.group())), None)
        i = closer.end() if closer else m.end()
        if closer:
            _blank(chars, m.start(), closer.end())
    masked = "".join(chars)
    for m in _COMMENT.finditer(masked):
        _blank(chars, m.start(), m.end())
    return "".join(chars)


def _split_wiki(inner: str, kind: str, line: int) -> Link | None:
    """`target#heading|alias` (an escaped `\\|` counts as the pipe) as a Link; None when too long or empty."""
    inner = inner.replace("\\|", "|")
    ref, _, alias = inner.partition("|")
    target, _, heading = ref.partition("#")
    target = target.strip()
    if len(target) > MAX_TARGET or not (target or heading.strip()):
        return None
    return Link(target, kind, line, heading.strip(), alias.strip())


def _unquote_value(value: str) -> str:
    """A YAML scalar without its quotes, or without a trailing comment when unquoted."""
    value = value.strip()
    if value[:1] in ("'", '"') and (close := value.find(value[0], 1)) > 0:
        return value[1:close].strip()
    return re.sub(r"\s+#.*$", "", value).strip()


def _frontmatter_links(lines: list[str], end: int) -> list[Link]:
    """Wiki links and plain string values of `key: value`, `key: [a, b]` and `- item` lines of the frontmatter."""
    links: list[Link] = []
    key = ""
    for number in range(2, end):
        if len(links) >= MAX_LINKS:
            break
        raw = lines[number - 1].strip()
        item = raw.startswith("- ") or raw == "-"
        value = raw[1:].strip() if item else raw
        m = _KEY.match(value) if not value.startswith("[[") else None
        if m:
            key, value = m.group(1).strip().lower(), m.group(2) or ""
        elif not item:
            continue
        wikis = [_split_wiki(w.group(2), "frontmatter", number) for w in _WIKI.finditer(value)]
        if wikis:
            links.extend(w for w in wikis if w)
            continue
        if key in NOT_NOTE_KEYS or value.startswith(("|", ">", "#", "{", "&", "*")):
            continue
        parts = value[1:-1].split(",") if value.startswith("[") and value.endswith("]") else [value]
        for part in parts:
            plain = _unquote_value(part)
            if plain and len(plain) <= MAX_TARGET:
                links.append(Link(plain, "frontmatter", number, plain=True))
    return links


def _markdown_link(m: re.Match[str], text: str, line: int) -> Link | None:
    """A relative `[text](target)` as a Link, decoded, its `#fragment` as heading; None for the rest."""
    dest = text[m.start(3):m.end(3)]
    if dest.startswith("<"):
        dest = dest[1:-1]
    dest = dest.strip()
    if not dest or _SCHEME.match(dest) or dest.startswith(("//", "#")):
        return None
    target, _, fragment = dest.partition("#")
    target = unquote(target)
    if len(target) > MAX_TARGET:
        return None
    return Link(target, "markdown", line, unquote(fragment), text[m.start(2):m.end(2)].strip())


def extract_links(text: str) -> list[Link]:
    """The note's links in order of appearance; `text` is the raw note INCLUDING its YAML frontmatter."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]  # only "\n" ends a line: line numbers count newlines, nothing else
    end = _frontmatter_end(lines)
    links = _frontmatter_links(lines, end)[:MAX_LINKS]
    masked = _mask(text, lines, end)
    newlines = [i for i, c in enumerate(text) if c == "\n"]
    found: list[tuple[int, Link]] = []
    chars = list(masked)
    for m in _WIKI.finditer(masked):
        link = _split_wiki(text[m.start(2):m.end(2)], "embed" if m.group(1) else "wiki",
                           bisect.bisect_left(newlines, m.start()) + 1)
        _blank(chars, m.start(), m.end())
        if link:
            found.append((m.start(), link))
    for m in _MD.finditer("".join(chars)):
        link = _markdown_link(m, text, bisect.bisect_left(newlines, m.start()) + 1)
        if link:
            found.append((m.start(), link))
    found.sort(key=lambda pair: pair[0])
    return (links + [link for _, link in found])[:MAX_LINKS]


def _normalise(path: str) -> str | None:
    """`path` with empty, `.` and `..` segments folded away; None when it climbs above the root."""
    parts: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if not parts:
                return None
            parts.pop()
        elif segment not in ("", "."):
            parts.append(segment)
    return "/".join(parts)


def _keys(path: str, lower: bool = True) -> list[str]:
    """The names a path answers to (lowercase unless asked): itself and, for a note, itself without `.md`."""
    name = path.lower() if lower else path
    return [name, name[:-3]] if path.lower().endswith(".md") else [name]


def _ends(key: str, target: str) -> bool:
    """Whether `target` is `key` or a tail of it starting at a folder boundary."""
    return key == target or key.endswith("/" + target)


def _folder(path: str) -> str:
    """The folder part of a relative path ("" at the root)."""
    return path.rpartition("/")[0]


class Resolver:
    """Lookup tables over every indexed path, built once, to resolve any note's links."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._full: dict[str, list[str]] = {}
        self._base: dict[str, list[str]] = {}
        for path in dict.fromkeys(paths):
            for key in _keys(path):
                self._full.setdefault(key, []).append(path)
                self._base.setdefault(key.rpartition("/")[2], []).append(path)

    def _pick(self, candidates: list[str], target: str, source: str) -> str | None:
        """The source's own folder first, then exact case, then the shortest path string, then alphabetical."""
        folder = _folder(source)
        return min(candidates, default=None, key=lambda p: (
            _folder(p) != folder, not any(k.endswith(target) for k in _keys(p, lower=False)), len(p), p))

    def _exact(self, path: str, source: str) -> str | None:
        """The file at vault path `path` (`.md` optional, any case)."""
        return self._pick(self._full.get(path.lower(), []), path, source)

    def _suffix(self, target: str, source: str) -> str | None:
        """The best file whose path ends with `target` at a folder boundary (a bare name: by basename)."""
        low = target.lower()
        candidates = [p for p in self._base.get(low.rpartition("/")[2], []) if any(_ends(k, low) for k in _keys(p))]
        return self._pick(candidates, target, source)

    def resolve(self, link: Link, source: str) -> Resolved:
        """The indexed path `link` in note `source` names, or why none (see the module's rules)."""
        target = link.target
        if not target:
            return Resolved(link, source, "self")
        explicit = target.startswith(("./", "../")) or ".." in target.split("/")
        rooted = target.startswith("/")
        if explicit or (link.kind == "markdown" and not rooted):
            norm = _normalise(f"{_folder(source)}/{target}")
            if norm is None:
                return Resolved(link, None, "outside")
            found = self._exact(norm, source) if norm else None
            if found or explicit:
                return self._result(link, found, source, norm, suffix=False)
        norm = _normalise(target)
        if norm is None:
            return Resolved(link, None, "outside")
        found = (self._exact(norm, source) or (None if rooted else self._suffix(norm, source))) if norm else None
        return self._result(link, found, source, norm, suffix=not rooted)

    def _result(self, link: Link, found: str | None, source: str, norm: str, suffix: bool) -> Resolved:
        """A Resolved for `found`: "self" when it is the source (indexed or not), "unresolved" when nothing."""
        low = norm.lower()
        if found is None and low and any(_ends(k, low) if suffix else k == low for k in _keys(source)):
            found = source
        if found is None:
            return Resolved(link, None, "unresolved")
        return Resolved(link, found, "self" if found == source else "")


def kept(resolved: Resolved) -> bool:
    """False for a plain frontmatter value that names no other note: it was only a value, not a link."""
    return not resolved.link.plain or (resolved.path is not None and resolved.reason != "self")


def resolve_all(text: str, source: str, resolver: Resolver) -> list[Resolved]:
    """extract + resolve; frontmatter plain values that name no note are dropped (they were just values),
    wiki/embed/markdown links that name no note are kept with path None. A plain value naming the note itself
    (`title: Alpha` in Alpha.md) is dropped too: a value repeating the note's name is no link."""
    return [r for r in (resolver.resolve(link, source) for link in extract_links(text)) if kept(r)]


def name_key(target: str) -> str:
    """The name a target or path is looked up by for backlinks: its last segment, lowercase, without `.md`
    (every way of linking a note ends with its name, so a note's backlinks are among the links of its key)."""
    name = target.rpartition("/")[2].lower()
    return name[:-3] if name.endswith(".md") else name
