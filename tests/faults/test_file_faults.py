"""Faults at the file doors: symlinks out of the notes, special files, loops, planted index rows, odd names.

Each test drives real processes (the CLI, git with brain's hooks, `brain watch`,
`brain serve`) against real folders, and was seen failing before its fix.
Findings F2, F3, F7, F9, F16, F19 and F20 of the reliability review.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from helpers import git, init_repo, run_cli, write
from live_servers import brain_env, http_server, mcp_session, wait_until

SECRET = "the launch codes are 0000"
# A regression that reads an endless file must fail the test, not exhaust the machine.
MEMORY_CAP = 4 * 1024**3


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def git_capped(root: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """git (and the hooks it runs) with this checkout's brain, a memory cap and a time bound."""
    env = brain_env({"BRAIN_HOOK": "sync"})
    return subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, timeout=timeout, preexec_fn=_capped
    )


def commit(root: Path, message: str = "change") -> None:
    git(root, "add", "-A")
    done = git_capped(root, "commit", "-q", "-m", message)
    assert done.returncode == 0, done.stderr


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The error a failed command printed: one line, no traceback."""
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


def no_secret(*outputs: str) -> None:
    for output in outputs:
        assert "launch codes" not in output, output


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside the notes that must never be read."""
    path = tmp_path / "outside" / "secret.md"
    write(path.parent, {"secret.md": f"# Secret\n\n{SECRET}\n"})
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A notes repository with brain's hooks installed in the foreground, indexed at its first commit."""
    root = init_repo(tmp_path / "notes")
    write(root, {"a.md": "# Alpha\n\nThe nginx proxy terminates TLS.\n"})
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    done = run_cli("--root", str(root), "hooks", "install", "--sync")
    assert done.returncode == 0, done.stderr
    assert run_cli("--root", str(root), "index").returncode == 0
    return root


# ---------------------------------------------------------------- F2: symlinks out of the notes


@pytest.mark.slow
def test_committed_symlinks_out_of_the_notes_are_never_indexed(repo: Path, secret: Path) -> None:
    os.symlink(os.path.relpath(secret, repo), repo / "relative.md")
    os.symlink(secret, repo / "absolute.md")
    commit(repo, "links out")  # the post-commit hook syncs in the foreground
    log = (repo / ".brain" / "hook.log").read_text(encoding="utf-8")
    assert "failed" in log and "relative.md" in log and "outside the notes" in log, log  # said, not silently skipped
    grep = run_cli("--root", str(repo), "grep", "launch")
    search = run_cli("--root", str(repo), "search", "launch", "--excerpt-chars", "300")
    no_secret(grep.stdout, grep.stderr, search.stdout)
    reindex = run_cli("--root", str(repo), "reindex", "relative.md", "absolute.md", cwd=repo)
    assert reindex.returncode != 0
    assert "outside" in reindex.stdout + reindex.stderr
    no_secret(run_cli("--root", str(repo), "grep", "launch").stdout)
    scan = run_cli("--root", str(repo), "index", "--json")
    assert scan.returncode == 0, scan.stderr
    no_secret(run_cli("--root", str(repo), "grep", "launch").stdout)


@pytest.mark.slow
def test_a_link_repointed_outside_after_indexing_does_not_leak(tmp_path: Path, secret: Path) -> None:
    root = tmp_path / "notes"
    write(root, {"real.md": "# Real\n\nInside the notes, about nginx.\n"})
    os.symlink("real.md", root / "link.md")
    assert run_cli("--root", str(root), "index").returncode == 0
    assert "link.md" in run_cli("--root", str(root), "grep", "nginx").stdout  # indexed while inside
    (root / "link.md").unlink()
    os.symlink(secret, root / "link.md")
    grep = run_cli("--root", str(root), "grep", "launch")
    get = run_cli("--root", str(root), "get", "link.md")
    search = run_cli("--root", str(root), "search", "nginx", "--excerpt-chars", "300", "--json")
    no_secret(grep.stdout, get.stdout, get.stderr, search.stdout)
    assert get.returncode != 0 and "outside" in get.stderr
    with http_server("--root", str(root)) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        answers = [
            client.post("/grep", json={"pattern": "launch"}).text,
            client.get("/file", params={"path": "link.md"}).text,
            client.post("/search", json={"query": "nginx", "excerpt_chars": 300}).text,
        ]
    no_secret(*answers)

    async def over_mcp() -> list[str]:
        async with mcp_session("--root", str(root)) as session:
            calls = [
                ("memory_grep", {"pattern": "launch"}),
                ("memory_get_file", {"path": "link.md"}),
                ("memory_search", {"query": "nginx", "excerpt_chars": 300}),
            ]
            return [json.dumps([c.model_dump() for c in (await session.call_tool(n, a)).content]) for n, a in calls]

    no_secret(*anyio.run(over_mcp))


