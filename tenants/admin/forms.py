"""Admin forms. Each one checks what it can before its service runs, so errors land on fields."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import password_validation
from django.utils import timezone

from atlas_platform.cluster import get_cluster
from atlas_platform.exceptions import AtlasError
from tenants.admin.base import ScopedForm
from tenants.models import Operator, Tenant, User
from tenants.services.tenants import check_external_ids
from tenants.services.users import check_new_account

LOCAL_INPUT = "%Y-%m-%dT%H:%M"  # what an HTML datetime-local input sends


def _field_error(form: forms.Form, field: str | None, exc: AtlasError) -> None:
    form.add_error(field, exc.message)


class TenantOnboardForm(ScopedForm):
    slug = forms.SlugField(max_length=50, help_text="Lowercase id used in URLs and the cluster.")
    name = forms.CharField(max_length=200)
    admin_username = forms.CharField(label="Tenant admin username", max_length=150)
    admin_email = forms.EmailField(label="Tenant admin email", required=False)
    admin_password = forms.CharField(
        label="Tenant admin password",
        widget=forms.PasswordInput,
        help_text=password_validation.password_validators_help_text_html(),
    )
    users = forms.CharField(
        label="Initial users",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="External ids, one per line. Each gets a scoped cluster key.",
    )

    def clean_slug(self) -> str:
        slug: str = self.cleaned_data["slug"]
        if Tenant.objects.filter(slug=slug).exists():
            raise forms.ValidationError("A tenant with this slug already exists.")
        return slug

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the tenant a name.")
        return name

    def clean_users(self) -> list[str]:
        try:
            return check_external_ids(self.cleaned_data["users"].splitlines())
        except AtlasError as exc:
            raise forms.ValidationError(exc.message) from exc

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "admin_username" in data and "admin_password" in data:
            try:
                check_new_account(username=data["admin_username"], password=data["admin_password"])
            except AtlasError as exc:
                field = "admin_password" if exc.code == "weak_password" else "admin_username"
                _field_error(self, field, exc)
        return data


class UserAddForm(ScopedForm):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none())
    external_id = forms.CharField(max_length=128, help_text="Your system's id for this user.")
    display_name = forms.CharField(max_length=200, required=False)
    provision_key = forms.BooleanField(
        required=False,
        help_text="Create the user's scoped cluster key now (needs Elasticsearch: ATLAS_ES_URL).",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Ticked only where it can work: without a cluster there is no key to make.
        self.fields["provision_key"].initial = get_cluster() is not None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        tenant, external_id = data.get("tenant"), data.get("external_id", "").strip()
        if tenant and User.objects.filter(tenant=tenant, external_id=external_id).exists():
            self.add_error("external_id", "This tenant already has a user with this id.")
        return data


class TokenIssueForm(ScopedForm):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none())
    user = forms.ModelChoiceField(
        queryset=User.objects.none(),
        required=False,
        help_text="Leave empty for a tenant token that may act for any user of the tenant.",
    )
    name = forms.CharField(max_length=100, help_text="Where the token is used, e.g. 'support bot'.")
    expires_at = forms.DateTimeField(
        required=False,
        label="Expires at",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format=LOCAL_INPUT),
        input_formats=[LOCAL_INPUT, "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"],
        help_text="Date and time (UTC). Optional: empty, the token does not expire.",
        error_messages={"invalid": "Enter a date and time, e.g. 2027-01-31 18:00."},
    )
    allow_catalog = forms.BooleanField(
        required=False, help_text="Tenant tokens only: may edit the tenant catalog."
    )
    allow_provisioning = forms.BooleanField(
        required=False,
        help_text="Tenant tokens only: may create, list, disable and enable users (/api/v1/users).",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        tenant, user = data.get("tenant"), data.get("user")
        if tenant and user and user.tenant_id != tenant.pk:
            self.add_error("user", "This user belongs to another tenant.")
        if user and data.get("allow_catalog"):
            self.add_error("allow_catalog", "Only tenant tokens may edit the catalog.")
        if user and data.get("allow_provisioning"):
            self.add_error("allow_provisioning", "Only tenant tokens may provision users.")
        expires_at = data.get("expires_at")
        if expires_at and expires_at <= timezone.now():
            self.add_error("expires_at", "The expiry must be in the future.")
        if not data.get("name", "x").strip():
            self.add_error("name", "Give the token a name.")
        return data


class OperatorAddForm(ScopedForm):
    username = forms.CharField(max_length=150)
    email = forms.EmailField(required=False)
    password = forms.CharField(widget=forms.PasswordInput)
    role = forms.ChoiceField(choices=Operator.Role.choices)
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.scope.is_platform_admin:
            self.fields["role"].choices = [  # type: ignore[attr-defined]
                c for c in Operator.Role.choices if c[0] != Operator.Role.PLATFORM_ADMIN
            ]
            self.fields["tenant"].required = True

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        role, tenant = data.get("role"), data.get("tenant")
        if role == Operator.Role.PLATFORM_ADMIN and tenant is not None:
            self.add_error("tenant", "Platform admins have no tenant.")
        elif role and role != Operator.Role.PLATFORM_ADMIN and tenant is None:
            self.add_error("tenant", "Choose the tenant this operator works on.")
        if data.get("username") and data.get("password"):
            try:
                check_new_account(username=data["username"], password=data["password"])
            except AtlasError as exc:
                _field_error(self, "password" if exc.code == "weak_password" else "username", exc)
        return data
