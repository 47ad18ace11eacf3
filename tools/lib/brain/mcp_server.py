"""`brain mcp`: the notes as Model Context Protocol tools, served over stdio with the official SDK.

One Brain lives for the whole process, so the query encoder and the vectors
load once and every search after the first answers in milliseconds. Each tool
returns the same dict `brain … --json` prints. A BrainError becomes an MCP tool
error carrying its one-line message; the server itself never goes down for a
bad call. stdout is the protocol: everything else goes to stderr.
"""

from __future__ import annotations

import inspect
import sys
import threading
import traceback
from typing import Any, Callable

from .errors import BrainError, user_error, without_folder
from .operations import OPERATIONS, Operation, one_line_error, pydantic_field
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


def _tool_function(corpus: ServedCorpus, op: Operation) -> Callable[..., dict[str, Any]]:
    """A function whose signature is `op`'s parameters (the SDK derives the tool's JSON schema from it)."""

    def tool(**params: Any) -> dict[str, Any]:
        return _tool_errors(corpus, lambda: corpus.run(op.name, params))

    signature = []
    for param in op.params:
        annotation, default = pydantic_field(param)
        signature.append(inspect.Parameter(
            param.name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
            default=inspect.Parameter.empty if default is ... else default,
        ))
    tool.__signature__ = inspect.Signature(signature, return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    tool.__name__ = op.mcp_tool
    return tool


def _reaches_outside(settings: Any) -> bool:
    """True when `ask` sends notes to a model on another machine (a remote ask.base_url, or the default cloud one)."""
    from urllib.parse import urlparse

    from .served import is_loopback

    if not settings["ask.model"]:
        return False
    if not settings["ask.base_url"]:
        return True  # the openai client's own default endpoint, a cloud service
    return not is_loopback(urlparse(settings["ask.base_url"]).hostname or "")


def build_server(corpus: ServedCorpus) -> Any:
    """The MCP server with one tool per operation (see operations), bound to one notes folder."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations
    from pydantic import ValidationError

    from . import __version__

    class OneLineErrors(MCPServer):
        """Argument errors as one line naming the field, not pydantic's multi-line text with a URL."""

        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            op = by_tool.get(name)
            unknown = sorted(set(arguments or {}) - {p.name for p in op.params}) if op is not None else []
            if op is not None and unknown:  # refused, as the CLI and HTTP refuse them, instead of silently ignored
                taken = ", ".join(p.name for p in op.params) or "nothing"
                raise ToolError(f"{unknown[0]}: unknown parameter; {name} takes {taken}")
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if isinstance(exc.__cause__, ValidationError):
                    errors = exc.__cause__.errors()
                    raise ToolError(one_line_error(dict(errors[0]))[1] if errors else "invalid arguments") from None
                raise

    by_tool = {op.mcp_tool: op for op in OPERATIONS}
    server = OneLineErrors(name="brain", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    remote_ask = _reaches_outside(corpus.brain.settings)
    for op in OPERATIONS:
        if op.read_only:
            annotations = ToolAnnotations(read_only_hint=True, open_world_hint=op.name == "ask" and remote_ask)
        else:
            annotations = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                          open_world_hint=False)
        server.add_tool(_tool_function(corpus, op), name=op.mcp_tool, description=f"{op.summary} {op.description}",
                        annotations=annotations)
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
