"""Retrieval quality: run judged queries through every search mode and score the rankings.

Two kinds of collection are understood:

* a folder in BEIR layout — `corpus.jsonl` (or `corpus.jsonl.gz`),
  `queries.jsonl`, `qrels/<split>.tsv`. Each document is written once as
  `<id>.txt` (title, blank line, text) into a cache folder outside the
  project, and indexed there by the normal indexer into its own database;
* a notes folder plus a JSONL file of `{"query": …, "relevant": [paths]}`
  lines; the folder is indexed as it is, into a database in the cache folder
  (the notes' own index is never touched).

A second run with the same corpus and index settings reuses the database, so
it only pays for the queries. Retrieval is judged per document (one file per
hit, as `brain search` returns), and the metrics come from ranx.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .config import FUSION_METHODS, Settings, load_settings, with_overrides
from .embeddings import Embedder
from .errors import BrainError
from .indexer import Indexer
from .search import Searcher, SearchResponse
from .store import index_exists, index_name, open_store

# ranx metric name → column title. R@100 needs 100 results per query.
METRICS: dict[str, str] = {
    "ndcg@10": "nDCG@10",
    "mrr@10": "MRR@10",
    "precision@5": "P@5",
    "recall@5": "R@5",
    "recall@100": "R@100",
    "r-precision": "R-prec",  # where the answer is a set: the share of the first |relevant| results that are in it
}
RESULTS_PER_QUERY = 100
DEFAULT_WORKDIR = "~/.cache/brain/eval"
# Settings that change what is stored in the index; a change means another database.
INDEX_KEYS = ("embedding.model", "chunking.chunk_chars", "chunking.overlap_chars", "chunking.max_tokens",
              "search.fts_tokenizer", "search.stemmer")


@dataclass
class Collection:
    """Judged queries over a folder of files: what to index and how a file maps to a document id."""

    name: str
    split: str | None
    settings: Settings  # settings of the evaluation index (root = the folder indexed)
    queries: dict[str, str]  # query id → text, judged queries only
    qrels: dict[str, dict[str, int]]  # query id → {document id: grade > 0}
    doc_id: Callable[[str], str]  # indexed path (relative) → document id
    documents: int
    cache_dir: Path
    kinds: dict[str, str] = field(default_factory=dict)  # query id → kind (notes query files), for the per-kind table
    paths: dict[str, str] = field(default_factory=dict)  # query id → path prefix its search is limited to


@dataclass
class ModeResult:
    """The scores of one search mode over every query."""

    mode: str
    metrics: dict[str, float]
    median_ms: float
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)  # kind → mean metrics (and "queries")


@dataclass
class EvalReport:
    """One evaluation: what was measured, with which settings, and the scores per mode."""

    collection: str
    split: str | None
    queries: int
    documents: int
    settings: dict[str, Any]
    index: dict[str, Any]
    results: list[ModeResult]
    seconds: float

    def to_dict(self, per_query: bool = False) -> dict[str, Any]:
        data = asdict(self)
        for item in data["results"]:
            item["metrics"] = {k: round(v, 4) for k, v in item["metrics"].items()}
            item["median_ms"] = round(item["median_ms"], 2)
            item["by_kind"] = {k: {m: round(v, 4) for m, v in ms.items()} for k, ms in item["by_kind"].items()}
            if not per_query:
                item.pop("per_query")
        data["seconds"] = round(self.seconds, 2)
        return data


# ------------------------------------------------------------ loading collections


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    rows: list[dict[str, Any]] = []
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise BrainError(f"{path} line {number}: not JSON ({exc.msg}); fix the line") from None
                if not isinstance(row, dict):
                    raise BrainError(f"{path} line {number}: expected a JSON object") from None
                rows.append(row)
    except OSError as exc:
        raise BrainError(f"cannot read {path}: {exc.strerror or exc}") from None
    return rows


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise BrainError(f"cannot read {path}: {exc.strerror or exc}") from None
    for number, line in enumerate(lines, 1):
        parts = line.split("\t")
        if not line.strip() or (number == 1 and parts[0] == "query-id"):
            continue
        if len(parts) < 3:
            raise BrainError(f"{path} line {number}: expected query-id<TAB>corpus-id<TAB>score")
        try:
            grade = int(float(parts[2]))
        except ValueError:
            raise BrainError(f"{path} line {number}: score {parts[2]!r} is not a number") from None
        if grade > 0:  # 0 means judged not relevant
            qrels.setdefault(parts[0].strip(), {})[parts[1].strip()] = grade
    return qrels


def _file_name(doc_id: str) -> str:
    """A safe file name for a document id (ids with odd characters get a hash)."""
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}", doc_id):
        return doc_id + ".txt"
    return "id-" + hashlib.sha256(doc_id.encode("utf-8")).hexdigest()[:24] + ".txt"


def _fingerprint(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:12]


def _pick(ids: list[str], limit: int | None) -> list[str]:
    """`limit` ids spread evenly over the list (in order), so a subset covers the whole collection."""
    if limit is None or limit >= len(ids):
        return ids
    if limit < 1:
        raise BrainError(f"--limit-queries must be at least 1, got {limit}", usage=True)
    return [ids[(i * len(ids)) // limit] for i in range(limit)]


def _index_settings(base: Settings, root: Path, cache_dir: Path, overrides: dict[str, str]) -> Settings:
    settings = with_overrides(base, overrides)
    settings.root = root
    key = json.dumps({k: settings.values[k] for k in INDEX_KEYS}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    settings.values["database"] = str(cache_dir / f"index-{digest}.sqlite")
    if settings.values.get("store"):
        # On a server the index is a corpus (schema) of its own, named like the file would be.
        corpus = re.sub(r"[^a-z0-9_]+", "_", f"eval_{cache_dir.name}_{digest}".lower())
        separator = "&" if "?" in str(settings.values["store"]) else "?"
        settings.values["store"] = f"{settings.values['store']}{separator}corpus={corpus}"
    return settings


def load_beir(
    folder: str | Path,
    *,
    split: str = "test",
    workdir: str | Path | None = None,
    config: str | None = None,
    overrides: dict[str, str] | None = None,
    limit_queries: int | None = None,
    queries_file: str | Path | None = None,
) -> Collection:
    """A BEIR-layout folder as a Collection; its documents are written as files once, into the cache folder.

    With `queries_file` (judged JSONL whose "relevant" are corpus ids) its queries
    replace the collection's own: translations of them, for instance.
    """
    folder = Path(os.path.expanduser(str(folder))).resolve()
    if not folder.is_dir():
        raise BrainError(
            f"collection folder {str(folder)!r} does not exist; "
            "pass a folder with corpus.jsonl, queries.jsonl and qrels/"
        )
    corpus_path = next((folder / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if (folder / n).is_file()), None)
    if corpus_path is None:
        raise BrainError(f"{folder} has no corpus.jsonl or corpus.jsonl.gz; is it a BEIR-layout folder?")
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file() and queries_file is None:
        have = sorted(p.stem for p in (folder / "qrels").glob("*.tsv")) if (folder / "qrels").is_dir() else []
        raise BrainError(
            f"{folder} has no qrels/{split}.tsv; pass --split with one of: {', '.join(have) or 'none found'}"
        )
    if not (folder / "queries.jsonl").is_file():
        raise BrainError(f"{folder} has no queries.jsonl")

    name = re.sub(r"[^A-Za-z0-9._-]+", "-", folder.name) or "collection"
    cache_dir = (
        Path(os.path.expanduser(str(workdir or DEFAULT_WORKDIR))).resolve() / f"{name}-{_fingerprint(corpus_path)}"
    )
    docs_dir = cache_dir / "docs"
    names: dict[str, str] = {}
    marker = cache_dir / "docs.complete"
    if marker.is_file():
        names = json.loads(marker.read_text(encoding="utf-8"))
    else:
        docs_dir.mkdir(parents=True, exist_ok=True)
        for row in _read_jsonl(corpus_path):
            doc_id = str(row.get("_id", ""))
            if not doc_id:
                continue
            title = str(row.get("title") or "").strip()
            text = str(row.get("text") or "").strip()
            file_name = _file_name(doc_id)
            names[file_name] = doc_id
            body = f"{title}\n\n{text}" if title and text else title or text
            (docs_dir / file_name).write_text(body + "\n", encoding="utf-8")
        marker.write_text(json.dumps(names), encoding="utf-8")

    kinds: dict[str, str] = {}
    paths: dict[str, str] = {}
    if queries_file is not None:
        texts, qrels, kinds, paths = _read_judged(queries_file)
        unknown = sorted({d for rel in qrels.values() for d in rel} - set(names.values()))
        if unknown:
            raise BrainError(
                f"{queries_file} names documents that are not in {corpus_path.name}: {', '.join(unknown[:5])}; "
                "fix their ids"
            )
    else:
        qrels = _read_qrels(qrels_path)
        texts = {str(r.get("_id")): str(r.get("text") or "") for r in _read_jsonl(folder / "queries.jsonl")}
    judged = [qid for qid in texts if qid in qrels and texts[qid].strip()]
    if not judged:
        raise BrainError(f"no query in {folder / 'queries.jsonl'} has judgments in {qrels_path}")
    picked = _pick(judged, limit_queries)

    base = load_settings(docs_dir, config)
    settings = _index_settings(base, docs_dir, cache_dir, overrides or {})
    # The corpus folder holds exactly the documents: index all of them, nothing else.
    settings.values.update({"roots": ["."], "extensions": [".txt"], "ignore": []})
    return Collection(
        name=folder.name,
        split=split,
        settings=settings,
        queries={qid: texts[qid] for qid in picked},
        qrels={qid: qrels[qid] for qid in picked},
        doc_id=lambda rel: names.get(rel, rel),
        documents=len(names),
        cache_dir=cache_dir,
        kinds={qid: kinds[qid] for qid in picked if qid in kinds},
        paths={qid: paths[qid] for qid in picked if qid in paths},
    )


def _read_judged(
    queries_file: str | Path,
) -> tuple[dict[str, str], dict[str, dict[str, int]], dict[str, str], dict[str, str]]:
    """A JSONL file of {"query", "relevant", "kind"?, "path"?} lines → queries, qrels, kinds, path prefixes."""
    qpath = Path(os.path.expanduser(str(queries_file)))
    if not qpath.is_file():
        raise BrainError(f"queries file {str(queries_file)!r} not found; pass a JSONL file with --queries")
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    kinds: dict[str, str] = {}
    paths: dict[str, str] = {}
    for number, row in enumerate(_read_jsonl(qpath), 1):
        text, relevant = row.get("query"), row.get("relevant")
        if not isinstance(text, str) or not text.strip():
            raise BrainError(f"{qpath} query {number}: needs a non-empty \"query\" string")
        if not isinstance(relevant, list) or not relevant or not all(isinstance(p, str) for p in relevant):
            raise BrainError(f"{qpath} query {number}: needs \"relevant\": a non-empty list of paths")
        qid = str(row.get("id") or f"q{number}")
        queries[qid] = text
        qrels[qid] = {p.replace("\\", "/").removeprefix("./"): 1 for p in relevant}
        for key, into in (("kind", kinds), ("path", paths)):
            value = row.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise BrainError(f"{qpath} query {number}: \"{key}\" must be a non-empty string when given")
            if value:
                into[qid] = value
    if not queries:
        raise BrainError(
            f"{qpath} holds no queries; add lines like {{\"query\": \"…\", \"relevant\": [\"notes/a.md\"]}}"
        )
    return queries, qrels, kinds, paths


def load_notes(
    root: str | Path,
    queries_file: str | Path,
    *,
    workdir: str | Path | None = None,
    config: str | None = None,
    overrides: dict[str, str] | None = None,
    limit_queries: int | None = None,
) -> Collection:
    """A notes folder and a JSONL file of {"query", "relevant": [paths relative to the folder]} lines."""
    root = Path(os.path.expanduser(str(root))).resolve()
    if not root.is_dir():
        raise BrainError(f"notes folder {str(root)!r} does not exist; pass an existing folder with --notes")
    queries, qrels, kinds, paths = _read_judged(queries_file)
    picked = _pick(list(queries), limit_queries)

    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name) or "notes"
    tag = hashlib.sha256(str(root).encode("utf-8")).hexdigest()[:12]
    cache_dir = Path(os.path.expanduser(str(workdir or DEFAULT_WORKDIR))).resolve() / f"notes-{name}-{tag}"
    settings = _index_settings(load_settings(root, config), root, cache_dir, overrides or {})
    return Collection(
        name=root.name,
        split=None,
        settings=settings,
        queries={qid: queries[qid] for qid in picked},
        qrels={qid: qrels[qid] for qid in picked},
        doc_id=lambda rel: rel,
        documents=0,
        cache_dir=cache_dir,
        kinds={qid: kinds[qid] for qid in picked if qid in kinds},
        paths={qid: paths[qid] for qid in picked if qid in paths},
    )


def load_collection(
    collection: str | None,
    *,
    split: str = "test",
    notes: str | None = None,
    queries: str | None = None,
    workdir: str | None = None,
    config: str | None = None,
    overrides: Sequence[str] = (),
    limit_queries: int | None = None,
) -> Collection:
    """What `brain eval` was pointed at: a BEIR folder, or --notes with --queries."""
    items: dict[str, str] = {}
    for text in overrides:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise BrainError(f"--set {text!r} is not KEY=VALUE (e.g. search.candidates=100)", usage=True)
        items[key.strip()] = value.strip()
    if notes:
        if collection:
            raise BrainError("give either a collection folder or --notes with --queries, not both", usage=True)
        if not queries:
            raise BrainError("--notes needs --queries: a notes folder and its JSONL query file", usage=True)
        return load_notes(notes, queries, workdir=workdir, config=config, overrides=items, limit_queries=limit_queries)
    if not collection:
        raise BrainError("name a BEIR-layout folder to evaluate, or --notes DIR --queries FILE", usage=True)
    return load_beir(collection, split=split, workdir=workdir, config=config, overrides=items,
                     limit_queries=limit_queries, queries_file=queries)


# ------------------------------------------------------------ running


def parse_modes(text: str | None, default_fusion: str) -> list[tuple[str, str, str | None]]:
    """`bm25,vector,hybrid,hybrid:rrf` → [(label, mode, fusion)]; the default adds every other fusion."""
    if not text:
        items = ["bm25", "vector", "hybrid"] + [f"hybrid:{m}" for m in FUSION_METHODS if m != default_fusion]
    else:
        items = [t.strip() for t in text.split(",") if t.strip()]
    out: list[tuple[str, str, str | None]] = []
    for item in items:
        mode, _, fusion = item.partition(":")
        if mode not in ("bm25", "vector", "hybrid") or (fusion and (mode != "hybrid" or fusion not in FUSION_METHODS)):
            raise BrainError(
                f"unknown mode {item!r}; use bm25, vector, hybrid or hybrid:FUSION "
                f"with FUSION one of {', '.join(FUSION_METHODS)}",
                usage=True,
            )
        out.append((item, mode, fusion or None))
    return out


def require_ranx() -> None:
    """Fail at once, before anything is indexed, when the metrics library is not installed."""
    import importlib.util

    if importlib.util.find_spec("ranx") is None:
        raise BrainError(
            "brain eval needs ranx, which the default install leaves out; run `pip install 'brain-search[eval]'`"
        )


def _prepare_index(collection: Collection, embedder: Embedder, show_progress: bool) -> dict[str, Any]:
    """Index the collection into its own database (reused when nothing changed)."""
    db_path = collection.settings.database_path
    existed = index_exists(collection.settings)
    if not existed:
        # A sibling index of the same corpus (other chunking or tokenizer) already holds
        # most vectors: start from its cache instead of re-embedding everything.
        siblings = sorted(db_path.parent.glob("index-*.sqlite"), key=lambda p: p.stat().st_mtime, reverse=True)
        if siblings:
            store = open_store(collection.settings, tokenizer=collection.settings["search.fts_tokenizer"],
                               stemmer=collection.settings["search.stemmer"])
            try:
                store.import_embedding_cache(siblings[0])
            finally:
                store.close()
    report = Indexer(collection.settings, embedder, show_progress=show_progress).scan()
    # A file that failed to index is evaluated as what it is to a user: not found (brain index goes on too).
    return {
        "failed": [{"path": f["path"], "reason": f["reason"]} for f in report.failed],
        "database": index_name(collection.settings),
        "reused": existed and not report.added and not report.updated and not report.rebuilt,
        "seconds": round(report.seconds, 2),
        "files": len(report.added) + len(report.updated) + report.unchanged,
        "chunks_embedded": report.chunks_embedded,
        "cache_hits": report.cache_hits,
    }


def _check_relevant_paths(collection: Collection, searcher: Searcher, failed: set[str]) -> None:
    known = set(searcher.store.all_files()) | failed
    for qid, judged in collection.qrels.items():
        for path in judged:
            if path not in known:
                raise BrainError(
                    f"query {qid} ({collection.queries[qid]!r}) names {path!r} as relevant, "
                    f"but it is not an indexed file of {collection.settings.root}; fix the path in the queries file"
                )


def evaluate(
    collection: Collection,
    *,
    modes: str | None = None,
    vector_weight: float | None = None,
    show_progress: bool = False,
    per_query: bool = False,
) -> EvalReport:
    """Index the collection (or reuse its index), run every query in every mode, score with ranx."""
    started = time.monotonic()
    require_ranx()
    settings = collection.settings
    plan = parse_modes(modes, settings["search.fusion"])
    embedder = Embedder(settings)
    weight = embedder.hybrid_weight if vector_weight is None else vector_weight
    index = _prepare_index(collection, embedder, show_progress)
    searcher = Searcher(settings, embedder)
    try:
        if collection.split is None:
            _check_relevant_paths(collection, searcher, {f["path"] for f in index["failed"]})
            collection.documents = len(searcher.store.all_files())
        limit = max(RESULTS_PER_QUERY, 1)
        # One query first, untimed: it loads the vectors and the query encoder.
        try:
            searcher.search(next(iter(collection.queries.values())), mode="hybrid", limit=limit)
        except BrainError as exc:
            if not exc.usage:  # refused (no words, a stray quote): the first timed query loads the rest
                raise
        runs: dict[str, dict[str, dict[str, float]]] = {}
        latencies: dict[str, list[float]] = {}
        for label, mode, fusion in plan:
            run: dict[str, dict[str, float]] = {}
            times: list[float] = []
            for qid, text in collection.queries.items():
                def searched(literal: bool) -> SearchResponse:
                    # No cut-off: R@100 and nDCG measure the ranking (tools/bench/bench_cutoff.py measures the cut).
                    return searcher.search(text, mode=mode, limit=limit, fusion=fusion, vector_weight=weight,
                                           path_prefix=collection.paths.get(qid), literal=literal, no_cutoff=True)

                try:
                    try:
                        response = searched(literal=False)
                    except BrainError as exc:
                        if not (exc.usage and exc.field == "query"):
                            raise
                        # A collection's text is no operator syntax: an unclosed quote in it is a character.
                        response = searched(literal=True)
                except BrainError as exc:
                    if exc.usage:  # a query with no words: it simply finds nothing
                        run[qid] = {}
                        continue
                    raise
                times.append(response.seconds)
                # Scores by rank keep our exact order (fused scores may tie after rounding).
                hits = response.results
                run[qid] = {collection.doc_id(h.path): float(len(hits) - i) for i, h in enumerate(hits)}
            runs[label] = run
            latencies[label] = times
            if show_progress:
                sys.stderr.write(f"eval: {label} done ({len(run)} queries)\n")
    finally:
        searcher.close()
    if show_progress:
        sys.stderr.write("eval: scoring (the metrics library compiles itself on its first run: a few minutes)\n")
    results = []
    for label, _, _ in plan:
        scores, each = score_run(collection.qrels, runs[label])
        median = statistics.median(latencies[label]) * 1000 if latencies[label] else 0.0
        results.append(ModeResult(label, scores, median, each if per_query else {}, _by_kind(collection.kinds, each)))
    values = settings.values
    return EvalReport(
        collection=collection.name,
        split=collection.split,
        queries=len(collection.queries),
        documents=collection.documents,
        settings={
            "fusion": values["search.fusion"],
            "vector_weight": weight,
            "spread_ratio": values["search.spread_ratio"],
            "candidates": values["search.candidates"],
            "fts_tokenizer": values["search.fts_tokenizer"],
            "stemmer": values["search.stemmer"],
            "chunk_chars": values["chunking.chunk_chars"],
            "overlap_chars": values["chunking.overlap_chars"],
            "model": values["embedding.model"],
        },
        index=index,
        results=results,
        seconds=time.monotonic() - started,
    )


def _by_kind(kinds: dict[str, str], each: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Mean metrics per query kind, with the number of queries of that kind."""
    groups: dict[str, list[dict[str, float]]] = {}
    for qid, scores in each.items():
        if qid in kinds:
            groups.setdefault(kinds[qid], []).append(scores)
    return {
        kind: {"queries": float(len(rows)), **{m: sum(r[m] for r in rows) / len(rows) for m in rows[0]}}
        for kind, rows in sorted(groups.items())
    }


