"""OpenID Connect sign-in: the authorization code flow with state, nonce and PKCE (S256).

``begin`` gives the provider's authorization URL and the flow's secrets; those travel in a short-lived
cookie encrypted with the instance's key (``FLOW_COOKIE``, ten minutes, scoped to ``/auth/oidc/``), so any
worker can finish a flow another began, and nothing is stored for a browser that never returns. One flow
per browser at a time: beginning another replaces it.

``finish`` checks the state, exchanges the code (``client_secret_basic`` unless the discovery document
offers only ``client_secret_post``; no secret means a public client), verifies the id token's signature
against the provider's JWKS (an unknown ``kid`` fetches the keys again once: the provider rotated them)
and its ``iss``, ``aud``, ``exp`` and ``nonce``, then reads the userinfo endpoint when there is one
(claims there win; its ``sub`` must match). Discovery documents and key sets are kept for an hour per
process. Every call goes through the network guard (``core.netguard``): a provider on the inside of the
network needs its host in the allowed internal hosts. Every failure is ``SignInRefused``.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import httpx
import httpx2
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.httpx_client import AsyncOAuth2Client
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

from agentloft.core import netguard
from agentloft.core.crypto import SecretBox
from agentloft.identity.models import AuthProvider
from agentloft.identity.service import ExternalPerson, SignInRefused

FLOW_COOKIE = "agentloft_oidc"
FLOW_PATH = "/auth/oidc/"
FLOW_TTL_S = 600
CACHE_TTL_S = 3600.0
TIMEOUT_S = 15.0
MAX_BODY_BYTES = 1_000_000
LEEWAY_S = 60
SIGNING_ALGS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]

# issuer -> (fetched at, document); jwks_uri -> (fetched at, keys)
_discovery: dict[str, tuple[float, dict[str, Any]]] = {}
_keys: dict[str, tuple[float, KeySet]] = {}


@dataclass(frozen=True)
class Flow:
    """What the browser's flow cookie holds between the redirect to the provider and the callback."""

    slug: str
    state: str
    nonce: str
    verifier: str
    next: str

    def seal(self, box: SecretBox) -> str:
        return box.encrypt(json.dumps(self.__dict__))

    @classmethod
    def open(cls, box: SecretBox, sealed: str | None) -> Flow | None:
        if not sealed:
            return None
        try:
            return cls(**json.loads(box.decrypt(sealed, ttl=FLOW_TTL_S)))
        except (ValueError, TypeError):
            return None


def _refused(code: str, message: str) -> SignInRefused:
    return SignInRefused(message, code=code)


def _http(allow: netguard.AllowList) -> httpx.AsyncClient:
    transport = netguard.GuardedTransport(allow, max_body_bytes=MAX_BODY_BYTES)
    return httpx.AsyncClient(transport=transport, timeout=TIMEOUT_S, follow_redirects=False, trust_env=False,
                             headers={"User-Agent": netguard.USER_AGENT, "Accept": "application/json"})


async def _get_json(allow: netguard.AllowList, url: str, token: str | None = None) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        async with _http(allow) as client:
            resp = await client.get(url, headers=headers)
    except (netguard.NetError, httpx.HTTPError) as exc:
        raise _refused("sso_provider_unreachable", f"the sign-in provider cannot be reached: {exc}") from exc
    if resp.status_code != 200:
        raise _refused("sso_provider_error", f"the sign-in provider answered {resp.status_code} for {url}")
    try:
        body = resp.json()
    except ValueError as exc:
        raise _refused("sso_provider_error", f"the sign-in provider sent no JSON from {url}") from exc
    if not isinstance(body, dict):
        raise _refused("sso_provider_error", f"the sign-in provider sent no JSON object from {url}")
    return body


