"""Fusion correctness on a real index built from files written here, for every fusion method.

The bugs these guard against were all shipped by systems that copied the
0.7/0.3 weighting: keyword-only hits cut by a floor, AND-joined queries that
find nothing, a top result that changes with the number of results asked
for, and identifiers drowned by semantic neighbours.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from brain import Brain
from brain.config import FUSION_METHODS
from brain.fusion import Candidates, fuse

from helpers import run_cli, write

NOTES = {
    # Several notes that are semantically close to "web server configuration".
    "ops/nginx.md": (
        "# Nginx\n\nThe nginx web server configuration: virtual hosts, TLS certificates and reverse proxy rules.\n"
    ),
    "ops/apache.md": "# Apache\n\nApache httpd web server configuration with virtual hosts and mod_rewrite rules.\n",
    "ops/caddy.md": (
        "# Caddy\n\nCaddy web server setup: automatic HTTPS, a Caddyfile per site, reverse proxy to the app.\n"
    ),
    "ops/haproxy.md": (
        "# HAProxy\n\nLoad balancer and proxy configuration for the web servers, health checks and backends.\n"
    ),
    # A keyword-only hit: the rare word sits in a note about something else entirely.
    "kitchen/bread.md": "# Bread\n\nSourdough bread needs a lively starter. Grandma called the starter zorblax.\n",
    # Partial matches of a three-word query: no file has all three words.
    "words/alpha-beta.md": "# One\n\nThe quokka and the pangolin met at the river.\n",
    "words/gamma.md": "# Two\n\nA narwhal swam past the harbour.\n",
    "words/beta.md": "# Three\n\nOnly the pangolin stayed for dinner.\n",
    # Exact identifiers next to near-misses with the same wording.
    "tickets/err-4821.md": "# Incident\n\nThe payment worker crashed with ERR-4821 after the deploy.\n",
    "tickets/err-4822.md": "# Incident\n\nThe payment worker crashed with ERR-4822 after the deploy.\n",
    "tickets/issue-1234.md": "# Bug report\n\nLogin button does nothing on Safari, tracked as #1234 in the tracker.\n",
    "tickets/issue-1243.md": "# Bug report\n\nLogin button does nothing on Firefox, tracked as #1243 in the tracker.\n",
    "invoices/ft-2026-0412.md": "# Invoice\n\nInvoice FT-2026-0412 for the April hosting, paid by bank transfer.\n",
    "invoices/ft-2026-0413.md": "# Invoice\n\nInvoice FT-2026-0413 for the May hosting, paid by bank transfer.\n",
    "invoices/ft-2025-0412.md": (
        "# Invoice\n\nInvoice FT-2025-0412 for last year's April hosting, paid by bank transfer.\n"
    ),
}


@pytest.fixture(scope="module")
def fusion_brain(tmp_path_factory: pytest.TempPathFactory) -> Brain:
    """A small indexed folder with the default settings."""
    root = tmp_path_factory.mktemp("fusion") / "notes"
    write(root, NOTES)
    write(root, {"small-pool.toml": "[search]\ncandidates = 3\n"})
    brain = Brain(root)
    brain.index()
    return brain


@pytest.fixture(scope="module")
def small_pool_brain(fusion_brain: Brain) -> Brain:
    """The same index searched with 3 candidates per half, so the vector half cannot see every file."""
    return Brain(fusion_brain.root, config=str(fusion_brain.root / "small-pool.toml"))


def _paths(response) -> list[str]:  # noqa: ANN001
    return [hit.path for hit in response.results]


@pytest.mark.parametrize("fusion", FUSION_METHODS)
def test_keyword_only_hit_survives_fusion(small_pool_brain: Brain, fusion: str) -> None:
    # bread.md has a query word ("grandma") but is about something else: it is not among the
    # 3 nearest vectors (the proxy notes are), and only BM25 finds it.
    query = "reverse proxy grandma"
    assert "kitchen/bread.md" not in _paths(small_pool_brain.search(query, mode="vector", limit=3))
    assert "kitchen/bread.md" in _paths(small_pool_brain.search(query, mode="bm25", limit=3))
    # Fused, it stays among the candidates (below the three proxy notes both halves like; the relevance
    # cut-off, measured separately, may then leave it out of what is shown).
    response = small_pool_brain.search(query, mode="hybrid", fusion=fusion, limit=5, no_cutoff=True)
    assert "kitchen/bread.md" in _paths(response)
    hit = next(h for h in response.results if h.path == "kitchen/bread.md")
    assert hit.explain["keyword"]["rank"] is not None and hit.explain["keyword"]["bm25"] > 0
    assert hit.explain["vector"]["cosine"] is not None  # it still got its exact cosine
    # The rare word alone: the one file that has it comes first, whatever the fusion.
    assert _paths(small_pool_brain.search("zorblax", mode="hybrid", fusion=fusion, limit=3))[0] == "kitchen/bread.md"


@pytest.mark.parametrize("fusion", FUSION_METHODS)
@pytest.mark.parametrize("mode", ["hybrid", "bm25", "vector"])
def test_top_result_does_not_depend_on_k(fusion_brain: Brain, small_pool_brain: Brain, fusion: str, mode: str) -> None:
    for query in ("web server configuration zorblax", "invoice for hosting", "pangolin quokka narwhal"):
        one = fusion_brain.search(query, mode=mode, fusion=fusion, limit=1)
        ten = fusion_brain.search(query, mode=mode, fusion=fusion, limit=10)
        assert _paths(one) == _paths(ten)[:1]
        assert one.results[0].score == ten.results[0].score
        # The pool is search.candidates whatever the limit (up to the pool size): same order, same scores.
        small = [small_pool_brain.search(query, mode=mode, fusion=fusion, limit=k).results for k in (1, 2, 3)]
        assert [h.path for h in small[0]] == [h.path for h in small[2]][:1]
        assert [(h.path, h.score) for h in small[1]] == [(h.path, h.score) for h in small[2]][:2]


@pytest.mark.parametrize("fusion", FUSION_METHODS)
def test_words_are_or_joined_so_partial_matches_are_found(fusion_brain: Brain, fusion: str) -> None:
    query = "quokka pangolin narwhal"  # no file has all three
    for mode in ("bm25", "hybrid"):
        found = set(_paths(fusion_brain.search(query, mode=mode, fusion=fusion, limit=20)))
        assert {"words/alpha-beta.md", "words/gamma.md", "words/beta.md"} <= found
    ranked = _paths(fusion_brain.search(query, mode="bm25", limit=3))
    assert ranked[0] == "words/alpha-beta.md"  # two of the words beat one


@pytest.mark.parametrize("fusion", FUSION_METHODS)
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("ERR-4821", "tickets/err-4821.md"),
        ("#1234", "tickets/issue-1234.md"),
        ("FT-2026-0412", "invoices/ft-2026-0412.md"),
        ("payment worker ERR-4822", "tickets/err-4822.md"),
    ],
)
def test_exact_identifier_comes_first(fusion_brain: Brain, fusion: str, query: str, expected: str) -> None:
    assert _paths(fusion_brain.search(query, mode="hybrid", fusion=fusion, limit=5))[0] == expected


@pytest.mark.parametrize("fusion", FUSION_METHODS)
def test_scores_are_monotonic_on_a_real_index(fusion_brain: Brain, fusion: str) -> None:
    """A file strictly better than another on both halves never ranks below it (one chunk per file here)."""
    for query in ("web server configuration zorblax", "invoice for hosting", "payment worker crashed"):
        hits = fusion_brain.search(query, mode="hybrid", fusion=fusion, limit=50).results
        for above, below in itertools.combinations(hits, 2):
            va, ka = above.explain["vector"]["cosine"], above.explain["keyword"]["bm25"]
            vb, kb = below.explain["vector"]["cosine"], below.explain["keyword"]["bm25"]
            assert not (vb > va and kb > ka), (query, above.path, below.path)


@pytest.mark.parametrize("fusion", FUSION_METHODS)
def test_fuse_is_monotonic_and_complete(fusion: str) -> None:
    """The pure fusion on random candidate sets: dominance is respected, every candidate is scored."""
    rng = random.Random(7)
    for _ in range(50):
        n = rng.randint(1, 40)
        found = Candidates(use_keyword=True, use_vector=True, ids=list(range(n)))
        for cid in range(n):
            found.cosine[cid] = rng.choice([rng.uniform(-0.2, 0.9), 0.5])
            found.keyword[cid] = rng.choice([0.0, rng.uniform(0.1, 12.0), 3.0])
        fused = fuse(found, mode="hybrid", method=fusion, vector_weight=rng.uniform(0.05, 0.95))
        assert set(fused) == set(range(n))
        for a, b in itertools.permutations(range(n), 2):
            ca, cb, ka, kb = found.cosine[a], found.cosine[b], found.keyword[a], found.keyword[b]
            if ca >= cb and ka >= kb:
                assert fused[a].score >= fused[b].score - 1e-12


def test_explain_shows_both_halves_weights_and_chunk(fusion_brain: Brain) -> None:
    root = fusion_brain.root
    text = run_cli("--root", str(root), "search", "payment worker ERR-4821", "--explain", "-k", "2")
    assert text.returncode == 0, text.stderr
    out = text.stdout
    assert "fusion" in out and "weights" in out
    assert "vector  cosine" in out and "keyword bm25" in out and "(rank " in out
    assert "chunk #" in out and "tickets/err-4821.md" in out
    data = json.loads(
        run_cli("--root", str(root), "search", "ERR-4821", "--explain", "--json", "--mode", "hybrid").stdout
    )
    explain = data["results"][0]["explain"]
    for half, raw in (("vector", "cosine"), ("keyword", "bm25")):
        assert set(explain[half]) >= {raw, "normalised", "rank"}
        assert explain[half][raw] is not None and explain[half]["normalised"] is not None
    assert explain["weights"]["vector"] + explain["weights"]["keyword"] == pytest.approx(1.0)
    assert explain["chunk"]["lines"] == [data["results"][0]["start_line"], data["results"][0]["end_line"]]
    # The hit's score is the formula applied to the normalised halves.
    w = explain["weights"]
    expected = w["vector"] * explain["vector"]["normalised"] + w["keyword"] * explain["keyword"]["normalised"]
    assert data["results"][0]["score"] == pytest.approx(expected, abs=1e-4)


def test_tokenizer_change_rebuilds_the_keyword_index(tmp_path: Path) -> None:
    """A changed FTS tokenizer never leaves a stale index: the next scan rebuilds, vectors come from the cache."""
    root = tmp_path / "notes"
    write(root, {"a.md": "# Runs\n\nShe runs every morning before work.\n", "b.md": "# Other\n\nA note about tea.\n"})
    write(root, {"brain.toml": '[search]\nfts_tokenizer = "unicode61 remove_diacritics 2"\nstemmer = "none"\n'})
    brain = Brain(root)
    brain.index()
    assert "a.md" not in _paths(brain.search("running", mode="bm25"))  # no stemming
    (root / "brain.toml").unlink()  # back to the defaults: porter, and Snowball in each note's language
    brain = Brain(root)
    report = brain.index()
    assert report.rebuilt and report.chunks_embedded == 0  # re-tokenized, not re-embedded
    from brain.store import SqliteStore

    store = SqliteStore(brain.settings.database_path)
    try:
        assert store.fts_tokenizer() == "porter unicode61 remove_diacritics 2"
        assert store.get_meta("fts_tokenizer") == "porter unicode61 remove_diacritics 2"
    finally:
        store.close()
    assert _paths(brain.search("running", mode="bm25"))[0] == "a.md"
    assert _paths(brain.search("C++ \"AND\" * #", mode="bm25", limit=3)) is not None  # still safe
    assert brain.index().rebuilt is False  # unchanged settings: no second rebuild


def test_vector_weight_shrinks_when_the_vector_half_is_flat_next_to_bm25() -> None:
    from brain.fusion import effective_weight, spreads

    ids = list(range(12))
    sharp_bm25 = {i: 10.0 - 0.5 * i for i in ids}  # (10 − 5.5) / 10 = 0.45
    flat_bm25 = {i: 10.0 - 0.1 * i for i in ids}  # 0.09
    flat_cos = {i: 0.60 - 0.005 * i for i in ids}  # 1st − 10th = 0.045
    sharp_cos = {i: 0.70 - 0.03 * i for i in ids}  # 0.27
    italian = Candidates(True, True, ids, keyword=sharp_bm25, cosine=flat_cos)
    assert spreads(italian) == (pytest.approx(0.045), pytest.approx(0.45))
    assert effective_weight(italian, 0.6, 0.3) == pytest.approx(0.6 * (0.1 / 0.3))
    assert effective_weight(
        Candidates(True, True, ids, keyword=sharp_bm25, cosine=sharp_cos), 0.6, 0.3
    ) == pytest.approx(0.6)
    # Both halves flat (many similar relevant documents): the vector half keeps its weight.
    assert effective_weight(
        Candidates(True, True, ids, keyword=flat_bm25, cosine=flat_cos), 0.6, 0.3
    ) == pytest.approx(0.6)
    assert effective_weight(italian, 0.6, 0.0) == pytest.approx(0.6)  # 0 turns the scaling off
    no_words = Candidates(True, True, ids, keyword={i: 0.0 for i in ids}, cosine=flat_cos)
    assert effective_weight(no_words, 0.6, 0.3) == pytest.approx(0.6)  # nothing to compare with
    tiny = Candidates(True, True, [1, 2], keyword={1: 2.0, 2: 0.0}, cosine={1: 0.5, 2: 0.3})
    assert spreads(tiny) == (pytest.approx(0.2), pytest.approx(1.0))  # fewer than 10: the last one counts


def test_vector_weight_falls_with_the_query_words_in_the_best_notes_title_or_frontmatter() -> None:
    from brain.fusion import FIELD_MATCH_POWER, effective_weight

    ids = [1, 2]

    def weight(coverage: float, share: float) -> float:
        found = Candidates(True, True, ids, keyword={1: 2.0, 2: 1.0}, cosine={1: 0.8, 2: 0.9}, coverage=coverage,
                           field_share=share)
        return effective_weight(found, 0.7, 0.0)

    assert weight(1.0, 0.0) == pytest.approx(0.7)  # no field match: the fusion of decision 14
    # every word in the note's title/frontmatter: the keyword half decides
    assert weight(1.0, 1.0) == pytest.approx(0.0)
    assert weight(1.0, 1 / 3) == pytest.approx(0.7 * (1 - (1 / 3) ** FIELD_MATCH_POWER))  # one word of three: a little
    # With words the notes lack (a question in the other language), coverage first gives the vector half their weight.
    assert weight(0.5, 0.5) == pytest.approx((1 - 0.3 * 0.5) * (1 - 0.5**FIELD_MATCH_POWER))
    assert weight(0.0, 0.0) == pytest.approx(1.0)
