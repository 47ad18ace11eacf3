"""The relevant excerpt of a long text: head + best window, stemming, in-file IDF, the 3-per-window cap."""

from __future__ import annotations

import random

from brain.excerpt import SEPARATOR, TRUNCATED, query_stems, relevant_excerpt, stem

WORDS = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed eiusmod tempor incididunt labore dolore magna"
).split()


def filler(lines: int, seed: int = 1) -> str:
    """Plain lines of Latin filler, none of the test's query words."""
    rnd = random.Random(seed)
    return "".join(" ".join(rnd.choice(WORDS) for _ in range(10)) + "\n" for _ in range(lines))


def window_of(excerpt) -> str:
    """The text of the second piece (the window), as taken from the source."""
    assert len(excerpt.spans) == 2, excerpt.spans
    return excerpt.text.split(SEPARATOR, 1)[1].removesuffix(TRUNCATED)


def test_short_text_comes_back_whole() -> None:
    text = "# Nota\nbreve, entra tutta.\n"
    result = relevant_excerpt(text, "nota", budget=8000)
    assert result.text == text
    assert not result.truncated
    assert result.spans == ((0, len(text)),)


def test_long_text_gets_head_and_best_window_marked_with_cuts() -> None:
    head = "Manuale di installazione - Server XYZ\n1. Introduzione\n"
    answer = "7.3 Connection pooling con PgBouncer\nimpostare pool_mode = transaction nel file pgbouncer.ini\n"
    text = head + filler(400, 1) + answer + filler(400, 2)
    result = relevant_excerpt(text, "pgbouncer pool_mode", budget=3000)
    assert len(result.text) <= 3000
    assert result.text.startswith(head)
    assert SEPARATOR in result.text
    assert result.text.endswith(TRUNCATED)
    assert "impostare pool_mode = transaction" in window_of(result)
    # The pieces are exactly the source's text at the spans it reports.
    (h0, h1), (w0, w1) = result.spans
    assert result.text == text[h0:h1] + SEPARATOR + text[w0:w1] + TRUNCATED


def test_head_is_about_1200_chars_and_never_more_than_a_quarter_of_the_budget() -> None:
    text = filler(50, 3) + "needle here\n" + filler(400, 4)
    big = relevant_excerpt(text, "needle", budget=8000)
    assert 600 <= big.spans[0][1] <= 1200
    small = relevant_excerpt(text, "needle", budget=1200)
    assert small.spans[0][1] <= 300
    assert "needle here" in window_of(small)
    assert len(small.text) <= 1200


def test_stemming_cuts_terms_to_six_letters() -> None:
    assert stem("Ricetta") == stem("ricette") == "ricett"
    assert stem("configurazione") == stem("configurare") == "config"
    text = (
        filler(300, 5) + "Le ricette della nonna\n" + filler(300, 6) + "come configurare il server\n" + filler(300, 7)
    )
    assert "Le ricette della nonna" in window_of(relevant_excerpt(text, "ricetta", budget=2000))
    assert "come configurare il server" in window_of(relevant_excerpt(text, "configurazione", budget=2000))


def test_terms_shorter_than_a_stem_match_whole_words_only() -> None:
    text = filler(300, 8) + "the pooling layer\n" + filler(300, 9) + "a pool of connections\n" + filler(300, 10)
    assert "a pool of connections" in window_of(relevant_excerpt(text, "pool", budget=2000))


def test_case_and_accents_are_ignored() -> None:
    text = filler(300, 11) + "PERCHÉ la caffè è amara\n" + filler(300, 12)
    assert "PERCHÉ la caffè" in window_of(relevant_excerpt(text, "perche caffe", budget=2000))
    assert query_stems("Perché, perche: a b") == ["perche"]


def test_rare_terms_weigh_more_than_terms_found_everywhere() -> None:
    # "database" is in every block but one; "pgbouncer" is in one place, with one "database".
    noisy = "".join(f"database {line}" for line in filler(600, 13).splitlines(keepends=True))
    text = filler(20, 14) + noisy + filler(300, 15) + "pgbouncer limits the database connections\n" + filler(300, 16)
    result = relevant_excerpt(text, "database pgbouncer", budget=2000)
    assert "pgbouncer limits" in window_of(result)