def _strict_ranks(docs: dict[str, float]) -> dict[str, float]:
    """The same order as `docs` by (score, then id), as scores n, n-1, … that cannot tie."""
    order = sorted(docs, key=lambda d: (-docs[d], d))
    return {d: float(len(order) - i) for i, d in enumerate(order)}


def score_run(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], metrics: Sequence[str] = tuple(METRICS)
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Mean and per-query scores of a run with ranx; a query with no results scores 0.

    Ties are broken here, by score then document id, and the run is handed to
    ranx as strictly decreasing ranks: ranx orders tied documents at random, so
    two evaluations of the same run could differ.
    """
    if not any(run.get(qid) for qid in qrels):
        return {m: 0.0 for m in metrics}, {qid: {m: 0.0 for m in metrics} for qid in qrels}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's type-safety notes are not ours to fix
        require_ranx()
        from ranx import Qrels, Run
        from ranx import evaluate as ranx_evaluate

        # Queries that found nothing are left out of the run; make_comparable scores them 0.
        ranked = Run({qid: _strict_ranks(docs) for qid, docs in run.items() if qid in qrels and docs})
        means = ranx_evaluate(Qrels(qrels), ranked, list(metrics), make_comparable=True)
    if isinstance(means, float):  # ranx returns a bare number for a single metric
        means = {metrics[0]: means}
    each = {qid: {m: float(ranked.scores[m].get(qid, 0.0)) for m in metrics} for qid in qrels}
    return {m: float(means[m]) for m in metrics}, each
