"""govcat serve --auth jwt driven by the official MCP Python SDK over Streamable HTTP: a bearer
token in the client's HTTP headers (httpx2) lists and calls tools on both protocol generations;
without a token, or for a domain outside the token's scopes, the HTTP answer is the challenge
(401 / 403 with WWW-Authenticate), which the SDK surfaces as an error. Every HTTP response the
client receives is recorded, so statuses and challenges are asserted exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from conftest import (
    AUDIENCE,
    CLIENT_ID,
    ISSUER,
    RESOURCE_METADATA,
    AuthServer,
    http_json,
)
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ResourceTemplateReference

FRAUD = "catalog:fraud:read"
DATASET_TEMPLATE = "govcat://domain/{domain}/dataset/{table}"
TOOLS = [
    "find_precedents",
    "suggest_tags",
    "list_domains",
    "get_dataset",
    "resolve_lf_tag",
    "check_grant_expression",
]
MODES = {"legacy": "2025-11-25", "auto": "2026-07-28"}


@dataclass
class Seen:
    """The HTTP responses an MCP client received: (method, status, WWW-Authenticate)."""

    responses: list[tuple[str, int, str | None]] = field(default_factory=list)

    async def __call__(self, response: httpx2.Response) -> None:
        self.responses.append(
            (response.request.method, response.status_code, response.headers.get("www-authenticate"))
        )

    def refusals(self) -> list[tuple[int, str | None]]:
        return [(status, challenge) for _, status, challenge in self.responses if status >= 400]


def client(auth: AuthServer, mode: str, token: str | None, seen: Seen) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    http = httpx2.AsyncClient(headers=headers, event_hooks={"response": [seen]})
    transport = streamable_http_client(auth.server.mcp_url, http_client=http)
    return Client(transport, mode=mode)


def mcp_errors(exc: BaseException) -> list[MCPError]:
    """The MCPErrors inside an exception (groups included)."""
    if isinstance(exc, MCPError):
        return [exc]
    found: list[MCPError] = []
    for inner in getattr(exc, "exceptions", []):
        found.extend(mcp_errors(inner))
    return found


def insufficient(scopes: str) -> str:
    return (
        f'Bearer error="insufficient_scope", scope="{scopes}", '
        f'resource_metadata="{RESOURCE_METADATA}"'
    )


def audit_lines(auth: AuthServer) -> list[dict[str, Any]]:
    return [json.loads(line) for line in auth.server.audit_log.read_text().splitlines()]


@pytest.mark.parametrize("mode", sorted(MODES))
async def test_a_bearer_token_lists_and_calls_tools(auth_server: AuthServer, mode: str) -> None:
    seen = Seen()
    async with client(auth_server, mode, auth_server.token(FRAUD), seen) as c:
        assert c.protocol_version == MODES[mode]
        assert [t.name for t in (await c.list_tools()).tools] == TOOLS
        listed = await c.call_tool("list_domains", {})
        assert listed.is_error is False
        assert [e["name"] for e in listed.structured_content["entries"]] == ["fraud"]
        read = await c.call_tool("get_dataset", {"domain": "fraud", "table": "fraud_alert"})
        assert read.is_error is False
        assert (read.structured_content["metadata"]["domain"], read.structured_content["metadata"]["name"]) == (
            "fraud",
            "fraud_alert",
        )
        completion = await c.complete(
            ResourceTemplateReference(type="ref/resource", uri=DATASET_TEMPLATE),
            {"name": "domain", "value": ""},
        )
        assert completion.completion.values == ["fraud"]
    assert seen.refusals() == []


@pytest.mark.parametrize("mode", sorted(MODES))
async def test_without_a_token_the_client_gets_the_401_challenge(
    auth_server: AuthServer, mode: str
) -> None:
    seen = Seen()
    with pytest.raises(BaseException) as raised:
        async with client(auth_server, mode, None, seen) as c:
            await c.list_tools()
    assert [e.error.code for e in mcp_errors(raised.value)] == [-32603]
    # Every request the SDK made (auto mode tries server/discover, then initialize) got the
    # same challenge, and nothing else came back.
    challenge = (401, f'Bearer resource_metadata="{RESOURCE_METADATA}"')
    assert len(seen.responses) >= 1
    assert seen.refusals() == [challenge] * len(seen.responses)


async def test_a_token_for_another_resource_gets_401_invalid_token(auth_server: AuthServer) -> None:
    seen = Seen()
    other = auth_server.token(FRAUD, aud="https://govcat.test/other")
    with pytest.raises(BaseException) as raised:
        async with client(auth_server, "legacy", other, seen) as c:
            await c.list_tools()
    assert len(mcp_errors(raised.value)) == 1
    assert seen.refusals() == [
        (
            401,
            'Bearer error="invalid_token", error_description="audience https://govcat.test/other '
            f'does not include this resource {AUDIENCE}", resource_metadata="{RESOURCE_METADATA}"',
        )
    ]


@pytest.mark.parametrize("mode", sorted(MODES))
async def test_claims_outside_the_scopes_is_a_403_naming_catalog_claims_read(
    auth_server: AuthServer, mode: str
) -> None:
    seen = Seen()
    async with client(auth_server, mode, auth_server.token(FRAUD), seen) as c:
        with pytest.raises(MCPError):
            await c.call_tool("get_dataset", {"domain": "claims", "table": "claim"})
        with pytest.raises(MCPError):
            await c.read_resource("govcat://domain/claims/dataset/claim")
        with pytest.raises(MCPError):
            await c.call_tool(
                "find_precedents", {"description": "claim number", "domains": ["claims", "policy"]}
            )
        # The connection stays usable: a readable domain is still answered.
        listed = await c.call_tool("list_domains", {})
        assert [e["name"] for e in listed.structured_content["entries"]] == ["fraud"]
    assert seen.refusals() == [
        (403, insufficient("catalog:claims:read")),
        (403, insufficient("catalog:claims:read")),
        (403, insufficient("catalog:claims:read catalog:policy:read")),
    ]


async def test_the_calls_are_audited_under_the_tokens_subject_and_client(auth_server: AuthServer) -> None:
    before = len(audit_lines(auth_server))
    async with client(auth_server, "auto", auth_server.token(FRAUD), Seen()) as c:
        await c.call_tool("resolve_lf_tag", {"tags": {"sensitivity": "high", "residency": "eu",
                                                      "subject_type": "customer", "retention": "10y",
                                                      "lawful_basis": "contract"}})
    calls = [
        {k: line[k] for k in ("subject", "client_id", "transport", "method", "tool", "outcome", "error")}
        for line in audit_lines(auth_server)[before:]
        if line["method"] == "tools/call"
    ]
    assert calls == [
        {
            "subject": "carol",
            "client_id": CLIENT_ID,
            "transport": "mcp",
            "method": "tools/call",
            "tool": "resolve_lf_tag",
            "outcome": "ok",
            "error": None,
        }
    ]


def test_the_protected_resource_metadata_names_this_issuer(auth_server: AuthServer) -> None:
    status, body = http_json(f"{auth_server.server.base}/.well-known/oauth-protected-resource/mcp")
    assert status == 200
    assert (body["resource"], body["authorization_servers"], body["bearer_methods_supported"]) == (
        AUDIENCE,
        [ISSUER],
        ["header"],
    )
    # No domain is named to a caller without a token: the pattern, not the list.
    assert "scopes_supported" not in body
    assert body["scope_pattern"] == "catalog:{domain}:read"