def test_around_the_passage_that_ranked_the_window_is_taken_near_it() -> None:
    """Books issue: the excerpt came from a better-sounding page than the one the search ranked."""
    best_sounding = "pgbouncer pool_mode transaction pgbouncer pool_mode\n"
    ranked = "the pool_mode setting of pgbouncer is described here\n"
    text = filler(20, 21) + best_sounding + filler(400, 22) + ranked + filler(400, 23)
    assert "pool_mode transaction" in window_of(relevant_excerpt(text, "pgbouncer pool_mode", budget=2000))
    start = text.index(ranked)
    near = relevant_excerpt(text, "pgbouncer pool_mode", budget=2000, around=(start, start + len(ranked)))
    assert ranked.strip() in window_of(near) and "pool_mode transaction" not in near.text
    # No query word near it (found by meaning): the passage itself.
    quiet = "the connection limit is described here\n"
    text = filler(20, 24) + best_sounding + filler(400, 25) + quiet + filler(400, 26)
    start = text.index(quiet)
    plain = relevant_excerpt(text, "pgbouncer pool_mode", budget=2000, around=(start, start + len(quiet)))
    assert quiet.strip() in window_of(plain) and plain.terms == ()


def test_line_span_gives_the_characters_of_lines() -> None:
    from brain.excerpt import line_span

    text = "one\ntwo\nthree\n"
    assert line_span(text, 2, 2) == (4, 8) and text[slice(*line_span(text, 2, 3))] == "two\nthree\n"
    assert line_span(text, 9, 9) == (len(text), len(text)) and line_span("a\nb", 2, 5) == (2, 3)


def test_each_term_counts_at_most_three_times_per_window() -> None:
    # Every term is in exactly two far-apart places, so all weigh the same. Window A
    # repeats "alpha" 60 times; window B names alpha, beta, gamma and delta once each.
    # Without the cap A would win (60 against 4); with it B does (3 against 4).
    blocks = [
        filler(40, 20),
        "alpha " * 60 + "\n",
        filler(300, 21),
        "alpha beta gamma delta together\n",
        filler(300, 22),
        "beta\n",
        filler(300, 23),
        "gamma\n",
        filler(300, 24),
        "delta\n",
        filler(300, 25),
    ]
    text = "".join(blocks)
    result = relevant_excerpt(text, "alpha beta gamma delta", budget=1500)
    assert "alpha beta gamma delta together" in window_of(result)


def test_no_query_term_anywhere_gives_the_beginning_alone() -> None:
    text = filler(800, 26)
    result = relevant_excerpt(text, "pgbouncer", budget=2000)
    assert SEPARATOR not in result.text
    assert result.text.endswith(TRUNCATED)
    assert text.startswith(result.text.removesuffix(TRUNCATED))
    assert len(result.spans) == 1 and result.truncated


def test_terms_only_in_the_head_give_the_beginning() -> None:
    text = "Guida a PgBouncer\n" + filler(800, 27)
    result = relevant_excerpt(text, "pgbouncer", budget=2000)
    assert len(result.spans) == 1
    assert result.text.startswith("Guida a PgBouncer")


def test_window_edges_snap_to_line_boundaries() -> None:
    text = filler(300, 28) + "the answer: forty-two\n" + filler(300, 29)
    result = relevant_excerpt(text, "answer", budget=2000)
    (_, head_end), (start, end) = result.spans
    assert text[head_end - 1] == "\n" or text[head_end] == "\n"
    assert text[start - 1] == "\n"
    assert end == len(text) or text[end] == "\n"


def test_a_text_without_line_breaks_is_still_cut_within_budget() -> None:
    text = " ".join(["lorem ipsum dolor"] * 3000) + " the needle " + " ".join(["sit amet"] * 3000)
    result = relevant_excerpt(text, "needle", budget=1000)
    assert len(result.text) <= 1000
    assert "the needle" in window_of(result)


def test_budget_is_never_exceeded() -> None:
    rnd = random.Random(30)
    for trial in range(40):
        text = filler(rnd.randint(10, 600), trial) + "target words here\n" + filler(rnd.randint(0, 300), trial + 100)
        budget = rnd.choice([200, 500, 1000, 3000, 8000])
        result = relevant_excerpt(text, rnd.choice(["target", "words dolor", "nothing", "lorem"]), budget=budget)
        assert len(result.text) <= budget, (trial, budget, len(result.text))
        assert result.total_chars == len(text)


