"""Reaching a PostgreSQL server: the `store` URL, corpus names and their schemas, the connection pool, the corpus
writer lock."""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from ...errors import BrainError
from ...excerpt import fold

SCHEMA_PREFIX = "brain_"
REBUILD_SUFFIX = "__rebuild"
INSTALL_HINT = "pip install 'brain-search[postgres]'"

def is_postgres_location(location: str | None) -> bool:
    """True when a `store` setting names a PostgreSQL server (postgresql://… or postgres://…)."""
    return bool(location) and str(location).startswith(("postgresql://", "postgres://"))


def split_location(location: str) -> tuple[str, str | None]:
    """(libpq connection URL, corpus name or None): `?corpus=NAME` is brain's, not libpq's, so it is taken out."""
    parts = urlsplit(location)
    query = parse_qsl(parts.query, keep_blank_values=True)
    corpus = next((v for k, v in query if k == "corpus"), None)
    kept = urlencode([(k, v) for k, v in query if k != "corpus"])
    # Written out, not urlunsplit: that drops the `//` of a URL with no host (postgres:// alone,
    # or postgresql:///db), which libpq then reads as a key=value string and refuses.
    return f"{parts.scheme}://{parts.netloc}{parts.path}" + (f"?{kept}" if kept else ""), corpus


def shown_location(location: str) -> str:
    """The server and database of a store URL, as messages name it (no password, no options)."""
    parts = urlsplit(location)
    host = parts.hostname or dict(parse_qsl(parts.query)).get("host") or "localhost"
    port = f":{parts.port}" if parts.port else ""
    user = f"{parts.username}@" if parts.username else ""
    return f"postgresql://{user}{host}{port}{parts.path or '/'}"


# A corpus name kept as it is in its schema's name: lowercase words of [a-z0-9] joined by single
# underscores (so no name ends like a rebuild's schema), short enough for PostgreSQL's 63 bytes.
_PLAIN_CORPUS = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")
_PLAIN_MAX = 63 - len(SCHEMA_PREFIX) - len(REBUILD_SUFFIX)
_DIGEST_CHARS = 12  # of the name's sha-256: distinct names stay distinct schemas


