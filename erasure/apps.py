from django.apps import AppConfig


class ErasureConfig(AppConfig):
    name = "erasure"
    verbose_name = "Erasure"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from erasure.dashboard import forget_requests_panel, open_erasures_column
        from erasure.exports import register
        from tenants.admin.dashboard import add_panel
        from tenants.admin.overview import add_column

        add_panel(forget_requests_panel)
        add_column(open_erasures_column)
        register()  # the forget / erasure requests sections of the user export
