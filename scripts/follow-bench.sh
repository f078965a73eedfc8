#!/usr/bin/env bash
# Publish → follow figures of issue 24 for a given govcat binary, against a running S3
# (moto or an S3-compatible store). Writes target/bench/follow.json and prints it.
#
#   GOVCAT_BIN=target/release/govcat MOTO_URL=http://127.0.0.1:5000 scripts/follow-bench.sh
#
# Environment:
#   GOVCAT_BIN   the binary to measure (required)
#   MOTO_URL     the S3 endpoint (default $AWS_ENDPOINT_URL, else http://127.0.0.1:5000); start
#                moto with `.venv/bin/moto_server -H 127.0.0.1 -p 5000`
#   RUNS=5       publishes measured for publish → both replicas serving the new id (p50)
#   INTERVAL=2   --follow-interval of the replicas, seconds
#   BIG_INDEX    optional: an index directory with a CURRENT (e.g. a 100k-column snapshot of
#                the scale bench, see below): a fresh replica's time to ready and bytes, and a
#                restart's, for it too (uploaded with boto3 from .venv)
#   OUT          report path (default target/bench/follow.json)
#
# Needs the model (scripts/fetch-model.sh) and a snapshot in index/ (govcat index): the demo
# indexer starts from a copy of it, so nothing is embedded but the one changed column per run.
#
# The 100k-column snapshot of the scale bench's synthetic catalog (~10 min in release):
#   cargo bench --bench scale --no-run      # prints the bench binary's path
#   target/release/deps/scale-<hash> --phase build --size 100000 --work /tmp/scale100k \
#       --out /tmp/scale100k/build.json
#   BIG_INDEX=/tmp/scale100k/index GOVCAT_BIN=... scripts/follow-bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${GOVCAT_BIN:?set GOVCAT_BIN to the govcat binary to measure}"
python=python3
if [ -x .venv/bin/python ]; then python=.venv/bin/python; fi
exec "$python" scripts/follow_bench.py
