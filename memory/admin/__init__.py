"""memory's admin pages, added to the tenants admin through its extension points: the memory
inspector on each user (with its links and the MCP client snippet on the user page) and the
store and recall panels of the tenant dashboard, and moving a tenant from the embedded store to
Elasticsearch (platform admins)."""

from memory.admin import dashboard, migration, users
from tenants.admin.dashboard import add_panel
from tenants.admin.overview import add_column
from tenants.admin.tenants import extend_tenant_pages
from tenants.admin.users import extend_user_pages

extend_user_pages(
    columns=[users.memory_link],
    fields=[users.memory_inspector, users.mcp_client_config],
    urls=users.inspector_urls,
)
add_panel(dashboard.recall_panel, first=True)
add_panel(dashboard.memories_panel, first=True)
add_column(dashboard.recalls_column, first=True)
add_column(dashboard.memories_column, first=True)
extend_tenant_pages(
    urls=migration.migration_urls,
    platform_fields=[migration.backend_migration],
    actions=[migration.migrate_backend],
)
