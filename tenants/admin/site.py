"""The Atlas admin site: only Atlas operators (or superusers) get in."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from tenants.scoping import request_scope


class AtlasAdminSite(admin.AdminSite):
    site_header = "Atlas administration"
    site_title = "Atlas"
    index_title = "Tenants, users, tokens and audit"
    site_url = None  # Atlas has no public site: no "View site" link to a 404

    def has_permission(self, request: HttpRequest) -> bool:
        return bool(super().has_permission(request)) and request_scope(request) is not None


site = AtlasAdminSite(name="admin")
