"""The current extracted text of indexed files: which files come from the index, their text from disk.

Files are the truth and the index only points at them, so grep, get, ask and
search excerpts read every file again. Markdown and text are cheap to read;
PDFs are not (a few milliseconds per page, a second or more for a book), so the text of a
PDF is kept in the index by the sha-256 of its bytes and used while the file
on disk still has those bytes. A changed PDF is extracted again.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from . import sources
from .config import Settings
from .errors import BrainError
from .store import FileRow, Index




class TextUnavailable(Exception):
    """An indexed file whose text cannot be read now; the message says why."""


class FileGone(TextUnavailable):
    """An indexed file that is no longer on disk."""


class NotIndexed(BrainError):
    """A path a person gave that names no file in the index (new, ignored or mistyped)."""


@dataclass
class FileText:
    """The extracted text of one indexed file as it is on disk now."""

    path: str  # relative to the notes root, as the index stores it
    text: str
    page_starts: list[int] = field(default_factory=list)  # PDFs: first line of each page
    stale: bool = False  # the file changed since it was indexed
    page_labels: list[str] = field(default_factory=list)  # PDFs that declare them: each page's printed label

    @cached_property
    def utf8(self) -> bytes:
        """The text as UTF-8: the unit of grep offsets and get ranges."""
        return self.text.encode("utf-8", "surrogatepass")

    def pages_for_lines(self, start_line: int, end_line: int) -> list[int]:
        """1-based pages the lines fall on (empty for files without pages)."""
        return sources.pages_for_lines(self.page_starts, start_line, end_line)


class TextReader:
    """Reads indexed files' current text and resolves the paths people give."""

    def __init__(self, settings: Settings, store: Index) -> None:
        self.settings = settings
        self.store = store
        self.max_bytes = settings.max_file_bytes
        self._rules: sources.IgnoreRules | None = None  # built when a symlink first needs checking

    def _get_rules(self) -> sources.IgnoreRules:
        """The ignore rules a symlink's target is checked against (read once per reader)."""
        if self._rules is None:
            self._rules = sources.IgnoreRules(self.settings)
        return self._rules

    def files(self) -> list[FileRow]:
        """Every indexed file, by path."""
        return sorted(self.store.all_files().values(), key=lambda row: row.path)

    def read(self, row: FileRow) -> FileText:
        """The file's text now; raises TextUnavailable when it is gone or unreadable."""
        path, info = self._stat(row)
        unchanged = info.st_size == row.size and info.st_mtime_ns == row.mtime_ns
        if unchanged and self._is_pdf(row):
            kept = self.store.extracted_text(row.hash)
            if kept is not None:
                return FileText(row.path, kept.text, kept.page_starts, page_labels=kept.page_labels)
        data = self._bytes(path)
        digest = row.hash if unchanged and not self._is_pdf(row) else sources.content_hash(data)
        return self._extract(row, path, data, digest)

    def changed(self, row: FileRow) -> FileText | None:
        """None while the file still holds the indexed content; else its text now, marked stale.

        Costs one stat for an unchanged file (search checks every hit this way);
        a file touched but not changed costs a read and a hash. Raises FileGone
        or TextUnavailable like `read`.
        """
        path, info = self._stat(row)
        if info.st_size == row.size and info.st_mtime_ns == row.mtime_ns:
            return None
        data = self._bytes(path)
        digest = sources.content_hash(data)
        return None if digest == row.hash else self._extract(row, path, data, digest)

    @staticmethod
    def _is_pdf(row: FileRow) -> bool:
        return row.path.lower().endswith(".pdf")

    def _stat(self, row: FileRow) -> tuple[Path, os.stat_result]:
        """The note's real path (symlinks resolved) and its stat, after the checks every read makes.

        The index's paths are not trusted: each is checked before it is joined to the root.
        """
        problem = sources.stored_path_problem(row.path)
        if problem is not None:
            raise TextUnavailable(
                f"the index holds an unsafe path ({problem}); not read. Rebuild it with `brain index --full`"
            )
        path = self.settings.root / row.path
        try:
            real = sources.note_target(self.settings, path, self._get_rules)
            info = os.stat(real)
        except (FileNotFoundError, NotADirectoryError):
            raise FileGone("deleted since it was indexed; run `brain index`") from None
        except sources.ExtractionError as exc:
            raise TextUnavailable(str(exc)) from None
        except OSError as exc:
            # There but unreadable (a folder without permission): not gone, the index keeps its copy.
            raise TextUnavailable(f"cannot read: {str(exc.strerror or exc).lower()}") from None
        if stat.S_ISDIR(info.st_mode):
            # The note was replaced by a folder of its name: its indexed text exists nowhere now.
            raise FileGone("now a folder, no longer a note; run `brain index`")
        if not stat.S_ISREG(info.st_mode):
            raise TextUnavailable(sources.not_regular_reason(info.st_mode))
        return real, info

    def _bytes(self, real: Path) -> bytes:
        """The bytes of a note whose real path `_stat` resolved and checked."""
        try:
            return sources.read_target(self.settings, real, self.max_bytes)
        except FileNotFoundError:
            raise FileGone("deleted since it was indexed; run `brain index`") from None
        except sources.ExtractionError as exc:
            raise TextUnavailable(str(exc)) from None

    def _extract(self, row: FileRow, path: Path, data: bytes, digest: str) -> FileText:
        """The text of `data` (the file's bytes, hashing to `digest`); a PDF's is kept in the index by its hash."""
        is_pdf = self._is_pdf(row)
        if is_pdf:
            kept = self.store.extracted_text(digest)
            if kept is not None:
                return FileText(row.path, kept.text, kept.page_starts, digest != row.hash, kept.page_labels)
        try:
            # the link's name decides the type, as at index time
            extracted = sources.extract_bytes(Path(row.path).name, data, metadata=False)
        except sources.ExtractionError as exc:
            raise TextUnavailable(str(exc)) from None
        if is_pdf:
            try:
                self.store.save_extracted_text(digest, extracted.text, extracted.page_starts, extracted.page_labels)
            except sqlite3.Error:
                pass  # a read-only or busy index only costs extracting again next time
        return FileText(row.path, extracted.text, extracted.page_starts, digest != row.hash, extracted.page_labels)

    def resolve(self, raw: str) -> FileRow:
        """The indexed file a person means by `raw` (relative to the notes root, to the cwd, or absolute).

        Raises BrainError for paths outside the notes root and paths not in the index.
        """
        text = str(raw).strip()
        if not text:
            raise BrainError("empty path; give a file path as `brain search` prints it", usage=True)
        root = self.settings.root
        given = Path(os.path.expanduser(text))
        candidates: list[str] = []
        if given.is_absolute():
            rel = _inside(root, Path(os.path.normpath(given)))
            if rel is None:
                raise BrainError(f"{raw}: outside the notes root {root}; give a path inside it", usage=True)
            candidates.append(rel)
        else:
            plain = os.path.normpath(text.replace("\\", "/")).replace(os.sep, "/")
            if "\\" in text and os.sep == "/":
                # A backslash is part of a POSIX file name; as a separator only if no such note is indexed.
                literal = os.path.normpath(text)
                if literal != ".." and not literal.startswith("../"):
                    candidates.append(literal)
            if plain != ".." and not plain.startswith("../"):
                candidates.append(plain)
            from_cwd = _inside(root, Path(os.path.normpath(Path.cwd() / given)))
            if from_cwd is not None and from_cwd not in candidates:
                candidates.append(from_cwd)
            if not candidates:
                raise BrainError(f"{raw}: leaves the notes root {root}; give a path inside it", usage=True)
        for rel in candidates:
            row = self.store.get_file(rel)
            if row is not None:
                return row
        raise NotIndexed(
            f"{raw}: not in the index; check the path with `brain search`, or run `brain index` if the file is new"
        )

    def resolve_many(self, raw: str) -> tuple[list[FileRow], bool]:
        """The indexed file `raw` names (and True), or every indexed file under the folder it names (and False)."""
        try:
            return [self.resolve(raw)], True
        except BrainError as exc:
            if exc.usage:
                raise  # outside the notes root: no folder there either
            text = str(raw).strip()
            given = Path(os.path.expanduser(text))
            folder = _inside(self.settings.root, given) if given.is_absolute() else None
            if folder is None:
                folder = os.path.normpath(text.replace("\\", "/")).replace(os.sep, "/")
            inside = [row for row in self.files() if row.path.startswith(folder.rstrip("/") + "/")]
            if not inside:
                raise
            return inside, False


def page_ranges(pages: list[int]) -> str:
    """[1, 2, 3, 40] → "1-3, 40"."""
    runs: list[list[int]] = []
    for page in pages:
        if runs and runs[-1][1] + 1 == page:
            runs[-1][1] = page
        else:
            runs.append([page, page])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def labelled_pages(pages: list[int], labels: list[str]) -> str:
    """[11, 12, 40] with labels ["ix", "x", "28"] → "11-12 (printed ix-x), 40 (printed 28)"; without labels,
    or with labels equal to the numbers, as page_ranges: "11-12, 40"."""
    printed = dict(zip(pages, labels))
    if all(printed.get(page, str(page)) in ("", str(page)) for page in pages):
        return page_ranges(pages)
    shown = []
    for run in page_ranges(pages).split(", "):
        first, _, last = run.partition("-")
        names = [printed.get(int(n)) or n for n in (first, last) if n]
        shown.append(f"{run} (printed {'-'.join(names)})")
    return ", ".join(shown)


def _inside(root: Path, path: Path) -> str | None:
    """`path` relative to `root` with forward slashes, or None when it lies outside."""
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        try:
            rel = path.resolve().relative_to(root).as_posix()
        except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop
            return None
    return None if rel in ("", ".") else rel
