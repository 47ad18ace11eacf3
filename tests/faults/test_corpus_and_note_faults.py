"""Corpus names that must never share a PostgreSQL schema; notes that must fail alone instead of stopping a run.

Real processes (the CLI, git with brain's hook) against a real PostgreSQL server
with pgvector and real SQLite files. Reliability review round two, items 2 and 4.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers import committed_notes, git, run_cli, write
from live_servers import brain_env

def _schemas(url: str) -> list[str]:
    import psycopg

    with psycopg.connect(url.split("&corpus=")[0], autocommit=True) as conn:
        return [
            r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'brain\\_%' ORDER BY 1")
        ]


# Names that the first mapping folded onto each other (case, punctuation, scripts, length, the rebuild suffix).
COLLIDING = ["Notes", "notes", "my-notes", "my.notes", "my_notes", "Заметки", "笔记", "ملاحظات",
             "a" * 60, "a" * 61, "x", "x__rebuild"]


@pytest.mark.postgres
def test_every_folder_name_gets_a_schema_of_its_own(tmp_path: Path, pg_server: str) -> None:
    env = {"BRAIN_STORE": pg_server}
    roots = []
    for number, name in enumerate(COLLIDING):
        root = tmp_path / f"f{number}" / name
        write(root, {"note.md": f"# Note\n\nonly in folder word{number}x\n"})
        done = run_cli("--root", str(root), "index", "--json", env=env)
        assert done.returncode == 0, done.stderr
        roots.append(root)
    # x's full rebuild must not drop the corpus named x__rebuild.
    assert run_cli("--root", str(roots[COLLIDING.index("x")]), "index", "--full", env=env).returncode == 0
    for number, root in enumerate(roots):
        stats = json.loads(run_cli("--root", str(root), "stats", "--json", env=env).stdout)
        # before: a second folder's index removed the first's rows
        assert stats["files"] == 1, (COLLIDING[number], stats)
        found = run_cli("--root", str(root), "search", f"word{number}x", "--mode", "bm25", "--json", env=env)
        assert [r["path"] for r in json.loads(found.stdout)["results"]] == ["note.md"], COLLIDING[number]
    names = [s for s in _schemas(pg_server) if not s.startswith("brain_t")]
    assert len(set(names)) >= len(COLLIDING) and all(len(s.encode()) <= 63 for s in names)


@pytest.mark.postgres
def test_a_schema_holding_another_corpus_is_refused_and_left_alone(tmp_path: Path, pg_server: str) -> None:
    import psycopg

    env = {"BRAIN_STORE": pg_server}
    root = tmp_path / "owned"
    write(root, {"note.md": "# Note\n\nthe owner's words\n"})
    assert run_cli("--root", str(root), "index", env=env).returncode == 0
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute("UPDATE brain_owned.meta SET value = 'someone-else' WHERE key = 'corpus'")
    write(root, {"other.md": "# Other\n\nmore words\n"})
    done = run_cli("--root", str(root), "index", env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "holds corpus 'someone-else', not 'owned'" in done.stderr and "?corpus=" in done.stderr
    with psycopg.connect(pg_server, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM brain_owned.files").fetchone()[0] == 1  # nothing written


@pytest.mark.postgres
def test_a_bad_note_fails_alone_on_both_stores(tmp_path: Path, store_url: str) -> None:
    long_word = "漢" * 700  # 2,100 bytes as a token, within a query's 2,000 characters
    notes = {
        "good.md": "# Good\n\nthe alpha note\n",
        "nul-body.md": "# Body\n\n" + "padding line\n" * 700 + "a NUL \x00 after the binary sniff\n",
        "nul-front.md": '---\ntitle: "with \\0 inside"\ntags: ["a\\0b"]\n---\n# Front\n\nbeta words\n',
        "long-word.md": f"# Long\n\ngamma {long_word} gamma {'x' * 3000}\n",
    }
    for store in (store_url, ""):
        root = tmp_path / ("pg" if store else "sqlite") / "notes"
        write(root, notes)
        os.makedirs(root / "bad", exist_ok=True)
        with open(os.path.join(os.fsencode(root / "bad"), b"caf\xe9.md"), "wb") as handle:
            handle.write(b"# Latin-1 name\n\ndelta\n")
        env = {"BRAIN_STORE": store}
        done = run_cli("--root", str(root), "index", "--json", env=env)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        report = json.loads(done.stdout)
        assert sorted(report["added"]) == ["good.md", "long-word.md", "nul-body.md", "nul-front.md"], report
        refused = {w["path"]: w["reason"] for w in report["warnings"]}
        assert "not valid UTF-8" in refused["bad/caf\\xe9.md"]
        assert "NUL" in refused["nul-body.md"] and "NUL" in refused["nul-front.md"]
        named = run_cli("--root", str(root), "reindex",
                        os.fsdecode(os.path.join(os.fsencode(root / "bad"), b"caf\xe9.md")), "--json", env=env)
        assert "Traceback" not in named.stderr and json.loads(named.stdout)["failed"][0]["path"].endswith("caf\\xe9.md")
        status = run_cli("--root", str(root), "status", "--json", env=env)
        assert status.returncode == 0 and json.loads(status.stdout)["clean"] is True, status.stdout + status.stderr
        for query, path in (("alpha", "good.md"), ("binary sniff", "nul-body.md"), ("beta", "nul-front.md"),
                            ("gamma", "long-word.md"), (f"gamma {long_word}", "long-word.md")):
            found = run_cli("--root", str(root), "search", query, "--mode", "bm25", "--json", env=env)
            assert found.returncode == 0, found.stderr
            assert json.loads(found.stdout)["results"][0]["path"] == path, (store, query)


@pytest.mark.slow
def test_the_hook_names_a_file_whose_name_is_not_utf8(tmp_path: Path) -> None:
    root = committed_notes(tmp_path / "notes", {"a.md": "# A\n\nalpha\n"})
    assert run_cli("--root", str(root), "index").returncode == 0
    assert run_cli("--root", str(root), "hooks", "install", "--sync").returncode == 0
    with open(os.path.join(os.fsencode(root), b"caf\xe9.md"), "wb") as handle:
        handle.write(b"# Latin-1 name\n\ndelta\n")
    write(root, {"b.md": "# B\n\nbeta\n"})
    git(root, "add", "-A")
    done = subprocess.run(["git", "commit", "-q", "-m", "two"], cwd=root, env=brain_env({"BRAIN_HOOK": "sync"}),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    log = (root / ".brain" / "hook.log").read_text(encoding="utf-8")
    assert "Traceback" not in log and "1 added" in log and "caf\\xe9.md: its name is not valid UTF-8" in log, log


@pytest.mark.postgres
def test_a_killed_full_rebuild_leaves_no_schema_behind_after_the_next_index(tmp_path: Path, pg_server: str) -> None:
    """Item 11: `index --full` killed while it fills its rebuild schema; the next `brain index` drops it."""
    import signal
    import sys
    import time

    env = {"BRAIN_STORE": pg_server}
    root = tmp_path / "rebuilt"
    write(root, {
        f"n{i:02d}.md": f"# Note {i}\n\n" + f"words of note {i} about the harbour crane. " * 30 for i in range(40)
    })
    assert run_cli("--root", str(root), "index", env=env).returncode == 0
    rebuild = subprocess.Popen([sys.executable, "-m", "brain", "--root", str(root), "index", "--full"],
                               env=brain_env(env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    try:
        while "brain_rebuilt__rebuild" not in _schemas(pg_server):
            assert rebuild.poll() is None and time.monotonic() < deadline, "the rebuild ended before its schema showed"
            time.sleep(0.05)
    finally:
        rebuild.send_signal(signal.SIGKILL)
        rebuild.wait(60)
    assert "brain_rebuilt__rebuild" in _schemas(pg_server)  # what the kill left (the whole corpus's size again)
    done = run_cli("--root", str(root), "index", env=env)
    assert done.returncode == 0, done.stderr
    assert "brain_rebuilt__rebuild" not in _schemas(pg_server)
    found = run_cli("--root", str(root), "search", "harbour crane", "--mode", "bm25", "--json", env=env)
    assert len(json.loads(found.stdout)["results"]) == 10  # the old index served throughout and still does
