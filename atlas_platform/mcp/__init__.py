"""The MCP host: streamable HTTP with bearer tokens in front of Django; every app's tools."""
