#!/usr/bin/env bash
# Proves govcat's MCP surface with clients no one here wrote, against freshly started servers:
#   1. the pytest suite in tests/python (official Python MCP SDK, Streamable HTTP and stdio,
#      protocols 2025-11-25 and 2026-07-28; its fixture starts and stops its own server);
#   2. the MCP conformance suite (npm @modelcontextprotocol/conformance) against /mcp of a
#      server started here and stopped on exit, even on failure.
# Prints the conformance scenario table; fails if pytest fails or a required scenario fails.
#
# Usage: scripts/test-mcp.sh            (GOVCAT_BIN overrides target/debug/govcat)
# Needs: python3, npm (Node 22 is installed into .tools/ by scripts/setup-node.sh), the model
# (scripts/fetch-model.sh) and a snapshot in index/ (built here with `govcat index` if absent).
set -euo pipefail
cd "$(dirname "$0")/.."

CONFORMANCE=@modelcontextprotocol/conformance@0.1.16
CONFORMANCE_NEXT=@modelcontextprotocol/conformance@0.2.0-alpha.12
# Scenarios that apply to any server (the others need the suite's own test tools or prompts).
REQUIRED=(server-initialize ping tools-list resources-list completion-complete
          dns-rebinding-protection server-sse-multiple-streams)
# 2026-07-28 scenarios of the next suite that apply to any server.
REQUIRED_NEXT=(http-header-validation http-custom-header-server-validation
               sep-2164-resource-not-found)
# 2026-07-28 scenarios reported for information: parts of them need the suite's own tools
# (server-stateless) or prompts, which govcat does not have (caching).
INFO_NEXT=(server-stateless caching)

if [ -z "${GOVCAT_BIN:-}" ]; then
  cargo build --quiet --bin govcat
  export GOVCAT_BIN="$PWD/target/debug/govcat"
fi
if [ ! -f index/CURRENT ]; then
  echo "test-mcp: no snapshot in index/; fetching the model and building one" >&2
  scripts/fetch-model.sh
  "$GOVCAT_BIN" index
fi
scripts/setup-python.sh
NODE_BIN="$(scripts/setup-node.sh)"
export PATH="$NODE_BIN:$PATH"

status=0
echo "== pytest (official MCP Python SDK) =="
(cd tests/python && ../../.venv/bin/python -m pytest -q -p no:cacheprovider) || status=1

work="$(mktemp -d)"
server_pid=""
stop_server() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap stop_server EXIT

"$GOVCAT_BIN" serve --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
server_pid=$!
url=""
for _ in $(seq 1 300); do
  url="$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$work/serve.out" || true)"
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.err" >&2; echo "test-mcp: govcat serve exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "test-mcp: govcat serve printed no URL within 30 s" >&2; exit 1; }

echo "== conformance $CONFORMANCE against $url =="
(cd "$work" && npx -y "$CONFORMANCE" server --url "$url" >"$work/conformance.out" 2>&1) || true
summary="$(sed -n '/=== SUMMARY ===/,$p' "$work/conformance.out")"
if [ -z "$summary" ]; then
  tail -40 "$work/conformance.out" >&2
  echo "test-mcp: the conformance suite printed no summary" >&2
  exit 1
fi
echo "$summary"

printf '\n%-52s %-10s %s\n' "required scenario" "result" "checks"
for s in "${REQUIRED[@]}"; do
  line="$(grep -E "^[✓✗] $s: " <<<"$summary" || true)"
  if [[ "$line" == "✓ $s: "* ]]; then result=PASS; else result=FAIL; status=1; fi
  printf '%-52s %-10s %s\n' "$s" "$result" "${line#*: }"
done

echo
echo "== conformance $CONFORMANCE_NEXT (protocol 2026-07-28) =="
printf '%-52s %-10s %s\n' "scenario" "result" "checks"
for s in "${REQUIRED_NEXT[@]}" "${INFO_NEXT[@]}"; do
  out="$(cd "$work" && npx -y "$CONFORMANCE_NEXT" server --url "$url" --scenario "$s" 2>&1 || true)"
  counts="$(grep -oE 'Passed: [0-9]+/[0-9]+, [0-9]+ failed' <<<"$out" | tail -1 || true)"
  if [[ "$counts" =~ Passed:\ ([0-9]+)/([0-9]+),\ 0\ failed ]]; then result=PASS; else result=FAIL; fi
  kind=required
  if [[ " ${INFO_NEXT[*]} " == *" $s "* ]]; then
    kind=info
    [ "$result" = FAIL ] && result="FAIL(info)"
  elif [ "$result" = FAIL ]; then
    status=1
  fi
  printf '%-52s %-10s %s\n' "$s [$kind]" "$result" "${counts:-no result}"
done

if [ "$status" -ne 0 ]; then
  echo "test-mcp: FAILED (see above)" >&2
else
  echo "test-mcp: all required checks passed"
fi
exit "$status"
