#!/usr/bin/env bash
# The main job on the embedded default: fetch the embedding model (once), build govcat, index
# the demo catalog (fixtures/catalog) into index/, and serve MCP + REST on loopback with
# --watch (edits to ontology/ or fixtures/catalog/ are re-indexed and swapped in live).
# Prints the MCP URL and ready-to-paste MCP host configurations once the server is ready.
# Stop with Ctrl-C. GOVCAT_LISTEN overrides the address (default 127.0.0.1:8080).
set -euo pipefail
cd "$(dirname "$0")/.."
listen="${GOVCAT_LISTEN:-127.0.0.1:8080}"

scripts/fetch-model.sh
cargo build --bin govcat
bin="$PWD/target/debug/govcat"
"$bin" index

# --drain-seconds 0: no load balancer to wait for on loopback, so Ctrl-C stops at once.
"$bin" serve --listen "$listen" --watch --drain-seconds 0 &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true' INT TERM EXIT
for _ in $(seq 1 300); do
  if curl -fsS "http://$listen/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then echo "demo.sh: govcat serve exited; see its error above" >&2; exit 1; fi
  sleep 0.2
done
curl -fsS "http://$listen/readyz" >/dev/null || { echo "demo.sh: govcat serve did not become ready on $listen" >&2; exit 1; }
cat <<CONFIG

govcat is ready. MCP endpoint (Streamable HTTP): http://$listen/mcp

MCP host configuration, Streamable HTTP:
{
  "mcpServers": {
    "govcat": { "type": "http", "url": "http://$listen/mcp" }
  }
}

MCP host configuration, stdio (the host starts govcat itself):
{
  "mcpServers": {
    "govcat": {
      "command": "$bin",
      "args": ["mcp-stdio"],
      "env": {
        "GOVCAT_ONTOLOGY": "$PWD/ontology/lf-tags.json",
        "GOVCAT_CATALOG": "$PWD/fixtures/catalog",
        "GOVCAT_INDEX": "$PWD/index",
        "GOVCAT_MODEL_DIR": "$PWD/models/all-MiniLM-L6-v2"
      }
    }
  }
}

(Every path is absolute, so it works whether or not the host honours a "cwd". No
GOVCAT_SCOPES: the stdio caller reads every domain. To narrow it, add
"GOVCAT_SCOPES": "catalog:policy:read catalog:claims:read" to "env"; an empty value grants none.)

Prompts (slash commands in the host): tag-new-column (description; domain, table),
review-grant (role, domain, table). See README, "Connecting an MCP host".

Try: curl -s -X POST http://$listen/v1/tools/find_precedents -H 'content-type: application/json' -d '{"description":"contains an EU IBAN"}'
Stop with Ctrl-C.
CONFIG
wait "$pid"
