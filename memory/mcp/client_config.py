"""Copy-paste MCP client configurations for one user (shown in the admin; never a secret)."""

from __future__ import annotations

import json
from urllib.parse import quote

TOKEN_PLACEHOLDER = "<ATLAS_TOKEN>"  # noqa: S105 - a placeholder, never a secret


def user_mcp_url(base_url: str, external_id: str) -> str:
    """The per-user endpoint: works with a token of this user and with a tenant token."""
    return f"{base_url.rstrip('/')}/api/atlas/mcp/{quote(external_id, safe='')}"


def own_user_mcp_url(base_url: str) -> str:
    """The endpoint of a user-scoped token's own user."""
    return f"{base_url.rstrip('/')}/mcp/"


def _json(value: object) -> str:
    return json.dumps(value, indent=2)


def client_configs(url: str) -> str:
    """Claude Code, Claude Desktop, Cursor and a generic streamable-HTTP request for ``url``."""
    header = f"Bearer {TOKEN_PLACEHOLDER}"
    plain = ["--allow-http"] if url.startswith("http://") else []  # mcp-remote wants https
    claude_code = {
        "mcpServers": {"atlas": {"type": "http", "url": url, "headers": {"Authorization": header}}}
    }
    desktop = {
        "mcpServers": {
            "atlas": {
                "command": "npx",
                "args": ["-y", "mcp-remote", url, "--header", f"Authorization:{header}", *plain],
            }
        }
    }
    cursor = {"mcpServers": {"atlas": {"url": url, "headers": {"Authorization": header}}}}
    return "\n\n".join(
        [
            f"# Claude Code: .mcp.json (or: claude mcp add --transport http atlas {url} "
            f'--header "Authorization: {header}")\n{_json(claude_code)}',
            "# Claude Desktop: claude_desktop_config.json (remote server through mcp-remote)\n"
            + _json(desktop),
            f"# Cursor: ~/.cursor/mcp.json\n{_json(cursor)}",
            "# Any streamable-HTTP MCP client\n"
            f"POST {url}\nAuthorization: {header}\n"
            "Content-Type: application/json\nAccept: application/json, text/event-stream",
        ]
    )
