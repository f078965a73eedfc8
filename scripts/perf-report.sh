#!/usr/bin/env bash
# Regenerates docs/PERFORMANCE.md (and docs/perf/quality.svg) on this machine: builds the
# benches once, runs quality, scale, http_load (warm and cold) and load_faults (both scenarios,
# 5 minutes each), records the machine, then writes the page with scripts/perf_report.py.
#
# Environment:
#   PERF_PROFILE=dev|release   dev (default): `cargo bench --profile dev` — the numeric crates
#                              (candle, gemm, tantivy, hnsw_rs, ...) at opt-level 3, govcat's
#                              own code at 0; release: `cargo bench` (a full optimised build).
#   PERF_SCALE_SIZES=1000      scale sizes (quick by default); 1000,10000,100000,1000000 for
#                              all (100k takes ~10 min, 1M hours: see benches/scale.rs).
#   PERF_LOAD_SECONDS=300      duration of each load_faults scenario.
#   PERF_SKIP=a,b              benches not to run (their last JSON in target/bench is reused,
#                              or the page's previous section is carried over, marked so):
#                              quality, scale, http_load, load_faults, eval.
# Needs the model (scripts/fetch-model.sh) and, for the aws scenario, .venv with moto
# (scripts/setup-python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

profile=${PERF_PROFILE:-dev}
sizes=${PERF_SCALE_SIZES:-1000}
load_seconds=${PERF_LOAD_SECONDS:-300}
skip=",${PERF_SKIP:-},"
bench_dir=target/bench
mkdir -p "$bench_dir" "$bench_dir/bin"

if [ "$profile" = dev ]; then
  cargo_profile=(--profile dev)
  profile_note="dev (cargo bench --profile dev: numeric crates at opt-level 3, govcat's own code at opt-level 0)"
else
  cargo_profile=()
  profile_note="release (cargo bench: everything optimised)"
fi

# Build every bench once and run the binaries directly: cargo holds the target directory's
# lock while `cargo bench` runs, which would block everyone else's builds for the whole report.
build_log=$(cargo bench "${cargo_profile[@]}" --no-run 2>&1) || { echo "$build_log"; exit 1; }
exe() { # bench name -> executable path
  sed -n "s|.*Executable benches/$1.rs (\(.*\))|\1|p" <<<"$build_log" | tail -1
}
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
[ "$profile" = dev ] && bin_dir=debug || bin_dir=release
# A private copy of the server: a concurrent build must not replace it during a long run.
cp "$target_dir/$bin_dir/govcat" "$bench_dir/bin/govcat"
export GOVCAT_BIN="$PWD/$bench_dir/bin/govcat"
run() { # name args...
  local name=$1; shift
  case "$skip" in *",$name,"*) echo "== $name: skipped (PERF_SKIP), reusing its last report"; return;; esac
  local path
  path=$(exe "$name")
  case "$path" in /*) ;; *) path="$PWD/$path";; esac
  echo "== $name $*"
  "$path" --bench "$@"
}

python3 - "$profile" "$profile_note" > "$bench_dir/machine.json" <<'PY'
import json, os, subprocess, sys, datetime
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), None)
mem = next((int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal:")), 0)
sh = lambda *c: subprocess.run(c, capture_output=True, text=True).stdout.strip()
print(json.dumps({
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    "commit": sh("git", "rev-parse", "--short", "HEAD") + (" (with local changes)" if sh("git", "status", "--porcelain", "--untracked-files=no") else ""),
    "nproc": os.cpu_count(), "cpu_model": cpu, "memory_gib": round(mem / 1024 / 1024, 1),
    "rustc": sh("rustc", "-V"), "profile": sys.argv[1], "profile_note": sys.argv[2],
    "loadavg": open("/proc/loadavg").read().strip(),
}, indent=2))
PY

run quality
run scale --sizes "$sizes" --quiet-wait-secs 30
run http_load --concurrency 1,8,32 --seconds 5
run http_load --tools find_precedents --concurrency 1,8,32 --seconds 5 --unique --out "$bench_dir/http-unique.json"
case "$skip" in *",load_faults,"*) ;; *) rm -f "$bench_dir/load_faults.json";; esac
run load_faults --scenario swap --seconds "$load_seconds" --concurrency 32
run load_faults --scenario aws --seconds "$load_seconds" --concurrency 32 --outage-at $((load_seconds * 2 / 5)) --outage-secs 60

# govcat eval on every set: the bundled queries and each external set (its own snapshot under
# target/bench/eval-index/), and leave-one-out tag suggestion on every tagged catalog.
eval_set() { # name snapshot-name catalog ontology -- eval args...
  local name=$1 idx="$bench_dir/eval-index/$2" catalog=$3 ontology=$4; shift 5
  case "$skip" in *",eval,"*) echo "== eval $name: skipped (PERF_SKIP)"; return;; esac
  local flags=(--catalog "$catalog" --ontology "$ontology" --index "$idx")
  echo "== eval $name: $*"
  # Indexed every run (vectors of unchanged texts are reused): a snapshot of an older govcat
  # would measure that version's documents.
  "$GOVCAT_BIN" "${flags[@]}" index --json > /dev/null
  "$GOVCAT_BIN" "${flags[@]}" eval "$@" --json --report "$bench_dir/eval-html/$name" > "$bench_dir/eval/$name.json"
}
mkdir -p "$bench_dir/eval"
rm -f "$bench_dir"/eval/*.json
ext=fixtures/bench/external
eval_set bundled demo fixtures/catalog ontology/lf-tags.json -- queries fixtures/bench/queries.jsonl fixtures/bench/negatives.jsonl
eval_set bundled-held-out demo fixtures/catalog ontology/lf-tags.json -- queries fixtures/bench/queries.jsonl fixtures/bench/negatives.jsonl --split held-out
for set in "$ext"/*/; do
  set=$(basename "$set")
  for q in "$ext/$set"/queries*.jsonl; do
    [ -e "$q" ] || continue
    eval_set "$set$(basename "$q" .jsonl | sed 's/^queries//')" "$set" "$ext/$set/catalog" ontology/lf-tags.json -- queries "$q"
  done
done
eval_set tags-demo demo fixtures/catalog ontology/lf-tags.json -- tags
eval_set tags-fides-saas fides-saas "$ext/fides-saas/catalog" "$ext/fides-saas/ontology.json" -- tags

python3 scripts/perf_report.py --bench-dir "$bench_dir" --docs docs
