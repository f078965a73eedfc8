"""Fixtures that drive a real govcat with the official MCP Python SDK (PyPI `mcp` 2.3.x).

Nothing is built here: the binary is `target/debug/govcat` (override with GOVCAT_BIN), run
from the repository root against the demo catalog, the ontology and the snapshot in `index/`.
One HTTP server (`govcat serve --listen 127.0.0.1:0`) serves the whole session; it is stopped
with SIGTERM afterwards. stdio clients start their own `govcat mcp-stdio` per connection.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import pytest
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
DATASET_TEMPLATE = "govcat://domain/{domain}/dataset/{table}"
# A complete valid tag set of the demo ontology: a resolve_lf_tag call that needs no model.
VALID_SET = {
    "tags": {
        "sensitivity": "high",
        "residency": "eu",
        "subject_type": "customer",
        "retention": "10y",
        "lawful_basis": "contract",
    }
}
ONTOLOGY_URI = "govcat://ontology/lf-tags"


def govcat_bin() -> str:
    path = Path(os.environ.get("GOVCAT_BIN", REPO / "target" / "debug" / "govcat"))
    if not path.is_file():
        pytest.fail(f"no govcat binary at {path}; run `cargo build` or set GOVCAT_BIN")
    return str(path)


def http_json(url: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def tool_error(result: Any) -> dict[str, Any]:
    """The error object of a failed tool call: `isError`, no `structuredContent` (that must fit
    the tool's outputSchema), the object as the JSON text of the first content block."""
    assert result.is_error is True, result
    assert result.structured_content is None, result.structured_content
    return json.loads(result.content[0].text)


@dataclass
class Server:
    base: str
    process: subprocess.Popen[str]
    audit_log: Path

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"


@contextlib.contextmanager
def running_govcat(args: list[str], audit_log: Path) -> Iterator[Server]:
    """`govcat serve --listen 127.0.0.1:0 ARGS --audit-log AUDIT_LOG`, ready, then SIGTERM."""
    proc = subprocess.Popen(
        [govcat_bin(), "serve", "--listen", "127.0.0.1:0", "--drain-seconds", "0", *args, "--audit-log", str(audit_log)],
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
            pytest.fail(f"govcat serve did not start (exit {proc.poll()}): first line {line!r}")
        mcp_url = line[len(prefix) :].split()[0]
        base = mcp_url.removesuffix("/mcp")
        deadline = time.monotonic() + 60
        status, details = 0, None
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                status, details = http_json(f"{base}/readyz")
                if status == 200:
                    break
            time.sleep(0.2)
        if status != 200:
            pytest.fail(
                f"govcat serve is not ready after 60 s: /readyz {status} {details}; "
                "run scripts/fetch-model.sh and `govcat index` first"
            )
        yield Server(base=base, process=proc, audit_log=audit_log)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # The audit log goes to a file: on stdout it would fill the undrained pipe.
    audit_log = tmp_path_factory.mktemp("audit") / "audit.jsonl"
    with running_govcat([], audit_log) as s:
        yield s


ISSUER = "https://idp.govcat.test"
AUDIENCE = "https://govcat.test/mcp"
RESOURCE_METADATA = "https://govcat.test/.well-known/oauth-protected-resource/mcp"
CLIENT_ID = "python-mcp-test"


@dataclass
class AuthServer:
    """`govcat serve --auth jwt` trusting a key generated for this session."""

    server: Server
    private_key: Any
    kid: str = "py-rsa-1"

    def token(self, scope: str, **patch: Any) -> str:
        import jwt

        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "carol",
            "iat": now - 10,
            "exp": now + 600,
            "scope": scope,
            "client_id": CLIENT_ID,
        }
        claims.update(patch)
        return jwt.encode(claims, self.private_key, algorithm="RS256", headers={"kid": self.kid})


@pytest.fixture(scope="session")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthServer]:
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    work = tmp_path_factory.mktemp("auth")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update(kid="py-rsa-1", use="sig", alg="RS256")
    jwks = work / "jwks.json"
    jwks.write_text(json.dumps({"keys": [jwk]}))
    args = ["--auth", "jwt", "--issuer", ISSUER, "--audience", AUDIENCE, "--jwks-file", str(jwks)]
    with running_govcat(args, work / "audit.jsonl") as s:
        yield AuthServer(server=s, private_key=key)


@dataclass
class Elicitations:
    """Answers elicitation requests from a fixed table and records what was asked."""

    answers: dict[str, str] = field(default_factory=dict)
    action: str = "accept"
    asked: list[Any] = field(default_factory=list)

    async def __call__(self, context: Any, params: Any) -> Any:
        from mcp.types import ElicitResult

        self.asked.append(params)
        if self.action != "accept":
            return ElicitResult(action=self.action)
        schema = params.requested_schema
        props = schema["properties"] if isinstance(schema, dict) else schema.properties
        return ElicitResult(action="accept", content={k: self.answers[k] for k in props})


TRANSPORTS = ["http-legacy", "http-auto", "stdio-legacy", "stdio-auto"]


@dataclass
class Connect:
    """Opens an MCP client over one transport and protocol generation."""

    transport: str
    server: Server

    @property
    def legacy(self) -> bool:
        return self.transport.endswith("legacy")

    @contextlib.asynccontextmanager
    async def __call__(
        self, elicitation: Elicitations | None = None, scopes: str | None = None
    ) -> AsyncIterator[Client]:
        mode = "legacy" if self.legacy else "auto"
        if self.transport.startswith("http"):
            assert scopes is None, "HTTP with --auth none has no caller scopes"
            target: Any = self.server.mcp_url
        else:
            env = {"GOVCAT_LOG": "warn"}
            if scopes is not None:
                env["GOVCAT_SCOPES"] = scopes
            target = StdioServerParameters(
                command=govcat_bin(), args=["mcp-stdio"], cwd=str(REPO), env=env
            )
        async with Client(target, mode=mode, elicitation_callback=elicitation) as client:
            expected = "2025-11-25" if self.legacy else "2026-07-28"
            assert client.protocol_version == expected
            yield client


@pytest.fixture(params=TRANSPORTS)
def connect(request: pytest.FixtureRequest, server: Server) -> Connect:
    return Connect(transport=request.param, server=server)


@pytest.fixture(params=["http-auto", "stdio-auto"])
def connect_modern(request: pytest.FixtureRequest, server: Server) -> Connect:
    return Connect(transport=request.param, server=server)


@pytest.fixture(params=["http-legacy", "stdio-legacy"])
def connect_legacy(request: pytest.FixtureRequest, server: Server) -> Connect:
    return Connect(transport=request.param, server=server)
