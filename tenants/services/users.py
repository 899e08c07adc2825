"""Memory subjects (users) and operator accounts."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction

from atlas_platform.exceptions import AtlasError, Conflict, ValidationError
from tenants.capabilities import Capability, token_can
from tenants.models import EXTERNAL_ID_VALIDATOR, Operator, PlatformToken, ScopedKey, Tenant, User
from tenants.selectors import user_for_token
from tenants.services.audit import audit_record
from tenants.services.scoped_keys import (
    scoped_key_provision,
    scoped_keys_restore,
    scoped_keys_withdraw,
)
from tenants.services.validation import validate


def check_new_account(*, username: str, password: str) -> None:
    """Refuse a blank or taken username and a weak password before anything is written."""
    if not username.strip():
        raise ValidationError("The operator needs a username.", code="blank")
    if get_user_model().objects.filter(username=username).exists():
        raise ValidationError(f"The username {username!r} is taken.", code="duplicate_username")
    try:
        validate_password(password)
    except DjangoValidationError as exc:
        raise ValidationError("Password: " + " ".join(exc.messages), code="weak_password") from exc


def user_create(*, tenant: Tenant, external_id: str, display_name: str = "") -> User:
    """Add a user to a tenant. ``external_id`` is the caller's own id, unique in the tenant."""
    if not tenant.is_active:
        raise Conflict("The tenant is suspended.", code="tenant_suspended")
    user = User(tenant=tenant, external_id=external_id.strip(), display_name=display_name.strip())
    if User.objects.filter(tenant=tenant, external_id=user.external_id).exists():
        raise ValidationError(
            f"User {user.external_id!r} already exists in this tenant.", code="duplicate_user"
        )
    validate(user)
    try:
        with transaction.atomic():
            user.save()
            audit_record(
                action="user.create",
                tenant=tenant,
                subject_user=user,
                target=user,
                metadata={"external_id": user.external_id},
            )
    except IntegrityError as exc:  # a concurrent create of the same id won the race
        raise ValidationError(
            f"User {external_id!r} already exists in this tenant.", code="duplicate_user"
        ) from exc
    return user


@dataclass(frozen=True)
class Provisioned:
    """A user made over the API, and what became of their scoped key."""

    user: User
    key: ScopedKey | None
    key_error: str | None = None


def user_provision(
    *, tenant: Tenant, external_id: str, display_name: str = "", provision_key: bool | None = None
) -> Provisioned:
    """Create a user and, as the admin does, their scoped cluster key: by default on a
    cluster-enforced (``dls``) tenant, whose reads need one; ``provision_key`` decides
    otherwise. A key the cluster refuses leaves the user made (the audit says so) and says why
    in ``key_error``: provisioning the key again later is safe."""
    want_key = tenant.isolation_mode == Tenant.IsolationMode.DLS
    if provision_key is not None:
        want_key = provision_key
    user = user_create(tenant=tenant, external_id=external_id, display_name=display_name)
    if not want_key:
        return Provisioned(user=user, key=None)
    try:
        key = scoped_key_provision(user=user)
    except AtlasError as exc:
        return Provisioned(user=user, key=None, key_error=exc.public[0])
    return Provisioned(user=user, key=key)


def may_auto_provision(*, token: PlatformToken) -> bool:
    """Whether a first turn sent with ``token`` may create the user it names: a tenant token
    with the provisioning right, on a tenant that turned ``auto_provision_users`` on."""
    can = token_can(token=token, capability=Capability.PROVISIONING)
    return can and token.tenant.auto_provision_users


def user_awaits_provisioning(*, token: PlatformToken, external_id: str) -> bool:
    """True when ``external_id`` is nobody yet and a first turn sent with ``token`` would
    provision them (a well-formed id, ``may_auto_provision``). The MCP endpoint lets such a
    client connect before its first ``record_turn``."""
    return (
        may_auto_provision(token=token)
        and re.fullmatch(EXTERNAL_ID_VALIDATOR.regex, external_id) is not None
        and not User.objects.filter(tenant_id=token.tenant_id, external_id=external_id).exists()
    )


def user_for_first_turn(*, token: PlatformToken, external_id: str) -> User:
    """The user a turn names; an unknown one is provisioned first when the tenant turned on
    ``auto_provision_users`` and the token may provision users (a race for the same id ends
    with the one user both callers name)."""
    if user_awaits_provisioning(token=token, external_id=external_id):
        try:
            user_provision(tenant=token.tenant, external_id=external_id)
        except ValidationError as exc:
            if exc.code != "duplicate_user":
                raise
    return user_for_token(token=token, external_id=external_id)


def user_set_status(*, user: User, status: str) -> User:
    """Disable a user (their tokens stop working) or enable them again."""
    if status not in User.Status.values:
        raise ValidationError(f"Unknown status {status!r}.")
    if user.status == status:
        raise Conflict(f"The user is already {status}.")
    with transaction.atomic():
        user.status = status
        user.save(update_fields=["status"])
        audit_record(
            action="user.disable" if status == User.Status.DISABLED else "user.enable",
            tenant=user.tenant,
            subject_user=user,
            target=user,
        )
    # After the commit (cluster calls never run inside a transaction): a disabled user's key
    # stops working on the cluster at once; enabling gives them a new one.
    if status == User.Status.DISABLED:
        scoped_keys_withdraw(users=[user])
    else:
        scoped_keys_restore(users=[user])
    return user


def operator_create(
    *,
    username: str,
    password: str,
    role: str,
    tenant: Tenant | None,
    email: str = "",
) -> Operator:
    """A staff account with its Atlas role (platform admins have no tenant; the others one)."""
    if role not in Operator.Role.values:
        raise ValidationError(f"Unknown role {role!r}.")
    if (role == Operator.Role.PLATFORM_ADMIN) != (tenant is None):
        raise ValidationError("Platform admins have no tenant; every other role needs one.")
    check_new_account(username=username, password=password)
    with transaction.atomic():
        account = get_user_model().objects.create_user(
            username=username,
            email=email,
            password=password,
            is_staff=True,
            is_superuser=role == Operator.Role.PLATFORM_ADMIN,
        )
        operator = Operator.objects.create(account=account, role=role, tenant=tenant)
        audit_record(
            action="operator.create",
            tenant=tenant,
            target=operator,
            metadata={"username": username, "role": role},
        )
    return operator
