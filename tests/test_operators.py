"""Search operators in the query: "phrases", -exclusions, OR, path:, tag:, key:value, key>value, and --where's
comparisons, on a real index of a few notes (keyword mode where meaning plays no part)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from brain import Brain
from brain.errors import BrainError
from brain.operators import parse, parse_filter
from helpers import run_cli, write

NOTES = {
    "projects/alpha.md": (
        "---\nstatus: active\npriority: 3\ntags: [work, meeting/weekly]\ndate: 2024-05-03\n---\n"
        "# Alpha\n\nBollire la pasta per 5 minuti, poi scolare. Riunione settimanale.\n"
    ),
    "projects/beta.md": (
        "---\nstatus: archived\npriority: 1\ntags: work\ndate: 2023-11-20\n---\n"
        "# Beta\n\nOgni 5 giorni controllare i minuti della riunione. Drafts only.\n"
    ),
    "diary/today.md": (
        "---\nstatus: active\npriority: 7\ndate: 2025-01-10\n---\n"
        "# Today\n\nCinque minuti di pausa, poi la pasta. Note: nota bene, riunione domani.\n"
    ),
}
FIELDS = {"status", "priority", "tags", "date"}


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("operators") / "notes"
    write(root, NOTES)
    # Distinct times, oldest first as listed: a query of only filters lists the newest first.
    for age, path in enumerate(reversed(list(NOTES))):
        stamp = 1_700_000_000 - age * 1000
        os.utime(root / path, (stamp, stamp))
    Brain(root).index()
    return root


@pytest.fixture(scope="module")
def brain(notes: Path) -> Brain:
    return Brain(notes)


def paths(brain: Brain, query: str, **options: object) -> list[str]:
    return [hit.path for hit in brain.search(query, mode="bm25", **options).results]  # type: ignore[arg-type]


# ------------------------------------------------------------------ the parser alone


def test_words_that_look_like_operators_stay_words() -> None:
    ops = parse("e-mail C++ -5 - x nota: bene http://x 10:30 --flag", FIELDS)
    assert not ops and ops.text == "e-mail C++ -5 - x nota: bene http://x 10:30 --flag"


def test_a_key_the_index_lacks_stays_text() -> None:
    ops = parse("colour:red status:active", FIELDS)
    assert ops.text == "colour:red" and [f.shown for f in ops.filters] == ["status=active"]


def test_a_colon_with_nothing_after_it_is_prose() -> None:
    ops = parse("Status: what is left path: tag:", FIELDS)
    assert not ops and ops.text == "Status: what is left path: tag:"


def test_phrases_exclusions_or_and_filters_are_read() -> None:
    ops = parse('"5 minuti" pasta -draft -"in corso" a OR b path:projects/ -path:old/ tag:#work '
                'Status:"in corso" priority>=2 -date<2024', FIELDS)
    assert ops.text == "5 minuti pasta a b"
    assert ops.to_dict() == {
        "phrases": ["5 minuti"], "any_of": [["a", "b"]], "excluded": ["draft", '"in corso"'],
        "paths": ["projects/", "-old/"], "filters": ["tag:work", "status=in corso", "priority>=2", "-date<2024"],
    }
    assert [[t.text for t in group] for group in ops.required] == [["5 minuti"]]  # words alone are not required


def test_or_that_joins_nothing_is_a_word() -> None:
    assert parse("OR", FIELDS).text == "OR" and parse("a OR", FIELDS).text == "a OR"
    assert parse("a or b", FIELDS).text == "a or b"  # only upper-case OR is the operator


@pytest.mark.parametrize(("query", "said"), [
    ('"5 minuti pasta', "closing quote"),
    ("pasta status>", "no value"),
    ("priority>high", "compares numbers or dates"),
    ('path:""', "no folder"),
    ("tag:#", "no tag"),
    ("path>x", "path takes a folder"),
])
def test_a_malformed_operator_is_one_usage_error(query: str, said: str) -> None:
    with pytest.raises(BrainError) as err:
        parse(query, FIELDS)
    assert err.value.usage and said in str(err.value) and "\n" not in str(err.value)


def test_where_compares_numbers_and_dates_by_their_whole_period() -> None:
    assert parse_filter("priority>2").matches({"priority": 3})
    assert not parse_filter("priority>2").matches({"priority": "10x"})
    assert parse_filter("priority<=10").matches({"priority": "9.5"})
    assert parse_filter("date>2024").matches({"date": "2025-01-10"})
    assert not parse_filter("date>2024").matches({"date": "2024-12-31"})
    assert parse_filter("date<=2024").matches({"date": "2024-12-31"})
    assert parse_filter("date>=2024-05").matches({"date": "2024-05-01"})
    assert not parse_filter("date<2024-05-01").matches({"date": "2024-05-01T10:00:00"})
    assert parse_filter("date>2024-01-01").matches({"date": ["2020-01-01", "2025-02-02"]})  # a list: any value
    assert not parse_filter("date>2024").matches({})
    assert parse_filter("status!=archived").matches({"status": "active"})


@pytest.mark.parametrize("text", ["priority==2", "priority<>2", "priority=>2", "priority>", "=2", "a b>2", "x"])
def test_where_refuses_other_operators(text: str) -> None:
    with pytest.raises(BrainError) as err:
        parse_filter(text)
    assert err.value.usage and "key>value" in str(err.value)


def test_where_refuses_a_comparison_with_no_number_or_date() -> None:
    with pytest.raises(BrainError) as err:
        parse_filter("status>active")
    assert "'active' is neither" in str(err.value)


# ------------------------------------------------------------------ on a real index


def test_a_quoted_phrase_ranks_the_notes_holding_it_first(brain: Brain) -> None:
    assert set(paths(brain, "5 minuti")) == set(NOTES)  # two words: every note has one of them
    response = brain.search('"5 minuti"', mode="bm25")
    # Ranked, not filtered: the others follow, so a question quoting words its note says otherwise still finds it.
    assert [h.path for h in response.results][0] == "projects/alpha.md"
    assert {h.path for h in response.results} == set(NOTES)
    assert response.operators == {"phrases": ["5 minuti"]} and response.query == '"5 minuti"'


def test_or_between_phrases_ranks_either_first(brain: Brain) -> None:
    assert set(paths(brain, '"5 minuti" OR "5 giorni"')[:2]) == {"projects/alpha.md", "projects/beta.md"}
    assert paths(brain, '"5 minuti" OR "5 giorni"')[2:] == ["diary/today.md"]
    # Two required phrases: no note holds both, so none goes first and the words rank them all.
    assert paths(brain, '"5 minuti" "5 giorni"') == paths(brain, "5 minuti 5 giorni")


def test_an_excluded_word_leaves_out_its_notes_stemmed(brain: Brain) -> None:
    assert "projects/beta.md" in paths(brain, "riunione")
    # The note says "Drafts": the keyword index's stemming matches it to "draft".
    assert set(paths(brain, "riunione -draft")) == {"projects/alpha.md", "diary/today.md"}
    assert paths(brain, 'riunione -"5 minuti" -"5 giorni"') == ["diary/today.md"]


def test_path_tag_and_field_filters_in_the_query(brain: Brain) -> None:
    assert set(paths(brain, "riunione path:projects/")) == {"projects/alpha.md", "projects/beta.md"}
    assert paths(brain, "riunione -path:projects/") == ["diary/today.md"]
    assert paths(brain, "riunione tag:meeting") == ["projects/alpha.md"]  # a nested tag: meeting/weekly
    assert set(paths(brain, "riunione tag:work")) == {"projects/alpha.md", "projects/beta.md"}  # list and string
    assert set(paths(brain, "riunione status:active")) == {"projects/alpha.md", "diary/today.md"}
    assert paths(brain, "riunione priority>3") == ["diary/today.md"]
    assert set(paths(brain, "riunione date<2025")) == {"projects/alpha.md", "projects/beta.md"}
    # With --where and --path-prefix: all must hold.
    assert paths(brain, "riunione status:active", where=["priority<5"], path_prefix="projects/") == [
        "projects/alpha.md"]


def test_a_query_of_only_filters_lists_the_newest_first(brain: Brain) -> None:
    response = brain.search("status:active", mode="hybrid")
    assert [h.path for h in response.results] == ["diary/today.md", "projects/alpha.md"]
    assert all(h.keyword_score is None and h.vector_score is None for h in response.results)
    assert response.operators == {"filters": ["status=active"], "order": "newest first"}
    assert paths(brain, "-riunione") == []
    assert paths(brain, "-draft", limit=1) == ["diary/today.md"]


def test_a_filter_that_matches_nothing_says_what_is_there(brain: Brain) -> None:
    response = brain.search("riunione status:archivd", mode="bm25")
    assert response.results == []
    assert "status=archivd" in response.unmatched_filter and "archived" in response.unmatched_filter


def test_literal_reads_every_character_as_typed(brain: Brain) -> None:
    response = brain.search("riunione -draft status:active", mode="bm25", literal=True)
    assert "projects/beta.md" in [h.path for h in response.results] and response.operators == {}
    assert brain.search('"5 minuti', mode="bm25", literal=True).results


def test_a_phrase_ranks_its_note_above_what_the_vector_half_brings_without_it(brain: Brain) -> None:
    # Hybrid: the vector half ranks every note; the one holding the phrase comes first.
    response = brain.search('"5 minuti"', mode="hybrid")
    assert [h.path for h in response.results][0] == "projects/alpha.md"


# ------------------------------------------------------------------ through the CLI


def test_cli_shows_the_operators_and_carries_them_in_json(notes: Path) -> None:
    out = run_cli("--root", str(notes), "search", '"5 minuti" -draft path:projects/', "--mode", "bm25")
    assert out.returncode == 0, out.stderr
    assert 'operators: first the notes holding "5 minuti"; without draft; under projects/' in out.stdout
    data = json.loads(run_cli("--root", str(notes), "search", "tag:work", "--json").stdout)
    assert data["operators"] == {"filters": ["tag:work"], "order": "newest first"}
    assert [r["path"] for r in data["results"]] == ["projects/beta.md", "projects/alpha.md"]  # newest first
    plain = json.loads(run_cli("--root", str(notes), "search", "pasta", "--mode", "bm25", "--json").stdout)
    assert "operators" not in plain  # no operator: the JSON keeps its shape
    lead = run_cli("--root", str(notes), "search", "--mode", "bm25", "--", "-draft riunione")
    assert lead.returncode == 0 and "projects/beta.md" not in lead.stdout


@pytest.mark.parametrize("args", [('"5 minuti',), ("pasta priority>",), ("pasta", "--where", "priority>high"),
                                  ("pasta", "--where", "priority=>2")])
def test_cli_refuses_a_malformed_operator_with_one_line(notes: Path, args: tuple[str, ...]) -> None:
    out = run_cli("--root", str(notes), "search", *args, "--mode", "bm25")
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and out.stderr.startswith("brain: ")
