"""Accounts, sessions and tokens. Keyword-only functions; the only place auth queries are written."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.audit import service as audit_service
from agentloft.auth.models import ApiToken, AuthSession, User
from agentloft.auth.schemas import TokenCreated, UserCreate, UserUpdate
from agentloft.core.crypto import new_token, token_hash
from agentloft.core.db import one_or_404, rows_matched, utcnow
from agentloft.core.errors import AppError, Conflict, Forbidden, Invalid, NotFound, Unauthorized, problem
from agentloft.core.schemas import PageParams
from agentloft.system.models import AppSetting

# The ``app_settings`` key the first account's sign-up writes (see ``signup``).
FIRST_ACCOUNT = "first_account"

_hasher = PasswordHasher()
# Verified against when the username is unknown, so timing does not reveal which usernames exist.
_DUMMY_HASH = _hasher.hash(secrets.token_urlsafe(16))


# Niceness of the hashing threads: on a busy machine the event loop's thread is served first, so sign-ins
# wait instead of every other request (bench/login_flood.py: /me p95 72 ms during a flood at nice 0, 21 ms
# at 10). Not 19: with the machine saturated by other processes, sign-ins would then all but stop.
HASHING_NICENESS = 10


def _lower_priority() -> None:
    """Lower this hashing thread's CPU priority (Linux schedules threads one by one)."""
    # Elsewhere (no setpriority, or not allowed) the thread keeps its priority.
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), HASHING_NICENESS)


# Argon2 costs ~50-200 ms of CPU and 64 MiB per hash by design. On the event loop, 20 parallel sign-ins
# held every other request for their sum (/api/auth/me went from 3 ms to 450 ms); here they run on their
# own lower-priority threads (argon2 releases the GIL): one fewer than the cores so the loop keeps one to
# itself, and at most four, which bounds the memory a flood of sign-ins can take.
_HASHING = ThreadPoolExecutor(
    max_workers=max(1, min(4, (os.cpu_count() or 2) - 1)),
    thread_name_prefix="argon2",
    initializer=_lower_priority,
)


def _hash_now(password: str) -> str:
    return _hasher.hash(password)


