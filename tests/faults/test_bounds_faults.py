"""Hostile input against every parser and door: each bound holds, and the file or request that breaks it fails alone.

Each test reproduces one finding of the attack (F4, F5, F6, F8, F10, F11, F17,
F18) with real processes: the CLI, `brain serve` on loopback and `brain mcp`
over stdio. A hang fails through the subprocess or client *timeout*; nothing
here asserts how long anything took.
"""

from __future__ import annotations

import json
import os
import random
import resource
import socket
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from helpers import run_cli, write
from live_servers import HttpServer, brain_env, http_server, mcp_session
from tmpfs import small_disk

LETTERS = "abcdefghij"
HANG = 120  # seconds: far beyond what the bounded work needs, far below what the unbounded work took


def index_json(root: Path, *extra: str, timeout: float = HANG) -> dict[str, Any]:
    """`brain index --json` on `root`; it must finish and exit 0."""
    done = run_cli("--root", str(root), "index", "--json", *extra, timeout=timeout)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def reasons(report: dict[str, Any], key: str) -> dict[str, str]:
    return {item["path"]: item["reason"] for item in report[key]}


# ---------------------------------------------------------------- F4, F5: frontmatter


@pytest.mark.slow
def test_f4_deeply_nested_frontmatter_does_not_kill_index_or_status(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    deep = "[" * 5000 + "]" * 5000
    write(root, {
        "deep.md": f"---\na: {deep}\n---\n# Deep\nthe unicorn paragraph survives\n",
        "deep-map.md": "---\na: " + "{b: " * 3000 + "1" + "}" * 3000 + "\n---\nthe griffin paragraph\n",
        "bad-date.md": "---\ndate: 2024-13-45\n---\nthe phoenix paragraph\n",
        "fine.md": "---\ntags: [a, b]\n---\nan ordinary note\n",
    })
    report = index_json(root)
    assert report["failed"] == []
    warned = reasons(report, "warnings")
    assert "deep" in warned["deep.md"] and "metadata ignored" in warned["deep.md"]
    assert "metadata ignored" in warned["deep-map.md"]
    assert "metadata ignored" in warned["bad-date.md"]
    assert "fine.md" not in warned
    # The body is indexed (line numbers kept) and found.
    found = run_cli("--root", str(root), "search", "unicorn paragraph", "--json", "--mode", "bm25", timeout=HANG)
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)["results"]][:1] == ["deep.md"]
    status = run_cli("--root", str(root), "status", "--json", timeout=HANG)
    assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr


def _limited(memory_bytes: int) -> Any:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    return apply


