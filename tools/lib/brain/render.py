"""Text, Markdown and JSON views of the core's result objects (shared by every front door)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .indexer import ScanReport
from .search import SearchResponse


def as_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def scan_json(report: ScanReport) -> str:
    return json.dumps(report.to_dict(), ensure_ascii=False)


def scan_text(report: ScanReport) -> str:
    counts = report.counts()
    head = ", ".join(f"{n} {name}" for name, n in counts.items())
    lines = [f"{'rebuilt' if report.rebuilt else 'indexed'}: {head} in {report.seconds:.1f}s"
             f" ({report.chunks_embedded} chunks embedded, {report.cache_hits} from cache)"]
    for move in report.moved:
        lines.append(f"  moved   {move['from']} → {move['to']}")
    for item in report.failed:
        lines.append(f"  failed  {item['path']}: {item['reason']}")
    for item in report.warnings:
        lines.append(f"  warning {item['path']}: {item['reason']}")
    return "\n".join(lines)


def _score_line(hit: Any) -> str:
    parts = []
    if hit.vector_score is not None:
        parts.append(f"vector: {hit.vector_score:.3f}")
    if hit.keyword_score is not None:
        parts.append(f"keyword: {hit.keyword_score:.3f}")
    return f"Score: {hit.score:.3f}" + (f" ({', '.join(parts)})" if parts else "")


def _explain_lines(hit: Any) -> list[str]:
    e = hit.explain or {}
    vec, kw = e.get("vector", {}), e.get("keyword", {})
    fmt = lambda v: "—" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)  # noqa: E731
    pool = lambda d: ", ".join(f"{k} {fmt(v)}" for k, v in d.items())  # noqa: E731
    fusion = f"fusion {e['fusion']}: " if e.get("fusion") else ""
    w = e.get("weights", {})
    if "vector_asked" in w:
        scaled = "" if w["vector"] == w["vector_asked"] else f", scaled from {fmt(w['vector_asked'])}"
        weights = f"vector {fmt(w['vector'])} (spread {fmt(w['vector_spread'])}{scaled}), keyword {fmt(w['keyword'])}"
    else:
        weights = ", ".join(f"{k} {fmt(v)}" for k, v in w.items())
    lines = [f"   how: {fusion}{e.get('formula')}; weights {weights}; {e.get('candidates')} candidate chunks"]
    if vec.get("normalised") is not None:
        extra = f" [pool {pool(vec['pool'])}]" if vec.get("pool") else ""
        lines.append(f"        vector  cosine {fmt(vec.get('cosine'))} → {fmt(vec.get('normalised'))} (rank {fmt(vec.get('rank'))}){extra}")
    if kw.get("normalised") is not None:
        extra = f" [pool {pool(kw['pool'])}]" if kw.get("pool") else ""
        lines.append(f"        keyword bm25 {fmt(kw.get('bm25'))} → {fmt(kw.get('normalised'))} (rank {fmt(kw.get('rank'))}){extra}")
    chunk = e.get("chunk", {})
    lines.append(f"        chunk #{chunk.get('id')} lines {hit.start_line}-{hit.end_line} {hit.heading_path}".rstrip())
    return lines


def search(response: SearchResponse, fmt: str, explain: bool = False) -> str:
    if fmt == "json":
        return json.dumps(response.to_dict(explain), ensure_ascii=False)
    markdown = fmt == "markdown"
    if markdown:
        out = [f"## Search: {response.query}", f"{len(response.results)} results ({response.mode})", ""]
    else:
        out = [f"Search: {response.query}  ({response.mode}, {len(response.results)} results)"]
    for n, hit in enumerate(response.results, 1):
        pages = f"  Pages: {', '.join(map(str, hit.pages))}" if hit.pages else ""
        stale = "  [changed on disk since indexed: preview is current]" if hit.stale else ""
        if markdown:
            out.append(f"{n}. **{hit.path}** — {_score_line(hit)} — Lines: {hit.start_line}-{hit.end_line}{pages}{stale}")
            out.append(f"   > {hit.preview}")
        else:
            out.append(f"{n}. {hit.path}  {_score_line(hit)}  Lines: {hit.start_line}-{hit.end_line}{pages}{stale}")
            out.append(f"   Preview: {hit.preview}")
        if explain:
            out.extend(_explain_lines(hit))
    for path in response.dropped:
        out.append(f"(dropped {path}: deleted since it was indexed; run `brain index`)")
    if not response.results:
        out.append("No results.")
    return "\n".join(out)


def stats_text(data: dict[str, Any]) -> str:
    rate = data["cache_hit_rate"]
    lines = [
        f"database   {data['database']} ({data['database_bytes'] / 1e6:.1f} MB)",
        f"files      {data['files']}",
        f"chunks     {data['chunks']} ({data['embedded_chunks']} embedded)",
        f"cache      {data['cache_entries']} vectors, hit rate {'—' if rate is None else f'{rate:.0%}'}",
        f"model      {data['model']} ({data['dimension']} dims, {data['precision']})",
        f"chunking   {data['chunking']}",
        f"last scan  {data['last_scan']}",
        "most chunks:",
    ]
    lines.extend(f"  {item['chunks']:>5}  {item['path']}" for item in data["largest_files"])
    return "\n".join(lines)


def config_text(rows: list[dict[str, Any]], config_path: Path | None) -> str:
    lines = [f"# settings file: {config_path if config_path and config_path.exists() else 'none (defaults)'}"]
    width = max(len(r["key"]) for r in rows)
    for row in rows:
        lines.append(f"{row['key']:<{width}}  {json.dumps(row['value'], ensure_ascii=False):<32}  ({row['origin']})")
    return "\n".join(lines)


def eval_table(report: Any, markdown: bool = False) -> str:
    """One row per search mode: the metrics and the median query latency (an EvalReport)."""
    from .evaluation import METRICS

    split = f" ({report.split})" if report.split else ""
    cfg = report.settings
    index = report.index
    head = (
        f"{report.collection}{split}: {report.queries} queries, {report.documents} documents; "
        f"fusion {cfg['fusion']}, vector weight {cfg['vector_weight']} (spread {cfg.get('vector_spread')}), candidates {cfg['candidates']}, "
        f"tokenizer '{cfg['fts_tokenizer']}', chunks {cfg['chunk_chars']}/{cfg['overlap_chars']} chars"
    )
    tail = (
        f"index {'reused' if index['reused'] else 'built'} in {index['seconds']:.1f}s "
        f"({index['chunks_embedded']} chunks embedded, {index['cache_hits']} from cache); total {report.seconds:.1f}s"
    )
    titles = ["mode", *METRICS.values(), "median ms"]
    rows = [[r.mode, *(f"{r.metrics[m]:.4f}" for m in METRICS), f"{r.median_ms:.1f}"] for r in report.results]
    if markdown:
        out = [head, "", "| " + " | ".join(titles) + " |", "|" + "---|" + "---:|" * (len(titles) - 1)]
        out.extend("| " + " | ".join(row) + " |" for row in rows)
        out.extend(["", tail])
        return "\n".join(out)
    widths = [max(len(str(x)) for x in col) for col in zip(titles, *rows)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return "\n".join([head, line(titles), *(line(r) for r in rows), tail])
