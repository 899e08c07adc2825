"""The memory inspector: one user's memories as that user sees them (their scoped key on a dls
tenant), a real recall with its legs and timings, supersession chains, playbooks, and the way
into a forget request.

Every page resolves the user through the user admin's scoped queryset (another tenant's user is
a 404) and is read-only: auditors see the same pages without action buttons, and a POST from
them is refused with 403. The only POST here (forget selected) needs the ``act`` permission.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from atlas_platform.exceptions import AtlasError, NotFound
from memory.selectors import memory_counts, memory_history, memory_page
from memory.services.recall import memory_recall
from memory.types import PERSONAL_TYPES
from tenants.models import User
from tenants.services.audit import audit_read, query_digest

if TYPE_CHECKING:
    from tenants.admin.users import UserAdmin

MEMORY_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
PAGE_SIZE = 25


# EXTENSION POINT (erasure): where the inspector's forget buttons lead, a function of the user
# and the selected memory ids; the erasure app's admin registers its forget-request form.
ForgetHandoff = Callable[[User, Sequence[str]], str]
_forget_handoff: list[ForgetHandoff] = []


def register_forget_handoff(handoff: ForgetHandoff) -> None:
    _forget_handoff[:] = [handoff]


def forget_request_url(user: User, memory_ids: Sequence[str]) -> str | None:
    """The page a forget of these memories goes to; None while no app handles forgetting (then
    no forget button is shown anywhere)."""
    return _forget_handoff[0](user, memory_ids) if _forget_handoff else None


class MemoryFilterForm(forms.Form):
    type = forms.ChoiceField(
        choices=[("", "all types"), *((t, t) for t in PERSONAL_TYPES)], required=False
    )
    superseded = forms.ChoiceField(
        choices=[
            ("any", "current and superseded"),
            ("current", "current only"),
            ("only", "superseded only"),
        ],
        required=False,
    )
    created_from = forms.DateField(
        label="stored from", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    created_to = forms.DateField(
        label="to", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("created_from"), data.get("created_to")
        if start and end and start > end:
            self.add_error("created_to", "The end is before the start.")
        return data


class RecallForm(forms.Form):
    q = forms.CharField(label="query", max_length=2000)
    k = forms.IntegerField(min_value=1, max_value=50, initial=10, required=False)
    include_superseded = forms.BooleanField(required=False)


def _day_start(day: date | None) -> datetime | None:
    return datetime.combine(day, time.min, tzinfo=UTC) if day else None


def _day_end(day: date | None) -> datetime | None:
    """The last microsecond of ``day``: a "to" date includes the whole day."""
    start = _day_start(day)
    return start + timedelta(days=1, microseconds=-1) if start else None


class MemoryInspector:
    """The inspector's views, mounted under a user's admin URL by ``UserAdmin.get_urls``."""

    def __init__(self, model_admin: UserAdmin) -> None:
        self.admin = model_admin

    def urls(self) -> list[URLPattern]:
        def view(fn: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
            return self.admin.admin_site.admin_view(fn)

        def page(fn: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
            return view(self._read_only(fn))

        return [
            path("<int:pk>/memories/", page(self.memories), name="tenants_user_memories"),
            path("<int:pk>/memories/search/", page(self.search), name="tenants_user_recall"),
            path(
                "<int:pk>/memories/playbooks/", page(self.playbooks), name="tenants_user_playbooks"
            ),
            path("<int:pk>/memories/forget/", view(self.forget), name="tenants_user_forget"),
            path(
                "<int:pk>/memories/<str:memory_id>/history/",
                page(self.history),
                name="tenants_user_memory_history",
            ),
        ]

    # --- pages ---------------------------------------------------------------------------------
    def memories(self, request: HttpRequest, pk: int) -> HttpResponse:
        user = self._user(request, pk)
        form = MemoryFilterForm(request.GET or None)
        page, counts, error = None, None, None
        if form.is_bound and not form.is_valid():
            error = "Fix the filters below."
        else:
            data = form.cleaned_data if form.is_bound else {}
            kind = data.get("type")
            types = tuple(t for t in PERSONAL_TYPES if t == kind) or PERSONAL_TYPES
            try:
                counts = memory_counts(user=user)
                page = memory_page(
                    user=user,
                    memory_types=types,
                    superseded=data.get("superseded") or "any",
                    created_from=_day_start(data.get("created_from")),
                    created_to=_day_end(data.get("created_to")),
                    after=request.GET.get("after") or None,
                    limit=PAGE_SIZE,
                )
            except AtlasError as exc:
                error = exc.message
            else:
                _audit_page(user, "memories")
        query = request.GET.copy()
        query.pop("after", None)
        return self._render(
            request,
            user,
            "memories",
            "admin/atlas/inspector_memories.html",
            form=form,
            page=page,
            counts=counts,
            error=error,
            filters=query.urlencode(),
        )

    def search(self, request: HttpRequest, pk: int) -> HttpResponse:
        user = self._user(request, pk)
        form = RecallForm(request.GET or None, initial={"k": 10})
        result, error = None, None
        if form.is_bound and form.is_valid():
            data = form.cleaned_data
            try:
                result = memory_recall(
                    user=user,
                    query=data["q"],
                    k=data["k"] or 10,
                    include_superseded=data["include_superseded"],
                    track_usage=False,  # an operator looking: not a use, not a user recall
                )
            except AtlasError as exc:
                error = exc.message
            else:
                digest = query_digest(data["q"])
                audit_read(
                    action="read.recall",
                    tenant=user.tenant,
                    subject_user=user,
                    target_type="tenants.user",
                    target_id=str(user.pk),
                    metadata={
                        "query_sha256": digest,
                        "k": data["k"] or 10,
                        "hits": len(result.hits),
                    },
                    burst=(digest,),
                )
        return self._render(
            request,
            user,
            "search",
            "admin/atlas/inspector_search.html",
            form=form,
            result=result,
            rows=[(hit, leg_cells(hit.leg_ranks, hit.leg_scores)) for hit in result.hits]
            if result is not None
            else [],
            error=error,
        )

    def history(self, request: HttpRequest, pk: int, memory_id: str) -> HttpResponse:
        user = self._user(request, pk)
        try:
            chain = memory_history(user=user, memory_id=memory_id)
        except NotFound as exc:
            raise Http404(exc.message) from exc
        except AtlasError as exc:
            return self._render(
                request, user, "history", "admin/atlas/inspector_history.html", error=exc.message
            )
        audit_read(
            action="read.history",
            tenant=user.tenant,
            subject_user=user,
            target_type="memory",
            target_id=memory_id,
            metadata={"memories": len(chain)},
            burst=(memory_id,),
        )
        return self._render(
            request,
            user,
            "history",
            "admin/atlas/inspector_history.html",
            chain=chain,
            memory_id=memory_id,
            forget_url=forget_request_url(user, [d.id for d in chain]),
        )

    def playbooks(self, request: HttpRequest, pk: int) -> HttpResponse:
        user = self._user(request, pk)
        page, error = None, None
        try:
            page = memory_page(
                user=user,
                memory_types=("procedural",),
                superseded="current",
                after=request.GET.get("after") or None,
                limit=PAGE_SIZE,
            )
        except AtlasError as exc:
            error = exc.message
        else:
            _audit_page(user, "playbooks")
        return self._render(
            request,
            user,
            "playbooks",
            "admin/atlas/inspector_playbooks.html",
            page=page,
            error=error,
        )

    def forget(self, request: HttpRequest, pk: int) -> HttpResponse:
        """POST: the selected memories go to a new forget request (the erasure app's form)."""
        user = self._user(request, pk)
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.admin.has_act_permission(request, user):
            raise PermissionDenied
        back = reverse("admin:tenants_user_memories", args=[user.pk])
        ids = [i for i in request.POST.getlist("ids") if i]
        if not ids or not all(MEMORY_ID.match(i) for i in ids):
            self.admin.message_user(request, "Select the memories to forget.", messages.ERROR)
            return redirect(back)
        target = forget_request_url(user, ids)
        if target is None:
            self.admin.message_user(
                request, "Forget requests are not available here yet.", messages.ERROR
            )
            return redirect(back)
        return redirect(target)

    # --- helpers -------------------------------------------------------------------------------
    def _user(self, request: HttpRequest, pk: int) -> User:
        """The user, through the admin's scoped queryset: another tenant's user is a 404."""
        user = self.admin.get_queryset(request).filter(pk=pk).select_related("tenant").first()
        if user is None or not self.admin.has_view_permission(request, user):
            raise Http404("No such user.")
        return user  # type: ignore[no-any-return]

    def _read_only(self, fn: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        """A page that only reads: anything but GET is refused — 403 when the operator may not
        act at all (an auditor), 405 otherwise; another tenant's user is a 404 first."""

        def page(request: HttpRequest, pk: int, **kwargs: Any) -> HttpResponse:
            if request.method not in ("GET", "HEAD"):
                if not self.admin.has_act_permission(request, self._user(request, pk)):
                    raise PermissionDenied
                return HttpResponseNotAllowed(["GET"])
            return fn(request, pk, **kwargs)

        return page

    def _render(
        self, request: HttpRequest, user: User, tab: str, template: str, **context: Any
    ) -> TemplateResponse:
        can_act = self.admin.has_act_permission(request, user)
        return TemplateResponse(
            request,
            template,
            {
                **self.admin.admin_site.each_context(request),
                "opts": self.admin.opts,
                "title": f"Memory of {user.external_id}",
                "subject": user,
                "tab": tab,
                "can_act": can_act,
                "forget_enabled": can_act and forget_request_url(user, []) is not None,
                **context,
            },
        )


def _audit_page(user: User, page: str) -> None:
    """A list of the user's memories was shown: one event per operator, user and list for a
    burst of pages (paging, filtering and reloading within the audit's read window)."""
    audit_read(
        action="read.memories",
        tenant=user.tenant,
        subject_user=user,
        target_type="tenants.user",
        target_id=str(user.pk),
        metadata={"page": page},
        burst=(page,),
    )


def leg_cells(ranks: dict[str, int], scores: dict[str, float]) -> dict[str, str]:
    """Per leg, "rank (score)" as the leg scored it, in significant digits: a BM25 score of a
    small store can be 0.00004, which three decimals would print as a fake 0.000. A leg that
    found the hit without a score shows its rank alone; one that did not find it, a dash."""
    cells = {}
    for leg in ("lexical", "dense"):
        rank, score = ranks.get(leg), scores.get(leg)
        if rank is None:
            cells[leg] = "—"
        elif score is None:
            cells[leg] = str(rank)
        else:
            cells[leg] = f"{rank} ({score:.4g})"
    return cells
