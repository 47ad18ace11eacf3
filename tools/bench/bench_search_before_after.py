#!/usr/bin/env python3
"""Search latency before and after a ranking change, in one run, on one index.

A ranking rule adds work to every query; whether it costs more than the issue
allows (10 %) can only be read from figures taken under the same load, so
everything here alternates:

* warm, one process (the MCP/HTTP server case): each query is searched with a
  rule on and off, the order swapped every query: query understanding (decision
  40; off is `literal`), or with `--toggle field-share` the field-share rule of
  decision 16 ("off" makes `Searcher._field_share` return 0 without reading anything);
* warm, per version (`--lib`, at least two): one child process per version runs
  every query after a warm-up, the versions taking turns for `--rounds` rounds;
* whole process (the shell and /memory-search case): `brain search QUERY`
  (hybrid) with each version, alternating, for the first `--cli-runs` queries,
  from compiled bytecode as an installed copy runs (the compiling run untimed).

`--excerpt-chars N` makes every search of both kinds ask for excerpts of N characters (what
`/memory-search` and `ask` read), so their cost is in the figures.

    python tools/bench/bench_search_before_after.py --root NOTES --queries judged.jsonl \\
        --lib before=OLD/tools/lib --lib after=tools/lib [--database INDEX]

`--database` points both versions at an existing index (BRAIN_DATABASE), e.g. a
copy of the one `brain eval` built; otherwise the notes folder's own index is used.
`--own-index` gives each version its own copy of the notes folder, indexed by that
version (`brain index`): for versions whose index schemas differ.
Queries: a JSONL file whose lines hold "query" (judged sets) or "text" (BEIR).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compiled_bytecode import compiled

PROJECT = Path(__file__).resolve().parents[2]


def read_queries(path: Path, limit: int | None) -> list[str]:
    """The query texts of a judged JSONL file ("query") or a BEIR queries.jsonl ("text")."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append(row.get("query") or row["text"])
    return out[:limit] if limit else out


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"p50_ms": statistics.median(ordered), "p95_ms": ordered[max(0, int(len(ordered) * 0.95) - 1)],
            "n": len(ordered)}


def warm_toggle(root: Path, queries: list[str], rounds: int, toggle: str) -> dict[str, object]:
    """One Searcher; every query `rounds` times with the field-share rule on and off, the order swapped each time."""
    from brain import Brain
    from brain.search import Searcher

    brain = Brain(root)
    brain.search(queries[0], mode="hybrid", limit=10)  # loads the vectors and the encoder
    real = Searcher._field_share
    step: list[float] = []  # the field-share rule's own time inside each "on" search

    def no_share(self, *args):  # decision 14: no share, no index read
        return 0.0

    def timed_share(self, *args):
        started = time.perf_counter()
        share = real(self, *args)
        step.append((time.perf_counter() - started) * 1000)
        return share

    times: dict[str, list[float]] = {"on": [], "off": []}
    for i, query in enumerate(queries * rounds):
        order = ("on", "off") if i % 2 == 0 else ("off", "on")
        for label in order:
            literal = False
            if toggle == "field-share":
                Searcher._field_share = timed_share if label == "on" else no_share
            else:  # understanding (decision 40): off is --literal
                literal = label == "off"
            started = time.perf_counter()
            brain.search(query, mode="hybrid", limit=10, literal=literal)
            times[label].append((time.perf_counter() - started) * 1000)
    Searcher._field_share = real
    out = {label: summary(values) for label, values in times.items()}
    if step:
        out["step"] = summary(step)
    # Paired: each query's on/off ratio, so load that comes and goes hits both sides of a pair alike.
    out["paired_ratio"] = statistics.median(a / b for a, b in zip(times["on"], times["off"]))
    return out


