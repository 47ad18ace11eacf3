"""The /memory-search slash command: one template, installed idempotently, fed by `--format markdown`."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from brain.claude_command import TARGET, template_text
from conftest import PROJECT, run_cli


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
    assert '!`brain search "$ARGUMENTS" --format markdown`' in body
    assert "the files are the truth" in body and "Read tool" in body


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
    assert refused.stderr.startswith("brain: ") and "--force" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert target.read_text(encoding="utf-8") == "my own edited command\n"

    forced = run_cli("--root", str(tmp_path), "claude", "install", "--force")
    assert forced.returncode == 0 and forced.stdout.startswith("replaced: ")
    assert target.read_text(encoding="utf-8") == template_text()


def test_markdown_results_are_numbered_with_path_score_parts_lines_and_preview(indexed_example: Path) -> None:
    out = run_cli("--root", str(indexed_example), "search", "progetti", "Laravel", "--format", "markdown", "-k", "3")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "## Search: progetti Laravel"
    results = [ln for ln in lines if re.match(r"\d+\. ", ln)]
    assert [r.split(".")[0] for r in results] == ["1", "2", "3"]
    first = results[0]
    assert re.search(r"\*\*database/projects/gengle/index\.md\*\*", first)
    assert re.search(r"Score: \d\.\d{3} \(vector: \d\.\d{3}, keyword: \d\.\d{3}\)", first)
    assert re.search(r"Lines: \d+-\d+", first)
    preview = lines[lines.index(first) + 1]
    assert preview.startswith("   > ") and "Laravel" in preview
