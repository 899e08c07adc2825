"""Agents in the admin: agents and machines with presence, sessions, tasks with their
transitions, messages, projects. Tenant-scoped through ``ScopedModelAdmin``; read-only pages
(auditors read, never act); for tenant admins: issue a token bound to an agent (the agents
list's action, and the user page's "Issue an agent-bound token" form: agent and machine).
The tenant dashboard gains the agent activity panel (registered in ``AgentsConfig.ready``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from agents.models import Agent, Machine, Message, Presence, Project, Session, Task, TaskTransition
from agents.selectors import tenant_activity
from agents.services.agents import MACHINE_LABEL_MAX, agent_machine_token_issue, agent_token_issue
from atlas_platform.exceptions import AtlasError
from tenants.admin import charts
from tenants.admin.base import ReadOnlyInline, ScopedModelAdmin
from tenants.admin.dashboard import Panel, render_panel
from tenants.admin.site import site
from tenants.admin.tokens import token_issued_page
from tenants.admin.users import extend_user_pages
from tenants.models import Tenant, User

if TYPE_CHECKING:
    from tenants.admin.users import UserAdmin


class ScopedInline(ReadOnlyInline):
    """Rows of an object whose page the operator already reached through its scoped admin."""


class PresenceInline(ScopedInline):
    model = Presence
    fields = ("machine", "agent", "last_heartbeat_at", "heartbeats", "status", "session", "task")
    readonly_fields = fields

    @admin.display(description="status")
    def status(self, presence: Presence) -> str:
        return presence.status()


class AgentPresenceInline(PresenceInline):
    fk_name = "agent"


class MachinePresenceInline(PresenceInline):
    fk_name = "machine"


@admin.register(Agent, site=site)
class AgentAdmin(ScopedModelAdmin):
    tenant_path = "user__tenant"
    subject_path = "user"
    list_display = ["slug", "user", "display_name", "created_at"]
    list_select_related = ["user__tenant"]
    list_filter = [("user__tenant", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["slug", "user__external_id"]
    fields = ("user", "slug", "display_name", "created_at")
    readonly_fields = fields
    inlines = [AgentPresenceInline]
    actions = ["issue_token"]

    @admin.action(description="Issue a token bound to the selected agent", permissions=["act"])
    def issue_token(self, request: HttpRequest, queryset: QuerySet[Agent]) -> HttpResponse | None:
        agents = list(queryset.select_related("user__tenant")[:2])
        if len(agents) != 1:
            self.message_user(request, "Select exactly one agent.", messages.ERROR)
            return None
        agent = agents[0]
        try:
            issued = agent_token_issue(agent=agent, name=f"{agent.slug} ({agent.user.external_id})")
        except AtlasError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return None
        return token_issued_page(self, request, issued)


@admin.register(Machine, site=site)
class MachineAdmin(ScopedModelAdmin):
    tenant_path = "user__tenant"
    subject_path = "user"
    list_display = ["key", "label", "user", "os", "client_version", "last_seen_at"]
    list_select_related = ["user__tenant"]
    search_fields = ["key", "label", "user__external_id"]
    fields = ("user", "key", "label", "os", "client_version", "first_seen_at", "last_seen_at")
    readonly_fields = fields
    inlines = [MachinePresenceInline]
    actions = None


@admin.register(Project, site=site)
class ProjectAdmin(ScopedModelAdmin):
    tenant_path = "user__tenant"
    subject_path = "user"
    list_display = ["name", "user", "remote", "team_visible", "created_at"]
    list_select_related = ["user__tenant"]
    list_filter = ["team_visible"]
    search_fields = ["name", "remote", "key"]
    fields = ("user", "name", "key", "remote", "team_visible", "created_at")
    readonly_fields = fields
    actions = None


@admin.register(Session, site=site)
class SessionAdmin(ScopedModelAdmin):
    tenant_path = "agent__user__tenant"
    subject_path = "agent__user"
    list_display = ["external_id", "agent", "project", "started_at", "ended_at", "turns", "writes"]
    list_select_related = ["agent__user__tenant", "project"]
    list_filter = ["end_reason"]
    search_fields = ["external_id", "agent__slug", "agent__user__external_id"]
    fields = (
        "agent",
        "external_id",
        "project",
        "machine",
        "started_at",
        "last_activity_at",
        "ended_at",
        "end_reason",
        "turns",
        "writes",
        "files_touched",
        "summary_memory_id",
    )
    readonly_fields = fields
    actions = None


class TransitionInline(ScopedInline):
    model = TaskTransition
    fields = ("created_at", "agent", "from_state", "to_state", "expected_version", "result")
    readonly_fields = fields


@admin.register(Task, site=site)
class TaskAdmin(ScopedModelAdmin):
    tenant_path = "user__tenant"
    subject_path = "user"
    list_display = ["id", "title", "user", "agent", "state", "version", "priority", "updated_at"]
    list_select_related = ["user__tenant", "agent"]
    list_filter = ["state", "priority"]
    search_fields = ["title", "user__external_id"]
    fields = (
        "user",
        "agent",
        "project",
        "parent",
        "title",
        "description",
        "priority",
        "tags",
        "state",
        "version",
        "outcome",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields
    inlines = [TransitionInline]
    actions = None


@admin.register(Message, site=site)
class MessageAdmin(ScopedModelAdmin):
    tenant_path = "sender__user__tenant"
    subject_path = "sender__user"
    list_display = ["id", "sender", "recipient", "kind", "priority", "subject", "created_at"]
    list_select_related = ["sender__user__tenant", "recipient__user"]
    list_filter = ["kind", "priority"]
    search_fields = ["subject", "sender__slug", "recipient__slug"]
    fields = (
        "sender",
        "recipient",
        "kind",
        "priority",
        "subject",
        "body",
        "tags",
        "thread",
        "reply_to",
        "created_at",
        "acknowledged_at",
    )
    readonly_fields = fields
    actions = None


DAYS = 14


def activity_panel(request: HttpRequest, tenant: Tenant) -> Panel | None:
    """The tenant dashboard's agent activity: active agents, sessions per day, tasks by
    state (hidden while the tenant has no agents)."""
    activity = tenant_activity(tenant=tenant, days=DAYS)
    if not activity.agents:
        return None
    days = activity.sessions_per_day
    sessions = charts.stacked_bars(
        "Agent sessions per day",
        [f"{d:%d %b}" for d, _ in days],
        {"sessions": [n for _, n in days]},
    )
    states = activity.tasks_by_state
    tasks = charts.stacked_bars("Tasks by state", list(states), {"tasks": list(states.values())})
    body = render_panel(
        "agents.html", activity=activity, sessions_chart=sessions, tasks_chart=tasks
    )
    return Panel("agents", f"Agent activity (last {DAYS} days)", body)


# --- the user page: an agent-bound token for one machine ------------------------------------
class AgentTokenForm(forms.Form):
    agent = forms.SlugField(
        initial="claude-code",
        max_length=50,
        help_text="The agent the token acts as (registered on first use).",
    )
    machine = forms.CharField(
        max_length=MACHINE_LABEL_MAX,
        help_text="The machine it is for: one token per machine, each revoked alone.",
    )


@admin.display(description="atlas CLI")
def agent_token_link(user: User) -> str:
    return format_html(
        '<a href="{}">Issue an agent-bound token</a> (for <code>atlas login</code>; one per '
        "machine, shown once)",
        reverse("admin:tenants_user_agent_token", args=[user.pk]),
    )


def agent_token_urls(model_admin: UserAdmin) -> list[URLPattern]:
    def page(request: HttpRequest, pk: int) -> HttpResponse:
        return agent_token_page(model_admin, request, pk)

    view = model_admin.admin_site.admin_view(page)
    return [path("<int:pk>/agent-token/", view, name="tenants_user_agent_token")]


def agent_token_page(model_admin: UserAdmin, request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the form (agent, machine); POST: the token, shown once. Tenant and platform admins
    only; another tenant's user is a 404."""
    user = model_admin.get_queryset(request).filter(pk=pk).select_related("tenant").first()
    if user is None:
        raise Http404("No such user.")
    if not model_admin.has_act_permission(request, user):
        raise PermissionDenied
    form = AgentTokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            issued = agent_machine_token_issue(
                user=user,
                agent_slug=form.cleaned_data["agent"],
                machine=form.cleaned_data["machine"],
            )
        except AtlasError as exc:
            form.add_error(None, exc.message)
        else:
            return token_issued_page(model_admin, request, issued)
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": f"Issue an agent-bound token for {user.external_id}",
        "form": form,
        "submit_label": "Issue token",
    }
    return TemplateResponse(request, "admin/atlas/service_form.html", context)


extend_user_pages(fields=[agent_token_link], urls=agent_token_urls)
