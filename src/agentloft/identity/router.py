"""HTTP for sign-in providers: the admin API (``/api/admin/auth-providers``) and the OIDC redirects
(``/auth/oidc/{slug}/login`` and ``/callback``).

A failed OIDC sign-in never answers with an error page of its own: the browser goes back to the sign-in
page with ``?error=<code>``, which words the code in the reader's language, and nothing written during
the failed attempt is kept.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Body, Request, Response
from fastapi.responses import RedirectResponse

from agentloft.auth import service as auth_service
from agentloft.auth.dependencies import AdminUser, client_ip
from agentloft.auth.router import sign_in_browser
from agentloft.core.dependencies import DbSession, Rt
from agentloft.core.public_url import public_base_url
from agentloft.core.schemas import DbInt, Page
from agentloft.identity import oidc, service
from agentloft.identity.schemas import LdapRead, OidcRead
from agentloft.identity.service import SignInRefused
from agentloft.system import service as system_service
from agentloft.web.deps import page_router, safe_next

admin_router = APIRouter(prefix="/api/admin/auth-providers", tags=["admin"])
router = page_router()

ProviderRead = OidcRead | LdapRead


@admin_router.get("", response_model=Page[ProviderRead])
async def list_providers(_: AdminUser, db: DbSession) -> Page[ProviderRead]:
    """Every provider, as one page of the seeds' list shape (an instance has a handful)."""
    rows = await service.list_providers(db=db)
    return Page[ProviderRead].whole([service.to_read(r) for r in rows])


@admin_router.post("", response_model=ProviderRead, status_code=201)
async def create_provider(
    _: AdminUser, rt: Rt, db: DbSession,
    body: dict[str, Any] = Body(..., description="An OIDC or an LDAP provider (see "
                                "``identity.schemas``: ``OidcCreate``, ``LdapCreate``)."),
) -> ProviderRead:
    return service.to_read(await service.create_provider(db=db, box=rt.box, body=body))


@admin_router.get("/{provider_id}", response_model=ProviderRead)
async def read_provider(provider_id: DbInt, _: AdminUser, db: DbSession) -> ProviderRead:
    return service.to_read(await service.get_provider(db=db, provider_id=provider_id))


@admin_router.put("/{provider_id}", response_model=ProviderRead)
async def update_provider(
    provider_id: DbInt, _: AdminUser, rt: Rt, db: DbSession, body: dict[str, Any] = Body(...)
) -> ProviderRead:
    """Any subset of the create body's fields; the rest, the secret included, keep their stored values."""
    row = await service.update_provider(db=db, box=rt.box, provider_id=provider_id, body=body)
    return service.to_read(row)


@admin_router.delete("/{provider_id}", status_code=204)
async def delete_provider(provider_id: DbInt, _: AdminUser, db: DbSession) -> Response:
    await service.delete_provider(db=db, provider_id=provider_id)
    return Response(status_code=204)


def _callback_url(request: Request, rt: Rt, slug: str) -> str:
    return f"{public_base_url(request, rt.settings)}/auth/oidc/{slug}/callback"


def _back_to_login(code: str, next_path: str) -> RedirectResponse:
    query = {"error": code, **({"next": next_path} if next_path != "/" else {})}
    resp = RedirectResponse(f"/login?{urlencode(query)}", status_code=303)
    resp.delete_cookie(oidc.FLOW_COOKIE, path=oidc.FLOW_PATH)
    return resp


@router.get("/auth/oidc/{slug}/login")
async def oidc_login(slug: str, request: Request, rt: Rt, db: DbSession, next: str | None = None) -> Response:
    """Send the browser to the provider, with state, nonce and a PKCE challenge kept in the flow cookie."""
    target = safe_next(next)
    try:
        provider = await service.enabled_provider(db=db, slug=slug, kind="oidc")
        url, flow = await oidc.begin(
            provider=provider, secret=service.secret_of(row=provider, box=rt.box),
            allow=await system_service.internal_allow_list(rt=rt), redirect_uri=_callback_url(request, rt, slug),
            next_path=target,
        )
    except SignInRefused as exc:
        return _back_to_login(exc.code, target)
    resp = RedirectResponse(url, status_code=303)
    resp.set_cookie(oidc.FLOW_COOKIE, flow.seal(rt.box), max_age=oidc.FLOW_TTL_S, httponly=True, samesite="lax",
                    secure=rt.settings.env == "production", path=oidc.FLOW_PATH)
    return resp


@router.get("/auth/oidc/{slug}/callback")
async def oidc_callback(slug: str, request: Request, rt: Rt, db: DbSession) -> Response:
    """Finish the flow: the provider's answer checked, the account found or made, the session started."""
    flow = oidc.Flow.open(rt.box, request.cookies.get(oidc.FLOW_COOKIE))
    target = flow.next if flow is not None else "/"
    try:
        provider = await service.enabled_provider(db=db, slug=slug, kind="oidc")
        person = await oidc.finish(
            provider=provider, secret=service.secret_of(row=provider, box=rt.box),
            allow=await system_service.internal_allow_list(rt=rt), redirect_uri=_callback_url(request, rt, slug),
            flow=flow, params=dict(request.query_params),
        )
        user = await service.sign_in_external(db=db, provider=provider, person=person)
    except SignInRefused as exc:
        await db.rollback()  # nothing of the refused sign-in is kept but its audit event, committed here
        await auth_service.record_sign_in_failure(db=db, username=None, reason=exc.code, ip=client_ip(request),
                                                  method=f"oidc:{slug}")
        return _back_to_login(exc.code, target)
    resp = RedirectResponse(safe_next(target), status_code=303)
    resp.delete_cookie(oidc.FLOW_COOKIE, path=oidc.FLOW_PATH)
    await sign_in_browser(request, resp, rt, db, user, method=f"oidc:{slug}")
    return resp
