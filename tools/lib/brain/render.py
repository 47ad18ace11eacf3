"""Text, Markdown and JSON views of the core's result objects (shared by every front door)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .chunking import chunking_words
from .errors import shown
from .grep import GrepResponse, TextRange
from .fusion import WEAK_COSINE
from .search import SearchResponse, matched_spans
from .terminal import Style
from .texts import labelled_pages

if TYPE_CHECKING:
    from .ask import AskResult
    from .indexer import ScanReport  # type only: indexing's modules load numpy


def as_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def scan_json(report: ScanReport) -> str:
    return json.dumps(report.to_dict(), ensure_ascii=False)


def scan_text(report: ScanReport) -> str:
    counts = report.counts()
    head = ", ".join(f"{n} {name}" for name, n in counts.items())
    lines = [f"{'rebuilt' if report.rebuilt else 'indexed'}: {head} in {duration(report.seconds)}"
             f" ({report.chunks_embedded} chunks embedded, {report.cache_hits} from cache)"]
    for move in report.moved:
        lines.append(f"  moved   {shown(move['from'])} → {shown(move['to'])}")
    for item in report.failed:
        lines.append(f"  failed  {shown(item['path'])}: {shown(item['reason'])}")
    for item in report.warnings:
        lines.append(f"  warning {shown(item['path'])}: {shown(item['reason'])}")
    return "\n".join(lines)


def duration(seconds: float) -> str:
    """A time a person reads at a glance: 22.8s, 4 min 05 s, 1 h 02 min."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


QUERY_ECHO_CHARS = 100  # a longer query is echoed by its start: the person typed it, they know the rest


def _echo(query: str) -> str:
    query = " ".join(query.split())
    return query if len(query) <= QUERY_ECHO_CHARS else query[: QUERY_ECHO_CHARS - 1].rstrip() + "…"


def _pages_shown(pages: list[int], labels: list[str]) -> str:
    """A hit's pages for the text view: the one its best lines are on, then the others it runs over."""
    if not pages:
        return ""
    first = labelled_pages(pages[:1], labels[:1])
    if len(pages) == 1:
        return f"  Page: {first}"
    return f"  Page: {first}, also {labelled_pages(pages[1:], labels[1:])}"


def _score_line(hit: Any, explain: bool = False) -> str:
    """`Relevance: 64%` (how far the result stands above the average candidate, as a share of the best one's
    lead), with the raw fused score and its halves under --explain."""
    parts = []
    if hit.vector_score is not None:
        parts.append(f"vector: {hit.vector_score:.3f}")
    if hit.keyword_score is not None:
        parts.append(f"keyword: {hit.keyword_score:.3f}")
    # Ranked first by how much of what was understood its note has, then by score.
    has = "" if getattr(hit, "satisfies", None) is None else f"  Has: {hit.satisfies} understood"
    if not parts:  # a query of only operators: nothing was scored, the note passed them
        return "Passes the filters" + has
    raw = f" (score {hit.score:.3f}: {', '.join(parts)})" if explain else ""
    return f"Relevance: {hit.relevance:.0%}{raw}{has}"


_POOL_WORDS = {"std": "deviation", "min": "lowest", "max": "highest"}