def warm_child(root: Path, queries: list[str], excerpt_chars: int | None) -> list[float]:
    """This process's version of brain: every query once, warm, in ms."""
    from brain import Brain

    brain = Brain(root)
    brain.search(queries[0], mode="hybrid", limit=10, excerpt_chars=excerpt_chars)
    times = []
    for query in queries:
        started = time.perf_counter()
        brain.search(query, mode="hybrid", limit=10, excerpt_chars=excerpt_chars)
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, required=True, help="the notes folder")
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--database", type=Path, help="an existing index for both versions (default: the folder's own)")
    parser.add_argument("--lib", action="append", default=[], metavar="NAME=PATH",
                        help="a version of brain: its tools/lib folder (repeat; the first is the baseline)")
    parser.add_argument("--own-index", action="store_true",
                        help="each version indexes its own copy of the folder (when their schemas differ)")
    parser.add_argument("--limit", type=int, help="only the first N queries")
    parser.add_argument("--toggle", choices=("understanding", "field-share"), default="understanding",
                        help="the rule the warm one-process runs turn on and off (decisions 40 and 16)")
    parser.add_argument("--rounds", type=int, default=3, help="turns each version takes at the warm queries")
    parser.add_argument("--cli-runs", type=int, default=20)
    parser.add_argument("--excerpt-chars", type=int, help="every search also asks for excerpts of this size")
    parser.add_argument("--child", choices=("toggle", "warm"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    queries = read_queries(args.queries, args.limit)
    root = args.root.resolve()
    if args.child == "toggle":
        print(json.dumps(warm_toggle(root, queries, args.rounds, args.toggle)))
        return
    if args.child == "warm":
        print(json.dumps(warm_child(root, queries, args.excerpt_chars)))
        return

    work = Path(tempfile.mkdtemp(prefix="brain-bench-versions-"))
    env = dict(compiled(dict(os.environ), work / "pycache"))
    if args.database:
        env["BRAIN_DATABASE"] = str(args.database.resolve())
    libs = [tuple(item.split("=", 1)) for item in args.lib]
    try:
        roots = own_indexes(root, libs, work, env) if args.own_index else {lib: root for _, lib in libs}
        compare(args, queries, root, libs, roots, env)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def own_indexes(root: Path, libs: list[tuple[str, ...]], work: Path, env: dict[str, str]) -> dict[str, Path]:
    """A copy of the folder per version, indexed by that version; the seconds each took are printed."""
    roots = {}
    for name, lib in libs:
        copy = work / name / root.name
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".brain", ".git"))
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "brain", "--root", str(copy), "index"],
                             env=dict(env, PYTHONPATH=lib), capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"{lib}: brain index failed: {out.stderr.strip()[-2000:]}")
        print(f"{name}: its own index of {root.name} in {time.perf_counter() - started:.1f} s")
        roots[lib] = copy
    return roots


def compare(args: argparse.Namespace, queries: list[str], root: Path, libs: list[tuple[str, ...]],
            roots: dict[str, Path], env: dict[str, str]) -> None:
    tail = ["--queries", str(args.queries)]
    if args.limit:
        tail += ["--limit", str(args.limit)]
    tail += ["--rounds", str(args.rounds), "--toggle", args.toggle]
    excerpt = ["--excerpt-chars", str(args.excerpt_chars)] if args.excerpt_chars else []
    tail += excerpt

    def child(mode: str, lib: str) -> object:
        me = [sys.executable, str(Path(__file__).resolve()), "--root", str(roots.get(lib, root)), *tail]
        out = subprocess.run([*me, "--child", mode], env=dict(env, PYTHONPATH=lib), capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"{lib}: {out.stderr.strip()[-2000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])

    print(f"{len(queries)} queries over {root.name}; "
          f"load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    newest = libs[-1][1] if libs else str(PROJECT / "tools" / "lib")
    toggle = child("toggle", newest)
    rule = "field-share rule (decision 16)" if args.toggle == "field-share" else "understanding (decision 40)"
    print(f"\nwarm hybrid, one process, {rule} on/off alternating per query, {args.rounds} rounds:\n")
    print(f"| {rule} | p50 ms | p95 ms |\n|---|---:|---:|")
    for label in ("off", "on"):
        print(f"| {label} | {toggle[label]['p50_ms']:.1f} | {toggle[label]['p95_ms']:.1f} |")
    step = (f"; the rule's own step p50 {toggle['step']['p50_ms']:.2f} ms, p95 {toggle['step']['p95_ms']:.2f} ms"
            if "step" in toggle else "")
    print(f"\nratio of p50 on/off {toggle['on']['p50_ms'] / toggle['off']['p50_ms']:.3f}; "
          f"median of each query's on/off ratio {toggle['paired_ratio']:.3f}{step}")
    if len(libs) < 2:
        return

    warm: dict[str, list[float]] = {name: [] for name, _ in libs}
    for _ in range(args.rounds):
        for name, lib in libs:
            warm[name] += child("warm", lib)
    def search_once(query: str, lib: str) -> float:
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "brain", "--root", str(roots.get(lib, root)), "search", query,
                              *excerpt],
                             env=dict(env, PYTHONPATH=lib), capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"{lib}: brain search {query!r} failed: {out.stderr.strip()}")
        return time.perf_counter() - started

    for _, lib in libs:  # a version's first process compiles its bytecode: untimed
        search_once(queries[0], lib)
    cli: dict[str, list[float]] = {name: [] for name, _ in libs}
    for query in queries[: args.cli_runs]:
        for name, lib in libs:
            cli[name].append(search_once(query, lib))
    base = libs[0][0]
    print(f"\nper version, alternating ({args.rounds} warm rounds, {args.cli_runs} whole processes each); "
          f"load average at end {os.getloadavg()[0]:.1f}:\n")
    print("| version | warm hybrid p50 / p95 ms | `brain search` (hybrid) whole process p50 s |\n|---|---:|---:|")
    for name, _ in libs:
        w = summary(warm[name])
        print(f"| {name} | {w['p50_ms']:.1f} / {w['p95_ms']:.1f} | {statistics.median(cli[name]):.3f} |")
    for name, _ in libs[1:]:
        print(f"\n{name}/{base}: warm p50 {statistics.median(warm[name]) / statistics.median(warm[base]):.3f}, "
              f"whole process p50 {statistics.median(cli[name]) / statistics.median(cli[base]):.3f}")


if __name__ == "__main__":
    main()
