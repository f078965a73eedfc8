#!/usr/bin/env python3
"""Fits precedent_confidence (src/precedent.rs) on the rows `govcat eval precedents` writes.

    fit-precedent.py ROWS.jsonl [ROWS.jsonl ...]

Each file is one labelled set's entries (its `set` field names it). A row is positive when its
grade is 2 (a direct precedent). The fit is a logistic regression on the features of
src/precedent.rs with every weight held at or above zero (Newton steps, ridge 1.0 on the
weights, a weight that goes negative is fixed at zero and the rest refitted) — the same
method as src/calibration.rs. The script prints, for each set, the figures of a map fitted on
the *other* sets (leave one set out): ECE over the entries, negatives answered with an entry
>= 0.5, positives whose first direct precedent is >= 0.5; then the map fitted on every set,
as the constants to paste into src/precedent.rs. WITHOUT=a,b holds those features at zero (to
compare fits). Standard library only.
"""
import json
import math
import os
import sys

FEATURES = ["description_similarity", "best_similarity", "phrasings_share",
            "description_lexical", "inverse_rank", "type_share", "name_match", "head_match"]
RIDGE = 1.0
# Features held at zero for this run (comparing fits): WITHOUT=type_share,head_match
WITHOUT = set(filter(None, os.environ.get("WITHOUT", "").split(",")))


def features(ev):
    return [
        min(max(ev["description_similarity"], 0.0), 1.0),
        min(max(ev["best_similarity"], 0.0), 1.0),
        min(max(ev["phrasings_share"], 0.0), 1.0),
        1.0 if ev["description_lexical"] else 0.0,
        1.0 / max(ev["rank"], 1),
        min(max(ev.get("type_share", 0.0), 0.0), 1.0),
        1.0 if ev.get("name_match") else 0.0,
        1.0 if ev.get("head_match") else 0.0,
    ]


def sigmoid(z):
    if z < -40:
        return 0.0
    return 1.0 / (1.0 + math.exp(-z))


def solve(a, b):
    n = len(b)
    a = [row[:] for row in a]
    b = b[:]
    for c in range(n):
        p = max(range(c, n), key=lambda i: abs(a[i][c]))
        if abs(a[p][c]) < 1e-12:
            return None
        a[c], a[p] = a[p], a[c]
        b[c], b[p] = b[p], b[c]
        for r in range(c + 1, n):
            f = a[r][c] / a[c][c]
            for k in range(c, n):
                a[r][k] -= f * a[c][k]
            b[r] -= f * b[c]
    s = [0.0] * n
    for r in reversed(range(n)):
        s[r] = (b[r] - sum(a[r][k] * s[k] for k in range(r + 1, n))) / a[r][r]
    return s


def newton(x, y, free):
    idx = [0] + [j + 1 for j in range(len(free)) if free[j]]
    beta = [0.0] * (len(free) + 1)
    mean = min(max(sum(y) / max(len(y), 1), 1e-3), 1 - 1e-3)
    beta[0] = math.log(mean / (1 - mean))
    for _ in range(50):
        m = len(idx)
        grad = [0.0] * m
        hess = [[0.0] * m for _ in range(m)]
        for xi, yi in zip(x, y):
            row = [1.0 if k == 0 else xi[k - 1] for k in idx]
            p = sigmoid(sum(beta[k] * v for k, v in zip(idx, row)))
            w = max(p * (1 - p), 1e-9)
            for a in range(m):
                grad[a] += (yi - p) * row[a]
                for b in range(m):
                    hess[a][b] += w * row[a] * row[b]
        for a in range(1, m):
            grad[a] -= RIDGE * beta[idx[a]]
            hess[a][a] += RIDGE
        step = solve(hess, grad)
        if step is None:
            break
        for a in range(m):
            beta[idx[a]] += step[a]
        if max(abs(s) for s in step) < 1e-8:
            break
    return beta


def fit(rows):
    x = [features(r["evidence"]) for r in rows]
    y = [1.0 if r["grade"] == 2 else 0.0 for r in rows]
    free = [f not in WITHOUT for f in FEATURES]
    beta = newton(x, y, free)
    for _ in range(len(FEATURES)):
        negative = [j for j in range(len(free)) if free[j] and beta[j + 1] < 0]
        if not negative:
            break
        for j in negative:
            free[j] = False
        beta = newton(x, y, free)
    return beta[0], [beta[j + 1] if free[j] else 0.0 for j in range(len(free))]


def confidence(model, ev):
    b0, w = model
    return sigmoid(b0 + sum(a * b for a, b in zip(w, features(ev))))


def report(name, model, rows):
    bins = [[0, 0.0, 0] for _ in range(10)]
    for r in rows:
        c = confidence(model, r["evidence"])
        b = bins[min(int(c * 10), 9)]
        b[0] += 1
        b[1] += c
        b[2] += r["grade"] == 2
    n = max(len(rows), 1)
    ece = sum(abs(b[2] / b[0] - b[1] / b[0]) * b[0] / n for b in bins if b[0])
    by_query = {}
    for r in rows:
        by_query.setdefault(r["query"], []).append(r)
    neg = [q for q in by_query.values() if q[0]["negative"]]
    neg_hit = sum(any(confidence(model, r["evidence"]) >= 0.5 for r in q) for q in neg)
    pos_found = pos_ok = 0
    for q in by_query.values():
        if q[0]["negative"]:
            continue
        first = next((r for r in q if r["grade"] == 2), None)
        if first is not None:
            pos_found += 1
            pos_ok += confidence(model, first["evidence"]) >= 0.5
    scored = sorted((confidence(model, r["evidence"]), r["grade"] == 2) for r in rows)
    pos = sum(p for _, p in scored)
    below = 0
    ranks = 0.0
    for _, p in scored:
        if p:
            ranks += below
        else:
            below += 1
    auc = ranks / max(pos * (len(scored) - pos), 1)
    print(f"  {name:<44} entries {len(rows):>5}  AUC {auc:.3f}  ECE {ece:.3f}  negatives with an entry >= 0.5: "
          f"{neg_hit}/{len(neg)}  first direct precedent >= 0.5: {pos_ok}/{pos_found}"
          f" ({pos_ok / max(pos_found, 1):.3f})")


def main(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            rows += [json.loads(line) for line in f if line.strip()]
    for r in rows:
        # One set per folder: the bundled queries and negatives are one catalog's set.
        r["set"] = os.path.basename(os.path.dirname(r["set"])) or r["set"]
    sets = sorted({r["set"] for r in rows})
    print("leave one set out (fitted on the others, reported on this one):")
    for s in sets:
        model = fit([r for r in rows if r["set"] != s])
        report(s, model, [r for r in rows if r["set"] == s])
    model = fit(rows)
    print("fitted on every set (in-sample):")
    for s in sets:
        report(s, model, [r for r in rows if r["set"] == s])
    b0, w = model
    print(f"INTERCEPT = {b0:.4f}")
    print("WEIGHTS = [" + ", ".join(f"{x:.4f}" for x in w) + "]  # " + ", ".join(FEATURES))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