def _explain_lines(hit: Any) -> list[str]:
    e = hit.explain or {}
    vec, kw = e.get("vector", {}), e.get("keyword", {})
    fmt = lambda v: "—" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)  # noqa: E731
    # The candidates' statistics the scores were normalised by, in words (std is "deviation").
    pool = lambda d: "over the candidates: " + ", ".join(  # noqa: E731
        f"{_POOL_WORDS.get(k, k)} {fmt(v)}" for k, v in d.items())
    fusion = f"fusion {e['fusion']}: " if e.get("fusion") else ""
    w = e.get("weights", {})
    if "vector_asked" in w:
        scaled = "" if w["vector"] == w["vector_asked"] else f", from {fmt(w['vector_asked'])}"
        vs, ks = w.get("spreads", [None, None])
        # What moved the weight for this query: the share of its words the notes have at all
        # (coverage) and the share in the best keyword note's title or frontmatter (field share).
        why = "".join(f"; {label} {fmt(w[key])}" for key, label in (
            ("keyword_coverage", "share of the query's words the notes have"),
            ("field_share", "share in the best keyword note's title or frontmatter")) if key in w)
        weights = (f"vector {fmt(w['vector'])}, keyword {fmt(w['keyword'])} (how far each half's best stands "
                   f"out: vector {fmt(vs)}, keyword {fmt(ks)}{why}{scaled})")
    else:
        weights = ", ".join(f"{k} {fmt(v)}" for k, v in w.items())
    lines = [f"   how: {fusion}{e.get('formula')}; weights {weights}; {e.get('candidates')} candidate chunks"]
    if vec.get("normalised") is not None:
        extra = f" [{pool(vec['pool'])}]" if vec.get("pool") else ""
        lines.append(
            f"        vector  cosine {fmt(vec.get('cosine'))} → {fmt(vec.get('normalised'))} "
            f"(rank {fmt(vec.get('rank'))}){extra}"
        )
    if kw.get("normalised") is not None:
        extra = f" [{pool(kw['pool'])}]" if kw.get("pool") else ""
        lines.append(
            f"        keyword bm25 {fmt(kw.get('bm25'))} → {fmt(kw.get('normalised'))} "
            f"(rank {fmt(kw.get('rank'))}){extra}"
        )
        if kw.get("fields"):
            matched = "; ".join(f"{name}: {', '.join(words)}" for name, words in kw["fields"].items())
            lines.append(f"        keyword fields matched: {matched}")
    if e.get("kept"):
        lines.append(f"        kept at place {e['kept']}: the vector half's first, though it holds no query word "
                     "(its score set between the results around it)")
    if e.get("words_together"):
        lines.append(f"        the scores above are the file's best chunk #{e['words_together']['best_chunk']}'s; this "
                     "chunk is shown in its place: within a deviation of it, and the query's words sit closer "
                     "together here")
    chunk = e.get("chunk", {})
    lines.append(f"        chunk #{chunk.get('id')} lines {hit.start_line}-{hit.end_line} {hit.heading_path}".rstrip())
    return lines


