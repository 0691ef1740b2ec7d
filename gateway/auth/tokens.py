"""Bearer tokens: JWTs checked with PyJWT against the one key source the settings name.

The accepted algorithms come from the settings, never from the token: its ``alg`` only picks
among them. A secret accepts only HMAC algorithms and a public key or JWKS only asymmetric
ones, so neither ``alg: none`` nor an HS256 token "signed" with the public key can pass.
Refusals carry a sentence of ours, never PyJWT's text, and never the token.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from gateway import wire as p
from gateway.auth.identity import AuthSettingsError, Identity, Unauthorized, Via, checked_user
from gateway.config import Settings

log = logging.getLogger(__name__)

HMAC = ("HS256", "HS384", "HS512")
RSA = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
EC = ("ES256", "ES384", "ES512")
OKP = ("EdDSA",)
ASYMMETRIC = RSA + EC + OKP
# RFC 7518 section 3.2: an HMAC key at least as long as the hash.
SECRET_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
# Longer bearer credentials are refused unread; real tokens are a few hundred bytes.
MAX_TOKEN_BYTES = 8192
JWKS_FETCH_TIMEOUT_SECONDS = 5.0
# A token naming an unknown key makes the JWKS be fetched again at most this often.
JWKS_REFETCH_SECONDS = 30.0
# Bounds on the org and roles a token may carry, as they go into logs and the audit.
MAX_CLAIM_CHARS = 128
MAX_ROLES = 64

_KEY_SETTINGS = ("jwt_secret", "jwt_public_key", "jwt_jwks_url", "jwt_jwks_file")


class KeySource(Protocol):
    """Where the key that checks a token comes from; a key set reads the token's ``kid``."""

    async def key_for(self, token: str) -> Any: ...


@dataclasses.dataclass(frozen=True)
class Secret:
    secret: bytes

    async def key_for(self, token: str) -> Any:
        return self.secret


@dataclasses.dataclass(frozen=True)
class PublicKey:
    key: Any

    async def key_for(self, token: str) -> Any:
        return self.key


def key_id(token: str) -> Any:
    # PyJWT parses a token in ~100 us; only key sets pay for reading the header first.
    return jwt.get_unverified_header(token).get("kid")


@dataclasses.dataclass(frozen=True)
class KeySet:
    """A JWKS read once at start-up (GATEWAY_JWT_JWKS_FILE)."""

    keys: tuple[jwt.PyJWK, ...]

    async def key_for(self, token: str) -> Any:
        kid = key_id(token)
        if kid is None and len(self.keys) == 1:
            return self.keys[0]
        for key in self.keys:
            if key.key_id is not None and key.key_id == kid:
                return key
        raise Unauthorized("The token's signing key (kid) is not one of the gateway's keys.")


class KeySetUrl:
    """The issuer's JWKS endpoint, cached by PyJWKClient, fetched off the event loop."""

    def __init__(self, url: str, cache_seconds: float) -> None:
        self.client = jwt.PyJWKClient(
            url,
            lifespan=cache_seconds,
            timeout=JWKS_FETCH_TIMEOUT_SECONDS,
            cooldown_duration=JWKS_REFETCH_SECONDS,
        )

    async def key_for(self, token: str) -> Any:
        kid = key_id(token)
        if not isinstance(kid, str):
            raise Unauthorized("The token names no signing key (kid); its issuer's keys need one.")
        try:
            # PyJWKClient is synchronous and may fetch: keep the loop free meanwhile.
            return await asyncio.to_thread(self.client.get_signing_key, kid)
        except (jwt.PyJWKClientConnectionError, jwt.PyJWKSetError) as error:
            log.warning("cannot fetch the JWKS at %s: %s", self.client.uri, type(error).__name__)
            raise p.GatewayError(
                p.ErrorCode.INTERNAL_ERROR,
                "The gateway cannot fetch its token keys right now; try again in a minute.",
            ) from None
        except jwt.PyJWKClientError:
            raise Unauthorized(
                "The token's signing key (kid) is not one of its issuer's keys."
            ) from None


# PyJWT's refusals in the words a client is sent; the first matching class wins.
_REFUSALS: tuple[tuple[type[jwt.PyJWTError], str], ...] = (
    (jwt.ExpiredSignatureError, "The token has expired; get a new one from its issuer."),
    (
        jwt.ImmatureSignatureError,
        "The token is not valid yet (nbf or iat is in the future); check the issuer's clock.",
    ),
    (jwt.InvalidAudienceError, "The token was issued for another audience than this gateway."),
    (jwt.InvalidIssuerError, "The token comes from an issuer this gateway does not trust."),
    (jwt.InvalidSignatureError, "The token's signature does not verify with the gateway's keys."),
    (
        jwt.exceptions.InvalidSubjectError,
        "The token's 'sub' claim must be a string naming the user.",
    ),
    (jwt.InvalidIssuedAtError, "The token's 'iat' claim must be a time in seconds."),
    (jwt.DecodeError, "The bearer credential is not a well-formed JWT."),
)


