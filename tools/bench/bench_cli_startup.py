#!/usr/bin/env python3
"""Whole-process time of `brain --help` and of bm25 and hybrid `brain search`es, for two versions of brain in one run.

The front door's own cost is what a shell user and /memory-search pay on every
call: interpreter start, imports, argument parsing. Both versions run against
the same index, alternating, so load on a shared machine hits them alike;
medians and the ratio are reported. Processes run from compiled bytecode (kept in
a temporary folder), as an installed copy does; the compiling runs are not timed.

    python tools/bench/bench_cli_startup.py --lib before=/tmp/old/tools/lib --lib after=tools/lib
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compiled_bytecode import compiled

PROJECT = Path(__file__).resolve().parents[2]
EXAMPLE = PROJECT / "examples" / "brain"

COMMANDS = {
    "--help": ["--help"],
    "search --help": ["search", "--help"],
    "search bm25": ["search", "nginx SSL certificate", "--mode", "bm25", "-k", "5"],
    "search (hybrid)": ["search", "nginx SSL certificate", "-k", "5"],
    # a word the notes lack sends the query to the spelling dictionaries, read once per process
    "search bm25, a word the notes lack": ["search", "nginx SSL certificate expired", "--mode", "bm25", "-k", "5"],
}
# Whole-process targets on a 2-core machine at load < 1 (the newcomer issue, item 13).
TARGETS = {"--help": 0.10, "search bm25": 0.15, "search (hybrid)": 0.30}


def run_once(lib: str, root: Path, args: list[str]) -> float:
    env = compiled(dict(os.environ, PYTHONPATH=lib), root.parent / "pycache")
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "brain", "--root", str(root), *args], env=env,
                         capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"{lib}: brain {' '.join(args)} failed: {out.stderr.strip()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lib", action="append", required=True, metavar="NAME=PATH",
                        help="a version of brain: its tools/lib folder (repeat; the first is the baseline)")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    libs = [tuple(item.split("=", 1)) for item in args.lib]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "notes"
        shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".brain"))
        index_lib = libs[-1][1]
        subprocess.run([sys.executable, "-m", "brain", "--root", str(root), "index"], check=True, capture_output=True,
                       env=dict(os.environ, PYTHONPATH=index_lib))
        times: dict[tuple[str, str], list[float]] = {}
        for argv in COMMANDS.values():  # each version's first runs compile its bytecode: untimed
            for _, lib in libs:
                run_once(lib, root, argv)
        for _ in range(args.runs):
            for command, argv in COMMANDS.items():
                for name, lib in libs:
                    times.setdefault((command, name), []).append(run_once(lib, root, argv))
    load = os.getloadavg()[0]
    base = libs[0][0]
    print(f"{args.runs} runs each, alternating; load average {load:.1f} on {os.cpu_count()} cores\n")
    print("| command | " + " | ".join(f"{name} median (s)" for name, _ in libs) + " | ratio | target |")
    print("|---|" + "---:|" * (len(libs) + 2))
    for command in COMMANDS:
        medians = {name: statistics.median(times[(command, name)]) for name, _ in libs}
        ratio = medians[libs[-1][0]] / medians[base]
        target = TARGETS.get(command)
        met = "" if target is None else f"≤ {target:.2f} s ({'met' if medians[libs[-1][0]] <= target else 'missed'})"
        print(f"| `brain {command}` | " + " | ".join(f"{medians[name]:.3f}" for name, _ in libs)
              + f" | {ratio:.2f} | {met} |")


if __name__ == "__main__":
    main()
