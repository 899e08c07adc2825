"""Tenants, their memory subjects, operators, agent tokens, cluster keys and the audit log."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any, ClassVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

SLUG_VALIDATOR = RegexValidator(
    r"^[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?$",
    "Use 1-50 lowercase letters, digits and inner hyphens.",
)
EXTERNAL_ID_VALIDATOR = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$",
    "Use 1-128 letters, digits and . _ @ : - (starting with a letter or digit).",
)


class Deployment(models.Model):
    """This deployment's id on the search cluster (one row): its indices carry it, and the
    platform will not use indices that carry another (``ATLAS_DEPLOYMENT_ID`` overrides)."""

    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.uid.hex


def four_eyes_default() -> bool:
    """A new tenant's four-eyes setting: on, unless the deployment has a single operator
    (``ATLAS_ERASURE_FOUR_EYES=false``)."""
    return bool(settings.ATLAS_ERASURE_FOUR_EYES)


class Tenant(models.Model):
    """An organisation whose users' memories Atlas keeps apart from every other tenant's."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        SUSPENDED = "suspended", "Suspended"

    class IsolationMode(models.TextChoices):
        DLS = "dls", "Cluster-enforced (document-level security)"
        FILTER = "filter", "Application filter only (weaker)"

    class StatisticsScope(models.TextChoices):
        TENANT = "tenant", "Per tenant (users of the tenant share term statistics)"
        USER = "user", "Per user (no statistic is shared between users; lower recall)"

    # The tenant's id in the search cluster: globally unique (primary keys repeat across
    # deployments and after a database reset; these never do).
    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    slug = models.SlugField(max_length=50, unique=True, validators=[SLUG_VALIDATOR])
    name = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    isolation_mode = models.CharField(
        max_length=8, choices=IsolationMode.choices, default=IsolationMode.FILTER
    )
    # Decay: flat for a year, then 0.5 at a further ten years (the design had 180 / 1825; the
    # rule across corpora chose these: docs/recall-quality.md, "Defaults across corpora").
    decay_offset_days = models.PositiveIntegerField(
        default=365,
        help_text="Recall: episodes and facts younger than this many days keep their full weight.",
    )
    decay_scale_days = models.PositiveIntegerField(
        default=3650,
        help_text="Recall: past the offset, weight falls to half at offset + this many days.",
    )
    use_count_weight = models.FloatField(
        default=0.2,
        help_text="Recall: lift of often-recalled facts: x (1 + log10(1 + uses) x this); 0: none.",
    )
    catalog_prior = models.FloatField(
        default=0.85,
        help_text="Recall: catalog documents' scores are multiplied by this (own memories: 1).",
    )
    # Consolidation: after N new episodes of a user (0 = never on count), on the daily
    # schedule, and candidates below the floor are dropped. Off while no model is configured.
    consolidation_every_n_episodes = models.PositiveIntegerField(
        default=10,
        help_text="Consolidate a user after this many new episodes (0: never on count).",
    )
    consolidation_daily = models.BooleanField(
        default=True, help_text="Also consolidate every user with new episodes once a day."
    )
    consolidation_confidence_floor = models.FloatField(
        default=0.6,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Facts the model is less sure of than this (0..1) are dropped.",
    )
    auto_provision_users = models.BooleanField(
        default=False,
        help_text=(
            "A turn for an unknown user, sent with a tenant token that may provision users, "
            "creates the user (and their scoped key on a cluster-enforced tenant) first."
        ),
    )
    erasure_requires_second_operator = models.BooleanField(
        default=four_eyes_default,
        help_text=(
            "Four eyes: a forget request must be approved by an operator other than the one "
            "who opened it."
        ),
    )
    # Whose documents score a user's lexical recall: the tenant's index (shared by its users)
    # or the user's own index. Changing it takes ``manage.py es_layout_migrate``.
    statistics_scope = models.CharField(
        max_length=8, choices=StatisticsScope.choices, default=StatisticsScope.TENANT
    )
    # Retention (deploy/README.md, "Retention and legal hold"): enforced daily by beat
    # (``lifecycle.retention_enforce``); empty keeps forever.
    episode_retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Delete users' episodes (conversation turns) stored longer ago than this.",
    )
    audit_retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=(
            "Delete audit events and erasure receipts older than this (never below the "
            "deployment's floor, ATLAS_AUDIT_RETENTION_FLOOR_DAYS)."
        ),
    )
    # The archive (deploy/README.md, "Archive of superseded facts"): beat
    # (``lifecycle.archive_superseded``) moves superseded facts out of the hot index; retention
    # deletes archived ones. Empty: never archive / keep archived facts forever.
    archive_after_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=(
            "Move facts superseded longer ago than this out of the hot index into the "
            "tenant's archive (still shown, exported and erased; recall searches them only "
            "when superseded facts are asked for). Empty: never."
        ),
    )
    archive_retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=(
            "Delete archived facts superseded longer ago than this (never a held user's or "
            "one an open forget request names). Empty: keep them forever."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        floor = settings.ATLAS_AUDIT_RETENTION_FLOOR_DAYS
        if self.audit_retention_days is not None and self.audit_retention_days < floor:
            raise ValidationError(
                {
                    "audit_retention_days": f"At least {floor} days (this deployment's floor, "
                    "ATLAS_AUDIT_RETENTION_FLOOR_DAYS), or empty to keep them forever."
                }
            )

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE

    @property
    def isolation_is_weaker(self) -> bool:
        return self.isolation_mode == self.IsolationMode.FILTER

    @property
    def memory_id(self) -> str:
        """The tenant's id on memory documents and in index names (never the primary key)."""
        return self.uid.hex


class User(models.Model):
    """A memory subject: an agent's end user. Belongs to exactly one tenant."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        DISABLED = "disabled", "Disabled"

    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="users")
    external_id = models.CharField(max_length=128, validators=[EXTERNAL_ID_VALIDATOR])
    display_name = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    # A legal hold (an operator's, audited) pauses every retention deletion of the user's data.
    legal_hold_at = models.DateTimeField(null=True, blank=True)
    legal_hold_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # "End users", apart from the operators' own Django accounts (also "users" to Django).
        verbose_name = "end user"
        verbose_name_plural = "end users"
        ordering = ["tenant__slug", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "external_id"], name="user_external_id_unique_per_tenant"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.external_id} ({self.tenant.slug})"

    @property
    def memory_id(self) -> str:
        """The user's id on memory documents and scoped keys (never the primary key)."""
        return self.uid.hex

    @property
    def memory_tenant_id(self) -> str:
        return self.tenant.memory_id

    def current_key(self) -> ScopedKey | None:
        return (
            self.scoped_keys.filter(status=ScopedKey.Status.ACTIVE).order_by("-created_at").first()
        )


class Operator(models.Model):
    """The Atlas role of a staff account: platform admin (all tenants), tenant admin, auditor."""

    class Role(models.TextChoices):
        PLATFORM_ADMIN = "platform_admin", "Platform admin"
        TENANT_ADMIN = "tenant_admin", "Tenant admin"
        AUDITOR = "auditor", "Auditor (read-only)"

    account = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="operator"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.PROTECT, related_name="operators"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(Q(role="platform_admin", tenant__isnull=True))
                | (Q(role__in=["tenant_admin", "auditor"], tenant__isnull=False)),
                name="operator_tenant_matches_role",
            ),
        ]

    def __str__(self) -> str:
        where = self.tenant.slug if self.tenant else "all tenants"
        return f"{self.account.get_username()} ({self.get_role_display()}, {where})"


