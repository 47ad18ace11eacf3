"""Git sync: real commits in real repositories, then `Brain.sync()` in-process (sharing the loaded model).

After every step the index must equal the tree exactly: `status(verify=True)` hashes every file.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from brain import Brain
from brain import gitsync
from brain.embeddings import Embedder
from brain.store import SqliteStore
from helpers import git, init_repo, write

NOTES = {
    "a.md": "# Alpha\n\nThe nginx reverse proxy terminates TLS for the clinic app.\n",
    "dir with space/b è.md": "# Beta\n\nPerché il backup notturno è fallito: disco pieno.\n",
    "c.txt": "Gamma notes about the PostgreSQL vacuum schedule.\n",
    "日本語/メモ.md": "# メモ\n\nA note filed under a Japanese folder name about sourdough.\n",
    ".brainignore": "private/\n",
    "private/secret.md": "# Secret\n\nNot for the index.\n",
    "tool.py": "print('not a note')\n",
}


def commit(root: Path, message: str = "change") -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def indexed_paths(root: Path) -> dict[str, int]:
    store = SqliteStore(root / ".brain" / "brain.sqlite", create=False)
    try:
        return {path: row.id for path, row in store.all_files().items()}
    finally:
        store.close()


def assert_matches_tree(root: Path) -> None:
    """The index holds exactly the notes on disk, content-verified, and knows HEAD."""
    status = Brain(root).status(verify=True)
    assert status.clean, status.to_dict()
    assert status.history == "current", status.to_dict()
    assert status.files_indexed == status.files_on_disk


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "notes")
    write(root, NOTES)
    commit(root, "notes")
    report = Brain(root).sync()
    assert report.action == "scan"
    return root


def test_name_status_parsing_keeps_spaces_non_ascii_and_control_characters(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "r")
    odd = "tab\there «quoted» ü.md"
    write(root, {"plain.md": "x\n" * 20, odd: "y\n" * 20})
    first = commit(root)
    (root / "renamed").mkdir()
    git(root, "mv", odd, "renamed/new name ü.md")
    second = commit(root)
    top = gitsync.git_top(root)
    assert top is not None
    assert sorted((c.status, c.path) for c in gitsync.commit_changes(top, first)) == [("A", "plain.md"), ("A", odd)]
    assert gitsync.range_changes(top, first, second) == [gitsync.Change("R", "renamed/new name ü.md", odd)]


def test_first_sync_scans_and_records_head(repo: Path) -> None:
    assert set(indexed_paths(repo)) == {"a.md", "dir with space/b è.md", "c.txt", "日本語/メモ.md"}
    assert_matches_tree(repo)
    again = Brain(repo).sync()
    assert again.action == "none" and again.scan is None


def test_add_edit_delete_in_one_commit(repo: Path) -> None:
    write(repo, {"new note.md": "# New\n\nKubernetes ingress notes.\n", "a.md": NOTES["a.md"] + "\nAlso HTTP/2.\n"})
    (repo / "c.txt").unlink()
    commit(repo)
    report = Brain(repo).sync()
    assert report.action == "diff"
    assert report.scan is not None
    assert report.scan.added == ["new note.md"]
    assert report.scan.updated == ["a.md"]
    assert report.scan.removed == ["c.txt"]
    assert_matches_tree(repo)


def test_pure_rename_moves_the_row_and_embeds_nothing(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = indexed_paths(repo)
    tokenized: list[object] = []
    count_tokens = Embedder.count_tokens
    monkeypatch.setattr(
        Embedder, "count_tokens", lambda self, texts: tokenized.append(texts) or count_tokens(self, texts)
    )
    (repo / "archive").mkdir()
    git(repo, "mv", "a.md", "archive/alpha renamed.md")
    git(repo, "mv", "dir with space/b è.md", "dir with space/beta è.md")
    commit(repo, "rename")
    report = Brain(repo).sync()
    assert report.action == "diff"
    assert report.scan is not None
    assert report.scan.chunks_embedded == 0
    assert report.scan.cache_hits == 0  # not even looked up: the rows moved
    assert tokenized == []  # nothing chunked, so the hook's process never loads the tokenizer (most of a second)
    assert sorted(m["to"] for m in report.scan.moved) == ["archive/alpha renamed.md", "dir with space/beta è.md"]
    assert report.scan.added == [] and report.scan.removed == []
    after = indexed_paths(repo)
    assert after["archive/alpha renamed.md"] == before["a.md"]
    assert after["dir with space/beta è.md"] == before["dir with space/b è.md"]
    assert_matches_tree(repo)


def test_rename_with_edits_replaces_the_old_path(repo: Path) -> None:
    git(repo, "mv", "c.txt", "gamma.txt")
    write(repo, {"gamma.txt": NOTES["c.txt"] + "Also autovacuum thresholds.\n"})
    commit(repo)
    report = Brain(repo).sync()
    assert report.scan is not None
    assert report.scan.removed == ["c.txt"] and report.scan.added == ["gamma.txt"]
    assert_matches_tree(repo)


def test_copy_is_indexed_from_the_cache(repo: Path) -> None:
    shutil.copy(repo / "a.md", repo / "a copy.md")
    commit(repo)
    report = Brain(repo).sync()
    assert report.scan is not None
    assert report.scan.added == ["a copy.md"]
    assert report.scan.chunks_embedded == 0 and report.scan.cache_hits > 0
    assert_matches_tree(repo)


def test_merge_commit_against_first_parent(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, {"feature/plan.md": "# Plan\n\nMigrate the mail server to Postfix.\n"})
    commit(repo, "feature")
    git(repo, "checkout", "-q", "main")
    write(repo, {"c.txt": NOTES["c.txt"] + "Weekly, on Sundays.\n"})
    commit(repo, "main edit")
    Brain(repo).sync()
    git(repo, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    merge = git(repo, "rev-parse", "HEAD").strip()
    top = gitsync.git_top(repo)
    assert top is not None
    assert [(c.status, c.path) for c in gitsync.commit_changes(top, merge)] == [("A", "feature/plan.md")]
    report = Brain(repo).sync()
    assert report.action == "diff"
    assert report.scan is not None and report.scan.added == ["feature/plan.md"]
    assert_matches_tree(repo)


def test_amend_is_caught_up_through_the_tree_diff(repo: Path) -> None:
    write(repo, {"draft.md": "# Draft\n\nFirst try at the quarterly report.\n"})
    commit(repo, "draft")
    Brain(repo).sync()
    (repo / "draft.md").unlink()
    write(repo, {"report.md": "# Report\n\nQuarterly report, final.\n", "a.md": NOTES["a.md"] + "Amended.\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--amend", "-m", "report")
    report = Brain(repo).sync()
    assert report.action == "diff"
    assert "history rewritten" in report.reason
    assert report.scan is not None
    assert (
        report.scan.removed == ["draft.md"] and report.scan.added == ["report.md"] and report.scan.updated == ["a.md"]
    )
    assert_matches_tree(repo)


def test_root_commit(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "fresh")
    write(root, {"one.md": "# One\n\nFirst note ever.\n", "two/two.txt": "Second note.\n"})
    sha = commit(root, "root")
    top = gitsync.git_top(root)
    assert top is not None
    assert gitsync.commit_changes(top, sha) == [gitsync.Change("A", "one.md"), gitsync.Change("A", "two/two.txt")]
    report = Brain(root).sync()
    assert report.action == "scan" and report.to_commit == sha
    assert_matches_tree(root)


def test_commit_of_ignored_and_non_note_files_does_nothing(repo: Path) -> None:
    write(repo, {"private/more.md": "# More secrets\n", "tool.py": "print('changed')\n", "data.csv": "a,b\n"})
    head = commit(repo)
    report = Brain(repo).sync()
    assert report.action == "none"
    assert report.scan is None
    assert report.changed_paths == 3 and report.note_paths == 0
    assert report.to_commit == head
    assert_matches_tree(repo)


def test_twenty_commits_are_caught_up_by_one_sync(repo: Path) -> None:
    for n in range(20):
        if n % 5 == 4:
            (repo / f"burst/{n - 1:02d}.md").unlink()
        else:
            write(repo, {f"burst/{n:02d}.md": f"# Burst {n}\n\nNote number {n} of the burst.\n"})
        commit(repo, f"burst {n}")
    report = Brain(repo).sync()
    assert report.action == "diff"
    assert report.scan is not None and len(report.scan.added) == 12
    assert_matches_tree(repo)


def test_pruned_recorded_commit_falls_back_to_a_scan(repo: Path) -> None:
    store = SqliteStore(repo / ".brain" / "brain.sqlite")
    store.record_indexed_commit("0123456789abcdef0123456789abcdef01234567")
    store.close()
    write(repo, {"a.md": "# Alpha\n\nRewritten.\n"})
    commit(repo)
    report = Brain(repo).sync()
    assert report.action == "scan" and "gone from the repository" in report.reason
    assert_matches_tree(repo)


def test_changed_ignore_rules_trigger_a_scan(repo: Path) -> None:
    write(repo, {".brainignore": "# nothing ignored now\n"})
    commit(repo)
    report = Brain(repo).sync()
    assert report.action == "scan"
    assert report.scan is not None and report.scan.added == ["private/secret.md"]
    assert_matches_tree(repo)


def test_checkout_of_another_branch(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    git(repo, "rm", "-q", "c.txt")
    write(repo, {"other only.md": "# Other\n\nOnly on the other branch.\n"})
    commit(repo)
    Brain(repo).sync()
    git(repo, "checkout", "-q", "main")
    report = Brain(repo).sync()
    assert report.scan is not None
    assert report.scan.added == ["c.txt"] and report.scan.removed == ["other only.md"]
    assert_matches_tree(repo)


def test_notes_in_a_subfolder_of_the_repository(tmp_path: Path) -> None:
    top = init_repo(tmp_path / "repo")
    write(top, {"src/main.md": "# Not notes\n", "notes/n1.md": "# N1\n\nInside the notes folder.\n"})
    commit(top)
    notes = top / "notes"
    Brain(notes).sync()
    git(top, "mv", "notes/n1.md", "notes/n one.md")
    # An ignore file outside the notes folder cannot change which notes belong: no scan for it.
    write(top, {"src/main.md": "# Still not notes\n", "src/.gitignore": "build/\n",
                "notes/n2.md": "# N2\n\nAnother one.\n"})
    commit(top)
    report = Brain(notes).sync()
    assert report.action == "diff"
    assert report.scan is not None
    assert report.scan.moved == [{"from": "n1.md", "to": "n one.md"}] and report.scan.added == ["n2.md"]
    assert_matches_tree(notes)


def test_sync_outside_git_scans(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root, {"x.md": "# X\n\nNo git here.\n"})
    report = Brain(root).sync()
    assert report.action == "scan" and "not in a git work tree" in report.reason
    status = Brain(root).status(verify=True)
    assert status.clean and status.history == "no-git"


def test_reindex_of_both_ends_of_a_move_keeps_vectors(repo: Path) -> None:
    before = indexed_paths(repo)
    os.rename(repo / "c.txt", repo / "moved c.txt")
    report = Brain(repo).reindex([repo / "c.txt", repo / "moved c.txt"])
    assert report.moved == [{"from": "c.txt", "to": "moved c.txt"}]
    assert report.chunks_embedded == 0 and report.removed == []
    assert indexed_paths(repo)["moved c.txt"] == before["c.txt"]
