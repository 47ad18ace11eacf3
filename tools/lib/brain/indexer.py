"""Scan, re-index, remove, move: keeps the index equal to the files, one transaction per file.

`scan` walks every root; `reindex_paths` handles named files; `rebuild` builds
a fresh database beside the old one and swaps it in atomically. Each returns a
ScanReport, the one object every front door renders.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import sqlite3
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import sources
from .chunking import Chunk, chunk_text, chunking_identity
from .config import Settings
from .embeddings import Embedder, text_hash
from .errors import BrainError, Interrupted
from .store import KEYWORD_FIELDS, NewChunk, Store, index_exists, open_store, server_writer_lock, store_location, writer_lock

# Files are embedded together in groups of about this many chunks: big enough
# to keep the model's batches full, small enough to bound memory.
EMBED_GROUP_CHUNKS = 256


@dataclass
class ScanReport:
    """What one scan did: counts, failures with reasons, moves. Rendered by every front door."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    moved: list[dict[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    chunks_written: int = 0
    chunks_embedded: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    model: str = ""
    rebuilt: bool = False
    database: str = ""

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
KEYWORD_KEYS = ("fts_tokenizer", "stemmer", "keyword_fields")


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
    }


def identity_mismatch(store: Store, wanted: dict[str, str], keys: Sequence[str] | None = None) -> str | None:
    """A sentence saying how the index differs from the settings (in `keys` only, when given), or None."""
    for key, value in wanted.items():
        if keys is not None and key not in keys:
            continue
        # The tokenizer is read from the FTS table itself: an index made before it was recorded is still checked.
        have = store.fts_tokenizer() if key == "fts_tokenizer" else store.get_meta(key)
        if have is not None and have != value:
            return f"the index was built with {key} {have!r}, the settings ask for {value!r}"
    return None


def rebuild_path(db_path: Path) -> Path:
    """Where a full rebuild writes its new database, beside the live one."""
    return db_path.with_name(db_path.name + ".rebuild")


def remove_rebuild_files(db_path: Path) -> None:
    """Delete what a rebuild left beside the index (its database, -wal, -shm); call it under the writer lock.

    Nothing but a rebuild holding the writer lock ever opens these files, so
    under the lock they are leftovers (of a failed or killed rebuild) that
    would otherwise keep a full disk full.
    """
    fresh = rebuild_path(db_path)
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(str(fresh) + suffix)


def _reason(exc: BaseException) -> str:
    """A failure of SQLite or the OS in plain words ("the disk is full" first: it is the usual one)."""
    text = str(getattr(exc, "strerror", None) or exc)
    if "full" in text.lower() or getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return "the disk is full"
    return text


def _retry(exc: BaseException) -> str:
    """What to do after a failed rebuild: free space first when the disk was full."""
    if _reason(exc) == "the disk is full":
        return "free disk space (a rebuild needs about twice the index's size) and run `brain index --full` again"
    return "run `brain index --full` again"


def _interrupted_rebuild(db_path: Path, had_index: bool, stamp: str) -> str:
    """What is true after Ctrl-C stopped a rebuild: whether the new index made it in, else that the old one stands."""
    swapped = False
    if db_path.exists():
        with contextlib.suppress(Exception):  # unreadable now: it was not swapped in by this rebuild
            live = Store(db_path, create=False, readonly=True)
            try:
                swapped = live.get_meta("last_rebuild") == stamp
            finally:
                live.close()
    if swapped:
        return f"interrupted after the rebuilt index was swapped in; the index at {db_path} is the new, complete one"
    if not had_index:
        return "interrupted; the rebuild stopped before it wrote an index and its partial file was removed; run `brain index`"
    return (f"interrupted; the rebuild stopped and its partial file was removed; the old index at {db_path} is kept "
            "as it was and is still served; run `brain index --full` again to rebuild")


def interrupted_before_rebuild(db_path: Path) -> str:
    """What is true after Ctrl-C stopped a rebuild before it began writing (discovery, waiting for the lock)."""
    return f"interrupted before the rebuild began; the index at {db_path} is kept as it was and is still served"


