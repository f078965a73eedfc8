#!/usr/bin/env python3
"""A/A check of compare-texts.sh's interval (scripts/hostsample.py): splits one text version's
hosts into two halves (every split) and counts how often the interval calls the halves
different, resampling requests only and requests then hosts. A calibrated 95 % interval does so
about 1 time in 20.

    scripts/split-check.py SET DIR

DIR holds `govcat --json eval calls` of each calls file, named SET-calls-<group>[-n].json.
Groups of fewer than 4 hosts are skipped; halves of an even number of hosts are counted both
ways round.
"""
import collections
import glob
import itertools
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostsample import group, interval  # noqa: E402

S, DIR = sys.argv[1], sys.argv[2]
files = collections.defaultdict(list)
for f in sorted(glob.glob(f"{DIR}/{S}-calls-*.json")):
    files[re.match(rf".*{S}-calls-([0-9a-f]+)", f).group(1)].append(f)


def measures(paths):
    """{measure: {request: [(unit values per host)]}}-ready maps: measure -> {unit: [values]}."""
    tags, rr = group(paths)
    out = collections.defaultdict(dict)
    out["MRR"] = dict(rr)
    for (q, k), v in tags.items():
        out[k][(q, k)] = v
        out["all"][(q, k)] = v
    return out


def units(a, b):
    """Both halves' units keyed by request, as `interval` takes them."""
    by_request = collections.defaultdict(list)
    for u in sorted(set(a) & set(b)):
        by_request[u[0] if isinstance(u, tuple) else u].append((a[u], b[u]))
    return by_request


rng = random.Random(1)
for g, paths in files.items():
    if len(paths) < 4:
        continue
    flags, total = collections.Counter(), collections.Counter()
    idx = range(len(paths))
    for half in itertools.combinations(idx, len(paths) // 2):
        a = measures([paths[i] for i in half])
        b = measures([paths[i] for i in idx if i not in half])
        for m in a:
            for hosts in (False, True):
                iv = interval(units(a[m], b[m]), rng, hosts, 400)
                if iv is None:
                    continue
                total[(m, hosts)] += 1
                flags[(m, hosts)] += iv[0] > 0 or iv[1] < 0
    print(g, len(paths), "hosts; A/A splits flagged different (request-only / requests then hosts):",
          {m: f"{flags[(m, False)]}/{total[(m, False)]} vs {flags[(m, True)]}/{total[(m, True)]}"
           for m in sorted({m for m, _ in total})})
