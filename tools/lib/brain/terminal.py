"""Escapes for a person's terminal: clickable paths (OSC 8) and highlighted words, or nothing at all (pure).

Only the text view on a terminal gets them: `--json`, Markdown and anything
piped stay plain bytes, and NO_COLOR (https://no-color.org) or TERM=dumb turn
them off unless `--color always` asks. A terminal that does not know OSC 8
shows the path as plain text (the sequence is ignored, per its specification).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Sequence
from urllib.parse import quote

COLOR_CHOICES = ("auto", "always", "never")
# Bold yellow, ended without resetting the rest (a highlighted word inside bold text stays bold-free after).
_MARK, _UNMARK = "\x1b[1;33m", "\x1b[22;39m"
_OSC8 = "\x1b]8;;{uri}\x1b\\{text}\x1b]8;;\x1b\\"
# The folder Obsidian keeps in the root of every vault.
OBSIDIAN_FOLDER = ".obsidian"


def wants_escapes(color: str, stream: IO[str]) -> bool:
    """Whether to write escapes to `stream`: `always`, `never`, or (`auto`) a terminal with NO_COLOR unset."""
    if color == "always":
        return True
    if color == "never":
        return False
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@dataclass(frozen=True)
class Style:
    """How the text view marks a note's path and the words a query matched; `Style.plain()` marks nothing."""

    root: Path | None  # the notes root, for links (None: no links, no marks)

    @classmethod
    def plain(cls) -> Style:
        return cls(None)

    @property
    def on(self) -> bool:
        return self.root is not None

    def link(self, path: str, text: str) -> str:
        """`text` made a link to the note at `path` (relative to the root): obsidian:// in a vault, else file://."""
        if self.root is None:
            return text
        return _OSC8.format(uri=note_uri(self.root, path), text=text)

    def mark(self, text: str, spans: Sequence[tuple[int, int]]) -> str:
        """`text` with each (start, end) span highlighted."""
        if self.root is None or not spans:
            return text
        out, at = [], 0
        for start, end in spans:
            out.append(text[at:start] + _MARK + text[start:end] + _UNMARK)
            at = end
        return "".join(out) + text[at:]


def note_uri(root: Path, path: str) -> str:
    """The URI that opens a note: obsidian://open?vault=…&file=… when the root is a vault, else file://host/….

    No line number: OSC 8 has no standard for one, and a `file:line` or `#L12` suffix
    is a different, missing file to the terminals and openers that take the URI as it is.
    """
    if (root / OBSIDIAN_FOLDER).is_dir():
        return f"obsidian://open?vault={quote(root.name, safe='')}&file={quote(path, safe='')}"
    # OSC 8 asks for the host name, so a link printed over ssh is not opened on the wrong machine.
    absolute = (root / path).as_posix()
    absolute = absolute if absolute.startswith("/") else "/" + absolute  # C:/notes → /C:/notes
    return f"file://{quote(socket.gethostname(), safe='')}{quote(absolute)}"
