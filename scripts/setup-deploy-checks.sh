#!/usr/bin/env bash
# Installs the pinned deployment checks (deploy/checks/requirements.txt: cfn-lint, checkov) into
# .venv-deploy/ with pip; idempotent (does nothing when the installed set matches the pins).
# Separate from .venv/ because checkov pins many libraries of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-deploy
req=deploy/checks/requirements.txt
stamp="$venv/.requirements.sha256"
want=$(sha256sum "$req" | awk '{print $1}')
if [ -x "$venv/bin/cfn-lint" ] && [ -x "$venv/bin/checkov" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    echo "setup-deploy-checks.sh: $venv is up to date."
    exit 0
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
echo "$want" > "$stamp"
echo "setup-deploy-checks.sh: installed $("$venv/bin/cfn-lint" --version) and checkov $("$venv/bin/checkov" --version) into $venv."
