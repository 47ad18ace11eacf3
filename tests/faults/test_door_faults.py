"""Parameters at the doors: a real `brain serve` and `brain mcp` answer what the docs say, refuse what they should.

Reliability review round two, items 9 (`GET /status?verify=true`), 10 (no bound
on `excerpt_chars`) and 14 (`true` and `"5"` taken for numbers, `path_prefix "."`,
`d1.md/` served as `d1.md`, a linked-out `path_prefix` answered 200 by search
but 403 by grep). Real servers on loopback, real clients.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from brain import Brain
from helpers import write
from live_servers import HttpServer, http_server, mcp_session

pytestmark = pytest.mark.slow

NOTES = {
    "d1.md": "# Alpha\n\nalpha words for the first note\n",
    "sub/d2.md": "# Beta\n\nalpha and beta words\n",
    "subway/d3.md": "# Gamma\n\nalpha under another folder that starts like sub\n",
}


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("doors") / "notes"
    write(root, NOTES)
    outside = root.parent / "outside"
    write(outside, {"o.md": "# Outside\n\nalpha outside\n"})
    os.symlink(outside, root / "out")
    Brain(root).index()
    return root


@pytest.fixture(scope="module")
def server(notes: Path) -> Iterator[HttpServer]:
    with http_server("--root", str(notes)) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: HttpServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=120) as http:
        yield http


def test_status_takes_verify_in_its_query_string(client: httpx.Client) -> None:
    verified = client.get("/status", params={"verify": "true"})
    assert verified.status_code == 200, verified.text  # was 422 whatever was sent
    assert verified.json()["verified"] is True
    assert client.get("/status", params={"verify": "false"}).json()["verified"] is False
    bad = client.get("/status", params={"verify": "maybe"})
    assert bad.status_code == 422 and bad.json()["field"] == "verify"


@pytest.mark.parametrize(("body", "field"), [
    ({"query": "alpha", "limit": True}, "limit"),
    ({"query": "alpha", "limit": "5"}, "limit"),
    ({"query": "alpha", "vector_weight": "0.5"}, "vector_weight"),
    ({"query": "alpha", "chunks": 1}, "chunks"),
    ({"query": "alpha", "excerpt_chars": 10_000_000}, "excerpt_chars"),
])
def test_a_json_value_of_the_wrong_type_or_size_is_refused_naming_it(
    client: httpx.Client, body: dict, field: str
) -> None:
    answer = client.post("/search", json=body)
    assert answer.status_code == 422 and answer.json()["field"] == field, answer.text


def test_path_filters_name_folders_inside_the_notes(client: httpx.Client) -> None:
    def paths(prefix: str | None) -> list[str]:
        answer = client.post("/search", json={"query": "alpha", "mode": "bm25", "path_prefix": prefix})
        assert answer.status_code == 200, answer.text
        return sorted(hit["path"] for hit in answer.json()["results"])

    everything = paths(None)
    assert len(everything) == 3 and paths(".") == paths("./") == paths("") == everything  # "." gave nothing
    assert paths("sub") == paths("sub/") == ["sub/d2.md"]  # a folder, not a string prefix: subway/ stays out
    linked = client.post("/search", json={"query": "alpha", "path_prefix": "out"})
    grepped = client.post("/grep", json={"pattern": "alpha", "path": "out"})
    assert linked.status_code == grepped.status_code == 403, (linked.text, grepped.text)  # search said 200
    folder_slash = client.get("/file", params={"path": "d1.md/"})
    assert folder_slash.status_code == 403 and "names a folder" in folder_slash.json()["error"]  # was served as d1.md


def test_mcp_refuses_the_same_values(notes: Path) -> None:
    async def check() -> None:
        async with mcp_session("--root", str(notes)) as session:
            for arguments, field in (({"query": "alpha", "limit": "5"}, "limit"),
                                     ({"query": "alpha", "limit": True}, "limit"),
                                     ({"query": "alpha", "excerpt_chars": 10_000_000}, "excerpt_chars")):
                result = await session.call_tool("memory_search", arguments)
                assert result.is_error and field in result.content[0].text, result.content
            whole = await session.call_tool("memory_search", {"query": "alpha", "mode": "bm25", "path_prefix": "."})
            assert not whole.is_error and len(json.loads(whole.content[0].text)["results"]) == 3

    anyio.run(check)
