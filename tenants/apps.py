from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Tenants"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from atlas_platform.callers import register_callers
        from tenants.api import authentication  # noqa: F401 - the bearer scheme for OpenAPI
        from tenants.api.export import register_tenants_sections
        from tenants.callers import TenantCallers

        register_tenants_sections()  # the user export's tokens and keys
        register_callers(TenantCallers())  # the platform's REST bases and MCP host ask these
