"""The PostgreSQL store's tests: the server (`pg_server`, `store_url`) is tests/conftest.py's, shared with
the fault suite."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test in this folder `postgres`, so `-m postgres` (or `-m "not postgres"`) selects them."""
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.postgres)
