"""Fusion: each candidate chunk's two raw scores (BM25, cosine) → one, and the vector weight for a query.

Pure: it reads only the `Candidates` search gathered. Every method is
monotonic, a keyword-only candidate keeps its exact cosine and a vector-only
one its real BM25, so the result depends on the candidate set alone, never on
how many results were asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any, NamedTuple

from .store import ChunkRow

# Below this best cosine, with no query word in any note, nothing is close in meaning
# either: the results are only the least unrelated notes, and say so ("weak"). The
# bundled e5 model's cosines are compressed, so the line is narrow. Measured on
# examples/brain (20 chunks): 17 of 18 nonsense queries ("zzkx vrrp flonk", "bitcoin
# mining rig", "gattini che ballano il tango") had a best cosine of 0.783-0.831 (the
# 18th, "lorem ipsum dolor", 0.859); queries that match a note's words scored
# 0.826-0.923; queries with a real answer but no word in common (another language:
# "grandmother's dessert", "payment failure") 0.806-0.860, half of them under 0.84.
# Those get the note too, which stays true (no keyword matched); a confident-looking
# list for nonsense was the worse mistake. The scale is the bundled model's: with a
# sentence-transformers model whose cosines run lower (all-MiniLM-L6-v2), nearly every
# query that shares no word with the notes gets the note.
WEAK_COSINE = 0.84


RRF_K = 60  # the constant of reciprocal rank fusion (Cormack et al. 2009)
SPREAD_RANK = 10  # a half's spread compares its best candidate with its 10th
COVERAGE_POWER = 1.0  # how fast the keyword half's weight falls with the share of query words found
# A keyword outlier in a note of another language than the query's (Candidates.foreign) counts as
# OUTLIER_Z deviations at most unless the vector half ranks it among its first OUTLIER_VECTOR_RANK
# candidates too (docs/decisions/41-foreign-keyword-outliers.md: 3 and 20 measured best of 2-6 and 3-50).
OUTLIER_Z = 3.0
OUTLIER_VECTOR_RANK = 20
# The other way round: when the keyword half's best chunk holds the query's words in its
# note's title or frontmatter (aliases, tags, description, status, stack, ...), the query
# names that note, and the vector half, which reads the query as a topic, can only pull
# notes that merely talk about it above it. The vector weight is scaled by
# 1 − share^FIELD_MATCH_POWER, share = the query's content words found in those fields of
# that chunk: every word there gives the keyword half the whole query; one word of two costs
# the vector half 18 % of its weight, one of three 6 % (a word in a title by chance).
# Measured in docs/decisions/16-field-share.md (agency + obsidian-help, fusion_grid.py
# --field-powers): powers 2 to 4 score within 0.006 of each other on the tuning queries;
# 2.5 is the lowest that keeps every cross-language kind where it was (at 1 and 2 English
# questions over Italian notes lose places), 3 and up give back metadata gains. BEIR
# collections (titles are document ids, no frontmatter) never match, so their fusion is unchanged.
FIELD_MATCH_FIELDS = ("title", "meta")
FIELD_MATCH_POWER = 2.5

# The bundled model scores a passage higher when it is in the query's language, whatever it says:
# an English question over Italian notes meets the folder's few English notes first. Each
# language's chunks are moved by LANGUAGE_CENTRE_SHARE of the gap between the query's mean cosine
# with them and its mean cosine with every chunk of the centred languages, so a language's notes
# rank among themselves as before. A share, not all of it: where a note has a translation in the
# other language (obsidian-help), the question's own language is a fair hint of which one is
# meant. Only languages with LANGUAGE_CENTRE_MIN_CHUNKS chunks or more count (a mean of a few is
# noise), and only when two do (docs/decisions/49-language-centring.md: 0.5 against 1).
LANGUAGE_CENTRE_SHARE = 0.5
LANGUAGE_CENTRE_MIN_CHUNKS = 20

# A note the vector half ranks first though it holds no word of the query is what the keyword half cannot see
# (a question in the other language, or in other words): fused by z-scores, a few notes that share a word with
# the query could bury it. It is shown no lower than MEANING_FIRST_PLACE (decision 51: agency's cross-language
# questions 0.745 -> 0.766, to the vector half's own; one-language collections move by 0.001 at most).
MEANING_FIRST_PLACE = 2

_FORMULAS = {
    "linear": "w × cosine + (1 − w) × bm25 / best bm25",
    "minmax": "w × minmax(cosine) + (1 − w) × minmax(bm25), min and max over the candidates",
    "zscore": "w × z(cosine) + (1 − w) × z(bm25), mean and deviation over the candidates",
    "rrf": (
        f"w × {RRF_K + 1}/({RRF_K} + cosine rank) + (1 − w) × {RRF_K + 1}/({RRF_K} + bm25 rank), "
        "ranks among the candidates"
    ),
}


@dataclass
class Candidates:
    """The candidate chunks of one query and each half's raw score for every one of them.

    `keyword` holds a BM25 score for every candidate in hybrid mode (0.0 when
    no query word is in the chunk); `cosine` an exact cosine for every
    candidate that has a vector (chunks of only code have none).
    """

    use_keyword: bool
    use_vector: bool
    ids: list[int] = field(default_factory=list)
    keyword: dict[int, float] = field(default_factory=dict)
    cosine: dict[int, float] = field(default_factory=dict)
    coverage: float = 1.0  # share of the query's keyword terms found anywhere in the index (hybrid and vector modes)
    # Share of the query's content words in the title or frontmatter of the best BM25 chunk (hybrid mode).
    field_share: float = 0.0
    # Candidates whose vector is not made yet (keywords first, vectors after): neither close nor far in meaning.
    pending: set[int] = field(default_factory=set)
    titled: bool = False  # some candidate's note title holds every content word of the query
    # Keyword outliers (z above OUTLIER_Z) in notes of another language than the query's: their
    # matches are the few words the languages share (code, commands, loanwords), not its meaning.
    foreign: set[int] = field(default_factory=set)


class Fused(NamedTuple):
    """One candidate's fused score and the parts it was made of (a tuple: hundreds are made per query)."""

    score: float
    vector: float | None  # the vector half after normalisation (None when the mode has no vector half)
    keyword: float | None  # the keyword half after normalisation
    vector_rank: int | None  # rank among the candidates by cosine
    keyword_rank: int | None  # rank among the candidates by BM25; None when no query word matched
    stats: dict[str, dict[str, float]]  # the pool figures each half was normalised with (for explain)


