"""A confirmation step for admin actions that cannot be taken back lightly (suspending a
tenant, revoking tokens): the action answers a page naming what it will do to which objects,
and acts only when that page is posted back with ``confirmed=yes``."""

from __future__ import annotations

from typing import Any

from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse


def confirmation(
    model_admin: Any,
    request: HttpRequest,
    queryset: QuerySet[Any],
    *,
    action: str,
    title: str,
    consequence: str,
) -> HttpResponse | None:
    """None once confirmed (the action goes ahead); otherwise the confirmation page."""
    if request.POST.get("confirmed") == "yes":
        return None
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "opts": model_admin.opts,
        "objects": list(queryset),
        "action": action,
        "consequence": consequence,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "admin/atlas/confirm_action.html", context)
