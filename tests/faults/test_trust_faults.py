"""A repository's own brain.toml is untrusted: what it says may not send notes or credentials anywhere.

A teammate's commit of `store = "postgresql://…"` or of `[ask] base_url` plus
`api_key_env` must not make this machine connect there (the hook on a pull, an
`ask`, the MCP server) until its user approved that exact value with `brain
trust`; a changed value asks again; settings that only cost time are bounded.
Real processes: git with brain's hook, the CLI, the MCP server, and listeners on
loopback that count who calls them. Reliability review round two, item 1.
"""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from helpers import committed_notes, git, run_cli, write
from live_servers import brain_env, mcp_session

NOTES = {
    "projects/alpha.md": "# Alpha\n\nThe alpha project moves the clinic's invoices to the new server.\n",
    "diary/2025-01-20.md": "# 20 gennaio\n\nRinnovato il certificato SSL di nginx.\n",
}
TOKEN = "ghp_the-victims-own-token"


class Listener:
    """A TCP port on loopback that accepts and counts connections (a PostgreSQL server's stand-in)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    one = Listener()
    yield one
    one.sock.close()


class ModelEndpoint(http.server.ThreadingHTTPServer):
    """An OpenAI-compatible endpoint's stand-in that records every request it gets (headers and body)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, str]] = []
        super().__init__(("127.0.0.1", 0), _Recorder)