@pytest.mark.slow
def test_the_watcher_does_not_index_a_link_out_and_stops_on_sigterm(tmp_path: Path, secret: Path) -> None:
    root = tmp_path / "notes"
    write(root, {"a.md": "# Alpha\n\nfirst note\n"})
    watch = subprocess.Popen(
        [sys.executable, "-m", "brain", "--root", str(root), "watch", "--debounce", "0.3"],
        env=brain_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_until(lambda: "a.md" in run_cli("--root", str(root), "grep", "first").stdout, what="the first scan")
        os.symlink(secret, root / "leak.md")
        os.mkfifo(root / "pipe.md")  # F9: a FIFO in the watched folder must not block the watcher
        write(root, {"later.md": "# Later\n\nsaved after the link\n"})
        wait_until(lambda: "later.md" in run_cli("--root", str(root), "grep", "saved after").stdout, what="later.md")
        no_secret(run_cli("--root", str(root), "grep", "launch").stdout)
        watch.send_signal(signal.SIGTERM)
        watch.wait(60)  # a watcher that ignores SIGTERM fails here
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait(10)
    assert watch.returncode == 0, watch.stderr.read() if watch.stderr else ""


@pytest.mark.slow
def test_a_link_to_a_hidden_or_ignored_file_inside_the_notes_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {
        "private/diary.md": f"# Diary\n\n{SECRET}\n",
        ".brainignore": "private/\n",
        "public.md": "# Public\n\nnothing to hide\n",
    })
    (root / ".hidden").mkdir()
    write(root, {".hidden/keys.md": f"{SECRET}\n"})
    os.symlink("private/diary.md", root / "diary-link.md")
    os.symlink(".hidden/keys.md", root / "keys-link.md")
    assert run_cli("--root", str(root), "index").returncode == 0
    no_secret(run_cli("--root", str(root), "grep", "launch").stdout)


# ---------------------------------------------------------------- F16: planted index rows


@pytest.mark.slow
def test_planted_rows_with_absolute_or_climbing_paths_are_never_read(tmp_path: Path, secret: Path) -> None:
    root = tmp_path / "notes"
    write(root, {
        "a.md": "# A\n\nthe launch checklist for the clinic\n",
        "b.md": "# B\n\nthe launch plan\n",
        "c.md": "# C\n\nthe launch party\n",
    })
    assert run_cli("--root", str(root), "index").returncode == 0
    write(root, {".git/config": f"[remote]\n  url = https://user:{SECRET}@example.com/notes\n"})
    db = sqlite3.connect(root / ".brain" / "brain.sqlite")
    with db:
        db.execute("UPDATE files SET path = ? WHERE path = 'a.md'", (str(secret),))
        db.execute("UPDATE files SET path = ? WHERE path = 'b.md'", (os.path.relpath(secret, root),))
        db.execute("UPDATE files SET path = '.git/config' WHERE path = 'c.md'")  # inside, but hidden
    db.close()
    grep = run_cli("--root", str(root), "grep", "launch")
    search = run_cli("--root", str(root), "search", "launch", "--excerpt-chars", "300", "--json")
    ask = run_cli("--root", str(root), "ask", "launch", "--show-prompt")
    no_secret(grep.stdout, search.stdout, ask.stdout)
    assert "Traceback" not in grep.stderr + search.stderr + ask.stderr


# ---------------------------------------------------------------- F3: endless and special files


