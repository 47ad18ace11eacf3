"""`brain` on the command line: parse, call the core API, render. Nothing else lives here."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sqlite3
import sys
from typing import Any, Sequence

from .errors import BrainError, user_error

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
    p.add_argument("query", nargs="+", metavar="QUERY", help="words to search for (`-`: read the query from stdin)")
    p.add_argument("--mode", choices=("hybrid", "bm25", "vector"), default=None)
    p.add_argument("-k", "--limit", type=int, default=None, help="number of results (default 10)")
    p.add_argument("--vector-weight", type=float, default=None, help="weight of the semantic half in hybrid mode (0-1)")
    p.add_argument("--path", default=None, metavar="PREFIX", help="only files under this path")
    p.add_argument("--where", action="append", default=[], metavar="KEY=VALUE", help="frontmatter filter, e.g. status!=archived")
    p.add_argument("--chunks", action="store_true", help="list chunks instead of one result per file")
    p.add_argument("--explain", action="store_true", help="show how each score was made")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--format", choices=("text", "json", "markdown"), default=None)
    p.add_argument("--excerpt-chars", type=int, default=None, metavar="N",
                   help="also give each hit the relevant excerpt of the file (about N chars) and its full length")

    p = commands.add_parser("ask", help="answer QUESTION from the notes with a language model")
    _common(p)
    p.add_argument("question", nargs="+", metavar="QUESTION")
    p.add_argument("--budget", type=int, default=None, metavar="CHARS", help="characters per file sent to the model (default 8000)")
    p.add_argument("-k", "--max-files", type=int, default=None, metavar="N", help="files sent to the model (default 5)")
    p.add_argument("--model", default=None, help="model name for this call (default: ask.model)")
    p.add_argument("--show-prompt", action="store_true", help="print exactly what would be sent; call nothing")
    p.add_argument("--json", action="store_true", help="print JSON (sources, messages, answer)")

    p = commands.add_parser("grep", help="regular expression (RE2) over the text of every indexed file")
    _common(p)
    p.add_argument("pattern", metavar="PATTERN")
    p.add_argument("--file", default=None, metavar="PATH", help="only this indexed file (or the indexed files under this folder)")
    p.add_argument("-C", "--context", type=int, default=0, metavar="N", help="lines of context around each match")
    p.add_argument("--case-sensitive", action="store_true", help="match case exactly (default: ignore case)")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="most matches to show (default 50, at most 500)")
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("get", help="the extracted text of an indexed file, or a byte range of it")
    _common(p)
    p.add_argument("path", metavar="PATH")
    p.add_argument("--offset", type=int, default=None, metavar="N", help="first byte (UTF-8, as grep reports)")
    p.add_argument("--length", type=int, default=None, metavar="N", help="bytes to return (default 4000 with --offset)")
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("eval", help="measure retrieval quality on a judged collection, per search mode")
    _common(p)
    p.add_argument("collection", nargs="?", metavar="FOLDER", help="a BEIR-layout folder (corpus.jsonl[.gz], queries.jsonl, qrels/)")
    p.add_argument("--split", default="test", help="qrels split to use: qrels/SPLIT.tsv (default test)")
    p.add_argument("--notes", metavar="DIR", help="evaluate a notes folder instead, with --queries")
    p.add_argument("--queries", metavar="FILE", help='JSONL: {"query": ..., "relevant": [paths], "kind"?, "path"?} per line; with a FOLDER, relevant are corpus ids')
    p.add_argument("--modes", metavar="LIST", help="comma-separated: bm25,vector,hybrid,hybrid:rrf,… (default: all)")
    p.add_argument("--vector-weight", type=float, default=None, help="weight of the semantic half in hybrid modes (0-1)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a setting, e.g. search.candidates=100")
    p.add_argument("--limit-queries", type=int, default=None, metavar="N", help="only N queries, spread evenly over the set")
    p.add_argument("--workdir", default=None, metavar="DIR", help="where documents and indexes are cached (default ~/.cache/brain/eval)")
    p.add_argument("--per-query", action="store_true", help="with --json: every query's scores too")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")

    p = commands.add_parser("stats", help="what the index holds")
    _common(p)
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("status", help="how fresh the index is: stale, missing, orphaned files; commits; rebuilds")
    _common(p)
    p.add_argument("--verify", action="store_true", help="hash every file instead of comparing size and time")
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = commands.add_parser("sync", help="catch the index up with git: re-index what changed since the last indexed commit")
    _common(p)
    p.add_argument("--hook", default=None, metavar="NAME", help="run as the git hook NAME (one log line; merges with a waiting run)")
    p.add_argument("--detach", action="store_true", help=argparse.SUPPRESS)  # the hook's background run: own session
    p.add_argument("--json", action="store_true", help="print the sync report as JSON")

    p = commands.add_parser("hooks", help="install or remove the git hooks that keep the index fresh")
    _common(p)
    hook_commands = p.add_subparsers(dest="hooks_command", metavar="ACTION", parser_class=_Parser)
    hook_commands.required = True
    install = hook_commands.add_parser("install", help="install post-commit, post-merge, post-rewrite and post-checkout")
    _common(install)
    install.add_argument("--sync", action="store_true", help="re-index in the foreground (git waits) instead of in the background")
    install.add_argument("--hook", action="append", default=[], metavar="NAME", help="only this hook (repeatable)")
    install.add_argument("--json", action="store_true")
    uninstall = hook_commands.add_parser("uninstall", help="remove brain's hooks and restore the ones they replaced")
    _common(uninstall)
    uninstall.add_argument("--hook", action="append", default=[], metavar="NAME", help="only this hook (repeatable)")
    uninstall.add_argument("--json", action="store_true")

    p = commands.add_parser("watch", help="re-index notes as they are saved (runs until Ctrl-C)")
    _common(p)
    p.add_argument("--debounce", type=float, default=1.5, metavar="SECONDS", help="quiet time before a burst of writes is indexed (default 1.5)")

    p = commands.add_parser("schedule", help="rebuild the index every night (runs until Ctrl-C)")
    _common(p)
    p.add_argument("--at", default="03:00", metavar="HH:MM", help="local time of the daily rebuild (default 03:00)")
    p.add_argument("--once", action="store_true", help="rebuild once now, log it like a scheduled run, and exit")

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
    # One query is far too small to gain from BLAS threads, and on a busy machine their
    # spin-waiting made a whole `brain search` twice as slow (1.1 s vs 0.6 s). Must be set
    # before numpy loads; torch (indexing) keeps its own threads.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except BrainError as exc:
        from .render import shown

        sys.stderr.write(f"brain: {shown(str(exc))}\n")  # one line, whatever names the message quotes
        return EXIT_USAGE if exc.usage else EXIT_FAILURE
    except (OSError, sqlite3.Error, UnicodeError) as exc:
        # A full disk, a read-only index, a name too long: one line, not a traceback.
        known = user_error(exc)
        if known is None or isinstance(exc, BrokenPipeError):
            raise
        sys.stderr.write(f"brain: {known}\n")
        return EXIT_USAGE if known.usage else EXIT_FAILURE
    except KeyboardInterrupt as exc:
        # A rebuild says what is true of its index (Interrupted); a scan keeps every file it finished.
        said = str(exc) or "interrupted; every file finished before the interrupt stays indexed"
        sys.stderr.write(f"brain: {said}\n")
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
            _query_text(args.query),
            mode=args.mode,
            limit=args.limit,
            vector_weight=args.vector_weight,
            path_prefix=args.path,
            where=args.where,
            chunks=args.chunks,
            excerpt_chars=args.excerpt_chars,
        )
        print(render.search(response, fmt, explain=args.explain))
        return EXIT_OK
    if args.command == "ask":
        return _ask(args)
    if args.command == "grep":
        from .grep import DEFAULT_LIMIT

        response = _brain(args).grep(
            args.pattern,
            file=args.file,
            context=args.context,
            limit=DEFAULT_LIMIT if args.limit is None else args.limit,
            case_sensitive=args.case_sensitive,
        )
        if args.json:
            print(render.as_json(response.to_dict()))
        elif response.matches:
            print(render.grep_text(response))
        for note in render.grep_notes(response):
            sys.stderr.write(f"brain: {note}\n")
        return EXIT_OK
    if args.command == "get":
        from .grep import DEFAULT_LENGTH

        whole = args.offset is None and args.length is None
        part = _brain(args).get_file(
            args.path,
            offset=args.offset or 0,
            length=None if whole else (DEFAULT_LENGTH if args.length is None else args.length),
        )
        if args.json:
            print(render.as_json(part.to_dict()))
        else:
            sys.stderr.write(render.range_header(part) + "\n")
            sys.stdout.write(part.text + ("" if part.text.endswith("\n") else "\n"))
        return EXIT_OK
    if args.command == "eval":
        from . import evaluation

        report = evaluation.evaluate(
            evaluation.load_collection(
                args.collection,
                split=args.split,
                notes=args.notes,
                queries=args.queries,
                workdir=args.workdir,
                config=getattr(args, "config", None),
                overrides=args.set,
                limit_queries=args.limit_queries,
            ),
            modes=args.modes,
            vector_weight=args.vector_weight,
            show_progress=not args.json and not args.markdown and sys.stderr.isatty(),
            per_query=args.per_query,
        )
        print(render.as_json(report.to_dict(args.per_query)) if args.json else render.eval_table(report, markdown=args.markdown))
        return EXIT_OK
    if args.command == "stats":
        data = _brain(args).stats()
        print(render.as_json(data) if args.json else render.stats_text(data))
        return EXIT_OK
    if args.command == "status":
        status = _brain(args).status(verify=args.verify)
        print(render.as_json(status.to_dict()) if args.json else render.status_text(status))
        return EXIT_OK if status.clean else EXIT_FAILURE
    if args.command == "sync":
        return _sync(args)
    if args.command == "hooks":
        brain = _brain(args)
        if args.hooks_command == "install":
            actions = brain.install_hooks(mode="sync" if args.sync else "background", names=args.hook)
        else:
            actions = brain.uninstall_hooks(names=args.hook)
        print(render.as_json([a.to_dict() for a in actions]) if args.json else render.hook_actions_text(actions))
        return EXIT_OK
    if args.command == "watch":
        brain = _brain(args)
        if args.debounce < 0:
            raise BrainError(f"--debounce {args.debounce} must be ≥ 0 seconds", usage=True)
        watcher = brain.watcher(debounce=args.debounce)
        log_path = _log_to(brain.settings.root, "watch")
        logger = logging.getLogger("brain.watch")
        logger.info("watching %s (log: %s); Ctrl-C stops", ", ".join(map(str, brain.settings.root_dirs)), log_path)
        watcher.run(_stop_on_signals())
        logger.info("stopped")
        return EXIT_OK
    if args.command == "schedule":
        brain = _brain(args)
        nightly = brain.nightly(at=args.at)
        _log_to(brain.settings.root, "schedule")
        if args.once:
            return EXIT_OK if nightly.run_once() else EXIT_FAILURE
        nightly.run(_stop_on_signals())
        logging.getLogger("brain.schedule").info("stopped")
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


def _query_text(words: Sequence[str]) -> str:
    """The query: the words joined, or stdin when the only word is `-`.

    `-` lets the slash command hand over what a person typed through a quoted
    heredoc, which no shell expands; a command line would run its `$(…)`.
    """
    if list(words) != ["-"]:
        return " ".join(words)
    from .search import MAX_QUERY_CHARS

    text = sys.stdin.read(MAX_QUERY_CHARS + 2)  # one over the limit is enough for the error to say so
    return text[:-1] if text.endswith("\n") else text


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


def _ask(args: argparse.Namespace) -> int:
    from . import render

    streaming = not args.json and not args.show_prompt

    def write(token: str) -> None:
        sys.stdout.write(token)
        sys.stdout.flush()

    result = _brain(args).ask(
        " ".join(args.question),
        budget=args.budget,
        max_files=args.max_files,
        model=args.model,
        show_prompt=args.show_prompt,
        on_token=write if streaming else None,
    )
    if args.json:
        data = result.to_dict()
        if args.show_prompt:
            data["request"] = result.request()
        print(render.as_json(data))
    elif args.show_prompt:
        print(render.ask_prompt(result))
    elif result.answer is None:
        print(render.ask_sources(result))
    else:
        if not result.answer.endswith("\n"):
            sys.stdout.write("\n")
        sent = ", ".join(s.path for s in result.sources)
        sys.stderr.write(f"brain: answered by {result.model} from {len(result.sources)} files: {sent}\n")
    return EXIT_OK
def _stop_on_signals() -> Any:
    """An Event set by Ctrl-C or SIGTERM (systemd, launchd, kill), so a long run ends cleanly."""
    import signal
    import threading

    stop = threading.Event()

    def on_signal(number: int, _frame: Any) -> None:
        stop.set()
        # A second signal ends the process at once (SIGTERM's default; Ctrl-C's
        # KeyboardInterrupt) instead of waiting for the re-index in progress.
        signal.signal(number, signal.default_int_handler if number == signal.SIGINT else signal.SIG_DFL)

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, on_signal)
    return stop


def _log_to(root: Any, name: str) -> Any:
    """Log brain.<name> to stderr and to <root>/.brain/<name>.log, one timestamped line per event."""
    folder = root / ".brain"
    folder.mkdir(exist_ok=True)
    if not (folder / ".gitignore").exists():
        (folder / ".gitignore").write_text("*\n", encoding="utf-8")
    path = folder / f"{name}.log"
    formatter = logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%dT%H:%M:%S%z")
    logger = logging.getLogger(f"brain.{name}")
    logger.setLevel(logging.INFO)
    for handler in (logging.StreamHandler(sys.stderr), _LogFile(path)):
        handler.setFormatter(formatter)
        logger.addHandler(handler)
    return path


class _LogFile(logging.FileHandler):
    """The log file beside the index. A line it cannot write (a full disk) went to stderr
    anyway: say so once, in one line, instead of logging's traceback for every line."""

    def __init__(self, path: Any) -> None:
        super().__init__(path, encoding="utf-8", delay=True)
        self.failed = False

    def handleError(self, record: logging.LogRecord) -> None:
        if not self.failed:
            self.failed = True
            error = sys.exc_info()[1]
            reason = getattr(error, "strerror", None) or error
            sys.stderr.write(f"brain: cannot write {self.baseFilename} ({reason}); this run is logged on stderr only\n")


def _sync(args: argparse.Namespace) -> int:
    """`brain sync`; as a hook (--hook) every outcome, errors included, is one timestamped log line on stdout."""
    import time

    from . import render

    if args.detach:
        with contextlib.suppress(OSError):
            os.setsid()  # leave git's session: no terminal signal reaches the background run
    try:
        brain = _brain(args)
        report = brain.sync(hook=args.hook, queue=bool(args.hook))
    except BaseException as exc:
        if not args.hook:
            raise
        when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        if isinstance(exc, BrainError):
            print(f"{when} {args.hook}: failed: {exc}", flush=True)
        else:
            import traceback

            print(f"{when} {args.hook}: failed: {type(exc).__name__}: {exc}\n{traceback.format_exc().rstrip()}", flush=True)
        return EXIT_FAILURE
    print(render.as_json(report.to_dict()) if args.json else render.sync_text(report), flush=True)
    if args.hook:
        from .gitsync import HOOK_LOG, rotate_log

        rotate_log(brain.settings.root / ".brain" / HOOK_LOG)
    return EXIT_OK if report.ok else EXIT_FAILURE


if __name__ == "__main__":
    raise SystemExit(main())
