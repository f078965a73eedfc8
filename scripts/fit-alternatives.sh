#!/usr/bin/env bash
# Fits the fusion of the caller's phrasings (retrieval::PhrasingFusion: phrasing_rrf_k and
# alternative_weight, description_weight held at 1.0) once, on the union of the calibration
# splits of every query set with alternatives: the bundled set (queries + negatives),
# gdc-cptac (both files) and mimic-omop (both files). Prints, per grid point, hybrid_alt
# nDCG@10 and MRR of each set and their mean over the three catalogs (the objective), as TSV.
#
#   GOVCAT_BIN=target/release/govcat scripts/fit-alternatives.sh > fit.tsv
#
# Needs each set's snapshot (built here under target/bench/eval-index/ if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${GOVCAT_BIN:-target/release/govcat}
ks=${FIT_KS:-10 20 40 60}
weights=${FIT_WEIGHTS:-0.5 0.75 1.0}
idx=target/bench/eval-index
ext=fixtures/bench/external
sets=(
  "bundled|$idx/demo|fixtures/catalog|ontology/lf-tags.json|fixtures/bench/queries.jsonl fixtures/bench/negatives.jsonl"
  "gdc-cptac|$idx/gdc-cptac|$ext/gdc-cptac/catalog|ontology/lf-tags.json|$ext/gdc-cptac/queries.jsonl $ext/gdc-cptac/queries-name-only.jsonl"
  "mimic-omop|$idx/mimic-omop|$ext/mimic-omop/catalog|ontology/lf-tags.json|$ext/mimic-omop/queries.jsonl $ext/mimic-omop/queries-no-table.jsonl"
)
for s in "${sets[@]}"; do
  IFS='|' read -r name index catalog ontology files <<<"$s"
  [ -e "$index/CURRENT" ] || [ -e "$index/current" ] || "$bin" --catalog "$catalog" --ontology "$ontology" --index "$index" index --json > /dev/null
done
printf 'phrasing_rrf_k\talternative_weight'
for s in "${sets[@]}"; do printf '\t%s ndcg@10\t%s mrr' "${s%%|*}" "${s%%|*}"; done
printf '\tmean ndcg@10\n'
for k in $ks; do
  for w in $weights; do
    printf '%s\t%s' "$k" "$w"
    sum=0
    for s in "${sets[@]}"; do
      IFS='|' read -r name index catalog ontology files <<<"$s"
      # shellcheck disable=SC2086
      out=$("$bin" --catalog "$catalog" --ontology "$ontology" --index "$index" --json eval queries $files \
        --split calibration --modes hybrid --param phrasing_rrf_k="$k" --param alternative_weight="$w")
      read -r ndcg mrr < <(python3 -c 'import json,sys; m=json.load(sys.stdin)["modes"]["hybrid_alt"]; print(m["ndcg@10"], m["mrr"])' <<<"$out")
      printf '\t%s\t%s' "$ndcg" "$mrr"
      sum=$(python3 -c "print($sum + $ndcg)")
    done
    python3 -c "print('\t%.4f' % ($sum / ${#sets[@]}))"
  done
done
