"""Bootstrap interval of the held-out gain of the learned fusion (see fuse.py). Run from the repository root."""
exec(open('docs/measurements/learned-fusion/fuse.py').read().replace("if __name__ == '__main__':", "if False:"))
data = {n: load(n) for n in SETS}
train = [q for qs in data.values() for q in qs if q['cal']]
w = fit(train, l2=1e-2)
print('weights', np.round(w[:-1], 3))
for n, qs in data.items():
    held = [q for q in qs if not q['cal']]
    print(n, 'held-out nDCG gain learned - shipped: %.4f [%.4f, %.4f]' % bootstrap(held, shipped, learned(w)))
