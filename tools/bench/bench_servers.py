"""Warm search latency through `brain mcp` and `brain serve`, and the servers' memory.

Not a test: it times things. It copies a notes folder (the example notes by
default, or N synthetic notes made from them), indexes the copy, starts both
servers as real subprocesses, sends each the same queries (a few to warm up,
then --requests timed ones, one at a time) and reports the median and 90th
percentile round trip as the client sees it, plus each server's resident memory
(VmRSS now, VmHWM peak) read from /proc. A cold `brain search` process is timed
too, for comparison.

    python tools/bench/bench_servers.py                 # examples/brain, 100 requests
    python tools/bench/bench_servers.py --synthetic 500 # 500 notes made from the examples
    python tools/bench/bench_servers.py --notes ~/notes --requests 200
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT / "tools" / "lib"))
sys.path.insert(0, str(PROJECT / "tests"))

QUERIES = [
    "progetti Laravel per la clinica",
    "nginx SSL certificate renewal",
    "torta al cioccolato",
    "PostgreSQL PostGIS decision",
    "riunione con il cliente",
    "FT-2026-0412",
    "deploy with Forge",
    "libri da leggere",
    "orto pomodori irrigazione",
    "Redis Horizon queue",
]


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in kB (Linux /proc)."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def child_pid(marker: str) -> int | None:
    """The pid of this process's child whose command line contains `marker`."""
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = stat.rsplit(")", 1)[1].split()[1]
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        if ppid == me and marker in cmdline:
            return int(entry.name)
    return None


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "requests": len(samples),
        "median_ms": round(statistics.median(ordered) * 1000, 2),
        "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))] * 1000, 2),
        "min_ms": round(ordered[0] * 1000, 2),
    }


def make_synthetic(dest: Path, count: int) -> None:
    """`count` notes made by recombining the example notes' paragraphs (deterministic)."""
    source = PROJECT / "examples" / "brain"
    paragraphs: list[str] = []
    for path in sorted(source.rglob("*")):
        if path.suffix in (".md", ".txt") and ".brain" not in path.parts:
            text = path.read_text(encoding="utf-8")
            paragraphs.extend(p.strip() for p in text.split("\n\n") if len(p.strip()) > 40)
    dest.mkdir(parents=True)
    for n in range(count):
        picked = [paragraphs[(n * 7 + k * 13) % len(paragraphs)] for k in range(6)]
        folder = dest / f"area-{n % 10}"
        folder.mkdir(exist_ok=True)
        (folder / f"note-{n:04d}.md").write_text(f"# Note {n}\n\n" + "\n\n".join(picked) + "\n", encoding="utf-8")


def bench_http(notes: Path, queries: list[str], requests: int) -> dict[str, Any]:
    import httpx

    from live_servers import http_server

    with http_server("--root", str(notes)) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        for query in queries[:5]:
            http.post("/search", json={"query": query}).raise_for_status()
        samples = []
        for n in range(requests):
            started = time.perf_counter()
            response = http.post("/search", json={"query": queries[n % len(queries)], "limit": 10})
            samples.append(time.perf_counter() - started)
            response.raise_for_status()
        after_search = memory_kb(server.process.pid)
        # A scan that has something to embed loads torch and the full model into the server.
        (notes / "bench-new-note.md").write_text("# New\n\nA note written during the benchmark about nginx.\n",
                                                 encoding="utf-8")
        http.post("/scan").raise_for_status()
        return {**summary(samples), "memory_kb": after_search,
                "memory_kb_after_embedding_scan": memory_kb(server.process.pid)}


def bench_mcp(notes: Path, queries: list[str], requests: int) -> dict[str, Any]:
    import anyio

    from live_servers import mcp_session

    async def run() -> dict[str, Any]:
        async with mcp_session("--root", str(notes)) as session:
            for query in queries[:5]:
                result = await session.call_tool("memory_search", {"query": query})
                assert not result.is_error, result.content
            samples = []
            for n in range(requests):
                started = time.perf_counter()
                result = await session.call_tool("memory_search", {"query": queries[n % len(queries)], "limit": 10})
                samples.append(time.perf_counter() - started)
                assert not result.is_error
            pid = child_pid(" mcp")
            return {**summary(samples), "memory_kb": memory_kb(pid) if pid else {}}

    return anyio.run(run)


