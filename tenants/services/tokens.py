"""Platform tokens: issue (secret shown once), revoke, authenticate.

Format: ``atlas_<lookup>_<secret>``. The lookup (12 chars) finds the row; only a keyed hash of the
whole token is stored and it is compared in constant time.
"""

from __future__ import annotations

import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.crypto import salted_hmac

from atlas_platform.exceptions import AuthenticationFailed, Conflict, ValidationError
from atlas_platform.tombstones import tombstone_record
from tenants.models import PlatformToken, Tenant, User
from tenants.services.audit import audit_record
from tenants.services.validation import validate

TOKEN_PREFIX = "atlas_"  # noqa: S105 - a public marker, not a secret
_LOOKUP_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
_TOKEN_RE = re.compile(r"^atlas_([a-z2-7]{12})_([A-Za-z0-9_-]{43})$")


@dataclass(frozen=True)
class IssuedToken:
    token: PlatformToken
    secret: str  # the full bearer value; never stored, shown once


def _hash(raw: str) -> str:
    return salted_hmac("atlas.platform-token", raw, algorithm="sha256").hexdigest()


def token_issue(
    *,
    tenant: Tenant,
    name: str,
    user: User | None = None,
    expires_at: datetime | None = None,
    allow_catalog: bool = False,
    allow_provisioning: bool = False,
    allow_export: bool = False,
) -> IssuedToken:
    """Issue a token for one user of ``tenant`` or (``user=None``) for the whole tenant. Only a
    tenant token may carry catalog, user-provisioning or export rights (a user token exports
    its own user only)."""
    if user is not None and user.tenant_id != tenant.pk:
        raise ValidationError("The user does not belong to this tenant.", code="wrong_tenant")
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError("The expiry must be in the future.", code="expired")
    if not tenant.is_active:
        raise Conflict("The tenant is suspended.", code="tenant_suspended")
    lookup = "".join(secrets.choice(_LOOKUP_ALPHABET) for _ in range(12))
    raw = f"{TOKEN_PREFIX}{lookup}_{secrets.token_urlsafe(32)}"
    token = PlatformToken(
        tenant=tenant,
        user=user,
        name=name.strip(),
        lookup=lookup,
        secret_hash=_hash(raw),
        expires_at=expires_at,
        allow_catalog=allow_catalog and user is None,
        allow_provisioning=allow_provisioning and user is None,
        allow_export=allow_export and user is None,
    )
    validate(token)
    with transaction.atomic():
        token.save()
        audit_record(
            action="token.issue",
            tenant=tenant,
            subject_user=user,
            target=token,
            metadata={
                "scope": token.scope,
                "name": token.name,
                "lookup": lookup,
                "allow_provisioning": token.allow_provisioning,
                "allow_export": token.allow_export,
            },
        )
    return IssuedToken(token=token, secret=raw)


def token_may_export(*, token: PlatformToken) -> bool:
    """Whether ``token`` may export a user it may name: a user token its own user (the right of
    access), a tenant token only with the export right (a catalog or provisioning token does
    not read every user's whole record)."""
    return token.user_id is not None or token.allow_export


def token_revoke(*, token: PlatformToken) -> PlatformToken:
    """Revoke a token; it is refused from the next request on (and after any restore: the
    tombstone log keeps the revocation)."""
    tombstone_record("token.revoke", lookup=token.lookup)
    with transaction.atomic():
        token = PlatformToken.objects.select_for_update().get(pk=token.pk)
        if token.revoked_at is not None:
            raise Conflict("The token is already revoked.", code="already_revoked")
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(
            action="token.revoke",
            tenant=token.tenant,
            subject_user=token.user,
            target=token,
            metadata={"lookup": token.lookup},
        )
    return token


def token_authenticate(*, raw: str) -> PlatformToken:
    """The live token behind a bearer value, or ``AuthenticationFailed``.

    Refuses malformed, unknown, revoked and expired tokens, and tokens of a suspended tenant or
    a disabled user. ``last_used_at`` is bumped at most once per resolution window.
    """
    match = _TOKEN_RE.match(raw or "")
    if match is None:
        raise AuthenticationFailed("The token is malformed.", code="token_malformed")
    try:  # lookup is unique: get() spares the ORDER BY that first() adds (every request)
        token = PlatformToken.objects.select_related("tenant", "user").get(lookup=match.group(1))
    except PlatformToken.DoesNotExist:
        token = None
    expected = token.secret_hash if token is not None else _hash("atlas_unknown")
    if not hmac.compare_digest(expected, _hash(raw)) or token is None:
        raise AuthenticationFailed("The token is not valid.", code="token_invalid")
    if token.revoked_at is not None:
        raise AuthenticationFailed("The token has been revoked.", code="token_revoked")
    if token.is_expired:
        raise AuthenticationFailed("The token has expired.", code="token_expired")
    if not token.tenant.is_active:
        raise AuthenticationFailed("The tenant is suspended.", code="tenant_suspended")
    if token.user is not None and token.user.status != User.Status.ACTIVE:
        raise AuthenticationFailed("The token's user is disabled.", code="user_disabled")
    _touch(token)
    return token


def _touch(token: PlatformToken) -> None:
    now = timezone.now()
    window = timedelta(seconds=settings.ATLAS_TOKEN_LAST_USED_RESOLUTION_S)
    if token.last_used_at is None or now - token.last_used_at >= window:
        PlatformToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
