"""HTTP for sign-up, sign-in, tokens and user administration."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from agentloft.auth import service
from agentloft.auth.dependencies import (
    SESSION_COOKIE,
    AdminUser,
    CurrentUser,
    SessionUser,
    client_ip,
    require_session,
)
from agentloft.auth.models import User
from agentloft.auth.schemas import (
    Credentials,
    LoginInput,
    Me,
    PasswordChange,
    TokenCreate,
    TokenCreated,
    TokenRead,
    UserCreate,
    UserRead,
    UserUpdate,
)
from agentloft.core.dependencies import DbSession, Paging, Rt
from agentloft.core.errors import AppError, TooMany, Unauthorized
from agentloft.core.schemas import DbInt, Page
from agentloft.groups import service as groups_service
from agentloft.identity import ldap
from agentloft.identity import service as identity_service
from agentloft.system import service as system_service

router = APIRouter(prefix="/api/auth", tags=["auth"])
admin_router = APIRouter(prefix="/api/admin/users", tags=["admin"])


def _me(user: User) -> Me:
    return Me(id=user.id, username=user.username, role=user.role, auth_provider=user.auth_provider or "local")


async def sign_in_browser(request: Request, response: Response, rt: Rt, db: DbSession, user: User,
                   method: str = "password") -> None:
    """Start a session for ``user``, record it (``auth.sign_in``, with ``method``: how they proved who they are)
    in the same transaction, and hand its cookie to the browser (every way of signing in ends here)."""
    token = await service.start_session(db=db, user=user, days=rt.settings.session_days)
    await service.record_sign_in(db=db, user=user, ip=client_ip(request), method=method)
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=rt.settings.session_days * 86400,
        httponly=True,
        samesite="lax",
        secure=rt.settings.env == "production",
        path="/",
    )


@router.post("/signup", response_model=Me, status_code=201)
async def signup(body: Credentials, request: Request, response: Response, rt: Rt, db: DbSession) -> Me:
    """Create an account and sign in. The first account becomes admin; later ones need sign-up open."""
    instance = await system_service.get_settings(db=db, settings=rt.settings)
    user = await service.signup(
        db=db, username=body.username, password=body.password, signup_open=instance.signup_open
    )
    await sign_in_browser(request, response, rt, db, user, method="signup")
    return _me(user)


@router.post("/login", response_model=Me)
async def login(body: LoginInput, request: Request, response: Response, rt: Rt, db: DbSession) -> Me:
    """Sign in with a local account or an LDAP provider's. Every attempt is counted by the throttle before
    the password is checked (``auth.throttle``); a refused one is 429 ``login_throttled`` with ``Retry-After``.
    A wrong password or a disabled account is recorded (``auth.sign_in_failed``); a throttled attempt is
    not, as no password was checked and a flood must not be able to fill the trail. An attempt no
    directory could check (503 ``directory_unavailable``) is given back to the account's count unless the
    name is a local account whose own password was checked and found wrong."""
    await _count_attempt(request, rt, body.username)
    try:
        user = await _password_user(rt, db, body.username, body.password)
    except AppError as exc:
        await _failed(request, rt, body.username, exc.code)
        raise
    await rt.throttle.succeeded(username=body.username)
    local = (user.auth_provider or "local") == "local"
    await sign_in_browser(request, response, rt, db, user, method="password" if local else f"ldap:{user.auth_provider}")
    return _me(user)


async def _password_user(rt: Rt, db: DbSession, username: str, password: str) -> User:
    """The account a username and password sign in: a local account's first, then each enabled LDAP
    provider's (``identity.ldap``); the local refusal when no directory knows the pair either."""
    try:
        return await service.authenticate(db=db, username=username, password=password)
    except Unauthorized:
        try:
            user = await ldap.sign_in_any(db=db, box=rt.box, allow=await system_service.internal_allow_list(rt=rt),
                                          username=username, password=password)
        except ldap.DirectoryUnavailable:
            if not await identity_service.has_own_password(db=db, username=username):
                await rt.throttle.not_checked(username=username)
            raise
        if user is None:
            raise
        return user


async def _failed(request: Request, rt: Rt, username: str, reason: str) -> None:
    """Record a refused sign-in in a transaction of its own (the request's is rolled back)."""
    async with rt.db.session() as db:
        await service.record_sign_in_failure(db=db, username=username, reason=reason, ip=client_ip(request),
                                             method="password")