def _ranks(values: dict[int, float], keep: Any) -> dict[int, int]:
    """1-based ranks by value, best first; equal values share a rank, so ties cannot break monotonicity."""
    order = sorted((v for v in values.values() if keep(v)), reverse=True)
    first: dict[float, int] = {}
    for rank, value in enumerate(order, 1):
        first.setdefault(value, rank)
    return {cid: first[v] for cid, v in values.items() if keep(v)}


def normaliser(method: str, values: list[float], floor_zero: bool) -> tuple[Any, dict[str, float]]:
    """A function raw → normalised score for one half, and the pool figures it uses (for explain)."""
    if not values:
        return (lambda x: 0.0), {}
    if method == "minmax":
        lo, hi = min(values), max(values)
        if hi > lo:
            return (lambda x: (x - lo) / (hi - lo)), {"min": lo, "max": hi}
        # Every candidate scored the same: they tie at the top (or at nothing, for BM25 0).
        return (lambda x: 1.0 if x > 0 or not floor_zero else 0.0), {"min": lo, "max": hi}
    if method == "zscore":
        mean = sum(values) / len(values)
        std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        if std > 0:
            return (lambda x: (x - mean) / std), {"mean": mean, "std": std}
        return (lambda x: 0.0), {"mean": mean, "std": std}
    # linear: BM25 over the best BM25 among the candidates; cosine as it is, clipped to 0..1.
    if floor_zero:
        best = max(values)
        return (lambda x: x / best if best > 0 else 0.0), {"best": best}
    return (lambda x: min(max(x, 0.0), 1.0)), {}


