"""`brain serve`: the notes as a JSON API over HTTP (FastAPI on uvicorn), loopback by default.

Each endpoint returns the same dict `brain … --json` prints. One process can
serve several notes folders: the default one at `/search`, `/scan`, …, and
every named one at `/c/<name>/search`, … — each with its own settings, ignore
rules and database, and one warm Brain.

Security, in the order a request meets it (SecurityGate):
- the Host header must be the server's own name and port, and an Origin header
  (sent by browsers) must be too: a web page that rebinds its DNS name to
  127.0.0.1 is refused, so it cannot read or re-index the notes;
- when BRAIN_HTTP_TOKEN is set every request but /health and the docs must carry
  `Authorization: Bearer <token>`; binding a non-loopback address without a
  token is refused at start;
- paths a client sends are relative to the notes folder and never leave it
  (`..`, absolute paths and symlinks out are refused; see served.note_path).
"""

from __future__ import annotations

import copy
import hmac
import inspect
import json
import os
import socket
import sys
from typing import Annotated, Any, Callable

# Imported only by `brain serve`, so the web framework costs nothing elsewhere.
from fastapi import APIRouter, Body, Depends, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.security import HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.concurrency import run_in_threadpool

from . import __version__
from .errors import BrainError, user_error, without_folder
from .operations import OPERATIONS, Operation, one_line_error, request_model
from .served import Corpora, ServedCorpus, is_loopback

TOKEN_ENV = "BRAIN_HTTP_TOKEN"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
OPEN_PATHS = frozenset({"/health", "/docs", "/openapi.json"})

# Bounds on what one client can hold (see docs/reliability.md). Request bodies are
# small JSON objects; a person's server rarely has more than a few clients at once.
MAX_BODY_BYTES = 1_000_000
BODY_SECONDS = 30  # to send the whole body once the headers are in
HEADER_SECONDS = 10  # to send a whole request head, from connecting or from the last response
MAX_CONNECTIONS = 100  # open at once; lowered to fit the process's open-file limit
LOG_EVERY_SECONDS = 10  # one line per kind of server warning in this time; repeats are counted


def allowed_hosts(host: str, port: int, extra: list[str]) -> frozenset[str]:
    """Host header values that name this server: loopback names, the bound address, --allow-host names."""
    names = set(LOOPBACK_NAMES)
    bound = host.lower()
    if bound not in ("0.0.0.0", "::", ""):
        names.add(f"[{bound}]" if ":" in bound and not bound.startswith("[") else bound)
    for name in extra:
        name = name.strip().lower()
        if name:
            names.add(f"[{name}]" if ":" in name and not name.startswith("[") else name)
    values = {f"{name}:{port}" for name in names}
    if port == 80:
        values |= names  # a browser leaves the default port out
    return frozenset(values)


def _error_body(status: int, message: str, field: str | None = None) -> bytes:
    return json.dumps({"error": message, "field": field, "status": status}, ensure_ascii=False).encode("utf-8")


async def _send_refusal(send: Any, status: int, message: str, field: str) -> None:
    """One JSON error response, in the shape of every other error."""
    extra = [(b"www-authenticate", b'Bearer realm="brain"')] if status == 401 else []
    body = _error_body(status, message, field)
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra],
    })
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive: Any, headers: dict[str, str]) -> tuple[bytes, tuple[int, str, str] | None]:
    """The whole request body, or a refusal: over MAX_BODY_BYTES (413) or not sent within BODY_SECONDS (408).

    Every request body is a small JSON object; reading it here, before the
    application, keeps a 200 MB upload (which took the server to 1.1 GB) and a
    body trickled byte by byte from holding memory or a connection for long.
    """
    import asyncio

    declared = headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return b"", (413, f"request body is {int(declared):,} bytes, over the {MAX_BODY_BYTES:,}-byte limit", "body")
    parts: list[bytes] = []
    size = 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BODY_SECONDS
    while True:
        try:
            message = await asyncio.wait_for(receive(), timeout=max(0.0, deadline - loop.time()))
        except asyncio.TimeoutError:
            return b"", (408, f"request body not received within {BODY_SECONDS} s; send it at once", "body")
        if message["type"] != "http.request":
            return b"".join(parts), None  # the client left: the application sees the disconnect
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return b"", (413, f"request body is over the {MAX_BODY_BYTES:,}-byte limit", "body")
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts), None


