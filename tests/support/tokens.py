"""Keys and tokens for the auth tests, and a JWKS endpoint on loopback.

Made here, from ``cryptography``: an HS256 secret, an RSA and an EC P-256 key pair (made
once per session), tokens with any header and claims, and an unsigned ``alg: none`` one.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import hmac
import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

SECRET = "test-secret-that-is-long-enough-for-hs256"
ISSUER = "https://issuer.test"
AUDIENCE = "agent-gateway"


@functools.cache
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@functools.cache
def other_rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@functools.cache
def ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def public_pem(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> str:
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def jwk(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey, kid: str) -> dict[str, Any]:
    """The public half of ``key`` as a JWK, with its id, algorithm and use."""
    if isinstance(key, rsa.RSAPrivateKey):
        data = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
        alg = "RS256"
    else:
        data = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
        alg = "ES256"
    data.update(kid=kid, alg=alg, use="sig")
    return data


def claims(**overrides: Any) -> dict[str, Any]:
    """Valid claims for user alice of org acme; an override of None drops that claim."""
    now = int(time.time())
    values: dict[str, Any] = {
        "sub": "alice",
        "org": "acme",
        "roles": ["approver"],
        "iss": ISSUER,
        "aud": AUDIENCE,
        "iat": now,
        "exp": now + 300,
    }
    values.update(overrides)
    return {name: value for name, value in values.items() if value is not None}


def token(key: Any = SECRET, alg: str = "HS256", kid: str | None = None, **overrides: Any) -> str:
    headers = {"kid": kid} if kid else None
    return jwt.encode(claims(**overrides), key, algorithm=alg, headers=headers)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hand_made(header: dict[str, Any], body: dict[str, Any], sign_with: bytes | None) -> str:
    """A token PyJWT would refuse to make: ``alg: none``, or HMAC over a public key."""
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(body).encode())}"
    signature = b""
    if sign_with is not None:
        signature = hmac.new(sign_with, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(signature)}"


class JwksEndpoint:
    """Serves ``keys`` as a JWKS on a loopback port and counts the fetches."""

    def __init__(self, keys: list[dict[str, Any]]) -> None:
        self.keys = keys
        self.fetches = 0
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                endpoint.fetches += 1
                body = json.dumps({"keys": endpoint.keys}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/.well-known/jwks.json"


@contextlib.contextmanager
def jwks_endpoint(keys: list[dict[str, Any]]) -> Iterator[JwksEndpoint]:
    endpoint = JwksEndpoint(keys)
    thread = threading.Thread(target=endpoint.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        endpoint.server.shutdown()
        endpoint.server.server_close()
        thread.join(5)