class TokenVerifier:
    """Checks a JWT (signature, exp/nbf/iat with leeway, iss, aud) and maps its claims."""

    def __init__(self, settings: Settings) -> None:
        self.keys, self.algorithms = key_source(settings)
        self.issuer = settings.jwt_issuer or None
        self.audience = _names(settings.jwt_audience) or None
        self.leeway = settings.jwt_leeway
        self.user_claim = settings.jwt_user_claim
        self.org_claim = settings.jwt_org_claim
        self.roles_claim = settings.jwt_roles_claim
        # Further claims a run's tools read (``gateway.context.caller``), by the operator's names.
        self.mapped_claims = tuple(_names(settings.jwt_claims))
        self._options: dict[str, Any] = {
            "require": ["exp"],
            # Without an audience setting a token's aud is not checked (PyJWT would refuse it).
            "verify_aud": self.audience is not None,
        }

    async def verify(self, token: str, via: Via) -> Identity:
        """The identity a valid token names; ``Unauthorized`` with a sentence otherwise."""
        if len(token) > MAX_TOKEN_BYTES:
            raise Unauthorized(
                f"The bearer credential is longer than {MAX_TOKEN_BYTES} bytes.", "invalid_request"
            )
        try:
            key = await self.keys.key_for(token)
            claims = jwt.decode(
                token,
                key,
                algorithms=list(self.algorithms),
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options=self._options,  # type: ignore[arg-type]
            )
        except jwt.PyJWTError as error:
            raise Unauthorized(self._refusal(error)) from None
        return self._identity(claims, via)

    def _refusal(self, error: jwt.PyJWTError) -> str:
        if isinstance(error, jwt.MissingRequiredClaimError):
            return f"The token has no {error.claim!r} claim; this gateway requires one."
        if isinstance(error, jwt.InvalidAlgorithmError):
            accepted = ", ".join(self.algorithms)
            return (
                f"The token is signed with an algorithm this gateway does not accept ({accepted})."
            )
        for kind, sentence in _REFUSALS:
            if isinstance(error, kind):
                return sentence
        log.info("token refused: %s", type(error).__name__)
        return "The token was refused; get a new one from its issuer."

    def _identity(self, claims: Mapping[str, Any], via: Via) -> Identity:
        user = claim(claims, self.user_claim)
        if not isinstance(user, str):
            raise Unauthorized(f"The token has no {self.user_claim!r} claim naming the user.")
        checked_user(user, f"the token's {self.user_claim!r} claim", "invalid_token")
        org = claim(claims, self.org_claim)
        if org is not None and not _short_text(org):
            raise Unauthorized(f"The token's {self.org_claim!r} claim must be a short string.")
        roles = claim(claims, self.roles_claim)
        if isinstance(roles, str):
            roles = roles.split()
        if roles is None:
            roles = []
        if not (
            isinstance(roles, list) and len(roles) <= MAX_ROLES and all(map(_short_text, roles))
        ):
            raise Unauthorized(
                f"The token's {self.roles_claim!r} claim must list at most {MAX_ROLES} short "
                "strings."
            )
        return Identity(
            user=user,
            org=org,
            roles=frozenset(roles),
            via=via,
            expires_at=float(claims["exp"]),
            claims=self._mapped(claims),
        )

    def _mapped(self, claims: Mapping[str, Any]) -> dict[str, Any]:
        """The claims ``GATEWAY_JWT_CLAIMS`` names that the token has, bounded as org and roles
        are: they reach tools, and may reach logs and the audit from there."""
        mapped: dict[str, Any] = {}
        for name in self.mapped_claims:
            value = claim(claims, name)
            if value is None:
                continue
            scalar = isinstance(value, bool | int | float) or _short_text(value)
            listed = (
                isinstance(value, list) and len(value) <= MAX_ROLES and all(map(_short_text, value))
            )
            if not (scalar or listed):
                raise Unauthorized(
                    f"The token's {name!r} claim must be a number, a short string or a list of "
                    f"at most {MAX_ROLES} short strings."
                )
            mapped[name] = value
        return mapped