def _replay(body: bytes, receive: Any) -> Any:
    """An ASGI receive that hands the application the body already read, then waits on the real one."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class SecurityGate:
    """ASGI middleware: refuses foreign Host/Origin (DNS rebinding) and, with a token set, unauthenticated calls."""

    def __init__(self, app: Any, *, hosts: frozenset[str], token: str | None) -> None:
        self.app = app
        self.hosts = hosts
        # Bytes on both sides: the header arrives as bytes (kept as latin-1 below), the token is UTF-8,
        # so a non-ASCII token authenticates when the client sends its UTF-8 bytes.
        self.token = token.encode("utf-8", "surrogateescape") if token else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        refusal = self._refusal(scope.get("path", ""), headers)
        if refusal is None:
            body, refusal = await _read_body(receive, headers)
            if refusal is None:
                try:
                    await self.app(scope, _replay(body, receive), send)
                except Exception as exc:
                    # The JSON answer is sent already; Starlette raises again so a bug reaches
                    # the log. A failure of the machine is logged as its one line instead.
                    known = user_error(exc)
                    if known is None:
                        raise
                    _log_line(f"{scope.get('path', '')}: {known}")
                return
        await _send_refusal(send, *refusal)

    def _refusal(self, path: str, headers: dict[str, str]) -> tuple[int, str, str] | None:
        host = headers.get("host", "").strip().lower()
        if host not in self.hosts:
            return (
                421 if host else 400,
                f"Host {host or '(missing)'!r} is not this server; use http://127.0.0.1:<port>",
                "Host",
            )
        origin = headers.get("origin")
        if origin is not None:
            scheme, _, rest = origin.strip().lower().partition("://")
            if scheme not in ("http", "https") or rest.rstrip("/") not in self.hosts:
                return 403, f"Origin {origin!r} may not call this server (only pages it serves itself)", "Origin"
        if self.token is not None and path not in OPEN_PATHS:
            given = headers.get("authorization", "")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode("latin-1"), self.token):
                what = "missing" if not given else "wrong"
                return 401, f"bearer token {what}; send Authorization: Bearer $BRAIN_HTTP_TOKEN", "Authorization"
        return None


def build_app(
    corpora: Corpora,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    allow_hosts: list[str] | None = None,
    token: str | None = None,
) -> Any:
    """The FastAPI application serving `corpora`, wrapped in the SecurityGate."""
    # With a token, the docs show an "Authorize" button; the SecurityGate does the checking.
    bearer = [Depends(HTTPBearer(auto_error=False, description=f"the value of {TOKEN_ENV}"))] if token else []

    app = FastAPI(
        docs_url=None,
        redoc_url=None,
        title="brain",
        version=__version__,
        description="A local memory for your notes: hybrid keyword + semantic search. "
        "Every endpoint also answers under /c/{corpus}/ for each named notes folder.",
    )

    def folder_of(request: Request) -> str:
        name = request.path_params.get("corpus")
        corpus = corpora.by_name.get(name) if name else (corpora.by_name.get(corpora.default_name or ""))
        return str(corpus.root) if corpus is not None else "/"

    @app.exception_handler(BrainError)
    async def _brain_error(request: Request, exc: BrainError) -> JSONResponse:
        status = exc.http_status
        field = getattr(exc, "field", None) or (request.scope.get("brain_field") if exc.usage else None)
        message = without_folder(str(exc), folder_of(request))
        return JSONResponse({"error": message, "field": field, "status": status}, status_code=status)

    @app.exception_handler(Exception)
    async def _any_error(request: Request, exc: Exception) -> JSONResponse:
        # Errors of the machine (full disk, read-only index) are 503 with their one line;
        # anything else is a bug: 500 in the same JSON shape, the traceback in the log only.
        known = user_error(exc)
        if known is None:
            return JSONResponse({"error": f"internal error in brain ({type(exc).__name__}); see the server's log",
                                 "field": None, "status": 500}, status_code=500)
        status = known.http_status
        field = request.scope.get("brain_field") if known.usage else None
        message = without_folder(str(known), folder_of(request))
        return JSONResponse({"error": message, "field": field, "status": status}, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        field, message = one_line_error(errors[0] if errors else {"loc": ("body",), "msg": "invalid request"})
        details = [{"field": one_line_error(e)[0], "message": e.get("msg")} for e in errors]
        return JSONResponse({"error": message, "field": field, "status": 422, "details": details}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Unknown routes and wrong methods answer in the same shape as every other error.
        status = exc.status_code
        if status == 404:
            message = f"no endpoint {request.method} {request.url.path}; see /docs for the API"
        elif status == 405:
            message = f"{request.method} is not allowed on {request.url.path}; see /docs for the method it takes"
        else:
            message = str(exc.detail)
        return JSONResponse(
            {"error": message, "field": None, "status": status}, status_code=status, headers=exc.headers
        )

    @app.get("/health", tags=["server"])
    async def health() -> dict[str, Any]:
        """Is the server up (no token needed, touches no notes)."""
        return {"status": "ok", "version": __version__}

    @app.get("/corpora", tags=["server"], dependencies=bearer)
    async def list_corpora() -> dict[str, Any]:
        """The notes folders this server serves, and which one answers at the unprefixed paths."""
        return {
            "default": corpora.default_name,
            "corpora": [corpus.describe() for corpus in corpora.by_name.values()],
        }

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        """The API described on one page, from the OpenAPI document: no script, nothing fetched from elsewhere."""
        return HTMLResponse(api_page(app.openapi()), headers={"Content-Security-Policy": DOCS_POLICY})

    def routes(resolve: Callable[..., ServedCorpus], prefix_tag: str) -> APIRouter:
        router = APIRouter(tags=[prefix_tag], dependencies=bearer)
        for op in OPERATIONS:
            method, path = op.http
            router.add_api_route(path, _endpoint(op, resolve), methods=[method], name=op.name,
                                 summary=op.summary, description=op.description)
        return router

    def default_corpus() -> ServedCorpus:
        return corpora.default

    def named_corpus(
        corpus: Annotated[str, PathParam(description="Name of a notes folder given with --corpus NAME=PATH.")],
    ) -> ServedCorpus:
        return corpora.get(corpus)

    app.include_router(routes(default_corpus, "default corpus"))
    app.include_router(
        routes(named_corpus, "named corpus"),
        prefix="/c/{corpus}",
        generate_unique_id_function=lambda route: f"corpus_{route.name}",
    )
    return SecurityGate(app, hosts=allowed_hosts(host, port, allow_hosts or []), token=token)


def _endpoint(op: Operation, resolve: Callable[..., ServedCorpus]) -> Callable[..., Any]:
    """The FastAPI endpoint of `op`: its parameters are `op`'s request model (JSON body for POST, query for GET)."""
    model = request_model(op)
    blamed = next((p.name for p in op.params if p.required), None)

    async def endpoint(request: Request, corpus: ServedCorpus, params: Any = None) -> dict[str, Any]:
        if blamed is not None:
            request.scope["brain_field"] = blamed  # names the input when the core refuses it
        values = params.model_dump() if params is not None else {p.name: p.default for p in op.params}
        return await run_in_threadpool(corpus.run, op.name, values)

    empty = inspect.Parameter.empty
    parameters = [
        inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY, annotation=Request),
        inspect.Parameter("corpus", inspect.Parameter.KEYWORD_ONLY, annotation=ServedCorpus, default=Depends(resolve)),
    ]
    if op.params:
        required = any(p.required for p in op.params)
        if op.http[0] == "GET":
            annotation, default = Annotated[model, Query()], empty
        elif required:
            annotation, default = Annotated[model, Body()], empty
        else:  # every field has a default: the body may be left out
            annotation, default = Annotated[model | None, Body()], None
        parameters.append(
            inspect.Parameter("params", inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)
        )
    endpoint.__signature__ = inspect.Signature(parameters, return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    endpoint.__name__ = op.name
    return endpoint


DOCS_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def api_page(spec: dict[str, Any]) -> str:
    """/docs: every endpoint with its parameters, as plain HTML (the server has no internet and loads no script)."""
    from html import escape

    out = [
        "<!doctype html><html><head><meta charset='utf-8'><title>brain API</title>",
        "<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
        "code{background:#f3f3f3;padding:0 .2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
        "padding:.2em .5em;text-align:left;vertical-align:top}</style></head><body>",
        f"<h1>{escape(spec['info']['title'])} {escape(spec['info']['version'])}</h1>",
        f"<p>{escape(spec['info'].get('description', ''))}</p>",
        "<p>The machine-readable description: <a href='/openapi.json'>/openapi.json</a>. Errors are "
        "<code>{\"error\", \"field\", \"status\"}</code>.</p>",
    ]
    schemas = spec.get("components", {}).get("schemas", {})
    for path, methods in spec.get("paths", {}).items():
        for method, info in methods.items():
            out.append(f"<h2><code>{method.upper()} {escape(path)}</code></h2><p>{escape(info.get('summary', ''))}"
                       f" {escape(info.get('description', ''))}</p>")
            rows = [(p["name"], p.get("schema", {}), p.get("required", False), p.get("description", ""))
                    for p in info.get("parameters", []) if p.get("in") == "query"]
            body = info.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            ref = (body.get("$ref") or next((a.get("$ref") for a in body.get("anyOf", []) if "$ref" in a), None) or "")
            model = schemas.get(ref.rsplit("/", 1)[-1], {}) if ref else {}
            for name, schema in model.get("properties", {}).items():
                rows.append((name, schema, name in model.get("required", []), schema.get("description", "")))
            if rows:
                out.append("<table><tr><th>parameter</th><th>type</th><th>default</th><th>description</th></tr>")
                for name, schema, required, text in rows:
                    kind = schema.get("type") or "/".join(
                        a.get("type", "") for a in schema.get("anyOf", []) if a.get("type") != "null"
                    )
                    bounds = ", ".join(f"{k} {schema[k]}" for k in ("minimum", "maximum", "enum") if k in schema)
                    default = "required" if required else escape(json.dumps(schema.get("default")))
                    out.append(f"<tr><td><code>{escape(name)}</code></td><td>{escape(kind)} {escape(bounds)}</td>"
                               f"<td>{default}</td><td>{escape(text)}</td></tr>")
                out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out)


