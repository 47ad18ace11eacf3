"""Searching notes as notes: titles, frontmatter, folder names, each note's language, typos; status after
a stemmer change."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from brain import Brain
from brain.sources import extract_bytes, metadata_text, note_title, readable_name
from brain.spelling import edit_distance
from brain.stemming import detect_language
from brain.store import SqliteStore
from helpers import run_cli, write

NOTES = {
    # Obsidian-style: no H1, the file name is the title.
    "help/Sync your notes across devices.md": "You can keep a vault the same on every phone and laptop you own.\n",
    "help/Sync settings.md": (
        "Choose which settings travel with the vault: themes, hotkeys, plugins. Sync your notes too.\n"
    ),
    "help/Notes about devices.md": "Devices that read notes: e-readers, phones, tablets. Across the room.\n",
    "help/Properties.md": (
        "---\naliases: [frontmatter, YAML front matter]\ndescription: Metadata about a note, kept at its top\n"
        "tags: [editing]\n---\nProperties are key-value pairs at the start of a file.\n"
    ),
    "progetti/hotel-miramare.md": (
        "---\nclient: Hotel Miramare\nstack: [drupal, php]\nstatus: dismesso\nstarted: 2021-03-01\n---\n"
        "# Sito dell'hotel\n\nPrenotazioni delle camere e pagine delle offerte.\n"
    ),
    "progetti/campeggio-pineta.md": (
        "---\nclient: Campeggio Pineta\nstack: [flutter, firebase]\nstatus: in sviluppo\nstarted: 2025-02-10\n---\n"
        "# App del campeggio\n\nMappa delle piazzole e prenotazione delle biciclette.\n"
    ),
    "progetti/agriturismo-colle.md": (
        "---\nclient: Agriturismo Colle\nstack: [wordpress]\nstatus: attivo\nstarted: 2023-06-01\n---\n"
        "# Sito dell'agriturismo\n\nPagine dei prodotti dell'orto e dei pranzi della domenica.\n"
    ),
    "diary/2025-01-20-rinnovo-certificato.md": "Il certificato è stato rinnovato a mano dopo tre tentativi falliti.\n",
    "security/keys.md": "# Keys\n\nAll backups use encryption at rest; the encryption keys live in the vault.\n",
    "ticket.md": "# Ticket\n\nFT-2026-0412 ERR-4821 #1234 chiuso; the runner crashed twice.\n",
}


def _paths(response) -> list[str]:
    return [hit.path for hit in response.results]


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fields")
    write(root, NOTES)
    Brain(root).index()  # no settings at all: the defaults must suit a mixed Italian/English folder
    return root


@pytest.fixture(scope="module")
def brain(notes: Path) -> Brain:
    return Brain(notes)


# ------------------------------------------------------------ titles


def test_title_from_frontmatter_then_first_h1_then_the_file_name() -> None:
    assert note_title("x.md", "# Heading\n", {"title": "  Given   title "}) == "Given title"
    assert note_title("x.md", "\n```\n# a comment in code\n```\nText\n# Real heading #\n", {}) == "Real heading"
    assert note_title("2025-01-20-rinnovo_certificato.md", "## Not an H1\n", {}) == "rinnovo certificato"
    assert note_title("20250120_Piano-lavori.txt", "# not markdown\n", {}) == "Piano lavori"
    assert note_title("2025-01-20.md", "", {}) == "2025-01-20"  # a diary page named only by its date keeps it
    assert readable_name("Sync your notes across devices.md") == "Sync your notes across devices"
    assert extract_bytes("Some-note.md", b"---\ntitle: From YAML\n---\nbody\n").title == "From YAML"


def test_frontmatter_values_become_words_with_dates_as_text() -> None:
    text = metadata_text({"aliases": ["frontmatter", "YAML front matter"], "started": "2025-02-10", "tags": ["#web"],
                          "draft": True, "title": "has its own field", "nested": {"owner": "Anna"}})
    assert text == "frontmatter YAML front matter 2025-02-10 web Anna"


def test_the_exact_title_of_a_note_without_h1_ranks_it_first(brain: Brain) -> None:
    # "Notes about devices" holds every word too, in its title and its text: the keyword half
    # must still put the note whose whole title was typed first.
    title = "Sync your notes across devices"
    assert _paths(brain.search(title, mode="bm25"))[0] == "help/Sync your notes across devices.md"
    # Hybrid adds the vector half, which does not read titles (the note's text never says "sync");
    # every word of the query is in the keyword half's best note's title, so that half decides (decision 16).
    assert _paths(brain.search(title, mode="hybrid"))[0] == "help/Sync your notes across devices.md"


def test_a_query_that_is_a_whole_title_ranks_that_note_above_longer_titles_holding_it(tmp_path: Path) -> None:
    # Pages of a command reference, as tldr writes them: the wrapper's page is short and says "ffmpeg"
    # in every line, the tool's own page is long and says it once per example. Typing the title must find
    # the note of that title, not the longer title that holds it: one word or two.
    examples = "".join(f"- Example {n} of the tool at work:\n\n`ffmpeg -i in{n}.mp4 -vn out{n}.mp3`\n\n"
                       for n in range(12))
    write(tmp_path, {
        "common/ffmpeg.md": "# ffmpeg\n\n> Video conversion tool.\n\n" + examples,
        "common/nano-ffmpeg.md": ("# nano-ffmpeg\n\n> A wrapper for `ffmpeg` with a file browser.\n\n"
                                  "- Start `nano-ffmpeg` on `ffmpeg` files:\n\n`nano-ffmpeg`\n"),
        "common/git-rebase.md": ("# git rebase\n\n> Reapply commits from one branch on top of another branch.\n\n"
                                 + "".join(f"- Move topic {n} onto the main line:\n\n`git switch topic{n}`\n\n"
                                           for n in range(10))),
        "common/git-rebase-patch.md": ("# git rebase-patch\n\n> Find the git commit a git rebase patch applies to.\n\n"
                                       "- Find it for git rebase:\n\n`git rebase-patch {{path/to/file.patch}}`\n"),
    })
    brain = Brain(tmp_path)
    brain.index()
    for mode in ("bm25", "hybrid"):
        assert _paths(brain.search("ffmpeg", mode=mode))[0] == "common/ffmpeg.md", mode
        assert _paths(brain.search("git rebase", mode=mode))[0] == "common/git-rebase.md", mode
    # Without the title in question, the longer title still holds the words and is found.
    assert _paths(brain.search("rebase patch", mode="bm25"))[0] == "common/git-rebase-patch.md"


def test_a_query_that_names_a_note_by_its_whole_title_and_asks_more_ranks_that_note_first(tmp_path: Path) -> None:
    # "nginx reload config": the query holds the title "nginx" and asks something of it. The page of another
    # command says "reload" and "config" more often and is short; the note the query names must come first.
    examples = "".join(f"- Serve site {n} from its own folder:\n\n`nginx -p {{{{path/to/site{n}}}}}`\n\n"
                       for n in range(4))
    write(tmp_path, {
        "common/nginx.md": ("# nginx\n\n> Web server.\n\n" + examples
                            + "- Reload the config without stopping:\n\n`nginx -s reload`\n"),
        "linux/systemctl-reload.md": ("# systemctl reload\n\n> Reload the config of a unit.\n\n- Reload the config "
                                      "of units:\n\n`systemctl reload {{unit}}`\n\n- Reload a web server:\n\n"
                                      "`systemctl reload nginx`\n"),
        "common/gixy.md": "# gixy\n\n> Check an nginx config for mistakes.\n\n`gixy {{path/to/nginx.conf}}`\n",
    })
    brain = Brain(tmp_path)
    brain.index()
    # The keyword half's order (hybrid adds the vector half, which reads no titles).
    assert _paths(brain.search("nginx reload config", mode="bm25"))[0] == "common/nginx.md"
    # A title that holds a word the query lacks is not named by it.
    assert _paths(brain.search("reload config", mode="bm25"))[0] == "linux/systemctl-reload.md"


def test_a_renamed_note_is_found_by_its_new_name(tmp_path: Path) -> None:
    write(tmp_path, {"old-name.md": "Some text about gardening.\n", "other.md": "Nothing here.\n"})
    brain = Brain(tmp_path)
    brain.index()
    (tmp_path / "old-name.md").rename(tmp_path / "Compost heap.md")
    report = brain.index()
    assert report.moved == [{"from": "old-name.md", "to": "Compost heap.md"}] and report.chunks_embedded == 0
    assert _paths(brain.search("compost", mode="bm25")) == ["Compost heap.md"]
    assert not brain.search("old name", mode="bm25").results


# ------------------------------------------------------------ fields


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("YAML front matter", "help/Properties.md"),  # an alias
        ("editing", "help/Properties.md"),  # a tag
        ("metadata kept at the top", "help/Properties.md"),  # the description
        ("progetti", "progetti/hotel-miramare.md"),  # a folder name (any of the three notes in it)
        ("rinnovo", "diary/2025-01-20-rinnovo-certificato.md"),  # a word of the file name, date prefix gone
        ("siti drupal dismessi", "progetti/hotel-miramare.md"),  # a status and a stack in words
        ("app flutter ancora in sviluppo", "progetti/campeggio-pineta.md"),
        ("lavori partiti nel 2025", "progetti/campeggio-pineta.md"),  # the year of a date
    ],
)
def test_each_field_is_searchable(brain: Brain, query: str, path: str) -> None:
    found = _paths(brain.search(query, mode="bm25"))
    if path.startswith("progetti/") and query == "progetti":
        assert set(found[:3]) == {p for p in NOTES if p.startswith("progetti/")}
    else:
        assert found[0] == path


def test_explain_names_the_fields_that_matched(brain: Brain) -> None:
    hit = brain.search("frontmatter editing properties", mode="bm25").results[0]
    assert hit.path == "help/Properties.md"
    fields = hit.explain["keyword"]["fields"]
    assert fields["meta"] == ["frontmatter", "editing"] and fields["title"] == ["properties"]
    done = run_cli("--root", str(brain.settings.root), "search", "drupal dismessi", "--mode", "bm25", "--explain")
    assert done.returncode == 0, done.stderr
    assert "keyword fields matched: meta: drupal, dismessi" in done.stdout


def test_frontmatter_stays_out_of_previews_excerpts_and_explain(brain: Brain) -> None:
    root = str(brain.settings.root)
    done = run_cli("--root", root, "search", "YAML front matter description", "--mode", "bm25", "--explain", "--json")
    assert done.returncode == 0, done.stderr
    hit = json.loads(done.stdout)["results"][0]
    assert hit["path"] == "help/Properties.md"
    assert "aliases" not in hit["preview"] and "description:" not in hit["preview"]
    assert hit["preview"].startswith("Properties are key-value pairs")
    assert "aliases" not in json.dumps(hit["explain"])
    response = brain.search("YAML front matter", mode="bm25", excerpt_chars=300)
    assert "aliases" not in response.results[0].excerpt and "Properties are" in response.results[0].excerpt


@pytest.mark.parametrize(("query", "path"), [
    ("a Drupal and PHP website", "progetti/hotel-miramare.md"),
    ("Flutter with Firebase", "progetti/campeggio-pineta.md"),
])
def test_the_vector_half_reads_the_frontmatter_through_the_card(brain: Brain, query: str, path: str) -> None:
    # The stack is only in these notes' frontmatter: the vector half knows it from the card in the first chunk.
    assert _paths(brain.search(query, mode="vector"))[0] == path


@pytest.mark.parametrize("identifier", ["ERR-4821", "#1234", "FT-2026-0412"])
@pytest.mark.parametrize("mode", ["bm25", "hybrid"])
def test_identifiers_still_rank_their_note_first(brain: Brain, identifier: str, mode: str) -> None:
    assert _paths(brain.search(identifier, mode=mode))[0] == "ticket.md"


# ------------------------------------------------------------ fusion that knows fields

# Decoys for the vector half: notes whose text is about what a query says, while the note the
# query names holds its words only in its title or frontmatter.
DECOYS = {
    "help/Editing YAML.md": (
        "Front matter written in YAML sits between two lines of three dashes at the top of the note.\n"
    ),
    "diary/2025-03-02.md": (
        "Riunione sui vecchi siti Drupal: dismettere un sito Drupal obsoleto vuol dire migrare i contenuti"
        " e chiudere il server.\n"
    ),
}


@pytest.fixture(scope="module")
def decoyed(tmp_path_factory: pytest.TempPathFactory) -> Brain:
    root = tmp_path_factory.mktemp("decoys")
    write(root, NOTES | DECOYS)
    brain = Brain(root)
    brain.index()
    return brain


def test_a_query_naming_a_notes_alias_ranks_it_first_in_hybrid(decoyed: Brain) -> None:
    # The vector half prefers the note that talks about YAML front matter; the keyword half is
    # sure of the note whose aliases say it. Every query word is in that note's frontmatter,
    # so hybrid follows the keyword half (fusion.FIELD_MATCH_POWER, decision 16).
    assert _paths(decoyed.search("YAML front matter", mode="vector"))[0] == "help/Editing YAML.md"
    hit = decoyed.search("YAML front matter", mode="hybrid").results[0]
    assert hit.path == "help/Properties.md"
    assert hit.explain["weights"]["field_share"] == 1.0 and hit.explain["weights"]["vector"] == 0.0


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("siti drupal dismessi", "progetti/hotel-miramare.md"),  # a stack and a status, against a diary about them
        ("app flutter ancora in sviluppo", "progetti/campeggio-pineta.md"),
        ("Sync your notes across devices", "help/Sync your notes across devices.md"),  # a whole title
    ],
)
def test_a_query_naming_frontmatter_values_or_a_title_ranks_the_note_first_in_hybrid(
    decoyed: Brain, query: str, path: str
) -> None:
    hit = decoyed.search(query, mode="hybrid").results[0]
    assert hit.path == path
    assert hit.explain["weights"]["field_share"] >= 0.5


def test_a_cross_language_query_keeps_the_vector_half(decoyed: Brain) -> None:
    # English words for an Italian note: none is in its fields, the vector half keeps (at least) its weight.
    hit = decoyed.search("booking bicycles at the campsite", mode="hybrid").results[0]
    assert hit.path == "progetti/campeggio-pineta.md"
    assert hit.explain["weights"]["field_share"] == 0.0 and hit.explain["weights"]["vector"] >= 0.7


@pytest.mark.parametrize("identifier", ["ERR-4821", "#1234", "FT-2026-0412"])
def test_identifiers_still_rank_their_note_first_next_to_decoys(decoyed: Brain, identifier: str) -> None:
    assert _paths(decoyed.search(identifier, mode="hybrid"))[0] == "ticket.md"


# ------------------------------------------------------------ language


def test_the_language_of_a_text_is_told_by_its_function_words() -> None:
    assert detect_language(
        "Il certificato è stato rinnovato a mano dopo tre tentativi, e non per la prima volta."
    ) == "italian"
    assert detect_language(
        "All backups use encryption at rest; the keys live in the vault with the others."
    ) == "english"
    assert detect_language("FT-2026-0412 ERR-4821") == "english"  # nothing to tell by: the lighter stemmer


def test_each_note_is_stemmed_in_its_own_language_without_settings(brain: Brain) -> None:
    store = SqliteStore(brain.settings.database_path)
    try:
        languages = {path: row.language for path, row in store.all_files().items()}
    finally:
        store.close()
    assert (
        languages["security/keys.md"] == "english" and languages["diary/2025-01-20-rinnovo-certificato.md"] == "italian"
    )
    assert languages["progetti/campeggio-pineta.md"] == "italian"
    # Italian inflections meet (rinnovato ~ rinnovare, tentativi ~ tentativo); English ones too (crashes ~ crashed).
    assert _paths(brain.search("rinnovare certificati", mode="bm25"))[0] == "diary/2025-01-20-rinnovo-certificato.md"
    assert _paths(brain.search("un tentativo fallito", mode="bm25"))[0] == "diary/2025-01-20-rinnovo-certificato.md"
    assert _paths(brain.search("runner crashes", mode="bm25"))[0] == "ticket.md"
    assert _paths(brain.search("encrypted backup", mode="bm25"))[0] == "security/keys.md"


def test_a_forced_language_stems_every_note_that_way(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "The runner crashed twice.\n", "b.md": "Gli indici dei progetti.\n",
                     "brain.toml": '[search]\nstemmer = "italian"\n'})
    brain = Brain(tmp_path)
    brain.index()
    store = SqliteStore(brain.settings.database_path)
    try:
        assert {row.language for row in store.all_files().values()} == {"italian"}
    finally:
        store.close()
    assert _paths(brain.search("indice progetto", mode="bm25"))[0] == "b.md"


# ------------------------------------------------------------ typos


def test_a_typo_is_searched_as_its_nearest_index_word(brain: Brain) -> None:
    response = brain.search("encription", mode="bm25")
    assert _paths(response)[0] == "security/keys.md"
    assert response.also_searched == ["encryption"]
    assert response.to_dict()["also_searched"] == ["encryption"]
    assert response.to_dict()["corrections"] == [{"word": "encription", "searched": ["encryption"]}]
    hybrid = brain.search("synchronisation encription", mode="hybrid")
    assert "security/keys.md" in _paths(hybrid)[:3] and hybrid.also_searched == ["encryption"]


def test_a_real_word_the_notes_lack_is_no_typo(tmp_path: Path) -> None:
    """Books issue: "party", "primes", "caret" were searched as "parts", "prices", "careful". A word of the
    dictionary of English or Italian (or of the notes' languages) keeps its own matches, even none."""
    write(tmp_path, {f"n{i}.md": f"# Note {i}\n\nThe spare parts arrived with new prices. The encryption keys.\n"
                     for i in range(5)})
    brain = Brain(tmp_path)
    brain.index()
    for word in ("party", "primes", "festa"):
        assert brain.search(word, mode="bm25").also_searched == [], word
    # Another form of a real word is still searched: the same six letters first.
    write(tmp_path, {"v.md": "# Verbi\n\nIl file appartiene a un altro utente; appartiene davvero.\n"})
    brain.index()
    assert brain.search("appartenga", mode="bm25").also_searched == ["appartiene"]
    assert brain.search("encription", mode="bm25").also_searched == ["encryption"]  # no word of either language
    from brain.spelling import in_dictionary

    assert in_dictionary("Caret", ["english"]) and in_dictionary("ricetta", [])  # English and Italian always
    assert not in_dictionary("encription", ["english", "italian"])


def test_the_vector_half_reads_a_typo_as_its_correction(tmp_path: Path) -> None:
    """The model reads "jounralctl" as noise: the vector half encodes the query with the correction in its place,
    so its cosines are those of "journalctl follow logs" (decision 60); the keyword half still searches both."""
    write(tmp_path, {
        "linux/journalctl.md": ("# journalctl\n\n> Query the systemd journal.\n\n- Show the logs and follow new "
                                "messages as they arrive:\n\n`journalctl --follow`\n"),
        "common/pueue-follow.md": "# pueue follow\n\n> Follow the output of a running task.\n\n`pueue follow`\n",
        "common/docker-logs.md": "# docker logs\n\n> Print the logs of a container.\n\n`docker logs --follow`\n",
    })
    brain = Brain(tmp_path)
    brain.index()
    typed, meant = "jounralctl follow logs", "journalctl follow logs"
    hybrid = brain.search(typed, mode="hybrid")
    assert hybrid.also_searched == ["journalctl"] and _paths(hybrid)[0] == "linux/journalctl.md"

    def cosine(query: str, mode: str) -> float:
        hit = next(h for h in brain.search(query, mode=mode, no_cutoff=True).results if h.path == "linux/journalctl.md")
        assert hit.explain is not None
        return float(hit.explain["vector"]["cosine"])

    assert cosine(typed, "hybrid") == pytest.approx(cosine(meant, "vector"))
    assert cosine(typed, "hybrid") != pytest.approx(cosine(typed, "vector"))  # vector mode reads it as typed


def test_a_query_keeps_its_real_words_and_takes_the_nearest_correction_of_a_typo() -> None:
    from brain.spelling import Expansion, corrected

    def expansion(word: str, *shown: str) -> Expansion:
        return Expansion(word, shown, shown)

    languages = ["english", "italian"]
    assert corrected("jounralctl follow logs", [expansion("jounralctl", "journalctl")], languages) == \
        "journalctl follow logs"
    # Of two corrections, the one written nearest the typed word ("phased" came first by its stem).
    assert corrected("phising registrar", [expansion("phising", "phased", "phishing")], languages) == \
        "phishing registrar"
    # A real word the notes lack keeps its meaning for the model; only whole words are replaced.
    assert corrected("healthcare projects", [expansion("healthcare", "health")], languages) == "healthcare projects"
    assert corrected("ffmpge ffmpgexyz", [expansion("ffmpge", "ffmpeg")], languages) == "ffmpeg ffmpgexyz"
    # Near only by its stem, or a code: as typed (SciFact: "matasteses", searched as "metastable"; "aPKCz").
    assert corrected("in matasteses", [expansion("matasteses", "metastable")], languages) == "in matasteses"
    assert corrected("aPKCz causes", [expansion("aPKCz", "apkc")], languages) == "aPKCz causes"


def test_a_dictionary_answers_alike_from_its_text_and_from_its_set() -> None:
    # A whole search looks words up in the list's JSON text; a server, after SCANS_BEFORE_SET lookups, in a set.
    from brain.spelling import SCANS_BEFORE_SET, _WordList

    words = _WordList(b'{\n"abate": 684,\n"cat": 50,\n"perch\xc3\xa9": 7\n}')
    asked = ["abate", "bate", "abat", "cat", "ca", "perché", "perche", 'a"b', "684", ""]
    expected = [True, False, False, True, False, True, False, False, False, False]
    assert [w in words for w in asked] == expected and words.words is None
    for _ in range(SCANS_BEFORE_SET):
        "cat" in words
    assert [w in words for w in asked] == expected and words.words == frozenset({"abate", "cat", "perché"})


def test_two_swapped_letters_are_one_edit() -> None:
    assert edit_distance("grpah", "graph", 1) == 1  # Levenshtein: 2, so a five-letter word was never corrected
    assert edit_distance("vidoe", "video", 1) == 1
    assert edit_distance("graph", "graph", 1) == 0
    assert edit_distance("kitten", "sitting", 5) == 3
    assert edit_distance("abcd", "badc", 1) == 2  # two swaps: past the limit, reported as limit + 1
    assert edit_distance("grpah", "graph", 0) == 1


def _full_table_distance(a: str, b: str) -> int:
    """Optimal string alignment over the whole table: what the banded edit_distance must agree with."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def test_the_banded_distance_agrees_with_the_whole_table() -> None:
    import random

    rng = random.Random(5)
    for _ in range(3000):
        a = "".join(rng.choice("aeilnorst") for _ in range(rng.randint(0, 10)))
        b = "".join(rng.choice("aeilnorst") for _ in range(rng.randint(0, 10)))
        limit = rng.choice([0, 1, 2, 3])
        assert edit_distance(a, b, limit) == min(_full_table_distance(a, b), limit + 1), (a, b, limit)


def test_a_swap_of_two_letters_in_a_short_word_is_corrected(brain: Brain) -> None:
    response = brain.search("crahsed", mode="bm25")  # stem "crahs", one swap from "crash"
    assert _paths(response)[0] == "ticket.md"
    assert response.also_searched == ["crashed"]


def test_the_text_view_says_what_else_was_searched(notes: Path) -> None:
    done = run_cli("--root", str(notes), "search", "encription keys")
    assert done.returncode == 0, done.stderr
    assert "also searched: encryption" in done.stdout


def test_words_the_index_knows_and_short_words_are_not_corrected(brain: Brain) -> None:
    assert brain.search("encryption", mode="bm25").also_searched == []
    assert "also_searched" not in brain.search("encryption", mode="bm25").to_dict()  # the JSON keeps its shape
    assert brain.search("kez", mode="bm25").also_searched == []  # too short to guess
    assert brain.search("FT-2026-0413", mode="bm25").also_searched == []  # identifiers are not typos


# ------------------------------------------------------------ status


def test_status_does_not_call_a_stemmer_change_a_model_change(tmp_path: Path) -> None:
    shutil.copytree(Path(__file__).parent.parent / "examples" / "brain" / "diary", tmp_path / "diary")
    brain = Brain(tmp_path)
    brain.index()
    write(tmp_path, {"brain.toml": '[search]\nstemmer = "english"\n'})
    done = run_cli("--root", str(tmp_path), "status")
    assert done.returncode != 0 or "NOT CLEAN" in done.stdout
    assert "model changed" not in done.stdout
    assert "keyword index settings changed" in done.stdout and "nothing re-embedded" in done.stdout
    data = json.loads(run_cli("--root", str(tmp_path), "status", "--json").stdout)
    assert data["model_mismatch"] is None and "stemmer" in data["keyword_mismatch"]
    report = Brain(tmp_path).index()
    assert report.rebuilt and report.chunks_embedded == 0
    assert Brain(tmp_path).status().clean