@pytest.mark.slow
def test_f5_alias_bomb_stays_bounded(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    levels = ["a: &a [" + ",".join(['"lol"'] * 9) + "]"]
    for prev, name in zip("abcdefgh", "bcdefghi"):
        levels.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    bomb = "\n".join(levels) + "\n"
    assert len(bomb) < 500  # a few hundred bytes that expand to gigabytes
    small_bomb = "\n".join(levels[:6]) + "\n"  # about 40 MB of metadata once expanded
    write(root, {
        "bomb.md": f"---\n{bomb}---\nthe basilisk paragraph\n",
        "small-bomb.md": f"---\n{small_bomb}---\nthe manticore paragraph\n",
        "anchors.md": "---\nbase: &b {x: 1}\ncopy: *b\n---\na note that uses one alias\n",
    })
    # Run under a 3 GB address-space limit: unbounded expansion dies of MemoryError
    # instead of taking the machine's memory.
    done = subprocess.run(
        [sys.executable, "-m", "brain", "--root", str(root), "index", "--json"],
        env=brain_env(), capture_output=True, text=True, timeout=HANG, preexec_fn=_limited(3 * 1024**3),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    warned = reasons(report, "warnings")
    assert "alias" in warned["bomb.md"] or "expands" in warned["bomb.md"], warned
    assert "metadata ignored" in warned["small-bomb.md"]
    assert "anchors.md" not in warned  # an ordinary alias still works
    database = root / ".brain" / "brain.sqlite"
    assert database.stat().st_size < 5_000_000  # no megabytes of expanded metadata stored
    found = run_cli("--root", str(root), "search", "basilisk", "--json", "--mode", "bm25", "--where", "copy=x",
                    timeout=HANG)
    assert found.returncode == 0, found.stderr


# ---------------------------------------------------------------- F6: super-linear heading regex


@pytest.mark.slow
def test_f6_heading_with_thousands_of_spaces_indexes(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {
        "spaces.md": "# a" + " " * 6000 + "b c\nthe kraken paragraph\n",
    })
    report = index_json(root)
    assert report["failed"] == []
    found = run_cli("--root", str(root), "search", "kraken", "--json", "--mode", "bm25", timeout=HANG)
    hits = json.loads(found.stdout)["results"]
    assert hits[0]["path"] == "spaces.md" and hits[0]["heading_path"].startswith("# a")


def test_f6_headings_keep_their_meaning() -> None:
    """The linear heading rule still reads closing hashes the CommonMark way."""
    from brain.chunking import _scan_lines

    lines = ["## Title ##", "under the title", "## C#", "about C#", "# a" + " " * 3000 + "b c #", "x", "### ###", "y"]
    _, paths = _scan_lines(lines, markdown=True)
    assert paths[1] == "## Title" and paths[3] == "## C#"
    assert paths[5] == "# a" + " " * 3000 + "b c" and paths[7] == "# a" + " " * 3000 + "b c > ### "


@pytest.mark.slow
def test_f6_where_filter_with_many_spaces_parses_in_linear_time(served: tuple[Any, Path]) -> None:
    server, _ = served
    with httpx.Client(base_url=server.url, timeout=HANG) as client:
        spaced = client.post("/search", json={"query": "wyvern", "where": ["a=b" + " " * 500_000 + "c"]})
        assert spaced.status_code == 200, spaced.text
        assert spaced.json()["results"] == []


# ---------------------------------------------------------------- F8: PDF whose pages share one huge content stream


def pdf_file(objects: list[bytes]) -> bytes:
    """A PDF of these numbered objects (1 is the catalog), with its cross-reference table and trailer."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def hostile_pdf(pages: int, stream_bytes: int) -> bytes:
    """A small PDF whose `pages` pages all draw the same `stream_bytes` content stream (compressed)."""
    line = b"BT /F1 12 Tf 72 712 Td (the quick brown fox jumps) Tj ET\n"
    packed = zlib.compress(line * (stream_bytes // len(line)), 9)
    kids = " ".join(f"{5 + i} 0 R" for i in range(pages)).encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(pages).encode() + b" >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length " + str(len(packed)).encode() + b" /Filter /FlateDecode >>\nstream\n" + packed + b"\nendstream",
    ]
    objects += [
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    ] * pages
    return pdf_file(objects)


@pytest.mark.slow
def test_f8_pdf_sharing_one_huge_stream_fails_alone(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    data = hostile_pdf(300, 1_000_000)
    assert len(data) < 100_000
    write(root, {"bomb.pdf": data, "small.pdf": hostile_pdf(2, 2_000), "note.md": "the hydra paragraph\n"})
    report = index_json(root)
    failed = reasons(report, "failed")
    assert list(failed) == ["bomb.pdf"], failed
    assert "PDF" in failed["bomb.pdf"] and "limit" in failed["bomb.pdf"]
    assert report["counts"]["added"] == 2
    status = run_cli("--root", str(root), "status", "--json", timeout=HANG)
    assert status.returncode == 0, status.stderr
    unreadable = {item["path"]: item["reason"] for item in json.loads(status.stdout)["unreadable"]}
    assert unreadable == {"bomb.pdf": failed["bomb.pdf"]}


def pdf_with_content(content: bytes) -> bytes:
    """A one-page PDF that draws `content` (an uncompressed content stream) in Helvetica."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(content)).encode() + b" >>\nstream\n" + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    return pdf_file(objects)


@pytest.mark.slow
def test_a_pdf_nested_100000_deep_fails_alone_with_that_reason(tmp_path: Path) -> None:
    """Reliability round two, item 15: it was reported as "no extractable text", the wrong reason."""
    deep = b"[" * 100_000 + b"(hidden)" + b"]" * 100_000
    root = tmp_path / "notes"
    write(root, {
        "deep-text.pdf": pdf_with_content(b"BT /F1 12 Tf 10 100 Td " + deep + b" TJ ET"),
        "deep-array.pdf": pdf_with_content(deep + b" BT /F1 12 Tf 10 100 Td (after) Tj ET"),
        "plain.pdf": pdf_with_content(b"BT /F1 12 Tf 10 100 Td (the plain lighthouse) Tj ET"),
    })
    report = index_json(root)
    failed = reasons(report, "failed")
    # pdfium reads past a deep array to the text after it; text inside the nesting is lost, and said why.
    assert sorted(failed) == ["deep-text.pdf"], failed
    for reason in failed.values():
        assert "too deeply" in reason and "no extractable text" not in reason and "Recursion" not in reason
    assert report["counts"]["added"] == 2
    found = run_cli("--root", str(root), "grep", "after", "--json", timeout=HANG)
    assert [m["path"] for m in json.loads(found.stdout)["matches"]] == ["deep-array.pdf"], found.stdout


# ---------------------------------------------------------------- F10, F11: queries and patterns over HTTP


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    root = tmp_path_factory.mktemp("served") / "notes"
    write(root, {
        "alpha.md": "# Alpha\nthe wyvern and the lantern\n",
        "big.txt": "small for now\n",
    })
    index_json(root)
    # The note grows to 10 MB of random words after indexing (grep reads files as they
    # are now), with one known line: 13.
    rng = random.Random(13)
    words = ["".join(rng.choice(LETTERS) for _ in range(6)) for _ in range(100_000)]
    lines = [" ".join(words[(i * 10 + k) % len(words)] for k in range(10)) for i in range(150_000)]
    lines[12] = "the needle w000123x"
    (root / "big.txt").write_text("\n".join(lines), encoding="utf-8")
    with http_server("--root", str(root)) as server:
        yield server, root


def test_f10_query_length_is_capped_and_bodies_are_bounded(served: tuple[Any, Path]) -> None:
    server, _ = served
    with httpx.Client(base_url=server.url, timeout=HANG) as client:
        words = " ".join(f"q{n}" for n in range(120_000))  # about 1 MB of distinct words
        too_long = client.post("/search", json={"query": words})
        assert too_long.status_code == 400
        body = too_long.json()
        assert body["field"] == "query" and "characters" in body["error"] and "\n" not in body["error"]
        huge = client.post("/search", content=b'{"query": "' + b"x" * 3_000_000 + b'"}',
                           headers={"content-type": "application/json"})
        assert huge.status_code == 413 and huge.json()["status"] == 413
        fine = client.post("/search", json={"query": "wyvern lantern " * 100})
        assert fine.status_code == 200 and fine.json()["results"][0]["path"] == "alpha.md"
    cli = run_cli("search", "q " * 1500, "--root", str(served[1]), timeout=HANG)
    assert cli.returncode == 2 and cli.stderr.count("\n") == 1 and "characters" in cli.stderr


def test_f11_pattern_size_is_capped_and_grep_stays_bounded(served: tuple[Any, Path]) -> None:
    server, _ = served
    with httpx.Client(base_url=server.url, timeout=HANG) as client:
        # 100 KB of alternatives over the note's own letters, none of which occurs: RE2's DFA runs
        # out of memory on it and its fallback engine took minutes over the 10 MB note.
        rng = random.Random(7)
        alternation = "|".join("".join(rng.choice(LETTERS) for _ in range(6)) + "k" for _ in range(12_500))
        refused = client.post("/grep", json={"pattern": alternation, "path": "big.txt"})
        assert refused.status_code == 400
        assert refused.json()["field"] == "pattern" and "characters" in refused.json()["error"]
        # A pattern near the limit still greps the 10 MB and answers.
        allowed = "|".join("".join(rng.choice(LETTERS) for _ in range(6)) + "k" for _ in range(240)) + "|w000123x"
        assert len(allowed) <= 2000
        found = client.post("/grep", json={"pattern": allowed, "path": "big.txt"})
        assert found.status_code == 200, found.text
        assert [m["line"] for m in found.json()["matches"]] == [13]


# ---------------------------------------------------------------- F17: connections that never finish their headers


@contextmanager
def serve_with_few_descriptors(root: Path, descriptors: int) -> Iterator[HttpServer]:
    """`brain serve` with a low open-file limit (as many systems set by default)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))

    with http_server("--root", str(root), timeout=HANG, preexec_fn=limit) as server:
        yield server


@pytest.mark.slow
def test_f17_slow_header_connections_cannot_lock_the_server_out(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {"note.md": "the chimera paragraph\n"})
    index_json(root)
    with serve_with_few_descriptors(root, 256) as server:
        port = server.port
        attackers: list[socket.socket] = []
        try:
            for _ in range(300):
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                attackers.append(sock)
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
                for _ in range(3):
                    assert client.get("/health").status_code == 200
                found = client.post("/search", json={"query": "chimera", "mode": "bm25"})
                assert found.status_code == 200 and found.json()["results"][0]["path"] == "note.md"
            # A connection that never finishes its headers is closed by the server.
            last = attackers[-1]
            last.settimeout(HANG)
            try:
                assert last.recv(100) == b""
            except ConnectionResetError:
                pass
        finally:
            for sock in attackers:
                sock.close()
        time.sleep(1)  # let the server write whatever it logs about them
    log = server.log()
    assert len(log) < 20_000, log[:3000]
    assert "Traceback" not in log


# ---------------------------------------------------------------- F18: every error in the documented shape


def test_f18_bad_paths_over_http_are_json_errors(served: tuple[Any, Path]) -> None:
    server, root = served
    with httpx.Client(base_url=server.url, timeout=HANG) as client:
        for response in (
            client.get("/file", params={"path": "a" * 300 + ".md"}),
            client.get("/file", params={"path": "a/" * 3000 + "x.md"}),
            client.post("/grep", content=b'{"pattern": "x", "path": "\\ud800.md"}',
                        headers={"content-type": "application/json"}),
            client.post("/grep", json={"pattern": "x", "path": "b" * 300 + ".md"}),
            client.post("/search", content=b'{"query": "x", "path_prefix": "\\ud800"}',
                        headers={"content-type": "application/json"}),
        ):
            assert 400 <= response.status_code < 500, response.text
            body = response.json()
            assert set(body) >= {"error", "field", "status"} and body["status"] == response.status_code
            assert body["field"] in ("path", "path_prefix"), body
            assert "\n" not in body["error"] and str(root) not in body["error"]


@pytest.mark.slow
def test_f18_mcp_errors_never_show_the_notes_folder(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {"note.md": "the sphinx paragraph\n"})
    index_json(root)
    log = tmp_path / "mcp.log"

    async def check() -> list[str]:
        messages = []
        async with mcp_session("--root", str(root), log=log) as session:
            for tool, arguments in [
                ("memory_get_file", {"path": "a" * 300 + ".md"}),
                ("memory_get_file", {"path": "a/" * 3000 + "x.md"}),
                ("memory_grep", {"pattern": "x", "path": "d/" * 2100 + "x.md"}),
                ("memory_grep", {"pattern": "x", "path": "c" * 300 + ".md"}),
            ]:
                result = await session.call_tool(tool, arguments)
                assert result.is_error
                messages.append(result.content[0].text)
            assert not (await session.call_tool("memory_search", {"query": "sphinx"})).is_error
        return messages

    for message in anyio.run(check):
        assert str(root) not in message and str(tmp_path) not in message, message
        assert "\n" not in message and "internal error" not in message, message
    assert "Traceback" not in log.read_text()


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("brain: "), done.stderr
    return lines[0]


def fill(disk: Path, leave: int) -> None:
    """Fill the disk but for about `leave` bytes, with a file in a hidden folder (never indexed)."""
    filler = disk / ".filler"
    filler.mkdir()
    with open(filler / "fill", "wb") as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError:
            pass
    size = (filler / "fill").stat().st_size
    os.truncate(filler / "fill", max(0, size - leave))


@pytest.mark.parametrize("room", [100_000, 400_000])
@pytest.mark.slow
def test_f18_full_disk_is_a_one_line_error(tmp_path: Path, room: int) -> None:
    # With 400 KB free the disk fills at the scan's last COMMIT (a traceback before);
    # with 100 KB while the index is being created.
    with small_disk(tmp_path / "disk", "4m") as disk:
        root = disk / "notes"
        # Large on disk, cheap to embed: nearly every chunk has the same text, embedded once.
        text = "parola " * 10_000
        write(root, {f"note{n}.md": f"# Note {n}\n{text}\n" for n in range(2)})
        fill(disk, room)
        full = one_line_error(run_cli("--root", str(root), "index", timeout=HANG))
        assert "full" in full, full


@pytest.mark.slow
def test_f18_read_only_index_is_a_one_line_error(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {"note.md": "the siren paragraph\n"})
    index_json(root)
    write(root, {"later.md": "a note added while the index is read-only\n"})
    database = str(root / ".brain" / "brain.sqlite")
    # The index file alone read-only (its folder writable): a bind mount, since root ignores file modes.
    bound = subprocess.run(["mount", "--bind", database, database], capture_output=True, text=True)
    if bound.returncode != 0:
        pytest.skip(
            f"cannot bind-mount here ({bound.stderr.strip() or 'mount failed'}); run as root to test a read-only index"
        )
    try:
        assert subprocess.run(["mount", "-o", "remount,bind,ro", database], capture_output=True).returncode == 0
        read_only = one_line_error(run_cli("--root", str(root), "index", timeout=HANG))
        assert "read-only" in read_only, read_only
        found = run_cli("--root", str(root), "search", "siren", "--json", timeout=HANG)
        assert found.returncode == 0 and json.loads(found.stdout)["results"][0]["path"] == "note.md"
        with http_server("--root", str(root)) as server:
            scan = httpx.post(server.url + "/index", timeout=HANG)
            assert scan.status_code == 503 and "read-only" in scan.json()["error"], scan.text
            assert str(root) not in scan.text
        log = tmp_path / "mcp.log"

        async def check() -> str:
            async with mcp_session("--root", str(root), log=log) as session:
                result = await session.call_tool("memory_index", {})
                assert result.is_error
                return str(result.content[0].text)

        message = anyio.run(check)
        assert "read-only" in message and "\n" not in message and str(root) not in message, message
        assert "Traceback" not in log.read_text()
    finally:
        subprocess.run(["umount", "-l", database], capture_output=True)
