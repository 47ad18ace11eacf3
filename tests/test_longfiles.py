"""Long files and exact lookups: search excerpts, `ask`, `grep` and byte-range `get`, end to end.

One notes folder for the whole module: a generated 60-page PDF manual whose
answer sits on page 40 (and an invoice number on page 52), a Markdown note and
a text file with one very long line. `ask` talks to a real HTTP server on
loopback that speaks the OpenAI chat completions API with streaming.
"""

from __future__ import annotations

import io
import json
import random
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from helpers import PROJECT, run_cli, write

ANSWER = "Per limitare le connessioni al database impostare pool_mode = transaction"
INVOICE_LINE = "Fattura FT-2026-0412 del fornitore Rossi, importo 1.250,00 euro."
QUESTION = "Come si imposta pool_mode in PgBouncer?"


def manual_pdf(pages: int = 60, title: str = "Manuale di installazione - Server XYZ") -> bytes:
    """A 60-page manual: cover, table of contents, filler chapters; the answer on page 40, an invoice on page 52."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    rnd = random.Random(7)
    words = "sistema server utente rete servizio disco memoria processo registro accesso modulo backup replica".split()
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4)
    for number in range(1, pages + 1):
        lines: list[str]
        if number == 1:
            lines = [title, "1. Introduzione",
                     "Questo documento descrive installazione e manutenzione del Server XYZ."]
        elif number == 2:
            lines = ["Indice"] + [f"{c}. Capitolo {c} .......... {c * 5}" for c in range(1, 12)]
        else:
            lines = [f"Capitolo {number // 5} - pagina {number}"]
            lines += [" ".join(rnd.choice(words) for _ in range(11)) for _ in range(9)]
            if number == 40:
                lines += ["7.3 Connection pooling con PgBouncer", ANSWER,
                          "e max_client_conn = 400 nel file pgbouncer.ini."]
            if number == 52:
                lines.append(INVOICE_LINE)
        y = 800
        for line in lines:
            pdf.drawString(50, y, line)
            y -= 14
        pdf.showPage()
    pdf.save()
    return out.getvalue()


@pytest.fixture(scope="module")
def long_notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The notes folder above, indexed once for the module (read-only for tests)."""
    root = tmp_path_factory.mktemp("long") / "notes"
    write(root, {
        "manuals/manuale.pdf": manual_pdf(),
        "fornitori.md": "---\ntags: [fornitori]\n---\n# Fornitori\n\n- Rossi srl: ferramenta, fatture trimestrali\n",
        "long-line.txt": "a" * 30000 + "b\nsecond line\n",
    })
    from brain import Brain

    report = Brain(root).index()
    assert not report.failed, report.failed
    return root


def pdf_lines(root: Path) -> list[str]:
    """The PDF's text extracted here with pypdfium2 directly, pages joined line-wise (an independent reference)."""
    import pypdfium2

    document = pypdfium2.PdfDocument(root / "manuals" / "manuale.pdf")
    lines: list[str] = []
    for page in document:
        lines.extend(page.get_textpage().get_text_bounded().replace("\r\n", "\n").split("\n"))
    document.close()
    return lines


