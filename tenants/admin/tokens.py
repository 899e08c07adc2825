"""Platform tokens (secret shown once), scoped keys (read-only, invalidate) and operators."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from atlas_platform.cluster import get_cluster
from tenants.admin.base import ScopedModelAdmin
from tenants.admin.confirm import confirmation
from tenants.admin.forms import OperatorAddForm, TokenIssueForm
from tenants.admin.site import site
from tenants.models import Operator, PlatformToken, ScopedKey
from tenants.services.scoped_keys import scoped_key_invalidate
from tenants.services.tokens import IssuedToken, token_issue, token_revoke
from tenants.services.users import operator_create

ISSUED_SESSION_KEY = "atlas.issued-token.{pk}"


def token_issued_page(
    model_admin: admin.ModelAdmin,  # type: ignore[type-arg]
    request: HttpRequest,
    issued: IssuedToken,
) -> HttpResponse:
    """After a token is issued: post-redirect-get to the page that shows its secret once. The
    secret waits in the operator's session until that page pops it, so reloading the page (or
    the POST's URL) issues nothing and shows the secret no second time."""
    request.session[ISSUED_SESSION_KEY.format(pk=issued.token.pk)] = issued.secret
    return HttpResponseRedirect(
        reverse("admin:tenants_platformtoken_issued", args=[issued.token.pk])
    )


class RightFilter(admin.SimpleListFilter):
    """Tokens by what they may do (``PlatformToken.rights``)."""

    title = "rights"
    parameter_name = "right"
    LOOKUPS: dict[str, tuple[str, dict[str, Any]]] = {
        "user": ("one user (user token)", {"user__isnull": False}),
        "agent": ("agent-bound", {"user__isnull": False, "agent_slug__gt": ""}),
        "tenant": (
            "tenant, no extra right",
            {
                "user__isnull": True,
                "allow_catalog": False,
                "allow_provisioning": False,
                "allow_export": False,
            },
        ),
        "catalog": ("catalog", {"user__isnull": True, "allow_catalog": True}),
        "provisioning": ("provisioning", {"user__isnull": True, "allow_provisioning": True}),
        "export": ("export any user", {"user__isnull": True, "allow_export": True}),
    }

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(value, label) for value, (label, _) in self.LOOKUPS.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        chosen = self.LOOKUPS.get(self.value() or "")
        return queryset.filter(**chosen[1]) if chosen else queryset


@admin.register(PlatformToken, site=site)
class PlatformTokenAdmin(ScopedModelAdmin):
    tenant_path = "tenant"
    add_form_class = TokenIssueForm
    add_title = "Issue a token"
    list_display = [
        "name",
        "tenant",
        "scope_label",
        "rights_label",
        "lookup",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = [RightFilter, ("tenant", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["tenant", "user"]
    search_fields = ["name", "lookup", "user__external_id"]
    fields = (
        "name",
        "tenant",
        "user",
        "allow_catalog",
        "allow_provisioning",
        "allow_export",
        "lookup",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )
    readonly_fields = fields
    actions = ["revoke"]

    @admin.display(description="acts for")
    def scope_label(self, token: PlatformToken) -> str:
        return f"user {token.user.external_id}" if token.user else "any user of the tenant"

    @admin.display(description="rights")
    def rights_label(self, token: PlatformToken) -> str:
        agent = [f"agent {token.agent_slug}"] if token.agent_slug else []
        return ", ".join([*token.rights, *agent])

    def get_urls(self) -> list[URLPattern]:
        issued = path(
            "<int:pk>/issued/",
            self.admin_site.admin_view(self.issued_view),
            name="tenants_platformtoken_issued",
        )
        return [issued, *super().get_urls()]

    def issued_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The one page that shows a new token's secret: once (popped from the session), never
        cached; a reload says it was shown and issues nothing."""
        token = self.get_queryset(request).filter(pk=pk).select_related("tenant", "user").first()
        if token is None:
            raise Http404("No such token.")
        secret = request.session.pop(ISSUED_SESSION_KEY.format(pk=pk), None)
        context = {
            **self.admin_site.each_context(request),
            "title": "Token issued",
            "opts": self.opts,
            "token": token,
            "secret": secret,
        }
        response = TemplateResponse(request, "admin/atlas/token_issued.html", context)
        response["Cache-Control"] = "no-store"
        return response

    def add_form_initial(self, request: HttpRequest) -> dict[str, Any]:
        tenant = request.GET.get("tenant", "")
        return {"tenant": int(tenant)} if tenant.isdigit() and len(tenant) < 10 else {}

    def perform_add(self, request: HttpRequest, form: Any) -> HttpResponse:
        data = form.cleaned_data
        issued = token_issue(
            tenant=data["tenant"],
            user=data["user"],
            name=data["name"],
            expires_at=data["expires_at"],
            allow_catalog=data["allow_catalog"],
            allow_provisioning=data["allow_provisioning"],
            allow_export=data["allow_export"],
        )
        return token_issued_page(self, request, issued)

    @admin.action(description="Revoke selected tokens", permissions=["act"])
    def revoke(
        self, request: HttpRequest, queryset: QuerySet[PlatformToken]
    ) -> HttpResponse | None:
        page = confirmation(
            self,
            request,
            queryset,
            action="revoke",
            title="Revoke tokens",
            consequence="Agents using these tokens are refused from their next request on "
            "(401 token_revoked). A revoked token cannot be restored: issue a new one.",
        )
        if page is not None:
            return page
        self.each(
            request, queryset, lambda t: token_revoke(token=t), "Revoked", label=lambda t: t.name
        )
        return None


@admin.register(ScopedKey, site=site)
class ScopedKeyAdmin(ScopedModelAdmin):
    """Users' scoped cluster keys: listed only where a search cluster exists (none without)."""

    tenant_path = "user__tenant"
    list_display = ["key_id", "user", "status", "created_at", "invalidated_at", "rotated_from"]
    list_filter = ["status"]
    list_select_related = ["user__tenant", "rotated_from"]
    search_fields = ["key_id", "user__external_id"]
    fields = (
        "key_id",
        "key_name",
        "user",
        "status",
        "created_at",
        "invalidated_at",
        "rotated_from",
    )
    readonly_fields = fields
    actions = ["invalidate"]

    def has_module_permission(self, request: HttpRequest) -> bool:
        return get_cluster() is not None and super().has_module_permission(request)

    @admin.action(description="Invalidate selected keys on the cluster", permissions=["act"])
    def invalidate(self, request: HttpRequest, queryset: QuerySet[ScopedKey]) -> None:
        self.each(
            request,
            queryset.exclude(status=ScopedKey.Status.INVALIDATED),
            lambda k: scoped_key_invalidate(key=k),
            "Invalidated",
            label=lambda k: k.key_id,
        )


@admin.register(Operator, site=site)
class OperatorAdmin(ScopedModelAdmin):
    tenant_path = "tenant"
    add_form_class = OperatorAddForm
    add_title = "Add an operator"
    list_display = ["account", "role", "tenant", "created_at"]
    list_filter = ["role", ("tenant", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["account", "tenant"]
    fields = (
        "account",
        "role",
        "tenant",
        "created_at",
    )
    readonly_fields = fields

    def perform_add(self, request: HttpRequest, form: Any) -> HttpResponse:
        data = form.cleaned_data
        operator = operator_create(
            username=data["username"],
            email=data["email"],
            password=data["password"],
            role=data["role"],
            tenant=data["tenant"],
        )
        self.message_user(request, f"Added operator {data['username']}.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:tenants_operator_change", args=[operator.pk]))
