"""`brain` on the command line: parse, call the core API, render. Nothing else lives here."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from .errors import BrainError

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        sys.stderr.write(f"brain: {message} (see `{self.prog} --help`)\n")
        raise SystemExit(EXIT_USAGE)


def _common(parser: argparse.ArgumentParser) -> None:
    # Accepted before or after the command; SUPPRESS keeps a later default from hiding an earlier value.
    parser.add_argument("--root", default=argparse.SUPPRESS, help="notes folder (default: BRAIN_ROOT, the git top-level, or the current folder)")
    parser.add_argument("--config", default=argparse.SUPPRESS, help="settings file (default: BRAIN_CONFIG or <root>/brain.toml)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="brain", description="A local memory for your notes: hybrid keyword + semantic search.")
    _common(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    p = commands.add_parser("index", help="index the notes folder (adds, updates, moves, removes)")
    _common(p)
    p.add_argument("--yes", "-y", action="store_true", help="do not ask (accepted for the seed's index_brain.py)")
    p.add_argument("--full", action="store_true", help="rebuild into a new database and swap it in")
    p.add_argument("--json", action="store_true", help="print the scan report as JSON")

    p = commands.add_parser("reindex", help="re-index the named files only")
    _common(p)
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("search", help="find the notes that talk about QUERY")
    _common(p)
    p.add_argument("query", nargs="+", metavar="QUERY")
    p.add_argument("--mode", choices=("hybrid", "bm25", "vector"), default=None)
    p.add_argument("-k", "--limit", type=int, default=None, help="number of results (default 10)")
    p.add_argument("--vector-weight", type=float, default=None, help="weight of the semantic half in hybrid mode (0-1)")
    p.add_argument("--path", default=None, metavar="PREFIX", help="only files under this path")
    p.add_argument("--where", action="append", default=[], metavar="KEY=VALUE", help="frontmatter filter, e.g. status!=archived")
    p.add_argument("--chunks", action="store_true", help="list chunks instead of one result per file")
    p.add_argument("--explain", action="store_true", help="show how each score was made")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--format", choices=("text", "json", "markdown"), default=None)

    p = commands.add_parser("stats", help="what the index holds")
    _common(p)
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("config", help="show or change settings")
    _common(p)
    config_commands = p.add_subparsers(dest="config_command", metavar="ACTION", parser_class=_Parser)
    config_commands.required = True
    show = config_commands.add_parser("show", help="effective settings and where each came from")
    _common(show)
    show.add_argument("--json", action="store_true")
    setter = config_commands.add_parser("set", help="write KEY = VALUE into brain.toml, keeping everything else")
    _common(setter)
    setter.add_argument("key")
    setter.add_argument("value")
    _add_front_door_commands(commands)
    return parser


def _add_front_door_commands(commands: Any) -> None:
    """`brain claude install`, `brain mcp`, `brain serve`: the doors for agents and programs."""
    p = commands.add_parser("claude", help="Claude Code integration (the /memory-search slash command)")
    _common(p)
    claude_commands = p.add_subparsers(dest="claude_command", metavar="ACTION", parser_class=_Parser)
    claude_commands.required = True
    install = claude_commands.add_parser("install", help="write .claude/commands/memory-search.md into the notes folder")
    _common(install)
    install.add_argument("--force", action="store_true", help="replace a different existing memory-search.md")
    install.add_argument("--json", action="store_true")

    p = commands.add_parser("mcp", help="serve the notes to MCP clients (Claude Code, Claude Desktop) over stdio")
    _common(p)

    p = commands.add_parser("serve", help="serve the notes over HTTP (JSON API, OpenAPI docs at /docs)")
    _common(p)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; others need BRAIN_HTTP_TOKEN)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    p.add_argument("--corpus", action="append", default=[], metavar="NAME=PATH", help="also serve this notes folder at /c/NAME/ (repeatable)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME", help="another Host name clients use to reach the server")


def _brain(args: argparse.Namespace, progress: bool = False) -> Any:
    from .api import Brain

    return Brain(getattr(args, "root", None), getattr(args, "config", None), show_progress=progress)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `brain` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except BrainError as exc:
        sys.stderr.write(f"brain: {exc}\n")
        return EXIT_USAGE if exc.usage else EXIT_FAILURE
    except KeyboardInterrupt:
        sys.stderr.write("brain: interrupted; every file finished before the interrupt stays indexed\n")
        return 130
    except BrokenPipeError:
        return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    from . import render

    if args.command == "index":
        report = _brain(args, progress=sys.stderr.isatty() and not args.json).index(full=args.full)
        print(render.scan_json(report) if args.json else render.scan_text(report))
        return EXIT_OK
    if args.command == "reindex":
        report = _brain(args).reindex(args.paths)
        print(render.scan_json(report) if args.json else render.scan_text(report))
        return EXIT_FAILURE if report.failed else EXIT_OK
    if args.command == "search":
        fmt = "json" if args.json else (args.format or "text")
        brain = _brain(args)
        response = brain.search(
            " ".join(args.query),
            mode=args.mode,
            limit=args.limit,
            vector_weight=args.vector_weight,
            path_prefix=args.path,
            where=args.where,
            chunks=args.chunks,
        )
        print(render.search(response, fmt, explain=args.explain))
        return EXIT_OK
    if args.command == "stats":
        data = _brain(args).stats()
        print(render.as_json(data) if args.json else render.stats_text(data))
        return EXIT_OK
    if args.command == "config":
        brain = _brain(args)
        if args.config_command == "show":
            rows = brain.config_rows()
            print(render.as_json(rows) if args.json else render.config_text(rows, brain.settings.config_path))
            return EXIT_OK
        value = brain.config_set(args.key, args.value)
        print(f"{args.key} = {value!r}")
        return EXIT_OK
    if args.command in ("claude", "mcp", "serve"):
        return _run_front_door(args)
    raise BrainError(f"unknown command {args.command!r}", usage=True)


def _run_front_door(args: argparse.Namespace) -> int:
    import os

    from . import render
    from .config import find_root

    root = getattr(args, "root", None)
    if args.command == "claude":
        from .claude_command import install

        result = install(find_root(root), force=args.force)
        print(render.as_json(result.to_dict()) if args.json else f"{result.action}: {result.path}")
        return EXIT_OK

    from .served import DEFAULT_CORPUS, Corpora, parse_corpus

    # The --root folder (or BRAIN_ROOT, or the one around the cwd) is the default corpus,
    # unless only --corpus folders are named: then the first of them is.
    corpora = Corpora()
    named = [parse_corpus(text) for text in getattr(args, "corpus", [])]
    if root is not None or os.environ.get("BRAIN_ROOT") or not named:
        corpora.add(DEFAULT_CORPUS, find_root(root), getattr(args, "config", None), default=True)
    for name, path in named:
        corpora.add(name, path)
    if args.command == "mcp":
        from .mcp_server import serve_stdio

        serve_stdio(corpora.default)
        return EXIT_OK
    from .http_server import serve

    serve(corpora, host=args.host, port=args.port, allow_hosts=args.allow_host)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
