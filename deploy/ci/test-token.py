#!/usr/bin/env python3
"""Test identity provider for scripts/test-image.sh: an RSA key made with openssl, its JWKS,
and RS256 access tokens signed with it (python stdlib + openssl; no third-party package).

  test-token.py init DIR                      key.pem and jwks.json (kid "test-image") in DIR
  test-token.py token DIR ISS AUD SCOPE...    prints a token valid for 1 hour
"""
import base64
import json
import subprocess
import sys
import time
from pathlib import Path

KID = "test-image"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def init(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    key = directory / "key.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-out", str(key)], check=True, capture_output=True)
    out = subprocess.run(["openssl", "rsa", "-in", str(key), "-noout", "-modulus"],
                         check=True, capture_output=True, text=True).stdout.strip()
    modulus = bytes.fromhex(out.split("=", 1)[1])
    jwks = {"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": KID,
                      "n": b64url(modulus), "e": b64url((65537).to_bytes(3, "big"))}]}
    (directory / "jwks.json").write_text(json.dumps(jwks))


def token(directory: Path, iss: str, aud: str, scopes: list[str]) -> str:
    now = int(time.time())
    header = {"alg": "RS256", "typ": "JWT", "kid": KID}
    claims = {"iss": iss, "aud": aud, "sub": "test-image-client", "client_id": "test-image",
              "iat": now, "nbf": now - 5, "exp": now + 3600, "scope": " ".join(scopes)}
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
    signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", str(directory / "key.pem")],
                               input=signing_input.encode(), check=True, capture_output=True).stdout
    return f"{signing_input}.{b64url(signature)}"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "init":
        init(Path(sys.argv[2]))
    elif len(sys.argv) >= 5 and sys.argv[1] == "token":
        print(token(Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]))
    else:
        sys.exit(__doc__)
