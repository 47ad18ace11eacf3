"""`brain mcp`: the notes as Model Context Protocol tools, served over stdio with the official SDK.

One Brain lives for the whole process, so the query encoder and the vectors
load once and every search after the first answers in milliseconds. Each tool
returns the same dict `brain … --json` prints. A BrainError becomes an MCP tool
error carrying its one-line message; the server itself never goes down for a
bad call. stdout is the protocol: everything else goes to stderr.
"""

from __future__ import annotations

import sys
import threading
import traceback
from typing import Annotated, Any, Callable, Literal

from pydantic import Field

from .errors import BrainError, user_error, without_folder
from .served import ServedCorpus, single_thread_blas

INSTRUCTIONS = (
    "brain is a local index of a person's notes (Markdown, text, PDF). Use memory_search to find which "
    "notes talk about something, then memory_get_file (or memory_grep) to read what they actually say "
    "before you answer: the index is a pointer, the files are the truth. Cite paths and line numbers."
)


def _tool_errors(corpus: ServedCorpus, run: Callable[[], Any]) -> Any:
    """Run one request; user-fixable problems come back as the one-line tool error the CLI would print."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return run()
    except BrainError as exc:
        raise ToolError(without_folder(str(exc), corpus.root)) from None
    except Exception as exc:  # a bug must not take the server down with it
        known = user_error(exc)
        if known is not None:  # a full disk, a read-only index, a name too long
            raise ToolError(without_folder(str(known), corpus.root)) from None
        traceback.print_exc(file=sys.stderr)
        raise ToolError(f"internal error in brain ({type(exc).__name__}); see the server's log") from None


def build_server(corpus: ServedCorpus) -> Any:
    """The MCP server with brain's six tools, bound to one notes folder."""
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    from . import __version__

    server = MCPServer(name="brain", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    @server.tool(annotations=read_only)
    def memory_search(
        query: Annotated[str, Field(description="What to look for, in any words (keyword + semantic search).")],
        limit: Annotated[int | None, Field(ge=1, le=200, description="How many files to return (default 10).")] = None,
        mode: Annotated[
            Literal["hybrid", "bm25", "vector"] | None,
            Field(description="hybrid (default): keywords + meaning; bm25: exact words, names, codes; vector: meaning only."),
        ] = None,
        excerpt_chars: Annotated[
            int | None,
            Field(ge=1, description="Return long files as excerpts of about this many characters, with content_len."),
        ] = None,
        where: Annotated[
            list[str] | None,
            Field(description="Frontmatter filters, each key=value or key!=value, e.g. ['status!=archived']."),
        ] = None,
        path: Annotated[str | None, Field(description="Only notes under this folder, e.g. 'diary/'.")] = None,
    ) -> dict[str, Any]:
        """Find the notes that talk about `query`: one result per file, best first, with path, score (and its
        vector and keyword parts), line range and a preview. Read the files before relying on a preview."""
        return _tool_errors(
            corpus,
            lambda: corpus.search(query, limit=limit, mode=mode, excerpt_chars=excerpt_chars, where=where, path=path),
        )

    @server.tool(annotations=read_only)
    def memory_grep(
        pattern: Annotated[str, Field(description="A regular expression, searched line by line (case-insensitive by default).")],
        file: Annotated[str | None, Field(description="Only this note (its path relative to the notes folder).")] = None,
        context: Annotated[int, Field(ge=0, le=50, description="Lines of context before and after each match.")] = 0,
        limit: Annotated[int, Field(ge=1, le=500, description="Most matching lines to return.")] = 50,
        case_sensitive: Annotated[bool, Field(description="Match letter case exactly.")] = False,
    ) -> dict[str, Any]:
        """Exact matches of a regular expression (RE2 syntax) in the text of the indexed notes: file, line number,
        byte offset (for memory_get_file) and context lines. Use it for names, codes and dates; memory_search for topics."""
        return _tool_errors(
            corpus,
            lambda: corpus.grep(pattern, file=file, context=context, limit=limit, case_sensitive=case_sensitive),
        )

    @server.tool(annotations=read_only)
    def memory_get_file(
        path: Annotated[str, Field(description="The note's path relative to the notes folder, as search results give it.")],
        offset: Annotated[int, Field(ge=0, description="UTF-8 byte offset into the note's text to start at (grep gives offsets).")] = 0,
        length: Annotated[int, Field(ge=1, le=200_000, description="Bytes to read (about as many characters for most text).")] = 4000,
    ) -> dict[str, Any]:
        """Read a note's text as it is on disk now: `length` bytes from `offset`, with the line range, the total
        size and, for PDFs, the pages. Use it to check what search found. Only indexed notes inside the notes
        folder can be read."""
        return _tool_errors(corpus, lambda: corpus.get_file(path, offset=offset, length=length))

    @server.tool(annotations=read_only)
    def memory_ask(
        question: Annotated[str, Field(description="A question about the notes.")],
    ) -> dict[str, Any]:
        """Answer a question from the notes: finds the files, sends their relevant excerpts to the configured
        language model and returns its answer with the sources. Without a model configured it returns the
        sources and a hint on how to configure one."""
        return _tool_errors(corpus, lambda: corpus.ask(question))

    @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False))
    def memory_scan(
        full: Annotated[bool, Field(description="Rebuild the whole index from scratch instead of updating it.")] = False,
    ) -> dict[str, Any]:
        """Re-index the notes folder: adds new notes, updates changed ones, follows moves, drops deleted ones.
        Returns the scan report: counts, failures with file and reason, moves."""
        return _tool_errors(corpus, lambda: corpus.scan(full=full))

    @server.tool(annotations=read_only)
    def memory_status(
        verify: Annotated[bool, Field(description="Also re-hash every file to find changes the timestamps hide (slower).")] = False,
    ) -> dict[str, Any]:
        """Is the index up to date with the notes: stale, missing and orphaned files, commits behind, last scan
        and rebuild, model, installed hooks."""
        return _tool_errors(corpus, lambda: corpus.status(verify=verify))

    return server


def serve_stdio(corpus: ServedCorpus) -> None:
    """Run the MCP server on stdin/stdout until the client closes the pipe."""
    server = build_server(corpus)
    single_thread_blas()
    # Warm up beside the handshake: the first search then finds the encoder and vectors loaded.
    threading.Thread(target=corpus.warm, name="brain-warm-up", daemon=True).start()
    sys.stderr.write(f"brain: MCP server for {corpus.root} on stdio\n")
    sys.stderr.flush()
    server.run("stdio")
