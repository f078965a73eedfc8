#!/usr/bin/env python3
"""Blind-host groups compared request by request, with hosts counted as a sample.

    scripts/hostsample.py DIR A B

DIR holds `govcat --json eval calls` of each calls file of two text versions, named
`<A>--<file>.json` and `<B>--<file>.json` (scripts/compare-texts.sh replays them so). Every figure
is taken on what both groups answered (suggest_tags per key: the (request, key) pairs both
judged; find_precedents: the requests both searched), each request weighing once whatever the
number of hosts. `interval` is also what scripts/split-check.py checks. Standard library only.
"""
import collections
import glob
import json
import random
import statistics as st
import sys


def mean(xs):
    return st.mean(xs) if xs else float("nan")


def load(path):
    """One replayed calls file: {(request, key): right 0/1} and {request: reciprocal rank}."""
    r = json.load(open(path))
    tags = {(j["id"], j["key"]): float(j["right"]) for j in r["judged"]}
    rr = {q["id"]: (1 / q["rank"] if q["rank"] and q["rank"] <= 10 else 0.0)
          for q in r["find_precedents_ranks"]}
    return tags, rr


def interval(units, rng, hosts=True, draws=2000):
    """95 % interval of the mean difference A - B. `units` maps a request to its measures, each
    a pair (values of A's hosts, values of B's hosts). Requests are resampled, and with `hosts`
    within each drawn (request, measure) each group's hosts too: resampling requests alone
    called two halves of one text version's hosts different in 10 of 20 splits on the demo MRR
    (e6f922c, 2d4c8e3) and 11 of 40 on all keys (a236586, a48f8ba, e6f922c); this way 4 and 3
    (docs/perf/conversation.md). `None` when there is no request."""
    groups = list(units.values())
    if not groups:
        return None
    diffs = []
    for _ in range(draws):
        one = []
        for g in rng.choices(groups, k=len(groups)):
            for xa, xb in g:
                if hosts:
                    xa, xb = rng.choices(xa, k=len(xa)), rng.choices(xb, k=len(xb))
                one.append(mean(xa) - mean(xb))
        diffs.append(mean(one))
    diffs.sort()
    return diffs[int(0.025 * draws)], diffs[int(0.975 * draws) - 1]


def verdict(iv):
    lo, hi = iv
    return "lower" if hi < 0 else "higher" if lo > 0 else "no difference shown"


def group(paths):
    """Per-host values gathered: {(request, key): [right]} and {request: [reciprocal rank]}."""
    tags, rr = collections.defaultdict(list), collections.defaultdict(list)
    for p in paths:
        t, r = load(p)
        for u, v in t.items():
            tags[u].append(v)
        for q, v in r.items():
            rr[q].append(v)
    return tags, rr


def main(out, a, b):
    pa, pb = (sorted(glob.glob(f"{out}/{g}--*.json")) for g in (a, b))
    (ta, ra), (tb, rb) = group(pa), group(pb)
    rng = random.Random(20261206)
    print(f"{a} ({len(pa)} hosts) against {b} ({len(pb)} hosts); difference {a} - {b} with its 95 % "
          "interval (requests and hosts resampled): 'lower' only when the whole interval is below 0")
    common = sorted(set(ra) & set(rb))
    iv = interval({q: [(ra[q], rb[q])] for q in common}, rng) or (float("nan"),) * 2
    print(f"find_precedents MRR on the {len(common)} requests both searched: "
          f"{mean([mean(ra[q]) for q in common]):.3f} / {mean([mean(rb[q]) for q in common]):.3f}, "
          f"difference [{iv[0]:+.3f}, {iv[1]:+.3f}]: {verdict(iv)}")
    pairs = sorted(set(ta) & set(tb))
    for key in sorted({k for _, k in pairs}) + ["all keys"]:
        p = [x for x in pairs if key == "all keys" or x[1] == key]
        units = collections.defaultdict(list)
        for x in p:
            units[x[0]].append((ta[x], tb[x]))
        iv = interval(units, rng) or (float("nan"),) * 2
        print(f"suggest_tags {key}: {mean([mean(ta[x]) for x in p]):.3f} / "
              f"{mean([mean(tb[x]) for x in p]):.3f} on {len(p)} (request, key) pairs, "
              f"difference [{iv[0]:+.3f}, {iv[1]:+.3f}]: {verdict(iv)}")
    print(f"judged by {a} only: {len(set(ta) - set(tb))}, by {b} only: {len(set(tb) - set(ta))}")
    for diff, x in sorted((mean(ta[x]) - mean(tb[x]), x) for x in pairs):
        if diff:
            print(f"  {x[0]} {x[1]}: {diff:+.2f}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: scripts/hostsample.py DIR A B")
    main(*sys.argv[1:4])
