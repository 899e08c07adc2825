"""The Atlas admin site and its pages (imported here so registration happens once)."""

from typing import Any

from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User as Account
from django.http import HttpRequest, HttpResponse

from tenants.admin import audit, tenants, tokens, users
from tenants.admin.site import ACCOUNTS, site


class AccountAdmin(UserAdmin):  # type: ignore[type-arg]
    """Django's accounts, titled as what they are here: the operators' logins (passwords,
    active flag). They are made in one place only, Operators > Add, which gives each its
    Atlas role: a bare account here would sign in to nothing."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        title = {"title": f"{ACCOUNTS}: who signs in to this admin (add one under Operators)"}
        return super().changelist_view(request, {**title, **(extra_context or {})})


# Staff accounts themselves stay a platform-admin (superuser) concern. Django's groups are not
# registered: Atlas's roles are the Operator rows, never group permissions.
site.register(Account, AccountAdmin)

__all__ = ["audit", "site", "tenants", "tokens", "users"]
