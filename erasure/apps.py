from django.apps import AppConfig


class ErasureConfig(AppConfig):
    name = "erasure"
    verbose_name = "Erasure"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from erasure.dashboard import forget_requests_panel
        from erasure.exports import register
        from tenants.admin.dashboard import add_panel

        add_panel(forget_requests_panel)
        register()  # the forget / erasure requests sections of the user export