def cli_json(*args: str, env: dict[str, str] | None = None) -> Any:
    result = run_cli(*args, "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# ---------------------------------------------------------------- search --excerpt-chars


@pytest.mark.slow
def test_search_excerpt_includes_the_answer_on_page_40(long_notes: Path) -> None:
    data = cli_json("--root", str(long_notes), "search", "pool_mode PgBouncer connessioni", "--excerpt-chars", "3000")
    hit = next(h for h in data["results"] if h["path"] == "manuals/manuale.pdf")
    assert ANSWER in hit["excerpt"]
    assert "[...]" in hit["excerpt"]
    assert len(hit["excerpt"]) <= 3000
    # 3,000 characters hold windows on the manual's two best passages; a budget where each window still
    # gets a chunk's length opens with the head as well.
    wide = cli_json("--root", str(long_notes), "search", "pool_mode PgBouncer connessioni", "--excerpt-chars", "6000")
    wide_hit = next(h for h in wide["results"] if h["path"] == "manuals/manuale.pdf")
    assert wide_hit["excerpt"].startswith("Manuale di installazione - Server XYZ")
    assert ANSWER in wide_hit["excerpt"]
    assert hit["content_len"] == len("\n".join(pdf_lines(long_notes)))
    # A short file comes back whole.
    short = cli_json("--root", str(long_notes), "search", "fornitori Rossi", "--excerpt-chars", "3000",
                     "--path-prefix", "fornitori.md")
    assert short["results"][0]["excerpt"].strip().endswith("fatture trimestrali")


def test_search_without_the_flag_keeps_its_json_keys(long_notes: Path) -> None:
    data = cli_json("--root", str(long_notes), "search", "pool_mode", "--mode", "bm25")
    assert set(data) == {"query", "mode", "results", "dropped", "seconds"}
    assert set(data["results"][0]) == {
        "path", "score", "relevance", "vector_score", "keyword_score", "start_line", "end_line", "preview", "stale",
        "heading_path", "pages", "page_labels", "chunk_id", "line", "offset",
    }


# ---------------------------------------------------------------- grep and get


def test_grep_finds_the_invoice_in_the_pdf_with_its_line_offset_and_page(long_notes: Path) -> None:
    data = cli_json("--root", str(long_notes), "grep", r"FT-2026-0[0-9]{3}", "-C", "1")
    assert [m["path"] for m in data["matches"]] == ["manuals/manuale.pdf"]
    match = data["matches"][0]
    lines = pdf_lines(long_notes)
    line_index = lines.index(INVOICE_LINE)
    text = "\n".join(lines)
    assert match["line"] == line_index + 1
    assert match["offset"] == len(text[: text.index("FT-2026-0412")].encode("utf-8"))
    assert match["text"] == INVOICE_LINE
    assert match["match"] == "FT-2026-0412"
    assert match["page"] == 52
    assert match["before"] == [lines[line_index - 1]]

    got = cli_json("--root", str(long_notes), "get", "manuals/manuale.pdf", "--offset", str(match["offset"]),
                   "--length", "40")
    assert got["text"].startswith("FT-2026-0412 del fornitore Rossi")
    assert got["pages"] == [52]
    assert got["page_count"] == 60
    assert got["total"] == len(text.encode("utf-8"))


def test_grep_text_output_and_case(long_notes: Path) -> None:
    result = run_cli("--root", str(long_notes), "grep", "ft-2026-0412")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("manuals/manuale.pdf:")
    assert "[p. 52] Fattura FT-2026-0412" in result.stdout
    exact = run_cli("--root", str(long_notes), "grep", "ft-2026-0412", "--case-sensitive")
    assert exact.returncode == 1 and exact.stdout == ""  # as grep and ripgrep: 1 when nothing matches
    assert "no matches" in exact.stderr


def test_grep_limit_caps_matches_and_says_more_exist(long_notes: Path) -> None:
    data = cli_json("--root", str(long_notes), "grep", "server", "--limit", "3")
    assert len(data["matches"]) == 3
    assert data["truncated"] is True
    too_many = run_cli("--root", str(long_notes), "grep", "server", "--limit", "501")
    assert too_many.returncode == 2
    assert "501 is not in the range 1<=x<=500" in too_many.stderr


def test_catastrophic_pattern_on_a_long_line_returns_promptly(long_notes: Path) -> None:
    # A backtracking engine takes exponential time on this; RE2 is linear.
    result = run_cli("--root", str(long_notes), "grep", "(a+)+$", "--path", "long-line.txt", "--json", timeout=120)
    assert result.returncode == 1, result.stderr  # nothing matched, in time
    assert json.loads(result.stdout)["matches"] == []
    found = cli_json("--root", str(long_notes), "grep", "(a+)+b$", "--path", "long-line.txt")
    assert found["matches"][0]["line"] == 1 and found["matches"][0]["offset"] == 0
    assert len(found["matches"][0]["text"]) <= 502  # a long line is shown around the match


@pytest.mark.parametrize("pattern", ["(unclosed", "(?=lookahead)", r"(a)\1"])
def test_invalid_pattern_is_one_clear_line_exit_2(long_notes: Path, pattern: str) -> None:
    result = run_cli("--root", str(long_notes), "grep", pattern)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("brain: invalid regular expression")
    assert pattern in lines[0] and "Traceback" not in result.stderr


def test_get_whole_file_and_header(long_notes: Path) -> None:
    # The frontmatter (three lines, blanked to keep line numbers) is skipped, and the header says which bytes came.
    result = run_cli("--root", str(long_notes), "get", "fornitori.md")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# Fornitori\n")
    assert result.stderr.startswith("fornitori.md: bytes 3-")
    assert "(lines 4-" in result.stderr and "3 bytes of blank lines before it skipped" in result.stderr
    assert "more from --offset" not in result.stderr  # the whole note came
    part = run_cli("--root", str(long_notes), "get", "fornitori.md", "--length", "20")
    assert part.returncode == 0 and "; more from --offset 23)" in part.stderr, part.stderr


def test_get_skips_blank_frontmatter_and_its_offsets_agree_with_grep(long_notes: Path) -> None:
    whole = cli_json("--root", str(long_notes), "get", "fornitori.md")
    assert whole["offset"] == 3 and whole["blank_skipped"] == 3 and whole["start_line"] == 4
    assert whole["end"] == whole["total"] and whole["text"].startswith("# Fornitori")
    part = cli_json("--root", str(long_notes), "get", "fornitori.md", "--offset", "1", "--length", "11")
    assert (part["offset"], part["length"], part["text"], part["blank_skipped"]) == (3, 11, "# Fornitori", 2)
    hit = cli_json("--root", str(long_notes), "grep", "Rossi", "--path", "fornitori.md")["matches"][0]
    there = cli_json("--root", str(long_notes), "get", "fornitori.md", "--offset", str(hit["offset"]), "--length", "5")
    assert there["offset"] == hit["offset"] and there["text"] == "Rossi" and "blank_skipped" not in there
    assert there["start_line"] == hit["line"]


def test_ask_and_excerpts_do_not_open_with_blank_frontmatter(long_notes: Path) -> None:
    sources = cli_json("--root", str(long_notes), "ask", "fornitori Rossi", "-k", "1")["sources"]
    assert sources[0]["path"] == "fornitori.md" and sources[0]["excerpt"].startswith("# Fornitori")
    found = cli_json("--root", str(long_notes), "search", "fornitori Rossi", "--excerpt-chars", "300",
                     "--path-prefix", "fornitori.md")
    assert found["results"][0]["excerpt"].startswith("# Fornitori")


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["manuals/manuale.pdf", "--offset", "-1"], 2, "-1 is not in the range x>=0"),
        (["manuals/manuale.pdf", "--offset", "99999999"], 2, "past the end"),
        (["manuals/manuale.pdf", "--length", "-5"], 2, "-5 is not in the range 1<=x<=200000"),
        (["../outside.md"], 2, "leaves the notes root"),
        (["manuals/../../outside.md"], 2, "leaves the notes root"),
        (["/etc/passwd"], 2, "outside the notes root"),
        (["missing.md"], 1, "not in the index"),
    ],
)
def test_get_bad_inputs_are_clear_errors(long_notes: Path, args: list[str], code: int, words: str) -> None:
    result = run_cli("--root", str(long_notes), "get", *args)
    assert result.returncode == code, result.stderr
    assert words in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_grep_file_may_name_a_folder(long_notes: Path) -> None:
    data = cli_json("--root", str(long_notes), "grep", "rossi", "--path", "manuals/")
    assert {m["path"] for m in data["matches"]} == {"manuals/manuale.pdf"}
    everywhere = cli_json("--root", str(long_notes), "grep", "rossi")
    assert {m["path"] for m in everywhere["matches"]} == {"fornitori.md", "manuals/manuale.pdf"}


