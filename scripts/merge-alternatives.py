#!/usr/bin/env python3
"""Merge blind-written alternatives into labelled query files, by id.

Usage: scripts/merge-alternatives.py QUERIES.jsonl WRITTEN.jsonl [WRITTEN.jsonl ...]

Each WRITTEN line is {"id", "query", "alternatives"} as a writer that saw only the query text
produced it (see the set's PROVENANCE.md). For every line of QUERIES whose id a WRITTEN file
names, the writer's "alternatives" list is inserted after "query", serialised as it is: no item
is edited, dropped, reordered or added. A WRITTEN line whose query string differs from the
fixture's, an id written twice, or a fixture id no WRITTEN file names is an error (nothing is
written then). Every other field and the line order are kept; a line that was already merged
gets the same list again (the script is idempotent).
"""
import json
import sys


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    target, sources = argv[1], argv[2:]
    written = {}
    for path in sources:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                o = json.loads(line)
                if o["id"] in written:
                    sys.exit(f"{path}:{n}: id {o['id']} written twice")
                written[o["id"]] = (o["query"], o["alternatives"], f"{path}:{n}")
    out = []
    used = set()
    with open(target, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                out.append(line)
                continue
            o = json.loads(line)
            if o["id"] not in written:
                sys.exit(f"{target}:{n}: id {o['id']} has no written alternatives in {sources}")
            query, alternatives, where = written[o["id"]]
            if query != o["query"]:
                sys.exit(f"{where}: query {query!r} differs from {target}:{n} {o['query']!r}")
            merged = {}
            for k, v in o.items():
                if k == "alternatives":
                    continue
                merged[k] = v
                if k == "query":
                    merged["alternatives"] = alternatives
            out.append(json.dumps(merged, ensure_ascii=False) + "\n")
            used.add(o["id"])
    with open(target, "w", encoding="utf-8") as f:
        f.writelines(out)
    print(f"{target}: alternatives merged into {len(used)} lines")


if __name__ == "__main__":
    main(sys.argv)
