"""Which files belong in the index, and their text.

Discovery walks the configured roots, skipping hidden entries, folders that
ignore rules exclude (never even walked) and files of other types. Ignore rules
are gitignore syntax: `.gitignore` (inside a git repository, plus
`.git/info/exclude`), `.brainignore` at any level, and the config's `ignore`
list. As in git, the deepest file with a matching pattern decides, and the
last matching pattern in it wins, so `!negation` works.

Extraction turns a file into text plus metadata: Markdown frontmatter becomes
metadata (and is blanked out so line numbers still match the file), PDFs keep
their page numbers, text in any encoding decodes.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import re
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from .config import Settings
from .errors import BrainError, PathRefused
from .links import Link, extract_links

IGNORE_FILES = (".gitignore", ".brainignore")
MARKDOWN_EXTENSIONS = (".md", ".markdown")


@dataclass(frozen=True)
class SourceFile:
    """A file that belongs in the index."""

    path: Path  # absolute
    rel: str  # relative to the notes root, forward slashes
    size: int
    mtime_ns: int


@dataclass
class Discovery:
    """What a walk found: files that belong, and files it skipped with a reason."""

    files: list[SourceFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # Note-named paths brain will not read (a symlink out of the roots, to a hidden or ignored
    # file, or in a loop; a FIFO, socket or device): (path, reason).
    refused: list[tuple[str, str]] = field(default_factory=list)
    # Folders (or entries) the walk could not look into, with the reason: what the index
    # holds under them is unknown, not gone, and must be kept (and reported), never removed.
    unlisted: list[tuple[str, str]] = field(default_factory=list)

    def hides(self, rel: str) -> str | None:
        """The reason `rel` (a root-relative path) could not be seen by the walk, or None if it could."""
        for where, reason in self.unlisted:
            if where == "." or rel == where or rel.startswith(where + "/"):
                return f"{where} cannot be read ({reason}); kept in the index as it was: make it readable"
        return None


@dataclass
class ExtractedText:
    """A file's text (line numbers match the file on disk), metadata and page map."""

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    # For PDFs: the 1-based line on which each page starts, in page order.
    page_starts: list[int] = field(default_factory=list)
    # For PDFs that declare them: each page's printed label ("xlv", "47"), in page order; else empty.
    page_labels: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    title: str = ""  # note_title(): frontmatter title, else first H1, else the file name made readable
    links: list[Link] = field(default_factory=list)  # a note's outgoing links as written (links.extract_links)


class ExtractionError(Exception):
    """A file that cannot be read as text; the message is the reason shown in the scan report.

    `lasting` is False for a failure the same bytes may not meet again (a PDF that ran out
    of processor time): such a file is not one that cannot be indexed, it is one to retry.
    """

    def __init__(self, message: str, *, lasting: bool = True) -> None:
        super().__init__(message)
        self.lasting = lasting


class NoteRefused(ExtractionError):
    """A path brain will not read: it leads outside the roots, into a hidden or ignored file, a loop or a
    special file."""


LOOP_REASON = "symlink loop (the links point at each other); fix or remove the link"


class Refused(str):
    """`source_for`'s reason for a note-named path it will not read (a symlink out, a FIFO…).

    Still a str for every caller; the hooks and the watcher pass such paths on
    so the scan report says why they were refused (and an indexed copy leaves).
    """


# ---------------------------------------------------------------- ignore rules


@dataclass
class _IgnoreLevel:
    base: Path  # folder the patterns are relative to
    spec: Any  # pathspec.GitIgnoreSpec


def _compile(lines: list[str], source: str) -> Any:
    import pathspec

    for number, line in enumerate(lines, 1):
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except Exception as exc:  # pathspec raises GitWildMatchPatternError or ValueError
            raise BrainError(f"{source}:{number}: invalid ignore pattern {line.strip()!r} ({exc})") from None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _read_ignore_file(path: Path) -> Any | None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return _compile(lines, str(path))


def find_git_dir(start: Path) -> Path | None:
    """The top-level folder of the git work tree holding `start`, if any."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


class IgnoreRules:
    """Gitignore-style rules gathered from every level between a root and a folder."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.git_top = find_git_dir(settings.root)
        self._levels: dict[Path, list[_IgnoreLevel]] = {}
        self.base_levels: list[_IgnoreLevel] = []
        config_patterns = settings["ignore"]
        if config_patterns:
            origin = settings.origins.get("ignore", "config")
            self.base_levels.append(_IgnoreLevel(settings.root, _compile(config_patterns, f"{origin} ignore")))
        if self.git_top is not None:
            exclude = self.git_top / ".git" / "info" / "exclude"
            if exclude.is_file():
                spec = _read_ignore_file(exclude)
                if spec is not None:
                    self.base_levels.insert(0, _IgnoreLevel(self.git_top, spec))

    def levels_for(self, folder: Path) -> list[_IgnoreLevel]:
        """Ignore levels that apply inside `folder`, outermost first (cached per folder)."""
        if folder in self._levels:
            return self._levels[folder]
        parent = folder.parent
        top = self.git_top if self.git_top is not None else self.settings.root
        inside = folder == top or top in folder.parents
        levels = (
            list(self.levels_for(parent)) if inside and folder != top and parent != folder else list(self.base_levels)
        )
        for name in IGNORE_FILES:
            if name == ".gitignore" and self.git_top is None:
                continue
            candidate = folder / name
            if candidate.is_file():
                spec = _read_ignore_file(candidate)
                if spec is not None:
                    levels.append(_IgnoreLevel(folder, spec))
        self._levels[folder] = levels
        return levels

    def is_ignored(self, path: Path, is_dir: bool) -> bool:
        """True when the deepest rule that speaks about `path` excludes it."""
        verdict = False
        for level in self.levels_for(path.parent):
            try:
                rel = path.relative_to(level.base).as_posix()
            except ValueError:
                continue
            if is_dir:
                rel += "/"
            result = level.spec.check_file(rel)
            if result.include is not None:
                verdict = bool(result.include)
        return verdict


