"""Request and response shapes of the agents REST API (they are also the OpenAPI schema).

Inputs refuse fields they do not know (a typo never silently does nothing) and check types and
ranges; the services check the rest and answer with the shared error shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework import serializers

from agents.models import Agent, Message, Presence, Project, Session, Task
from agents.services.sessions import END_REASONS, MAX_TURNS_PER_CALL
from atlas_platform.serializers import StrictCharField

CLIENT_ID = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$"
SLUG = r"^[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?$"
KEY = r"^[0-9a-f]{64}$"
MAX_ID = 2**63 - 1


class Input(serializers.Serializer[Any]):
    """A request body (or query) that refuses unknown fields with a 400."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


def _id(help_text: str, *, required: bool = True, pattern: str = CLIENT_ID) -> Any:
    return serializers.RegexField(
        pattern,
        max_length=128,
        required=required,
        allow_null=not required,
        help_text=help_text,
        error_messages={"invalid": "Use 1-128 letters, digits and . _ : @ -."},
    )


def _text(help_text: str, max_length: int, *, required: bool = False) -> StrictCharField:
    return StrictCharField(
        max_length=max_length,
        required=required,
        allow_blank=not required,
        trim_whitespace=False,
        help_text=help_text,
    )


def _tags() -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=100),
        required=False,
        max_length=50,
        help_text="Free labels (at most 50, each at most 100 characters).",
    )


def _pk(help_text: str, *, required: bool = True) -> serializers.IntegerField:
    return serializers.IntegerField(
        min_value=1,
        max_value=MAX_ID,
        required=required,
        allow_null=not required,
        help_text=help_text,
    )


PROJECT_KEY = "A project's key (64 hex characters, from project registration)."


# --- agents and presence -----------------------------------------------------------------------
class AgentIn(Input):
    slug = serializers.RegexField(
        SLUG,
        max_length=50,
        help_text="The agent identity: `claude-code`, `codex`, `cursor` or any lowercase slug.",
    )
    display_name = _text("A name for people.", 200)


class AgentOut(serializers.Serializer[Agent]):
    slug = serializers.CharField(help_text="The agent's slug.")
    display_name = serializers.CharField(help_text="A name for people.")
    created_at = serializers.DateTimeField(help_text="When it was registered.")


class AgentTokenIn(Input):
    machine = _text(
        "The machine the token is for (its name for people): one token per machine.",
        40,
        required=True,
    )
    expires_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text="When it stops working (default: never)."
    )


class AgentTokenOut(serializers.Serializer[Any]):
    token = serializers.CharField(help_text="The secret: shown this once, never again.")
    name = serializers.CharField(help_text="The token's label: the agent and the machine.")
    user = serializers.CharField(help_text="The user it acts for.")
    agent = serializers.CharField(help_text="The agent it acts as.")
    expires_at = serializers.DateTimeField(allow_null=True)


class HeartbeatIn(Input):
    machine_key = _id("A stable key of this installation (the client generates it once).")
    label = _text("The machine's name for people (e.g. `work laptop`).", 200)  # type: ignore[assignment]
    os = _text("Operating system.", 100)
    client_version = _text("Version of the client.", 50)
    session_id = _id("The agent's current session, if any.", required=False)
    task_id = _pk("The task the agent works on, if any.", required=False)


class MachineOut(serializers.Serializer[Any]):
    key = serializers.CharField(help_text="The machine's stable key.")
    label = serializers.CharField(help_text="Its name for people.")  # type: ignore[assignment]
    os = serializers.CharField(help_text="Operating system.")
    client_version = serializers.CharField(help_text="Version of the client.")


class PresenceOut(serializers.Serializer[Presence]):
    agent = serializers.CharField(source="agent.slug", help_text="The agent's slug.")
    machine = MachineOut(help_text="Where it runs.")
    status = serializers.SerializerMethodField(help_text="active | idle | offline (server time).")
    last_heartbeat_at = serializers.DateTimeField(help_text="Last heartbeat, server time.")
    heartbeats = serializers.IntegerField(help_text="Heartbeats counted on this row.")
    session_id = serializers.CharField(
        source="session.external_id", allow_null=True, default=None, help_text="Open session."
    )
    task_id = serializers.IntegerField(allow_null=True, help_text="Current task, if any.")

    def get_status(self, presence: Presence) -> str:
        return presence.status()


class PresenceListOut(serializers.Serializer[Any]):
    results = PresenceOut(many=True, help_text="One row per agent and machine.")