def test_search_excerpt_size_is_checked(long_notes: Path) -> None:
    result = run_cli("--root", str(long_notes), "search", "pool_mode", "--excerpt-chars", "10")
    assert result.returncode == 2 and "10 is not in the range 100<=x<=50000" in result.stderr
    result = run_cli("--root", str(long_notes), "search", "pool_mode", "--excerpt-chars", "50001")
    assert result.returncode == 2 and "50001 is not in the range 100<=x<=50000" in result.stderr


def test_grep_file_outside_the_index_is_an_error(long_notes: Path) -> None:
    result = run_cli("--root", str(long_notes), "grep", "x", "--path", "../../etc/passwd")
    assert result.returncode == 2 and "leaves the notes root" in result.stderr


# ---------------------------------------------------------------- ask


def test_ask_show_prompt_includes_the_passage_from_page_40(long_notes: Path) -> None:
    result = run_cli("--root", str(long_notes), "ask", QUESTION, "--show-prompt")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("--- system ---")
    assert "--- user ---" in out and f"Question: {QUESTION}" in out
    assert ANSWER in out
    assert '<file path="manuals/manuale.pdf"' in out and "[page 40]" in out
    assert "Manuale di installazione - Server XYZ" in out  # the head comes too


def test_ask_without_a_model_lists_its_sources_and_how_to_configure(long_notes: Path) -> None:
    result = run_cli("--root", str(long_notes), "ask", QUESTION, "--budget", "3000")
    assert result.returncode == 0, result.stderr
    assert "=== manuals/manuale.pdf (" in result.stdout and "pages" in result.stdout
    assert ANSWER in result.stdout
    last = result.stdout.strip().splitlines()[-1]
    assert "no language model configured" in last and "ask.model" in last


