"""The sign-in providers' admin API: several providers at once, secrets write-only and kept by a partial
PUT, bad input in the one error shape, admins only."""

from __future__ import annotations

from tests.fakes.tls_ca import TestCa
from tests.support import ApiClient, LiveApp

OIDC = {"slug": "corp", "name": "Corp", "kind": "oidc", "issuer": "https://id.example.com/",
        "clientId": "agentloft", "clientSecret": "s3cret"}
LDAP = {"slug": "dir", "name": "Directory", "kind": "ldap", "url": "ldaps://ldap.example.com",
        "bindDn": "cn=svc,dc=example,dc=com", "bindPassword": "pw", "userSearchBase": "ou=people,dc=example,dc=com"}


def test_several_providers_with_write_only_secrets(app: LiveApp, admin: ApiClient) -> None:
    oidc = admin.ok("POST", "/api/admin/auth-providers", json=OIDC)
    ldap = admin.ok("POST", "/api/admin/auth-providers", json=LDAP)
    assert oidc["hasSecret"] and ldap["hasSecret"]
    assert "clientSecret" not in oidc and "bindPassword" not in ldap
    assert oidc["issuer"] == "https://id.example.com" and oidc["scopes"] == ["openid", "email", "profile"]
    assert oidc["linkByEmail"] is False and oidc["autoCreateUsers"] is True
    assert ldap["userFilter"] == "(uid={username})" and ldap["groupFilter"] == "(member={dn})"
    listed = admin.ok("GET", "/api/admin/auth-providers")["items"]
    assert [p["slug"] for p in listed] == ["corp", "dir"]
    stored = app.sql("SELECT secret_enc, config FROM auth_providers WHERE slug = 'corp'")[0]
    assert "s3cret" not in str(stored)

    kept = admin.ok("PUT", f"/api/admin/auth-providers/{oidc['id']}", json={"name": "Corp SSO"})
    assert kept["name"] == "Corp SSO" and kept["hasSecret"] and kept["clientId"] == "agentloft"
    cleared = admin.ok("PUT", f"/api/admin/auth-providers/{oidc['id']}", json={"clientSecret": ""})
    assert cleared["hasSecret"] is False

    admin.ok("DELETE", f"/api/admin/auth-providers/{ldap['id']}")
    assert admin.get(f"/api/admin/auth-providers/{ldap['id']}").json()["error"]["code"] == "provider_not_found"


def test_bad_input_is_refused_clearly(admin: ApiClient) -> None:
    r = admin.post("/api/admin/auth-providers", json={**OIDC, "issuer": "id.example.com"})
    assert r.status_code == 422 and r.json()["error"]["fieldCodes"]["issuer"]["code"] == "not_http_url"
    r = admin.post("/api/admin/auth-providers", json={**LDAP, "url": "http://ldap"})
    assert r.status_code == 422 and r.json()["error"]["fieldCodes"]["url"]["code"] == "not_ldap_url"
    r = admin.post("/api/admin/auth-providers", json={**OIDC, "kind": "saml"})
    assert r.status_code == 422
    r = admin.post("/api/admin/auth-providers", json={**OIDC, "slug": "Bad Slug"})
    assert r.status_code == 422 and "slug" in r.json()["error"]["fields"]
    first = admin.ok("POST", "/api/admin/auth-providers", json=OIDC)
    r = admin.post("/api/admin/auth-providers", json={**LDAP, "slug": "corp"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "provider_slug_taken"
    r = admin.put(f"/api/admin/auth-providers/{first['id']}", json={"kind": "ldap"})
    assert r.status_code == 422 and r.json()["error"]["fieldCodes"]["kind"]["code"] == "not_editable"
    r = admin.put(f"/api/admin/auth-providers/{first['id']}", json={"scopes": "openid"})
    assert r.status_code == 422 and "scopes" in r.json()["error"]["fields"]


def test_tls_settings_are_checked_when_written(admin: ApiClient) -> None:
    """StartTLS on an ldaps:// URL, and CA certificates that are not PEM certificates, are 422s; a PEM
    bundle is kept as sent and returned (it is not a secret)."""
    r = admin.post("/api/admin/auth-providers", json={**LDAP, "startTls": True})
    assert r.status_code == 422 and r.json()["error"]["fieldCodes"]["startTls"]["code"] == "start_tls_with_ldaps"
    for bad in ("not a certificate", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----",
                "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----"):
        r = admin.post("/api/admin/auth-providers", json={**LDAP, "tlsCaCert": bad})
        assert r.status_code == 422 and r.json()["error"]["fieldCodes"]["tlsCaCert"]["code"] == "not_pem_certificate"
    assert admin.ok("GET", "/api/admin/auth-providers")["items"] == []  # nothing half-written
    bundle = TestCa().pem + TestCa("another CA").pem
    made = admin.ok("POST", "/api/admin/auth-providers", json={**LDAP, "tlsCaCert": bundle})
    assert made["tlsCaCert"] == bundle.strip() and made["startTls"] is False
    r = admin.put(f"/api/admin/auth-providers/{made['id']}", json={"url": "ldap://ldap.example.com", "startTls": True})
    assert r.status_code == 200 and r.json()["tlsCaCert"] == bundle.strip()
    r = admin.put(f"/api/admin/auth-providers/{made['id']}", json={"url": "ldaps://ldap.example.com"})
    assert r.status_code == 422 and "startTls" in r.json()["error"]["fields"]  # the stored StartTLS counts too


def test_providers_are_for_admins_only(user: ApiClient) -> None:
    assert user.get("/api/admin/auth-providers").status_code == 403
    assert user.post("/api/admin/auth-providers", json=OIDC).status_code == 403


def test_slug_rename_follows_the_accounts(app: LiveApp, admin: ApiClient) -> None:
    row = admin.ok("POST", "/api/admin/auth-providers", json=OIDC)
    app.sql("UPDATE users SET auth_provider = 'corp' WHERE username = 'admin'")
    admin.ok("PUT", f"/api/admin/auth-providers/{row['id']}", json={"slug": "corp2"})
    assert admin.ok("GET", "/api/auth/me")["authProvider"] == "corp2"


def test_login_page_shows_a_button_per_enabled_oidc_provider(app: LiveApp, admin: ApiClient) -> None:
    admin.ok("POST", "/api/admin/auth-providers", json=OIDC)
    admin.ok("POST", "/api/admin/auth-providers", json={**OIDC, "slug": "off", "name": "Off", "enabled": False})
    admin.ok("POST", "/api/admin/auth-providers", json=LDAP)
    with app.client() as anon:
        page = anon.get("/login?next=/chat").text
        assert 'href="/auth/oidc/corp/login?next=/chat"' in page and "Sign in with Corp" in page
        assert "/auth/oidc/off/" not in page and "/auth/oidc/dir/" not in page
        assert "sign-in-error" not in anon.get("/login?error=made-up-words").text
        zh = anon.get("/login?error=sso_domain_not_allowed", headers={"Accept-Language": "zh-CN"}).text
        assert "你的邮箱域名不允许在此登录。" in zh
