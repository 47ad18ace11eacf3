"""`brain serve`: real HTTP requests over loopback against the real server process."""

from __future__ import annotations

import json

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from brain import Brain
from helpers import run_cli, write
from live_servers import HttpServer, copy_notes, http_server

JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def work_notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second, different notes folder with its own ignore rules and database."""
    root = tmp_path_factory.mktemp("work") / "work"
    write(root, {
        "clients/acme.md": "# Acme\nQuarterly invoice for the Acme warehouse robots, due in March.\n",
        "clients/globex.md": "# Globex\nGlobex wants the robots repainted orange.\n",
        "private/salary.md": "# Salary\nrobots budget and my salary\n",
        ".brainignore": "private/\n",
    })
    Brain(root).index()
    return root


@pytest.fixture(scope="module")
def server(indexed_example: Path, work_notes: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    notes = copy_notes(indexed_example, tmp_path_factory.mktemp("served") / "notes")
    outside = notes.parent / "secret.md"
    outside.write_text("# secret\nthe launch codes\n", encoding="utf-8")
    os.symlink(outside, notes / "notes" / "link-out.md")
    with http_server("--root", str(notes), "serve", "--corpus", f"work={work_notes}") as running:
        running.notes = notes  # type: ignore[attr-defined]
        yield running


@pytest.fixture(scope="module")
def client(server: HttpServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=120) as http:
        yield http


def test_health_docs_and_corpora(client: httpx.Client) -> None:
    assert client.get("/health").json()["status"] == "ok"
    docs = client.get("/docs")
    # Offline and self-contained: no script at all, nothing fetched from another site, CSP says so.
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in docs.headers["content-security-policy"]
    assert "<script" not in docs.text and "//cdn" not in docs.text and "https://" not in docs.text
    assert "POST /search" in docs.text and "path_prefix" in docs.text and "/openapi.json" in docs.text
    assert client.get("/redoc").status_code == 404
    spec = client.get("/openapi.json").json()
    for path in ("/search", "/index", "/grep", "/file", "/ask", "/status", "/stats", "/c/{corpus}/search"):
        assert path in spec["paths"], path
    corpora = client.get("/corpora").json()
    assert corpora["default"] == "default"
    # Names only: servers never tell clients where the notes are on this machine.
    assert corpora["corpora"] == [{"name": "default"}, {"name": "work"}]
    # A list parameter is a JSON array here: no word of the command line's repeated flag.
    assert "repeat the flag" not in docs.text.lower()
    assert "repeat the flag" not in json.dumps(spec).lower()


def test_search(client: httpx.Client) -> None:
    response = client.post("/search", json={"query": "progetti Laravel", "limit": 3})
    assert response.status_code == 200
    body = response.json()
    assert body["results"][0]["path"] == "database/projects/gengle/index.md" and len(body["results"]) == 3
    filtered = client.post("/search", json={"query": "nginx", "mode": "bm25", "path_prefix": "diary/"}).json()
    assert filtered["results"] and all(r["path"].startswith("diary/") for r in filtered["results"])


def test_scan_returns_the_report(client: httpx.Client) -> None:
    report = client.post("/index").json()
    assert set(report["counts"]) == {"added", "updated", "unchanged", "moved", "removed", "failed"}
    assert report["counts"]["unchanged"] == 17 and report["counts"]["failed"] == 0
    assert report["failed"] == [] and report["moved"] == [] and report["removed"] == []
    assert client.post("/index", json={"full": False}).status_code == 200


def test_grep_file_ask_and_status(client: httpx.Client, server: HttpServer) -> None:
    found = client.post("/grep", json={"pattern": "nginx", "context": 1, "limit": 5}).json()
    assert found["matches"] and found["pattern"] == "nginx" and len(found["matches"]) <= 5
    hit = found["matches"][0]
    part = client.get("/file", params={"path": hit["path"], "offset": hit["offset"], "length": 5}).json()
    assert part["text"].lower() == "nginx"
    whole = client.get("/file", params={"path": "diary/2025-01-20.md"}).json()
    assert whole["text"] == (server.notes / "diary" / "2025-01-20.md").read_text(encoding="utf-8")  # type: ignore[attr-defined]
    bad = client.post("/grep", json={"pattern": "(unclosed"})
    assert bad.status_code == 400 and bad.json()["field"] == "pattern"
    answer = client.post("/ask", json={"question": "Why PostgreSQL for nexum?"}).json()
    assert answer["sources"] and answer["answer"] is None and answer["hint"]
    assert client.post("/ask", json={}).json()["field"] == "question"
    status = client.get("/status").json()
    assert status["files_indexed"] >= 17 and status["database_exists"] is True
    assert client.get("/c/work/status").json()["files_indexed"] == 2


@pytest.mark.parametrize(
    ("request_body", "field"),
    [
        ({}, "query"),
        ({"query": ""}, "query"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": "many"}, "limit"),
        ({"query": "x", "mode": "fuzzy"}, "mode"),
        ({"query": "x", "where": ["no-operator"]}, "where"),
        ({"query": "x", "colour": "blue"}, "colour"),
        ({"query": "!!!"}, "query"),
        ({"query": "x", "path": "../elsewhere"}, "path"),
    ],
)
def test_bad_search_requests_are_4xx_naming_the_field(client: httpx.Client, request_body: dict, field: str) -> None:
    response = client.post("/search", json=request_body)
    assert 400 <= response.status_code < 500
    error = response.json()
    assert error["field"] == field and error["error"] and error["status"] == response.status_code


def test_unreadable_json_is_422(client: httpx.Client) -> None:
    response = client.post("/search", content=b'{"query": ', headers=JSON)
    assert response.status_code == 422 and response.json()["field"] == "body"


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("../secret.md", 403),
        ("notes/../../secret.md", 403),
        ("/etc/passwd", 403),
        ("notes/link-out.md", 403),  # a symlink whose target is outside the notes
        (".brain/brain.sqlite", 403),
        (".git/config", 403),
        ("no/such/note.md", 404),
    ],
)
def test_file_paths_never_leave_the_notes(client: httpx.Client, path: str, status: int) -> None:
    response = client.get("/file", params={"path": path})
    assert response.status_code == status, response.text
    assert response.json()["field"] == "path"
    assert "launch codes" not in response.text


def test_encoded_dot_dot_is_refused(server: HttpServer) -> None:
    # Sent raw, so no client normalises the dots away first.
    with httpx.Client(base_url=server.url) as http:
        response = http.get("/file?path=%2e%2e%2fsecret.md")
    assert response.status_code == 403 and "launch codes" not in response.text


def test_an_empty_query_or_pattern_is_the_documented_line(client: httpx.Client) -> None:
    empty = client.post("/search", json={"query": ""})
    assert empty.status_code == 400 and empty.json()["error"] == "empty query; type some words to search for"
    assert client.post("/grep", json={"pattern": ""}).json()["error"].startswith("empty pattern")


def test_file_without_path_is_422(client: httpx.Client) -> None:
    response = client.get("/file")
    assert response.status_code == 422 and response.json()["field"] == "path"


@pytest.mark.parametrize(
    "headers",
    [
        {"host": "evil.example.com"},
        {"host": "evil.example.com:80"},
        {"host": "127.0.0.1:1"},  # right address, wrong port: some other site's server
        {"origin": "http://evil.example.com"},
        {"origin": "null"},
    ],
)
def test_dns_rebinding_host_and_foreign_origin_are_refused(server: HttpServer, headers: dict[str, str]) -> None:
    with httpx.Client(base_url=server.url) as http:
        response = http.post("/search", json={"query": "nginx"}, headers=headers)
    assert response.status_code in (400, 403, 421)
    assert response.json()["field"] in ("Host", "Origin")
    assert "results" not in response.text


def test_own_names_are_accepted(server: HttpServer) -> None:
    with httpx.Client(base_url=server.url) as http:
        for host in (f"localhost:{server.port}", f"127.0.0.1:{server.port}"):
            assert http.get("/health", headers={"host": host}).status_code == 200
        same_origin = {"origin": f"http://localhost:{server.port}"}
        assert http.post("/search", json={"query": "nginx"}, headers=same_origin).status_code == 200


def test_corpora_are_separate(client: httpx.Client, work_notes: Path) -> None:
    work = client.post("/c/work/search", json={"query": "robots", "mode": "bm25"}).json()
    # private/ ignored there
    assert sorted(r["path"] for r in work["results"]) == ["clients/acme.md", "clients/globex.md"]
    default = client.post("/search", json={"query": "robots", "mode": "bm25"}).json()
    assert not any(r["path"].startswith("clients/") for r in default["results"])
    same = client.post("/c/default/search", json={"query": "progetti Laravel", "limit": 3}).json()
    assert same["results"] == client.post("/search", json={"query": "progetti Laravel", "limit": 3}).json()["results"]
    report = client.post("/c/work/index").json()
    assert report["counts"]["unchanged"] == 2 and report["database"] == ".brain/brain.sqlite"
    # No report tells a client where the notes are on this machine.
    for answer in (client.get("/c/work/status"), client.get("/c/work/stats"), client.post("/c/work/index")):
        assert answer.status_code == 200 and str(work_notes) not in answer.text, answer.text
    assert client.get("/c/work/status").json()["root"] == "."
    missing = client.post("/c/nope/search", json={"query": "robots"})
    assert missing.status_code == 404 and missing.json()["field"] == "corpus"
    assert client.get("/c/work/file", params={"path": "private/salary.md"}).status_code == 403


def test_token_is_required_when_set(indexed_example: Path) -> None:
    token = "s3cret-token-for-tests"
    with http_server("--root", str(indexed_example), env={"BRAIN_HTTP_TOKEN": token}) as running:
        with httpx.Client(base_url=running.url) as http:
            assert http.get("/health").status_code == 200  # touches no notes: open for probes
            spec = http.get("/openapi.json").json()  # the docs stay readable and offer "Authorize"
            assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
            missing = http.post("/search", json={"query": "nginx"})
            assert missing.status_code == 401 and missing.json()["field"] == "Authorization"
            assert "bearer" in missing.headers["www-authenticate"].lower()
            wrong = http.post("/search", json={"query": "nginx"}, headers={"authorization": "Bearer nope"})
            assert wrong.status_code == 401
            assert http.get("/c/default/status", headers={"authorization": "Basic eDp5"}).status_code == 401
            good = http.post("/search", json={"query": "nginx"}, headers={"authorization": f"Bearer {token}"})
            assert good.status_code == 200 and good.json()["results"]
    assert running.stdout() == ""  # logs and the start-up line went to stderr
    assert token not in running.log()


def test_refuses_to_listen_beyond_loopback_without_a_token(indexed_example: Path) -> None:
    out = run_cli("--root", str(indexed_example), "serve", "--host", "0.0.0.0", "--port", "0", timeout=60)
    assert out.returncode == 1
    assert "BRAIN_HTTP_TOKEN" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_serve_with_corpus_inside_a_notes_folder_also_serves_that_folder(indexed_example: Path, tmp_path: Path) -> None:
    """`brain serve --corpus x=…` run inside a notes folder serves it too; run elsewhere, only x (and says so)."""
    notes = copy_notes(indexed_example, tmp_path / "notes")
    other = copy_notes(indexed_example, tmp_path / "other")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for cwd, expected in ((notes / "diary", ["default", "x"]), (elsewhere, ["x"])):
        with http_server("serve", "--corpus", f"x={other}", cwd=cwd) as running:
            with httpx.Client(base_url=running.url, timeout=60) as http:
                assert [c["name"] for c in http.get("/corpora").json()["corpora"]] == expected
            assert ("default=" in running.log()) == ("default" in expected), running.log()


def test_each_error_kind_carries_its_exit_code_and_status():
    """The doors read the code and status off the error, so a new kind needs no table in each door."""
    import errno

    from brain.errors import BrainError, NoteNotFound, PathRefused, Unavailable, user_error

    full = user_error(OSError(errno.ENOSPC, "No space left on device"))
    assert full is not None
    kinds = [(BrainError("x", usage=True), 2, 400), (BrainError("x"), 1, 409), (PathRefused("x"), 2, 403),
             (NoteNotFound("x"), 2, 404), (Unavailable("x"), 1, 503), (full, 1, 503)]
    assert [(e.exit_code, e.http_status) for e, _, _ in kinds] == [(c, s) for _, c, s in kinds]
