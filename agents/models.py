"""Coding agents' work records: agents, machines and presence, projects, sessions, tasks,
messages and memory files (the operations they applied are in the platform's exactly-once
ledger, ``atlas_platform.ledger``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from atlas_platform.scoping import CallerQuerySet
from tenants.models import SLUG_VALIDATOR, User

CLIENT_ID_VALIDATOR = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$",
    "Use 1-128 letters, digits and . _ : @ - (starting with a letter or digit).",
)


class Agent(models.Model):
    """One of a user's agent identities (``claude-code``, ``codex``, any slug)."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="agents")
    slug = models.CharField(max_length=50, validators=[SLUG_VALIDATOR])
    display_name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    owner = "user"  # the user whose rows these are (for_caller)
    objects = CallerQuerySet.as_manager()

    class Meta:
        ordering = ["user_id", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["user", "slug"], name="agent_slug_unique_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.slug} ({self.user.external_id})"


class Machine(models.Model):
    """One installation of the client, known by a stable key the client generates."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="machines")
    key = models.CharField(max_length=128, validators=[CLIENT_ID_VALIDATOR])
    label = models.CharField(max_length=200, blank=True)
    os = models.CharField(max_length=100, blank=True)
    client_version = models.CharField(max_length=50, blank=True)
    first_seen_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)

    owner = "user"  # the user whose rows these are (for_caller)
    objects = CallerQuerySet.as_manager()

    class Meta:
        ordering = ["user_id", "key"]
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="machine_key_unique_per_user")
        ]

    def __str__(self) -> str:
        return self.label or self.key


class Project(models.Model):
    """A code base an agent works in: ``key`` is a hash of the normalised git remote (else of
    the path), so two checkouts of one repository are one project. Private to the user unless
    ``team_visible`` (then readable by the user's tenant, never beyond)."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="projects")
    key = models.CharField(max_length=64)
    name = models.CharField(max_length=200)
    remote = models.CharField(max_length=500, blank=True)
    team_visible = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    owner = "user"  # the user whose rows these are (for_caller)
    objects = CallerQuerySet.as_manager()

    class Meta:
        ordering = ["user_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="project_key_unique_per_user")
        ]

    def __str__(self) -> str:
        return self.name


class Session(models.Model):
    """One agent session, keyed by the agent's own session id (a start is idempotent). Turns
    and writes are counters bumped in place; files touched are kept up to a cap."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="sessions")
    external_id = models.CharField(max_length=128, validators=[CLIENT_ID_VALIDATOR])
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="sessions"
    )
    machine = models.ForeignKey(
        Machine, null=True, blank=True, on_delete=models.SET_NULL, related_name="sessions"
    )
    started_at = models.DateTimeField(default=timezone.now)
    last_activity_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.CharField(max_length=50, blank=True)
    turns = models.PositiveIntegerField(default=0)
    writes = models.PositiveIntegerField(default=0)
    files_touched = models.JSONField(default=list, blank=True)
    summary_memory_id = models.CharField(max_length=64, blank=True)

    owner = "agent__user"  # the user whose rows these are (for_caller)
    objects = CallerQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "external_id"], name="session_id_unique_per_agent"
            )
        ]

    def __str__(self) -> str:
        return self.external_id

    @property
    def is_open(self) -> bool:
        return self.ended_at is None


class Task(models.Model):
    """A unit of an agent's work with a state machine (enforced in ``agents.services.tasks``)
    and a version number every transition must name."""

    class State(models.TextChoices):
        CREATED = "created", "Created"
        IN_PROGRESS = "in_progress", "In progress"
        BLOCKED = "blocked", "Blocked"
        SUSPENDED = "suspended", "Suspended"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    class Priority(models.TextChoices):
        LOW = "low", "Low"
        NORMAL = "normal", "Normal"
        HIGH = "high", "High"
        URGENT = "urgent", "Urgent"

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="agent_tasks")
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="tasks"
    )
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="tasks"
    )
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    title = models.CharField(max_length=300)
    description = models.TextField(blank=True)
    priority = models.CharField(max_length=8, choices=Priority.choices, default=Priority.NORMAL)
    tags = models.JSONField(default=list, blank=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.CREATED)
    version = models.PositiveIntegerField(default=1)
    outcome = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    owner = "user"  # the user whose rows these are (for_caller)
    objects = CallerQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at", "-id"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.title}"


class TaskTransition(models.Model):
    """Every attempted transition of a task, applied or refused (and why)."""

    class Result(models.TextChoices):
        APPLIED = "applied", "Applied"
        STALE = "stale_version", "Refused: stale version"
        ILLEGAL = "illegal", "Refused: illegal transition"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="transitions")
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    from_state = models.CharField(max_length=16)
    to_state = models.CharField(max_length=16)
    expected_version = models.PositiveIntegerField()
    result = models.CharField(max_length=16, choices=Result.choices)
    created_at = models.DateTimeField(default=timezone.now)

    owner = "task__user"  # the user whose rows these are (for_caller)
    objects = CallerQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.from_state} -> {self.to_state} ({self.result})"


class Message(models.Model):
    """A message from one agent to another of the same tenant; ``thread`` groups a message
    and its replies."""

    class Kind(models.TextChoices):
        NOTE = "note", "Note"
        QUESTION = "question", "Question"
        ANSWER = "answer", "Answer"
        HANDOFF = "handoff", "Handoff"
        ALERT = "alert", "Alert"

    sender = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="sent_messages")
    recipient = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="inbox")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.NOTE)
    priority = models.CharField(
        max_length=8, choices=Task.Priority.choices, default=Task.Priority.NORMAL
    )
    subject = models.CharField(max_length=300, blank=True)
    body = models.TextField()
    tags = models.JSONField(default=list, blank=True)
    thread = models.CharField(max_length=32)
    reply_to = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replies"
    )
    created_at = models.DateTimeField(default=timezone.now)
    acknowledged_at = models.DateTimeField(null=True, blank=True)

    owner = "recipient__user"  # the user whose rows these are (for_caller)
    objects = CallerQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["recipient", "acknowledged_at"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.get_kind_display()}"


class Presence(models.Model):
    """One row per agent and machine (two laptops never overwrite each other). The status is
    derived from the heartbeat's age in server time, never stored."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="presence")
    machine = models.ForeignKey(Machine, on_delete=models.CASCADE, related_name="presence")
    last_heartbeat_at = models.DateTimeField(default=timezone.now)
    heartbeats = models.PositiveIntegerField(default=0)
    session = models.ForeignKey(
        Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    task = models.ForeignKey(
        Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    owner = "agent__user"  # the user whose rows these are (for_caller)
    objects = CallerQuerySet.as_manager()

    class Meta:
        ordering = ["agent_id", "machine_id"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "machine"], name="presence_per_agent_machine")
        ]

    def __str__(self) -> str:
        return f"{self.agent.slug} on {self.machine}"

    def status(self, now: datetime | None = None) -> str:
        """``active`` (recent heartbeat in a session), ``idle`` (older than
        ``ATLAS_PRESENCE_IDLE_S``, or no open session), ``offline`` (older than
        ``ATLAS_PRESENCE_OFFLINE_S``)."""
        age = (now or timezone.now()) - self.last_heartbeat_at
        if age >= timedelta(seconds=settings.ATLAS_PRESENCE_OFFLINE_S):
            return "offline"
        if age >= timedelta(seconds=settings.ATLAS_PRESENCE_IDLE_S) or self.session_id is None:
            return "idle"
        return "active"


class MemoryFile(models.Model):
    """A memory file an agent keeps on disk (Claude Code's auto-memory, a notes folder), synced
    across machines: keyed by project and path relative to the memory folder, so two projects'
    ``testing.md`` never collide. The text lives in the memory store (``memory_id``, the current
    version); an edit writes a new version superseding the old one, a delete forgets it (the row
    stays as a tombstone so other machines learn of the delete)."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memory_files")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memory_files")
    path = models.CharField(max_length=500)
    content_hash = models.CharField(max_length=64, blank=True)
    memory_id = models.CharField(max_length=100, blank=True)
    versions = models.JSONField(default=list, blank=True)  # every version's memory id
    version = models.PositiveIntegerField(default=1)
    machine_key = models.CharField(max_length=128, blank=True)
    deleted = models.BooleanField(default=False)
    updated_at = models.DateTimeField(default=timezone.now)

    owner = "user"  # the user whose rows these are (for_caller)
    objects = CallerQuerySet.as_manager()

    class Meta:
        ordering = ["project_id", "path"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "path"], name="memory_file_path_unique_per_project"
            )
        ]

    def __str__(self) -> str:
        return self.path