# ---------------------------------------------------------------- discovery


def relative_name(settings: Settings, path: Path) -> str:
    """`path` relative to the notes root, with forward slashes."""
    return path.relative_to(settings.root).as_posix()


def _is_hidden(name: str) -> bool:
    return name.startswith(".")


def discover(settings: Settings) -> Discovery:
    """Every file under the roots that belongs in the index. Raises BrainError on a bad ignore pattern."""
    rules = IgnoreRules(settings)
    found = Discovery()
    seen: set[str] = set()
    extensions = settings.extensions
    db_dir = settings.database_path.parent.resolve()
    for root in settings.root_dirs:
        if not root.is_dir():
            raise BrainError(f"root {root} in settings is not a folder; fix `roots` in brain.toml")
        if root != settings.root and settings.root not in root.parents:
            raise BrainError(f"root {root} is outside the notes root {settings.root}; list folders inside it")
        for entry in _walk(root, rules, db_dir, found):
            if entry.rel in seen:
                continue
            if not entry.path.name.lower().endswith(extensions):
                continue
            seen.add(entry.rel)
            found.files.append(entry)
    found.files.sort(key=lambda f: f.rel)
    return found


def _walk(folder: Path, rules: IgnoreRules, db_dir: Path, found: Discovery) -> Iterator[SourceFile]:
    settings = rules.settings
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        where = relative_name(settings, folder) or "."
        found.skipped.append((where, f"cannot list folder: {exc.strerror}"))
        found.unlisted.append((where, str(exc.strerror or exc).lower()))
        return
    for entry in entries:
        if _is_hidden(entry.name):
            continue
        path = Path(entry.path)
        if not utf8_name(entry.name):
            # The index names files in UTF-8: such a name cannot be stored (it stopped the whole run).
            found.refused.append((shown_path(relative_name(settings, path)), BAD_NAME_REASON))
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                if path == db_dir or rules.is_ignored(path, is_dir=True):
                    continue
                yield from _walk(path, rules, db_dir, found)
                continue
            if entry.is_symlink():
                # Symlinked files are read through when they land on a note inside the roots;
                # symlinked folders are not walked (no loops), and nothing outside leaks in.
                try:
                    note_target(settings, path, rules)
                except NoteRefused as exc:
                    if entry.name.lower().endswith(settings.extensions):
                        found.refused.append((relative_name(settings, path), str(exc)))
                    continue
            if rules.is_ignored(path, is_dir=False):
                continue
            info = entry.stat(follow_symlinks=True)
        except FileNotFoundError:
            continue  # gone during the walk (or a dangling link): truly not there
        except OSError as exc:
            # There, but cannot be looked at (e.g. a folder without search permission).
            found.unlisted.append((relative_name(settings, path), str(exc.strerror or exc).lower()))
            continue
        if not stat.S_ISREG(info.st_mode):
            if entry.name.lower().endswith(settings.extensions):
                found.refused.append((relative_name(settings, path), not_regular_reason(info.st_mode)))
            continue
        yield SourceFile(path=path, rel=relative_name(settings, path), size=info.st_size, mtime_ns=info.st_mtime_ns)


BAD_NAME_REASON = "its name is not valid UTF-8 (an old encoding?); rename it"


def utf8_name(name: str) -> bool:
    """True when a file name the OS gave is valid UTF-8 (Python keeps other bytes as lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_path(rel: str) -> str:
    """A path as reports may print and store it: bytes that are not UTF-8 written as \\xNN."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


MAX_NAME_BYTES = 255  # one file or folder name, as POSIX file systems allow
MAX_PATH_BYTES = 4000  # a whole path (PATH_MAX is 4096 on Linux)


def check_path_text(text: str, field: str = "path") -> None:
    """Refuse, before any file system call, a path the file system would choke on (PathRefused naming `field`)."""
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:
        raise PathRefused(f"path {ascii(text[:60])} is not valid Unicode (it has a lone surrogate); send UTF-8 text",
                          field=field) from None
    shown = ascii(text[:60]) + ("…" if len(text) > 60 else "")
    if len(encoded) > MAX_PATH_BYTES:
        raise PathRefused(f"path {shown} is {len(encoded):,} bytes, over the {MAX_PATH_BYTES:,}-byte limit; "
                          "give a note's path as search prints it", field=field)
    if any(len(part.encode("utf-8")) > MAX_NAME_BYTES for part in text.replace("\\", "/").split("/")):
        raise PathRefused(f"path {shown} has a name over {MAX_NAME_BYTES} bytes, longer than any file can have; "
                          "give a note's path as search prints it", field=field)


