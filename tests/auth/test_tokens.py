"""JWT checking: which tokens pass, which are refused and with what sentence, and which
settings stop start-up. The verifier is driven directly, without a server."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from gateway import wire as p
from gateway.auth import AuthSettingsError, Identity, Unauthorized
from gateway.auth.tokens import KeySetUrl, TokenVerifier
from gateway.config import Settings
from tests.support.tokens import (
    AUDIENCE,
    ISSUER,
    SECRET,
    ec_key,
    hand_made,
    jwk,
    jwks_endpoint,
    other_rsa_key,
    public_pem,
    rsa_key,
    token,
)

pytestmark = pytest.mark.unit


def verifier(**settings: Any) -> TokenVerifier:
    fields: dict[str, Any] = {"auth": "jwt", "jwt_issuer": ISSUER, "jwt_audience": AUDIENCE}
    fields.update(settings)
    return TokenVerifier(Settings(**fields))


async def refusal(check: TokenVerifier, credential: str) -> Unauthorized:
    with pytest.raises(Unauthorized) as refused:
        await check.verify(credential, "bearer")
    assert credential not in refused.value.message
    return refused.value


# --- what passes -------------------------------------------------------------------------


async def test_an_hs256_token_names_the_user_org_and_roles_until_it_expires() -> None:
    exp = int(time.time()) + 120
    identity = await verifier(jwt_secret=SECRET).verify(token(exp=exp), "bearer")
    assert identity == Identity(
        "alice", "acme", frozenset({"approver"}), via="bearer", expires_at=float(exp)
    )


async def test_rs256_and_es256_tokens_pass_with_their_public_key() -> None:
    for key, alg in ((rsa_key(), "RS256"), (ec_key(), "ES256")):
        check = verifier(jwt_public_key=public_pem(key))
        assert check.algorithms == (alg,)
        assert (await check.verify(token(key, alg), "bearer")).user == "alice"


async def test_a_public_key_may_be_given_as_a_file(tmp_path: Path) -> None:
    path = tmp_path / "issuer.pem"
    path.write_text(public_pem(rsa_key()))
    check = verifier(jwt_public_key=str(path))
    assert (await check.verify(token(rsa_key(), "RS256"), "bearer")).user == "alice"


async def test_claim_names_are_settings_and_may_be_dotted() -> None:
    check = verifier(
        jwt_secret=SECRET,
        jwt_user_claim="email",
        jwt_org_claim="tenant",
        jwt_roles_claim="realm_access.roles",
    )
    identity = await check.verify(
        token(
            email="bob@acme.test",
            tenant="acme-kr",
            realm_access={"roles": ["viewer", "approver"]},
        ),
        "subprotocol",
    )
    assert (identity.user, identity.org, identity.roles, identity.via) == (
        "bob@acme.test",
        "acme-kr",
        frozenset({"viewer", "approver"}),
        "subprotocol",
    )


async def test_roles_may_be_a_space_separated_string_and_org_and_roles_may_be_absent() -> None:
    check = verifier(jwt_secret=SECRET)
    spaced = await check.verify(token(roles="read write"), "bearer")
    assert spaced.roles == frozenset({"read", "write"})
    bare = await check.verify(token(org=None, roles=None), "bearer")
    assert (bare.org, bare.roles) == (None, frozenset())


async def test_clock_skew_within_the_leeway_is_forgiven() -> None:
    check = verifier(jwt_secret=SECRET, jwt_leeway=30)
    now = int(time.time())
    assert await check.verify(token(exp=now - 10), "bearer")
    assert await check.verify(token(nbf=now + 10, iat=now + 10), "bearer")


async def test_without_issuer_and_audience_settings_neither_is_checked() -> None:
    check = verifier(jwt_secret=SECRET, jwt_issuer="", jwt_audience="")
    assert await check.verify(token(iss="https://elsewhere.test", aud="other"), "bearer")


# --- what is refused ---------------------------------------------------------------------


async def test_expired_and_not_yet_valid_tokens_are_refused() -> None:
    check = verifier(jwt_secret=SECRET, jwt_leeway=5)
    now = int(time.time())
    expired = await refusal(check, token(exp=now - 60))
    assert "expired" in expired.message and expired.error == "invalid_token"
    early = await refusal(check, token(nbf=now + 60))
    assert "not valid yet" in early.message
    assert "not valid yet" in (await refusal(check, token(iat=now + 60))).message


async def test_a_token_without_expiry_is_refused() -> None:
    refused = await refusal(verifier(jwt_secret=SECRET), token(exp=None))
    assert "'exp'" in refused.message


async def test_wrongly_signed_tokens_are_refused() -> None:
    assert "signature" in (await refusal(verifier(jwt_secret=SECRET), token(SECRET + "x"))).message
    rs = verifier(jwt_public_key=public_pem(rsa_key()))
    assert "signature" in (await refusal(rs, token(other_rsa_key(), "RS256"))).message


async def test_wrong_audience_and_wrong_issuer_are_refused() -> None:
    check = verifier(jwt_secret=SECRET)
    assert "audience" in (await refusal(check, token(aud="someone-else"))).message
    assert "'aud'" in (await refusal(check, token(aud=None))).message
    assert "issuer" in (await refusal(check, token(iss="https://evil.test"))).message
    assert "'iss'" in (await refusal(check, token(iss=None))).message


async def test_alg_none_is_refused_whatever_the_key() -> None:
    body = {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 300}
    unsigned = hand_made({"alg": "none", "typ": "JWT"}, body, None)
    for check in (verifier(jwt_secret=SECRET), verifier(jwt_public_key=public_pem(rsa_key()))):
        assert "algorithm" in (await refusal(check, unsigned)).message


async def test_hs256_signed_with_the_public_key_is_refused() -> None:
    pem = public_pem(rsa_key())
    body = {"sub": "mallory", "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 300}
    forged = hand_made({"alg": "HS256", "typ": "JWT"}, body, pem.encode())
    refused = await refusal(verifier(jwt_public_key=pem), forged)
    assert "algorithm" in refused.message and "RS256" in refused.message


async def test_an_algorithm_outside_the_setting_is_refused() -> None:
    check = verifier(jwt_public_key=public_pem(rsa_key()), jwt_algorithms="RS256")
    assert "algorithm" in (await refusal(check, token(rsa_key(), "RS512"))).message


async def test_garbage_and_oversized_credentials_are_refused() -> None:
    check = verifier(jwt_secret=SECRET)
    assert "well-formed" in (await refusal(check, "not-a-jwt")).message
    huge = await refusal(check, "a" * 10_000)
    assert huge.error == "invalid_request"


@pytest.mark.parametrize(
    ("claims", "words"),
    [
        ({"sub": None}, "'sub'"),
        ({"sub": 42}, "'sub'"),
        ({"sub": "has space"}, "User ids"),
        ({"sub": "__warmup__"}, "reserved"),
        ({"org": ["a", "b"]}, "'org'"),
        ({"roles": [1, 2]}, "'roles'"),
        ({"roles": ["r"] * 65}, "'roles'"),
    ],
)
async def test_claims_that_do_not_name_a_user_are_refused(
    claims: dict[str, Any], words: str
) -> None:
    assert words in (await refusal(verifier(jwt_secret=SECRET), token(**claims))).message


# --- JWKS ----------------------------------------------------------------------------------


async def test_a_jwks_file_checks_tokens_by_key_id(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk(rsa_key(), "r1"), jwk(ec_key(), "e1")]}))
    check = verifier(jwt_jwks_file=str(path))
    assert (await check.verify(token(rsa_key(), "RS256", kid="r1"), "bearer")).user == "alice"
    assert (await check.verify(token(ec_key(), "ES256", kid="e1"), "bearer")).user == "alice"
    unknown = await refusal(check, token(rsa_key(), "RS256", kid="r9"))
    assert "kid" in unknown.message
    # A key id names a key, not an algorithm: the RSA key cannot check an ES256 token.
    assert await refusal(check, token(ec_key(), "ES256", kid="r1"))


@pytest.mark.server
async def test_a_jwks_url_is_fetched_once_and_cached() -> None:
    with jwks_endpoint([jwk(rsa_key(), "r1")]) as endpoint:
        check = verifier(jwt_jwks_url=endpoint.url)
        for _ in range(5):
            assert (await check.verify(token(rsa_key(), "RS256", kid="r1"), "bearer")).user
        assert endpoint.fetches == 1


@pytest.mark.server
async def test_a_jwks_url_refetches_for_a_new_key_but_not_for_every_unknown_one() -> None:
    with jwks_endpoint([jwk(rsa_key(), "r1")]) as endpoint:
        check = verifier(jwt_jwks_url=endpoint.url)
        assert await check.verify(token(rsa_key(), "RS256", kid="r1"), "bearer")
        assert "kid" in (await refusal(check, token(ec_key(), "ES256", kid="e1"))).message
        # The cooldown holds: a flood of unknown key ids is not a flood of fetches.
        for number in range(5):
            await refusal(check, token(ec_key(), "ES256", kid=f"x{number}"))
        assert endpoint.fetches == 1
        # The issuer rotates in a new key; once the cooldown is over it is fetched.
        endpoint.keys.append(jwk(ec_key(), "e1"))
        assert isinstance(check.keys, KeySetUrl)
        check.keys.client.cooldown_duration = 0
        assert (await check.verify(token(ec_key(), "ES256", kid="e1"), "bearer")).user
        assert endpoint.fetches == 2


@pytest.mark.server
async def test_an_unreachable_jwks_is_an_internal_error_not_a_refusal() -> None:
    with jwks_endpoint([]) as endpoint:
        url = endpoint.url
    check = verifier(jwt_jwks_url=url)
    with pytest.raises(p.GatewayError) as failed:
        await check.verify(token(rsa_key(), "RS256", kid="r1"), "bearer")
    assert failed.value.code is p.ErrorCode.INTERNAL_ERROR
    assert not isinstance(failed.value, Unauthorized)


# --- settings that cannot work -------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({}, "needs a key"),
        ({"jwt_secret": SECRET, "jwt_jwks_url": "http://x.test/jwks"}, "one key source"),
        ({"jwt_secret": "short"}, "at least 32 bytes"),
        ({"jwt_secret": SECRET, "jwt_algorithms": "none"}, "'none'"),
        ({"jwt_secret": SECRET, "jwt_algorithms": "HS256,RS256"}, "only HS256"),
        ({"jwt_secret": SECRET, "jwt_algorithms": "XS1"}, "XS1"),
        ({"jwt_public_key": "-----BEGIN PUBLIC KEY-----\nnope"}, "not a PEM"),
        ({"jwt_public_key": "/nonexistent/key.pem"}, "cannot be read"),
        ({"jwt_jwks_url": "file:///etc/passwd"}, "http(s)"),
        ({"jwt_jwks_file": "/nonexistent/jwks.json"}, "cannot be read"),
    ],
)
def test_settings_that_cannot_work_stop_start_up_with_one_sentence(
    settings: dict[str, Any], words: str
) -> None:
    with pytest.raises(AuthSettingsError) as stopped:
        verifier(**settings)
    message = str(stopped.value)
    assert words in message and "\n" not in message and message.endswith(".")


def test_an_hmac_algorithm_with_a_public_key_stops_start_up() -> None:
    with pytest.raises(AuthSettingsError, match="GATEWAY_JWT_SECRET"):
        verifier(jwt_public_key=public_pem(rsa_key()), jwt_algorithms="HS256")
    with pytest.raises(AuthSettingsError, match="cannot check ES256"):
        verifier(jwt_public_key=public_pem(rsa_key()), jwt_algorithms="ES256")


def test_a_jwks_file_that_is_not_one_stops_start_up(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text('{"keys": "nope"}')
    with pytest.raises(AuthSettingsError, match="not a JWKS"):
        verifier(jwt_jwks_file=str(path))
