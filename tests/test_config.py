"""Settings: layering, origins, validation, and round-trip writes that keep everything else."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain.config import load_settings, set_value
from brain.errors import BrainError
from helpers import invoke, run_cli, write


def test_defaults_file_and_env_layer_with_origins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"brain.toml": "[search]\nlimit = 5\nvector_weight = 0.6\n"})
    monkeypatch.setenv("BRAIN_SEARCH_VECTOR_WEIGHT", "0.4")
    settings = load_settings(tmp_path)
    assert settings["search.limit"] == 5
    assert settings.origins["search.limit"] == str(tmp_path / "brain.toml")
    assert settings["search.vector_weight"] == 0.4
    assert settings.origins["search.vector_weight"] == "environment BRAIN_SEARCH_VECTOR_WEIGHT"
    assert settings["chunking.chunk_chars"] == 1600
    assert settings.origins["chunking.chunk_chars"] == "default"
    assert settings.database_path == tmp_path / ".brain" / "brain.sqlite"


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("[search]\nlimit = 'many'\n", "search.limit must be an integer"),
        ("[search]\nmode = 'fuzzy'\n", "search.mode must be one of"),
        ("[search]\nvector_weight = 1.5\n", "between 0 and 1"),
        ("colour = 'blue'\n", "unknown setting 'colour'"),
        ("[search\nlimit = 5\n", "invalid TOML"),
    ],
)
def test_bad_config_is_one_clear_error(tmp_path: Path, text: str, fragment: str) -> None:
    write(tmp_path, {"brain.toml": text})
    with pytest.raises(BrainError) as err:
        load_settings(tmp_path)
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


def test_set_value_keeps_comments_and_every_other_key(tmp_path: Path) -> None:
    original = (
        "# my notes settings\n"
        "roots = [\"database\", \"diary\"]  # only these\n"
        "\n"
        "[search]\n"
        "# hybrid stays on\n"
        "mode = \"hybrid\"\n"
        "vector_weight = 0.7\n"
        "\n"
        "[embedding]\n"
        "batch_size = 16 # small machine\n"
    )
    path = tmp_path / "brain.toml"
    path.write_text(original, encoding="utf-8")
    set_value(path, "search.limit", "7")
    set_value(path, "max_file_mb", "5")
    text = path.read_text(encoding="utf-8")
    # Everything that was there is still there, byte for byte.
    for line in original.splitlines():
        assert line in text
    settings = load_settings(tmp_path)
    assert settings["search.limit"] == 7
    assert settings["search.mode"] == "hybrid"  # the Loom bug: saving must never switch hybrid off
    assert settings["max_file_mb"] == 5.0
    assert settings["roots"] == ["database", "diary"]
    assert settings["embedding.batch_size"] == 16


def test_set_value_refuses_bad_values_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "brain.toml"
    path.write_text("# keep me\n", encoding="utf-8")
    with pytest.raises(BrainError):
        set_value(path, "search.mode", "fuzzy")
    with pytest.raises(BrainError):
        set_value(path, "no.such", "1")
    assert path.read_text(encoding="utf-8") == "# keep me\n"


def test_cli_config_show_and_set(tmp_path: Path) -> None:
    write(tmp_path, {"brain.toml": "# comment\n[search]\nlimit = 3\n", "a.md": "hello"})
    result = invoke("--root", str(tmp_path), "config", "show")
    assert result.returncode == 0, result.stderr
    assert "search.limit" in result.stdout and "brain.toml" in result.stdout
    assert "(default)" in result.stdout
    result = invoke("--root", str(tmp_path), "config", "set", "search.vector_weight", "0.5")
    assert result.returncode == 0, result.stderr
    assert "# comment" in (tmp_path / "brain.toml").read_text()
    bad = invoke("--root", str(tmp_path), "config", "set", "search.vector_weight", "2")
    assert bad.returncode == 1
    assert bad.stderr.count("\n") == 1 and "between 0 and 1" in bad.stderr


def test_config_flag_and_env_pick_another_file(tmp_path: Path) -> None:
    write(tmp_path, {"other.toml": "[search]\nlimit = 9\n"})
    assert load_settings(tmp_path, str(tmp_path / "other.toml"))["search.limit"] == 9
    with pytest.raises(BrainError, match="not found"):
        load_settings(tmp_path, str(tmp_path / "missing.toml"))


@pytest.mark.parametrize(
    "env, value, fragment",
    [
        ("BRAIN_SEARCH_LIMIT", "0", "search.limit must be between 1 and 200, got 0"),
        ("BRAIN_SEARCH_LIMIT", "5.5", "search.limit must be an integer, got '5.5'"),
        ("BRAIN_SEARCH_FUSION", "best", "search.fusion must be one of linear, minmax, zscore, rrf, got 'best'"),
        ("BRAIN_MAX_FILE_MB", "0", "max_file_mb must be more than 0 and at most 2000, got 0.0"),
        ("BRAIN_SEARCH_VECTOR_WEIGHT", "nan", "search.vector_weight must be a number, got 'nan'"),
        ("BRAIN_ROOTS", "", "roots must be a list naming at least one folder"),
    ],
)
def test_a_bad_environment_value_names_the_variable_the_key_the_value_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str, value: str, fragment: str
) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(BrainError) as err:
        load_settings(tmp_path)
    message = str(err.value)
    assert message.startswith(f"environment {env}: ") and fragment in message
    assert message.endswith(f"change or unset {env}") and "\n" not in message


def test_settings_arrive_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"brain.toml": "max_file_mb = 5\n[search]\nlimit = 5.0\n"})
    monkeypatch.setenv("BRAIN_EXTENSIONS", ".md, .txt")
    settings = load_settings(tmp_path)
    assert type(settings["max_file_mb"]) is float and settings.max_file_bytes == 5_000_000
    assert type(settings["search.limit"]) is int
    assert settings["extensions"] == [".md", ".txt"]


def test_a_pasted_key_is_never_echoed(tmp_path: Path) -> None:
    write(tmp_path, {"brain.toml": "[ask]\napi_key_env = 'sk-secret-123'\n"})
    with pytest.raises(BrainError) as err:
        load_settings(tmp_path)
    assert "ask.api_key_env must be the NAME" in str(err.value) and "sk-secret" not in str(err.value)


def test_set_value_checks_pairs_against_the_file(tmp_path: Path) -> None:
    path = tmp_path / "brain.toml"
    path.write_text("[chunking]\nchunk_chars = 4000\n", encoding="utf-8")
    set_value(path, "chunking.overlap_chars", "2000")  # above the default chunk size, below the file's
    with pytest.raises(BrainError, match=r"at most half of chunking.chunk_chars \(2000\)"):
        set_value(path, "chunking.overlap_chars", "4000")
    assert load_settings(tmp_path)["chunking.overlap_chars"] == 2000


def test_every_setting_is_documented_with_its_default() -> None:
    import tomllib

    from brain.config import DEFAULTS, SETTINGS

    doc = (Path(__file__).parent.parent / "docs" / "configuration.md").read_text(encoding="utf-8")
    block = tomllib.loads(doc.split("```toml\n", 1)[1].split("```", 1)[0])
    documented = {f"{k}.{sub}" if isinstance(v, dict) else k: (v[sub] if isinstance(v, dict) else v)
                  for k, v in block.items() for sub in (v if isinstance(v, dict) else [None])}
    assert documented == DEFAULTS
    assert all(spec.help for spec in SETTINGS)


def test_cli_config_show_json_has_help(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "hello"})
    result = invoke("--root", str(tmp_path), "config", "show", "--json")
    assert result.returncode == 0, result.stderr
    import json

    rows = {row["key"]: row for row in json.loads(result.stdout)}
    assert rows["search.limit"]["help"] == "files a search returns"
    assert rows["search.limit"]["value"] == 10 and rows["search.limit"]["origin"] == "default"


@pytest.mark.parametrize(
    "text, suggestion",
    [
        ("[serach]\nlimit = 5\n", "did you mean search.limit?"),  # a mistyped section
        ("[search]\nlimt = 5\n", "did you mean search.limit?"),  # a mistyped key
        ("colour = 'blue'\n", "`brain config show` lists every setting"),  # nothing near
    ],
)
def test_an_unknown_setting_names_the_nearest_instead_of_all(tmp_path: Path, text: str, suggestion: str) -> None:
    """Newcomer round two, item 5: all 28 keys were listed instead."""
    write(tmp_path, {"brain.toml": text})
    with pytest.raises(BrainError) as err:
        load_settings(tmp_path)
    assert suggestion in str(err.value) and "chunking.max_tokens" not in str(err.value)


def test_a_brain_root_that_does_not_exist_is_named(tmp_path: Path) -> None:
    done = run_cli("status", env={"BRAIN_ROOT": str(tmp_path / "nope")}, cwd=tmp_path)
    assert done.returncode == 1 and "(BRAIN_ROOT) does not exist" in done.stderr and "unset it" in done.stderr


def test_config_set_and_unset_mend_a_file_that_refuses_to_load(tmp_path: Path) -> None:
    """Newcomer round two, item 5: the error said to run `config set`, which failed with the same error."""
    original = ("# my notes\n[search]\nmode = \"hybrd\"  # the team's choice\nlimit = 5\n\n"
                "[serach]\nfusion = \"rrf\"\n\n[chunking]\n# small notes\nchunk_chars = 800\n")
    write(tmp_path, {"brain.toml": original, "a.md": "hello"})
    refused = invoke("--root", str(tmp_path), "config", "show")
    assert refused.returncode == 1 and "did you mean search.fusion?" in refused.stderr
    assert "`brain config unset serach.fusion` removes it" in refused.stderr
    removed = invoke("--root", str(tmp_path), "config", "unset", "serach.fusion")
    # Written, and the one thing still wrong is named with its own fix, which works in turn.
    assert removed.returncode == 1 and removed.stdout == "removed serach.fusion from brain.toml\n"
    assert removed.stderr.count("\n") == 1 and "still wrong" in removed.stderr
    assert "search.mode must be one of" in removed.stderr and "brain config set search.mode VALUE" in removed.stderr
    mended = invoke("--root", str(tmp_path), "config", "set", "search.mode", "bm25")
    assert mended.returncode == 0 and mended.stdout == "search.mode = 'bm25'\n" and not mended.stderr
    text = (tmp_path / "brain.toml").read_text(encoding="utf-8")
    assert text == original.replace('"hybrd"', '"bm25"').replace('[serach]\nfusion = "rrf"\n\n', "")
    shown = invoke("--root", str(tmp_path), "config", "show", "--json")
    assert shown.returncode == 0, shown.stderr


def test_config_unset_takes_a_whole_section_and_says_when_there_is_nothing_to_remove(tmp_path: Path) -> None:
    write(tmp_path, {"brain.toml": "# keep\n[serach]\n# a note\nlimit = 5\nmode = 'bm25'\n"})
    done = invoke("--root", str(tmp_path), "config", "unset", "serach")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "brain.toml").read_text(encoding="utf-8") == "# keep\n"
    again = invoke("--root", str(tmp_path), "config", "unset", "serach")
    assert again.returncode == 2 and again.stderr.count("\n") == 1
    assert "serach is not in" in again.stderr and "nothing was removed" in again.stderr


def test_config_set_over_a_value_where_a_section_belongs_names_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "brain.toml"
    path.write_text("search = 5\n", encoding="utf-8")
    with pytest.raises(BrainError, match=r"`brain config unset search`, then set search.limit"):
        set_value(path, "search.limit", "3")
    assert path.read_text(encoding="utf-8") == "search = 5\n"