def path_filter(raw: str | None, field: str = "path", root: Path | None = None) -> str | None:
    """A search's path filter, checked: a folder (or note) relative to the notes folder, forward slashes,
    or None for all.

    It only narrows results, but a filter outside the notes folder (absolute, a
    drive, climbing out with `..`, or, given the `root`, a folder there that is
    a link leading out) can never match, so it is refused plainly rather than
    answered with silence, as grep refuses it. Every door gets this check from the core.
    """
    if raw is None or not raw.strip():
        return None
    check_path_text(raw.strip(), field)
    unified = raw.strip().replace("\\", "/")
    if unified.startswith("/") or re.match(r"^[A-Za-z]:", unified) or ".." in unified.split("/"):
        raise PathRefused(f"path filter {raw!r} must be relative to the notes folder, without '..'", field=field)
    parts = [part for part in unified.split("/") if part not in ("", ".")]
    if not parts:
        return None  # ".", "./" and "" all mean the whole folder
    if root is not None:
        candidate = Path(root).joinpath(*parts)
        real = Path(os.path.realpath(candidate))
        inside = Path(os.path.realpath(root))
        if os.path.lexists(candidate) and real != inside and inside not in real.parents:
            raise PathRefused(
                f"path filter {raw!r} leads outside the notes folder (a link out); it cannot match", field=field
            )
    return "/".join(parts)


def under_filter(rel: str, folder: str) -> bool:
    """True when the indexed path `rel` is the note `folder` names or lies inside that folder
    (not `appunt` for `appunti/`)."""
    return rel == folder or rel.startswith(folder + "/")


def source_for(settings: Settings, raw: str | Path) -> SourceFile | str:
    """The SourceFile for one path given by a person, or the reason it does not belong.

    A path that no longer exists (or is now a folder) but sits inside a root comes
    back as a SourceFile with size -1, so the caller can remove it from the index.
    """
    path = Path(os.path.expanduser(str(raw)))
    if not path.is_absolute():
        path = Path.cwd() / path
    path = Path(os.path.normpath(path))
    try:
        rel = path.relative_to(settings.root).as_posix()
    except ValueError:
        return f"{raw}: outside the notes root {settings.root}"
    if not any(path == r or r in path.parents for r in settings.root_dirs):
        return f"{raw}: outside the configured roots"
    inner = path.relative_to(settings.root).parts
    if any(_is_hidden(part) for part in inner):
        return f"{raw}: hidden files and folders are not indexed"
    if not path.name.lower().endswith(settings.extensions):
        return f"{raw}: not a note type ({', '.join(settings.extensions)})"
    if not utf8_name(str(path)):
        return Refused(f"{shown_path(str(raw))}: {BAD_NAME_REASON}")  # reported, like the walk does
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        info = None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Refused(f"{raw}: {LOOP_REASON}")
        # Unreadable is not gone: the caller keeps what the index holds and reports why.
        return f"{raw}: cannot read: {str(exc.strerror or exc).lower()}"
    if info is None or stat.S_ISDIR(info.st_mode):
        # A folder where a note was (`a.md/` replacing `a.md`) means that note is gone:
        # its row must leave the index, or search would go on quoting text that no longer exists.
        return SourceFile(path=path, rel=rel, size=-1, mtime_ns=0)
    rules = IgnoreRules(settings)
    try:
        note_target(settings, path, rules)
    except FileNotFoundError:
        return SourceFile(path=path, rel=rel, size=-1, mtime_ns=0)  # gone since the stat
    except NoteRefused as exc:
        return Refused(f"{raw}: {exc}")
    except OSError as exc:
        return f"{raw}: cannot read: {str(exc.strerror or exc).lower()}"
    folder = path.parent
    while folder != settings.root and settings.root in folder.parents:
        if rules.is_ignored(folder, is_dir=True):
            return f"{raw}: ignored by an ignore rule"
        folder = folder.parent
    if rules.is_ignored(path, is_dir=False):
        return f"{raw}: ignored by an ignore rule"
    if not stat.S_ISREG(info.st_mode):
        return Refused(f"{raw}: {not_regular_reason(info.st_mode)}")
    return SourceFile(path=path, rel=rel, size=info.st_size, mtime_ns=info.st_mtime_ns)


# ---------------------------------------------------------------- reading notes safely
#
# Every reader of a note goes through `read_note` (and `note_target`), at index
# time and at read time alike: a symlink committed upstream, or re-pointed after
# it was indexed, must not let a file from outside the notes in, and a FIFO or a
# device must not block or flood the process.


def stored_path_problem(rel: str) -> str | None:
    """Why a root-relative path taken from the index must not be joined to the root, or None when it is a plain one.

    The index is not trusted: a planted or committed database could name
    `/etc/passwd` or `../../secret`.
    """
    if not rel or "\x00" in rel:
        return "empty or contains a NUL byte"
    if rel.startswith("/") or os.path.isabs(rel):
        return "absolute"
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "not a plain relative path (empty, '.' or '..' parts)"
    if any(_is_hidden(part) for part in parts):
        return "hidden (.git/, .brain/…), which brain never indexes"
    return None


