#!/usr/bin/env bash
# Installs the agent-framework MCP clients of the compatibility suite: the Python stacks into
# .venv-frameworks/ (pinned in scripts/requirements-frameworks.txt; apart from .venv/ because
# openai-agents needs mcp 1.x and the main suite pins mcp 2.3), and the TypeScript SDK
# (@modelcontextprotocol/sdk, pinned here) into .tools/frameworks/ with the Node 22 of
# scripts/setup-node.sh. Idempotent: reinstalls only when a pin changed.
set -euo pipefail
cd "$(dirname "$0")/.."
ts_sdk_version=1.32.2

if [ ! -x .venv-frameworks/bin/python ]; then
  python3 -m venv .venv-frameworks
fi
stamp=.venv-frameworks/.govcat-requirements
want="$(sha256sum scripts/requirements-frameworks.txt | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv-frameworks/bin/pip install --quiet --disable-pip-version-check -r scripts/requirements-frameworks.txt
  echo "$want" > "$stamp"
fi

node_bin="$(scripts/setup-node.sh)"
sdk_package=.tools/frameworks/node_modules/@modelcontextprotocol/sdk/package.json
if ! grep -q "\"version\": \"$ts_sdk_version\"" "$sdk_package" 2>/dev/null; then
  mkdir -p .tools/frameworks
  PATH="$node_bin:$PATH" npm install --silent --no-audit --no-fund --prefix .tools/frameworks \
    "@modelcontextprotocol/sdk@$ts_sdk_version" >&2
fi
if ! grep -q "\"version\": \"$ts_sdk_version\"" "$sdk_package" 2>/dev/null; then
  echo "setup-frameworks.sh: @modelcontextprotocol/sdk@$ts_sdk_version is not in .tools/frameworks; remove it and rerun" >&2
  exit 1
fi
