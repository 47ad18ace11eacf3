#!/usr/bin/env python3
"""Where a forward pass of the ONNX indexing engine spends its time, per operator, and how near the int8 products run
to what ONNX Runtime's kernel gives alone at the model's shapes.

One thread, one text a run (as each of the engine's workers runs), over the opening --chars characters of
--texts of obsidian-help's Italian notes; ONNX Runtime's own profiler sums each operator's kernel time. Then
one product of the model's largest shape (tokens × 384 @ 384 × 1536), int8 (DynamicQuantizeMatMul) and fp32,
timed alone. If the model's int8 products already run at the lone kernel's rate, only fewer tokens or another
kind of processor makes indexing faster.

    python tools/bench/bench_onnx_profile.py --variant mixed --texts 40
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lib"))

import numpy as np  # noqa: E402 - after the path set-up above

NOTES = HERE.parents[2] / "shared" / "data" / "corpora" / "obsidian-help" / "it"


def lone_product(kind: str, tokens: int, runs: int = 30) -> float:
    """GOP/s of one tokens × 384 @ 384 × 1536 product, alone in a graph, on one thread."""
    import onnxruntime

    from brain.embeddings.e5_onnx import _FLOAT, _MS, _Graph, _value_info

    k, n = 384, 1536
    weight = np.random.default_rng(0).standard_normal((k, n)).astype(np.float32)
    g = _Graph()
    if kind == "fp32":
        g.node("MatMul", ["x", g.weight("w", weight)], outputs=["y"])
    else:
        scales = (np.abs(weight).max(axis=0) / 127).astype(np.float32)
        values = np.clip(np.round(weight / scales), -127, 127).astype(np.int8)
        g.node("DynamicQuantizeMatMul", ["x", g.weight("w", values), g.weight("s", scales),
                                         g.weight("z", np.zeros(n, np.int8))], domain=_MS, outputs=["y"])
    model = b"".join(g.chunks([_value_info("x", _FLOAT, ["m", k])], [_value_info("y", _FLOAT, ["m", n])]))
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((tokens, k)).astype(np.float32)
    for _ in range(3):
        session.run(None, {"x": x})
    started = time.perf_counter()
    for _ in range(runs):
        session.run(None, {"x": x})
    return 2 * tokens * k * n * runs / (time.perf_counter() - started) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", default="mixed")
    parser.add_argument("--texts", type=int, default=40)
    parser.add_argument("--chars", type=int, default=1600, help="brain's chunk size")
    args = parser.parse_args()
    import onnxruntime

    from brain.embeddings.e5_file import model_file
    from brain.embeddings.e5_onnx import OnnxE5

    path = model_file()
    if path is None:
        raise SystemExit("the bundled model is not installed")
    engine = OnnxE5(path, args.variant, workers=1)
    texts = [p.read_text(encoding="utf-8")[: args.chars] for p in sorted(NOTES.rglob("*.md"))[: args.texts]]
    windows = engine._windows(texts, "passage: ")
    options = onnxruntime.SessionOptions()
    options.enable_profiling = True
    options.intra_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    engine.session = onnxruntime.InferenceSession(str(engine.graph_path), options, providers=["CPUExecutionProvider"])
    started = time.perf_counter()
    for window in windows:
        engine._run([window])
    elapsed = time.perf_counter() - started
    profile = engine.session.end_profiling()
    spent: collections.Counter[str] = collections.Counter()
    for event in json.loads(Path(profile).read_text()):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            spent[event["args"]["op_name"]] += event["dur"]
    os.unlink(profile)
    tokens = int(np.mean([len(w.ids) for w in windows]))
    total = sum(spent.values())
    load = os.getloadavg()
    print(f"{len(windows)} texts, {tokens} tokens each on average, variant {args.variant}, one thread: "
          f"{len(windows) / elapsed:.2f} texts/s; load {load[0]:.1f}")
    print("| operator | ms per text | share |")
    print("|---|---:|---:|")
    for op, micros in spent.most_common():
        print(f"| {op} | {micros / 1e3 / len(windows):.1f} | {100 * micros / total:.1f} % |")
    h, f, layers = 384, 1536, 12
    int8_ops = 2 * tokens * (3 * h * h + 2 * h * f) * layers * len(windows)
    if "DynamicQuantizeMatMul" in spent:
        print(f"int8 products in the model: {int8_ops / (spent['DynamicQuantizeMatMul'] / 1e6) / 1e9:.0f} GOP/s "
              "(if Q/K/V and both FFN products are int8, as in mixed)")
    print(f"one {tokens} × 384 @ 384 × 1536 product alone: int8 {lone_product('int8', tokens):.0f} GOP/s, "
          f"fp32 {lone_product('fp32', tokens):.0f} GFLOP/s")


if __name__ == "__main__":
    main()
