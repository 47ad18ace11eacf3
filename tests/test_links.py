"""brain.links: a note's outgoing links (wiki, embeds, Markdown, frontmatter) and Obsidian's resolution of them.

The last test runs over the real Italian Obsidian help vault in ../shared/data/corpora (outside the repository,
like tests/test_judged_sets.py's corpora) and skips, saying why, on a machine without it.
"""

from __future__ import annotations

import pytest

from brain.links import MAX_LINKS, Link, Resolved, Resolver, extract_links, resolve_all
from helpers import PROJECT

ITALIAN_VAULT = PROJECT.parent / "shared" / "data" / "corpora" / "obsidian-help" / "it"


def one(text: str) -> Link:
    """The single link of `text`."""
    links = extract_links(text)
    assert len(links) == 1, links
    return links[0]


# Extraction: wiki links and embeds


@pytest.mark.parametrize("text, target, heading, alias", [
    ("[[Alpha]]", "Alpha", "", ""),
    ("[[Projects/Alpha|the project]]", "Projects/Alpha", "", "the project"),
    ("[[Alpha#Goals]]", "Alpha", "Goals", ""),
    ("[[Alpha#Goals|goals]]", "Alpha", "Goals", "goals"),
    ("[[Alpha#^block-1]]", "Alpha", "^block-1", ""),
    ("[[#Goals]]", "", "Goals", ""),
    ("[[alpha.md]]", "alpha.md", "", ""),
    ("| [[Alpha\\|A]] | x |", "Alpha", "", "A"),
    ("| [[Alpha#Goals\\|G]] |", "Alpha", "Goals", "G"),
])
def test_wiki_link_syntax(text: str, target: str, heading: str, alias: str) -> None:
    assert one(text) == Link(target, "wiki", 1, heading, alias)


def test_embeds_use_the_same_syntax() -> None:
    assert extract_links("![[image.png]] and ![[Alpha#Goals|g]]") == [
        Link("image.png", "embed", 1), Link("Alpha", "embed", 1, "Goals", "g")]


def test_empty_wiki_links_are_not_links() -> None:
    assert extract_links("[[]] and [[ ]]") == []


# Extraction: Markdown links and images


@pytest.mark.parametrize("text, target, heading, alias", [
    ("[the note](alpha.md)", "alpha.md", "", "the note"),
    ("![a picture](img/a.png)", "img/a.png", "", "a picture"),
    ("[x](My%20Note.md)", "My Note.md", "", "x"),
    ("[x](<My Note.md>)", "My Note.md", "", "x"),
    ('[x](alpha.md "A title")', "alpha.md", "", "x"),
    ("[x](<My Note.md> 'title')", "My Note.md", "", "x"),
    ("[x](../up/alpha.md#Some%20Heading)", "../up/alpha.md", "Some Heading", "x"),
    ("[x](./alpha.md#^block)", "./alpha.md", "^block", "x"),
    ("[x](Alpha)", "Alpha", "", "x"),
])
def test_markdown_link_syntax(text: str, target: str, heading: str, alias: str) -> None:
    assert one(text) == Link(target, "markdown", 1, heading, alias)


@pytest.mark.parametrize("dest", [
    "https://obsidian.md", "http://x.org/a.md", "mailto:someone@example.com", "obsidian://open?vault=x",
    "file:///tmp/a.md", "//cdn.example.com/a.png", "#Same%20note", "",
])
def test_markdown_links_that_leave_the_vault_or_stay_in_the_note_are_dropped(dest: str) -> None:
    assert extract_links(f"[x]({dest}) and ![y]({dest})") == []


def test_links_come_in_order_of_appearance() -> None:
    text = "[m](a.md) [[B]] ![[c.png]]\n![i](d.png) [[E|e]]"
    assert [(link.kind, link.target) for link in extract_links(text)] == [
        ("markdown", "a.md"), ("wiki", "B"), ("embed", "c.png"), ("markdown", "d.png"), ("wiki", "E")]


# Extraction: what hides links


@pytest.mark.parametrize("fence", ["```", "~~~", "````", "~~~~~"])
def test_fenced_code_hides_links(fence: str) -> None:
    text = f"[[Before]]\n{fence}python\n[[Inside]] [x](inside.md)\n{fence}\n[[After]]"
    assert [link.target for link in extract_links(text)] == ["Before", "After"]


def test_a_fence_closes_only_with_its_own_kind_and_at_least_its_length() -> None:
    text = "````\n```\n[[Inside]]\n~~~~\n[[Still]]\n````\n[[After]]"
    assert [link.target for link in extract_links(text)] == ["After"]


