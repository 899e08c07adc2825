"""The Atlas admin site and its pages (imported here so registration happens once)."""

from typing import Any

from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.contrib.auth.models import User as Account
from django.http import HttpRequest, HttpResponse

from tenants.admin import audit, tenants, tokens, users
from tenants.admin.site import ACCOUNTS, site


class AccountAdmin(UserAdmin):  # type: ignore[type-arg]
    """Django's accounts, titled as what they are here: the operators' logins."""

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        title = {"title": f"{ACCOUNTS}: who signs in to this admin (not End users)"}
        return super().changelist_view(request, {**title, **(extra_context or {})})


# Staff accounts themselves stay a platform-admin (superuser) concern.
site.register(Account, AccountAdmin)
site.register(Group, GroupAdmin)

__all__ = ["audit", "site", "tenants", "tokens", "users"]
