#!/usr/bin/env python3
"""Recomputes `govcat eval queries` independently: runs `govcat search --json` for every query
and mode, computes recall@5, MRR and nDCG@10 here (its own code, from the metric definitions
in the README), and compares them with what `govcat eval queries --json` printed.
Exits 1 if any figure differs by more than 0.005.

Usage: scripts/check-eval.py QUERIES.jsonl [--govcat target/debug/govcat] [--jobs 2]
       [-- GLOBAL FLAGS such as --catalog DIR --index DIR --ontology FILE]
"""
import argparse
import json
import math
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

MODES = ["bm25", "dense", "hybrid"]
TOLERANCE = 0.005


def load(path):
    out = []
    for line in open(path, encoding="utf-8"):
        if line.strip():
            q = json.loads(line)
            rel = q.get("relevant") or {}
            if isinstance(rel, list):
                rel = {i: 1 for i in rel}
            if rel:
                out.append((q["query"], rel))
    return out


def figures(ranked, labels):
    r5 = mrr = ndcg = 0.0
    for ids, rel in zip(ranked, labels):
        ids = ids[:10]
        top = max(rel.values())
        direct = {i for i, g in rel.items() if g == top}
        r5 += sum(1 for i in ids[:5] if i in direct) / min(5, len(direct))
        first = next((k for k, i in enumerate(ids) if i in rel), None)
        mrr += 0 if first is None else 1 / (first + 1)
        dcg = sum((2 ** rel.get(i, 0) - 1) / math.log2(k + 2) for k, i in enumerate(ids))
        ideal = sorted(rel.values(), reverse=True)[:10]
        idcg = sum((2 ** g - 1) / math.log2(k + 2) for k, g in enumerate(ideal))
        ndcg += dcg / idcg
    n = len(labels)
    return {"recall@5": r5 / n, "mrr": mrr / n, "ndcg@10": ndcg / n}


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        k = argv.index("--")
        argv, extra = argv[:k], argv[k + 1:]
    ap = argparse.ArgumentParser()
    ap.add_argument("queries")
    ap.add_argument("--govcat", default="target/debug/govcat")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    queries = load(a.queries)

    def search(args):
        text, mode = args
        out = subprocess.run(
            [a.govcat, *extra, "search", text, "--json", "--limit", "10", "--mode", mode],
            capture_output=True, text=True, check=True).stdout
        return [e["id"] for e in json.loads(out)["entries"]]

    eval_out = subprocess.run(
        [a.govcat, *extra, "eval", "queries", a.queries, "--json", "--modes", ",".join(MODES)],
        capture_output=True, text=True, check=True).stdout
    claimed = json.loads(eval_out)["modes"]
    worst = 0.0
    with ThreadPoolExecutor(a.jobs) as pool:
        for mode in MODES:
            ranked = list(pool.map(search, [(q, mode) for q, _ in queries]))
            mine = figures(ranked, [r for _, r in queries])
            for k, v in mine.items():
                d = abs(v - claimed[mode][k])
                worst = max(worst, d)
                print(f"{mode:7} {k:9} recomputed {v:.4f}  eval {claimed[mode][k]:.4f}  diff {d:.4f}")
    print(f"largest difference {worst:.4f} (tolerance {TOLERANCE})")
    sys.exit(0 if worst <= TOLERANCE else 1)


if __name__ == "__main__":
    main()
