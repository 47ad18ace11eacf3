"""Which of a file's two near-equal chunks stands for it: the one where the query's words sit together
(search.together, Searcher._words_together_first, decision 56)."""

from __future__ import annotations

from pathlib import Path

from brain import Brain
from brain.search import PREVIEW_CHARS, together
from helpers import write

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


FILLER = "The garden was quiet that morning and the river ran slowly past the old mill. "


def test_the_chunk_where_the_words_sit_together_is_shown_with_its_files_best_score(tmp_path: Path) -> None:
    # The first section says each word more often but far apart (the better BM25); the second says them in one
    # sentence. The file keeps its best chunk's score, shows the second, and --explain says whose score it is.
    spread = ("Copying objects is common. " + FILLER * 3 + "A shallow approach is quick. " + FILLER * 3
              + "Each copy of the object is new. " + FILLER * 2) * 2
    close = FILLER * 6 + "A shallow copy of an object shares what it holds. " + FILLER * 6
    files = {"book.md": f"# Copies\n\n{spread}\n\n# Notes\n\n{close}"}
    files.update({f"other{i}.md": f"# Other {i}\n\n{FILLER * 4}nothing about that here {i}\n" for i in range(6)})
    write(tmp_path, files)
    brain = Brain(tmp_path)
    brain.index()
    chunks = {hit.chunk_id: hit for hit in brain.search("shallow copy object", chunks=True).results
              if hit.path == "book.md"}
    best, other = sorted(chunks, key=lambda cid: -chunks[cid].score)[:2]
    hit = brain.search("shallow copy object").results[0]
    assert hit.path == "book.md" and hit.chunk_id == other and "shallow copy of an object" in hit.preview
    assert hit.score == chunks[best].score
    assert hit.explain["words_together"] == {"best_chunk": best}
    # The halves --explain shows are the scored chunk's own, not a mix of the two chunks'.
    assert hit.explain["vector"] == chunks[best].explain["vector"]
    assert hit.explain["keyword"]["bm25"] == chunks[best].explain["keyword"]["bm25"]
    assert brain.search("shallow copy object", chunks=True).results[0].chunk_id == best  # --chunks: as scored