def search(response: SearchResponse, fmt: str, style: Style | None = None) -> str:
    """The results as `fmt` (text, markdown, json); `style` (text only) links each path and marks matched words."""
    explain = response.explained
    style = style if style is not None and fmt == "text" else Style.plain()

    def marked(text: str) -> str:
        if not style.on:
            return text
        return style.mark(text, matched_spans(text, response.searched_forms, response.languages))

    if fmt == "json":
        return json.dumps(response.to_dict(), ensure_ascii=False)
    markdown = fmt == "markdown"
    if markdown:
        out = [f"## Search: {_echo(response.query)}", f"{len(response.results)} results ({response.mode})", ""]
    else:
        out = [f"Search: {_echo(response.query)}  ({response.mode}, {len(response.results)} results)"]
    if response.also_searched:
        out.append(
            f"{'_' if markdown else ''}also searched: {', '.join(response.also_searched)}{'_' if markdown else ''}"
        )
    if response.unmatched_filter:
        note = f"filter matched no note: {response.unmatched_filter}"
        out.append(f"_{note}_" if markdown else note)
    if response.operators_line:
        note = f"operators: {response.operators_line} (--literal: every character as typed)"
        out.append(f"_{note}_" if markdown else note)
    if response.understood_line:
        note = f"understood: {response.understood_line} (--literal: words only)"
        out.append(f"_{note}_" if markdown else note)
    if response.weak:
        note = f"no keyword matched; closest by meaning (none is close: best cosine under {WEAK_COSINE})"
        out.append(f"_{note}_" if markdown else note)
    if response.partial:
        total = response.embedded_chunks + response.pending_chunks
        note = (f"vectors for {response.embedded_chunks:,} of {total:,} chunks; "
                "results from keywords alone for the rest "
                "(`brain index` is making them)")
        out.append(f"_{note}_" if markdown else note)
    for n, hit in enumerate(response.results, 1):
        pages = _pages_shown(hit.pages, hit.page_labels)
        stale = "  [changed on disk since indexed: preview is current]" if hit.stale else ""
        if markdown:
            out.append(
                f"{n}. **{shown(hit.path)}** — {_score_line(hit, explain)} — "
                f"Lines: {hit.start_line}-{hit.end_line}{pages}{stale}"
            )
            out.append(f"   > {hit.preview}")
        else:
            out.append(
                f"{n}. {style.link(hit.path, shown(hit.path))}  {_score_line(hit, explain)}  "
                f"Lines: {hit.start_line}-{hit.end_line}{pages}{stale}"
            )
            out.append(f"   Preview: {marked(hit.preview)}")
        if explain:
            out.extend(_explain_lines(hit))
        if hit.excerpt is not None:
            out.extend(_excerpt_lines(hit, markdown, marked))
    if response.cut_off:
        many = response.cut_off != 1
        note = (f"{response.cut_off} more result{'s' if many else ''} under {response.cutoff:.0%} relevance left out "
                "(--no-cutoff shows them)")
        out.append(f"_{note}_" if markdown else f"({note})")
    for path in response.dropped:
        out.append(f"(dropped {shown(path)}: deleted since it was indexed; run `brain index`)")
    if not response.results:
        out.append("No results: the index holds no notes; `brain index` adds the folder's notes, `brain status` says "
                   "what it found" if response.empty else "No results.")
    return "\n".join(out)


def _excerpt_lines(hit: Any, markdown: bool, marked: Any = None) -> list[str]:
    label = f"Excerpt ({len(hit.excerpt)} of {hit.content_len} chars):"
    if markdown:
        return [f"   {label}", "", "   ```text", *(f"   {ln}" for ln in hit.excerpt.split("\n")), "   ```", ""]
    return [f"   {label}", *(f"   | {marked(ln) if marked else ln}" for ln in hit.excerpt.split("\n"))]


def grep_text(response: GrepResponse, style: Style | None = None) -> str:
    """grep-like lines: `path:line:offset: text`, context as `path-line- text`, groups split by `--`; `style`
    links each matching line's path and marks the match."""
    style = style or Style.plain()
    out: list[str] = []
    grouped = any(m.before or m.after for m in response.matches)
    for index, match in enumerate(response.matches):
        if grouped and index:
            out.append("--")
        for n, line in enumerate(match.before):
            out.append(f"{shown(match.path)}-{match.line - len(match.before) + n}- {line}")
        page = f"[p. {labelled_pages([match.page], [match.page_label or ''])}] " if match.page is not None else ""
        at = match.text.find(match.match) if match.match else -1
        text = style.mark(match.text, [(at, at + len(match.match))] if at >= 0 else [])
        out.append(f"{style.link(match.path, shown(match.path))}:{match.line}:{match.offset}: {page}{text}")
        for n, line in enumerate(match.after, 1):
            out.append(f"{shown(match.path)}-{match.line + n}- {line}")
    return "\n".join(out)


def grep_notes(response: GrepResponse) -> list[str]:
    """What goes to stderr: no matches, more matches than shown, files that could not be read."""
    notes = [f"skipped {shown(item['path'])}: {shown(item['reason'])}" for item in response.skipped]
    if not response.matches:
        notes.append(f"no matches for {response.pattern!r} in {response.files_searched} files")
    elif response.truncated:
        notes.append(
            f"showing the first {len(response.matches)} matches; "
            "more exist (raise --limit, at most 500, or narrow the pattern)"
        )
    return notes


