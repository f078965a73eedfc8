#!/usr/bin/env python3
"""Writes the seed inputs of every fuzz target into fuzz/corpus/<target>/ from real inputs:
the demo catalog's recorded Glue / Lake Formation responses and roles, the shipped ontology,
tool arguments and JSON-RPC messages as the README and tests send them, and cursors in
govcat's encoding. Run once before the first fuzz run; the fuzzed corpora are committed."""

import base64
import hashlib
import json
import pathlib
import struct

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fuzz" / "corpus"
CATALOG = ROOT / "fixtures" / "catalog"
TOOLS = ["find_precedents", "suggest_tags", "list_domains", "get_dataset", "resolve_lf_tag",
         "check_grant_expression", "no_such_tool"]


def write(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    (d / f"seed-{name}").write_bytes(data)


def compact(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


TOOL_ARGS = {
    "find_precedents": [
        {"description": "contains an EU IBAN"},
        {"description": "Geburtsdatum", "limit": 5, "mode": "bm25"},
        {"description": "\"date of birth\" cust*", "domains": ["customer", "policy"],
         "kinds": ["column"], "limit": 50, "mode": "dense"},
        {"description": "iban", "kinds": ["ontology_value"], "cursor": "not a cursor"},
        {"description": "", "limit": 0},
        {"description": "x", "domains": []},
        {"description": "Versicherungsnehmer Straße", "domains": ["nope"]},
    ],
    "suggest_tags": [
        {"description": "IBAN of the customer", "domain": "analytics",
         "table": "customer_360_global_extract"},
        {"description": "salary", "domain": "hr"},
        {"description": "Kontonummer"},
    ],
    "list_domains": [{}, None],
    "get_dataset": [
        {"domain": "policy", "table": "customer"},
        {"domain": "customer", "table": "customer_bank_account"},
        {"domain": "claims", "table": "../../etc"},
        {"domain": "nope", "table": "x"},
    ],
    "resolve_lf_tag": [
        {"tags": {"sensitivity": "high", "residency": "eu", "subject_type": "customer",
                  "retention": "10y", "lawful_basis": "contract"}},
        {"tags": {"sensitivity": "high"}},
        {"tags": {"Sensitivity": "HIGH", "tag_key": "x"}},
    ],
    "check_grant_expression": [
        {"role": "global-analytics-reader", "domain": "analytics",
         "table": "customer_360_global_extract"},
        {"role": "risk-actuary", "domain": "risk", "table": "x"},
        {"role": "../roles/risk-actuary", "domain": "claims", "table": "claim"},
    ],
    "no_such_tool": [{"a": 1}],
}


def tool_args():
    for i, tool in enumerate(TOOLS):
        for n, args in enumerate(TOOL_ARGS[tool]):
            for restricted in (0, 0x80):
                body = b"" if args is None else compact(args).encode()
                write("tool_args", f"{tool}-{n}-{'r' if restricted else 'l'}",
                      bytes([i | restricted]) + body)


def jsonrpc():
    def rpc(i, method, params=None):
        m = {"jsonrpc": "2.0", "id": i, "method": method}
        if params is not None:
            m["params"] = params
        return m

    messages = [
        rpc(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "fuzz", "version": "1"}}),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        rpc(1, "tools/list"),
        rpc(2, "resources/list"),
        rpc(3, "resources/templates/list"),
        rpc(4, "resources/read", {"uri": "govcat://domain/claims/dataset/claim"}),
        rpc(5, "resources/read", {"uri": "govcat://ontology/lf-tags"}),
        rpc(6, "completion/complete", {
            "ref": {"type": "ref/resource", "uri": "govcat://domain/{domain}/dataset/{table}"},
            "argument": {"name": "table", "value": "cu"},
            "context": {"arguments": {"domain": "claims"}}}),
        rpc(7, "ping"),
        {"jsonrpc": "2.0", "id": 8, "result": {}},
        rpc("x", "tools/call", {"name": "find_precedents", "_meta": {"progressToken": 1},
                                "arguments": {"description": "x",
                                              "domains": ["claims", "fraud", "policy"]}}),
    ]
    for tool in TOOLS:
        for n, args in enumerate(TOOL_ARGS[tool][:2]):
            messages.append(rpc(100 + n, "tools/call", {"name": tool, "arguments": args or {}}))
    for n, m in enumerate(messages):
        write("jsonrpc", f"msg-{n}", compact(m))
    write("jsonrpc", "batch", compact(messages[1:5]))
    write("jsonrpc", "sse-answer",
          'data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n')
    write("jsonrpc", "error-answer",
          compact({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "m",
                                                          "data": {"error": "UnknownTool"}}}))
    write("jsonrpc", "uri", "govcat://domain/policy/dataset/customer")


def lf_tag_expression():
    for path in sorted((CATALOG / "roles").glob("*.json")):
        write("lf_tag_expression", path.stem, compact(json.loads(path.read_text())))


def catalog_boundary():
    domains = sorted((CATALOG / "domains").iterdir())
    for d in domains:
        write("catalog_boundary", f"{d.name}-domain",
              compact(json.loads((d / "domain.json").read_text())))
        write("catalog_boundary", f"{d.name}-database",
              compact(json.loads((d / "database.lftags.json").read_text())))
        for t in sorted((d / "tables").iterdir())[:2]:
            parts = {}
            for file, key in [("get-table.json", "table"), ("lf-table.json", "lf_table"),
                              ("lf-columns.json", "lf_columns")]:
                p = t / file
                if p.is_file():
                    parts[key] = json.loads(p.read_text())
                    write("catalog_boundary", f"{d.name}-{t.name}-{file}", compact(parts[key]))
            parts["database"] = json.loads((d / "database.lftags.json").read_text())
            write("catalog_boundary", f"{d.name}-{t.name}-assembled", compact(parts))
    write("catalog_boundary", "ontology", (ROOT / "ontology" / "lf-tags.json").read_bytes())
    write("catalog_boundary", "access-denied",
          compact({"__type": "AccessDeniedException", "Message": "no"}))


def encode_cursor(snapshot, offset, request):
    body = compact({"snapshot": snapshot, "offset": offset, "request": request}).encode()
    return base64.urlsafe_b64encode(body + hashlib.sha256(body).digest()[:4]).rstrip(b"=")


def cursor():
    for n, (snap, off, req) in enumerate([
        ("20261129T193000Z-0a1b2c3d", 10, "00112233aabbccdd"),
        ("20261129T193000Z-0a1b2c3d", 0, ""),
        ("", 18446744073709551615, "x"),
    ]):
        write("cursor", f"text-{n}", b"\x00" + encode_cursor(snap, off, req))
    write("cursor", "text-garbage", b"\x00not a cursor!")
    for n, (off, limit) in enumerate([(1, 10), (0, 50), (40, 7), (2**64 - 1, 1)]):
        write("cursor", f"page-{n}", b"\x01" + struct.pack("<Q", off) + bytes([limit]))


if __name__ == "__main__":
    tool_args()
    jsonrpc()
    lf_tag_expression()
    catalog_boundary()
    cursor()
    for d in sorted(CORPUS.iterdir()):
        files = list(d.iterdir())
        print(f"{d.name}: {len(files)} seeds, {sum(f.stat().st_size for f in files)} bytes")
