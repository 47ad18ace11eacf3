"""Search: safe queries, OR semantics, identifiers, fusion that keeps keyword-only hits, filters, freshness."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from brain import Brain
from brain.config import load_settings
from brain.errors import BrainError
from brain.search import fts_match
from helpers import run_cli, write

SAFE_QUERIES = [
    "C++", "#1234", '"quoted"', "e-mail", "FT-2026-0412", "AND", "OR", "NOT foo", "foo*", "a AND", "(x", "x)",
    "NEAR(a b)", "col:umn", "^start", "l'indice", "user@example.com", "2024-01-05", "what?", "100%", "a\"b\"c",
    "perché città", "-minus", "+plus", "{brace}", "[bracket]", "back\\slash", "emoji 🚀 here", "ĲSSEL ǅ",
]


@pytest.fixture(scope="module")
def brain(indexed_example: Path) -> Brain:
    return Brain(indexed_example)


@pytest.mark.parametrize("query", SAFE_QUERIES)
@pytest.mark.parametrize("mode", ["bm25", "hybrid"])
def test_any_typed_text_is_a_safe_query(brain: Brain, query: str, mode: str) -> None:
    response = brain.search(query, mode=mode)
    assert response.query == query
    assert brain.search(query, mode=mode, literal=True).query == query  # no operator read: the words as typed


def test_an_unclosed_quote_is_a_usage_error_unless_literal(brain: Brain) -> None:
    # A quote opens an exact phrase (operators.py): one with no end is a mistake to say, not to guess.
    with pytest.raises(BrainError) as err:
        brain.search('"quoted', mode="bm25")
    assert err.value.usage and "closing quote" in str(err.value)
    assert brain.search('"quoted', mode="bm25", literal=True).query == '"quoted'


@pytest.mark.parametrize("query", ["", "   ", "?!", "--- ...", "*", "()"])
def test_empty_or_punctuation_only_query_is_a_usage_error(brain: Brain, query: str) -> None:
    if fts_match(query) is not None:
        pytest.skip("has searchable characters")
    with pytest.raises(BrainError) as err:
        brain.search(query)
    assert err.value.usage


def test_words_are_or_joined(brain: Brain) -> None:
    # No single file has all of these words; each file with some of them still comes back.
    hits = brain.search("Grafana torta PostGIS", mode="bm25").results
    paths = {h.path for h in hits}
    assert "database/projects/faro/index.md" in paths
    assert "database/projects/ricettario/torta-al-cioccolato.md" in paths
    assert "database/projects/nexum/index.md" in paths


@pytest.mark.parametrize("identifier", ["ERR-4821", "#1234", "FT-2026-0412"])
@pytest.mark.parametrize("mode", ["bm25", "hybrid"])
def test_exact_identifier_ranks_its_file_first(brain: Brain, identifier: str, mode: str) -> None:
    hits = brain.search(identifier, mode=mode).results
    assert hits[0].path == "log/decisions.md"
    assert hits[0].keyword_score > 0.9


def test_accents_are_folded(brain: Brain) -> None:
    assert brain.search("perche citta caffe", mode="bm25").results[0].path == "notes/appunti-riunione.txt"
    assert brain.search("PERCHÉ CITTÀ", mode="bm25").results[0].path == "notes/appunti-riunione.txt"


def test_top_result_does_not_depend_on_k(brain: Brain) -> None:
    for query in ["progetti Laravel", "nginx SSL", "errore 500", "garden planning", "monitoring alerts"]:
        for mode in ["hybrid", "bm25", "vector"]:
            one = brain.search(query, mode=mode, limit=1).results
            ten = brain.search(query, mode=mode, limit=10).results
            assert [h.path for h in one] == [h.path for h in ten[:1]]
            assert one[0].score == ten[0].score


def test_semantic_match_without_shared_words(brain: Brain) -> None:
    hits = brain.search("chocolate dessert baking", mode="vector").results
    assert hits[0].path.startswith("database/projects/ricettario/")


def test_keyword_only_hit_survives_fusion(tmp_path: Path) -> None:
    # A chunk of only code has no vector: it can only be found by BM25, and hybrid must keep it.
    write(tmp_path, {
        "code.md": "```\nzx_frobnicate_widget(42)\n```\n",
        "prose.md": "A long note about gardening, tomatoes and the weather in spring.",
    })
    brain = Brain(tmp_path)
    brain.index()
    hits = brain.search("zx_frobnicate_widget", mode="hybrid").results
    assert hits[0].path == "code.md"
    assert hits[0].vector_score == 0.0 and hits[0].keyword_score == 1.0


def test_scores_and_components(brain: Brain) -> None:
    response = brain.search("nginx SSL certificate renewal", vector_weight=0.7)
    for hit in response.results:
        # z-scores over the candidates (the default fusion): each half centred on its pool's mean.
        assert hit.explain["fusion"] == "zscore" and hit.explain["vector"]["pool"]["std"] > 0
        # The asked weight, raised per query by the share of query words the notes lack.
        w = hit.explain["weights"]["vector"]
        assert hit.explain["weights"]["vector_asked"] == 0.7 and 0.7 <= w <= 1
        assert hit.score == pytest.approx(w * hit.vector_score + (1 - w) * hit.keyword_score, abs=2e-4)
        assert hit.start_line <= hit.end_line
    scores = [h.score for h in response.results]
    assert scores == sorted(scores, reverse=True)
    assert len({h.path for h in response.results}) == len(response.results)  # one hit per file


def test_relevance_reads_0_to_1_and_the_cutoff_drops_only_what_is_far_below_the_best(brain: Brain) -> None:
    query = "ricetta della torta al cioccolato della nonna"
    every = brain.search(query, limit=10, no_cutoff=True)
    assert len(every.results) == 10 and every.cut_off == 0
    relevance = [h.relevance for h in every.results]
    assert relevance[0] == 1.0 and relevance == sorted(relevance, reverse=True)
    assert all(0.0 <= r <= 1.0 for r in relevance)
    # (score - mean) / (best - mean): with z-score fusion the candidates' mean is about 0
    assert relevance[1] == pytest.approx(every.results[1].score / every.results[0].score, abs=0.02)
    cut = brain.search(query, limit=10)
    kept = [h for h in every.results if h.relevance >= 0.05]
    assert [h.path for h in cut.results] == [h.path for h in kept] and len(kept) < 10
    assert cut.cut_off == 10 - len(kept) and cut.to_dict()["cut_off"] == {"results": cut.cut_off, "below": 0.05}
    assert "diary/2024-03-14.md" in [h.path for h in cut.results]  # the judged second answer stays
    assert "cut_off" not in every.to_dict()
    # bm25 mode is never cut: every result there holds a query word.
    assert brain.search(query, limit=10, mode="bm25").cut_off == 0


def test_one_candidate_reads_as_fully_relevant(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "# Zebra\n\nThe zebra crossing outside the office.\n"})
    only = Brain(tmp_path)
    only.index()
    hit, = only.search("zebra").results
    assert hit.relevance == 1.0


def test_chunks_mode_lists_chunks(brain: Brain) -> None:
    hits = brain.search("nexum nginx", chunks=True, limit=20).results
    assert len({h.path for h in hits}) < len(hits)


def test_filters_on_frontmatter_and_path(brain: Brain) -> None:
    active = brain.search("project", where=["status=active"], limit=20).results
    assert active and all(h.path.startswith("database/projects/") for h in active)
    archived = {h.path for h in brain.search("project", where=["status=archived"], limit=20).results}
    assert "database/projects/orto/index.md" in archived
    assert not archived & {h.path for h in active}
    not_archived = {h.path for h in brain.search("project", where=["status!=archived"], limit=20,
                                                 no_cutoff=True).results}
    assert "diary/2024-03-14.md" in not_archived and not not_archived & archived
    tagged = {h.path for h in brain.search("project", where=["stack=laravel"], limit=20).results}
    assert tagged == {"database/projects/gengle/index.md"}
    diary = brain.search("nginx", path_prefix="diary/", limit=20).results
    assert diary and all(h.path.startswith("diary/") for h in diary)
    with pytest.raises(BrainError):
        brain.search("x", where=["status"])


@pytest.mark.parametrize("outside", ["../x", "/etc", "diary/../../x", "C:/notes"])
def test_a_path_filter_outside_the_notes_is_refused_by_the_core(brain: Brain, outside: str) -> None:
    from brain.errors import PathRefused

    with pytest.raises(PathRefused, match="must be relative to the notes folder, without '..'"):
        brain.search("nginx", path_prefix=outside)
    done = run_cli("--root", str(brain.root), "search", "nginx", "--path-prefix", outside)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"brain: path filter {outside!r} must be relative to the notes folder, without '..'\n"


def test_unknown_mode_and_bad_limit(brain: Brain) -> None:
    with pytest.raises(BrainError, match="unknown mode"):
        brain.search("x", mode="fuzzy")
    with pytest.raises(BrainError, match="limit"):
        brain.search("x", limit=0)


def test_results_follow_the_files_on_disk(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "# Title\nthe lighthouse keeper\n", "b.md": "the lighthouse of Alexandria\n"})
    brain = Brain(tmp_path)
    brain.index()
    (tmp_path / "a.md").write_text("# Title\nthe lighthouse keeper retired in 1990\n")
    os.utime(tmp_path / "a.md", ns=(1, 1))
    (tmp_path / "b.md").unlink()
    response = brain.search("lighthouse", mode="bm25")
    assert [h.path for h in response.results] == ["a.md"]
    assert response.results[0].stale
    assert "retired in 1990" in response.results[0].preview
    assert response.dropped == ["b.md"]


def test_a_file_that_cannot_be_read_now_keeps_its_indexed_copy(tmp_path: Path) -> None:
    """Gone means dropped; there but unreadable means kept, stale, with the indexed preview."""
    write(tmp_path, {"brain.toml": "max_file_mb = 0.001\n", "a.md": "the lighthouse keeper\n",
                     "b.md": "lighthouse log\n"})
    brain = Brain(tmp_path)
    brain.index()
    (tmp_path / "a.md").write_text("the lighthouse keeper\n" + "padding line\n" * 200)  # now over the size limit
    os.utime(tmp_path / "b.md", ns=(1, 1))  # touched, same bytes
    hits = {h.path: h for h in brain.search("lighthouse", mode="bm25").results}
    assert hits["a.md"].stale and hits["a.md"].preview == "the lighthouse keeper"
    assert not hits["b.md"].stale


def test_query_encoder_without_torch_matches_the_index_encoder(brain: Brain) -> None:
    pytest.importorskip("sentence_transformers", reason="the torch extra is not installed")
    from brain.embeddings import Embedder

    settings = load_settings(brain.root)
    settings.values["embedding.model"] = "all-MiniLM-L6-v2"
    texts = ["progetti Laravel per la clinica", "nginx SSL certificate renewal", "x " * 400]
    for precision, agreement in (("float32", 0.99999), ("bfloat16", 0.9995)):
        settings.values["embedding.precision"] = precision
        documents = Embedder(settings).backend
        documents._load_model()  # documents through torch, as a big scan does
        for text in texts:
            light = documents.encode_query(text)
            full = documents.encode_documents([text])[0]
            assert float(np.dot(light, full)) > agreement, (precision, text[:20])


def test_small_batches_encode_without_torch_and_agree(brain: Brain) -> None:
    pytest.importorskip("sentence_transformers", reason="the torch extra is not installed")
    from brain.embeddings import Embedder

    settings = load_settings(brain.root)
    settings.values["embedding.model"] = "all-MiniLM-L6-v2"
    settings.values["embedding.precision"] = "float32"
    texts = ["short", "a somewhat longer text about nginx and SSL certificates", "parola " * 300, "Il caffè è buono"]
    light = Embedder(settings).backend._light_encode(texts)  # padded numpy batch, no torch
    full = Embedder(settings).backend
    full._load_model()
    reference = full.encode_documents(texts)
    assert (np.sum(light * reference, axis=1) > 0.99999).all()


def test_function_words_leave_the_keyword_query_unless_alone() -> None:
    assert fts_match("What is the dose of chloroquine?") == '"dose" OR "chloroquine"'
    assert fts_match("progetti per la clinica") == '"progetti" OR "clinica"'
    assert fts_match("the of and") == '"the" OR "of" OR "and"'  # nothing else to search for
    assert fts_match("FT-2026-0412") == '"FT 2026 0412"'  # identifiers stay whole
    # Italian's question words, possessives and demonstratives, as English's where, my, this.
    assert fts_match("dove salva Obsidian le sue impostazioni?") == '"salva" OR "Obsidian" OR "impostazioni"'
    assert fts_match("Perché questo progetto usa il mio server?") == '"progetto" OR "usa" OR "server"'
    assert fts_match("Where does my project keep this file?") == '"project" OR "keep" OR "file"'
    # "how many" and quanti ask for a number: neither word says what the note is about.
    assert fts_match("how many words are in this text file") == '"words" OR "text" OR "file"'
    assert fts_match("How much room is this folder taking up?") == '"room" OR "folder" OR "taking" OR "up"'
    assert fts_match("quanti giorni dura la copia fuori sede?") == '"giorni" OR "dura" OR "copia" OR "fuori" OR "sede"'
    assert fts_match("ogni quanto si fa lo scrub?") == '"ogni" OR "fa" OR "scrub"'


@pytest.mark.parametrize(("query", "match"), [
    ("annullare l'ultimo commit", '"annullare" OR "ultimo" OR "commit"'),
    ("Chi ha proclamato l' embargo?", '"proclamato" OR "embargo"'),  # an apostrophe then a space
    ("dell’app un'altra nota", '"app" OR "altra" OR "nota"'),  # the typographic apostrophe too
    ("why doesn't the script run", '"script" OR "run"'),  # a negation is a function word whole
    ("next month's partition", '"next" OR "month" OR "partition"'),
    ("O'Brien rock'n'roll", '"O Brien" OR "rock" OR "roll"'),  # not an elision: kept
])
def test_elisions_and_clitics_leave_the_keyword_query(query: str, match: str) -> None:
    assert fts_match(query) == match


def test_an_elided_word_finds_the_word_without_its_article(tmp_path: Path) -> None:
    # "l'ultimo" searched as the phrase "l ultimo" missed a note that writes "ultimo" after another word.
    write(tmp_path, {
        "git.md": "# Git\n\nPer annullare un ultimo commit locale: git reset --soft HEAD~1.\n",
        "other.md": "# Altro\n\nUna nota sul giardino e sulle rose in primavera.\n",
    })
    brain = Brain(tmp_path)
    brain.index()
    hits = brain.search("l'ultimo", mode="bm25").results
    assert [h.path for h in hits] == ["git.md"]
    assert "ultimo" in hits[0].preview


# Nonsense for these notes: no word of them is in any note, nothing is about them.
NONSENSE = ["zzkx vrrp flonk", "bitcoin mining rig", "gattini che ballano il tango"]


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
@pytest.mark.parametrize("query", NONSENSE)
def test_nonsense_is_flagged_weak_instead_of_looking_confident(brain: Brain, query: str, mode: str) -> None:
    data = brain.search(query, mode=mode).to_dict()
    assert data["results"], "the closest notes are still listed"
    assert data["weak"] is True and data["keyword_matched"] is False


@pytest.mark.parametrize("query", ["progetti Laravel per la clinica", "nginx SSL certificate", "torta della nonna"])
def test_a_real_query_is_not_weak_and_keeps_its_json_keys(brain: Brain, query: str) -> None:
    data = brain.search(query).to_dict()
    assert "weak" not in data and "keyword_matched" not in data


def test_the_text_view_says_no_keyword_matched(indexed_example: Path) -> None:
    from helpers import run_cli

    out = run_cli("--root", str(indexed_example), "search", NONSENSE[0], "-k", "2")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[1].startswith("no keyword matched; closest by meaning")
    assert lines[2].startswith("1. ")
    plain = run_cli("--root", str(indexed_example), "search", "progetti Laravel", "-k", "2")
    assert "no keyword matched" not in plain.stdout


def test_a_file_that_got_shorter_previews_its_best_matching_lines(tmp_path: Path) -> None:
    # The hit is the second chunk (lines past 40); then the file shrinks to four lines.
    filler = "".join(f"Line {n} is about the weather on the coast and nothing else.\n" for n in range(1, 41))
    write(tmp_path, {"a.md": "# Diario\n" + filler + "The giraffe escaped from the zoo at dawn.\n" * 3})
    brain = Brain(tmp_path)
    brain.index()
    indexed = brain.search("giraffe", mode="bm25").results[0]
    assert indexed.start_line > 4 and "giraffe" in indexed.preview
    (tmp_path / "a.md").write_text("# Diario\n\nNothing much.\nThe giraffe came back for breakfast.\n")
    hit = brain.search("giraffe", mode="bm25").results[0]
    assert hit.stale
    assert "The giraffe came back for breakfast." in hit.preview
    assert 1 <= hit.start_line <= 4 <= hit.end_line  # the lines shown, in the file as it is now
    (tmp_path / "a.md").write_text("---\ntitle: Diario\n---\n")  # only frontmatter left
    emptied = brain.search("giraffe", mode="bm25").results[0]
    assert emptied.stale and emptied.preview == "(no text now)"


def test_a_filter_that_matches_no_note_says_so_and_what_is_there(indexed_example: Path) -> None:
    """--path-prefix is a folder, not the start of a name; a filter that leaves nothing names itself."""
    brain = Brain(indexed_example)
    found = brain.search("progetti", path_prefix="databa")
    assert not found.results
    assert "no indexed note is under 'databa'" in found.unmatched_filter and "database/" in found.unmatched_filter
    typo = brain.search("progetti", where=["status=archivd"])
    assert "status=archivd" in typo.unmatched_filter and "archived" in typo.unmatched_filter
    assert typo.to_dict()["unmatched_filter"] == typo.unmatched_filter
    assert "unmatched_filter" not in brain.search("progetti", path_prefix="database").to_dict()
    shown = run_cli("--root", str(indexed_example), "search", "progetti", "--where", "status=archivd")
    assert "filter matched no note: no indexed note has status=archivd" in shown.stdout


def test_a_preview_whose_words_end_the_chunk_is_filled_from_before_them(tmp_path: Path) -> None:
    """Books issue: a preview of the chunk's last few words ("nove anni dopo il C++") left out the answer before it."""
    lines = [f"Riga {n} sulla storia dei linguaggi e dei loro autori, con date e versioni." for n in range(12)]
    note = "# Storia\n\n" + "\n".join(lines) + "\nIl primo rilascio pubblico del pitone avvenne nel 1991.\n"
    write(tmp_path, {"storia.md": note})
    brain = Brain(tmp_path)
    brain.index()
    hit = brain.search("pitone rilascio", mode="bm25").results[0]
    assert hit.line == note.count("\n")  # the best-matching words are on the chunk's last line
    assert "pitone avvenne nel 1991" in hit.preview
    assert len(hit.preview) >= 200 and hit.preview.startswith("Riga")  # from an earlier line, not "…Il primo"


def test_a_preview_far_into_a_sentence_starts_some_words_before_its_words(tmp_path: Path) -> None:
    """A long sentence whose matched word sits far from its start: the preview opens a few words before the word
    (the answer is often just before the question's words), not at the word, and marks the cut with "…"."""
    sentence = ("Nel 1991 il linguaggio fu pubblicato per la prima volta da un programmatore olandese che lavorava "
                "a un centro di ricerca di Amsterdam, e il suo nome viene dal pitone dei Monty Python, non da un "
                "serpente vero e proprio come molti credono ancora oggi.")
    later = "\n".join(f"Riga {n} sulla storia dei linguaggi e dei loro autori, con date e versioni." for n in range(6))
    write(tmp_path, {"storia.md": f"# Storia\n\n{sentence}\n{later}\n"})
    brain = Brain(tmp_path)
    brain.index()
    hit = brain.search("pitone", mode="bm25").results[0]
    assert hit.preview.startswith("…") and "pitone dei Monty Python" in hit.preview
    assert "centro di ricerca di Amsterdam" in hit.preview  # before the word: the start was cut, not at "pitone"
    assert not hit.preview.startswith("…pitone")
