"""`brain eval`: BEIR-layout folders and notes folders, metrics from ranx cross-checked by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from brain import evaluation, render
from brain.config import FUSION_METHODS
from brain.errors import BrainError
from brain.search import Searcher

from helpers import PROJECT, run_cli, write

CORPUS = [
    {"_id": "d1", "title": "Sourdough",
     "text": "Sourdough bread rises with a starter of wild yeast and lactic bacteria."},
    {"_id": "d2", "title": "Espresso", "text": "An espresso machine forces hot water through finely ground coffee."},
    {"_id": "d3", "title": "Tomatoes", "text": "Tomato plants need full sun, regular watering and a stake to climb."},
    {"_id": "d4", "title": "Bicycles", "text": "Chain lubrication keeps a bicycle drivetrain quiet and efficient."},
    {"_id": "d5", "title": "Yeast",
     "text": "Baker's yeast converts sugars into carbon dioxide, which makes dough rise."},
    {"_id": "d/6", "title": "", "text": "Basil grows well next to tomatoes in a sunny vegetable garden."},
]
QUERIES = [
    {"_id": "q1", "text": "how does bread dough rise"},
    {"_id": "q2", "text": "growing tomatoes in the garden"},
    {"_id": "q3", "text": "making coffee with an espresso machine"},
    {"_id": "q4", "text": "a query nobody judged"},
]
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td5\t2\nq2\td3\t1\nq2\td/6\t1\nq3\td2\t1\nq3\td4\t0\n"


def _collection(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in CORPUS), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES), encoding="utf-8")
    write(folder, {"qrels/test.tsv": QRELS})
    return folder


@pytest.fixture(scope="module")
def beir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("beir")
    return _collection(base / "tiny"), base / "work"


@pytest.mark.slow
def test_ranx_figures_match_a_hand_computation() -> None:
    qrels = {"q1": {"a": 1, "c": 2}, "q2": {"x": 1}}
    run = {"q1": {"b": 3.0, "a": 2.0, "c": 1.0}, "q2": {"y": 1.0}}
    means, each = evaluation.score_run(qrels, run)
    dcg = 1 / math.log2(3) + 2 / math.log2(4)  # a at rank 2, c (grade 2) at rank 3: linear gain
    ideal = 2 / math.log2(2) + 1 / math.log2(3)
    assert each["q1"]["ndcg@10"] == pytest.approx(dcg / ideal)
    assert each["q1"]["mrr@10"] == pytest.approx(0.5)
    assert each["q1"]["precision@5"] == pytest.approx(2 / 5)
    assert each["q1"]["recall@5"] == pytest.approx(1.0)
    assert each["q2"] == {m: 0.0 for m in evaluation.METRICS}
    assert means["ndcg@10"] == pytest.approx(dcg / ideal / 2)
    assert evaluation.score_run({"q": {"a": 1}}, {})[0]["mrr@10"] == 0.0  # nothing found scores 0


@pytest.mark.slow
def test_beir_collection_is_indexed_once_and_scored_per_mode(beir: tuple[Path, Path]) -> None:
    folder, work = beir
    collection = evaluation.load_beir(folder, workdir=work)
    assert collection.documents == 6 and sorted(collection.queries) == ["q1", "q2", "q3"]  # q4 is not judged
    assert collection.qrels["q3"] == {"d2": 1}  # score 0 means judged not relevant
    assert (collection.cache_dir / "docs" / "d1.txt").read_text(encoding="utf-8").startswith("Sourdough\n\n")
    assert not (folder / "docs").exists()  # the collection folder is only read
    report = evaluation.evaluate(collection, per_query=True)
    others = [f"hybrid:{m}" for m in FUSION_METHODS if m != report.settings["fusion"]]  # the default is plain "hybrid"
    assert [r.mode for r in report.results] == ["bm25", "vector", "hybrid", *others]
    assert report.index["reused"] is False and report.index["files"] == 6
    for result in report.results:
        assert set(result.metrics) == set(evaluation.METRICS)
        assert all(0.0 <= v <= 1.0 for v in result.metrics.values())
        assert result.median_ms > 0
    hybrid = next(r for r in report.results if r.mode == "hybrid")
    assert hybrid.metrics["recall@100"] == 1.0  # six documents: everything relevant is found

    # Cross-check one figure by hand: hybrid nDCG@10 of q1 from the ranking search really returns.
    searcher = Searcher(collection.settings)
    try:
        ranked = [collection.doc_id(h.path) for h in searcher.search("how does bread dough rise", limit=100).results]
    finally:
        searcher.close()
    grades = {"d1": 1, "d5": 2}
    dcg = sum(grades.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(ranked[:10], 1))
    ideal = 2 / math.log2(2) + 1 / math.log2(3)
    assert hybrid.per_query["q1"]["ndcg@10"] == pytest.approx(dcg / ideal)
    assert "d/6" in {collection.doc_id(p) for p in [evaluation._file_name("d/6")]}  # odd ids map back

    again = evaluation.evaluate(evaluation.load_beir(folder, workdir=work, limit_queries=2), modes="bm25,hybrid:rrf")
    assert again.index["reused"] is True and again.index["chunks_embedded"] == 0
    assert again.queries == 2 and [r.mode for r in again.results] == ["bm25", "hybrid:rrf"]
    table = render.eval_table(again, markdown=True)
    assert "| mode | nDCG@10 | MRR@10 | P@5 | R@5 | R@100 | R-prec | median ms |" in table
    assert "| hybrid:rrf |" in table and "index reused" in table
    text = render.eval_table(again)
    assert text.splitlines()[1].split() == [
        "mode", "nDCG@10", "MRR@10", "P@5", "R@5", "R@100", "R-prec", "median", "ms"]


@pytest.mark.slow  # seeded from the index the test above builds in the module's shared workdir
def test_index_settings_get_their_own_database_seeded_from_a_sibling(beir: tuple[Path, Path]) -> None:
    folder, work = beir
    plain = evaluation.load_beir(folder, workdir=work)
    other = evaluation.load_beir(
        folder, workdir=work, overrides={"search.fts_tokenizer": "unicode61 remove_diacritics 2"}
    )
    assert other.settings.database_path != plain.settings.database_path
    report = evaluation.evaluate(other, modes="bm25")
    assert report.settings["fts_tokenizer"].startswith("unicode61") and report.index["chunks_embedded"] == 0


@pytest.mark.slow
def test_eval_of_the_example_notes_from_the_command_line(example_notes: Path, tmp_path: Path) -> None:
    queries = PROJECT / "tests" / "data" / "example_queries.jsonl"
    out = run_cli("eval", "--notes", str(example_notes), "--queries", str(queries), "--workdir", str(tmp_path / "w"),
                  "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["queries"] == 11 and data["documents"] == 17
    modes = {r["mode"]: r["metrics"] for r in data["results"]}
    assert {"bm25", "vector", "hybrid"} <= set(modes)
    assert modes["hybrid"]["mrr@10"] >= 0.8  # the queries are easy: the right note is near the top
    assert not (example_notes / ".brain").exists()  # the notes' own index is never touched


@pytest.mark.slow
def test_a_relevant_path_that_is_not_indexed_is_named(example_notes: Path, tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "nginx", "relevant": ["diary/2025-01-21.md"]}) + "\n", encoding="utf-8")
    collection = evaluation.load_notes(example_notes, queries, workdir=tmp_path / "w")
    with pytest.raises(BrainError, match="diary/2025-01-21.md"):
        evaluation.evaluate(collection, modes="bm25")


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["--split", "dev"], 1, "qrels/dev.tsv"),
        (["--notes", "x"], 2, "--queries"),
        (["--modes", "hybrid:magic"], 2, "unknown mode"),
        (["--set", "search.nope=1"], 2, "unknown setting"),
        (["--set", "search.fusion=magic"], 1, "search.fusion"),
        (["--limit-queries", "0"], 2, "0 is not in the range x>=1"),
    ],
)
def test_user_errors_are_one_line(
    beir: tuple[Path, Path], tmp_path: Path, args: list[str], code: int, words: str
) -> None:
    folder, _ = beir
    target = [] if "--notes" in args else [str(folder)]
    out = run_cli("eval", *target, *args, "--workdir", str(tmp_path / "w"))
    assert out.returncode == code, out.stderr
    assert out.stderr.startswith("brain: ") and out.stderr.count("\n") == 1 and words in out.stderr
    assert "Traceback" not in out.stderr


def test_tied_scores_give_the_same_figures_every_time() -> None:
    # Equal scores are ordered by document id, not at random: "a" before "b".
    qrels = {"q": {"b": 1}}
    scores = {evaluation.score_run(qrels, {"q": {"b": 1.0, "a": 1.0}})[0]["mrr@10"] for _ in range(20)}
    assert scores == {0.5}


@pytest.mark.slow
def test_a_beir_folder_with_a_judged_queries_file(beir: tuple[Path, Path], tmp_path: Path) -> None:
    folder, work = beir
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        json.dumps({"id": "t1", "query": "pane lievito madre", "relevant": ["d1", "d5"], "kind": "cross"}) + "\n"
        + json.dumps({"id": "t2", "query": "coltivare pomodori", "relevant": ["d3"], "kind": "cross"}) + "\n"
        + json.dumps({"id": "t3", "query": "tomatoes", "relevant": ["d3"], "kind": "plain"}) + "\n",
        encoding="utf-8",
    )
    collection = evaluation.load_collection(str(folder), queries=str(queries), workdir=str(work))
    report = evaluation.evaluate(collection, modes="bm25,hybrid")
    assert report.queries == 3
    hybrid = next(r for r in report.results if r.mode == "hybrid")
    assert set(hybrid.by_kind) == {"cross", "plain"} and hybrid.by_kind["cross"]["queries"] == 2
    assert hybrid.by_kind["plain"]["mrr@10"] == 1.0
    assert "kind" in render.eval_table(report) and "| cross | 2 |" in render.eval_table(report, markdown=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"query": "x", "relevant": ["nope"]}) + "\n", encoding="utf-8")
    with pytest.raises(BrainError, match="nope"):
        evaluation.load_collection(str(folder), queries=str(bad), workdir=str(work))


@pytest.mark.slow
def test_a_query_limited_to_a_path_searches_only_there(example_notes: Path, tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        json.dumps(
            {"id": "p1", "query": "nginx SSL certificate", "relevant": ["diary/2025-01-20.md"], "path": "database/"}
        ) + "\n",
        encoding="utf-8",
    )
    collection = evaluation.load_notes(example_notes, queries, workdir=tmp_path / "w")
    report = evaluation.evaluate(collection, modes="bm25", per_query=True)
    # The relevant note is outside database/, so the limited search cannot find it.
    assert report.results[0].per_query["p1"]["mrr@10"] == 0.0


@pytest.mark.slow
def test_a_judged_query_with_an_unclosed_quote_is_searched_as_typed(example_notes: Path, tmp_path: Path) -> None:
    # Operators are for people typing them: a collection's stray quote is a character, not a refused query.
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "u1", "query": 'nginx "SSL certificate',
                                   "relevant": ["diary/2025-01-20.md"]}) + "\n", encoding="utf-8")
    collection = evaluation.load_notes(example_notes, queries, workdir=tmp_path / "w")
    report = evaluation.evaluate(collection, modes="bm25", per_query=True)
    assert report.results[0].per_query["u1"]["mrr@10"] > 0.0


@pytest.mark.slow
def test_a_file_that_fails_to_index_counts_as_not_found(tmp_path: Path) -> None:
    """brain index goes on past a broken file; so does eval, saying so, and the file is simply not found."""
    notes = tmp_path / "notes"
    write(notes, {"bread.md": "# Bread\nsourdough starter and flour\n", "broken.pdf": b"%PDF-1.4 not a pdf",
                  "tomato.md": "# Tomatoes\ngrowing tomatoes on a balcony\n"})
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q1", "query": "sourdough", "relevant": ["bread.md"]}) + "\n"
                       + json.dumps({"id": "q2", "query": "manual", "relevant": ["broken.pdf"]}) + "\n",
                       encoding="utf-8")
    collection = evaluation.load_collection(None, notes=str(notes), queries=str(queries), workdir=str(tmp_path / "w"))
    report = evaluation.evaluate(collection, modes="bm25")
    assert [f["path"] for f in report.index["failed"]] == ["broken.pdf"]
    assert report.results[0].metrics["mrr@10"] == 0.5  # q1 found, q2's file is not in the index
    assert "1 file failed to index and count as not found (first: broken.pdf" in render.eval_table(report)


def test_eval_without_the_metrics_library_fails_before_indexing(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ranx" else real(name, *a))
    notes = tmp_path / "notes"
    write(notes, {"a.md": "# A\ntext\n"})
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q1", "query": "text", "relevant": ["a.md"]}) + "\n", encoding="utf-8")
    work = tmp_path / "w"
    collection = evaluation.load_collection(None, notes=str(notes), queries=str(queries), workdir=str(work))
    with pytest.raises(BrainError, match="needs ranx"):
        evaluation.evaluate(collection, modes="bm25")
    assert not list(work.rglob("*.sqlite"))  # nothing was indexed first


@pytest.mark.slow
def test_eval_says_what_is_slow_while_it_is(example_notes: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Newcomer round two, item 6: the first run spent minutes compiling the metrics library, silently."""
    collection = evaluation.load_notes(example_notes, PROJECT / "tests" / "data" / "example_queries.jsonl",
                                       workdir=tmp_path / "w")
    evaluation.evaluate(collection, modes="bm25", show_progress=True)
    said = capsys.readouterr().err
    assert "eval: bm25 done (11 queries)" in said
    assert "eval: scoring (the metrics library compiles itself on its first run: a few minutes)" in said
    assert said.index("bm25 done") < said.index("eval: scoring")
