#!/usr/bin/env python3
"""Writes docs/PERFORMANCE.md and docs/perf/quality.svg from the benches' JSON reports.

Reads target/bench/{machine,quality,scale,http,http-unique,load_faults}.json (written by
scripts/perf-report.sh and the benches it runs), docs/perf/reference-scale.json (figures of
large sizes measured earlier, used only for sizes this run did not measure, and marked so) and
docs/perf/reference-http.json (a release-build HTTP run, shown when this run used another
profile, and marked so).
Every figure is printed next to a baseline measured in the same run: bm25-only for retrieval
quality, the exact scan for HNSW, the cached query embedding for a cold one.

Standard library only. Usage: scripts/perf_report.py [--bench-dir target/bench] [--docs docs]
"""
import argparse
import html
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def num(x, places=1):
    if x is None:
        return "–"
    if isinstance(x, (int,)) and not isinstance(x, bool):
        return f"{x:,}"
    return f"{x:,.{places}f}"


def ratio(a, b, places=1):
    """a / b as 'N.N×', or '–'."""
    if a is None or b in (None, 0):
        return "–"
    return f"{a / b:.{places}f}×"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def dig(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


# ------------------------------------------------------------------ machine

def machine_section(m):
    if not m:
        return "## Machine\n\nNo `target/bench/machine.json`: run `scripts/perf-report.sh`.\n"
    rows = [
        ["measured", m.get("date", "–")],
        ["commit", f"`{m.get('commit', '–')}`"],
        ["nproc", m.get("nproc", "–")],
        ["CPU", m.get("cpu_model", "–")],
        ["RAM", f"{m.get('memory_gib', '–')} GiB"],
        ["rustc", m.get("rustc", "–")],
        ["profile", m.get("profile_note", m.get("profile", "–"))],
        ["load average at start", m.get("loadavg", "–")],
    ]
    return "## Machine\n\n" + table(["", ""], rows) + "\n"


# ------------------------------------------------------------------ quality

METRICS = [
    ("recall@1", "recall@1"),
    ("recall@5", "recall@5"),
    ("recall@10", "recall@10"),
    ("mrr", "MRR"),
    ("ndcg@10", "nDCG@10"),
]
MODES = [("bm25", "bm25 only"), ("dense", "dense only"), ("hybrid", "hybrid (shipped)")]
COLOURS = {"bm25": "#8c8c8c", "dense": "#5b8dd6", "hybrid": "#d9822b"}


def quality_svg(q):
    """Grouped bars: per split (held-out, German), per metric, one bar per mode."""
    splits = [s for s in ("held_out", "german") if dig(q, "metrics_with_shipped_params", "hybrid", s)]
    bar, gap, group_gap, top, height, left = 14, 2, 18, 40, 180, 40
    group_w = len(MODES) * (bar + gap) + group_gap
    panel_w = len(METRICS) * group_w + 30
    width = left + len(splits) * panel_w + 20
    total_h = top + height + 60
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{total_h}" fill="white"/>',
        f'<text x="{left}" y="16" font-size="13">Retrieval quality by mode '
        f'(benches/quality.rs, {html.escape(str(q.get("documents")))} documents)</text>',
    ]
    for i, (mode, label) in enumerate(MODES):
        x = left + i * 150
        parts.append(f'<rect x="{x}" y="24" width="10" height="10" fill="{COLOURS[mode]}"/>')
        parts.append(f'<text x="{x + 14}" y="33">{html.escape(label)}</text>')
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = top + height - tick * height
        parts.append(f'<line x1="{left - 4}" x2="{width - 20}" y1="{y}" y2="{y}" stroke="#e5e5e5"/>')
        parts.append(f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{tick:.2f}</text>')
    for p, split in enumerate(splits):
        x0 = left + p * panel_w + 10
        n = dig(q, "metrics_with_shipped_params", "hybrid", split, "queries")
        parts.append(
            f'<text x="{x0 + panel_w / 2 - 20}" y="{top + height + 44}" text-anchor="middle" '
            f'font-size="12">{split.replace("_", "-")} ({n} queries)</text>'
        )
        for g, (key, label) in enumerate(METRICS):
            gx = x0 + g * group_w
            for b, (mode, _) in enumerate(MODES):
                v = dig(q, "metrics_with_shipped_params", mode, split, key) or 0.0
                h = v * height
                x = gx + b * (bar + gap)
                parts.append(
                    f'<rect x="{x}" y="{top + height - h:.1f}" width="{bar}" height="{h:.1f}" '
                    f'fill="{COLOURS[mode]}"><title>{mode} {label} {v:.3f}</title></rect>'
                )
            parts.append(
                f'<text x="{gx + (len(MODES) * (bar + gap)) / 2}" y="{top + height + 14}" '
                f'text-anchor="middle">{label}</text>'
            )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def quality_section(q):
    if not q:
        return "## Retrieval quality\n\nNo `target/bench/quality.json` in this run.\n"
    out = ["## Retrieval quality (`benches/quality.rs`)", ""]
    p = q.get("shipped_params", {})
    out.append(
        f"Snapshot of the demo catalog ({q.get('documents')} documents, model "
        f"`{q.get('model')}`), labelled query set {dig(q, 'queries', 'all')} queries "
        f"(calibration {dig(q, 'queries', 'calibration')}, held-out {dig(q, 'queries', 'held_out')}, "
        f"German {dig(q, 'queries', 'german')}, negatives {dig(q, 'queries', 'negatives')}). Shipped "
        f"fusion: {p.get('fusion')} k={p.get('rrf_k')}, dense weight {p.get('dense_weight')}, "
        f"similarity floor {num(p.get('min_similarity'), 2)}, key-column weight "
        f"{p.get('key_weight', 1.0)} (k and dense weight fitted on the union of the calibration "
        "splits of this set and the external ones, see `Params::default`; floor and key weight "
        "on this set's calibration split); the "
        "figures below are on the held-out split and the German queries. The ratio column is "
        "each mode's nDCG@10 over the bm25-only baseline of the same run."
    )
    out.append("")
    for split in ("held_out", "german", "all"):
        rows = []
        base = dig(q, "metrics_with_shipped_params", "bm25", split) or {}
        for mode, label in MODES:
            m = dig(q, "metrics_with_shipped_params", mode, split)
            if not m:
                continue
            rows.append([label] + [num(m.get(k), 3) for k, _ in METRICS]
                        + [ratio(m.get("ndcg@10"), base.get("ndcg@10"), 2)])
        if rows:
            n = dig(q, "metrics_with_shipped_params", "hybrid", split, "queries")
            out.append(f"**{split.replace('_', '-')}** ({n} queries)")
            out.append("")
            out.append(table(["mode"] + [l for _, l in METRICS] + ["nDCG@10 vs bm25"], rows))
            out.append("")
    oov = q.get("out_of_vocabulary", {})
    out.append(
        f"Out-of-vocabulary answers (an entry outside the closed set): {oov.get('violations')} of "
        f"{oov.get('returned_entries')} returned entries (rate {oov.get('rate')}; must be 0). "
        f"Negative queries (nothing relevant exists) answered with a semantic-only entry: "
        f"{num((q.get('negatives_with_semantic_only_entry') or 0) * 100, 1)} %."
    )
    out.append("")
    out.append("![Retrieval quality by mode](perf/quality.svg)")
    out.append("")
    out.append("Definitions: " + "; ".join(f"{k}: {v}" for k, v in q.get("definitions", {}).items()) + ".")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ scale

def scale_rows(scale, reference):
    measured = {s["size"]: (s, None) for s in (scale or {}).get("sizes", [])}
    ref_note = None
    if reference:
        ref_note = reference.get("source")
        for s in reference.get("sizes", []):
            if s["size"] not in measured or measured[s["size"]][0].get("status") != "complete":
                measured[s["size"]] = (s, reference.get("measured_at"))
    return [measured[k] for k in sorted(measured)], ref_note


def scale_section(scale, reference):
    out = ["## Scale (`benches/scale.rs`)", ""]
    if not scale and not reference:
        return "\n".join(out + ["No scale report.", ""])
    rows_in, ref_note = scale_rows(scale, reference)
    prof = dig(scale, "profile", "name") or "–"
    out.append(
        "Synthetic catalogs (deterministic seed) written as real snapshots and loaded back; "
        "hybrid `retrieval::search` latency with a fresh query embedding (cold) and a cached one; "
        "the dense index (HNSW) against the exact scan on the same queries. Baselines of the same "
        f"run: cold/cached and exact/HNSW are ratios of p50s. The `+4 alternatives` columns: the "
        "same search with 4 alternatives per call (5 phrasings embedded in one forward pass), "
        "every phrasing new to the cache (cold) and again (cached), divided by the description "
        f"alone of the same run. Calibration: the leave-one-out `govcat index` runs to fit the "
        "confidence map (`tools::calibrate::fit_snapshot`), its wall time and the tagged columns "
        f"it checked (a per-domain sample of 5,000 above that). This run's profile: {prof}."
    )
    out.append("")
    rows = []
    partial = []
    for s, ref_date in rows_in:
        src = f"reference {ref_date}" if ref_date else "this run"
        q = s.get("query") or {}
        b = s.get("build") or {}
        dve = q.get("dense_vs_exact") or {}
        if s.get("status") == "partial" or not q:
            partial.append((s, src))
            continue
        unc, cac = dig(q, "search_uncached", "p50_ms"), dig(q, "search_cached", "p50_ms")
        alt = q.get("with_alternatives") or {}
        aunc, acac = dig(alt, "search_uncached", "p50_ms"), dig(alt, "search_cached", "p50_ms")
        ex, hn = dig(dve, "exact", "p50_ms"), dig(dve, "hnsw", "p50_ms")
        rows.append([
            f"{s['size']:,}", src, q.get("backend", "–"),
            num((b.get("snapshot_write_ms") or 0) / 1000, 1), num(q.get("rss_after_load_mib"), 0),
            num(unc, 1), num(cac, 1), ratio(unc, cac),
            num(ex, 2), num(hn, 2), ratio(ex, hn), num(dve.get("recall_at_10"), 3),
            num(aunc, 1), ratio(aunc, unc), num(acac, 1), ratio(acac, cac),
            num(dig(q, "calibration", "seconds"), 1) + (
                f" ({q['calibration']['columns_checked']:,}{' sampled' if dig(q, 'calibration', 'sampled') else ''})"
                if dig(q, "calibration", "columns_checked") is not None else ""),
        ])
    out.append(table(
        ["columns", "source", "backend served", "snapshot write s", "RSS after load MiB",
         "search p50 cold ms", "cached ms", "cold/cached", "exact scan p50 ms", "HNSW p50 ms",
         "exact/HNSW", "HNSW recall@10", "+4 alternatives cold ms", "cold / description alone",
         "+4 alternatives cached ms", "cached / description alone",
         "calibration s (columns checked)"], rows))
    out.append("")
    for s, src in partial:
        p = s.get("partial", {})
        out.append(
            f"**{s['size']:,} columns ({src}, partial)**: {s.get('why_partial', '')}. Measured: "
            f"lexical search p50 {num(dig(p, 'lexical_search', 'p50_ms'))} ms, exact dense scan "
            f"(top 100) p50 {num(dig(p, 'exact_scan_top100', 'p50_ms'))} ms, "
            + (f"one-domain scope filter p50 {num(dig(p, 'scope_filter_one_domain', 'p50_ms'))} ms"
               if "scope_filter_one_domain" in p else
               f"scope mask over all documents p50 {num(dig(p, 'scope_mask_over_all_docs', 'p50_ms'))} ms "
               "(the per-query mask of that time; since then a caller who reads everything needs none and a "
               "one-domain filter is a table lookup per document: 0.07 ms at 100k)")
            + f", fresh query "
            f"embedding p50 {num(dig(p, 'embed_fresh_query', 'p50_ms'))} ms, RSS after build "
            f"{num(p.get('rss_after_build_mib'), 0)} MiB (peak {num(p.get('peak_rss_mib'), 0)}); "
            f"HNSW build estimated at {num(s.get('hnsw_build_estimate_min'), 0)} min on 2 cores."
        )
        out.append("")
    if ref_note and any(ref_date for _, ref_date in rows_in):
        out.append(f"Reference rows: {ref_note} Their backend is the one served when they were "
                   "measured (the crossover was 20k documents then).")
        out.append("")
    out.append(
        f"Dense backend crossover: snapshots of up to `EXACT_MAX_DOCS` = "
        f"{(scale or reference or {}).get('exact_max_docs', 5000):,} documents serve from the "
        "exact scan, larger ones from HNSW (`src/index/dense.rs`). The exact scan is govcat's own "
        "code: under the dev profile it runs at opt-level 0, so exact/HNSW ratios measured with "
        "`--profile dev` overstate HNSW's advantage at small sizes; the release rows are the "
        "ones to compare. History: the crossover moved from 20k to 5k documents (commit 09ccb13, "
        "10k release: HNSW 1.9 ms vs exact 3.2 ms p50) and back to 20k once the dot product "
        "was vectorised (2026-11-30, 10k release: exact 0.9 ms vs HNSW 1.3 ms p50)."
    )
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ http

def http_section(warm, cold, reference=None):
    out = ["## HTTP throughput (`benches/http_load.rs`)", ""]
    if not warm:
        return "\n".join(out + ["No `target/bench/http.json` in this run.", ""])
    out.append(
        f"`POST /v1/tools/{{name}}` on loopback, HTTP/1.1 keep-alive, one request at a time per "
        f"worker, {warm['results'][0]['seconds']} s "
        f"per cell after {warm.get('warmup_seconds')} s warm-up, no authentication, profile "
        f"{warm.get('profile', '–')}. Warm: the {warm.get('distinct_descriptions')} labelled "
        "descriptions, each embedded once before measuring (query-embedding cache hits)."
    )
    out.append("")
    rows = []
    for r in warm["results"]:
        rows.append([r["tool"], r["concurrency"], num(r["requests_per_second"], 0),
                     num(r["p50_ms"], 2), num(r["p99_ms"], 2), r["failed"]])
    out.append(table(["tool", "concurrency", "req/s", "p50 ms", "p99 ms", "failed"], rows))
    out.append("")
    if cold:
        warm_fp = {r["concurrency"]: r for r in warm["results"] if r["tool"] == "find_precedents"}
        rows = []
        for r in cold["results"]:
            if r["tool"] != "find_precedents":
                continue
            w = warm_fp.get(r["concurrency"], {})
            rows.append([r["concurrency"], num(r["requests_per_second"], 0),
                         num(w.get("requests_per_second"), 0),
                         ratio(w.get("requests_per_second"), r["requests_per_second"]),
                         num(r["p50_ms"], 2), num(w.get("p50_ms"), 2),
                         ratio(r["p50_ms"], w.get("p50_ms")), r["failed"]])
        out.append(
            "Cold vs cached query embedding (`find_precedents`; cold = `--unique`: every "
            "description new, one model inference per request):"
        )
        out.append("")
        out.append(table(["concurrency", "cold req/s", "cached req/s", "cached/cold throughput",
                          "cold p50 ms", "cached p50 ms", "cold/cached p50", "cold failed"], rows))
        out.append("")
    ref = (reference or {}).get("report")
    if ref and ref.get("profile", "release") != warm.get("profile"):
        this = {(r["tool"], r["concurrency"]): r for r in warm["results"]}
        rows = []
        for r in ref["results"]:
            t = this.get((r["tool"], r["concurrency"]), {})
            rows.append([r["tool"], r["concurrency"], num(r["requests_per_second"], 0),
                         num(r["p50_ms"], 2), num(r["p99_ms"], 2),
                         ratio(r["requests_per_second"], t.get("requests_per_second"))])
        out.append(
            f"Reference, release build ({reference.get('measured_at')}; not this run): "
            f"{reference.get('source')} The last column is the release throughput over this "
            "run's, i.e. what the profile (and the machine's load at the time) costs."
        )
        out.append("")
        out.append(table(["tool", "concurrency", "req/s", "p50 ms", "p99 ms",
                          "release/this run"], rows))
        out.append("")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ load with faults

SCENARIO_TITLES = {
    "swap": "snapshot rebuilt and swapped every 10 s (`--scenario swap`, dir source)",
    "aws": "AWS emulator killed, restarted and reseeded mid-run (`--scenario aws`)",
}


def faults_section(lf):
    out = ["## Load with faults (`benches/load_faults.rs`)", ""]
    scenarios = (lf or {}).get("scenarios", {})
    if not scenarios:
        return "\n".join(out + ["No `target/bench/load_faults.json` in this run.", ""])
    out.append(
        "Mixed traffic per 20 requests: 7 `find_precedents` with a repeated description (first "
        "entry checked against a reference call), 2 with a new one (a counter appended: one model "
        "inference each; echo and non-empty list checked), 6 `get_dataset policy.customer` (columns "
        "and the `iban` tags checked) and 5 `resolve_lf_tag` (resolution checked). Half the workers "
        "use REST, half MCP Streamable HTTP (one session each); every request carries an RS256 "
        "bearer token (`serve --auth jwt --jwks-file`). Server RSS is VmRSS sampled every second."
    )
    out.append("")
    for name, s in scenarios.items():
        o, g = s.get("overall", {}), s.get("goals", {})
        out.append(f"### {SCENARIO_TITLES.get(name, name)}")
        out.append("")
        rss = s.get("rss_mib", {})
        rows = [
            ["measured", f"{s.get('measured_at', '–')}, profile {s.get('profile')}, "
                         f"load average at end {dig(s, 'machine', 'loadavg')}"],
            ["duration, concurrency", f"{num(s.get('seconds'), 0)} s, {s.get('concurrency')}"],
            ["requests, req/s", f"{num(o.get('requests'))}, {num(o.get('requests_per_second'), 1)}"],
            ["p50 / p90 / p99 / max ms", " / ".join(num(o.get(k), 1) for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms"))],
            ["correct answers", f"{num(o.get('correct'))} of {num(o.get('requests'))}"],
            ["snapshot swaps seen on /readyz", f"{s.get('snapshot_swaps')} (refresh {s.get('refresh')})"],
            ["rebuild with nothing changed", f"{num(s.get('rebuild_unchanged_s'), 2)} s (first build {num(s.get('initial_index_build_s'), 1)} s)"],
            ["server RSS MiB (min – max; first → last)", f"{num(rss.get('min'))} – {num(rss.get('max'))}; {num(rss.get('first'))} → {num(rss.get('last'))}"],
        ]
        if s.get("outage"):
            ou = s["outage"]
            rows.append(["emulator outage", f"killed at {ou['killed_at_s']} s, restarted at {ou['restarted_at_s']} s, reseeded at {ou['reseeded_at_s']} s"])
        out.append(table(["", ""], rows))
        out.append("")
        goals = [[k.replace("_", " "), v] for k, v in g.items()
                 if s.get("outage") or "during_outage" not in k]
        out.append(table(["goal", "count"], goals))
        out.append("")
        per = s.get("per_operation", [])
        if per:
            out.append(table(["operation", "transport", "req/s", "p50 ms", "p99 ms"],
                             [[p["operation"], p["transport"], num(p["requests_per_second"], 1),
                               num(p["p50_ms"], 1), num(p["p99_ms"], 1)] for p in per]))
            out.append("")
        if name == "aws":
            out.append(
                "How to read the phases: a request overlapping [kill, end of reseed] is *during* "
                "the outage. Two behaviours keep the answers right around it. (1) An endpoint "
                "failure drops the cached STS session of that (domain, caller) "
                "(`src/catalog/aws.rs`, `forget_session`), so the first read after the restart "
                "assumes the role again; before this, sessions issued by the emulator before the "
                "kill (kept up to 840 s) reached moto's empty default account after its restart "
                "(`moto/iam/models.py: get_account_id_from`): `DomainNotFound` and HTTP 500 "
                "outside the outage. (2) A scheduled rebuild that reads more than 10 % fewer "
                "columns than the published snapshot is not published (`SnapshotShrunk`, "
                "`index::build_unattended`); before this, a rebuild during the reseed published "
                "a partial catalog and answers differed from the reference until the next "
                "rebuild. During the reseed itself, live reads of tables not yet seeded are "
                "`DomainNotFound`/`DatasetNotFound` with a next step."
            )
            out.append("")
        errs = s.get("errors_by_kind", [])
        if any(e["kind"].startswith("empty list: find_precedents") for e in errs):
            out.append(
                "An empty `find_precedents` answer to a *new* description is not by itself "
                "wrong: when the description it extends matched only semantically (near the "
                "0.40 similarity floor), the appended counter can move it below the floor, and "
                "`match_type: none` with a hint is the designed answer (reproduce with "
                "`govcat search \"hsntsn 19114\"`). Since commit 64dd32f the bench extends only "
                "descriptions whose reference matched lexically, where a non-empty answer is "
                "known in advance."
            )
            out.append("")
        if errs:
            out.append("Errors and wrong answers by kind:")
            out.append("")
            out.append(table(["kind", "phase", "count", "names a next step", "sample"],
                             [[e["kind"], e["phase"], e["count"],
                               "–" if e["kind"].startswith(("wrong", "empty")) else ("yes" if e["names_next_step"] else "no"),
                               (e.get("sample_messages") or [""])[0][:160].replace("|", "\\|")] for e in errs]))
            out.append("")
        else:
            out.append("No errors and no wrong answers.")
            out.append("")
    return "\n".join(out) + "\n"



# ------------------------------------------------------------------ eval (govcat eval)

EVAL_MODES = ["baseline", "bm25", "dense", "hybrid", "baseline_alt", "hybrid_alt"]
EVAL_METRICS = ["recall@1", "recall@5", "recall@10", "success@5", "mrr", "ndcg@10"]


def eval_section(bench):
    """Every query set and tag set `govcat eval` ran on (target/bench/eval/*.json)."""
    out = ["## Quality on every set (`govcat eval`)", ""]
    runs = sorted((bench / "eval").glob("*.json")) if (bench / "eval").is_dir() else []
    if not runs:
        return None
    out.append(
        "Written by `scripts/perf-report.sh` with `govcat eval queries` (labelled query sets: "
        "the bundled one and those under `fixtures/bench/external/`) and `govcat eval tags` "
        "(leave-one-out tag suggestion). Every mode is shown next to `baseline`, the textbook "
        "method computed in the same run (BM25 Porter2 k1 1.2 b 0.75 over name words and "
        "description + MiniLM exact cosine, RRF k=60); the ratio columns divide by it. "
        "Wall time per run in the last column."
    )
    out.append("")
    rows, tag_rows = [], []
    for path in runs:
        r = load(path) or {}
        name = path.stem
        if "modes" in r:
            base = dig(r, "modes", "baseline") or {}
            for mode in EVAL_MODES:
                m = dig(r, "modes", mode)
                if not m:
                    continue
                rows.append([name if mode == EVAL_MODES[0] else "", mode, m.get("queries")]
                            + [num(m.get(k), 3) for k in EVAL_METRICS]
                            + [ratio(m.get("ndcg@10"), base.get("ndcg@10"), 2),
                               ratio(m.get("mrr"), base.get("mrr"), 2),
                               m.get("out_of_vocabulary"),
                               num(r.get("wall_seconds"), 1) if mode == EVAL_MODES[0] else ""])
        elif "keys" in r:
            first = True
            for key, k in r["keys"].items():
                tag_rows.append([name if first else "", key, k.get("columns"),
                                 num(k.get("accuracy@1"), 3), num(k.get("coverage"), 3),
                                 num(k.get("accuracy_when_answered"), 3),
                                 num(k.get("baseline_majority"), 3),
                                 num(k.get("baseline_name_overlap"), 3),
                                 len(r.get("conflicts", [])) if first else "",
                                 num(r.get("wall_seconds"), 1) if first else ""])
                first = False
    if rows:
        out.append("**Retrieval** (`govcat eval queries`; every query of each file, `bundled-held-out`: "
                   "the held-out split of the bundled set, what its targets are stated on)")
        out.append("")
        out.append(table(["set", "mode", "queries"] + EVAL_METRICS
                         + ["nDCG@10 / baseline", "MRR / baseline", "OOV", "wall s"], rows))
        out.append("")
    if tag_rows:
        out.append("**Tag suggestion** (`govcat eval tags`, leave-one-out, the column itself excluded)")
        out.append("")
        out.append(table(["set", "key", "columns", "accuracy@1", "coverage", "accuracy when answered",
                          "baseline: majority", "baseline: name overlap", "conflicts", "wall s"],
                         tag_rows))
        out.append("")
    return "\n".join(out) + "\n"


def previous_sections(path):
    """The current page's sections by heading, to carry over what this run did not measure."""
    try:
        text = Path(path).read_text()
    except OSError:
        return {}
    out, head, buf = {}, None, []
    for line in text.splitlines():
        if line.startswith("## "):
            if head:
                out[head] = "\n".join(buf).rstrip() + "\n"
            head, buf = line[3:].split(" (")[0], [line]
        elif head:
            buf.append(line)
    if head:
        out[head] = "\n".join(buf).rstrip() + "\n"
    return out


def carried(section, previous, date):
    """`section`, or when it reports that this run measured nothing, the previous page's."""
    head = section.splitlines()[0][3:].split(" (")[0]
    if ("in this run" in section or "No scale report" in section) and head in previous:
        old = previous[head]
        if "*Carried over from" in old:
            return old
        first, rest = old.split("\n", 1)
        return f"{first}\n\n*Carried over from the page of {date}: not measured in this run.*\n{rest}"
    return section


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench-dir", default=str(ROOT / "target/bench"))
    ap.add_argument("--docs", default=str(ROOT / "docs"))
    a = ap.parse_args()
    bench, docs = Path(a.bench_dir), Path(a.docs)
    machine = load(bench / "machine.json")
    quality = load(bench / "quality.json")
    scale = load(bench / "scale.json")
    reference = load(docs / "perf/reference-scale.json")
    warm, cold = load(bench / "http.json"), load(bench / "http-unique.json")
    http_reference = load(docs / "perf/reference-http.json")
    faults = load(bench / "load_faults.json")

    (docs / "perf").mkdir(parents=True, exist_ok=True)
    if quality:
        (docs / "perf/quality.svg").write_text(quality_svg(quality))
    previous = previous_sections(docs / "PERFORMANCE.md")
    old_date = next((l for l in (docs / "PERFORMANCE.md").read_text().splitlines()
                     if l.startswith("| measured")), "| measured | an earlier run |").split("|")[2].strip() \
        if (docs / "PERFORMANCE.md").exists() else "an earlier run"
    keep = lambda section: carried(section, previous, old_date)
    evaluated = eval_section(bench)
    parts = [
        "# Performance",
        "",
        "Generated by `scripts/perf-report.sh` (benches, then `scripts/perf_report.py`); do not "
        "edit by hand, rerun the script. Figures not measured in this run are marked with their "
        "date and source.",
        "",
        machine_section(machine),
        keep(quality_section(quality)),
        evaluated or previous.get("Quality on every set", ""),
        (docs / "perf/alternatives.md").read_text() if (docs / "perf/alternatives.md").exists() else "",
        (docs / "perf/calibration.md").read_text() if (docs / "perf/calibration.md").exists() else "",
        (docs / "perf/large-lake.md").read_text() if (docs / "perf/large-lake.md").exists() else "",
        keep(scale_section(scale, reference)),
        keep(http_section(warm, cold, http_reference)),
        keep(faults_section(faults)),
        "## Reproduce",
        "",
        "    scripts/perf-report.sh                                  # everything, dev profile",
        "    PERF_SCALE_SIZES=1000,10000,100000,1000000 scripts/perf-report.sh   # the large sizes (hours)",
        "    PERF_SKIP=load_faults scripts/perf-report.sh            # reuse the last load_faults.json",
        "    scripts/perf_report.py                                  # only regenerate this page",
        "",
    ]
    (docs / "PERFORMANCE.md").write_text("\n".join(parts))
    print(f"wrote {docs / 'PERFORMANCE.md'}")


if __name__ == "__main__":
    main()
