"""`brain links` and `brain related` on a real folder: links stored at index time, resolved as Obsidian does,
kept up to date by every re-index, the same through the CLI, MCP and HTTP, and on PostgreSQL."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from helpers import run_cli, write
from live_servers import http_server, mcp_session

from brain import Brain

VAULT = {
    "projects/alpha/index.md": (
        "---\ntitle: Alpha\nclient: Rossi\n---\n# Alpha\n\n"
        "The deploy is in [[Deploy notes#Nginx|the deploy]], the diagram is ![[diagram.png]].\n"
        "See also [[missing note]] and [[#Alpha]].\n\n```\n[[not a link]]\n```\n"
    ),
    "projects/alpha/Deploy notes.md": "# Deploy notes\n\n## Nginx\n\nnginx reverse proxy with TLS certificates.\n",
    "archive/Deploy notes.md": "# Deploy notes\n\nThe old deploy on a shared host, with FTP uploads.\n",
    "diary/2026-03-02.md": (
        "---\nproject: \"[[projects/alpha/index|Alpha]]\"\n---\n# 2 March\n\n"
        "Worked on [Alpha](../projects/alpha/index.md): renewed the nginx TLS certificates.\n"
        "Nothing to see in [the password file](../../etc/passwd).\n"
    ),
    "handbook/backups.md": "# Backups\n\nEvery night the databases are copied to the office NAS.\n",
}


def outgoing(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(h["path"], h["kind"], h["line"], h["heading"], h["alias"], h["broken"], h["self_link"])
            for h in data["outgoing"]]


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("vault") / "notes"
    write(root, VAULT)
    assert not Brain(root).index().failed
    return root


def test_links_are_extracted_and_resolved_as_obsidian_does(vault: Path) -> None:
    data = Brain(vault).links("projects/alpha/index.md").to_dict()
    assert data["path"] == "projects/alpha/index.md"
    assert outgoing(data) == [
        # Two notes are called "Deploy notes": the one in the linking note's own folder.
        ("projects/alpha/Deploy notes.md", "wiki", 7, "Nginx", "the deploy", "", False),
        (None, "embed", 7, "", "", "unresolved", False),  # an image the index does not hold
        (None, "wiki", 8, "", "", "unresolved", False),
        ("projects/alpha/index.md", "wiki", 8, "Alpha", "", "", True),
    ]  # nothing from the code block; "client: Rossi" names no note, so it is no link
    assert data["outgoing"][0]["text"].startswith("The deploy is in [[Deploy notes#Nginx")
    assert [(h["path"], h["kind"], h["line"]) for h in data["backlinks"]] == [
        ("diary/2026-03-02.md", "frontmatter", 2), ("diary/2026-03-02.md", "markdown", 6)]
    diary = Brain(vault).links("diary/2026-03-02.md").to_dict()
    assert [(h["path"], h["broken"]) for h in diary["outgoing"]] == [
        ("projects/alpha/index.md", ""), ("projects/alpha/index.md", ""), (None, "outside")]


def test_links_cli_text_and_status_list_the_broken_ones(vault: Path) -> None:
    text = run_cli("--root", str(vault), "links", "projects/alpha/index.md")
    assert text.returncode == 0, text.stderr
    assert "links to (4):" in text.stdout and "linked from (2):" in text.stdout
    assert "missing note (broken: no indexed file)" in text.stdout
    status = json.loads(run_cli("--root", str(vault), "status", "--json").stdout)
    assert [(b["path"], b["line"], b["target"], b["reason"]) for b in status["broken_links"]] == [
        ("diary/2026-03-02.md", 7, "../../etc/passwd", "outside"),
        ("projects/alpha/index.md", 8, "missing note", "unresolved"),
    ]  # the image is a file the index does not hold, not a broken link
    assert status["clean"] is True
    assert "links       2 broken" in run_cli("--root", str(vault), "status").stdout
    missing = run_cli("--root", str(vault), "links", "no/such.md")
    assert missing.returncode != 0 and "not in the index" in missing.stderr


def test_links_to_hidden_or_ignored_notes_are_broken_and_circular_links_are_listed_once(tmp_path: Path) -> None:
    write(tmp_path, {
        "a.md": "# A\n\nSee [[b]], [[.hidden/secret]] and [[drafts/wip]].\n",
        "b.md": "# B\n\nBack to [[a]], and to [[b]] itself.\n",
        ".hidden/secret.md": "# Secret\n\nnot for the index\n",
        "drafts/wip.md": "# WIP\n\nignored by the folder's rules\n",
        ".brainignore": "drafts/\n",
    })
    Brain(tmp_path).index()
    a = Brain(tmp_path).links("a.md")
    assert [(h.path, h.broken) for h in a.outgoing] == [("b.md", ""), (None, "unresolved"), (None, "unresolved")]
    assert [h.path for h in a.backlinks] == ["b.md"]
    b = Brain(tmp_path).links("b.md")
    assert [(h.path, h.self_link) for h in b.outgoing] == [("a.md", False), ("b.md", True)]
    assert [h.path for h in b.backlinks] == ["a.md"]  # its link to itself is an outgoing self link only
    shown = json.dumps(Brain(tmp_path).links("a.md").to_dict())
    assert "not for the index" not in shown and "ignored by the folder" not in shown


def test_renames_and_deletions_are_followed_on_the_next_index(tmp_path: Path) -> None:
    write(tmp_path, VAULT)
    brain = Brain(tmp_path)
    brain.index()
    (tmp_path / "projects/alpha/Deploy notes.md").rename(tmp_path / "projects/alpha/Deploy.md")
    brain.index()
    # The link names "Deploy notes": now only the archived note has that name.
    assert Brain(tmp_path).links("projects/alpha/index.md").outgoing[0].path == "archive/Deploy notes.md"
    (tmp_path / "archive/Deploy notes.md").unlink()
    brain.index()
    first = Brain(tmp_path).links("projects/alpha/index.md").outgoing[0]
    assert (first.path, first.broken, first.target) == (None, "unresolved", "Deploy notes")
    # A note renamed keeps its own links, and the links to its old name break.
    (tmp_path / "projects/alpha/index.md").rename(tmp_path / "projects/alpha/alpha.md")
    brain.index()
    assert len(Brain(tmp_path).links("projects/alpha/alpha.md").outgoing) == 4
    diary = Brain(tmp_path).links("diary/2026-03-02.md").outgoing
    assert [(h.path, h.broken) for h in diary] == [(None, "unresolved")] * 2 + [(None, "outside")]


def test_an_index_made_before_links_reads_them_at_its_next_index(tmp_path: Path) -> None:
    write(tmp_path, VAULT)
    brain = Brain(tmp_path)
    brain.index()
    conn = sqlite3.connect(brain.settings.database_path)
    conn.executescript("DROP TABLE links; PRAGMA user_version = 6;")
    conn.close()
    assert Brain(tmp_path).links("projects/alpha/index.md").outgoing == []  # opened, upgraded, empty
    status = run_cli("--root", str(tmp_path), "status")
    assert "before notes' links were kept" in status.stdout
    report = Brain(tmp_path).index()
    assert report.rebuilt and report.chunks_embedded == 0  # every vector from the cache
    assert len(Brain(tmp_path).links("projects/alpha/index.md").outgoing) == 4


def test_related_notes_by_meaning_exclude_the_note_and_can_leave_out_linked_ones(vault: Path) -> None:
    brain = Brain(vault)
    found = brain.related("diary/2026-03-02.md", limit=3)
    paths = [hit.path for hit in found.results]
    assert "diary/2026-03-02.md" not in paths and len(paths) == 3
    assert paths[0] == "projects/alpha/Deploy notes.md"  # nginx TLS certificates, in other words
    assert all(a.score >= b.score for a, b in zip(found.results, found.results[1:]))
    linked = {hit.path: hit.linked for hit in brain.related("diary/2026-03-02.md", limit=10).results}
    assert linked["projects/alpha/index.md"] is True and linked["handbook/backups.md"] is False
    unlinked = brain.related("diary/2026-03-02.md", limit=10, exclude_linked=True)
    assert "projects/alpha/index.md" not in [h.path for h in unlinked.results] and unlinked.excluded_linked == 1
    hit = found.results[0]
    assert hit.start_line >= 1 and "nginx" in hit.preview.lower() and hit.from_lines[0] >= 1
    text = run_cli("--root", str(vault), "related", "diary/2026-03-02.md", "-k", "2")
    assert text.returncode == 0 and "1. projects/alpha/Deploy notes.md  cosine" in text.stdout
    assert run_cli("--root", str(vault), "related", "diary/2026-03-02.md", "-k", "0").returncode == 2


@pytest.mark.slow
def test_links_and_related_are_the_same_through_every_door(vault: Path) -> None:
    def cli(*args: str) -> dict[str, Any]:
        out = run_cli("--root", str(vault), *args, "--json")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    cli_links = cli("links", "projects/alpha/index.md")
    cli_related = cli("related", "diary/2026-03-02.md", "-k", "3", "--exclude-linked")

    async def through_mcp() -> tuple[Any, Any, str]:
        async with mcp_session("--root", str(vault)) as session:
            links = await session.call_tool("memory_links", {"path": "projects/alpha/index.md"})
            related = await session.call_tool("memory_related", {"path": "diary/2026-03-02.md", "limit": 3,
                                                                 "exclude_linked": True})
            outside = await session.call_tool("memory_links", {"path": "../secret.md"})
            assert outside.is_error
            return links.structured_content, related.structured_content, outside.content[0].text

    mcp_links, mcp_related, mcp_outside = anyio.run(through_mcp)
    with http_server("--root", str(vault)) as server, httpx.Client(base_url=server.url, timeout=120) as http:
        http_links = http.get("/links", params={"path": "projects/alpha/index.md"}).json()
        http_related = http.get("/related", params={"path": "diary/2026-03-02.md", "limit": 3,
                                                   "exclude_linked": True}).json()
        refused = http.get("/links", params={"path": "../secret.md"})
    assert cli_links == mcp_links == http_links
    assert cli_related == mcp_related == http_related and len(cli_related["results"]) == 3
    assert refused.status_code in (400, 403, 404) and "secret" not in json.dumps(http_links)
    assert ".." in mcp_outside or "outside" in mcp_outside


@pytest.mark.postgres
def test_links_and_related_on_postgres(tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAIN_STORE", store_url)
    write(tmp_path, VAULT)
    brain = Brain(tmp_path)
    assert not brain.index().failed
    assert str(brain.stats()["database"]).startswith("postgresql://")
    data = brain.links("projects/alpha/index.md").to_dict()
    assert [h["path"] for h in data["outgoing"]] == [
        "projects/alpha/Deploy notes.md", None, None, "projects/alpha/index.md"]
    assert [(h["path"], h["kind"]) for h in data["backlinks"]] == [
        ("diary/2026-03-02.md", "frontmatter"), ("diary/2026-03-02.md", "markdown")]
    assert brain.related("diary/2026-03-02.md", limit=1).results[0].path == "projects/alpha/Deploy notes.md"
    (tmp_path / "archive/Deploy notes.md").unlink()
    (tmp_path / "projects/alpha/Deploy notes.md").unlink()
    brain.index()
    assert Brain(tmp_path).links("projects/alpha/index.md").outgoing[0].broken == "unresolved"
    assert os.environ["BRAIN_STORE"] == store_url


AGENCY = Path(__file__).resolve().parents[1] / "examples" / "agency"


def test_every_link_of_the_agency_example_resolves_and_the_judgments_name_its_notes() -> None:
    """examples/agency links its projects and decisions as a vault would; agency-related.jsonl judges `related`."""
    from brain.links import Resolver, resolve_all

    paths = sorted(p.relative_to(AGENCY).as_posix() for p in AGENCY.rglob("*") if p.is_file())
    resolver = Resolver(paths)
    resolved = [r for path in paths if path.endswith(".md")
                for r in resolve_all((AGENCY / path).read_text(encoding="utf-8"), path, resolver)]
    wiki = [r for r in resolved if r.link.kind == "wiki"]
    assert len(wiki) >= 60 and all(r.path is not None and r.reason == "" for r in wiki), [
        r for r in wiki if r.path is None]
    judged = AGENCY.parents[1] / "tools" / "bench" / "judged" / "agency-related.jsonl"
    rows = [json.loads(line) for line in judged.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 20 and len({row["id"] for row in rows}) == len(rows)
    for row in rows:
        assert row["note"] in paths and row["related"] and set(row["related"]) <= set(paths), row["id"]
        assert row["note"] not in row["related"], row["id"]