def test_an_unclosed_fence_runs_to_the_end() -> None:
    assert [link.target for link in extract_links("[[A]]\n```\n[[B]]\n")] == ["A"]


def test_fences_in_callouts_hide_links() -> None:
    assert extract_links("> [!example]\n> ```md\n> [[Inside]]\n> ```\n") == []


def test_inline_code_hides_links() -> None:
    text = "`[[Code]]` shows as [[Real]]; ``a ` [x](b.md)`` too, and [y](c.md)"
    assert [link.target for link in extract_links(text)] == ["Real", "c.md"]


def test_a_lone_backtick_hides_nothing() -> None:
    assert [link.target for link in extract_links("it`s [[A]]\n\nand [[B]]")] == ["A", "B"]


def test_comments_hide_links() -> None:
    text = "<!-- [[Html]] -->[[A]] %% [[Obsidian]] %% [[B]]\n%%\n[[Block]]\n%%\n<!--\n[x](y.md)\n-->[[C]]"
    assert [link.target for link in extract_links(text)] == ["A", "B", "C"]


# Extraction: line numbers and frontmatter


def test_line_numbers_count_newlines() -> None:
    text = "first [[A]]\n\nthird [x](b.md)\n```\n[[Hidden]]\n```\nseventh ![[c.png]]"
    assert [(link.target, link.line) for link in extract_links(text)] == [("A", 1), ("b.md", 3), ("c.png", 7)]


def test_line_numbers_include_frontmatter_lines() -> None:
    text = "---\ntitle: x\nproject: \"[[Alpha]]\"\n---\n\n[[Beta]]\r\n[[Gamma]]"
    links = extract_links(text)
    assert [(link.target, link.kind, link.line) for link in links] == [
        ("x", "frontmatter", 2), ("Alpha", "frontmatter", 3), ("Beta", "wiki", 6), ("Gamma", "wiki", 7)]


def test_frontmatter_wiki_link_values() -> None:
    text = ("---\nproject: \"[[Alpha]]\"\nrelated:\n  - \"[[Beta|b]]\"\n  - [[Gamma#Goals]]\n"
            "see: [\"[[Delta]]\", \"[[Epsilon]]\"]\n...\n[[Body]]")
    links = extract_links(text)
    assert links[:5] == [
        Link("Alpha", "frontmatter", 2), Link("Beta", "frontmatter", 4, alias="b"),
        Link("Gamma", "frontmatter", 5, "Goals"), Link("Delta", "frontmatter", 6), Link("Epsilon", "frontmatter", 6)]
    assert links[5] == Link("Body", "wiki", 8)


def test_frontmatter_plain_values_are_candidates() -> None:
    text = "---\nup: Projects/Alpha\nowner: 'Ann Smith' # a comment\nparts: [one, \"two\"]\nlist:\n  - three\n---\n"
    assert [(link.target, link.line, link.plain) for link in extract_links(text)] == [
        ("Projects/Alpha", 2, True), ("Ann Smith", 3, True), ("one", 4, True), ("two", 4, True), ("three", 6, True)]


def test_frontmatter_tags_aliases_and_empty_values_name_no_notes() -> None:
    text = "---\ntags: [alpha]\naliases:\n  - Beta\ncssclasses: wide\nempty:\nblock: |\n  text\n---\n"
    assert extract_links(text) == []


def test_a_block_that_does_not_open_the_file_is_no_frontmatter() -> None:
    assert extract_links("\n---\nup: Alpha\n---\n") == []
    assert extract_links("---\nup: [[Alpha]]\nnever closed") == [Link("Alpha", "wiki", 2)]


def test_work_is_bounded() -> None:
    assert len(extract_links("[[A]] " * (MAX_LINKS + 5))) == MAX_LINKS
    assert extract_links(f"[[{'x' * 1001}]] [y]({'z' * 1001}.md) [[ok]]") == [Link("ok", "wiki", 1)]


# Resolution

VAULT = [
    "Home.md", "Projects/Alpha.md", "Projects/Beta.md", "Archive/Beta.md", "Archive/Old/Gamma.md",
    "a/b/Note.md", "zzzz/Note.md", "zzzz/deep/Other.md", "img/a.png", "books/x.pdf", "My Note.md",
    "Projects/Sub/Delta.md", "Other/Sub/Delta.md",
]