def note_target(settings: Settings, path: Path, rules: IgnoreRules | Callable[[], IgnoreRules] | None = None) -> Path:
    """The real file that `path` (a note path under the notes root) reads from, after every symlink.

    Raises NoteRefused when that file lies outside the configured roots, in a
    hidden folder (`.git/`, `.brain/`), is excluded by an ignore rule, or when
    the links loop; FileNotFoundError when nothing is there (a deleted note or
    a dangling link). `rules` (or a function giving them) is used only when a
    symlink needs checking.
    """
    if not _links_below_root(settings.root, path):
        return path  # no symlink on the way: `path` is already known to be under a root
    try:
        real = Path(os.path.realpath(path, strict=True))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NoteRefused(LOOP_REASON) from None
        raise
    if real == path:
        return real
    if not any(real == root or root in real.parents for root in settings.root_dirs):
        raise NoteRefused("symlink leads outside the notes roots; brain reads only files inside them")
    try:
        inner = real.relative_to(settings.root).parts
    except ValueError:
        raise NoteRefused("symlink leads outside the notes root; brain reads only files inside it") from None
    if any(_is_hidden(part) for part in inner):
        raise NoteRefused("symlink leads into a hidden file or folder; brain does not read those")
    rules = rules() if callable(rules) else rules or IgnoreRules(settings)
    folder = real.parent
    while folder != settings.root and settings.root in folder.parents:
        if rules.is_ignored(folder, is_dir=True):
            raise NoteRefused("symlink leads to an ignored file; brain does not read those")
        folder = folder.parent
    if real.is_file() and rules.is_ignored(real, is_dir=False):
        raise NoteRefused("symlink leads to an ignored file; brain does not read those")
    return real


def _links_below_root(root: Path, path: Path) -> bool:
    """True when a component of `path` below the (resolved) notes root is a symlink, or `path` is not plainly under it.

    One lstat per component below the root: far cheaper than resolving the
    whole path, and every note read pays it. Raises FileNotFoundError when a
    component is missing.
    """
    # Strings, not pathlib: this runs for every hit of every search.
    top, full = str(root), str(path)
    if not full.startswith(top + os.sep):
        return True
    parts = full[len(top) + 1 :].split(os.sep)
    if "" in parts or "." in parts or ".." in parts:
        return True
    current = top
    for part in parts:
        current += os.sep + part
        if stat.S_ISLNK(os.lstat(current).st_mode):
            return True
    return False


def not_regular_reason(mode: int) -> str:
    """The reason shown for a path that is not a regular file (a FIFO, a device…)."""
    kind = (
        "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket" if stat.S_ISSOCK(mode) else "a folder" if stat.S_ISDIR(mode) else "a special file"
    )
    return f"not a regular file ({kind}); brain reads only regular files"


def read_note(
    settings: Settings, path: Path, max_bytes: int, rules: IgnoreRules | Callable[[], IgnoreRules] | None = None
) -> bytes:
    """The bytes of the note at `path`, read safely: the one way every room reads a note.

    The path is resolved and must land inside the roots (`note_target`); only a
    regular file is opened, without blocking (a FIFO swapped in between the
    check and the open is seen by fstat and refused, never waited on), and at
    most `max_bytes` are read (a file that grows past the limit, or an endless
    one, fails with the limit as its reason). Raises ExtractionError (or its
    NoteRefused) with the reason, FileNotFoundError when the note is gone.
    """
    return read_target(settings, note_target(settings, path, rules), max_bytes)


def read_target(settings: Settings, real: Path, max_bytes: int) -> bytes:
    """`read_note` for a path `note_target` has already resolved and checked (saves resolving it twice)."""
    try:
        return _read_regular(settings, real, max_bytes)
    except FileNotFoundError:
        raise
    except PermissionError:
        raise ExtractionError("permission denied; make the file readable") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NoteRefused("became a symlink while being read; run the command again") from None
        raise ExtractionError(f"cannot read file: {exc.strerror or exc}") from None


def _too_big(size: float, max_bytes: int) -> ExtractionError:
    return ExtractionError(
        f"file is {size / 1e6:.1f} MB, over the {max_bytes / 1e6:g} MB limit; "
        "raise max_file_mb in brain.toml to index it"
    )


