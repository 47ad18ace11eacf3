"""Shared fixtures: real notes folders in tmp dirs, real git repos, the real bundled model.

The model loads once per test session (embeddings keeps loaded models per process).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
EXAMPLE = PROJECT / "examples" / "brain"

# Tests never reach the network, and never read the developer's own settings.
# BRAIN_FAULT_* are the fault suite's own knobs (seed, trial counts), not brain settings.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
for _name in [n for n in os.environ if n.startswith("BRAIN_") and not n.startswith("BRAIN_FAULT_")]:
    del os.environ[_name]
# Approvals of brain.toml values (`brain trust`) live in the user's config folder: the tests
# keep theirs in a folder of the session's own, for this process and every one it starts.
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="brain-tests-config-")


def write(root: Path, files: dict[str, str | bytes]) -> None:
    """Create files under root (parents made); str is written as UTF-8."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


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


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`brain ARGS` as a real process (python -m brain), capturing output."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(PROJECT / "tools" / "lib") + os.pathsep + full_env.get("PYTHONPATH", "")
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "brain", *args], cwd=cwd or PROJECT, env=full_env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def example_notes(tmp_path: Path) -> Path:
    """A private copy of the shipped example notes folder, as a git repo with one commit."""
    root = tmp_path / "notes"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".brain"))
    init_repo(root)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "notes")
    return root


@pytest.fixture(scope="session")
def indexed_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example notes indexed once for the whole session: read-only tests share it."""
    root = tmp_path_factory.mktemp("shared") / "notes"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".brain"))
    from brain import Brain

    Brain(root).index()
    return root
