"""Answer a question from the notes: find the files, cut each to its budget, one call to a language model.

Each file found by search is read again from disk (the files are the truth)
and cut to `ask.budget_chars` with the relevant excerpt: its head plus the
window that best matches the question, so the answer on page 40 of a long PDF
reaches the model. All excerpts go to the model in a single chat call through
the `openai` client; `ask.base_url` points it at any OpenAI-compatible server
(Ollama, llama.cpp, vLLM, LM Studio, a hosted API). The settings hold only the
NAME of the environment variable with the key, never the key.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .config import Settings
from .errors import BrainError
from .excerpt import SEPARATOR, TRUNCATED, Excerpt, relevant_excerpt
from .search import SearchResponse, check_query_length, excerpt_passages, same_word_test
from .sources import page_labels_of
from .texts import FileText, TextReader, TextUnavailable, labelled_pages

SYSTEM_PROMPT = (
    "You answer questions using only the person's own notes, given below as files. "
    "After each statement, cite the file it comes from in square brackets, e.g. [projects/faro/index.md]; "
    "for PDFs add the page, e.g. [manuals/server.pdf, p. 40] "
    "(page marks like [page 40] in the text tell you where each page starts). "
    "Long files were cut: [...] marks text left out. "
    "If the notes do not contain the answer, say so plainly instead of guessing. "
    "Answer in the language of the question."
)
CONFIGURE_HINT = (
    "no language model configured: set ask.model (and ask.base_url for a local server), e.g. "
    "`brain config set ask.base_url http://localhost:11434/v1` and `brain config set ask.model llama3.2`"
)


@dataclass
class AskSource:
    """One file as it is sent to the model."""

    path: str
    excerpt: str  # exactly the text sent (page marks included)
    content_len: int  # characters of the file's whole extracted text
    truncated: bool
    pages: list[int] = field(default_factory=list)  # PDFs: pages the excerpt covers
    page_labels: list[str] = field(default_factory=list)  # PDFs with labels: the label printed on each of `pages`
    score: float = 0.0
    stale: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AskResult:
    """What `ask` sent and got back: the sources, the exact messages, the answer (None when no call was made)."""

    question: str
    sources: list[AskSource]
    messages: list[dict[str, str]]
    model: str | None
    base_url: str | None
    answer: str | None = None
    hint: str | None = None  # why no call was made, and how to make one
    skipped: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def request(self) -> dict[str, Any]:
        """The chat completions request body, as sent."""
        return {"model": self.model or "", "messages": self.messages, "stream": True}

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "model": self.model,
            "base_url": self.base_url,
            "sources": [s.to_dict() for s in self.sources],
            "messages": self.messages,
            "answer": self.answer,
            "hint": self.hint,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class ModelSettings:
    """Where the model lives and how to reach it."""

    model: str
    base_url: str
    api_key_env: str
    timeout: float

    @classmethod
    def from_settings(cls, settings: Settings, model: str | None = None) -> ModelSettings:
        return cls(
            model=(model if model is not None else settings["ask.model"]).strip(),
            base_url=settings["ask.base_url"].strip(),
            api_key_env=settings["ask.api_key_env"].strip(),
            timeout=settings["ask.timeout_seconds"],
        )

    @property
    def configured(self) -> bool:
        return bool(self.model)

    def api_key(self) -> str:
        """The key from the named environment variable (config checks it is a name); local servers need none."""
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if key:
            return key
        if not self.base_url:
            raise BrainError(
                f"no API key: set the environment variable {self.api_key_env or 'OPENAI_API_KEY'}, "
                "or point ask.base_url at a local server"
            )
        return "not-needed"  # the client insists on a value; local servers ignore it


def page_marks(document: FileText) -> list[tuple[int, str]]:
    """(character offset, "[page N]") where each PDF page starts in the text; "[page N, printed ix]" where the
    PDF prints another label on it."""
    if not document.page_starts:
        return []
    labels = document.page_labels
    wanted = {line: page for page, line in enumerate(document.page_starts, 1)}
    marks: list[tuple[int, str]] = []
    line, offset = 1, 0
    text = document.text
    while True:
        if line in wanted:
            page = wanted[line]
            label = next(iter(page_labels_of(labels, [page])), str(page))  # its number where it has no label
            printed = f", printed {label}" if label != str(page) else ""
            marks.append((offset, f"[page {page}{printed}]"))
        nxt = text.find("\n", offset)
        if nxt == -1 or len(marks) == len(wanted):
            break
        offset, line = nxt + 1, line + 1
    return marks


def render_with_marks(source: str, excerpt: Excerpt, marks: Sequence[tuple[int, str]]) -> str:
    """The excerpt's text with page marks put in front of the lines where pages start."""
    if not marks:
        return excerpt.text
    parts: list[str] = []
    for index, (start, end) in enumerate(excerpt.spans):
        if index:
            parts.append(SEPARATOR)
        # The page a span opens on, then every page that starts inside it.
        before = [label for pos, label in marks if pos <= start]
        cursor = start
        piece: list[str] = []
        if before and not any(pos == start for pos, _ in marks):
            piece.append(before[-1] + "\n")
        for pos, label in marks:
            if start <= pos < end:
                piece.append(source[cursor:pos])
                piece.append(label + "\n")
                cursor = pos
        piece.append(source[cursor:end])
        parts.append("".join(piece))
    if excerpt.truncated and excerpt.spans and excerpt.spans[-1][1] < excerpt.total_chars:
        parts.append(TRUNCATED)
    return "".join(parts)