def range_header(part: TextRange) -> str:
    """One line saying which bytes, lines and pages of which file are shown."""
    where = f"lines {part.start_line}-{part.end_line}"
    if part.page_count:
        where += (f", page{'s' if len(part.pages) != 1 else ''} {labelled_pages(part.pages, part.page_labels)}"
                  f" of {part.page_count}")
    stale = " [changed on disk since indexed]" if part.stale else ""
    if part.blank_skipped:
        where += f"; {part.blank_skipped} bytes of blank lines before it skipped"
    end = part.offset + part.length
    more = f"; more from --offset {end}" if end < part.total else ""
    return f"{shown(part.path)}: bytes {part.offset}-{end} of {part.total} ({where}{more}){stale}"


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
        pages = f", pages {labelled_pages(source.pages, source.page_labels)}" if source.pages else ""
        size = (
            f"{len(source.excerpt)} of {source.content_len} chars"
            if source.truncated
            else f"{source.content_len} chars"
        )
        out.extend([f"=== {shown(source.path)} ({size}{pages}) ===", source.excerpt, ""])
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
        f"chunks     {data['chunks']} ({data['embedded_chunks']} embedded"
        + (
            f", {data['pending_vectors']} waiting for their vector: `brain index` makes them)"
            if data.get("pending_vectors")
            else ")"
        ),
        f"cache      {data['cache_entries']} vectors, hit rate {'—' if rate is None else f'{rate:.0%}'}",
        f"model      {data['model']} ({data['dimension']} dims, {data['precision']})",
        f"chunking   {chunking_words(data['chunking'])}",
        f"keywords   FTS5 '{data['fts_tokenizer']}', stemmer {data['stemmer']}",
        f"last scan  {data['last_scan']}",
        "most chunks:",
    ]
    lines.extend(f"  {item['chunks']:>5}  {shown(item['path'])}" for item in data["largest_files"])
    return "\n".join(lines)


def config_text(rows: list[dict[str, Any]], config_path: Path | None) -> str:
    lines = [f"# settings file: {config_path if config_path and config_path.exists() else 'none (defaults)'}"]
    width = max(len(r["key"]) for r in rows)
    for row in rows:
        line = f"{row['key']:<{width}}  {json.dumps(row['value'], ensure_ascii=False):<32}  ({row['origin']})"
        lines.append(f"{line}  # {row['help']}" if row.get("help") else line)
    return "\n".join(lines)


def sync_text(report: Any) -> str:
    """One line per git sync (what a hook writes to .brain/hook.log): when, hook, commits, action and why,
    counts, time."""
    from .store import timestamp

    when = timestamp()
    span = f" {(report.from_commit or 'none')[:12]}..{report.to_commit[:12]}" if report.to_commit else ""
    line = f"{when} {report.hook or 'sync'}{span}: {report.action}"
    if report.reason:
        line += f" ({report.reason})"
    if report.scan is not None:
        counts = ", ".join(f"{n} {name}" for name, n in report.scan.counts().items() if n and name != "unchanged")
        line += f" → {counts or 'nothing changed'}; {report.scan.chunks_embedded} chunks embedded"
    line += f" in {report.seconds:.2f}s"
    if report.scan is not None:
        for move in report.scan.moved:
            line += f"\n    moved {shown(move['from'])} → {shown(move['to'])}"
        for item in report.scan.failed:
            line += f"\n    failed {shown(item['path'])}: {shown(item['reason'])}"
    return line


def hook_actions_text(actions: list[Any]) -> str:
    """What `brain hooks install/uninstall` did, one hook per line."""
    lines = []
    for action in actions:
        line = f"{action.hook:<14} {action.action:<10} {action.path}"
        if action.legacy and action.action in ("installed", "updated", "unchanged"):
            line += f"  (the hook that was there runs first, from {Path(action.legacy).name})"
        elif action.action == "restored":
            line += "  (the hook that was there before brain's is back)"
        elif action.action == "not-ours":
            line += "  (not brain's hook; left alone)"
        lines.append(line)
    return "\n".join(lines)


