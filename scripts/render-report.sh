#!/usr/bin/env bash
# Renders an eval report (eval.html from `govcat eval ... --report DIR`) in headless Chromium
# (Debian package `chromium`) and checks that the page a reviewer sees holds its tables:
# the metric table with a row per mode (queries reports) or the per-key table, the
# conflicts, the calibration table and a reliability diagram and precision-coverage chart
# (inline SVG) per key (tags reports), each bin with its n, axis ticks and the coverage
# chart's legend. Writes DIR/eval.png (1280 px wide). Exits 1 when a table is missing.
#
# Usage: scripts/render-report.sh DIR
set -euo pipefail
dir=${1:?usage: scripts/render-report.sh DIR (a directory written by govcat eval --report)}
page="$(cd "$dir" && pwd)/eval.html"
[ -f "$page" ] || { echo "render-report: no $page; run govcat eval queries|tags --report $dir first" >&2; exit 1; }
command -v chromium >/dev/null || { echo "render-report: chromium is not installed; apt-get install chromium" >&2; exit 1; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --user-data-dir="$profile")
dom=$(chromium "${flags[@]}" --dump-dom "file://$page" 2>/dev/null)
chromium "${flags[@]}" --screenshot="$dir/eval.png" --window-size=1280,2400 "file://$page" >/dev/null 2>&1
python3 - "$dom" <<'PY'
import re, sys
from html.parser import HTMLParser

class Tables(HTMLParser):
    def __init__(self):
        super().__init__(); self.tables = {}; self.current = None; self.row = None; self.cell = None; self.svgs = []; self.bins = 0
        self.ticks = 0; self.counts = 0; self.legends = 0
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and a.get("class") in ("reliability", "coverage"):
            self.svgs.append((a["class"], a.get("data-key")))
        if tag == "rect" and a.get("class") == "bin":
            self.bins += 1
        if tag == "text" and a.get("class") == "tick":
            self.ticks += 1
        if tag == "text" and a.get("class") == "n":
            self.counts += 1
        if tag == "g" and a.get("class") == "legend":
            self.legends += 1
        if tag == "table":
            self.current = a.get("id") or a.get("class") or f"table{len(self.tables)}"
            self.tables.setdefault(self.current, [])
        elif tag == "tr" and self.current:
            self.row = []; self.tables[self.current].append(self.row)
        elif tag in ("td", "th") and self.row is not None:
            self.cell = ""
    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.row.append(self.cell.strip()); self.cell = None
        elif tag == "table":
            self.current = None
    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data

t = Tables(); t.feed(sys.argv[1])
if "metrics" in t.tables:
    rows = t.tables["metrics"][1:]
    modes = [r[0] for r in rows]
    assert rows and all(len(r) == len(t.tables["metrics"][0]) for r in rows), "metric rows are incomplete"
    assert all(re.fullmatch(r"\d+\.\d{3}", c) for r in rows for c in r[2:11]), "metric cells are not numbers"
    print(f"render-report: metrics table rendered with modes {', '.join(modes)}; {len(t.tables.get('misses', [])) - 1} misses listed")
elif "keys" in t.tables:
    rows = t.tables["keys"][1:]
    assert rows, "the per-key table is empty"
    assert "conflicts" in t.tables, "no conflicts table"
    assert "calibration" in t.tables, "no calibration table"
    keys = [r[0] for r in rows]
    assert [r[0] for r in t.tables["calibration"][1:]] == keys + ["(all keys)"], "calibration rows differ from the keys"
    for kind in ("reliability", "coverage"):
        drawn = [k for c, k in t.svgs if c == kind]
        assert drawn == keys, f"{kind} charts drawn for {drawn}, not for every key {keys}"
    assert t.bins > 0, "no reliability bin drawn"
    assert t.counts == t.bins, f"{t.bins} reliability bins but {t.counts} of them show their n"
    assert t.ticks >= 10 * len(t.svgs), "a chart lacks its axis ticks (0, 0.25, 0.5, 0.75, 1 on both axes)"
    assert t.legends == len(keys), f"{t.legends} precision-coverage legends for {len(keys)} keys"
    print(f"render-report: per-key table rendered for {', '.join(keys)}; {len(t.tables['conflicts']) - 1} conflicts listed; reliability and coverage charts for every key ({t.bins} bins, each with its n; ticks; a legend per coverage chart)")
else:
    sys.exit("render-report: the rendered page has neither a metrics nor a keys table")
PY
echo "render-report: screenshot $dir/eval.png"
