"""MCP session caps seen by the official Python SDK (PyPI `mcp` 2.3): a session the server
closed to make room (`--max-sessions`) answers 404, which the SDK reports as the error
"Session terminated" on the next call; the SDK does not re-initialize by itself, so the host
opens a new client (a new `initialize`) and carries on."""

from __future__ import annotations

import pytest
from conftest import VALID_SET, http_json, running_govcat
from mcp import Client, MCPError

async def test_an_evicted_session_is_reported_and_a_new_session_carries_on(tmp_path) -> None:
    caps = ["--max-sessions", "1", "--max-sessions-per-principal", "1"]
    with running_govcat(caps, tmp_path / "audit.jsonl") as server:
        async with Client(server.mcp_url, mode="legacy") as first:
            assert (await first.call_tool("resolve_lf_tag", VALID_SET)).is_error is False
            # A second host's initialize closes the first, idle, session (the cap is 1).
            async with Client(server.mcp_url, mode="legacy") as second:
                assert (await second.call_tool("resolve_lf_tag", VALID_SET)).is_error is False
                with pytest.raises(MCPError) as gone:
                    await first.call_tool("resolve_lf_tag", VALID_SET)
                assert gone.value.message == "Session terminated"
            _, ready = http_json(f"{server.base}/readyz")
            # One loopback host is one principal under --auth none: its own cap closed the session.
            assert ready["mcp_sessions"]["evicted"]["principal_cap"] == 1
        # The first host reconnects: a new initialize, and its calls work again.
        async with Client(server.mcp_url, mode="legacy") as again:
            result = await again.call_tool("resolve_lf_tag", VALID_SET)
            assert result.is_error is False
            assert result.structured_content["resolved"] == VALID_SET["tags"]
