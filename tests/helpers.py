"""Plain helpers the tests share: notes folders, git repos, PDFs and the brain CLI as a real process.

Fixtures live in conftest.py; tests import these with `from helpers import ...` (tests/ is on
sys.path the same way it is for conftest.py: pytest's rootdir-relative insertion of tests/).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
EXAMPLE = PROJECT / "examples" / "brain"


def write(root: Path, files: dict[str, str | bytes]) -> None:
    """Create files under root (parents made); str is written as UTF-8."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def pdf_of_pages(pages: list[str]) -> bytes:
    """A PDF with one page per text, each line of it drawn in Helvetica (reportlab)."""
    import io

    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    for text in pages:
        for n, line in enumerate(text.split("\n")):
            pdf.drawString(72, 760 - 14 * n, line)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def git(root: Path, *args: str) -> str:
    """Run git in root and return its stdout (raises on failure)."""
    out = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return out.stdout


def init_repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "test@example.com")
    git(root, "config", "user.name", "Test")
    git(root, "config", "commit.gpgsign", "false")
    return root


def committed_notes(root: Path, files: dict[str, str | bytes]) -> Path:
    """A new git repo at `root` holding `files` in one commit."""
    init_repo(root)
    write(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "notes")
    return root


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`brain ARGS` as a real process (python -m brain), capturing output."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(PROJECT / "tools" / "lib") + os.pathsep + full_env.get("PYTHONPATH", "")
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "brain", *args],
        cwd=cwd or PROJECT, env=full_env, capture_output=True, text=True, timeout=timeout,
    )


def invoke(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`brain ARGS` in this process: brain.cli.main under click's CliRunner isolation, which swaps in
    its own stdin, stdout, stderr and os.environ (env's names set for the call, then restored).

    The same exit code and the same one-line stderr as a real process (main turns every error into
    both), in a fraction of its time: for what needs no process of its own (no imports, start-up,
    terminals, signals or cwd). An unexpected exception is raised here, where a process would print
    its traceback and exit 1.
    """
    from click.testing import CliRunner

    from brain.cli import main

    with CliRunner().isolation(env=env) as (stdout, stderr, _):
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        sys.stdout.flush()
        sys.stderr.flush()
    return subprocess.CompletedProcess(
        ["brain", *args], code, stdout.getvalue().decode("utf-8"), stderr.getvalue().decode("utf-8")
    )