def _log_line(message: str) -> None:
    """One line on stderr (stdout is for results), rate-limited like the server's own warnings."""
    import logging

    logging.getLogger("brain.serve").warning(message)


class OncePerInterval:
    """A logging filter: each kind of message at most once per LOG_EVERY_SECONDS, on one line, repeats counted.

    300 connections that never finished their headers wrote 78 MB of log in 25 s
    (asyncio's "out of system resource" with a traceback, in a loop): the
    log must not be a way to fill the disk.
    """

    def __init__(self, every: float = LOG_EVERY_SECONDS) -> None:
        self.every = every
        self.last: dict[str, float] = {}
        self.suppressed: dict[str, int] = {}

    def filter(self, record: Any) -> bool:
        import time

        text = record.getMessage()
        key = f"{record.name}:{text.splitlines()[0] if text else ''}"[:200]
        now = time.monotonic()
        if now - self.last.get(key, -self.every) < self.every:
            self.suppressed[key] = self.suppressed.get(key, 0) + 1
            return False
        self.last[key] = now
        if len(self.last) > 1000:  # never a memory leak of its own
            self.last = {key: now}
        line = " ".join(text.split("\n")[:1])
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            line += f": {type(error).__name__}: {error}"
        repeats = self.suppressed.pop(key, 0)
        if repeats:
            line += f" ({repeats} more like this not shown)"
        record.msg, record.args, record.exc_info, record.exc_text = line, None, None, None
        return True


