"""The writer locks: one writer of an index at a time, whichever process or machine it runs on; readers never wait."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import BrainError

# Locks this thread already holds, by lock file: a holder may re-enter (the git
# sync holds the lock while it reads HEAD and while the indexer writes).
_HELD = threading.local()


@contextlib.contextmanager
def writer_lock(
    db_path: Path, wait_seconds: float = 600.0, *,
    also: Callable[[float], contextlib.AbstractContextManager[Any]] | None = None
) -> Iterator[None]:
    """One writer at a time per database (hook, watcher, scheduler, CLI); readers never wait.

    Re-entrant within one thread; other threads and processes wait for it.
    `also(seconds left)`: a second lock the outermost holder takes inside this
    one (the server's, which writers on other machines share).
    """
    import fcntl

    lock_path = db_path.with_name(db_path.name + ".lock")
    held: dict[str, int] = _HELD.__dict__.setdefault("counts", {})
    key = os.path.abspath(lock_path)
    if held.get(key):
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    try:
        db_path.parent.mkdir(parents=True, exist_ok=True)  # the indexer made `.brain/` ignore itself first
        handle = open(lock_path, "a+")
    except OSError as exc:
        raise BrainError(
            f"cannot write beside the index at {db_path} ({exc.strerror}); "
            "check the folder's permissions or set `database`"
        ) from None
    deadline = time.monotonic() + wait_seconds
    try:
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise BrainError(
                        f"another brain process is writing {db_path} for over {wait_seconds:.0f}s; try again later"
                    ) from None
                time.sleep(0.1)
        held[key] = 1
        try:
            with also(max(0.0, deadline - time.monotonic())) if also else contextlib.nullcontext():
                yield
        finally:
            held.pop(key, None)
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()


@contextlib.contextmanager
def server_writer_lock(settings: Any, wait_seconds: float) -> Iterator[None]:
    """The writer lock a PostgreSQL corpus keeps on its server, shared by every machine that writes it;
    nothing for SQLite.

    The lock file beside `database` guards one machine; clones on several
    machines write one corpus, and a hook's write landing in the live schema
    while another machine's full rebuild fills the new one would be lost at the
    swap. So every writer of a corpus also holds this one.
    """
    location = str(settings.values.get("store") or "")
    if not location:
        yield
        return
    from .postgres.connection import corpus_writer_lock

    with corpus_writer_lock(location, settings.root.name, wait_seconds):
        yield
