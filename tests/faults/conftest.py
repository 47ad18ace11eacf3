"""The fault suite: every test under tests/faults carries the `faults` marker, and the
figures its trials record (runs, kills, intact) are printed at the end of the session."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_FIGURES = pytest.StashKey[list[str]]()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test in this folder `faults`, so `-m faults` selects the whole suite."""
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.faults)


@pytest.fixture
def fault_figures(request: pytest.FixtureRequest) -> list[str]:
    """A list a trial appends its one-line figures to; they are printed in the session summary."""
    return request.config.stash.setdefault(_FIGURES, [])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Print the trials' figures even under -q, where a test's own output is hidden."""
    lines = config.stash.get(_FIGURES, [])
    if lines:
        terminalreporter.section("fault trials")
        for line in lines:
            terminalreporter.write_line(line)
