"""Grid over fusion method × vector weight × candidate pool on one collection, at query time.

Benchmark, not a test: it reuses the index `brain eval` built (same cache folder
and settings), encodes each query once, and replays the real candidate
gathering (Searcher._candidates) and the real fusion (fusion.fuse) for every
combination, then scores the per-file rankings with ranx like `brain eval`.

    PYTHONPATH=tools/lib python tools/bench/fusion_grid.py ../shared/data/scifact --split train
    PYTHONPATH=tools/lib python tools/bench/fusion_grid.py ../shared/data/squad-it --limit-queries 500 --json out.json
    PYTHONPATH=tools/lib python tools/bench/fusion_grid.py --notes examples/agency \
        --queries tools/bench/judged/agency.jsonl
    PYTHONPATH=tools/lib python tools/bench/fusion_grid.py --notes examples/agency \
        --queries tools/bench/judged/agency.jsonl \
        --methods zscore --weights 0.7 --pools 200 --field-powers off,1,2,2.5,3,4
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time

from brain import evaluation, spelling
from brain.config import FUSION_METHODS
from brain.embeddings import Embedder
from brain.fusion import Candidates, fuse
from brain.search import IndexProfile, Searcher, query_terms
from collection_args import add_collection_arguments, load_collection


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_collection_arguments(parser)
    parser.add_argument("--methods", default=",".join(FUSION_METHODS))
    parser.add_argument("--weights", default="0.3,0.4,0.5,0.6,0.7,0.8")
    parser.add_argument("--pools", default="50,100,200,400")
    parser.add_argument("--gaps", default="",
                        help="also try the vector weight scaled by min(1, (cos1 - cos10) / GAP), e.g. 0.1,0.15")
    parser.add_argument("--ratios", default="",
                        help="also try the vector weight scaled by min(1, (vector spread / keyword relative spread) "
                        "/ RATIO)")
    parser.add_argument("--coverage-powers", default="",
                        help="also try w' = 1 - (1 - w) × coverage^POWER, coverage = share of query terms found in "
                        "the index, e.g. 1,2")
    parser.add_argument("--field-powers", default="",
                        help="also try w' = (1 - (1 - w) × coverage) × (1 - share^POWER), share = query words in "
                        "the best BM25 note's title/frontmatter (fusion.FIELD_MATCH_POWER), e.g. 1,2,3; "
                        "'off' = share 0")
    parser.add_argument("--json", default=None, metavar="FILE", help="write every row here too")
    args = parser.parse_args()

    collection = load_collection(args)
    settings = collection.settings
    embedder = Embedder(settings)
    evaluation._prepare_index(collection, embedder, show_progress=False)  # builds or reuses, like brain eval
    searcher = Searcher(settings, embedder)
    vectors: dict[str, object] = {}
    encode = embedder.encode_query
    embedder.encode_query = lambda text: vectors.setdefault(text, encode(text))  # type: ignore[method-assign]

    store = searcher.store
    file_of = {cid: fid for cid, fid in zip(*[a.tolist() for a in searcher._vector_data()[:2]])}
    for cid, fid in store.conn.execute("SELECT id, file_id FROM chunks"):  # chunks without vectors too
        file_of[cid] = fid
    path_of = {row.id: row.path for row in store.all_files().values()}

    methods = args.methods.split(",")
    weights = [float(w) for w in args.weights.split(",")]
    pools = [int(p) for p in args.pools.split(",")]
    runs: dict[tuple[str, float, int], dict[str, dict[str, float]]] = {}
    single: dict[tuple[str, int], dict[str, dict[str, float]]] = {}
    started = time.monotonic()

    def ranking(fused: dict) -> dict[str, float]:
        order = sorted(fused.items(), key=lambda item: (-item[1].score, item[0]))
        docs: dict[str, float] = {}
        for cid, _ in order:
            doc = collection.doc_id(path_of[file_of[cid]])
            if doc not in docs:
                docs[doc] = float(evaluation.RESULTS_PER_QUERY - len(docs))
                if len(docs) == evaluation.RESULTS_PER_QUERY:
                    break
        return docs

    for n, (qid, text) in enumerate(collection.queries.items(), 1):
        if not query_terms(text):
            continue
        profile = IndexProfile.of(searcher.store)
        match = searcher.keyword_query(text, profile)  # the query's words as the index stores them
        prefix = collection.paths.get(qid)
        allowed = searcher._allowed_files([(prefix, False)] if prefix else [], [])  # as search() reads --path
        # Typo corrections as search() makes them (the vector half reads them too), so the candidates are the
        # ones search sees.
        corrections = searcher.corrections(text, profile)
        also = [(" OR ".join(f'"{t}"' for t in c.terms), spelling.EXPANSION_WEIGHT) for c in corrections]
        meaning = spelling.corrected(text, corrections, profile.languages)
        for pool in pools:
            found = searcher._candidates(text, match, "hybrid", pool, allowed, profile, also, corrections, meaning)
            if pool == max(pools):
                # The single halves, as their own modes rank them: each half's own top `pool` chunks.
                by_bm25 = sorted((c for c in found.ids if found.keyword.get(c, 0) > 0),
                                 key=lambda c: (-found.keyword[c], c))
                by_cosine = sorted(found.cosine, key=lambda c: (-found.cosine[c], c))
                for mode, ids in (("bm25", by_bm25[:pool]), ("vector", by_cosine[:pool])):
                    part = Candidates(use_keyword=mode == "bm25", use_vector=mode == "vector", ids=ids,
                                      keyword=found.keyword, cosine=found.cosine)
                    single.setdefault((mode, pool), {})[qid] = ranking(
                        fuse(part, mode=mode, method="linear", vector_weight=0.0)
                    )
            for method, weight in itertools.product(methods, weights):
                fused = fuse(found, mode="hybrid", method=method, vector_weight=weight)
                runs.setdefault((method, weight, pool), {})[qid] = ranking(fused)
            top = sorted(found.cosine.values(), reverse=True)
            spread = top[0] - top[min(9, len(top) - 1)] if top else 0.0
            kw_top = sorted(found.keyword.values(), reverse=True)
            kw_spread = (kw_top[0] - kw_top[min(9, len(kw_top) - 1)]) / kw_top[0] if kw_top and kw_top[0] > 0 else 0.0
            for item in [r for r in args.ratios.split(",") if r]:
                # RATIO or RATIO^POWER: a steeper scaling below the ratio.
                # RATIO[^POWER][@CAP]: CAP > 1 also raises the weight where the vector half is the sharper one.
                head, _, text_cap = item.partition("@")
                text_ratio, _, text_power = head.partition("^")
                ratio, power, cap = float(text_ratio), float(text_power or 1), float(text_cap or 1)
                scale = 1.0 if kw_spread <= 0 else min(cap, spread / kw_spread / ratio) ** power
                for method, weight in itertools.product(methods, weights):
                    fused = fuse(found, mode="hybrid", method=method, vector_weight=min(1.0, weight * scale))
                    runs.setdefault((f"{method}/r{item}", weight, pool), {})[qid] = ranking(fused)
            for power in [float(x) for x in args.coverage_powers.split(",") if x]:
                for method, weight in itertools.product(methods, weights):
                    w = 1.0 - (1.0 - weight) * found.coverage ** power
                    fused = fuse(found, mode="hybrid", method=method, vector_weight=w)
                    runs.setdefault((f"{method}/c{power:g}", weight, pool), {})[qid] = ranking(fused)
            for item in [x for x in args.field_powers.split(",") if x]:
                share = 0.0 if item == "off" else found.field_share ** float(item)
                for method, weight in itertools.product(methods, weights):
                    w = (1.0 - (1.0 - weight) * found.coverage) * (1.0 - share)
                    fused = fuse(found, mode="hybrid", method=method, vector_weight=w)
                    runs.setdefault((f"{method}/f{item}", weight, pool), {})[qid] = ranking(fused)
            for gap in [float(g) for g in args.gaps.split(",") if g]:
                for method, weight in itertools.product(methods, weights):
                    w = weight * min(1.0, spread / gap)
                    fused = fuse(found, mode="hybrid", method=method, vector_weight=w)
                    runs.setdefault((f"{method}/g{gap}", weight, pool), {})[qid] = ranking(fused)
        if n % 100 == 0:
            sys.stderr.write(f"{n}/{len(collection.queries)} queries, {time.monotonic() - started:.0f}s\n")

    rows = []
    kinds: dict[str, dict[str, float]] = {}  # row label → MRR@10 per kind of query (judged notes sets)
    for (mode, pool), run in sorted(single.items()):
        means, each = evaluation.score_run(collection.qrels, run)
        rows.append({"method": mode, "weight": None, "pool": pool, **means})
        kinds[f"{mode} {pool}"] = {k: v["mrr@10"] for k, v in evaluation._by_kind(collection.kinds, each).items()}
    for (method, weight, pool), run in sorted(runs.items()):
        means, each = evaluation.score_run(collection.qrels, run)
        rows.append({"method": method, "weight": weight, "pool": pool, **means})
        kinds[f"{method} {weight:.2f} {pool}"] = {
            k: v["mrr@10"] for k, v in evaluation._by_kind(collection.kinds, each).items()
        }
    print(f"{collection.name} ({collection.split}) {len(collection.queries)} queries; settings "
          + ", ".join(f"{k}={settings[k]}" for k in evaluation.INDEX_KEYS))
    print(f"{'method':<12} {'w':>4} {'pool':>5} " + " ".join(f"{t:>8}" for t in evaluation.METRICS.values()))
    for row in rows:
        w = "" if row["weight"] is None else f"{row['weight']:.2f}"
        print(f"{row['method']:<12} {w:>4} {row['pool']:>5} " + " ".join(f"{row[m]:8.4f}" for m in evaluation.METRICS))
    if collection.kinds:
        names = sorted({k for row in kinds.values() for k in row})
        print("\nMRR@10 per kind of query")
        print(f"{'row':<24} " + " ".join(f"{n[:11]:>11}" for n in names))
        for label, row in kinds.items():
            print(f"{label:<24} " + " ".join(f"{row.get(n, 0.0):11.3f}" for n in names))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"collection": collection.name, "split": collection.split, "queries": len(collection.queries),
                       "rows": rows}, handle, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
