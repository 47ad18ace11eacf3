"""Text → chunks (pure).

Chunks follow lines: a line is only cut when it alone is longer than a chunk.
Each chunk knows its 1-based start/end lines and the Markdown heading path
above it. Two texts per chunk: `text` (everything, for BM25 and previews) and
`embed_text` (heading path + the text without fenced code, which dominates
embeddings). `embed_text` never exceeds the model's word-piece limit, measured
with the model's own tokenizer through `count_tokens`, so nothing is silently
dropped by the model. A chunk of only code has an empty `embed_text`: BM25 only.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# 2: a title line shares the first piece of a long line after it; the note title may lead embed texts;
# 3: the card leads the first
CHUNKING_VERSION = 3
SPECIAL_TOKENS = 2  # [CLS] and [SEP]

TokenCounter = Callable[[Sequence[str]], list[int]]
TokenStarts = Callable[[Sequence[str]], list[list[int]]]  # per text: the character offset where each word piece starts

# Linear on any line: the closing `#`s are taken off in _heading_title, not by the
# pattern (a lazy group before `\s*#*\s*$` backtracked cubically: 26 s for one
# heading of 2,500 spaces).
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Chunk:
    """One piece of a file, as stored and searched."""

    text: str
    embed_text: str
    start_line: int
    end_line: int
    heading_path: str


@dataclass
class _Segment:
    line: int
    text: str
    tokens: int
    code: bool
    heading: str


def chunking_identity(chunk_chars: int, overlap_chars: int, max_tokens: int) -> str:
    """What the index records so a change of chunking is noticed."""
    return f"v{CHUNKING_VERSION}:chars={chunk_chars}:overlap={overlap_chars}:tokens={max_tokens}"


def chunking_words(identity: str | None) -> str:
    """A recorded chunking identity as a person reads it: `chunks of up to 1,600 characters, 320 shared, …`."""
    parts = dict(part.split("=", 1) for part in (identity or "").split(":")[1:] if "=" in part)
    try:
        chars, overlap, tokens = int(parts["chars"]), int(parts["overlap"]), int(parts["tokens"])
    except (KeyError, ValueError):
        return "chunking unknown (the index does not say)" if not identity else f"chunking {identity}"
    pieces = f"at most {tokens:,} word pieces" if tokens else "the model's own word-piece limit"
    return f"chunks of up to {chars:,} characters, {overlap:,} shared with the one before, {pieces}"


def _heading_title(rest: str) -> str:
    """A heading's text without its closing `#`s (CommonMark: only after a space, or when nothing else is left)."""
    title = rest.strip()
    bare = title.rstrip("#")
    if not bare:
        return ""
    if bare != title and bare[-1].isspace():
        return bare.rstrip()
    return title


def _scan_lines(lines: list[str], markdown: bool) -> tuple[list[bool], list[str]]:
    """For each line: is it fenced code, and the heading path it sits under."""
    code_flags: list[bool] = []
    paths: list[str] = []
    stack: list[tuple[int, str]] = []
    fence: str | None = None
    for line in lines:
        if markdown:
            match = _FENCE.match(line)
            if fence is not None:
                code_flags.append(True)
                if match and match.group(1) == fence:
                    fence = None
                paths.append(" > ".join(t for _, t in stack))
                continue
            if match:
                fence = match.group(1)
                code_flags.append(True)
                paths.append(" > ".join(t for _, t in stack))
                continue
            heading = _HEADING.match(line)
            if heading:
                level = len(heading.group(1))
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, f"{heading.group(1)} {_heading_title(heading.group(2))}"))
        code_flags.append(False)
        paths.append(" > ".join(t for _, t in stack))
    return code_flags, paths


