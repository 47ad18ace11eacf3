"""Text, Markdown and JSON views of the core's result objects (shared by every front door)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .grep import GrepResponse, TextRange
from .indexer import ScanReport
from .search import SearchResponse
from .texts import page_ranges

if TYPE_CHECKING:
    from .ask import AskResult


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
    return [
        f"   how: {e.get('formula')}; weights {e.get('weights')}",
        f"        vector  cosine {fmt(vec.get('cosine'))} → {fmt(vec.get('normalised'))} (rank {fmt(vec.get('rank'))})",
        f"        keyword bm25 {fmt(kw.get('bm25'))} / best {fmt(kw.get('best_bm25_in_pool'))} → {fmt(kw.get('normalised'))} (rank {fmt(kw.get('rank'))})",
        f"        chunk #{e.get('chunk', {}).get('id')} lines {hit.start_line}-{hit.end_line} {hit.heading_path}",
    ]


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
        if hit.excerpt is not None:
            out.extend(_excerpt_lines(hit, markdown))
    for path in response.dropped:
        out.append(f"(dropped {path}: deleted since it was indexed; run `brain index`)")
    if not response.results:
        out.append("No results.")
    return "\n".join(out)


def _excerpt_lines(hit: Any, markdown: bool) -> list[str]:
    label = f"Excerpt ({len(hit.excerpt)} of {hit.content_len} chars):"
    if markdown:
        return [f"   {label}", "", "   ```text", *(f"   {ln}" for ln in hit.excerpt.split("\n")), "   ```", ""]
    return [f"   {label}", *(f"   | {ln}" for ln in hit.excerpt.split("\n"))]


def grep_text(response: GrepResponse) -> str:
    """grep-like lines: `path:line:offset: text`, context as `path-line- text`, groups split by `--`."""
    out: list[str] = []
    grouped = any(m.before or m.after for m in response.matches)
    for index, match in enumerate(response.matches):
        if grouped and index:
            out.append("--")
        for n, line in enumerate(match.before):
            out.append(f"{match.path}-{match.line - len(match.before) + n}- {line}")
        page = f"[p. {match.page}] " if match.page is not None else ""
        out.append(f"{match.path}:{match.line}:{match.offset}: {page}{match.text}")
        for n, line in enumerate(match.after, 1):
            out.append(f"{match.path}-{match.line + n}- {line}")
    return "\n".join(out)


def grep_notes(response: GrepResponse) -> list[str]:
    """What goes to stderr: no matches, more matches than shown, files that could not be read."""
    notes = [f"skipped {item['path']}: {item['reason']}" for item in response.skipped]
    if not response.matches:
        notes.append(f"no matches for {response.pattern!r} in {response.files_searched} files")
    elif response.truncated:
        notes.append(f"showing the first {len(response.matches)} matches; more exist (raise --limit, at most 500, or narrow the pattern)")
    return notes


def range_header(part: TextRange) -> str:
    """One line saying which bytes, lines and pages of which file are shown."""
    where = f"lines {part.start_line}-{part.end_line}"
    if part.page_count:
        where += f", page{'s' if len(part.pages) != 1 else ''} {page_ranges(part.pages)} of {part.page_count}"
    stale = " [changed on disk since indexed]" if part.stale else ""
    return f"{part.path}: bytes {part.offset}-{part.offset + part.length} of {part.total} ({where}){stale}"


def ask_prompt(result: AskResult) -> str:
    """The messages exactly as they would be sent, each under its role."""
    out: list[str] = []
    for message in result.messages:
        out.extend([f"--- {message['role']} ---", message["content"]])
    return "\n".join(out)


def ask_sources(result: AskResult) -> str:
    """The files and excerpts `ask` would send, then why nothing was sent."""
    out: list[str] = []
    for source in result.sources:
        pages = f", pages {page_ranges(source.pages)}" if source.pages else ""
        size = f"{len(source.excerpt)} of {source.content_len} chars" if source.truncated else f"{source.content_len} chars"
        out.extend([f"=== {source.path} ({size}{pages}) ===", source.excerpt, ""])
    if not result.sources:
        out.append("No notes match the question.")
    if result.hint:
        out.append(f"brain: {result.hint}")
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
