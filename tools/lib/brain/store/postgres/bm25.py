"""FTS5's bm25() computed from the postings the server reads, so a keyword score means the same number on both
stores."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..base import FIELD_WEIGHTS
from .tokens import FIELD_CLASSES

# FTS5's bm25() constants (fts5_aux.c), so both stores give a chunk the same keyword score.
BM25_K1 = 1.2
BM25_B = 0.75


def class_weights() -> dict[str, float]:
    """Each weight class's FIELD_WEIGHTS (read per query, like store._bm25_weights, so a benchmark can vary them)."""
    return {c: max((FIELD_WEIGHTS[f] for f, k in FIELD_CLASSES.items() if k == c), default=1.0) for c in "ABCD"}


def bm25_scores(
    phrases: Sequence[tuple[str, ...]],
    hits: dict[int, dict[str, list[tuple[int, str]]]],
    lengths: dict[int, int],
    rows: int,
    average: float,
) -> dict[int, float]:
    """FTS5's bm25() of each chunk in `hits` (chunk → lexeme → [(position, weight class)]), bigger is better.

    Per phrase: idf = ln((N − n + 0.5) / (n + 0.5)) (at least 1e-6), n the chunks
    holding it; its frequency in a chunk is the sum of the field weights of its
    occurrences; score = Σ idf × f × (k1 + 1) / (f + k1 × (1 − b + b × length / average)).
    """
    weights = class_weights()
    found: list[dict[int, float]] = []
    for phrase in phrases:
        per_chunk: dict[int, float] = {}
        for cid, lexemes in hits.items():
            first = lexemes.get(phrase[0])
            if not first:
                continue
            if len(phrase) == 1:
                freq = sum(weights[w] for _, w in first)
            else:
                rest = [{p for p, _ in lexemes.get(t, ())} for t in phrase[1:]]
                freq = sum(weights[w] for p, w in first if all(p + k in at for k, at in enumerate(rest, 1)))
            if freq:
                per_chunk[cid] = freq
        found.append(per_chunk)
    scores: dict[int, float] = {}
    for per_chunk in found:
        n = len(per_chunk)
        idf = np.log((rows - n + 0.5) / (n + 0.5))
        idf = float(idf) if idf > 0 else 1e-6
        for cid, freq in per_chunk.items():
            norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[cid] / average) if average > 0 else BM25_K1
            scores[cid] = scores.get(cid, 0.0) + idf * freq * (BM25_K1 + 1) / (freq + norm)
    return scores


def sum_by_chunk(
    parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(chunk ids, file ids, scores) pieces as one, each chunk once with its scores added, by chunk id."""
    if not any(len(p[0]) for p in parts):  # nothing matched (several empty pieces too: a word and a phrase)
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64)
    ids = np.concatenate([p[0] for p in parts])
    files = np.concatenate([p[1] for p in parts])
    scores = np.concatenate([p[2] for p in parts])
    low, high = int(ids.min()), int(ids.max())
    if high - low > 8 * len(ids) + (1 << 20):  # ids too spread for one slot each: sort them instead
        unique, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
        summed = np.zeros(len(unique), dtype=np.float64)
        np.add.at(summed, inverse, scores)
        return unique, files[first], summed
    # A slot per id between the smallest and the largest: a million matches add up in milliseconds.
    summed = np.bincount(ids - low, weights=scores, minlength=high - low + 1).astype(np.float64, copy=False)
    present = np.zeros(high - low + 1, dtype=bool)
    present[ids - low] = True
    file_of = np.zeros(high - low + 1, dtype=np.int64)
    file_of[ids - low] = files
    slots = np.flatnonzero(present)
    return slots + low, file_of[slots], summed[slots]


