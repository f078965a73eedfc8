#!/usr/bin/env bash
# Measures suggest_tags' vote (retrieval::Vote: vote_by, vote_exponent, vote_gate, strict_ratio)
# on every labelled set at once: `govcat eval tags` (leave-one-out) on the tagged catalogs (demo,
# fides-saas) and `govcat eval calls` on every call set with both blind hosts' calls, each
# variant in the same run. Prints TSV: variant, set, key, accuracy, understated, overstated,
# judged (eval tags: accuracy@1 over the held-out columns; eval calls: the proposal against the
# majority tag of the direct precedents, inherited proposals included).
#
#   GOVCAT_BIN=target/release/govcat scripts/fit-vote.sh "vote_by=score" "vote_by=precedent_confidence vote_gate=0.5" > vote.tsv
#
# Each argument is one variant: space-separated NAME=VALUE overrides (none: the defaults).
# Needs each set's snapshot (built here under target/bench/eval-index/ if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${GOVCAT_BIN:-target/release/govcat}
idx=target/bench/eval-index
ext=fixtures/bench/external
calls=fixtures/bench/calls
# name|index|catalog|ontology|tags?
sets=(
  "demo|$idx/demo|fixtures/catalog|ontology/lf-tags.json|tags"
  "fides-saas|$idx/fides-saas|$ext/fides-saas/catalog|$ext/fides-saas/ontology.json|tags"
  "gdc-cptac|$idx/gdc-cptac|$ext/gdc-cptac/catalog|ontology/lf-tags.json|"
  "mimic-omop|$idx/mimic-omop|$ext/mimic-omop/catalog|ontology/lf-tags.json|"
)
for s in "${sets[@]}"; do
  IFS='|' read -r name index catalog ontology _ <<<"$s"
  [ -e "$index/CURRENT" ] || "$bin" --catalog "$catalog" --ontology "$ontology" --index "$index" index --json > /dev/null
done
[ $# -gt 0 ] || set -- ""
printf 'variant\tset\tkey\taccuracy\tunderstated\toverstated\tjudged\n'
for variant in "$@"; do
  params=()
  for p in $variant; do params+=(--param "$p"); done
  label=${variant:-defaults}
  for s in "${sets[@]}"; do
    IFS='|' read -r name index catalog ontology tags <<<"$s"
    g=("$bin" --catalog "$catalog" --ontology "$ontology" --index "$index" --json eval)
    if [ -n "$tags" ]; then
      "${g[@]}" tags "${params[@]}" 2>/dev/null | python3 -c '
import json, sys
label, name = sys.argv[1], sys.argv[2]
r = json.load(sys.stdin)
for key, k in r["keys"].items():
    print("\t".join([label, name + " tags", key, "%.3f" % k["accuracy@1"], str(k["understated"] if k["understated"] is not None else "-"),
                     str(k["overstated"] if k["overstated"] is not None else "-"), str(k["columns"])]))
' "$label" "$name"
    fi
    for f in "$calls/$name"/calls-*.jsonl; do
      host=$(basename "$f" .jsonl)
      "${g[@]}" calls "$f" "$calls/$name/requests.jsonl" "${params[@]}" 2>/dev/null | python3 -c '
import json, sys
label, name = sys.argv[1], sys.argv[2]
r = json.load(sys.stdin)
right = judged = 0
for key, k in r["suggest_tags"].items():
    if not k["judged"]:
        continue
    print("\t".join([label, name, key, "%.3f" % k["accuracy"], str(k["understated"]),
                     str(k["overstated"]), str(k["judged"])]))
if any(k["judged"] for k in r["suggest_tags"].values()):
    print("\t".join([label, name, "all keys", "%.3f" % r["all_keys_accuracy"], "-", "-", "-"]))
' "$label" "$name $host"
    done
  done
done
