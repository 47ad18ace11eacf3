"""What git commits changed, catching the index up with them, and the hooks that do it.

The index remembers the last commit whose changes it holds (`Index.indexed_commit`).
A sync diffs that commit's tree against HEAD's tree with `git diff-tree -z -M -C`
and re-indexes just those notes, so a burst of commits, a pull, a rebase or an
amend all leave nothing behind, however many hook runs were skipped or merged.
The tree diff is valid between any two commits, ancestors or not (an amended or
rebased commit still has its tree); only a recorded commit that no longer exists
(pruned), no record at all, or changed ignore rules or settings fall back to a
full scan.

The hooks (`install_hooks` / `uninstall_hooks`) are tiny shell scripts that start
`python -m brain sync` detached and return at once; they are installed the way
pre-commit installs its own: a marker line identifies ours, a foreign hook is
kept as `<name>.legacy` and run first, `core.hooksPath` is honoured, and the
installing interpreter is written into the script.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import json
import os
import shlex
import site
import stat
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any, Sequence

from . import sources
from .config import INDEX_FOLDER, Settings, prepare_index_folder
from .embeddings import Embedder
from .errors import BrainError
from .indexer import Indexer, ScanReport, identity_mismatch, model_identity
from .store import index_exists, open_store, timestamp

# The hooks brain installs: every git command that moves HEAD or rewrites the work tree.
HOOK_NAMES = ("post-commit", "post-merge", "post-rewrite", "post-checkout")
# The line that marks a hook script as ours (install overwrites it, uninstall removes it).
HOOK_MARKER = "# brain-hook:"
HOOK_MODES = ("background", "sync")
_SETTINGS_START = "# --- settings"
_SETTINGS_END = "# --- end settings ---"
# Above this many changed paths one scan is cheaper than looking at each path.
MAX_NAMED_PATHS = 500
HOOK_LOG = "hook.log"
# The index's meta key for the commit each submodule had checked out at the last sync.
SUBMODULES_META = "submodule_heads"
HOOK_LOG_MAX_BYTES = 1_000_000


# ---------------------------------------------------------------- git


@dataclass(frozen=True)
class Change:
    """One path a diff reports: status letter (A M D T R C …), path, and for renames/copies where it came from."""

    status: str
    path: str
    old_path: str | None = None


def _git_env() -> dict[str, str]:
    # Hooks run with GIT_INDEX_FILE relative to the top folder; it would mislead git run elsewhere.
    env = dict(os.environ)
    for name in ("GIT_INDEX_FILE", "GIT_PREFIX"):
        env.pop(name, None)
    return env


def _git(top: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    try:
        out = subprocess.run(["git", *args], cwd=top, capture_output=True, env=_git_env(), timeout=120)
    except FileNotFoundError:
        raise BrainError("git is not installed or not on PATH; install git to sync with commits") from None
    except subprocess.TimeoutExpired:
        raise BrainError(f"`git {' '.join(args)}` in {top} took over 120 s; check the repository") from None
    if check and out.returncode != 0:
        message = out.stderr.decode("utf-8", "replace").strip().splitlines()
        raise BrainError(f"`git {' '.join(args)}` failed in {top}: {message[-1] if message else 'no message'}")
    return out


def git_top(path: Path) -> Path | None:
    """The top folder of the git work tree holding `path`, or None outside git (or in a bare repo)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=path, capture_output=True, env=_git_env(), timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = os.fsdecode(out.stdout.rstrip(b"\n"))
    return Path(text).resolve() if out.returncode == 0 and text else None


def current_head(settings: Settings) -> str | None:
    """HEAD of the git repository holding the notes, or None (no git, no commits)."""
    top = git_top(settings.root)
    return head_commit(top) if top is not None else None