def spreads(candidates: Candidates) -> tuple[float, float]:
    """How sharply each half separates its best candidates: (cosine #1 − #10, (bm25 #1 − #10) / bm25 #1)."""
    cos = sorted(candidates.cosine.values(), reverse=True)
    kw = sorted(candidates.keyword.values(), reverse=True)
    vector = cos[0] - cos[min(SPREAD_RANK, len(cos)) - 1] if cos else 0.0
    keyword = (kw[0] - kw[min(SPREAD_RANK, len(kw)) - 1]) / kw[0] if kw and kw[0] > 0 else 0.0
    return vector, keyword


def effective_weight(candidates: Candidates, vector_weight: float, ratio: float) -> float:
    """The vector weight for this query: `vector_weight`, scaled down when the vector half is flat next to BM25.

    A model reading a language it was not trained on (all-MiniLM-L6-v2 on
    Italian) gives nearly flat cosines while BM25 still picks its passage out:
    the median vector spread / keyword spread is 0.13 on SQuAD-it against
    0.34-0.40 on the English collections. Trusting the vector half at full
    weight there loses to BM25 alone, so its weight is scaled by
    min(1, (vector spread / keyword spread) / ratio). Comparing the two halves,
    not a cosine threshold, keeps full weight on collections where both halves
    are flat (many relevant documents). `ratio` 0 turns the scaling off.
    """
    weight = vector_weight
    if ratio > 0:
        vector, keyword = spreads(candidates)
        if keyword > 0:  # else BM25 found nothing to compare with
            weight *= min(1.0, vector / keyword / ratio)
    # The keyword half can only speak for the query words the notes contain: a question
    # in the other language than the notes shares almost none, so the vector half takes
    # the weight of the words that matched nothing.
    weight = 1.0 - (1.0 - weight) * candidates.coverage ** COVERAGE_POWER
    # A query whose words the keyword half's best note holds in its title or frontmatter
    # names that note: the keyword half takes the weight of those words (FIELD_MATCH_POWER).
    return weight * (1.0 - candidates.field_share ** FIELD_MATCH_POWER)


def is_weak(candidates: Candidates) -> bool:
    """True when no query word is in any note and the best cosine is under WEAK_COSINE.

    Only the query's own words count: a typo correction is a guess, and "world"
    searched as "would" does not make a query about football relevant.
    """
    if not candidates.use_vector:
        return False  # keyword mode only returns notes holding a query word (or a correction)
    best = max(candidates.cosine.values(), default=0.0)
    return candidates.coverage == 0 and best < WEAK_COSINE