class PlatformToken(models.Model):
    """A bearer token an agent presents. Only a keyed hash of the secret is stored."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="tokens")
    # Set: the token acts for this one user. Empty: it may act for any user of its tenant.
    user = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.PROTECT, related_name="tokens"
    )
    name = models.CharField(max_length=100)
    lookup = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    allow_catalog = models.BooleanField(default=False)
    # Tenant tokens only: may create, list, disable and enable the tenant's users (/api/v1/users).
    allow_provisioning = models.BooleanField(default=False)
    # Tenant tokens only: may export any user of the tenant (GET /users/{id}/export). A user
    # token always exports its own user (the right of access); no other token exports anyone.
    allow_export = models.BooleanField(default=False)
    # Set: the token acts as this agent (a slug of the token's user's agents, app ``agents``);
    # a plain field so tenants never imports the app above it.
    agent_slug = models.CharField(max_length=50, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} (atlas_{self.lookup}_…)"

    @property
    def scope(self) -> str:
        return "user" if self.user_id else "tenant"

    @property
    def rights(self) -> list[str]:
        """What the token may do, in words (the admin's token list shows and filters them)."""
        if self.user_id:
            return ["own user's memories", "own user's export"]
        granted = [
            ("catalog", self.allow_catalog),
            ("provisioning", self.allow_provisioning),
            ("export", self.allow_export),
        ]
        return ["any user's memories", *(name for name, on in granted if on)]

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_usable(self) -> bool:
        return self.revoked_at is None and not self.is_expired


class ClusterKey(models.Model):
    """An Elasticsearch API key the platform made, whose role descriptor carries a DLS query;
    its secret is kept encrypted (``tenants.crypto``)."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        # Replaced by a newer key, but the cluster has not yet confirmed the invalidation.
        PENDING_INVALIDATION = "pending_invalidation", "Replaced, invalidation pending"
        INVALIDATED = "invalidated", "Invalidated"

    key_id = models.CharField(max_length=64, unique=True)
    key_name = models.CharField(max_length=200)
    encrypted_secret = models.TextField()
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.ACTIVE)
    rotated_from = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="rotated_to"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # When the cluster stops accepting the key (``ATLAS_SCOPED_KEY_TTL_DAYS``); the beat task
    # ``tenants.scoped_keys_renew`` rotates keys before it. Null: a key made before expiry.
    expires_at = models.DateTimeField(null=True, blank=True)
    invalidated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.key_id} ({self.get_status_display()})"

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def age(self) -> timedelta:
        return timezone.now() - self.created_at


class ScopedKey(ClusterKey):
    """A user's key: search on the user's indices, their documents and their tenant's catalog."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="scoped_keys")

    class Meta(ClusterKey.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["user"], condition=Q(status="active"), name="one_active_key_per_user"
            ),
        ]


