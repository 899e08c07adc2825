"""Memory subjects: key status, add (with key), rotate / provision keys, disable / enable, and
the MCP client configuration for each user."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from atlas_platform.exceptions import AtlasError
from memory.mcp.client_config import client_configs, own_user_mcp_url, user_mcp_url
from tenants.admin.base import ReadOnlyInline, ScopedModelAdmin
from tenants.admin.forms import UserAddForm
from tenants.admin.inspector import MemoryInspector
from tenants.admin.site import site
from tenants.models import ScopedKey, User
from tenants.selectors import user_key_status
from tenants.services.scoped_keys import scoped_key_provision, scoped_key_rotate
from tenants.services.users import user_create, user_set_status

_KEY_COLOURS = {"active": "#107c10", "stale": "#b35c00", "pending_invalidation": "#ba2121"}
# The site's own address as the operator reached it, while a change page renders.
_base_url: ContextVar[str] = ContextVar("atlas_admin_base_url", default="http://127.0.0.1:8000/")


class ScopedKeyInline(ReadOnlyInline):
    model = ScopedKey
    fields = (
        "key_id",
        "status",
        "created_at",
        "invalidated_at",
        "rotated_from",
    )
    readonly_fields = fields
    show_change_link = False


@admin.register(User, site=site)
class UserAdmin(ScopedModelAdmin):
    tenant_path = "tenant"
    add_form_class = UserAddForm
    add_title = "Add a user"
    list_display = [
        "external_id",
        "tenant",
        "status",
        "key_status",
        "key_age",
        "last_rotation",
        "created_at",
        "memory_link",
    ]
    list_filter = [("tenant", admin.RelatedOnlyFieldListFilter), "status"]
    list_select_related = ["tenant"]
    search_fields = ["external_id", "display_name"]
    fields = (
        "tenant",
        "external_id",
        "display_name",
        "status",
        "created_at",
        "memory_inspector",
        "mcp_client_config",
    )
    readonly_fields = fields
    inlines = [ScopedKeyInline]
    actions = ["rotate_key", "provision_key", "consolidate", "disable", "enable"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).prefetch_related("scoped_keys")

    def get_urls(self) -> list[URLPattern]:
        return [*MemoryInspector(self).urls(), *super().get_urls()]

    @admin.display(description="memory")
    def memory_link(self, user: User) -> str:
        return format_html(
            '<a href="{}">inspect</a>', reverse("admin:tenants_user_memories", args=[user.pk])
        )

    @admin.display(description="memory inspector")
    def memory_inspector(self, user: User) -> str:
        links = [
            ("tenants_user_memories", "memories by type"),
            ("tenants_user_recall", "search (recall as this user)"),
            ("tenants_user_playbooks", "playbooks"),
        ]
        return format_html_join(
            " · ",
            '<a href="{}">{}</a>',
            ((reverse(f"admin:{name}", args=[user.pk]), label) for name, label in links),
        )

    @admin.display(description="key")
    def key_status(self, user: User) -> str:
        status = user_key_status(user=user)
        colour = _KEY_COLOURS.get(status.state, "#666")
        return format_html(
            '<span style="color:{}">{}</span>', colour, status.state.replace("_", " ")
        )

    @admin.display(description="key age")
    def key_age(self, user: User) -> str:
        age = user_key_status(user=user).age
        return "—" if age is None else f"{age.days} d"

    @admin.display(description="last rotation")
    def last_rotation(self, user: User) -> str:
        return user_key_status(user=user).last_rotated_at or "never"

    @admin.display(description="MCP client config")
    def mcp_client_config(self, user: User) -> SafeString:
        base = _base_url.get()
        url = user_mcp_url(base, user.external_id)
        issue = reverse("admin:tenants_platformtoken_add")
        return format_html(
            "<p>Replace <code>&lt;ATLAS_TOKEN&gt;</code> with a token for this user or for the "
            'tenant: <a href="{}">issue one under Platform tokens</a> (shown once). A token of '
            "this user alone may also use <code>{}</code>.</p><pre>{}</pre>",
            issue,
            own_user_mcp_url(base),
            client_configs(url),
        )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """Render the page here, while ``mcp_client_config`` knows the host it was reached on."""
        reset = _base_url.set(request.build_absolute_uri("/"))
        try:
            response = super().change_view(request, object_id, form_url, extra_context)
            if isinstance(response, TemplateResponse):
                response.render()
            return response
        finally:
            _base_url.reset(reset)

    def perform_add(self, request: HttpRequest, form: Any) -> HttpResponse:
        data = form.cleaned_data
        user = user_create(
            tenant=data["tenant"],
            external_id=data["external_id"],
            display_name=data["display_name"],
        )
        self.message_user(request, f"Added user {user.external_id}.", messages.SUCCESS)
        if data["provision_key"]:
            self._try(request, lambda: scoped_key_provision(user=user), "Key not provisioned")
        return HttpResponseRedirect(reverse("admin:tenants_user_change", args=[user.pk]))

    def _try(self, request: HttpRequest, fn: Callable[[], Any], failure: str) -> bool:
        try:
            fn()
        except AtlasError as exc:
            self.message_user(request, f"{failure}: {exc.message}", messages.ERROR)
            return False
        return True

    @admin.action(description="Rotate scoped key", permissions=["act"])
    def rotate_key(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        done, failed = [], []
        for user in queryset:
            try:
                rotation = scoped_key_rotate(user=user)
            except AtlasError as exc:
                failed.append(
                    f"{user.external_id}: rotation failed, old key still valid. {exc.message}"
                )
                continue
            done.append(user.external_id)
            if not rotation.old_key_invalidated:
                failed.append(
                    f"{user.external_id}: new key active, but old key {rotation.old_key.key_id} "
                    "could not be invalidated yet; invalidate it from Scoped keys."
                )
        self.report(request, done, failed, "Rotated keys of")

    @admin.action(description="Provision scoped key", permissions=["act"])
    def provision_key(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self._each(request, queryset, lambda u: scoped_key_provision(user=u), "Provisioned keys of")

    @admin.action(description="Consolidate memories now", permissions=["act"])
    def consolidate(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        from consolidation.services.triggers import consolidation_request

        self._each(
            request,
            queryset,
            lambda u: consolidation_request(user=u, trigger="on_demand"),
            "Consolidation queued for",
        )

    @admin.action(description="Disable selected users", permissions=["act"])
    def disable(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self._each(
            request, queryset, lambda u: user_set_status(user=u, status="disabled"), "Disabled"
        )

    @admin.action(description="Enable selected users", permissions=["act"])
    def enable(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self._each(request, queryset, lambda u: user_set_status(user=u, status="active"), "Enabled")

    def _each(
        self, request: HttpRequest, queryset: QuerySet[User], fn: Callable[[User], Any], verb: str
    ) -> None:
        done, failed = [], []
        for user in queryset:
            try:
                fn(user)
                done.append(user.external_id)
            except AtlasError as exc:
                failed.append(f"{user.external_id}: {exc.message}")
        self.report(request, done, failed, verb)
