from django.apps import AppConfig


class ErasureConfig(AppConfig):
    name = "erasure"
    verbose_name = "Erasure"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from erasure.dashboard import forget_requests_panel
        from tenants.admin.dashboard import PANELS

        if forget_requests_panel not in PANELS:
            PANELS.append(forget_requests_panel)
