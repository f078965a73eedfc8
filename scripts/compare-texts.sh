#!/usr/bin/env bash
# Compares the blind hosts of two tool-text versions on one call set, request by request: each
# group's calls files (`calls-<A>.jsonl`, `calls-<A>-2.jsonl`, ...) are replayed with
# `govcat eval calls` against the same snapshot, and every figure is taken on what both groups
# answered (suggest_tags per key: the (request, key) pairs both judged; find_precedents: the
# requests both searched), each request weighing once whatever the number of hosts. Hosts differ
# in which requests they call suggest_tags for (texts say "find_precedents alone" for lookups),
# so the eval calls means of two groups are taken on different requests; this is not. Each
# difference comes with a 95 % interval from resampling requests and, within each, hosts: with
# 3-5 hosts a group one request moves a key by 0.03-0.1, so a lower mean is called lower only
# when the interval is.
#
#   scripts/compare-texts.sh demo 68583cb a48f8ba
#   scripts/compare-texts.sh fides-saas 68583cb a48f8ba
#
# Needs the set's snapshot (built under target/bench/eval-index/, or $EVAL_INDEX, if missing):
# rebuild it with the code measured.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 3 ] || { echo "usage: scripts/compare-texts.sh SET TEXTS_A TEXTS_B (SET: demo, fides-saas)" >&2; exit 2; }
set_name=$1 a=$2 b=$3
bin=${GOVCAT_BIN:-target/release/govcat}
idx=${EVAL_INDEX:-target/bench/eval-index}/$set_name
case $set_name in
  demo) src=(--catalog fixtures/catalog --ontology ontology/lf-tags.json) ;;
  fides-saas) src=(--catalog fixtures/bench/external/fides-saas/catalog --ontology fixtures/bench/external/fides-saas/ontology.json) ;;
  *) echo "compare-texts: unknown set $set_name (demo or fides-saas: the call sets with tags)" >&2; exit 2 ;;
esac
calls=fixtures/bench/calls/$set_name
[ -e "$idx/CURRENT" ] || "$bin" "${src[@]}" --index "$idx" index --json > /dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for group in "$a" "$b"; do
  files=("$calls/calls-$group.jsonl" "$calls/calls-$group"-[0-9]*.jsonl)
  for f in "${files[@]}"; do
    [ -e "$f" ] || { echo "compare-texts: no $f (groups are text commits of $calls/calls-<commit>[-n].jsonl)" >&2; exit 2; }
    "$bin" "${src[@]}" --index "$idx" --json eval calls "$f" "$calls/requests.jsonl" > "$out/$group--$(basename "$f" .jsonl).json"
  done
done
python3 - "$out" "$a" "$b" <<'PY'
import collections, glob, json, random, statistics as st, sys
out, a, b = sys.argv[1:4]
def load(group):
    tags, rr, n = collections.defaultdict(list), collections.defaultdict(list), 0
    for f in sorted(glob.glob(f"{out}/{group}--*.json")):
        n += 1
        r = json.load(open(f))
        for j in r["judged"]:
            tags[(j["id"], j["key"])].append(float(j["right"]))
        for q in r["find_precedents_ranks"]:
            rr[q["id"]].append(1 / q["rank"] if q["rank"] and q["rank"] <= 10 else 0.0)
    return tags, rr, n
ta, ra, na = load(a)
tb, rb, nb = load(b)
mean = lambda xs: st.mean(xs) if xs else float("nan")
rng = random.Random(20261206)
def interval(units):
    """95 % interval of the mean difference, two-level: requests resampled, and within each
    drawn (request, measure) each group's hosts resampled (2,000 draws). Hosts are a sample too:
    resampling requests alone called two halves of one text version's hosts different in 10 of
    20 splits on the demo MRR (e6f922c, 2d4c8e3) and 11 of 40 on all keys (a236586, a48f8ba,
    e6f922c); this way 4 and 3 (docs/perf/conversation.md)."""
    groups = list(units.values())
    if not groups:
        return float("nan"), float("nan")
    def one():
        diffs = []
        for g in rng.choices(groups, k=len(groups)):
            for xa, xb in g:
                diffs.append(mean(rng.choices(xa, k=len(xa))) - mean(rng.choices(xb, k=len(xb))))
        return mean(diffs)
    draws = sorted(one() for _ in range(2000))
    return draws[49], draws[1949]
def verdict(lo, hi):
    return "lower" if hi < 0 else "higher" if lo > 0 else "no difference shown"
print(f"{a} ({na} hosts) against {b} ({nb} hosts); difference {a} - {b} with its 95 % interval "
      "(requests and hosts resampled): 'lower' only when the whole interval is below 0")
common = sorted(set(ra) & set(rb))
d = {q: [(ra[q], rb[q])] for q in common}
lo, hi = interval(d)
print(f"find_precedents MRR on the {len(common)} requests both searched: "
      f"{mean([mean(ra[q]) for q in common]):.3f} / {mean([mean(rb[q]) for q in common]):.3f}, "
      f"difference [{lo:+.3f}, {hi:+.3f}]: {verdict(lo, hi)}")
pairs = sorted(set(ta) & set(tb))
for key in sorted({k for _, k in pairs}) + ["all keys"]:
    p = [x for x in pairs if key == "all keys" or x[1] == key]
    d = collections.defaultdict(list)
    for x in p:
        d[x[0]].append((ta[x], tb[x]))
    lo, hi = interval(d)
    print(f"suggest_tags {key}: {mean([mean(ta[x]) for x in p]):.3f} / {mean([mean(tb[x]) for x in p]):.3f} "
          f"on {len(p)} (request, key) pairs, difference [{lo:+.3f}, {hi:+.3f}]: {verdict(lo, hi)}")
print(f"judged by {a} only: {len(set(ta) - set(tb))}, by {b} only: {len(set(tb) - set(ta))}")
for diff, x in sorted((mean(ta[x]) - mean(tb[x]), x) for x in pairs):
    if diff:
        print(f"  {x[0]} {x[1]}: {diff:+.2f}")
PY
