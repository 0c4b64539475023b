"""Sign-in and sign-up pages. The forms post JSON to /api/auth/*; these routes only render."""

from __future__ import annotations

from fastapi import Request, Response
from fastapi.responses import RedirectResponse

from agentloft.auth import service as auth_service
from agentloft.auth.dependencies import OptionalUser
from agentloft.core.dependencies import DbSession, Rt
from agentloft.identity import service as identity_service
from agentloft.identity.schemas import SignInButton
from agentloft.system import service as system_service
from agentloft.web.deps import page_router, safe_next
from agentloft.web.templating import render_page

router = page_router()


# The codes a failed sign-in through an identity provider comes back with (``/login?error=<code>``); any
# other value is ignored, so a link cannot put words of its own on the page.
SIGN_IN_ERRORS = frozenset({
    "sso_unknown_provider", "sso_provider_unreachable", "sso_provider_error", "sso_state_invalid",
    "sso_code_rejected", "sso_token_invalid", "sso_nonce_invalid", "sso_domain_not_allowed",
    "sso_account_creation_off", "sso_account_conflict", "account_disabled",
})


@router.get("/login")
async def login_page(
    request: Request, user: OptionalUser, rt: Rt, db: DbSession, next: str | None = None,
    error: str | None = None,
) -> Response:
    """``signup_open``: "No account? Create one" is offered only where it leads somewhere; behind it
    a closed instance has nothing but "sign-up is closed". A button per enabled OIDC provider."""
    target = safe_next(next)
    if user is not None:
        return RedirectResponse(target, status_code=303)
    no_accounts = await auth_service.count_users(db=db) == 0
    instance = await system_service.get_settings(db=db, settings=rt.settings)
    providers = [SignInButton(slug=p.slug, name=p.name)
                 for p in await identity_service.list_providers(db=db, enabled_only=True, kind="oidc")]
    return render_page(request, "auth/login.html", next=target, no_accounts=no_accounts,
                       signup_open=not no_accounts and instance.signup_open, providers=providers,
                       sign_in_error=error if error in SIGN_IN_ERRORS else None)


@router.get("/signup")
async def signup_page(request: Request, user: OptionalUser, rt: Rt, db: DbSession) -> Response:
    if user is not None:
        return RedirectResponse("/", status_code=303)
    first = await auth_service.count_users(db=db) == 0
    instance = await system_service.get_settings(db=db, settings=rt.settings)
    return render_page(
        request, "auth/signup.html", first_account=first, signup_open=first or instance.signup_open
    )