def _paths_block(label: str, paths: list[str], limit: int = 20) -> list[str]:
    lines = [f"  {label:<10} {shown(p)}" for p in paths[:limit]]
    if len(paths) > limit:
        lines.append(f"  {'':<10} … and {len(paths) - limit} more (see --json)")
    return lines


def status_text(report: Any) -> str:
    """`brain status`: the verdict first, then the counts, the files at fault, commits, rebuild, model and hooks."""
    how = "hashed every file" if report.verified else "by size and time; --verify hashes every file"
    if not report.database_exists:
        verdict = f"NOT INDEXED: no index at {report.database}; run `brain index`"
    elif report.clean:
        verdict = f"clean: the index matches the files ({how})"
    else:
        problems = [
            f"{len(getattr(report, name))} {name}" for name in ("stale", "missing", "orphaned", "failed")
            if getattr(report, name)
        ]
        if report.unlisted:
            problems.append(f"{len(report.unlisted)} unreadable folder{'' if len(report.unlisted) == 1 else 's'}")
        if report.model_mismatch:
            problems.append("model changed")
        if report.keyword_mismatch:
            problems.append("keyword index settings changed")
        if report.extractor_mismatch:
            problems.append("PDF text extractor changed")
        if report.pending_vectors:
            problems.append(f"{report.pending_vectors:,} chunks wait for their vectors (found by their words only)")
        fix = "make the folders readable, then run `brain index`" if report.unlisted else "run `brain index` to fix"
        verdict = f"NOT CLEAN: {', '.join(problems)} ({how}); {fix}"
    lines = [
        verdict,
        f"root        {report.root}" + (f" ({report.root_reason})" if getattr(report, "root_reason", "") else ""),
        f"database    {report.database}",
        f"files       {report.files_on_disk} on disk, {report.files_indexed} indexed",
        f"stale       {len(report.stale)}  (changed on disk since indexed)",
        f"missing     {len(report.missing)}  (on disk, not indexed)",
        f"orphaned    {len(report.orphaned)}  (indexed, gone from disk)",
    ]
    if report.pending_vectors:
        lines.append(
            f"vectors     {report.pending_vectors:,} chunks waiting (keywords first: `brain index` makes them)"
        )
    lines += (
        _paths_block("stale", report.stale)
        + _paths_block("missing", report.missing)
        + _paths_block("orphaned", report.orphaned)
    )
    for item in report.unlisted:
        lines.append(f"unlisted    {item['path']}: {item['reason']} (its notes are kept, unchecked; make it readable)")
    for item in report.unapproved:
        lines.append(f"not used    {item['key']} = {shown(repr(item['value']))} from the settings file "
                     "(not approved on this machine; `brain trust` approves it)")
    if report.failed:
        lines.append(f"failed      {len(report.failed)}  (not indexed this time; `brain index` tries again)")
        lines += [f"  {shown(item['path'])}: {shown(item['reason'])}" for item in report.failed[:20]]
    if report.unreadable:
        lines.append(f"unreadable  {len(report.unreadable)}  (cannot be indexed; not counted)")
        lines += [f"  {shown(item['path'])}: {shown(item['reason'])}" for item in report.unreadable[:20]]
    broken = report.broken_links
    if broken:
        lines.append(f"links       {len(broken)} broken  (naming no indexed note; `brain links PATH` shows a note's)")
        lines += [f"  {shown(item['path'])}:{item['line']}: {shown(item['target'])}"
                  + (" (leaves the notes folder)" if item["reason"] == "outside" else "") for item in broken[:20]]
        if len(broken) > 20:
            lines.append(f"  … and {len(broken) - 20} more (`brain status --json` lists them all)")
    short = lambda c: c[:12] if c else "none"  # noqa: E731
    git = {
        "current": "current",
        "behind": f"{report.commits_behind} commits behind HEAD",
        "rewritten": "not an ancestor of HEAD (amend/rebase); the next sync diffs the two trees",
        "no-record": "no commit recorded; the next sync scans",
        "no-commits": "no commits yet",
        "no-git": "not a git repository",
        "unknown": "unknown (git failed)",
    }[report.history]
    lines.append(f"git         HEAD {short(report.head_commit)}, indexed {short(report.indexed_commit)}: {git}")
    sync = report.last_sync
    if sync:
        counts = ", ".join(f"{n} {k}" for k, n in (sync.get("counts") or {}).items() if n and k != "unchanged")
        lines.append(f"last sync   {sync.get('at')} {sync.get('hook') or 'sync'}: {sync.get('action')}"
                     f"{' → ' + counts if counts else ''}")
    lines.append(f"last scan   {report.last_scan or 'never'}")
    rebuild = report.last_rebuild
    if rebuild:
        if rebuild.get("ok"):
            counts = ", ".join(f"{n} {k}" for k, n in (rebuild.get("counts") or {}).items() if n)
            lines.append(f"rebuilt     {rebuild.get('at')}: ok ({counts}) in {rebuild.get('seconds')}s")
        else:
            error = rebuild.get("error")
            if error == "KeyboardInterrupt":  # recorded so by earlier versions
                error = "interrupted (Ctrl-C)"
            lines.append(f"rebuilt     {rebuild.get('at')}: FAILED: {error}")
    else:
        lines.append("rebuilt     never")
    model = report.model or "none"
    dims = f" ({report.dimension} dims)" if report.dimension else ""
    lines.append(f"model       {model}{dims}; {chunking_words(report.chunking)}")
    if report.schema_version is not None and report.schema_version != report.schema_supported:
        # Only a difference is worth a line: equal format numbers say nothing to a person.
        fix = ("upgrade brain-search to read it" if report.schema_version > report.schema_supported
               else "the next `brain index` brings it up to date")
        lines.append(f"format      the index is format {report.schema_version}, this brain writes format "
                     f"{report.schema_supported}: {fix}")
    if report.model_mismatch:
        lines.append(f"            {report.model_mismatch}; run `brain index` to re-embed")
    if report.keyword_mismatch:
        lines.append(
            f"            {report.keyword_mismatch}; `brain index` rebuilds the keyword index (nothing re-embedded)"
        )
    if report.extractor_mismatch:
        lines.append(f"            {report.extractor_mismatch}; `brain index` reads the PDFs again (text that did not "
                     "change keeps its vectors)")
    installed = [h for h in report.hooks if h["installed"]]
    if not report.hooks:
        lines.append("hooks       none (not a git repository)")
    elif not installed:
        lines.append("hooks       not installed; `brain hooks install` keeps the index in step with commits")
    else:
        for hook in report.hooks:
            if not hook["installed"]:
                state = "foreign hook, not brain's" if hook["foreign"] else "not installed"
            else:
                state = f"{hook['mode']}, {hook['interpreter']}"
                if not hook["interpreter_found"]:
                    state += " (INTERPRETER MISSING: run `brain hooks install` again)"
                if hook["legacy"]:
                    state += ", runs the previous hook first"
            lines.append(f"hook        {hook['hook']:<14} {state}")
    return "\n".join(lines)