class AgentListOut(serializers.Serializer[Any]):
    results = AgentOut(many=True, help_text="The user's agents.")


# --- projects ----------------------------------------------------------------------------------
class ProjectIn(Input):
    remote = _text("The git remote URL (any spelling: ssh, https, scp-style).", 500)
    path = _text("The checkout's path, when there is no remote.", 1000)
    name = _text("A name for people (default: the repository's name).", 200)
    team_visible = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Readable by the whole tenant (default: private to the user).",
    )


class ProjectOut(serializers.Serializer[Project]):
    key = serializers.CharField(help_text="Hash of the normalised remote (else of the path).")
    name = serializers.CharField(help_text="Name for people.")
    remote = serializers.CharField(help_text="The normalised remote (`host/path`), or empty.")
    team_visible = serializers.BooleanField(help_text="Readable by the whole tenant.")
    owner = serializers.CharField(source="user.external_id", help_text="The owning user.")
    created_at = serializers.DateTimeField(help_text="When it was registered.")


class ProjectListIn(Input):
    team = serializers.BooleanField(
        required=False, default=False, help_text="Include the tenant's team-visible projects."
    )


class ProjectListOut(serializers.Serializer[Any]):
    results = ProjectOut(many=True, help_text="Projects, by name.")


# --- sessions ----------------------------------------------------------------------------------
class SessionStartIn(Input):
    session_id = _id("The agent's own session id (a second start with it is a no-op).")
    project_key = serializers.RegexField(
        KEY, required=False, allow_null=True, help_text=PROJECT_KEY
    )
    machine_key = _id("The machine it runs on (registered by a heartbeat).", required=False)


class SessionTouchIn(Input):
    turns = serializers.IntegerField(
        min_value=0, max_value=MAX_TURNS_PER_CALL, default=1, help_text="Turns to count (1)."
    )
    writes = serializers.IntegerField(
        min_value=0, max_value=MAX_TURNS_PER_CALL, default=0, help_text="Writes to count (0)."
    )
    files = serializers.ListField(
        child=StrictCharField(max_length=500),
        required=False,
        max_length=200,
        help_text="Paths touched (kept up to ATLAS_SESSION_MAX_FILES per session).",
    )


class SessionEndIn(Input):
    reason = serializers.ChoiceField(
        choices=END_REASONS, default="completed", help_text="Why it ended."
    )
    summary = StrictCharField(
        required=False,
        allow_null=True,
        trim_whitespace=False,
        max_length=8000,
        help_text="A summary, kept as an episodic memory of the session.",
    )


class SessionCheckpointIn(Input):
    session_id = _id("The agent's session id.")
    text = StrictCharField(
        trim_whitespace=False, help_text="The checkpoint (ATLAS_MAX_MEMORY_CHARS at most)."
    )


class SessionCheckpointOut(serializers.Serializer[Any]):
    id = serializers.CharField(help_text="The episodic memory's id.")
    memory_type = serializers.CharField(help_text="episodic.")
    session_id = serializers.CharField(help_text="The session.")


class SessionOut(serializers.Serializer[Session]):
    session_id = serializers.CharField(source="external_id", help_text="The agent's session id.")
    agent = serializers.CharField(source="agent.slug", help_text="The agent's slug.")
    project_key = serializers.CharField(
        source="project.key", allow_null=True, default=None, help_text="Its project."
    )
    machine_key = serializers.CharField(
        source="machine.key", allow_null=True, default=None, help_text="The machine it ran on."
    )
    started_at = serializers.DateTimeField(help_text="Start, server time.")
    last_activity_at = serializers.DateTimeField(help_text="Last turn or touch.")
    ended_at = serializers.DateTimeField(allow_null=True, help_text="End (null: open).")
    end_reason = serializers.CharField(help_text="Why it ended (empty: open).")
    turns = serializers.IntegerField(help_text="Turns counted.")
    writes = serializers.IntegerField(help_text="Writes counted.")
    files_touched = serializers.ListField(child=serializers.CharField(), help_text="Files.")
    summary_memory_id = serializers.CharField(
        allow_blank=True, help_text="The summary's memory id (empty: none)."
    )


class SessionListIn(Input):
    agent = serializers.RegexField(SLUG, required=False, max_length=50, help_text="One agent.")
    open = serializers.BooleanField(required=False, default=False, help_text="Open ones only.")
    limit = serializers.IntegerField(min_value=1, max_value=200, default=50, help_text="At most.")


class SessionListOut(serializers.Serializer[Any]):
    results = SessionOut(many=True, help_text="Sessions, newest first.")