@pytest.mark.slow
def test_a_pulled_link_to_dev_zero_fails_alone(repo: Path) -> None:
    os.symlink("/dev/zero", repo / "zero.md")
    write(repo, {"b.md": "# Beta\n\nrestic backups at night\n"})
    commit(repo, "zero")  # before the fix the hook read /dev/zero until the memory cap
    assert "b.md" in run_cli("--root", str(repo), "grep", "restic").stdout
    log = (repo / ".brain" / "hook.log").read_text(encoding="utf-8")
    assert "zero.md" not in run_cli("--root", str(repo), "grep", ".", "--limit", "500").stdout
    assert "MemoryError" not in log and "Traceback" not in log
    done = run_cli("--root", str(repo), "reindex", "zero.md", cwd=repo, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr


# ---------------------------------------------------------------- F9: FIFOs


@pytest.mark.slow
def test_reindex_of_a_fifo_fails_at_once(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {"a.md": "# A\n\nhello\n"})
    os.mkfifo(root / "fifo.md")
    done = run_cli("--root", str(root), "reindex", "fifo.md", cwd=root, timeout=120)
    assert done.returncode != 0
    assert "regular file" in done.stdout + done.stderr
    scan = run_cli("--root", str(root), "index", timeout=120)
    assert scan.returncode == 0, scan.stderr


@pytest.mark.slow
def test_a_note_replaced_by_a_fifo_does_not_hang_the_server(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {"a.md": "# A\n\nthe nginx proxy\n", "b.md": "# B\n\nthe nginx upstream\n"})
    assert run_cli("--root", str(root), "index").returncode == 0
    with http_server("--root", str(root)) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        (root / "a.md").unlink()
        os.mkfifo(root / "a.md")
        got = client.get("/file", params={"path": "a.md"})
        assert got.status_code >= 400 and got.json()["error"]
        grep = client.post("/grep", json={"pattern": "nginx"})
        assert grep.status_code == 200
        assert [m["path"] for m in grep.json()["matches"]] == ["b.md"]
        assert client.post("/search", json={"query": "nginx", "excerpt_chars": 200}).status_code == 200


# ---------------------------------------------------------------- F7: symlink loops


@pytest.mark.slow
def test_a_symlink_loop_does_not_crash_index_or_status(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {"real.md": "# Real\n\nstill indexed\n"})
    os.symlink("b.md", root / "a.md")
    os.symlink("a.md", root / "b.md")
    os.symlink("self.md", root / "self.md")
    scan = run_cli("--root", str(root), "index")
    assert scan.returncode == 0, scan.stderr
    status = run_cli("--root", str(root), "status")
    assert "Traceback" not in status.stderr and "clean" in status.stdout, status.stdout + status.stderr
    assert "real.md" in run_cli("--root", str(root), "grep", "still").stdout
    reindex = run_cli("--root", str(root), "reindex", "a.md", cwd=root)
    assert reindex.returncode != 0 and "Traceback" not in reindex.stderr


# ---------------------------------------------------------------- F19


def _notes_with_submodule(tmp_path: Path) -> Path:
    """A notes repo with one note of its own and a submodule `shared/` holding shared.md."""
    sub_origin = init_repo(tmp_path / "shared-notes")
    write(sub_origin, {"shared.md": "# Shared\n\nthe first version of the shared runbook\n"})
    git(sub_origin, "add", "-A")
    git(sub_origin, "commit", "-q", "-m", "v1")
    root = init_repo(tmp_path / "notes")
    write(root, {"a.md": "# A\n\nown note\n"})
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub_origin), "shared")
    git(root, "commit", "-q", "-m", "with submodule")
    return root


@pytest.mark.slow
def test_submodule_notes_follow_the_superproject(tmp_path: Path) -> None:
    root = _notes_with_submodule(tmp_path)
    assert run_cli("--root", str(root), "hooks", "install", "--sync").returncode == 0
    assert run_cli("--root", str(root), "sync").returncode == 0  # the index records the superproject's HEAD
    assert "shared/shared.md" in run_cli("--root", str(root), "grep", "first version").stdout
    sub = root / "shared"
    write(sub, {"shared.md": "# Shared\n\nthe second version of the shared runbook\n"})
    git(sub, "commit", "-q", "-am", "v2")
    commit(root, "bump the submodule")  # the superproject's hook runs
    # grep would read the file on disk either way: status tells whether the index holds it.
    status = json.loads(run_cli("--root", str(root), "status", "--json").stdout)
    assert status["stale"] == [] and status["clean"], status


