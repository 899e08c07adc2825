"""Consolidation runs, the per-user watermark and lease, and playbooks suggested to a session."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from tenants.models import Tenant, User

ACTIVE_STATUSES = ("queued", "running")


class ConsolidationRun(models.Model):
    """One consolidation of one user's episodes: what it read, what it wrote, what it cost.

    At most one run per user is queued or running (a partial unique constraint), so two
    triggers at once yield one run.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class Trigger(models.TextChoices):
        EPISODES = "episodes", "After N new episodes"
        DAILY = "daily", "Daily schedule"
        ON_DEMAND = "on_demand", "On demand"

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="consolidation_runs")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="consolidation_runs")
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    # The window: the episodes read (ids, oldest first) and the newest one's (created_at, id).
    window_episode_ids = models.JSONField(default=list, blank=True)
    window_start = models.DateTimeField(null=True, blank=True)
    window_end = models.DateTimeField(null=True, blank=True)
    episodes_in = models.PositiveIntegerField(default=0)
    facts_in = models.PositiveIntegerField(default=0)
    procedures_in = models.PositiveIntegerField(default=0)
    candidates = models.PositiveIntegerField(default=0)
    facts_written = models.PositiveIntegerField(default=0)
    supersessions = models.PositiveIntegerField(default=0)
    procedures_written = models.PositiveIntegerField(default=0)
    procedures_updated = models.PositiveIntegerField(default=0)
    duplicates_dropped = models.PositiveIntegerField(default=0)
    unsupported_dropped = models.PositiveIntegerField(default=0)
    low_confidence_dropped = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    model = models.CharField(max_length=200, blank=True)
    model_calls = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["tenant", "-created_at"], name="crun_tenant_created")]
        constraints = [
            models.UniqueConstraint(
                fields=["user"],
                condition=Q(status__in=ACTIVE_STATUSES),
                name="consolidation_one_active_run_per_user",
            ),
        ]

    def __str__(self) -> str:
        # Named by the user's own id and the run's time, never by primary keys.
        when = f" of {self.created_at:%Y-%m-%d %H:%M}" if self.created_at else ""
        return f"{self.user.external_id}'s consolidation{when} ({self.get_status_display()})"

    @property
    def tokens_used(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def duration_ms(self) -> int | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return int((self.finished_at - self.started_at).total_seconds() * 1000)


class ConsolidationState(models.Model):
    """Per user: the watermark (newest episode consolidated), the count of episodes recorded
    since, and the lease that keeps two runs of one user apart (it expires if a worker dies)."""

    user = models.OneToOneField(User, on_delete=models.CASCADE, related_name="consolidation")
    watermark_created_at = models.DateTimeField(null=True, blank=True)
    watermark_episode_id = models.CharField(max_length=64, blank=True)
    # The last few consolidated episodes, shown to the next run as context.
    context_episode_ids = models.JSONField(default=list, blank=True)
    pending_episodes = models.PositiveIntegerField(default=0)
    lease_run = models.ForeignKey(
        ConsolidationRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    lease_until = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"consolidation state of {self.user.external_id}"


class PlaybookSuggestion(models.Model):
    """Playbooks a turn's recall returned to a session: the next run shows them beside the
    episodes, so the model can tie "thanks, that fixed it" to the playbook it answers."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    episode_id = models.CharField(max_length=64)
    session_id = models.CharField(max_length=200, blank=True)
    procedure_ids = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["user", "episode_id"], name="psugg_user_episode")]

    def __str__(self) -> str:
        return f"playbooks suggested for episode {self.episode_id}"
