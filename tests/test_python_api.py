"""docs/python-api.md: its example runs as written, and its table names every public method of brain.Brain."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from brain import Brain
from helpers import PROJECT, write

DOC = PROJECT / "docs" / "python-api.md"


def test_the_table_names_every_public_method() -> None:
    text = DOC.read_text(encoding="utf-8")
    public = {name for name, _ in inspect.getmembers(Brain, predicate=inspect.isfunction) if not name.startswith("_")}
    listed = set(re.findall(r"`(\w+)\(", text))
    assert public <= listed, sorted(public - listed)


@pytest.mark.slow
def test_the_example_runs_as_written(tmp_path: Path) -> None:
    example = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert example is not None
    write(tmp_path / "notes", {
        "clinica.md": "# Clinica\n\nProgetto Laravel per la clinica: prenotazioni e pazienti.\n",
        "ricette.md": "# Ricette\n\nLa torta al cioccolato.\n",
    })
    done = subprocess.run([sys.executable, "-c", example.group(1)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env={"PYTHONPATH": str(PROJECT / "tools" / "lib"), "HF_HUB_OFFLINE": "1",
                                            "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("clinica.md ")  # the first hit
    assert "False" in lines and lines[-1] == "empty query; type some words to search for"
