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
        help_text="External ids, one per line.",
    )
    isolation_mode = forms.ChoiceField(
        label="Isolation",
        choices=Tenant.IsolationMode.choices,
        required=False,  # not sent: the strongest the cluster offers
        help_text="dls: the search cluster itself keeps each user's memories apart (a scoped "
        "key per user, renewed automatically). filter: Atlas's own query filters do.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cluster = get_cluster()
        if cluster is None:  # the embedded store: filter is the only mode, nothing to choose
            del self.fields["isolation_mode"]
            self.no_cluster_note = (
                "No search cluster is configured: memories live in the embedded store, "
                "isolated by Atlas's filters, and users need no keys. To move a tenant to "
                "Elasticsearch with cluster-enforced isolation later, set ATLAS_ES_URL and run "
                "manage.py memory_migrate <slug> (or the tenant page's Move memories to "
                "Elasticsearch)."
            )
            return
        self.no_cluster_note = ""
        self.fields["users"].help_text += " Each gets a scoped cluster key."
        try:
            dls = cluster.dls_available()
        except AtlasError:  # the cluster is down: onboarding itself will say so
            dls = False
        self.fields["isolation_mode"].initial = "dls" if dls else "filter"
        if not dls:
            self.fields["isolation_mode"].choices = [  # type: ignore[attr-defined]
                c for c in Tenant.IsolationMode.choices if c[0] != "dls"
            ]
            self.fields[
                "isolation_mode"
            ].help_text += " This cluster has no document-level security (licence), so filter only."

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
        # Offered only where it can work: without a cluster there is no key to make.
        if get_cluster() is None:
            del self.fields["provision_key"]
        else:
            self.fields["provision_key"].initial = True

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        tenant, external_id = data.get("tenant"), data.get("external_id", "").strip()
        if tenant and User.objects.filter(tenant=tenant, external_id=external_id).exists():
            self.add_error("external_id", "This tenant already has a user with this id.")
        return data


class TenantUserSelect(forms.Select):
    """A user select whose options carry their tenant (``data-tenant``): the form's script shows
    only the chosen tenant's users."""

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option: dict[str, Any] = super().create_option(name, value, *args, **kwargs)
        instance = getattr(value, "instance", None)
        if instance is not None:
            option["attrs"]["data-tenant"] = str(instance.tenant_id)
        return option


class TokenIssueForm(ScopedForm):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none())
    user = forms.ModelChoiceField(
        queryset=User.objects.none(),
        widget=TenantUserSelect,
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
    allow_export = forms.BooleanField(
        required=False,
        help_text="Tenant tokens only: may export any user's whole record "
        "(/api/v1/users/{id}/export). A user token always exports its own user.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tenant = (
            self.data.get("tenant") or self.initial.get("tenant") or self.fields["tenant"].initial
        )
        if str(tenant).isdigit() and len(str(tenant)) < 10:  # the tenant picked (or the only one)
            users = self.fields["user"].queryset.filter(tenant_id=int(tenant))  # type: ignore[attr-defined]
            self.fields["user"].queryset = users  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        tenant, user = data.get("tenant"), data.get("user")
        if tenant and user and user.tenant_id != tenant.pk:
            self.add_error("user", "This user belongs to another tenant.")
        if user and data.get("allow_catalog"):
            self.add_error("allow_catalog", "Only tenant tokens may edit the catalog.")
        if user and data.get("allow_provisioning"):
            self.add_error("allow_provisioning", "Only tenant tokens may provision users.")
        if user and data.get("allow_export"):
            self.add_error(
                "allow_export", "A user token exports its own user only; leave this off."
            )
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
    # Least powerful first and preselected: more power is a deliberate choice.
    role = forms.ChoiceField(
        choices=[(r.value, r.label) for r in reversed(Operator.Role)],
        initial=Operator.Role.AUDITOR,
        help_text="Auditor: reads everything of its tenant, changes nothing. Tenant admin: "
        "runs its tenant. Platform admin: every tenant and the deployment.",
    )
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.scope.is_platform_admin:
            role: Any = self.fields["role"]
            role.choices = [c for c in role.choices if c[0] != Operator.Role.PLATFORM_ADMIN]
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