def _split_long(
    text: str,
    max_tokens: int,
    max_chars: int,
    count: TokenCounter,
    starts: list[int] | None,
    lead: tuple[int, int] = (0, 0),
) -> list[tuple[str, int | None]]:
    """Cut one over-long line into pieces that each fit both limits, at spaces where possible.

    `lead` (word pieces, characters) is kept free in the first piece for the short
    lines just before it (a title), so they share its chunk instead of making one of their own.

    Returns (piece, its word pieces), the count None where it must be measured.
    With `starts` (where the line's word pieces start) each word's count is read
    from the offsets instead of tokenizing word by word; a word-piece tokenizer
    gives a word the same pieces alone or in its line, so counts add up across
    the spaces cut here.
    """
    words = text.split(" ")
    if starts is None:
        word_tokens = count(words)
    else:
        word_tokens = []
        position = 0
        for word in words:
            end = position + len(word)
            word_tokens.append(bisect_left(starts, end) - bisect_left(starts, position))
            position = end + 1
    pieces: list[tuple[str, int | None]] = []
    current: list[str] = []
    cur_tokens = cur_chars = 0
    lead_tokens, lead_chars = lead  # kept free in the first piece only
    for word, wt in zip(words, word_tokens):
        if wt > max_tokens or len(word) > max_chars:
            # A single giant "word" (a URL, base64): slice it by characters.
            if current:
                pieces.append((" ".join(current), cur_tokens))
                current, cur_tokens, cur_chars = [], 0, 0
            lead_tokens = lead_chars = 0
            step = max(1, min(max_chars, int(len(word) * max_tokens / max(wt, 1) * 0.8)))
            pieces.extend((word[i : i + step], None) for i in range(0, len(word), step))
            continue
        if current and (
            cur_tokens + lead_tokens + wt > max_tokens or cur_chars + lead_chars + len(word) + 1 > max_chars
        ):
            pieces.append((" ".join(current), cur_tokens))
            current, cur_tokens, cur_chars = [], 0, 0
            lead_tokens = lead_chars = 0
        current.append(word)
        cur_tokens += wt
        cur_chars += len(word) + 1
    if current:
        pieces.append((" ".join(current), cur_tokens))
    return [(piece, tokens if starts is not None else None) for piece, tokens in pieces if piece]


def _embed_text(segments: Sequence[_Segment], title: str = "", card: str = "") -> str:
    """Title, heading path, card and the text without code: what the model reads of a chunk.

    The note's title goes first unless the heading path or the text already starts with it
    (a note whose H1 is its title), so a chunk deep in a note still says what note it is from.
    The card (sources.note_card: its frontmatter in words) follows, in the first chunk only.
    """
    body = "\n".join(s.text for s in segments if not s.code).strip()
    if not body:
        return ""
    heading = segments[0].heading
    parts = [part.lstrip("#").strip() for part in heading.split(" > ")] if heading else []
    first = body.split("\n", 1)[0].lstrip("#").strip()
    if title and title not in (parts[:1] + [first]):
        parts.insert(0, title)
    plain = "\n".join(part for part in (" > ".join(parts), card) if part)
    return f"{plain}\n{body}" if plain else body


