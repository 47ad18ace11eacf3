"""Exact lookups in the indexed files: regex grep and byte-range reads of their extracted text.

Relevance ranking answers "which notes talk about this?"; these answer
"where exactly is FT-2026-0412?" and "show me the 4 KB around it". No model
is involved. Patterns run on RE2, whose matching time is linear in the text,
so a pattern like `(a+)+$` cannot hang the process the way a backtracking
engine would. Offsets are UTF-8 byte offsets into the extracted text (what
`brain get` returns), so a grep hit can be read back with `get --offset`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from .errors import BrainError
from .excerpt import blank_lead
from .limits import DEFAULT_GREP_LIMIT as DEFAULT_LIMIT
from .limits import MAX_GREP_CONTEXT as MAX_CONTEXT
from .limits import MAX_GREP_LIMIT as MAX_LIMIT
from .limits import MAX_PATTERN_CHARS, MAX_READ_BYTES
from .sources import page_labels_of
from .texts import FileText, TextReader, TextUnavailable

LINE_CHARS = 500  # a longer line is shown as the part around the match
RE2_MAX_MEMORY = 64 << 20  # bytes RE2 may use for one compiled pattern and its DFA
GREP_SECONDS = 30  # one request stops with an error past this (checked between matches and files)


@dataclass
class GrepMatch:
    """One matching line: where it is, the line itself and the lines around it."""

    path: str
    line: int  # 1-based, as in the file (PDFs: line of the extracted text)
    offset: int  # UTF-8 byte offset of the match in the extracted text
    text: str  # the line (shortened around the match when longer than LINE_CHARS)
    match: str
    page: int | None = None  # PDFs: the page the line is on
    page_label: str | None = None  # PDFs with labels: the label printed on that page
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class GrepResponse:
    """The matches of one pattern, in path then line order."""

    pattern: str
    case_sensitive: bool
    matches: list[GrepMatch]
    files_searched: int
    truncated: bool  # True when more matches exist than the limit let through
    skipped: list[dict[str, str]] = field(default_factory=list)  # indexed files that could not be read
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "pattern": self.pattern,
            "case_sensitive": self.case_sensitive,
            "matches": [m.to_dict() for m in self.matches],
            "files_searched": self.files_searched,
            "truncated": self.truncated,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 4),
        }


@dataclass
class TextRange:
    """A byte range of one file's extracted text, with the total length and the pages it covers."""

    path: str
    offset: int  # UTF-8 bytes; moved back to a character boundary if it fell inside one
    length: int  # bytes returned
    total: int  # bytes in the whole extracted text
    text: str
    start_line: int
    end_line: int
    pages: list[int] = field(default_factory=list)  # PDFs: physical pages the range covers (1-based)
    page_count: int | None = None  # PDFs: pages in the file
    page_labels: list[str] = field(default_factory=list)  # PDFs with labels: the label printed on each of `pages`
    stale: bool = False
    # Bytes of blank lines skipped between the offset asked for and `offset` (a note's frontmatter).
    blank_skipped: int = 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["end"] = self.offset + self.length
        if not self.blank_skipped:  # only then: a range without blank lines keeps the JSON's exact shape
            data.pop("blank_skipped")
        return data


