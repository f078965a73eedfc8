#!/usr/bin/env python3
"""A/A check of compare-texts.sh's interval: splits one text version's hosts into two halves (every
split) and counts how often each interval calls the halves different. A calibrated 95 % interval
does so about 1 time in 20.

    scripts/split-check.py SET DIR

DIR holds `govcat --json eval calls` of each calls file, named SET-calls-<group>[-n].json (the way
compare-texts.sh replays them). Groups of fewer than 4 hosts are skipped; halves of an even number
of hosts are counted both ways round.
"""
import json, glob, re, random, itertools, statistics as st, sys, collections
S, DIR = sys.argv[1], sys.argv[2]
def load(f):
    r = json.load(open(f))
    tags = {(j["id"], j["key"]): float(j["right"]) for j in r["judged"]}
    rr = {q["id"]: (1 / q["rank"] if q["rank"] and q["rank"] <= 10 else 0.0) for q in r["find_precedents_ranks"]}
    return tags, rr
files = collections.defaultdict(list)
for f in sorted(glob.glob(f"{DIR}/{S}-calls-*.json")):
    g = re.match(rf".*{S}-calls-([0-9a-f]+)", f).group(1)
    files[g].append(load(f))
def measures(hosts):
    # per measure name -> {unit: [values per host]}
    out = collections.defaultdict(lambda: collections.defaultdict(list))
    for tags, rr in hosts:
        for q, v in rr.items(): out["MRR"][q].append(v)
        for (q, k), v in tags.items():
            out[k][(q, k)].append(v); out["all"][(q, k)].append(v)
    return out
def interval(A, B, rng, hier, draws=1000):
    units = sorted(set(A) & set(B))
    if not units: return None
    byreq = collections.defaultdict(list)
    for u in units: byreq[u[0] if isinstance(u, tuple) else u].append(u)
    reqs = list(byreq)
    ds = []
    for _ in range(draws):
        tot, n = 0.0, 0
        for r in (rng.choice(reqs) for _ in reqs):
            for u in byreq[r]:
                a, b = A[u], B[u]
                if hier:
                    a = [rng.choice(a) for _ in a]; b = [rng.choice(b) for _ in b]
                tot += st.mean(a) - st.mean(b); n += 1
        ds.append(tot / n)
    ds.sort()
    return ds[int(0.025 * draws)], ds[int(0.975 * draws) - 1]
rng = random.Random(1)
for g, hosts in files.items():
    if len(hosts) < 4: continue
    flags = collections.Counter(); total = collections.Counter()
    idx = range(len(hosts))
    for half in itertools.combinations(idx, len(hosts) // 2):
        a = measures([hosts[i] for i in half]); b = measures([hosts[i] for i in idx if i not in half])
        for m in a:
            for hier in (False, True):
                iv = interval(a[m], b[m], rng, hier, 400)
                if iv is None: continue
                total[(m, hier)] += 1
                flags[(m, hier)] += (iv[0] > 0 or iv[1] < 0)
    print(g, len(hosts), "hosts; A/A splits flagged different (request-only / hierarchical):",
          {m: f"{flags[(m, False)]}/{total[(m, False)]} vs {flags[(m, True)]}/{total[(m, True)]}" for m in sorted({m for m, _ in total})})
