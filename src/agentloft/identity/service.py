"""Sign-in providers (CRUD) and the one place a provider's answer becomes a signed-in account.

``sign_in_external`` is where every provider sign-in ends: it either returns the account to start a
session for or raises ``SignInRefused`` (a stable code the sign-in page words). Decisions:

- An account is found by (provider, subject). Failing that, an existing account with the same email is
  linked only when the provider says the email is verified *and* the provider's ``linkByEmail`` is on
  (off by default: with it on, whoever controls the provider controls every account with a matching
  email, admins included). Otherwise a new account is made when ``autoCreateUsers`` is on; its username
  is the provider's (cleaned to the local username alphabet), with ``-2``, ``-3``, … when taken, and its
  password hash matches no password, so only its provider signs it in.
- A disabled account is refused, as on the password form.
- ``adminGroups`` non-empty: a member of one becomes admin; a non-member admin is demoted, unless that
  would leave no active admin (then they stay admin). Empty: roles are the admins' to set by hand.
- The provider's groups are synced at every sign-in (``groups.service.sync_provider_groups``: the
  person joins and leaves that provider's groups, which are made when missing). A provider's slug is its
  groups' ``source``: renaming the slug renames the source; deleting the provider leaves its groups.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.auth.models import User
from agentloft.core.crypto import SecretBox
from agentloft.core.db import one_or_404
from agentloft.core.errors import AppError, Conflict, NotFound, invalid_field, invalid_from_pydantic
from agentloft.groups import service as groups_service
from agentloft.groups.models import Group
from agentloft.identity.models import AuthProvider, ProviderKind, UserIdentity
from agentloft.identity.schemas import (
    SECRET_FIELD,
    LdapCreate,
    LdapRead,
    OidcCreate,
    OidcRead,
)

# A password hash no password matches (argon2 refuses it as malformed): accounts a provider made.
NO_PASSWORD = "!external"
_COMMON = ("slug", "name", "kind", "enabled")


class SignInRefused(AppError):
    """A provider sign-in that ends without a session; ``code`` names why (``apiError.<code>``)."""

    status = 403
    code = "sso_refused"


@dataclass(frozen=True)
class ExternalPerson:
    """What a provider said about the person signing in."""

    subject: str
    username: str
    email: str | None = None
    email_verified: bool = False
    groups: list[str] = field(default_factory=list)


# --- the providers ---------------------------------------------------------------------------------------


def to_read(row: AuthProvider) -> OidcRead | LdapRead:
    body: dict[str, Any] = {**row.config, "id": row.id, "slug": row.slug, "name": row.name, "kind": row.kind,
                            "enabled": row.enabled, "hasSecret": row.secret_enc is not None}
    return OidcRead.model_validate(body) if row.kind == "oidc" else LdapRead.model_validate(body)


def secret_of(*, row: AuthProvider, box: SecretBox) -> str | None:
    return box.decrypt(row.secret_enc) if row.secret_enc else None


def _apply(row: AuthProvider, data: OidcCreate | LdapCreate, box: SecretBox, secret: str | None) -> None:
    dumped = data.model_dump(by_alias=True)
    secret_name = SECRET_FIELD[data.kind]
    row.slug, row.name, row.kind, row.enabled = data.slug, data.name, data.kind, data.enabled
    row.config = {k: v for k, v in dumped.items() if k not in (*_COMMON, secret_name)}
    if secret is not None:
        row.secret_enc = box.encrypt(secret) if secret else None


def _secret_in(data: OidcCreate | LdapCreate) -> str | None:
    return data.client_secret if isinstance(data, OidcCreate) else data.bind_password


async def _flush_slug(db: AsyncSession, slug: str) -> None:
    try:
        await db.flush()
    except IntegrityError as exc:
        raise Conflict(f"a provider with the slug '{slug}' exists", code="provider_slug_taken") from exc


async def _slug_free(db: AsyncSession, slug: str, keep_id: int | None = None) -> None:
    stmt = select(AuthProvider.id).where(AuthProvider.slug == slug)
    if keep_id is not None:
        stmt = stmt.where(AuthProvider.id != keep_id)
    if (await db.execute(stmt)).first() is not None:
        raise Conflict(f"a provider with the slug '{slug}' exists", code="provider_slug_taken")


def validated(body: dict[str, Any]) -> OidcCreate | LdapCreate:
    """``body`` as the create body of its ``kind`` (validated as that kind's model, so errors name the
    fields as sent, not behind the kind)."""
    model = {"oidc": OidcCreate, "ldap": LdapCreate}.get(str(body.get("kind")))
    if model is None:
        raise invalid_field("kind", "literal_error", "must be 'oidc' or 'ldap'", expected="'oidc' or 'ldap'")
    try:
        data = model.model_validate(body)
    except ValidationError as exc:
        raise invalid_from_pydantic(exc) from exc
    if isinstance(data, LdapCreate) and data.start_tls and data.url.startswith("ldaps://"):
        raise invalid_field("startTls", "start_tls_with_ldaps", "an ldaps:// URL is TLS already; StartTLS is "
                            "for ldap:// URLs")
    return data


async def create_provider(*, db: AsyncSession, box: SecretBox, body: dict[str, Any]) -> AuthProvider:
    data = validated(body)
    await _slug_free(db, data.slug)
    row = AuthProvider()
    _apply(row, data, box, _secret_in(data))
    db.add(row)
    await _flush_slug(db, data.slug)
    return row


async def list_providers(*, db: AsyncSession, enabled_only: bool = False, kind: ProviderKind | None = None
                         ) -> list[AuthProvider]:
    stmt = select(AuthProvider).order_by(AuthProvider.id)
    if enabled_only:
        stmt = stmt.where(AuthProvider.enabled.is_(True))
    if kind is not None:
        stmt = stmt.where(AuthProvider.kind == kind)
    return list((await db.execute(stmt)).scalars())


async def get_provider(*, db: AsyncSession, provider_id: int) -> AuthProvider:
    return await one_or_404(db, select(AuthProvider).where(AuthProvider.id == provider_id),
                            NotFound("sign-in provider not found", code="provider_not_found"))


async def enabled_provider(*, db: AsyncSession, slug: str, kind: ProviderKind) -> AuthProvider:
    stmt = select(AuthProvider).where(AuthProvider.slug == slug, AuthProvider.kind == kind,
                                      AuthProvider.enabled.is_(True))
    row = (await db.execute(stmt)).scalar_one_or_none()
    if row is None:
        raise SignInRefused(f"no enabled sign-in provider '{slug}'", code="sso_unknown_provider", status=404)
    return row


async def update_provider(*, db: AsyncSession, box: SecretBox, provider_id: int, body: dict[str, Any]
                          ) -> AuthProvider:
    """A partial update: the fields sent replace the stored ones, the whole is validated as a create."""
    row = await get_provider(db=db, provider_id=provider_id)
    if "kind" in body and body["kind"] != row.kind:
        raise invalid_field("kind", "not_editable", "a provider's kind cannot change")
    stored = to_read(row).model_dump(by_alias=True, exclude={"id", "has_secret"})
    data = validated({**stored, **body})
    old_slug = row.slug
    if data.slug != old_slug:
        await _slug_free(db, data.slug, keep_id=row.id)
        await db.execute(update(User).where(User.auth_provider == old_slug).values(auth_provider=data.slug))
        await db.execute(update(Group).where(Group.source == old_slug).values(source=data.slug))
    _apply(row, data, box, _secret_in(data) if SECRET_FIELD[row.kind] in body else None)
    await _flush_slug(db, data.slug)
    return row


async def delete_provider(*, db: AsyncSession, provider_id: int) -> None:
    """Its links go with it; the accounts it made stay (their owners cannot sign in until linked again)."""
    row = await get_provider(db=db, provider_id=provider_id)
    await db.execute(delete(AuthProvider).where(AuthProvider.id == row.id))


# --- signing in ------------------------------------------------------------------------------------------


async def has_own_password(*, db: AsyncSession, username: str) -> bool:
    """Whether ``username`` names an account with a password of its own, not one a provider made."""
    stmt = select(User.password_hash).where(func.lower(User.username) == username.lower())
    stored = (await db.execute(stmt)).scalar_one_or_none()
    return stored is not None and stored != NO_PASSWORD


async def _linked_user(db: AsyncSession, provider_id: int, subject: str) -> User | None:
    stmt = select(User).join(UserIdentity, UserIdentity.user_id == User.id).where(
        UserIdentity.provider_id == provider_id, UserIdentity.subject == subject)
    return (await db.execute(stmt)).scalar_one_or_none()


async def _user_by_email(db: AsyncSession, email: str) -> User | None:
    stmt = select(User).where(func.lower(User.email) == email.lower()).order_by(User.id).limit(1)
    return (await db.execute(stmt)).scalar_one_or_none()


def _clean_username(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", name.split("@")[0]).strip("-.")[:28]
    return cleaned if len(cleaned) >= 3 else f"user-{cleaned}".rstrip("-")


async def _free_username(db: AsyncSession, wanted: str) -> str:
    base = _clean_username(wanted)
    for n in range(1, 1000):
        candidate = base if n == 1 else f"{base}-{n}"
        if (await db.execute(select(User.id).where(func.lower(User.username) == candidate.lower()))).first() is None:
            return candidate
    raise SignInRefused("no free username for this account", code="sso_account_conflict")


async def _new_user(db: AsyncSession, provider: AuthProvider, person: ExternalPerson) -> User:
    if not provider.config.get("autoCreateUsers", True):
        raise SignInRefused("this sign-in provider does not create accounts; ask an administrator",
                            code="sso_account_creation_off")
    user = User(username=await _free_username(db, person.username or person.subject), password_hash=NO_PASSWORD,
                role="user", auth_provider=provider.slug)
    db.add(user)
    await db.flush()
    return user


async def _find_or_make(db: AsyncSession, provider: AuthProvider, person: ExternalPerson) -> User:
    user = await _linked_user(db, provider.id, person.subject)
    if user is not None:
        return user
    if person.email and person.email_verified and provider.config.get("linkByEmail", False):
        user = await _user_by_email(db, person.email)
    if user is None:
        user = await _new_user(db, provider, person)
    db.add(UserIdentity(user_id=user.id, provider_id=provider.id, subject=person.subject))
    try:
        await db.flush()
    except IntegrityError as exc:  # the same person signing in twice at once
        raise SignInRefused("this account is being linked already; sign in again",
                            code="sso_account_conflict") from exc
    return user


async def _active_admins(db: AsyncSession) -> int:
    stmt = select(func.count(User.id)).where(User.role == "admin", User.disabled.is_(False))
    return int((await db.execute(stmt)).scalar_one())


async def _apply_admin_groups(db: AsyncSession, provider: AuthProvider, user: User, groups: list[str]) -> None:
    admin_groups = {g.lower() for g in provider.config.get("adminGroups", [])}
    if not admin_groups:
        return
    member = any(g.lower() in admin_groups for g in groups)
    if member and not user.is_admin:
        user.role = "admin"
    elif not member and user.is_admin and await _active_admins(db) > 1:
        user.role = "user"


async def _sync_groups(db: AsyncSession, provider: AuthProvider, user: User, groups: list[str]) -> None:
    await groups_service.sync_provider_groups(db=db, user_id=user.id, source=provider.slug, names=groups)


async def sign_in_external(*, db: AsyncSession, provider: AuthProvider, person: ExternalPerson) -> User:
    """The account ``person`` signs in as, after linking, creating and syncing (see the module's words);
    ``SignInRefused`` when they may not sign in."""
    user = await _find_or_make(db, provider, person)
    if user.disabled:
        raise SignInRefused("this account is disabled", code="account_disabled")
    if person.email:
        user.email = person.email
    await _sync_groups(db, provider, user, person.groups)
    await _apply_admin_groups(db, provider, user, person.groups)
    await db.flush()
    return user
