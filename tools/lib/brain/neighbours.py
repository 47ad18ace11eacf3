"""A note's neighbours: the notes it links to and that link to it (`brain links`), and the notes nearest
to it by meaning (`brain related`).

Links are stored as written (links.py extracts them when a note is indexed) and resolved here, against
the files indexed now: a note added or renamed since is found without indexing its linkers again.
Nothing here follows a link outside the notes folder: a target is only ever compared with indexed paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .errors import BrainError
from .links import Link, Resolved, Resolver, kept, name_key
from .store import FileRow, Index
from .texts import TextReader, TextUnavailable

PREVIEW_CHARS = 240
MAX_NOTE_CHUNKS = 64  # of a long note's chunks asked for their neighbours (spread over the whole note)


@dataclass
class LinkHit:
    """One link of a note, outgoing or incoming: the other note, where the link sits and what it says."""

    path: str | None  # the other note (None: a link that names no indexed file)
    line: int  # in the linking note
    kind: str  # wiki, embed, markdown, frontmatter
    target: str  # as written
    heading: str = ""
    alias: str = ""
    text: str = ""  # the linking note's line as it is now
    broken: str = ""  # why it names nothing: "unresolved", "outside" (it climbs out of the notes folder)
    self_link: bool = False


@dataclass
class LinksResponse:
    path: str
    outgoing: list[LinkHit] = field(default_factory=list)
    backlinks: list[LinkHit] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RelatedHit:
    """A note near the asked one by meaning: its best chunk against the asked note's nearest one."""

    path: str
    score: float  # cosine of the two chunks
    start_line: int
    end_line: int
    preview: str
    heading_path: str = ""
    pages: list[int] = field(default_factory=list)
    from_lines: list[int] = field(default_factory=list)  # [start, end] of the asked note's chunk it is near
    linked: bool = False  # the asked note links to it or it links to the asked note


@dataclass
class RelatedResponse:
    path: str
    results: list[RelatedHit] = field(default_factory=list)
    excluded_linked: int = 0  # notes left out because they are linked (exclude_linked)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _line_of(reader: TextReader, row: FileRow, line: int, cache: dict[str, list[str] | None]) -> str:
    """Line `line` of a note's text now ("" when it cannot be read or the line is gone)."""
    if row.path not in cache:
        try:
            cache[row.path] = reader.read(row).text.split("\n")
        except TextUnavailable:
            cache[row.path] = None
    lines = cache[row.path]
    return lines[line - 1].strip() if lines is not None and 0 < line <= len(lines) else ""


def _hit(resolved: Resolved, other: str | None, text: str) -> LinkHit:
    link = resolved.link
    broken = resolved.reason if resolved.reason in ("unresolved", "outside") else ""
    return LinkHit(path=other, line=link.line, kind=link.kind, target=link.target, heading=link.heading,
                   alias=link.alias, text=text or _written(link), broken=broken, self_link=resolved.reason == "self")


def _written(link: Link) -> str:
    """The link as a person wrote it, for a line the text no longer shows (a frontmatter value)."""
    return f"[[{link.target}]]" if link.kind != "markdown" else link.target


def outgoing(store: Index, resolver: Resolver, row: FileRow) -> list[Resolved]:
    """A note's links resolved against the indexed files; values that name no note are left out."""
    return [r for r in (resolver.resolve(link, row.path) for link in store.file_links(row.id)) if kept(r)]


def incoming(
    store: Index, files: dict[str, FileRow], resolver: Resolver, row: FileRow
) -> list[tuple[FileRow, Resolved]]:
    """(linking note, its link) for every link of another note that resolves to this one."""
    by_id = {f.id: f for f in files.values()}
    found = []
    for file_id, link in store.links_named([name_key(row.path)]):
        source = by_id.get(file_id)
        if source is None or source.id == row.id:
            continue
        resolved = resolver.resolve(link, source.path)
        if resolved.path == row.path and kept(resolved):
            found.append((source, resolved))
    return found


def note_links(store: Index, reader: TextReader, raw: str) -> LinksResponse:
    """`brain links PATH`: the note's outgoing links and its backlinks, each with the line it sits on."""
    row = reader.resolve(raw)
    files = store.all_files()
    resolver = Resolver(files)
    lines: dict[str, list[str] | None] = {}
    response = LinksResponse(path=row.path)
    for resolved in outgoing(store, resolver, row):
        response.outgoing.append(_hit(resolved, resolved.path, _line_of(reader, row, resolved.link.line, lines)))
    for source, resolved in incoming(store, files, resolver, row):
        response.backlinks.append(_hit(resolved, source.path, _line_of(reader, source, resolved.link.line, lines)))
    return response