def fuse(candidates: Candidates, *, mode: str, method: str, vector_weight: float) -> dict[int, Fused]:
    """Score every candidate chunk; the result depends on the candidate set only, never on a limit.

    Each method is monotonic: a chunk with a higher cosine and a higher BM25
    than another always scores higher. A keyword-only candidate keeps its
    exact cosine and a vector-only one its real BM25 (0 when no word matches),
    so nothing is cut by a floor. Single modes (bm25, vector) use the linear
    normalisation; their order is the raw score order whatever the method.
    """
    if mode != "hybrid":
        method = "linear"
    ids = candidates.ids
    cosine = {cid: candidates.cosine[cid] for cid in ids if cid in candidates.cosine} if candidates.use_vector else {}
    keyword = {cid: candidates.keyword.get(cid, 0.0) for cid in ids} if candidates.use_keyword else {}
    vector_ranks = _ranks({cid: v for cid, v in cosine.items() if cid in candidates.cosine}, lambda v: True)
    keyword_ranks = _ranks(keyword, lambda v: v > 0)
    stats: dict[str, dict[str, float]] = {}
    pending = candidates.pending
    if method == "rrf":
        # Scaled by (k + 1) so rank 1 reads 1.0; the order is plain RRF's. A pending vector ranks in the middle.
        middle = (RRF_K + 1) / (RRF_K + (len(vector_ranks) + 1) / 2)
        norm_vec = lambda cid: (RRF_K + 1) / (RRF_K + vector_ranks[cid]) if cid in vector_ranks else (  # noqa: E731
            middle if cid in pending else 0.0)
        norm_kw = lambda cid: (RRF_K + 1) / (RRF_K + keyword_ranks[cid]) if cid in keyword_ranks else 0.0  # noqa: E731
    else:
        vec_fn, stats["vector"] = normaliser(method, list(cosine.values()), floor_zero=False)
        kw_fn, stats["keyword"] = normaliser(method, list(keyword.values()), floor_zero=True)
        # A chunk without a vector (only code) has no cosine. Normalised with the others it
        # would read as cosine 0, far below every real one (the bundled model's sit between
        # about 0.7 and 0.9); it counts as the least similar candidate instead.
        least = min((vec_fn(v) for v in cosine.values()), default=0.0) if method != "linear" else 0.0
        least = min(least, 0.0) if method == "minmax" else least
        # A chunk whose vector is still being made is neither: it takes the pool's mean (z = 0),
        # so its keyword score alone decides where it stands among the rest.
        neutral = vec_fn(sum(cosine.values()) / len(cosine)) if cosine else 0.0
        norm_vec = lambda cid: vec_fn(cosine[cid]) if cid in cosine else (neutral if cid in pending else least)  # noqa: E731
        norm_kw = lambda cid: kw_fn(keyword[cid])  # noqa: E731
        if method == "zscore" and candidates.foreign:
            # A keyword outlier in a note of another language that the vector half ranks past
            # OUTLIER_VECTOR_RANK counts as OUTLIER_Z at most: "how do I restore a deleted note"
            # must not be decided by the English of one Italian note's code block.
            plain_kw = norm_kw
            norm_kw = lambda cid: min(plain_kw(cid), OUTLIER_Z) if (  # noqa: E731
                cid in candidates.foreign and vector_ranks.get(cid, len(ids) + 1) > OUTLIER_VECTOR_RANK
            ) else plain_kw(cid)
    out: dict[int, Fused] = {}
    for cid in ids:
        vec = norm_vec(cid) if candidates.use_vector else None
        kw = norm_kw(cid) if candidates.use_keyword else None
        if mode == "hybrid":
            score = vector_weight * (vec or 0.0) + (1 - vector_weight) * (kw or 0.0)
        elif mode == "vector":
            score = vec or 0.0
        else:
            score = kw or 0.0
        out[cid] = Fused(score, vec, kw, vector_ranks.get(cid), keyword_ranks.get(cid), stats)
    return out


def meaning_first(
    candidates: Candidates, place: dict[int, tuple[int, float]], files_of: Callable[[list[int]], dict[int, int]],
    hidden: set[int],
) -> tuple[int, tuple[int, float]] | None:
    """The vector half's first chunk and the place that shows its file at MEANING_FIRST_PLACE, when the chunk
    holds no query word and its file is further down; None otherwise.

    Places are (constraints its note satisfies, score), best first; only chunks that satisfy as many as the
    best do, and files not hidden behind their thing's main note, are considered. The place given is halfway
    between the files it moves between, so everything else keeps its order. `files_of` maps chunk ids to file
    ids; only the few chunks needed are asked for, a batch at a time.
    """
    if not (candidates.use_vector and candidates.use_keyword) or not place:
        return None
    level = max(satisfied for satisfied, _ in place.values())
    eligible = [cid for cid in candidates.cosine if cid in place and place[cid][0] == level]
    if not eligible:
        return None
    first = max(eligible, key=lambda cid: (candidates.cosine[cid], -cid))
    if candidates.keyword.get(first, 0.0) > 0:
        return None
    order = sorted(place, key=lambda cid: (place[cid], -cid), reverse=True)
    mine = files_of([first]).get(first, -1)
    if mine in hidden:
        return None
    ahead: list[tuple[int, tuple[int, float]]] = []  # the first files, each at its best place
    for start in range(0, len(order), 32):
        batch = order[start:start + 32]
        of_batch = files_of(batch)
        for cid in batch:
            fid = of_batch.get(cid, -1)
            if fid in hidden or any(fid == seen for seen, _ in ahead):
                continue
            if fid == mine:
                return None  # already among the first
            ahead.append((fid, place[cid]))
            if len(ahead) == MEANING_FIRST_PLACE:
                above, below = ahead[-2][1], ahead[-1][1]
                return first, (level, (above[1] + below[1]) / 2)
    return None


