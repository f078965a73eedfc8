"""A session of the official Python SDK (PyPI `mcp` 2.3, protocol 2025-11-25) behind a load
balancer without affinity: two replicas share `--session-key-file`, and every request of the
client goes to the other replica than the one before (an httpx transport that alternates the
port, as a round-robin balancer would). The SDK initializes once and every call is answered;
the pair: replicas with different keys answer the moved session 404 ("Session terminated")."""

from __future__ import annotations

import itertools
from pathlib import Path

import httpx2
import pytest
from conftest import VALID_SET, http_json, running_govcat
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client


class Alternating(httpx2.AsyncBaseTransport):
    """Sends each request to the next of `ports` in turn, whatever port the URL names."""

    def __init__(self, ports: list[int]) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.to(ports)
        self.sent: list[int] = []

    def to(self, ports: list[int]) -> None:
        self.ports = itertools.cycle(ports)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = next(self.ports)
        self.sent.append(port)
        request.url = request.url.copy_with(port=port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def key_file(tmp_path: Path, name: str, key: str) -> str:
    path = tmp_path / name
    path.write_text(key + "\n")
    return str(path)


def port_of(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


async def test_a_session_moving_between_replicas_that_share_a_key_is_answered_throughout(tmp_path) -> None:
    key = key_file(tmp_path, "key", "6f0e8d2c4a1b3957e8d6c4b2a0f1e3d5-py")
    with running_govcat(["--session-key-file", key], tmp_path / "a.jsonl") as a, running_govcat(
        ["--session-key-file", key], tmp_path / "b.jsonl"
    ) as b:
        transport = Alternating([port_of(a.base), port_of(b.base)])
        http = httpx2.AsyncClient(transport=transport)
        async with Client(streamable_http_client(a.mcp_url, http_client=http), mode="legacy") as client:
            for _ in range(4):
                result = await client.call_tool("resolve_lf_tag", VALID_SET)
                assert result.is_error is False
                assert result.structured_content["resolved"] == VALID_SET["tags"]
        # initialize, initialized, four calls, DELETE: both replicas were used.
        assert set(transport.sent) == {port_of(a.base), port_of(b.base)}
        restored = [http_json(f"{s.base}/readyz")[1]["mcp_sessions"]["restored"] for s in (a, b)]
        assert restored == [0, 1]


async def test_replicas_with_different_keys_answer_the_moved_session_404(tmp_path) -> None:
    one = key_file(tmp_path, "one", "6f0e8d2c4a1b3957e8d6c4b2a0f1e3d5-one")
    two = key_file(tmp_path, "two", "6f0e8d2c4a1b3957e8d6c4b2a0f1e3d5-two")
    with running_govcat(["--session-key-file", one], tmp_path / "a.jsonl") as a, running_govcat(
        ["--session-key-file", two], tmp_path / "b.jsonl"
    ) as b:
        # The session opens on A; from then on every request goes to B.
        transport = Alternating([port_of(a.base)])
        http = httpx2.AsyncClient(transport=transport)
        async with Client(streamable_http_client(a.mcp_url, http_client=http), mode="legacy") as client:
            transport.to([port_of(b.base)])
            with pytest.raises(MCPError) as gone:
                await client.call_tool("resolve_lf_tag", VALID_SET)
            assert gone.value.message == "Session terminated"
