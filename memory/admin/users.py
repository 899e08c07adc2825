"""What memory adds to the user pages: the inspector's pages and links, and the MCP client
snippet."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.urls import URLPattern, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from memory.admin.inspector import MemoryInspector
from memory.mcp.client_config import client_configs, own_user_mcp_url, user_mcp_url
from tenants.admin.users import site_url
from tenants.models import User

if TYPE_CHECKING:
    from tenants.admin.users import UserAdmin


def inspector_urls(model_admin: UserAdmin) -> list[URLPattern]:
    return MemoryInspector(model_admin).urls()


@admin.display(description="memory")
def memory_link(user: User) -> str:
    return format_html(
        '<a href="{}">inspect</a>', reverse("admin:tenants_user_memories", args=[user.pk])
    )


@admin.display(description="memory inspector")
def memory_inspector(user: User) -> str:
    links = [
        ("tenants_user_memories", "memories by type"),
        ("tenants_user_recall", "search (recall as this user)"),
        ("tenants_user_playbooks", "playbooks"),
    ]
    return format_html_join(
        " · ",
        '<a href="{}">{}</a>',
        ((reverse(f"admin:{name}", args=[user.pk]), label) for name, label in links),
    )


@admin.display(description="MCP client config")
def mcp_client_config(user: User) -> SafeString:
    base = site_url()
    url = user_mcp_url(base, user.external_id)
    issue = reverse("admin:tenants_platformtoken_add")
    return format_html(
        "<p>Replace <code>&lt;ATLAS_TOKEN&gt;</code> with a token for this user or for the "
        'tenant: <a href="{}">issue one under Platform tokens</a> (shown once). A token of '
        "this user alone may also use <code>{}</code>.</p><pre>{}</pre>",
        issue,
        own_user_mcp_url(base),
        client_configs(url),
    )