# --- tasks -------------------------------------------------------------------------------------
class TaskIn(Input):
    title = StrictCharField(max_length=300, help_text="What is to be done.")
    description = _text("Details.", 20_000)
    priority = serializers.ChoiceField(
        choices=Task.Priority.values, default=Task.Priority.NORMAL, help_text="Priority."
    )
    tags = _tags()
    parent_id = _pk("A parent task of the user.", required=False)
    project_key = serializers.RegexField(
        KEY, required=False, allow_null=True, help_text=PROJECT_KEY
    )


class TransitionIn(Input):
    to_state = serializers.ChoiceField(choices=Task.State.values, help_text="The new state.")
    expected_version = serializers.IntegerField(
        min_value=1, max_value=MAX_ID, help_text="The version the client last saw (else 409)."
    )
    outcome = StrictCharField(
        required=False,
        allow_null=True,
        max_length=20_000,
        trim_whitespace=False,
        help_text="The result, for a finished task.",
    )


class TaskOut(serializers.Serializer[Task]):
    id = serializers.IntegerField(help_text="The task's id.")
    title = serializers.CharField(help_text="Title.")
    description = serializers.CharField(help_text="Details.")
    priority = serializers.CharField(help_text="low | normal | high | urgent.")
    tags = serializers.ListField(child=serializers.CharField(), help_text="Labels.")
    state = serializers.CharField(help_text="The state-machine state.")
    version = serializers.IntegerField(help_text="Name it in the next transition.")
    outcome = serializers.CharField(help_text="The result (empty: none yet).")
    agent = serializers.CharField(
        source="agent.slug", allow_null=True, default=None, help_text="Its agent."
    )
    project_key = serializers.CharField(
        source="project.key", allow_null=True, default=None, help_text="Its project."
    )
    parent_id = serializers.IntegerField(allow_null=True, help_text="Parent task.")
    created_at = serializers.DateTimeField(help_text="Created.")
    updated_at = serializers.DateTimeField(help_text="Last change.")


class TaskListIn(Input):
    state = serializers.ChoiceField(
        choices=Task.State.values, required=False, help_text="One state only."
    )
    project = serializers.RegexField(KEY, required=False, help_text=PROJECT_KEY)
    limit = serializers.IntegerField(min_value=1, max_value=200, default=50, help_text="At most.")


class TaskListOut(serializers.Serializer[Any]):
    results = TaskOut(many=True, help_text="Tasks, most recently changed first.")


# --- messages ----------------------------------------------------------------------------------
class MessageIn(Input):
    to_agent = serializers.RegexField(SLUG, max_length=50, help_text="The recipient agent.")
    to_user = serializers.RegexField(
        r"^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$",
        required=False,
        allow_null=True,
        help_text="The recipient's user (external id) in this tenant; default: the same user.",
    )
    kind = serializers.ChoiceField(
        choices=Message.Kind.values, default=Message.Kind.NOTE, help_text="What it is."
    )
    priority = serializers.ChoiceField(
        choices=Task.Priority.values, default=Task.Priority.NORMAL, help_text="Priority."
    )
    subject = _text("Subject line.", 300)
    body = StrictCharField(
        trim_whitespace=False, help_text="The text (at most ATLAS_MESSAGE_MAX_CHARS characters)."
    )
    tags = _tags()

    def validate_body(self, value: str) -> str:
        if len(value) > settings.ATLAS_MESSAGE_MAX_CHARS:
            raise serializers.ValidationError("Too long.")
        return value


class ReplyIn(Input):
    body = StrictCharField(trim_whitespace=False, help_text="The reply's text.")
    subject = StrictCharField(
        required=False, allow_null=True, max_length=300, help_text="Default: `Re: <subject>`."
    )
    kind = serializers.ChoiceField(
        choices=Message.Kind.values, default=Message.Kind.ANSWER, help_text="What it is."
    )


class MessageOut(serializers.Serializer[Message]):
    id = serializers.IntegerField(help_text="The message's id.")
    sender = serializers.CharField(source="sender.slug", help_text="Sending agent.")
    sender_user = serializers.CharField(source="sender.user.external_id", help_text="Its user.")
    recipient = serializers.CharField(source="recipient.slug", help_text="Receiving agent.")
    recipient_user = serializers.CharField(
        source="recipient.user.external_id", help_text="Its user."
    )
    kind = serializers.CharField(help_text="note | question | answer | handoff | alert.")
    priority = serializers.CharField(help_text="low | normal | high | urgent.")
    subject = serializers.CharField(help_text="Subject line.")
    body = serializers.CharField(help_text="The text.")
    tags = serializers.ListField(child=serializers.CharField(), help_text="Labels.")
    thread = serializers.CharField(help_text="The thread it belongs to.")
    reply_to = serializers.IntegerField(
        source="reply_to_id", allow_null=True, help_text="The message it answers."
    )
    created_at = serializers.DateTimeField(help_text="Sent.")
    acknowledged_at = serializers.DateTimeField(
        allow_null=True, help_text="Acknowledged by the recipient (null: unread)."
    )


