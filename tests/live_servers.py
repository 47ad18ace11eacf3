"""Start the real `brain serve` and `brain mcp` as subprocesses, for tests and benchmarks.

Nothing is faked: the HTTP server listens on a loopback port the OS picks, and
the MCP server speaks stdio to the SDK's own client.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
LIB = PROJECT / "tools" / "lib"
_ADDRESS = re.compile(r"at http://(\S+?):(\d+)/")


def wait_until(check: Callable[[], bool], timeout: float = 120, what: str = "condition", every: float = 0.2) -> None:
    """Poll `check` every `every` seconds until it is true; an AssertionError naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def brain_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a brain subprocess runs in: this checkout's code, offline, no stray BRAIN_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env["PYTHONPATH"] = str(LIB) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.update(extra or {})
    return env


def copy_notes(source: Path, dest: Path) -> Path:
    """A private copy of a notes folder, its index included (mtimes kept, so nothing looks changed)."""
    shutil.copytree(source, dest, symlinks=True)
    return dest


class HttpServer:
    """A running `brain serve`; `.url` is its base address, `.log()` what it wrote to stderr."""

    def __init__(self, process: subprocess.Popen[str], host: str, port: int, lines: list[str]) -> None:
        self.process = process
        self.host = host
        self.port = port
        self.url = f"http://{host}:{port}"
        self._lines = lines

    def log(self) -> str:
        return "".join(self._lines)

    def stdout(self) -> str:
        """What the server printed on stdout, once it has stopped (results only; logs go to stderr)."""
        assert self.process.poll() is not None and self.process.stdout is not None
        return self.process.stdout.read()


@contextmanager
def http_server(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120, preexec_fn: Callable[[], None] | None = None,
    cwd: Path | None = None,
) -> Iterator[HttpServer]:
    """`brain ARGS serve --port 0` until the block ends; ARGS go before `serve` (e.g. --root).

    `preexec_fn` runs in the child before brain starts (e.g. to lower a resource limit).
    """
    command = [sys.executable, "-m", "brain", *args]
    if "serve" not in args:
        command.append("serve")
    if "--port" not in args:
        command += ["--port", "0"]
    process = subprocess.Popen(command, env=brain_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=preexec_fn, cwd=cwd)
    lines: list[str] = []
    found: queue.Queue[tuple[str, int] | None] = queue.Queue()

    def read_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            match = _ADDRESS.search(line)
            if match:
                found.put((match.group(1), int(match.group(2))))
        found.put(None)

    threading.Thread(target=read_stderr, daemon=True).start()
    try:
        try:
            address = found.get(timeout=timeout)
        except queue.Empty:
            address = None
        if address is None:
            process.kill()
            process.wait(10)
            time.sleep(0.1)
            raise RuntimeError(f"brain serve did not start (exit {process.returncode}):\n{''.join(lines)}")
        yield HttpServer(process, address[0], address[1], lines)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


@asynccontextmanager
async def mcp_session(*args: str, env: dict[str, str] | None = None, log: Path | None = None) -> AsyncIterator[Any]:
    """An initialised MCP ClientSession talking to `brain ARGS mcp` over stdio (its stderr goes to `log`)."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "brain", *args, "mcp"], env=brain_env(env))
    with open(log or os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
