"""The `/memory-search` slash command for Claude Code: the packaged template and its installer.

The template ships inside the package (brain/templates/memory-search.md) so an
installed brain can always find it; the project's own
.claude/commands/memory-search.md is a copy a test keeps identical.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .errors import BrainError

COMMAND_NAME = "memory-search"
TARGET = Path(".claude") / "commands" / f"{COMMAND_NAME}.md"


@dataclass
class InstallResult:
    """Where the command went and what happened: created, unchanged or replaced."""

    path: str
    action: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "action": self.action}


def template_text() -> str:
    """The slash command exactly as packaged."""
    return resources.files("brain").joinpath("templates", f"{COMMAND_NAME}.md").read_text(encoding="utf-8")


def install(root: Path, *, force: bool = False) -> InstallResult:
    """Write the slash command into `root`/.claude/commands/; idempotent, never clobbers an edited copy.

    A different file already there stays untouched unless `force` (it may hold
    the person's own edits); the same file is left alone and reported unchanged.
    """
    text = template_text()
    target = root / TARGET
    action = "created"
    if target.is_symlink() or target.exists():
        if target.is_dir():
            raise BrainError(f"{target} is a folder; move it away to install the slash command")
        try:
            current = target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            current = None
        if current == text:
            return InstallResult(str(target), "unchanged")
        if not force:
            raise BrainError(
                f"{target} exists and differs from brain's slash command; "
                "keep it, or pass --force to replace it"
            )
        action = "replaced"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        if target.is_symlink():
            target.unlink()  # replace the link itself, never the file it points to
        os.replace(tmp, target)
    except OSError as exc:
        raise BrainError(f"cannot write {target}: {exc.strerror}; check the folder's permissions") from None
    return InstallResult(str(target), action)