def bench_in_process(notes: Path, queries: list[str], requests: int, blas_threads: int | None) -> dict[str, Any]:
    """Brain.search called directly: the search itself, without any front door.

    `blas_threads` None leaves numpy's BLAS at its default thread count; 1 is what the servers use.
    """
    import contextlib

    from threadpoolctl import threadpool_limits

    from brain import Brain

    brain = Brain(notes)
    limit = threadpool_limits(blas_threads, user_api="blas") if blas_threads else contextlib.nullcontext()
    with limit:
        for query in queries[:5]:
            brain.search(query)
        samples = []
        for n in range(requests):
            started = time.perf_counter()
            brain.search(queries[n % len(queries)], limit=10).to_dict()
            samples.append(time.perf_counter() - started)
    brain.close()
    return summary(samples)


def bench_cli(notes: Path, queries: list[str], runs: int = 5) -> dict[str, Any]:
    from live_servers import brain_env

    samples = []
    for n in range(runs):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "brain", "--root", str(notes), "search", queries[n % len(queries)]],
            env=brain_env(), check=True, capture_output=True,
        )
        samples.append(time.perf_counter() - started)
    return summary(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=Path, help="an indexed-or-not notes folder to copy (default: examples/brain)")
    parser.add_argument("--synthetic", type=int, default=0, metavar="N",
                        help="use N notes made from the examples instead")
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from brain import Brain

    with tempfile.TemporaryDirectory(prefix="brain-bench-") as tmp:
        notes = Path(tmp) / "notes"
        if args.synthetic:
            make_synthetic(notes, args.synthetic)
        else:
            shutil.copytree(args.notes or PROJECT / "examples" / "brain", notes,
                            ignore=shutil.ignore_patterns(".brain"))
        started = time.perf_counter()
        report = Brain(notes).index()
        stats = Brain(notes).stats()
        result = {
            "corpus": {
                "source": str(args.notes or ("synthetic" if args.synthetic else "examples/brain")),
                "files": stats["files"],
                "chunks": stats["chunks"],
                "index_seconds": round(time.perf_counter() - started, 1),
                "failed": len(report.failed),
            },
            "in_process_default_blas": bench_in_process(notes, QUERIES, args.requests, None),
            "in_process_one_blas_thread": bench_in_process(notes, QUERIES, args.requests, 1),
            "mcp": bench_mcp(notes, QUERIES, args.requests),
            "http": bench_http(notes, QUERIES, args.requests),
            "cli_cold": bench_cli(notes, QUERIES),
            "cpu_count": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
        }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    corpus = result["corpus"]
    print(f"corpus: {corpus['source']}: {corpus['files']} files, {corpus['chunks']} chunks")
    for door in ("mcp", "http"):
        r = result[door]
        mem = r["memory_kb"]
        print(
            f"{door:5} warm search: median {r['median_ms']} ms, p90 {r['p90_ms']} ms over {r['requests']} requests; "
            f"server RSS {mem.get('VmRSS', 0) / 1024:.0f} MB (peak {mem.get('VmHWM', 0) / 1024:.0f} MB)"
        )
    for key, label in (("in_process_default_blas", "default BLAS threads"),
                       ("in_process_one_blas_thread", "1 BLAS thread")):
        r = result[key]
        print(f"core  Brain.search in-process, {label}: median {r['median_ms']} ms, p90 {r['p90_ms']} ms")
    scan_mem = result["http"]["memory_kb_after_embedding_scan"]
    print(f"http  server RSS after a scan that embeds a new note: {scan_mem.get('VmRSS', 0) / 1024:.0f} MB")
    print(f"cli   cold `brain search` process: median {result['cli_cold']['median_ms']} ms")
    print(f"({result['cpu_count']} CPUs, load average {result['load_average']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