def claim(claims: Mapping[str, Any], name: str) -> Any:
    """A claim by name, or by a dotted path into nested objects when no claim has the name."""
    if name in claims:
        return claims[name]
    value: Any = claims
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _short_text(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_CLAIM_CHARS and value.isprintable()


def _names(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()]


# --- settings -> key source ----------------------------------------------------------------


def key_source(settings: Settings) -> tuple[KeySource, tuple[str, ...]]:
    """The configured key and the algorithms it may check; AuthSettingsError if unusable."""
    given = [name for name in _KEY_SETTINGS if getattr(settings, name)]
    if not given:
        raise AuthSettingsError(
            "GATEWAY_AUTH=jwt needs a key to check tokens with: set GATEWAY_JWT_SECRET, "
            "GATEWAY_JWT_PUBLIC_KEY, GATEWAY_JWT_JWKS_URL or GATEWAY_JWT_JWKS_FILE."
        )
    if len(given) > 1:
        names = " and ".join(f"GATEWAY_{name.upper()}" for name in given)
        raise AuthSettingsError(f"GATEWAY_AUTH=jwt takes one key source, not {names}.")
    requested = tuple(_names(settings.jwt_algorithms))
    if any(alg.lower() == "none" for alg in requested):
        raise AuthSettingsError(
            "GATEWAY_JWT_ALGORITHMS may not include 'none': unsigned tokens are never accepted."
        )
    unknown = [alg for alg in requested if alg not in HMAC + ASYMMETRIC]
    if unknown:
        raise AuthSettingsError(
            f"GATEWAY_JWT_ALGORITHMS names {', '.join(unknown)}; known are "
            f"{', '.join(HMAC + ASYMMETRIC)}."
        )
    if settings.jwt_secret:
        return _secret(settings.jwt_secret, requested or ("HS256",))
    if any(alg in HMAC for alg in requested):
        raise AuthSettingsError(
            "HMAC algorithms (HS256...) need GATEWAY_JWT_SECRET: checked with a public key, "
            "anyone holding that key could sign tokens."
        )
    if settings.jwt_public_key:
        return _public_key(settings.jwt_public_key, requested)
    algorithms = requested or ("RS256", "ES256")
    if settings.jwt_jwks_file:
        return _key_set_file(settings.jwt_jwks_file), algorithms
    try:
        return KeySetUrl(settings.jwt_jwks_url, settings.jwt_jwks_cache_seconds), algorithms
    except jwt.PyJWKClientError:
        raise AuthSettingsError(
            "GATEWAY_JWT_JWKS_URL must be an http(s) URL and GATEWAY_JWT_JWKS_CACHE_SECONDS "
            "more than 0."
        ) from None


def _secret(secret: str, algorithms: Sequence[str]) -> tuple[KeySource, tuple[str, ...]]:
    if any(alg not in HMAC for alg in algorithms):
        raise AuthSettingsError(
            "GATEWAY_JWT_SECRET checks only HS256, HS384 or HS512 tokens; for RS256/ES256 set "
            "GATEWAY_JWT_PUBLIC_KEY or a JWKS instead."
        )
    needed = max(SECRET_BYTES[alg] for alg in algorithms)
    if len(secret.encode()) < needed:
        raise AuthSettingsError(
            f"GATEWAY_JWT_SECRET must be at least {needed} bytes for {', '.join(algorithms)}; "
            "a short secret can be guessed."
        )
    return Secret(secret.encode()), tuple(algorithms)


def _public_key(value: str, requested: tuple[str, ...]) -> tuple[KeySource, tuple[str, ...]]:
    try:
        pem = (
            value.encode() if value.lstrip().startswith("-----BEGIN") else Path(value).read_bytes()
        )
        key = load_pem_public_key(pem)
    except OSError as error:
        raise AuthSettingsError(
            f"GATEWAY_JWT_PUBLIC_KEY names a file that cannot be read ({error.strerror})."
        ) from None
    except ValueError:
        raise AuthSettingsError(
            "GATEWAY_JWT_PUBLIC_KEY is not a PEM public key (give the public key, never the "
            "private one)."
        ) from None
    family: tuple[str, ...]
    if isinstance(key, rsa.RSAPublicKey):
        family, default = RSA, "RS256"
    elif isinstance(key, ec.EllipticCurvePublicKey):
        family = EC
        default = {"secp384r1": "ES384", "secp521r1": "ES512"}.get(key.curve.name, "ES256")
    elif isinstance(key, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey):
        family, default = OKP, "EdDSA"
    else:
        raise AuthSettingsError("GATEWAY_JWT_PUBLIC_KEY must be an RSA, EC or Ed25519 key.")
    algorithms = requested or (default,)
    wrong = [alg for alg in algorithms if alg not in family]
    if wrong:
        raise AuthSettingsError(
            f"GATEWAY_JWT_PUBLIC_KEY cannot check {', '.join(wrong)} tokens; it takes "
            f"{', '.join(family)}."
        )
    return PublicKey(key), algorithms


def _key_set_file(path: str) -> KeySet:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        key_set = jwt.PyJWKSet.from_dict(data)
    except OSError as error:
        raise AuthSettingsError(
            f"GATEWAY_JWT_JWKS_FILE {path} cannot be read ({error.strerror})."
        ) from None
    except (ValueError, jwt.PyJWTError):
        raise AuthSettingsError(
            f"GATEWAY_JWT_JWKS_FILE {path} is not a JWKS with usable public keys."
        ) from None
    keys = tuple(key for key in key_set.keys if key.public_key_use in ("sig", None))
    if not keys:
        raise AuthSettingsError(f"GATEWAY_JWT_JWKS_FILE {path} holds no signing keys.")
    return KeySet(keys)