async def discover(*, issuer: str, allow: netguard.AllowList) -> dict[str, Any]:
    """The issuer's discovery document; the issuer is checked against the guard even when it is cached,
    so taking a host off the allowed internal hosts stops its sign-ins at once."""
    try:
        await netguard.check_url(httpx.URL(issuer), allow)
    except netguard.NetError as exc:
        raise _refused("sso_provider_unreachable", f"the sign-in provider cannot be reached: {exc}") from exc
    cached = _discovery.get(issuer)
    if cached and time.monotonic() - cached[0] < CACHE_TTL_S:
        return cached[1]
    doc = await _get_json(allow, f"{issuer}/.well-known/openid-configuration")
    missing = [k for k in ("authorization_endpoint", "token_endpoint", "jwks_uri") if not doc.get(k)]
    if missing or str(doc.get("issuer", "")).rstrip("/") != issuer:
        raise _refused("sso_provider_error", f"the discovery document of {issuer} is not usable")
    _discovery[issuer] = (time.monotonic(), doc)
    return doc


async def _key_set(jwks_uri: str, allow: netguard.AllowList, *, fresh: bool) -> KeySet:
    cached = _keys.get(jwks_uri)
    if cached and not fresh and time.monotonic() - cached[0] < CACHE_TTL_S:
        return cached[1]
    try:
        keys = KeySet.import_key_set(cast(Any, await _get_json(allow, jwks_uri)))
    except (JoseError, ValueError, TypeError) as exc:
        raise _refused("sso_provider_error", "the sign-in provider's keys cannot be read") from exc
    _keys[jwks_uri] = (time.monotonic(), keys)
    return keys


def _auth_method(doc: Mapping[str, Any], has_secret: bool) -> str:
    if not has_secret:
        return "none"
    offered = doc.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    return "client_secret_post" if "client_secret_basic" not in offered and "client_secret_post" in offered \
        else "client_secret_basic"


def _oauth_client(provider: AuthProvider, secret: str | None, doc: Mapping[str, Any], redirect_uri: str,
                  allow: netguard.AllowList) -> AsyncOAuth2Client:
    # authlib's client is an httpx2 client where httpx2 is installed (it is: the MCP SDK needs it), else httpx.
    transport: Any = (netguard.GuardedTransport2(allow, max_body_bytes=MAX_BODY_BYTES)
                      if issubclass(AsyncOAuth2Client, httpx2.AsyncClient)
                      else netguard.GuardedTransport(allow, max_body_bytes=MAX_BODY_BYTES))
    return AsyncOAuth2Client(
        client_id=provider.config["clientId"], client_secret=secret,
        token_endpoint_auth_method=_auth_method(doc, bool(secret)), scope=" ".join(provider.config["scopes"]),
        redirect_uri=redirect_uri, code_challenge_method="S256", transport=transport, timeout=TIMEOUT_S,
        trust_env=False,
    )


async def begin(*, provider: AuthProvider, secret: str | None, allow: netguard.AllowList, redirect_uri: str,
                next_path: str) -> tuple[str, Flow]:
    """The provider's authorization URL to send the browser to, and the flow to keep in its cookie."""
    doc = await discover(issuer=provider.config["issuer"], allow=allow)
    flow = Flow(slug=provider.slug, state=secrets.token_urlsafe(24), nonce=secrets.token_urlsafe(24),
                verifier=secrets.token_urlsafe(48), next=next_path)
    client = _oauth_client(provider, secret, doc, redirect_uri, allow)
    try:
        url, _ = client.create_authorization_url(doc["authorization_endpoint"], state=flow.state,
                                                 nonce=flow.nonce, code_verifier=flow.verifier)
    finally:
        await cast(httpx2.AsyncClient, client).aclose()  # an httpx2 client; authlib is untyped
    return url, flow


async def _verified_claims(token: str, *, doc: Mapping[str, Any], provider: AuthProvider, nonce: str,
                           allow: netguard.AllowList) -> dict[str, Any]:
    try:
        decoded = jwt.decode(token, await _key_set(doc["jwks_uri"], allow, fresh=False), algorithms=SIGNING_ALGS)
    except InvalidKeyIdError:
        keys = await _key_set(doc["jwks_uri"], allow, fresh=True)
        try:
            decoded = jwt.decode(token, keys, algorithms=SIGNING_ALGS)
        except JoseError as exc:
            raise _refused("sso_token_invalid", f"the id token's signature is not valid: {exc}") from exc
    except JoseError as exc:
        raise _refused("sso_token_invalid", f"the id token's signature is not valid: {exc}") from exc
    registry = jwt.JWTClaimsRegistry(
        leeway=LEEWAY_S, iss={"essential": True, "value": doc["issuer"]}, sub={"essential": True},
        aud={"essential": True, "value": provider.config["clientId"]}, exp={"essential": True},
    )
    try:
        registry.validate(decoded.claims)
    except JoseError as exc:
        raise _refused("sso_token_invalid", f"the id token was refused: {exc}") from exc
    if not secrets.compare_digest(str(decoded.claims.get("nonce", "")), nonce):
        raise _refused("sso_nonce_invalid", "the id token's nonce is not the one this sign-in sent")
    return dict(decoded.claims)


