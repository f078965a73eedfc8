#!/usr/bin/env bash
# Proves govcat's MCP surface with clients no one here wrote, against freshly started servers:
#   1. the pytest suite in tests/python (official Python MCP SDK, Streamable HTTP and stdio,
#      protocols 2025-11-25 and 2026-07-28; its fixture starts and stops its own server);
#   2. the MCP Inspector CLI (npm @modelcontextprotocol/inspector, pinned in setup-node.sh)
#      against /mcp of a server started here and stopped on exit, even on failure: the tool
#      list (with --strict schema checks), two tool calls (one an error result), the ontology
#      resource, the prompt list and one prompt; any line it prints on stderr fails the run;
#   3. the MCP conformance suite (npm @modelcontextprotocol/conformance) against that server;
#   4. the client-compatibility suite (tests/python/frameworks/compat.py): the six tools through
#      each agent framework's own MCP client and conversion for its model — OpenAI Agents
#      (strict), LangChain (strict), pydantic-ai, google-genai (Gemini), the official Python SDK
#      1.x and the TypeScript SDK — over HTTP and stdio of servers it starts and stops; pinned in
#      scripts/requirements-frameworks.txt and scripts/setup-frameworks.sh.
# Prints the Inspector and conformance tables (the suite's fixture-only scenarios labelled not
# applicable, the required ones as the verdict); fails if pytest fails, the Inspector warns or
# answers unexpectedly, a required scenario fails, or any stack cannot load, convert or call a
# tool, or its conversion drops an argument, its description or a bound.
#
# Usage: scripts/test-mcp.sh            (GOVCAT_BIN overrides target/debug/govcat)
# Needs: python3, npm (Node 22 is installed into .tools/ by scripts/setup-node.sh), the model
# (scripts/fetch-model.sh) and a snapshot in index/ (built here with `govcat index` if absent).
set -euo pipefail
cd "$(dirname "$0")/.."

CONFORMANCE=@modelcontextprotocol/conformance@0.1.16
CONFORMANCE_NEXT=@modelcontextprotocol/conformance@0.2.0-alpha.12
# Scenarios that apply to any server (the others need the suite's own test tools or prompts).
REQUIRED=(server-initialize ping tools-list resources-list prompts-list completion-complete
          dns-rebinding-protection server-sse-multiple-streams)
# 2026-07-28 scenarios of the next suite that apply to any server.
REQUIRED_NEXT=(http-header-validation http-custom-header-server-validation
               sep-2164-resource-not-found caching)
# 2026-07-28 scenarios reported for information: 4 of server-stateless's checks need the
# suite's own diagnostic tools, which govcat does not have.
INFO_NEXT=(server-stateless)

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
scripts/setup-frameworks.sh
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

"$GOVCAT_BIN" serve --listen 127.0.0.1:0 --drain-seconds 0 >"$work/serve.out" 2>"$work/serve.err" &
server_pid=$!
url=""
for _ in $(seq 1 300); do
  url="$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$work/serve.out" || true)"
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.err" >&2; echo "test-mcp: govcat serve exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "test-mcp: govcat serve printed no URL within 30 s" >&2; exit 1; }

echo "== MCP Inspector CLI against $url =="
inspector="$PWD/.tools/node_modules/.bin/mcp-inspector"
# One Inspector call: its name, the exit status it should end with (5 is the Inspector's
# "the tool returned isError"), the one stderr line that status prints (empty: none), a Python
# check of its stdout (JSON, as `out`), and its arguments. Anything else on stderr is a warning
# and fails the run.
inspect() {
  local name="$1" want_rc="$2" want_err="$3" check="$4"; shift 4
  local rc=0
  "$inspector" --cli "$url" --transport http "$@" >"$work/inspector.out" 2>"$work/inspector.err" || rc=$?
  local result=PASS problem=""
  if [ "$rc" -ne "$want_rc" ]; then
    result=FAIL; problem="exit $rc, expected $want_rc"
  elif [ "$(cat "$work/inspector.err")" != "$want_err" ]; then
    result=FAIL; problem="stderr: $(head -c 300 "$work/inspector.err")"
  elif ! problem="$(.venv/bin/python -c "import json,sys; out=json.load(open(sys.argv[1])); $check" "$work/inspector.out" 2>&1)"; then
    result=FAIL; problem="$(tail -1 <<<"$problem")"
  fi
  printf '%-52s %-10s %s\n' "$name" "$result" "$problem"
  if [ "$result" = FAIL ]; then status=1; fi
}
printf '%-52s %-10s %s\n' "inspector call" "result" "problem"
inspect "tools/list --strict" 0 "" \
  'assert [t["name"] for t in out["tools"]] == ["find_precedents", "suggest_tags", "list_domains", "get_dataset", "resolve_lf_tag", "check_grant_expression"]' \
  --method tools/list --strict
