"""Hybrid search: BM25 (FTS5) and cosine similarity, fused; results per file, checked against disk.

Fusion is complete by construction: every candidate chunk from either half
gets both scores (its exact cosine, and its real BM25 score looked up by
rowid), so a keyword-only hit is never lost, no floor cuts anything, and the
candidate pool does not depend on how many results were asked for.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import sources
from .config import SEARCH_MODES, Settings
from .embeddings import Embedder
from .errors import BrainError
from .store import ChunkRow, FileRow, Store
from .texts import MIN_EXCERPT_CHARS, TextReader, add_excerpts

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)  # what FTS5's unicode61 tokenizer keeps
PREVIEW_CHARS = 240


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
    pages: list[int] = field(default_factory=list)
    chunk_id: int = 0
    explain: dict[str, Any] | None = None
    # Only with `excerpt_chars`: the relevant excerpt of the current file and its full length.
    excerpt: str | None = None
    content_len: int | None = None

    def to_dict(self, explain: bool = False, excerpts: bool = False) -> dict[str, Any]:
        data = asdict(self)
        if not explain:
            data.pop("explain")
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

    def to_dict(self, explain: bool = False) -> dict[str, Any]:
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
        return data


@dataclass(frozen=True)
class Filter:
    """A frontmatter condition: key=value or key!=value (lists match if they contain the value)."""

    key: str
    value: str
    negate: bool

    def matches(self, metadata: dict[str, Any]) -> bool:
        present = metadata.get(self.key)
        values = present if isinstance(present, list) else ([] if present is None else [present])
        hit = any(str(v).strip().lower() == self.value.lower() for v in values)
        return not hit if self.negate else hit


def parse_filter(text: str) -> Filter:
    """`status=active` or `status!=archived` → Filter; anything else is a usage error."""
    match = re.fullmatch(r"\s*([^=!\s]+)\s*(!=|=)\s*(.*?)\s*", text)
    if not match or not match.group(3):
        raise BrainError(f"--where {text!r} is not key=value or key!=value (e.g. status!=archived)", usage=True)
    return Filter(match.group(1), match.group(3), match.group(2) == "!=")


def fts_match(query: str) -> str | None:
    """A safe FTS5 MATCH expression: each word quoted, words OR-joined.

    Any text a person types is safe (`C++`, `#1234`, `"quoted`, `AND`, `*`):
    operators become plain words. A word that FTS5 splits into several tokens
    (`FT-2026-0412`, `l'indice`) becomes a phrase, so identifiers match whole.
    """
    terms: list[str] = []
    for word in query.split():
        tokens = _TOKEN.findall(word)
        if not tokens:
            continue
        term = '"' + " ".join(tokens) + '"'
        if term not in terms:
            terms.append(term)
    return " OR ".join(terms) if terms else None


def query_terms(query: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(query)]


def _make_preview(text: str, terms: list[str]) -> str:
    """The chunk from its first line that mentions a query term, whitespace collapsed."""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    start = 0
    folded = [sources_fold(ln) for ln in lines]
    for index, line in enumerate(folded):
        if any(term in line for term in terms):
            start = index
            break
    flat = " ".join(" ".join(lines[start:]).split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1].rstrip() + "…"


def sources_fold(text: str) -> str:
    """Lower-case and strip accents, as the FTS5 tokenizer does, for preview matching."""
    import unicodedata

    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


class Searcher:
    """Searches one index; keeps its vectors warm across queries and reloads them when the index changes."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.embedder = embedder or Embedder(settings)
        self._store: Store | None = None
        self._vectors: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._version: int | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.settings.database_path, create=False)
            self._check_identity(self._store)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
            self._vectors = None

    def _check_identity(self, store: Store) -> None:
        built = store.get_meta("model")
        if built is None:
            return
        if built != self.embedder.identity:
            raise BrainError(
                f"the index was built with model {built!r} but the settings ask for {self.embedder.identity!r}; "
                "run `brain index` to re-embed"
            )

    def _vector_data(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        version = self.store.data_version()
        if self._vectors is None or version != self._version:
            self._vectors = self.store.vector_matrix(self.embedder.dimension)
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
        excerpt_chars: int | None = None,
    ) -> SearchResponse:
        """Rank files (or chunks) for `query`; every hit is checked against the file on disk.

        `excerpt_chars`: each hit also carries the relevant excerpt (about that
        many characters) of its file as it is now, and `content_len`.
        """
        started = time.monotonic()
        mode = mode or str(self.settings["search.mode"])
        if mode not in SEARCH_MODES:
            raise BrainError(f"unknown mode {mode!r}; use one of hybrid, bm25, vector", usage=True)
        limit = int(self.settings["search.limit"] if limit is None else limit)
        if limit < 1:
            raise BrainError(f"limit must be at least 1, got {limit}", usage=True)
        weight = float(self.settings["search.vector_weight"] if vector_weight is None else vector_weight)
        if not 0.0 <= weight <= 1.0:
            raise BrainError(f"vector weight must be between 0 and 1, got {weight}", usage=True)
        if not query or not query.strip():
            raise BrainError("empty query; type some words to search for", usage=True)
        match = fts_match(query)
        if match is None:
            raise BrainError(f"query {query!r} has no words or numbers to search for; add some", usage=True)
        filters = [parse_filter(w) for w in (where or [])]
        if excerpt_chars is not None and excerpt_chars < MIN_EXCERPT_CHARS:
            raise BrainError(f"excerpt size must be at least {MIN_EXCERPT_CHARS} characters, got {excerpt_chars}", usage=True)

        store = self.store
        allowed = self._allowed_files(path_prefix, filters)
        pool = max(int(self.settings["search.candidates"]), limit * 4)
        use_vector = mode in ("hybrid", "vector")
        use_keyword = mode in ("hybrid", "bm25")

        keyword_raw: dict[int, float] = {}
        keyword_rank: dict[int, int] = {}
        if use_keyword:
            file_ids = sorted(allowed) if allowed is not None else None
            for rank, (cid, score) in enumerate(store.bm25(match, pool, file_ids=file_ids), 1):
                keyword_raw[cid] = score
                keyword_rank[cid] = rank

        cosine: dict[int, float] = {}
        vector_rank: dict[int, int] = {}
        file_of: dict[int, int] = {}
        if use_vector:
            ids, file_ids_arr, matrix = self._vector_data()
            if len(ids):
                qvec = self.embedder.encode_query(query)
                sims = matrix @ qvec
                if allowed is not None:
                    sims = np.where(np.isin(file_ids_arr, np.fromiter(allowed, dtype=np.int64)), sims, -np.inf)
                top = min(pool, len(ids))
                best = np.argpartition(-sims, top - 1)[:top]
                best = best[np.argsort(-sims[best], kind="stable")]
                for rank, index in enumerate(best, 1):
                    if not np.isfinite(sims[index]):
                        break
                    cosine[int(ids[index])] = float(sims[index])
                    vector_rank[int(ids[index])] = rank
                if use_keyword:
                    # Keyword-only candidates get their exact cosine too.
                    index_of = {int(c): i for i, c in enumerate(ids)} if keyword_raw else {}
                    for cid in keyword_raw:
                        if cid not in cosine and cid in index_of:
                            cosine[cid] = float(sims[index_of[cid]]) if np.isfinite(sims[index_of[cid]]) else 0.0
        if use_keyword and use_vector:
            # Vector-only candidates get their real BM25 score (0 when no term matches).
            missing = [cid for cid in cosine if cid not in keyword_raw]
            if missing:
                keyword_raw.update(store.bm25(match, len(missing), chunk_ids=missing))

        candidates = set(keyword_rank) | set(vector_rank)
        top_keyword = max(keyword_raw.values(), default=0.0)
        scored: list[tuple[float, int]] = []
        parts: dict[int, tuple[float | None, float | None]] = {}
        for cid in candidates:
            kw = (keyword_raw.get(cid, 0.0) / top_keyword if top_keyword > 0 else 0.0) if use_keyword else None
            vec = min(max(cosine.get(cid, 0.0), 0.0), 1.0) if use_vector else None
            if mode == "hybrid":
                score = weight * (vec or 0.0) + (1 - weight) * (kw or 0.0)
            elif mode == "vector":
                score = vec or 0.0
            else:
                score = kw or 0.0
            parts[cid] = (vec, kw)
            scored.append((score, cid))
        # Ties break by chunk id so the order never depends on the result count.
        scored.sort(key=lambda item: (-item[0], item[1]))

        chunk_rows = store.chunks_by_id([cid for _, cid in scored])
        file_rows = store.files_by_id(row.file_id for row in chunk_rows.values())
        terms = [sources_fold(t) for t in query_terms(query)]
        hits: list[SearchHit] = []
        dropped: list[str] = []
        seen_files: set[int] = set()
        checked: dict[int, tuple[bool, str | None] | None] = {}
        for score, cid in scored:
            row = chunk_rows.get(cid)
            if row is None:
                continue
            if not chunks and row.file_id in seen_files:
                continue
            file_row = file_rows[row.file_id]
            if row.file_id not in checked:
                checked[row.file_id] = self._freshness(file_row)
            fresh = checked[row.file_id]
            if fresh is None:
                if file_row.path not in dropped:
                    dropped.append(file_row.path)
                continue
            seen_files.add(row.file_id)
            stale, current_text = fresh
            text = row.text
            if stale and current_text is not None:
                lines = current_text.split("\n")
                text = "\n".join(lines[row.start_line - 1 : row.end_line])
            vec, kw = parts[cid]
            hit = SearchHit(
                path=file_row.path,
                score=round(score, 4),
                vector_score=None if vec is None else round(vec, 4),
                keyword_score=None if kw is None else round(kw, 4),
                start_line=row.start_line,
                end_line=row.end_line,
                preview=_make_preview(text, terms),
                stale=stale,
                heading_path=row.heading_path,
                pages=row.pages,
                chunk_id=cid,
                explain={
                    "vector": {"cosine": cosine.get(cid), "normalised": vec, "rank": vector_rank.get(cid)},
                    "keyword": {
                        "bm25": keyword_raw.get(cid),
                        "normalised": kw,
                        "rank": keyword_rank.get(cid),
                        "best_bm25_in_pool": top_keyword,
                    },
                    "weights": {"vector": weight, "keyword": round(1 - weight, 4)} if mode == "hybrid" else {mode: 1.0},
                    "formula": {
                        "hybrid": "vector_weight × cosine + (1 − vector_weight) × bm25 / best bm25",
                        "bm25": "bm25 / best bm25 among candidates",
                        "vector": "cosine similarity",
                    }[mode],
                    "chunk": {"id": cid, "lines": [row.start_line, row.end_line], "heading": row.heading_path},
                },
            )
            hits.append(hit)
            if len(hits) >= limit:
                break
        response = SearchResponse(query=query, mode=mode, results=hits, dropped=dropped)
        if excerpt_chars is not None:
            add_excerpts(TextReader(self.settings, store), response, int(excerpt_chars))
        response.seconds = time.monotonic() - started
        return response

    def _allowed_files(self, path_prefix: str | None, filters: list[Filter]) -> set[int] | None:
        if not path_prefix and not filters:
            return None
        prefix = (path_prefix or "").replace("\\", "/").strip()
        while prefix.startswith("./"):
            prefix = prefix[2:]
        allowed: set[int] = set()
        for row in self.store.all_files().values():
            if not row.path.startswith(prefix):
                continue
            if all(f.matches(row.metadata) for f in filters):
                allowed.add(row.id)
        return allowed

    def _freshness(self, row: FileRow) -> tuple[bool, str | None] | None:
        """None if the file is gone; else (stale?, current text when stale)."""
        path = self.settings.root / row.path
        try:
            info = path.stat()
        except OSError:
            return None
        if info.st_size == row.size and info.st_mtime_ns == row.mtime_ns:
            return False, None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if sources.content_hash(data) == row.hash:
            return False, None
        try:
            return True, sources.extract_bytes(path.name, data).text
        except sources.ExtractionError:
            return True, None