def resolve(target: str, source: str = "Home.md", kind: str = "wiki") -> Resolved:
    """`target` written in `source` as a link of `kind`, resolved over VAULT."""
    return Resolver(VAULT).resolve(Link(target, kind, 1), source)


@pytest.mark.parametrize("target, path", [
    ("Alpha", "Projects/Alpha.md"),
    ("alpha", "Projects/Alpha.md"),
    ("ALPHA.MD", "Projects/Alpha.md"),
    ("Projects/Alpha", "Projects/Alpha.md"),
    ("projects/alpha.md", "Projects/Alpha.md"),
    ("/Projects/Alpha", "Projects/Alpha.md"),
    ("Old/Gamma", "Archive/Old/Gamma.md"),
    ("Projects/./Alpha", "Projects/Alpha.md"),
    ("a.png", "img/a.png"),
    ("img/a.png", "img/a.png"),
    ("x.pdf", "books/x.pdf"),
])
def test_wiki_links_resolve_case_insensitively_with_or_without_md(target: str, path: str) -> None:
    assert resolve(target) == Resolved(Link(target, "wiki", 1), path)


@pytest.mark.parametrize("target", ["Missing", "Alpha.pdf", "a", "Projects/Gamma", "rojects/Alpha", "img\\a.png"])
def test_unknown_targets_are_unresolved(target: str) -> None:
    assert resolve(target) == Resolved(Link(target, "wiki", 1), None, "unresolved")


def test_duplicate_basenames_prefer_the_source_folder() -> None:
    assert resolve("Beta", "Archive/x.md").path == "Archive/Beta.md"
    assert resolve("Beta", "Projects/Alpha.md").path == "Projects/Beta.md"
    assert resolve("Sub/Delta", "Other/Sub/x.md").path == "Other/Sub/Delta.md"


def test_duplicate_basenames_elsewhere_take_the_shortest_path_then_alphabetical() -> None:
    # an ancestor folder counts for nothing; the shortest path *string* wins, as Obsidian does
    assert resolve("Beta", "Archive/Old/Gamma.md").path == "Archive/Beta.md"  # 15 characters vs 16
    assert resolve("Note", "Home.md").path == "a/b/Note.md"  # 11 characters beat zzzz/Note.md's 12
    assert resolve("Note", "zzzz/deep/Other.md").path == "a/b/Note.md"
    assert resolve("Sub/Delta", "Home.md").path == "Other/Sub/Delta.md"  # equal length: alphabetical


def test_an_exact_vault_path_wins_over_the_source_folder() -> None:
    resolver = Resolver(["Note.md", "b/Note.md"])
    assert resolver.resolve(Link("Note", "wiki", 1), "b/x.md").path == "Note.md"


def test_exact_case_breaks_a_tie() -> None:
    resolver = Resolver(["note.md", "Note.md"])
    assert resolver.resolve(Link("Note", "wiki", 1), "x.md").path == "Note.md"
    assert resolver.resolve(Link("note", "wiki", 1), "x.md").path == "note.md"


def test_wiki_paths_with_dots_are_relative_to_the_source() -> None:
    assert resolve("../Beta", "Archive/Old/Gamma.md").path == "Archive/Beta.md"
    assert resolve("./Alpha", "Projects/Beta.md").path == "Projects/Alpha.md"
    assert resolve("./Alpha", "Home.md") == Resolved(Link("./Alpha", "wiki", 1), None, "unresolved")


@pytest.mark.parametrize("target, source, kind", [
    ("../Home", "Home.md", "wiki"),
    ("../../Home", "Projects/Alpha.md", "wiki"),
    ("Projects/../../Home", "Home.md", "wiki"),
    ("../Home.md", "Home.md", "markdown"),
    ("../../../Home.md", "Archive/Old/Gamma.md", "markdown"),
    ("/../Home.md", "Home.md", "markdown"),
])
def test_climbing_above_the_root_is_outside_whatever_exists(target: str, source: str, kind: str) -> None:
    assert resolve(target, source, kind) == Resolved(Link(target, kind, 1), None, "outside")