def test_ask_script_does_what_brain_ask_does(long_notes: Path) -> None:
    import subprocess

    script = PROJECT / "tools" / "vector" / "ask.py"
    result = subprocess.run([sys.executable, str(script), "--root", str(long_notes), QUESTION, "--show-prompt"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert ANSWER in result.stdout


class _ChatHandler(BaseHTTPRequestHandler):
    """The OpenAI chat completions endpoint, streaming its answer as server-sent events."""

    tokens = ["Imposta ", "pool_mode = transaction ", "in pgbouncer.ini ", "[manuals/manuale.pdf, p. 40]."]

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        self.server.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})  # type: ignore[attr-defined]
        if self.path != "/v1/chat/completions" or body.get("model") != "test-model":
            payload = json.dumps(
                {"error": {"message": f"model {body.get('model')!r} not found", "type": "invalid_request_error"}}
            )
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload.encode())
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for index, token in enumerate(self.tokens):
            delta = {"role": "assistant", "content": token} if index == 0 else {"content": token}
            chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
                     "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        done = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())
        self.close_connection = True

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def chat_server() -> Any:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatHandler)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _model_env(server: Any, model: str = "test-model") -> dict[str, str]:
    return {
        "BRAIN_ASK_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}/v1",
        "BRAIN_ASK_MODEL": model,
        "BRAIN_ASK_API_KEY_ENV": "NOTES_LLM_KEY",
        "NOTES_LLM_KEY": "secret-from-env",
    }


def test_ask_streams_the_answer_from_an_openai_compatible_server(long_notes: Path, chat_server: Any) -> None:
    chat_server.seen.clear()
    result = run_cli("--root", str(long_notes), "ask", QUESTION, env=_model_env(chat_server))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "".join(_ChatHandler.tokens) + "\n"
    assert "manuals/manuale.pdf" in result.stderr
    assert len(chat_server.seen) == 1  # one call for all files
    request = chat_server.seen[0]
    assert request["auth"] == "Bearer secret-from-env"  # the key comes from the variable the settings name
    body = request["body"]
    assert body["model"] == "test-model" and body["stream"] is True
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert ANSWER in body["messages"][1]["content"]


def test_ask_prompt_shown_is_exactly_what_is_sent(long_notes: Path, chat_server: Any) -> None:
    chat_server.seen.clear()
    shown = cli_json("--root", str(long_notes), "ask", QUESTION, "--show-prompt", env=_model_env(chat_server))
    assert chat_server.seen == []  # --show-prompt calls nothing
    sent = cli_json("--root", str(long_notes), "ask", QUESTION, env=_model_env(chat_server))
    assert chat_server.seen[0]["body"]["messages"] == shown["request"]["messages"] == sent["messages"]
    assert sent["answer"] == "".join(_ChatHandler.tokens)


@pytest.mark.slow
def test_ask_server_errors_are_one_line(long_notes: Path, chat_server: Any) -> None:
    refused = run_cli("--root", str(long_notes), "ask", QUESTION, env=_model_env(chat_server, model="no-such-model"))
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1 and "HTTP 404" in refused.stderr
    env = _model_env(chat_server)
    env["BRAIN_ASK_BASE_URL"] = "http://127.0.0.1:9/v1"  # nothing listens there
    down = run_cli("--root", str(long_notes), "ask", QUESTION, env=env)
    assert down.returncode == 1
    assert down.stderr.startswith("brain: cannot reach the model at http://127.0.0.1:9/v1")
    assert down.stderr.count("\n") == 1


def test_a_key_in_place_of_its_variable_name_is_refused(long_notes: Path) -> None:
    result = run_cli("--root", str(long_notes), "ask", QUESTION, env={"BRAIN_ASK_API_KEY_ENV": "sk-abc123-secret"})
    assert result.returncode == 1
    assert "NAME of an environment variable" in result.stderr
    assert "sk-abc123" not in result.stderr