def explained(
    part: Fused, candidates: Candidates, cid: int, row: ChunkRow, mode: str, method: str, weight: float, asked: float,
    scored_by: int | None = None,
) -> dict[str, Any]:
    """How one hit's score was made: each half raw, normalised and ranked, the weights, the chunk. The halves are
    `scored_by`'s, the chunk whose score `part` is, when the hit shows another chunk of its file."""
    scored = cid if scored_by is None else scored_by
    if mode == "hybrid":
        weights = {"vector": round(weight, 4), "keyword": round(1 - weight, 4), "vector_asked": asked,
                   "spreads": [round(x, 4) for x in spreads(candidates)],
                   "keyword_coverage": round(candidates.coverage, 4), "field_share": round(candidates.field_share, 4)}
        formula = _FORMULAS[method]
    else:
        weights = {mode: 1.0}
        formula = "cosine similarity" if mode == "vector" else "bm25 / best bm25 among the candidates"
    return {
        "fusion": method if mode == "hybrid" else None,
        "formula": formula,
        "weights": weights,
        "candidates": len(candidates.ids),
        "vector": {
            "cosine": candidates.cosine.get(scored),
            "normalised": part.vector,
            "rank": part.vector_rank,
            "pool": part.stats.get("vector", {}),
        },
        "keyword": {
            "bm25": candidates.keyword.get(scored) if candidates.use_keyword else None,
            "normalised": part.keyword,
            "rank": part.keyword_rank,
            "pool": part.stats.get("keyword", {}),
        },
        "chunk": {"id": cid, "lines": [row.start_line, row.end_line], "heading": row.heading_path},
    }


@dataclass
class LanguageCentres:
    """Each centred language's mean vector and the chunks (rows of the matrix) written in it."""

    centres: Any  # (languages × dimension) float32: the mean vector of each language's chunks
    weights: Any  # each language's share of the centred chunks
    rows: Any  # per matrix row: the index of its language in `centres`, -1 when not centred

    @classmethod
    def of(cls, file_ids: Any, matrix: Any, language_of: dict[int, str]) -> LanguageCentres | None:
        """The centres of a vector matrix whose rows belong to `file_ids`; None when fewer than two languages
        have LANGUAGE_CENTRE_MIN_CHUNKS chunks (a one-language folder, every BEIR collection: nothing moves)."""
        import numpy as np

        languages = np.array([language_of.get(int(fid), "") for fid in file_ids], dtype=object)
        chunks_of = {lang: languages == lang for lang in sorted(set(languages.tolist()) - {""})}
        kept = [mask for mask in chunks_of.values() if int(mask.sum()) >= LANGUAGE_CENTRE_MIN_CHUNKS]
        if len(kept) < 2:
            return None
        rows = np.full(len(file_ids), -1, dtype=np.int64)
        for index, mask in enumerate(kept):
            rows[mask] = index
        centres = np.stack([matrix[mask].mean(axis=0) for mask in kept]).astype(np.float32)
        counts = np.array([mask.sum() for mask in kept], dtype=np.float64)
        return cls(centres, counts / counts.sum(), rows)

    def shifts(self, query: Any) -> Any:
        """Per matrix row, what its cosine with `query` moves by (0 for a row of no centred language)."""
        import numpy as np

        means = self.centres @ query  # the query's mean cosine with each language's chunks
        overall = float(means @ self.weights)  # and with every centred chunk
        per_language = (LANGUAGE_CENTRE_SHARE * (overall - means)).astype(np.float32)
        return np.append(per_language, np.float32(0.0))[self.rows]  # row -1 (no centred language) reads the 0
