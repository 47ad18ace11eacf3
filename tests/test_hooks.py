"""The git hooks: installed with the real CLI, fired by real `git commit`s in real repositories.

Most hooks here run in the foreground (`BRAIN_HOOK=sync`, or installed with
--sync) so the index can be checked when git returns; one test waits for the
background mode's log line, and the burst test keeps twenty background hooks
busy while a rebuild holds the index.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from brain import Brain
from brain.gitsync import HOOK_NAMES, hook_template
from helpers import PROJECT, git, init_repo, run_cli, write


def git_with(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """git with extra environment (the hook sees it), output captured, never raising."""
    return subprocess.run(["git", *args], cwd=root, env={**os.environ, **env}, capture_output=True, text=True)


def commit(root: Path, message: str = "change", env: dict[str, str] | None = None) -> str:
    git(root, "add", "-A")
    done = git_with(root, env or {}, "commit", "-q", "-m", message)
    assert done.returncode == 0, done.stderr
    return git(root, "rev-parse", "HEAD").strip()


def wait_for_log(root: Path, text: str, timeout: float = 240.0) -> str:
    """The hook log once it contains `text` (background runs finish in their own time)."""
    log = root / ".brain" / "hook.log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = log.read_text(encoding="utf-8") if log.exists() else ""
        if text in content:
            return content
        time.sleep(0.2)
    raise AssertionError(
        f"{text!r} never appeared in {log}:\n{log.read_text(encoding='utf-8') if log.exists() else '(no log)'}"
    )


def commit_burst(root: Path, count: int) -> None:
    """`count` commits in a row, each one change: a new note, an edit, a deletion or a rename, in turn."""
    notes = iter(sorted(git(root, "ls-files", "*.md", "*.txt").splitlines()))
    for n in range(count):
        kind = n % 4
        if kind == 0:
            write(root, {f"burst/new {n}.md": f"# Burst {n}\n\nCommit number {n} in the burst, about glacier {n}.\n"})
        elif kind == 1:
            path = root / next(notes)
            path.write_text(path.read_text(encoding="utf-8") + f"\nEdited in burst commit {n}.\n", encoding="utf-8")
        elif kind == 2:
            (root / next(notes)).unlink()
        else:
            old = next(notes)
            git(root, "mv", old, f"{old[:-3]} renamed {n}{old[-3:]}")
        commit(root, f"burst {n}")


def assert_hook_ran_for_each(root: Path, count: int) -> None:
    """Every one of `count` post-commit runs logged one line, none failed, and the last reached HEAD."""
    head = git(root, "rev-parse", "HEAD").strip()
    log = wait_for_log(root, f"..{head[:12]}:")
    # Every hook run logged one line: it either caught up or left it to the run already waiting.
    deadline = time.monotonic() + 120
    while log.count(" post-commit") < count and time.monotonic() < deadline:
        time.sleep(0.2)
        log = (root / ".brain" / "hook.log").read_text(encoding="utf-8")
    assert log.count(" post-commit") == count, log
    assert "failed" not in log, log


def assert_clean(root: Path) -> None:
    status = Brain(root).status(verify=True)
    assert status.clean, status.to_dict()
    assert status.history == "current", status.to_dict()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "notes")
    write(root, {
        "a.md": "# Alpha\n\nThe nginx reverse proxy terminates TLS for the clinic app.\n",
        "b.md": "# Beta\n\nBackups run at night with restic.\n",
    })
    commit(root, "notes")
    Brain(root).index()
    return root


def test_shipped_hook_is_the_installed_template() -> None:
    assert (PROJECT / "hooks" / "post-commit").read_text(encoding="utf-8") == hook_template()
    assert os.access(PROJECT / "hooks" / "post-commit", os.X_OK)


def test_install_is_idempotent_and_records_the_interpreter(repo: Path) -> None:
    first = run_cli("--root", str(repo), "hooks", "install", "--json")
    assert first.returncode == 0, first.stderr
    assert "installed" in first.stdout
    for name in HOOK_NAMES:
        path = repo / ".git" / "hooks" / name
        text = path.read_text(encoding="utf-8")
        assert "# brain-hook:" in text
        assert f"brain_python={sys.executable}" in text
        assert "brain_mode=background" in text
        assert path.stat().st_mode & stat.S_IXUSR
    second = run_cli("--root", str(repo), "hooks", "install")
    assert second.returncode == 0
    assert second.stdout.count("unchanged") == len(HOOK_NAMES)
    switched = run_cli("--root", str(repo), "hooks", "install", "--sync", "--hook", "post-commit")
    assert "updated" in switched.stdout
    assert "brain_mode=sync" in (repo / ".git" / "hooks" / "post-commit").read_text(encoding="utf-8")
    assert not list((repo / ".git" / "hooks").glob("*.legacy"))


def test_foreign_hook_is_kept_chained_and_restored(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    foreign = "#!/bin/sh\necho \"legacy ran $*\" >> \"$PWD/legacy.out\"\nexit 3\n"
    (hooks / "post-commit").write_text(foreign, encoding="utf-8")
    (hooks / "post-commit").chmod(0o755)
    done = run_cli("--root", str(repo), "hooks", "install")
    assert done.returncode == 0, done.stderr
    assert (hooks / "post-commit.legacy").read_text(encoding="utf-8") == foreign
    assert "runs first" in done.stdout
    write(repo, {"c.md": "# Gamma\n\nA third note.\n"})
    git(repo, "add", "-A")
    result = git_with(repo, {"BRAIN_HOOK": "off"}, "commit", "-q", "-m", "c")
    assert result.returncode == 0
    assert (repo / "legacy.out").read_text(encoding="utf-8") == "legacy ran \n"
    undone = run_cli("--root", str(repo), "hooks", "uninstall")
    assert undone.returncode == 0, undone.stderr
    assert "restored" in undone.stdout
    assert (hooks / "post-commit").read_text(encoding="utf-8") == foreign
    assert not (hooks / "post-commit.legacy").exists()
    assert not (hooks / "post-merge").exists()
    again = run_cli("--root", str(repo), "hooks", "uninstall")
    assert "not-ours" in again.stdout  # the restored foreign hook is left alone


def test_install_refuses_two_foreign_hooks_and_writes_nothing(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    (hooks / "post-merge").write_text("#!/bin/sh\necho one\n", encoding="utf-8")
    (hooks / "post-merge.legacy").write_text("#!/bin/sh\necho two\n", encoding="utf-8")
    done = run_cli("--root", str(repo), "hooks", "install")
    assert done.returncode == 1
    assert done.stderr.startswith("brain: ") and "merge them into one hook by hand" in done.stderr
    assert not (hooks / "post-commit").exists()


def test_install_honours_core_hooks_path(repo: Path) -> None:
    git(repo, "config", "core.hooksPath", "shared hooks")
    done = run_cli("--root", str(repo), "hooks", "install", "--json")
    assert done.returncode == 0, done.stderr
    assert (repo / "shared hooks" / "post-commit").exists()
    assert not (repo / ".git" / "hooks" / "post-commit").exists()
    status = Brain(repo).status()
    assert all(h["installed"] for h in status.hooks)


def test_install_outside_git_is_one_clear_line(tmp_path: Path) -> None:
    write(tmp_path / "plain", {"x.md": "# X\n"})
    done = run_cli("--root", str(tmp_path / "plain"), "hooks", "install")
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0 and "git init" in done.stderr


@pytest.mark.slow
def test_sync_hook_indexes_each_commit_before_git_returns(repo: Path) -> None:
    assert run_cli("--root", str(repo), "hooks", "install", "--sync").returncode == 0
    (repo / "notes dir").mkdir()
    git(repo, "mv", "a.md", "notes dir/alpha ü.md")
    write(repo, {"b.md": "# Beta\n\nBackups run at night with restic, checked on Mondays.\n",
                 "日記/今日.md": "# 今日\n\nSourdough starter fed.\n"})
    head = commit(repo, "edit, rename, add")
    log = (repo / ".brain" / "hook.log").read_text(encoding="utf-8")
    assert "post-commit" in log and f"..{head[:12]}: diff" in log
    assert "moved a.md → notes dir/alpha ü.md" in log
    assert_clean(repo)
    # A merge brings a branch in through post-merge (the copy reuses cached vectors: nothing to embed).
    git(repo, "checkout", "-q", "-b", "side")
    shutil.copy(repo / "b.md", repo / "b copy.md")
    commit(repo, "side", env={"BRAIN_HOOK": "off"})
    git_with(repo, {"BRAIN_HOOK": "off"}, "checkout", "-q", "main")
    merged = git_with(repo, {}, "merge", "-q", "--ff-only", "side")
    assert merged.returncode == 0, merged.stderr
    head = git(repo, "rev-parse", "HEAD").strip()
    assert "post-merge" in wait_for_log(repo, f"..{head[:12]}: diff")
    assert_clean(repo)


def test_background_hook_returns_and_logs_its_run(repo: Path) -> None:
    assert run_cli("--root", str(repo), "hooks", "install").returncode == 0
    # A rename and a copy: the background run needs no model (the burst test below embeds in the background).
    git(repo, "mv", "a.md", "alpha.md")
    shutil.copy(repo / "b.md", repo / "beta copy.md")
    head = commit(repo, "rename and copy")
    log = wait_for_log(repo, f"..{head[:12]}: diff")
    assert "1 added, 1 moved" in log and "0 chunks embedded" in log
    assert_clean(repo)


def test_a_broken_brain_never_fails_the_commit(repo: Path) -> None:
    assert run_cli("--root", str(repo), "hooks", "install", "--sync").returncode == 0
    write(repo, {"brain.toml": "this is = = not toml\n"})
    git(repo, "add", "-A")
    done = git_with(repo, {}, "commit", "-q", "-m", "broken settings")
    assert done.returncode == 0, done.stderr
    assert "post-commit: failed: " in (repo / ".brain" / "hook.log").read_text(encoding="utf-8")
    assert "invalid TOML" in (repo / ".brain" / "hook.log").read_text(encoding="utf-8")
    (repo / "brain.toml").unlink()
    hook = repo / ".git" / "hooks" / "post-commit"
    text = hook.read_text(encoding="utf-8").replace(
        f"brain_python={sys.executable}", "brain_python=/nonexistent/python3"
    )
    hook.write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    done = git_with(repo, {}, "commit", "-q", "-m", "interpreter gone")
    assert done.returncode == 0, done.stderr
    assert "interpreter /nonexistent/python3 not found" in (repo / ".brain" / "hook.log").read_text(encoding="utf-8")
    status = Brain(repo).status()
    assert not status.hooks[0]["interpreter_found"]


def test_hook_leaves_repositories_without_brain_alone(tmp_path: Path) -> None:
    # A core.hooksPath shared by many repositories: only the one with .brain/ is touched.
    notes = init_repo(tmp_path / "notes")
    other = init_repo(tmp_path / "other")
    shared = tmp_path / "global-hooks"
    for root in (notes, other):
        git(root, "config", "core.hooksPath", str(shared))
    write(notes, {"n.md": "# N\n"})
    assert run_cli("--root", str(notes), "hooks", "install", "--sync").returncode == 0
    write(other, {"o.md": "# O\n"})
    commit(other, "other repo")
    assert not (other / ".brain").exists()


def commits_during_a_rebuild(root: Path, commits: int, started: Callable[[], bool]) -> None:
    """Index `root`, install the hook, start `index --full`, and once `started()` says its new index
    exists, commit `commits` times through the hook; checks the rebuild, every hook run and the final index."""
    Brain(root).index()
    assert run_cli("--root", str(root), "hooks", "install").returncode == 0
    # New text the rebuild has to embed: it holds the index long enough for the whole burst.
    write(root, {
        f"incoming/{n}.md": f"# Incoming {n}\n\nField notes from trip {n} to the Dolomites, day {n * 3}.\n"
        for n in range(3)
    })
    env = {**os.environ, "PYTHONPATH": str(PROJECT / "tools" / "lib")}
    rebuild = subprocess.Popen([sys.executable, "-m", "brain", "--root", str(root), "index", "--full"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not started() and rebuild.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    commit_burst(root, commits)
    _, err = rebuild.communicate(timeout=600)
    assert rebuild.returncode == 0, err
    assert_hook_ran_for_each(root, commits)
    assert_clean(root)


@pytest.mark.slow
def test_twenty_commits_while_a_rebuild_runs(example_notes: Path) -> None:
    marker = example_notes / ".brain" / "brain.sqlite.rebuild"
    commits_during_a_rebuild(example_notes, 20, marker.exists)
