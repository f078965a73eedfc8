#!/usr/bin/env bash
# Checks the deployment code: cfn-lint and checkov (pinned in deploy/checks/requirements.txt,
# installed into .venv-deploy/ by scripts/setup-deploy-checks.sh) on
# deploy/cloudformation/*.yaml. Passes only with zero cfn-lint findings, zero failed checkov
# checks and no parsing error; every waived checkov check must carry its reason (a
# `Metadata: checkov: skip: [{id, comment}]` on the resource) and is printed with it.
# Also checks that the replica task's container health check runs the image's HEALTHCHECK.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deploy-checks.sh >/dev/null
venv=.venv-deploy
templates=(deploy/cloudformation/*.yaml)

echo "cfn-lint $("$venv/bin/cfn-lint" --version | awk '{print $2}'): ${templates[*]}"
"$venv/bin/cfn-lint" -- "${templates[@]}"
echo "cfn-lint: no findings"

# --skip-download: no call to the vendor's platform (unreachable here, and not needed).
"$venv/bin/checkov" -d deploy/cloudformation --framework cloudformation --skip-download \
    -o json >"${TMPDIR:-/tmp}/govcat-checkov.$$.json" || true
"$venv/bin/python" - "${TMPDIR:-/tmp}/govcat-checkov.$$.json" <<'PY'
import json, sys
raw = open(sys.argv[1]).read()
try:
    runs = json.loads(raw)
except json.JSONDecodeError:
    sys.exit("checkov printed no JSON:\n" + raw[-2000:])
runs = runs if isinstance(runs, list) else [runs]
bad = False
for run in runs:
    s, r = run["summary"], run["results"]
    print(f"checkov {s['checkov_version']}: passed {s['passed']}, failed {s['failed']}, "
          f"skipped {s['skipped']}, parsing errors {s['parsing_errors']}, resources {s['resource_count']}")
    for c in r.get("failed_checks", []):
        bad = True
        print(f"  FAILED {c['check_id']} {c['resource']} ({c['file_path']}): {c['check_name']}")
    for c in r.get("skipped_checks", []):
        why = (c.get("check_result") or {}).get("suppress_comment") or ""
        print(f"  waived {c['check_id']} {c['resource']}: {c['check_name']}\n    reason: {why}")
        if not why.strip():
            bad = True
            print("    ^ a waiver without a reason")
    if s["parsing_errors"]:
        bad = True
        print("  parsing errors:", r.get("parsing_errors"))
if bad:
    sys.exit("check-deploy.sh: checkov found problems (above)")
PY
rm -f "${TMPDIR:-/tmp}/govcat-checkov.$$.json"

# The image's HEALTHCHECK and the task definition's container health check are one command.
image_hc=$(sed -n 's/^HEALTHCHECK .* CMD \(\[.*\]\)$/\1/p' deploy/Dockerfile)
"$venv/bin/python" - "$image_hc" <<'PY'
import json, sys
sys.path.insert(0, "deploy/ci")
import yaml
from importlib import import_module
loader = import_module("task-command").Loader
doc = yaml.load(open("deploy/cloudformation/govcat.yaml"), Loader=loader)
image = json.loads(sys.argv[1])
for c in doc["Resources"]["ReplicaTaskDefinition"]["Properties"]["ContainerDefinitions"]:
    if c["Name"] == "govcat":
        task = c["HealthCheck"]["Command"]
        if task != ["CMD"] + image:
            sys.exit(f"the task definition's health check {task} is not the image's HEALTHCHECK {image}")
print(f"health check: the task definition runs the image's HEALTHCHECK {image}")
PY
echo "check-deploy.sh: OK"