def _verify_now(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


async def hash_password(*, password: str) -> str:
    """The password's Argon2 hash, computed off the event loop."""
    return await asyncio.get_running_loop().run_in_executor(_HASHING, _hash_now, password)


async def verify_password(*, password_hash: str, password: str) -> bool:
    """Whether ``password`` matches ``password_hash`` (False for a malformed hash), off the event loop."""
    return await asyncio.get_running_loop().run_in_executor(_HASHING, _verify_now, password_hash, password)


async def count_users(*, db: AsyncSession) -> int:
    return int((await db.execute(select(func.count(User.id)))).scalar_one())


async def get_user_by_username(*, db: AsyncSession, username: str) -> User | None:
    stmt = select(User).where(func.lower(User.username) == username.lower())
    return (await db.execute(stmt)).scalar_one_or_none()


async def create_user(*, db: AsyncSession, data: UserCreate) -> User:
    if await get_user_by_username(db=db, username=data.username):
        raise Conflict(f"username '{data.username}' is taken", code="username_taken")
    user = User(username=data.username, password_hash=await hash_password(password=data.password), role=data.role)
    db.add(user)
    try:
        await db.flush()
    except IntegrityError as exc:
        raise Conflict(f"username '{data.username}' is taken", code="username_taken") from exc
    return user


def _signup_closed() -> Forbidden:
    return Forbidden("sign-up is closed; ask an administrator for an account", code="signup_closed")


async def signup(*, db: AsyncSession, username: str, password: str, signup_open: bool) -> User:
    """The first account on a fresh install becomes admin; later ones need sign-up to be open.

    Parallel sign-ups on a fresh install all counted no accounts and all became admins, sign-up closed or
    not. So the first account also writes the ``first_account`` row: its primary key lets one transaction
    commit it, and the others fail and are refused like any sign-up while sign-up is closed."""
    first = await count_users(db=db) == 0
    if not first and not signup_open:
        raise _signup_closed()
    role = "admin" if first else "user"
    user = await create_user(db=db, data=UserCreate(username=username, password=password, role=role))
    if first:
        db.add(AppSetting(key=FIRST_ACCOUNT, value=user.id))
        try:
            await db.flush()
        except IntegrityError as exc:
            raise _signup_closed() from exc
    return user


async def authenticate(*, db: AsyncSession, username: str, password: str) -> User:
    user = await get_user_by_username(db=db, username=username)
    if user is None:
        await verify_password(password_hash=_DUMMY_HASH, password=password)
        raise Unauthorized("wrong username or password", code="invalid_credentials")
    if not await verify_password(password_hash=user.password_hash, password=password):
        raise Unauthorized("wrong username or password", code="invalid_credentials")
    if user.disabled:
        raise Forbidden("this account is disabled", code="account_disabled")
    return user


async def start_session(*, db: AsyncSession, user: User, days: int) -> str:
    token = secrets.token_urlsafe(32)
    db.add(
        AuthSession(user_id=user.id, token_hash=token_hash(token), expires_at=utcnow() + timedelta(days=days))
    )
    await db.flush()
    return token


async def end_session(*, db: AsyncSession, token: str) -> User | None:
    """Sign the browser with this session token out; whose session it was (None: no such session)."""
    owner = select(User).join(AuthSession, AuthSession.user_id == User.id).where(
        AuthSession.token_hash == token_hash(token))
    user = (await db.execute(owner)).scalar_one_or_none()
    if user is not None:
        await db.execute(delete(AuthSession).where(AuthSession.token_hash == token_hash(token)))
    return user


# --- the audit trail of signing in and out -------------------------------------------------------------
# Every way of signing in (a password, an identity provider) records through these two, so the trail
# words them alike: ``method`` says which way.


async def record_sign_in(*, db: AsyncSession, user: User, ip: str | None, method: str) -> None:
    """``auth.sign_in``, in the transaction that starts the session (no session without its event)."""
    await audit_service.record(db=db, type="auth.sign_in", actor=audit_service.Actor(user.id, user.username, ip),
                               target=f"user:{user.id}", detail={"method": method})


async def record_sign_in_failure(*, db: AsyncSession, username: str | None, reason: str, ip: str | None,
                                 method: str) -> None:
    """``auth.sign_in_failed``: the username tried (whether or not it exists; None when a provider refused
    before naming anyone), why, from where. Written by the caller in a transaction of its own, since the
    failed attempt's is rolled back."""
    await audit_service.record(db=db, type="auth.sign_in_failed", actor=audit_service.Actor(ip=ip),
                               target=f"username:{username[:200]}" if username else None,
                               detail={"username": username, "reason": reason, "method": method})


async def record_sign_out(*, db: AsyncSession, user: User, ip: str | None) -> None:
    await audit_service.record(db=db, type="auth.sign_out", actor=audit_service.Actor(user.id, user.username, ip),
                               target=f"user:{user.id}", detail={})


async def end_user_sessions(*, db: AsyncSession, user_id: int) -> None:
    """Sign every browser of the account out at once (API tokens stay; they are revoked one by one)."""
    await get_user(db=db, user_id=user_id)
    await db.execute(delete(AuthSession).where(AuthSession.user_id == user_id))


async def session_user(*, db: AsyncSession, token: str) -> tuple[User, datetime] | None:
    """The enabled account a live session cookie belongs to, with the session's expiry (callers that keep
    the answer check the expiry again when they reuse it)."""
    stmt = (
        select(User, AuthSession.expires_at)
        .join(AuthSession, AuthSession.user_id == User.id)
        .where(AuthSession.token_hash == token_hash(token), AuthSession.expires_at > utcnow())
    )
    row = (await db.execute(stmt)).first()
    if row is None or row[0].disabled:
        return None
    return row[0], row[1]


TOKEN_USE_INTERVAL = timedelta(minutes=1)
"""How stale a token's ``last_used_at`` may be: each use is not a write, one a minute per token is."""


@dataclass(frozen=True)
class TokenOwner:
    """Whose an API token is, and when its use was last recorded (``record_token_use``)."""

    user: User
    token_id: int
    last_used_at: datetime | None


async def api_token_owner(*, db: AsyncSession, token_hash: str) -> TokenOwner | None:
    """The enabled account the token with this hash (``core.crypto.token_hash``) belongs to. One indexed
    read; writes nothing (callers keep the answer: ``auth.dependencies``)."""
    stmt = select(ApiToken.id, ApiToken.last_used_at, User).join(User, User.id == ApiToken.user_id).where(
        ApiToken.token_hash == token_hash
    )
    row = (await db.execute(stmt)).first()
    if row is None or row[2].disabled:
        return None
    return TokenOwner(user=row[2], token_id=row[0], last_used_at=row[1])


async def record_token_use(*, db: AsyncSession, token_id: int, now: datetime) -> None:
    """Set the token's ``last_used_at`` to ``now`` unless it was set less than ``TOKEN_USE_INTERVAL``
    ago: conditional in SQL, so several processes using one token still write it once a minute."""
    stale = or_(ApiToken.last_used_at.is_(None), ApiToken.last_used_at < now - TOKEN_USE_INTERVAL)
    await db.execute(update(ApiToken).where(ApiToken.id == token_id, stale).values(last_used_at=now))


async def create_api_token(*, db: AsyncSession, user_id: int, name: str) -> TokenCreated:
    secret = new_token("alt")
    row = ApiToken(user_id=user_id, name=name, token_hash=token_hash(secret))
    db.add(row)
    await db.flush()
    return TokenCreated(id=row.id, name=row.name, token=secret)


async def list_api_tokens(*, db: AsyncSession, user_id: int) -> list[ApiToken]:
    stmt = select(ApiToken).where(ApiToken.user_id == user_id).order_by(ApiToken.id.desc())
    return list((await db.execute(stmt)).scalars())


async def delete_api_token(*, db: AsyncSession, user_id: int, token_id: int) -> None:
    matched = await rows_matched(db, delete(ApiToken).where(ApiToken.id == token_id, ApiToken.user_id == user_id))
    if matched == 0:
        raise NotFound("token not found", code="token_not_found")


async def list_users(*, db: AsyncSession, page: PageParams) -> tuple[list[User], int]:
    total = await count_users(db=db)
    stmt = select(User).order_by(User.id).offset(page.offset).limit(page.page_size)
    return list((await db.execute(stmt)).scalars()), total


async def get_user(*, db: AsyncSession, user_id: int) -> User:
    return await one_or_404(db, select(User).where(User.id == user_id),
                            NotFound("user not found", code="user_not_found"))


async def _active_admins(*, db: AsyncSession) -> int:
    stmt = select(func.count(User.id)).where(User.role == "admin", User.disabled.is_(False))
    return int((await db.execute(stmt)).scalar_one())


async def update_user(*, db: AsyncSession, user_id: int, data: UserUpdate, keep_session: str | None = None) -> User:
    """Change a role, a password (signing out every browser but ``keep_session``) or disable an account,
    but never leave the instance without an active admin."""
    user = await get_user(db=db, user_id=user_id)
    loses_admin = user.is_admin and not user.disabled and (
        (data.role is not None and data.role != "admin") or data.disabled is True
    )
    if loses_admin and await _active_admins(db=db) <= 1:
        raise AppError("the last active admin cannot be demoted or disabled", code="last_admin", status=409)
    if data.role is not None:
        user.role = data.role
    if data.email is not None:
        user.email = data.email
    if data.disabled is not None:
        user.disabled = data.disabled
        if data.disabled:
            await db.execute(delete(AuthSession).where(AuthSession.user_id == user.id))
    if data.password is not None:
        await set_password(db=db, user_id=user.id, password=data.password, keep_session=keep_session)
    await db.flush()
    return user


async def set_password(*, db: AsyncSession, user_id: int, password: str, keep_session: str | None = None) -> None:
    """Give the account a new password and sign out its browsers, all but ``keep_session`` (the cookie of
    the person who changed it): whoever knew the old password must not stay signed in with it. API tokens
    stay; they are revoked one by one on the tokens page."""
    password_hash = await hash_password(password=password)
    await db.execute(update(User).where(User.id == user_id).values(password_hash=password_hash))
    others = delete(AuthSession).where(AuthSession.user_id == user_id)
    if keep_session is not None:
        others = others.where(AuthSession.token_hash != token_hash(keep_session))
    await db.execute(others)


async def change_own_password(
    *, db: AsyncSession, user_id: int, current: str, new: str, keep_session: str | None
) -> None:
    """A signed-in person's own change: the current password first, as a borrowed session must not be
    enough to lock the owner out."""
    user = await get_user(db=db, user_id=user_id)
    if not await verify_password(password_hash=user.password_hash, password=current):
        raise Invalid("the current password is wrong", code="wrong_password",
                      fields={"currentPassword": problem("wrong_password", "the current password is wrong")})
    await set_password(db=db, user_id=user_id, password=new, keep_session=keep_session)
