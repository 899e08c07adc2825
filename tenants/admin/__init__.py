"""The Atlas admin site and its pages (imported here so registration happens once)."""

from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.contrib.auth.models import User as Account

from tenants.admin import audit, tenants, tokens, users
from tenants.admin.site import site

# Staff accounts themselves stay a platform-admin (superuser) concern.
site.register(Account, UserAdmin)
site.register(Group, GroupAdmin)

__all__ = ["audit", "site", "tenants", "tokens", "users"]
