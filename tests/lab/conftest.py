"""Lab fixtures: the product tests' own (the embedded store, a live server, tokens), shared so
the load tests drive the product exactly as its API and MCP tests do."""

from tests.atlas_platform.mcp.conftest import atlas_server, embedded_store  # noqa: F401
from tests.atlas_server.conftest import _fresh_rate_limits, alice_token, store  # noqa: F401
