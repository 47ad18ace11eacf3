"""The /memory-search slash command: one template, installed idempotently, fed by `--format markdown`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from brain.claude_command import TARGET, template_text
from helpers import PROJECT, run_cli


def front_matter(text: str) -> tuple[dict[str, str], str]:
    match = re.match(r"---\n(.*?)\n---\n(.*)", text, re.S)
    assert match, "the command starts with YAML front matter"
    return yaml.safe_load(match.group(1)), match.group(2)


def test_project_copy_is_the_packaged_template() -> None:
    # One source of truth: the package ships the template; the project's copy must not drift.
    assert (PROJECT / ".claude" / "commands" / "memory-search.md").read_text(encoding="utf-8") == template_text()


def test_template_runs_brain_search_and_sends_claude_back_to_the_files() -> None:
    meta, body = front_matter(template_text())
    assert meta["description"] and meta["argument-hint"]
    assert "Bash(brain search:*)" in meta["allowed-tools"] and "Read" in meta["allowed-tools"]
    assert "!`brain search - --format markdown <<'END_OF_BRAIN_QUERY'; exit $?\n$ARGUMENTS\nEND_OF_BRAIN_QUERY`" in body
    assert "the files are the truth" in body and "Read tool" in body


@pytest.mark.slow
def test_install_creates_then_is_idempotent_then_refuses_a_different_file(tmp_path: Path) -> None:
    target = tmp_path / TARGET
    first = run_cli("--root", str(tmp_path), "claude", "install")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == f"created: {target}"
    assert target.read_text(encoding="utf-8") == template_text()

    again = run_cli("--root", str(tmp_path), "claude", "install", "--json")
    assert again.returncode == 0 and '"action": "unchanged"' in again.stdout

    target.write_text("my own edited command\n", encoding="utf-8")
    refused = run_cli("--root", str(tmp_path), "claude", "install")
    assert refused.returncode == 1
    assert (
        refused.stderr.startswith("brain: ") and "--force" in refused.stderr and len(refused.stderr.splitlines()) == 1
    )
    assert target.read_text(encoding="utf-8") == "my own edited command\n"

    forced = run_cli("--root", str(tmp_path), "claude", "install", "--force")
    assert forced.returncode == 0 and forced.stdout.startswith("replaced: ")
    assert target.read_text(encoding="utf-8") == template_text()


@pytest.mark.slow
def test_markdown_results_are_numbered_with_path_relevance_lines_and_preview(indexed_example: Path) -> None:
    out = run_cli("--root", str(indexed_example), "search", "progetti", "Laravel", "--format", "markdown", "-k", "3")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "## Search: progetti Laravel"
    results = [ln for ln in lines if re.match(r"\d+\. ", ln)]
    assert [r.split(".")[0] for r in results] == ["1", "2", "3"]
    first = results[0]
    assert re.search(r"\*\*database/projects/gengle/index\.md\*\*", first)
    assert re.search(r"Relevance: 100%", first)
    assert re.search(r"Lines: \d+-\d+", first)
    preview = lines[lines.index(first) + 1]
    assert preview.startswith("   > ") and "Laravel" in preview


# How Claude Code finds a `!` command in a slash command's text, after it has spliced
# $ARGUMENTS in as raw text: everything between `!`` and the next backtick.
_BANG = re.compile(r"(?<![\w$])!`([^`]+)`")


def _shell_lines(arguments: str) -> list[str]:
    """The shell command lines Claude Code would run for `/memory-search ARGUMENTS`."""
    _, body = front_matter(template_text())
    return _BANG.findall(body.replace("$ARGUMENTS", arguments))


def _run_in_shell(command: str, root: Path, tmp_path: Path, shell: str = "bash") -> subprocess.CompletedProcess[str]:
    """`command` through a real bash in the notes folder, with `brain` on the PATH as an installed one would be."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "brain"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m brain "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
               PYTHONPATH=str(PROJECT / "tools" / "lib"), HOME=str(tmp_path))
    return subprocess.run([shell, "-c", command], cwd=root, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_arguments_reach_brain_search_as_one_literal_string(indexed_example: Path, tmp_path: Path) -> None:
    # Each of these would create a file (or name the home folder) if a shell expanded it.
    query = "$(touch pwned-dollar) ${HOME} $HOME ; touch pwned-semicolon l'indice \"Laravel\" \\ *"
    [command] = _shell_lines(query)
    out = _run_in_shell(command, indexed_example, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == f"## Search: {query}"  # searched for, exactly as typed
    assert not list(indexed_example.glob("pwned-*")) and not list(tmp_path.glob("pwned-*"))


def test_a_backtick_in_the_arguments_runs_nothing(indexed_example: Path, tmp_path: Path) -> None:
    # A backtick ends Claude Code's `!` command early: what is left must still run nothing.
    for command in _shell_lines("`touch pwned-backtick` progetti"):
        _run_in_shell(command, indexed_example, tmp_path)
    assert not list(indexed_example.glob("pwned-*")) and not list(tmp_path.glob("pwned-*"))


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_a_line_that_ends_the_here_document_runs_nothing_after_it(
    indexed_example: Path, tmp_path: Path, shell: str
) -> None:
    # The delimiter typed on a line of its own ends the here-document early: the shell then
    # exits with the search's status before it reads the lines after it, so they never run.
    query = "progetti Laravel\nEND_OF_BRAIN_QUERY\ntouch pwned-after-delimiter\necho pwned"
    [command] = _shell_lines(query)
    out = _run_in_shell(command, indexed_example, tmp_path, shell)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "## Search: progetti Laravel"  # the query up to the delimiter
    assert "pwned" not in out.stdout
    assert not list(indexed_example.glob("pwned-*")) and not list(tmp_path.glob("pwned-*"))


@pytest.mark.slow
def test_search_reads_the_query_from_stdin_when_it_is_a_dash(indexed_example: Path) -> None:
    import json

    out = subprocess.run(
        [sys.executable, "-m", "brain", "--root", str(indexed_example), "search", "-", "--json", "-k", "1"],
        input="progetti Laravel\n", capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=str(PROJECT / "tools" / "lib")),
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["query"] == "progetti Laravel"
