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
python3 scripts/hostsample.py "$out" "$a" "$b"