# ---------------------------------------------------------------- the core API that every front door calls


def test_brain_methods_return_objects_that_render_as_json(long_notes: Path) -> None:
    from brain import Brain

    brain = Brain(long_notes)
    found = brain.grep("ft-2026-\\d+", context=1)
    part = brain.get_file("manuals/manuale.pdf", offset=found.matches[0].offset, length=12)
    assert part.text == "FT-2026-0412"
    answer = brain.ask(QUESTION, show_prompt=True)
    hits = brain.search("pool_mode", mode="bm25", excerpt_chars=1000)
    for result in (found, part, answer, hits):
        json.dumps(result.to_dict())
    assert hits.results[0].content_len and ANSWER in hits.results[0].excerpt
    assert answer.answer is None and ANSWER in answer.sources[0].excerpt and 40 in answer.sources[0].pages


def test_grep_reads_the_files_as_they_are_now(tmp_path: Path) -> None:
    from brain import Brain

    root = tmp_path / "notes"
    write(root, {"a.md": "# A\nold words\n", "scan.pdf": manual_pdf(pages=3)})
    brain = Brain(root)
    brain.index()
    (root / "a.md").write_text("# A\nnew words: ordine 77\n", encoding="utf-8")
    found = brain.grep("ordine \\d+")
    assert [(m.path, m.line) for m in found.matches] == [("a.md", 2)]
    (root / "a.md").unlink()
    gone = brain.grep("words")
    assert gone.matches == [] and gone.skipped[0]["path"] == "a.md"
    # The PDF's text is kept in the index, so reading it needs no new extraction ...
    from brain.store import SqliteStore

    store = SqliteStore(brain.settings.database_path)
    row = store.get_file("scan.pdf")
    assert row is not None and store.extracted_text(row.hash) is not None
    store.close()
    # ... and a changed PDF is read again from disk.
    (root / "scan.pdf").write_bytes(manual_pdf(pages=2, title="Guida rapida"))
    changed = brain.grep("guida rapida")
    assert [(m.path, m.line, m.page) for m in changed.matches] == [("scan.pdf", 1, 1)]
    assert brain.get_file("scan.pdf", length=None).stale is True


# ---------------------------------------------------------------- the file's best passages


def _two_topic_book() -> str:
    """A long note whose two matches for the question are far apart: the chunk that ranks second holds the
    answer's other half."""
    lorem = "".join(f"Paragrafo {n} di riempimento sul catalogo dei ricambi e sulle consegne.\n" for n in range(60))
    return (
        "# Manuale del magazzino\n\n" + lorem
        + "Il defaultdict del modulo inventario crea da solo le voci mancanti degli scaffali.\n" + lorem
        + "## Scaffali\n\nGli scaffali del magazzino nord si inventariano ogni lunedi con il lettore ottico.\n"
        + lorem + "Gli scaffali del magazzino sud si inventariano il giovedi, a mano, su carta.\n" + lorem
    )


def test_a_long_note_excerpt_shows_its_best_passages_and_ask_sends_them(tmp_path: Path) -> None:
    from brain import Brain

    write(tmp_path, {"magazzino.md": _two_topic_book()})
    brain = Brain(tmp_path)
    brain.index()
    response = brain.search("inventario degli scaffali", excerpt_chars=2000)
    hit = response.results[0]
    assert hit.path == "magazzino.md" and hit.passages, hit
    assert "passages" not in hit.to_dict(excerpts=True)  # internal: the JSON keeps its shape
    assert hit.excerpt is not None and len(hit.excerpt) <= 2000
    assert "lunedi con il lettore ottico" in hit.excerpt and "giovedi, a mano" in hit.excerpt
    prompt = brain.ask("inventario degli scaffali", show_prompt=True, budget=2000)
    text = "\n".join(m["content"] for m in prompt.messages)
    assert "lunedi con il lettore ottico" in text and "giovedi, a mano" in text


def test_an_excerpt_matches_whole_words_as_the_index_stems_them() -> None:
    """What search hands the excerpt: a word of the text is a query word when one of the index's stemmers agrees."""
    from brain.search import same_word_test
    from brain.stemming import stemmer

    english, italian = stemmer("english"), stemmer("italian")
    same = same_word_test({english("default"), italian("scaffali")}, ["english", "italian"])
    assert same("default") and same("defaults") and same("Scaffale")
    assert not same("defaultdict") and not same("scaffalature")
