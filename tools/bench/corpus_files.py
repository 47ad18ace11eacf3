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
