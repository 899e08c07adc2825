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
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from atlas_platform.exceptions import AtlasError
from erasure.models import ForgetRequest
from erasure.services import (
    OperatorPrincipal,
    forget_request_approve,
    forget_request_may_approve,
    forget_request_open,
    forget_request_reject,
    forget_request_retry,
)
from erasure.services.preview import Preview, forget_request_dry_run
from erasure.services.receipts import receipt_document
from memory.public import register_forget_handoff
from tenants.admin.base import ScopedForm, ScopedModelAdmin
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
    reason = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Why the memories are erased (the subject's request, a retention rule, ...).",
    )
    ticket = forms.CharField(
        label="Ticket reference",
        max_length=200,
        help_text="The ticket or case this erasure answers (it goes on the receipt).",
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


def preview_summary(record: dict[str, Any] | None) -> str:
    """One line of a stored dry run: counts per memory type and the time span."""
    if not record:
        return "—"
    counts = ", ".join(f"{kind} {n}" for kind, n in record.get("counts", {}).items() if n)
    span = record.get("span") or {}
    when = ""
    if span.get("first"):
        when = f"; stored {span['first'][:10]} to {span['last'][:10]}"
    return f"{record.get('total', 0)} memories ({counts or 'none'}){when}"


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
        "request_reason",
        "ticket",
        "outcome_reason",
        "target_count",
        "previewed_at_open",
        "previewed_at_approval",
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
    actions = ["retry_failed"]

    def get_fields(self, request: HttpRequest, obj: ForgetRequest | None = None) -> Any:
        """Only the fields that say something about this request: no row of dashes."""
        if obj is None:
            return self.fields
        empty = {
            "outcome_reason": not obj.reason,
            "query": not obj.query,
            "previewed_at_approval": obj.preview_approved is None,
            "previewed_at_open": obj.preview_at_open is None,
            "decided_at": obj.decided_at is None,
            "started_at": obj.started_at is None,
            "finished_at": obj.finished_at is None,
            "verified": obj.verified is None,
            "receipt_link": obj.receipt is None,
            "retry_count": not obj.retry_count,
        }
        return [f for f in self.fields if not empty.get(f, False)]

    @admin.display(description="reason for the erasure")
    def request_reason(self, request: ForgetRequest) -> str:
        return request.justification or "—"

    @admin.display(description="why it was rejected or failed")
    def outcome_reason(self, request: ForgetRequest) -> str:
        return request.reason

    @admin.display(description="previewed when opened")
    def previewed_at_open(self, request: ForgetRequest) -> str:
        return preview_summary(request.preview_at_open)

    @admin.display(description="previewed when approved")
    def previewed_at_approval(self, request: ForgetRequest) -> str:
        return preview_summary(request.preview_approved)

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
            return "the query's matches (fixed when approved)"
        return f"{len(request.memory_ids)} id(s)"

    @admin.display(description="receipt")
    def receipt_link(self, request: ForgetRequest) -> str:
        if request.receipt is None:
            return "—"
        url = reverse("admin:erasure_forgetrequest_receipt", args=[request.pk])
        download = reverse("admin:erasure_forgetrequest_receipt_json", args=[request.pk])
        return format_html(
            '<a href="{}">View receipt</a> · <a href="{}" download>Download signed JSON</a>',
            url,
            download,
        )

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
            reason=data["reason"],
            ticket=data["ticket"],
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
            path(
                "<int:pk>/receipt.json",
                self.admin_site.admin_view(self.receipt_json_view),
                name="erasure_forgetrequest_receipt_json",
            ),
            view("progress", self.progress_view),
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
        can_act = self.has_act_permission(request, obj)
        principal = self._principal(request)
        pending = obj.status == ForgetRequest.Status.PENDING
        preview, problem = self._dry_run(obj) if pending and can_act else (None, "")
        context = {
            **(extra_context or {}),
            "can_decide": can_act,
            "can_approve": can_act and forget_request_may_approve(request=obj, by=principal),
            "own_request": pending
            and obj.tenant.erasure_requires_second_operator
            and obj.requested_by_type == "operator"
            and obj.requested_by_id == str(request.user.pk),
            "reject_form": RejectForm(),
            "preview": preview,
            "preview_problem": problem,
            "progress": list(obj.progress.order_by("id")),
            "in_progress": obj.status
            in (ForgetRequest.Status.APPROVED, ForgetRequest.Status.RUNNING),
        }
        return super().change_view(request, object_id, form_url, context)

    def _dry_run(self, obj: ForgetRequest) -> tuple[Preview | None, str]:
        try:
            return forget_request_dry_run(request=obj), ""
        except AtlasError as exc:
            return None, exc.public[0]

    def progress_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The job's state as JSON: what the change page polls while the job runs."""
        obj = self._reachable(request, pk)
        return JsonResponse(
            {
                "status": obj.status,
                "status_display": obj.get_status_display(),
                "indices": [
                    {"kind": p.kind, "deleted": p.deleted, "done": p.done, "remaining": p.remaining}
                    for p in obj.progress.order_by("id")
                ],
            }
        )

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
        return self._back(pk)

    def _back(self, pk: int) -> HttpResponse:
        return HttpResponseRedirect(reverse("admin:erasure_forgetrequest_change", args=[pk]))

    def approve_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """A confirmation step first (what would be erased, counted per index), then the
        decision: only a POST with ``confirm`` approves."""
        obj = self._reachable(request, pk)
        if not self.has_act_permission(request, obj):
            raise PermissionDenied
        if not forget_request_may_approve(request=obj, by=self._principal(request)):
            # Not offered (the opener under four eyes, or no longer pending): say why.
            return self._decide(
                request, pk, lambda o, by: forget_request_approve(request=o, by=by), "approved"
            )
        seen = request.POST.get("preview", "")
        if request.method == "POST" and request.POST.get("confirm") == "yes" and seen:
            try:
                forget_request_approve(request=obj, by=self._principal(request), seen=seen)
            except AtlasError as exc:
                if exc.code != "preview_changed":
                    self.message_user(request, f"Not approved: {exc.message}", messages.ERROR)
                    return self._back(pk)
                self.message_user(request, exc.message, messages.WARNING)
            else:
                self.message_user(request, f"Forget request {pk} approved.", messages.SUCCESS)
                return self._back(pk)
        preview, problem = self._dry_run(obj)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Approve forget request {obj.pk}?",
            "opts": self.opts,
            "original": obj,
            "preview": preview,
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
        document = receipt_document(request=obj)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Receipt of forget request {obj.pk}",
            "opts": self.opts,
            "original": obj,
            "receipt": obj.receipt,
            "document": document,
            "receipt_json": json.dumps(obj.receipt, indent=2, sort_keys=True),
        }
        return TemplateResponse(request, "admin/erasure/forgetrequest/receipt.html", context)

    def receipt_json_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The signed receipt as a file (``manage.py receipt_verify FILE`` checks it)."""
        obj = self._reachable(request, pk)
        if obj.receipt is None:
            raise Http404("This request has no receipt yet.")
        body = json.dumps(receipt_document(request=obj), indent=2, ensure_ascii=False)
        response = HttpResponse(body, content_type="application/json; charset=utf-8")
        name = f"atlas-erasure-receipt-{obj.pk}.json"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response

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