inspect "tools/call find_precedents" 0 "" \
  'assert out["isError"] is False and out["structuredContent"]["entries"], out' \
  --method tools/call --tool-name find_precedents --tool-arg "description=contains an EU IBAN"
inspect "tools/call get_dataset (an error result)" 5 \
  "{\"error\":{\"code\":\"tool_is_error\",\"message\":\"Tool 'get_dataset' returned isError:true.\"}}" \
  'e = json.loads(out["content"][0]["text"]); assert out["isError"] is True and "structuredContent" not in out and e["error"] == "DatasetNotFound", out' \
  --method tools/call --tool-name get_dataset --tool-arg domain=policy --tool-arg table=nope
inspect "resources/read govcat://ontology/lf-tags" 0 "" \
  'assert json.loads(out["contents"][0]["text"]) == json.load(open("ontology/lf-tags.json"))' \
  --method resources/read --uri govcat://ontology/lf-tags
inspect "prompts/list" 0 "" \
  'assert [p["name"] for p in out["prompts"]] == ["tag-new-column", "review-grant"], out' \
  --method prompts/list
inspect "prompts/get tag-new-column" 0 "" \
  'text = "\n".join(m["content"]["text"] for m in out["messages"]); at = [text.find(t) for t in ("find_precedents", "suggest_tags", "resolve_lf_tag", "get_dataset")]; assert -1 not in at and at == sorted(at), at' \
  --method prompts/get --prompt-name tag-new-column --prompt-args "description=contains an EU IBAN"
echo

echo "== conformance $CONFORMANCE against $url =="
(cd "$work" && npx -y "$CONFORMANCE" server --url "$url" >"$work/conformance.out" 2>&1) || true
summary="$(sed -n '/=== SUMMARY ===/,$p' "$work/conformance.out")"
if [ -z "$summary" ]; then
  tail -40 "$work/conformance.out" >&2
  echo "test-mcp: the conformance suite printed no summary" >&2
  exit 1
fi
# The suite's own total counts scenarios that need its fixture server's test tools, prompts
# and resources; they are listed as not applicable, and the verdict is the required ones.
printf '%-52s %-10s %s\n' "fixture-only scenario (not applicable)" "result" "checks"
while IFS= read -r line; do
  name="$(sed -E 's/^[✓✗] ([^:]+): .*/\1/' <<<"$line")"
  if [[ " ${REQUIRED[*]} " != *" $name "* ]]; then
    printf '%-52s %-10s %s\n' "$name" "n/a" "${line#*: }"
  fi
done < <(grep -E '^[✓✗] [^:]+: ' <<<"$summary" || true)

printf '\n%-52s %-10s %s\n' "required scenario" "result" "checks"
passed=0
for s in "${REQUIRED[@]}"; do
  line="$(grep -E "^[✓✗] $s: " <<<"$summary" || true)"
  if [[ "$line" == "✓ $s: "* ]]; then result=PASS; passed=$((passed + 1)); else result=FAIL; status=1; fi
  printf '%-52s %-10s %s\n' "$s" "$result" "${line#*: }"
done
echo "verdict: ${passed}/${#REQUIRED[@]} required scenarios passed (fixture-only scenarios above are not applicable)"

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

echo
echo "== client compatibility: agent frameworks' MCP clients and conversions =="
COMPAT_NODE="$NODE_BIN/node" .venv-frameworks/bin/python tests/python/frameworks/compat.py || status=1

if [ "$status" -ne 0 ]; then
  echo "test-mcp: FAILED (see above)" >&2
else
  echo "test-mcp: all required checks passed"
fi
exit "$status"
