"""BERT with mean pooling and L2 normalisation in numpy: a sentence-transformers model's queries without torch."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

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
            q, k, v = (
                qkv[..., j * dim:(j + 1) * dim].reshape(batch, tokens, self.heads, head).transpose(0, 2, 1, 3)
                for j in range(3)
            )
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
def light_encoder_fits(folder: Path) -> bool:
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
        and not any(
            pooling.get(k)
            for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens")
        )
    )