def broken_links(store: Index, note_types: Sequence[str]) -> list[dict[str, Any]]:
    """Every link to a note that names no indexed file (or that leaves the notes folder), by note and line: for
    `brain status`. A target of another type than `note_types` (`![[diagram.png]]`) is a file the index does not
    hold, not a broken link."""
    files = store.all_files()
    by_id = {f.id: f for f in files.values()}
    resolver = Resolver(files)
    found = []
    for file_id, link in store.all_links():
        source = by_id.get(file_id)
        if source is None or link.plain:
            continue
        resolved = resolver.resolve(link, source.path)
        suffix = link.target.rpartition("/")[2].rpartition(".")[2].lower()
        other_type = "." in link.target.rpartition("/")[2] and "." + suffix not in note_types
        if resolved.path is None and (resolved.reason == "outside" or not other_type):
            found.append({"path": source.path, "line": link.line, "target": link.target, "reason": resolved.reason})
    return found


def _spread(items: Sequence[Any], most: int) -> list[Any]:
    """At most `most` of `items`, evenly over them (a long book's chunks from its start to its end)."""
    if len(items) <= most:
        return list(items)
    step = len(items) / most
    return [items[int(i * step)] for i in range(most)]


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1].rstrip() + "…"


def _linked(store: Index, row: FileRow) -> set[str]:
    """The notes this one links to or that link to it (the path table is read only when it has links at all)."""
    own, named = store.file_links(row.id), store.links_named([name_key(row.path)])
    if not own and not named:
        return set()
    files = store.all_files()
    resolver = Resolver(files)
    linked = {r.path for r in outgoing(store, resolver, row) if r.path is not None}
    linked.update(source.path for source, _ in incoming(store, files, resolver, row))
    linked.discard(row.path)
    return linked


def _nearest(store: Index, vectors: dict[int, bytes], pool: int) -> dict[int, tuple[float, int]]:
    """Each other chunk near one of `vectors` (chunk id → vector) → (its best cosine, the chunk it is near)."""
    import numpy as np

    ours = list(vectors)
    queries = np.stack([np.frombuffer(vectors[cid], dtype=np.float32) for cid in ours])
    best: dict[int, tuple[float, int]] = {}
    if store.searches_vectors():  # a server's vector index: ask it, chunk by chunk
        for cid, query in zip(ours, queries):
            for other, cosine in store.nearest_vectors(query, pool):
                if other not in best or cosine > best[other][0]:
                    best[other] = (cosine, cid)
        return best
    ids, _, matrix = store.vector_matrix(queries.shape[1])  # one read and one product for all of them
    if not len(ids):
        return best
    sims = matrix @ queries.T  # chunks × ours
    top = sims.max(axis=1)
    which = sims.argmax(axis=1)
    for i in np.argsort(-top, kind="stable")[:pool]:
        best[int(ids[i])] = (float(top[i]), ours[int(which[i])])
    return best


def related_notes(store: Index, reader: TextReader, raw: str, limit: int = 10,
                  exclude_linked: bool = False) -> RelatedResponse:
    """`brain related PATH`: the notes nearest to this one by meaning, from its own chunks' vectors.

    Each of its chunks (at most MAX_NOTE_CHUNKS) is compared with every other chunk; another note scores the
    best cosine between any chunk of it and any chunk of this one, and shows that chunk's lines.
    """
    row = reader.resolve(raw)
    if limit < 1:
        raise BrainError(f"limit must be at least 1, got {limit}", usage=True, field="limit")
    chunks = store.file_chunks(row.id)
    own = {chunk.id: chunk for chunk in _spread(chunks, MAX_NOTE_CHUNKS)}
    stored = store.chunk_vectors(list(own))
    if not stored:
        waiting = store.pending_among(list(own))
        why = ("its vectors are still being made; `brain index` finishes them" if waiting else
               "it has no text to compare (only code or nothing)")
        raise BrainError(f"{row.path}: nothing to compare by meaning yet: {why}")
    linked = _linked(store, row)
    # Enough chunks that `limit` other notes survive: this note's own, and linked ones left out.
    pool = (limit + (len(linked) if exclude_linked else 0)) * 5 + len(chunks)
    mine = {chunk.id for chunk in chunks}
    near = {cid: found for cid, found in _nearest(store, stored, pool).items() if cid not in mine}
    their = store.chunks_by_id(near)
    per_file: dict[int, tuple[float, int, int]] = {}  # file id → (cosine, their chunk, our chunk)
    for other_id, (cosine, ours) in near.items():
        other = their.get(other_id)  # never one of this note's: `near` left them out
        if other is None:
            continue
        if other.file_id not in per_file or cosine > per_file[other.file_id][0]:
            per_file[other.file_id] = (cosine, other_id, ours)
    files = store.files_by_id(per_file)
    response = RelatedResponse(path=row.path)
    for file_id, (cosine, other_id, ours) in sorted(per_file.items(), key=lambda kv: (-kv[1][0], kv[0])):
        other_row = files.get(file_id)
        if other_row is None:
            continue
        is_linked = other_row.path in linked
        if exclude_linked and is_linked:
            response.excluded_linked += 1
            continue
        if len(response.results) >= limit:
            continue
        chunk, source = their[other_id], own[ours]
        response.results.append(RelatedHit(
            path=other_row.path, score=round(float(cosine), 4), start_line=chunk.start_line, end_line=chunk.end_line,
            preview=_preview(chunk.text), heading_path=chunk.heading_path, pages=chunk.pages,
            from_lines=[source.start_line, source.end_line], linked=is_linked))
    return response
