"""The freshness tests on the PostgreSQL store: commits, renames, the hook, rebuilds during commits and
searches, every writer at once.

The tests themselves are SQLite's (tests/test_gitsync.py, test_hooks.py,
test_rebuild.py, test_concurrency.py), imported and run here with BRAIN_STORE
naming this test's corpus on the session's server, which every process they
start inherits (the hook's `brain sync`, the CLI, the watcher). Their helpers
that read the SQLite file directly are pointed at the store the settings name.
A representative set, not all: the rest exercise git and the file system, the
same code on both stores.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import test_concurrency
import test_gitsync
import test_rebuild
from brain.config import load_settings
from brain.store import open_store
from brain.store.postgres import split_location
from test_concurrency import test_concurrent_writers_leave_an_exact_index  # noqa: F401
from test_gitsync import (  # noqa: F401
    repo,
    test_add_edit_delete_in_one_commit,
    test_amend_is_caught_up_through_the_tree_diff,
    test_checkout_of_another_branch,
    test_merge_commit_against_first_parent,
    test_pure_rename_moves_the_row_and_embeds_nothing,
    test_rename_with_edits_replaces_the_old_path,
    test_twenty_commits_are_caught_up_by_one_sync,
)
from test_hooks import commits_during_a_rebuild
from test_rebuild import test_searches_during_a_rebuild_see_a_complete_index  # noqa: F401


def _store_of(root: Path):  # type: ignore[no-untyped-def]
    return open_store(load_settings(root), create=False)


def _indexed_paths(root: Path) -> dict[str, int]:
    store = _store_of(root)
    try:
        return {path: row.id for path, row in store.all_files().items()}
    finally:
        store.close()


def _file_count(root: Path) -> int:
    store = _store_of(root)
    try:
        return store.counts()["files"]
    finally:
        store.close()


@pytest.fixture(autouse=True)
def on_server(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every test here on this test's corpus; the helpers that open the SQLite file open the server's corpus instead."""
    monkeypatch.setattr(test_gitsync, "indexed_paths", _indexed_paths)
    monkeypatch.setattr(test_rebuild, "file_count", _file_count)
    monkeypatch.setattr(test_concurrency, "_indexed", lambda root: set(_indexed_paths(root)))
    yield store_url
    # It was the server they ran on: no process made an SQLite index, and `.brain/` stayed out of git.
    assert not list(tmp_path.rglob("brain.sqlite"))
    for ignore in tmp_path.rglob(".brain/.gitignore"):
        assert ignore.read_text(encoding="utf-8") == "*\n"


def _rebuild_schema_exists(url: str) -> bool:
    import psycopg

    conninfo, corpus = split_location(url)
    from brain.store.postgres import REBUILD_SUFFIX, schema_name

    with psycopg.connect(conninfo) as conn:
        return conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                            (schema_name(corpus or "") + REBUILD_SUFFIX,)).fetchone() is not None


def test_commits_through_the_hook_while_a_rebuild_runs(example_notes: Path, on_server: str) -> None:
    """test_hooks' burst of commits during `index --full`, waiting for the rebuild's schema (not its SQLite file)."""
    commits_during_a_rebuild(example_notes, 8, lambda: _rebuild_schema_exists(on_server))
