"""Every operation a front door offers, declared once: its parameters, types, defaults, limits and help.

The CLI (click options), the MCP tools (their JSON schema) and the HTTP request
models are all generated from these declarations, so the three doors cannot
accept different names, defaults or bounds (tests/test_one_report.py checks
the generated schemas against this table). The core reads its bounds from here
too. This module imports nothing heavy: `brain --help` loads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .limits import (  # noqa: F401 - re-exported: the doors read every bound from this table's module
    DEFAULT_GREP_LIMIT,
    MAX_ASK_BUDGET,
    MAX_ASK_FILES,
    MAX_EXCERPT_CHARS,
    MAX_GREP_CONTEXT,
    MAX_GREP_LIMIT,
    MAX_PATTERN_CHARS,
    MAX_QUERY_CHARS,
    MAX_READ_BYTES,
    MAX_SEARCH_LIMIT,
    MIN_EXCERPT_CHARS,
    SEARCH_MODES,
)

ParamType = Literal["str", "int", "float", "bool", "list"]


@dataclass(frozen=True)
class Param:
    """One parameter of an operation, as every door accepts it."""

    name: str  # the JSON / Python name; the CLI flag is --name-with-dashes unless `flags` says otherwise
    kind: ParamType
    help: str
    default: Any = None  # None: "not given" (the setting named in the help decides)
    required: bool = False
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    flags: tuple[str, ...] = ()  # CLI spelling; empty for a positional argument (required params)
    metavar: str | None = None

    @property
    def cli_flags(self) -> tuple[str, ...]:
        return self.flags or ("--" + self.name.replace("_", "-"),)


@dataclass(frozen=True)
class Operation:
    """One thing a person or a program can ask brain to do, the same through every door."""

    name: str  # the CLI command
    method: str  # the Brain method that does it
    summary: str  # one line: the command list, the MCP tool's first line
    description: str  # a paragraph: --help, the MCP tool description, the OpenAPI description
    params: tuple[Param, ...]
    examples: tuple[str, ...]
    mcp_tool: str  # the MCP tool's name
    http: tuple[str, str]  # (method, path) of the HTTP endpoint
    read_only: bool = True
    cli_flags: tuple[str, ...] = field(default=())  # output-only CLI flags (--json, --format): not parameters

    @property
    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}


_NOTE_PATH = "The note's path relative to the notes folder, as search results give it."
_NOTE = Param("path", "str", _NOTE_PATH, required=True, metavar="PATH")  # get, links and related read one note

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        name="search",
        method="search",
        summary="Find the notes that talk about QUERY.",
        description=(
            "Ranks the notes by keywords (BM25) and by meaning (a multilingual embedding model) at once, "
            "one result per file, best first, with path, score, relevance (0-1: how far it stands above the "
            "average candidate, as a share of the best result's lead; those under the search.cutoff setting are "
            "left out), line range and a preview read from the file "
            "as it is now. Ask in Italian or English, in any words; names, codes and dates match exactly. "
            "Read the files before relying on a preview: the index points, the files are the truth."
        ),
        params=(
            Param("query", "str", "What to look for, in any words; \"an exact phrase\", -word to leave out, a OR b, "
                  "path:folder/, tag:name, key:value, key>value (see Operators in docs/commands.md).", required=True,
                  maximum=MAX_QUERY_CHARS,
                  metavar="QUERY"),
            Param("limit", "int", "How many files to return (default: the search.limit setting, 10).",
                  minimum=1, maximum=MAX_SEARCH_LIMIT, flags=("-k", "--limit"), metavar="N"),
            Param("mode", "str", "hybrid (default): keywords and meaning; bm25: exact words, names, codes; "
                  "vector: meaning only.", choices=SEARCH_MODES),
            Param("vector_weight", "float", "Share of meaning against keywords in hybrid mode, 0-1 "
                  "(default: the search.vector_weight setting).", minimum=0.0, maximum=1.0, metavar="W"),
            Param("path_prefix", "str", "Only notes under this folder, relative to the notes folder, e.g. 'diary/'.",
                  metavar="FOLDER"),
            # Said for every door: the CLI adds how its flag repeats (cli._click_param).
            Param("where", "list", "Frontmatter filters, each key=value, key!=value or key>value, >=, <, <= with a "
                  "number or date, e.g. status!=archived, year>=2024; a note must match every one.", default=(),
                  metavar="KEY=VALUE"),
            Param("chunks", "bool", "One result per chunk instead of one per file.", default=False),
            Param("literal", "bool", "Words only: no operators (quotes, -word, OR, key:value are plain text) and no "
                  "reading of the query's kind of note, frontmatter values, status or time words "
                  "(\"progetti Laravel del 2024\") as things the notes must have.", default=False),
            Param("no_cutoff", "bool", "Keep every result up to the limit, even those far below the best "
                  "(the search.cutoff setting leaves them out).", default=False),
            Param("explain", "bool", "Show how each score was made: both halves, the fusion, the fields that matched.",
                  default=False),
            Param("excerpt_chars", "int", "Also give each result the relevant excerpt of its file, about this many "
                  "characters, and the file's full length.", minimum=MIN_EXCERPT_CHARS, maximum=MAX_EXCERPT_CHARS,
                  metavar="N"),
        ),
        examples=(
            'brain search "progetti Laravel per la clinica"',
            'brain search "nginx SSL certificate" --mode bm25 -k 5',
            'brain search "decisioni sul database" --path-prefix decisions/ --where status!=archived --json',
            "brain search '\"5 minuti\" pasta -draft path:ricette/ tag:veloce'",
            "brain search - < question.txt          # the query from stdin",
        ),
        mcp_tool="memory_search",
        http=("POST", "/search"),
        cli_flags=("--json", "--format", "--color"),
    ),
    Operation(
        name="grep",
        method="grep",
        summary="Lines matching a regular expression in the text of every indexed note.",
        description=(
            "Exact matches of a regular expression (RE2 syntax, case-insensitive unless asked) in the extracted "
            "text of the indexed notes, PDFs included: file, line number, byte offset (for `get --offset`) and "
            "context lines. Use it for names, codes and dates; use search for topics."
        ),
        params=(
            Param("pattern", "str", "A regular expression (RE2 syntax), searched line by line.", required=True,
                  maximum=MAX_PATTERN_CHARS, metavar="PATTERN"),
            Param("path", "str", "Only this indexed note, or the indexed notes under this folder.", metavar="PATH"),
            Param("context", "int", "Lines of context before and after each match.", default=0, minimum=0,
                  maximum=MAX_GREP_CONTEXT, flags=("-C", "--context"), metavar="N"),
            Param("limit", "int", "Most matching lines to return.", default=DEFAULT_GREP_LIMIT, minimum=1,
                  maximum=MAX_GREP_LIMIT, flags=("-k", "--limit"), metavar="N"),
            Param("case_sensitive", "bool", "Match letter case exactly.", default=False),
        ),
        examples=(
            "brain grep 'FT-2026-\\d+'",
            "brain grep 'invoice|fattura' --path clients/ -C 2",
        ),
        mcp_tool="memory_grep",
        http=("POST", "/grep"),
        cli_flags=("--json",),
    ),
    Operation(
        name="get",
        method="get_file",
        summary="Read an indexed note's text, or a byte range of it.",
        description=(
            "The note's extracted text as it is on disk now (PDFs: their text, with page numbers), from byte "
            "`offset` for `length` bytes, with the line range, the total size and whether more follows. "
            "Offsets are UTF-8 bytes, as grep reports them; blank lines where the range starts (a note's "
            "frontmatter) are skipped, and the offset returned says where the text begins. Only indexed notes "
            "inside the notes folder can be read."
        ),
        params=(
            _NOTE,
            Param("offset", "int", "First byte to return (UTF-8 offset into the note's text; grep gives them).",
                  default=0, minimum=0, metavar="N"),
            Param("length", "int", f"Bytes to return (default: to the end of the text, at most {MAX_READ_BYTES:,}).",
                  minimum=1, maximum=MAX_READ_BYTES, metavar="N"),
            Param("page", "str", "A PDF's one page, whole: its physical number from 1 (as search results' "
                  "`pages`), or the label printed on it (`xlv`, as `page_labels`). Not with offset or length.",
                  metavar="PAGE"),
        ),
        examples=(
            "brain get decisions/2026-03-database.md",
            "brain get manuals/handbook.pdf --offset 52000 --length 4000",
            "brain get manuals/handbook.pdf --page 47",
        ),
        mcp_tool="memory_get_file",
        http=("GET", "/file"),
        cli_flags=("--json",),
    ),
    Operation(
        name="links",
        method="links",
        summary="A note's links: the notes it links to and the notes that link to it.",
        description=(
            "The note's outgoing links (wiki-links with their #heading and |alias, embeds, relative Markdown "
            "links, frontmatter values that name a note) and its backlinks, each with the line it sits on, "
            "resolved as Obsidian resolves them against the notes indexed now (case-insensitive, .md optional, "
            "the linking note's own folder first, then the shortest path). A link that names no indexed note is "
            "listed as broken; none is ever followed outside the notes folder."
        ),
        params=(_NOTE,),
        examples=("brain links projects/alpha/index.md", "brain links diary/2026-03-02.md --json"),
        mcp_tool="memory_links",
        http=("GET", "/links"),
        cli_flags=("--json",),
    ),
    Operation(
        name="related",
        method="related",
        summary="The notes nearest to a note by meaning.",
        description=(
            "Compares the note's own chunks with every other note's by their vectors: the notes that talk about "
            "the same things, best first, each with its cosine and the lines that match (and which lines of the "
            "asked note they match). Notes it already links to, or that link to it, are marked `linked`; "
            "exclude_linked leaves them out."
        ),
        params=(
            _NOTE,
            Param("limit", "int", "How many notes to return.", default=10, minimum=1, maximum=MAX_SEARCH_LIMIT,
                  flags=("-k", "--limit"), metavar="N"),
            Param("exclude_linked", "bool", "Leave out the notes it links to and that link to it.", default=False),
        ),
        examples=("brain related projects/alpha/index.md", "brain related diary/2026-03-02.md -k 5 --exclude-linked"),
        mcp_tool="memory_related",
        http=("GET", "/related"),
        cli_flags=("--json",),
    ),
    Operation(
        name="ask",
        method="ask",
        summary="Answer a question from the notes with a language model.",
        description=(
            "Finds the notes for QUESTION, sends their relevant excerpts to the language model set in ask.model "
            "(any OpenAI-compatible endpoint) and returns its answer with the sources. Without a model set it "
            "returns the sources and how to set one; --show-prompt shows exactly what would be sent."
        ),
        params=(
            Param("question", "str", "A question about the notes.", required=True, maximum=MAX_QUERY_CHARS,
                  metavar="QUESTION"),
            Param("limit", "int", "How many files to send to the model (default: the ask.max_files setting, 5).",
                  minimum=1, maximum=MAX_ASK_FILES, flags=("-k", "--limit"), metavar="N"),
            Param("budget", "int", "Characters of each file sent to the model (default: the ask.budget_chars "
                  "setting, 8000).", minimum=MIN_EXCERPT_CHARS, maximum=MAX_ASK_BUDGET, metavar="CHARS"),
            Param("model", "str", "Model name for this call (default: the ask.model setting).", metavar="NAME"),
            Param("show_prompt", "bool", "Return exactly what would be sent; call no model.", default=False),
        ),
        examples=(
            'brain ask "perché abbiamo scelto PostgreSQL?"',
            'brain ask "what did we promise the clinic?" --show-prompt',
        ),
        mcp_tool="memory_ask",
        http=("POST", "/ask"),
        cli_flags=("--json",),
    ),
    Operation(
        name="index",
        method="index",
        summary="Index the notes folder: add new notes, update changed ones, follow moves, drop deleted ones.",
        description=(
            "Brings the index up to date with the files: only what changed is read again, and embeddings of "
            "unchanged text come from the cache. --full rebuilds everything into a new database and swaps it in "
            "when done; the old index answers searches until then. Returns the scan report: counts, failures "
            "with file and reason, moves."
        ),
        params=(
            Param("full", "bool", "Rebuild the whole index from scratch instead of updating it.", default=False),
        ),
        examples=("brain index", "brain index --full --json"),
        mcp_tool="memory_index",
        http=("POST", "/index"),
        read_only=False,
        cli_flags=("--json", "--yes"),
    ),
    Operation(
        name="status",
        method="status",
        summary="How fresh the index is: stale, missing and orphaned notes, commits, rebuilds.",
        description=(
            "Compares the index with the notes on disk and in git: notes changed since they were indexed, "
            "new ones not indexed yet, indexed ones gone, commits not caught up, the last scan and rebuild, "
            "the model, the installed hooks. Exit status 1 when anything is out of date."
        ),
        params=(
            Param("verify", "bool", "Hash every note instead of trusting size and time (slower, exact).",
                  default=False),
        ),
        examples=("brain status", "brain status --verify --json"),
        mcp_tool="memory_status",
        http=("GET", "/status"),
        cli_flags=("--json",),
    ),
    Operation(
        name="stats",
        method="stats",
        summary="What the index holds: notes, chunks, size, model, cache, biggest notes.",
        description=(
            "Counts of notes and chunks, the database's size on disk, the embedding model and keyword settings "
            "the index was built with, the embedding cache's hit rate and the notes with the most chunks."
        ),
        params=(),
        examples=("brain stats", "brain stats --json"),
        mcp_tool="memory_stats",
        http=("GET", "/stats"),
        cli_flags=("--json",),
    ),
)

BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}


def operation(name: str) -> Operation:
    """The declaration of operation `name`."""
    return BY_NAME[name]


def python_type(param: Param) -> Any:
    """The Python type of a parameter's value (None allowed when it has no default)."""
    base: Any = {"str": str, "int": int, "float": float, "bool": bool, "list": list[str]}[param.kind]
    if param.choices:
        base = Literal[param.choices]
    return base if param.required or param.default is not None else base | None