def head_commit(top: Path) -> str | None:
    """The commit HEAD points at, or None before the first commit."""
    out = _git(top, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
    if out.returncode != 0:
        return None
    return out.stdout.decode().strip() or None


def commit_exists(top: Path, commit: str) -> bool:
    """True when `commit` names a commit object still in the repository."""
    return _git(top, "cat-file", "-e", f"{commit}^{{commit}}", check=False).returncode == 0


def is_ancestor(top: Path, older: str, newer: str) -> bool:
    """True when `older` is reachable from `newer` (plain history, no rewrite in between)."""
    return _git(top, "merge-base", "--is-ancestor", older, newer, check=False).returncode == 0


def commits_between(top: Path, older: str, newer: str) -> int:
    """How many commits `newer` has that `older` does not."""
    return int(_git(top, "rev-list", "--count", f"{older}..{newer}").stdout.decode().strip() or 0)


def parse_name_status(raw: bytes) -> list[Change]:
    """Parse `git diff-tree -z --name-status` output; paths are kept byte-exact (spaces, any script)."""
    fields = raw.split(b"\0")
    if fields and fields[-1] == b"":
        fields.pop()
    changes: list[Change] = []
    i = 0
    while i < len(fields):
        status = fields[i].decode("ascii", "replace")
        letter = status[:1]
        if letter in ("R", "C"):
            changes.append(Change(letter, os.fsdecode(fields[i + 2]), os.fsdecode(fields[i + 1])))
            i += 3
        else:
            changes.append(Change(letter, os.fsdecode(fields[i + 1])))
            i += 2
    return changes


_DIFF = ("diff-tree", "-r", "-z", "--name-status", "-M", "-C")


def range_changes(top: Path, old: str, new: str) -> list[Change]:
    """What differs between the trees of commits `old` and `new`, renames and copies found.

    Any two commits work, related or not: after an amend or a rebase the tree
    diff is exactly what the index has to catch up with.
    """
    return parse_name_status(_git(top, *_DIFF, old, new).stdout)


def commit_changes(top: Path, commit: str) -> list[Change]:
    """What one commit changed: against its first parent (so a merge shows what it brought in),
    everything for a root commit."""
    listing = _git(top, "rev-list", "--parents", "-n", "1", commit).stdout.decode().split()
    if len(listing) < 2:
        return parse_name_status(_git(top, *_DIFF, "--root", "--no-commit-id", commit).stdout)
    return range_changes(top, listing[1], listing[0])


def submodule_heads(top: Path) -> dict[str, str]:
    """The commit checked out in each submodule of the work tree at `top` (path → commit); {} without submodules.

    A submodule's notes change when its checked-out commit moves, which the
    superproject's tree diff shows only as one folder entry (a gitlink), never
    as the notes inside it.
    """
    if not (top / ".gitmodules").is_file():
        return {}  # the common case costs one stat
    out = _git(top, "config", "-z", "-f", ".gitmodules", "--get-regexp", r"^submodule\..*\.path$", check=False)
    heads: dict[str, str] = {}
    for entry in out.stdout.split(b"\0"):
        _, _, raw = entry.partition(b"\n")
        rel = os.fsdecode(raw).strip()
        if not rel or not (top / rel / ".git").exists():
            continue  # not checked out (`git submodule update` not run): nothing on disk to index
        head = head_commit(top / rel)
        if head is not None:
            heads[rel] = head
    return heads


def _note_submodules(settings: Settings, top: Path) -> dict[str, str]:
    """`submodule_heads`, only those inside the notes folder (a moved submodule elsewhere changes no note)."""
    root = settings.root
    return {
        rel: head for rel, head in submodule_heads(top).items() if (top / rel) == root or root in (top / rel).parents
    }


def _moved_submodules(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    return sorted(path for path in set(recorded) | set(current) if recorded.get(path) != current.get(path))


# ---------------------------------------------------------------- sync


@dataclass
class SyncReport:
    """What one sync did: the commits it covered, how (diff, scan, nothing) and why, and the scan report."""

    hook: str | None = None
    action: str = "none"  # "diff" | "scan" | "none" | "queued"
    reason: str = ""
    from_commit: str | None = None
    to_commit: str | None = None
    changed_paths: int = 0
    note_paths: int = 0
    scan: ScanReport | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """False when some file could not be indexed."""
        return self.scan is None or not self.scan.failed

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["scan"] = self.scan.to_dict() if self.scan is not None else None
        data["seconds"] = round(self.seconds, 3)
        data["ok"] = self.ok
        return data


def _claim_queue_slot(db_path: Path) -> IO[str] | None:
    """The one place in line for the writer lock, or None when another sync already holds it.

    A sync waiting in line reads HEAD only after it gets the lock, so it will
    cover every commit made before that: a second one waiting would add nothing.
    """
    import fcntl

    prepare_index_folder(db_path.parent)  # a hook's first sync may come before any index: `.brain/` ignores itself
    handle = open(db_path.with_name(db_path.name + ".sync-queue"), "a+")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def _release(slot: IO[str] | None) -> None:
    if slot is not None:
        import fcntl

        with contextlib.suppress(OSError):
            fcntl.flock(slot.fileno(), fcntl.LOCK_UN)
        slot.close()


def _scan_reason(settings: Settings, path: Path) -> str | None:
    """Why a change to `path` needs a full scan (ignore rules or settings changed), else None."""
    root, folder = settings.root, path.parent
    applies = folder == root or root in folder.parents or folder in root.parents
    if path.name in sources.IGNORE_FILES and applies:
        return f"{path.name} changed ({path}): ignore rules may take in or leave out other files"
    if settings.config_path is not None and path == settings.config_path:
        return f"settings changed ({path})"
    return None


def note_paths(settings: Settings, top: Path, changes: Sequence[Change]) -> tuple[list[Path], str | None]:
    """The changed paths that are (or were) notes, as absolute paths; or the reason a full scan is needed.

    A rename contributes both ends, so the indexer can move the file's row
    instead of re-embedding it; a copy contributes its new path.
    """
    picked: list[Path] = []
    for change in changes:
        rels = [change.path]
        if change.status == "R" and change.old_path is not None:
            rels.insert(0, change.old_path)
        for rel in rels:
            path = top / rel
            why = _scan_reason(settings, path)
            if why is not None:
                return [], why
            found = sources.source_for(settings, path)
            if not isinstance(found, str) or isinstance(found, sources.Refused):
                picked.append(path)  # a refused one is reported failed with its reason
    return picked, None


def sync(
    settings: Settings, embedder: Embedder | None = None, *, hook: str | None = None, queue: bool = False
) -> SyncReport:
    """Bring the index up to HEAD: re-index what changed since the last indexed commit.

    `queue`: if another sync is already waiting for the index, return at once
    (action "queued"): that one reads HEAD after it gets the lock and covers
    this commit too. Hooks use it so a burst of commits is a few runs, not one
    per commit.
    """
    started = time.monotonic()
    report = SyncReport(hook=hook)
    db_path = settings.database_path
    slot = _claim_queue_slot(db_path) if queue else None
    if queue and slot is None:
        report.action = "queued"
        report.reason = "another sync is waiting for the index and will include this"
        report.seconds = time.monotonic() - started
        return report
    indexer = Indexer(settings, embedder)
    try:
        with indexer.writing():
            _release(slot)
            slot = None
            _sync_locked(settings, indexer, report)
    finally:
        _release(slot)
    report.seconds = time.monotonic() - started
    return report


def _sync_locked(settings: Settings, indexer: Indexer, report: SyncReport) -> None:
    embedder = indexer.embedder
    top = git_top(settings.root)
    head = head_commit(top) if top is not None else None
    report.to_commit = head
    recorded: str | None = None
    mismatch: str | None = None
    recorded_subs: dict[str, str] = {}
    pending = 0
    if index_exists(settings):
        store = open_store(settings)
        try:
            pending = store.pending_count()
            recorded = store.indexed_commit()
            mismatch = identity_mismatch(store, model_identity(embedder, settings))
            with contextlib.suppress(ValueError, TypeError):
                recorded_subs = dict(json.loads(store.get_meta(SUBMODULES_META) or "{}"))
        finally:
            store.close()
    report.from_commit = recorded

    paths: list[Path] = []
    if top is None:
        report.action, report.reason = "scan", f"{settings.root} is not in a git work tree"
    elif head is None:
        report.action, report.reason = "scan", "nothing committed yet"
    elif mismatch is not None:
        report.action, report.reason = "scan", mismatch
    elif recorded is None:
        report.action, report.reason = "scan", "no indexed commit recorded yet"
    elif recorded == head:
        report.action, report.reason = "none", "the index already holds HEAD"
    elif not commit_exists(top, recorded):
        report.action, report.reason = "scan", f"the last indexed commit {recorded[:12]} is gone from the repository"
    else:
        changes = range_changes(top, recorded, head)
        report.changed_paths = len(changes)
        why: str | None
        if len(changes) > MAX_NAMED_PATHS:
            # One scan (a stat per file) beats looking at each of many paths.
            paths, why = [], f"{len(changes)} paths changed; one scan is quicker"
        else:
            paths, why = note_paths(settings, top, changes)
        report.note_paths = len(paths)
        history = "" if is_ancestor(top, recorded, head) else "; history rewritten or branch switched"
        changed = f"{len(changes)} changed path{'' if len(changes) == 1 else 's'}"
        if why is not None:
            report.action, report.reason = "scan", why
        elif not paths:
            report.action, report.reason = "none", f"{changed}, none of them notes{history}"
        else:
            report.action, report.reason = "diff", f"{changed}{history}"

    subs = _note_submodules(settings, top) if top is not None else {}
    moved = _moved_submodules(recorded_subs, subs)
    if moved and report.action in ("none", "diff"):
        # The notes inside a submodule changed with its commit: one scan (a stat per file) finds them.
        shown = ", ".join(moved[:3]) + (f" and {len(moved) - 3} more" if len(moved) > 3 else "")
        report.action, report.reason = "scan", f"submodule {shown} moved to another commit"

    if report.action == "scan":
        report.scan = indexer.scan()
    elif report.action == "diff":
        report.scan = indexer.reindex_paths(paths)  # it makes the vectors a stopped run left waiting too
    elif pending:
        # Nothing changed, but an index stopped (Ctrl-C, a kill) left chunks waiting for their vectors.
        report.scan = indexer.resume_vectors()
        report.reason += f"; made the {pending:,} vectors a stopped run left waiting"
    store = open_store(settings)
    try:
        if head is not None:
            store.record_indexed_commit(head)
        if subs or recorded_subs:
            store.set_meta({SUBMODULES_META: json.dumps(subs, sort_keys=True)})
        store.record_sync(_sync_record(report))
    finally:
        store.close()


def _sync_record(report: SyncReport) -> dict[str, Any]:
    counts = report.scan.counts() if report.scan is not None else {}
    return {
        "at": timestamp(),
        "hook": report.hook,
        "action": report.action,
        "reason": report.reason,
        "from": report.from_commit,
        "to": report.to_commit,
        "counts": counts,
        "failed": [f["path"] for f in report.scan.failed] if report.scan is not None else [],
    }


def rotate_log(path: Path, max_bytes: int = HOOK_LOG_MAX_BYTES) -> None:
    """Keep a log file bounded: past `max_bytes` it becomes `<name>.1` (one old copy kept)."""
    with contextlib.suppress(OSError):
        if path.stat().st_size > max_bytes:
            os.replace(path, path.with_name(path.name + ".1"))


# ---------------------------------------------------------------- hooks


@dataclass
class HookAction:
    """What install/uninstall did to one hook file."""

    hook: str
    path: str
    action: str  # installed | updated | unchanged | removed | restored | absent | not-ours
    legacy: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _repo_top(settings: Settings) -> Path:
    top = git_top(settings.root)
    if top is None:
        raise BrainError(f"{settings.root} is not inside a git work tree; run `git init` there first")
    return top


def hooks_dir(top: Path) -> Path:
    """Where git looks for hooks: core.hooksPath when set (relative to the top folder), else .git/hooks."""
    raw = os.fsdecode(_git(top, "rev-parse", "--git-path", "hooks").stdout.rstrip(b"\n"))
    path = Path(os.path.expanduser(raw))
    return path if path.is_absolute() else top / path


def is_our_hook(path: Path) -> bool:
    """True when the file at `path` is a hook script brain wrote (it carries the marker line)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return HOOK_MARKER.encode() in head


def hook_template() -> str:
    """The hook script as shipped (the same text as hooks/post-commit in the source tree)."""
    return (importlib.resources.files("brain") / "templates" / "git-hook").read_text(encoding="utf-8")


def _importable_without_path(package_parent: Path) -> bool:
    folders = set(site.getsitepackages()) | {site.getusersitepackages()}
    return any(Path(f).resolve() == package_parent for f in folders if f)


def render_hook(settings: Settings, top: Path, mode: str) -> str:
    """The hook script with this installation's interpreter, notes folder, settings file and mode written in."""
    if mode not in HOOK_MODES:
        raise BrainError(f"hook mode {mode!r} is not one of {', '.join(HOOK_MODES)}", usage=True)
    package_parent = Path(__file__).resolve().parent.parent
    notes = os.path.relpath(settings.root, top)
    config = ""
    if settings.config_path is not None and settings.config_path != settings.root / "brain.toml":
        config = str(settings.config_path.resolve())
    values = {
        "brain_python": sys.executable,
        # Set when brain runs from a source folder the interpreter would not find by itself.
        "brain_pythonpath": "" if _importable_without_path(package_parent) else str(package_parent),
        "brain_notes": Path(notes).as_posix(),
        "brain_config": config,
        "brain_mode": mode,
    }
    lines = hook_template().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(_SETTINGS_START))
    end = next(i for i, line in enumerate(lines) if line.startswith(_SETTINGS_END))
    body = [f"{key}={shlex.quote(value) if value else ''}\n" for key, value in values.items()]
    return "".join(lines[: start + 1] + body + lines[end:])


def _hook_setting(path: Path, key: str) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(key + "="):
            parts = shlex.split(line[len(key) + 1 :])
            return parts[0] if parts else ""
    return None


def _check_names(names: Sequence[str]) -> list[str]:
    unknown = [n for n in names if n not in HOOK_NAMES]
    if unknown:
        raise BrainError(f"unknown hook {unknown[0]!r}; brain installs {', '.join(HOOK_NAMES)}", usage=True)
    return list(names) or list(HOOK_NAMES)


def hook_targets(settings: Settings, top: Path) -> list[tuple[Path, Path]]:
    """(work tree, hooks folder) for the notes repository and each checked-out submodule inside the notes.

    A commit or checkout inside a submodule runs the submodule's hooks, not the
    superproject's: brain's hook there syncs the notes folder above it. A
    submodule sharing the superproject's hooks folder (a global core.hooksPath)
    is left out: one script cannot serve both.
    """
    targets = [(top, hooks_dir(top))]
    seen = {targets[0][1]}
    for rel in _note_submodules(settings, top):
        sub = top / rel
        folder = hooks_dir(sub)
        if folder not in seen:
            seen.add(folder)
            targets.append((sub, folder))
    return targets


def install_hooks(settings: Settings, *, mode: str = "background", names: Sequence[str] = ()) -> list[HookAction]:
    """Install brain's hooks into the notes repository and its checked-out submodules (idempotent).

    A foreign hook already there is kept as `<name>.legacy` and still runs,
    before brain's. Nothing is written if any hook cannot be installed cleanly.
    """
    top = _repo_top(settings)
    names = _check_names(names)
    targets = hook_targets(settings, top)
    # Check everything first: all hooks install, or none.
    for _, folder in targets:
        for name in names:
            path, legacy = folder / name, folder / f"{name}.legacy"
            if os.path.lexists(path) and not is_our_hook(path) and os.path.lexists(legacy):
                raise BrainError(
                    f"{path} and {legacy} both exist and neither is brain's; "
                    "merge them into one hook by hand, then install again"
                )
    actions: list[HookAction] = []
    for work_tree, folder in targets:
        actions.extend(_install_into(folder, render_hook(settings, work_tree, mode), names))
    # The hook acts only where `.brain/` exists, so a shared core.hooksPath leaves other repos alone.
    prepare_index_folder(settings.root / INDEX_FOLDER)
    return actions


def _install_into(folder: Path, script: str, names: Sequence[str]) -> list[HookAction]:
    folder.mkdir(parents=True, exist_ok=True)
    actions: list[HookAction] = []
    for name in names:
        path, legacy = folder / name, folder / f"{name}.legacy"
        kept: str | None = None
        if os.path.lexists(path) and not is_our_hook(path):
            os.replace(path, legacy)
            kept = str(legacy)
        if is_our_hook(path):
            action = "unchanged" if path.read_text(encoding="utf-8") == script else "updated"
        else:
            action = "installed"
        if action != "unchanged":
            tmp = path.with_name(f".{name}.brain-tmp")
            tmp.write_text(script, encoding="utf-8")
            os.chmod(tmp, 0o755)
            os.replace(tmp, path)
        actions.append(HookAction(name, str(path), action, kept or (str(legacy) if legacy.exists() else None)))
    return actions


def uninstall_hooks(settings: Settings, *, names: Sequence[str] = ()) -> list[HookAction]:
    """Remove brain's hooks (submodules' too) and put back the hooks they replaced; foreign hooks are left alone."""
    top = _repo_top(settings)
    actions: list[HookAction] = []
    names = _check_names(names)
    for _, folder in hook_targets(settings, top):
        actions.extend(_uninstall_from(folder, names))
    return actions


def _uninstall_from(folder: Path, names: Sequence[str]) -> list[HookAction]:
    actions: list[HookAction] = []
    for name in names:
        path, legacy = folder / name, folder / f"{name}.legacy"
        if not os.path.lexists(path):
            actions.append(HookAction(name, str(path), "absent", str(legacy) if legacy.exists() else None))
            continue
        if not is_our_hook(path):
            actions.append(HookAction(name, str(path), "not-ours"))
            continue
        os.remove(path)
        if os.path.lexists(legacy):
            os.replace(legacy, path)
            actions.append(HookAction(name, str(path), "restored", str(legacy)))
        else:
            actions.append(HookAction(name, str(path), "removed"))
    return actions


def hook_states(settings: Settings) -> list[dict[str, Any]]:
    """For `brain status`: each hook's file, whether it is brain's, its mode and interpreter, and a kept legacy hook."""
    top = git_top(settings.root)
    if top is None:
        return []
    try:
        folder = hooks_dir(top)
    except BrainError:
        return []
    states = []
    for name in HOOK_NAMES:
        path = folder / name
        ours = is_our_hook(path)
        python = _hook_setting(path, "brain_python") if ours else None
        states.append({
            "hook": name,
            "path": str(path),
            "installed": ours,
            "foreign": os.path.lexists(path) and not ours,
            "executable": ours and bool(path.stat().st_mode & stat.S_IXUSR),
            "mode": _hook_setting(path, "brain_mode") if ours else None,
            "interpreter": python,
            "interpreter_found": bool(python) and (not os.path.isabs(python or "") or os.access(python or "", os.X_OK)),
            "legacy": (folder / f"{name}.legacy").exists(),
        })
    return states

