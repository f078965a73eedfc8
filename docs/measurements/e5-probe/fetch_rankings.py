"""Step 2: system rankings (hybrid, bm25, dense; top 100 via two pages of 50) for every query.
Uses `govcat serve` (same find_precedents tool the CLI `search` calls) on 127.0.0.1 so the
model loads once per set; cross-checks a sample against the CLI. cwd=/work/main.
Writes cache/<set>.system.json: {query_id: {mode: [ {id, bm25_rank, dense_rank, similarity, score} ]}}"""
import json, os, subprocess, sys, time, urllib.request
from common import SETS, CACHE, load_queries

GOVCAT = "/tmp/e5probe/govcat"
MODES = ["hybrid", "bm25", "dense"]
env = dict(os.environ, OMP_NUM_THREADS="1", RAYON_NUM_THREADS="1", MKL_NUM_THREADS="1")


def base_args(name):
    a = [GOVCAT, "--index", SETS[name]["index"]]
    if SETS[name]["catalog"]:
        a += ["--catalog", SETS[name]["catalog"]]
    return a


def slim(e):
    return {k: e.get(k) for k in ("id", "kind", "bm25_rank", "dense_rank", "similarity", "score", "match_type")}


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def ranking(url, query, mode, depth=100):
    out, cursor = [], None
    while len(out) < depth:
        body = {"description": query, "limit": 50, "mode": mode}
        if cursor:
            body["cursor"] = cursor
        res = post(url, body)
        out += [slim(e) for e in res.get("entries", [])]
        cursor = res.get("next_cursor")
        if not cursor:
            break
    return out[:depth]


def cli_ranking(name, query, mode):
    out, cursor = [], None
    while len(out) < 100:
        a = base_args(name) + ["search", query, "--json", "--limit", "50", "--mode", mode]
        if cursor:
            a += ["--cursor", cursor]
        res = json.loads(subprocess.run(a, cwd="/work/main", env=env, capture_output=True, check=True, text=True).stdout)
        out += [slim(e) for e in res["entries"]]
        cursor = res.get("next_cursor")
        if not cursor:
            break
    return out[:100]


for name in SETS:
    qs = load_queries(name)
    logf = open(f"{CACHE}/{name}.serve.log", "w")
    p = subprocess.Popen(base_args(name) + ["serve", "--listen", "127.0.0.1:0"], cwd="/work/main", env=env,
                         stdout=logf, stderr=subprocess.STDOUT, text=True)
    addr = None
    t0 = time.time()
    while time.time() - t0 < 60 and addr is None:
        time.sleep(0.3)
        for tok in open(f"{CACHE}/{name}.serve.log").read().split():
            if tok.startswith("http://127.0.0.1:"):
                addr = tok[len("http://"):].split("/")[0]
                break
    assert addr, "no address printed"
    url = f"http://{addr}/v1/tools/find_precedents"
    for _ in range(60):  # wait ready
        try:
            urllib.request.urlopen(f"http://{addr}/readyz", timeout=5); break
        except Exception:
            time.sleep(0.5)
    t0 = time.time()
    res = {}
    try:
        for q in qs:
            res[q["id"]] = {m: ranking(url, q["query"], m) for m in MODES}
        # cross-check a sample against the CLI
        mism = 0
        for q in qs[:: max(1, len(qs) // 4)][:4]:
            for m in MODES:
                if [e["id"] for e in cli_ranking(name, q["query"], m)] != [e["id"] for e in res[q["id"]][m]]:
                    mism += 1
        print(name, len(qs), "queries in %.1fs" % (time.time() - t0), "CLI mismatches:", mism, flush=True)
    finally:
        p.terminate(); p.wait(timeout=30)
    json.dump(res, open(f"{CACHE}/{name}.system.json", "w"))