def _rate_limit_logs() -> None:
    """Put OncePerInterval on every logger the server writes through."""
    import logging

    once = OncePerInterval()
    for name in ("asyncio", "uvicorn.error", "brain.serve"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, OncePerInterval) for f in logger.filters):
            logger.addFilter(once)


def connection_limit() -> int:
    """MAX_CONNECTIONS, lowered so open connections use at most half the process's open-file limit."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return MAX_CONNECTIONS
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(8, min(MAX_CONNECTIONS, (soft - 64) // 2))


def _guarded_protocol(limit: int) -> type:
    """uvicorn's h11 protocol with what uvicorn lacks: a deadline for each request head, and a connection cap.

    uvicorn waits for a request's headers for ever (its keep-alive timeout starts
    only after a response), so connections that never finish them pile up until
    the process runs out of file descriptors and nobody can connect. Here a
    connection with no request in progress is closed HEADER_SECONDS after it
    opened or after its last response; and past `limit` open connections the
    one idle the longest is closed to make room (a new one is refused only when
    every open connection is busy with a request).
    """
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._head_deadline: Any = None
            self._idle_since = self.loop.time()
            self._arm()
            if len(self.connections) > limit:
                # Every connection here is one of these (uvicorn makes each with this class).
                guarded: list[Any] = [c for c in self.connections if c is not self]
                idle = [c for c in guarded if getattr(c, "_idle_since", None) is not None and c._waiting()]
                victim = min(idle, key=lambda c: c._idle_since) if idle else self
                victim.transport.close()
                # Closing completes later, on a busy loop much later: counted as gone now, so
                # uvicorn's limit_concurrency does not answer 503 to a real request meanwhile.
                self.connections.discard(victim)

        def _waiting(self) -> bool:
            """True while no request is being handled (reading a head, or idle between requests)."""
            return self.cycle is None or self.cycle.response_complete

        def _arm(self) -> None:
            if self._head_deadline is not None:
                self._head_deadline.cancel()
            self._idle_since = self.loop.time()
            self._head_deadline = self.loop.call_later(HEADER_SECONDS, self._head_timeout)

        def _head_timeout(self) -> None:
            self._head_deadline = None
            if self._waiting() and not self.transport.is_closing():
                self.transport.close()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_deadline is not None:
                self._head_deadline.cancel()
                self._head_deadline = None
            super().connection_lost(exc)

    return GuardedH11Protocol


def _log_config() -> dict[str, Any]:
    """uvicorn's logging with the access log on stderr too: stdout is for results."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    return config


