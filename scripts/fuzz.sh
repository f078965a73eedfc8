#!/usr/bin/env bash
# Reruns govcat's cargo-fuzz targets (fuzz/fuzz_targets/) over their committed corpora
# (fuzz/corpus/<target>/), one after another, and exits non-zero if any target crashes.
# Not part of CI: it needs a nightly toolchain (`rustup toolchain install nightly`) and builds
# govcat's whole dependency tree once more (into fuzz/target/).
#
#   scripts/fuzz.sh                         # every target, FUZZ_SECONDS (default 30) each
#   FUZZ_SECONDS=600 scripts/fuzz.sh cursor # one target for 10 minutes
#
# Built with `--sanitizer none`: govcat has no unsafe code of its own on these paths (its one
# `unsafe` maps the model weights, src/embed.rs, which no target reaches), so AddressSanitizer
# would only slow the build and the runs down; what the targets look for
# is panics — including integer overflow, since `-a` turns debug assertions and overflow checks
# on. New inputs go to fuzz/target/corpus-new/<target>/ (the committed corpus is read only);
# crash reproducers to fuzz/artifacts/<target>/. Minimise a corpus after a long run with
#   cargo +nightly fuzz cmin <target> --sanitizer none -a --codegen-units 16
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS="${FUZZ_SECONDS:-30}"
# The same flags for build and run, or `cargo fuzz run` rebuilds everything.
FLAGS=(--sanitizer none -a --codegen-units 16)

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz.sh: no nightly toolchain; install one with: rustup toolchain install nightly" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

cd fuzz
cargo +nightly fuzz build "${FLAGS[@]}"

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

mkdir -p target/logs
failed=()
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "target/corpus-new/$t"
    log="target/logs/$t.log"
    echo "== $t: ${FUZZ_SECONDS}s over corpus/$t ($(ls "corpus/$t" | wc -l) inputs); log $log"
    if cargo +nightly fuzz run "${FLAGS[@]}" "$t" "target/corpus-new/$t" "corpus/$t" -- \
        -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=4096 -print_final_stats=1 >"$log" 2>&1; then
        status=ok
    else
        status=CRASH
        failed+=("$t")
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
    echo "   $status: ${runs:-?} runs, ${rate:-?} exec/s, ${cov:-cov: ?}"
    if [ "$status" = CRASH ]; then
        grep -m1 -E "panicked|ERROR: libFuzzer|SUMMARY" "$log" || true
        grep -E "Test unit written to" "$log" || true
    fi
done

if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz.sh: crashes in: ${failed[*]} (reproduce with: cd fuzz && cargo +nightly fuzz run ${FLAGS[*]} <target> artifacts/<target>/<file>)" >&2
    exit 1
fi
echo "fuzz.sh: no crashes in ${#targets[@]} targets"