class _Recorder(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8", "replace")
        self.server.requests.append({"authorization": self.headers.get("Authorization", ""), "body": body})  # type: ignore[attr-defined]
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[ModelEndpoint]:
    server = ModelEndpoint()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def _hooked_repo(root: Path) -> Path:
    committed_notes(root, NOTES)
    assert run_cli("--root", str(root), "index").returncode == 0
    assert run_cli("--root", str(root), "hooks", "install", "--sync").returncode == 0
    return root


def _commit(root: Path, files: dict[str, str]) -> None:
    write(root, files)
    git(root, "add", "-A")
    done = subprocess.run(["git", "commit", "-q", "-m", "teammate's change"], cwd=root,
                          env=brain_env({"BRAIN_HOOK": "sync"}), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_a_committed_store_is_not_used_by_the_hook_until_approved(tmp_path: Path, listener: Listener) -> None:
    root = _hooked_repo(tmp_path / "notes")
    hostile = f"postgresql://mallory@127.0.0.1:{listener.port}/notes"
    _commit(root, {"brain.toml": f'store = "{hostile}"\n',
                   "projects/beta.md": "# Beta\n\nUncommitted plans for beta.\n"})
    log = (root / ".brain" / "hook.log").read_text(encoding="utf-8")
    assert listener.connections == 0, log  # before the fix the hook connected and sent PGPASSWORD
    assert "store = 'postgresql://mallory@127.0.0.1" in log and "brain trust" in log
    # The commit was indexed where the index already was: the local file.
    found = run_cli("--root", str(root), "search", "beta plans", "--mode", "bm25", "--json")
    assert found.returncode == 0 and json.loads(found.stdout)["results"][0]["path"] == "projects/beta.md"

    # Off a terminal, `brain trust` shows the value and approves nothing without --yes.
    asked = run_cli("--root", str(root), "trust")
    assert asked.returncode == 2 and hostile in asked.stdout and "--yes" in asked.stderr
    status = run_cli("--root", str(root), "status")
    assert status.returncode in (0, 1) and listener.connections == 0
    assert "not used    store = 'postgresql://mallory@127.0.0.1" in status.stdout
    shown = run_cli("--root", str(root), "config", "show", "--json")
    row = next(r for r in json.loads(shown.stdout) if r["key"] == "store")
    assert row["value"] == "" and "not approved" in row["origin"]

    # Approved: this machine's user chose to use that server, so brain connects to it.
    approved = run_cli("--root", str(root), "trust", "--yes")
    assert approved.returncode == 0 and "approved 1 value" in approved.stdout
    assert run_cli("--root", str(root), "status", timeout=120).returncode != 0  # the stand-in speaks no PostgreSQL
    assert listener.connections >= 1

    # A changed value is a new value: not used until approved again.
    other = Listener()
    try:
        _commit(root, {"brain.toml": f'store = "postgresql://mallory@127.0.0.1:{other.port}/notes"\n'})
        assert other.connections == 0
        assert run_cli("--root", str(root), "search", "alpha", "--mode", "bm25").returncode == 0
        assert other.connections == 0
    finally:
        other.sock.close()


@pytest.mark.slow
def test_a_committed_model_endpoint_gets_no_token_and_no_notes(
    tmp_path: Path, endpoint: ModelEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = committed_notes(tmp_path / "notes", NOTES)
    assert run_cli("--root", str(root), "index").returncode == 0
    url = f"http://127.0.0.1:{endpoint.server_address[1]}/v1"
    write(root, {"brain.toml": f'[ask]\nmodel = "gpt-4o"\nbase_url = "{url}"\napi_key_env = "GITHUB_TOKEN"\n'})
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)

    asked = run_cli("--root", str(root), "ask", "which project moves the invoices?", "--json")
    assert asked.returncode == 0, asked.stderr
    assert endpoint.requests == []  # before the fix: the token and the clinic's note went there
    answer = json.loads(asked.stdout)
    assert answer["answer"] is None and answer["sources"] and "brain trust" in asked.stderr

    async def through_mcp() -> dict[str, object]:
        async with mcp_session("--root", str(root), env=brain_env({"GITHUB_TOKEN": TOKEN})) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert tools["memory_ask"].annotations.open_world_hint is False  # nothing leaves this machine
            result = await session.call_tool("memory_ask", {"question": "which project moves the invoices?"})
            return json.loads(result.content[0].text)

    assert anyio.run(through_mcp)["answer"] is None and endpoint.requests == []

    # Approved by this machine's user: now the endpoint is the user's choice, and it is called.
    assert run_cli("--root", str(root), "trust", "--yes").returncode == 0
    run_cli("--root", str(root), "ask", "which project moves the invoices?", timeout=120)
    assert endpoint.requests and endpoint.requests[0]["authorization"] == f"Bearer {TOKEN}"


def test_config_set_approves_what_this_user_types(tmp_path: Path, endpoint: ModelEndpoint) -> None:
    root = committed_notes(tmp_path / "notes", NOTES)
    url = f"http://127.0.0.1:{endpoint.server_address[1]}/v1"
    assert run_cli("--root", str(root), "config", "set", "ask.base_url", url).returncode == 0
    shown = run_cli("--root", str(root), "config", "show", "--json")
    row = next(r for r in json.loads(shown.stdout) if r["key"] == "ask.base_url")
    assert row["value"] == url and "not approved" not in row["origin"]
    assert run_cli("--root", str(root), "trust").stdout.startswith("nothing to approve")
    assert run_cli("--root", str(root), "trust", "--revoke").stdout.startswith("forgot 1 approved value")
    row = next(
        r
        for r in json.loads(run_cli("--root", str(root), "config", "show", "--json").stdout)
        if r["key"] == "ask.base_url"
    )
    assert row["value"] == "" and "not approved" in row["origin"]


@pytest.mark.parametrize(("toml", "key"), [
    ("[chunking]\nchunk_chars = 1\noverlap_chars = 0\n", "chunking.chunk_chars must be between 200 and 100000"),
    ("[chunking]\nchunk_chars = 1600\noverlap_chars = 1599\n", "chunking.overlap_chars must be at most half of"),
    ("[search]\ncandidates = 100000000\n", "search.candidates must be between 1 and 10000"),
])
def test_settings_that_only_cost_time_are_bounded(tmp_path: Path, toml: str, key: str) -> None:
    root = committed_notes(tmp_path / "notes", {**NOTES, "brain.toml": toml})
    done = run_cli("--root", str(root), "index")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert key in done.stderr and "brain config set" in done.stderr
    assert not (root / ".brain").exists()  # nothing written