def eval_table(report: Any, markdown: bool = False) -> str:
    """One row per search mode: the metrics and the median query latency (an EvalReport)."""
    from .evaluation import METRICS

    split = f" ({report.split})" if report.split else ""
    cfg = report.settings
    index = report.index
    head = (
        f"{report.collection}{split}: {report.queries} queries, {report.documents} documents; "
        f"fusion {cfg['fusion']}, vector weight {cfg['vector_weight']} (spread ratio {cfg.get('spread_ratio')}), "
        f"candidates {cfg['candidates']}, "
        f"stemmer {cfg.get('stemmer')}, tokenizer '{cfg['fts_tokenizer']}', "
        f"chunks {cfg['chunk_chars']}/{cfg['overlap_chars']} chars"
    )
    tail = (
        f"index {'reused' if index['reused'] else 'built'} in {duration(index['seconds'])} "
        f"({index['chunks_embedded']} chunks embedded, {index['cache_hits']} from cache); "
        f"total {duration(report.seconds)}"
    )
    failed = index.get("failed") or []
    if failed:  # evaluated over what indexed: a failed file counts as not found
        first = failed[0]
        tail += (f"\n{len(failed)} file{'' if len(failed) == 1 else 's'} failed to index and count as not found "
                 f"(first: {shown(first['path'])}: {first['reason']})")
    titles = ["mode", *METRICS.values(), "median ms"]
    rows = [[r.mode, *(f"{r.metrics[m]:.4f}" for m in METRICS), f"{r.median_ms:.1f}"] for r in report.results]
    # Per kind of query (notes query files that name kinds): MRR@10, R@5 and R-precision per mode.
    kinds = sorted({k for r in report.results for k in r.by_kind})
    kind_titles = ["kind", "queries", *(f"{r.mode} {m}" for r in report.results for m in ("MRR@10", "R@5", "R-prec"))]
    kind_rows = [
        [kind, str(int(report.results[0].by_kind[kind]["queries"])),
         *(f"{r.by_kind[kind][m]:.3f}" for r in report.results for m in ("mrr@10", "recall@5", "r-precision"))]
        for kind in kinds
    ]
    if markdown:
        out = [head, "", "| " + " | ".join(titles) + " |", "|" + "---|" + "---:|" * (len(titles) - 1)]
        out.extend("| " + " | ".join(row) + " |" for row in rows)
        if kind_rows:
            out.extend(["", "| " + " | ".join(kind_titles) + " |", "|" + "---|" + "---:|" * (len(kind_titles) - 1)])
            out.extend("| " + " | ".join(row) + " |" for row in kind_rows)
        out.extend(["", tail])
        return "\n".join(out)

    def table(heads: list[str], body: list[list[str]]) -> list[str]:
        widths = [max(len(str(x)) for x in col) for col in zip(heads, *body)]
        line = lambda cells: "  ".join(  # noqa: E731
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        )
        return [line(heads), *(line(r) for r in body)]

    return "\n".join([head, *table(titles, rows), *(table(kind_titles, kind_rows) if kind_rows else []), tail])


