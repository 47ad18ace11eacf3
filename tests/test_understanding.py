"""A query's kind of note, frontmatter values, status and time words, read against what the index holds.

The pure part (understanding.understand over a folder's facts) is checked word by word in both
languages; the ranking, the "understood:" line and the off switch through real doors on the indexed
example notes (the bundled model), and a wrong understanding staying harmless.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import anyio
import httpx
import pytest

from brain import Brain, understanding
from brain.search import STOP_WORDS
from brain.stemming import stemmer
from helpers import run_cli, write
from live_servers import http_server, mcp_session

FILES = [
    (1, "projects/alfa/index.md", {"status": "active", "stack": ["laravel", "vue"], "year": 2024, "sector": "clinica"}),
    (2, "projects/alfa/meeting-2024-05-02.md", {}),
    (3, "projects/beta/index.md", {"status": "archived", "stack": ["django"], "started": dt.date(2023, 5, 1),
                                   "sector": "hotel"}),
    (4, "projects/gamma/index.md", {"status": "maintenance", "stack": ["laravel"], "year": 2025, "sector": "hotel"}),
    (5, "decisions/0001-stack.md", {"status": "accepted", "date": dt.date(2024, 3, 1)}),
    (6, "decisions/0002-hosting.md", {"status": "superseded", "date": dt.date(2025, 1, 9)}),
    (7, "decisions/0003-backup.md", {"status": "accepted", "date": dt.date(2025, 6, 2)}),
    (8, "diary/2025-03-04.md", {}),
    (9, "diary/2025-11-24.md", {}),
    (10, "diary/2024-11-28.md", {}),
]
TODAY = dt.date(2025, 12, 3)  # a Wednesday
STEMS = [stemmer("italian"), stemmer("english")]


def read(query: str) -> understanding.Understood:
    return understanding.understand(query, understanding.IndexFacts.gather(FILES), STEMS, STOP_WORDS, today=TODAY)


def matching(query: str) -> list[str]:
    """The paths that satisfy everything understood, in file order."""
    facts = understanding.IndexFacts.gather(FILES)
    found = read(query)
    return [facts.notes[fid].path for fid, _, _ in FILES if found.satisfied(facts.notes[fid]) == len(found.constraints)]


def understood_over(files: list, query: str) -> tuple[str, list[str]]:
    """The "understood:" line of `query` over these files, and the paths that satisfy all of it."""
    facts = understanding.IndexFacts.gather(files)
    found = understanding.understand(query, facts, STEMS, STOP_WORDS, today=TODAY)
    return found.line, [facts.notes[fid].path for fid, _, _ in files
                        if found.satisfied(facts.notes[fid]) == len(found.constraints)]


@pytest.mark.parametrize(("query", "line"), [
    ("progetti Laravel", "kind projects · stack laravel"),
    ("Laravel projects", "kind projects · stack laravel"),
    ("progetti ancora attivi", "kind projects · status active"),
    ("projects still running", "kind projects · status active"),
    ("progetti dismessi", "kind projects · status archived"),
    ("archived projects", "kind projects · status archived"),
    ("progetti in manutenzione", "kind projects · status maintenance"),
    ("decisioni del 2024", "kind decisions · year 2024"),
    ("decisions in 2025", "kind decisions · year 2025"),
    ("progetti dal 2025", "kind projects · since 2025"),
    ("projects since 2024", "kind projects · since 2024"),
    ("progetti Django prima del 2024", "kind projects · before 2024 · stack django"),
    ("diario di marzo 2025", "kind diary · month 2025-03"),
    ("what happened in March 2025", "month 2025-03"),
    ("nel diario della settimana scorsa", "kind diary · week of 2025-11-24"),
    ("diary entries from last week", "kind diary · week of 2025-11-24"),
    ("progetti dell'anno scorso", "kind projects · year 2024"),
    ("projects from last year", "kind projects · year 2024"),
    ("decisioni superate", "kind decisions · status superseded"),
])
def test_each_kind_of_word_is_understood_in_both_languages(query: str, line: str) -> None:
    assert read(query).line == line


@pytest.mark.parametrize("query", [
    "FT-2025-0093",  # an identifier's digits are no year
    "INC-2023-027 disco pieno",
    "Laravel",  # a value alone is a topic: the keyword half finds it
    "backup del server hotel",
    "il progetto per la clinica",  # one project asked for, not a kind
    "what needs to be done before the open day",  # "done" and "open" are not statuses
    "upgrade PHP 8 2024",  # a year without a preposition is a number
])
def test_words_that_name_no_kind_status_or_time_are_left_alone(query: str) -> None:
    assert not read(query), read(query).line


def test_a_query_without_a_kind_status_or_time_word_reads_no_facts() -> None:
    assert not understanding.may_name_something("ripristinare una tabella dal backup")
    assert not understanding.may_name_something("nginx SSL certificate renewal")
    for query in ("progetti Laravel", "archived", "del 2024", "la settimana scorsa", "still running"):
        assert understanding.may_name_something(query), query


def test_the_notes_that_satisfy_it_are_the_ones_the_words_name() -> None:
    assert matching("progetti Laravel ancora attivi") == ["projects/alfa/index.md"]
    assert matching("progetti dismessi") == ["projects/beta/index.md"]
    assert matching("decisioni del 2025") == ["decisions/0002-hosting.md", "decisions/0003-backup.md"]
    assert matching("nel diario di marzo 2025") == ["diary/2025-03-04.md"]
    assert matching("nel diario dell'anno scorso") == ["diary/2024-11-28.md"]
    # A year is met by a frontmatter year, a date field or a date in the file name.
    assert "projects/alfa/meeting-2024-05-02.md" in matching("progetti del 2024")


def test_a_thing_in_a_folder_of_its_own_is_its_main_note() -> None:
    facts = understanding.IndexFacts.gather(FILES)
    kinds = frozenset({"projects"})
    assert facts.main_note(2, kinds) == 1  # a meeting page stands for project alfa's index.md
    assert facts.main_note(1, kinds) == 1
    assert facts.main_note(5, kinds) is None  # not under the kind's folder


def test_a_field_of_unique_values_is_no_category() -> None:
    files = [(n, f"people/p{n}.md", {"email": f"p{n}@example.org", "team": "ops" if n % 2 else "dev"})
             for n in range(1, 9)]
    facts = understanding.IndexFacts.gather(files)
    assert "team" in facts.categories and "email" not in facts.categories


SITES = [  # the things live in a folder no kind noun names; each carries a client, however long its name
    (1, "sites/scuola/index.md", {"client": "Liceo Scientifico Galileo Galilei di Padova", "stack": ["laravel"]}),
    (2, "sites/trasporti/index.md", {"client": "Trasporti Nord s.r.l. (Verona)", "stack": ["django"]}),
    (3, "sites/forno/index.md", {"client": "Forno Antico", "stack": ["laravel"]}),
    (4, "decisions/0001-staging-per-client.md", {"status": "accepted"}),
    (5, "diary/2025-03-04.md", {"project": "scuola"}),
    (6, "diary/2025-03-05.md", {"project": "forno"}),
    (7, "diary/2025-03-06.md", {"project": "trasporti"}),
]
WORKS = [
    (1, "cantieri/cucina.md", {"committente": "Famiglia Rossi", "strumenti": ["revit"]}),
    (2, "cantieri/bagno.md", {"committente": "Bianchi", "strumenti": ["revit"]}),
    (3, "cantieri/negozio.md", {"committente": "Calzature Ferro", "strumenti": ["archicad"]}),
    (4, "scelte/0001-revit.md", {"stato": "approvata"}),
]


@pytest.mark.parametrize(("files", "query", "line", "paths"), [
    (SITES, "clienti con Laravel", "kind notes with client · stack laravel",
     ["sites/scuola/index.md", "sites/forno/index.md"]),
    (SITES, "Laravel clients", "kind notes with client · stack laravel",
     ["sites/scuola/index.md", "sites/forno/index.md"]),
    (SITES, "education customers", "kind notes with client",
     ["sites/scuola/index.md", "sites/trasporti/index.md", "sites/forno/index.md"]),
    (WORKS, "committenti con Revit", "kind notes with committente · strumenti revit",
     ["cantieri/cucina.md", "cantieri/bagno.md"]),
])
def test_clients_name_the_notes_that_have_a_client_where_no_folder_is_called_so(
        files: list, query: str, line: str, paths: list[str]) -> None:
    """The notes that have a client (or a committente) are the things asked for, whatever the length of
    its value; the decision that says "client" in its file name is not one."""
    assert understood_over(files, query) == (line, paths)


def test_no_other_kind_noun_falls_back_to_a_field() -> None:
    """The diary notes carrying `project:` belong to projects and are not projects: "progetti" names no
    folder here, so it names nothing, and a value alone is a topic."""
    facts = understanding.IndexFacts.gather(SITES)
    assert not understanding.understand("progetti con Laravel", facts, STEMS, STOP_WORDS, today=TODAY)
    facts = understanding.IndexFacts.gather(FILES)  # no field is called client: the noun names nothing
    assert not understanding.understand("clienti con Laravel", facts, STEMS, STOP_WORDS, today=TODAY)



STARTED = [  # projects that started in one year and ended in another
    (1, "projects/alfa/index.md", {"started": dt.date(2023, 4, 3), "ended": dt.date(2025, 2, 1)}),
    (2, "projects/beta/index.md", {"started": dt.date(2025, 1, 13), "status": "active"}),
    (3, "projects/gamma/index.md", {"started": dt.date(2024, 6, 3), "ended": dt.date(2024, 12, 20)}),
    (4, "projects/delta/index.md", {"started": dt.date(2022, 9, 1), "ended": dt.date(2025, 7, 4)}),
]
DELIVERED = [  # jobs of a given year delivered on a date
    (5, "commesse/cucina.md", {"anno": 2023, "data_consegna": dt.date(2024, 3, 1), "stato": "consegnata"}),
    (6, "commesse/bagno.md", {"anno": 2024, "data_consegna": dt.date(2024, 11, 5), "stato": "consegnata"}),
    (7, "commesse/negozio.md", {"anno": 2024, "data_consegna": dt.date(2025, 2, 9), "stato": "consegnata"}),
    (8, "commesse/scuola.md", {"anno": 2025, "stato": "in corso"}),
]


@pytest.mark.parametrize(("files", "query", "line", "paths"), [
    (STARTED, "progetti avviati nel 2025", "kind projects · year 2025 (started)", ["projects/beta/index.md"]),
    (STARTED, "projects that ended in 2025", "kind projects · year 2025 (ended)",
     ["projects/alfa/index.md", "projects/delta/index.md"]),
    (STARTED, "progetti iniziati a marzo 2023", "kind projects · month 2023-03 (started)", []),
    (STARTED, "progetti del 2025", "kind projects · year 2025",  # no verb: any date of the note
     ["projects/alfa/index.md", "projects/beta/index.md", "projects/delta/index.md"]),
    (DELIVERED, "commesse consegnate nel 2024", "kind commesse · year 2024 (ended) · stato consegnata",
     ["commesse/cucina.md", "commesse/bagno.md"]),
])
def test_a_time_after_a_start_or_end_word_is_met_by_the_field_named_so(
        files: list, query: str, line: str, paths: list[str]) -> None:
    """"Avviati nel 2025" asks for the start date, not for any date: a project that ended in 2025 after
    starting in 2023 did not start then; the field is found by its name (`started`, `data_consegna`)."""
    assert understood_over(files, query) == (line, paths)


def test_a_start_word_without_a_start_field_is_met_by_any_date() -> None:
    """Where no date field names a start, "iniziati nel 2024" reads as "del 2024": the verb costs nothing."""
    facts = understanding.IndexFacts.gather(FILES)
    found = understanding.understand("progetti iniziati nel 2024", facts, STEMS, STOP_WORDS, today=TODAY)
    assert found.line == "kind projects · year 2024"
# ------------------------------------------------------------------ through the doors, real index


def test_search_ranks_what_was_understood_first_and_says_so(indexed_example: Path) -> None:
    brain = Brain(indexed_example)
    found = brain.search("progetti attivi del 2024", limit=5)
    assert found.understood_line == "kind projects · year 2024 · status active"
    top = {hit.path for hit in found.results[:2]}
    assert top == {"database/projects/gengle/index.md", "database/projects/nexum/index.md"}
    assert [hit.satisfies for hit in found.results[:2]] == [3, 3]
    literal = brain.search("progetti attivi del 2024", limit=5, literal=True)
    assert literal.understood_line == "" and all(hit.satisfies is None for hit in literal.results)
    assert "understood" not in literal.to_dict() and "satisfies" not in literal.to_dict()["results"][0]


def test_a_kind_asks_for_things_each_shown_once_by_its_main_note(indexed_example: Path) -> None:
    paths = [hit.path for hit in Brain(indexed_example).search("progetti archiviati", limit=10).results]
    assert "database/projects/ricettario/index.md" in paths[:2]
    assert "database/projects/ricettario/torta-al-cioccolato.md" not in paths
    literal = [h.path for h in Brain(indexed_example).search("progetti archiviati", limit=30, literal=True,
                                                            no_cutoff=True).results]
    assert "database/projects/ricettario/torta-al-cioccolato.md" in literal


def test_a_wrong_understanding_is_cheap(indexed_example: Path) -> None:
    """"progetti" read as the kind projects still leaves the note the rest of the query names in the results."""
    found = Brain(indexed_example).search("progetti shell snippets", limit=10)
    assert found.understood_line.startswith("kind projects") or not found.understood_line
    assert "notes/shell-snippets.md" in [hit.path for hit in found.results]


def test_the_cli_prints_the_understood_line_and_literal_turns_it_off(indexed_example: Path) -> None:
    shown = run_cli("--root", str(indexed_example), "search", "progetti attivi del 2024", "-k", "3")
    assert shown.returncode == 0, shown.stderr
    assert "understood: kind projects · year 2024 · status active" in shown.stdout
    literal = run_cli("--root", str(indexed_example), "search", "progetti attivi del 2024", "-k", "3", "--literal")
    assert literal.returncode == 0 and "understood:" not in literal.stdout
    as_json = json.loads(run_cli("--root", str(indexed_example), "search", "progetti attivi del 2024", "--json").stdout)
    assert [c["label"] for c in as_json["understood"]] == ["kind projects", "year 2024", "status active"]
    explained = run_cli("--root", str(indexed_example), "search", "progetti attivi del 2024", "--json", "--explain")
    assert json.loads(explained.stdout)["understood"] == as_json["understood"]


@pytest.mark.slow
def test_mcp_and_http_carry_it_and_turn_it_off(indexed_example: Path, tmp_path: Path) -> None:
    query = "progetti attivi del 2024"

    async def check() -> None:
        async with mcp_session("--root", str(indexed_example), log=tmp_path / "mcp.log") as session:
            on = json.loads((await session.call_tool("memory_search", {"query": query})).content[0].text)
            off = json.loads((await session.call_tool("memory_search", {"query": query, "literal": True}))
                             .content[0].text)
            assert on["understood"][0]["label"] == "kind projects" and "understood" not in off

    anyio.run(check)
    with http_server("--root", str(indexed_example), "serve") as server:
        with httpx.Client(base_url=server.url, timeout=120) as http:
            on = http.post("/search", json={"query": query}).json()
            off = http.post("/search", json={"query": query, "literal": True}).json()
    assert on["understood"][0]["label"] == "kind projects" and "understood" not in off


@pytest.mark.slow
def test_the_rest_of_the_query_ranks_within_the_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "healthcare projects": every project is of the kind already, so the word "project" in a hotel's
    notes scores nothing in hybrid; the rest of the query (here, its meaning) ranks the projects."""
    from brain import search

    write(tmp_path, {
        "projects/fisio/index.md": "---\nsector: fisioterapia\n---\n# Fisio Nord\n\nA physiotherapy clinic: "
                                   "patients, doctors, treatment rooms and medical records.\n",
        "projects/hotel/index.md": "---\nsector: hotel\n---\n# Hotel Lago\n\nBooking site for a lake hotel: rooms, "
                                   "prices and seasonal offers. Project kickoff in May; the project ends in June.\n",
        "projects/shop/index.md": "---\nsector: negozio\n---\n# Calzature\n\nAn online shop for shoes and boots.\n",
        "diary/2025-03-01.md": "# Diary\n\nCalled the accountant about invoices.\n",
    })
    brain = Brain(tmp_path)
    brain.index()
    query = "healthcare projects"
    found = brain.search(query, limit=3, explain=True)
    assert found.understood_line == "kind projects"
    assert all(hit.explain["keyword"]["bm25"] == 0.0 for hit in found.results)
    assert [h.path for h in found.results] == [h.path for h in brain.search(query, mode="vector", limit=3).results]
    assert found.results[0].path == "projects/fisio/index.md"
    with monkeypatch.context() as keeping_the_kind_word:
        keeping_the_kind_word.setattr(search, "_without_kind_words", lambda query, understood: None)
        before = {h.path: h for h in brain.search(query, limit=3, explain=True).results}
    assert before["projects/hotel/index.md"].explain["keyword"]["bm25"] > 0  # what the word "project" did
    # Keywords alone keep the kind's word: it is the only one they can match.
    assert brain.search(query, mode="bm25", limit=1).results[0].path == "projects/hotel/index.md"
    # The second gathering searches other keywords, not another meaning: the vector half is made once.
    products = []
    real = search.one_blas_thread
    monkeypatch.setattr(search, "one_blas_thread", lambda: products.append(1) or real())
    again = brain.search("physiotherapy projects", limit=3)
    assert again.understood_line == "kind projects" and len(products) == 1


