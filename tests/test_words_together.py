"""Which of a file's two near-equal chunks stands for it: the one where the query's words sit together
(search.together, Searcher._words_together_first, decision 56)."""

from __future__ import annotations

from brain.search import PREVIEW_CHARS, together

FORMS = {"shallow": "shallow", "copi": "copy", "object": "object"}  # Snowball forms -> the words typed
RARITY = {"shallow": 3.0, "copi": 1.0, "object": 0.5}  # a rare word weighs more


def test_words_in_one_stretch_hold_the_whole_query() -> None:
    text = "A shallow copy duplicates the object but not what it holds. " + "filler words here. " * 40
    assert together(text, FORMS, ["english"], RARITY) == 1.0


def test_words_spread_over_the_chunk_hold_only_the_best_stretch() -> None:
    gap = " lorem" * (PREVIEW_CHARS // 5)
    spread = "shallow" + gap + " copy" + gap + " object"
    assert together(spread, FORMS, ["english"], RARITY) == 3.0 / 4.5  # the rare word alone


def test_a_rare_word_counts_more_than_common_ones_and_each_word_once() -> None:
    common = "copy the object, copy the object, copy the object"
    rare = "a shallow one"
    assert together(rare, FORMS, ["english"], RARITY) > together(common, FORMS, ["english"], RARITY)
    assert together(common, FORMS, ["english"], RARITY) == 1.5 / 4.5


def test_no_query_word_and_no_weight_hold_nothing() -> None:
    assert together("nothing to see", FORMS, ["english"], RARITY) == 0.0
    assert together("shallow copy", FORMS, ["english"], {}) == 0.0
