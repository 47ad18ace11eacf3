"""Scan, re-index, remove, move: keeps the index equal to the files, one transaction per file.

`scan` walks every root; `reindex_paths` handles named files; `rebuild` builds
a fresh database beside the old one and swaps it in atomically. Each returns a
ScanReport, the one object every front door renders.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import sources
from .chunking import Chunk, chunk_text, chunking_identity
from .config import Settings, prepare_index_folder
from .embeddings import Embedder, text_hash
from .errors import BrainError, Interrupted
from .progress import IndexProgress
from .stemming import AUTO as AUTO_STEMMER
from .stemming import NONE as NO_STEMMER
from .stemming import detect_language
from .stemming import stemmer as stemmer_for
from .store import (
    KEYWORD_FIELDS,
    LINKS_KEPT,
    FileKeywords,
    FileRow,
    Index,
    NewChunk,
    index_exists,
    index_name,
    open_store,
    rebuilding,
    server_writer_lock,
    timestamp,
    writer_lock,
)



@dataclass
class ScanReport:
    """What one scan did: counts, failures with reasons, moves. Rendered by every front door."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    moved: list[dict[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)  # path, reason; "retry": true when it may pass next time
    warnings: list[dict[str, str]] = field(default_factory=list)
    chunks_written: int = 0
    chunks_embedded: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    model: str = ""
    rebuilt: bool = False
    database: str = ""

    def fail(self, path: str, exc: sources.ExtractionError) -> None:
        """Report one file that could not be read, saying when it may pass next time (`retry`)."""
        self.failed.append({"path": path, "reason": str(exc)} | ({} if exc.lasting else {"retry": True}))

    def counts(self) -> dict[str, int]:
        return {
            "added": len(self.added),
            "updated": len(self.updated),
            "unchanged": self.unchanged,
            "moved": len(self.moved),
            "removed": len(self.removed),
            "failed": len(self.failed),
        }

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["counts"] = self.counts()
        data["seconds"] = round(self.seconds, 3)
        return data


@dataclass
class _Pending:
    source: sources.SourceFile
    hash: str
    extracted: sources.ExtractedText
    chunks: list[Chunk]


# Notes and PDFs lead each chunk's embedded text with their title (frontmatter, H1 or
# file name), so a chunk deep in a note still says what note it is from, and the first
# chunk's with the note's card (its frontmatter in words). Plain text files
# often have no meaningful name (exports, BEIR documents named by id): they do not.
TITLED_EXTENSIONS = (*sources.MARKDOWN_EXTENSIONS, ".pdf")

# The parts of model_identity that only the keyword index depends on: a change rebuilds it
# with every vector from the cache, so `brain status` does not call it a model change.
LINKS_KEY = "links"  # an index made before links were kept is rebuilt once, so every note's links are read
KEYWORD_KEYS = ("fts_tokenizer", "stemmer", "keyword_fields", LINKS_KEY)
EXTRACTOR_KEY = "pdf_text"


def model_identity(embedder: Embedder, settings: Settings) -> dict[str, str]:
    """What the stored index depends on; a change means rebuilding it (vectors come from the cache)."""
    return {
        "fts_tokenizer": settings["search.fts_tokenizer"],
        "stemmer": settings["search.stemmer"],
        "keyword_fields": KEYWORD_FIELDS,
        "model": embedder.identity,
        "dimension": str(embedder.dimension),
        "chunking": chunking_identity(
            settings["chunking.chunk_chars"], settings["chunking.overlap_chars"], embedder.max_tokens
        ),
        # PDFs' text comes from this extractor: a new one rebuilds (vectors of unchanged text from the cache)
        EXTRACTOR_KEY: sources.PDF_TEXT_IDENTITY,
        LINKS_KEY: LINKS_KEPT,
    }


def identity_mismatch(store: Index, wanted: dict[str, str], keys: Sequence[str] | None = None) -> str | None:
    """A sentence saying how the index differs from the settings (in `keys` only, when given), or None."""
    for key, value in wanted.items():
        if keys is not None and key not in keys:
            continue
        # The tokenizer is read from the FTS table itself: an index made before it was recorded is still checked.
        have = store.fts_tokenizer() if key == "fts_tokenizer" else store.get_meta(key)
        if have is not None and have != value:
            if key == EXTRACTOR_KEY:
                return f"the index's PDF text came from {have!r}, this brain extracts it with {value!r}"
            if key == LINKS_KEY:
                return "the index was made before notes' links were kept"
            return f"the index was built with {key} {have!r}, the settings ask for {value!r}"
    return None


