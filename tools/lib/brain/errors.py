"""The one exception type a user can cause; front doors print its message as one line.

Each kind carries its own exit code and HTTP status, so the CLI, HTTP and MCP
map an error the same way without a table of their own (MCP has one form: a
tool error carrying the message).
"""

from __future__ import annotations

import re


class BrainError(Exception):
    """A problem the user can fix: bad input, bad config, missing model, unusable database.

    The message is a single line naming what was wrong and how to fix it.
    """

    def __init__(self, message: str, *, usage: bool = False, field: str | None = None) -> None:
        super().__init__(message)
        self.usage = usage  # True: a bad flag or argument (exit code 2)
        self.field = field  # the input it is about (`offset`, `excerpt_chars`…), named in HTTP's error body

    @property
    def exit_code(self) -> int:
        """The CLI's exit code: 2 for a bad flag or argument, 1 for anything else a user must fix."""
        return 2 if self.usage else 1

    @property
    def http_status(self) -> int:
        """HTTP's status: 400 for bad input, 409 for a state of the index or config that refuses the request."""
        return 400 if self.usage else 409


class PathRefused(BrainError):
    """A path a caller gave that would leave the notes folder (or names something not a note).

    Raised by the core for every door (the CLI exits 2, HTTP answers 403).
    """

    def __init__(self, message: str, *, field: str = "path") -> None:
        super().__init__(message, usage=True, field=field)

    http_status = 403


class NoteNotFound(BrainError):
    """A path inside the notes folder that is not a note on disk (or a corpus name that is not served)."""

    def __init__(self, message: str, *, field: str = "path") -> None:
        super().__init__(message, usage=True, field=field)

    http_status = 404


class Unavailable(BrainError):
    """A service the index lives on is not answering now (a PostgreSQL server down or restarting).

    HTTP answers 503, MCP an error result, the CLI exit 1; a server retries on a new connection next time.
    """

    http_status = 503


class MachineError(BrainError):
    """The machine refused (a full disk, a read-only index, a name too long): the request was fine, so HTTP says 503."""

    @property
    def http_status(self) -> int:
        return 400 if self.usage else 503


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during work whose outcome needs saying (a rebuild): the message says what is true afterwards."""


def failure_words(exc: BaseException) -> str:
    """Why an operation failed, in words a person reads in `brain status` (never a bare exception class name)."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    if isinstance(exc, SystemExit):
        return "stopped (the process was told to exit)"
    known = user_error(exc)
    if known is not None:
        return str(known)
    text = " ".join(str(exc).split())
    return text or f"failed unexpectedly ({type(exc).__name__}); see the log"


def user_error(exc: BaseException) -> BrainError | None:
    """The one-line BrainError for a failure of the machine a user can fix, or None for a bug.

    A full disk, a read-only index or file system, a name too long for the file
    system and text that is not valid Unicode reach brain as OSError,
    sqlite3.Error or UnicodeError from deep inside; every front door turns them
    into this one line (the CLI, HTTP and MCP alike) instead of a traceback.
    """
    import errno
    import sqlite3

    if isinstance(exc, BrainError):
        return exc
    if type(exc).__module__.startswith(("psycopg", "psycopg_pool")) and type(exc).__name__ in _SERVER_GONE:
        # Named, not imported: the PostgreSQL driver is an extra. libpq's lines name the host, never a password.
        why = " ".join(str(exc).split())[:200] or type(exc).__name__
        return Unavailable(f"the PostgreSQL server is not answering ({why}); start it or wait for it, then try again")
    if isinstance(exc, sqlite3.Error):
        text = str(exc).lower()
        if "full" in text:
            return MachineError("the disk holding the index is full; free some space and run it again")
        if "readonly" in text or "read-only" in text:
            return MachineError(
                "the index is read-only (its file, folder or disk cannot be written); make it writable, or only search"
            )
        if "disk i/o error" in text:
            return MachineError(
                "cannot write the index (disk I/O error); check that its disk is not full, read-only or failing"
            )
        return None
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        reason = {
            errno.ENOSPC: "the disk is full{where}; free some space and run it again",
            errno.EDQUOT: "the disk quota is used up{where}; free some space and run it again",
            errno.EFBIG: "a file grew past this system's file-size limit{where}; free space or raise the limit",
            errno.EROFS: "the disk is read-only{where}; make it writable, or only search",
            errno.ENAMETOOLONG: "a file name is too long for the file system{where}; use a shorter name",
            errno.EACCES: "permission denied{where}; make it readable and writable for this user",
            errno.EPERM: "operation not permitted{where}; make it writable for this user",
        }.get(exc.errno or 0)
        return MachineError(reason.format(where=where)) if reason else None
    if isinstance(exc, UnicodeError):
        return MachineError("text that is not valid Unicode (a lone surrogate?); send UTF-8 text", usage=True)
    return None


# psycopg's errors for a server that went away or cannot be reached (a restart, a stop, a network cut).
_SERVER_GONE = frozenset({"OperationalError", "InterfaceError", "PoolTimeout", "TooManyRequests", "AdminShutdown"})


def without_folder(message: str, folder: object) -> str:
    """`message` with the notes folder's absolute path shown as `<notes>` (servers never tell clients where it is)."""
    import os

    for shown in {str(folder), os.path.realpath(str(folder))}:
        if shown and shown not in ("/", "."):
            message = message.replace(shown, "<notes>")
    return " ".join(message.split("\n"))


# Characters that would let a file name rewrite the terminal or the line it is on:
# C0/C1 controls (newline, ESC…), lone surrogates, and the bidirectional controls
# that reorder what is shown ("evil\u202egnp.md" would read as "evilpng.md").
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def shown(text: str) -> str:
    """`text` (a file name, an error line) safe to print: control and bidi characters become escapes like \\n, \\u202e.

    Text views only; JSON keeps names exact.
    """
    return _UNSAFE.sub(
        lambda m: _NAMED.get(m.group())
        or (f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"),
        text,
    )
