"""The one exception type a user can cause; front doors print its message as one line."""

from __future__ import annotations


class BrainError(Exception):
    """A problem the user can fix: bad input, bad config, missing model, unusable database.

    The message is a single line naming what was wrong and how to fix it.
    """

    def __init__(self, message: str, *, usage: bool = False, field: str | None = None) -> None:
        super().__init__(message)
        self.usage = usage  # True: a bad flag or argument (exit code 2)
        self.field = field  # the input it is about (`offset`, `excerpt_chars`…), named in HTTP's error body