def interrupted_before_rebuild(db_path: Path) -> str:
    """What is true after Ctrl-C stopped a rebuild before it began writing (discovery, waiting for the lock)."""
    return f"interrupted before the rebuild began; the index at {db_path} is kept as it was and is still served"


# Chunks embedded and written together: a write every few seconds at the engine's speed, so an
# interrupt loses at most one batch, and the engine's own batches stay full.
VECTOR_BATCH = 32


def interrupted_scan(store: Index) -> str:
    """What is true after Ctrl-C stopped a scan: every file and vector written is kept; what is left, and how
    to finish."""
    try:
        counts = store.counts()
    except Exception:  # the index is unreadable now (a full disk): say only what always holds
        return "interrupted; every file and vector written before the interrupt is kept; run `brain index` to finish"
    waiting = counts.get("pending_vectors", 0)
    if not waiting:
        return "interrupted; every file finished before the interrupt stays indexed; run `brain index` to finish"
    return (f"interrupted; every file read is searchable by its words, and {counts['embedded_chunks']:,} of "
            f"{counts['embedded_chunks'] + waiting:,} chunks have their vectors; run `brain index` to make the rest")


def file_language(index_stemmer: str, chunks: Sequence[Chunk]) -> str:
    """The stemmer for a file's keyword fields: the index's, or under `auto` the language its text is written in."""
    if index_stemmer != AUTO_STEMMER:
        return index_stemmer
    return detect_language("\n".join(c.text for c in chunks[:8]))


def _never_indexed(raw: str) -> BrainError:
    return BrainError(f"{raw}: no such file, and it was never indexed; check the path "
                      "(relative paths start at the current folder)", usage=True)