class InboxIn(Input):
    unread = serializers.BooleanField(required=False, default=False, help_text="Unread only.")
    limit = serializers.IntegerField(min_value=1, max_value=200, default=50, help_text="At most.")


class InboxOut(serializers.Serializer[Any]):
    results = MessageOut(many=True, help_text="Messages, newest first.")


# --- memories an agent writes (batch only) -----------------------------------------------------
class MemoryNoteIn(Input):
    text = StrictCharField(
        trim_whitespace=False, help_text="The decision or note (ATLAS_MAX_MEMORY_CHARS at most)."
    )
    fact_type = serializers.ChoiceField(
        choices=("preference", "identity", "constraint", "world"),
        required=False,
        allow_null=True,
        help_text="Kind of fact.",
    )
    tags = _tags()
    project_key = serializers.RegexField(
        KEY, required=False, allow_null=True, help_text=PROJECT_KEY
    )
    session_id = _id("The session it was written in.", required=False)
    supersedes = serializers.ListField(
        child=StrictCharField(max_length=200),
        required=False,
        max_length=50,
        help_text="Ids of the user's current facts this one replaces (they stay, flagged).",
    )


class MemoryForgetIn(Input):
    memory_id = StrictCharField(max_length=200, help_text="The memory to forget.")


class MemoryForgetOut(serializers.Serializer[Any]):
    id = serializers.CharField(help_text="The memory forgotten.")
    forgotten = serializers.CharField(help_text="`true`.")


class MemoryRefOut(serializers.Serializer[Any]):
    id = serializers.CharField(help_text="The memory's id.")
    memory_type = serializers.CharField(help_text="semantic.")
    created_at = serializers.DateTimeField(help_text="When Atlas stored it.")


# --- memory files (sync-memories) --------------------------------------------------------------
def _hash(help_text: str, *, required: bool) -> Any:
    return serializers.RegexField(
        KEY, required=required, allow_null=not required, allow_blank=False, help_text=help_text
    )


class MemoryFilePutIn(Input):
    project_key = serializers.RegexField(KEY, help_text=PROJECT_KEY)
    path = StrictCharField(max_length=500, help_text="Relative to the memory folder.")
    content = StrictCharField(
        trim_whitespace=False, help_text="The whole file (ATLAS_MAX_MEMORY_CHARS at most)."
    )
    base_hash = _hash(
        "SHA-256 of the version this edit is based on (none: a file never synced).",
        required=False,
    )
    machine_key = _id("The machine it was edited on.", required=False)


class MemoryFileDeleteIn(Input):
    project_key = serializers.RegexField(KEY, help_text=PROJECT_KEY)
    path = StrictCharField(max_length=500, help_text="Relative to the memory folder.")
    base_hash = _hash("SHA-256 of the version that was deleted.", required=True)
    machine_key = _id("The machine it was deleted on.", required=False)


class MemoryFileOut(serializers.Serializer[Any]):
    project_key = serializers.CharField(source="project.key", help_text="Its project.")
    path = serializers.CharField(help_text="Relative to the memory folder.")
    content_hash = serializers.CharField(help_text="SHA-256 of the current version.")
    version = serializers.IntegerField(help_text="Versions so far (a delete counts).")
    memory_id = serializers.CharField(help_text="The current version's memory (empty: deleted).")
    machine_key = serializers.CharField(help_text="Where the last change was made.")
    deleted = serializers.BooleanField(help_text="Deleted (a tombstone).")
    updated_at = serializers.DateTimeField(help_text="Last change, server time.")


class MemoryFileListIn(Input):
    project = serializers.RegexField(KEY, help_text=PROJECT_KEY)
    content = serializers.BooleanField(
        required=False, default=False, help_text="Include each live file's text."
    )


class MemoryFileWithText(MemoryFileOut):
    content = serializers.CharField(
        allow_null=True, required=False, help_text="The text (with `content=true`)."
    )


class MemoryFileListOut(serializers.Serializer[Any]):
    results = MemoryFileWithText(many=True, help_text="The project's files, by path.")
