"""`brain status [--verify] [--json]`: the index proved against the files, with an exit code for cron and CI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from brain import Brain
from helpers import git, init_repo, run_cli, write


def indexed(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    write(root, {
        "a.md": "# Alpha\n\nThe nginx reverse proxy terminates TLS.\n",
        "b.txt": "Backups run at night with restic.\n",
        "c.md": "# Gamma\n\nAppointment reminders go out by SMS.\n",
    })
    Brain(root).index()
    return root


def test_clean_index_exits_zero_with_every_fact(tmp_path: Path) -> None:
    root = indexed(tmp_path)
    done = run_cli("--root", str(root), "status", "--verify", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["clean"] is True and data["verified"] is True
    assert data["files_on_disk"] == data["files_indexed"] == 3
    assert data["stale"] == data["missing"] == data["orphaned"] == []
    assert data["model"] and data["dimension"] == 384 and data["schema_version"] == data["schema_supported"]
    assert data["history"] == "no-git" and data["hooks"] == []
    text = run_cli("--root", str(root), "status")
    assert text.returncode == 0 and text.stdout.startswith("clean: ")


def test_stale_missing_and_orphaned_fail_the_exit_code(tmp_path: Path) -> None:
    root = indexed(tmp_path)
    write(root, {"a.md": "# Alpha\n\nThe nginx reverse proxy terminates TLS and HTTP/3.\n", "new.md": "# New\n"})
    (root / "c.md").unlink()
    done = run_cli("--root", str(root), "status")
    assert done.returncode == 1
    assert done.stdout.startswith("NOT CLEAN: 1 stale, 1 missing, 1 orphaned")
    for line in ("stale      a.md", "missing    new.md", "orphaned   c.md"):
        assert line in done.stdout
    report = Brain(root).status()
    assert (report.stale, report.missing, report.orphaned) == (["a.md"], ["new.md"], ["c.md"])
    Brain(root).index()
    assert run_cli("--root", str(root), "status", "--verify").returncode == 0


def test_verify_catches_an_edit_that_kept_size_and_time(tmp_path: Path) -> None:
    root = indexed(tmp_path)
    path = root / "b.txt"
    info = path.stat()
    path.write_text("Backups run at NOON with restic.\n"[: info.st_size].ljust(info.st_size), encoding="utf-8")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_size == info.st_size
    assert Brain(root).status().clean  # size and time cannot see it
    report = Brain(root).status(verify=True)
    assert report.stale == ["b.txt"] and not report.clean


def test_unreadable_files_are_reported_but_not_counted(tmp_path: Path) -> None:
    root = indexed(tmp_path)
    write(root, {"binary.txt": b"\x00\x01\x02 not text"})
    Brain(root).index()
    report = Brain(root).status(verify=True)
    assert report.clean
    assert [u["path"] for u in report.unreadable] == ["binary.txt"]
    assert "binary file" in report.unreadable[0]["reason"]


def test_no_index_is_reported_and_nothing_is_created(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {"a.md": "# A\n"})
    done = run_cli("--root", str(root), "status")
    assert done.returncode == 1
    assert done.stdout.startswith("NOT INDEXED") and "missing     1" in done.stdout
    assert not (root / ".brain").exists()


@pytest.mark.slow
def test_the_nearest_folder_with_brain_toml_is_the_root_even_inside_a_bigger_repo(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    notes = (repo / "notes").resolve()
    write(repo, {
        "code.md": "# Code\n\nNot a note: it lies outside the notes folder.\n",
        "notes/brain.toml": "[search]\nlimit = 3\n",
        "notes/a.md": "# Alpha\n\nThe nginx reverse proxy terminates TLS.\n",
        "notes/deep/b.md": "# Beta\n\nBackups run at night.\n",
    })
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    deep = notes / "deep"
    no_root_env = {"BRAIN_ROOT": ""}

    done = run_cli("status", "--json", cwd=deep, env=no_root_env)
    data = json.loads(done.stdout)
    assert (data["root"], data["root_reason"]) == (str(notes), "nearest folder with brain.toml")
    assert data["files_on_disk"] == 2  # code.md belongs to the bigger repository, not to the notes
    text = run_cli("status", cwd=deep, env=no_root_env).stdout
    assert f"root        {notes} (nearest folder with brain.toml)" in text

    assert run_cli("index", cwd=deep, env=no_root_env).returncode == 0
    assert (notes / ".brain" / "brain.sqlite").exists() and not (repo / ".brain").exists()
    found = run_cli("search", "nginx proxy", "--json", cwd=deep, env=no_root_env)
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)["results"]][0] == "a.md"

    (notes / "brain.toml").unlink()  # the index folder alone marks the root too
    data = json.loads(run_cli("status", "--json", cwd=deep, env=no_root_env).stdout)
    assert (data["root"], data["root_reason"]) == (str(notes), "nearest folder with .brain/")

    elsewhere = repo / "src"
    elsewhere.mkdir()
    data = json.loads(run_cli("status", "--json", cwd=elsewhere, env=no_root_env).stdout)
    assert (data["root"], data["root_reason"]) == (str(repo.resolve()), "git top-level")
    data = json.loads(run_cli("--root", str(repo), "status", "--json", cwd=deep, env=no_root_env).stdout)
    assert (data["root"], data["root_reason"]) == (str(repo.resolve()), "--root")
    data = json.loads(run_cli("status", "--json", cwd=deep, env={"BRAIN_ROOT": str(repo)}).stdout)
    assert (data["root"], data["root_reason"]) == (str(repo.resolve()), "BRAIN_ROOT")
    plain = tmp_path / "plain"
    plain.mkdir()
    data = json.loads(run_cli("status", "--json", cwd=plain, env=no_root_env).stdout)
    assert (data["root"], data["root_reason"]) == (str(plain.resolve()), "current folder")