def schema_name(corpus: str) -> str:
    """The schema that holds a corpus: distinct names always give distinct schemas.

    A plain name (`notes`, `work_notes`) is kept as it is: `brain_notes`. Any
    other name (`Notes`, `my-notes`, `my.notes`, a name in another script, a
    long one, `x__rebuild`) keeps a readable part and adds 12 hex digits of its
    sha-256, since folding it to [a-z0-9_] alone made different folders share
    one schema (and the second index removed the first one's rows). The schema
    records the exact name it holds (meta `corpus`), so a collision is refused,
    never written.
    """
    if _PLAIN_CORPUS.fullmatch(corpus) and len(corpus) <= _PLAIN_MAX:
        return SCHEMA_PREFIX + corpus
    readable = re.sub(r"[^a-z0-9]+", "_", fold(corpus)).strip("_")[: _PLAIN_MAX - _DIGEST_CHARS - 1].strip("_")
    digest = hashlib.sha256(corpus.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
    return f"{SCHEMA_PREFIX}{readable or 'corpus'}_{digest}"


def legacy_schema_name(corpus: str) -> str:
    """The schema brain used for a corpus before schema names were made distinct (its vectors are reused)."""
    cleaned = re.sub(r"[^a-z0-9_]+", "_", fold(corpus)).strip("_") or "notes"
    return SCHEMA_PREFIX + cleaned[:_PLAIN_MAX]


def psycopg_module() -> Any:
    try:
        import psycopg
    except ImportError:
        raise BrainError(
            f"`store` names a PostgreSQL server but its driver is not installed; run: {INSTALL_HINT}"
        ) from None
    return psycopg


# One pool per server URL in a process: a server's requests and a CLI command share connections.
_POOLS: dict[str, Any] = {}
_POOLS_LOCK = threading.Lock()


def pool_for(conninfo: str, shown: str) -> Any:
    with _POOLS_LOCK:
        pool = _POOLS.get(conninfo)
        if pool is not None:
            return pool
        psycopg = psycopg_module()
        try:
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise BrainError(f"the PostgreSQL store needs psycopg's connection pool; run: {INSTALL_HINT}") from None
        # One direct connection first: the pool would retry for its whole timeout and then say only that.
        reason = first_error(conninfo, psycopg)
        if reason is not None:
            raise BrainError(f"cannot reach PostgreSQL at {shown} ({reason}); start the server or fix `store` in "
                             "brain.toml or BRAIN_STORE (a password goes in PGPASSWORD or ~/.pgpass)")
        # check: a connection the server dropped (a restart) is replaced before it is handed out.
        # Two connections per open store (the keyword half, the vector half): 8 stores at once; a store past
        # that opens its vector half's connection directly.
        pool = ConnectionPool(conninfo, min_size=1, max_size=16, kwargs={"autocommit": True}, open=False,
                              name="brain", timeout=30.0, check=ConnectionPool.check_connection)
        try:
            pool.open(wait=True, timeout=15.0)
        except Exception as exc:  # PoolTimeout: the server stopped answering meanwhile
            with contextlib.suppress(Exception):
                pool.close()
            raise BrainError(f"cannot reach PostgreSQL at {shown} ({exc}); start the server or fix `store` in "
                             "brain.toml or BRAIN_STORE") from None
        _POOLS[conninfo] = pool
        return pool


# How long a store waits for a pooled connection before it looks at why: a server that is down answers
# 503 at once (requests had queued for 30 s each), a pool that is merely all in use lends a direct one.
POOL_WAIT = 2.0
DIRECT_CONNECT_TIMEOUT = 3  # seconds libpq tries a server before saying it is not answering


def take_connection(pool: Any, conninfo: str, shown: str) -> tuple[Any, bool]:
    """(a connection, whether it is the pool's): the pool's when one comes within POOL_WAIT, else a direct one.

    Any number of open stores works (a server with 17 corpora died at start when the
    16-connection pool ran dry), up to the server's own max_connections. A server that
    does not answer raises Unavailable in about DIRECT_CONNECT_TIMEOUT seconds.
    """
    from ...errors import Unavailable

    try:
        return pool.getconn(timeout=POOL_WAIT), True
    except Exception:  # PoolTimeout: every pooled connection is in use, or the server is gone
        pass
    psycopg = psycopg_module()
    try:
        return psycopg.connect(conninfo, autocommit=True, connect_timeout=DIRECT_CONNECT_TIMEOUT), False
    except psycopg.Error as exc:
        why = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise Unavailable(f"PostgreSQL at {shown} is not answering ({why}); start it or wait for it, "
                          "then try again") from None


@contextlib.contextmanager
def corpus_writer_lock(location: str, corpus: str, wait_seconds: float) -> Iterator[None]:
    """Held by a writer of a corpus for a whole unit of work, whichever machine it runs on (a session advisory lock).

    Needs no schema (a corpus's first index takes it too). Waits up to
    `wait_seconds` for another writer, then fails saying so; dropped with the
    connection if the process dies.
    """
    conninfo, named = split_location(location)
    shown = shown_location(location)
    key = schema_name(named or corpus) + ":write"
    pool = pool_for(conninfo, shown)
    conn, pooled = take_connection(pool, conninfo, shown)
    try:
        deadline = time.monotonic() + wait_seconds
        while not conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()[0]:
            if time.monotonic() >= deadline:
                raise BrainError(f"another brain process, on this machine or another, has been writing corpus "
                                 f"{named or corpus!r} on {shown} for over {wait_seconds:.0f}s; try again later")
            time.sleep(0.1)
        try:
            yield
        finally:
            release_advisory(conn, key)
    finally:
        with contextlib.suppress(Exception):
            pool.putconn(conn) if pooled else conn.close()


def release_advisory(conn: Any, key: str, *, shared: bool = False) -> None:
    """Let go of this session's advisory lock on `key` (best effort: a connection that died let go already)."""
    with contextlib.suppress(Exception):
        conn.execute(f"SELECT pg_advisory_unlock{'_shared' if shared else ''}(hashtext(%s))", (key,))


def first_error(conninfo: str, psycopg: Any) -> str | None:
    """Why one direct connection fails (the pool only says it timed out)."""
    try:
        psycopg.connect(conninfo, connect_timeout=5).close()
    except Exception as exc:
        return " ".join(str(exc).split())[:300]
    return None

