"""How fresh the index is, proved against the files: `brain status`.

Every file that belongs on disk is compared with its row in the index: by size
and modification time (quick), or by hashing its content (`verify`), which also
catches edits that kept the size and the time. The report also tells the last
commit the index holds against HEAD, the last sync and the last full rebuild
with how each ended, the model and the schema, and whether the git hooks are in
place — everything needed to see that the machinery keeping the index fresh is
alive, rather than trusting it.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from . import gitsync, sources
from .config import Settings, shown_value
from .embeddings import Embedder
from .errors import BrainError
from .indexer import EXTRACTOR_KEY, KEYWORD_KEYS, identity_mismatch, model_identity
from .neighbours import broken_links
from .store import SCHEMA_VERSION, index_exists, index_name, open_store


@dataclass
class StatusReport:
    """Files on disk against the index, plus the state of everything that keeps it fresh."""

    root: str
    database: str
    database_exists: bool
    verified: bool
    files_on_disk: int = 0
    files_indexed: int = 0
    stale: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    orphaned: list[str] = field(default_factory=list)
    unreadable: list[dict[str, str]] = field(default_factory=list)
    # Files that could be indexed but failed this time (a PDF out of processor time): retried by `brain index`.
    failed: list[dict[str, str]] = field(default_factory=list)
    # Folders the walk could not list: what the index holds under them cannot be checked.
    unlisted: list[dict[str, str]] = field(default_factory=list)
    head_commit: str | None = None
    indexed_commit: str | None = None
    commits_behind: int | None = None
    history: str = "unknown"  # current | behind | rewritten | no-record | no-commits | no-git
    last_scan: str | None = None
    last_sync: dict[str, Any] | None = None
    last_rebuild: dict[str, Any] | None = None
    model: str | None = None
    model_wanted: str = ""
    model_mismatch: str | None = None
    keyword_mismatch: str | None = None  # only the keyword index's settings differ (tokenizer, stemmer, fields)
    extractor_mismatch: str | None = None  # only the PDF text extractor differs: PDFs are read again, not re-embedded
    dimension: int | None = None
    chunking: str | None = None
    schema_version: int | None = None
    schema_supported: int = SCHEMA_VERSION
    hooks: list[dict[str, Any]] = field(default_factory=list)
    root_reason: str = ""  # why this folder is the root (config.locate_root)
    # brain.toml's values that would send notes or credentials away, waiting for `brain trust`.
    unapproved: list[dict[str, Any]] = field(default_factory=list)
    # Chunks written before their vector (keywords first): searchable by their words only until made.
    pending_vectors: int = 0
    # Links that name no indexed note, or climb out of the notes folder (neighbours.broken_links): not a
    # freshness problem, so `clean` does not count them.
    broken_links: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        """True when the index holds exactly the files on disk, built with the configured model.

        Unreadable files (broken PDFs, binary files) do not count: no index can hold them.
        A folder that cannot be listed does: nothing under it can be checked.
        """
        return self.database_exists and not (
            self.stale or self.missing or self.orphaned or self.model_mismatch or self.keyword_mismatch
            or self.extractor_mismatch or self.unlisted
            or self.pending_vectors or self.failed
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["clean"] = self.clean
        data["seconds"] = round(self.seconds, 3)
        return data


def index_status(settings: Settings, embedder: Embedder | None = None, *, verify: bool = False) -> StatusReport:
    """Compare the index with the files (hashing each one when `verify`) and gather the freshness facts."""
    started = time.monotonic()
    embedder = embedder or Embedder(settings)
    report = StatusReport(root=str(settings.root), database=index_name(settings),
                          database_exists=index_exists(settings), verified=verify)
    report.model_wanted = embedder.identity
    report.unapproved = [{"key": key, "value": shown_value(key, value)} for key, value in settings.unapproved.items()]
    discovery = sources.discover(settings)
    on_disk = {f.rel: f for f in discovery.files}
    report.files_on_disk = len(on_disk)
    rows: dict[str, Any] = {}
    failures: dict[str, dict[str, Any]] = {}
    if report.database_exists:
        store = open_store(settings, create=False, readonly=True)
        try:
            rows = store.all_files()
            report.indexed_commit = store.indexed_commit()
            report.last_scan = store.get_meta("last_scan")
            report.last_sync = store.last_sync()
            report.last_rebuild = store.last_rebuild()
            report.model = store.get_meta("model")
            dimension = store.get_meta("dimension")
            report.dimension = int(dimension) if dimension else None
            report.chunking = store.get_meta("chunking")
            report.schema_version = store.schema_version()
            report.schema_supported = store.supported_schema
            wanted = model_identity(embedder, settings)
            others = (*KEYWORD_KEYS, EXTRACTOR_KEY)
            report.model_mismatch = identity_mismatch(store, wanted, [k for k in wanted if k not in others])
            report.keyword_mismatch = identity_mismatch(store, wanted, KEYWORD_KEYS)
            report.extractor_mismatch = identity_mismatch(store, wanted, [EXTRACTOR_KEY])
            report.pending_vectors = store.pending_count()
            failures = _failures(store.get_meta("failed_files"))
            report.broken_links = broken_links(store, settings.extensions)
        finally:
            store.close()
    report.files_indexed = len(rows)
    report.unreadable.extend({"path": rel, "reason": reason} for rel, reason in discovery.refused)
    report.unlisted = [{"path": where, "reason": reason} for where, reason in discovery.unlisted]
    report.orphaned = []
    for rel in sorted(rows):
        if rel in on_disk:
            continue
        hidden = discovery.hides(rel)
        if hidden is None:
            report.orphaned.append(rel)
        else:  # kept by the index, but it cannot be told whether it changed
            report.unreadable.append({"path": rel, "reason": hidden})
    max_bytes = settings.max_file_bytes
    for rel, source in on_disk.items():
        row = rows.get(rel)
        if row is None:
            reason, lasting = _recorded_failure(failures, rel, source) or (
                (None, True) if rel.lower().endswith(".pdf") else _unreadable_reason(settings, source, max_bytes))
            if reason is None:
                report.missing.append(rel)
            else:
                (report.unreadable if lasting else report.failed).append({"path": rel, "reason": reason})
        elif verify:
            try:
                digest = sources.content_hash(sources.read_note(settings, source.path, max_bytes))
            except (OSError, sources.ExtractionError):
                digest = ""
            if digest != row.hash:
                report.stale.append(rel)
        elif (row.size, row.mtime_ns) != (source.size, source.mtime_ns):
            report.stale.append(rel)
    _git_facts(settings, report)
    report.hooks = gitsync.hook_states(settings)
    report.seconds = time.monotonic() - started
    return report


def _failures(recorded: str | None) -> dict[str, dict[str, Any]]:
    """The last scan's failed files (path → size, mtime_ns, reason, lasting); {} when none was recorded."""
    try:
        failures = json.loads(recorded or "{}")
    except ValueError:
        return {}
    return failures if isinstance(failures, dict) else {}