@pytest.mark.slow
def test_clients_asked_by_sector_are_the_notes_for_those_clients(tmp_path: Path) -> None:
    """ "education clients": no note says "education", and the notes that say "clients" are about the agency's
    habits; the notes that have a client are ranked within by the rest of the query's meaning."""
    write(tmp_path, {
        "sites/liceo/index.md": "---\nclient: Liceo Scientifico Galileo Galilei\nsector: scuola\n---\n"
                                "# Liceo Galilei\n\nRegistro elettronico e sito della scuola: orari delle lezioni, "
                                "compiti, colloqui con i genitori.\n",
        "sites/trasporti/index.md": "---\nclient: Trasporti Nord s.r.l. (Verona)\nsector: logistica\n---\n"
                                    "# Trasporti Nord\n\nTracciamento delle spedizioni e dei camion in viaggio.\n",
        "sites/forno/index.md": "---\nclient: Forno Antico\nsector: panificio\n---\n# Forno Antico\n\n"
                                "Vetrina online della panetteria con gli ordini di pane e dolci.\n",
        "decisions/0009-staging-per-client.md": "# Staging for clients\n\nEvery one of our clients gets a "
                                                "staging copy: clients test there before going live.\n",
        "handbook/clients.md": "# Working with clients\n\nHow we talk to clients, and how clients pay us.\n",
    })
    brain = Brain(tmp_path)
    brain.index()
    found = brain.search("education clients", limit=3)
    assert found.understood_line == "kind notes with client"
    assert found.results[0].path == "sites/liceo/index.md"
    assert {h.path for h in found.results} == {"sites/liceo/index.md", "sites/trasporti/index.md",
                                               "sites/forno/index.md"}
    literal = brain.search("education clients", limit=3, literal=True)
    assert literal.understood_line == "" and literal.results[0].path != "sites/liceo/index.md"