def _covered_pages(document: FileText, excerpt: Excerpt) -> list[int]:
    pages: set[int] = set()
    text = document.text
    for start, end in excerpt.spans:
        first = text.count("\n", 0, start) + 1
        last = first + text.count("\n", start, max(start, end - 1))
        pages.update(document.pages_for_lines(first, last))
    return sorted(pages)


def gather_sources(
    reader: TextReader, question: str, response: SearchResponse, budget: int
) -> tuple[list[AskSource], list[dict[str, str]]]:
    """Each found file read from disk and cut to `budget` characters around the question."""
    found: list[AskSource] = []
    skipped: list[dict[str, str]] = []
    same_word = same_word_test(response.searched_forms, response.languages)
    for hit in response.results:
        row = reader.store.get_file(hit.path)
        if row is None:
            continue
        try:
            document = reader.read(row)
        except TextUnavailable as exc:
            skipped.append({"path": hit.path, "reason": str(exc)})
            continue
        # Around the lines that made it rank (its best chunks), as search's excerpts are.
        cut = relevant_excerpt(document.text, question, budget, **excerpt_passages(document.text, hit),
                               same_word=same_word)
        found.append(
            AskSource(
                path=document.path,
                excerpt=render_with_marks(document.text, cut, page_marks(document)),
                content_len=len(document.text),
                truncated=cut.truncated,
                pages=(covered := _covered_pages(document, cut)),
                page_labels=page_labels_of(document.page_labels, covered),
                score=hit.score,
                stale=document.stale,
            )
        )
    return found, skipped


def build_messages(question: str, found: Sequence[AskSource]) -> list[dict[str, str]]:
    """The chat messages: instructions, then the question and every excerpt in one user message."""
    blocks = [f"Question: {question.strip()}", "", f"Notes ({len(found)} file{'' if len(found) == 1 else 's'}):"]
    for source in found:
        attributes = f'path="{source.path}"'
        if source.pages:
            attributes += f' pages="{labelled_pages(source.pages, source.page_labels)}"'
        if source.truncated:
            attributes += f' excerpt_of_chars="{source.content_len}"'
        blocks.extend(["", f"<file {attributes}>", source.excerpt, "</file>"])
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n".join(blocks)}]


def stream_answer(config: ModelSettings, messages: list[dict[str, str]], on_token: Callable[[str], None] | None) -> str:
    """One streamed chat completion; returns the whole answer. Connection problems become one-line BrainErrors."""
    import openai

    client = openai.OpenAI(
        base_url=config.base_url or None, api_key=config.api_key(), timeout=config.timeout, max_retries=0
    )
    where = config.base_url or "the OpenAI API"
    parts: list[str] = []
    try:
        stream = client.chat.completions.create(model=config.model, messages=messages, stream=True)  # type: ignore[arg-type]
        for chunk in stream:
            for choice in getattr(chunk, "choices", None) or []:  # a stream of ChatCompletionChunk
                token = choice.delta.content if choice.delta is not None else None
                if token:
                    parts.append(token)
                    if on_token is not None:
                        on_token(token)
    except openai.APITimeoutError:
        raise BrainError(
            f"the model at {where} did not answer within {config.timeout:g}s; "
            "raise ask.timeout_seconds or check the server"
        ) from None
    except openai.APIConnectionError as exc:
        cause = exc.__cause__ or exc
        raise BrainError(
            f"cannot reach the model at {where} ({_one_line(cause)}); start the server or fix ask.base_url"
        ) from None
    except openai.APIStatusError as exc:
        raise BrainError(
            f"the model server at {where} refused the request (HTTP {exc.status_code}: {_one_line(exc.message)}); "
            "check ask.model and the API key variable"
        ) from None
    except openai.OpenAIError as exc:
        raise BrainError(f"the model call failed ({_one_line(exc)}); check ask.base_url and ask.model") from None
    return "".join(parts)


def _one_line(value: object) -> str:
    text = " ".join(str(value).split())
    return text[:200] + ("…" if len(text) > 200 else "")


def ask(
    settings: Settings,
    reader: TextReader,
    search: Callable[..., SearchResponse],
    question: str,
    *,
    budget: int | None = None,
    max_files: int | None = None,
    model: str | None = None,
    show_prompt: bool = False,
    on_token: Callable[[str], None] | None = None,
    search_options: dict[str, Any] | None = None,
) -> AskResult:
    """Find the files for `question`, cut them, and (unless there is no model or only the prompt is
    wanted) ask the model."""
    started = time.monotonic()
    if not question or not question.strip():
        raise BrainError("empty question; type what you want to know", usage=True)
    check_query_length(question, "question")
    # The settings were checked when loaded; only what the caller passes is checked here.
    if budget is not None and budget < 200:
        raise BrainError(f"budget must be at least 200 characters per file, got {budget}", usage=True)
    budget = settings["ask.budget_chars"] if budget is None else budget
    if max_files is not None and max_files < 1:
        raise BrainError(f"max files must be at least 1, got {max_files}", usage=True)
    max_files = settings["ask.max_files"] if max_files is None else max_files
    config = ModelSettings.from_settings(settings, model)
    response = search(question, limit=max_files, passages=True, **(search_options or {}))
    found, skipped = gather_sources(reader, question, response, budget)
    messages = build_messages(question, found)
    result = AskResult(
        question=question,
        sources=found,
        messages=messages,
        model=config.model or None,
        base_url=config.base_url or None,
        skipped=skipped,
    )
    if show_prompt:
        result.hint = "prompt only (--show-prompt): nothing was sent"
    elif not config.configured:
        result.hint = CONFIGURE_HINT
    elif not found:
        result.hint = "no notes match the question; nothing was sent to the model"
    else:
        result.answer = stream_answer(config, messages, on_token)
    result.seconds = time.monotonic() - started
    return result