@pytest.mark.slow
def test_commits_and_checkouts_inside_a_submodule_reach_the_index(tmp_path: Path) -> None:
    root = _notes_with_submodule(tmp_path)
    installed = run_cli("--root", str(root), "hooks", "install", "--sync")
    assert installed.returncode == 0, installed.stderr
    hooks = Path(git(root / "shared", "rev-parse", "--absolute-git-dir").strip()) / "hooks"
    assert str(hooks / "post-commit") in installed.stdout  # the submodule's own hooks folder
    assert run_cli("--root", str(root), "sync").returncode == 0
    sub = root / "shared"
    write(sub, {"shared.md": "# Shared\n\nthe second version, committed inside the submodule\n"})
    commit(sub, "v2 inside the submodule")  # only the submodule's own hooks run
    status = json.loads(run_cli("--root", str(root), "status", "--json").stdout)
    assert status["stale"] == [] and status["clean"], status
    done = git_capped(sub, "checkout", "-q", "HEAD~1")  # what `git submodule update` does
    assert done.returncode == 0, done.stderr
    status = json.loads(run_cli("--root", str(root), "status", "--json").stdout)
    assert status["stale"] == [] and status["clean"], status
    removed = run_cli("--root", str(root), "hooks", "uninstall", "--json")
    assert removed.returncode == 0, removed.stderr
    assert not any("brain-hook" in p.read_text(errors="replace") for p in hooks.iterdir() if p.is_file())


@pytest.mark.slow
def test_a_backslash_in_a_file_name_is_readable_over_http(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {"back\\slash.md": "# Odd\n\nbackslash note body\n"})
    assert run_cli("--root", str(root), "index").returncode == 0
    assert "backslash note body" in run_cli("--root", str(root), "get", "back\\slash.md").stdout
    with http_server("--root", str(root)) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        got = client.get("/file", params={"path": "back\\slash.md"})
        assert got.status_code == 200, got.text
        assert "backslash note body" in got.json()["text"]
        grep = client.post("/grep", json={"pattern": "body", "path": "back\\slash.md"})
        assert grep.status_code == 200 and grep.json()["matches"], grep.text


@pytest.mark.parametrize("bad", ["status==active", "status>=", "status=>2", "status<>2", "=x", "status="])
def test_malformed_where_filters_are_one_line_errors(indexed_example: Path, bad: str) -> None:
    done = run_cli("--root", str(indexed_example), "search", "nginx", "--where", bad)
    line = one_line_error(done)
    assert bad in line and "key=value" in line and "key!=value" in line
    assert done.returncode == 2


@pytest.mark.slow
def test_binary_files_without_nul_bytes_are_not_indexed_as_text(tmp_path: Path) -> None:
    import random

    rng = random.Random(7)
    noise = bytes(b for b in (rng.randrange(1, 256) for _ in range(20000)))
    root = tmp_path / "notes"
    write(root, {"blob.txt": noise, "ok.md": "# OK\n\nplain words\n", "accents.txt": "perché così è già più\n" * 50})
    done = run_cli("--root", str(root), "index", "--json")
    report = json.loads(done.stdout)
    failed = {item["path"]: item["reason"] for item in report["failed"]}
    assert "blob.txt" in failed and "binary" in failed["blob.txt"], report
    assert "accents.txt" in report["added"] and "ok.md" in report["added"], report


# ---------------------------------------------------------------- F20