def _link_line(hit: Any, other: str) -> str:
    where = f"line {hit.line}"
    why = "leaves the notes folder" if hit.broken == "outside" else "no indexed file"
    name = shown(other) if other else f"{hit.target} (broken: {why})"
    heading = f"#{hit.heading}" if hit.heading else ""
    return f"  {name}{heading}  ({hit.kind}, {where}): {hit.text}"


def links_text(response: Any) -> str:
    """`brain links`: what the note links to, then what links to it, each with the line it sits on."""
    out = [f"{shown(response.path)}", f"links to ({len(response.outgoing)}):"]
    out += [_link_line(hit, hit.path or "") for hit in response.outgoing] or ["  (none)"]
    out.append(f"linked from ({len(response.backlinks)}):")
    out += [_link_line(hit, hit.path) for hit in response.backlinks] or ["  (none)"]
    return "\n".join(out)


def related_text(response: Any) -> str:
    """`brain related`: the nearest notes by meaning, each with its cosine, lines and preview."""
    out = [f"notes near {shown(response.path)} by meaning:"]
    for n, hit in enumerate(response.results, 1):
        linked = "  [linked]" if hit.linked else ""
        pages = _pages_shown(hit.pages, [])
        out.append(f"{n}. {shown(hit.path)}  cosine {hit.score:.3f}  Lines: {hit.start_line}-{hit.end_line}{pages}"
                   f"  (near lines {hit.from_lines[0]}-{hit.from_lines[1]}){linked}")
        out.append(f"   Preview: {hit.preview}")
    if not response.results:
        out.append("  (none)")
    if response.excluded_linked:
        out.append(f"({response.excluded_linked} linked notes left out)")
    return "\n".join(out)
