"""Notes folders as the long-running servers see them: one warm Brain each, one request at a time.

The MCP and HTTP front doors both call `ServedCorpus.run`, which returns exactly
the `to_dict()` of the core object the CLI prints with `--json`, so the three
front doors can never disagree. What lives here is only what a server needs
and the CLI does not: a lock (requests arrive on several threads while a Brain
is single-threaded), the warm-up, corpus names, and the check that a path a
client sends stays inside the notes folder.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .errors import BrainError, NoteNotFound, PathRefused, Unavailable, user_error

CORPUS_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
DEFAULT_CORPUS = "default"


def _log(message: str) -> None:
    # stdout may be a protocol (MCP over stdio): logs go to stderr only.
    sys.stderr.write(f"brain: {message}\n")
    sys.stderr.flush()


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and `localhost`: addresses only this machine can reach."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def single_thread_blas() -> None:
    """Run numpy's BLAS on one thread in a server process.

    A query is encoded and scored with small matrix products, where BLAS threads
    only add hand-offs; on a busy machine their spin-waiting made a warm search
    many times slower (see docs/performance.md). The limit reaches only the BLAS
    already loaded (numpy's), so torch keeps its threads for embedding notes.
    """
    try:
        import numpy  # noqa: F401  (load its BLAS now, so the limit applies to it)
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(1, user_api="blas")


def _as_dict(result: Any) -> Any:
    return result.to_dict() if hasattr(result, "to_dict") else result


# The reports that name where things are on this machine (the notes folder, the index file).
LOCATED = ("index", "status", "stats")
OUTSIDE = "(outside the notes folder)"


def without_location(data: Any, root: Path) -> Any:
    """A report with every path of this machine made relative to the notes folder (`.` for the folder itself),
    or OUTSIDE: servers do not tell clients where the notes are. Only whole values that are paths change."""
    if isinstance(data, dict):
        return {key: without_location(value, root) for key, value in data.items()}
    if isinstance(data, list):
        return [without_location(value, root) for value in data]
    if isinstance(data, str) and os.path.isabs(data) and "\n" not in data:
        place = Path(data).resolve()
        if place == root:
            return "."
        if place.is_relative_to(root):
            return place.relative_to(root).as_posix()
        return OUTSIDE
    return data


def note_path(settings: Any, raw: str, *, field: str = "path") -> str:
    """The note `raw` names, as a root-relative path, or PathRefused / NoteNotFound.

    Only relative paths inside the configured roots are accepted: no `..`, no
    absolute or drive paths, nothing hidden (`.git/`, `.brain/`), nothing ignored,
    and no symlink whose target lies outside the notes folder.
    """
    from . import sources

    text = (raw or "").strip()
    if not text:
        raise PathRefused("path is empty; give a note's path relative to the notes folder", field=field)
    if "\x00" in text:
        raise PathRefused("path contains a NUL byte", field=field)
    sources.check_path_text(text, field)
    unified = text.replace("\\", "/")
    if unified.endswith("/"):
        raise PathRefused(f"path {raw!r} ends with '/', which names a folder; give the note's path", field=field)
    if unified.startswith("/") or re.match(r"^[A-Za-z]:", unified) or unified.startswith("~"):
        raise PathRefused(f"path {raw!r} is absolute; give it relative to the notes folder", field=field)
    parts = [p for p in unified.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PathRefused(f"path {raw!r} climbs out with '..'; give it relative to the notes folder", field=field)
    if not parts:
        raise PathRefused(f"path {raw!r} names the notes folder itself; give a note's path", field=field)
    root = Path(settings.root).resolve()
    candidate = root.joinpath(*parts)
    if "\\" in text and os.sep == "/":
        # On POSIX a backslash is a character of the name (`back\slash.md`); it is read
        # as a separator (a Windows client's habit) only when no such file exists.
        literal = root.joinpath(*[p for p in text.split("/") if p not in ("", ".")])
        if os.path.lexists(literal):
            candidate = literal
    real = Path(os.path.realpath(candidate))
    if real != root and root not in real.parents:
        raise PathRefused(
            f"path {raw!r} leads outside the notes folder (a symlink out); it cannot be read", field=field
        )
    found = sources.source_for(settings, candidate)
    if isinstance(found, str):
        reason = found.split(": ", 1)[-1]
        raise PathRefused(f"path {raw!r} is not a note brain serves ({reason})", field=field)
    if found.size < 0:
        raise NoteNotFound(f"no note at {raw!r}; search first and use a path from the results", field=field)
    return found.rel


@contextlib.contextmanager
def _not_indexed_is_not_found(field: str) -> Iterator[None]:
    """A note on disk but not (yet) in the index is a 404 naming the input, not a server-state error."""
    from .texts import NotIndexed

    try:
        yield
    except NotIndexed as exc:
        raise NoteNotFound(str(exc), field=field) from None


def _note_or_folder(settings: Any, raw: str) -> str:
    """grep's `path`: a folder inside the notes folder (its indexed notes), else a note, checked as note_path does."""
    from . import sources

    folder = sources.path_filter(raw)
    if folder is not None:
        candidate = Path(settings.root).resolve() / folder
        if candidate.is_dir() and Path(os.path.realpath(candidate)).is_relative_to(Path(settings.root).resolve()):
            return folder
    return note_path(settings, raw)


@dataclass
class ServedCorpus:
    """One named notes folder with its own settings, ignore rules and database, kept warm."""

    name: str
    root: Path
    config: str | None = None
    _brain: Any = field(default=None, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    # Writes (`index`) take a lock of their own: a search must never wait behind one (it waited 37 s
    # behind a POST /index). The index's store takes the writer lock across processes itself.
    _write_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def brain(self) -> Any:
        """The Brain of this folder, made once and reused by every request."""
        with self._lock:
            if self._brain is None:
                from .api import Brain

                self._brain = Brain(self.root, self.config)
            return self._brain

    def warm(self) -> None:
        """Load the query encoder and the vectors now, so the first real search is as fast as the rest."""
        try:
            self.search("warm up", limit=1)
        except BrainError as exc:
            _log(f"[{self.name}] not warmed up: {exc}")

    # ------------------------------------------------------------ requests

    def run(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        """Operation `name` (see operations) with `params` already validated by the door → its JSON dict.

        Paths a client sends are checked first: a note's path must name a note inside the
        folder, a folder filter must stay inside it.
        """
        from .operations import operation

        op = operation(name)
        params = dict(params)
        settings = self.brain.settings
        field_name = None
        if name in ("get", "links", "related"):
            params["path"] = note_path(settings, params["path"])
            field_name = "path"
        elif name == "grep" and params.get("path") is not None and params["path"].strip():
            params["path"] = _note_or_folder(settings, params["path"])
            field_name = "path"
        lock = self._lock if op.read_only else self._write_lock
        if name in LOCATED:
            return without_location(self._call(op, params, lock, field_name), Path(self.root).resolve())
        return self._call(op, params, lock, field_name)

    def _call(self, op: Any, params: dict[str, Any], lock: Any, field_name: str | None) -> Any:
        with lock, _not_indexed_is_not_found(field_name or "path"):
            try:
                return _as_dict(getattr(self.brain, op.method)(**params))
            except Exception as exc:
                known = user_error(exc)
                if not isinstance(known, Unavailable):
                    raise
                # The connection this corpus held died with its server (a restart): drop it, and ask a
                # read once more on a new one, so the first request after a restart is answered, not a 500.
                self.brain.close()
                if not op.read_only:
                    raise known from None
            try:
                return _as_dict(getattr(self.brain, op.method)(**params))
            except Exception as exc:
                known = user_error(exc)
                if isinstance(known, Unavailable):
                    self.brain.close()
                    raise known from None
                raise

    def search(self, query: str, **params: Any) -> dict[str, Any]:
        """`run("search", …)` with the defaults filled in: what the warm-up and the tests call."""
        from .operations import operation

        return self.run("search", {**operation("search").defaults, **params, "query": query})

    def describe(self) -> dict[str, Any]:
        """What a client may know of this corpus: its name (no index access).

        Never its folder or database: servers do not tell clients where the notes are on this machine.
        """
        return {"name": self.name}


class Corpora:
    """The notes folders one server serves, by name; one of them is the default."""

    def __init__(self) -> None:
        self.by_name: dict[str, ServedCorpus] = {}
        self.default_name: str | None = None

    def add(self, name: str, root: str | Path, config: str | None = None, *, default: bool = False) -> ServedCorpus:
        """Serve the notes folder `root` as `name` (checked now, so a typo stops the server before it starts)."""
        from .config import find_root

        if not CORPUS_NAME.fullmatch(name):
            raise BrainError(f"corpus name {name!r} must be letters, digits, '-', '_' or '.'", usage=True)
        if name in self.by_name:
            raise BrainError(f"corpus {name!r} is given twice; give each folder its own name", usage=True)
        folder = find_root(str(root))
        corpus = ServedCorpus(name=name, root=folder, config=config)
        corpus.brain  # loads the settings now: a bad brain.toml fails at start, not at the first request
        self.by_name[name] = corpus
        if default or self.default_name is None:
            self.default_name = name
        return corpus

    @property
    def default(self) -> ServedCorpus:
        if self.default_name is None:
            raise BrainError("no notes folder to serve; pass --root or --corpus NAME=PATH", usage=True)
        return self.by_name[self.default_name]

    def get(self, name: str) -> ServedCorpus:
        """The corpus called `name`, or a BrainError listing the ones there are."""
        corpus = self.by_name.get(name)
        if corpus is None:
            raise NoteNotFound(f"no corpus named {name!r}; served: {', '.join(sorted(self.by_name))}", field="corpus")
        return corpus

    def warm(self) -> None:
        """Warm every corpus (query encoder, vectors)."""
        single_thread_blas()
        for corpus in self.by_name.values():
            corpus.warm()


def parse_corpus(text: str) -> tuple[str, str]:
    """`NAME=PATH` from the command line → (name, path)."""
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise BrainError(f"--corpus {text!r} is not NAME=PATH (e.g. --corpus work=~/work-notes)", usage=True)
    return name.strip(), path.strip()
