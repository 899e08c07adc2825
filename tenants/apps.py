from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Tenants"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tenants.api import authentication  # noqa: F401 - the bearer scheme for OpenAPI
        from tenants.api.export import register_tenants_sections

        register_tenants_sections()  # the user export's tokens and keys
