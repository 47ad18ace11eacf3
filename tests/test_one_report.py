"""One report: the CLI's --json, the MCP tools and the HTTP API return the same data for the same request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx

import pytest

from helpers import run_cli, write
from live_servers import copy_notes, http_server, mcp_session

QUERY = "certificato SSL nginx"
FRONTMATTER_NOTE = "database/projects/gengle/index.md"  # opens with YAML frontmatter, blanked in its text
NONSENSE = "zzkx vrrp flonk"  # no word of it in any note: the response says the results are weak
# Operators are read in the core: phrases, OR, a filter in the query, and a malformed one, the same on every door.
OPERATORS = '"certificate renewal" OR "certificate expiry" nginx status!=archived'
BAD_OPERATOR = "nginx status>"


def without_timing(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "seconds"}


@pytest.mark.slow
def test_cli_mcp_and_http_agree(indexed_example: Path, tmp_path: Path) -> None:
    notes = copy_notes(indexed_example, tmp_path / "notes")
    (notes / "diary" / "2024-05-02.md").rename(notes / "diary" / "maggio.md")
    write(notes, {"broken.pdf": b"%PDF-1.4 not really"})
    search = {"query": QUERY, "limit": 4, "mode": "hybrid", "where": [], "path_prefix": None}
    excerpts = {"query": QUERY, "limit": 2, "excerpt_chars": 300}
    grep = {"pattern": "nginx", "context": 1, "limit": 5}

    # The scan that finds the move and the broken file runs once (through the CLI); the
    # next ones see the same folder, so all three front doors must report the same thing.
    first = run_cli("--root", str(notes), "index", "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["counts"]["moved"] == 1

    def cli(*args: str) -> dict[str, Any]:
        out = run_cli("--root", str(notes), *args)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    cli_scan = cli("index", "--json")
    cli_search = cli("search", QUERY, "-k", "4", "--mode", "hybrid", "--json")
    cli_excerpts = cli("search", QUERY, "-k", "2", "--excerpt-chars", "300", "--json")
    cli_grep = cli("grep", "nginx", "-C", "1", "--limit", "5", "--json")
    cli_file = cli("get", "diary/maggio.md", "--offset", "10", "--length", "200", "--json")
    cli_error = run_cli("--root", str(notes), "search", "   ").stderr.strip()
    cli_weak = cli("search", NONSENSE, "-k", "2", "--json")
    cli_note = cli("get", FRONTMATTER_NOTE, "--offset", "0", "--length", "300", "--json")
    cli_ops = cli("search", OPERATORS, "-k", "3", "--mode", "bm25", "--json")
    bad_ops = run_cli("--root", str(notes), "search", BAD_OPERATOR)
    assert bad_ops.returncode == 2 and bad_ops.stdout == ""
    cli_bad_ops = bad_ops.stderr.strip()

    async def through_mcp() -> list[Any]:
        async with mcp_session("--root", str(notes)) as session:
            calls = [
                ("memory_index", {}),
                ("memory_search", search),
                ("memory_search", excerpts),
                ("memory_grep", grep),
                ("memory_get_file", {"path": "diary/maggio.md", "offset": 10, "length": 200}),
            ]
            results = []
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                assert not result.is_error, result.content
                results.append(result.structured_content)
            weak = await session.call_tool("memory_search", {"query": NONSENSE, "limit": 2})
            results.append(weak.structured_content)
            note = await session.call_tool("memory_get_file", {"path": FRONTMATTER_NOTE, "length": 300})
            results.append(note.structured_content)
            ops = await session.call_tool("memory_search", {"query": OPERATORS, "limit": 3, "mode": "bm25"})
            results.append(ops.structured_content)
            bad_ops = await session.call_tool("memory_search", {"query": BAD_OPERATOR})
            assert bad_ops.is_error
            bad = await session.call_tool("memory_search", {"query": "   "})
            assert bad.is_error
            return [*results, bad_ops.content[0].text, bad.content[0].text]

    (mcp_scan, mcp_search, mcp_excerpts, mcp_grep, mcp_file, mcp_weak, mcp_note, mcp_ops, mcp_bad_ops,
     mcp_error) = anyio.run(through_mcp)

    with http_server("--root", str(notes)) as server, httpx.Client(base_url=server.url, timeout=120) as http:
        http_scan = http.post("/index").json()
        http_search = http.post("/search", json=search).json()
        http_excerpts = http.post("/search", json=excerpts).json()
        http_grep = http.post("/grep", json=grep).json()
        http_file = http.get("/file", params={"path": "diary/maggio.md", "offset": 10, "length": 200}).json()
        http_weak = http.post("/search", json={"query": NONSENSE, "limit": 2}).json()
        http_note = http.get("/file", params={"path": FRONTMATTER_NOTE, "length": 300}).json()
        http_error = http.post("/search", json={"query": "   "}).json()["error"]
        http_ops = http.post("/search", json={"query": OPERATORS, "limit": 3, "mode": "bm25"}).json()
        refused = http.post("/search", json={"query": BAD_OPERATOR})
        assert refused.status_code == 400
        http_bad_ops = refused.json()["error"]

    assert cli_search["results"] and cli_excerpts["results"][0]["content_len"] and cli_grep["matches"]
    assert without_timing(cli_search) == without_timing(mcp_search) == without_timing(http_search)
    assert without_timing(cli_excerpts) == without_timing(mcp_excerpts) == without_timing(http_excerpts)
    assert without_timing(cli_grep) == without_timing(mcp_grep) == without_timing(http_grep)
    assert cli_file == mcp_file == http_file
    assert cli_weak["weak"] is True and cli_weak["keyword_matched"] is False
    assert without_timing(cli_weak) == without_timing(mcp_weak) == without_timing(http_weak)
    # The frontmatter's blank lines are skipped, not returned; the range says where the text starts.
    assert cli_note["offset"] == cli_note["blank_skipped"] > 0 and cli_note["text"].startswith("#")
    assert cli_note == mcp_note == http_note
    assert cli_ops["operators"]["any_of"] == [['"certificate renewal"', '"certificate expiry"']]
    assert cli_ops["operators"]["filters"] == ["status!=archived"] and cli_ops["results"]
    assert without_timing(cli_ops) == without_timing(mcp_ops) == without_timing(http_ops)
    bad_message = cli_bad_ops.removeprefix("brain: ")
    assert "status>" in bad_message and mcp_bad_ops.endswith(bad_message) and http_bad_ops == bad_message
    assert cli_scan["failed"] == [{"path": "broken.pdf", "reason": cli_scan["failed"][0]["reason"]}]
    # Servers name an index file by its place in the notes folder, never by where the folder is (a
    # PostgreSQL store by its URL, as the CLI does).
    if cli_scan["database"] == str(notes / ".brain" / "brain.sqlite"):
        assert mcp_scan["database"] == http_scan["database"] == ".brain/brain.sqlite"
        cli_scan = {**cli_scan, "database": ".brain/brain.sqlite"}
    else:
        assert cli_scan["database"].startswith("postgresql://")
    assert without_timing(cli_scan) == without_timing(mcp_scan) == without_timing(http_scan)
    message = cli_error.removeprefix("brain: ")
    assert message.startswith("empty query")
    assert mcp_error.endswith(message) and http_error == message


def _from_schema(schema: dict[str, Any], required: bool) -> dict[str, Any]:
    """What a JSON schema property says of a parameter: required, default, bounds, choices."""
    parts = [schema, *schema.get("anyOf", [])]
    found = {key: next((p[key] for p in parts if key in p), None) for key in ("minimum", "maximum", "enum")}
    default = schema.get("default")
    return {"required": required, "default": [] if default is None and schema.get("type") == "array" else default,
            "minimum": found["minimum"], "maximum": found["maximum"],
            "choices": tuple(found["enum"]) if found["enum"] else None}


def _declared(param: Any) -> dict[str, Any]:
    default = list(param.default) if isinstance(param.default, tuple) else param.default
    numeric = param.kind in ("int", "float")
    return {"required": param.required, "default": None if param.required else default,
            "minimum": param.minimum if numeric else None, "maximum": param.maximum if numeric else None,
            "choices": param.choices}


def _from_click(param: Any) -> dict[str, Any]:
    import click

    kind = param.type
    default = None if param.required else param.default
    if param.multiple:
        default = list(default or [])
    return {"required": param.required, "default": default,
            "minimum": getattr(kind, "min", None) if isinstance(kind, click.types._NumberRangeBase) else None,
            "maximum": getattr(kind, "max", None) if isinstance(kind, click.types._NumberRangeBase) else None,
            "choices": tuple(kind.choices) if isinstance(kind, click.Choice) else None}


@pytest.mark.slow
def test_every_door_takes_the_same_parameters_defaults_and_limits(indexed_example: Path, tmp_path: Path) -> None:
    """The CLI's options, the MCP tools' input schemas and the HTTP API's OpenAPI all say what operations declares."""
    from brain.cli import cli
    from brain.operations import OPERATIONS

    notes = copy_notes(indexed_example, tmp_path / "notes")
    declared = {op.name: {p.name: _declared(p) for p in op.params} for op in OPERATIONS}

    # CLI: every option but --root/--config and the output flags (--json, --format, --color, --yes) is a parameter.
    output_only = {"as_json", "fmt", "color", "yes", "help"}
    for op in OPERATIONS:
        command = cli.commands[op.name]
        params = {p.name: _from_click(p) for p in command.params if p.expose_value and p.name not in output_only}
        assert params == declared[op.name], op.name
        flags = {flag for p in command.params if p.name in output_only - {"help"} for flag in p.opts}
        assert flags <= {"--json", "--format", "--color", "--yes", "-y"}
        assert {f for f in op.cli_flags if f != "--yes"} <= flags

    async def tool_schemas() -> dict[str, Any]:
        async with mcp_session("--root", str(notes)) as session:
            return {tool.name: tool.input_schema for tool in (await session.list_tools()).tools}

    tools = anyio.run(tool_schemas)
    assert set(tools) == {op.mcp_tool for op in OPERATIONS}
    for op in OPERATIONS:
        schema = tools[op.mcp_tool]
        props = {
            name: _from_schema(s, name in schema.get("required", []))
            for name, s in schema.get("properties", {}).items()
        }
        assert props == declared[op.name], op.mcp_tool

    with http_server("--root", str(notes)) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        spec = http.get("/openapi.json").json()
    models = spec["components"]["schemas"]
    for op in OPERATIONS:
        method, path = op.http
        endpoint = spec["paths"][path][method.lower()]
        if method == "GET":
            props = {
                p["name"]: _from_schema(p["schema"], p.get("required", False)) for p in endpoint.get("parameters", [])
            }
        else:
            body = endpoint["requestBody"]["content"]["application/json"]["schema"]
            ref = body.get("$ref") or next(a["$ref"] for a in body["anyOf"] if "$ref" in a)
            model = models[ref.rsplit("/", 1)[-1]]
            assert model.get("additionalProperties") is False, op.name  # unknown parameters are refused
            props = {
                name: _from_schema(s, name in model.get("required", [])) for name, s in model["properties"].items()
            }
        assert props == declared[op.name], path


def test_commands_doc_carries_the_operations_table() -> None:
    """docs/commands.md shows the parameters as operations declares them (regenerate: python -m brain.operations)."""
    from helpers import PROJECT

    from brain.operations import markdown_reference

    doc = (PROJECT / "docs" / "commands.md").read_text(encoding="utf-8")
    table = doc.split("<!-- operations:start -->\n", 1)[1].split("<!-- operations:end -->", 1)[0]
    assert table == markdown_reference()
