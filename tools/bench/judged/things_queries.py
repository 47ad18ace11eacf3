"""Judged "which things" queries whose relevant notes are computed from frontmatter, never picked by hand.

A spec file holds one query per line with what it asks for:

    {"id": "at-24", "query": "progetti Laravel ancora attivi", "kind": "status",
     "folder": "projects/", "where": {"stack": ["laravel"], "status": ["active"]},
     "when": {"fields": ["started", "ended"], "year": 2024}}

- `folder`: the relevant notes are under it;
- `where`: field → accepted values; a note qualifies when, for every field, its value (or one item of its
  list) is among them, compared in lower case;
- `when`: a date field (any of `fields`) falls in `year`, or in `from` or later.

The script reads every note's YAML frontmatter itself (not through brain, which it judges) and writes
the queries file `brain eval --queries` reads:

    python tools/bench/judged/things_queries.py tools/bench/judged/agency-things.spec.jsonl examples/agency
    python tools/bench/judged/things_queries.py SPEC NOTES --check   # exit 1 when the written file is stale
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

import yaml


def frontmatter(path: Path) -> dict[str, Any]:
    """The YAML mapping between the opening `---` lines of a note ({} without one)."""
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        return {}
    end = text.find("\n---", 4)
    if end < 0:
        return {}
    data = yaml.safe_load(text[4:end])
    return data if isinstance(data, dict) else {}


def _values(raw: Any) -> set[str]:
    items = raw if isinstance(raw, list) else [raw]
    return {str(item).strip().lower() for item in items if item is not None}


def _years(raw: Any) -> set[int]:
    out = set()
    for item in raw if isinstance(raw, list) else [raw]:
        if isinstance(item, (dt.date, dt.datetime)):
            out.add(item.year)
        elif isinstance(item, int):
            out.add(item)
        elif isinstance(item, str) and item[:4].isdigit():
            out.add(int(item[:4]))
    return out


def qualifies(meta: dict[str, Any], spec: dict[str, Any]) -> bool:
    for name, accepted in spec.get("where", {}).items():
        if not _values(meta.get(name)) & {a.lower() for a in accepted}:
            return False
    when = spec.get("when")
    if when:
        years = set().union(*(_years(meta.get(f)) for f in when["fields"]))
        if "year" in when and when["year"] not in years:
            return False
        if "from" in when and not any(y >= when["from"] for y in years):
            return False
    return True


def judged(spec_path: Path, notes: Path) -> list[dict[str, Any]]:
    specs = [json.loads(line) for line in spec_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    metas = {p.relative_to(notes).as_posix(): frontmatter(p) for p in sorted(notes.rglob("*.md"))}
    rows = []
    for spec in specs:
        relevant = [path for path, meta in metas.items()
                    if path.startswith(spec.get("folder", "")) and meta and qualifies(meta, spec)]
        if not relevant:
            raise SystemExit(f"{spec_path.name}: {spec['id']} ({spec['query']!r}) matches no note; fix its spec")
        rows.append({"id": spec["id"], "query": spec["query"], "relevant": relevant, "kind": spec["kind"]})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", type=Path)
    parser.add_argument("notes", type=Path)
    parser.add_argument("--check", action="store_true", help="only say whether the written file is up to date")
    args = parser.parse_args()
    out = args.spec.with_name(args.spec.name.replace(".spec.jsonl", ".jsonl"))
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in judged(args.spec, args.notes))
    if args.check:
        if not out.exists() or out.read_text(encoding="utf-8") != text:
            print(f"{out} is stale: rerun without --check", file=sys.stderr)
            return 1
        return 0
    out.write_text(text, encoding="utf-8")
    print(f"{out}: {text.count(chr(10))} queries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
