"""One report: the CLI's --json, the MCP tools and the HTTP API return the same data for the same request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx

from conftest import run_cli, write
from live_servers import copy_notes, http_server, mcp_session


def without_timing(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "seconds"}


def test_cli_mcp_and_http_agree(indexed_example: Path, tmp_path: Path) -> None:
    notes = copy_notes(indexed_example, tmp_path / "notes")
    (notes / "diary" / "2024-05-02.md").rename(notes / "diary" / "maggio.md")
    write(notes, {"broken.pdf": b"%PDF-1.4 not really"})
    search = {"query": "certificato SSL nginx", "limit": 4, "mode": "hybrid", "where": [], "path": None}
    cli_args = ["search", "certificato SSL nginx", "-k", "4", "--mode", "hybrid", "--json"]

    # The scan that finds the move and the broken file runs once (through the CLI); the
    # next ones see the same folder, so all three front doors must report the same thing.
    first = run_cli("--root", str(notes), "index", "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["counts"]["moved"] == 1
    cli_scan = json.loads(run_cli("--root", str(notes), "index", "--json").stdout)
    cli_search = json.loads(run_cli("--root", str(notes), *cli_args).stdout)
    cli_error = run_cli("--root", str(notes), "search", "   ").stderr.strip()

    async def through_mcp() -> tuple[dict, dict, str]:
        async with mcp_session("--root", str(notes)) as session:
            scan = await session.call_tool("memory_scan", {})
            found = await session.call_tool("memory_search", search)
            bad = await session.call_tool("memory_search", {"query": "   "})
            assert bad.is_error
            return scan.structured_content, found.structured_content, bad.content[0].text

    mcp_scan, mcp_search, mcp_error = anyio.run(through_mcp)

    with http_server("--root", str(notes)) as server, httpx.Client(base_url=server.url, timeout=120) as http:
        http_scan = http.post("/scan").json()
        http_search = http.post("/search", json=search).json()
        http_error = http.post("/search", json={"query": "   "}).json()["error"]

    assert cli_search["results"], "the query finds something"
    assert without_timing(cli_search) == without_timing(mcp_search) == without_timing(http_search)
    assert cli_scan["failed"] == [{"path": "broken.pdf", "reason": cli_scan["failed"][0]["reason"]}]
    assert without_timing(cli_scan) == without_timing(mcp_scan) == without_timing(http_scan)
    message = cli_error.removeprefix("brain: ")
    assert message.startswith("empty query")
    assert mcp_error.endswith(message) and http_error == message
