"""Memory services: every write, supersession, forget, outcome and catalog change (audited),
and recall. Entry points (REST, MCP, tasks, admin) call these and nothing below them."""
