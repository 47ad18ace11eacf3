"""`brain mcp`: the SDK's own stdio client against the real server process."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from helpers import run_cli, write
from live_servers import copy_notes, mcp_session

TOOLS = {"memory_search", "memory_grep", "memory_get_file", "memory_links", "memory_related", "memory_ask",
         "memory_index", "memory_status", "memory_stats"}


def data(result: Any) -> dict[str, Any]:
    """The JSON a tool returned (structured content, which the text block repeats)."""
    assert not result.is_error, result.content
    text = json.loads(result.content[0].text)
    assert result.structured_content == text
    return text


def error_text(result: Any) -> str:
    assert result.is_error
    return result.content[0].text


@pytest.fixture
def notes(indexed_example: Path, tmp_path: Path) -> Path:
    return copy_notes(indexed_example, tmp_path / "notes")


@pytest.mark.slow
def test_tools_are_listed_with_descriptions_and_typed_parameters(indexed_example: Path) -> None:
    async def check() -> None:
        async with mcp_session("--root", str(indexed_example)) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(tools) == TOOLS
            for tool in tools.values():
                assert tool.description and len(tool.description) > 40
            search = tools["memory_search"].input_schema
            assert search["required"] == ["query"]
            props = search["properties"]
            assert props["query"]["type"] == "string" and props["query"]["description"]
            assert {"limit", "mode", "excerpt_chars", "where", "path_prefix"} <= set(props)
            assert {"hybrid", "bm25", "vector"} <= set(json.dumps(props["mode"]).replace('"', " ").split())
            assert set(tools["memory_grep"].input_schema["properties"]) >= {"pattern", "path", "context", "limit"}
            assert set(tools["memory_get_file"].input_schema["properties"]) >= {"path", "offset", "length"}
            assert tools["memory_search"].annotations.read_only_hint is True
            assert tools["memory_index"].annotations.read_only_hint is False
            assert tools["memory_ask"].annotations.open_world_hint is False  # no model set: nothing leaves

    anyio.run(check)


@pytest.mark.slow
def test_ask_is_marked_as_reaching_outside_when_a_remote_model_is_set(indexed_example: Path, tmp_path: Path) -> None:
    notes = copy_notes(indexed_example, tmp_path / "notes")

    async def hint(settings: str) -> Any:
        (notes / "brain.toml").write_text(settings, encoding="utf-8")
        assert run_cli("--root", str(notes), "trust", "--yes").returncode == 0  # a file's model is used once approved
        async with mcp_session("--root", str(notes)) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            return tools["memory_ask"].annotations.open_world_hint

    assert anyio.run(hint, '[ask]\nmodel = "gpt-4o-mini"\n') is True
    assert anyio.run(hint, '[ask]\nmodel = "llama3.2"\nbase_url = "http://localhost:11434/v1"\n') is False


def test_search_stays_warm_and_bad_calls_come_back_as_tool_errors(indexed_example: Path, tmp_path: Path) -> None:
    log = tmp_path / "mcp.log"

    async def check() -> None:
        async with mcp_session("--root", str(indexed_example), log=log) as session:
            found = data(await session.call_tool("memory_search", {"query": "progetti Laravel", "limit": 3}))
            assert found["query"] == "progetti Laravel" and found["mode"] == "hybrid"
            assert found["results"][0]["path"] == "database/projects/gengle/index.md"
            assert len(found["results"]) == 3
            hit = found["results"][0]
            assert {"score", "vector_score", "keyword_score", "start_line", "end_line", "preview"} <= set(hit)

            only_diary = data(await session.call_tool(
                "memory_search", {"query": "nginx", "path_prefix": "diary/", "mode": "bm25"}
            ))
            assert only_diary["results"] and all(r["path"].startswith("diary/") for r in only_diary["results"])

            # A user's mistake: the CLI's one-line message, as a tool error; the server carries on.
            assert "empty query" in error_text(await session.call_tool("memory_search", {"query": "   "}))
            # An empty string too: the documented line, not the validator's "String should have at least 1 character".
            assert error_text(await session.call_tool("memory_search", {"query": ""})).endswith(
                "empty query; type some words to search for")
            assert "empty pattern" in error_text(await session.call_tool("memory_grep", {"pattern": ""}))
            assert "key=value" in error_text(
                await session.call_tool("memory_search", {"query": "x", "where": ["oops"]})
            )
            # Argument errors: one line that starts with the field's name, no pydantic page of text or URL.
            for arguments, field in (({"query": "x", "limit": 0}, "limit"), ({"query": "x", "mode": "fuzzy"}, "mode"),
                                     ({}, "query"), ({"query": "x", "colour": "red"}, "colour")):
                text = error_text(await session.call_tool("memory_search", arguments))
                assert text.startswith(f"{field}: ") and "\n" not in text and "http" not in text, text
            assert error_text(await session.call_tool("memory_search", {})) == "query: required"
            unknown = await session.call_tool("memory_forget", {"query": "x"})
            assert unknown.is_error
            again = data(await session.call_tool("memory_search", {"query": "progetti Laravel", "limit": 3}))
            assert again["results"] == found["results"]

    anyio.run(check)
    assert "Traceback" not in log.read_text()


def test_get_file_refuses_paths_out_of_the_notes(notes: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("# secret\n", encoding="utf-8")
    os.symlink(outside, notes / "notes" / "link-out.md")

    async def check() -> None:
        async with mcp_session("--root", str(notes)) as session:
            for path, words in [
                ("../secret.md", "'..'"),
                (str(outside), "absolute"),
                ("notes/link-out.md", "outside"),
                (".brain/brain.sqlite", "hidden"),
                ("nothing-here.md", "no note"),
            ]:
                message = error_text(await session.call_tool("memory_get_file", {"path": path}))
                assert words in message, message
                assert "secret" not in message.replace("secret.md", "")

    anyio.run(check)


@pytest.mark.slow
def test_scan_reports_moves_and_failures(notes: Path) -> None:
    (notes / "notes" / "reading-list.txt").rename(notes / "notes" / "libri.txt")
    write(notes, {"broken.pdf": b"%PDF-1.4 this is not really a pdf"})

    async def check() -> None:
        async with mcp_session("--root", str(notes)) as session:
            report = data(await session.call_tool("memory_index", {}))
            assert report["moved"] == [{"from": "notes/reading-list.txt", "to": "notes/libri.txt"}]
            assert [f["path"] for f in report["failed"]] == ["broken.pdf"] and report["failed"][0]["reason"]
            assert report["counts"]["moved"] == 1 and report["counts"]["failed"] == 1
            assert report["chunks_embedded"] == 0
            found = data(await session.call_tool("memory_search", {"query": "reading list books", "limit": 20}))
            assert "notes/libri.txt" in [r["path"] for r in found["results"]]

    anyio.run(check)


def test_grep_get_file_ask_and_status(indexed_example: Path) -> None:
    async def check() -> None:
        async with mcp_session("--root", str(indexed_example)) as session:
            found = data(await session.call_tool("memory_grep", {"pattern": r"FT-\d{4}-\d{4}", "context": 1}))
            assert found["matches"], found
            hit = found["matches"][0]
            assert {"path", "line", "offset", "text", "match", "before", "after"} <= set(hit)
            one = data(await session.call_tool("memory_grep", {"pattern": "nginx", "path": "diary/2025-01-20.md"}))
            assert {m["path"] for m in one["matches"]} == {"diary/2025-01-20.md"}
            assert "regular expression" in error_text(await session.call_tool("memory_grep", {"pattern": "(unclosed"}))
            assert "'..'" in error_text(await session.call_tool("memory_grep", {"pattern": "x", "path": "../x.md"}))

            # A grep hit's offset reads back the line it found.
            part = data(await session.call_tool(
                "memory_get_file", {"path": hit["path"], "offset": hit["offset"], "length": 40}
            ))
            assert part["text"].startswith(hit["match"])
            whole = data(await session.call_tool("memory_get_file", {"path": "diary/2025-01-20.md"}))
            on_disk = (indexed_example / "diary" / "2025-01-20.md").read_text(encoding="utf-8")
            assert (
                whole["text"] == on_disk and whole["total"] == len(on_disk.encode("utf-8")) and whole["start_line"] == 1
            )

            answer = data(
                await session.call_tool("memory_ask", {"question": "Che cosa è successo al certificato SSL?"})
            )
            assert answer["sources"] and answer["answer"] is None and "ask.model" in answer["hint"]

            status = data(await session.call_tool("memory_status", {}))
            assert status["files_indexed"] == 17 and status["database_exists"] is True and "clean" in status
            # No report tells a client where the notes are on this machine.
            stats = data(await session.call_tool("memory_stats", {}))
            assert status["root"] == "." and status["database"] == ".brain/brain.sqlite"
            assert str(indexed_example) not in json.dumps([status, stats])

    anyio.run(check)
