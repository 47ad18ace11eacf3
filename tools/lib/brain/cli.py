"""`brain` on the command line (click): parse, call the core API, render. Nothing else lives here.

The commands that are also MCP tools and HTTP endpoints (search, grep, get, ask,
index, status, stats) get their arguments and options from `operations`, so the
three doors take the same names, defaults and limits. Heavy modules load inside
the commands: `brain --help` imports neither numpy nor the model nor the servers.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import sys
from typing import Any, Callable, Sequence

import click

from .errors import BrainError, user_error
from .operations import Operation, Param, operation
from .terminal import COLOR_CHOICES

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2

COMPLETION_HELP = (
    "Shell completion: add `eval \"$(_BRAIN_COMPLETE=bash_source brain)\"` to ~/.bashrc "
    "(zsh: zsh_source in ~/.zshrc; fish: `_BRAIN_COMPLETE=fish_source brain | source`)."
)


# ------------------------------------------------------------------ shared options


def _remember(name: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """Keep --root/--config wherever they were given: before the command or after it (the later wins)."""

    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value is not None:
            ctx.ensure_object(dict)
            ctx.find_root().ensure_object(dict)[name] = value
        return value

    return callback


def _location_options(function: Callable[..., Any]) -> Callable[..., Any]:
    function = click.option(
        "--config", metavar="FILE", expose_value=False, is_eager=True, callback=_remember("config"),
        help="Settings file (default: BRAIN_CONFIG, else brain.toml in the notes folder).",
    )(function)
    return click.option(
        "--root", metavar="FOLDER", expose_value=False, is_eager=True, callback=_remember("root"),
        help="Notes folder (default: BRAIN_ROOT, else the nearest folder with brain.toml or .brain/, "
        "else the git top-level, else the current folder).",
    )(function)


def _location() -> tuple[str | None, str | None]:
    state = click.get_current_context().find_root().obj or {}
    return state.get("root"), state.get("config")


def _brain(progress: bool = False) -> Any:
    from .api import Brain

    root, config = _location()
    return Brain(root, config, show_progress=progress)


def _json_option(function: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(function)


def _help(text: str, examples: Sequence[str] = ()) -> str:
    """A command's help: its paragraph, then examples kept as written (click's \\b stops re-wrapping)."""
    if not examples:
        return text
    return text + "\n\n\b\nExamples:\n" + "\n".join(f"  {line}" for line in examples)


# ------------------------------------------------------------------ options from the operations table


def _click_type(param: Param) -> Any:
    if param.choices:
        return click.Choice(param.choices)
    if param.kind == "int":
        return click.IntRange(_int(param.minimum), _int(param.maximum))
    if param.kind == "float":
        return click.FloatRange(param.minimum, param.maximum)
    return click.STRING


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _click_param(param: Param) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    if param.required:
        # A query or question may be typed without quotes: its words are joined with spaces.
        words = param.name in ("query", "question")
        return click.argument(param.name, metavar=param.metavar, nargs=-1 if words else 1, required=True)
    if param.kind == "bool":
        return click.option(*param.cli_flags, param.name, is_flag=True, default=False, help=param.help)
    return click.option(
        *param.cli_flags,
        param.name,
        type=_click_type(param),
        default=None if param.kind == "list" else param.default,
        multiple=param.kind == "list",
        metavar=param.metavar,
        show_default=param.default not in (None, False, ()),
        # A list is a JSON array to MCP and HTTP; on the command line it is the flag given again.
        help=param.help + (" Repeat the flag for several." if param.kind == "list" else ""),
    )


def operation_command(name: str) -> Callable[[Callable[..., Any]], click.Command]:
    """A click command for operation `name`: its help, examples and every parameter come from `operations`."""
    op = operation(name)

    def decorate(function: Callable[..., Any]) -> click.Command:
        for param in reversed(op.params):
            function = _click_param(param)(function)
        function = _location_options(function)
        return cli.command(name, help=_help(op.description, op.examples), short_help=op.summary)(function)

    return decorate


def _query_text(words: str) -> str:
    """The query: the words given, or stdin when the only word is `-`.

    `-` lets the slash command hand over what a person typed through a quoted
    heredoc, which no shell expands; a command line would run its `$(…)`.
    """
    if words != "-":
        return words
    from .limits import MAX_QUERY_CHARS

    text = sys.stdin.read(MAX_QUERY_CHARS + 2)  # one over the limit is enough for the error to say so
    return text[:-1] if text.endswith("\n") else text


def operation_arguments(op: Operation, given: dict[str, Any]) -> dict[str, Any]:
    """The values click parsed, as the core API takes them (words joined, repeated flags as a list)."""
    values: dict[str, Any] = {}
    for param in op.params:
        value = given.pop(param.name)
        if param.required and isinstance(value, tuple):
            value = " ".join(value)
        elif param.kind == "list":
            value = list(value or ())
        values[param.name] = value
    return values


# ------------------------------------------------------------------ the group


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    help="A local memory for your notes: hybrid keyword + semantic search over Markdown, text and PDF, "
    "in Italian and English, kept fresh by git hooks. Run `brain index` in your notes folder, then "
    "`brain search WORDS`.\n\n" + COMPLETION_HELP
    + "\n\n\b\nExamples:\n  brain index\n  brain search \"progetti Laravel per la clinica\"\n  brain search --help",
)
@click.version_option(package_name="brain-search", prog_name="brain", message="%(prog)s %(version)s")
@_location_options
def cli() -> None:
    pass


# A first index of more notes than this asks first (a home folder given by mistake would take hours).
HUGE_FOLDER_NOTES = 20_000


@operation_command("index")
@_json_option
@click.option("--yes", "-y", is_flag=True,
              help=f"Do not ask before a first index of more than {HUGE_FOLDER_NOTES:,} notes (for scripts).")
def index_command(full: bool, as_json: bool, yes: bool) -> int:
    from . import render

    brain = _brain(progress=sys.stderr.isatty() and not as_json)
    if not yes:
        _confirm_a_huge_first_index(brain)
    report = brain.index(full=full)
    click.echo(render.scan_json(report) if as_json else render.scan_text(report))
    return EXIT_OK


def _confirm_a_huge_first_index(brain: Any) -> None:
    """Before a first index of more than HUGE_FOLDER_NOTES notes: ask on a terminal, else refuse without --yes."""
    from .sources import discover
    from .store import index_exists

    if index_exists(brain.settings):
        return
    count = len(discover(brain.settings).files)
    if count <= HUGE_FOLDER_NOTES:
        return
    what = f"{brain.root} holds {count:,} notes to index, more than {HUGE_FOLDER_NOTES:,}"
    if sys.stdin.isatty() and sys.stderr.isatty():
        if click.confirm(f"brain: {what}; index them all?", default=False, err=True):
            return
        raise BrainError("nothing indexed; pass --root with the notes folder you meant, or `roots` in brain.toml")
    raise BrainError(f"{what}: is this the folder you meant? Pass --yes to index it anyway, or --root with the "
                     "notes folder", usage=True)


@cli.command("reindex")
@_location_options
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@_json_option
def reindex_command(paths: tuple[str, ...], as_json: bool) -> int:
    """Re-index the named files only (a file that is gone leaves the index).

    \b
    Examples:
      brain reindex diary/2026-11-30.md
      brain reindex projects/clinic.md decisions/db.md --json
    """
    from . import render

    report = _brain().reindex(list(paths))
    click.echo(render.scan_json(report) if as_json else render.scan_text(report))
    return EXIT_FAILURE if report.failed else EXIT_OK


_color_option = click.option(
    "--color", type=click.Choice(COLOR_CHOICES), default="auto", show_default=True,
    help="Clickable paths and highlighted words in the text view: auto is on a terminal unless NO_COLOR is set.")


@operation_command("search")
@_json_option
@click.option("--format", "fmt", type=click.Choice(("text", "json", "markdown")), default=None,
              help="Output format (default text; --json is --format json).")
@_color_option
def search_command(as_json: bool, fmt: str | None, color: str, **given: Any) -> int:
    from . import render
    from .terminal import Style, wants_escapes

    options = operation_arguments(operation("search"), given)
    brain = _brain()
    response = brain.search(_query_text(options.pop("query")), **options)
    style = Style(brain.root) if wants_escapes(color, sys.stdout) else Style.plain()
    # color=: click would strip the escapes of `--color always` into a pipe.
    click.echo(render.search(response, "json" if as_json else (fmt or "text"), style), color=style.on)
    return EXIT_OK


@operation_command("ask")
@_json_option
def ask_command(as_json: bool, **given: Any) -> int:
    from . import render

    options = operation_arguments(operation("ask"), given)
    streaming = not as_json and not options["show_prompt"]

    def write(token: str) -> None:
        sys.stdout.write(token)
        sys.stdout.flush()

    result = _brain().ask(options.pop("question"), on_token=write if streaming else None, **options)
    if as_json:
        data = result.to_dict()
        if options["show_prompt"]:
            data["request"] = result.request()
        click.echo(render.as_json(data))
    elif options["show_prompt"]:
        click.echo(render.ask_prompt(result))
    elif result.answer is None:
        click.echo(render.ask_sources(result))
    else:
        if not result.answer.endswith("\n"):
            sys.stdout.write("\n")
        sent = ", ".join(s.path for s in result.sources)
        sys.stderr.write(f"brain: answered by {result.model} from {len(result.sources)} files: {sent}\n")
    return EXIT_OK


@operation_command("grep")
@_json_option
@_color_option
def grep_command(as_json: bool, color: str, **given: Any) -> int:
    from . import render
    from .terminal import Style, wants_escapes

    options = operation_arguments(operation("grep"), given)
    brain = _brain()
    response = brain.grep(options.pop("pattern"), **options)
    if as_json:
        click.echo(render.as_json(response.to_dict()))
    elif response.matches:
        style = Style(brain.root) if wants_escapes(color, sys.stdout) else Style.plain()
        click.echo(render.grep_text(response, style), color=style.on)
    for note in render.grep_notes(response):
        sys.stderr.write(f"brain: {note}\n")
    return EXIT_OK if response.matches else EXIT_FAILURE  # as grep and ripgrep: 1 when nothing matches


@operation_command("get")
@_json_option
def get_command(as_json: bool, **given: Any) -> int:
    from . import render

    options = operation_arguments(operation("get"), given)
    part = _brain().get_file(options.pop("path"), **options)
    if as_json:
        click.echo(render.as_json(part.to_dict()))
    else:
        sys.stderr.write(render.range_header(part) + "\n")
        sys.stdout.write(part.text + ("" if part.text.endswith("\n") else "\n"))
    return EXIT_OK


@operation_command("links")
@_json_option
def links_command(as_json: bool, **given: Any) -> int:
    from . import render

    options = operation_arguments(operation("links"), given)
    response = _brain().links(options.pop("path"))
    click.echo(render.as_json(response.to_dict()) if as_json else render.links_text(response))
    return EXIT_OK


@operation_command("related")
@_json_option
def related_command(as_json: bool, **given: Any) -> int:
    from . import render

    options = operation_arguments(operation("related"), given)
    response = _brain().related(options.pop("path"), **options)
    click.echo(render.as_json(response.to_dict()) if as_json else render.related_text(response))
    return EXIT_OK


@operation_command("stats")
@_json_option
def stats_command(as_json: bool) -> int:
    from . import render

    data = _brain().stats()
    click.echo(render.as_json(data) if as_json else render.stats_text(data))
    return EXIT_OK


@operation_command("status")
@_json_option
def status_command(verify: bool, as_json: bool) -> int:
    from . import render

    status = _brain().status(verify=verify)
    click.echo(render.as_json(status.to_dict()) if as_json else render.status_text(status))
    return EXIT_OK if status.clean else EXIT_FAILURE


@cli.command("eval")
@_location_options
@click.argument("collection", required=False, metavar="FOLDER")
@click.option("--split", default="test", show_default=True, help="Which judgements to use: qrels/SPLIT.tsv.")
@click.option("--notes", metavar="FOLDER", help="Evaluate a notes folder instead, with --queries.")
@click.option("--queries", metavar="FILE",
              help='JSONL, one {"query", "relevant": [paths], "kind"?, "path"?} per line; with a FOLDER, '
              "relevant are corpus ids.")
@click.option("--modes", metavar="LIST", help="Comma-separated: bm25,vector,hybrid,hybrid:rrf,… (default: all).")
@click.option("--vector-weight", type=click.FloatRange(0, 1), metavar="W",
              help="Share of meaning in hybrid modes (0-1).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a setting, e.g. search.candidates=100.")
@click.option("--limit-queries", type=click.IntRange(1), metavar="N",
              help="Only N queries, spread evenly over the set.")
@click.option("--workdir", metavar="FOLDER",
              help="Where documents and indexes are cached (default ~/.cache/brain/eval).")
@click.option("--per-query", is_flag=True, help="With --json: every query's scores too.")
@_json_option
@click.option("--markdown", is_flag=True, help="Print a Markdown table.")
def eval_command(collection: str | None, split: str, notes: str | None, queries: str | None, modes: str | None,
                 vector_weight: float | None, overrides: tuple[str, ...], limit_queries: int | None,
                 workdir: str | None, per_query: bool, as_json: bool, markdown: bool) -> int:
    """Measure retrieval quality (nDCG@10, MRR, P@5, R@5) on a judged collection, per search mode.

    FOLDER is a test collection in BEIR layout (corpus.jsonl[.gz], queries.jsonl, qrels/); or give a
    notes folder with --notes and its judged queries with --queries. Documents are indexed once into
    --workdir and reused. Needs the eval extra: pip install 'brain-search[eval]'.

    \b
    Examples:
      brain eval ../shared/data/scifact --split test --markdown
      brain eval --notes examples/agency --queries tools/bench/judged/agency.jsonl --markdown
    """
    from . import evaluation, render

    report = evaluation.evaluate(
        evaluation.load_collection(
            collection, split=split, notes=notes, queries=queries, workdir=workdir, config=_location()[1],
            overrides=list(overrides), limit_queries=limit_queries,
        ),
        modes=modes,
        vector_weight=vector_weight,
        show_progress=not as_json and not markdown and sys.stderr.isatty(),
        per_query=per_query,
    )
    click.echo(render.as_json(report.to_dict(per_query)) if as_json else render.eval_table(report, markdown=markdown))
    return EXIT_OK


@cli.command("sync")
@_location_options
@click.option("--hook", metavar="NAME", help="Run as the git hook NAME: one log line; merges with a waiting run.")
@click.option("--detach", is_flag=True, hidden=True)  # the hook's background run: its own session
@_json_option
def sync_command(hook: str | None, detach: bool, as_json: bool) -> int:
    """Catch the index up with git: re-index what changed since the last indexed commit.

    This is what the git hooks run after a commit, merge, rebase or checkout; run it by hand after
    pulling with hooks off.

    \b
    Examples:
      brain sync
      brain sync --json
    """

    from . import render

    if detach:
        with contextlib.suppress(OSError):
            os.setsid()  # leave git's session: no terminal signal reaches the background run
    try:
        brain = _brain()
        report = brain.sync(hook=hook, queue=bool(hook))
    except BaseException as exc:
        if not hook:
            raise
        from .store import timestamp

        when = timestamp()
        if isinstance(exc, BrainError):
            print(f"{when} {hook}: failed: {exc}", flush=True)
        else:
            import traceback

            print(f"{when} {hook}: failed: {type(exc).__name__}: {exc}\n{traceback.format_exc().rstrip()}", flush=True)
        return EXIT_FAILURE
    print(render.as_json(report.to_dict()) if as_json else render.sync_text(report), flush=True)
    if hook:
        from .gitsync import HOOK_LOG, rotate_log

        rotate_log(brain.settings.root / ".brain" / HOOK_LOG)
    return EXIT_OK if report.ok else EXIT_FAILURE


@cli.group("hooks")
@_location_options
def hooks_group() -> None:
    """Install or remove the git hooks that keep the index fresh after every commit, merge and checkout.

    \b
    Examples:
      brain hooks install
      brain hooks uninstall
    """


@hooks_group.command("install")
@_location_options
@click.option("--sync", "foreground", is_flag=True,
              help="Re-index in the foreground (git waits) instead of in the background.")
@click.option("--hook", "names", multiple=True, metavar="NAME", help="Only this hook (repeatable).")
@_json_option
def hooks_install(foreground: bool, names: tuple[str, ...], as_json: bool) -> int:
    """Install post-commit, post-merge, post-rewrite and post-checkout (a hook already there is kept and chained).

    \b
    Examples:
      brain hooks install
      brain hooks install --hook post-commit --sync
    """
    from . import render

    actions = _brain().install_hooks(mode="sync" if foreground else "background", names=list(names))
    click.echo(render.as_json([a.to_dict() for a in actions]) if as_json else render.hook_actions_text(actions))
    return EXIT_OK


@hooks_group.command("uninstall")
@_location_options
@click.option("--hook", "names", multiple=True, metavar="NAME", help="Only this hook (repeatable).")
@_json_option
def hooks_uninstall(names: tuple[str, ...], as_json: bool) -> int:
    """Remove brain's hooks and restore the ones they replaced.

    \b
    Example:
      brain hooks uninstall
    """
    from . import render

    actions = _brain().uninstall_hooks(names=list(names))
    click.echo(render.as_json([a.to_dict() for a in actions]) if as_json else render.hook_actions_text(actions))
    return EXIT_OK


@cli.command("watch")
@_location_options
@click.option("--debounce", type=click.FloatRange(0), default=1.5, show_default=True, metavar="SECONDS",
              help="Quiet time before a burst of saves is indexed.")
def watch_command(debounce: float) -> int:
    """Re-index notes as they are saved, until Ctrl-C (logged to .brain/watch.log).

    \b
    Example:
      brain watch --debounce 3
    """
    brain = _brain()
    watcher = brain.watcher(debounce=debounce)
    log_path = _log_to(brain.log_path("watch"), "watch")
    logger = logging.getLogger("brain.watch")
    logger.info("watching %s (log: %s); Ctrl-C stops", ", ".join(map(str, brain.settings.root_dirs)), log_path)
    watcher.run(_stop_on_signals())
    logger.info("stopped")
    return EXIT_OK


@cli.command("schedule")
@_location_options
@click.option("--at", default="03:00", show_default=True, metavar="HH:MM", help="Local time of the daily rebuild.")
@click.option("--once", is_flag=True, help="Rebuild once now, log it like a scheduled run, and exit.")
def schedule_command(at: str, once: bool) -> int:
    """Rebuild the whole index every night, until Ctrl-C (logged to .brain/schedule.log).

    For a rebuild that survives reboots use cron, systemd or launchd instead: see HOOKS.md.

    \b
    Examples:
      brain schedule
      brain schedule --at 04:30
      brain schedule --once
    """
    brain = _brain()
    nightly = brain.nightly(at=at)
    _log_to(brain.log_path("schedule"), "schedule")
    if once:
        return EXIT_OK if nightly.run_once() else EXIT_FAILURE
    nightly.run(_stop_on_signals())
    logging.getLogger("brain.schedule").info("stopped")
    return EXIT_OK


@cli.group("config")
@_location_options
def config_group() -> None:
    """Show or change settings (defaults, then brain.toml, then BRAIN_* environment variables).

    \b
    Examples:
      brain config show
      brain config set search.limit 5
      brain config unset search.limit
    """


@config_group.command("show")
@_location_options
@_json_option
def config_show(as_json: bool) -> int:
    """Every setting, its effective value and where it came from.

    \b
    Example:
      brain config show
    """
    from . import render

    brain = _brain()
    rows = brain.config_rows()
    click.echo(render.as_json(rows) if as_json else render.config_text(rows, brain.settings.config_path))
    return EXIT_OK


@config_group.command("set")
@_location_options
@click.argument("key")
@click.argument("value")
def config_set(key: str, value: str) -> int:
    """Write KEY = VALUE into brain.toml, keeping its comments and every other key.

    \b
    Examples:
      brain config set search.stemmer italian
      brain config set ask.model gpt-4o-mini
    """
    return _edit_setting(key, value)


@config_group.command("unset")
@_location_options
@click.argument("key")
def config_unset(key: str) -> int:
    """Remove KEY from brain.toml (its default applies again), keeping its comments and every other key.

    KEY may be one brain does not know (a misspelt `serach.limit`) or a whole section (`serach`).

    \b
    Examples:
      brain config unset search.limit
      brain config unset serach
    """
    return _edit_setting(key, None)


def _edit_setting(key: str, value: str | None) -> int:
    """`config set` / `config unset`: the edit, then what is still wrong with the file (exit 1 until it is mended)."""
    from .api import edit_setting

    root, config = _location()
    edit = edit_setting(key, value, root=root, config=config)
    click.echo(f"{key} = {edit.value!r}" if value is not None else f"removed {key} from {edit.path.name}")
    if edit.problem:
        sys.stderr.write(f"brain: written, but still wrong: {edit.problem}\n")
        return EXIT_FAILURE
    return EXIT_OK


@cli.command("trust")
@_location_options
@click.option("--yes", "-y", is_flag=True, help="Approve without asking (for scripts; read the values first).")
@click.option("--revoke", is_flag=True, help="Forget this machine's approvals of the settings file.")
def trust_command(yes: bool, revoke: bool) -> int:
    """Approve the settings of brain.toml that send notes or credentials away from this machine.

    A brain.toml kept in a repository may be written by anyone who commits to
    it. These settings take effect from it only once you approve their exact
    values here: `store` (a PostgreSQL server that receives every note),
    `ask.model`, `ask.base_url` and `ask.api_key_env` (where `brain ask` sends
    excerpts, and which key it sends), and a `database` outside the notes
    folder. Until then brain uses their defaults and says so; a changed value
    asks again. `brain config set` approves what you type. Approvals are kept
    outside the repository, in ~/.config/brain/approved.json.

    \b
    Examples:
      brain trust
      brain trust --yes
      brain trust --revoke
    """
    from .api import Brain
    from .config import shown_value

    root, config = _location()
    brain = Brain(root, config, announce=False)
    path = brain.settings.config_path or (brain.root / "brain.toml")
    if revoke:
        count = brain.distrust()
        click.echo(f"forgot {count} approved value{'s' if count != 1 else ''} of {path}")
        return EXIT_OK
    held = brain.settings.unapproved
    if not held:
        click.echo(f"nothing to approve: {path} asks for no unapproved setting that sends notes or credentials away")
        return EXIT_OK
    click.echo(f"{path} asks for:")
    for key, value in held.items():
        click.echo(f"  {key} = {shown_value(key, value)!r}")
    if not yes:
        if not sys.stdin.isatty():
            raise BrainError("not on a terminal, so nothing was approved; read the values above and run "
                             "`brain trust --yes` to approve them", usage=True)
        if not click.confirm("Approve these values on this machine?", default=False):
            click.echo("nothing approved; brain keeps using the defaults for these settings")
            return EXIT_FAILURE
    approved = brain.trust()
    click.echo(f"approved {len(approved)} value{'s' if len(approved) != 1 else ''}; they take effect from now on")
    return EXIT_OK


@cli.group("claude")
@_location_options
def claude_group() -> None:
    """Claude Code integration: the /memory-search slash command, written into the notes folder.

    \b
    Example:
      brain claude install
    """


@claude_group.command("install")
@_location_options
@click.option("--force", is_flag=True, help="Replace a different memory-search.md that is already there.")
@_json_option
def claude_install(force: bool, as_json: bool) -> int:
    """Write .claude/commands/memory-search.md into the notes folder.

    \b
    Example:
      brain claude install
    """
    from . import render
    from .claude_command import install
    from .config import find_root

    result = install(find_root(_location()[0]), force=force)
    click.echo(render.as_json(result.to_dict()) if as_json else f"{result.action}: {result.path}")
    return EXIT_OK


@cli.command("mcp")
@_location_options
def mcp_command() -> int:
    """Serve the notes to MCP clients (Claude Code, Claude Desktop) over stdio.

    \b
    Example (Claude Code):
      claude mcp add brain -- brain --root ~/notes mcp
    """
    from .mcp_server import serve_stdio

    serve_stdio(_corpora([]).default)
    return EXIT_OK


@cli.command("serve")
@_location_options
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; any other than loopback needs BRAIN_HTTP_TOKEN.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port; 0 picks a free one.")
@click.option("--corpus", "corpora", multiple=True, metavar="NAME=FOLDER",
              help="Also serve this notes folder at /c/NAME/ (repeatable).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Another Host name clients use to reach the server (repeatable).")
def serve_command(host: str, port: int, corpora: tuple[str, ...], allow_hosts: tuple[str, ...]) -> int:
    """Serve the notes over HTTP: a JSON API with its OpenAPI description at /openapi.json and /docs.

    The notes folder around you (or --root) is served at /search, /grep, …; every --corpus folder
    also at /c/NAME/search, … Loopback only unless BRAIN_HTTP_TOKEN is set.

    \b
    Examples:
      brain serve
      brain serve --corpus work=~/work-notes --port 9000
    """
    from .http_server import serve

    serve(_corpora(list(corpora)), host=host, port=port, allow_hosts=list(allow_hosts))
    return EXIT_OK


def _corpora(named_texts: list[str]) -> Any:
    """The folders a server serves: the notes folder around you (or --root) as the default, then every --corpus."""
    from .config import locate_root
    from .served import DEFAULT_CORPUS, Corpora, parse_corpus

    root, config = _location()
    corpora = Corpora()
    named = [parse_corpus(text) for text in named_texts]
    found = locate_root(root)
    # With --corpus, the folder around you is served too only when it is a notes folder brain knows
    # (--root, BRAIN_ROOT, or one with brain.toml or .brain/), not just any repository or folder.
    if not named or found.reason not in ("git top-level", "current folder"):
        corpora.add(DEFAULT_CORPUS, found.path, config, default=True)
    for name, path in named:
        corpora.add(name, path)
    return corpora


# ------------------------------------------------------------------ running


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `brain` console script; returns the exit status."""
    # One query is far too small to gain from BLAS threads, and on a busy machine their
    # spin-waiting made a whole `brain search` twice as slow (1.1 s vs 0.6 s). Must be set
    # before numpy loads; torch (indexing) keeps its own threads.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        result = cli.main(args=list(argv) if argv is not None else None, prog_name="brain", standalone_mode=False)
        return result if isinstance(result, int) else EXIT_OK
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        return EXIT_OK
    except click.UsageError as exc:
        where = f"`{exc.ctx.command_path} --help`" if exc.ctx else "`brain --help`"
        message = " ".join(exc.format_message().split()) + _dash_word_hint(exc, sys.argv[1:] if argv is None else argv)
        sys.stderr.write(f"brain: {message} (see {where})\n")
        return EXIT_USAGE
    except click.Abort as exc:
        return _interrupted(exc.__cause__ or exc.__context__)
    except click.ClickException as exc:
        sys.stderr.write(f"brain: {' '.join(exc.format_message().split())}\n")
        return exc.exit_code
    except BrainError as exc:
        from .errors import shown

        sys.stderr.write(f"brain: {shown(str(exc))}\n")  # one line, whatever names the message quotes
        return exc.exit_code
    except (OSError, sqlite3.Error, UnicodeError) as exc:
        # A full disk, a read-only index, a name too long: one line, not a traceback.
        known = user_error(exc)
        if isinstance(exc, BrokenPipeError):
            return EXIT_OK
        if known is None:
            raise
        sys.stderr.write(f"brain: {known}\n")
        return known.exit_code
    except KeyboardInterrupt as exc:
        return _interrupted(exc)