def pydantic_field(param: Param, *, from_query: bool = False) -> tuple[Any, Any]:
    """(annotation, default Field) of `param` for a pydantic model: what MCP and HTTP validate with.

    A JSON value must have its own type: `true` or `"5"` for a number, `1` or
    `"yes"` for a boolean are mistakes, refused with the field's name. A query
    string (`GET /status?verify=true`) has only text, which is read as its type.
    """
    from typing import Annotated

    from pydantic import Field, StrictBool, StrictFloat, StrictInt

    kind = python_type(param)
    strict = {"bool": StrictBool, "int": StrictInt, "float": StrictFloat}.get(param.kind)
    if strict is not None and not from_query:
        kind = strict if param.required or param.default is not None else strict | None
    constraints: dict[str, Any] = {"description": param.help}
    if param.kind in ("int", "float"):
        if param.minimum is not None:
            constraints["ge"] = param.minimum
        if param.maximum is not None:
            constraints["le"] = param.maximum
    # No min_length on a required text: the core refuses an empty one with the line every door shows
    # ("empty query; …"), not the validator's "String should have at least 1 character"; too long, likewise.
    if param.required:
        return Annotated[kind, Field(**constraints)], ...
    if param.kind == "list":
        return Annotated[kind, Field(default_factory=list, **constraints)], ...
    return Annotated[kind, Field(**constraints)], param.default


