"""A malformed `store` URL is refused once, in one line that never shows its password (reliability round two,
items 8, 15).

Real CLI processes; no server is needed, since the URL is refused before anything connects.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_cli, write

PASSWORD = "Qx7sEcret"
# Each puts the password where a naive parse splits the URL: a bad percent escape, a second '@',
# a '/', '#' or '?' inside it; then ports no server could have.
MALFORMED = [
    f"postgresql://ana:{PASSWORD}%zz@db.example.org/notes",
    f"postgresql://ana:{PASSWORD}@x@db.example.org/notes",
    f"postgresql://ana:{PASSWORD[:4]}/{PASSWORD[4:]}@db.example.org/notes",
    f"postgresql://ana:{PASSWORD[:4]}#{PASSWORD[4:]}@db.example.org/notes",
    f"postgresql://ana:{PASSWORD[:4]}?{PASSWORD[4:]}@db.example.org/notes",
    "postgresql://ana@db.example.org:abc/notes",
    "postgresql://ana@db.example.org:99999/notes",
]


def _leaks(text: str) -> bool:
    """Any three-letter-or-longer piece of the password in `text`."""
    return any(PASSWORD[i : i + 3] in text for i in range(len(PASSWORD) - 2))


@pytest.mark.parametrize("url", MALFORMED)
def test_a_malformed_store_url_is_one_line_without_its_password(tmp_path: Path, url: str) -> None:
    write(tmp_path, {"a.md": "# A\n\nwords\n"})
    for args in (["status"], ["search", "words"], ["index"], ["config", "show"]):
        done = run_cli("--root", str(tmp_path), *args, env={"BRAIN_STORE": url})
        output = done.stdout + done.stderr
        assert done.returncode != 0, (args, output)
        assert "Traceback" not in output and not _leaks(output), (args, output)  # before: tracebacks, password tails
        assert len(done.stderr.strip().splitlines()) == 1 and "store is not a usable PostgreSQL URL" in done.stderr
    refused = run_cli("--root", str(tmp_path), "config", "set", "store", url)
    assert refused.returncode != 0 and not _leaks(refused.stdout + refused.stderr)  # before: accepted, then shown
    assert not (tmp_path / "brain.toml").exists() or "store" not in (tmp_path / "brain.toml").read_text()


def test_a_url_with_no_host_names_the_server_it_tried_not_libpqs_parse_error(tmp_path: Path) -> None:
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    write(tmp_path, {"a.md": "# A\n\nwords\n"})
    done = run_cli("--root", str(tmp_path), "status", env={"BRAIN_STORE": "postgres://"})
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert 'missing "="' not in done.stderr  # before: libpq read the URL as a key=value string
    assert done.stderr.startswith("brain: cannot reach PostgreSQL at postgresql://localhost/")
