"""On a terminal, `brain search` links each path (OSC 8) and marks the query's words; nowhere else.

The terminal is a real pseudo-terminal: the process sees isatty() as a person's shell makes it.
"""

from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import PROJECT, run_cli, write

ESC = "\x1b"
MARKED = "\x1b[1;33m{}\x1b[22;39m"


def on_a_terminal(*args: str, env: dict[str, str] | None = None, stderr_too: bool = False) -> str:
    """`brain ARGS` with stdout (and with `stderr_too` stderr) on a pseudo-terminal; what it wrote there."""
    master, slave = pty.openpty()
    full_env = {name: value for name, value in os.environ.items() if name != "NO_COLOR"}
    full_env.update({"PYTHONPATH": str(PROJECT / "tools" / "lib"), "TERM": "xterm-256color", **(env or {})})
    done = subprocess.Popen([sys.executable, "-m", "brain", *args], stdout=slave,
                            stderr=slave if stderr_too else subprocess.PIPE, env=full_env, text=True)
    os.close(slave)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen.extend(chunk)
    os.close(master)
    _, stderr = done.communicate(timeout=300)
    assert done.returncode == 0, stderr
    return seen.decode("utf-8").replace("\r\n", "\n")


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("terminal") / "notes"
    write(root, {"brain.toml": "[search]\nmode = \"bm25\"\n",
                 "dogs.md": "# Walks\n\nThe running dogs ran home; hotdogs.\n",
                 "ricette/pasta e fagioli.md": "# Ricette\n\nLe ricette della nonna.\n"})
    indexed = run_cli("--root", str(root), "index")
    assert indexed.returncode == 0, indexed.stderr
    return root


def test_paths_are_links_and_matched_words_are_marked_on_a_terminal(notes: Path) -> None:
    """Newcomer round two, item 10: results were not clickable and matched words not highlighted."""
    shown = on_a_terminal("--root", str(notes), "search", "run", "dog")
    uri = f"file://{socket.gethostname()}{notes.resolve()}/dogs.md"
    assert f"{ESC}]8;;{uri}{ESC}\\dogs.md{ESC}]8;;{ESC}\\" in shown
    # Whole words, stemmed as the keyword index stems them: "ran" and "hotdogs" are other words.
    assert f"The {MARKED.format('running')} {MARKED.format('dogs')} ran home; hotdogs." in shown
    accented = on_a_terminal("--root", str(notes), "search", "ricetta")
    assert "pasta%20e%20fagioli.md" in accented and MARKED.format("ricette") in accented


def test_no_escapes_with_no_color_in_json_or_through_a_pipe(notes: Path) -> None:
    assert ESC not in on_a_terminal("--root", str(notes), "search", "dogs", env={"NO_COLOR": "1"})
    assert ESC not in on_a_terminal("--root", str(notes), "search", "dogs", "--color", "never")
    as_json = on_a_terminal("--root", str(notes), "search", "dogs", "--json")
    assert ESC not in as_json and json.loads(as_json)["results"][0]["path"] == "dogs.md"
    assert ESC not in on_a_terminal("--root", str(notes), "search", "dogs", "--format", "markdown")
    piped = run_cli("--root", str(notes), "search", "dogs")
    assert piped.returncode == 0 and ESC not in piped.stdout and "dogs.md" in piped.stdout
    forced = run_cli("--root", str(notes), "search", "dogs", "--color", "always", env={"NO_COLOR": "1"})
    assert MARKED.format("dogs") in forced.stdout  # asked for by name: NO_COLOR yields to the flag


def test_grep_links_each_matching_path_and_marks_the_match(notes: Path) -> None:
    shown = on_a_terminal("--root", str(notes), "grep", "hot.ogs")
    uri = f"file://{socket.gethostname()}{notes.resolve()}/dogs.md"
    assert f"{ESC}]8;;{uri}{ESC}\\dogs.md{ESC}]8;;{ESC}\\:3:" in shown
    assert f"The running dogs ran home; {MARKED.format('hotdogs')}." in shown
    assert ESC not in on_a_terminal("--root", str(notes), "grep", "hotdogs", "--color", "never")
    piped = run_cli("--root", str(notes), "grep", "hotdogs")
    assert piped.stdout.startswith("dogs.md:3:") and ESC not in piped.stdout


def test_a_vault_links_to_obsidian(tmp_path: Path) -> None:
    vault = tmp_path / "My Vault"
    write(vault, {".obsidian/app.json": "{}", "brain.toml": "[search]\nmode = \"bm25\"\n",
                  "Projects/Clinic plan.md": "The clinic plan.\n"})
    assert run_cli("--root", str(vault), "index").returncode == 0
    shown = on_a_terminal("--root", str(vault), "search", "clinic")
    assert f"{ESC}]8;;obsidian://open?vault=My%20Vault&file=Projects%2FClinic%20plan.md{ESC}\\" in shown


def test_get_on_a_terminal_prints_its_header_first_and_ends_its_text_with_a_newline(notes: Path) -> None:
    """Newcomer round two, item 10: the header (stderr) came after the text, which had no final newline."""
    shown = on_a_terminal("--root", str(notes), "get", "dogs.md", "--length", "7", stderr_too=True)
    lines = shown.split("\n")
    assert lines[0].startswith("dogs.md: bytes 0-7 of ") and lines[1] == "# Walks" and lines[2] == "", shown
