"""CLI = MCP = HTTP on the PostgreSQL store: the contract test of tests/test_one_report.py, the notes
pointed at the server."""

from __future__ import annotations

from pathlib import Path

import pytest

import test_one_report
from brain import Brain
from brain.config import load_settings
from brain.store import open_store
from live_servers import copy_notes


def test_cli_mcp_and_http_agree_on_postgres(
    indexed_example: Path, tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The servers run with no BRAIN_* variables (live_servers.brain_env), so the copy's own
    # brain.toml names the server, as a team's notes folder would.
    def copy_onto_server(source: Path, dest: Path) -> Path:
        notes = copy_notes(source, dest)
        config = notes / "brain.toml"
        config.write_text(f'store = "{store_url}"\n' + config.read_text(encoding="utf-8"), encoding="utf-8")
        Brain(notes).trust()  # a folder's own store takes effect once this machine's user approved it
        # The copy's SQLite index is what the test renames a file against: the server's corpus
        # starts equal to it, its vectors taken from that index's cache (nothing re-embedded).
        assert Brain(notes).index().chunks_embedded == 0
        return notes

    monkeypatch.setattr(test_one_report, "copy_notes", copy_onto_server)
    monkeypatch.delenv("BRAIN_STORE")  # the CLI subprocesses must find it in brain.toml too
    test_one_report.test_cli_mcp_and_http_agree(indexed_example, tmp_path)
    store = open_store(load_settings(tmp_path / "notes"))  # it was the server's corpus they all read
    try:
        assert store.path.startswith("postgresql://") and store.get_file("diary/maggio.md") is not None
    finally:
        store.close()
