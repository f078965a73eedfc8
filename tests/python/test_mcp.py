"""govcat over MCP, driven by the official Python SDK over Streamable HTTP and stdio, on both
protocol generations: 2025-11-25 (`mode="legacy"`, initialize) and 2026-07-28 (`mode="auto"`,
stateless, server/discover). Values are compared exactly, against the REST API of the same
server (one dispatcher, so one answer) or against the demo catalog and ontology files.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from conftest import (
    DATASET_TEMPLATE,
    ONTOLOGY_URI,
    REPO,
    Connect,
    Elicitations,
    Server,
    http_json,
    tool_error,
)
from mcp import MCPError
from mcp.types import ResourceTemplateReference

ONTOLOGY = json.loads((REPO / "ontology" / "lf-tags.json").read_text())
ALLOWED = {k["key"]: [v["value"] for v in k["values"]] for k in ONTOLOGY["keys"]}
KEY_DESCRIPTIONS = {k["key"]: k["description"] for k in ONTOLOGY["keys"]}
FULL_SET = {
    "sensitivity": "high",
    "residency": "eu",
    "subject_type": "customer",
    "retention": "10y",
    "lawful_basis": "contract",
}
POLICY_TABLES = [
    "customer",
    "health_declaration",
    "insured_vehicle",
    "policy",
    "premium_billing",
    "quote",
    "ref_sparte",
    "vermittler",
]

# One valid call per tool. A tool added to govcat without an example here fails
# test_every_tool_is_listed_with_an_example, on purpose.
EXAMPLES = {
    "find_precedents": {"description": "contains an EU IBAN", "limit": 3},
    "suggest_tags": {"description": "contains an EU IBAN", "domain": "policy", "table": "customer"},
    "list_domains": {},
    "get_dataset": {"domain": "policy", "table": "customer"},
    "resolve_lf_tag": {"tags": FULL_SET},
    "check_grant_expression": {"role": "policy-underwriter", "domain": "policy", "table": "customer"},
}


def rest_specs(server: Server) -> list[dict]:
    status, body = http_json(f"{server.base}/v1/tools")
    assert status == 200
    return body["tools"]


def rest_call(server: Server, tool: str, args: dict) -> tuple[int, dict]:
    return http_json(f"{server.base}/v1/tools/{tool}", method="POST", body=args)


def resolved_ref(schema: dict, prop: dict) -> dict:
    if "$ref" in prop:
        return schema["$defs"][prop["$ref"].rsplit("/", 1)[1]]
    return prop


async def test_every_tool_is_listed_with_an_example(connect: Connect, server: Server) -> None:
    async with connect() as client:
        listed = [t.name for t in (await client.list_tools()).tools]
    assert listed == [s["name"] for s in rest_specs(server)]
    assert sorted(listed) == sorted(EXAMPLES)


async def test_tool_schemas_are_the_shared_ones_with_the_domain_routing_header(
    connect: Connect, server: Server
) -> None:
    specs = {s["name"]: s for s in rest_specs(server)}
    async with connect() as client:
        tools = (await client.list_tools()).tools
    for tool in tools:
        spec = specs[tool.name]
        assert tool.description == spec["description"]
        assert tool.title == spec["title"]
        assert tool.output_schema == spec["outputSchema"]
        # No boolean additionalProperties (Gemini's converter crashes on one); the server refuses
        # unknown arguments by name (test_unknown_arguments.py).
        assert "additionalProperties" not in tool.input_schema
        assert "properties" in tool.input_schema
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        props = tool.input_schema.get("properties", {})
        for name, prop in props.items():
            if name == "domain":
                assert prop["type"] == "string", tool.name
                assert prop["x-mcp-header"] == "Domain", tool.name
            else:
                assert "x-mcp-header" not in prop, f"{tool.name}.{name}"
                assert prop == spec["inputSchema"]["properties"][name]
    get_dataset = next(t for t in tools if t.name == "get_dataset")
    assert get_dataset.input_schema["properties"]["domain"] == {
        "description": "Domain name, e.g. `policy`.",
        "type": "string",
        "x-mcp-header": "Domain",
    }


async def test_lists_carry_honest_cache_hints(connect_modern: Connect) -> None:
    async with connect_modern() as client:
        tools = await client.list_tools(cache_mode="refresh")
        resources = await client.list_resources(cache_mode="refresh")
        templates = await client.list_resource_templates(cache_mode="refresh")
    for result in (tools, resources, templates):
        assert (result.ttl_ms, result.cache_scope) == (300000, "public")


async def test_every_tool_answers_with_structured_content_that_fits_its_output_schema(
    connect: Connect, server: Server
) -> None:
    async with connect() as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name, args in EXAMPLES.items():
            result = await client.call_tool(name, args)
            assert result.is_error is False, (name, result.structured_content)
            jsonschema.Draft202012Validator(tools[name].output_schema).validate(
                result.structured_content
            )
            assert json.loads(result.content[0].text) == result.structured_content
            status, rest = rest_call(server, name, args)
            assert status == 200
            assert result.structured_content == rest, name


async def test_a_missing_dataset_is_an_error_result_not_a_protocol_error(connect: Connect) -> None:
    async with connect() as client:
        result = await client.call_tool("get_dataset", {"domain": "policy", "table": "nope"})
    err = tool_error(result)
    assert err["error"] == "DatasetNotFound"
    assert (err["domain"], err["table"], err["tables"]) == ("policy", "nope", POLICY_TABLES)


async def test_an_unknown_tool_is_a_protocol_error(connect: Connect) -> None:
    async with connect() as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("drop_table", {})
    assert raised.value.code == -32602
    assert raised.value.error.data["error"] == "UnknownTool"


async def test_the_ontology_resource_is_the_ontology_file(connect: Connect) -> None:
    async with connect() as client:
        listed = (await client.list_resources()).resources
        read = await client.read_resource(ONTOLOGY_URI)
    assert [(r.uri, r.mime_type) for r in listed] == [(ONTOLOGY_URI, "application/json")]
    [contents] = read.contents
    assert contents.mime_type == "application/json"
    assert json.loads(contents.text) == ONTOLOGY
    assert sum(len(v) for v in ALLOWED.values()) == 21


async def test_the_dataset_template_reads_the_dataset_live(connect: Connect, server: Server) -> None:
    uri = "govcat://domain/policy/dataset/customer"
    async with connect() as client:
        templates = (await client.list_resource_templates()).resource_templates
        read = await client.read_resource(uri)
    assert [t.uri_template for t in templates] == [DATASET_TEMPLATE]
    [contents] = read.contents
    status, rest = rest_call(server, "get_dataset", {"domain": "policy", "table": "customer"})
    assert status == 200
    assert json.loads(contents.text) == rest
    if not connect.legacy:
        assert (read.ttl_ms, read.cache_scope) == (rest["ttlMs"], "private")


async def test_reading_a_missing_dataset_is_resource_not_found(connect: Connect) -> None:
    async with connect() as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource("govcat://domain/policy/dataset/nope")
    # 2026-07-28 folds resource-not-found into invalid params.
    assert raised.value.code == (-32002 if connect.legacy else -32602)
    assert raised.value.error.data["error"] == "DatasetNotFound"
    assert raised.value.error.data["tables"] == POLICY_TABLES


async def test_completion_offers_domains_then_tables(connect: Connect) -> None:
    ref = ResourceTemplateReference(uri=DATASET_TEMPLATE)
    async with connect() as client:
        domains = await client.complete(ref, {"name": "domain", "value": "p"})
        tables = await client.complete(
            ref, {"name": "table", "value": "c"}, context_arguments={"domain": "policy"}
        )
        other = await client.complete(ref, {"name": "column", "value": ""})
    assert (domains.completion.values, domains.completion.total) == (["payments", "policy"], 2)
    assert tables.completion.values == ["customer"]
    assert other.completion.values == []


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio_results_are_scoped_to_the_callers_domains(server: Server, mode: str) -> None:
    connect = Connect(transport=f"stdio-{mode}", server=server)
    ref = ResourceTemplateReference(uri=DATASET_TEMPLATE)
    async with connect(scopes="catalog:policy:read") as client:
        domains = await client.complete(ref, {"name": "domain", "value": ""})
        foreign_tables = await client.complete(
            ref, {"name": "table", "value": ""}, context_arguments={"domain": "claims"}
        )
        listed = await client.call_tool("list_domains", {})
        denied = await client.call_tool("get_dataset", {"domain": "claims", "table": "claim"})
    assert domains.completion.values == ["policy"]
    assert foreign_tables.completion.values == []
    assert [e["name"] for e in listed.structured_content["entries"]] == ["policy"]
    assert listed.structured_content["cacheScope"] == "private"
    assert tool_error(denied)["error"] == "InsufficientScope"
    assert tool_error(denied)["required_scopes"] == ["catalog:claims:read"]


MISSING = ["residency", "subject_type", "retention", "lawful_basis"]


async def test_input_required_asks_for_each_missing_key_and_the_answer_resolves(
    connect_modern: Connect,
) -> None:
    answers = Elicitations(answers={k: FULL_SET[k] for k in MISSING})
    async with connect_modern(elicitation=answers) as client:
        result = await client.call_tool("resolve_lf_tag", {"tags": {"sensitivity": "high"}})
    assert result.is_error is False
    assert result.structured_content == {
        "resolved": FULL_SET,
        "ontology_version": ONTOLOGY["version"],
        "ttlMs": 30000,
        "cacheScope": "public",
    }
    [asked] = answers.asked
    schema = asked.requested_schema
    assert sorted(schema["properties"]) == sorted(MISSING)
    assert sorted(schema["required"]) == sorted(MISSING)
    for key in MISSING:
        assert schema["properties"][key]["enum"] == ALLOWED[key]
        assert schema["properties"][key]["description"] == KEY_DESCRIPTIONS[key]


async def test_a_declined_ask_is_an_error_listing_the_missing_keys(connect_modern: Connect) -> None:
    answers = Elicitations(action="decline")
    async with connect_modern(elicitation=answers) as client:
        result = await client.call_tool("resolve_lf_tag", {"tags": {"sensitivity": "high"}})
    error = tool_error(result)
    assert error["error"] == "InputDeclined"
    assert [m["key"] for m in error["missing"]] == MISSING


async def test_an_answer_outside_the_ontology_is_refused_with_the_allowed_values(
    connect_modern: Connect,
) -> None:
    answers = Elicitations(answers={**{k: FULL_SET[k] for k in MISSING}, "residency": "mars"})
    async with connect_modern(elicitation=answers) as client:
        result = await client.call_tool("resolve_lf_tag", {"tags": {"sensitivity": "high"}})
    error = tool_error(result)
    assert error["error"] == "UnknownTagValue"
    assert error["allowed"] == ALLOWED["residency"]


async def test_on_older_protocols_the_ask_is_an_error_listing_missing_keys_and_values(
    connect_legacy: Connect,
) -> None:
    async with connect_legacy() as client:
        result = await client.call_tool("resolve_lf_tag", {"tags": {"sensitivity": "high"}})
    error = tool_error(result)
    assert error["error"] == "InputRequired"
    assert error["missing"] == [
        {"key": k, "description": KEY_DESCRIPTIONS[k], "allowed": ALLOWED[k]} for k in MISSING
    ]


async def test_ask_empty_and_error_share_no_field(connect_modern: Connect) -> None:
    """FIDELITY rule 9: an ask, an empty answer and an error are told apart by their fields."""
    async with connect_modern() as client:
        await client.list_tools()
        ask = await client.session.call_tool(
            "resolve_lf_tag", {"tags": {"sensitivity": "high"}}, allow_input_required=True
        )
        empty = await client.call_tool("find_precedents", {"description": "qwzxv flurbish"})
        error = await client.call_tool("get_dataset", {"domain": "policy", "table": "nope"})
    ask_fields = set(ask.model_dump(by_alias=True, exclude_none=True)) - {"_meta"}
    empty_fields = set(empty.structured_content)
    error_fields = set(tool_error(error))
    assert ask_fields == {"resultType", "inputRequests"}
    assert empty.is_error is False and empty.structured_content["entries"] == []
    assert {"entries", "hint", "suggestions", "request"} <= empty_fields
    assert {"error", "message"} <= error_fields
    assert ask_fields & empty_fields == set()
    assert ask_fields & error_fields == set()
    assert empty_fields & error_fields == set()
    # The ask carries nothing of an answer anywhere inside it, and the empty answer asks nothing.
    ask_text = json.dumps(ask.model_dump(by_alias=True))
    for key in ('"entries"', '"hint"', '"request"', '"suggestions"'):
        assert key not in ask_text
    assert "inputRequests" not in json.dumps(empty.structured_content)
