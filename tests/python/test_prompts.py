"""govcat's MCP prompts through the official Python SDK, on every transport: the list, the
rendered messages, the errors, and the `tag-new-column` steps driven with the real tools. Also
that a whole session, closed as the SDK closes it, leaves no warning in the client's log.
"""

from __future__ import annotations

import json
import logging
import re

import pytest
from conftest import ONTOLOGY_URI, Connect
from mcp import MCPError
from mcp.types import PromptReference

TOOLS_IN_ORDER = ["find_precedents", "suggest_tags", "resolve_lf_tag", "get_dataset"]
PROMPT_ARGUMENTS = {
    "tag-new-column": [("description", True), ("domain", False), ("table", False)],
    "review-grant": [("role", True), ("domain", True), ("table", True)],
}
# The seed's scenario: an EU IBAN in a globally replicated analytics extract.
TARGET = {"domain": "analytics", "table": "customer_360_global_extract"}


def prompt_text(result) -> str:
    return "\n".join(m.content.text for m in result.messages)


def planned_calls(result) -> list[tuple[str, dict | None]]:
    """The numbered tool calls of the assistant's plan: the tool and its JSON arguments
    (`None` where the plan leaves them to the assistant, the chosen tag set)."""
    [plan] = [m.content.text for m in result.messages if m.role == "assistant"]
    calls = []
    for line in plan.splitlines():
        step = re.match(r"^\d+\. ([a-z_]+) (.*)$", line)
        if not step:
            continue
        try:
            args, _ = json.JSONDecoder().raw_decode(step.group(2))
        except json.JSONDecodeError:
            args = None
        calls.append((step.group(1), args))
    return calls


async def test_prompts_are_listed_with_their_arguments(connect: Connect) -> None:
    async with connect() as client:
        listed = await client.list_prompts()
    assert [p.name for p in listed.prompts] == list(PROMPT_ARGUMENTS)
    for prompt in listed.prompts:
        assert [(a.name, a.required) for a in prompt.arguments] == PROMPT_ARGUMENTS[prompt.name]
        assert prompt.title and prompt.description


async def test_the_prompt_list_carries_cache_hints(connect_modern: Connect) -> None:
    async with connect_modern() as client:
        listed = await client.list_prompts(cache_mode="refresh")
    assert (listed.ttl_ms, listed.cache_scope) == (300000, "public")


async def test_tag_new_column_names_the_four_tools_in_order(connect: Connect) -> None:
    async with connect() as client:
        result = await client.get_prompt("tag-new-column", {"description": "contains an EU IBAN"})
    text = prompt_text(result)
    positions = [text.find(tool) for tool in TOOLS_IN_ORDER]
    assert -1 not in positions, positions
    assert positions == sorted(positions)
    assert [t for t, _ in planned_calls(result)] == TOOLS_IN_ORDER
    assert [m.role for m in result.messages] == ["user", "assistant", "user"]
    assert planned_calls(result)[0] == (
        "find_precedents",
        {"description": "contains an EU IBAN", "alternatives": PLACEHOLDER_ALTERNATIVES},
    )


async def test_an_unknown_prompt_or_missing_argument_is_an_error_naming_the_arguments(
    connect: Connect,
) -> None:
    async with connect() as client:
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("tag-column", {})
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("tag-new-column", {"domain": "analytics"})
    assert unknown.value.code == -32602
    assert unknown.value.error.data["error"] == "UnknownPrompt"
    assert [
        (p["name"], [(a["name"], a["required"]) for a in p["arguments"]])
        for p in unknown.value.error.data["prompts"]
    ] == list(PROMPT_ARGUMENTS.items())
    assert missing.value.code == -32602
    data = missing.value.error.data
    assert (data["error"], data["prompt"], data["argument"]) == (
        "MissingPromptArgument",
        "tag-new-column",
        "description",
    )
    assert [(a["name"], a["required"]) for a in data["arguments"]] == PROMPT_ARGUMENTS[
        "tag-new-column"
    ]


async def test_prompt_arguments_complete_like_the_dataset_template(connect: Connect) -> None:
    ref = PromptReference(name="tag-new-column")
    async with connect() as client:
        domains = await client.complete(ref, {"name": "domain", "value": "an"})
        tables = await client.complete(
            ref, {"name": "table", "value": "customer_360_g"}, context_arguments={"domain": "analytics"}
        )
        description = await client.complete(ref, {"name": "description", "value": "c"})
    assert domains.completion.values == ["analytics"]
    assert tables.completion.values == ["customer_360_global_extract"]
    assert description.completion.values == []


# What the prompt's planned calls put where the assistant writes its own phrasings.
PLACEHOLDER_ALTERNATIVES = ["<the new column's name>", "<two to four other phrasings>"]
# The phrasings this test, playing the assistant, fills in (test input, not evaluation data).
ASSISTANT_ALTERNATIVES = ["iban", "customer_iban", "customer bank account IBAN"]


async def test_tag_new_column_steps_run_with_the_real_tools_and_the_tag_set_resolves(
    connect: Connect,
) -> None:
    async with connect() as client:
        prompt = await client.get_prompt(
            "tag-new-column", {"description": "contains an EU IBAN", **TARGET}
        )
        calls = planned_calls(prompt)
        assert [t for t, _ in calls] == TOOLS_IN_ORDER
        (_, search), (_, suggest), (_, chosen), (_, live) = calls
        assert chosen is None  # the assistant chooses the set; here: suggest_tags' proposal
        assert suggest == {
            "description": "contains an EU IBAN",
            "alternatives": PLACEHOLDER_ALTERNATIVES,
            **TARGET,
        }
        assert live == TARGET
        # The assistant fills the placeholders in with the column's name and other phrasings.
        search = {**search, "alternatives": ASSISTANT_ALTERNATIVES}
        suggest = {**suggest, "alternatives": ASSISTANT_ALTERNATIVES}

        precedents = await client.call_tool("find_precedents", search)
        assert precedents.is_error is False
        assert precedents.structured_content["entries"] != []
        suggested = await client.call_tool("suggest_tags", suggest)
        assert suggested.is_error is False
        proposal = suggested.structured_content["proposal"]
        assert proposal["resolution"] == "complete"
        resolved = await client.call_tool("resolve_lf_tag", {"tags": proposal["tags"]})
        read = await client.call_tool("get_dataset", live)
    assert resolved.is_error is False
    assert resolved.structured_content["resolved"] == proposal["tags"]
    # Residency is where the extract lives (global), not what "EU IBAN" suggests.
    assert resolved.structured_content["resolved"]["residency"] == "global"
    assert proposal["basis"]["residency"] == "inherited"
    assert read.is_error is False
    assert read.structured_content["metadata"]["name"] == TARGET["table"]


async def test_a_full_session_closes_without_a_client_warning(
    connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        async with connect() as client:
            await client.list_tools()
            await client.call_tool("find_precedents", {"description": "contains an EU IBAN"})
            await client.read_resource(ONTOLOGY_URI)
            await client.list_prompts()
            await client.get_prompt("review-grant", {"role": "r", **TARGET})
    warnings = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == []
