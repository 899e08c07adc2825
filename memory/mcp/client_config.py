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


TOKEN_ENV = "ATLAS_TOKEN"  # noqa: S105 - the name of an environment variable


def client_snippets(url: str) -> list[tuple[str, str]]:
    """(title, text) per client for ``url``: Claude Code, Claude Desktop, Cursor and a generic
    streamable-HTTP request. No snippet holds a token: Claude Code's ``.mcp.json`` (usually
    committed) reads it from ``$ATLAS_TOKEN``, which Claude Code expands (Cursor's ``mcp.json``
    the same, as ``${env:ATLAS_TOKEN}``); mcp-remote gets the
    header through ``env`` (a space inside ``args`` breaks on Windows, as mcp-remote documents)."""
    header = f"Bearer {TOKEN_PLACEHOLDER}"
    plain = ["--allow-http"] if url.startswith("http://") else []  # mcp-remote wants https
    claude_code = {
        "mcpServers": {
            "atlas": {
                "type": "http",
                "url": url,
                "headers": {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"},
            }
        }
    }
    desktop = {
        "mcpServers": {
            "atlas": {
                "command": "npx",
                "args": [
                    "-y",
                    "mcp-remote",
                    url,
                    "--header",
                    "Authorization:${AUTH_HEADER}",
                    *plain,
                ],
                "env": {"AUTH_HEADER": header},
            }
        }
    }
    cursor_header = f"Bearer ${{env:{TOKEN_ENV}}}"  # Cursor's own interpolation syntax
    cursor = {"mcpServers": {"atlas": {"url": url, "headers": {"Authorization": cursor_header}}}}
    return [
        (
            f"Claude Code: .mcp.json (export {TOKEN_ENV}=<token> first; or: claude mcp add "
            f'--transport http atlas {url} --header "Authorization: {header}")',
            _json(claude_code),
        ),
        ("Claude Desktop: claude_desktop_config.json (through mcp-remote)", _json(desktop)),
        (
            f"Cursor: ~/.cursor/mcp.json (reads ${TOKEN_ENV} from Cursor's environment)",
            _json(cursor),
        ),
        (
            "Any streamable-HTTP MCP client",
            f"POST {url}\nAuthorization: {header}\n"
            "Content-Type: application/json\nAccept: application/json, text/event-stream",
        ),
    ]
