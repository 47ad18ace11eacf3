"""The core API every front door calls: one Brain per notes root.

The CLI, the scripts, the MCP and HTTP servers only parse input, call these
methods and render the objects they return, so they can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from . import gitsync
from .approvals import revoke as revoke_approvals
from .config import (
    INDEX_FOLDER,
    SETTINGS,
    Settings,
    approve_held,
    config_file,
    file_problem,
    load_settings,
    locate_root,
    prepare_index_folder,
    set_value,
    unset_value,
)
from .embeddings import Embedder
from .errors import BrainError, Interrupted, failure_words
from .freshness import StatusReport, index_status
from .grep import GrepResponse, TextRange, grep, read_range
from .limits import DEFAULT_GREP_LIMIT
from .indexer import Indexer, ScanReport, interrupted_before_rebuild
from .neighbours import LinksResponse, RelatedResponse, note_links, related_notes
from .search import Searcher, SearchResponse
from .store import Index, hide_password, index_exists, index_name, open_store, timestamp
from .texts import TextReader

if TYPE_CHECKING:
    from .ask import AskResult
    from .scheduler import NightlyRebuild
    from .watcher import Watcher


class Brain:
    """A notes root with its settings, model and index; heavy parts load on first use."""

    def __init__(
        self,
        root: str | Path | None = None,
        config: str | None = None,
        *,
        show_progress: bool = False,
        announce: bool = True,
    ) -> None:
        """Open the notes folder `root` (found as `brain status` explains when None) with its settings.

        `announce`: say on stderr which of brain.toml's values wait for this user's approval.
        """
        found = locate_root(str(root) if root is not None else None)
        self.root = found.path
        self.root_reason = found.reason  # why this folder: `brain status` tells it
        self.config = config
        self.settings: Settings = load_settings(self.root, config, announce=announce)
        self.embedder = Embedder(self.settings)
        self.show_progress = show_progress
        self._searcher: Searcher | None = None

    # ------------------------------------------------------------ indexing

    def index(self, *, full: bool = False) -> ScanReport:
        """Bring the index up to date with the files (`full`: rebuild from scratch and swap in)."""
        if full:
            return self.rebuild()
        indexer = Indexer(self.settings, self.embedder, show_progress=self.show_progress)
        with indexer.writing():
            # HEAD read under the lock: a commit landing during the scan is caught up by its hook.
            head = gitsync.current_head(self.settings)
            report = indexer.scan()
            if head is not None:
                with _open(self.settings) as store:
                    store.record_indexed_commit(head)
        return report

    def rebuild(self) -> ScanReport:
        """Rebuild the whole index into a new database and swap it in; the result is kept for `brain status`."""
        db = self.settings.database_path
        started = timestamp()
        try:
            indexer = Indexer(self.settings, self.embedder, show_progress=self.show_progress)
            with indexer.writing():
                head = gitsync.current_head(self.settings)
                report = indexer.rebuild()
                with _open(self.settings) as store:
                    if head is not None:
                        store.record_indexed_commit(head)
                    store.record_rebuild({
                        "at": started,
                        "ok": True,
                        "counts": report.counts(),
                        "failed": [f["path"] for f in report.failed],
                        "chunks_embedded": report.chunks_embedded,
                        "seconds": round(report.seconds, 3),
                    })
        except BaseException as exc:
            if index_exists(self.settings):
                try:
                    with _open(self.settings) as store:
                        store.record_rebuild({"at": started, "ok": False, "error": failure_words(exc)})
                except Exception:
                    pass  # the old index is unreadable: the error itself says enough
            if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Interrupted):
                raise Interrupted(interrupted_before_rebuild(db)) from None
            raise
        return report

    def sync(self, *, hook: str | None = None, queue: bool = False) -> gitsync.SyncReport:
        """Catch the index up with git: re-index what changed from the last indexed commit to HEAD
        (what the hooks run)."""
        return gitsync.sync(self.settings, self.embedder, hook=hook, queue=queue)

    def reindex(self, paths: Sequence[str | Path]) -> ScanReport:
        """Re-index just these files (gone ones leave the index; a path never indexed and not on disk is an error)."""
        return Indexer(self.settings, self.embedder).reindex_paths(paths, refuse_unknown=True)

    # ------------------------------------------------------------ searching

    @property
    def searcher(self) -> Searcher:
        if self._searcher is None:
            self._searcher = Searcher(self.settings, self.embedder)
        return self._searcher

    def search(self, query: str, *, explain: bool = False, **options: Any) -> SearchResponse:
        """Files that talk about `query`; see Searcher.search for the options (`explain`: the JSON says how
        each score was made)."""
        response = self.searcher.search(query, **options)
        response.explained = explain
        return response

    # ------------------------------------------------------------ long files and exact lookups

    def grep(
        self,
        pattern: str,
        *,
        path: str | None = None,
        context: int = 0,
        limit: int = DEFAULT_GREP_LIMIT,
        case_sensitive: bool = False,
    ) -> GrepResponse:
        """Lines matching an RE2 `pattern` in the extracted text of every indexed file (or of `path`, a file
        or folder)."""
        with _open(self.settings, create=False) as store:
            return grep(TextReader(self.settings, store), pattern, file=path, context=context, limit=limit,
                        case_sensitive=case_sensitive)

    def get_file(
        self, path: str, *, offset: int = 0, length: int | None = None, page: str | None = None
    ) -> TextRange:
        """Bytes offset..offset+length of an indexed file's extracted text (length None: to the end, at most
        operations.MAX_READ_BYTES), or one page of a PDF: its physical number, or the label printed on it."""
        with _open(self.settings, create=False) as store:
            return read_range(TextReader(self.settings, store), path, offset=offset, length=length, page=page)

    def links(self, path: str) -> LinksResponse:
        """The note's outgoing links and backlinks, resolved against the notes indexed now (see neighbours)."""
        with _open(self.settings, create=False) as store:
            return note_links(store, TextReader(self.settings, store), path)

    def related(self, path: str, *, limit: int = 10, exclude_linked: bool = False) -> RelatedResponse:
        """The notes nearest to `path` by meaning, from its chunks' vectors (see neighbours.related_notes)."""
        with _open(self.settings, create=False) as store:
            return related_notes(store, TextReader(self.settings, store), path, limit=limit,
                                 exclude_linked=exclude_linked)

    def ask(
        self,
        question: str,
        *,
        limit: int | None = None,
        budget: int | None = None,
        model: str | None = None,
        show_prompt: bool = False,
        on_token: Callable[[str], None] | None = None,
        **search_options: Any,
    ) -> AskResult:
        """Answer `question` from the notes with one language-model call (see brain.ask); `limit` files at most."""
        from .ask import ask

        with _open(self.settings, create=False) as store:
            return ask(self.settings, TextReader(self.settings, store), self.search, question, budget=budget,
                       max_files=limit, model=model, show_prompt=show_prompt, on_token=on_token,
                       search_options=search_options)

    # ------------------------------------------------------------ facts

    def stats(self) -> dict[str, Any]:
        """What the index holds: counts, cache use, size on disk, model, biggest files."""
        if not index_exists(self.settings):
            raise BrainError(f"no index at {index_name(self.settings)}; run `brain index` first")
        with _open(self.settings) as store:
            counts = store.counts()
            hits = int(store.get_meta("cache_hits") or 0)
            misses = int(store.get_meta("cache_misses") or 0)
            return {
                "database": index_name(self.settings),
                "database_bytes": store.disk_bytes(),
                **counts,
                "cache_hit_rate": round(hits / (hits + misses), 4) if hits + misses else None,
                "model": store.get_meta("model"),
                "dimension": int(store.get_meta("dimension") or 0) or None,
                "chunking": store.get_meta("chunking"),
                "fts_tokenizer": store.fts_tokenizer(),
                "stemmer": store.stemmer(),
                "precision": store.get_meta("precision") or "float32",
                "last_scan": store.get_meta("last_scan"),
                "largest_files": [{"path": p, "chunks": n} for p, n in store.largest_files()],
            }

    def status(self, *, verify: bool = False) -> StatusReport:
        """How fresh the index is: stale, missing and orphaned files (hashing every file when `verify`),
        commits, rebuilds."""
        report = index_status(self.settings, self.embedder, verify=verify)
        report.root_reason = self.root_reason
        return report

    # ------------------------------------------------------------ keeping fresh

    def install_hooks(self, *, mode: str = "background", names: Sequence[str] = ()) -> list[gitsync.HookAction]:
        """Install the git hooks that re-index what commits change (idempotent; foreign hooks kept and chained)."""
        return gitsync.install_hooks(self.settings, mode=mode, names=names)

    def uninstall_hooks(self, *, names: Sequence[str] = ()) -> list[gitsync.HookAction]:
        """Remove brain's git hooks and restore the ones they replaced."""
        return gitsync.uninstall_hooks(self.settings, names=names)

    def watcher(self, *, debounce: float | None = None) -> Watcher:
        """A Watcher for this notes root; `.run(stop)` re-indexes files as they are saved."""
        from .watcher import DEBOUNCE_SECONDS, Watcher

        return Watcher(self.settings, self.embedder, debounce=DEBOUNCE_SECONDS if debounce is None else debounce)

    def nightly(self, *, at: str = "03:00") -> NightlyRebuild:
        """A NightlyRebuild for this notes root; `.run(stop)` rebuilds every day at `at` local time.

        Each run reads the settings afresh (brain.toml may change between nights)
        and keeps this process's loaded model.
        """
        from .scheduler import NightlyRebuild

        def rebuild() -> ScanReport:
            return Brain(self.root, self.config).rebuild()  # the model stays loaded in this process

        return NightlyRebuild(rebuild, at=at)

    def config_rows(self) -> list[dict[str, Any]]:
        """Every setting with its effective value, where it came from, and what it does."""
        return [
            {"key": spec.key,
             "value": hide_password(self.settings[spec.key]) if spec.key == "store" else self.settings[spec.key],
             "origin": self.settings.origins[spec.key], "help": spec.help}
            for spec in SETTINGS
        ]

    def config_set(self, key: str, value: str) -> Any:
        """Write one setting into brain.toml (comments and other keys kept)."""
        return edit_setting(key, value, root=self.root, config=self.config).value

    def log_path(self, name: str) -> Path:
        """Where a long-running command (`watch`, `schedule`) logs: `<notes>/.brain/<name>.log` (the folder
        made, kept out of git)."""
        return prepare_index_folder(self.root / INDEX_FOLDER) / f"{name}.log"

    def trust(self) -> list[tuple[str, Any]]:
        """Approve, on this machine, the values of brain.toml that send notes or credentials away; returns them.

        Until approved they are held back (Settings.unapproved, the defaults in
        force); afterwards these settings are read again and take effect.
        """
        approved = approve_held(self.settings)
        if approved:
            self.settings = load_settings(self.root, self.config)
            self.embedder = Embedder(self.settings)
            self.close()
            self._searcher = None
        return approved

    def distrust(self) -> int:
        """Forget this machine's approvals of brain.toml's values; returns how many there were."""
        path = self.settings.config_path or (self.root / "brain.toml")
        return revoke_approvals(path)

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()


@dataclass(frozen=True)
class SettingEdit:
    """What `brain config set`/`unset` did: the file written, the key, its new value (None: removed), and what
    is still wrong with the file, if anything."""

    path: Path
    key: str
    value: Any
    problem: str | None


def edit_setting(key: str, value: str | None, *, root: str | Path | None = None,
                 config: str | None = None) -> SettingEdit:
    """Set KEY to VALUE in the settings file (None: remove KEY), without loading the settings first.

    A Brain would refuse to open over the very mistake this edit is meant to mend.
    """
    found = locate_root(str(root) if root is not None else None)
    path = config_file(found.path, config)
    if value is None:
        unset_value(path, key)
        written = None
    else:
        written = set_value(path, key, value)
    return SettingEdit(path, key, written, file_problem(found.path, config))


class _open:
    """`with _open(settings) as store`: an Index that is closed afterwards (`create=False`: the index must exist)."""

    def __init__(self, settings: Settings, *, create: bool = True) -> None:
        self.store = open_store(settings, create=create)

    def __enter__(self) -> Index:
        return self.store

    def __exit__(self, *exc: object) -> None:
        self.store.close()
