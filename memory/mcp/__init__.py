"""The MCP interface: streamable HTTP with bearer tokens; tools call the memory services."""