@pytest.mark.parametrize("target, source, path", [
    ("Beta.md", "Archive/x.md", "Archive/Beta.md"),  # beside the source
    ("../Projects/Beta.md", "Archive/x.md", "Projects/Beta.md"),
    ("./Beta.md", "Projects/x.md", "Projects/Beta.md"),
    ("Projects/Alpha.md", "Archive/x.md", "Projects/Alpha.md"),  # not beside: a vault path
    ("Alpha.md", "Archive/x.md", "Projects/Alpha.md"),  # nor a vault path: by basename
    ("Old/Gamma.md", "Home.md", "Archive/Old/Gamma.md"),  # a path suffix
    ("My Note.md", "Projects/x.md", "My Note.md"),
    ("Alpha", "Projects/x.md", "Projects/Alpha.md"),
    ("/Projects/Alpha.md", "Archive/x.md", "Projects/Alpha.md"),
    ("../img/a.png", "Projects/x.md", "img/a.png"),
])
def test_markdown_links_are_relative_first_then_vault_paths_then_basenames(target: str, source: str,
                                                                          path: str) -> None:
    assert resolve(target, source, "markdown").path == path


@pytest.mark.parametrize("target, source", [("./Alpha.md", "Archive/x.md"), ("../Alpha.md", "Archive/x.md"),
                                            ("/Alpha.md", "Home.md")])
def test_explicit_markdown_paths_do_not_fall_back_to_basenames(target: str, source: str) -> None:
    assert resolve(target, source, "markdown").reason == "unresolved"


def test_self_links_resolve_to_the_source() -> None:
    assert resolve("", "Projects/Alpha.md") == Resolved(Link("", "wiki", 1), "Projects/Alpha.md", "self")
    assert resolve("Alpha", "Projects/Alpha.md") == Resolved(Link("Alpha", "wiki", 1), "Projects/Alpha.md", "self")
    assert resolve("Alpha.md", "Projects/Alpha.md", "markdown").reason == "self"
    resolver = Resolver([])  # a source that is not indexed still names itself
    assert resolver.resolve(Link("Me", "wiki", 1), "notes/Me.md") == Resolved(Link("Me", "wiki", 1), "notes/Me.md",
                                                                               "self")
    assert resolver.resolve(Link("../Me.md", "markdown", 1), "notes/Me.md").reason == "unresolved"


def test_files_not_in_the_path_list_are_unresolved() -> None:
    resolver = Resolver(["Visible.md"])
    for target in (".hidden/Secret", "Secret", "Ignored.md"):
        assert resolver.resolve(Link(target, "wiki", 1), "Visible.md").reason == "unresolved"


def test_resolve_all_keeps_broken_links_and_drops_plain_values_that_name_nothing() -> None:
    text = ("---\nup: Alpha\ntitle: Beta\nstatus: done\nproject: \"[[Nowhere]]\"\nnext: \"[[Beta]]\"\n---\n"
            "[[Alpha#Goals]] [[Missing]] ![[lost.png]] [gone](gone.md) [[#Top]] [[../Out]]\n")
    got = [(r.link.kind, r.link.target, r.path, r.reason) for r in resolve_all(text, "Projects/Beta.md",
                                                                                Resolver(VAULT))]
    assert got == [
        ("frontmatter", "Alpha", "Projects/Alpha.md", ""),  # title: Beta (the note itself), status: done dropped
        ("frontmatter", "Nowhere", None, "unresolved"),  # a [[link]] in frontmatter is kept like any link
        ("frontmatter", "Beta", "Projects/Beta.md", "self"),
        ("wiki", "Alpha", "Projects/Alpha.md", ""),
        ("wiki", "Missing", None, "unresolved"),
        ("embed", "lost.png", None, "unresolved"),
        ("markdown", "gone.md", None, "unresolved"),
        ("wiki", "", "Projects/Beta.md", "self"),
        ("wiki", "../Out", None, "unresolved"),
    ]


# The real vault


def test_the_italian_obsidian_help_vault_resolves() -> None:
    if not ITALIAN_VAULT.is_dir():
        pytest.skip(f"the Obsidian help corpus is not on this machine ({ITALIAN_VAULT})")
    paths = sorted(p.relative_to(ITALIAN_VAULT).as_posix() for p in ITALIAN_VAULT.rglob("*") if p.is_file())
    resolver = Resolver(paths)
    known = set(paths)
    wiki = resolved = 0
    for path in paths:
        if not path.endswith(".md"):
            continue
        for result in resolve_all((ITALIAN_VAULT / path).read_text(encoding="utf-8"), path, resolver):
            assert result.path is None or result.path in known, result
            if result.link.kind == "wiki":
                wiki += 1
                resolved += result.path is not None
    share = resolved / wiki if wiki else 0.0
    print(f"obsidian-help/it: {resolved} of {wiki} wiki links resolve ({share:.1%})")
    assert wiki > 1000 and share >= 0.9, f"{resolved} of {wiki} wiki links resolve ({share:.1%})"