def _dash_word_hint(exc: click.UsageError, args: Sequence[str]) -> str:
    """For a command that takes words (a query, a pattern) and a word with a leading dash that click read as
    short options ("-draft": the operator that leaves notes out), how to pass it as words."""
    if not isinstance(exc, click.NoSuchOption) or exc.ctx is None or exc.option_name.startswith("--"):
        return ""
    if not any(isinstance(param, click.Argument) for param in exc.ctx.command.params):
        return ""
    word = next((a for a in args if a.startswith(exc.option_name) and len(a) > 2 and a[1:2].isalpha()), None)
    if word is None:
        return ""
    return f" '{word}' was read as options; put -- before the query, e.g. `{exc.ctx.command_path} -- {word}`"


def _interrupted(exc: BaseException | None) -> int:
    """Ctrl-C: a rebuild says what is true of its index (errors.Interrupted); a scan keeps every file it finished."""
    said = str(exc or "") or "interrupted; every file finished before the interrupt stays indexed"
    sys.stderr.write(f"brain: {said}\n")
    if "torch" in sys.modules:
        # torch interrupted inside a batch aborts the process as it exits ("terminate called without an
        # active exception", SIGABRT), after everything was written and said: end it without native clean-up.
        import atexit
        import logging

        def leave() -> None:
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)

        atexit.register(leave)
    return 130


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


def _log_to(path: Any, name: str) -> Any:
    """Log brain.<name> to stderr and to `path` (Brain.log_path), one timestamped line per event."""
    from .store import TIMESTAMP_FORMAT

    formatter = logging.Formatter("%(asctime)s %(levelname)s %(message)s", TIMESTAMP_FORMAT)
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


if __name__ == "__main__":
    raise SystemExit(main())
