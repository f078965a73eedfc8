#!/usr/bin/env bash
# Creates .venv/ with the Python peers the test suite drives govcat with: the official MCP
# client SDK, pytest, and the moto AWS emulator. Idempotent; pins the versions the tests expect.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.govcat-requirements
want="$(sha256sum scripts/requirements-test.txt | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt
  echo "$want" > "$stamp"
fi
