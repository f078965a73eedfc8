"""Fits and measures a learned fusion of govcat's two candidate lists (issue 15), offline.

Input: the candidate dumps written by a govcat built with learned-fusion.patch
(`X_DUMP=/tmp/dump-<set>.jsonl govcat ... eval queries <file> --modes hybrid`), one line per
query with both sides' top 100. Replicates the shipped fusion (RRF k 3, weights 1 / 1.5, floor
0.40, key weight 0.7) to check the metric against `govcat eval`, fits a pairwise logistic model
on the union of the calibration splits (each query weighted equally), and prints every set's
calibration and held-out figures and a paired bootstrap 95 % interval of the held-out nDCG@10
gain. Needs numpy. Run: python3 fuse.py
"""
import json, math, re, sys
import numpy as np

SETS = {
 'bundled': ('fixtures/bench/queries.jsonl', '/tmp/dump-bundled.jsonl'),
 'gdc': ('fixtures/bench/external/gdc-cptac/queries.jsonl', '/tmp/dump-gdc.jsonl'),
 'mimic': ('fixtures/bench/external/mimic-omop/queries.jsonl', '/tmp/dump-mimic.jsonl'),
}
KEY_END = {'id','key','no','nr'}
IDW = {"id","ids","no","nr","number","numbers","key","keys","nummer","kennung","who","whom","whose","wer","wem"}

def split_ident(t):
    t = re.sub(r'([a-z0-9])([A-Z])', r'\1 \2', t)
    return [w.lower() for w in re.split(r'[^A-Za-z0-9]+', t) if w]

def is_cal(i):
    d = ''.join(c for c in i if c.isdigit()); return d != '' and int(d) % 3 == 0

def asks(q):
    ws = split_ident(q)
    return any(w in IDW or w.endswith('nummer') or (w.endswith('nr') and len(w) > 2) or w.startswith('identif') for w in ws)

def name_words(docid):
    if not docid.startswith('column:'): return []
    return split_ident(docid.rsplit('.', 1)[-1])

def load(name):
    qf, df = SETS[name]
    qs = [json.loads(l) for l in open(qf) if l.strip()]
    ds = [json.loads(l) for l in open(df)]
    by = {}
    for d in ds: by.setdefault(d['q'], d)
    out = []
    for q in qs:
        d = by[q['query']]
        out.append(dict(id=q['id'], q=q['query'], rel=q.get('relevant', {}), neg=q.get('negative', False) or not q.get('relevant'), lex=d['lex'], den=d['den'], cal=is_cal(q['id'])))
    return out

def cands(q):
    c = {}
    best = q['lex'][0][1] if q['lex'] else 1.0
    for r, (i, s) in enumerate(q['lex'], 1):
        c[i] = dict(rl=r, bm=s / best, rd=None, sim=None)
    for r, (i, s) in enumerate(q['den'], 1):
        if i in c: c[i]['rd'] = r; c[i]['sim'] = s
        elif s >= 0.40: c[i] = dict(rl=None, bm=0.0, rd=r, sim=s)
    return c

def shipped(q, k=3.0, wl=1.0, wd=1.5, kw=0.7):
    a = asks(q['q'])
    sc = {}
    for i, f in cands(q).items():
        s = (wl / (k + f['rl']) if f['rl'] else 0) + (wd / (k + f['rd']) if f['rd'] else 0)
        nw = name_words(i)
        if not a and nw and nw[-1] in KEY_END: s *= kw
        sc[i] = round(s * 1e6) / 1e6
    return sorted(sc, key=lambda i: (-sc[i], i))

