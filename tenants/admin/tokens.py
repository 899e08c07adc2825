"""Platform tokens (secret shown once), scoped keys (read-only, invalidate) and operators."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from tenants.admin.base import ScopedModelAdmin
from tenants.admin.confirm import confirmation
from tenants.admin.forms import OperatorAddForm, TokenIssueForm
from tenants.admin.site import site
from tenants.models import Operator, PlatformToken, ScopedKey
from tenants.services.scoped_keys import scoped_key_invalidate
from tenants.services.tokens import IssuedToken, token_issue, token_revoke
from tenants.services.users import operator_create


def token_issued_page(
    model_admin: admin.ModelAdmin,  # type: ignore[type-arg]
    request: HttpRequest,
    issued: IssuedToken,
) -> HttpResponse:
    """The one page that shows a new token's secret: once, never cached."""
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Token issued",
        "opts": model_admin.opts,
        "token": issued.token,
        "secret": issued.secret,
    }
    response = TemplateResponse(request, "admin/atlas/token_issued.html", context)
    response["Cache-Control"] = "no-store"
    return response


@admin.register(PlatformToken, site=site)
class PlatformTokenAdmin(ScopedModelAdmin):
    tenant_path = "tenant"
    add_form_class = TokenIssueForm
    add_title = "Issue a token"
    list_display = [
        "name",
        "tenant",
        "scope_label",
        "lookup",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = [("tenant", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["tenant", "user"]
    search_fields = ["name", "lookup", "user__external_id"]
    fields = (
        "name",
        "tenant",
        "user",
        "allow_catalog",
        "allow_provisioning",
        "lookup",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )
    readonly_fields = fields
    actions = ["revoke"]

    @admin.display(description="scope")
    def scope_label(self, token: PlatformToken) -> str:
        return f"user {token.user.external_id}" if token.user else "whole tenant"

    def perform_add(self, request: HttpRequest, form: Any) -> HttpResponse:
        data = form.cleaned_data
        issued = token_issue(
            tenant=data["tenant"],
            user=data["user"],
            name=data["name"],
            expires_at=data["expires_at"],
            allow_catalog=data["allow_catalog"],
            allow_provisioning=data["allow_provisioning"],
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