class Indexer:
    """Keeps one database equal to the notes on disk."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None, *, show_progress: bool = False) -> None:
        self.settings = settings
        self.embedder = embedder or Embedder(settings)
        self.show_progress = show_progress
        self.max_bytes = settings.max_file_bytes
        self.tokenizer = settings["search.fts_tokenizer"]
        self.stemmer = settings["search.stemmer"]
        self._ignore_rules: sources.IgnoreRules | None = None
        self._tokenizer_ready = False

    # ------------------------------------------------------------ public

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the one writer lock of this database for a whole unit of work (re-entrant in this thread).

        The indexer is the one layer that takes the lock (store.writer_lock is only
        its mechanism): it is the room that writes the index, and every writer
        (CLI, hook, watcher, scheduler) writes through it. `scan`, `rebuild` and
        `reindex_paths` take it themselves; a caller that must read something in
        the same unit as the write (git's HEAD before a scan, the last indexed
        commit before a sync) wraps both in this instead of taking the lock itself.
        """
        # `.brain/` ignores itself in git before anything is in it
        prepare_index_folder(self.settings.database_path.parent)
        with writer_lock(self.settings.database_path, also=functools.partial(server_writer_lock, self.settings)):
            yield

    def scan(self) -> ScanReport:
        """Index every file under the roots; remove what is gone or now ignored; detect moves."""
        started = time.monotonic()
        discovery = sources.discover(self.settings)  # a bad ignore pattern stops here, nothing written
        with self.writing():
            store = open_store(self.settings, tokenizer=self.tokenizer, stemmer=self.stemmer)
            try:
                store.remove_rebuild_leftovers()  # a killed rebuild's: under the lock nobody else can be using them
                wanted = model_identity(self.embedder, self.settings)
                if identity_mismatch(store, wanted) is not None:
                    store.close()
                    return self._rebuild_locked(discovery, started)
                report = self._scan_into(store, discovery, wanted)
            finally:
                store.close()
        report.seconds = time.monotonic() - started
        return report

    def resume_vectors(self) -> ScanReport:
        """Make the vectors a stopped index left waiting, reading no file (every chunk is written already)."""
        started = time.monotonic()
        report = ScanReport(model=self.embedder.identity, database=index_name(self.settings))
        with self.writing():
            store = open_store(self.settings, tokenizer=self.tokenizer, stemmer=self.stemmer)
            try:
                with self._keywords_then_vectors(store, [], {}, report, {}):
                    pass
                self._count_cache_use(store, report)
            finally:
                store.close()
        report.seconds = time.monotonic() - started
        return report

    def rebuild(self) -> ScanReport:
        """Build a complete new database beside the old one and swap it in atomically."""
        started = time.monotonic()
        discovery = sources.discover(self.settings)
        with self.writing():
            return self._rebuild_locked(discovery, started)

    def reindex_paths(self, paths: Sequence[str | Path], *, refuse_unknown: bool = False) -> ScanReport:
        """Re-index the named files only; a path gone from disk leaves the index.

        Naming both ends of a rename (the old path gone, the new one present with
        the same content) moves the file's row: nothing is re-embedded.
        `refuse_unknown`: a path neither on disk nor in the index is an error
        (a person's typo must not be a silent nothing) and nothing is written;
        hooks and the watcher leave it off, as a file made and deleted between
        two looks is normal there.
        """
        started = time.monotonic()
        if not paths:
            raise BrainError("no paths given; name the files to re-index", usage=True)
        picked: list[sources.SourceFile] = []
        report = ScanReport()
        gone: list[str] = []
        seen: set[str] = set()
        refused: set[str] = set()
        given: dict[str, str] = {}  # a gone path → as it was typed, for the error
        for raw in paths:
            found = sources.source_for(self.settings, raw)
            if isinstance(found, str):
                report.failed.append({"path": sources.shown_path(str(raw)), "reason": found.split(": ", 1)[-1]})
                rel = self._relative(raw) if isinstance(found, sources.Refused) else None
                if rel is not None:
                    # A link re-pointed outside, a FIFO: its old text leaves the index. (An unreadable
                    # file is not refused: it stays indexed as it was, and is reported.)
                    refused.add(rel)
                continue
            if found.rel in seen:
                continue
            seen.add(found.rel)
            if found.size < 0:
                gone.append(found.rel)
                given[found.rel] = str(raw)
            else:
                picked.append(found)
        if refuse_unknown and gone and not index_exists(self.settings):
            raise _never_indexed(given[gone[0]])  # before the lock and the store would create the index folder
        with self.writing():
            store = open_store(self.settings, tokenizer=self.tokenizer, stemmer=self.stemmer)
            try:
                store.remove_rebuild_leftovers()  # a killed rebuild's: under the lock nobody else can be using them
                existing = store.all_files()
                unknown = [p for p in gone if p not in existing] if refuse_unknown else []
                if unknown:
                    raise _never_indexed(given[unknown[0]])
                wanted = model_identity(self.embedder, self.settings)
                mismatch = identity_mismatch(store, wanted)
                if mismatch is not None:
                    raise BrainError(f"{mismatch}; run `brain index` to rebuild the index first")
                store.set_meta(wanted)
                # Gone files are offered to the new ones as move sources first; the rest leave.
                gone_rows = {p: existing[p] for p in gone if p in existing}
                with self._keywords_then_vectors(store, picked, existing, report, gone_rows):
                    leaving = sorted(set(gone_rows) | {p for p in refused if p in existing})
                    store.remove_files(leaving)
                    report.removed.extend(leaving)
                store.record_languages()
                store.maintain_indexes()  # PostgreSQL: its HNSW index, once the corpus has grown past the threshold
                self._count_cache_use(store, report)
            finally:
                store.close()
        report.model = self.embedder.identity
        report.database = index_name(self.settings)
        report.seconds = time.monotonic() - started
        return report

    # ------------------------------------------------------------ internals

    def _relative(self, raw: str | Path) -> str | None:
        """`raw` as a root-relative path (how the index names files), or None outside the root."""
        path = Path(os.path.normpath(Path.cwd() / Path(os.path.expanduser(str(raw)))))
        try:
            return path.relative_to(self.settings.root).as_posix()
        except ValueError:
            return None

    def _rules(self) -> sources.IgnoreRules:
        """Ignore rules for checking symlink targets, read once per indexer."""
        if self._ignore_rules is None:
            self._ignore_rules = sources.IgnoreRules(self.settings)
        return self._ignore_rules

    def _rebuild_locked(self, discovery: sources.Discovery, started: float) -> ScanReport:
        """Index everything into a new index and swap it in (the store's `rebuilding`): readers see old or
        new, never a mix."""
        with rebuilding(self.settings, tokenizer=self.tokenizer, stemmer=self.stemmer) as fresh:
            report = self._scan_into(fresh, discovery, model_identity(self.embedder, self.settings))
        report.rebuilt = True
        report.database = index_name(self.settings)
        report.seconds = time.monotonic() - started
        return report

    def _scan_into(self, store: Index, discovery: sources.Discovery, wanted: dict[str, str]) -> ScanReport:
        report = ScanReport(model=self.embedder.identity, database=index_name(self.settings))
        store.set_meta(wanted)
        existing = store.all_files()
        on_disk = {f.rel for f in discovery.files}
        gone = {}
        for path, row in existing.items():
            if path in on_disk:
                continue
            hidden = discovery.hides(path)
            if hidden is None:
                gone[path] = row
            else:  # not seen is not gone: an unreadable folder keeps its notes, reported failed
                report.failed.append({"path": path, "reason": hidden})
        with self._keywords_then_vectors(store, discovery.files, existing, report, gone):
            store.remove_files(sorted(gone))
            report.removed.extend(sorted(gone))
        store.record_languages()
        store.maintain_indexes()  # PostgreSQL: a rebuild's schema gets its HNSW index before it is swapped in
        for rel, reason in discovery.refused:  # said on every scan, so a link pulled from upstream is noticed
            report.warnings.append({"path": rel, "reason": f"not indexed: {reason}"})
        store.prune_extracted_text()
        # Why each file on disk failed, for `brain status` to say without reading it again
        # (re-extracting two failed books took 58 s on every status).
        sizes = {f.rel: (f.size, f.mtime_ns) for f in discovery.files}
        failures = {f["path"]: {"size": sizes[f["path"]][0], "mtime_ns": sizes[f["path"]][1], "reason": f["reason"],
                                "lasting": not f.get("retry")} for f in report.failed if f["path"] in sizes}
        store.set_meta({"last_scan": timestamp(), "failed_files": json.dumps(failures, ensure_ascii=False)})
        self._count_cache_use(store, report)
        return report

    def _count_cache_use(self, store: Index, report: ScanReport) -> None:
        """Add this run's cache hits and misses to the index's totals (shown by `brain stats`)."""
        hits = int(store.get_meta("cache_hits") or 0) + report.cache_hits
        misses = int(store.get_meta("cache_misses") or 0) + report.chunks_embedded
        store.set_meta({"cache_hits": str(hits), "cache_misses": str(misses), "precision": self.embedder.precision})

    @contextlib.contextmanager
    def _keywords_then_vectors(
        self,
        store: Index,
        files: Sequence[sources.SourceFile],
        existing: dict[str, Any],
        report: ScanReport,
        gone: dict[str, Any],
    ) -> Iterator[None]:
        """Index `files` into `store`, keywords first (each file in its own transaction); then the block; then
        every vector.

        `gone`: indexed files no longer on disk (move sources; the block removes
        them, before any of their chunks is embedded). A file is searchable by its
        words from the moment its transaction commits, by meaning once its vectors
        are made (`fill_vectors`, which also makes those a killed run left pending).
        Ctrl-C keeps every file and vector written, and says so.
        """
        gone_by_hash: dict[str, str] = {}
        for path, row in gone.items():
            gone_by_hash.setdefault(row.hash, path)
        unchanged = {s.rel for s in files if (row := existing.get(s.rel)) is not None
                     and row.size == s.size and row.mtime_ns == s.mtime_ns}
        to_read = [s for s in files if s.rel not in unchanged]
        report.unchanged += len(unchanged)
        progress = IndexProgress(enabled=self.show_progress and bool(to_read or store.pending_count()))
        finished = False
        try:
            if to_read:
                progress.say(f"reading {len(to_read):,} file{'s' if len(to_read) != 1 else ''}: each is searchable by "
                             "its words as soon as it is read, by meaning once its vectors are made")
                progress.start_reading(len(to_read))
            for source in to_read:
                progress.reading(source.rel)
                self._index_one(store, source, existing, report, gone, gone_by_hash, progress)
                progress.read()
            yield
            self.fill_vectors(store, report, progress)
            finished = True
        except KeyboardInterrupt:
            raise Interrupted(interrupted_scan(store)) from None
        finally:
            progress.close(finished)

    def _index_one(
        self, store: Index, source: sources.SourceFile, existing: dict[str, Any], report: ScanReport,
        gone: dict[str, Any], gone_by_hash: dict[str, str], progress: IndexProgress,
    ) -> None:
        """Read one file and bring its row up to date: unchanged, moved, rewritten with its keywords, or
        failed alone."""
        row = existing.get(source.rel)
        try:
            data = sources.read_note(self.settings, source.path, self.max_bytes, self._rules)
        except sources.ExtractionError as exc:
            report.fail(source.rel, exc)
            return
        except FileNotFoundError:
            # Deleted between the walk and the read (a commit meanwhile): the note is gone,
            # which is a removal, not a failure; a rebuild's new index simply lacks it.
            if row is not None:
                gone[source.rel] = row  # removed with the others by the caller
            return
        digest = sources.content_hash(data)
        if row is not None and row.hash == digest:
            store.touch_file(source.rel, source.size, source.mtime_ns)
            report.unchanged += 1
            return
        if row is None and digest in gone_by_hash:
            old = gone_by_hash.pop(digest)
            self._move(store, gone[old], source, data)
            gone.pop(old, None)
            report.moved.append({"from": old, "to": source.rel})
            return
        if not self._tokenizer_ready:
            # Chunking needs the model's own tokenizer (most of a second to load): loaded at the first file
            # that is chunked, so a rename or a touched file never waits for it.
            progress.loading("the tokenizer")
            self.embedder.count_tokens(["."])
            self._tokenizer_ready = True
        pending = self._prepare(source, digest, data, report)
        if pending is not None:
            self._write_file(store, pending, source.rel in existing, report)

    def _move(self, store: Index, old: FileRow, source: sources.SourceFile, data: bytes) -> None:
        """Rename a file's row: chunks and vectors kept, its title and path fields stemmed in the file's language."""
        title = self._moved_title(source, data)
        title = old.title if title is None else title
        language = old.language or store.stemmer()  # a file indexed before schema 4 has none recorded
        stem = stemmer_for(NO_STEMMER if language == AUTO_STEMMER else language)
        keywords = FileKeywords(title=stem(title), path=stem(sources.readable_path(source.rel)))
        store.move_file(old.path, source.rel, source.size, source.mtime_ns, title=title, keywords=keywords)

    @staticmethod
    def _moved_title(source: sources.SourceFile, data: bytes) -> str | None:
        """A moved file's title under its new name (None: keep the stored one, which a rename cannot change)."""
        if source.path.name.lower().endswith(".pdf"):
            return sources.readable_name(source.path.name)  # no extraction: a PDF's title is its name
        try:
            return sources.extract_bytes(source.path.name, data).title
        except sources.ExtractionError:
            return None

    def _prepare(self, source: sources.SourceFile, digest: str, data: bytes, report: ScanReport) -> _Pending | None:
        try:
            extracted = sources.extract_bytes(source.path.name, data, links=True)
        except sources.ExtractionError as exc:
            report.fail(source.rel, exc)
            return None
        for warning in extracted.warnings:
            report.warnings.append({"path": source.rel, "reason": warning})
        return _Pending(source, digest, extracted, self.chunks_of(source.path.name, extracted))

    def chunks_of(self, name: str, extracted: sources.ExtractedText) -> list[Chunk]:
        """The chunks the index stores for a file's extracted text, with this index's settings."""
        titled = name.lower().endswith(TITLED_EXTENSIONS)
        return chunk_text(
            extracted.text,
            count_tokens=self.embedder.count_tokens,
            token_starts=self.embedder.token_starts,
            max_tokens=self.embedder.max_tokens,
            chunk_chars=self.settings["chunking.chunk_chars"],
            overlap_chars=self.settings["chunking.overlap_chars"],
            markdown=name.lower().endswith(sources.MARKDOWN_EXTENSIONS),
            title=extracted.title if titled else "",
            card=sources.note_card(extracted.metadata) if titled else "",
        )

    def _write_file(self, store: Index, pending: _Pending, known: bool, report: ScanReport) -> None:
        """Write one file's chunks and keywords in one transaction; a vector the cache lacks waits in
        pending_vectors."""
        language = file_language(store.stemmer(), pending.chunks)
        stem = stemmer_for(language)
        hashes = {c.embed_text: text_hash(c.embed_text) for c in pending.chunks if c.embed_text}
        cached = store.cached_vectors(self.embedder.identity, list(set(hashes.values()))) if hashes else {}
        new_chunks: list[NewChunk] = []
        for chunk in pending.chunks:
            embed_hash = hashes.get(chunk.embed_text) if chunk.embed_text else None  # chunks of only code: none
            vector = cached.get(embed_hash) if embed_hash else None
            if vector is not None:
                report.cache_hits += 1
            pages = sources.pages_for_lines(pending.extracted.page_starts, chunk.start_line, chunk.end_line)
            new_chunks.append(NewChunk(
                chunk.text, chunk.heading_path, chunk.start_line, chunk.end_line, pages, embed_hash, vector,
                keyword_heading=stem(chunk.heading_path), keyword_text=stem(chunk.text),
                pending_text=chunk.embed_text if embed_hash and vector is None else None))
        meta_text = sources.metadata_text(pending.extracted.metadata)
        store.replace_file(
            path=pending.source.rel,
            hash=pending.hash,
            size=pending.source.size,
            mtime_ns=pending.source.mtime_ns,
            metadata=pending.extracted.metadata,
            warning="; ".join(pending.extracted.warnings) or None,
            page_starts=pending.extracted.page_starts,
            page_labels=pending.extracted.page_labels,
            links=pending.extracted.links,
            chunks=new_chunks,
            title=pending.extracted.title,
            meta_text=meta_text,
            language=language,
            keywords=FileKeywords(
                stem(pending.extracted.title), stem(meta_text), stem(sources.readable_path(pending.source.rel))
            ),
        )
        if pending.source.path.name.lower().endswith(".pdf"):
            # Kept so grep, get and ask need not extract the PDF again (slow) while it is unchanged.
            store.save_extracted_text(
                pending.hash, pending.extracted.text, pending.extracted.page_starts, pending.extracted.page_labels
            )
        report.chunks_written += len(new_chunks)
        (report.updated if known else report.added).append(pending.source.rel)

    def fill_vectors(self, store: Index, report: ScanReport, progress: IndexProgress | None = None) -> None:
        """Make every vector the index waits for, a batch at a time, each batch written as soon as it is made.

        Texts the cache holds (the same text in another file, a rebuild) are not
        embedded again; identical texts in one batch are embedded once. The model
        runs beside this thread, so Ctrl-C stops the work at once: every batch
        written before stays, and the next index, sync, watch or rebuild goes on
        from there.
        """
        waiting = store.pending_count()
        if not waiting:
            return
        progress = progress or IndexProgress(enabled=False)
        if not self.embedder.loaded:
            progress.loading("the embedding model")
            self.embedder.load(expected_texts=waiting)
        progress.start_embedding(waiting)
        identity = self.embedder.identity
        while True:
            batch = store.pending_vectors(VECTOR_BATCH)
            if not batch:
                return
            cached = store.cached_vectors(identity, list({item.embed_hash for item in batch}))
            missing: dict[str, str] = {}
            for item in batch:
                if item.embed_hash not in cached:
                    missing.setdefault(item.embed_hash, item.text)
            if missing:
                vectors = self._encode_interruptibly(list(missing.values()))
                made = [(h, vectors[j].tobytes()) for j, h in enumerate(missing)]
                store.cache_vectors(identity, made)
                cached.update(made)
            report.chunks_embedded += len(missing)
            report.cache_hits += len(batch) - len(missing)
            store.set_vectors([(item.chunk_id, item.embed_hash, cached[item.embed_hash]) for item in batch])
            progress.embedded(len(batch))

    def _encode_interruptibly(self, texts: list[str]) -> Any:
        """The model's vectors for `texts`, computed on a thread of its own so that Ctrl-C here acts at once.

        A batch takes seconds inside the engine's C code, where Python cannot
        take a signal: waiting for it in short steps lets KeyboardInterrupt land
        within a tenth of a second (the batch in flight is dropped, not written).
        """
        import threading

        result: dict[str, Any] = {}

        def encode() -> None:
            try:
                result["vectors"] = self.embedder.encode_documents(texts)
            except BaseException as exc:  # handed to the waiting thread
                result["error"] = exc

        worker = threading.Thread(target=encode, name="brain-embed", daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(0.1)
        if "error" in result:
            raise result["error"]
        return result["vectors"]
