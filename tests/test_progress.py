"""The indexing progress bar: on a terminal only (stderr), counting chunks and PDF pages, never on stdout."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from helpers import PROJECT, run_cli, write


def two_page_pdf() -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4)
    for number in (1, 2):
        pdf.drawString(50, 800, f"Page {number} of the boiler manual: bleed the radiators every autumn.")
        pdf.showPage()
    pdf.save()
    return out.getvalue()


def index_on_a_terminal(root: Path) -> tuple[str, str, int]:
    """`brain index` with stderr on a real pseudo-terminal (100 columns) and stdout on a pipe:
    (terminal, stdout, exit)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    env = {**os.environ, "PYTHONPATH": str(PROJECT / "tools" / "lib")}
    process = subprocess.Popen([sys.executable, "-m", "brain", "--root", str(root), "index"],
                               stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        seen += data
    os.close(master)
    assert process.stdout is not None
    out = process.stdout.read().decode()
    return seen.decode(), out, process.wait(timeout=300)


def test_the_bar_reads_then_embeds_names_the_file_says_when_search_works_and_stays(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {
        "a.md": "# Boiler\n\nThe boiler pressure should read 1.5 bar when cold.\n",
        "b.md": "# Radiators\n\nBleed them in October, starting upstairs.\n",
        "manual.pdf": two_page_pdf(),
    })
    terminal, out, code = index_on_a_terminal(root)
    assert code == 0, terminal
    screens = terminal.replace("\r\n", "\n").replace("\r", "\n").splitlines()
    # The first line says when search works: each file by its words once read, by meaning once embedded.
    assert screens[0].startswith(
        "brain: reading 3 files: each is searchable by its words as soon as it is read"
    ), screens[0]
    # Stage 1 counts files (its total known at once: it never jumps) and names the file being read.
    reading = [line for line in screens if line.startswith("reading:")]
    assert reading and all("/3 [" in line for line in reading), reading
    assert any("manual.pdf" in line for line in reading) and any("loading the tokenizer" in line for line in reading)
    assert any("loading the embedding model" in line for line in reading)
    # Stage 2 counts chunks, with their rate; it stays on screen when done.
    embedded = int(re.search(r"\((\d+) chunks embedded", out).group(1))
    final = [line for line in screens if line.startswith("indexed:")]
    assert final, terminal
    assert f"| {embedded}/{embedded} [" in final[-1] and "chunk/s" in final[-1], final[-1]
    # stdout holds the scan report alone.
    assert out.startswith("indexed: 3 added") and "\r" not in out and "%|" not in out


def test_no_bar_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    write(tmp_path / "notes", {"a.md": "# Boiler\n\nThe boiler pressure should read 1.5 bar when cold.\n"})
    result = run_cli("--root", str(tmp_path / "notes"), "index")
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and result.stdout.startswith("indexed: 1 added")


def test_the_bar_s_library_is_a_declared_dependency() -> None:
    """tqdm drew the bar but arrived only through another package (newcomer round two, item 12)."""
    import tomllib

    from helpers import PROJECT

    declared = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert any(d.split(">")[0].split("=")[0].strip() == "tqdm" for d in declared)


@pytest.mark.slow
def test_the_bar_ticks_while_one_batch_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Newcomer round two, item 2: the bar sat at `0/708 [00:02<?` for 110 s while a batch ran. With no
    progress at all for over two seconds it is redrawn several times and its clock moves."""
    import time

    from brain.progress import IndexProgress

    drawn = io.StringIO()
    monkeypatch.setattr(sys, "stderr", drawn)
    bar = IndexProgress(enabled=True)
    bar.start_embedding(708)
    time.sleep(2.3)  # one long batch: nothing is reported meanwhile
    bar.close(False)
    shown = drawn.getvalue()
    assert shown.count("\r") >= 3, shown
    assert {"00:00", "00:01", "00:02"} <= set(re.findall(r"\[(\d\d:\d\d)", shown)), shown