# Before a file is read, its work is guessed from its size: a chunk per chunk_chars −
# overlap_chars bytes of a note (the step between chunks), a page per PDF_BYTES_PER_PAGE of a
# PDF, each page read and then about PDF_CHUNKS_PER_PAGE chunks. Rough guesses: each is
# replaced by the real count once its file is read, so the total is exact by the end.
PDF_BYTES_PER_PAGE = 50_000
PDF_CHUNKS_PER_PAGE = 2


class _Progress:
    """The indexing bar on a terminal (stderr). It counts work, not files: chunks embedded
    and PDF pages read, since one long PDF can take longer than a hundred short notes.
    Not shown (every method does nothing) when not asked for, or without tqdm."""

    def __init__(self, files: Sequence[sources.SourceFile], step: int, *, enabled: bool) -> None:
        self.bar: Any = None
        if not enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        self.step = max(1, step)
        self.guesses = {source.rel: self._guess(source) for source in files}
        self.files, self.files_done = len(files), 0
        # Left on screen when done, above the scan report.
        self.bar = tqdm(total=sum(self.guesses.values()), desc="indexing", unit="chunk", file=sys.stderr, leave=True,
                        dynamic_ncols=True)
        self._show_files()

    @property
    def shown(self) -> bool:
        return self.bar is not None

    def _guess(self, source: sources.SourceFile) -> int:
        if source.path.name.lower().endswith(".pdf"):
            pages = max(1, source.size // PDF_BYTES_PER_PAGE)
            return pages * (1 + PDF_CHUNKS_PER_PAGE)
        return max(1, -(-source.size // self.step))  # rounded up: a short note is still one chunk

    def _show_files(self) -> None:
        self.bar.set_postfix_str(f"{self.files_done}/{self.files} files read", refresh=False)

    def loading(self, embedder: Embedder) -> None:
        """Load the model under a label that says so (it takes seconds; torch tens), then start the clock."""
        if self.bar is None or embedder.loaded:
            return
        self.bar.set_description("loading the embedding model…")
        embedder.load(expected_texts=self.bar.total)
        self.bar.set_description("indexing", refresh=False)
        done = self.bar.n
        self.bar.reset(total=self.bar.total)  # the rate and time left count from here, not from the loading
        self.bar.update(done)
        self._show_files()

    def read(self, rel: str, chunks: int, pages: int) -> None:
        """A file was read: its guess becomes its real work, and its pages are done."""
        if self.bar is None:
            return
        self._retotal(self.guesses.pop(rel, 0), chunks + pages)
        self.files_done += 1
        self._show_files()
        if pages:
            self.bar.update(pages)
        else:
            self.bar.refresh()

    def skip(self, rel: str) -> None:
        """A file needs no embedding after all (same content, moved, failed): its guess leaves the total."""
        if self.bar is None or rel not in self.guesses:
            return
        self._retotal(self.guesses.pop(rel), 0)
        self.files_done += 1
        self._show_files()
        self.bar.refresh()

    def _retotal(self, guess: int, real: int) -> None:
        self.bar.total = max(self.bar.n, self.bar.total - guess + real)

    def update(self, done: int) -> None:
        """`done` more chunks are embedded (or needed no embedding)."""
        if self.bar is not None and done:
            self.bar.update(done)

    def close(self, finished: bool) -> None:
        """Leave the bar on screen: complete when `finished`, else where it stopped."""
        if self.bar is None:
            return
        if finished:
            self.bar.total = self.bar.n  # every guess was replaced or dropped by now: what was done is the whole
        self.bar.set_description("indexed" if finished else "stopped", refresh=False)
        self.bar.close()


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
        with writer_lock(self.settings.database_path, also=functools.partial(server_writer_lock, self.settings)):
            yield

    def scan(self) -> ScanReport:
        """Index every file under the roots; remove what is gone or now ignored; detect moves."""
        started = time.monotonic()
        discovery = sources.discover(self.settings)  # a bad ignore pattern stops here, nothing written
        db_path = self.settings.database_path
        with self.writing():
            remove_rebuild_files(db_path)  # a killed rebuild's leftovers: nobody else can be using them now
            store = open_store(self.settings, tokenizer=self.tokenizer, stemmer=self.stemmer)
            try:
                wanted = model_identity(self.embedder, self.settings)
                if identity_mismatch(store, wanted) is not None:
                    store.close()
                    return self._rebuild_locked(discovery, started)
                report = self._scan_into(store, discovery, wanted)
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
        db_path = self.settings.database_path
        if refuse_unknown and gone and not index_exists(self.settings):
            raise _never_indexed(given[gone[0]])  # before the lock and Store() would create the index folder
        with self.writing():
            remove_rebuild_files(db_path)  # a killed rebuild's leftovers: nobody else can be using them now
            store = open_store(self.settings, tokenizer=self.tokenizer, stemmer=self.stemmer)
            try:
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
                self._index_files(store, picked, existing, report, gone_rows)
                leaving = sorted(set(gone_rows) | {p for p in refused if p in existing})
                store.remove_files(leaving)
                report.removed.extend(leaving)
                store.record_languages()
                store.maintain_indexes()  # PostgreSQL: its HNSW index, once the corpus has grown past the threshold
                self._count_cache_use(store, report)
            finally:
                store.close()
        report.model = self.embedder.identity
        report.database = str(db_path)
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
        if store_location(self.settings):
            return self._rebuild_on_server(discovery, started)
        db_path = self.settings.database_path
        fresh_path = rebuild_path(db_path)
        remove_rebuild_files(db_path)
        had_index = db_path.exists()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        try:
            # The new file takes the live one's page size: the final copy needs equal sizes.
            page_size = self._live_page_size(db_path)
            fresh = Store(fresh_path, tokenizer=self.tokenizer, stemmer=self.stemmer, page_size=page_size)
            try:
                if db_path.exists():
                    # Vectors already computed are reused: a rebuild re-embeds nothing it knows.
                    fresh.import_embedding_cache(db_path)
                report = self._scan_into(fresh, discovery, model_identity(self.embedder, self.settings))
                fresh.set_meta({"last_rebuild": stamp})
                fresh.checkpoint()
            finally:
                fresh.close()
            self._swap_in(fresh_path, db_path)
        except (sqlite3.Error, OSError) as exc:
            remove_rebuild_files(db_path)
            raise BrainError(
                f"the rebuild could not finish ({_reason(exc)}); the old index at {db_path} is kept as it was and the "
                f"partial new one removed; {_retry(exc)}"
            ) from None
        except KeyboardInterrupt:
            remove_rebuild_files(db_path)  # at once: a partial rebuild is of no use to anyone
            raise Interrupted(_interrupted_rebuild(db_path, had_index, stamp)) from None
        except BaseException:
            # Left behind, a partial rebuild would keep a full disk full until the next one.
            remove_rebuild_files(db_path)
            raise
        report.rebuilt = True
        report.database = str(db_path)
        report.seconds = time.monotonic() - started
        return report

    def _rebuild_on_server(self, discovery: sources.Discovery, started: float) -> ScanReport:
        """The full rebuild on PostgreSQL: a new schema beside the live one, swapped in with one transaction."""
        live = open_store(self.settings, tokenizer=self.tokenizer, stemmer=self.stemmer)
        try:
            with live.rebuild_lock():  # another machine's rebuild of this corpus finishes first
                report = self._rebuild_schema_swap(live, discovery)
        finally:
            live.close()
        report.rebuilt = True
        report.database = live.path
        report.seconds = time.monotonic() - started
        return report

    def _rebuild_schema_swap(self, live: Any, discovery: sources.Discovery) -> ScanReport:
        from .store_postgres import PostgresStore

        try:
            fresh_schema = live.rebuild_schema()
            live.drop_schema(fresh_schema)  # a killed rebuild's leftovers: the rebuild lock is ours
            fresh = PostgresStore(live.location, live.corpus, tokenizer=self.tokenizer, stemmer=self.stemmer,
                                  schema=fresh_schema)
            try:
                # Vectors already computed are reused: a rebuild re-embeds nothing it knows.
                fresh.import_embedding_cache(live.schema)
                report = self._scan_into(fresh, discovery, model_identity(self.embedder, self.settings))
                fresh.set_meta({"last_rebuild": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
            finally:
                fresh.close()
            live.swap_in(fresh_schema)
        except BaseException:
            with contextlib.suppress(Exception):
                live.drop_schema(live.rebuild_schema())  # the old index stays as it was
            raise
        return report

    @staticmethod
    def _live_page_size(db_path: Path) -> int | None:
        if not db_path.exists():
            return None
        live = Store(db_path, create=False, readonly=True)  # a foreign or damaged file stops the rebuild here
        try:
            return live.page_size()
        finally:
            live.close()

    @staticmethod
    def _swap_in(fresh_path: Path, db_path: Path) -> None:
        """Make the fresh database the live one, atomically for every reader.

        The pages are copied into the live file in one write transaction (SQLite's
        backup API): a reader sees the old index or the new one, never a mix, and a
        process that keeps the file open (a server) sees the new index on its next
        query. When the copy fails (a full disk) the old index stays as it was and
        the rebuild fails saying so: renaming the new file over the old one instead
        would leave a server reading the deleted old file, and pair the new file
        with the old one's -wal/-shm. Only a missing index is made by renaming.
        """
        if db_path.exists():
            live = Store(db_path)  # a foreign or damaged file stops the rebuild here, untouched
            try:
                live.copy_from(fresh_path)
            except sqlite3.Error as exc:
                raise BrainError(
                    f"the rebuilt index could not be copied into {db_path} ({_reason(exc)}); the old index is kept "
                    f"as it was and the new one removed; {_retry(exc)}"
                ) from None
            finally:
                live.close()
            remove_rebuild_files(db_path)
            return
        # No live index: a -wal or -shm left beside its path (the index deleted by hand) would be
        # read as part of the new file. Only the rebuild, under the writer lock, creates it now.
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(str(db_path) + suffix)
        os.replace(fresh_path, db_path)
        remove_rebuild_files(db_path)

    def _scan_into(self, store: Store, discovery: sources.Discovery, wanted: dict[str, str]) -> ScanReport:
        report = ScanReport(model=self.embedder.identity, database=str(store.path))
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
        self._index_files(store, discovery.files, existing, report, gone)
        store.remove_files(sorted(gone))
        report.removed.extend(sorted(gone))
        store.record_languages()
        store.maintain_indexes()  # PostgreSQL: a rebuild's schema gets its HNSW index before it is swapped in
        for rel, reason in discovery.refused:  # said on every scan, so a link pulled from upstream is noticed
            report.warnings.append({"path": rel, "reason": f"not indexed: {reason}"})
        store.prune_extracted_text()
        store.set_meta({"last_scan": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        self._count_cache_use(store, report)
        return report

    def _count_cache_use(self, store: Store, report: ScanReport) -> None:
        """Add this run's cache hits and misses to the index's totals (shown by `brain stats`)."""
        hits = int(store.get_meta("cache_hits") or 0) + report.cache_hits
        misses = int(store.get_meta("cache_misses") or 0) + report.chunks_embedded
        store.set_meta({"cache_hits": str(hits), "cache_misses": str(misses), "precision": self.embedder.precision})

    def _index_files(
        self,
        store: Store,
        files: Sequence[sources.SourceFile],
        existing: dict[str, Any],
        report: ScanReport,
        gone: dict[str, Any],
    ) -> None:
        """Index `files` into `store`; `gone`: indexed files no longer on disk (move sources; the caller removes them)."""
        gone_by_hash: dict[str, str] = {}
        for path, row in gone.items():
            gone_by_hash.setdefault(row.hash, path)
        unchanged = {s.rel for s in files if (row := existing.get(s.rel)) is not None
                     and row.size == s.size and row.mtime_ns == s.mtime_ns}
        progress = self._progress([s for s in files if s.rel not in unchanged])
        group: list[_Pending] = []
        group_chunks = 0
        finished = False
        try:
            for source in files:
                if source.rel in unchanged:
                    report.unchanged += 1
                    continue
                row = existing.get(source.rel)
                try:
                    data = sources.read_note(self.settings, source.path, self.max_bytes, self._rules)
                except sources.ExtractionError as exc:
                    report.failed.append({"path": source.rel, "reason": str(exc)})
                    progress.skip(source.rel)
                    continue
                except FileNotFoundError:
                    # Deleted between the walk and the read (a commit meanwhile): the note is gone,
                    # which is a removal, not a failure; a rebuild's new index simply lacks it.
                    if row is not None:
                        gone[source.rel] = row  # removed with the others by the caller
                    progress.skip(source.rel)
                    continue
                digest = sources.content_hash(data)
                if row is not None and row.hash == digest:
                    store.touch_file(source.rel, source.size, source.mtime_ns)
                    report.unchanged += 1
                    progress.skip(source.rel)
                    continue
                if row is None and digest in gone_by_hash:
                    old = gone_by_hash.pop(digest)
                    store.move_file(old, source.rel, source.size, source.mtime_ns, title=self._moved_title(source, data),
                                    path_text=sources.readable_path(source.rel))
                    gone.pop(old, None)
                    report.moved.append({"from": old, "to": source.rel})
                    progress.skip(source.rel)
                    continue
                progress.loading(self.embedder)  # before the first file is chunked: chunking needs the tokenizer
                pending = self._prepare(source, digest, data, report)
                if pending is None:
                    progress.skip(source.rel)
                    continue
                progress.read(source.rel, len(pending.chunks), len(pending.extracted.page_starts))
                group.append(pending)
                group_chunks += len(pending.chunks)
                if group_chunks >= EMBED_GROUP_CHUNKS:
                    self._write_group(store, group, existing, report, progress)
                    group, group_chunks = [], 0
            self._write_group(store, group, existing, report, progress)
            finished = True
        finally:
            progress.close(finished)

    def _progress(self, to_read: Sequence[sources.SourceFile]) -> _Progress:
        """The progress bar for reading and embedding these files: shown when asked for and there is work."""
        step = int(self.settings["chunking.chunk_chars"]) - int(self.settings["chunking.overlap_chars"])
        return _Progress(to_read, step, enabled=self.show_progress and bool(to_read))

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
            extracted = sources.extract_bytes(source.path.name, data)
        except sources.ExtractionError as exc:
            report.failed.append({"path": source.rel, "reason": str(exc)})
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

    def _write_group(
        self, store: Store, group: list[_Pending], existing: dict[str, Any], report: ScanReport, progress: _Progress
    ) -> None:
        if not group:
            return
        texts = [c.embed_text for p in group for c in p.chunks if c.embed_text]
        progress.update(sum(len(p.chunks) for p in group) - len(texts))  # chunks of only code: nothing to embed
        vectors, hits = self.embedder.encode_cached(texts, store, progress.update if progress.shown else None)
        report.cache_hits += hits
        report.chunks_embedded += len(texts) - hits
        position = 0
        for pending in group:
            new_chunks: list[NewChunk] = []
            for chunk in pending.chunks:
                vector = None
                embed_hash = None
                if chunk.embed_text:
                    vector = vectors[position].tobytes()
                    embed_hash = text_hash(chunk.embed_text)
                    position += 1
                pages = sources.pages_for_lines(pending.extracted.page_starts, chunk.start_line, chunk.end_line)
                new_chunks.append(NewChunk(chunk.text, chunk.heading_path, chunk.start_line, chunk.end_line, pages, embed_hash, vector))
            store.replace_file(
                path=pending.source.rel,
                hash=pending.hash,
                size=pending.source.size,
                mtime_ns=pending.source.mtime_ns,
                metadata=pending.extracted.metadata,
                warning="; ".join(pending.extracted.warnings) or None,
                page_starts=pending.extracted.page_starts,
                chunks=new_chunks,
                title=pending.extracted.title,
                meta_text=sources.metadata_text(pending.extracted.metadata),
                path_text=sources.readable_path(pending.source.rel),
            )
            if pending.source.path.name.lower().endswith(".pdf"):
                # Kept so grep, get and ask need not extract the PDF again (slow) while it is unchanged.
                store.save_extracted_text(pending.hash, pending.extracted.text, pending.extracted.page_starts)
            report.chunks_written += len(new_chunks)
            (report.updated if pending.source.rel in existing else report.added).append(pending.source.rel)