def _bind(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        raise BrainError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick another --port or --host"
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(corpora: Corpora, *, host: str = "127.0.0.1", port: int = 8765, allow_hosts: list[str] | None = None) -> None:
    """Bind, warm every corpus, and serve until interrupted (Ctrl-C or SIGTERM)."""
    import uvicorn

    token = os.environ.get(TOKEN_ENV) or None
    if not is_loopback(host) and token is None:
        raise BrainError(
            f"refusing to serve on {host}, which other machines can reach, without a token; "
            f"set {TOKEN_ENV} to a long random secret (or bind 127.0.0.1)"
        )
    if not 0 <= port <= 65535:
        raise BrainError(f"--port {port} is not a port number (0-65535)", usage=True)
    sock = _bind(host, port)
    port = sock.getsockname()[1]
    app = build_app(corpora, host=host, port=port, allow_hosts=allow_hosts, token=token)
    corpora.warm()
    shown = f"[{host}]" if ":" in host else host
    folders = ", ".join(f"{c.name}={c.root}" for c in corpora.by_name.values())
    sys.stderr.write(
        f"brain: serving {folders} at http://{shown}:{port}/ (API docs at /docs; "
        f"token {'required' if token else 'not required'})\n"
    )
    sys.stderr.flush()
    limit = connection_limit()
    config = uvicorn.Config(
        app,
        http=_guarded_protocol(limit),
        limit_concurrency=2 * limit,  # requests in flight past this get 503 at once
        # Connections accepted in one go before any is looked at: small, so the cap above
        # closes idle ones before a burst can use up the open-file limit.
        backlog=16,
        h11_max_incomplete_event_size=16 * 1024,  # a request head over 16 KB is refused
        timeout_keep_alive=5,
        log_config=_log_config(),
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    _rate_limit_logs()
    uvicorn.Server(config).run(sockets=[sock])