class CatalogKey(ClusterKey):
    """A ``dls`` tenant's catalog key: search on the tenant's index, its catalog documents
    only. A tenant token's catalog reads run with it (``tenants.services.catalog_keys``)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="catalog_keys")

    class Meta(ClusterKey.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["tenant"],
                condition=Q(status="active"),
                name="one_active_catalog_key_per_tenant",
            ),
        ]


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    """Audit rows are append-only: bulk updates and deletes are refused."""

    def update(self, **kwargs: Any) -> int:
        raise TypeError("Audit events are append-only.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise TypeError("Audit events are append-only.")


class AuditEvent(models.Model):
    """One state change: who, what, on whom, in which request. Never holds memory text."""

    class ActorType(models.TextChoices):
        OPERATOR = "operator", "Operator"
        TOKEN = "token", "Token"
        SYSTEM = "system", "System"

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    request_id = models.CharField(max_length=64, blank=True, db_index=True)
    actor_type = models.CharField(max_length=16, choices=ActorType.choices)
    actor_id = models.CharField(max_length=64, blank=True)
    actor_label = models.CharField(max_length=200, blank=True)
    # No database constraints: the log outlives what it mentions (an erased user, for one).
    tenant = models.ForeignKey(
        Tenant,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    subject_user = models.ForeignKey(
        User,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    action = models.CharField(max_length=64, db_index=True)
    target_type = models.CharField(max_length=64, blank=True)
    target_id = models.CharField(max_length=128, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    objects: ClassVar[models.Manager[AuditEvent]] = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        who = self.actor_label or self.actor_type
        return f"{self.action} by {who} at {self.created_at:%Y-%m-%d %H:%M:%S}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise TypeError("Audit events are append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise TypeError("Audit events are append-only.")