def compile_pattern(pattern: str, case_sensitive: bool = False) -> Any:
    """An RE2 regex over UTF-8 bytes, `^`/`$` at line ends; a bad pattern is a usage error."""
    import re2

    if not pattern:  # would match every line of every note: never what was meant
        raise BrainError("empty pattern; give a regular expression to look for (`.` matches any character)",
                         usage=True)
    if len(pattern) > MAX_PATTERN_CHARS:
        raise BrainError(
            f"pattern is {len(pattern):,} characters, over the {MAX_PATTERN_CHARS:,}-character limit; "
            "shorten it or grep in several passes",
            usage=True,
        )
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = case_sensitive
    options.max_mem = RE2_MAX_MEMORY
    raw = pattern.encode("utf-8", "surrogatepass")
    try:
        re2.compile(raw, options)  # alone first, so an error message quotes the pattern as typed
        return re2.compile(b"(?m)" + raw, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "invalid"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        shown = pattern.replace("\n", "\\n")  # as typed, on one line
        raise BrainError(
            f"invalid regular expression '{shown}': {reason} (RE2 syntax: no look-around or backreferences)", usage=True
        ) from None


def _clip(line: str, at: int = 0, width: int = 0) -> str:
    """`line` shortened to about LINE_CHARS characters around position `at`."""
    if len(line) <= LINE_CHARS:
        return line
    start = max(0, min(at - (LINE_CHARS - width) // 3, len(line) - LINE_CHARS))
    end = start + LINE_CHARS
    return ("…" if start > 0 else "") + line[start:end] + ("…" if end < len(line) else "")


def _line_bounds(data: bytes, position: int) -> tuple[int, int]:
    start = data.rfind(b"\n", 0, position) + 1
    end = data.find(b"\n", position)
    return start, len(data) if end == -1 else end


def _context(data: bytes, line_start: int, line_end: int, count: int) -> tuple[list[str], list[str]]:
    before: list[str] = []
    position = line_start
    while len(before) < count and position > 0:
        start = data.rfind(b"\n", 0, position - 1) + 1
        before.append(_clip(data[start : position - 1].decode("utf-8", "replace")))
        position = start
    before.reverse()
    after: list[str] = []
    position = line_end
    while len(after) < count and position < len(data):
        end = data.find(b"\n", position + 1)
        end = len(data) if end == -1 else end
        after.append(_clip(data[position + 1 : end].decode("utf-8", "replace")))
        position = end
    return before, after


def _check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise BrainError(
            f"grep stopped after {GREP_SECONDS} s; use a narrower pattern or give a file", usage=True
        )


def grep_text(
    regex: Any, document: FileText, context: int, limit: int, deadline: float | None = None
) -> tuple[list[GrepMatch], bool]:
    """Up to `limit` matching lines of one text (one per line, the first match on it); and whether more exist."""
    data = document.utf8
    found: list[GrepMatch] = []
    position = 0
    line = 1
    counted = 0
    while position <= len(data):
        _check_deadline(deadline)
        hit = regex.search(data, position)
        if hit is None:
            return found, False
        if len(found) >= limit:
            return found, True
        start, end = hit.span()
        line += data.count(b"\n", counted, start)
        counted = start
        line_start, line_end = _line_bounds(data, start)
        text = data[line_start:line_end].decode("utf-8", "replace")
        at = len(data[line_start:start].decode("utf-8", "replace"))
        matched = data[start : min(end, line_end) if end > start else end].decode("utf-8", "replace")
        before, after = _context(data, line_start, line_end, context) if context else ([], [])
        pages = document.pages_for_lines(line, line)
        found.append(
            GrepMatch(
                path=document.path,
                line=line,
                offset=start,
                text=_clip(text, at, len(matched)),
                match=matched[:LINE_CHARS],
                page=pages[0] if pages else None,
                page_label=next(iter(page_labels_of(document.page_labels, pages[:1])), None),
                before=before,
                after=after,
            )
        )
        position = line_end + 1  # one entry per line, as grep prints
    return found, False


def grep(
    reader: TextReader,
    pattern: str,
    *,
    file: str | None = None,
    context: int = 0,
    limit: int = DEFAULT_LIMIT,
    case_sensitive: bool = False,
) -> GrepResponse:
    """Lines matching `pattern` in the extracted text of every indexed file (or of `file`, or files under that
    folder)."""
    started = time.monotonic()
    if not 1 <= limit <= MAX_LIMIT:
        raise BrainError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}", usage=True)
    if not 0 <= context <= MAX_CONTEXT:
        raise BrainError(f"context must be between 0 and {MAX_CONTEXT} lines, got {context}", usage=True)
    regex = compile_pattern(pattern, case_sensitive)
    deadline = started + GREP_SECONDS
    rows, single = reader.resolve_many(file) if file is not None else (reader.files(), False)
    matches: list[GrepMatch] = []
    skipped: list[dict[str, str]] = []
    truncated = False
    searched = 0
    for row in rows:
        _check_deadline(deadline)
        try:
            document = reader.read(row)
        except TextUnavailable as exc:
            if single:
                raise BrainError(f"{row.path}: {exc}") from None
            skipped.append({"path": row.path, "reason": str(exc)})
            continue
        searched += 1
        room = limit - len(matches)
        if room <= 0:
            # Only asking whether one more match exists anywhere.
            if regex.search(document.utf8) is not None:
                truncated = True
                break
            continue
        found, more = grep_text(regex, document, context, room, deadline)
        matches.extend(found)
        if more:
            truncated = True
            break
    return GrepResponse(pattern, case_sensitive, matches, searched, truncated, skipped, time.monotonic() - started)


def read_range(
    reader: TextReader, path: str, *, offset: int = 0, length: int | None = None, page: str | None = None
) -> TextRange:
    """Bytes offset..offset+length of one indexed file's extracted text (length None: to the end, at most
    MAX_READ_BYTES), or with `page` one page of a PDF (read_page)."""
    if page is not None:
        if offset or length is not None:
            raise BrainError("give --page or --offset/--length, not both; a page is read whole",
                             usage=True, field="page")
        return read_page(reader, path, page)
    if offset < 0:
        raise BrainError(f"offset must be 0 or more, got {offset}", usage=True, field="offset")
    if length is not None and not 1 <= length <= MAX_READ_BYTES:
        raise BrainError(f"length must be between 1 and {MAX_READ_BYTES:,} bytes, got {length}; "
                         "read a longer text in several ranges with --offset", usage=True, field="length")
    length = MAX_READ_BYTES if length is None else length
    row = reader.resolve(path)
    try:
        document = reader.read(row)
    except TextUnavailable as exc:
        raise BrainError(f"{row.path}: {exc}") from None
    data = document.utf8
    total = len(data)
    if offset > total or (offset == total and total > 0):
        raise BrainError(
            f"offset {offset} is past the end of {row.path} ({total} bytes of text); use an offset below {total}",
            usage=True,
            field="offset",
        )
    start = offset
    while start > 0 and data[start] & 0xC0 == 0x80:  # inside a multi-byte character: start at the character
        start -= 1
    # Blank lines where the range starts (a note's blanked frontmatter) are skipped, not
    # returned as a screen of newlines; the range moves past them, and its offset says so.
    skipped = blank_lead(data, start) - start
    start += skipped
    end = min(total, start + length)
    while end < total and data[end] & 0xC0 == 0x80:
        end -= 1
    if end <= start and start < total:
        end = start + 1
        while end < total and data[end] & 0xC0 == 0x80:
            end += 1
    end = max(start, end)
    start_line = data.count(b"\n", 0, start) + 1
    end_line = start_line + data.count(b"\n", start, max(start, end - 1))
    return TextRange(
        path=row.path,
        offset=start,
        length=end - start,
        total=total,
        text=data[start:end].decode("utf-8", "replace"),
        start_line=start_line,
        end_line=end_line,
        pages=document.pages_for_lines(start_line, end_line),
        page_count=len(document.page_starts) or None,
        page_labels=page_labels_of(document.page_labels, document.pages_for_lines(start_line, end_line)),
        stale=document.stale,
        blank_skipped=skipped,
    )


def read_page(reader: TextReader, path: str, page: str) -> TextRange:
    """One page of an indexed PDF's extracted text: `page` is its physical number (1-based, as search's
    `pages`), or anything else the label printed on it ("xlv")."""
    row = reader.resolve(path)
    try:
        document = reader.read(row)
    except TextUnavailable as exc:
        raise BrainError(f"{row.path}: {exc}") from None
    count = len(document.page_starts)
    if not count:
        raise BrainError(f"{row.path}: not a PDF, it has no pages; read it without --page (or with --offset)",
                         usage=True, field="page")
    number = _page_number(row.path, page.strip(), count, document.page_labels)
    lines = document.text.split("\n")
    first = document.page_starts[number - 1]
    last = document.page_starts[number] - 1 if number < count else len(lines)
    before = "\n".join(lines[: first - 1])
    start = len(before.encode("utf-8", "surrogatepass")) + (1 if first > 1 else 0)
    text = "\n".join(lines[first - 1 : last])
    # A page past the read limit is cut there, at a character's start.
    text = text.encode("utf-8", "surrogatepass")[:MAX_READ_BYTES].decode("utf-8", "ignore")
    return TextRange(
        path=row.path,
        offset=start,
        length=len(text.encode("utf-8", "surrogatepass")),
        total=len(document.utf8),
        text=text,
        start_line=first,
        end_line=last,
        pages=[number],
        page_count=count,
        page_labels=page_labels_of(document.page_labels, [number]),
        stale=document.stale,
    )


def _page_number(path: str, page: str, count: int, labels: list[str]) -> int:
    """The physical page `page` names: a number is the page itself, anything else a printed label."""
    if page.isascii() and page.isdigit():
        number = int(page)
        if 1 <= number <= count:
            return number
        raise BrainError(f"{path}: page {number} is out of range; it has pages 1-{count}",
                         usage=True, field="page")
    if page in labels:
        return labels.index(page) + 1
    folded = [label.casefold() for label in labels]
    if page.casefold() in folded:  # "XLV" finds "xlv": people type a label in either case
        return folded.index(page.casefold()) + 1
    known = f"its labels run from {labels[0]} to {labels[-1]}" if labels else "it has no page labels"
    raise BrainError(f"{path}: no page labelled {page!r} ({known}); give a label it has, "
                     f"or a physical page 1-{count}", usage=True, field="page")
