"""Shared config for the e5 probe."""
import json, os, re

ROOT = "/tmp/e5probe"
CACHE = os.path.join(ROOT, "cache")
SETS = {
    "bundled": dict(queries="/work/main/fixtures/bench/queries.jsonl",
                    index=f"{ROOT}/idx-demo", catalog=None),
    "gdc-cptac": dict(queries="/work/main/fixtures/bench/external/gdc-cptac/queries.jsonl",
                      index=f"{ROOT}/idx-gdc-cptac",
                      catalog="/work/main/fixtures/bench/external/gdc-cptac/catalog"),
    "mimic-omop": dict(queries="/work/main/fixtures/bench/external/mimic-omop/queries.jsonl",
                       index=f"{ROOT}/idx-mimic-omop",
                       catalog="/work/main/fixtures/bench/external/mimic-omop/catalog"),
}
KINDS = {"column", "ontology_value"}


def load_docs(name):
    d = SETS[name]["index"]
    cur = open(os.path.join(d, "CURRENT")).read().strip()
    docs = json.load(open(os.path.join(d, "snapshots", cur, "documents.json")))
    return [x for x in docs if x.get("kind") in KINDS]


def load_queries(name):
    out = []
    for line in open(SETS[name]["queries"]):
        line = line.strip()
        if not line:
            continue
        q = json.loads(line)
        if q.get("negative"):
            continue
        rel = q.get("relevant") or {}
        if isinstance(rel, list):
            rel = {r: 1 for r in rel}
        rel = {k: float(v) for k, v in rel.items() if float(v) > 0}
        if not rel:
            continue
        q["relevant"] = rel
        digits = re.sub(r"\D", "", str(q["id"]))
        q["split"] = "calibration" if digits and int(digits) % 3 == 0 else "held-out"
        out.append(q)
    return out
