"""Encryption at rest for cluster secrets (Fernet: AES-128-CBC + HMAC-SHA256).

``ATLAS_ENCRYPTION_KEYS``: the first key encrypts, every key decrypts, so a key can be rotated
by prepending the new one and re-encrypting at leisure.
"""

from __future__ import annotations

from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


@cache
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    try:
        return MultiFernet([Fernet(k.encode()) for k in keys])
    except ValueError as exc:
        raise ImproperlyConfigured(
            "ATLAS_ENCRYPTION_KEY must be Fernet keys (32 url-safe base64 bytes), comma separated."
        ) from exc


def encrypt(plaintext: str) -> str:
    return _fernet(tuple(settings.ATLAS_ENCRYPTION_KEYS)).encrypt(plaintext.encode()).decode()


def decrypt(ciphertext: str) -> str:
    try:
        return _fernet(tuple(settings.ATLAS_ENCRYPTION_KEYS)).decrypt(ciphertext.encode()).decode()
    except InvalidToken as exc:
        raise ImproperlyConfigured(
            "A stored cluster secret cannot be decrypted with ATLAS_ENCRYPTION_KEY."
        ) from exc
