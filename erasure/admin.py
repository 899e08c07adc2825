"""Forget requests in the Atlas admin: list with status filters, an "open a request" form
(prefillable by link: ``forget_request_form_url``), approve / reject / retry buttons for tenant
and platform admins (checked again on the server, and once more by the services), and the
receipt. Scoping is ``ScopedModelAdmin``'s: another tenant's request is not found."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from atlas_platform.exceptions import AtlasError
from erasure.models import ErasureProgress, ForgetRequest
from erasure.selectors import forget_request_preview
from erasure.services import (
    OperatorPrincipal,
    forget_request_approve,
    forget_request_open,
    forget_request_reject,
    forget_request_retry,
)
from memory.public import register_forget_handoff
from tenants.admin.base import ReadOnlyInline, ScopedForm, ScopedModelAdmin
from tenants.admin.site import site
from tenants.models import User
from tenants.scoping import OperatorScope

_ID_SEPARATORS = re.compile(r"[\s,]+")


def forget_request_form_url(*, user_pk: int, memory_ids: list[str] | None = None) -> str:
    """The admin's open-request form prefilled for a user (and memory ids): what the memory
    inspector links to."""
    query: dict[str, str] = {"user": str(user_pk)}
    if memory_ids:
        query["ids"] = ",".join(memory_ids)
    return f"{reverse('admin:erasure_forgetrequest_add')}?{urlencode(query)}"


register_forget_handoff(
    lambda user, ids: forget_request_form_url(user_pk=user.pk, memory_ids=list(ids))
)


class ForgetRequestForm(ScopedForm):
    user = forms.ModelChoiceField(queryset=User.objects.none(), help_text="The memory subject.")
    scope_kind = forms.ChoiceField(
        label="Scope",
        choices=ForgetRequest.Scope.choices,
        help_text="Listed ids, everything whose text contains the query, or all of the user's.",
    )
    memory_ids = forms.CharField(
        label="Memory ids",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Scope 'listed ids': separated by commas, spaces or new lines.",
    )
    query = forms.CharField(
        required=False,
        max_length=500,
        help_text="Scope 'query': a phrase (case-insensitive). Wiped once resolved into ids.",
    )
    include_supporting_episodes = forms.BooleanField(
        required=False, help_text="Also erase the episodes that supported erased facts."
    )
    delete_user_record = forms.BooleanField(
        required=False,
        help_text="Scope 'all': also delete the user, its tokens and its cluster key.",
    )

    def clean_memory_ids(self) -> list[str]:
        raw: str = self.cleaned_data.get("memory_ids") or ""
        return [i for i in _ID_SEPARATORS.split(raw) if i]


class RejectForm(forms.Form):
    reason = forms.CharField(max_length=2000)


class ErasureProgressInline(ReadOnlyInline):
    model = ErasureProgress
    verbose_name = "index"
    verbose_name_plural = "erasure progress per index"
    fields = ("kind", "deleted", "pages", "done", "remaining", "updated_at")
    readonly_fields = fields


@admin.register(ForgetRequest, site=site)
class ForgetRequestAdmin(ScopedModelAdmin):
    tenant_path = "tenant"
    add_form_class = ForgetRequestForm
    add_title = "Open a forget request"
    change_form_template = "admin/erasure/forgetrequest/change_form.html"
    list_display = [
        "id",
        "tenant",
        "subject",
        "scope",
        "status",
        "requested_by",
        "approved_by",
        "created_at",
        "finished_at",
    ]
    list_filter = ["status", "scope", ("tenant", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["tenant", "user"]
    fields = (
        "tenant",
        "subject",
        "scope",
        "status",
        "reason",
        "target_count",
        "query",
        "include_supporting_episodes",
        "delete_user_record",
        "requested_by",
        "approved_by",
        "retry_count",
        "created_at",
        "decided_at",
        "started_at",
        "finished_at",
        "verified",
        "receipt_link",
    )
    readonly_fields = fields
    inlines = [ErasureProgressInline]
    actions = ["retry_failed"]

    def get_inlines(self, request: HttpRequest, obj: ForgetRequest | None) -> list[Any]:
        # Progress rows exist once the job has started: before that the inline would be an
        # empty bar under the request.
        if obj is None or not obj.progress.exists():
            return []
        return list(self.inlines)

    @admin.display(description="user")
    def subject(self, request: ForgetRequest) -> str:
        return request.user.external_id if request.user else f"(deleted user #{request.user_ref})"

    @admin.display(description="requested by")
    def requested_by(self, request: ForgetRequest) -> str:
        return request.requested_by_label

    @admin.display(description="approved by")
    def approved_by(self, request: ForgetRequest) -> str:
        return request.approver_label or "—"

    @admin.display(description="targets")
    def target_count(self, request: ForgetRequest) -> str:
        if request.scope == ForgetRequest.Scope.USER:
            return "all of the user's memories"
        if request.scope == ForgetRequest.Scope.QUERY and not request.targets_resolved:
            return "resolved when the job starts"
        return f"{len(request.memory_ids)} id(s)"

    @admin.display(description="receipt")
    def receipt_link(self, request: ForgetRequest) -> str:
        if request.receipt is None:
            return "—"
        url = reverse("admin:erasure_forgetrequest_receipt", args=[request.pk])
        return format_html('<a href="{}">View receipt</a>', url)

    # --- the open-request form ---------------------------------------------------------------
    def add_form_initial(self, request: HttpRequest) -> dict[str, Any]:
        initial: dict[str, Any] = {}
        if request.GET.get("user", "").isdigit():
            initial["user"] = int(request.GET["user"])
        if request.GET.get("ids"):
            initial["memory_ids"] = "\n".join(_ID_SEPARATORS.split(request.GET["ids"].strip()))
            initial["scope_kind"] = ForgetRequest.Scope.IDS
        return initial

    def perform_add(self, request: HttpRequest, form: Any) -> HttpResponse:
        data = form.cleaned_data
        opened = forget_request_open(
            user=data["user"],
            scope=data["scope_kind"],
            memory_ids=data["memory_ids"],
            query=data["query"],
            include_supporting_episodes=data["include_supporting_episodes"],
            delete_user_record=data["delete_user_record"],
            by=self._principal(request),
        )
        self.message_user(request, f"Opened forget request {opened.pk}.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:erasure_forgetrequest_change", args=[opened.pk]))

    # --- decisions -----------------------------------------------------------------------------
    def get_urls(self) -> list[URLPattern]:
        def view(name: str, fn: Any) -> URLPattern:
            pattern: URLPattern = path(
                f"<int:pk>/{name}/",
                self.admin_site.admin_view(fn),
                name=f"erasure_forgetrequest_{name}",
            )
            return pattern

        return [
            view("approve", self.approve_view),
            view("reject", self.reject_view),
            view("retry", self.retry_view),
            view("receipt", self.receipt_view),
            *super().get_urls(),
        ]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        obj = self._reachable(request, object_id)
        context = {
            **(extra_context or {}),
            "can_decide": self.has_act_permission(request, obj),
            "reject_form": RejectForm(),
        }
        return super().change_view(request, object_id, form_url, context)

    def _reachable(self, request: HttpRequest, pk: Any) -> ForgetRequest:
        """The request if it is in the operator's scope; another tenant's is not found."""
        found: ForgetRequest | None = None
        if str(pk).isdigit():
            found = self.get_queryset(request).filter(pk=pk).first()
        if found is None:
            raise Http404("No such forget request.")
        return found

    def _principal(self, request: HttpRequest) -> OperatorPrincipal:
        scope: OperatorScope | None = self.scope(request)
        if scope is None:
            raise PermissionDenied
        return OperatorPrincipal(request.user, scope)

    def _decide(self, request: HttpRequest, pk: int, decide: Any, verb: str) -> HttpResponse:
        obj = self._reachable(request, pk)
        if not self.has_act_permission(request, obj):
            raise PermissionDenied
        try:
            decide(obj, self._principal(request))
        except AtlasError as exc:
            self.message_user(request, f"Not {verb}: {exc.message}", messages.ERROR)
        else:
            self.message_user(request, f"Forget request {pk} {verb}.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:erasure_forgetrequest_change", args=[pk]))

    def approve_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """A confirmation step first (what would be erased, counted per index), then the
        decision: only a POST with ``confirm`` approves."""
        if request.method == "POST" and request.POST.get("confirm") == "yes":
            return self._decide(
                request, pk, lambda obj, by: forget_request_approve(request=obj, by=by), "approved"
            )
        obj = self._reachable(request, pk)
        if not self.has_act_permission(request, obj):
            raise PermissionDenied
        try:
            counts = forget_request_preview(request=obj)
        except AtlasError as exc:
            counts, problem = None, exc.public[0]
        else:
            problem = ""
        context = {
            **self.admin_site.each_context(request),
            "title": f"Approve forget request {obj.pk}?",
            "opts": self.opts,
            "original": obj,
            "counts": counts,
            "total": sum(counts.values()) if counts else None,
            "problem": problem,
            "four_eyes": obj.tenant.erasure_requires_second_operator,
        }
        return TemplateResponse(
            request, "admin/erasure/forgetrequest/confirm_approve.html", context
        )

    def reject_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        form = RejectForm(request.POST or None)

        def reject(obj: ForgetRequest, by: OperatorPrincipal) -> None:
            if not form.is_valid():
                raise AtlasError("Say why the request is rejected.", code="bad_reason")
            forget_request_reject(request=obj, by=by, reason=form.cleaned_data["reason"])

        return require_POST(lambda r: self._decide(r, pk, reject, "rejected"))(request)

    def retry_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        return require_POST(
            lambda r: self._decide(
                r, pk, lambda obj, by: forget_request_retry(request=obj, by=by), "queued again"
            )
        )(request)

    def receipt_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        obj = self._reachable(request, pk)
        if obj.receipt is None:
            raise Http404("This request has no receipt yet.")
        context = {
            **self.admin_site.each_context(request),
            "title": f"Receipt of forget request {obj.pk}",
            "opts": self.opts,
            "original": obj,
            "receipt": obj.receipt,
            "receipt_json": json.dumps(obj.receipt, indent=2),
        }
        return TemplateResponse(request, "admin/erasure/forgetrequest/receipt.html", context)

    @admin.action(description="Retry selected failed requests", permissions=["act"])
    def retry_failed(self, request: HttpRequest, queryset: QuerySet[ForgetRequest]) -> None:
        by = self._principal(request)
        self.each(
            request,
            queryset,
            lambda r: forget_request_retry(request=r, by=by),
            "Queued again",
            label=lambda r: str(r.pk),
            failure="Request {label}: {message}",
        )