@pytest.mark.slow
def test_scan_full_must_be_a_boolean(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {"a.md": "# A\n\nhello\n"})
    assert run_cli("--root", str(root), "index").returncode == 0
    with http_server("--root", str(root)) as server, httpx.Client(base_url=server.url, timeout=120) as client:
        for value in ("yes", 1, "true", None):
            response = client.post("/index", json={"full": value})
            assert 400 <= response.status_code < 500, (value, response.text)
            body = response.json()
            assert body["field"] == "full" and body["status"] == response.status_code and body["error"]
        assert client.post("/index", json={"full": False}).json()["rebuilt"] is False
        for route, method in (("/nope", "GET"), ("/search", "GET"), ("/file", "DELETE")):
            answer = client.request(method, route)
            assert 400 <= answer.status_code < 500
            assert set(answer.json()) >= {"error", "field", "status"}, answer.text
        short = client.post("/search", json={"query": "hello", "excerpt_chars": 5})
        assert short.status_code in (400, 422) and short.json()["field"] == "excerpt_chars", short.text


def test_a_non_ascii_token_authenticates(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {"a.md": "# A\n\nhello\n"})
    token = "pässwörd-ñ-\u4e2d\u6587-0123456789"
    with http_server("--root", str(root), env={"BRAIN_HTTP_TOKEN": token}) as server:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            right = client.get("/corpora", headers={"Authorization": b"Bearer " + token.encode("utf-8")})
            assert right.status_code == 200, right.text
            wrong = client.get("/corpora", headers={"Authorization": b"Bearer " + token[:-1].encode("utf-8")})
            assert wrong.status_code == 401 and wrong.json()["field"] == "Authorization"
            latin = client.get("/corpora", headers={"Authorization": b"Bearer " + token.encode("latin-1", "replace")})
            assert latin.status_code == 401


@pytest.mark.slow
def test_control_and_bidi_characters_in_names_are_escaped_in_text_views(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    names = ["line\nbreak.md", "evil\u202egnp.md", "tab\there.md", "esc\x1b[31mred.md"]
    write(root, {name: "# Odd\n\nstrange name marker\n" for name in names})
    scan = run_cli("--root", str(root), "index")
    assert scan.returncode == 0, scan.stderr
    outputs = [
        run_cli("--root", str(root), "search", "strange name marker", "--mode", "bm25").stdout,
        run_cli("--root", str(root), "grep", "marker").stdout,
    ]
    for output in outputs:
        for raw in ("\u202e", "\x1b", "line\nbreak", "tab\there"):
            assert raw not in output, output
        assert "\\u202e" in output and "\\n" in output, output
    as_json = json.loads(run_cli("--root", str(root), "grep", "marker", "--json").stdout)
    assert sorted(m["path"] for m in as_json["matches"]) == sorted(names)  # JSON keeps the real names


@pytest.mark.slow
def test_http_errors_name_the_input_they_are_about(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {"a.md": "# A\n\nhello\n"})
    assert run_cli("--root", str(root), "index").returncode == 0
    write(root, {"new.md": "# New\n\nnot indexed yet\n"})
    with http_server("--root", str(root)) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        unindexed = client.get("/file", params={"path": "new.md"})
        assert unindexed.status_code == 404 and unindexed.json()["field"] == "path", unindexed.text
        grep = client.post("/grep", json={"pattern": "x", "path": "new.md"})
        assert grep.status_code == 404 and grep.json()["field"] == "path", grep.text
        past = client.get("/file", params={"path": "a.md", "offset": 10_000})
        assert past.status_code == 400 and past.json()["field"] == "offset", past.text
        for response in (unindexed, grep, past):
            assert set(response.json()) >= {"error", "field", "status"}


def test_refused_links_are_named_by_index_and_status(tmp_path: Path, secret: Path) -> None:
    root = tmp_path / "notes"
    write(root, {"a.md": "# A\n\nhello\n"})
    os.symlink(secret, root / "out.md")
    os.symlink("loop.md", root / "loop.md")
    os.mkfifo(root / "pipe.md")
    scan = json.loads(run_cli("--root", str(root), "index", "--json").stdout)
    warned = {item["path"]: item["reason"] for item in scan["warnings"]}
    assert "outside" in warned["out.md"] and "loop" in warned["loop.md"] and "FIFO" in warned["pipe.md"], scan
    status = json.loads(run_cli("--root", str(root), "status", "--json").stdout)
    assert {item["path"] for item in status["unreadable"]} == {"out.md", "loop.md", "pipe.md"}, status
    assert status["clean"], status