async def _count_attempt(request: Request, rt: Rt, username: str) -> None:
    """Count one password guess for ``username`` with the sign-in throttle; 429 when it says no."""
    address = request.client.host if request.client else "unknown"
    decision = await rt.throttle.attempt(username=username, address=address)
    if not decision.allowed:
        wait = decision.retry_after
        raise TooMany(
            f"too many sign-in attempts; try again in {wait} s",
            code="login_throttled",
            headers={"Retry-After": str(wait)},
        )


@router.post("/password", status_code=204)
async def change_password(
    body: PasswordChange, request: Request, user: SessionUser, rt: Rt, db: DbSession
) -> Response:
    """Change one's own password, from a signed-in browser only (403 ``session_required`` with an API
    token). The current one is checked and counted like a sign-in attempt; every other browser signed in
    to the account is signed out (API tokens stay)."""
    await _count_attempt(request, rt, user.username)
    await service.change_own_password(
        db=db, user_id=user.id, current=body.current_password, new=body.new_password,
        keep_session=request.cookies.get(SESSION_COOKIE),
    )
    await rt.throttle.succeeded(username=user.username)
    return Response(status_code=204)


@router.post("/logout", status_code=204)
async def logout(request: Request, response: Response, db: DbSession) -> Response:
    """End the browser's session, recorded (``auth.sign_out``) with it; signing out of no session is not."""
    if (token := request.cookies.get(SESSION_COOKIE)) and (user := await service.end_session(db=db, token=token)):
        await service.record_sign_out(db=db, user=user, ip=client_ip(request))
    response.status_code = 204
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


@router.get("/me", response_model=Me)
async def me(user: CurrentUser) -> Me:
    return _me(user)


@router.post("/tokens", response_model=TokenCreated, status_code=201)
async def create_token(body: TokenCreate, user: SessionUser, db: DbSession) -> TokenCreated:
    """A new API token, from a signed-in browser only: a token cannot create tokens (403
    ``session_required``), so revoking one is never outlived by tokens it made."""
    return await service.create_api_token(db=db, user_id=user.id, name=body.name)


@router.get("/tokens", response_model=Page[TokenRead])
async def list_tokens(user: CurrentUser, db: DbSession) -> Page[TokenRead]:
    """Every token of the caller, as one page of the seeds' list shape (a person keeps a handful)."""
    tokens = await service.list_api_tokens(db=db, user_id=user.id)
    return Page[TokenRead].whole([TokenRead.model_validate(t) for t in tokens])


@router.delete("/tokens/{token_id}", status_code=204)
async def delete_token(token_id: DbInt, user: CurrentUser, db: DbSession) -> Response:
    await service.delete_api_token(db=db, user_id=user.id, token_id=token_id)
    return Response(status_code=204)


@admin_router.post("", response_model=UserRead, status_code=201)
async def admin_create_user(body: UserCreate, _: AdminUser, db: DbSession) -> UserRead:
    return UserRead.model_validate(await service.create_user(db=db, data=body))


@admin_router.get("", response_model=Page[UserRead])
async def admin_list_users(_: AdminUser, db: DbSession, paging: Paging) -> Page[UserRead]:
    users, total = await service.list_users(db=db, page=paging)
    groups = await groups_service.groups_of_users(db=db, user_ids=[u.id for u in users])
    items = [UserRead.model_validate(u).model_copy(update={"groups": groups[u.id]}) for u in users]
    return Page[UserRead].of(items, total, paging)


@admin_router.patch("/{user_id}", response_model=UserRead)
async def admin_update_user(
    user_id: DbInt, body: UserUpdate, request: Request, admin: AdminUser, db: DbSession
) -> UserRead:
    """A new ``password`` signs the account's browsers out; an admin setting their own keeps this one.
    Setting a password needs a signed-in browser, as changing one's own does (403 ``session_required``
    with an API token); roles and disabling do not."""
    if body.password is not None:
        require_session(request)
    own = request.cookies.get(SESSION_COOKIE) if user_id == admin.id else None
    return UserRead.model_validate(await service.update_user(db=db, user_id=user_id, data=body, keep_session=own))


@admin_router.post("/{user_id}/sessions/end", status_code=204)
async def admin_end_sessions(user_id: DbInt, _: AdminUser, db: DbSession) -> Response:
    """Sign the account out of every browser now (someone left, a laptop was lost); tokens stay."""
    await service.end_user_sessions(db=db, user_id=user_id)
    return Response(status_code=204)