async def _exchange(client: AsyncOAuth2Client, doc: Mapping[str, Any], code: str, verifier: str
                    ) -> dict[str, Any]:
    try:
        token = await client.fetch_token(doc["token_endpoint"], grant_type="authorization_code", code=code,
                                         code_verifier=verifier)
    except (AuthlibBaseError, ValueError) as exc:
        raise _refused("sso_code_rejected", f"the sign-in provider refused the code: {exc}") from exc
    except (netguard.NetError, httpx.HTTPError, httpx2.HTTPError) as exc:
        raise _refused("sso_provider_unreachable", f"the sign-in provider cannot be reached: {exc}") from exc
    return dict(token)


def _groups(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int)]
    return []


def _person(provider: AuthProvider, claims: Mapping[str, Any]) -> ExternalPerson:
    cfg = provider.config
    email = claims.get(cfg.get("emailClaim", "email"))
    email = email if isinstance(email, str) and "@" in email else None
    username = claims.get(cfg.get("usernameClaim", "preferred_username")) or email or claims["sub"]
    return ExternalPerson(subject=str(claims["sub"]), username=str(username), email=email,
                          email_verified=claims.get("email_verified") is True,
                          groups=_groups(claims.get(cfg.get("groupsClaim", "groups"))))


def check_domain(provider: AuthProvider, person: ExternalPerson) -> None:
    """``allowedDomains`` non-empty: only people with an email in one of them (subdomains not included)."""
    allowed = [d.lower().lstrip("@") for d in provider.config.get("allowedDomains", [])]
    if not allowed:
        return
    domain = person.email.rsplit("@", 1)[1].lower() if person.email else ""
    if domain not in allowed:
        raise _refused("sso_domain_not_allowed", f"accounts of {domain or 'no email'} may not sign in here")


async def finish(*, provider: AuthProvider, secret: str | None, allow: netguard.AllowList, redirect_uri: str,
                 flow: Flow | None, params: Mapping[str, str]) -> ExternalPerson:
    """The person the callback's ``params`` (``code``, ``state`` or ``error``) sign in, all checked."""
    if params.get("error"):
        detail = params.get("error_description") or params["error"]
        raise _refused("sso_provider_error", f"the sign-in provider refused: {detail}")
    state = params.get("state", "")
    if flow is None or flow.slug != provider.slug or not state or not secrets.compare_digest(state, flow.state):
        raise _refused("sso_state_invalid", "this sign-in expired or did not start here; try again")
    if not params.get("code"):
        raise _refused("sso_code_rejected", "the sign-in provider sent no code")
    doc = await discover(issuer=provider.config["issuer"], allow=allow)
    client = _oauth_client(provider, secret, doc, redirect_uri, allow)
    try:
        token = await _exchange(client, doc, params["code"], flow.verifier)
    finally:
        await cast(httpx2.AsyncClient, client).aclose()  # an httpx2 client; authlib is untyped
    if not isinstance(token.get("id_token"), str):
        raise _refused("sso_token_invalid", "the sign-in provider sent no id token")
    claims = await _verified_claims(token["id_token"], doc=doc, provider=provider, nonce=flow.nonce, allow=allow)
    if doc.get("userinfo_endpoint") and isinstance(token.get("access_token"), str):
        info = await _get_json(allow, doc["userinfo_endpoint"], token["access_token"])
        if str(info.get("sub")) == str(claims["sub"]):
            claims = {**claims, **info}
    person = _person(provider, claims)
    check_domain(provider, person)
    return person
