"""Secrets at rest (model API keys, tool secrets) are encrypted with a key derived from the secret key.

Fernet gives authenticated encryption; the key is derived with HKDF so the raw secret key is never used
directly as a cipher key. Hash helpers for tokens live here too: tokens are random and long, so a plain
SHA-256 is the right lookup hash (argon2 is for passwords, which are guessable).
"""

from __future__ import annotations

import base64
import hashlib
import secrets

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


class SecretBox:
    def __init__(self, secret_key: str) -> None:
        key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"agentloft-secrets").derive(
            secret_key.encode()
        )
        self._fernet = Fernet(base64.urlsafe_b64encode(key))

    def encrypt(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode()

    def decrypt(self, token: str, *, ttl: int | None = None) -> str:
        """The plaintext; with ``ttl``, only of a token encrypted at most that many seconds ago."""
        try:
            return self._fernet.decrypt(token.encode(), ttl=ttl).decode()
        except InvalidToken as exc:
            raise ValueError("stored secret cannot be decrypted with the current secret key") from exc


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(prefix: str) -> str:
    return f"{prefix}_{secrets.token_urlsafe(32)}"