def ndcg(ranked, rel):
    dcg = sum((2 ** rel.get(i, 0) - 1) / math.log2(r + 2) for r, i in enumerate(ranked[:10]))
    ideal = sorted(rel.values(), reverse=True)[:10]
    idcg = sum((2 ** g - 1) / math.log2(r + 2) for r, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0

def mrr(ranked, rel):
    for r, i in enumerate(ranked, 1):
        if rel.get(i, 0) > 0: return 1.0 / r
    return 0.0

def evaluate(qs, rank):
    pos = [q for q in qs if not q['neg']]
    return (sum(ndcg(rank(q), q['rel']) for q in pos) / len(pos), sum(mrr(rank(q), q['rel']) for q in pos) / len(pos))

def feats(q, i, f, qwords, a):
    nw = name_words(i)
    overlap = len(set(nw) & qwords) / len(set(nw)) if nw else 0.0
    keyflag = 1.0 if (not a and nw and nw[-1] in KEY_END) else 0.0
    sim = f['sim'] if f['sim'] is not None else (q['den'][-1][1] if q['den'] else 0.0)
    return [1.0 / (3 + f['rl']) if f['rl'] else 0.0,
            1.0 / (3 + f['rd']) if f['rd'] else 0.0,
            f['bm'], sim, overlap, keyflag, 1.0 if f['rl'] and f['rd'] else 0.0]

NF = 7
def matrix(q):
    qwords = set(split_ident(q['q'])); a = asks(q['q'])
    c = cands(q); ids = sorted(c)
    return ids, np.array([feats(q, i, c[i], qwords, a) for i in ids]) if ids else np.zeros((0, NF))

def learned(w):
    def rank(q):
        ids, X = matrix(q)
        if not ids: return []
        s = X @ w[:-1] + w[-1]
        order = sorted(range(len(ids)), key=lambda j: (-round(s[j], 6), ids[j]))
        return [ids[j] for j in order]
    return rank

def fit(train, l2=1e-2, iters=3000, lr=0.5, pairwise=True):
    # pairwise logistic (RankNet-style) on relevant vs non-relevant within a query, each query weighted equally
    Xs = []
    for q in train:
        if q['neg']: continue
        ids, X = matrix(q)
        if not ids: continue
        y = np.array([q['rel'].get(i, 0) for i in ids])
        P = np.where(y > 0)[0]; N = np.where(y == 0)[0]
        if len(P) == 0 or len(N) == 0: continue
        D = (X[P][:, None, :] - X[N][None, :, :]).reshape(-1, X.shape[1])
        Xs.append((D, 1.0 / len(D)))
    w = np.zeros(NF)
    for it in range(iters):
        g = l2 * w; tot = 0
        for D, wt in Xs:
            z = D @ w
            p = 1 / (1 + np.exp(z))  # d/dz of -log sigmoid(z) = -(1-sigmoid)
            g -= wt * (D.T @ p); tot += 1
        w -= lr * g / tot
    return np.append(w, 0.0)

if __name__ == '__main__':
    data = {n: load(n) for n in SETS}
    for n, qs in data.items():
        cal = [q for q in qs if q['cal']]; held = [q for q in qs if not q['cal']]
        print(n, 'shipped cal %.4f %.4f' % evaluate(cal, shipped), 'held %.4f %.4f' % evaluate(held, shipped))
    train = [q for qs in data.values() for q in qs if q['cal']]
    for l2 in [1e-3, 1e-2, 1e-1]:
        w = fit(train, l2=l2)
        print('l2', l2, 'w', np.round(w[:-1], 3))
        for n, qs in data.items():
            cal = [q for q in qs if q['cal']]; held = [q for q in qs if not q['cal']]
            print('  ', n, 'learned cal %.4f %.4f' % evaluate(cal, learned(w)), 'held %.4f %.4f' % evaluate(held, learned(w)))

def bootstrap(qs, a, b, n=2000, seed=7):
    import random
    pos = [q for q in qs if not q['neg']]
    d = [ndcg(b(q), q['rel']) - ndcg(a(q), q['rel']) for q in pos]
    rnd = random.Random(seed); means = []
    for _ in range(n):
        s = [d[rnd.randrange(len(d))] for _ in d]; means.append(sum(s) / len(s))
    means.sort()
    return sum(d) / len(d), means[int(0.025 * n)], means[int(0.975 * n)]
