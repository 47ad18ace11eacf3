"""Which values of a notes folder's own settings file this machine's user has approved.

A repository's brain.toml can be written by anyone who can commit to it, and a
hook reads it on every pull. The settings that send notes or credentials
somewhere (config.REACHING: the PostgreSQL server, the language model's endpoint,
model and key variable, an index file outside the notes folder) therefore take
effect from such a file only once this machine's user has approved that exact
value for that exact file. Approvals live in the user's own config folder
(`$XDG_CONFIG_HOME/brain/approved.json`, else `~/.config/brain/approved.json`),
never in the repository; a changed value is a new value and needs approving again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

APPROVALS_FILE = "approved.json"


def approvals_path() -> Path:
    """Where this user's approvals are kept: outside every notes folder."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "brain" / APPROVALS_FILE


def _file_key(config_path: Path) -> str:
    """An approval is for one settings file, named by its real path (a copy elsewhere is another file)."""
    return os.path.realpath(config_path)


def fingerprint(key: str, value: Any) -> str:
    """The approved value of `key`, as a hash: the exact value, typed, and nothing else."""
    return hashlib.sha256(json.dumps([key, value], sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def _read(path: Path) -> dict[str, dict[str, str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # none yet, or unreadable: nothing is approved, which is the safe reading
    if not isinstance(data, dict):
        return {}
    return {str(f): {str(k): str(v) for k, v in keys.items()} for f, keys in data.items() if isinstance(keys, dict)}


def is_approved(config_path: Path, key: str, value: Any) -> bool:
    """True when this user approved exactly `value` for `key` in the settings file at `config_path`."""
    return _read(approvals_path()).get(_file_key(config_path), {}).get(key) == fingerprint(key, value)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One writer of the approvals file at a time (two `brain trust` runs at once keep both)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def approve(config_path: Path, items: Mapping[str, Any]) -> Path:
    """Record that this user approves these values (key → value) of the settings file at `config_path`.

    Written to a temporary file and renamed over the old one, readable by this
    user only. Returns where the approvals are kept.
    """
    path = approvals_path()
    with _locked(path):
        data = _read(path)
        approved = data.setdefault(_file_key(config_path), {})
        for key, value in items.items():
            approved[key] = fingerprint(key, value)
        _write(path, data)
    return path


def revoke(config_path: Path) -> int:
    """Forget every approval of the settings file at `config_path`; returns how many there were."""
    path = approvals_path()
    with _locked(path):
        data = _read(path)
        gone = data.pop(_file_key(config_path), {})
        if gone:
            _write(path, data)
    return len(gone)


def _write(path: Path, data: dict[str, dict[str, str]]) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
    os.replace(tmp, path)
