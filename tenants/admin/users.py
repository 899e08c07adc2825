"""Memory subjects: key status, add (with key), rotate / provision keys, disable / enable, and
the MCP client configuration for each user."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, reverse
from django.utils.html import format_html

from atlas_platform.cluster import get_cluster
from atlas_platform.exceptions import AtlasError
from tenants.admin.base import ReadOnlyInline, ScopedModelAdmin, extend_admin
from tenants.admin.forms import UserAddForm
from tenants.admin.site import site
from tenants.models import ScopedKey, User
from tenants.selectors import user_key_status
from tenants.services.legal_hold import user_legal_hold_place, user_legal_hold_release
from tenants.services.scoped_keys import scoped_key_provision, scoped_key_rotate
from tenants.services.users import user_create, user_set_status

KEY_COLUMNS = ("key_status", "key_age", "last_rotation")
KEY_ACTIONS = ("rotate_key", "provision_key")
_KEY_CLASSES = {"active": "atlas-ok", "stale": "atlas-flag", "pending_invalidation": "atlas-alert"}
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
    add_title = "Add an end user"
    list_display = [
        "external_id",
        "tenant",
        "status_shown",
        "key_status",
        "key_age",
        "last_rotation",
        "created_at",
    ]
    list_filter = [
        ("tenant", admin.RelatedOnlyFieldListFilter),
        "status",
        ("legal_hold_at", admin.EmptyFieldListFilter),
    ]
    list_select_related = ["tenant"]
    search_fields = ["external_id", "display_name"]
    fields = (
        "tenant",
        "external_id",
        "display_name",
        "status",
        "created_at",
        "legal_hold_at",
        "legal_hold_by",
    )
    readonly_fields = fields
    inlines = [ScopedKeyInline]
    actions: list[Any] = [
        "rotate_key",
        "provision_key",
        "disable",
        "enable",
        "place_legal_hold",
        "release_legal_hold",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).prefetch_related("scoped_keys")

    # Keys come with a search cluster: without one (the embedded store) no key column, action
    # or inline is shown, since none could work.
    def get_list_display(self, request: HttpRequest) -> Any:
        shown = list(super().get_list_display(request))
        return shown if keys_apply() else [c for c in shown if c not in KEY_COLUMNS]

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions: dict[str, Any] = super().get_actions(request)
        if not keys_apply():
            for name in KEY_ACTIONS:
                actions.pop(name, None)
        return actions

    def get_inlines(self, request: HttpRequest, obj: Any) -> list[Any]:
        return list(super().get_inlines(request, obj)) if keys_apply() else []

    def get_urls(self) -> list[URLPattern]:
        return [*(p for urls in USER_URLS for p in urls(self)), *super().get_urls()]

    # A legal hold shows in the status column (one column more would not fit the list at 1280 px;
    # tests/browser/test_wide_tables.py), and the filter beside it finds every held user.
    @admin.display(description="status", ordering="status")
    def status_shown(self, user: User) -> str:
        shown = user.get_status_display()
        return f"{shown} · legal hold" if user.legal_hold_at else shown

    @admin.display(description="key")
    def key_status(self, user: User) -> str:
        status = user_key_status(user=user)
        css = _KEY_CLASSES.get(status.state, "atlas-muted")  # colours per theme: base_site
        return format_html('<span class="{}">{}</span>', css, status.state_label)

    @admin.display(description="key age")
    def key_age(self, user: User) -> str:
        age = user_key_status(user=user).age
        return "—" if age is None else f"{age.days} d"

    @admin.display(description="last rotation")
    def last_rotation(self, user: User) -> str:
        return user_key_status(user=user).last_rotated_at or "never"

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """Render the page here, while fields know the host it was reached on (``site_url``)."""
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
        if data.get("provision_key"):
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
        def rotate(user: User) -> str | None:
            rotation = scoped_key_rotate(user=user)
            if rotation.old_key_invalidated:
                return None
            return (
                f"{user.external_id}: new key active, but old key {rotation.old_key.key_id} "
                "could not be invalidated yet; invalidate it from Scoped keys."
            )

        self.each(
            request,
            queryset,
            rotate,
            "Rotated keys of",
            label=external_id,
            failure="{label}: not rotated, nothing changed (a current key stays valid). {message}",
        )

    @admin.action(description="Provision scoped key", permissions=["act"])
    def provision_key(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self.each(
            request,
            queryset,
            lambda u: scoped_key_provision(user=u),
            "Provisioned keys of",
            label=external_id,
        )

    @admin.action(description="Disable selected users", permissions=["act"])
    def disable(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self.each(
            request,
            queryset,
            lambda u: user_set_status(user=u, status="disabled"),
            "Disabled",
            label=external_id,
        )

    @admin.action(description="Enable selected users", permissions=["act"])
    def enable(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self.each(
            request,
            queryset,
            lambda u: user_set_status(user=u, status="active"),
            "Enabled",
            label=external_id,
        )

    @admin.action(description="Place a legal hold (pauses retention)", permissions=["act"])
    def place_legal_hold(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self.each(
            request,
            queryset,
            lambda u: user_legal_hold_place(user=u),
            "Placed a legal hold on",
            label=external_id,
        )

    @admin.action(description="Release the legal hold", permissions=["act"])
    def release_legal_hold(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self.each(
            request,
            queryset,
            lambda u: user_legal_hold_release(user=u),
            "Released the legal hold on",
            label=external_id,
        )


def keys_apply() -> bool:
    """Whether scoped keys exist in this deployment: only with a search cluster."""
    return get_cluster() is not None


def external_id(user: User) -> str:
    return user.external_id


def site_url() -> str:
    """The site's own address as the operator reached it, while a user page renders."""
    return _base_url.get()


# --- EXTENSION POINT ---------------------------------------------------------------------------
# Apps above tenants add to the user pages from their admin module: list columns and change-page
# fields (functions of the user, decorated with ``admin.display``), bulk actions (functions of
# ``(model_admin, request, queryset)``, decorated with ``admin.action``) and pages (a function of
# the user admin returning URL patterns). memory adds its inspector; consolidation its action.
USER_URLS: list[Callable[[UserAdmin], list[URLPattern]]] = []


def extend_user_pages(
    *,
    columns: Sequence[Callable[[User], Any]] = (),
    fields: Sequence[Callable[[User], Any]] = (),
    actions: Sequence[Callable[..., None]] = (),
    urls: Callable[[UserAdmin], list[URLPattern]] | None = None,
) -> None:
    """Add to the user pages (idempotent: what is there already is not added twice)."""
    extend_admin(UserAdmin, columns=columns, fields=fields, actions=actions)
    if urls is not None and urls not in USER_URLS:
        USER_URLS.append(urls)
