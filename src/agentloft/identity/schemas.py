"""Bodies of the sign-in providers' admin API (``/api/admin/auth-providers``).

One flat body per kind, told apart by ``kind``. Everything but the secret (``clientSecret``,
``bindPassword``) is kept as the provider's ``config``; the secret is write-only: answers say
``hasSecret`` instead. A PUT may send any subset of the fields: the rest keep their stored values (the
secret too), and the whole is validated again as a create body would be.

An LDAP provider's ``tlsCaCert`` is the PEM text of the CA certificates its directory's certificate is
checked against (a company's private CA); empty means the system's trust store. It is not a secret, so
answers return it, but it must parse as PEM certificates when written, so a pasted key or a truncated
certificate is a 422 rather than a directory that fails at every sign-in.
"""

from __future__ import annotations

from typing import Annotated, Literal

from cryptography import x509
from pydantic import AfterValidator, Field, StrictBool, StringConstraints

from agentloft.core.errors import pydantic_problem
from agentloft.core.schemas import ApiModel, ClientText

Slug = Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100), ClientText]
Short = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200), ClientText]
Text = Annotated[str, StringConstraints(strip_whitespace=True, max_length=1000), ClientText]
Names = Annotated[list[Short], Field(max_length=200)]
Secret = Annotated[str, StringConstraints(max_length=4000), ClientText]
CA_CERT_MAX = 64_000  # a bundle of a few dozen certificates


def _http_url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise pydantic_problem("not_http_url", "must be an http:// or https:// URL")
    return value.rstrip("/")


def _ldap_url(value: str) -> str:
    if not value.startswith(("ldap://", "ldaps://")):
        raise pydantic_problem("not_ldap_url", "must be an ldap:// or ldaps:// URL")
    return value


def _pem_certificates(value: str) -> str:
    if not value:
        return value
    try:
        x509.load_pem_x509_certificates(value.encode())
    except ValueError:
        raise pydantic_problem("not_pem_certificate", "must be one or more PEM certificates "
                               "(-----BEGIN CERTIFICATE-----)") from None
    return value


CaCerts = Annotated[str, StringConstraints(strip_whitespace=True, max_length=CA_CERT_MAX), ClientText,
                    AfterValidator(_pem_certificates)]


class _Common(ApiModel):
    slug: Slug
    name: Name
    enabled: StrictBool = True
    admin_groups: Names = Field(default_factory=list, description="Members of these groups are admins.")
    auto_create_users: StrictBool = Field(default=True, description="Unknown people get an account.")


class OidcFields(_Common):
    kind: Literal["oidc"]
    issuer: Annotated[Short, AfterValidator(_http_url)] = Field(
        description="The issuer URL; its /.well-known/openid-configuration is read.")
    client_id: Short
    scopes: Names = Field(default_factory=lambda: ["openid", "email", "profile"])
    username_claim: Short = "preferred_username"
    email_claim: Short = "email"
    groups_claim: Short = "groups"
    allowed_domains: Names = Field(default_factory=list, description="Email domains let in; empty: any.")
    link_by_email: StrictBool = Field(
        default=False, description="Link an existing account with the same email when the provider says "
        "the email is verified.")


class LdapFields(_Common):
    kind: Literal["ldap"]
    url: Annotated[Short, AfterValidator(_ldap_url)] = Field(description="ldap://host:389 or ldaps://host:636.")
    start_tls: StrictBool = Field(default=False, description="Upgrade an ldap:// connection to TLS first.")
    tls_ca_cert: CaCerts = Field(default="", description="PEM CA certificates the directory's certificate is "
                                 "checked against; empty: the system's.")
    bind_dn: Text = Field(default="", description="The service account; empty binds anonymously.")
    user_search_base: Text
    user_filter: Text = "(uid={username})"
    group_search_base: Text = ""
    group_filter: Text = "(member={dn})"
    group_name_attribute: Short = "cn"
    username_attribute: Short = "uid"
    email_attribute: Short = "mail"


class OidcCreate(OidcFields):
    client_secret: Secret | None = Field(default=None, description="Stored encrypted; never returned.")


class LdapCreate(LdapFields):
    bind_password: Secret | None = Field(default=None, description="Stored encrypted; never returned.")


SECRET_FIELD = {"oidc": "clientSecret", "ldap": "bindPassword"}


class _Stored(ApiModel):
    id: int
    has_secret: bool


class OidcRead(OidcFields, _Stored):
    pass


class LdapRead(LdapFields, _Stored):
    pass


class SignInButton(ApiModel):
    """What the sign-in page shows for an enabled OIDC provider."""

    slug: str
    name: str