def _recorded_failure(failures: dict[str, dict[str, Any]], rel: str, source: sources.SourceFile
                      ) -> tuple[str, bool] | None:
    """Why the last scan could not index this file, if the file is as it was then; else None.

    Status reads this instead of extracting the file again; a PDF the last scan did
    not fail on is simply not indexed yet (missing), which `brain index` settles.
    """
    found = failures.get(rel)
    if not isinstance(found, dict) or (found.get("size"), found.get("mtime_ns")) != (source.size, source.mtime_ns):
        return None
    return str(found.get("reason", "")), bool(found.get("lasting", True))


def _unreadable_reason(settings: Settings, source: sources.SourceFile, max_bytes: int) -> tuple[str | None, bool]:
    """Why a file that is not in the index cannot be (too big, binary, broken PDF), or None if it could be; and
    whether that lasts (False: it failed this time, as a PDF out of processor time, and is to be retried)."""
    try:
        sources.extract_bytes(source.path.name, sources.read_note(settings, source.path, max_bytes))
    except sources.ExtractionError as exc:
        return str(exc), exc.lasting
    except OSError as exc:
        return f"cannot read file: {exc.strerror or exc}", True
    return None, True


def _git_facts(settings: Settings, report: StatusReport) -> None:
    top = gitsync.git_top(settings.root)
    if top is None:
        report.history = "no-git"
        return
    try:
        report.head_commit = gitsync.head_commit(top)
        recorded = report.indexed_commit
        if report.head_commit is None:
            report.history = "no-commits"
        elif recorded is None:
            report.history = "no-record"
        elif recorded == report.head_commit:
            report.history, report.commits_behind = "current", 0
        elif gitsync.commit_exists(top, recorded) and gitsync.is_ancestor(top, recorded, report.head_commit):
            report.history = "behind"
            report.commits_behind = gitsync.commits_between(top, recorded, report.head_commit)
        else:
            report.history = "rewritten"
    except BrainError:
        report.history = "unknown"
