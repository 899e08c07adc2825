"""What memory adds to the user pages: the inspector's pages and links, and the MCP client
snippet."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.urls import URLPattern, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from memory.admin.inspector import MemoryInspector
from memory.mcp.client_config import client_snippets, own_user_mcp_url, user_mcp_url
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
    snippets = format_html_join(
        "",
        '<div class="mcp-snippet"><p><strong>{}</strong> <button type="button" '
        'class="button copy-snippet" data-target="mcp-snippet-{}">Copy</button></p>'
        '<pre id="mcp-snippet-{}">{}</pre></div>',
        ((title, n, n, text) for n, (title, text) in enumerate(client_snippets(url))),
    )
    return format_html(
        "<p>Use a token for this user or for the tenant (<code>&lt;ATLAS_TOKEN&gt;</code>, or "
        'the <code>ATLAS_TOKEN</code> environment variable): <a href="{}">issue one under '
        "Platform tokens</a> (shown once). A token of this user alone may also use "
        "<code>{}</code>.</p>{}<script>{}</script>",
        issue,
        own_user_mcp_url(base),
        snippets,
        SafeString(COPY_SCRIPT),
    )


# The copy buttons: the snippet's text to the clipboard (no library, nothing loaded).
COPY_SCRIPT = (
    "document.querySelectorAll('.copy-snippet').forEach(function (b) {"
    "b.addEventListener('click', function () {"
    "var t = document.getElementById(b.dataset.target).textContent;"
    "navigator.clipboard.writeText(t).then(function () { b.textContent = 'Copied'; });"
    "});});"
)
