"""The rooms of the library import only rooms above them in docs/architecture.md's table, which lists every one.

Read from the real source: every `from .x import` and `import brain.x` of every
module under tools/lib/brain, against the order of the table's rows.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from helpers import PROJECT

LIB = PROJECT / "tools" / "lib" / "brain"
FACADES = {"__init__", "__main__"}  # the package's own front: it re-exports rooms, nobody imports it back


def table_order() -> list[str]:
    """The rooms in the order docs/architecture.md lists them (a package as `name/`)."""
    text = (PROJECT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Modules", 1)[1].split("\n## ", 1)[0]
    return [name.rstrip("/") for name in re.findall(r"^\| `([a-z_]+/?)` \|", section, flags=re.MULTILINE)]


def room_of(path: Path) -> str:
    """A module's room: its own name, or its package's (store/, embeddings/)."""
    return path.relative_to(LIB).with_suffix("").parts[0]


def _is_module(package: list[str], name: str) -> bool:
    folder = LIB.joinpath(*package)
    return (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()


def imports_of(path: Path) -> set[str]:
    """The rooms a module imports (relative imports resolved against its package; absolute `brain.` ones too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = list(path.relative_to(LIB).parent.parts)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            target = [*base, *(node.module.split(".") if node.module else [])]
            if target:
                found.add(target[0])
            else:  # `from . import sources, spelling`; `from . import __version__` reads the package's facade
                found.update(alias.name if _is_module(base, alias.name) else "__init__" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("brain."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[1] for alias in node.names if alias.name.startswith("brain."))
    return found


def test_every_import_points_up_the_table_and_the_table_lists_every_module() -> None:
    order = table_order()
    assert len(order) == len(set(order)), "a room is listed twice"
    rank = {name: n for n, name in enumerate(order)}
    modules = [p for p in LIB.rglob("*.py") if "__pycache__" not in p.parts]
    unlisted = sorted({room_of(p) for p in modules} - set(rank) - FACADES)
    assert not unlisted, f"modules missing from docs/architecture.md's table: {unlisted}"
    upward = []
    for path in modules:
        room = room_of(path)
        if room in FACADES:
            continue
        for target in imports_of(path) - {room} - FACADES:
            if target not in rank or rank[target] > rank[room]:
                upward.append(f"{path.relative_to(LIB)} imports {target}")
    assert not upward, "imports that point down the table (or at an unlisted room): " + "; ".join(sorted(upward))


def test_the_walk_sees_imports_of_every_kind() -> None:
    """The checker itself: relative, package-relative and absolute imports are all read."""
    assert {"errors", "store", "embeddings", "sources", "stemming"} <= imports_of(LIB / "indexer.py")
    assert "base" not in imports_of(LIB / "store" / "sqlite.py") and "errors" in imports_of(LIB / "store" / "sqlite.py")
    assert "excerpt" in imports_of(LIB / "store" / "postgres" / "connection.py")
