"""Client compatibility: govcat's six tools through each agent framework's own MCP client and
its own conversion for a model, against a real `govcat serve` (Streamable HTTP, loopback) and
`govcat mcp-stdio`. No model is called: where a framework's path to a call needs a model, its
own test double is the model (pydantic-ai's FunctionModel); elsewhere the framework's own call
path is driven with the arguments a model would send.

For every stack and transport it checks three things and prints one table:
- loads: all six tools come through the framework's loader;
- converts: its conversion for the model succeeds for every tool (strict mode where the
  framework has one), keeps every argument (a nested object keeps its properties, so a strict
  model can still send it), every argument's description, and the bounds the published schema
  states (as keywords, or as words where the framework moves them into the description);
- calls: every tool answers a call made through the framework (for strict stacks, the
  arguments a strict model sends: every property, optional ones as null), and the answer is no
  error.
It exits non-zero when any cell fails. Versions are pinned in scripts/requirements-frameworks.txt
(installed into .venv-frameworks/ by scripts/setup-frameworks.sh); the TypeScript SDK check is
ts_client.cjs beside this file, run here when COMPAT_NODE names a node binary.

Usage: .venv-frameworks/bin/python tests/python/frameworks/compat.py
       (GOVCAT_BIN overrides target/debug/govcat; needs the model and a snapshot in index/)
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import jsonschema

REPO = Path(__file__).resolve().parents[3]
GOVCAT = os.environ.get("GOVCAT_BIN", str(REPO / "target" / "debug" / "govcat"))
# The audit log would go to stderr, which the frameworks pass through to ours.
STDIO_ARGS = ["mcp-stdio", "--audit-log", os.devnull]
TOOLS = [
    "find_precedents",
    "suggest_tags",
    "list_domains",
    "get_dataset",
    "resolve_lf_tag",
    "check_grant_expression",
]
# What a host sends for each tool (the strict stacks add every other property as null).
CALLS: dict[str, dict[str, Any]] = {
    "find_precedents": {"description": "contains an EU IBAN", "limit": 3},
    "suggest_tags": {
        "description": "IBAN of the customer",
        "domain": "analytics",
        "table": "customer_360_global_extract",
    },
    "list_domains": {},
    "get_dataset": {"domain": "policy", "table": "customer"},
    "resolve_lf_tag": {
        "tags": {
            "sensitivity": "high",
            "residency": "eu",
            "subject_type": "customer",
            "retention": "10y",
            "lawful_basis": "contract",
        }
    },
    "check_grant_expression": {
        "role": "global-analytics-reader",
        "domain": "analytics",
        "table": "customer_360_global_extract",
    },
}
# The bounds a conversion must keep: JSON Schema keyword -> Gemini Schema field.
BOUNDS = {
    "maxLength": "max_length",
    "minLength": "min_length",
    "maxItems": "max_items",
    "minItems": "min_items",
    "minimum": "minimum",
    "maximum": "maximum",
    "enum": "enum",
}
NULL = {"type": "null"}


@dataclass
class Cell:
    ok: int = 0
    problems: list[str] = field(default_factory=list)

    def show(self) -> str:
        return f"{'yes' if not self.problems and self.ok == len(TOOLS) else 'NO'} {self.ok}/{len(TOOLS)}"


@dataclass
class Row:
    stack: str
    transport: str
    loads: Cell = field(default_factory=Cell)
    converts: Cell = field(default_factory=Cell)
    calls: Cell = field(default_factory=Cell)
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(
            c.problems or c.ok != len(TOOLS) for c in (self.loads, self.converts, self.calls)
        )


# ------------------------------------------------------------------ the server and sessions


@contextlib.contextmanager
def running_server() -> Any:
    proc = subprocess.Popen(
        [GOVCAT, "serve", "--listen", "127.0.0.1:0", "--audit-log", os.devnull],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        prefix = "govcat: serving MCP at "
        if not line.startswith(prefix):
            raise SystemExit(f"compat: govcat serve did not start (exit {proc.poll()}): {line!r}")
        url = line[len(prefix) :].split()[0]
        base = url.removesuffix("/mcp")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{base}/readyz", timeout=5) as r:
                    if r.status == 200:
                        break
            time.sleep(0.2)
        else:
            raise SystemExit("compat: govcat serve not ready after 60 s (model and index/ present?)")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def stdio_env() -> dict[str, str]:
    return {**os.environ, "GOVCAT_LOG": "warn"}


@contextlib.asynccontextmanager
async def mcp_session(transport: str, url: str) -> AsyncIterator[Any]:
    """A session of the official Python SDK (1.x, what these frameworks build on)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamablehttp_client

    if transport == "http":
        async with streamablehttp_client(url) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
    else:
        params = StdioServerParameters(
            command=GOVCAT, args=STDIO_ARGS, cwd=str(REPO), env=stdio_env()
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


# ------------------------------------------------------------------ schema checks


def non_null(schema: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of `anyOf: [X, null]`, else the schema itself."""
    branches = schema.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and NULL in branches:
        return next(b for b in branches if b != NULL)
    return schema


def described(prop: dict[str, Any]) -> str | None:
    """An argument's description: its own, or (nullable) its non-null branch's."""
    return prop.get("description") or non_null(prop).get("description")


def words_of(schema: Any) -> str:
    """Every description under `schema` (a converter may move one into a branch)."""
    if isinstance(schema, dict):
        own = schema.get("description") or ""
        return own + " " + " ".join(words_of(v) for v in schema.values() if isinstance(v, (dict, list)))
    if isinstance(schema, list):
        return " ".join(words_of(v) for v in schema)
    return ""


def find_key(schema: Any, key: str) -> Any:
    """The first value of `key` in `schema` or its branches/items, or None."""
    if isinstance(schema, dict):
        if key in schema:
            return schema[key]
        for sub in [*schema.get("anyOf", []), schema.get("items")]:
            found = find_key(sub, key)
            if found is not None:
                return found
    return None


def lost_meaning(published: dict[str, Any], converted: dict[str, Any], path: str) -> list[str]:
    """What `converted` (a JSON Schema a framework made for its model) lost of `published`:
    an argument, its description, a bound (kept as a keyword or as `key=value` words), or a
    nested object's properties."""
    out: list[str] = []
    props = published.get("properties", {})
    conv_props = converted.get("properties")
    if props and not conv_props:
        return [f"{path}: the object's properties are gone (a strict model can only send {{}})"]
    for name, prop in props.items():
        at = f"{path}.{name}"
        conv = (conv_props or {}).get(name)
        if conv is None:
            out.append(f"{at}: argument dropped")
            continue
        desc = described(prop)
        if desc and desc not in words_of(conv):
            out.append(f"{at}: description lost")
        want, got = non_null(prop), non_null(conv)
        for key in BOUNDS:
            for where, w, g in (("", want, got), (".items", want.get("items"), got.get("items"))):
                if not isinstance(w, dict) or key not in w:
                    continue
                kept = find_key(g, key) == w[key] or f"{key}={w[key]}" in words_of(conv)
                if not kept:
                    out.append(f"{at}{where}: {key} {w[key]} lost")
        if want.get("type") == "object":
            accepts = bool(want.get("properties")) or want.get("additionalProperties") not in (None, False)
            if accepts and not got.get("properties") and got.get("additionalProperties") is False:
                out.append(f"{at}: became an object without properties (a strict model can only send {{}})")
            else:
                out += lost_meaning(want, got, at)
    return out


def gemini_lost(published: dict[str, Any], schema: Any, path: str) -> list[str]:
    """What a Gemini `types.Schema` lost of `published`: arguments, descriptions, bounds."""
    out: list[str] = []
    props = published.get("properties", {})
    conv_props = schema.properties or {}
    for name, prop in props.items():
        at = f"{path}.{name}"
        conv = conv_props.get(name)
        if conv is None:
            out.append(f"{at}: argument dropped")
            continue
        if described(prop) and conv.description != described(prop):
            out.append(f"{at}: description {conv.description!r} instead of the argument's")
        want = non_null(prop)
        words = conv.description or ""
        for key, attr in BOUNDS.items():
            for where, w, g in (("", want, conv), (".items", want.get("items"), conv.items)):
                if not isinstance(w, dict) or key not in w:
                    continue
                if g is not None and getattr(g, attr) == w[key]:
                    continue
                # The converter keeps only the keywords its Schema spells the same way (minimum,
                # maximum, enum) and drops the camelCase ones (maxLength, maxItems, ...): such a
                # bound is kept when the description the model reads states it.
                if key != "enum" and str(w[key]) in words:
                    continue
                out.append(f"{at}{where}: {key} {w[key]} lost (not stated in the description either)")
        if want.get("type") == "object":
            out += gemini_lost(want, conv, at)
    return out


def strict_arguments(schema: dict[str, Any], given: dict[str, Any], path: str) -> dict[str, Any]:
    """What a strict model sends: every property (strict makes them all required), the given
    values, null for the others; fails when a property the host left out cannot be null."""
    out: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        if name in given:
            value = given[name]
            inner = non_null(prop)
            if isinstance(value, dict) and inner.get("type") == "object":
                value = strict_arguments(inner, value, f"{path}.{name}")
            out[name] = value
        elif NULL in prop.get("anyOf", []) or "null" in (prop.get("type") or []):
            out[name] = None
        else:
            raise ValueError(f"{path}.{name}: a strict model must send a value here")
    return out


def answered(text: str) -> bool:
    """Whether a tool's text content is a govcat answer (every answer carries ttlMs)."""
    try:
        return "ttlMs" in json.loads(text)
    except (ValueError, TypeError):
        return False


def text_of(result: Any) -> str:
    """The text of a framework's tool result (a string, content blocks, or a pair)."""
    if isinstance(result, tuple):
        result = result[0]
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        return result.get("text", json.dumps(result))
    if isinstance(result, list):
        parts = []
        for block in result:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                parts.append(block.get("text", ""))
            else:
                parts.append(getattr(block, "text", ""))
        return "".join(parts)
    return getattr(result, "text", str(result))


# ------------------------------------------------------------------ the stacks


async def official_sdk(transport: str, url: str, published: dict[str, Any]) -> Row:
    """mcp 1.x ClientSession: the transport under every framework here; validates each
    structuredContent against the tool's outputSchema itself, and we check it again."""
    import mcp

    row = Row(f"mcp {mcp_version()} ClientSession", transport)
    async with mcp_session(transport, url) as session:
        listed = await session.list_tools()
        tools = {t.name: t for t in listed.tools}
        row.loads.ok = sum(name in tools for name in TOOLS)
        row.converts.ok = len(TOOLS)
        row.notes.append("no conversion")
        for name in TOOLS:
            result = await session.call_tool(name, CALLS[name])
            if result.isError or not result.structuredContent:
                row.calls.problems.append(f"{name}: {text_of(result.content)[:200]}")
                continue
            try:
                jsonschema.validate(result.structuredContent, tools[name].outputSchema)
            except jsonschema.ValidationError as e:
                row.calls.problems.append(f"{name}: answer outside its outputSchema: {e.message}")
                continue
            row.calls.ok += 1
        # The published form says nothing of other properties; the server still refuses them.
        refused = await session.call_tool(
            "find_precedents", {"description": "contains an EU IBAN", "colour": "red"}
        )
        message = text_of(refused.content)
        if not refused.isError or "colour" not in message:
            row.calls.problems.append(f"an unknown argument was not refused by name: {message[:200]}")
        else:
            row.notes.append("unknown argument refused by name")
    del mcp
    return row


def mcp_version() -> str:
    from importlib.metadata import version

    return version("mcp")


async def openai_agents(transport: str, url: str, published: dict[str, Any]) -> Row:
    from importlib.metadata import version

    from agents import Agent
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
    from agents.run_context import RunContextWrapper
    from agents.strict_schema import ensure_strict_json_schema
    from agents.tool_context import ToolContext

    row = Row(f"openai-agents {version('openai-agents')}", transport)
    if transport == "http":
        server: Any = MCPServerStreamableHttp(params={"url": url}, name="govcat", cache_tools_list=True)
    else:
        server = MCPServerStdio(
            params={"command": GOVCAT, "args": STDIO_ARGS, "cwd": str(REPO), "env": stdio_env()},
            name="govcat",
            cache_tools_list=True,
        )
    async with server:
        agent = Agent(
            name="compat", mcp_servers=[server], mcp_config={"convert_schemas_to_strict": True}
        )
        tools = {t.name: t for t in await agent.get_mcp_tools(RunContextWrapper(context=None))}
        row.loads.ok = sum(name in tools for name in TOOLS)
        for name in TOOLS:
            tool = tools.get(name)
            if tool is None:
                continue
            problems = []
            try:
                ensure_strict_json_schema(copy.deepcopy(published[name]))
            except Exception as e:  # noqa: BLE001 - the converter's own refusal is the finding
                problems.append(f"{name}: ensure_strict_json_schema: {e}")
            if not tool.strict_json_schema:
                problems.append(f"{name}: fell back to a non-strict schema")
            problems += lost_meaning(published[name], tool.params_json_schema, name)
            row.converts.problems += problems
            row.converts.ok += not problems
            try:
                args = strict_arguments(tool.params_json_schema, CALLS[name], name)
                jsonschema.validate(args, tool.params_json_schema)
            except (ValueError, jsonschema.ValidationError) as e:
                row.calls.problems.append(f"{name}: {getattr(e, 'message', e)}")
                continue
            raw = json.dumps(args)
            ctx = ToolContext(context=None, tool_name=name, tool_call_id=f"call-{name}", tool_arguments=raw)
            out = text_of(await tool.on_invoke_tool(ctx, raw))
            if answered(out):
                row.calls.ok += 1
            else:
                row.calls.problems.append(f"{name}({raw}): {out[:200]}")
    row.notes.append("strict arguments: every property, optional ones null")
    return row


async def langchain(transport: str, url: str, published: dict[str, Any]) -> Row:
    from importlib.metadata import version

    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langchain_mcp_adapters.tools import load_mcp_tools

    row = Row(f"langchain-mcp-adapters {version('langchain-mcp-adapters')}", transport)
    async with mcp_session(transport, url) as session:
        tools = {t.name: t for t in await load_mcp_tools(session)}
        row.loads.ok = sum(name in tools for name in TOOLS)
        for name in TOOLS:
            tool = tools.get(name)
            if tool is None:
                continue
            problems = []
            try:
                args_view = tool.args
                missing = set(published[name].get("properties", {})) - set(args_view)
                if missing:
                    problems.append(f"{name}: .args lacks {sorted(missing)}")
            except Exception as e:  # noqa: BLE001
                problems.append(f"{name}: .args raises {type(e).__name__}: {e}")
            try:
                strict = convert_to_openai_tool(tool, strict=True)["function"]["parameters"]
                problems += lost_meaning(published[name], strict, name)
            except Exception as e:  # noqa: BLE001
                problems.append(f"{name}: convert_to_openai_tool(strict=True): {e}")
                strict = None
            row.converts.problems += problems
            row.converts.ok += not problems
            try:
                args = strict_arguments(strict or published[name], CALLS[name], name)
                if strict is not None:
                    jsonschema.validate(args, strict)
                out = text_of(await tool.ainvoke(args))
            except Exception as e:  # noqa: BLE001
                row.calls.problems.append(f"{name}: {type(e).__name__}: {str(e)[:200]}")
                continue
            if answered(out):
                row.calls.ok += 1
            else:
                row.calls.problems.append(f"{name}: {out[:200]}")
    row.notes.append("calls: strict arguments through StructuredTool.ainvoke")
    return row


async def pydantic_ai(transport: str, url: str, published: dict[str, Any]) -> Row:
    from importlib.metadata import version

    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer

    row = Row(f"pydantic-ai {version('pydantic-ai-slim')} MCPToolset", transport)
    if transport == "http":
        client: Any = url
    else:
        from fastmcp.client.transports import StdioTransport

        client = StdioTransport(command=GOVCAT, args=STDIO_ARGS, cwd=str(REPO), env=stdio_env())
    seen: dict[str, Any] = {}

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if "tools" not in seen:
            seen["tools"] = {t.name: t for t in info.function_tools}
            calls = [
                ToolCallPart(tool_name=n, args=CALLS[n], tool_call_id=f"call-{n}")
                for n in TOOLS
                if n in seen["tools"]
            ]
            return ModelResponse(parts=calls)
        seen["returns"] = [
            p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
        ]
        return ModelResponse(parts=[TextPart("done")])

    toolset = MCPToolset(client, tool_error_behavior="error")
    agent = Agent(FunctionModel(model), toolsets=[toolset])
    try:
        async with toolset:
            await agent.run("tag a column")
    except Exception as e:  # noqa: BLE001
        row.calls.problems.append(f"run: {type(e).__name__}: {str(e)[:300]}")
    tools = seen.get("tools", {})
    row.loads.ok = sum(name in tools for name in TOOLS)
    judged = 0
    for name in TOOLS:
        tool = tools.get(name)
        if tool is None:
            continue
        auto = OpenAIJsonSchemaTransformer(copy.deepcopy(tool.parameters_json_schema), strict=None)
        auto.walk()
        judged += bool(auto.is_strict_compatible)
        try:
            strict = OpenAIJsonSchemaTransformer(
                copy.deepcopy(tool.parameters_json_schema), strict=True
            ).walk()
            problems = lost_meaning(published[name], strict, name)
        except Exception as e:  # noqa: BLE001
            problems = [f"{name}: strict transform: {e}"]
        row.converts.problems += problems
        row.converts.ok += not problems
    for ret in seen.get("returns", []):
        if answered(text_of(ret.model_response_str())):
            row.calls.ok += 1
        else:
            row.calls.problems.append(f"{ret.tool_name}: {ret.model_response_str()[:200]}")
    row.notes.append(f"judged strict-compatible as published: {judged}/{len(TOOLS)} (info)")
    return row


async def gemini(transport: str, url: str, published: dict[str, Any]) -> Row:
    from importlib.metadata import version

    from google.genai import types
    from google.genai._adapters import McpToGenAiToolAdapter
    from google.genai._mcp_utils import mcp_to_gemini_tool

    row = Row(f"google-genai {version('google-genai')}", transport)
    async with mcp_session(transport, url) as session:
        listed = await session.list_tools()
        tools = {t.name: t for t in listed.tools}
        row.loads.ok = sum(name in tools for name in TOOLS)
        converted = {}
        for name in TOOLS:
            if name not in tools:
                continue
            try:
                declaration = mcp_to_gemini_tool(tools[name]).function_declarations[0]
                problems = gemini_lost(published[name], declaration.parameters, name)
                converted[name] = declaration
            except Exception as e:  # noqa: BLE001
                problems = [f"{name}: mcp_to_gemini_tool: {type(e).__name__}: {e}"]
            row.converts.problems += problems
            row.converts.ok += not problems
        adapter = McpToGenAiToolAdapter(session, listed)
        for name in converted:
            result = await adapter.call_tool(types.FunctionCall(name=name, args=CALLS[name]))
            if not result.isError and answered(text_of(result.content)):
                row.calls.ok += 1
            else:
                row.calls.problems.append(f"{name}: {text_of(result.content)[:200]}")
    return row


def typescript(transport: str, url: str) -> Row | None:
    node = os.environ.get("COMPAT_NODE")
    if not node:
        return None
    script = Path(__file__).with_name("ts_client.cjs")
    proc = subprocess.run(
        [node, str(script), transport, url, GOVCAT],
        cwd=REPO,
        env={**os.environ, "NODE_PATH": str(REPO / ".tools" / "frameworks" / "node_modules")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        report = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        row = Row("@modelcontextprotocol/sdk (TypeScript)", transport)
        row.loads.problems.append(f"ts_client.cjs exit {proc.returncode}: {(proc.stderr or proc.stdout)[-300:]}")
        return row
    row = Row(f"@modelcontextprotocol/sdk {report['version']} (TypeScript)", transport)
    row.loads.ok = report["loaded"]
    row.converts.ok = len(TOOLS)
    row.calls.ok = report["called"]
    row.calls.problems = report["problems"]
    row.notes.append("each structuredContent checked against its outputSchema by the SDK")
    return row


# ------------------------------------------------------------------ the run


async def published_schemas(url: str) -> dict[str, dict[str, Any]]:
    async with mcp_session("http", url) as session:
        return {t.name: t.inputSchema for t in (await session.list_tools()).tools}


STACKS: list[Callable[..., Any]] = [official_sdk, openai_agents, langchain, pydantic_ai, gemini]


async def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    rows: list[Row] = []
    with running_server() as url:
        published = await published_schemas(url)
        for transport in ("http", "stdio"):
            for stack in STACKS:
                try:
                    rows.append(await stack(transport, url, published))
                except Exception as e:  # noqa: BLE001 - a stack that cannot even start fails its row
                    row = Row(stack.__name__, transport)
                    row.loads.problems.append(f"{type(e).__name__}: {str(e)[:300]}")
                    rows.append(row)
            ts = typescript(transport, url)
            if ts is not None:
                rows.append(ts)
    print(f"{'client stack':<44} {'via':<6} {'loads':<7} {'converts':<9} {'calls':<7} notes")
    for r in rows:
        print(
            f"{r.stack:<44} {r.transport:<6} {r.loads.show():<7} {r.converts.show():<9} "
            f"{r.calls.show():<7} {'; '.join(r.notes)}"
        )
    failed = [r for r in rows if r.failed]
    for r in failed:
        for kind, cell in (("loads", r.loads), ("converts", r.converts), ("calls", r.calls)):
            for p in cell.problems:
                print(f"  FAIL {r.stack} [{r.transport}] {kind}: {p}")
    print(f"compat: {len(rows) - len(failed)}/{len(rows)} stack rows pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