def request_model(op: Operation) -> Any:
    """A pydantic model of `op`'s parameters that refuses unknown ones (the HTTP request body or query)."""
    from pydantic import BaseModel, ConfigDict, create_model

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")

    fields: dict[str, Any] = {param.name: pydantic_field(param, from_query=op.http[0] == "GET") for param in op.params}
    return create_model(f"{op.name.capitalize()}Request", __base__=Strict, __doc__=op.summary, **fields)


def one_line_error(error: dict[str, Any]) -> tuple[str, str]:
    """(field, message) of one pydantic validation error, as MCP and HTTP report it: one line naming the input."""
    loc = [str(part) for part in error.get("loc", ())]
    if error.get("type") == "json_invalid":
        return "body", "the request body is not valid JSON"
    if len(loc) > 1 and loc[0] in ("body", "query", "path", "header"):
        loc = loc[1:]  # HTTP says where the input came from first: keep its name
    name = ".".join(loc) or "body"
    message = str(error.get("msg", "invalid value"))
    if error.get("type") == "extra_forbidden":
        message = "unknown parameter"
    elif error.get("type") == "missing":
        message = "required"
    return name, f"{name}: {message}"


def markdown_reference() -> str:
    """The parameter table of every operation, as docs/commands.md carries it (`python -m brain.operations`)."""
    out: list[str] = []
    for op in OPERATIONS:
        method, path = op.http
        out += [
            f"### {op.name}",
            "",
            f"{op.summary} CLI `brain {op.name}`, MCP `{op.mcp_tool}`, HTTP `{method} {path}`.",
            "",
        ]
        if not op.params:
            out += ["No parameters.", ""]
            continue
        out += ["| parameter | CLI | type | default | limits | meaning |", "|---|---|---|---|---|---|"]
        for p in op.params:
            cli = p.metavar if p.required else " / ".join(f"`{flag}`" for flag in p.cli_flags)
            default = "required" if p.required else ("—" if p.default in (None, ()) else f"`{p.default}`".lower())
            limits = []
            if p.choices:
                limits.append(", ".join(p.choices))
            if p.minimum is not None:
                limits.append(f"≥ {p.minimum:g}")
            if p.maximum is not None:
                limits.append(f"≤ {p.maximum:,g}" + (" characters" if p.kind == "str" else ""))
            kind = "list of text" if p.kind == "list" else {"str": "text", "int": "integer", "float": "number",
                                                             "bool": "flag"}[p.kind]
            out.append(f"| `{p.name}` | {cli} | {kind} | {default} | {'; '.join(limits) or '—'} | {p.help} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    print(markdown_reference(), end="")
