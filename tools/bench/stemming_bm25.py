"""Is stemming worth it for the keyword half? BM25 alone, per tokenizer, on a BEIR-layout collection.

Benchmark, not a test. Builds throw-away in-memory FTS5 tables over the whole
documents (title + text) — no embeddings, so it runs in seconds — and compares:

* `unicode61`: unicode61 remove_diacritics 2 (brain's first tokenizer)
* `porter`:    porter unicode61 remove_diacritics 2 (FTS5's built-in English stemmer)
* `snowball-LANG`: words stemmed in Python with Snowball (the snowballstemmer package, dev extra; e.g. italian) before
  unicode61 indexes them, queries stemmed the same way. SQLite's Python module
  cannot register an FTS5 tokenizer, so this is what Italian stemming would cost
  to build: a stemmed copy of every chunk's text.

Queries are OR-joined words (as brain's fts_match does); scores via ranx like `brain eval`.

    PYTHONPATH=tools/lib python tools/bench/stemming_bm25.py ../shared/data/squad-it --limit-queries 500 \
        --snowball italian
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import unicodedata

from brain import evaluation
from brain.search import fts_match

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _fold(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", word.lower()) if not unicodedata.combining(c))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection")
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--snowball", action="append", default=[], metavar="LANGUAGE", help="e.g. italian, english")
    args = parser.parse_args()

    folder = evaluation.Path(args.collection).resolve()
    corpus = next(folder / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if (folder / n).is_file())
    docs = [(str(r["_id"]), f"{r.get('title') or ''}\n\n{r.get('text') or ''}") for r in evaluation._read_jsonl(corpus)]
    qrels = evaluation._read_qrels(folder / "qrels" / f"{args.split}.tsv")
    texts = {str(r["_id"]): str(r["text"]) for r in evaluation._read_jsonl(folder / "queries.jsonl")}
    picked = evaluation._pick([q for q in texts if q in qrels], args.limit_queries)
    qrels = {q: qrels[q] for q in picked}

    variants: dict[str, tuple[str, object]] = {
        "unicode61": ("unicode61 remove_diacritics 2", None),
        "porter": ("porter unicode61 remove_diacritics 2", None),
    }
    for language in args.snowball:
        import snowballstemmer

        # LANGUAGE+porter: Snowball first, then FTS5's porter tokenizer on top (for mixed-language notes).
        base, _, then = language.partition("+")
        stemmer = snowballstemmer.stemmer(base)
        tokenizer = "porter unicode61 remove_diacritics 2" if then == "porter" else "unicode61 remove_diacritics 2"
        variants[f"snowball-{language}"] = (tokenizer, stemmer)

    print(f"{folder.name} ({args.split}), {len(picked)} queries, {len(docs)} documents, BM25 only, whole documents")
    print(f"{'tokenizer':<20} " + " ".join(f"{t:>8}" for t in evaluation.METRICS.values()))
    for name, (tokenizer, stemmer) in variants.items():

        def prepare(text: str) -> str:
            if stemmer is None:
                return text
            return " ".join(stemmer.stemWords([_fold(w) for w in _WORD.findall(text)]))  # type: ignore[attr-defined]

        conn = sqlite3.connect(":memory:")
        conn.execute(f"CREATE VIRTUAL TABLE d USING fts5(doc_id UNINDEXED, body, tokenize='{tokenizer}')")
        conn.executemany("INSERT INTO d(doc_id, body) VALUES (?, ?)", [(i, prepare(t)) for i, t in docs])
        run: dict[str, dict[str, float]] = {}
        for qid in picked:
            match = fts_match(prepare(texts[qid]))
            if match is None:
                continue
            rows = conn.execute("SELECT doc_id FROM d WHERE d MATCH ? ORDER BY bm25(d) LIMIT 100", (match,)).fetchall()
            run[qid] = {doc: float(100 - i) for i, (doc,) in enumerate(rows)}
        means, _ = evaluation.score_run(qrels, run)
        print(f"{name:<20} " + " ".join(f"{means[m]:8.4f}" for m in evaluation.METRICS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