def chunk_text(
    text: str,
    *,
    count_tokens: TokenCounter,
    max_tokens: int,
    chunk_chars: int = 1600,
    overlap_chars: int = 320,
    markdown: bool = True,
    first_line: int = 1,
    token_starts: TokenStarts | None = None,
    title: str = "",
    card: str = "",
) -> list[Chunk]:
    """Split `text` into line-aware, overlapping chunks whose embed text fits `max_tokens` word pieces.

    `max_tokens` counts the model's two special tokens; `count_tokens` counts
    word pieces without them. `token_starts` (optional, same tokenizer) gives
    the offsets of each line's word pieces, so a long line is cut without
    tokenizing it again word by word. `title` (the note's) leads each chunk's embed
    text, room kept for it; `card` follows it in the first chunk's, which is made
    shorter to fit it (and leaves it out if even one line would not fit with it).
    """
    measured: dict[str, int] = {}

    def count_one(piece: str) -> int:
        # The same embed text is checked more than once while a chunk is sized.
        if piece not in measured:
            measured[piece] = count_tokens([piece])[0]
        return measured[piece]

    lines = text.split("\n")
    code_flags, heading_paths = _scan_lines(lines, markdown)
    limit = max(8, max_tokens - SPECIAL_TOKENS)  # pieces of a whole embed text
    budget = max(8, limit - count_tokens([title + " >"])[0]) if title else limit  # pieces of heading path + text
    # Heading paths go in front of the embedded text: keep room for them.
    heading_tokens = dict(zip(set(heading_paths), count_tokens(list(set(heading_paths)))))
    counted_lines = [("" if code else line) for line, code in zip(lines, code_flags)]
    line_starts: list[list[int]] | None = None
    if token_starts is not None:
        line_starts = token_starts(counted_lines)  # tokenized once: long lines are cut by these offsets
        line_tokens = [len(starts) for starts in line_starts]
    else:
        line_tokens = count_tokens(counted_lines)

    segments: list[_Segment] = []
    # Word pieces and characters of the lines since the start or the last cut line:
    # when they are few (a title), the next cut line leaves them room in its first piece.
    since_cut = [0, 0]
    for index, (line, code, heading, tokens) in enumerate(zip(lines, code_flags, heading_paths, line_tokens)):
        number = first_line + index
        room = max(8, budget - min(heading_tokens.get(heading, 0), budget // 4) - 1)
        if tokens > room or len(line) > chunk_chars:
            starts = None if code or line_starts is None else line_starts[index]
            kept = (
                (since_cut[0], since_cut[1])
                if since_cut[0] <= room // 4 and since_cut[1] <= chunk_chars // 4
                else (0, 0)
            )
            for piece, piece_tokens in _split_long(line, room, chunk_chars, count_tokens, starts, kept):
                if piece_tokens is None:
                    piece_tokens = 0 if code else count_one(piece)
                segments.append(_Segment(number, piece, piece_tokens, code, heading))
            since_cut = [0, 0]
        else:
            segments.append(_Segment(number, line, tokens, code, heading))
            since_cut[0] += tokens + 1
            since_cut[1] += len(line) + 1

    chunks: list[Chunk] = []
    start = 0
    while start < len(segments):
        while start < len(segments) and not segments[start].text.strip():
            start += 1  # a chunk starts on a line with text, so its line span is honest
        if start >= len(segments):
            break
        heading = segments[start].heading
        room = budget - heading_tokens.get(heading, 0) - 1 if heading else budget
        room = max(room, budget // 2)
        end = start
        chars = tokens = 0
        while end < len(segments):
            seg = segments[end]
            if end > start and (chars + len(seg.text) + 1 > chunk_chars or tokens + seg.tokens > room):
                break
            chars += len(seg.text) + 1
            tokens += seg.tokens
            end += 1
        lead = "" if chunks else card
        # Verify with the real tokenizer: word pieces are not always additive across lines.
        while end - start > 1:
            embed = _embed_text(segments[start:end], title, lead)
            if not embed or count_one(embed) <= limit:
                break
            end -= 1
        window = segments[start:end]
        while len(window) > 1 and not window[-1].text.strip():
            window = window[:-1]
        body = "\n".join(s.text for s in window)
        if body.strip():
            embed = _embed_text(window, title, lead)
            if embed and lead and count_one(embed) > limit:
                embed = _embed_text(window, title)
            if embed and count_one(embed) > limit:
                embed = _embed_text([_Segment(s.line, s.text, s.tokens, s.code, "") for s in window])
            chunks.append(Chunk(body, embed, window[0].line, window[-1].line, heading))
        if end >= len(segments):
            break
        # Overlap: carry trailing segments forward, always advancing by at least one.
        back = end
        carried = 0
        while back - 1 > start and carried + len(segments[back - 1].text) + 1 <= overlap_chars:
            carried += len(segments[back - 1].text) + 1
            back -= 1
        start = max(back, start + 1)
    return chunks