def test_fold_lowers_and_strips_accents_like_its_character_rule() -> None:
    from brain.excerpt import _fold_char, fold

    assert fold("Perché ÀÉÎõü ŁódŹ") == "perche aeiou łodz"
    rnd = random.Random(7)
    alphabet = [chr(cp) for cp in range(0x3000)]
    for _ in range(500):  # the table fast path and the per-character rule agree everywhere
        text = "".join(rnd.choice(alphabet) for _ in range(20))
        assert fold(text) == "".join(_fold_char(ch) for ch in text)


def _passage(text: str, line: str) -> tuple[int, int]:
    start = text.index(line)
    return start, start + len(line)


def test_a_second_passage_apart_gets_a_window_of_its_own() -> None:
    """Books issue: the answer was in the file's second-best chunk, and the excerpt showed the first only."""
    first = "the pool_mode setting of pgbouncer is described here\n"
    second = "pgbouncer answers with pool_mode transaction by default\n"
    text = filler(20, 31) + first + filler(300, 32) + second + filler(300, 33)
    query = "pgbouncer pool_mode"
    one = relevant_excerpt(text, query, budget=2000, around=_passage(text, first))
    assert first.strip() in one.text and second.strip() not in one.text
    both = relevant_excerpt(text, query, budget=2000, around=_passage(text, first), also=[_passage(text, second)])
    assert first.strip() in both.text and second.strip() in both.text
    assert len(both.text) <= 2000 and both.text.count(SEPARATOR) == 1
    assert [text[a:b] for a, b in both.spans] == both.text.removesuffix(TRUNCATED).split(SEPARATOR)
    assert both.spans[0][0] > 0  # two windows in 2,000 characters leave no room for the head
    # A budget with room for the head and two windows of a chunk's length keeps the head.
    large = relevant_excerpt(text, query, budget=8000, around=_passage(text, first), also=[_passage(text, second)])
    assert large.spans[0][0] == 0 and second.strip() in large.text and first.strip() in large.text


def test_passages_that_overlap_the_first_make_one_window() -> None:
    first = "the pool_mode setting of pgbouncer is described here\n"
    text = filler(20, 34) + first + filler(400, 35)
    start, end = _passage(text, first)
    alone = relevant_excerpt(text, "pgbouncer pool_mode", budget=2000, around=(start, end))
    overlapping = relevant_excerpt(text, "pgbouncer pool_mode", budget=2000, around=(start, end),
                                   also=[(start - 300, end + 300), (end + 50, end + 400)])
    assert overlapping == alone


def test_a_word_that_only_starts_like_a_query_word_is_not_it() -> None:
    """Books issue: "defaultdict" counted as "default", and the excerpt went to the wrong page."""
    decoy = "defaultdict defaultdict defaultdict makes missing keys\n"
    answer = "the default value of a parameter is evaluated once\n"
    text = filler(20, 36) + decoy + filler(300, 37) + answer + filler(300, 38)
    query = "default value"
    assert "defaultdict" in window_of(relevant_excerpt(text, query, budget=1200))  # by prefix, the decoy wins
    whole = relevant_excerpt(text, query, budget=1200, same_word=lambda word: word.lower() in {"default", "value"})
    assert answer.strip() in window_of(whole) and "defaultdict" not in whole.text


def test_a_passage_that_ranked_by_meaning_alone_is_shown_whole() -> None:
    """Books issue: an English question over the Italian book ranked the right chunk, whose answer sat past the first
    thousand characters: with no query word in it, nothing says which part answers, so all of it is shown."""
    meaning = "".join(f"riga {n} del passaggio che risponde per significato, senza parole della domanda\n"
                      for n in range(18))  # about 1,500 characters
    second = "the type inference of the compiler is described here\n"
    text = filler(20, 41) + meaning + filler(300, 42) + second + filler(300, 43)
    start = text.index(meaning)
    excerpt = relevant_excerpt(text, "type inference", budget=2000, around=(start, start + len(meaning)),
                               also=[_passage(text, second)])
    assert meaning in excerpt.text and second.strip() in excerpt.text
    assert len(excerpt.text) <= 2000 and excerpt.text.count(SEPARATOR) == 1
    assert [text[a:b] for a, b in excerpt.spans] == excerpt.text.removesuffix(TRUNCATED).split(SEPARATOR)
    for budget in (100, 300, 600, 900):  # a budget too small for the whole passage still bounds the excerpt
        small = relevant_excerpt(text, "type inference", budget=budget, around=(start, start + len(meaning)),
                                 also=[_passage(text, second)])
        assert len(small.text) <= budget, (budget, len(small.text))
