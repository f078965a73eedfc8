"""Unknown arguments are refused by name, over every transport.

The published input schemas carry no `"additionalProperties": false` (google-genai's MCP
converter takes that keyword's value for a schema and crashes on a boolean; strict converters
close every object themselves), so the refusal the schema no longer states is the server's.
"""

from __future__ import annotations

from conftest import Connect, Server, http_json, tool_error

CALLS = {
    "find_precedents": {"description": "contains an EU IBAN"},
    "suggest_tags": {"description": "contains an EU IBAN"},
    "list_domains": {},
    "get_dataset": {"domain": "policy", "table": "customer"},
    "resolve_lf_tag": {"tags": {"sensitivity": "high"}},
    "check_grant_expression": {"role": "risk-actuary", "domain": "policy", "table": "customer"},
}


async def test_an_unknown_argument_is_refused_by_name(connect: Connect) -> None:
    async with connect() as client:
        schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        assert sorted(schemas) == sorted(CALLS)
        for name, args in CALLS.items():
            assert "additionalProperties" not in schemas[name], name
            err = tool_error(await client.call_tool(name, {**args, "colour": "red"}))
            assert err["error"] == "InvalidArguments", (name, err)
            assert "unknown field `colour`" in err["message"], (name, err)


def test_rest_refuses_an_unknown_argument_by_name(server: Server) -> None:
    for name, args in CALLS.items():
        status, err = http_json(
            f"{server.base}/v1/tools/{name}", method="POST", body={**args, "colour": "red"}
        )
        assert status == 400, (name, status, err)
        assert err["error"] == "InvalidArguments" and "unknown field `colour`" in err["message"], name