def _read_regular(settings: Settings, real: Path, max_bytes: int) -> bytes:
    info = os.stat(real, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        raise NoteRefused("became a symlink while being read; run the command again")
    if not stat.S_ISREG(info.st_mode):
        raise NoteRefused(not_regular_reason(info.st_mode))  # never opened: opening a device can have effects
    if info.st_size > max_bytes:
        raise _too_big(info.st_size, max_bytes)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(real, flags)
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise NoteRefused(not_regular_reason(opened.st_mode))
        if opened.st_size > max_bytes:
            raise _too_big(opened.st_size, max_bytes)
        _check_opened_inside(settings, fd)
        chunks: list[bytes] = []
        total = 0
        while True:
            block = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not block:
                break
            chunks.append(block)
            total += len(block)
            if total > max_bytes:
                raise _too_big(total, max_bytes)  # it grew while being read
        return b"".join(chunks)
    finally:
        os.close(fd)


def _check_opened_inside(settings: Settings, fd: int) -> None:
    """Where the open descriptor really points (Linux): a folder swapped for a link mid-check cannot lead out."""
    try:
        where = Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return  # no /proc (macOS): the checks before the open stand alone
    if where.is_absolute() and not any(where == r or r in where.parents for r in settings.root_dirs):
        raise NoteRefused("symlink leads outside the notes roots; brain reads only files inside them")


# ---------------------------------------------------------------- extraction


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# The start of a file that decides whether it is text: as much as git and file(1) look at.
BINARY_SNIFF_BYTES = 8192
# Text has almost no C0 control bytes besides whitespace and ESC (colour codes in logs);
# random or compressed bytes have about 11%. More than this share is binary.
BINARY_CONTROL_SHARE = 0.05
_TEXT_CONTROLS = frozenset(b"\t\n\x0b\x0c\r\x1b")
_CONTROL_BYTES = bytes(b for b in [*range(0x20), 0x7F] if b not in _TEXT_CONTROLS)


def _looks_binary(sample: bytes) -> bool:
    """True when `sample` (a file's first bytes) has a share of control bytes no text has."""
    if not sample:
        return False
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    return controls / len(sample) > BINARY_CONTROL_SHARE


def decode_text(data: bytes) -> str:
    """Bytes to text: BOMs honoured, UTF-8 first, then cp1252, then Latin-1 (never fails)."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    if b"\x00" in data[:8192]:
        raise ExtractionError("binary file (contains NUL bytes); remove it or add it to .brainignore")
    if _looks_binary(data[:BINARY_SNIFF_BYTES]):
        raise ExtractionError(
            "binary file (too many control bytes for text); remove it, add it to .brainignore, or save it as UTF-8 text"
        )
    for encoding in ("utf-8", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


# Bounds on frontmatter (YAML): a note's metadata is a few keys, and a hostile one
# (5,000 nested brackets, a "billion laughs" alias bomb) must not crash or exhaust
# a scan. Past a bound the metadata is ignored with a warning; the body is indexed.
FRONTMATTER_MAX_BYTES = 64_000
FRONTMATTER_MAX_DEPTH = 32
FRONTMATTER_MAX_ALIASES = 100
FRONTMATTER_MAX_EXPANDED = 256_000  # characters of scalars plus nodes, with every alias expanded


class _FrontmatterTooBig(Exception):
    """Frontmatter past one of the bounds; the message names which."""


def _yaml_loader() -> Any:
    """libyaml's parser when PyYAML has it (fast, and it refuses nesting past 1,000), else the pure-Python one."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _check_frontmatter(block: str) -> None:
    """Walk the YAML events once, stopping early, and refuse depth, aliases or expansion past the bounds.

    Events come lazily, so a 5,000-deep document stops at depth 33; each
    anchored node's expanded size is kept, so an alias counts as the whole
    subtree it stands for and a bomb is refused before anything is built.
    """
    import yaml

    size = len(block.encode("utf-8", "surrogatepass"))
    if size > FRONTMATTER_MAX_BYTES:
        raise _FrontmatterTooBig(f"frontmatter is {size:,} bytes, over the {FRONTMATTER_MAX_BYTES:,}-byte limit")
    anchored: dict[str, int] = {}
    open_nodes: list[list[Any]] = [[None, 0]]  # [anchor, expanded size so far] of each open collection
    aliases = 0

    def add(amount: int) -> None:
        open_nodes[-1][1] += amount
        if open_nodes[-1][1] > FRONTMATTER_MAX_EXPANDED:
            raise _FrontmatterTooBig(f"frontmatter expands past {FRONTMATTER_MAX_EXPANDED:,} characters (YAML aliases)")

    try:
        events = list(_bounded_events(block))
    except yaml.YAMLError as exc:
        if "nesting depth" in str(exc):  # libyaml's own bound (1,000) met before ours
            raise _FrontmatterTooBig(f"frontmatter nests deeper than {FRONTMATTER_MAX_DEPTH} levels") from None
        raise
    for event in events:
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            open_nodes.append([event.anchor, 1])
            if len(open_nodes) - 1 > FRONTMATTER_MAX_DEPTH:
                raise _FrontmatterTooBig(f"frontmatter nests deeper than {FRONTMATTER_MAX_DEPTH} levels")
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            anchor, total = open_nodes.pop()
            if anchor is not None:
                anchored[anchor] = total
            add(total)
        elif isinstance(event, yaml.ScalarEvent):
            total = 1 + len(event.value)
            if event.anchor is not None:
                anchored[event.anchor] = total
            add(total)
        elif isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > FRONTMATTER_MAX_ALIASES:
                raise _FrontmatterTooBig(f"frontmatter uses more than {FRONTMATTER_MAX_ALIASES} YAML aliases")
            add(anchored.get(event.anchor or "", 1))


def _bounded_events(block: str) -> Any:
    """YAML events of `block`, ending early once collections nest past the depth bound."""
    import yaml

    depth = 0
    for event in yaml.parse(block, Loader=_yaml_loader()):
        yield event
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > FRONTMATTER_MAX_DEPTH:
                return  # the walk below refuses it; the parser reads no further
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def _blank_frontmatter(text: str) -> tuple[str, str | None]:
    """The text with its opening frontmatter replaced by blank lines (so line numbers hold), and that block's
    YAML (None: the text opens with none)."""
    if not text.startswith("---\n"):
        return text, None
    end = text.find("\n---", 3)
    while end != -1 and text[end + 4 : end + 5] not in ("", "\n", " ", "\t"):
        end = text.find("\n---", end + 4)
    if end == -1:
        return text, None
    close = text.find("\n", end + 1)
    close = len(text) if close == -1 else close
    return "\n" * text[:close].count("\n") + text[close:], text[4 : end + 1]


def _split_frontmatter(text: str) -> tuple[str, dict[str, Any], list[str]]:
    """Frontmatter parsed to a dict and replaced by blank lines (so line numbers hold).

    Frontmatter past the bounds above, or that YAML cannot read, leaves the
    metadata empty and a warning naming why; the body is indexed all the same.
    """
    import yaml

    body, block = _blank_frontmatter(text)
    if block is None:
        return text, {}, []
    try:
        _check_frontmatter(block)
        data = yaml.load(block, Loader=yaml.SafeLoader)
    except _FrontmatterTooBig as exc:
        return body, {}, [f"{exc}; metadata ignored"]
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "parse error"
        return body, {}, [f"frontmatter is not valid YAML ({first}); metadata ignored"]
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        # The safe constructor raises these for values like `date: 2024-13-45`.
        return body, {}, [
            f"frontmatter has a value YAML cannot build ({type(exc).__name__}: {str(exc)[:120]}); metadata ignored"
        ]
    if data is None:
        return body, {}, []
    if not isinstance(data, dict):
        return body, {}, ["frontmatter is not a key: value mapping; metadata ignored"]
    return body, _json_safe(data), []


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_json_safe(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)  # dates and the like


# A leading date in a file name (2025-01-20-, 2025_01_20 , 20250120_) is when, not what: not part of the title.
_DATE_PREFIX = re.compile(r"^(?:\d{4}[-_.]\d{2}[-_.]\d{2}|\d{8})(?:[-_ .T]+|$)")
# Linear on any line: a lazy group before optional spaces and hashes took minutes on a
# heading padded with thousands of spaces (the closing hashes are stripped in note_title).
_H1 = re.compile(r"^#[ \t]+(\S.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
TITLE_MAX_CHARS = 200
META_TEXT_MAX_CHARS = 4000  # frontmatter words kept for the keyword index: bounds what each chunk repeats


def readable_name(name: str) -> str:
    """A file or folder name as words: no extension, no leading date, `-` and `_` as spaces.

    A name that is only a date (a diary's `2025-01-20.md`) keeps the date.
    """
    stem = name.rsplit("/", 1)[-1]
    if "." in stem[1:]:
        stem = stem[: stem.rindex(".")]
    undated = _DATE_PREFIX.sub("", stem)
    words = (undated or stem).replace("_", " ")
    words = words if not undated else words.replace("-", " ")
    return " ".join(words.split())


def readable_path(rel: str) -> str:
    """The folders and file name of a relative path, made readable
    (`projects/nexum/index.md` → `projects nexum index`)."""
    return " ".join(readable_name(part) for part in rel.split("/") if part)


def note_title(name: str, text: str, metadata: dict[str, Any]) -> str:
    """A note's title: frontmatter `title`, else its first H1 (outside fenced code), else its file name
    made readable."""
    given = metadata.get("title")
    if isinstance(given, (str, int, float)) and str(given).strip():
        return " ".join(str(given).split())[:TITLE_MAX_CHARS]
    if name.lower().endswith(MARKDOWN_EXTENSIONS):
        fence: str | None = None
        for line in text.split("\n"):
            opening = _FENCE.match(line)
            if opening:
                fence = None if fence == opening.group(1) else fence or opening.group(1)
                continue
            found = None if fence else _H1.match(line)
            if found:
                title = found.group(1).rstrip()
                bare = title.rstrip("#")  # closing hashes count only after a space (CommonMark)
                title = bare.rstrip() if bare and bare != title and bare[-1].isspace() else title
                return " ".join(title.split())[:TITLE_MAX_CHARS]
    return readable_name(name)[:TITLE_MAX_CHARS]


# Status values people write in frontmatter, and how they say them in words in English and Italian.
# A value equal to one of a group's words brings the whole group into the keyword index, so
# "siti dismessi" finds `status: archived` and "projects in development" finds `stato: in sviluppo`.
# Inflected forms are listed because a note is stemmed in one language only. Measured in
# docs/decisions/11-status-words.md; kept to statuses: a larger thesaurus would match what nobody meant.
STATUS_WORDS: tuple[tuple[str, ...], ...] = (
    ("archived", "archiviato", "archiviati", "dismesso", "dismessi", "chiuso", "chiusi", "closed", "retired"),
    ("active", "attivo", "attivi", "live"),
    ("development", "in development", "sviluppo", "in sviluppo"),
    ("maintenance", "manutenzione", "in manutenzione"),
    ("paused", "on hold", "sospeso", "sospesi"),
    ("done", "completed", "completato", "completati", "concluso", "conclusi"),
)
_STATUS_GROUP = {word: group for group in STATUS_WORDS for word in group}


def metadata_text(metadata: dict[str, Any]) -> str:
    """The frontmatter's values as words for the keyword index: lists joined, dates as text (so the year is a word).

    Keys are left out (every note with a `client` would match "client"); the
    title is left out too (it has its own field). A status value (STATUS_WORDS)
    brings its other words in both languages.
    """
    words: list[str] = []

    def add(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                add(item)
        elif isinstance(value, list):
            for item in value:
                add(item)
        elif value is not None and not isinstance(value, bool):
            text = str(value).lstrip("#")
            group = _STATUS_GROUP.get(text.strip().lower())
            words.append(" ".join(group) if group else text)

    for key, value in metadata.items():
        if key != "title":
            add(value)
    return " ".join(" ".join(words).split())[:META_TEXT_MAX_CHARS]


CARD_MAX_CHARS = 300  # of frontmatter the model reads: a few fields, not a page


def note_card(metadata: dict[str, Any]) -> str:
    """The frontmatter's text values as a line for the model to read (`description; aliases; client; sector…`).

    It leads the embedded text of a note's first chunk, so the vector half knows
    what a note's metadata says (a sector, a stack, a description) in words, as
    the keyword half does through metadata_text. Values in the file's order, lists
    joined with commas; the title (which leads every chunk already), numbers and
    booleans left out. Measured in docs/decisions/19-note-card.md.
    """
    values: list[str] = []

    def add(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                add(item)
        elif isinstance(value, list):
            items = [" ".join(item.split()) for item in value if isinstance(item, str) and item.strip()]
            if items:
                values.append(", ".join(items))
        elif isinstance(value, str) and value.strip():
            values.append(" ".join(value.split()))

    for key, value in metadata.items():
        if key != "title":
            add(value)
    return "; ".join(values)[:CARD_MAX_CHARS].strip()


# Bounds on the work one PDF may cost (pypdf read about 1 MB of page content a second
# here). A 50 KB file whose 300 pages all draw one 1 MB content stream took over
# 9 minutes, and `status` paid it again on every run. Past a bound the file fails
# with the reason; text PDFs of a thousand pages stay well inside all three.
PDF_MAX_PAGES = 5000
# page content once decompressed, summed over pages (a shared stream counts each time)
PDF_MAX_CONTENT_BYTES = 32_000_000
# Text extraction is bounded by the processor time of the thread doing it, never by the clock:
# on a machine at load 6 a 264-page book that needed 14-20 s of CPU under pypdf took over 60 s
# of wall time and failed. The bound grows with the pages (pdfium takes about 3 ms each for a
# text book here, pypdf took 60: docs/decisions/42-pdfium-text.md).
PDF_MIN_CPU_SECONDS = 60.0
PDF_CPU_SECONDS_PER_PAGE = 0.5
# What made a PDF's text: part of the index's identity, so a new extractor re-extracts every PDF.
PDF_TEXT_IDENTITY = "pypdfium2:1"
# pdfium marks a word it joined across a line-end hyphen with U+0002 ("Com\x02mons"): the word is
# whole again, which is what the keyword half needs.
_PDFIUM_HYPHEN = "\x02"
# pdfium is not thread-safe; a server extracts in several threads.
_PDFIUM_LOCK = threading.Lock()


def _content_streams(page: Any) -> Iterator[tuple[int, Any]]:
    """(a key naming the stream, the stream object) for each of one page's content streams."""
    from pypdf.generic import ArrayObject, IndirectObject

    contents = page.get("/Contents")
    if contents is None:
        return
    resolved = contents.get_object() if isinstance(contents, IndirectObject) else contents
    for part in list(resolved) if isinstance(resolved, ArrayObject) else [contents]:
        yield (part.idnum if isinstance(part, IndirectObject) else id(part)), part


def _stream_data(part: Any) -> bytes:
    stream = part.get_object()
    return stream.get_data() if hasattr(stream, "get_data") else b""


def _page_content_bytes(page: Any, sizes: dict[int, int]) -> int:
    """Decompressed bytes of one page's content streams (each stream decoded once, by object number)."""
    total = 0
    for key, part in _content_streams(page):
        if key not in sizes:
            sizes[key] = len(_stream_data(part))
        total += sizes[key]
    return total


def _check_pdf_bounds(data: bytes) -> int:
    """The PDF's page count, after the checks that need no text: encrypted, too many pages, too much content.

    pypdf reads the structure (about 0.2 s for a 300-page book) so that a hostile file fails
    here, before pdfium, which cannot be stopped inside a page, decompresses anything.
    """
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        try:
            if not reader.decrypt(""):
                raise ExtractionError("encrypted PDF (needs a password); save an unencrypted copy")
        except ExtractionError:
            raise
        except Exception:
            raise ExtractionError("encrypted PDF (needs a password); save an unencrypted copy") from None
    count = len(reader.pages)
    if count > PDF_MAX_PAGES:
        raise ExtractionError(f"PDF has {count:,} pages, over the {PDF_MAX_PAGES:,}-page limit; split it into parts")
    sizes: dict[int, int] = {}
    content = 0
    for page in reader.pages:
        content += _page_content_bytes(page, sizes)
        if content > PDF_MAX_CONTENT_BYTES:
            raise ExtractionError(
                f"PDF page content is over the {PDF_MAX_CONTENT_BYTES / 1e6:g} MB limit once decompressed "
                "(pages repeating one huge stream?); split it or save it again as a plain PDF"
            )
    return count


PDF_MAX_NESTING = 1_000  # arrays within arrays in a content stream; real pages nest a few levels


def _nests_too_deeply(data: bytes) -> bool:
    """True when a page's content stream nests arrays over PDF_MAX_NESTING deep (read only for a PDF with no text,
    so the reason given is the right one; the streams' size was bounded by _check_pdf_bounds)."""
    from pypdf import PdfReader

    for page in PdfReader(io.BytesIO(data)).pages:
        for _, part in _content_streams(page):
            depth = 0
            for bracket in re.finditer(rb"[\[\]]", _stream_data(part)):
                depth += 1 if bracket.group() == b"[" else -1
                if depth > PDF_MAX_NESTING:
                    return True
    return False


class _PdfTooSlow(Exception):
    """Raised between pages once the time bound has passed."""


def _pdfium_pages(data: bytes, count: int) -> tuple[list[str], list[str]]:
    """Each page's text and label with pdfium, within the processor-time bound for `count` pages."""
    import time

    import pypdfium2

    allowed = max(PDF_MIN_CPU_SECONDS, PDF_CPU_SECONDS_PER_PAGE * count)
    # thread_time: this thread's CPU seconds (pdfium runs on it), which other work on the machine does not add to.
    deadline = time.thread_time() + allowed
    with _PDFIUM_LOCK:
        document = pypdfium2.PdfDocument(data)
        try:
            texts: list[str] = []
            for index in range(len(document)):
                if time.thread_time() > deadline:
                    raise _PdfTooSlow(allowed)
                page = document[index]
                textpage = page.get_textpage()
                try:
                    # bounded, not range: full Unicode (get_text_range is limited to UCS-2)
                    texts.append(textpage.get_text_bounded().replace(_PDFIUM_HYPHEN, ""))
                finally:
                    textpage.close()
                    page.close()
            labels = [document.get_page_label(index) for index in range(len(document))]
        finally:
            document.close()
    # Labels only when the PDF declares some; a page without one shows its physical number.
    return texts, (labels if any(labels) else [])


def _extract_pdf(data: bytes) -> ExtractedText:
    try:
        count = _check_pdf_bounds(data)
        pages, labels = _pdfium_pages(data, count)
    except _PdfTooSlow as slow:
        raise ExtractionError(
            f"PDF text needed over {slow.args[0]:g} s of processor time to extract ({count:,} pages), far more "
            "than text pages take; the next `brain index` tries again; if it fails each time, its pages draw "
            "unusually heavy content: save it again as a plain PDF", lasting=False,
        ) from None
    except ExtractionError:
        raise
    except RecursionError:  # pypdf parses nested arrays and dictionaries by recursion
        raise ExtractionError(
            "PDF nests arrays or dictionaries too deeply to read (a damaged or hostile file); "
            "save it again as a plain PDF"
        ) from None
    except Exception as exc:  # pypdf and pdfium raise a wide range on damaged files (PdfReadError, PdfiumError…)
        raise ExtractionError(f"broken PDF ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not any(p.strip() for p in pages):
        if _nests_too_deeply(data):  # pdfium skips what it cannot read: the text may be inside the nesting
            raise ExtractionError(
                "PDF nests arrays or dictionaries too deeply to read (a damaged or hostile file); "
                "save it again as a plain PDF"
            )
        raise ExtractionError("PDF has no extractable text (scanned images?); run OCR on it first")
    lines: list[str] = []
    page_starts: list[int] = []
    for text in pages:
        page_starts.append(len(lines) + 1)
        lines.extend(_normalise_newlines(text).split("\n"))
    meta = {"pages": len(pages)}
    return ExtractedText(text="\n".join(lines), metadata=meta, page_starts=page_starts, page_labels=labels)


def extract_bytes(name: str, data: bytes, *, metadata: bool = True, links: bool = False) -> ExtractedText:
    """Text, metadata and page map of a file's bytes; raises ExtractionError with the reason.

    `metadata` False: the text and page map alone, as readers (search, grep, get, ask) need them, without
    parsing the frontmatter or finding the title. `links`: also the note's outgoing links (the indexer's).
    """
    lower = name.lower()
    if lower.endswith(".pdf"):
        extracted = _extract_pdf(data)
    else:
        text = _normalise_newlines(decode_text(data))
        if lower.endswith(MARKDOWN_EXTENSIONS):
            if metadata:
                body, meta, warnings = _split_frontmatter(text)
                extracted = ExtractedText(text=body, metadata=meta, warnings=warnings)
            else:
                extracted = ExtractedText(text=_blank_frontmatter(text)[0])
            if links:  # from the text as written: frontmatter values can name notes too
                extracted.links = extract_links(text.replace("\0", ""))
        else:
            extracted = ExtractedText(text=text)
    if metadata:
        extracted.title = note_title(name, extracted.text, extracted.metadata)
    return _without_nul(extracted)


def _without_nul(extracted: ExtractedText) -> ExtractedText:
    """The text, title and metadata with NUL characters left out (said in a warning).

    A NUL is never text, and PostgreSQL cannot store one: a NUL in a note's body,
    its frontmatter ("\\0") or a PDF's strings stopped every file of the run there.
    """
    nuls = extracted.text.count("\x00")
    if nuls:
        extracted.text = extracted.text.replace("\x00", "")
    if "\x00" in extracted.title:
        extracted.title = extracted.title.replace("\x00", "")
    cleaned = _drop_nul(extracted.metadata)
    if cleaned != extracted.metadata:
        extracted.metadata = cleaned
        nuls += 1
    if nuls:
        extracted.warnings.append("held NUL characters, left out of the index")
    return extracted


def _drop_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_drop_nul(k): _drop_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_drop_nul(v) for v in value]
    return value


def pages_for_lines(page_starts: list[int], start_line: int, end_line: int) -> list[int]:
    """1-based page numbers that lines start_line..end_line fall on."""
    if not page_starts:
        return []
    pages = []
    for index, first in enumerate(page_starts):
        last = page_starts[index + 1] - 1 if index + 1 < len(page_starts) else float("inf")
        if first <= end_line and last >= start_line:
            pages.append(index + 1)
    return pages


def page_labels_of(labels: list[str], pages: list[int]) -> list[str]:
    """The printed label of each 1-based page of `pages` (its number where the PDF gives it none);
    empty for a file without labels."""
    if not labels:
        return []
    return [labels[page - 1] or str(page) if 0 < page <= len(labels) else str(page) for page in pages]
