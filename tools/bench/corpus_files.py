"""Benchmarks' corpora: BEIR collections from the shared data folder, written out as note files.

Data is read from the shared data folder (`--data`, default ../shared/data beside
the checkout) and materialised in a work folder outside the project; it is never
copied into the repository.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = PROJECT.parent / "shared" / "data"
DEFAULT_WORK = Path(os.environ.get("BRAIN_BENCH_WORK", Path.home() / ".cache" / "brain" / "bench"))


def read_beir_corpus(folder: Path) -> list[dict]:
    """Documents of a BEIR collection (corpus.jsonl or corpus.jsonl.gz)."""
    path = folder / "corpus.jsonl"
    opener = open
    if not path.exists():
        path, opener = folder / "corpus.jsonl.gz", gzip.open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_beir_queries(folder: Path) -> list[str]:
    with open(folder / "queries.jsonl", encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle if line.strip()]


def materialise(folder: Path, work: Path, limit: int | None = None) -> Path:
    """Write each document as `<id>.txt` (title, blank line, text) under work/<name>/notes; returns that folder."""
    notes = work / folder.name / "notes"
    docs = read_beir_corpus(folder)[:limit]
    marker = notes / ".complete"
    if marker.exists() and marker.read_text() == str(len(docs)):
        return notes
    notes.mkdir(parents=True, exist_ok=True)
    for doc in docs:
        name = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(doc["_id"]))
        text = f"{doc.get('title', '')}\n\n{doc.get('text', '')}\n".lstrip()
        target = notes / f"{name}.txt"
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
    marker.write_text(str(len(docs)))
    return notes


def write_synthetic_file(store: Any, root: Path, number: int, texts: list[str], matrix: Any, rng: Any,
                         chunks_per_file: int, *, path_field: bool = False, mix: float | None = None) -> None:
    """File `number` of a synthetic corpus, written to disk under `root` and into `store`.

    Its chunks take real texts and vectors in turn; past the end of them a text is
    reused with a distinguishing word and its vector perturbed and re-normalised, so
    any size can be made from a real index. `path_field`: fill the keyword index's
    path field as the indexer does. `mix`: perturb a reused vector x by another
    real chunk's y, x + β·y with β drawn from [0, mix) (a chunk about one subject
    touching on another), not by noise in every direction (which a graph index
    cannot find its way through: docs/performance.md, 1M).
    """
    import numpy as np

    from brain.sources import content_hash
    from brain.store import FileKeywords, NewChunk

    lines, chunks = [], []
    for line_no in range(1, chunks_per_file + 1):
        k = number * chunks_per_file + line_no - 1
        src, variant = k % len(texts), k // len(texts)
        text = texts[src] if variant == 0 else f"{texts[src]} variant{variant}"
        if variant == 0:
            vector = matrix[src]
        elif mix:
            vector = matrix[src] + np.float32(rng.uniform(0, mix)) * matrix[(src * 7919 + variant) % len(texts)]
        else:
            vector = matrix[src] + rng.normal(0, 0.02, matrix.shape[1]).astype(np.float32)
        vector = (vector / np.linalg.norm(vector)).astype(np.float32)
        lines.append(text)
        chunks.append(NewChunk(text, "", line_no, line_no, [], None, vector.tobytes()))
    rel = f"d{number // 1000:04d}/f{number:07d}.txt"
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(data)
    info = path.stat()
    store.replace_file(path=rel, hash=content_hash(data), size=info.st_size, mtime_ns=info.st_mtime_ns, metadata={},
                       warning=None, page_starts=[], chunks=chunks,
                       keywords=FileKeywords(path=rel if path_field else ""))
